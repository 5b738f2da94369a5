"""Compare's plan cuts many books on worker processes: the same plan, the run reuses the cuts,
failures cost only time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_compare import write_book

import booksum_app.chunking.memo as memo_module
import booksum_app.runners.summarize as summarize_module
from booksum_app.chunking.memo import ChunkMemo
from booksum_app.cli import cli
from booksum_app.errors import BookFormatError
from booksum_app.runners import plan_cuts
from booksum_app.runners.compare_plan import GridPlan, open_context, plan_grid
from booksum_app.runners.experiment import Experiment
from booksum_app.runners.plan_cuts import CutOrder, PlanCutters, cut_file
from booksum_app.testing.fake_server import FakeServer

N_BOOKS = plan_cuts.MIN_BOOKS + 1


@pytest.fixture
def many_books(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "books"
    folder.mkdir()
    return [write_book(folder / f"book-{n}.txt", seed=n) for n in range(N_BOOKS)]


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cuts, "available_cores", lambda: 2)  # workers even on a one-core CI box
    monkeypatch.setattr(plan_cuts, "BOOT_S", 0.0)  # and for books this short


def test_workers_are_started_only_for_a_grid_whose_text_repays_their_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cuts, "BOOT_S", 0.7)

    def wanted(n_books: int, chars: int, cores: int = 2) -> bool:
        monkeypatch.setattr(plan_cuts, "available_cores", lambda: cores)
        cutters = PlanCutters.for_grid(n_books, tokenizers_named=True, chapter_aware=False, include_front_matter=False)
        if cutters is None:
            return False
        try:
            return cutters.wanted(chars)
        finally:
            cutters.close()

    assert not wanted(7, 3_200_000), "fewer than MIN_BOOKS books"
    assert not wanted(200, 3_200_000, cores=1)
    assert not wanted(40, 183_000), "40 books of 35K words: 7M characters, cut faster here"
    assert wanted(200, 183_000), "200 of them: 37M characters"
    assert wanted(10, 3_200_000), "ten books the size of War and Peace"
    assert wanted(60, 183_000, cores=8) and not wanted(60, 183_000, cores=2), "more cores repay the start sooner"


def experiment(books: list[Path], out: Path) -> Experiment:
    return Experiment(books=tuple(books), strategies=("hier", "inc", "direct"), models=("openai:gpt-4o-mini",),
                      chunk_sizes=(256, 512), max_summary_tokens=120, out=out)


def serial_plan(exp: Experiment, monkeypatch: pytest.MonkeyPatch) -> GridPlan:
    """The plan made without workers: what the workers' plan must equal."""
    with monkeypatch.context() as serial:
        serial.setattr(plan_cuts, "MIN_BOOKS", 10**6)
        return plan_grid(exp)


def no_cutting_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunking in this process fails the test: only the spawned workers (fresh imports) may cut."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the plan cut a book in its own process")

    monkeypatch.setattr(memo_module, "chunk_book_spans", refuse)


def test_many_books_are_cut_by_workers_into_the_same_plan(
    many_books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = experiment(many_books, tmp_path / "out")
    alone = serial_plan(exp, monkeypatch)
    no_cutting_here(monkeypatch)
    memo = ChunkMemo()
    in_workers = plan_grid(exp, chunk_memo=memo)
    assert in_workers == alone
    assert len(memo) == N_BOOKS * 2, "one cut per book and chunk size (direct uses the largest)"


def test_identical_copies_are_cut_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    original = write_book(folder / "book-0.txt", seed=0)
    copies = [original] + [folder / f"copy-{n}.txt" for n in range(1, N_BOOKS)]
    for copy in copies[1:]:
        copy.write_bytes(original.read_bytes())
    ordered: list[CutOrder] = []
    real_submit = PlanCutters.submit

    def submit(self: PlanCutters, order: CutOrder) -> None:
        ordered.append(order)
        real_submit(self, order)

    monkeypatch.setattr(PlanCutters, "submit", submit)
    plan = plan_grid(experiment(copies, tmp_path / "out"))
    assert len(ordered) == 1 and all(line.remaining == N_BOOKS for line in plan.lines if line.name != "judge")


def test_books_no_worker_cut_are_read_again_and_planned_the_same(
    many_books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = experiment(many_books, tmp_path / "out")
    alone = serial_plan(exp, monkeypatch)
    monkeypatch.setattr(PlanCutters, "results", lambda self: ((order, {}) for order, _ in self._orders))
    assert plan_grid(exp) == alone


def test_a_book_changed_while_the_grid_is_planned_is_refused(
    many_books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def results_after_an_edit(self: PlanCutters) -> Iterator[Any]:
        many_books[3].write_text(many_books[3].read_text() + "\nA new last line.\n")
        return ((order, {}) for order, _ in self._orders)

    monkeypatch.setattr(PlanCutters, "results", results_after_an_edit)
    with pytest.raises(BookFormatError, match="book-3.txt: the file changed while the grid was being planned"):
        plan_grid(experiment(many_books, tmp_path / "out"))


def test_a_worker_cuts_nothing_for_a_file_that_is_not_the_one_planned(many_books: list[Path], tmp_path: Path) -> None:
    exp = experiment(many_books, tmp_path / "out")
    ctx = open_context(many_books[0], exp)
    good = CutOrder(ctx.path, ctx.sha256, (("cl100k_base", 256),))
    spans = cut_file(good, False, False)
    assert [s.n_tokens for s in spans[("cl100k_base", 256)]] and all(
        s.n_tokens <= 256 for s in spans[("cl100k_base", 256)]
    )
    assert cut_file(CutOrder(ctx.path, "0" * 64, good.cuts), False, False) == {}


def test_the_run_takes_the_workers_cuts(
    many_books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut_here: list[str] = []
    monkeypatch.setattr(memo_module, "chunk_book_spans", lambda *a, **k: cut_here.append("plan") or ())
    real_chunk_book = summarize_module.chunk_book
    monkeypatch.setattr(summarize_module, "chunk_book",
                        lambda *a, **k: cut_here.append("run") or real_chunk_book(*a, **k))
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        args = ["compare", *map(str, many_books), "--strategies", "hier", "--models", "openai:gpt-4o-mini",
                "--chunk-sizes", "512", "--max-summary-len", "120", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots", "--yes",
                "--no-judge"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert cut_here == [], "every book was cut once, by a worker, and the run took those cuts"
    assert len(list((tmp_path / "out" / "records").rglob("*.json"))) == N_BOOKS
