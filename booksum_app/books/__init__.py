"""Books: read .epub, .pdf, .txt, .html and .md files into ``Book`` values.

``open_book(path)`` detects the format; each reader flags front/back matter as
non-narrative (see ``matter.py``) and refuses malformed, hostile, DRM-protected or
empty files with a one-line ``BookFormatError``.
"""

from booksum_app.books.detect import open_book
from booksum_app.books.model import Book, Chapter

__all__ = ["Book", "Chapter", "open_book"]
