"""Answers moved between call caches: ``booksum cache --export FILE`` / ``--import FILE``.

The file is JSON lines, one stored answer a line, with every column of the cache's ``calls``
table (:data:`~booksum_app.llm.cache.EXPORT_COLUMNS`: the request key, the answer, its usage
and the logs' metadata; never a key or header). Shards that ran on several machines, each with
its own cache on a local disk, export theirs; the merging machine imports them all, so its
judge calls are answered from the cache. Exports are written atomically (a temporary file
renamed), so a killed export leaves no half file under the name; an import adds answers whose
keys the cache lacks, in one transaction, and checks every line before storing any.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from booksum_app.errors import InputError
from booksum_app.files import replacing
from booksum_app.llm.cache import CallCache

EXPORT_KIND = "booksum.cache-answer"
_INTS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens")
_FLOATS = ("created", "latency_s")
_STRINGS = ("key", "text", "finish_reason", "model", "purpose")
_OPTIONAL = ("request", "model_string", "run", "book")
CHECKED = (*_STRINGS, *_INTS, *_FLOATS, *_OPTIONAL)  # every exported column (a test holds it to EXPORT_COLUMNS)


def export_answers(cache: CallCache, path: Path) -> int:
    """Write every answer of ``cache`` to ``path`` (JSON lines, atomic); returns how many."""
    n = 0
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        for row in cache.export_rows():
            out.write(json.dumps({"kind": EXPORT_KIND, **row}, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_answers(path: Path) -> list[dict[str, Any]]:
    """The answers of an export file, every line checked.

    Raises:
        InputError: the file is unreadable or a line is not an exported answer (its number said).
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise InputError(f"{path} line {number}: not JSON; give a file booksum cache --export wrote") from None
        if not isinstance(row, dict) or row.get("kind") != EXPORT_KIND or not _well_typed(row):
            raise InputError(f"{path} line {number}: not an exported answer; give a file booksum cache --export wrote")
        rows.append(row)
    return rows


def _well_typed(row: dict[str, Any]) -> bool:
    return (all(isinstance(row.get(c), str) for c in _STRINGS)
            and all(isinstance(row.get(c), int) and not isinstance(row.get(c), bool) and row[c] >= 0 for c in _INTS)
            and all(isinstance(row.get(c), int | float) and not isinstance(row.get(c), bool) for c in _FLOATS)
            and all(c in row and (row[c] is None or isinstance(row[c], str)) for c in _OPTIONAL)
            and bool(row["text"].strip()))  # the cache never stores an empty answer


def import_answers(cache: CallCache, path: Path) -> tuple[int, int]:
    """Add the answers of ``path`` that ``cache`` lacks; returns (answers in the file, answers added)."""
    rows = read_answers(path)
    return len(rows), cache.import_rows(rows)


__all__ = ["CHECKED", "EXPORT_KIND", "export_answers", "import_answers", "read_answers"]
