"""What ``booksum score`` reads: summary sets (release JSON, records, directories, text files),
their source books and reference summaries, each refused in one line when it does not fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from booksum_app.books.detect import BOOK_SUFFIXES
from booksum_app.errors import InputError
from booksum_app.scoring.release import load_json, parse_summaries, summaries_in

TEXT_SUFFIXES = (".txt", ".md")


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


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text; convert it or pass a JSON file") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _files_in(directory: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The files of ``directory`` with these suffixes, sorted. A link out of it is an InputError:
    its files go into judge prompts, and ``passwd.txt -> /etc/passwd`` must not."""
    root = directory.resolve()
    files = []
    for entry in sorted(directory.iterdir()):
        if entry.suffix.lower() not in suffixes:
            continue
        if entry.is_symlink() and not entry.resolve().is_relative_to(root):
            raise InputError(
                f"{entry} is a link to a file outside {directory}; a scored directory's links are not "
                "followed out of it: copy the file in, or remove the link"
            )
        if entry.is_file():
            files.append(entry)
    return files


def _load_directory(path: Path) -> dict[str, str]:
    """One summary per file stem: ``book.json`` + ``book.md`` written by one run are one summary.

    ``summarize -o out/book`` writes both files; counting them twice would double n and the
    judge's bill, so files sharing a stem must hold the same text (else it is an input error).
    """
    out: dict[str, str] = {}
    by_stem: dict[str, list[Path]] = {}
    for file in _files_in(path, (".json", *TEXT_SUFFIXES)):
        by_stem.setdefault(file.stem, []).append(file)
    for files in by_stem.values():
        found: list[tuple[Path, str, str]] = []  # (file, book key, text)
        for file in files:
            if file.suffix.lower() == ".json":
                record = _record_summary(load_json(file, what="summary record"), where=str(file))
                if record is None:
                    raise InputError(
                        f"{file} is not a summary record (a JSON object with a 'summary' string); "
                        "move it out of the directory"
                    )
                found.append((file, record[0] or file.stem, record[1]))
            else:
                found.append((file, file.name, _read_text(file)))
        found.sort(key=lambda f: f[0].suffix.lower() != ".json")  # the record names the book best
        first_file, key, text = found[0]
        for other, _, other_text in found[1:]:
            if other_text.strip() != text.strip():
                raise InputError(
                    f"{first_file.name} and {other.name} in {path} are two different summaries of one book; "
                    "keep one of them"
                )
        _add(out, key, text, where=str(path))
    if not out:
        raise InputError(f"{path} holds no summaries (*.json records, *.txt or *.md files)")
    return out


def load_summaries(path: Path) -> dict[str, str]:
    """Read SUMMARIES: a release JSON, a summary record, a directory, or a text file.

    Raises:
        InputError: nothing readable as summaries at ``path``.
    """
    path = Path(path)
    if path.is_dir():
        return _load_directory(path)
    if not path.exists():
        raise InputError(f"summaries file {path} does not exist; check the path")
    if path.suffix.lower() in TEXT_SUFFIXES:
        return {path.name: _read_text(path)}
    data = load_json(path, what="summaries")
    record = _record_summary(data, where=str(path))
    if record is not None:
        return {record[0] or path.stem: record[1]}
    carried = summaries_in(data)  # an annotations file that carries its summaries (human format)
    return carried if carried is not None else parse_summaries(data, source=str(path))


def stem(name: str) -> str:
    p = Path(name)
    return (p.stem if p.suffix.lower() in BOOK_SUFFIXES else p.name).lower()


def source_index(source: Path) -> dict[str, Path]:
    if source.is_file():
        return {stem(source.name): source}
    if not source.is_dir():
        raise InputError(f"--source {source} does not exist; give a directory of books or one book file")
    return {stem(p.name): p for p in sorted(source.iterdir()) if p.is_file() and p.suffix.lower() in BOOK_SUFFIXES}


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


__all__ = ["BOOK_SUFFIXES", "TEXT_SUFFIXES", "load_summaries", "references", "source_index", "source_text",
           "stem", "system_name"]
