"""JSON from outside (summaries, annotations, references, records, datasets) read into one-line errors.

Every way such a file can fail to be JSON ends in :class:`~booksum_app.errors.InputError`
with one line that names the file: missing, a directory, not UTF-8, not valid JSON, and
nested too deeply for the parser (``[[[[...]]]]`` 100,000 levels deep makes Python's ``json``
raise ``RecursionError``, which is not a ``ValueError`` and would otherwise be a traceback).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from booksum_app.errors import InputError


class _Refused(ValueError):
    """What the strict hooks raise: a value standard JSON does not allow, said in words."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"the key {key[:80]!r} appears twice in one object")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def parse_json(text: str | bytes, *, where: str, unique_keys: bool = False, standard_numbers: bool = False) -> Any:
    """``text`` parsed as JSON; ``where`` names it in the error ("annotations file x.json").

    Two checks refuse what Python's parser lets through and standard JSON does not allow:
    ``unique_keys``, a key twice in one object (Python keeps the last, so two readers of the
    same text could see two different values); ``standard_numbers``, ``NaN`` and ``Infinity``
    (a reader that range-checks its fields can leave them to that check, which names the field).

    Raises:
        InputError: not valid JSON, nested too deeply to parse, a number too long to read
            (Python refuses integers of more than 4,300 digits), or what a check refuses.
    """
    hooks: dict[str, Any] = {}
    if unique_keys:
        hooks["object_pairs_hook"] = _unique_object
    if standard_numbers:
        hooks["parse_constant"] = _no_constant
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{where} is not UTF-8 text; pass a JSON file") from exc
    except RecursionError as exc:
        raise InputError(f"{where} is nested too deeply to be read as JSON; it cannot be a booksum input") from exc
    except _Refused as exc:
        raise InputError(f"{where} is not standard JSON: {exc}") from exc
    except ValueError as exc:  # an integer past Python's digit limit: not a JSONDecodeError
        raise InputError(f"{where} holds a number too long to read as JSON") from exc


def read_json(path: str | Path, *, what: str) -> Any:
    """The JSON value in the file at ``path``; ``what`` says what the file is ("summaries").

    Raises:
        InputError: the file is missing, a directory, unreadable, not UTF-8, not JSON, or
            nested too deeply.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise InputError(f"{what} file {path} does not exist; check the path") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{what} file {path} is a directory; pass a JSON file") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} file {path} is not UTF-8 text; pass a JSON file") from exc
    except OSError as exc:
        raise InputError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    return parse_json(text, where=f"{what} file {path}")


__all__ = ["parse_json", "read_json"]
