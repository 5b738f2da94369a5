"""Chunk spans: the same cuts as chunk_book, remembered only for named tokenizers."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import book_path

from booksum_app.books import open_book
from booksum_app.books.model import Book, Chapter
from booksum_app.chunking import CallableTokenizer, EstimateTokenizer, chunk_book, get_tokenizer
from booksum_app.chunking.chunker import chunk_book_spans, chunks_at
from booksum_app.chunking.memo import ChunkMemo, is_named


class CountingTokenizer:
    """cl100k_base under another object: counts like it, but is not the named tokenizer."""

    def __init__(self) -> None:
        self.name = "cl100k_base"
        self.calls = 0
        self._inner = get_tokenizer("cl100k_base")

    def count(self, text: str) -> int:
        self.calls += 1
        return self._inner.count(text)


@pytest.mark.parametrize(("aware", "front"), [(False, False), (True, False), (False, True)])
def test_spans_give_back_exactly_the_chunks_of_chunk_book(aware: bool, front: bool) -> None:
    book = open_book(book_path("time-machine"))
    tok = get_tokenizer("cl100k_base")
    options = {"chunk_size": 1024, "tokenizer": tok, "chapter_aware": aware, "include_front_matter": front}
    spans = chunk_book_spans(book, **options)  # type: ignore[arg-type]
    assert chunks_at(book, spans, include_front_matter=front) == chunk_book(book, **options)  # type: ignore[arg-type]
    assert all(isinstance(v, int) for s in spans for v in (s.start, s.end, s.n_tokens)), "no text kept"


def test_spans_of_another_text_are_refused() -> None:
    book = open_book(book_path("time-machine"))
    spans = chunk_book_spans(book, chunk_size=1024, tokenizer=get_tokenizer("cl100k_base"))
    shorter = Book(title="T", authors=(), language="en", chapters=(Chapter("One", ("A short book.",)),))
    with pytest.raises(ValueError, match="another text"):
        chunks_at(shorter, spans)
    shifted = [dataclasses.replace(s, start=s.start - 1) for s in spans[1:]]  # starts on the whitespace before
    with pytest.raises(ValueError, match="another text"):
        chunks_at(book, shifted)


def test_a_book_is_cut_once_per_tokenizer_and_size() -> None:
    book = open_book(book_path("time-machine"))
    memo = ChunkMemo()
    first = memo.spans(book, book_id="tm", tokenizer=get_tokenizer("cl100k_base"), chunk_size=1024)
    assert memo.spans(book, book_id="tm", tokenizer=get_tokenizer("cl100k_base"), chunk_size=1024) is first
    assert memo.spans(book, book_id="tm", tokenizer=get_tokenizer("cl100k_base"), chunk_size=512) is not first
    assert memo.spans(book, book_id="tm", tokenizer=get_tokenizer("o200k_base"), chunk_size=1024) is not first
    assert memo.spans(book, book_id="tm", tokenizer=get_tokenizer("cl100k_base"), chunk_size=1024,
                      chapter_aware=True) is not first
    assert len(memo) == 4
    chunks = memo.chunks(book, book_id="tm", tokenizer=get_tokenizer("cl100k_base"), chunk_size=1024)
    assert chunks == chunk_book(book, chunk_size=1024, tokenizer=get_tokenizer("cl100k_base"))


def test_a_counter_that_only_bears_a_tokenizers_name_is_not_remembered() -> None:
    book = open_book(book_path("time-machine"))
    memo, impostor = ChunkMemo(), CountingTokenizer()
    assert not is_named(impostor) and not is_named(CallableTokenizer("cl100k_base", len))
    assert not is_named(EstimateTokenizer(chars_per_token=2.0)) and is_named(EstimateTokenizer())
    memo.spans(book, book_id="tm", tokenizer=impostor, chunk_size=1024)
    counted = impostor.calls
    memo.chunks(book, book_id="tm", tokenizer=impostor, chunk_size=1024)
    assert len(memo) == 0 and impostor.calls == 2 * counted, "cut again: its counts are not known to be cl100k's"


def test_remembered_cuts_that_do_not_fit_the_book_are_made_again() -> None:
    book = open_book(book_path("time-machine"))
    other = Book(title="T", authors=(), language="en", chapters=(Chapter("One", ("A short book. " * 50,)),))
    memo, tok = ChunkMemo(), get_tokenizer("cl100k_base")
    memo.spans(book, book_id="same-id", tokenizer=tok, chunk_size=1024)
    assert memo.chunks(other, book_id="same-id", tokenizer=tok, chunk_size=1024) == chunk_book(
        other, chunk_size=1024, tokenizer=tok)
