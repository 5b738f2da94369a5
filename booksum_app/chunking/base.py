"""Chunk and Tokenizer: the values the chunker produces and the counter it measures with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens the way a model does."""

    @property
    def name(self) -> str:
        """ "cl100k_base", "o200k_base", "estimate", "native:<model>" (read-only suffices)."""
        ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class Chunk:
    """A run of consecutive text of at most ``chunk_size`` tokens ending at a sentence boundary."""

    index: int
    text: str
    n_tokens: int
    chapter_indices: tuple[int, ...]  # indices into Book.chapters this chunk draws from
    start: int = 0  # offset of ``text`` in the text that was chunked


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """Where a chunk lies in the text that was chunked, and its tokens: a chunk without its text."""

    start: int
    end: int
    n_tokens: int
    chapter_indices: tuple[int, ...]
