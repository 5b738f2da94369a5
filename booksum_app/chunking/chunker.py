"""Token-budgeted chunks that end at sentence boundaries (BooookScore §2 fn. 3, App. A).

Algorithm (greedy, one pass):

1. The text is cut into *units*: paragraphs (blank-line separated in :func:`chunk_text`, the
   Book's paragraphs in :func:`chunk_book`); a paragraph over ``chunk_size`` tokens is cut into
   its sentences (Punkt / Chinese rules, :mod:`.sentences`); a sentence still over budget into
   clauses (after , ; : and ，；：、), then words (at whitespace), then characters. Every unit
   has at most ``chunk_size`` tokens, counted once.
2. Units are packed greedily into chunks: a unit joins the current chunk if the estimated
   count (sum of unit counts plus the separators' tokens) stays within budget, otherwise the
   chunk is closed. So a chunk ends at a paragraph end, at a sentence end inside an oversized
   paragraph, and only inside a sentence when that sentence alone exceeds the budget.
3. BPE counts are not additive across joins (".\\n\\n" can be one token, a space merges into
   the next word), so every closed chunk is counted once for real; if it is over budget its
   last unit goes back to the queue until it fits. ``Chunk.n_tokens == tokenizer.count(text)``.

Cost: linear in the text whatever its paragraphs. A character is counted about three times
(in its paragraph, its unit, its chunk), and a few times more where a span without whitespace
is cut by characters (the search for a piece's end starts at ``chunk_size`` characters and
doubles, never counting the rest of the span). Units are counted a batch at a time, with
:data:`~booksum_app.progress_hooks.CHUNKING` after each batch and each chunk, so a book that
is one paragraph of 300,000 sentences says how far it is.

Lossless, precisely: ``chunk.text`` is an exact substring of the selected text (``text`` for
:func:`chunk_text`, ``book.text(include_front_matter=...)`` for :func:`chunk_book`), chunks appear
in order and do not overlap, and everything between two consecutive chunks (and before the
first / after the last) is whitespace. Only whitespace at chunk breaks is dropped; inside a
chunk the original separators are kept ("\\n\\n" between paragraphs and chapters).

Chapter-aware mode starts a new chunk at every chapter, so no chunk straddles a chapter
boundary; chapters are never merged, so a short chapter (an epigraph, a one-page chapter)
makes a short chunk. That is the price of the guarantee; the default mode packs across
chapters as the paper does.

Why not langchain's ``RecursiveCharacterTextSplitter`` for the sub-sentence fallback: it sums
the lengths of pieces (wrong for BPE, see 3.), strips whitespace (breaking the substring
guarantee above) and importing langchain_core costs more than the whole fallback; the few
lines below do the same recursive descent (clauses -> words -> characters) with exact counts.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from booksum_app.chunking.base import Chunk, ChunkSpan, Tokenizer
from booksum_app.chunking.sentences import detect_lang, iter_sentence_spans
from booksum_app.chunking.tokens import count_many
from booksum_app.errors import ConfigError
from booksum_app.progress_hooks import CHUNKING

if TYPE_CHECKING:
    from booksum_app.books.model import Book

MIN_CHUNK_SIZE = 8  # a single character can take 4 byte-level tokens
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t\r\f\v\u00a0\u3000]*\n\s*")
_CLAUSE_END_RE = re.compile(r"[,;:](?=\s)|[，；：、]")
_WORD_RE = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int  # offsets into the selected text; text[start:end] is the unit, stripped
    end: int
    n_tokens: int
    chapter: int  # index into Book.chapters, -1 for plain text


def chunk_text(
    text: str, *, chunk_size: int, tokenizer: Tokenizer, lang: str = "en"
) -> list[Chunk]:
    """Split ``text`` (paragraphs separated by blank lines) into chunks of <= ``chunk_size`` tokens.

    Raises:
        ConfigError: ``chunk_size`` below 8, or an unknown ``lang``.
    """
    _check_chunk_size(chunk_size)
    spans = _paragraph_spans(text, 0, len(text))
    progress = _Progress("text", len(text))
    units = _units(text, spans, [-1] * len(spans), chunk_size, tokenizer, lang, progress)
    return _pack(text, units, chunk_size, tokenizer, chapter_aware=False, progress=progress)


def chunk_book(
    book: Book,
    *,
    chunk_size: int,
    tokenizer: Tokenizer,
    chapter_aware: bool = False,
    include_front_matter: bool = False,
) -> list[Chunk]:
    """Chunk the selected chapters of ``book``; ``Chunk.chapter_indices`` index ``book.chapters``.

    The same as :func:`chunk_book_spans` followed by :func:`chunks_at`.

    Args:
        book: the book; non-narrative chapters are skipped unless ``include_front_matter``.
        chunk_size: the token budget of each chunk (BooookScore default 2048).
        tokenizer: counts tokens the way the model in use does.
        chapter_aware: start a new chunk at each chapter (no chunk straddles two chapters).
        include_front_matter: keep title page, imprint, colophon, ... (see ``Book``).

    Raises:
        ConfigError: ``chunk_size`` below 8.
    """
    _check_chunk_size(chunk_size)
    text = book.text(include_front_matter=include_front_matter)
    selected = {id(c) for c in book.selected_chapters(include_front_matter=include_front_matter)}
    spans: list[tuple[int, int]] = []
    chapters: list[int] = []
    pos = -2
    for index, chapter in enumerate(book.chapters):
        if id(chapter) not in selected:
            continue
        pos += 2  # the "\n\n" that Book.text puts between chapters (even empty ones)
        for k, paragraph in enumerate(chapter.paragraphs):
            pos += 2 if k else 0  # ... and Chapter.text between paragraphs
            # a paragraph holding blank lines (a benchmark sample's verbatim context) is cut at them
            for span in _paragraph_spans(text, pos, pos + len(paragraph)):
                spans.append(span)
                chapters.append(index)
            pos += len(paragraph)
    lang = _book_lang(book.language, text)
    progress = _Progress(book.title or "the book", len(text))
    units = _units(text, spans, chapters, chunk_size, tokenizer, lang, progress)
    return _pack(text, units, chunk_size, tokenizer, chapter_aware=chapter_aware, progress=progress)


def chunk_book_spans(
    book: Book,
    *,
    chunk_size: int,
    tokenizer: Tokenizer,
    chapter_aware: bool = False,
    include_front_matter: bool = False,
) -> tuple[ChunkSpan, ...]:
    """Where :func:`chunk_book` cuts ``book``: offsets into the selected text, without its text.

    Kept instead of the chunks when many books are chunked ahead of their use (compare's plan):
    a few numbers per chunk, not a copy of every book.
    """
    chunks = chunk_book(book, chunk_size=chunk_size, tokenizer=tokenizer, chapter_aware=chapter_aware,
                        include_front_matter=include_front_matter)
    return tuple(ChunkSpan(c.start, c.start + len(c.text), c.n_tokens, c.chapter_indices) for c in chunks)


def chunks_at(book: Book, spans: Sequence[ChunkSpan], *, include_front_matter: bool = False) -> list[Chunk]:
    """The chunks of ``book`` at ``spans`` (from :func:`chunk_book_spans` with the same options).

    Raises:
        ValueError: spans that cannot be this text's cuts (past its end, or starting or ending
            on whitespace, which a cut never does).
    """
    text = book.text(include_front_matter=include_front_matter)
    chunks = [
        Chunk(i, text[sp.start : sp.end], sp.n_tokens, sp.chapter_indices, sp.start) for i, sp in enumerate(spans)
    ]
    for sp, chunk in zip(spans, chunks, strict=True):
        if sp.end > len(text) or not chunk.text or chunk.text[0].isspace() or chunk.text[-1].isspace():
            raise ValueError("chunk spans of another text")
    return chunks


def _check_chunk_size(chunk_size: int) -> None:
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool):
        raise ConfigError(f"chunk size must be an integer number of tokens, got {chunk_size!r}")
    if chunk_size < MIN_CHUNK_SIZE:
        raise ConfigError(f"chunk size {chunk_size} is too small; use at least {MIN_CHUNK_SIZE}")


def _book_lang(language: str, text: str) -> str:
    primary = language.split("-")[0].lower()
    if primary in ("zh", "en"):
        return primary
    return detect_lang(text)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _paragraph_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    for m in _PARAGRAPH_BREAK_RE.finditer(text, start, end):
        span = _strip_span(text, start, m.start())
        if span is not None:
            spans.append(span)
        start = m.end()
    span = _strip_span(text, start, end)
    if span is not None:
        spans.append(span)
    return spans


class _Progress:
    """Two passes over the selected text (cutting and counting units, then packing chunks), as
    characters reached, to :data:`~booksum_app.progress_hooks.CHUNKING`."""

    def __init__(self, name: str, n_chars: int) -> None:
        self.name, self.n_chars = name, n_chars

    def cut(self, position: int) -> None:
        CHUNKING(self.name, position, 2 * self.n_chars)

    def packed(self, position: int) -> None:
        CHUNKING(self.name, self.n_chars + position, 2 * self.n_chars)


_BATCH = 1024  # spans counted between two progress reports


def _counted(
    text: str, spans: Iterable[tuple[int, int]], tokenizer: Tokenizer, progress: _Progress
) -> Iterator[tuple[int, int, int]]:
    """``(start, end, tokens)`` of each span, counted a batch at a time (a book-long paragraph
    is hundreds of thousands of sentences), with progress after each batch."""
    spans = iter(spans)
    while batch := list(itertools.islice(spans, _BATCH)):
        counts = count_many(tokenizer, [text[s:e] for s, e in batch])
        yield from ((s, e, n) for (s, e), n in zip(batch, counts, strict=True))
        progress.cut(batch[-1][1])


def _units(
    text: str,
    spans: Sequence[tuple[int, int]],
    chapters: Sequence[int],
    budget: int,
    tokenizer: Tokenizer,
    lang: str,
    progress: _Progress,
) -> list[_Unit]:
    units: list[_Unit] = []
    for (start, end, n), chapter in zip(_counted(text, spans, tokenizer, progress), chapters, strict=True):
        if n <= budget:
            units.append(_Unit(start, end, n, chapter))
        else:
            units.extend(_split_sentences(text, start, end, chapter, budget, tokenizer, lang, progress))
    return units


def _split_sentences(
    text: str, start: int, end: int, chapter: int, budget: int, tokenizer: Tokenizer, lang: str,
    progress: _Progress,
) -> list[_Unit]:
    sentences = ((start + s, start + e) for s, e in iter_sentence_spans(text[start:end], lang=lang))
    spans = (sp for sp in itertools.starmap(functools.partial(_strip_span, text), sentences) if sp is not None)
    units: list[_Unit] = []
    for s, e, n in _counted(text, spans, tokenizer, progress):
        if n <= budget:
            units.append(_Unit(s, e, n, chapter))
        else:
            units.extend(_split_finer(text, s, e, chapter, budget, tokenizer, progress, level=0))
    return units


def _split_finer(
    text: str, start: int, end: int, chapter: int, budget: int, tokenizer: Tokenizer, progress: _Progress,
    *, level: int,
) -> list[_Unit]:
    """Cut an over-budget sentence at clause ends (level 0), whitespace (1), then characters (2)."""
    if level >= 2:
        return _split_chars(text, start, end, chapter, budget, tokenizer)
    cuts = [start]
    if level == 0:
        cuts += [m.end() for m in _CLAUSE_END_RE.finditer(text, start, end)]
    else:
        cuts += [m.start() for m in _WORD_RE.finditer(text, start, end)][1:]
    cuts.append(end)
    spans = (sp for sp in (_strip_span(text, a, b) for a, b in itertools.pairwise(cuts)) if sp)
    units: list[_Unit] = []
    for s, e, n in _counted(text, spans, tokenizer, progress):
        if n <= budget:
            units.append(_Unit(s, e, n, chapter))
        else:
            units.extend(_split_finer(text, s, e, chapter, budget, tokenizer, progress, level=level + 1))
    return units


def _split_chars(
    text: str, start: int, end: int, chapter: int, budget: int, tokenizer: Tokenizer
) -> list[_Unit]:
    """Longest prefixes within budget, found by bisection on characters.

    The bisection's upper end is found by doubling from ``budget`` characters, so a piece costs
    counts of about its own length, not of everything after it: a megabyte without a space
    (a Chinese web copy without a full stop) is cut in linear time, not quadratic.
    """
    units = []
    while start < end:
        lo = start + 1  # invariant: text[start:lo] fits unless lo == start + 1
        if tokenizer.count(text[start:lo]) > budget:
            raise ConfigError(
                f"chunk size {budget} cannot hold the single character {text[start]!r} with "
                f"tokenizer {tokenizer.name!r}; use a larger chunk size"
            )
        step = budget
        hi = min(end, lo + step)  # text[start:hi] is over budget, or hi == end
        while hi < end and tokenizer.count(text[start:hi]) <= budget:
            lo, step = hi, 2 * step
            hi = min(end, lo + step)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if tokenizer.count(text[start:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        units.append(_Unit(start, lo, tokenizer.count(text[start:lo]), chapter))
        start = lo
    return units


def _pack(
    text: str, units: Sequence[_Unit], budget: int, tokenizer: Tokenizer, *, chapter_aware: bool,
    progress: _Progress,
) -> list[Chunk]:
    joiner_cost: dict[str, int] = {}

    def cost(joiner: str) -> int:
        if joiner not in joiner_cost:
            n = tokenizer.count(joiner)
            # a single space usually merges into the next word's token (" the")
            joiner_cost[joiner] = max(0, n - 1) if joiner.strip(" ") == "" else n
        return joiner_cost[joiner]

    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        estimate = units[i].n_tokens
        j = i + 1
        while j < len(units):
            if chapter_aware and units[j].chapter != units[j - 1].chapter:
                break
            add = cost(text[units[j - 1].end : units[j].start]) + units[j].n_tokens
            if estimate + add > budget:
                break
            estimate += add
            j += 1
        while True:  # verify with one real count; give back the last unit while over budget
            chunk_text_ = text[units[i].start : units[j - 1].end]
            n_tokens = units[i].n_tokens if j == i + 1 else tokenizer.count(chunk_text_)
            if n_tokens <= budget or j == i + 1:
                break
            j -= 1
        chapters = tuple(sorted({u.chapter for u in units[i:j] if u.chapter >= 0}))
        chunks.append(Chunk(len(chunks), chunk_text_, n_tokens, chapters, units[i].start))
        progress.packed(units[j - 1].end)
        i = j
    return chunks
