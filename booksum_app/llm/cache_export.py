"""Answers moved between call caches: ``booksum cache --export FILE`` / ``--import FILE``.

The file is JSON lines, one stored answer a line, with every column of the cache's ``calls``
table (:data:`~booksum_app.llm.cache.EXPORT_COLUMNS`: the request key, the answer, its usage,
the logs' metadata and the server that answered, as a URL without credentials and the weights it
reported; never a key or header). Files written before the server was exported import as
answers without a server. Shards that ran on several machines, each with
its own cache on a local disk, export theirs; the merging machine imports them all, so its
judge calls are answered from the cache. Exports are written atomically (a temporary file
renamed), so a killed export leaves no half file under the name; an import adds answers whose
keys the cache lacks, in one transaction, reading the file a line at a time: a line that is not
standard JSON, not an answer, or holds any field out of range (``cache_rows``) is one line
naming its number and the field, and nothing of the file is stored.

An answer is stored under its key, and a run replays it for the request that has that key: so
the import recomputes each line's key from the line's own ``request`` (the messages, options and
backend the key is made of, as the call log keeps them) and refuses a line whose key is not that
key. The export leaves out what an import would refuse: answers stored before booksum kept the
backend with the request, and answers whose backend names a credential (a URL with a password),
which no file should carry; it says how many.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from booksum_app.errors import InputError, redact
from booksum_app.files import replacing
from booksum_app.jsonin import parse_json, parse_json_or_none
from booksum_app.llm.cache import WASTED_PREFIX, CallCache
from booksum_app.llm.cache_rows import COLUMNS, row_problem
from booksum_app.llm.origin import public_url
from booksum_app.llm.request_key import stored_request_key

EXPORT_KIND = "booksum.cache-answer"
CHECKED = COLUMNS  # every exported column (a test holds it to EXPORT_COLUMNS)
MAX_LINE_BYTES = 256 * 2**20  # an answer and its request at their caps, escaped, fit with room
_FIX = "give a file booksum cache --export wrote"


def export_answers(cache: CallCache, path: Path) -> tuple[int, int]:
    """Write every answer of ``cache`` that an import takes to ``path`` (JSON lines, atomic);
    returns (answers written, answers left out: :func:`key_problem` finds their key unverifiable)."""
    written = left_out = 0
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        for row in cache.export_rows():
            if key_problem(row) is not None or _names_a_credential(row):
                left_out += 1
                continue
            out.write(json.dumps({"kind": EXPORT_KIND, **row}, ensure_ascii=False) + "\n")
            written += 1
    return written, left_out


def key_problem(row: dict[str, Any]) -> str | None:
    """Why ``row``'s key is not the key of its own request (None: it is, or the row is a logged
    wasted reply, whose key is never asked for)."""
    key = row.get("key")
    if isinstance(key, str) and key.startswith(WASTED_PREFIX):
        return None
    if row.get("request") is None:
        return "request: missing, so the key cannot be checked"
    computed = stored_request_key(row.get("request"))
    if computed is None:
        return "request: not a request with its backend, so the key cannot be checked"
    if computed != key:
        return "key: not the key of this line's request (an answer is stored only under its own request's key)"
    return None


def _names_a_credential(row: dict[str, Any]) -> bool:
    """Whether the backend in ``row``'s request holds a credential (a base URL with a password)."""
    data = parse_json_or_none(row["request"]) if isinstance(row.get("request"), str) else None
    backend = json.dumps(data.get("backend") if isinstance(data, dict) else None, ensure_ascii=False)
    return redact(backend) != backend


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
        row = parse_json(text, where=where, allow_nonfinite=True)  # NaN: left to the field's range check
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
    return row_problem(row) or key_problem(row) or _server_problem(row)


def _server_problem(row: dict[str, Any]) -> str | None:
    """A stored server URL is its public form (llm/origin.py): a line that names more is refused."""
    url = row.get("server_url")
    if isinstance(url, str) and any(public_url(u) != u.strip() for u in url.split(",") if u.strip()):
        return "server_url: not the public form of a URL (no credentials, query or fragment)"
    return None


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


__all__ = ["CHECKED", "EXPORT_KIND", "MAX_LINE_BYTES", "export_answers", "import_answers", "key_problem",
           "read_answers"]
