"""Atomic file writes: every output is written to a temporary file beside it, then renamed.

A crash or a kill therefore leaves either the old file or the new one, never half a file,
and two writers never share a temporary name.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent directories; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON to ``path`` atomically; returns the path."""
    return atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
