"""vLLM's offline engine gets the calls made at the same moment as one ``LLM.chat``, from every strategy and the judge.

The ``vllm`` stand-in (``booksum_app.testing.fake_vllm``) has vLLM's public signatures and
records every ``LLM.chat`` call; it answers with the fake server's extractive summaries and
judge answers. No test here waits on a clock: batches close when every caller is in.
"""

from __future__ import annotations

import math
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import book_path

from booksum_app.cli import cli
from booksum_app.errors import ConfigError, ContextTooLong
from booksum_app.llm.base import Request
from booksum_app.llm.providers import batcher
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.strategies.record import read_record
from booksum_app.testing import fake_vllm
from booksum_app.testing.fake_replies import reply_text

MODEL = "vllm:Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The stand-in installed as ``vllm``; a pause long enough that a loaded test machine never splits a burst."""
    module = fake_vllm.install()
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(batcher, "QUIET_S", 0.3)
    monkeypatch.setattr(batcher, "WINDOW_S", 30.0)
    yield module


def engine(module: types.ModuleType) -> fake_vllm.LLM:
    (built,) = module.engines
    assert isinstance(built, fake_vllm.LLM)
    return built


def summarize(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "tm"
    args = ["summarize", str(book_path("time-machine")), "--model", MODEL, "--strategy", "hier",
            "--no-clean", "--cache-dir", str(tmp_path / "cache"), "-o", str(out), *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return tmp_path / "tm.json"


def test_hier_sends_its_leaves_as_one_batch(vllm: types.ModuleType, tmp_path: Path) -> None:
    record = read_record(summarize(tmp_path))
    leaves = sum(1 for node in record.nodes if node.level == 0)
    llm = engine(vllm)
    assert leaves > 8
    assert llm.batch_sizes[0] == leaves, f"leaves went out as {llm.batch_sizes}"
    assert sum(llm.batch_sizes) == record.totals.calls
    assert len(llm.batch_sizes) <= 8, llm.batch_sizes  # one per level, give or take a regeneration
    assert llm.concurrent_calls == 0  # the engine is never entered from two threads


def test_a_lower_concurrency_caps_the_batch(vllm: types.ModuleType, tmp_path: Path) -> None:
    summarize(tmp_path, "--concurrency", "4")
    sizes = engine(vllm).batch_sizes
    assert max(sizes) == 4 and sizes[:3] == [4, 4, 4]


def test_regenerations_go_out_together(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every leaf's first answer runs past its budget: the regenerations form the second batch."""

    def first_try_too_long(conversation: fake_vllm.Conversation, params: fake_vllm.SamplingParams) -> str:
        user = conversation[-1]["content"]
        if params.seed == 0 and "Summary 1:" not in user:  # a leaf's first try (merges list summaries)
            return "word " * ((params.max_tokens or 16) + 50)
        return reply_text(user, max_tokens=params.max_tokens or 16)

    module = fake_vllm.install(reply=first_try_too_long)
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(batcher, "QUIET_S", 0.3)
    monkeypatch.setattr(batcher, "WINDOW_S", 30.0)
    record = read_record(summarize(tmp_path))
    leaves = sum(1 for node in record.nodes if node.level == 0)
    sizes = engine(module).batch_sizes
    assert sizes[:2] == [leaves, leaves], sizes
    regenerations = engine(module).chats[1][1]
    assert {p.seed for p in regenerations} == {1}  # resampled, not replayed


def test_the_judge_batches_its_questions(vllm: types.ModuleType, tmp_path: Path) -> None:
    from booksum_app.runners.score import score_texts

    summary = " ".join(f"The traveller saw thing number {i} in the year {800_000 + i}." for i in range(40))
    scores = score_texts({"tm": summary}, judge=MODEL, llm_settings=LLMSettings(cache_dir=tmp_path / "c"))
    assert scores.booookscore is not None
    sizes = engine(vllm).batch_sizes
    assert sum(sizes) == scores.totals.calls
    assert len(sizes) <= math.ceil(scores.totals.calls / 256) + 1, sizes  # + the warm-up question


def test_calls_from_many_threads_and_a_group_share_one_chat(vllm: types.ModuleType, tmp_path: Path) -> None:
    client = get_model(MODEL, settings=LLMSettings(cache_dir=tmp_path / "c"), env={})
    futures = [client.submit(Request(prompt=f"Sentence {i}. More.", max_tokens=20)) for i in range(30)]
    answers: list[object] = []
    group = threading.Thread(target=lambda: answers.extend(
        client.complete_many([Request(prompt=f"Group {i}.", max_tokens=20) for i in range(5)])))
    group.start()
    results = [f.result() for f in futures]
    group.join()
    assert [r.text for r in results] == [f"Sentence {i}. More." for i in range(30)]
    assert len(answers) == 5
    assert sum(engine(vllm).batch_sizes) == 35 and engine(vllm).batch_sizes[0] >= 30
    client.close()


def test_a_prompt_too_long_fails_alone(vllm: types.ModuleType, tmp_path: Path) -> None:
    client = get_model(MODEL, settings=LLMSettings(cache_dir=tmp_path / "c", engine_args=(("max_model_len", 64),)),
                       env={})
    requests = [Request(prompt=f"Short prompt {i}.", max_tokens=8) for i in range(7)]
    requests.insert(3, Request(prompt="long " * 100, max_tokens=8))
    futures = [client.submit(r) for r in requests]
    with pytest.raises(ContextTooLong):
        futures[3].result()
    assert [f.result().text for i, f in enumerate(futures) if i != 3] == [f"Short prompt {i}." for i in range(7)]
    client.close()


def test_prefix_caching_can_be_turned_off(vllm: types.ModuleType, tmp_path: Path) -> None:
    from booksum_app.cli.base import _engine_args

    settings = LLMSettings(cache_dir=tmp_path, engine_args=_engine_args(("enable_prefix_caching=false",)))
    get_model(MODEL, settings=settings, env={})
    assert engine(vllm).engine_args["enable_prefix_caching"] is False


def test_data_parallel_is_refused_with_the_serving_recipe(vllm: types.ModuleType, tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path, engine_args=(("data_parallel_size", 2),))
    with pytest.raises(ConfigError, match=r"vllm serve Qwen/Qwen2.5-7B-Instruct --data-parallel-size 2"):
        get_model(MODEL, settings=settings, env={})
    assert not vllm.engines


def test_the_stand_in_refuses_data_parallel_as_vllm_does() -> None:
    module = fake_vllm.install()
    with pytest.raises(ValueError, match="not supported for single-process usage"):
        module.LLM(model="m", data_parallel_size=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gpu_mem'"):
        module.LLM(model="m", gpu_mem=0.5)
