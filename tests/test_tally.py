"""One tally type: summarize's record, score's judge totals and compare's rows count calls the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import book_path
from judge_fixtures import SUMMARIES

from booksum_app.cli import cli
from booksum_app.llm.base import ModelInfo, Request, Tally, Usage
from booksum_app.llm.calls import Client
from booksum_app.llm.metered import Metered
from booksum_app.runners.summarize import summarize_book
from booksum_app.strategies.record import read_record, write_record
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

PRICED = ModelInfo("openai:priced", 8192, "cl100k_base", input_usd_per_mtok=1.0, output_usd_per_mtok=4.0,
                   cached_input_usd_per_mtok=0.1)


def test_a_call_is_priced_at_list_price_and_paid_only_when_it_reached_the_provider() -> None:
    usage = Usage(1000, 100, cached_input_tokens=800)
    paid = Tally.of_call(PRICED, usage, cache_hit=False, spent_usd=0.5)
    replayed = Tally.of_call(PRICED, usage, cache_hit=True, spent_usd=0.5)
    list_price = (200 * 1.0 + 800 * 0.1 + 100 * 4.0) / 1e6
    assert paid.cost_usd == replayed.cost_usd == pytest.approx(list_price)
    assert paid.spent_usd == 0.5 and replayed.spent_usd == 0.0
    assert paid.billed_input_tokens == pytest.approx(200 + 80)
    both = paid + replayed
    assert (both.calls, both.cache_hits, both.input_tokens, both.cached_input_tokens) == (2, 1, 2000, 1600)
    assert type(both) is Tally


def test_the_record_totals_are_a_tally_of_its_calls() -> None:
    backend = FakeBackend(PRICED)
    record = summarize_book(book_path("time-machine"), strategy="hier", model=Client(backend))  # type: ignore[arg-type]
    t = record.totals
    assert isinstance(t, Tally) and t.calls == len(record.calls) and t.cache_hits == 0
    assert t.cost_usd > 0 and t.spent_usd == pytest.approx(t.cost_usd, abs=1e-6), "nothing cached: all paid"
    assert t.input_tokens == sum(c.input_tokens for c in record.calls)


def test_a_record_from_before_the_tally_reads_what_it_paid_as_spent(tmp_path: Path) -> None:
    record = summarize_book(book_path("time-machine"), strategy="inc", model=Client(FakeBackend(PRICED)))  # type: ignore[arg-type]
    path = write_record(record, tmp_path / "r.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("spent_usd", "billed_input_tokens"):
        del data["totals"][key]
    path.write_text(json.dumps(data), encoding="utf-8")
    old = read_record(path).totals
    assert old.spent_usd == old.cost_usd == record.totals.cost_usd


def test_metered_counts_one_jobs_share_of_a_shared_client() -> None:
    with Client(FakeBackend(PRICED), concurrency=4) as shared:  # type: ignore[arg-type]
        first, second = Metered(shared), Metered(shared)
        first.complete(_request("one"))
        second.complete(_request("two"))
        second.submit(_request("three")).result()
    assert (first.tally.calls, second.tally.calls) == (1, 2)


def test_a_metered_call_cancelled_before_it_ran_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A cancelled future has no exception to ask for: asking raised inside the done callback."""
    with Client(FakeBackend(PRICED, latency_s=0.2), concurrency=1) as shared:  # type: ignore[arg-type]
        metered = Metered(shared)
        running, waiting = metered.submit(_request("runs")), metered.submit(_request("waits"))
        assert waiting.cancel()
        running.result()
    assert metered.tally.calls == 1
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


def _request(text: str) -> Request:
    return Request(prompt=text, max_tokens=10)


def test_a_rerun_from_the_cache_reports_the_same_judge_bill_and_spends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    runs = []
    with FakeServer(prompt_caching=True) as server:
        for n in (1, 2):
            out = tmp_path / f"s{n}.json"
            args = ["score", str(summaries), "--judge", "openai:gpt-5-mini", "--base-url", server.openai_base_url,
                    "--cache-dir", str(tmp_path / "cache"), "--yes", "--json", str(out)]
            result = CliRunner().invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            runs.append(json.loads(out.read_text(encoding="utf-8"))["systems"][0]["calls"])
    first, rerun = runs
    assert first["cache_hits"] == 0 and rerun["cache_hits"] == rerun["calls"] == first["calls"]
    for key in ("input_tokens", "cached_input_tokens", "billed_input_tokens", "billed_input_per_sentence", "cost_usd"):
        assert rerun[key] == first[key], key
    assert first["spent_usd"] == first["cost_usd"] > 0 and rerun["spent_usd"] == 0


def test_compare_and_score_count_the_same_judge_calls_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "mine.json"
    summaries.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    with FakeServer(prompt_caching=True) as server:
        common = ["--judge", "openai:gpt-5-mini", "--base-url", server.openai_base_url, "--yes",
                  "--cache-dir", str(tmp_path / "cache")]
        scored = CliRunner().invoke(cli, ["score", str(summaries), *common, "--json", str(tmp_path / "s.json")],
                                    catch_exceptions=False)
        compared = CliRunner().invoke(cli, ["compare", "--precomputed", f"mine={summaries}", *common,
                                            "--out", str(tmp_path / "c")], catch_exceptions=False)
    assert scored.exit_code == 0 and compared.exit_code == 0, scored.output + compared.output
    score_calls = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["systems"][0]["calls"]
    row = json.loads((tmp_path / "c" / "results.json").read_text(encoding="utf-8"))["rows"][0]["judge_usage"]
    for key in ("calls", "input_tokens", "output_tokens", "cached_input_tokens", "billed_input_tokens", "cost_usd"):
        assert row[key] == pytest.approx(score_calls[key]), key
    assert row["cache_hits"] == row["calls"] and row["spent_usd"] == 0, "compare replayed score's calls"
