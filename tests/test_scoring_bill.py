"""The judge's bill: prompt order for provider caches, the warm-up call, cached tokens in outputs, the plan."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_fixtures import SUMMARIES

from booksum_app.chunking import get_tokenizer, split_sentences
from booksum_app.cli import cli
from booksum_app.llm.base import Completion, ModelInfo, Request
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.anthropic import AnthropicBackend
from booksum_app.llm.providers.openai import OpenAIBackend
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.compare import run_compare
from booksum_app.runners.compare_plan import plan_grid
from booksum_app.runners.experiment import Experiment
from booksum_app.runners.judge_plan import cache_style, judge_estimate, plan_judge, priced
from booksum_app.scoring.booookscore import BooookScoreJudge, load_judge_prompt
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

PRICES = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0, "cached_input_usd_per_mtok": 0.1}
N_SENTENCES = sum(len(split_sentences(t)) for t in SUMMARIES.values())


def count(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


# ---- prompt order ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sentence", "batched"])
def test_the_shared_prefix_is_byte_identical_and_only_the_sentences_vary(mode: str) -> None:
    backend = FakeBackend()
    with Client(backend, concurrency=4) as client:
        BooookScoreJudge(client, mode=mode, batch_size=3).judge(SUMMARIES)  # type: ignore[arg-type]
    constant = load_judge_prompt(mode).constant_prefix  # type: ignore[arg-type]
    assert count(constant) >= 1024, "long enough for OpenAI's and Anthropic's caches"
    assert not any(text in constant for s in SUMMARIES.values() for text in split_sentences(s))
    for request in backend.calls:  # every call, on either summary: the constant part first ...
        assert request.user_text.startswith(constant) and request.prefix_breaks == (len(constant),)
        assert request.prefix_blocks()[0] == constant
        # ... then the summary, then the sentence(s) and nothing but the response marker
        assert request.prompt.rstrip().endswith("[Your response]")
        assert "confusion" not in request.prompt, "the answer instructions are in the shared part"
    for summary in SUMMARIES.values():
        prefixes = {r.shared_prefix for r in backend.calls if summary in r.shared_prefix}
        assert len(prefixes) == 1 and prefixes.pop() == load_judge_prompt(mode).shared_prefix(summary)  # type: ignore[arg-type]


# ---- warm-up before fan-out -----------------------------------------------------------------


class TimedBackend(FakeBackend):
    """A fake judge that records when each call started and ended."""

    def __init__(self) -> None:
        super().__init__(latency_s=0.05)
        self.spans: list[tuple[str, float, float]] = []
        self._spans_lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        completion = super().complete(request)
        with self._spans_lock:
            self.spans.append((request.shared_prefix, start, time.perf_counter()))
        return completion


def first_call_overlaps(warm_up: bool) -> list[bool]:
    backend = TimedBackend()
    with Client(backend, concurrency=8) as client:
        BooookScoreJudge(client, warm_up=warm_up).judge(SUMMARIES)
    overlaps = []
    for prefix in dict.fromkeys(p for p, _, _ in backend.spans):
        spans = sorted((s, e) for p, s, e in backend.spans if p == prefix)
        first_end = spans[0][1]
        overlaps.append(any(start < first_end for start, _ in spans[1:]))
    return overlaps


def test_the_first_call_on_each_summary_is_answered_before_the_others_go_out() -> None:
    assert first_call_overlaps(warm_up=True) == [False, False]
    assert first_call_overlaps(warm_up=False)[0], "without the warm-up the first wave overlaps"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_with_the_warm_up_only_the_first_call_of_the_run_misses_the_cache(api: str) -> None:
    def misses(warm_up: bool) -> int:
        with FakeServer(prompt_caching=True, latency_s=0.03) as server, judge_client(api, server) as client:
            BooookScoreJudge(client, warm_up=warm_up).judge(SUMMARIES)
            records = client.calls
        assert len(records) == N_SENTENCES
        return sum(1 for r in records if r.usage.cached_input_tokens == 0)

    assert misses(warm_up=True) == 1  # later calls read the constant part, or it and their summary
    assert misses(warm_up=False) > 1  # the first wave all missed


# ---- plans ----------------------------------------------------------------------------------


def judge_client(api: str, server: FakeServer) -> Client:
    if api == "openai":
        info = ModelInfo(name="openai:test", context_window=128_000, tokenizer="cl100k_base", **PRICES)
        return Client(OpenAIBackend(info, model_id="t", api_key="k", base_url=server.openai_base_url), concurrency=4)
    info = ModelInfo(name="anthropic:test", context_window=200_000, tokenizer="cl100k_base",
                     cache_write_usd_per_mtok=1.25, **PRICES)
    return Client(AnthropicBackend(info, model_id="t", api_key="k", base_url=server.anthropic_base_url), concurrency=4)


@pytest.mark.parametrize("mode", ["sentence", "batched"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_plan_predicts_the_cached_bill(api: str, mode: str) -> None:
    with FakeServer(prompt_caching=True, latency_s=0.01) as server, judge_client(api, server) as client:
        BooookScoreJudge(client, mode=mode, batch_size=3).judge(SUMMARIES)  # type: ignore[arg-type]
        usage, info = client.usage, client.info
    estimate = judge_estimate(count, mode=mode, batch_size=3, summaries=list(SUMMARIES.values()),  # type: ignore[arg-type]
                              style=cache_style(info))
    plan = priced(info, estimate)
    assert plan.calls == client.n_calls and plan.sentences == N_SENTENCES
    assert plan.input_tokens == pytest.approx(usage.input_tokens, rel=0.01)
    assert plan.cached_input_tokens == pytest.approx(usage.cached_input_tokens, rel=0.05)
    assert plan.cache_write_input_tokens == pytest.approx(usage.cache_write_input_tokens, rel=0.05, abs=5)
    assert plan.billed_input_tokens == pytest.approx(info.billed_input_tokens(usage), rel=0.05)
    assert plan.cost_usd < plan.uncached_cost_usd


def test_a_judge_without_a_cached_price_gets_no_discount() -> None:
    plan = plan_judge(SUMMARIES, judge="openai:gpt-4", mode="sentence", batch_size=10)
    assert plan.cached_input_tokens == 0 and plan.cost_usd == plan.uncached_cost_usd
    assert plan.calls == N_SENTENCES
    cached = plan_judge(SUMMARIES, judge="openai:gpt-4o", mode="sentence", batch_size=10)
    assert cached.cached_input_tokens > 0 and cached.cost_usd < cached.uncached_cost_usd


def write_book(path: Path) -> Path:
    lines = ["The Story\n", "Chapter 1\n"]
    lines += [f"On day {i}, Ada went to the harbour and found a letter from Bruno number {i}.\n" for i in range(60)]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_the_compare_plan_counts_the_sentences_of_finished_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = write_book(tmp_path / "book.txt")
    exp = Experiment(books=(book,), strategies=("direct",), models=("openai:gpt-4o-mini",),
                     max_summary_tokens=300, out=tmp_path / "o", judge="openai:gpt-4o-mini")
    with FakeServer(prompt_caching=True) as server:
        settings = LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "cache")
        before = plan_grid(exp, settings).lines[-1]
        result = run_compare(exp, settings, plots=False)
    assert before.calls == 300 // 20, "a summary still to write: G / 20 sentences"
    judged = result.rows[0].books[0].judgement
    assert judged is not None
    stored = plan_grid(exp, dataclasses.replace(settings, cache_dir=tmp_path / "other-cache"))
    assert stored.lines[-1].calls == 0 and stored.judge_replayed_calls == 0, "its scores are stored: no judge call"
    shutil.rmtree(tmp_path / "o" / "scores")  # without them, the finished summary is judged again
    replayed = plan_grid(exp, settings)  # the judge's calls are in the call cache now: free
    assert replayed.lines[-1].calls == 0 and replayed.judge_replayed_calls == judged.n_sentences
    after = plan_grid(exp, dataclasses.replace(settings, cache_dir=tmp_path / "other-cache"))
    assert [line.remaining for line in after.lines] == [0, 1]
    assert after.lines[-1].calls == judged.n_sentences != before.calls  # the summary's own sentences
    assert 0 < after.lines[-1].cached_input_tokens < after.lines[-1].input_tokens
    row = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))["rows"][0]
    judge = row["judge_usage"]
    assert judge["cached_input_tokens"] > 0 and judge["judged_sentences"] == judged.n_sentences
    assert 0 < judge["billed_input_per_sentence"] < judge["input_tokens"] / judged.n_sentences
    csv_head, csv_row = (tmp_path / "o" / "results.csv").read_text(encoding="utf-8").splitlines()[:2]
    column = csv_head.split(",").index("judge_billed_input_per_sentence")
    assert float(csv_row.split(",")[column]) == pytest.approx(judge["billed_input_per_sentence"])


# ---- score's outputs ------------------------------------------------------------------------


def test_score_shows_billed_input_per_judged_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    with FakeServer(prompt_caching=True) as server:
        args = ["score", str(summaries), "--judge", "openai:gpt-5-mini", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "cache"), "--yes"]
        table = CliRunner().invoke(cli, ["-v", *args, "--json", str(tmp_path / "s.json")], catch_exceptions=False)
    assert table.exit_code == 0, table.output
    assert "In/sent." in table.output and "if the prompt cache serves" in table.output
    assert " cached) + " in table.output, "-v: each call line says how much was read from the cache"
    calls = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["systems"][0]["calls"]
    assert calls["judged_sentences"] == N_SENTENCES and calls["cached_input_tokens"] > 0
    per = calls["billed_input_per_sentence"]
    # gpt-5-mini: cached input at 10% of the input price
    assert per == pytest.approx((calls["input_tokens"] - 0.9 * calls["cached_input_tokens"]) / N_SENTENCES, rel=1e-3)
    assert per < 0.5 * calls["input_tokens"] / N_SENTENCES


def test_the_judge_plan_line_leads_with_the_figure_to_budget_for() -> None:
    from booksum_app.cli.score import _judge_plan_line
    from booksum_app.runners.judge_plan import JudgePlan

    plan = JudgePlan(judge="openai:gpt-4o", calls=1080, input_tokens=4_000_000, output_tokens=60_000,
                     cost_usd=0.42, cached_input_tokens=4_526_848, uncached_cost_usd=0.76)
    line = _judge_plan_line(plan)
    assert "tokens, $0.76 ($0.42 if the prompt cache serves 4,526,848 input tokens)" in line, line
    assert plan.budget_usd == 0.76
    plain = JudgePlan(judge="openai:gpt-4o", calls=3, input_tokens=900, output_tokens=90, cost_usd=0.01,
                      uncached_cost_usd=0.01)
    assert "prompt cache" not in _judge_plan_line(plain) and "$0.01" in _judge_plan_line(plain)
