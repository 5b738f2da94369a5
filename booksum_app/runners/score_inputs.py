"""What ``booksum score`` reads: summary sets (release JSON, records, directories, text files),
their source books and reference summaries, each refused in one line when it does not fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from booksum_app.books.folder import BOOK_SUFFIXES, books_in
from booksum_app.errors import InputError
from booksum_app.files import files_in
from booksum_app.runners.chapter_markdown import split_chapters_markdown
from booksum_app.scoring.release import load_json, parse_summaries, summaries_in
from booksum_app.strategies.record import RECORD_KIND

TEXT_SUFFIXES = (".txt", ".md")


Chapters = tuple[tuple[str, str], ...]  # (title, summary) per chapter of a ``summarize --chapters`` run
CHAPTER_KEY = " § "  # a chapter row's key: "<book key> § <chapter title>"


def _record_chapters(data: dict[str, Any]) -> Chapters:
    """``(title, summary)`` per chapter of a record written by ``summarize --chapters`` (none else)."""
    extra = data.get("extra")
    chapters = extra.get("chapters") if isinstance(extra, dict) else None
    if not isinstance(chapters, list):
        return ()
    return tuple((str(c["title"]), str(c["text"])) for c in chapters
                 if isinstance(c, dict) and isinstance(c.get("title"), str) and isinstance(c.get("text"), str))


def _record_summary(data: Any, *, where: str) -> tuple[str | None, str] | None:
    """``(book key, text)`` of a booksum summary record, or None if ``data`` is not one."""
    if not isinstance(data, dict):
        return None
    text = data.get("final_summary", data.get("summary"))
    if not isinstance(text, str):
        return None
    book = data.get("book")
    key = None
    if isinstance(book, dict):
        source = book.get("source_path")
        title = book.get("title")
        if isinstance(source, str) and source:
            key = Path(source).name
        elif isinstance(title, str) and title:
            key = title
    return key, text


def _add(out: dict[str, str], key: str, text: str, *, where: str) -> None:
    if key in out:
        raise InputError(f"two summaries of {key!r} in {where}; keep one summary per book")
    out[key] = text


def _add_chapters(out: dict[str, str], key: str, chapters: Chapters) -> None:
    """One row per chapter summary, keyed ``<book> § <title>`` (a repeated title gets its number)."""
    for n, (title, text) in enumerate(chapters, start=1):
        name = f"{key}{CHAPTER_KEY}{title}"
        out[name if name not in out else f"{name} ({n})"] = text


def chapter_book(key: str) -> str | None:
    """The book key of a chapter row's key, None for a book's own row."""
    return key.split(CHAPTER_KEY, 1)[0] if CHAPTER_KEY in key else None


def _text_summary(text: str) -> tuple[str, Chapters | None]:
    """A text file's summary, and its chapters when it is ``summarize --chapters``' Markdown."""
    split = split_chapters_markdown(text)
    return (text, None) if split is None else split


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text; convert it or pass a JSON file") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _files_in(directory: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The files of ``directory`` with these suffixes, sorted; a link out of it is an InputError:
    its files go into judge prompts, and ``passwd.txt -> /etc/passwd`` must not."""
    return files_in(directory, suffixes=suffixes, what="scored directory")


# files a folder of summaries often holds beside them, by stem: never a summary of a book
NOT_SUMMARIES = frozenset({"readme", "notes", "license", "licence", "changelog", "copying", "authors", "todo"})


def _json_summary(file: Path, notes: list[str]) -> tuple[str, str, Chapters] | None:
    """``(book key, text)`` of a JSON file of a scored directory, or None (with a note) when it
    is no summary: booksum's own records are read by their kind, its other files skipped."""
    data = load_json(file, what="summary record")
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.startswith("booksum.") and kind != RECORD_KIND:
        notes.append(f"skipped {file.name}: a booksum {kind.removeprefix('booksum.')} file, not a summary")
        return None
    if isinstance(data, dict) and data.get("status") == "failed":
        notes.append(f"skipped {file.name}: the record of a failed run, which holds no summary")
        return None
    record = _record_summary(data, where=str(file))
    if record is None:
        notes.append(f"skipped {file.name}: not a summary record (a JSON object with a 'summary' string)")
        return None
    return record[0] or file.stem, record[1], _record_chapters(data)


def _load_directory(path: Path, notes: list[str], *, chapters: bool = False) -> dict[str, str]:
    """One summary per file stem: ``book.json`` + ``book.md`` written by one run are one summary.

    ``summarize -o out/book`` writes both files; counting them twice would double n and the
    judge's bill, so files sharing a stem must hold the same text (else it is an input error).
    What is no summary is skipped with a note in ``notes``: booksum files of other kinds (a
    failed run's record, score or compare results, a shard manifest), JSON without a summary,
    and text files named README, NOTES, LICENSE, ... (any other text file is a summary: a
    folder may mix records and text summaries).

    ``summarize --chapters`` writes the book's summary then one per chapter into the ``.md``:
    such a file (``## The book`` ... ``## Chapter by chapter``) is read as its book summary, so
    it is the same summary as its record; with ``chapters`` each chapter summary is a row too.
    """
    out: dict[str, str] = {}
    by_stem: dict[str, list[Path]] = {}
    for file in _files_in(path, (".json", *TEXT_SUFFIXES)):
        by_stem.setdefault(file.stem, []).append(file)
    records: dict[str, tuple[str, str, Chapters]] = {}
    for stem_name, files in by_stem.items():
        for file in files:
            if file.suffix.lower() == ".json" and (record := _json_summary(file, notes)) is not None:
                records[stem_name] = record
    chaptered = 0
    for stem_name, files in by_stem.items():
        found: list[tuple[Path, str, str, Chapters | None]] = []  # (file, book key, text, chapters)
        for file in files:
            if file.suffix.lower() == ".json":
                if stem_name in records:
                    key, text, record_parts = records[stem_name]
                    found.append((file, key, text, record_parts or None))
            elif stem_name.lower() in NOT_SUMMARIES:
                notes.append(f"skipped {file.name}: a {stem_name.lower()} file, not a summary")
            else:
                found.append((file, file.name, *_text_summary(_read_text(file))))
        if not found:
            continue
        found.sort(key=lambda f: f[0].suffix.lower() != ".json")  # the record names the book best
        first_file, key, text, _ = found[0]
        for other, _, other_text, _ in found[1:]:
            if other_text.strip() != text.strip():
                raise InputError(
                    f"{first_file.name} and {other.name} in {path} are two different summaries of one book; "
                    "keep one of them"
                )
        _add(out, key, text, where=str(path))
        split = next((p for _, _, _, p in found if p), None)
        if split:
            chaptered += 1
            if chapters:
                _add_chapters(out, key, split)
    if chaptered and not chapters:
        notes.append(f"{chaptered} summar{'y' if chaptered == 1 else 'ies'} in {path} also hold one summary per "
                     "chapter (summarize --chapters): scored the book's; add --chapters to score each chapter too")
    if not out:
        raise InputError(f"{path} holds no summaries (*.json records, *.txt or *.md files)")
    return out


def load_summaries(path: Path, notes: list[str] | None = None, *, chapters: bool = False) -> dict[str, str]:
    """Read SUMMARIES: a release JSON, a summary record, a directory, or a text file.

    ``notes`` gets one line per file of a directory that was skipped as no summary.
    ``chapters``: a ``summarize --chapters`` output also gives one row per chapter summary,
    keyed ``<book> § <chapter title>`` (else only its book summary is read).

    Raises:
        InputError: nothing readable as summaries at ``path``.
    """
    path = Path(path)
    if path.is_dir():
        return _load_directory(path, [] if notes is None else notes, chapters=chapters)
    if not path.exists():
        raise InputError(f"summaries file {path} does not exist; check the path")
    out: dict[str, str] = {}
    if path.suffix.lower() in TEXT_SUFFIXES:
        text, parts = _text_summary(_read_text(path))
        out[path.name] = text
        if chapters and parts:
            _add_chapters(out, path.name, parts)
        return out
    data = load_json(path, what="summaries")
    record = _record_summary(data, where=str(path))
    if record is not None:
        out[record[0] or path.stem] = record[1]
        if chapters:
            _add_chapters(out, record[0] or path.stem, _record_chapters(data))
        return out
    carried = summaries_in(data)  # an annotations file that carries its summaries (human format)
    return carried if carried is not None else parse_summaries(data, source=str(path))


def stem(name: str) -> str:
    p = Path(chapter_book(name) or name)  # a chapter row: its book's source
    return (p.stem if p.suffix.lower() in BOOK_SUFFIXES else p.name).lower()


def source_index(source: Path) -> dict[str, Path]:
    if source.is_file():
        return {stem(source.name): source}
    if not source.is_dir():
        raise InputError(f"--source {source} does not exist; give a directory of books or one book file")
    return {stem(p.name): p for p in books_in(source).books}  # the one rule of a books folder


def source_text(path: Path) -> str:
    from booksum_app.books import open_book

    return open_book(path).text()


def references(path: Path) -> dict[str, str]:
    data = load_json(path, what="references")
    return parse_summaries(data, source=f"references {path}")


# ---- running -----------------------------------------------------------------------------


def system_name(path: Path) -> str:
    name = path.stem if path.is_file() else path.name
    return name.removesuffix("-cleaned") if name.endswith("-cleaned") else name


__all__ = ["BOOK_SUFFIXES", "CHAPTER_KEY", "TEXT_SUFFIXES", "chapter_book", "load_summaries", "references",
           "source_index", "source_text", "stem", "system_name"]
