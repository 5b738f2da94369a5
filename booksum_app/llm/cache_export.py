"""Answers moved between call caches: ``booksum cache --export FILE`` / ``--import FILE``.

The file is JSON lines, one stored answer a line, with every column of the cache's ``calls``
table (:data:`~booksum_app.llm.cache.EXPORT_COLUMNS`: the request key, the answer, its usage
and the logs' metadata; never a key or header). Shards that ran on several machines, each with
its own cache on a local disk, export theirs; the merging machine imports them all, so its
judge calls are answered from the cache. Exports are written atomically (a temporary file
renamed), so a killed export leaves no half file under the name; an import adds answers whose
keys the cache lacks, in one transaction, reading the file a line at a time: a line that is not
standard JSON, not an answer, or holds any field out of range (``cache_rows``) is one line
naming its number and the field, and nothing of the file is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from booksum_app.errors import InputError
from booksum_app.files import replacing
from booksum_app.jsonin import parse_json
from booksum_app.llm.cache import CallCache
from booksum_app.llm.cache_rows import COLUMNS, row_problem

EXPORT_KIND = "booksum.cache-answer"
CHECKED = COLUMNS  # every exported column (a test holds it to EXPORT_COLUMNS)
MAX_LINE_BYTES = 256 * 2**20  # an answer and its request at their caps, escaped, fit with room
_FIX = "give a file booksum cache --export wrote"


def export_answers(cache: CallCache, path: Path) -> int:
    """Write every answer of ``cache`` to ``path`` (JSON lines, atomic); returns how many."""
    n = 0
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        for row in cache.export_rows():
            out.write(json.dumps({"kind": EXPORT_KIND, **row}, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_answers(path: Path) -> Iterator[dict[str, Any]]:
    """The answers of an export file, one line at a time (the file is never held whole), each
    checked as it is read: JSON with no key twice (:func:`~booksum_app.jsonin.parse_json`),
    an exported answer, every field in range (:func:`~booksum_app.llm.cache_rows.row_problem`).

    Raises:
        InputError: the file is unreadable, or a line is not an exported answer (its number and
            the field said), raised when that line is reached.
    """
    try:
        with Path(path).open("rb") as handle:
            yield from _rows(handle, path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None


def _rows(handle: BinaryIO, path: Path) -> Iterator[dict[str, Any]]:
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        where = f"{path} line {number}"
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise InputError(f"{where}: longer than {MAX_LINE_BYTES // 2**20} MiB; {_FIX}")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: not UTF-8 text; {_FIX}") from None
        row = parse_json(text, where=where, unique_keys=True)  # NaN: left to the field's range check
        problem = _problem(row)
        if problem is not None:
            raise InputError(f"{where}: {problem}; {_FIX}")
        yield row


def _problem(row: Any) -> str | None:
    if not isinstance(row, dict) or row.get("kind") != EXPORT_KIND:
        return "not an exported answer"
    unknown = sorted(set(row) - {"kind", *CHECKED})
    if unknown:
        return f"{unknown[0][:80]!r}: not a field of an exported answer"
    return row_problem(row)


def import_answers(cache: CallCache, path: Path) -> tuple[int, int]:
    """Add the answers of ``path`` that ``cache`` lacks; returns (answers in the file, answers added).

    One pass, one transaction: the lines are checked as they are stored, and the first bad one
    rolls back every line before it, so a refused file stores nothing; memory stays flat
    whatever the file's size.

    Raises:
        InputError: a line is not an exported answer (nothing stored).
    """
    seen = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal seen
        for row in read_answers(path):
            seen += 1
            yield row

    added = cache.import_rows(counted())
    return seen, added


__all__ = ["CHECKED", "EXPORT_KIND", "MAX_LINE_BYTES", "export_answers", "import_answers", "read_answers"]
