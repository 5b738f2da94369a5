"""PDF reader (pypdf): chapters from the outline, else from headings; page furniture dropped.

Text comes from pypdf's layout extraction, page by page, then ``pdf_text`` drops running
heads, footers and page numbers, joins words broken at a line end and finds paragraphs.

Chapters: a PDF with an outline (bookmarks) has one chapter per outline entry of its first
level with two or more entries (a lone top entry, the book's own title, is descended into);
a chapter starts on its entry's page, at the line that carries its title when the page (or
the next one: a destination at a page's foot) has one, else at the top of the page, and runs
to the next entry. Text before the first entry
is classified like a text book's opening (``matter.classify_leading``); entries titled
Contents, Preface, Index, ... are excluded (``matter.classify_title``). A PDF without an
outline is read as a plain-text book (``text.book_from_text``): chapter headings on a line
of their own ("Chapter 12", "CHAPTER XII", "第十二章", ...) open chapters.

Refused with one line: an encrypted PDF (``DRMProtectedError``, as an encrypted epub: a
password or the publisher's DRM, whatever the permissions say), a PDF pypdf cannot parse, and
a scanned PDF whose pages are images with no text layer (``BookFormatError``; OCR it first).
Title and author come from the document information (``/Title``, ``/Author``) when set.

Bounded like every other input (an epub's zip is, ``archive.py``): a small PDF whose pages all
draw one compressed content stream (or nest one form many times) expands a thousandfold, and
reading it would take an hour. Before any text is extracted, the pages' decoded content
streams, each counted once per page that draws it, must stay within
:data:`CONTENT_BYTES_PER_BYTE` times the file's size (and :data:`MAX_CONTENT_BYTES`); while
reading, a page may hold at most :data:`MAX_PAGE_CHARS` characters of text (whitespace not
counted) and the book :data:`TEXT_CHARS_PER_BYTE` times the file's size (at least
:data:`MIN_TEXT_CHARS`, at most :data:`MAX_TEXT_CHARS`). What passes a bound is refused with one
line naming it (``BookFormatError``). The bounds are far past any book: text compresses three
or four times in a PDF, and fonts and images only add bytes. Each page read is reported
(``on_page``, else :data:`booksum_app.progress_hooks.PAGES`), so the command line says how far a
long PDF is.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypdf.errors import PyPdfError

from booksum_app.books.language import detect_language
from booksum_app.books.matter import check_has_text, classify_leading, classify_title
from booksum_app.books.model import Book, Chapter, Dropped, counted_chars
from booksum_app.books.pdf_text import blocks_text, edge_lines, page_blocks, strip_page_furniture
from booksum_app.books.text import book_from_text, is_heading, join_lines, read_book_bytes
from booksum_app.errors import BookFormatError, DRMProtectedError
from booksum_app.progress_hooks import PAGES, Progress

# what pypdf raises on a damaged or hostile file (its own errors, and Python's from objects of
# the wrong type where it expected others; NotImplementedError for a filter name it does not
# know, e.g. a damaged "/ASCII85Decode"); each is turned into one line here
_DAMAGED = (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, LookupError,
            RecursionError, AssertionError, ZeroDivisionError, OverflowError, MemoryError, NotImplementedError)

MAX_PAGE_CHARS = 50_000  # of one page, whitespace not counted: ten times the densest printed page
TEXT_CHARS_PER_BYTE = 20  # of the book's text per byte of the file
MIN_TEXT_CHARS = 1_000_000  # a small file may still hold a short book's text
MAX_TEXT_CHARS = 64_000_000  # twenty times the longest novels
CONTENT_BYTES_PER_BYTE = 50  # pages' decoded content streams per byte of the file
MIN_CONTENT_BYTES = 64 << 20
MAX_CONTENT_BYTES = 2 << 30

_WORDS = re.compile(r"[^\W\d_]{2,}")
_MIN_TEXT_CHARS = 25  # letters a page needs to count as a page with text
SCANNED_SHARE = 0.5  # refused when at least this share of pages is images with no text


@dataclass(frozen=True)
class _Entry:
    title: str
    page: int


def _reader(data: bytes, name: str) -> Any:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on sloppy files are not ours to print
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        encrypted = reader.is_encrypted
    except _DAMAGED as exc:
        raise BookFormatError(f"{name}: not a readable PDF ({type(exc).__name__}); use an undamaged copy") from exc
    if encrypted:
        raise DRMProtectedError(
            f"{name}: the PDF is encrypted (a password or DRM); booksum cannot read encrypted books: "
            "use an unprotected copy of this book"
        )
    return reader


def _page_text(reader: Any, index: int, name: str) -> str:
    try:
        text = reader.pages[index].extract_text(extraction_mode="layout")
    except _DAMAGED as exc:  # pypdf raises many types on a damaged page
        raise BookFormatError(
            f"{name}: page {index + 1} cannot be read ({type(exc).__name__}); use an undamaged copy"
        ) from exc
    return str(text or "")


def _has_image(page: Any) -> bool:
    try:
        resources: Any = page.get("/Resources")
        xobjects: Any = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return False
        xobjects = xobjects.get_object()
        return any(xobjects[k].get_object().get("/Subtype") == "/Image" for k in xobjects)
    except _DAMAGED:  # a damaged resource dictionary is "no image seen"
        return False


def _check_not_scanned(reader: Any, texts: list[str], name: str) -> None:
    """Refuse a PDF whose pages are mostly images without text (a scan with no OCR layer)."""
    bare = [i for i, text in enumerate(texts) if sum(map(len, _WORDS.findall(text))) < _MIN_TEXT_CHARS]
    scanned = [i for i in bare if _has_image(reader.pages[i])]
    if texts and len(scanned) >= max(1, SCANNED_SHARE * len(texts)):
        raise BookFormatError(
            f"{name}: a scanned PDF ({len(scanned)} of {len(texts)} pages are images with no text layer); "
            "booksum reads text, not images: run OCR on it first (e.g. ocrmypdf) or use a text edition"
        )


def _outline(reader: Any) -> list[_Entry]:
    """The outline's entries at its first level with two or more entries, in page order."""
    try:
        level: list[Any] = list(reader.outline)
    except _DAMAGED:  # a broken outline is read as no outline: headings decide
        return []
    while True:
        items = [item for item in level if not isinstance(item, list)]
        nested = [item for item in level if isinstance(item, list)]
        if len(items) >= 2 or not nested:
            break
        level = nested[0]
    entries = []
    for item in items:
        page = _entry_page(reader, item)  # None: an entry pointing nowhere opens no chapter
        title = " ".join(str(getattr(item, "title", "") or "").split())
        if page is not None and page >= 0 and title:
            entries.append(_Entry(title, int(page)))
    entries.sort(key=lambda e: e.page)  # stable: entries on one page keep their order
    return entries if len(entries) >= 2 else []


def _entry_page(reader: Any, item: Any) -> int | None:
    try:
        page = reader.get_destination_page_number(item)
    except _DAMAGED:  # a destination pypdf cannot resolve
        return None
    return int(page) if isinstance(page, int) else None


def _title_line(lines: list[str], title: str) -> int | None:
    """Index of the line of ``lines`` that carries the outline title, if any (the last one: a
    running head naming the chapter stands above its title)."""
    want = " ".join(title.split()).lower()
    for i, line in reversed(list(enumerate(lines))):
        got = " ".join(line.split()).lower()
        if got and (got == want or (len(got) >= 4 and want.startswith(got)) or got.startswith(want)):
            return i
    return None


def _blanked(before: list[list[str]], after: list[list[str]]) -> int:
    """Counted characters of the lines blanked between two versions of the pages (furniture)."""
    return sum(counted_chars(a) for pa, pb in zip(before, after, strict=True)
               for a, b in zip(pa, pb, strict=True) if a.strip() and not b.strip())


def _outline_chapters(
    pages: list[list[str]], entries: list[_Entry], dropped: list[Dropped]
) -> list[Chapter]:
    # each chapter's pages, its first page cut at its title line (the lines above stay before it)
    cuts: list[tuple[int, int]] = []
    for entry in entries:
        page = min(entry.page, len(pages) - 1)
        cut = (page, 0)
        # a destination at the foot of a page may point above a title set on the next one
        for candidate in (page, page + 1)[: 2 if page + 1 < len(pages) else 1]:
            line = _title_line(pages[candidate], entry.title)
            if line is not None:
                cut = (candidate, line)
                break
        cuts.append(max(cut, cuts[-1]) if cuts else cut)  # chapters never run backwards
    # a chapter's title at a page's edge anywhere but where it opens is a running head
    titles = {" ".join(e.title.split()).lower() for e in entries}
    before = pages
    pages = [[("" if i in edges and (p, i) not in cuts and " ".join(line.split()).lower() in titles else line)
              for i, line in enumerate(lines)] for p, lines in enumerate(pages) for edges in [set(edge_lines(lines))]]
    dropped.append(Dropped("running head", _blanked(before, pages), "pages"))
    bounds = [(0, 0), *cuts, (len(pages), 0)]
    spans: list[list[list[str]]] = []
    for (p0, l0), (p1, l1) in itertools.pairwise(bounds):
        span: list[list[str]] = []
        for p in range(p0, min(p1, len(pages) - 1) + 1):
            lines = pages[p]
            start = l0 if p == p0 else 0
            stop = l1 if p == p1 else len(lines)
            if p < p1 or (p == p1 and stop > start):
                span.append(lines[start:stop])
        spans.append(span)
    chapters = []
    opening = [join_lines(b) for b in page_blocks(spans[0])]
    if opening:
        chapters.append(Chapter("Opening", tuple(opening), narrative=classify_leading(opening) is None,
                                excluded_reason=classify_leading(opening), source="page 1", title_in_text=False))
    for entry, span in zip(entries, spans[1:], strict=True):
        blocks = page_blocks(span)
        if blocks and " ".join(blocks[0]).lower().startswith(entry.title.lower()):
            first = " ".join(blocks[0])
            rest = first[len(entry.title):].strip()  # the title line itself: the outline names the chapter
            dropped.append(Dropped("heading (the outline names the section)", counted_chars(first[:len(entry.title)]),
                                   f"page {entry.page + 1}"))
            blocks = [[rest], *blocks[1:]] if rest else blocks[1:]
        paragraphs = tuple(join_lines(b) for b in blocks)
        reason = classify_title(entry.title) or (None if paragraphs else "no text")
        chapters.append(Chapter(entry.title, paragraphs, narrative=reason is None, excluded_reason=reason,
                                source=f"page {entry.page + 1}", title_in_text=False))
    return chapters


def _info(reader: Any) -> tuple[str, tuple[str, ...]]:
    try:
        meta = reader.metadata or {}
        title = " ".join(str(meta.get("/Title") or "").split())
        author = " ".join(str(meta.get("/Author") or "").split())
    except _DAMAGED:  # damaged document information: the file name titles the book
        return "", ()
    authors = tuple(a.strip() for a in re.split(r"\s*(?:;|\band\b|&)\s*", author) if a.strip())
    return title, authors


def text_bound(file_bytes: int) -> int:
    """Characters of text (whitespace not counted) a PDF of ``file_bytes`` may hold."""
    return min(MAX_TEXT_CHARS, max(MIN_TEXT_CHARS, TEXT_CHARS_PER_BYTE * file_bytes))


def content_bound(file_bytes: int) -> int:
    """Bytes of decoded page content (per page that draws them) a PDF of ``file_bytes`` may hold."""
    return min(MAX_CONTENT_BYTES, max(MIN_CONTENT_BYTES, CONTENT_BYTES_PER_BYTE * file_bytes))


def _content_bytes(page: Any) -> int:
    contents: Any = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = [item.get_object() for item in contents] if isinstance(contents, list) else [contents]
    return sum(len(stream.get_data()) for stream in streams if hasattr(stream, "get_data"))


def _check_content(reader: Any, count: int, file_bytes: int, name: str) -> None:
    """Refuse pages whose content streams decode to more than :func:`content_bound`, before reading text."""
    limit, total = content_bound(file_bytes), 0
    for index in range(count):
        try:
            total += _content_bytes(reader.pages[index])
        except _DAMAGED:  # the page's own extraction says what is wrong with it
            continue
        if total > limit:
            raise BookFormatError(
                f"{name}: its pages' content decodes to over {limit >> 20:,} MiB by page {index + 1} of {count} "
                f"(the bound for a file of {_kib(file_bytes)}: {CONTENT_BYTES_PER_BYTE} times its size, at least "
                f"{MIN_CONTENT_BYTES >> 20} MiB): the pages repeat or amplify a compressed stream; refusing to read it"
            )


def _read_texts(reader: Any, count: int, file_bytes: int, name: str, on_page: Progress) -> list[str]:
    """Every page's text, each page and the whole within their bounds; progress after each page."""
    limit, total, texts = text_bound(file_bytes), 0, []
    for index in range(count):
        text = _page_text(reader, index, name)
        chars = len(text) - text.count(" ") - text.count("\n")
        if chars > MAX_PAGE_CHARS:
            raise BookFormatError(
                f"{name}: page {index + 1} holds {chars:,} characters of text, more than a page can "
                f"({MAX_PAGE_CHARS:,}): its content is repeated or amplified; refusing to read it"
            )
        total += chars
        if total > limit:
            raise BookFormatError(
                f"{name}: its text passes {limit:,} characters by page {index + 1} of {count} (the bound for a "
                f"file of {_kib(file_bytes)}: {TEXT_CHARS_PER_BYTE} a byte, at least {MIN_TEXT_CHARS:,}, at most "
                f"{MAX_TEXT_CHARS:,}): the pages repeat or amplify their content; refusing to read it"
            )
        texts.append(text)
        on_page(name, index + 1, count)
    return texts


def _kib(size: int) -> str:
    return f"{size / 1024:,.0f} KiB"


def read_pdf(path: Path, *, lang: str | None = None, include_front_matter: bool = False,
             on_page: Progress | None = None) -> Book:
    """Read a PDF book.

    Args:
        path: the PDF file.
        lang: language override; detected by default.
        include_front_matter: accept a book of front and back matter only.
        on_page: called with (file name, pages read, pages) after each page; by default
            :data:`booksum_app.progress_hooks.PAGES`.

    Raises:
        DRMProtectedError: an encrypted PDF.
        BookFormatError: unreadable, damaged, scanned (no text layer), empty, or amplified PDF
            (past a bound of the module doc).
    """
    data = read_book_bytes(path)
    reader = _reader(data, path.name)
    try:
        count = len(reader.pages)
    except _DAMAGED as exc:  # a page tree pypdf cannot walk
        raise BookFormatError(f"{path.name}: its page tree cannot be read; use an undamaged copy") from exc
    _check_content(reader, count, len(data), path.name)
    texts = _read_texts(reader, count, len(data), path.name, on_page or PAGES)
    _check_not_scanned(reader, texts, path.name)
    title, authors = _info(reader)
    entries = _outline(reader)
    # with an outline the titles come from it: every repeated edge line is furniture
    lines = [t.split("\n") for t in texts]
    titles = {" ".join(e.title.split()).lower() for e in entries}
    # with an outline its titles are the headings (a "Chapter 2" in the text may be a cross-reference)
    heading = (lambda line: " ".join(line.split()).lower() in titles) if entries else is_heading
    pages = strip_page_furniture(lines, is_heading=heading, title=title)
    dropped = [Dropped("page furniture", _blanked(lines, pages), "pages")]  # running heads, page numbers
    metadata = {"pages": str(count), "chapters_from": "outline" if entries else "headings"}
    if not entries:
        text = blocks_text(page_blocks(pages, is_heading=is_heading))
        language = lang or detect_language(text[:50000])
        book = book_from_text(text, path=path, language=language, include_front_matter=include_front_matter)
        return dataclasses.replace(book, title=title or book.title, authors=authors or book.authors,
                                   format="pdf", metadata=metadata,
                                   dropped=tuple(d for d in (*dropped, *book.dropped) if d.chars))
    chapters = _outline_chapters(pages, entries, dropped)
    check_has_text(chapters, name=path.name, include_front_matter=include_front_matter)
    language = lang or detect_language(" ".join(c.text for c in chapters)[:50000])
    return Book(title=title or path.stem, authors=authors, language=language, chapters=tuple(chapters),
                source_path=str(path), format="pdf", metadata=metadata,
                dropped=tuple(d for d in dropped if d.chars))


__all__ = ["read_pdf"]
