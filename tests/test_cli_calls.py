"""The issue's reproductions through the command line: summarize against servers that misbehave."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import book_path

from booksum_app.cli import cli
from booksum_app.testing.fake_server import FakeServer

GUARD_S = 240.0  # a hang detector: each run below ends in seconds


def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in a thread (a deadlock fails the test instead of hanging the suite)."""
    box: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        box["result"] = CliRunner().invoke(cli, list(args))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(GUARD_S), "the run hung"
    result = box["result"]
    return result.exit_code, result.stdout, result.stderr  # type: ignore[attr-defined]


def test_summarize_at_concurrency_1_completes_against_a_server_failing_30_percent(tmp_path: Path) -> None:
    book = book_path("time-machine")
    with FakeServer(fault_rate=0.3, fault_kinds=("429", "500", "drop"), retry_after_s=0.01, seed=3) as server:
        code, _, stderr = invoke("summarize", str(book), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
                                 "--concurrency", "1", "--no-cache", "-o", str(tmp_path / "out"))
        failed = sum(1 for r in server.requests if r.fault)
    assert code == 0, stderr
    record = json.loads((tmp_path / "out.json").read_text())
    assert failed > 0 and record["totals"]["input_tokens"] == server.billed.input_tokens


def test_a_reasoning_model_behind_a_base_url_gets_room_and_every_token_is_counted(tmp_path: Path) -> None:
    """o4-mini spends 700 hidden tokens per answer: the run completes and its record says what was billed."""
    book = book_path("time-machine")
    with FakeServer(fault_rate=1.0, fault_kinds=("reasoning",)) as server:
        code, _, stderr = invoke("summarize", str(book), "-m", "openai:o4-mini", "--base-url",
                                 server.openai_base_url, "--no-cache", "-o", str(tmp_path / "out"))
        sent = server.requests
    assert code == 0, stderr
    record = json.loads((tmp_path / "out.json").read_text())
    totals = record["totals"]
    assert totals["output_tokens"] == server.billed.output_tokens
    assert totals["input_tokens"] == server.billed.input_tokens
    assert totals["calls"] == len(sent)  # nothing resent unchanged
    assert all("max_completion_tokens" in r.payload and "max_tokens" not in r.payload for r in sent)


def test_a_failed_run_says_what_it_spent(tmp_path: Path) -> None:
    book = book_path("time-machine")
    with FakeServer(script=["empty"] * 3 + [None] * 4 + ["401"]) as server:
        code, _, stderr = invoke("summarize", str(book), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
                                 "--concurrency", "1", "--no-cache", "-o", str(tmp_path / "out"))
    assert code == 4
    line = stderr.strip().splitlines()[-1]
    assert "spent before failing: $" in line and "3 of them wasted replies" in line
    partial = tmp_path / "out.failed.json"
    assert f"recorded in {partial}" in line
    record = json.loads(partial.read_text())
    assert record["status"] == "failed" and record["totals"]["input_tokens"] == server.billed.input_tokens
    assert record["totals"]["wasted_attempts"] == 3 and "401" in record["error"]


def test_totals_are_counted_at_the_client_not_from_the_strategys_own_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A strategy that reports no calls (as a 20-line plugin may) still has its calls and money counted."""
    import dataclasses

    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.summarize import summarize_book
    from booksum_app.strategies.registry import get_strategy

    hier = get_strategy("hier")
    run = hier.run
    monkeypatch.setattr(hier, "run", lambda *a, **k: dataclasses.replace(run(*a, **k), calls=()))
    with FakeServer() as server:
        record = summarize_book(book_path("time-machine"), model="openai:gpt-4o", clean=False,
                                llm_settings=LLMSettings(base_url=server.openai_base_url, use_cache=False))
    assert record.calls == ()
    assert record.totals.calls == server.completed_count > 10
    assert (record.totals.input_tokens, record.totals.output_tokens) == (server.billed.input_tokens,
                                                                         server.billed.output_tokens)
    assert record.totals.spent_usd > 0
