"""JSON from outside (summaries, annotations, references, records, datasets, manifests, replies)
read into one-line errors.

Every way such a text can fail to be JSON booksum trusts ends in
:class:`~booksum_app.errors.InputError` (exit 2) with one line that names it:

- missing, a directory, not UTF-8, not valid JSON;
- nested too deeply for the parser (``[[[[...]]]]`` 100,000 levels deep makes Python's
  ``json`` raise ``RecursionError``, which is not a ``ValueError``);
- an object holding one key twice (``{"n": 1, "n": 2}``): Python keeps the last value
  silently, another reader the first, so the text has no one meaning and is refused;
- a number that is not a finite float (``1e999``, ``NaN``, ``Infinity``) or an integer
  of more digits than Python converts (4,300): both would reach a count or a price as
  ``inf``/``nan`` or a ``ValueError`` traceback.

This module is the only place booksum calls ``json.loads``; ruff's banned-API rule (TID251,
``pyproject.toml``) fails any other call.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from booksum_app.errors import BooksumError, InputError


class _Refused(ValueError):
    """A JSON text that parses but that booksum does not take (duplicate key, non-finite number)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"holds the key {key[:60]!r} twice in one object")
        out[key] = value
    return out


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"holds the number {text[:40]}, too large for a float")
    return value


def _constant(name: str) -> float:
    raise _Refused(f"holds {name}, which is not a JSON number")


def parse_json(
    text: str | bytes, *, where: str, error: type[BooksumError] = InputError, allow_nonfinite: bool = False
) -> Any:
    """``text`` parsed as JSON; ``where`` names it in the error ("annotations file x.json").

    ``error`` is the class raised (``InputError`` for files; the call layer passes
    ``TransientModelError`` for a server's reply, which is retried and then exits 4).
    ``allow_nonfinite`` lets NaN/Infinity through, for a reader whose range check names the field.

    Raises:
        InputError: (or ``error``) not valid JSON, not UTF-8, nested too deeply, a duplicate
            key, a non-finite number, or an integer too long to convert.
    """
    is_file = error is InputError
    numbers: dict[str, Any] = {} if allow_nonfinite else {"parse_float": _finite, "parse_constant": _constant}
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, **numbers)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{where} is not UTF-8 text" + ("; pass a JSON file" if is_file else "")) from exc
    except RecursionError as exc:
        why = "; it cannot be a booksum input" if is_file else ""
        raise error(f"{where} is nested too deeply to be read as JSON{why}") from exc
    except _Refused as exc:
        raise error(f"{where} {exc}; it cannot be read as one value") from exc
    except ValueError as exc:  # an integer past Python's int-conversion limit (4,300 digits)
        raise error(f"{where} holds a number too long to read as JSON") from exc


def parse_json_or_none(text: str | bytes) -> Any:
    """``text`` parsed as :func:`parse_json` does, or None when it is not JSON booksum takes.

    For text that is JSON only sometimes (a model's answer, a probe's reply): whatever
    :func:`parse_json` refuses is "no JSON here", never an exception.
    """
    try:
        return parse_json(text, where="text")
    except InputError:
        return None


def read_json(path: str | Path, *, what: str) -> Any:
    """The JSON value in the file at ``path``; ``what`` says what the file is ("summaries").

    Raises:
        InputError: the file is missing, a directory, unreadable, not UTF-8, or not JSON
            booksum takes (:func:`parse_json`).
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


__all__ = ["parse_json", "parse_json_or_none", "read_json"]
