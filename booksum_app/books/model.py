"""Book, Chapter: what a reader produces and what the chunker consumes.

Metadata shown to the user (a book's title, authors, language; a chapter's heading, why it was
excluded, where it came from) is made printable on the way in (:func:`printable`): an HTML
``<title>`` or a heading holding ``ESC [2J`` or an OSC 52 clipboard write must not reach the
terminal that ``inspect`` or ``summarize`` prints it on. The text itself is left as it is.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from booksum_app.textsafe import printable


def _shown(value: object) -> object:
    return printable(value) if isinstance(value, str) else value


def counted_chars(text: str) -> int:
    """The characters conservation counts: letters, marks and numbers (Unicode categories L, M, N).

    Whitespace, punctuation, symbols, control and format characters are not counted: readers
    rewrite them (wrapped lines joined, a heading and its subtitle joined with ": ", table cells
    with " | ", zero-width marks dropped), and markup is made of them (``#``, ``|``, ``=``, ``>``).
    """
    stripped = _uncounted_bmp().sub("", text)
    astral = _ASTRAL.findall(stripped)
    return len(stripped) - sum(1 for ch in astral if unicodedata.category(ch)[0] not in "LMN")


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@lru_cache(maxsize=1)
def _uncounted_bmp() -> re.Pattern[str]:
    """A class of the Basic Multilingual Plane's characters that :func:`counted_chars` does not count
    (a regex runs in C: a book's three million characters in a few hundredths of a second)."""
    ranges: list[str] = []
    start = None
    for cp in range(0x10001):
        out = cp < 0x10000 and unicodedata.category(chr(cp))[0] not in "LMN"
        if out and start is None:
            start = cp
        elif not out and start is not None:
            first, last = re.escape(chr(start)), re.escape(chr(cp - 1))
            ranges.append(f"{first}-{last}" if cp - 1 > start else first)
            start = None
    return re.compile(f"[{''.join(ranges)}]+")


@dataclass(frozen=True)
class Dropped:
    """Input text that is in no section, and why: a web page's advertising line, a heading
    repeated above its own copy, a page-split marker, a hidden element, ..."""

    kind: str  # "advertisement", "navigation", "page marker", "repeated heading", "hidden", ...
    chars: int  # counted characters (:func:`counted_chars`)
    source: str = ""  # where it was: "line 12", "chapter3.xhtml"

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _shown(self.kind))
        object.__setattr__(self, "source", _shown(self.source))


@dataclass(frozen=True)
class Chapter:
    """One section of a book in reading order.

    ``narrative`` is False for front/back matter (title page, imprint, colophon, ...);
    ``excluded_reason`` then says why, e.g. ``"epub:type=colophon"`` or ``"title: Contents"``.
    """

    title: str
    paragraphs: tuple[str, ...]
    narrative: bool = True
    excluded_reason: str | None = None
    source: str = ""  # where it came from: an href inside the epub, a line number in a text file
    title_in_text: bool = field(default=True, compare=False)  # False for a title the reader made up ("Opening")

    def __post_init__(self) -> None:
        for name in ("title", "source", "excluded_reason"):
            object.__setattr__(self, name, _shown(getattr(self, name)))

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)

    @cached_property
    def counted_chars(self) -> int:
        """Counted characters (:func:`counted_chars`) of its paragraphs and of a title that is the book's text."""
        title = counted_chars(self.title) if self.title_in_text else 0
        return title + sum(map(counted_chars, self.paragraphs))


@dataclass(frozen=True)
class Book:
    """A book as a sequence of chapters with its metadata."""

    title: str
    authors: tuple[str, ...]
    language: str  # BCP 47 primary tag as found or detected: "en", "zh", ...
    chapters: tuple[Chapter, ...]
    source_path: str = ""
    format: str = ""  # "epub", "txt", "html", "md"
    metadata: dict[str, str] = field(default_factory=dict, compare=False)
    dropped: tuple[Dropped, ...] = field(default=(), compare=False)  # input text in no chapter, with why
    notes: tuple[str, ...] = field(default=(), compare=False)  # what the reader kept against a rule, said aloud

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", _shown(self.title))
        object.__setattr__(self, "notes", tuple(_shown(n) for n in self.notes))
        object.__setattr__(self, "authors", tuple(_shown(a) for a in self.authors))
        object.__setattr__(self, "language", _shown(self.language))

    def selected_chapters(self, *, include_front_matter: bool = False) -> tuple[Chapter, ...]:
        """Chapters to summarize: narrative ones only unless front matter is included."""
        if include_front_matter:
            return self.chapters
        return tuple(c for c in self.chapters if c.narrative)

    @property
    def excluded_chapters(self) -> tuple[Chapter, ...]:
        return tuple(c for c in self.chapters if not c.narrative)

    def text(self, *, include_front_matter: bool = False) -> str:
        """The text to summarize, chapters separated by blank lines."""
        return "\n\n".join(
            c.text for c in self.selected_chapters(include_front_matter=include_front_matter)
        )
