"""A folder of books: the one rule for which files in a directory are books.

A folder a user hands over as "the books" often holds more than books: a data folder keeps a
README.md beside its EPUBs, a downloaded corpus carries its LICENSE and
a ``records.json``, an editor leaves ``.notes.md.swp``. Summarizing those would plan and pay
for calls on a file nobody meant as a book, then fail on it. So a file is a book when

- its format is one booksum reads (by suffix: ``BOOK_SUFFIXES``), and
- its name is not hidden (``.name``) and not one of the notes every project carries
  (README, LICENSE, CHANGELOG, NOTES, ... in any case, with any suffix).

Everything else is skipped, and the caller says so in one line (:func:`skipped_note`). A link
that leads out of the folder is refused: its target would be sent to a model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from booksum_app.books.detect import BOOK_SUFFIXES
from booksum_app.errors import ConfigError
from booksum_app.files import files_in

# the notes a folder carries beside its contents (GitHub's and Debian's usual names, any case),
# with or without a suffix: README, README.md, LICENSE.txt, CHANGELOG.markdown, NOTES.txt ...
NOT_BOOK_NAMES = frozenset({
    "readme", "license", "licence", "copying", "copyright", "changelog", "notes", "authors", "contributors",
    "contributing", "code_of_conduct", "notice", "todo", "citation",
})


def is_note_name(name: str) -> bool:
    """Whether a file name is a folder's own note (README.md, LICENSE, NOTES.txt), not a book.

    The whole stem must be the note's name: "Notes from Underground.epub" is a book.
    """
    return name.lower().split(".", 1)[0].strip() in NOT_BOOK_NAMES


def book_kind(path: Path) -> str | None:
    """Why ``path`` (a file in a folder of books) is not a book, or None when it is one."""
    name = path.name
    if name.startswith("."):
        return "hidden"
    if path.suffix.lower() not in BOOK_SUFFIXES:
        return "not a book format"
    if is_note_name(name):
        return "the folder's notes"
    return None


@dataclass(frozen=True)
class BookFolder:
    """The books of one folder, sorted by name, and the files that were not taken as books."""

    directory: Path
    books: tuple[Path, ...]
    skipped: tuple[Path, ...]


def books_in(directory: str | os.PathLike[str]) -> BookFolder:
    """The book files of ``directory`` (not its subfolders) under the rule of this module.

    Raises:
        InputError: a link in it leads out of it, or it cannot be read.
    """
    folder = Path(directory)
    books: list[Path] = []
    skipped: list[Path] = []
    for entry in files_in(folder, what="books folder"):  # the one listing rule: no link out of the folder
        (skipped if book_kind(entry) is not None else books).append(entry)
    return BookFolder(folder, tuple(books), tuple(skipped))


def skipped_note(folder: BookFolder, *, limit: int = 5) -> str | None:
    """One line naming the files of ``folder`` that were not taken as books, None when there are none."""
    if not folder.skipped:
        return None
    names = [p.name for p in folder.skipped]
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return f"{folder.directory}: skipped {len(names)} file(s) that are not books: {shown}"


def book_files(paths: Sequence[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """Expand BOOKS (files and directories of books) into book files, in a stable order."""
    return book_sources(paths)[0]


def book_sources(paths: Sequence[str | os.PathLike[str]]) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """BOOKS (files and directories of books) as book files in a stable order, and one note per
    directory naming the files that are not books (README.md, LICENSE, records, hidden files:
    :mod:`booksum_app.books.folder`'s rule). A file named on its own is always taken.

    Raises:
        ConfigError: a path does not exist, a directory holds no book, a link leads out of its
            directory, or two books share a stem.
    """
    files: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            folder = books_in(path)
            if not folder.books:
                raise ConfigError(f"{path} holds no books ({', '.join(BOOK_SUFFIXES)})")
            files.extend(folder.books)
            note = skipped_note(folder)
            if note is not None:
                notes.append(note)
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError(f"book {path} does not exist; check the path")
    stems: dict[str, Path] = {}
    for file in files:
        other = stems.setdefault(file.stem.lower(), file)
        if other != file:
            raise ConfigError(
                f"two books named {file.stem!r} ({other} and {file}); records are kept per file "
                "name, so rename one"
            )
    return tuple(dict.fromkeys(files)), tuple(notes)


__all__ = ["BOOK_SUFFIXES", "NOT_BOOK_NAMES", "BookFolder", "book_files", "book_kind", "book_sources", "books_in",
           "is_note_name", "skipped_note"]
