"""One vLLM engine per model per process, freed when the command ends; its errors and sampling defaults.

The stand-in (``booksum_app.testing.fake_vllm``) logs every ``LLM(...)`` in ``module.engines``,
every tokenizer loaded alone in ``module.tokenizers_loaded``, and counts the engines given
back (``cleanup_dist_env_and_memory``): a plan counts with the tokenizer alone, the run builds
one engine per model, and nothing is held once the command is done.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.errors import ContextTooLong, ModelError
from booksum_app.llm.base import Request
from booksum_app.llm.providers import batcher
from booksum_app.llm.providers.vllm import held_engines
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing import fake_vllm

MODEL = "vllm:Qwen/Qwen2.5-7B-Instruct"
OTHER = "vllm:meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    module = fake_vllm.install()
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(batcher, "QUIET_S", 0.05)
    yield module


def write_book(path: Path, chapters: int = 3) -> Path:
    text = "\n\n".join(
        f"Chapter {c}\n\n" + " ".join(f"On day {c}-{s} the keeper counted {s} lamps by the river." for s in range(60))
        for c in range(1, chapters + 1)
    )
    path.write_text(text, encoding="utf-8")
    return path


def compare(tmp_path: Path, *models: str, judge: str = MODEL) -> None:
    book = write_book(tmp_path / "book.txt")
    args = ["compare", str(book), "--strategies", "hier", "--models", ",".join(models), "--chunk-sizes", "512",
            "--max-summary-len", "120", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
            "--judge", judge, "--no-plots", "--yes"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_compare_with_one_vllm_model_builds_one_engine_and_frees_it(vllm: types.ModuleType, tmp_path: Path) -> None:
    compare(tmp_path, MODEL)
    assert [e.model for e in vllm.engines] == ["Qwen/Qwen2.5-7B-Instruct"]  # summarizer and judge share it
    assert vllm.tokenizers_loaded, "the plan counted with the tokenizer alone"
    assert fake_vllm.cleanups(vllm) == 1 and held_engines(vllm) == []


def test_compare_with_two_vllm_models_builds_two_and_frees_both(vllm: types.ModuleType, tmp_path: Path) -> None:
    compare(tmp_path, MODEL, OTHER)
    assert sorted(e.model for e in vllm.engines) == ["Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"]
    assert fake_vllm.peak_held(vllm) == 2  # a grid holds each of its models for the whole run
    assert fake_vllm.cleanups(vllm) == 2 and held_engines(vllm) == []


def test_score_with_a_vllm_judge_builds_one_engine(vllm: types.ModuleType, tmp_path: Path) -> None:
    summaries = tmp_path / "summaries.json"
    text = " ".join(f"The keeper counted {i} lamps by the river on day {i}." for i in range(12))
    summaries.write_text(json.dumps({"book-a": text, "book-b": text.replace("keeper", "miller")}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["score", str(summaries), "--judge", MODEL, "--cache-dir", str(tmp_path / "c"),
                                      "--yes"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(vllm.engines) == 1
    assert fake_vllm.cleanups(vllm) == 1 and held_engines(vllm) == []


def test_models_used_one_after_another_are_never_held_together(vllm: types.ModuleType, tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path / "c")
    for model in (MODEL, OTHER, MODEL):
        with get_model(model, settings=settings, env={}) as client:
            client.complete(Request(prompt="One lamp. Two lamps.", max_tokens=20))
    assert len(vllm.engines) == 3 and fake_vllm.peak_held(vllm) == 1
    assert held_engines(vllm) == []


def test_two_clients_of_one_model_share_its_engine(vllm: types.ModuleType, tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path / "c")
    first = get_model(MODEL, settings=settings, env={})
    second = get_model(MODEL, settings=settings, env={})
    assert len(vllm.engines) == 1 and held_engines(vllm) == ["Qwen/Qwen2.5-7B-Instruct"]
    first.close()
    assert held_engines(vllm) == ["Qwen/Qwen2.5-7B-Instruct"], "the second client still uses it"
    second.close()
    assert held_engines(vllm) == [] and fake_vllm.cleanups(vllm) == 1


@pytest.mark.parametrize("legacy", [False, True], ids=["renderer", "input-processor"])
def test_a_prompt_too_long_is_context_too_long_in_either_vllm_wording(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, legacy: bool
) -> None:
    module = fake_vllm.install(legacy_errors=legacy)
    monkeypatch.setitem(sys.modules, "vllm", module)
    settings = LLMSettings(cache_dir=tmp_path / "c", engine_args=(("max_model_len", 64),))
    with get_model(MODEL, settings=settings, env={}) as client, pytest.raises(ContextTooLong):
        client.complete(Request(prompt="long " * 100, max_tokens=8))


def test_an_unknown_refusal_is_measured_not_guessed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A refusal in words booksum does not know is a context error only when the request does not fit."""
    module = fake_vllm.install()
    monkeypatch.setitem(sys.modules, "vllm", module)
    settings = LLMSettings(cache_dir=tmp_path / "c", engine_args=(("max_model_len", 64),), max_attempts=1)
    with get_model(MODEL, settings=settings, env={}) as client:
        engine = module.engines[0]

        def refuse(*args: object, **kwargs: object) -> list[fake_vllm.RequestOutput]:
            raise ValueError("request refused by a future vLLM")

        monkeypatch.setattr(engine, "chat", refuse)
        with pytest.raises(ContextTooLong):
            client.complete(Request(prompt="long " * 60, max_tokens=8))
        with pytest.raises(ModelError) as caught:
            client.complete(Request(prompt="short", max_tokens=8))
        assert not isinstance(caught.value, ContextTooLong)


def test_the_models_generation_config_is_applied_as_vllm_serve_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recommended = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1}
    module = fake_vllm.install(generation_config=recommended)
    monkeypatch.setitem(sys.modules, "vllm", module)
    with get_model(MODEL, settings=LLMSettings(cache_dir=tmp_path / "c"), env={}) as client:
        client.complete(Request(prompt="One lamp.", max_tokens=20, temperature=0.5, top_p=1.0))
        (_, (params,)) = module.engines[0].chats[0]
    # booksum's own temperature and top_p, the model's recommendations for the rest
    assert (params.temperature, params.top_p) == (0.5, 1.0)
    assert (params.top_k, params.min_p, params.repetition_penalty) == (20, 0.05, 1.1)


def test_no_generation_config_leaves_vllms_defaults(vllm: types.ModuleType, tmp_path: Path) -> None:
    with get_model(MODEL, settings=LLMSettings(cache_dir=tmp_path / "c"), env={}) as client:
        client.complete(Request(prompt="One lamp.", max_tokens=20))
        (_, (params,)) = vllm.engines[0].chats[0]
    assert (params.top_k, params.min_p, params.repetition_penalty) == (0, 0.0, 1.0)
