"""Book, Chapter: what a reader produces and what the chunker consumes.

Metadata shown to the user (a book's title, authors, language; a chapter's heading, why it was
excluded, where it came from) is made printable on the way in (:func:`printable`): an HTML
``<title>`` or a heading holding ``ESC [2J`` or an OSC 52 clipboard write must not reach the
terminal that ``inspect`` or ``summarize`` prints it on. The text itself is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from booksum_app.textsafe import printable


def _shown(value: object) -> object:
    return printable(value) if isinstance(value, str) else value


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

    def __post_init__(self) -> None:
        for name in ("title", "source", "excluded_reason"):
            object.__setattr__(self, name, _shown(getattr(self, name)))

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", _shown(self.title))
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
