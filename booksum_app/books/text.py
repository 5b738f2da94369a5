"""Plain-text reader: encoding detection, paragraphs, chapter headings, Gutenberg boilerplate.

Encodings: see ``booksum_app.books.encoding``.

Paragraphs: blocks separated by blank lines, their lines joined (with no space
between CJK characters). A file with almost no blank lines and long lines, or
Chinese text with almost no blank lines, is read one paragraph per line; in Chinese
text a line starting with full-width indentation (U+3000) also starts a paragraph.

Chapter headings on a line of their own, at the start of a block: "Chapter 12",
"CHAPTER XII", "Chapter Twelve", "Chapter the First", "BOOK ONE", "Part II",
"Letter 4", "Prologue"/"Epilogue", "第十二章", "第十二回", "第12章", "楔子"/"尾声";
numbers up to six digits ("Chapter 10000"). A Chinese heading is a short line: the
ordinal, then a separator and a title of up to 40 characters, or up to 30 characters
without punctuation; a line with 。！？；… is a sentence ("第四回中既将…表明。"), text.
Zero-width characters and spaces inside the ordinal ("第 62 回") are ignored. "番外" headings
are chapters (side stories are story).
A site's short prefix or bracket around the ordinal ("正文 第一回", "VIP章节 第一章", "【第一章】",
"卷一 第一回", "第一卷 第一章", "【重发】第二回") is read past, and page-split markers ("(第2/3页)")
leave titles and text (booksum_app.books.webcopy.heading_form); ordinals are read in any numeral
style (38, 038, ３８, 三十八, 一零二, 叁拾捌).
A heading in which noise marks ("?", "？", "□", "■", U+FFFD) stand for lost characters or
separators, anywhere in it, is a heading when its ordinal, with the marks read as numerals,
fits the book's sequence of headings (booksum_app.books.webcopy).
Standalone upper-case Roman numerals ("XII.") only when the book has at least
three of them.

Web copies: lines of a site's furniture and advertising (booksum_app.books.webcopy.residue_kind)
are dropped before chapters are found and counted in ``Book.metadata["web_residue_lines"]``.
Each chapter appears once: a heading with no text whose chapter (same ordinal and unit,
"第38回" = "第三十八回", else the same title) comes again with text is dropped (a page
title above its own heading, a contents list line by line), a chapter that repeats an
earlier one's heading and text word for word (a page saved twice) is dropped, and a heading
right after the same chapter's heading joins it (up to 3 short lines between are residue,
counted; more is the chapter's previous page). A block of several heading lines is a table
of contents, not a heading. Front/back matter titles on their own line (Contents, Preface,
目录, 后记, 跋, 附录, ...) open a non-narrative section; a title is weak evidence, so a section
past what its kind can hold is kept and said (booksum_app.books.sections.overrule_titled).
Every span dropped on the way is recorded in ``Book.dropped`` (booksum_app.books.accounting).
Text before the first heading is front matter when it looks like a title page or contents
(short lines); otherwise it is kept.
Project Gutenberg's "*** START OF ..."/"*** END OF ..." header and license are
excluded as non-narrative ("gutenberg boilerplate"). Title and author come from its
"Title:"/"Author:" lines, else from a first line such as "《红楼梦》曹雪芹" (or
"《红楼梦》" then "作者：曹雪芹" / "曹雪芹 著").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from booksum_app.books.encoding import CJKISH as _CJKISH
from booksum_app.books.encoding import decode_text
from booksum_app.books.language import detect_language
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter, Dropped, counted_chars
from booksum_app.books.numerals import UNIT_CHARS, zh_number
from booksum_app.books.numerals import ZH_NUM as _ZH_NUM
from booksum_app.books.plausibility import heading_key
from booksum_app.books.sections import Section, overrule_titled, without_duplicate_headings
from booksum_app.books.webcopy import (
    PAGE_MARK,
    NumberedHeading,
    heading_form,
    residue_kind,
    resolve_noisy_headings,
    title_core,
    without_page_marks,
    without_zero_width,
)
from booksum_app.errors import BookFormatError

_UNITS = "one|two|three|four|five|six|seven|eight|nine"
_TEENS = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_ORDS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last|final"
)
_NUMBER = rf"(?:\d{{1,6}}|[ivxlcdm]{{1,8}}|(?:{_TENS})(?:[-\s](?:{_UNITS}))?|{_TEENS}|{_UNITS}|(?:the\s+)?(?:{_ORDS}))"
_EN_HEADING = re.compile(
    rf"^(?:chapter|chap\.|book|part|volume|vol\.|letter|canto|section|act|scene)\s+{_NUMBER}\b"
    r"\.?(?:\s*[:.—–-]?\s*\S.{0,70})?$|^(?:prologue|epilogue)\b(?:\s*[:.—–-]?\s*\S.{0,70})?$",
    re.IGNORECASE,
)
# A heading is a short line: after the ordinal, a separator and a title, or a few characters
# with no punctuation. A line with sentence punctuation is text ("第四回中既将…表明。").
_ZH_HEADING = re.compile(
    r"^(?!.*[。！？；…!?;])"
    rf"(?:第[{_ZH_NUM}]+[{UNIT_CHARS}]|序章|楔子|尾声|尾聲|引子|序幕|终章|終章|番外(?:篇|[{_ZH_NUM}]+)?)"
    r"(?:[\s　:：、.．].{0,40}|[^，,、：:“”「」『』（）()]{0,30})$"
)
_ZH_ORDINAL = re.compile(rf"^第([{_ZH_NUM}]+)([{UNIT_CHARS}])")
_ROMAN_LINE = re.compile(r"^[IVXLC]{1,7}\.?$")
_GUTENBERG_START = re.compile(r"^\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_END = re.compile(r"^\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_FIELD = re.compile(r"^(Title|Author):\s*(.+)$")
_ZH_TITLE_LINE = re.compile(
    r"^《([^《》]{1,60})》\s*(?:作者\s*[:：]?\s*)?(.{0,30}?)\s*(?:著|撰|编著)?$"
)
_ZH_AUTHOR_LINE = re.compile(r"^(?:作者\s*[:：]\s*(\S.{0,29})|(\S.{0,29}?)\s*(?:著|撰|编著))$")


# ---- structure -------------------------------------------------------------


def _zh_heading(line: str) -> bool:
    """A Chinese heading with no noise marks (noisy ones: webcopy.resolve_noisy_headings)."""
    return bool(_ZH_HEADING.match(heading_form(line)))


def _numbered_heading(line: str) -> NumberedHeading | None:
    """A clean "第…回" heading with its unit, number and title (for the noisy ones' sequence)."""
    form = heading_form(line)
    m = _ZH_ORDINAL.match(form)
    if m is None or not _ZH_HEADING.match(form):
        return None
    value = zh_number(m.group(1))
    return None if value is None else NumberedHeading(-1, m.group(2), value, title_core(form[m.end():]))


def _is_heading(line: str, *, romans: bool) -> bool:
    if len(line) > 90:
        return False
    return bool(
        _EN_HEADING.match(line) or _zh_heading(line) or (romans and _ROMAN_LINE.match(line))
    )


def is_heading(line: str) -> bool:
    """A chapter heading line of the kinds above ("Chapter 12", "BOOK ONE", "第十二章"; Roman numerals aside)."""
    return _is_heading(" ".join(line.split()), romans=False)


_SENTENCE_END = re.compile("[。！？!?…]")


def _is_matter_title(line: str) -> bool:
    """A short line naming front or back matter ("后记", "Contents"); a sentence
    ("作者有話說：本章有改動，請刷新。") is text, not a title."""
    return len(line) <= 40 and not _SENTENCE_END.search(line) and classify_title(line) is not None


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines of one paragraph: a space between words, nothing between CJK characters."""
    parts, tail = [lines[0]], lines[0][-1:]  # joined at the end: a page-long paragraph is not copied per line
    for line in lines[1:]:
        parts.append(line if tail and line and _CJKISH.match(tail) and _CJKISH.match(line[0]) else " " + line)
        tail = parts[-1][-1]
    return "".join(parts)


def _blocks(
    lines: list[str], *, line_mode: bool, zh: bool, is_title: Callable[[int, str], bool]
) -> list[tuple[int, list[str]]]:
    """Group lines into blocks (start line index, raw lines); in Chinese text a heading or a
    front/back matter title is a block of its own."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for i, raw in enumerate(lines):
        stripped = raw.strip()
        new_para = line_mode or (
            zh
            and bool(current)
            and (
                raw.startswith(("\u3000", "  "))
                or is_title(i, stripped)
                or (len(current) == 1 and is_title(start, current[0]))
            )
        )
        if not stripped or new_para:
            if current:
                blocks.append((start, current))
                current = []
            if not stripped:
                continue
        if not current:
            start = i
        current.append(stripped.lstrip("\u3000"))
    if current:
        blocks.append((start, current))
    return blocks


@dataclass
class _Split:
    sections: list[Section]
    residue: Counter[str]  # lines of web residue dropped, by kind
    dropped: list[Dropped] = field(default_factory=list)  # every dropped span, with its size


def _without_page_marks(
    lines: list[str], first_line: int, residue: Counter[str], dropped: list[Dropped]
) -> set[int]:
    """Take page-split markers ("(第2/3页)") out of the lines in place, counted as residue; the
    indexes of the lines that had one."""
    marked = set()
    for i, line in enumerate(lines):
        if ("/" in line or "／" in line) and PAGE_MARK.search(line):
            removed = "".join(PAGE_MARK.findall(line))
            lines[i] = PAGE_MARK.sub("", line).rstrip()
            marked.add(i)
            residue["page marker"] += 1
            dropped.append(Dropped("page marker", counted_chars(removed), f"line {first_line + i + 1}"))
    return marked


def split_text(text: str, *, lang: str) -> _Split:
    """Split decoded text into sections at chapter headings (see module docstring)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").split("\n")
    start, end = 0, len(lines)
    for i, line in enumerate(lines):
        if _GUTENBERG_START.match(line.strip()):
            start = i + 1
            break
    for i in range(len(lines) - 1, start - 1, -1):
        if _GUTENBERG_END.match(lines[i].strip()):
            end = i
            break
    sections: list[Section] = []
    if start > 0:
        header = [line.strip() for line in lines[:start] if line.strip()]
        sections.append(Section("Project Gutenberg header", 1, "boilerplate", header))
    # web residue is blanked (line numbers kept), counted, and left out of the line-mode decision
    kinds = [residue_kind(line) for line in lines[start:end]]
    residue = Counter(kind for kind in kinds if kind)
    dropped = [Dropped(kind, counted_chars(line), f"line {start + i + 1}")
               for i, (line, kind) in enumerate(zip(lines[start:end], kinds, strict=True)) if kind]
    body = ["" if kind else line for line, kind in zip(lines[start:end], kinds, strict=True)]
    paged = _without_page_marks(body, start, residue, dropped)
    filled = [i for i, line in enumerate(body) if line.strip()]
    nonblank = len(filled)
    blank = sum(1 for i in range(filled[0], filled[-1]) if not kinds[i] and not body[i].strip()) if filled else 0
    avg_len = sum(len(body[i]) for i in filled) / max(nonblank, 1)
    zh = lang == "zh"
    line_mode = (zh and blank < 0.1 * nonblank) or (blank < 0.05 * nonblank and avg_len > 100)
    noisy = resolve_noisy_headings(body, _numbered_heading)

    def is_title(i: int, line: str) -> bool:
        return i in noisy or _zh_heading(line) or _is_matter_title(line)

    blocks = _blocks(body, line_mode=line_mode, zh=zh, is_title=is_title)
    romans = sum(1 for _, b in blocks if len(b) == 1 and _ROMAN_LINE.match(b[0])) >= 3

    current = Section("", start + 1, "front")
    sections.append(current)
    for offset, block in blocks:
        first = block[0]
        heading_lines = sum(1 for line in block if _is_heading(line, romans=romans))
        if heading_lines >= 2:
            current.paragraphs.append("\n".join(block))
            current.toc = True
            continue
        if (heading_lines == 1 and _is_heading(first, romans=romans)) or offset in noisy or _is_matter_title(first):
            rest = block[1:]
            title = without_page_marks(without_zero_width(first))
            if rest and len(rest) <= 2 and sum(len(r) for r in rest) <= 100:
                title = ": ".join([title.rstrip(".:"), *rest])
                rest = []
            current = Section(title, start + offset + 1, "heading", key=noisy.get(offset) or heading_key(title),
                               paged=offset in paged)
            sections.append(current)
            if rest:
                current.paragraphs.append(join_lines(rest))
            continue
        current.paragraphs.append(join_lines(block))
    if end < len(lines):
        footer = [line.strip() for line in lines[end:] if line.strip()]
        sections.append(Section("Project Gutenberg license", end + 1, "boilerplate", footer))
    kept, between = without_duplicate_headings(sections, dropped)
    if between:
        residue["between repeated headings"] += between
    return _Split(kept, residue, dropped)


def _classify(section: Section, *, has_headings: bool) -> str | None:
    if section.kind == "boilerplate":
        return "gutenberg boilerplate"
    if section.kind == "front":
        if not has_headings:
            return None
        return classify_leading(section.paragraphs, looks_like_toc=section.toc)
    return classify_title(section.title)


MAX_BOOK_FILE_BYTES = 512 << 20  # as an epub's unpacked size (archive.py): far past any book (War and Peace: 3 MiB)


def read_book_bytes(path: Path) -> bytes:
    """The file's bytes, or a one-line BookFormatError saying why they cannot be read.

    Reads at most :data:`MAX_BOOK_FILE_BYTES` (plus one, to know it is more), so a huge or
    endless file (a device, a pipe) is refused before it fills memory.
    """
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BOOK_FILE_BYTES + 1)
    except OSError as exc:
        raise BookFormatError(f"{path.name}: cannot read the file ({exc.strerror})") from exc
    if len(data) > MAX_BOOK_FILE_BYTES:
        raise BookFormatError(
            f"{path.name}: over {MAX_BOOK_FILE_BYTES >> 20} MiB, far larger than any book; refusing to read it"
        )
    return data


def read_text(path: Path, *, lang: str | None = None, include_front_matter: bool = False) -> Book:
    """Read a plain-text book.

    Raises:
        BookFormatError: binary, undecodable or empty file.
    """
    data = read_book_bytes(path)
    text, encoding = decode_text(data, name=path.name, lang=lang)
    language = lang or detect_language(text)
    return book_from_text(
        text,
        path=path,
        language=language,
        encoding=encoding,
        include_front_matter=include_front_matter,
    )


def book_from_text(
    text: str, *, path: Path, language: str, encoding: str = "", include_front_matter: bool = False
) -> Book:
    """Build a Book from decoded text (used by read_text, exposed for callers holding a str)."""
    split = split_text(text, lang=language)
    sections = split.sections
    has_headings = any(s.kind == "heading" for s in sections)
    reasons = [_classify(s, has_headings=has_headings) for s in sections]
    notes = overrule_titled(sections, reasons)
    chapters = []
    for s, reason in zip(sections, reasons, strict=True):
        if s.kind == "front" and not s.paragraphs:
            continue
        if reason is None and not s.paragraphs:
            reason = "no text"
        title = s.title or ("Opening" if has_headings else path.stem)
        chapters.append(
            Chapter(
                title=title,
                paragraphs=tuple(s.paragraphs),
                narrative=reason is None,
                excluded_reason=reason,
                source=f"line {s.line}",
                title_in_text=s.kind == "heading",
            )
        )
    check_has_text(chapters, name=path.name, include_front_matter=include_front_matter)
    fields = _gutenberg_fields(sections) or _title_line(sections)
    metadata = {"encoding": encoding} if encoding else {}
    if split.residue:
        metadata["web_residue_lines"] = str(sum(split.residue.values()))
        metadata["web_residue"] = ", ".join(f"{kind} {n}" for kind, n in sorted(split.residue.items()))
    return Book(
        title=fields.get("Title", path.stem),
        authors=tuple(a.strip() for a in fields["Author"].split(" and "))
        if "Author" in fields
        else (),
        language=language,
        chapters=tuple(chapters),
        source_path=str(path),
        format="txt",
        metadata=metadata,
        dropped=tuple(split.dropped),
        notes=tuple(notes),
    )


def _gutenberg_fields(sections: list[Section]) -> dict[str, str]:
    found: dict[str, str] = {}
    if sections and sections[0].kind == "boilerplate":
        for line in sections[0].paragraphs:
            m = _GUTENBERG_FIELD.match(line)
            if m and m.group(1) not in found:
                found[m.group(1)] = m.group(2).strip()
    return found


def _title_line(sections: list[Section]) -> dict[str, str]:
    """Title and author from a line such as ``《红楼梦》曹雪芹`` (or ``作者：曹雪芹`` below it)."""
    front = next((s for s in sections if s.kind != "boilerplate"), None)
    if front is None or front.kind != "front" or not front.paragraphs:
        return {}
    lines = [ln.strip() for p in front.paragraphs[:3] for ln in p.split("\n") if ln.strip()]
    m = _ZH_TITLE_LINE.match(lines[0]) if lines else None
    if m is None:
        return {}
    found = {"Title": m.group(1).strip()}
    author = m.group(2).strip()
    if not author and len(lines) > 1:
        a = _ZH_AUTHOR_LINE.match(lines[1])
        author = (a.group(1) or a.group(2) or "").strip() if a else ""
    if author:
        found["Author"] = author
    return found
