"""Conservation: every character of a book's input kept in a section or excluded with a reason.

What is counted (:func:`~booksum_app.books.model.counted_chars`): letters, marks and numbers.
Whitespace, punctuation, symbols, control and format characters are not, since readers rewrite
them and markup is made of them. The input is the decoded text of a .txt or .md file, the text of an HTML file's
``<body>``, of every spine document's ``<body>`` in an epub, of every page of a PDF.

Kept: the selected sections' paragraphs and their titles where the title is text of the book.
Excluded: every other section (front/back matter, contents, empty), and every span the reader
dropped on the way (:class:`~booksum_app.books.model.Dropped`: web residue lines, repeated
headings, page markers, hidden elements, notes, scripts, boilerplate, ...). The invariant, tested
for every reader: kept + excluded = input.
"""

from __future__ import annotations

from dataclasses import dataclass

from booksum_app.books.model import Book
from booksum_app.books.plausibility import exclusion_kind


@dataclass(frozen=True)
class ExcludedSpan:
    """Text of the input that is not summarized: its kind, the reader's reason, where, its size."""

    kind: str  # "front matter", "back matter", "contents", "author's note", "advertisement", ...
    reason: str
    where: str
    title: str
    chars: int  # counted characters
    section: int | None = None  # the index in Book.chapters of an excluded section; None for a dropped span


@dataclass(frozen=True)
class Accounting:
    """Where a book's counted characters went."""

    kept_chars: int
    excluded: tuple[ExcludedSpan, ...]

    @property
    def excluded_chars(self) -> int:
        return sum(s.chars for s in self.excluded)

    @property
    def input_chars(self) -> int:
        return self.kept_chars + self.excluded_chars


def account(book: Book, *, include_front_matter: bool = False) -> Accounting:
    """The book's characters, kept and excluded (every excluded section and dropped span)."""
    selected = {id(c) for c in book.selected_chapters(include_front_matter=include_front_matter)}
    kept = 0
    excluded: list[ExcludedSpan] = []
    for index, chapter in enumerate(book.chapters):
        chars = chapter.counted_chars
        if id(chapter) in selected:
            kept += chars
            continue
        reason = chapter.excluded_reason or ""
        excluded.append(ExcludedSpan(exclusion_kind(reason), reason, chapter.source, chapter.title, chars, index))
    excluded += [ExcludedSpan(d.kind, d.kind, d.source, "", d.chars) for d in book.dropped]
    return Accounting(kept, tuple(excluded))


__all__ = ["Accounting", "ExcludedSpan", "account"]
