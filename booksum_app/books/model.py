"""Book, Chapter: what a reader produces and what the chunker consumes."""

from __future__ import annotations

from dataclasses import dataclass, field


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
