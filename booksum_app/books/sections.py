"""Sections of a plain-text book: each chapter once (repeated headings, pages of one chapter),
and title-based exclusions weighed against what their kind can hold."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from booksum_app.books.matter import classify_title
from booksum_app.books.model import Dropped, counted_chars
from booksum_app.books.numerals import NOISE, UNIT_CHARS, ZH_NUM
from booksum_app.books.plausibility import chapter_number, overruled
from booksum_app.books.webcopy import heading_form, same_title, title_core

_ORDINAL = re.compile(rf"^第[{ZH_NUM}]+[{UNIT_CHARS}]")


@dataclass
class Section:
    title: str
    line: int
    kind: str  # "front", "heading", "boilerplate"
    paragraphs: list[str] = field(default_factory=list)
    toc: bool = False
    key: str = ""  # the chapter a heading names (heading_key, or a noisy heading's resolved key)
    paged: bool = False  # its heading carried a page-split marker ("(第2/3页)"): one page of a chapter


_REPEAT_RESIDUE_CHARS = 120  # at most this much text (3 lines) between two copies of one heading


def same_chapter(key: str) -> str:
    """A heading key with 回 and 章 read alike: a site's "第038章" above the text's "第三十八回"."""
    number = chapter_number(key)
    return f"章{number[1]}" if number is not None and number[0] == "章" else key


def _same_titles(a: str, b: str) -> bool:
    """Two headings of one number name one chapter: their titles after the ordinal agree (or one has none)."""
    ta, tb = (title_core(_ORDINAL.sub("", heading_form(t), count=1)) for t in (a, b))
    return not ta or not tb or ta == tb or same_title(ta, tb)


def section_chars(section: Section) -> int:
    return counted_chars(section.title) + sum(map(counted_chars, section.paragraphs))


def without_duplicate_headings(sections: list[Section], dropped: list[Dropped]) -> tuple[list[Section], int]:
    """Each chapter once: drop a heading with no text whose chapter comes again with text (a
    web page's title above its own heading, a contents list line by line), a chapter whose
    heading and text repeat an earlier one word for word (a page copied twice), and join a
    heading to the same chapter's heading right before it: the lines between two copies (at
    most 3 lines, 120 characters) are residue; more is the chapter's previous page. 回 and 章
    of one number are one chapter. Returns the sections and the number of residue lines dropped
    between repeated headings; every dropped span goes into ``dropped``."""
    with_text = {same_chapter(s.key) for s in sections if s.kind == "heading" and s.paragraphs}
    kept: list[Section] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    between = 0
    for section in sections:
        if section.kind == "heading":
            key = same_chapter(section.key)
            where = f"line {section.line}"
            if not section.paragraphs and key in with_text:
                dropped.append(Dropped("repeated heading", counted_chars(section.title), where))
                continue
            if section.paragraphs:
                content = (key, tuple(section.paragraphs))
                if content in seen:
                    dropped.append(Dropped("repeated chapter", section_chars(section), where))
                    continue
                seen.add(content)
            prev = kept[-1] if kept else None
            if (
                prev is not None
                and prev.kind == "heading"
                and same_chapter(prev.key) == key
                and _same_titles(prev.title, section.title)  # 第2章 甲 and 第2章 乙 are two chapters
                and classify_title(section.title) is None  # two afterwords are two sections
            ):
                kept[-1], lines = _join_repeated(prev, section, dropped)
                between += lines
                continue
        kept.append(section)
    return kept, between


def _join_repeated(first: Section, again: Section, dropped: list[Dropped]) -> tuple[Section, int]:
    """One chapter from two consecutive copies of its heading (see without_duplicate_headings)."""
    title = first.title if len(NOISE.findall(first.title)) < len(NOISE.findall(again.title)) else again.title
    other = again.title if title is first.title else first.title
    where = f"line {again.line}"
    dropped.append(Dropped("repeated heading", counted_chars(other), where))
    pages = first.paged or again.paged  # pages of one chapter: what is between is its text
    if not pages and len(first.paragraphs) <= 3 and sum(map(len, first.paragraphs)) <= _REPEAT_RESIDUE_CHARS:
        if first.paragraphs:
            dropped.append(Dropped("between repeated headings", sum(map(counted_chars, first.paragraphs)), where))
        return Section(title, first.line, "heading", list(again.paragraphs), key=first.key), len(first.paragraphs)
    known = set(first.paragraphs)
    paragraphs = first.paragraphs + [p for p in again.paragraphs if p not in known]
    repeated = [p for p in again.paragraphs if p in known]
    if repeated:
        dropped.append(Dropped("repeated paragraph", sum(map(counted_chars, repeated)), where))
    return Section(title, first.line, "heading", paragraphs, key=first.key, paged=pages), 0


def overrule_titled(sections: list[Section], reasons: list[str | None]) -> list[str]:
    """Keep a section excluded by its title or shape alone (a matter title, the text before the first
    heading) when it is past what its kind can be (``plausibility.overruled``): its reason is
    cleared in ``reasons``; the notes say why."""
    sizes = [section_chars(s) for s in sections]
    numbered = [i for i, s in enumerate(sections) if s.kind == "heading" and chapter_number(same_chapter(s.key))]
    median = statistics.median([sizes[i] for i in numbered]) if numbered else 0.0
    last_numbered = numbered[-1] if numbered else -1
    notes = []
    for i, (section, reason) in enumerate(zip(sections, reasons, strict=True)):
        weak = (section.kind == "heading" and reason is not None and reason.startswith("title:")) or (
            section.kind == "front" and reason is not None and reason.startswith("front matter"))
        if reason is None or not weak:  # structure (Gutenberg's markers) is strong evidence
            continue
        note = overruled(reason, title=section.title or "Opening", chars=sizes[i], book_chars=sum(sizes),
                         median_chars=median, entries=len(numbered), between_chapters=i < last_numbered)
        if note is not None:
            reasons[i] = None
            notes.append(note)
    return notes


__all__ = ["Section", "overrule_titled", "same_chapter", "section_chars", "without_duplicate_headings"]
