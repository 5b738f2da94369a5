"""Chunking work grows linearly with the text whatever its paragraphs, and a long chunking says so."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.chunking import CallableTokenizer, Chunk, Tokenizer, chunk_text, get_tokenizer, split_sentences
from booksum_app.chunking import chunker as chunker_module
from booksum_app.cli import cli
from booksum_app.progress_hooks import CHUNKING

_WORDS = ("the", "old", "man", "walked", "slowly", "under", "green", "river", "and", "saw", "a", "dog")


class Counting:
    """A tokenizer that counts its calls and the characters it was asked to count."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner, self.name = inner, inner.name
        self.calls = self.chars = 0

    def count(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return self.inner.count(text)


def sentences(n: int, *, seed: int = 1) -> list[str]:
    """``n`` short generated sentences, each capitalized and ending in a full stop."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 10)))
        out.append(words[0].upper() + words[1:] + rng.choice(".!?"))
    return out


def work(text: str, tokenizer: Tokenizer, *, chunk_size: int) -> tuple[int, int, list[Chunk]]:
    """Tokenizer calls and characters counted to chunk ``text``, and its chunks."""
    counting = Counting(tokenizer)
    chunks = chunk_text(text, chunk_size=chunk_size, tokenizer=counting)
    return counting.calls, counting.chars, chunks


def test_a_book_long_paragraph_costs_counts_in_proportion_to_its_length() -> None:
    cl100k = get_tokenizer("cl100k_base")
    small, large = ("\n".join(sentences(n)) for n in (3_000, 12_000))
    calls_small, chars_small, _ = work(small, cl100k, chunk_size=512)
    calls_large, chars_large, chunks = work(large, cl100k, chunk_size=512)
    assert len(chunks) > 100
    assert calls_large <= 4.4 * calls_small
    assert chars_large <= 4.4 * chars_small
    assert chars_large <= 4 * len(large), "each character counted a few times, not once per sentence after it"


def test_a_text_without_spaces_is_cut_in_linear_work() -> None:
    """A sentence that is one word (a Chinese web copy without full stops) is cut by characters;
    the search for each piece's end must not count everything after the piece."""
    rng = random.Random(3)
    characters = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏"
    small, large = ("".join(rng.choice(characters) for _ in range(n)) for n in (20_000, 80_000))
    cl100k = get_tokenizer("cl100k_base")
    _, chars_small, _ = work(small, cl100k, chunk_size=64)
    _, chars_large, chunks = work(large, cl100k, chunk_size=64)
    assert all(c.n_tokens <= 64 for c in chunks) and "".join(c.text for c in chunks) == large
    assert chars_large <= 4.6 * chars_small, (chars_small, chars_large)
    assert chars_large <= 40 * len(large)


def _bisected(text: str, budget: int, tokenizer: Tokenizer) -> list[str]:
    """The cut by characters as a plain bisection over the whole rest (the rule, slowly)."""
    pieces, start = [], 0
    while start < len(text):
        lo, hi = start + 1, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if tokenizer.count(text[start:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        pieces.append(text[start:lo])
        start = lo
    return pieces


@settings(max_examples=40, deadline=None)
@given(st.text(st.sampled_from("天地玄黄宇宙洪荒abcxyz0123-_=ü😀"), min_size=1, max_size=600),
       st.integers(8, 40))
def test_the_cut_by_characters_is_the_longest_prefix_as_before(text: str, budget: int) -> None:
    estimate = get_tokenizer("estimate")  # counts never fall as a prefix grows: one longest prefix
    chunks = chunk_text(text, chunk_size=budget, tokenizer=estimate)
    assert [c.text for c in chunks] == _bisected(text, budget, estimate)


def _cut_groups(chunks: Sequence[Chunk]) -> list[list[str]]:
    return [c.text.split() for c in chunks]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 400), st.integers(8, 300), st.integers(0, 10_000))
def test_one_paragraph_is_cut_as_its_sentences_set_as_paragraphs(n: int, budget: int, seed: int) -> None:
    """With a count that adds up across joins (words), a paragraph gets the chunks its sentences
    (as Punkt finds them) get as paragraphs of their own: sentence ends, packed greedily."""
    words = CallableTokenizer("native:words", lambda t: len(t.split()))
    paragraph = "\n".join(sentences(n, seed=seed))
    one = chunk_text(paragraph, chunk_size=budget, tokenizer=words)
    many = chunk_text("\n\n".join(split_sentences(paragraph)), chunk_size=budget, tokenizer=words)
    assert _cut_groups(one) == _cut_groups(many)
    assert [c.n_tokens for c in one] == [c.n_tokens for c in many]


@contextmanager
def recorded() -> Iterator[list[tuple[str, int, int]]]:
    seen: list[tuple[str, int, int]] = []
    CHUNKING.report_to(lambda name, done, total: seen.append((name, done, total)))
    try:
        yield seen
    finally:
        CHUNKING.report_to(None)


def test_chunking_reports_its_progress_in_order_to_the_end() -> None:
    text = "\n".join(sentences(5_000))
    with recorded() as seen:
        chunk_text(text, chunk_size=300, tokenizer=get_tokenizer("cl100k_base"))
    done = [d for _, d, _ in seen]
    assert len(seen) > 10 and done == sorted(done), "progress never goes back"
    assert {t for _, _, t in seen} == {2 * len(text)} and done[-1] == 2 * len(text)


def test_a_long_chunking_prints_a_heartbeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "one-paragraph.txt"
    path.write_text("\n".join(sentences(4_000)) + "\n", encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_HEARTBEAT_S", "0.1")
    slow: Callable[[Tokenizer, Sequence[str]], list[int]] = chunker_module.count_many

    def slowly(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
        time.sleep(0.15)
        return slow(tokenizer, texts)

    monkeypatch.setattr(chunker_module, "count_many", slowly)
    try:
        result = CliRunner().invoke(cli, ["inspect", str(path), "-m", "openai:gpt-4o"])
    finally:
        CHUNKING.report_to(None)
    assert result.exit_code == 0, result.output
    beats = [line for line in result.stderr.splitlines() if "chunking one-paragraph:" in line]
    assert beats and all("% of " in line and " characters" in line for line in beats), result.stderr
