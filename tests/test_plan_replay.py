"""Plans leave out judge calls the call cache will answer: a rerun is planned at what it will pay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from judge_fixtures import SUMMARIES

from booksum_app.cli import cli
from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.compare_plan import plan_grid
from booksum_app.runners.experiment import Experiment, PrecomputedSet
from booksum_app.runners.score import ScoreSettings, plan_score
from booksum_app.scoring.booookscore import BooookScoreJudge
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

JUDGE = "openai:gpt-5-mini"


def _score(summaries: Path, server: FakeServer, cache: Path, *extra: str) -> str:
    args = ["score", str(summaries), "--judge", JUDGE, "--base-url", server.openai_base_url,
            "--cache-dir", str(cache), "--yes", *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("mode", ["sentence", "batched"])
def test_first_requests_are_the_requests_the_judge_sends(mode: str) -> None:
    backend = FakeBackend()
    with Client(backend, concurrency=4) as client:  # type: ignore[arg-type]
        judge = BooookScoreJudge(client, mode=mode, batch_size=2)  # type: ignore[arg-type]
        planned = judge.first_requests(SUMMARIES["first.epub"])
        judge.judge({"first.epub": SUMMARIES["first.epub"]})
        assert not any(client.is_cached(r) for r in planned), "no cache: nothing is ever cached"
    sent = [r for r in backend.calls if r.sample_index == 0]
    assert sorted(map(repr, planned)) == sorted(map(repr, sent))


def test_a_rerun_of_score_is_planned_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    cache = tmp_path / "cache"
    with FakeServer() as server:
        llm = LLMSettings(base_url=server.openai_base_url, cache_dir=cache)
        settings = ScoreSettings(judge=JUDGE, llm=llm)
        before = plan_score([summaries], settings)
        _score(summaries, server, cache)
        after = plan_score([summaries], settings)
        assert before is not None and after is not None
        assert before.calls > 0 and before.cost_usd > 0 and before.replayed_calls == 0
        assert after.calls == 0 and after.cost_usd == 0 and after.replayed_calls == before.calls
        rerun = _score(summaries, server, cache)
        assert "answered from the call cache, free" in rerun and "$0.00" in rerun

        # one new summary: only its calls are planned
        summaries.write_text(json.dumps({**SUMMARIES, "c.epub": "A third story. It is short."}), encoding="utf-8")
        partial = plan_score([summaries], settings)
        assert partial is not None and partial.calls == 2 and partial.replayed_calls == before.calls

        # without the cache nothing is free
        uncached = plan_score([summaries], ScoreSettings(judge=JUDGE, llm=LLMSettings(
            base_url=server.openai_base_url, cache_dir=cache, use_cache=False)))
        assert uncached is not None and uncached.replayed_calls == 0 and uncached.calls == before.calls + 2


def test_a_judge_that_cannot_be_built_yet_plans_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    plan = plan_score([summaries], ScoreSettings(judge="anthropic:claude-sonnet-4-5",
                                                 llm=LLMSettings(cache_dir=tmp_path / "cache")))
    assert plan is not None and plan.calls > 0 and plan.replayed_calls == 0


def test_compare_plans_judge_calls_it_will_replay_as_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    exp = Experiment(precomputed=(PrecomputedSet("mine", summaries),), judge=JUDGE, out=tmp_path / "out")
    with FakeServer() as server:
        settings = LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "cache")
        before = plan_grid(exp, settings)
        _score(summaries, server, tmp_path / "cache")  # the same judge calls, made by score
        after = plan_grid(exp, settings)
        result = CliRunner().invoke(cli, ["compare", "--precomputed", f"mine={summaries}", "--judge", JUDGE,
                                          "--base-url", server.openai_base_url, "--cache-dir", str(tmp_path / "cache"),
                                          "--out", str(tmp_path / "out"), "--yes"], catch_exceptions=False)
    judge_before = next(line for line in before.lines if line.name == "judge")
    judge_after = next(line for line in after.lines if line.name == "judge")
    assert judge_before.calls > 0 and before.judge_replayed_calls == 0
    assert judge_after.calls == 0 and judge_after.cost_usd == 0 and after.judge_replayed_calls == judge_before.calls
    assert result.exit_code == 0 and "answered from the call cache (free)" in result.output


def test_the_client_tallies_every_call_and_pays_only_for_misses(tmp_path: Path) -> None:
    from booksum_app.llm.cache import CallCache

    request = Request(prompt="Say something.", max_tokens=10)
    for run in (1, 2):
        with Client(FakeBackend(), cache=CallCache(tmp_path)) as client:  # type: ignore[arg-type]
            assert client.is_cached(request) is (run == 2)
            client.complete(request)
            assert client.tally.calls == 1 and client.tally.cache_hits == (run == 2)
            assert client.tally.input_tokens > 0, "a replayed call still counts its tokens"
            assert (client.usage.input_tokens > 0) is (run == 1), "usage: paid tokens only"


# ---- summarize: a rerun the call cache answers whole is planned at $0 ---------------------------------------


def _summarize(book: Path, server: FakeServer, cache: Path, out: Path, *extra: str) -> Any:
    args = ["summarize", str(book), "--model", "openai:gpt-4", "--base-url", server.openai_base_url,
            "--cache-dir", str(cache), "-o", str(out), *extra]
    return CliRunner().invoke(cli, args, catch_exceptions=False)


@pytest.mark.parametrize("strategy", ["hier", "inc"])
def test_a_cached_summarize_rerun_is_planned_free_and_runs_without_yes(
    strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + " ".join(f"Mara bakes loaf {i} in Lisk at dawn." for i in range(3000)),
                    encoding="utf-8")
    cache = tmp_path / "cache"
    with FakeServer() as server:
        refused = _summarize(book, server, cache, tmp_path / "a", "--strategy", strategy, "--max-plan-cost", "0.01")
        assert refused.exit_code == 2 and "--yes" in refused.output, "a paid plan out of a terminal is refused"
        first = _summarize(book, server, cache, tmp_path / "b", "--strategy", strategy, "--yes")
        assert first.exit_code == 0, first.output
        paid = server.call_count
        rerun = _summarize(book, server, cache, tmp_path / "c", "--strategy", strategy, "--max-plan-cost", "0.01")
        assert rerun.exit_code == 0, rerun.output
        assert server.call_count == paid, "the rerun is answered by the call cache"
        assert "plan (" not in rerun.output, "a $0 plan is not shown or asked about"
