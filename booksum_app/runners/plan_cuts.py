"""Compare's plan cuts many books on worker processes, one per core, instead of one after another.

The plan chunks every book still to run before the first paid call (it needs their chunk
counts to price the grid). That is ~20 ms of BPE for a 35K-word book, so 200 books kept the
first call waiting 4.4 s on one core while the other sat idle. When the grid has at least
:data:`MIN_BOOKS` book files, every model counts with a named tokenizer (``cl100k_base``,
``o200k_base``, the estimate), there is more than one core and the grid's text is long enough
to repay starting them (:meth:`PlanCutters.wanted`), the plan hands spawned workers each book's
cuts still needed as soon as it has read the book and checked which configurations are
finished; each worker reads the file again, checks it is the file the plan read (SHA-256), and sends back only
the offsets (:class:`~booksum_app.chunking.base.ChunkSpan`), which go into the plan's
:class:`~booksum_app.chunking.memo.ChunkMemo` for the plan and then the run.

Cuts are the same wherever they are made (the same tokenizer, by name, and the same options),
and a worker that fails or finds another file only costs time: the plan cuts that book itself.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from booksum_app.books import open_book
from booksum_app.chunking import get_tokenizer
from booksum_app.chunking.base import ChunkSpan
from booksum_app.chunking.chunker import chunk_book_spans
from booksum_app.files import available_cores, file_sha256
from booksum_app.runners.workers import exit_with_parent

MIN_BOOKS = 8
# Workers pay off once the grid's text is long enough: serial cutting runs at ~9.5M characters
# a second and spawning the workers takes ~0.7 s (2-core machine, 35K-word books: break-even
# measured near 80 books, 15M characters), so c workers win once the serial cutting would take
# longer than BOOT_S * c / (c - 1).
SERIAL_CHARS_PER_S = 9.5e6
BOOT_S = 0.7
MARGIN = 1.2

Cut = tuple[str, int]  # (named tokenizer, chunk size)


@dataclass(frozen=True)
class CutOrder:
    """The cuts one book file still needs, and the SHA-256 of the file the plan read."""

    path: Path
    sha256: str
    cuts: tuple[Cut, ...]


def cut_file(order: CutOrder, chapter_aware: bool, include_front_matter: bool) -> dict[Cut, tuple[ChunkSpan, ...]]:
    """In a worker: the spans of every cut of ``order``; nothing when the file is not the one planned."""
    path = Path(order.path)
    if file_sha256(path) != order.sha256:
        return {}  # changed since the plan read it: the plan cuts what it read itself
    book = open_book(path, include_front_matter=include_front_matter)
    return {(name, size): chunk_book_spans(book, chunk_size=size, tokenizer=get_tokenizer(name),
                                           chapter_aware=chapter_aware, include_front_matter=include_front_matter)
            for name, size in order.cuts}


class PlanCutters:
    """Worker processes that cut books for a plan (they start with the first order, and boot while it reads on)."""

    def __init__(self, *, workers: int, chapter_aware: bool, include_front_matter: bool) -> None:
        # spawn, not fork: the CLI process may already run threads
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=exit_with_parent, initargs=(os.getpid(),))
        self._options = (chapter_aware, include_front_matter)
        self._orders: list[tuple[CutOrder, Future[dict[Cut, tuple[ChunkSpan, ...]]] | None]] = []
        self._n_books, self._min_chars = 0, 0.0
        self._seen_books, self._seen_chars, self._wanted = 0, 0, False

    @classmethod
    def for_grid(cls, n_books: int, *, tokenizers_named: bool, chapter_aware: bool,
                 include_front_matter: bool) -> PlanCutters | None:
        """Workers for a plan of ``n_books`` book files, or None where cutting in the plan's own process is faster."""
        cores = available_cores()
        if n_books < MIN_BOOKS or cores < 2 or not tokenizers_named:
            return None
        cutters = cls(workers=min(cores, n_books), chapter_aware=chapter_aware,
                      include_front_matter=include_front_matter)
        cutters._n_books = n_books
        cutters._min_chars = SERIAL_CHARS_PER_S * BOOT_S * cores / (cores - 1) * MARGIN
        return cutters

    def wanted(self, text_chars: int) -> bool:
        """Whether to hand the book just read (``text_chars`` long) to the workers: once the grid's
        text, extrapolated from the books read so far, is worth their start. Once yes, always yes."""
        self._seen_books += 1
        self._seen_chars += text_chars
        if not self._wanted:
            self._wanted = self._seen_chars / self._seen_books * self._n_books >= self._min_chars
        return self._wanted

    def submit(self, order: CutOrder) -> None:
        """Start cutting ``order`` now, while the plan goes on reading."""
        try:
            future = self._pool.submit(cut_file, order, *self._options)
        except RuntimeError:  # the pool broke (a worker died): the plan cuts this book itself
            future = None
        self._orders.append((order, future))

    def results(self) -> Iterator[tuple[CutOrder, dict[Cut, tuple[ChunkSpan, ...]]]]:
        """Each submitted order with its spans, in order; one whose worker failed comes back with none."""
        for order, future in self._orders:
            try:
                yield order, future.result() if future is not None else {}
            except Exception:  # noqa: BLE001 - a worker's failure only costs time: the plan cuts this book
                yield order, {}

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["MIN_BOOKS", "CutOrder", "PlanCutters", "cut_file"]
