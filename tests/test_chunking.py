"""Chunking invariants: within budget, exact counts, sentence-final, lossless, chapter-aware."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest
from conftest import BOOKS_DIR, book_path

from booksum_app.books.model import Book, Chapter
from booksum_app.chunking import (
    CallableTokenizer,
    Chunk,
    Tokenizer,
    chunk_book,
    chunk_text,
    get_tokenizer,
    sentence_spans,
)
from booksum_app.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

_SPACE_RE = re.compile(r"\s+")
WORDS = CallableTokenizer("native:words", lambda t: len(t.split()))


def open_sample_book(path: Path) -> Book:
    """A sample book through the public reader (the epub reader until open_book lands)."""
    try:
        from booksum_app.books import open_book  # type: ignore[attr-defined]
    except ImportError:
        from booksum_app.books.epub import read_epub as open_book
    return open_book(path)


def assert_chunk_invariants(
    text: str, chunks: Sequence[Chunk], *, chunk_size: int, tokenizer: Tokenizer, lang: str = "en"
) -> None:
    """Budget, exact counts, order, losslessness (gaps are whitespace) and sentence-final ends."""
    pos = 0
    for k, chunk in enumerate(chunks):
        assert chunk.index == k
        assert 0 < chunk.n_tokens <= chunk_size
        assert chunk.n_tokens == tokenizer.count(chunk.text)
        start = text.find(chunk.text, pos)
        assert start >= 0 and text[pos:start].strip() == "", f"chunk {k} is not next in the text"
        pos = start + len(chunk.text)
        gap = _SPACE_RE.match(text, pos)
        gap_end = gap.end() if gap else pos
        if "\n\n" not in text[pos:gap_end] and gap_end < len(text):  # a break inside a paragraph
            para_start = text.rfind("\n\n", 0, pos) + 2 if "\n\n" in text[:pos] else 0
            para_end = text.find("\n\n", pos)
            paragraph = text[para_start : para_end if para_end >= 0 else len(text)]
            ends = {para_start + e for _, e in sentence_spans(paragraph, lang=lang)}
            assert pos in ends, f"chunk {k} ends inside a sentence: {chunk.text[-60:]!r}"
    assert text[pos:].strip() == ""


def _paragraphs(n: int, words: int) -> str:
    return "\n\n".join(" ".join(f"w{p}x{i}" for i in range(words - 1)) + " end." for p in range(n))


def test_paragraphs_are_packed_greedily() -> None:
    text = _paragraphs(10, 30)  # 30 "tokens" each
    chunks = chunk_text(text, chunk_size=100, tokenizer=WORDS)
    assert [c.n_tokens for c in chunks] == [90, 90, 90, 30]
    assert chunks[0].text == "\n\n".join(text.split("\n\n")[:3])
    assert all(c.chapter_indices == () for c in chunks)
    assert_chunk_invariants(text, chunks, chunk_size=100, tokenizer=WORDS)


def test_oversized_paragraph_is_split_at_sentence_boundaries() -> None:
    sentence = "Mr. Darcy looked at Mrs. Bennet and said nothing at all. "
    text = "Short one.\n\n" + sentence * 20 + "\n\nTail."
    tok = get_tokenizer("cl100k_base")
    chunks = chunk_text(text, chunk_size=40, tokenizer=tok)
    assert len(chunks) > 5
    assert all(c.text.endswith(".") for c in chunks)
    assert_chunk_invariants(text, chunks, chunk_size=40, tokenizer=tok)


def test_a_sentence_over_budget_is_cut_at_clauses_then_words() -> None:
    clauses = ", ".join(" ".join(f"c{k}w{i}" for i in range(5)) for k in range(8)) + "."
    chunks = chunk_text(clauses, chunk_size=12, tokenizer=WORDS)
    assert all(c.text.endswith(",") for c in chunks[:-1])  # two 5-word clauses per chunk
    assert [c.n_tokens for c in chunks] == [10, 10, 10, 10]
    no_commas = " ".join(f"w{i}" for i in range(30)) + "."
    chunks = chunk_text(no_commas, chunk_size=8, tokenizer=WORDS)
    assert [c.n_tokens for c in chunks] == [8, 8, 8, 6]
    assert " ".join(c.text for c in chunks) == no_commas


def test_a_word_over_budget_is_cut_at_characters() -> None:
    tok = get_tokenizer("cl100k_base")
    word = "".join(chr(0x0400 + (i * 7) % 200) for i in range(400))  # one long Cyrillic "word"
    chunks = chunk_text(word, chunk_size=8, tokenizer=tok)
    assert "".join(c.text for c in chunks) == word
    assert all(c.n_tokens <= 8 for c in chunks)


def test_real_counts_are_enforced_when_joins_cost_more_than_the_parts() -> None:
    # joining paragraphs costs 3 "tokens" that the pieces alone do not show
    sticky = CallableTokenizer("native:sticky", lambda t: len(t.split()) + 3 * t.count("\n\n"))
    text = _paragraphs(12, 9)
    chunks = chunk_text(text, chunk_size=30, tokenizer=sticky)
    assert_chunk_invariants(text, chunks, chunk_size=30, tokenizer=sticky)
    assert max(c.n_tokens for c in chunks) <= 30
    assert sum(c.text.count("\n\n") + 1 for c in chunks) == 12


def test_chinese_text_is_cut_after_end_marks() -> None:
    tok = get_tokenizer("cl100k_base")
    paragraph = "他说：“你好！”然后走了。" * 30 + "这是一个没有句号的很长很长的句子，" * 10
    chunks = chunk_text(paragraph, chunk_size=50, tokenizer=tok, lang="zh")
    assert all(c.text.endswith(("。", "”", "，")) for c in chunks[:-1])
    assert "".join(c.text for c in chunks) == paragraph
    assert all(c.n_tokens <= 50 for c in chunks)


def test_whitespace_only_or_empty_text_gives_no_chunks() -> None:
    assert chunk_text("", chunk_size=100, tokenizer=WORDS) == []
    assert chunk_text(" \n\n \n", chunk_size=100, tokenizer=WORDS) == []


@pytest.mark.parametrize("size", [0, 7, -5, 2.5, True])
def test_bad_chunk_size_is_refused(size: object) -> None:
    with pytest.raises(ConfigError, match="chunk size"):
        chunk_text("Hello.", chunk_size=size, tokenizer=WORDS)  # type: ignore[arg-type]


def test_a_character_that_cannot_fit_is_refused() -> None:
    greedy = CallableTokenizer("native:greedy", lambda t: 100 * len(t))
    with pytest.raises(ConfigError, match="single character"):
        chunk_text("ab", chunk_size=50, tokenizer=greedy)


def _book() -> Book:
    para = "One two three four five six seven eight nine ten."  # 10 words
    return Book(
        title="T",
        authors=("A",),
        language="en",
        chapters=(
            Chapter("Imprint", ("Published by Nobody.",), narrative=False, excluded_reason="x"),
            Chapter("One", (para, para, para)),
            Chapter("Empty", ()),
            Chapter("Two", (para,)),
            Chapter("Three", ("  " + para + "  ", "", para)),
            Chapter("Colophon", ("Set in Garamond.",), narrative=False, excluded_reason="x"),
        ),
    )


def test_chunk_book_skips_front_matter_and_indexes_book_chapters() -> None:
    book = _book()
    chunks = chunk_book(book, chunk_size=25, tokenizer=WORDS)
    assert [c.chapter_indices for c in chunks] == [(1,), (1, 3), (4,)]
    assert not any("Nobody" in c.text or "Garamond" in c.text for c in chunks)
    assert_chunk_invariants(book.text(), chunks, chunk_size=25, tokenizer=WORDS)


def test_chunk_book_chapter_aware_never_straddles_chapters() -> None:
    book = _book()
    chunks = chunk_book(book, chunk_size=25, tokenizer=WORDS, chapter_aware=True)
    assert [c.chapter_indices for c in chunks] == [(1,), (1,), (3,), (4,)]
    assert_chunk_invariants(book.text(), chunks, chunk_size=25, tokenizer=WORDS)


def test_chunk_book_can_include_front_matter() -> None:
    book = _book()
    chunks = chunk_book(book, chunk_size=25, tokenizer=WORDS, include_front_matter=True)
    assert chunks[0].chapter_indices == (0, 1) and "Nobody" in chunks[0].text
    assert "Garamond" in chunks[-1].text
    text = book.text(include_front_matter=True)
    assert_chunk_invariants(text, chunks, chunk_size=25, tokenizer=WORDS)


def test_chinese_book_uses_chinese_sentences() -> None:
    book = Book("书", ("作者",), "zh", (Chapter("第一章", ("你好。" * 40,)),))
    tok = get_tokenizer("cl100k_base")
    chunks = chunk_book(book, chunk_size=20, tokenizer=tok)
    assert len(chunks) > 1 and all(c.text.endswith("。") for c in chunks)
    assert_chunk_invariants(book.text(), chunks, chunk_size=20, tokenizer=tok, lang="zh")


@pytest.mark.parametrize("chunk_size", [512, 2048])
def test_sample_book_invariants(chunk_size: int) -> None:
    book = open_sample_book(book_path("time-machine"))
    tok = get_tokenizer("cl100k_base")
    chunks = chunk_book(book, chunk_size=chunk_size, tokenizer=tok)
    assert_chunk_invariants(book.text(), chunks, chunk_size=chunk_size, tokenizer=tok)
    # whole paragraphs are packed, so a 512 budget is ~80% used on this book
    assert sum(c.n_tokens for c in chunks) / (len(chunks) * chunk_size) > 0.75


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [512, 2048])
@pytest.mark.parametrize(
    "path", sorted(BOOKS_DIR.glob("*.epub")), ids=lambda p: re.sub(r"_.*", "", p.stem)
)
def test_every_book_invariants(path: Path, chunk_size: int) -> None:
    book = open_sample_book(path)
    tok = get_tokenizer("cl100k_base")
    text = book.text()
    chunks = chunk_book(book, chunk_size=chunk_size, tokenizer=tok)
    assert_chunk_invariants(text, chunks, chunk_size=chunk_size, tokenizer=tok)
    aware = chunk_book(book, chunk_size=chunk_size, tokenizer=tok, chapter_aware=True)
    assert all(len(c.chapter_indices) == 1 for c in aware)
    assert_chunk_invariants(text, aware, chunk_size=chunk_size, tokenizer=tok)
    # chunks sized with the estimate stay within budget in cl100k tokens too
    for chunk in chunk_book(book, chunk_size=chunk_size, tokenizer=get_tokenizer("estimate")):
        assert tok.count(chunk.text) <= chunk_size


# The cuts of every sample book at the defaults (2048, cl100k_base), plain and chapter-aware, as
# SHA-256 prefixes: a change made for speed must leave every chunk as it was (text, tokens,
# chapters, offset). The book's text hash comes first: when it moved, the reader changed, not
# the chunker, and both hashes are taken again on purpose.
CUTS_AT_THE_DEFAULTS = {
    "wuthering-heights": ("9c1003195a7488ae", "1045aa2f51f2c506", "0608f053132fad9e"),
    "the-time-machine": ("c6edd367055ab8f7", "52e36755c77bc1d4", "64cc5a7e114dfeee"),
    "pride-and-prejudice": ("792722dcd4762485", "815bd22e917cd5a6", "1785db43bbab3e8a"),
    "war-and-peace": ("68d7be590b35356d", "3d3c496d83b7dcc8", "f0f8f190ed576df0"),
    "frankenstein": ("d3ccbfa9413940b6", "a7bfaf1753aa9ad8", "acfb2b4b984632db"),
    "love-among-the-chickens": ("def5ead51ab73539", "1b5dd6269c8e11d4", "8aee6d1655ba3b26"),
}


def _cuts_digest(chunks: Sequence[Chunk]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for c in chunks:
        digest.update(f"{c.index}|{c.n_tokens}|{c.chapter_indices}|{c.start}|{len(c.text)}\x00{c.text}\x00".encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("stem", sorted(CUTS_AT_THE_DEFAULTS))
def test_the_sample_books_are_cut_as_before(stem: str) -> None:
    import hashlib

    from booksum_app.books import open_book

    book = open_book(book_path(stem))
    text_hash, plain, aware = CUTS_AT_THE_DEFAULTS[stem]
    assert hashlib.sha256(book.text().encode()).hexdigest()[:16] == text_hash, "the reader changed: rehash"
    tokenizer = get_tokenizer("cl100k_base")
    assert _cuts_digest(chunk_book(book, chunk_size=2048, tokenizer=tokenizer)) == plain
    assert _cuts_digest(chunk_book(book, chunk_size=2048, tokenizer=tokenizer, chapter_aware=True)) == aware
