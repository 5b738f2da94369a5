"""open_book: pick a reader from the file's content and extension."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from booksum_app.books.epub import read_epub
from booksum_app.books.html import read_html
from booksum_app.books.markdown import read_markdown
from booksum_app.books.model import Book
from booksum_app.books.text import read_text
from booksum_app.errors import BookFormatError

_EXTENSIONS = {
    ".epub": "epub",
    ".txt": "txt",
    ".text": "txt",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".pdf": "pdf",
}
_UNSUPPORTED = {
    ".mobi": "Kindle MOBI",
    ".azw": "Kindle AZW",
    ".azw3": "Kindle AZW3",
    ".kfx": "Kindle KFX",
    ".docx": "Word",
    ".doc": "Word",
    ".odt": "OpenDocument",
    ".rtf": "RTF",
    ".fb2": "FictionBook",
    ".djvu": "DjVu",
    ".cbz": "comic book archive",
}
BOOK_SUFFIXES = tuple(_EXTENSIONS)  # what a folder of books is read for (compare, score --source)
_SUPPORTED = "supported formats: .epub, .pdf, .txt, .html, .md"


def sniff_format(path: Path, head: bytes) -> str:
    """The reader to use ("epub", "pdf", "txt", "html", "md") from leading bytes and extension.

    Raises:
        BookFormatError: the format is not supported.
    """
    ext = path.suffix.lower()
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")) and ext not in (".docx", ".odt", ".cbz"):
        return "epub"  # any zip we are asked to read must be an EPUB; read_epub says if not
    if head.startswith(b"%PDF") or (b"%PDF-" in head[:1024] and ext == ".pdf"):
        return "pdf"  # the header may follow up to 1 KiB of junk (ISO 32000-1, 7.5.2 note)
    if head[60:68] in (b"BOOKMOBI", b"TEXtREAd"):
        raise BookFormatError(
            f"{path.name}: Kindle/MOBI is not supported; convert it to EPUB, e.g. with Calibre"
        )
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if ext in _UNSUPPORTED:
        raise BookFormatError(
            f"{path.name}: {_UNSUPPORTED[ext]} files are not supported; convert it ({_SUPPORTED})"
        )
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in head.lower():
        return "html"
    raise BookFormatError(
        f"{path.name}: unknown book format '{ext or 'no extension'}'; {_SUPPORTED} "
        "(rename a plain-text book to .txt)"
    )


_MD_HEADING = re.compile(rb"(?m)^#{1,6}[ \t]+\S")
_MD_FRONT_MATTER = re.compile(
    rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?\n(?:.*\r?\n){0,40}?(?:title|author)[ \t]*:", re.IGNORECASE
)


def sniff_suffix(head: bytes) -> str:
    """The file suffix a book of unknown name should get from its leading bytes (a book on stdin).

    A zip is an EPUB, a document opening with ``<html``/``<!doctype html`` is HTML, text with
    an ATX heading line (``# Title``) or YAML front matter naming a title or author is
    Markdown, anything else plain text (whose own readers refuse binary data). A PDF is a PDF;
    MOBI keeps its signature so :func:`sniff_format` refuses it by name.
    """
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return ".epub"
    if head.startswith(b"%PDF"):
        return ".pdf"
    if head[60:68] in (b"BOOKMOBI", b"TEXtREAd"):
        return ".mobi"
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in head.lower():
        return ".html"
    if _MD_HEADING.search(head) or _MD_FRONT_MATTER.match(head):
        return ".md"
    return ".txt"


def _read_pdf(path: Path, *, lang: str | None = None, include_front_matter: bool = False) -> Book:
    """:func:`~booksum_app.books.pdf.read_pdf`, imported when a PDF comes: pypdf (with fontTools
    and Pillow) is a tenth of a second that no other format's run should pay before its first call."""
    from booksum_app.books.pdf import read_pdf

    return read_pdf(path, lang=lang, include_front_matter=include_front_matter)


def open_book(
    path: str | os.PathLike[str], *, lang: str | None = None, include_front_matter: bool = False
) -> Book:
    """Read a book file (.epub, .pdf, .txt, .html, .md) into a Book.

    Args:
        path: the book file; its format is detected from content, then extension.
        lang: language override ("en", "zh"); by default from metadata or detected.
        include_front_matter: accept a book whose sections are all front/back matter
            (they stay flagged non-narrative; ``Book.selected_chapters`` decides).

    Raises:
        BookFormatError: unreadable, unsupported, malformed, hostile or empty file.
        DRMProtectedError: an encrypted (DRM) epub or an encrypted PDF.
    """
    p = Path(path)
    if not p.exists():
        raise BookFormatError(f"{p}: no such file; check the path")
    if not p.is_file():
        raise BookFormatError(f"{p}: not a file; give the path of one book file")
    try:
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise BookFormatError(f"{p.name}: cannot read the file ({exc.strerror})") from exc
    if not head:
        raise BookFormatError(f"{p.name}: the file is empty; nothing to summarize")
    readers: dict[str, Callable[..., Book]] = {
        "epub": read_epub,
        "txt": read_text,
        "html": read_html,
        "md": read_markdown,
        "pdf": _read_pdf,
    }
    reader = readers[sniff_format(p, head)]
    return reader(p, lang=lang, include_front_matter=include_front_matter)
