"""Plain-text reader: encoding detection, paragraphs, chapter headings, Gutenberg boilerplate.

Encodings: a BOM decides first (UTF-8, UTF-16 LE/BE, UTF-32); NUL bytes
mean BOM-less UTF-16 when one byte order decodes to text rich in ASCII and CJK
punctuation; otherwise NULs or a high share of control characters mean a binary
file, refused. Then strict UTF-8; then charset-normalizer, whose answer is taken for
the encodings our rules cannot tell apart (Big5, Shift-JIS, EUC-KR, cp1251, KOI8-R,
Greek, ...), but not for the Latin and GB families, nor for files under 64 bytes: there
the rules decide, GB18030 -> cp1252. GB18030 also accepts many cp1252 byte pairs ("é" + "s"),
so its result is only taken when it looks Chinese: at least 90 % of the non-ASCII
characters are CJK ideographs or CJK/full-width punctuation and ideographs make up
at least 5 % of letters (or ``lang="zh"`` was given), or when cp1252 cannot decode.

Paragraphs: blocks separated by blank lines, their lines joined (with no space
between CJK characters). A file with almost no blank lines and long lines, or
Chinese text with almost no blank lines, is read one paragraph per line; in Chinese
text a line starting with full-width indentation (U+3000) also starts a paragraph.

Chapter headings on a line of their own, at the start of a block: "Chapter 12",
"CHAPTER XII", "Chapter Twelve", "Chapter the First", "BOOK ONE", "Part II",
"Letter 4", "Prologue"/"Epilogue", "第十二章", "第十二回", "第12章", "楔子"/"尾声";
standalone upper-case Roman numerals ("XII.") only when the book has at least
three of them. A block of several heading lines is a table of contents, not a
heading. Front/back matter titles on their own line (Contents, Preface, 目录, ...)
open a non-narrative section. Text before the first heading is front matter when it
looks like a title page or contents (short lines); otherwise it is kept.
Project Gutenberg's "*** START OF ..."/"*** END OF ..." header and license are
excluded as non-narrative ("gutenberg boilerplate").
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path

from booksum_app.books.language import count_cjk, detect_language
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter
from booksum_app.errors import BookFormatError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_CJKISH = re.compile(
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u2010-\u2027]"
)

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
_ZH_HEADING = re.compile(
    rf"^(?:第[{_ZH_NUM}]+[章回节節卷部篇集幕]|序章|楔子|尾声|尾聲|引子|序幕|终章|終章)(?:[\s　:：、.．].{{0,40}}|.{{0,30}})$"
)
# a heading is a title, not a sentence: 第四回 at the start of a line of narration ("第四回说到
# ...。") is text (issue 9 item 8). Titles (回目 couplets) carry no sentence punctuation.
_ZH_SENTENCE_MARKS = re.compile(r"[。！？!?；;…]|[，,].*[，,]")  # quotes are fine: 燕青智扑“擎天柱”
_ROMAN_LINE = re.compile(r"^[IVXLC]{1,7}\.?$")
_GUTENBERG_START = re.compile(r"^\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_END = re.compile(r"^\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_FIELD = re.compile(r"^(Title|Author):\s*(.+)$")


# ---- decoding --------------------------------------------------------------


def decode_text(data: bytes, *, name: str, lang: str | None = None) -> tuple[str, str]:
    """Decode the bytes of a text file; return (text, encoding name).

    Raises:
        BookFormatError: the file is binary or in no supported encoding.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise BookFormatError(
                    f"{name}: starts with a {encoding} byte-order mark but is not valid {encoding} "
                    f"({exc.reason} at byte {exc.start}); re-save it as UTF-8"
                ) from exc
            return _check_not_binary(
                text, name
            ), f"{encoding}-bom" if encoding == "utf-8" else encoding
    if b"\x00" in data:
        return _decode_utf16_without_bom(data, name)
    try:
        return _check_not_binary(data.decode("utf-8"), name), "utf-8"
    except UnicodeDecodeError:
        pass
    detected = _detect(data)
    if detected is not None:
        return _check_not_binary(detected[0], name), detected[1]
    gb = _try(data, "gb18030")
    cp = _try(data, "cp1252")
    if gb is not None and (cp is None or _looks_chinese(gb, lang=lang)):
        return _check_not_binary(gb, name), "gb18030"
    if cp is not None:
        return _check_not_binary(cp, name), "cp1252"
    raise BookFormatError(
        f"{name}: cannot decode the text: not UTF-8, UTF-16, GB18030, cp1252 or another encoding "
        "charset-normalizer recognizes; re-save it as UTF-8"
    )


# Single-byte Western encodings: here our own rule (cp1252, a superset of Latin-1's printable
# range) is right and the detector is not (it reads short French as cp1250).
_LATIN_FAMILY = frozenset({"ascii", "cp1252", "latin_1", "iso8859_15", "cp1250", "iso8859_2", "mac_roman",
                           "cp850", "cp437", "iso8859_3", "iso8859_4", "iso8859_9", "iso8859_10",
                           "iso8859_13", "iso8859_14", "iso8859_16", "cp1254", "cp1257", "mac_latin2"})
_GB_FAMILY = frozenset({"gb18030", "gbk", "gb2312", "hz"})
MIN_DETECT_BYTES = 64  # below this the detector guesses; our rules decide


def _detect(data: bytes) -> tuple[str, str] | None:
    """``(text, encoding)`` from charset-normalizer for the encodings our rules cannot tell apart.

    Big5, Shift-JIS/cp932, EUC-KR/cp949, cp1251, KOI8-R, Greek, Hebrew, Arabic, ... are taken
    from the detector; the Latin family and the GB family are left to the rules above
    (``None``), which also decide short files.
    """
    if len(data) < MIN_DETECT_BYTES:
        return None
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or best.encoding in _LATIN_FAMILY or best.encoding in _GB_FAMILY:
        return None
    return str(best), best.encoding


def _try(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def _looks_chinese(text: str, *, lang: str | None) -> bool:
    text = text[:200_000]
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    if non_ascii == 0:
        return False
    cjkish = len(_CJKISH.findall(text))
    if cjkish < 0.9 * non_ascii:
        return False
    if lang == "zh":
        return True
    letters = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return count_cjk(text) >= 0.05 * (count_cjk(text) + letters)


_UTF16_SIGNAL = re.compile(r"[\t\n\r -~\u3000-\u303f\uff00-\uffef]")


def _decode_utf16_without_bom(data: bytes, name: str) -> tuple[str, str]:
    """Decode BOM-less UTF-16, choosing the byte order that yields more ASCII and CJK punctuation.

    NUL parity alone misleads for Chinese: a newline puts its NUL on one side, U+3000 on the other.
    """
    best: tuple[int, str, str] | None = None
    if len(data) % 2 == 0:
        for encoding in ("utf-16-le", "utf-16-be"):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                continue
            score = len(_UTF16_SIGNAL.findall(text[:65536]))
            if best is None or score > best[0]:
                best = (score, text, encoding)
    if best is not None:
        score, text, encoding = best
        if score >= 0.05 * min(len(text), 65536) and not _too_many_controls(text):
            return text, encoding
    raise BookFormatError(
        f"{name}: looks like a binary file, not text (it contains NUL bytes); "
        "give booksum an .epub, .txt, .html or .md book"
    )


def _too_many_controls(text: str) -> bool:
    sample = text[:65536]
    return len(_CONTROL.findall(sample)) > max(8, len(sample) // 100)


def _check_not_binary(text: str, name: str) -> str:
    if _too_many_controls(text):
        raise BookFormatError(
            f"{name}: looks like a binary file, not text (many control characters); "
            "give booksum an .epub, .txt, .html or .md book"
        )
    return text


# ---- structure -------------------------------------------------------------


@dataclass
class _Section:
    title: str
    line: int
    kind: str  # "front", "heading", "boilerplate"
    paragraphs: list[str] = field(default_factory=list)
    toc: bool = False


def _is_zh_heading(line: str) -> bool:
    return bool(_ZH_HEADING.match(line)) and not _ZH_SENTENCE_MARKS.search(line)


def _is_heading(line: str, *, romans: bool) -> bool:
    if len(line) > 90:
        return False
    return bool(
        _EN_HEADING.match(line) or _is_zh_heading(line) or (romans and _ROMAN_LINE.match(line))
    )


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
                or _is_zh_heading(stripped)
                or (len(current) == 1 and _is_zh_heading(current[0]))
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
    body = lines[start:end]
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
    return sections


def _classify(section: _Section, *, has_headings: bool) -> str | None:
    if section.kind == "boilerplate":
        return "gutenberg boilerplate"
    if section.kind == "front":
        if not has_headings:
            return None
        return classify_leading(section.paragraphs, looks_like_toc=section.toc)
    return classify_title(section.title)


def read_book_bytes(path: Path) -> bytes:
    """The file's bytes, or a one-line BookFormatError saying why they cannot be read."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BookFormatError(f"{path.name}: cannot read the file ({exc.strerror})") from exc


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
    fields = _gutenberg_fields(sections) or _title_line(text)
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


# A Chinese title line at the top of a plain text: 《红楼梦》曹雪芹, 《水浒传》（施耐庵 著）
_ZH_TITLE_LINE = re.compile(
    r"^《([^》]{1,40})》\s*[（(]?\s*([\u3400-\u9fffA-Za-z·．.]{1,12}?)?\s*(?:著|撰|编著|原著)?\s*[）)]?$"
)


def _title_line(text: str) -> dict[str, str]:
    first = text.lstrip("\ufeff \t\r\n\u3000").split("\n", 1)[0].strip()
    m = _ZH_TITLE_LINE.match(first)
    if not m:
        return {}
    return {"Title": m.group(1).strip(), **({"Author": m.group(2).strip()} if m.group(2) else {})}


def _gutenberg_fields(sections: list[_Section]) -> dict[str, str]:
    found: dict[str, str] = {}
    if sections and sections[0].kind == "boilerplate":
        for line in sections[0].paragraphs:
            m = _GUTENBERG_FIELD.match(line)
            if m and m.group(1) not in found:
                found[m.group(1)] = m.group(2).strip()
    return found
