"""Chunk spans remembered between a grid's plan and its run, so each book is chunked once.

``booksum compare`` plans the whole grid before the first paid call (calls, tokens, dollars),
which means chunking every book; the run then needs the same chunks. Chunking is most of the
CPU a book costs the driver before its first call (two passes of BPE over the text), so the
run takes the plan's cuts instead of cutting again.

Only the offsets are kept (:class:`~booksum_app.chunking.base.ChunkSpan`), not the text: a
200-book grid holds a few numbers per chunk, not a copy of every book. And only cuts made
with a named tokenizer (``cl100k_base``, ``o200k_base``, ``estimate``) are shared: those count
the same wherever they are used. A model's own counter (a server's tokenize endpoint, a local
model) is not compared by name, so its books are chunked where they are used, as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from booksum_app.chunking.base import Chunk, ChunkSpan, Tokenizer
from booksum_app.chunking.chunker import chunk_book, chunk_book_spans, chunks_at
from booksum_app.chunking.tokens import (
    ENCODING_NAMES,
    ESTIMATE_NAME,
    EstimateTokenizer,
    get_tokenizer,
)

if TYPE_CHECKING:
    from booksum_app.books.model import Book

_Key = tuple[str, str, int, bool, bool]


def is_named(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` is the one :func:`get_tokenizer` gives for its name."""
    name = tokenizer.name
    if name == ESTIMATE_NAME:
        return tokenizer == EstimateTokenizer()  # its default ratio, not a tuned copy
    return name in ENCODING_NAMES and tokenizer is get_tokenizer(name)


class ChunkMemo:
    """Chunk spans by (book, tokenizer, chunk size, chapter-aware, front matter); thread-safe."""

    def __init__(self) -> None:
        self._spans: dict[_Key, tuple[ChunkSpan, ...]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._spans)

    def spans(
        self, book: Book, *, book_id: str, tokenizer: Tokenizer, chunk_size: int,
        chapter_aware: bool = False, include_front_matter: bool = False,
    ) -> tuple[ChunkSpan, ...]:
        """Where ``book`` is cut, computed on first use (``book_id``: the file's sha256)."""
        key = (book_id, tokenizer.name, chunk_size, chapter_aware, include_front_matter)
        remember = is_named(tokenizer)
        if remember:
            with self._lock:
                known = self._spans.get(key)
            if known is not None:
                return known
        spans = chunk_book_spans(book, chunk_size=chunk_size, tokenizer=tokenizer, chapter_aware=chapter_aware,
                                 include_front_matter=include_front_matter)
        if remember:
            with self._lock:
                self._spans.setdefault(key, spans)
        return spans

    def add(
        self, spans: tuple[ChunkSpan, ...], *, book_id: str, tokenizer_name: str, chunk_size: int,
        chapter_aware: bool = False, include_front_matter: bool = False,
    ) -> None:
        """Cuts made elsewhere (compare's plan workers) with the named tokenizer ``tokenizer_name``."""
        if tokenizer_name not in (*ENCODING_NAMES, ESTIMATE_NAME):
            raise ValueError(f"not a named tokenizer: {tokenizer_name!r}")
        with self._lock:
            self._spans.setdefault((book_id, tokenizer_name, chunk_size, chapter_aware, include_front_matter), spans)

    def known(
        self, *, book_id: str, tokenizer_name: str, chunk_size: int, chapter_aware: bool = False,
        include_front_matter: bool = False,
    ) -> tuple[ChunkSpan, ...] | None:
        """The remembered cuts, or None."""
        with self._lock:
            return self._spans.get((book_id, tokenizer_name, chunk_size, chapter_aware, include_front_matter))

    def chunks(
        self, book: Book, *, book_id: str, tokenizer: Tokenizer, chunk_size: int,
        chapter_aware: bool = False, include_front_matter: bool = False,
    ) -> list[Chunk]:
        """The chunks of ``book``: the remembered cuts when there are some, else freshly cut."""
        if is_named(tokenizer):
            spans = self.spans(book, book_id=book_id, tokenizer=tokenizer, chunk_size=chunk_size,
                               chapter_aware=chapter_aware, include_front_matter=include_front_matter)
            try:
                return chunks_at(book, spans, include_front_matter=include_front_matter)
            except ValueError:  # not the text these cuts were made on: cut it afresh
                pass
        return chunk_book(book, chunk_size=chunk_size, tokenizer=tokenizer, chapter_aware=chapter_aware,
                          include_front_matter=include_front_matter)


__all__ = ["ChunkMemo", "is_named"]
