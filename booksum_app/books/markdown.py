"""Markdown reader: markdown-it-py's CommonMark token stream (plus GFM tables and strikethrough).

ATX (``#``, ``##``) and setext (``===``, ``---`` underlines) headings of level 1-2
open chapters; with exactly one level-1 heading and some level-2 ones, the level-1
heading is the book title and chapters start at level 2 (as in HTML). Deeper
headings stay as paragraphs. A ``#`` inside a fenced or indented code block is code, not a
heading. A YAML front-matter block supplies ``title`` and ``author``. Inline markup is
dropped by the parser's own rules: emphasis, links (text kept, whatever the URL holds,
parentheses included), images (dropped), inline code (kept as text), raw HTML
(``<script>``, ``<style>`` and ``<template>`` bodies and HTML comments are dropped whole, as
the HTML reader does; other tags are stripped, their text kept), footnote references and
definitions; list items, blockquote paragraphs, table rows and code blocks are paragraphs.
Blockquotes and lists are read to any depth up to the parser's :data:`MAX_NESTING` levels
(197 nested blockquotes, 98 nested lists); a book nested deeper is refused with one line,
never read with its deepest text missing.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from lxml import etree
from lxml import html as lxml_html

from booksum_app.books.encoding import decode_text
from booksum_app.books.language import detect_language
from booksum_app.books.markup import extract_segments, is_hidden, parse_html
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter, Dropped, counted_chars
from booksum_app.books.plausibility import keep_overruled
from booksum_app.books.text import join_lines, read_book_bytes
from booksum_app.errors import BookFormatError

MAX_NESTING = 200  # markdown-it's block nesting levels (a list takes two: the list and its item)
_FENCE = re.compile(r"^(```|~~~)")
_FOOTDEF = re.compile(r"^\[\^[^\]]+\]:")
_FOOTREF = re.compile(r"\[\^[^\]\s]+\]")  # footnote references: not part of CommonMark, dropped
_TAG = re.compile(r"<[^>\n]+>")
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)\b")
_CLOSE_TAG = re.compile(r"</([A-Za-z][A-Za-z0-9-]*)\s*>")
_RAW_ELEMENT = re.compile(
    r"<(script|style|template|noscript)\b[^>]*>.*?(?:</\1\s*>|\Z)|<!--.*?(?:-->|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def strip_inline(text: str) -> str:
    """Remove inline Markdown markup, keeping the words (CommonMark's inline rules)."""
    return " ".join(_inline_text(token) for token in _parser().parseInline(text))


def drop_raw_html(lines: list[str], dropped: Counter[str] | None = None) -> list[str]:
    """Blank out raw ``<script>``/``<style>``/``<template>`` bodies and comments outside code fences.

    They are code, not story text (the HTML reader drops them too). Line numbers are kept:
    each removed span becomes as many empty lines as it covered. The counted characters of the
    text inside them (tags aside: what an HTML rendering shows) go into ``dropped``.
    """
    out: list[str] = []
    pending: list[str] = []

    def removed(m: re.Match[str]) -> str:
        if dropped is not None and m.group(1):  # a comment shows nothing
            dropped[f"<{m.group(1).lower()}>"] += counted_chars(_TAG.sub("", m.group(0)))
        return "\n" * m.group(0).count("\n")

    def flush() -> None:
        if pending:
            joined = _RAW_ELEMENT.sub(removed, "\n".join(pending))
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


def _parser() -> Any:
    from markdown_it import MarkdownIt

    # CommonMark, plus the GFM tables and strikethrough books written in Markdown use
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    # the preset's limit (20) drops a 20-deep blockquote's or a 10-deep list's text without a word
    md.options["maxNesting"] = MAX_NESTING
    return md


def _inline_text(token: Any, dropped: Counter[str] | None = None) -> str:
    """The words of an inline token: markup dropped, link text kept, images and raw HTML dropped,
    and the text inside inline HTML that hides it (``<span hidden>``, ``style="display:none"``).
    What is left out (hidden text, footnote markers) is counted into ``dropped``."""
    parts: list[str] = []
    hidden: list[str] = []  # the open hiding tags, innermost last
    for child in token.children or ():
        if child.type == "html_inline":
            _track_hiding(child.content, hidden)
        elif hidden:
            if dropped is not None and child.type in ("text", "code_inline"):
                dropped["hidden"] += counted_chars(child.content)
            continue
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
    text = join_lines([line.strip() for line in "".join(parts).split("\n")])
    if dropped is not None and "[^" in text:
        dropped["footnote"] += sum(counted_chars(m) for m in _FOOTREF.findall(text))
    return _FOOTREF.sub("", text)


def _track_hiding(tag: str, hidden: list[str]) -> None:
    """Update the open hiding tags with one inline HTML tag."""
    closing = _CLOSE_TAG.match(tag)
    if closing:
        if hidden and hidden[-1] == closing.group(1).lower():
            hidden.pop()
        return
    opening = _OPEN_TAG.match(tag)
    if opening is None or tag.rstrip().endswith("/>"):
        return
    name = opening.group(1).lower()
    if hidden and name == hidden[-1]:
        hidden.append(name)  # nested inside a hidden one of the same name: its close must match
    elif hidden or _hides(tag, name):
        hidden.append(name)


def _hides(tag: str, name: str) -> bool:
    try:
        return is_hidden(lxml_html.fragment_fromstring(tag + f"</{name}>"))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):  # not a tag lxml reads: hides nothing
        return False


def _html_block_text(content: str, dropped: Counter[str] | None = None) -> str:
    """The visible text of a raw HTML block, read by the HTML reader's rules (hidden parts dropped)."""
    try:
        root = parse_html(f"<html><body>{content}</body></html>", name="html block")
    except BookFormatError:
        return _TAG.sub("", content).strip()
    segments = extract_segments(root, dropped=dropped)
    return join_lines([b.text for seg in segments for b in seg.blocks] or [""])


def _too_deep(name: str) -> BookFormatError:
    return BookFormatError(
        f"{name}: blockquotes or lists nested past the Markdown parser's {MAX_NESTING} levels (about "
        f"{MAX_NESTING // 2} nested lists); the text past that depth could not be read, so the book is "
        "refused rather than cut short"
    )


def _parse(
    lines: list[str], *, name: str, dropped: Counter[str] | None = None
) -> list[tuple[int, str, list[str], int]]:
    """Items (heading level or 0, heading text, paragraph lines, line number), from markdown-it's tokens.

    Headings of any level come as items with their level; every paragraph, list item,
    blockquote paragraph, table row and code block is one paragraph item.

    Raises:
        BookFormatError: block nesting reached the parser's limit, past which it drops text.
    """
    items: list[tuple[int, str, list[str], int]] = []
    try:
        tokens = _parser().parse("\n".join(lines))
    except RecursionError:
        raise _too_deep(name) from None
    # markdown-it stops a block at MAX_NESTING and skips the rest of it: a token that near the
    # limit means text may be gone (a book nested that deep is refused, never cut)
    if any(token.level >= MAX_NESTING - 1 for token in tokens):
        raise _too_deep(name)
    heading_level = 0
    row: list[str] = []
    for i, token in enumerate(tokens):
        line = token.map[0] + 1 if token.map else (items[-1][3] if items else 1)
        if token.type == "heading_open":
            heading_level = int(token.tag[1])
        elif token.type == "inline" and heading_level:
            items.append((heading_level, _inline_text(token, dropped), [], line))
            heading_level = 0
        elif token.type == "inline" and tokens[i - 1].type in ("th_open", "td_open"):
            row.append(_inline_text(token, dropped))
        elif token.type == "tr_close":
            if any(row):
                items.append((0, "", [" | ".join(row)], line))
            row = []
        elif token.type == "inline" and _FOOTDEF.match(token.content.strip()):  # footnote bodies: dropped
            if dropped is not None:
                dropped["footnote"] += counted_chars(_inline_text(token)) + counted_chars(
                    "".join(_FOOTREF.findall(token.content)))
        elif token.type == "inline":
            text = _inline_text(token, dropped)
            if text:
                items.append((0, "", [text], line))
        elif token.type in ("fence", "code_block") and token.content.strip():
            items.append((0, "", [token.content.rstrip("\n")], line))
        elif token.type == "html_block":
            content = "\n".join(drop_raw_html(token.content.split("\n"), dropped))
            text = _html_block_text(content, dropped).strip()
            if text:
                items.append((0, "", [join_lines(text.split("\n"))], line))
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
    all_lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fields, lines = _front_matter(all_lines)
    dropped: Counter[str] = Counter()
    dropped["metadata (front matter)"] = counted_chars("\n".join(all_lines[: len(all_lines) - len(lines)]))
    items = _parse(drop_raw_html(lines, dropped), name=path.name, dropped=dropped)
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
            dropped["book title"] += counted_chars(heading)
            continue  # the book title
        elif level:
            chapters_raw[-1][1].append(heading)
        elif block:
            chapters_raw[-1][1].append(block[0].strip())
    has_headings = len(chapters_raw) > 1
    chapters = []
    for title, paragraphs, line, leading in chapters_raw:
        paragraphs = [p for p in paragraphs if p]
        if leading and not paragraphs:
            continue
        in_text = bool(title) and not leading
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
                title_in_text=in_text,
            )
        )
    chapters, notes = keep_overruled(chapters)
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
        dropped=tuple(Dropped(kind, chars, path.name) for kind, chars in sorted(dropped.items()) if chars),
        notes=tuple(notes),
    )
