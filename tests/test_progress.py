"""Progress with an ETA: the plan's calls set the total, the pace so far the time left."""

from __future__ import annotations

from pathlib import Path

from booksum_app.cli.base import snapshot_line, stats_text
from booksum_app.llm.calls import Client
from booksum_app.runners.progress import ProgressSnapshot, RunProgress
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_backend import FakeBackend


def _snap(calls: int, planned: int, elapsed_s: float) -> ProgressSnapshot:
    return ProgressSnapshot("merges", 1, 3, calls, 0, 2, 1000, 100, 0.5, elapsed_s, planned)


def test_eta_is_the_pace_so_far_times_the_calls_left() -> None:
    assert _snap(10, 40, 20.0).eta_s == 60.0
    assert _snap(0, 40, 1.0).eta_s is None, "no pace before the first call"
    assert _snap(45, 40, 90.0).eta_s is None, "past the plan (regenerations): no made-up figure"
    assert "ETA 1:00" in stats_text(_snap(10, 40, 20.0))
    assert snapshot_line(_snap(10, 40, 20.0)).startswith("merges 1/3: calls 10 (0 cached) · 2 in flight")


def test_summarize_reports_its_planned_calls(tmp_path: Path) -> None:
    book = tmp_path / "b.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 400, encoding="utf-8")
    progress = RunProgress()
    record = summarize_book(book, strategy="hier", model=Client(FakeBackend()), chunk_size=256,
                            max_summary_tokens=120, progress=progress)
    planned = progress.snapshot().planned_calls
    assert planned > 0 and record.totals.calls <= planned
