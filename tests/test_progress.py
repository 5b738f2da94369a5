"""Progress with an ETA: the plan's calls set the total, the pace so far the time left."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_compare import write_book

from booksum_app.cli.live import snapshot_line, stats_text
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.compare import GridProgress, GridSnapshot, run_compare
from booksum_app.runners.experiment import Experiment
from booksum_app.runners.progress import ProgressSnapshot, RunProgress
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer


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


def test_compare_counts_summaries_per_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.cli.compare import _heartbeat_line

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    folder = tmp_path / "books"
    folder.mkdir()
    books = [write_book(folder / f"book-{n}.txt", seed=n, chapters=2, paragraphs=3) for n in (1, 2)]
    seen: list[GridSnapshot] = []
    tracker = GridProgress()
    tracker.listeners.append(seen.append)
    with FakeServer() as server:
        exp = Experiment(books=tuple(books), strategies=("hier", "direct"), models=("openai:gpt-4o-mini",),
                         chunk_sizes=(256,), max_summary_tokens=120, out=tmp_path / "out", use_judge=False)
        run_compare(exp, LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "cache"),
                    progress=tracker, plots=False)
    assert seen[0].configs == (("openai-gpt-4o-mini-256-hier", 0, 2), ("openai-gpt-4o-mini-direct", 0, 2))
    assert seen[-1].configs == (("openai-gpt-4o-mini-256-hier", 2, 2), ("openai-gpt-4o-mini-direct", 2, 2))
    middle = next(s for s in seen if 0 < s.done < s.total)
    assert sum(done for _, done, _ in middle.configs) == middle.done
    assert "openai-gpt-4o-mini-256-hier 0/2" in _heartbeat_line(seen[0])
    assert "hier" not in _heartbeat_line(seen[-1]).split("·")[-1], "finished configurations leave the line"


def test_compare_with_empty_summaries_exits_non_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = write_book(tmp_path / "book-1.txt", seed=1, chapters=1, paragraphs=2)
    with FakeServer(reply=lambda request: "Summary:") as server:  # cleaned away: nothing left
        result = CliRunner().invoke(cli, ["compare", str(book), "--strategies", "direct",
                                          "--models", "openai:gpt-4o-mini",
                                          "--base-url", server.openai_base_url, "--cache-dir", str(tmp_path / "c"),
                                          "--out", str(tmp_path / "out"), "--no-judge", "--no-plots", "--yes"])
    assert result.exit_code == 1, result.output
    assert "1 final summaries are empty" in result.stderr and "openai-gpt-4o-mini-direct: book-1.txt" in result.stderr
    assert (tmp_path / "out" / "results.json").is_file(), "the table and records are still written"


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_the_progress_line_is_one_line_of_whole_figures(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One line at any width: the figures that fit, each whole (calls and dollars first), never a
    figure broken onto a second line; at 200 columns every figure."""
    import io

    from rich.console import Console

    from booksum_app.cli import live as base

    snap = ProgressSnapshot("merges", 3, 7, 120, 4, 8, 1234567, 23456, 1.2345, 65.0, 200, 16)
    out = io.StringIO()
    monkeypatch.setattr(base, "err_console", Console(file=out, width=width, force_terminal=True, color_system=None))
    bar = base.progress_bar("{task.description}", "{task.fields[count]}")
    task = bar.add_task("merges", total=7, count="3/7", stats=base.fitted_stats(snap, label="merges", count="3/7"))
    bar.update(task, completed=3)
    base.err_console.print(bar.get_renderable())
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= width, lines
    figures = ("calls 120 (4 cached)", "8 in flight (limit 16)", "1,234,567+23,456 tok", "$1.2345", "ETA 0:43")
    shown = re.split(r"\d:\d\d:\d\d", lines[0], maxsplit=1)[1].strip()  # what follows the elapsed time
    assert all(part in figures for part in shown.split(" · ")), shown  # every figure shown is whole
    assert "merges" in lines[0] and "3/7" in lines[0] and "calls 120 (4 cached)" in shown and "$1.2345" in shown
    if width >= 120:
        assert shown.split(" · ") == list(figures)


def test_summarize_shows_its_phase_from_the_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the strategy's first stage the line names what is happening (no long "starting")."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. Teo sells it. " * 200, encoding="utf-8")
    tracker = RunProgress()
    stages: list[str] = [tracker.snapshot().stage]
    tracker.listeners.append(lambda snap: stages.append(snap.stage) if snap.stage != stages[-1] else None)
    from booksum_app.runners.run_config import RunConfig
    from booksum_app.runners.summarize import run_summary

    with FakeServer() as server:
        run_summary(book, RunConfig(strategy="hier", model="openai:fake", chunk_size=256),
                    llm_settings=LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "c"),
                    progress=tracker)
    assert stages[:4] == ["reading the book", "loading openai:fake", "chunking the book",
                          "waiting for the first answer"], stages
    assert len(stages) > 4 and "starting" not in stages
