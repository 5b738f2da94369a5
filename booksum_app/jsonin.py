"""JSON from outside (summaries, annotations, references, records, datasets, servers' replies) read
into one-line errors.

Every way such a file can fail to be JSON ends in :class:`~booksum_app.errors.InputError`
(or the error class the caller names: a server's reply is a model failure, exit 4, not a bad
input file) with one line that names the file: missing, a directory, not UTF-8, not valid JSON, and
nested too deeply for the parser (``[[[[...]]]]`` 100,000 levels deep makes Python's ``json``
raise ``RecursionError``, which is not a ``ValueError`` and would otherwise be a traceback).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from booksum_app.errors import BooksumError, InputError


def parse_json(text: str | bytes, *, where: str, error: type[BooksumError] = InputError) -> Any:
    """``text`` parsed as JSON; ``where`` names it in the error ("annotations file x.json").

    ``error`` is the class raised (``InputError`` for files; the call layer passes
    ``TransientModelError`` for a server's reply, which is retried and then exits 4).

    Raises:
        InputError: (or ``error``) not valid JSON, not UTF-8, or nested too deeply to parse.
    """
    is_file = error is InputError
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{where} is not UTF-8 text" + ("; pass a JSON file" if is_file else "")) from exc
    except RecursionError as exc:
        why = "; it cannot be a booksum input" if is_file else ""
        raise error(f"{where} is nested too deeply to be read as JSON{why}") from exc


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
