"""Markdown reader without a Markdown dependency: a line-based parse that is enough for books.

ATX (``#``, ``##``) and setext (``===``, ``---`` underlines) headings of level 1-2
open chapters; with exactly one level-1 heading and some level-2 ones, the level-1
heading is the book title and chapters start at level 2 (as in HTML). Deeper
headings stay as paragraphs. A YAML front-matter block supplies ``title`` and
``author``. Inline markup is stripped reasonably: emphasis markers, links (text
kept), images (dropped), inline code, raw HTML tags (``<script>``, ``<style>`` and ``<template>`` bodies and
HTML comments are dropped whole, as the HTML reader does), footnote references and
definitions, blockquote and list markers; thematic breaks end a paragraph.
"""

from __future__ import annotations

import re
from pathlib import Path

from booksum_app.books.encoding import decode_text
from booksum_app.books.language import detect_language
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter
from booksum_app.books.text import join_lines, read_book_bytes

_ATX = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_RULE = re.compile(r"^(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_FENCE = re.compile(r"^(```|~~~)")
_LIST = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")
_FOOTDEF = re.compile(r"^\[\^[^\]]+\]:")
_LINKDEF = re.compile(r"^\[[^\]]+\]:\s+\S+")
_INLINE = (
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), ""),
    (re.compile(r"\[\^[^\]]+\]"), ""),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r"<(https?://[^>]+)>"), r"\1"),
    (re.compile(r"<[^>\n]+>"), ""),
    (re.compile(r"`([^`]+)`"), r"\1"),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])"), r"\1"),
    (re.compile(r"~~(.+?)~~"), r"\1"),
)
_ESCAPABLE = "\\`*_{}[]()#+-.!>~|"
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!>~|])")
_PROTECTED = re.compile("[\ue000-\ue0ff]")
_RAW_ELEMENT = re.compile(
    r"<(script|style|template)\b[^>]*>.*?(?:</\1\s*>|\Z)|<!--.*?(?:-->|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def strip_inline(text: str) -> str:
    """Remove inline Markdown markup, keeping the words."""
    text = _ESCAPE.sub(lambda m: chr(0xE000 + _ESCAPABLE.index(m.group(1))), text)
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return _PROTECTED.sub(lambda m: _ESCAPABLE[ord(m.group(0)) - 0xE000], text)


def drop_raw_html(lines: list[str]) -> list[str]:
    """Blank out raw ``<script>``/``<style>``/``<template>`` bodies and comments outside code fences.

    They are code, not story text (the HTML reader drops them too). Line numbers are kept:
    each removed span becomes as many empty lines as it covered.
    """
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            joined = _RAW_ELEMENT.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(pending))
            out.extend(joined.split("\n"))
            pending.clear()

    fence = False
    for line in lines:
        if _FENCE.match(line.strip()):
            if not fence:
                flush()
            fence = not fence
            out.append(line)
        elif fence:
            out.append(line)
        else:
            pending.append(line)
    flush()
    return out


def _front_matter(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    if not lines or lines[0].strip() != "---":
        return {}, lines
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            fields = {}
            for line in lines[1:i]:
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip().lower()] = value.strip().strip("\"'")
            return fields, lines[i + 1 :]
    return {}, lines


def _parse(lines: list[str]) -> list[tuple[int, str, list[str], int]]:
    """Items (level or 0, heading text, paragraph lines, line number)."""
    items: list[tuple[int, str, list[str], int]] = []
    block: list[str] = []
    start = 0
    fence = False

    def flush() -> None:
        if block:
            items.append((0, "", list(block), start))
            block.clear()

    for i, raw in enumerate(lines):
        line = raw.rstrip()
        if _FENCE.match(line.strip()):
            fence = not fence
            flush()
            continue
        if fence:
            if not block:
                start = i + 1
            block.append(line)
            continue
        stripped = line.strip()
        atx = _ATX.match(stripped)
        if atx:
            flush()
            items.append((len(atx.group(1)), strip_inline(atx.group(2)), [], i + 1))
            continue
        if (
            _SETEXT.match(stripped)
            and len(block) == 1
            and not _LIST.match(block[0])
            and (stripped[0] == "=" or len(stripped) >= 2)
        ):
            level = 1 if stripped[0] == "=" else 2
            items.append((level, strip_inline(block[0]), [], start))
            block.clear()
            continue
        if (
            not stripped
            or _RULE.match(stripped)
            or _FOOTDEF.match(stripped)
            or _LINKDEF.match(stripped)
        ):
            flush()
            continue
        stripped = re.sub(r"^(?:>\s?)+", "", stripped)
        if _LIST.match(stripped):
            flush()
            stripped = _LIST.sub("", stripped)
        if not block:
            start = i + 1
        block.append(stripped)
    flush()
    return items


def read_markdown(
    path: Path, *, lang: str | None = None, include_front_matter: bool = False
) -> Book:
    """Read a Markdown book.

    Raises:
        BookFormatError: binary, undecodable or empty file.
    """
    data = read_book_bytes(path)
    text, encoding = decode_text(data, name=path.name, lang=lang)
    fields, lines = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    items = _parse(drop_raw_html(lines))
    levels = [lvl for lvl, *_ in items if lvl]
    h1, h2 = levels.count(1), levels.count(2)
    book_title = fields.get("title", "")
    split_levels = {1, 2}
    if h1 == 1 and h2 >= 1:
        split_levels = {2}
        book_title = book_title or next(t for lvl, t, _, _ in items if lvl == 1)
    chapters_raw: list[tuple[str, list[str], int, bool]] = [("", [], 1, True)]
    for level, heading, block, line in items:
        if level in split_levels:
            chapters_raw.append((heading, [], line, False))
        elif level == 1 and split_levels == {2}:
            continue  # the book title
        elif level:
            chapters_raw[-1][1].append(heading)
        elif block:
            joined = "\n".join(block) if block[0].startswith(" ") else join_lines(block)
            chapters_raw[-1][1].append(strip_inline(joined).strip())
    has_headings = len(chapters_raw) > 1
    chapters = []
    for title, paragraphs, line, leading in chapters_raw:
        paragraphs = [p for p in paragraphs if p]
        if leading and not paragraphs:
            continue
        if leading and has_headings:
            title, reason = "Opening", classify_leading(paragraphs)
        else:
            title = title or book_title or path.stem
            reason = classify_title(title) if has_headings else None
            if reason is None and not paragraphs:
                reason = "no text"
        chapters.append(
            Chapter(
                title=title,
                paragraphs=tuple(paragraphs),
                narrative=reason is None,
                excluded_reason=reason,
                source=f"line {line}",
            )
        )
    check_has_text(chapters, name=path.name, include_front_matter=include_front_matter)
    author = fields.get("author", "")
    metadata = {"encoding": encoding}
    return Book(
        title=book_title or path.stem,
        authors=(author,) if author else (),
        language=lang
        or fields.get("lang", fields.get("language", "")).split("-")[0].lower()
        or detect_language(" ".join(c.text for c in chapters)[:50000]),
        chapters=tuple(chapters),
        source_path=str(path),
        format="md",
        metadata=metadata,
    )
