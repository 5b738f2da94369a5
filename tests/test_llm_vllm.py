"""The vLLM backend against a stand-in ``vllm`` module: one batched ``LLM.chat`` call, parameter mapping.

The stand-in records what booksum sends; it does not imitate vLLM's generation. The real
engine is exercised by hand on a GPU box (docs/models.md).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from booksum_app.errors import ContextTooLong, ModelUnavailable
from booksum_app.llm.base import BatchBackend, Request
from booksum_app.llm.providers.vllm import VLLMBackend
from booksum_app.llm.registry import LLMSettings, get_model, resolve_model

MODEL = "vllm:Qwen/Qwen2.5-7B-Instruct"


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    stop: list[str] | None = None
    seed: int | None = None


@dataclass
class _Piece:
    text: str
    token_ids: list[int]
    finish_reason: str


@dataclass
class _Output:
    prompt_token_ids: list[int]
    outputs: list[_Piece]


class _Tokenizer:
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(range(len(text.split()) + (1 if add_special_tokens else 0)))


@dataclass
class StandInLLM:
    """Records the engine options and every chat call."""

    kwargs: dict[str, Any]
    chats: list[tuple[list[list[dict[str, str]]], list[SamplingParams]]] = field(
        default_factory=list
    )
    max_model_len: int = 4096

    def __post_init__(self) -> None:
        self.llm_engine = types.SimpleNamespace(
            model_config=types.SimpleNamespace(max_model_len=self.max_model_len)
        )

    def get_tokenizer(self) -> _Tokenizer:
        return _Tokenizer()

    def chat(
        self,
        messages: list[list[dict[str, str]]],
        sampling_params: list[SamplingParams],
        use_tqdm: bool = True,
    ) -> list[_Output]:
        self.chats.append((messages, sampling_params))
        outputs = []
        for conversation, params in zip(messages, sampling_params, strict=True):
            user = conversation[-1]["content"]
            if "TOO LONG" in user:
                raise ValueError(
                    "The decoder prompt is longer than the maximum model length of 4096"
                )
            words = user.split()
            cut = params.max_tokens is not None and len(words) > params.max_tokens
            reply = " ".join(words[: params.max_tokens] if cut else words)
            outputs.append(
                _Output(
                    prompt_token_ids=list(range(len(words) + 5)),
                    outputs=[
                        _Piece(reply, list(range(len(reply.split()))), "length" if cut else "stop")
                    ],
                )
            )
        return outputs


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[StandInLLM]]:
    """Install a stand-in ``vllm`` module; yields the engines built through it."""
    built: list[StandInLLM] = []

    def make_llm(**kwargs: Any) -> StandInLLM:
        engine = StandInLLM(kwargs)
        built.append(engine)
        return engine

    module = types.ModuleType("vllm")
    module.LLM = make_llm  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    yield built


def test_engine_options(engines: list[StandInLLM], tmp_path: Path) -> None:
    settings = LLMSettings(tensor_parallel_size=2, cache_dir=tmp_path, config_path=tmp_path / "c")
    client = get_model(MODEL, settings=settings, env={})
    assert isinstance(client.backend, BatchBackend)
    assert engines[0].kwargs == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "tensor_parallel_size": 2,
        "enable_prefix_caching": True,
    }
    # the engine's max_model_len (4096 here) wins over the table's 32768
    assert client.info.context_window == 4096
    assert client.count_tokens("three little words") == 3  # native tokenizer, no special tokens


def test_complete_many_is_one_batched_chat_call(engines: list[StandInLLM], tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path, config_path=tmp_path / "c")
    client = get_model(MODEL, settings=settings, env={})
    requests = [
        Request(prompt="alpha beta gamma", max_tokens=10, temperature=0.5, system="Be brief."),
        Request(
            prompt="one two three four", max_tokens=2, temperature=0.0, top_p=0.9, stop=("\n",)
        ),
        Request(prompt="x y", max_tokens=10, temperature=1.0, sample_index=3),
    ]
    results = client.complete_many(requests)
    ((messages, params),) = engines[0].chats
    assert messages[0] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "alpha beta gamma"},
    ]
    assert messages[1] == [{"role": "user", "content": "one two three four"}]
    assert [(p.temperature, p.top_p, p.max_tokens, p.stop, p.seed) for p in params] == [
        (0.5, 1.0, 10, None, 0),
        (0.0, 0.9, 2, ["\n"], None),
        (1.0, 1.0, 10, None, 3),  # resampling gets a different seed
    ]
    assert [r.text for r in results] == ["alpha beta gamma", "one two", "x y"]
    assert results[1].cut_off and not results[0].cut_off
    assert results[0].usage.input_tokens == 8 and results[0].usage.output_tokens == 3
    # a rerun is served from the call cache: no new engine call
    again = client.complete_many(requests)
    assert len(engines[0].chats) == 1 and all(r.cache_hit for r in again)


def test_prompt_longer_than_the_engine_allows(engines: list[StandInLLM], tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path, config_path=tmp_path / "c")
    client = get_model(MODEL, settings=settings, env={})
    with pytest.raises(ContextTooLong):
        client.complete(Request(prompt="TOO LONG", max_tokens=5))


def test_missing_vllm_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    info = resolve_model(MODEL, settings=LLMSettings(config_path=tmp_path / "c"), env={})
    with pytest.raises(ModelUnavailable, match=r"pip install 'booksum\[vllm\]'"):
        VLLMBackend(info, model_id="Qwen/Qwen2.5-7B-Instruct")


def test_engine_arguments_pass_through_from_config_and_cli(engines: list[StandInLLM], tmp_path: Path) -> None:
    from booksum_app.cli.base import _engine_args

    config = tmp_path / "config.toml"
    config.write_text("[vllm_engine]\ngpu_memory_utilization = 0.8\nmax_model_len = 16384\n", encoding="utf-8")
    cli_args = _engine_args(("max-model-len=8192", "enforce_eager=true", "dtype=bfloat16"))
    settings = LLMSettings(cache_dir=tmp_path, config_path=config, engine_args=cli_args)
    get_model(MODEL, settings=settings, env={})
    assert engines[0].kwargs == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "enable_prefix_caching": True,
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.8,  # from the config file
        "max_model_len": 8192,  # the flag beats the config
        "enforce_eager": True,
        "dtype": "bfloat16",
    }


def test_an_engine_argument_vllm_does_not_know_is_a_config_error(
    engines: list[StandInLLM], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.errors import ConfigError

    def strict_llm(*, model: str, tensor_parallel_size: int, enable_prefix_caching: bool) -> None:
        raise AssertionError("not reached")

    monkeypatch.setattr(sys.modules["vllm"], "LLM", strict_llm)
    settings = LLMSettings(cache_dir=tmp_path, config_path=tmp_path / "c", engine_args=(("gpu_mem", 0.5),))
    with pytest.raises(ConfigError, match="gpu_mem"):
        get_model(MODEL, settings=settings, env={})


def test_malformed_engine_argument_is_refused() -> None:
    from booksum_app.cli.base import _engine_args
    from booksum_app.errors import ConfigError

    with pytest.raises(ConfigError, match="KEY=VALUE"):
        _engine_args(("tensor_parallel_size",))
