"""Checks that need no pattern: each excluded kind has a size it can be, numbered headings run in
order, no section is many times the others.

A rule that excludes text by a title or a line's shape is weak evidence; the larger the span,
the stronger the evidence it needs. :func:`overruled` says when a title-based exclusion is past
what its kind can be (an author's note of a third of the book, a "contents" of long paragraphs,
an appendix between two chapters as long as a chapter): the reader then keeps the text and says
so. :func:`anomalies` reads a finished book and names what looks wrong without changing it:
numbered headings that skip, repeat or run backwards; a section many times the median chapter;
excluded text past a few percent of the book. ``summarize``, ``compare`` and ``inspect`` print
each as one line, and the run record keeps them.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Sequence

from booksum_app.books.model import Book, Chapter
from booksum_app.books.numerals import NOISE, UNIT_CHARS, ZH_NUM, zh_number
from booksum_app.books.webcopy import heading_form

#: the most counted characters an excluded section of a kind can hold (past it: kept, with a line)
AUTHOR_NOTE_MAX_CHARS = 3000
CONTENTS_CHARS_PER_ENTRY = 40  # a contents line: an ordinal and a title
CONTENTS_MIN_BOUND_CHARS = 3000
#: a title-based exclusion past this share of the book is kept (strong evidence is structure)
TITLED_MAX_SHARE = 0.10
TITLED_MIN_CHARS = 5000  # ... and past this size (a short book's one-page afterword stays excluded)
#: excluded text past this share of the book is said aloud
EXCLUDED_WARN_SHARE = 0.05
#: a section this many times the median chapter is said aloud (headings it may have swallowed)
OUTLIER_FACTOR = 5.0
#: a section titled like back matter between numbered chapters, at least this share of the median
#: chapter, is story (西游记's 附录 tells 陈光蕊's story between chapters 8 and 9)
BETWEEN_CHAPTERS_SHARE = 0.25
BETWEEN_MIN_CHARS = 500

_AUTHOR_NOTE = re.compile(
    r"作者的话|作者的話|作者有话说|作者有話說|完本感言|完结感言|完結感言|写在|寫在|author'?s\s+note", re.IGNORECASE
)
_CONTENTS = re.compile(r"目录|目錄|contents|\btoc\b|\(contents\)", re.IGNORECASE)
_BACK = re.compile(
    r"后记|後記|后序|後序|后语|後語|跋|附录|附錄|afterword|appendix|notes|epilogue", re.IGNORECASE
)
_ORDINAL_KEY = re.compile(r"^([章回节節卷部篇集幕]|chapter|book|part|letter)(\d+)$")


_ZH_ORDINAL = re.compile(rf"^第([{ZH_NUM}]+)([{UNIT_CHARS}])")


def heading_key(title: str) -> str:
    """What makes two headings the same chapter: the ordinal and its unit ("第38回" is
    "第三十八回"), else the title without noise characters, spaces or case."""
    cleaned = NOISE.sub("", heading_form(title))
    m = _ZH_ORDINAL.match(cleaned)
    if m:
        value = zh_number(m.group(1))
        if value is not None:
            return f"{m.group(2)}{value}"
    return "".join(cleaned.split()).lower()


def exclusion_kind(reason: str) -> str:
    """The kind of an exclusion from its reason: contents, author's note, back matter, front matter,
    boilerplate, empty."""
    if reason == "no text":
        return "empty"
    if "gutenberg" in reason.lower():
        return "boilerplate"
    if _CONTENTS.search(reason):
        return "contents"
    if _AUTHOR_NOTE.search(reason):
        return "author's note"
    if _BACK.search(reason) or reason.startswith("epub:type=backmatter"):
        return "back matter"
    return "front matter"


def overruled(
    reason: str, *, title: str, chars: int, book_chars: int, median_chars: float, entries: int,
    between_chapters: bool,
) -> str | None:
    """Why a title-based exclusion is past what its kind can be (then the text is kept), else None.

    ``chars``: the section's counted characters; ``book_chars``: the book's; ``median_chars``: the
    median numbered chapter's; ``entries``: the book's numbered headings (a contents lists them);
    ``between_chapters``: numbered chapters follow the section.
    """
    kind = exclusion_kind(reason)
    if kind == "author's note" and chars > AUTHOR_NOTE_MAX_CHARS:
        return (f"section '{title}' is titled like an author's note but holds {chars:,} characters "
                f"(a note is at most {AUTHOR_NOTE_MAX_CHARS:,}): kept")
    bound = max(CONTENTS_MIN_BOUND_CHARS, CONTENTS_CHARS_PER_ENTRY * entries)
    if kind == "contents" and chars > bound:
        return (f"section '{title}' is titled like a table of contents but holds {chars:,} characters "
                f"(contents of {entries} chapters: at most {bound:,}): kept")
    story_size = max(BETWEEN_MIN_CHARS, BETWEEN_CHAPTERS_SHARE * median_chars)
    if kind == "back matter" and between_chapters and chars >= story_size:
        return (f"section '{title}' is titled like back matter but stands between chapters, "
                f"{chars:,} characters long: kept as story")
    if kind in ("front matter", "back matter") and chars > max(TITLED_MIN_CHARS, TITLED_MAX_SHARE * book_chars):
        return (f"section '{title}' is titled like {kind} but holds {chars / book_chars:.0%} of the book: "
                "kept (only its title said otherwise)")
    return None


def keep_overruled(chapters: Sequence[Chapter]) -> tuple[list[Chapter], list[str]]:
    """The chapters with every exclusion by title or shape alone (``title: ...``, ``front matter
    ...``) that is past its kind's size turned back into narrative, and the notes saying so (the
    HTML and Markdown readers; the text reader weighs its sections the same way)."""

    sizes = [c.counted_chars for c in chapters]
    numbered = [i for i, c in enumerate(chapters) if c.narrative and chapter_number(heading_key(c.title))]
    median = statistics.median([sizes[i] for i in numbered]) if numbered else 0.0
    last = numbered[-1] if numbered else -1
    out, notes = list(chapters), []
    for i, chapter in enumerate(chapters):
        reason = chapter.excluded_reason or ""
        if chapter.narrative or not reason.startswith(("title:", "front matter")):
            continue
        note = overruled(reason, title=chapter.title, chars=sizes[i], book_chars=sum(sizes), median_chars=median,
                         entries=len(numbered), between_chapters=i < last)
        if note is not None:
            out[i] = dataclasses.replace(chapter, narrative=True, excluded_reason=None)
            notes.append(note)
    return out, notes


def chapter_number(key: str) -> tuple[str, int] | None:
    """The unit and number of a heading key ("回38" -> ("章", 38): 回 and 章 number the same chapters)."""
    m = _ORDINAL_KEY.match(key)
    if m is None:
        return None
    unit = "章" if m.group(1) == "回" else m.group(1)
    return unit, int(m.group(2))


def _sequence_notes(numbers: Sequence[tuple[str, int]]) -> list[str]:
    """Skips, repeats and backward steps in the numbered headings of one unit."""
    skips: list[str] = []
    repeats: list[str] = []
    backwards: list[str] = []
    prev: dict[str, int] = {}
    for unit, n in numbers:
        p = prev.get(unit)
        prev[unit] = n
        if p is None:
            continue
        if n == p:
            repeats.append(str(n))
        elif n < p and n != 1:  # back to 1: a new part or volume numbers again
            backwards.append(f"{p}→{n}")
        elif n > p + 1:
            skips.append(f"{p}→{n}")
    notes = []
    for what, found in (("skip", skips), ("repeat", repeats), ("run backwards", backwards)):
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            notes.append(f"numbered headings {what}: {shown}")
    return notes


def anomalies(book: Book, *, include_front_matter: bool = False) -> tuple[str, ...]:
    """What looks wrong in a read book, one line each (the reader's own notes first)."""

    notes = list(book.notes)
    numbers = [num for c in book.chapters if c.narrative and (num := chapter_number(heading_key(c.title)))]
    notes += _sequence_notes(numbers)
    sizes = {id(c): c.counted_chars for c in book.chapters}
    notes += _size_notes(book.selected_chapters(include_front_matter=include_front_matter), sizes)
    dropped = sum(d.chars for d in book.dropped)
    total = sum(sizes.values()) + dropped
    excluded = [c for c in book.chapters
                if not c.narrative and exclusion_kind(c.excluded_reason or "") != "boilerplate"]
    excluded_chars = sum(sizes[id(c)] for c in excluded) + dropped
    if not include_front_matter and total and excluded_chars > EXCLUDED_WARN_SHARE * total:
        by_kind: dict[str, int] = {}
        for c in excluded:
            kind = exclusion_kind(c.excluded_reason or "")
            by_kind[kind] = by_kind.get(kind, 0) + sizes[id(c)]
        for d in book.dropped:
            by_kind[d.kind] = by_kind.get(d.kind, 0) + d.chars
        kind, most = max(by_kind.items(), key=lambda item: item[1])
        biggest = max(excluded, key=lambda c: sizes[id(c)], default=None)
        largest = f"; the largest section: '{biggest.title}' ({sizes[id(biggest)]:,})" if biggest else ""
        notes.append(f"excluded text is {excluded_chars / total:.0%} of the book ({excluded_chars:,} of {total:,} "
                     f"characters), most of it {kind} ({most:,}){largest}")
    return tuple(notes)


def _size_notes(kept: Sequence[Chapter], sizes: dict[int, int]) -> list[str]:
    counted = [sizes[id(c)] for c in kept if c.paragraphs]
    if len(counted) < 5:
        return []
    median = statistics.median(counted)
    big = [c for c in kept if median and sizes[id(c)] > OUTLIER_FACTOR * median]
    if not big:
        return []
    worst = max(big, key=lambda c: sizes[id(c)])
    more = f" ({len(big) - 1} more)" if len(big) > 1 else ""
    line = (f"section '{worst.title}' is {sizes[id(worst)] / median:.0f}× the median section "
            f"({sizes[id(worst)]:,} characters): headings inside it may not have been read{more}")
    return [line]


__all__ = ["anomalies", "chapter_number", "exclusion_kind", "keep_overruled", "overruled"]
