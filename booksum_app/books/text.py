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
A Chinese heading whose title lost characters to a lossy re-encoding ("?", U+FFFD or
"□" in place of them: "第六十二回 憨湘云醉眠芍药? 呆香菱情解石榴裙?") is still a heading
when the ordinal is followed by a separator and the title is clean without them.
Standalone upper-case Roman numerals ("XII.") only when the book has at least
three of them.

Web copies: lines of a site's furniture (navigation words only, "后一页 前一页 回目录
回首页", "上一章 ← 章节目录 → 下一章"; a menu bar of three or more short items between
"|", "首页|原创书库|…"; a bare address) are dropped before chapters are found. Each
chapter appears once: a heading with no text whose chapter (same ordinal and unit,
"第38回" = "第三十八回", else the same title) comes again with text is dropped (a page
title above its own heading, a contents list line by line), and so is a chapter that
repeats an earlier one's heading and text word for word (a page saved twice). A block of
several heading lines is a table of contents, not a
heading. Front/back matter titles on their own line (Contents, Preface, 目录, ...)
open a non-narrative section. Text before the first heading is front matter when it
looks like a title page or contents (short lines); otherwise it is kept.
Project Gutenberg's "*** START OF ..."/"*** END OF ..." header and license are
excluded as non-narrative ("gutenberg boilerplate"). Title and author come from its
"Title:"/"Author:" lines, else from a first line such as "《红楼梦》曹雪芹" (or
"《红楼梦》" then "作者：曹雪芹" / "曹雪芹 著").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from booksum_app.books.encoding import CJKISH as _CJKISH
from booksum_app.books.encoding import decode_text
from booksum_app.books.language import detect_language
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter
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
_ZH_NUM = "0-9０-９零〇一二三四五六七八九十百千万两兩"
# A heading is a short line: after the ordinal, a separator and a title, or a few characters
# with no punctuation. A line with sentence punctuation is text ("第四回中既将…表明。").
_ZH_HEADING = re.compile(
    r"^(?!.*[。！？；…!?;])"
    rf"(?:第[{_ZH_NUM}]+[章回节節卷部篇集幕]|序章|楔子|尾声|尾聲|引子|序幕|终章|終章)"
    r"(?:[\s　:：、.．].{0,40}|[^，,、：:“”「」『』（）()]{0,30})$"
)
# the same heading with the title after a separator only: the form a heading keeps when a
# re-encoding turned some of its characters into "?" (a web copy's "…呆香菱情解石榴裙?")
_ZH_HEADING_SEPARATED = re.compile(
    r"^(?!.*[。！？；…!?;])"
    rf"(?:第[{_ZH_NUM}]+[章回节節卷部篇集幕]|序章|楔子|尾声|尾聲|引子|序幕|终章|終章)"
    r"[\s　:：、.．]\S.{0,40}$"
)
_NOISE = re.compile("[?\ufffd□]")  # characters a lossy re-encoding puts for the ones it lost
_ZH_ORDINAL = re.compile(rf"^第([{_ZH_NUM}]+)([章回节節卷部篇集幕])")
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2, "兩": 2}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
# Web residue: a site's navigation copied with the text ("首页|原创书库|…", "后一页 前一页 回目录
# 回首页"), a bare address. Never narrative; such lines are dropped before chapters are found.
_NAV_WORDS = frozenset({
    "首页", "上一页", "下一页", "前一页", "后一页", "回目录", "回首页", "返回目录", "返回首页",
    "章节目录", "返回书页", "返回书目", "上一章", "下一章", "上一回", "下一回", "上一篇", "下一篇",
    "加入书签", "推荐本书", "返回顶部", "回到顶部", "打印本页", "关闭窗口", "目录", "返回", "书签",
    "投票推荐", "TOP", "top",
})
_NAV_SPLIT = re.compile(r"[|｜/／\\\s·•>»«<\[\]【】()（）←→]+")
_MENU_SPLIT = re.compile(r"\s*[|｜]\s*")
_URL_LINE = re.compile(r"^(?:https?://|www\.)\S+$", re.IGNORECASE)
_SENTENCE_MARKS = re.compile("[。！？；，,.!?;]")
_ROMAN_LINE = re.compile(r"^[IVXLC]{1,7}\.?$")
_GUTENBERG_START = re.compile(r"^\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_END = re.compile(r"^\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_FIELD = re.compile(r"^(Title|Author):\s*(.+)$")
_ZH_TITLE_LINE = re.compile(
    r"^《([^《》]{1,60})》\s*(?:作者\s*[:：]?\s*)?(.{0,30}?)\s*(?:著|撰|编著)?$"
)
_ZH_AUTHOR_LINE = re.compile(r"^(?:作者\s*[:：]\s*(\S.{0,29})|(\S.{0,29}?)\s*(?:著|撰|编著))$")


# ---- structure -------------------------------------------------------------


@dataclass
class _Section:
    title: str
    line: int
    kind: str  # "front", "heading", "boilerplate"
    paragraphs: list[str] = field(default_factory=list)
    toc: bool = False


def _zh_heading(line: str) -> bool:
    """A Chinese heading, also one whose title has re-encoding noise ("…石榴裙?")."""
    if _ZH_HEADING.match(line):
        return True
    cleaned = _NOISE.sub("", line)
    return cleaned != line and bool(_ZH_HEADING_SEPARATED.match(cleaned))


def _is_heading(line: str, *, romans: bool) -> bool:
    if len(line) > 90:
        return False
    return bool(
        _EN_HEADING.match(line) or _zh_heading(line) or (romans and _ROMAN_LINE.match(line))
    )


def is_heading(line: str) -> bool:
    """A chapter heading line of the kinds above ("Chapter 12", "BOOK ONE", "第十二章"; Roman numerals aside)."""
    return _is_heading(" ".join(line.split()), romans=False)


def is_web_residue(line: str) -> bool:
    """A line of a web page's furniture: navigation words only, a menu bar, a bare address."""
    line = line.strip()
    if not line or len(line) > 200:
        return False
    if _URL_LINE.match(line):
        return True
    words = [w for w in _NAV_SPLIT.split(line) if w]
    if words and all(w in _NAV_WORDS for w in words) and words != ["目录"]:
        return True  # a lone 目录 is a contents title (front matter), not a link
    items = _MENU_SPLIT.split(line)
    return len(items) >= 3 and all(
        0 < len(item) <= 8 and not _SENTENCE_MARKS.search(item) for item in items
    )


def _zh_number(digits: str) -> int | None:
    """The value of ``38``, ``３８`` or ``三十八`` / ``一百零二`` (None when it is not a number)."""
    if digits.isdigit():
        return int(digits)
    total = section = 0
    number = None
    for ch in digits:
        if ch in _ZH_DIGITS:
            number = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            unit = _ZH_UNITS[ch]
            if unit == 10000:
                total += (section + (number or 0)) * unit
                section = 0
            else:
                section += (1 if number is None else number) * unit
            number = None
        else:
            return None
    return total + section + (number or 0)


def heading_key(title: str) -> str:
    """What makes two headings the same chapter: the ordinal and its unit ("第38回" is
    "第三十八回"), else the title without noise characters, spaces or case."""
    cleaned = _NOISE.sub("", title)
    m = _ZH_ORDINAL.match(cleaned)
    if m:
        value = _zh_number(m.group(1))
        if value is not None:
            return f"{m.group(2)}{value}"
    return "".join(cleaned.split()).lower()


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines of one paragraph: a space between words, nothing between CJK characters."""
    out = lines[0]
    for line in lines[1:]:
        if out and line and _CJKISH.match(out[-1]) and _CJKISH.match(line[0]):
            out += line
        else:
            out += " " + line
    return out


def _blocks(lines: list[str], *, line_mode: bool, zh: bool) -> list[tuple[int, list[str]]]:
    """Group lines into blocks (start line index, raw lines)."""
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
                or _zh_heading(stripped)
                or (len(current) == 1 and _zh_heading(current[0]))
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


def split_text(text: str, *, lang: str) -> list[_Section]:
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
    sections: list[_Section] = []
    if start > 0:
        header = [line.strip() for line in lines[:start] if line.strip()]
        sections.append(_Section("Project Gutenberg header", 1, "boilerplate", header))
    # web residue is blanked (line numbers kept), and left out of the line-mode decision
    body = ["" if is_web_residue(line) else line for line in lines[start:end]]
    filled = [i for i, line in enumerate(body) if line.strip()]
    nonblank = len(filled)
    blank = (filled[-1] - filled[0] + 1 - nonblank) if filled else 0  # interior blank lines
    avg_len = sum(len(body[i]) for i in filled) / max(nonblank, 1)
    zh = lang == "zh"
    line_mode = (zh and blank < 0.1 * nonblank) or (blank < 0.05 * nonblank and avg_len > 100)
    blocks = _blocks(body, line_mode=line_mode, zh=zh)
    romans = sum(1 for _, b in blocks if len(b) == 1 and _ROMAN_LINE.match(b[0])) >= 3

    current = _Section("", start + 1, "front")
    sections.append(current)
    for offset, block in blocks:
        first = block[0]
        heading_lines = sum(1 for line in block if _is_heading(line, romans=romans))
        if heading_lines >= 2:
            current.paragraphs.append("\n".join(block))
            current.toc = True
            continue
        matter = len(first) <= 40 and classify_title(first) is not None
        if heading_lines == 1 and _is_heading(first, romans=romans) or matter:
            rest = block[1:]
            title = first
            if rest and len(rest) <= 2 and sum(len(r) for r in rest) <= 100:
                title = ": ".join([first.rstrip(".:"), *rest])
                rest = []
            current = _Section(title, start + offset + 1, "heading")
            sections.append(current)
            if rest:
                current.paragraphs.append(join_lines(rest))
            continue
        current.paragraphs.append(join_lines(block))
    if end < len(lines):
        footer = [line.strip() for line in lines[end:] if line.strip()]
        sections.append(_Section("Project Gutenberg license", end + 1, "boilerplate", footer))
    return _without_duplicate_headings(sections)


def _without_duplicate_headings(sections: list[_Section]) -> list[_Section]:
    """Each chapter once: drop a heading with no text whose chapter comes again with text (a
    web page's title above its own heading, a contents list line by line), and a chapter whose
    heading and text repeat an earlier one word for word (a page copied twice)."""
    with_text = {heading_key(s.title) for s in sections if s.kind == "heading" and s.paragraphs}
    kept: list[_Section] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for section in sections:
        if section.kind == "heading":
            key = heading_key(section.title)
            if not section.paragraphs and key in with_text:
                continue
            if section.paragraphs:
                content = (key, tuple(section.paragraphs))
                if content in seen:
                    continue
                seen.add(content)
        kept.append(section)
    return kept


def _classify(section: _Section, *, has_headings: bool) -> str | None:
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
    sections = split_text(text, lang=language)
    has_headings = any(s.kind == "heading" for s in sections)
    chapters = []
    for s in sections:
        if s.kind == "front" and not s.paragraphs:
            continue
        reason = _classify(s, has_headings=has_headings)
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
            )
        )
    check_has_text(chapters, name=path.name, include_front_matter=include_front_matter)
    fields = _gutenberg_fields(sections) or _title_line(sections)
    metadata = {"encoding": encoding} if encoding else {}
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
    )


def _gutenberg_fields(sections: list[_Section]) -> dict[str, str]:
    found: dict[str, str] = {}
    if sections and sections[0].kind == "boilerplate":
        for line in sections[0].paragraphs:
            m = _GUTENBERG_FIELD.match(line)
            if m and m.group(1) not in found:
                found[m.group(1)] = m.group(2).strip()
    return found


def _title_line(sections: list[_Section]) -> dict[str, str]:
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
