"""HTML reader: one chapter per h1/h2 heading, paragraphs from block elements.

Parsing goes through ``markup.parse_html`` (lxml.html, no network, no DTD, entity
declarations refused). A page with exactly one ``<h1>`` and some ``<h2>`` is read as
a book titled by the h1 with chapters at the h2s (the Project Gutenberg HTML
layout); otherwise every h1 and h2 opens a chapter. Text before the first chapter
heading is classified like that of a plain-text book (``matter.classify_leading``);
chapters titled Contents, Preface, Notes, ... are excluded (``matter.classify_title``).
Project Gutenberg's header and license (``#pg-header``, ``#pg-footer``,
``.pg-boilerplate``) are removed before extraction.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from lxml import etree

from booksum_app.books.encoding import decode_text
from booksum_app.books.language import detect_language
from booksum_app.books.markup import (
    clean_text,
    element_chars,
    extract_segments,
    localname,
    parse_html,
    split_title,
)
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter, Dropped, counted_chars
from booksum_app.books.plausibility import keep_overruled
from booksum_app.books.text import read_book_bytes

_DECLARED_CHARSET = re.compile(rb"<meta[^>]+charset|<\?xml[^>]+encoding", re.IGNORECASE)
_BOILERPLATE_IDS = ("pg-header", "pg-footer")


def read_html(path: Path, *, lang: str | None = None, include_front_matter: bool = False) -> Book:
    """Read an HTML book.

    Raises:
        BookFormatError: unreadable, hostile or empty HTML.
    """
    data = read_book_bytes(path)
    if _DECLARED_CHARSET.search(data[:4096]):
        root = parse_html(data, name=path.name)
    else:
        text, _ = decode_text(data, name=path.name, lang=lang)
        root = parse_html(text, name=path.name)
    return book_from_html_tree(
        root, path=path, lang=lang, include_front_matter=include_front_matter
    )


def _drop_boilerplate(root: etree._Element) -> int:
    """Remove Project Gutenberg's header and license; their counted characters."""
    doomed = [
        el
        for el in root.iter()
        if isinstance(el.tag, str)
        and (
            el.get("id") in _BOILERPLATE_IDS or "pg-boilerplate" in (el.get("class") or "").split()
        )
    ]
    chars = 0
    for el in doomed:
        parent = el.getparent()
        if parent is not None:
            if not any(a in doomed for a in el.iterancestors()):  # its tail goes with it
                chars += element_chars(el) + counted_chars(el.tail or "")
            parent.remove(el)
    return chars


def book_from_html_tree(
    root: etree._Element, *, path: Path, lang: str | None = None, include_front_matter: bool = False
) -> Book:
    """Build a Book from a parsed HTML tree."""
    dropped: Counter[str] = Counter()
    dropped["gutenberg boilerplate"] = _drop_boilerplate(root)
    counts = {"h1": 0, "h2": 0}
    head_title, authors, html_lang = "", [], root.get("lang") or ""
    h1_text = ""
    for el in root.iter():
        name = localname(el)
        if name in counts:
            counts[name] += 1
            if name == "h1" and not h1_text:
                h1_text = clean_text("".join(el.itertext()))
        elif name == "title" and not head_title:
            head_title = clean_text("".join(el.itertext()))
        elif name == "meta" and (el.get("name") or "").lower() in ("author", "dc.creator"):
            authors.append(clean_text(el.get("content") or ""))
    if counts["h1"] == 1 and counts["h2"] >= 1:
        split_tags = frozenset({"h2"})
    else:
        split_tags = frozenset({"h1", "h2"})
    segments = extract_segments(root, split_tags=split_tags, dropped=dropped)
    has_headings = len(segments) > 1
    chapters = []
    for n, seg in enumerate(segments):
        if n == 0 and has_headings:
            paragraphs = tuple(b.text for b in seg.blocks)
            if not paragraphs:
                continue
            title, reason, in_text = "Opening", classify_leading(paragraphs), False
        else:
            title, blocks = split_title(seg.blocks)
            paragraphs = tuple(b.text for b in blocks)
            in_text = bool(title)
            title = title or (head_title or path.stem if n == 0 else f"Section {n}")
            reason = classify_title(title) if has_headings else None
            if reason is None and not paragraphs:
                reason = "no text"
        chapters.append(
            Chapter(
                title=title,
                paragraphs=paragraphs,
                narrative=reason is None,
                excluded_reason=reason,
                source=f"section {n}",
                title_in_text=in_text,
            )
        )
    chapters, notes = keep_overruled(chapters)
    check_has_text(chapters, name=path.name, include_front_matter=include_front_matter)
    language = (
        lang
        or html_lang.split("-")[0].lower()
        or detect_language(" ".join(c.text for c in chapters)[:50000])
    )
    book_title = h1_text if split_tags == {"h2"} else (head_title or h1_text or path.stem)
    return Book(
        title=book_title or path.stem,
        authors=tuple(a for a in authors if a),
        language=language,
        chapters=tuple(chapters),
        source_path=str(path),
        format="html",
        metadata={"html_title": head_title} if head_title else {},
        dropped=tuple(Dropped(kind, chars, path.name) for kind, chars in sorted(dropped.items()) if chars),
        notes=tuple(notes),
    )
