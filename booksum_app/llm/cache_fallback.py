"""What the call cache does when it cannot write: keep answers in memory, say so once.

A full disk (SQLite's "database or disk is full"), a read-only file or a lock held past the
timeout must never cost a paid answer. :class:`WriteFallback` holds the answers a failed
write could not store, for the rest of the run, and says the first failure on one line (a
``logging`` warning: Python prints it on stderr when nothing else handles it). Nothing is
retried on disk: a later run pays again for what could not be stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sqlite3
import threading
from pathlib import Path

from booksum_app.llm.base import Completion

_log = logging.getLogger("booksum_app.llm.cache")


def rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction, if SQLite has not ended it already.

    On SQLITE_FULL SQLite has often rolled back by itself: a second ROLLBACK then fails with
    "cannot rollback - no transaction is active", which must not replace the first error.
    """
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


class WriteFallback:
    """Answers kept in memory after failed writes, and the first failure (said once)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: dict[str, Completion] = {}
        self.error: str | None = None

    def get(self, key: str) -> Completion | None:
        """The answer kept for ``key``, as a cache hit, or None."""
        with self._lock:
            return self._memory.get(key)

    def keep(self, key: str, completion: Completion) -> None:
        """Hold ``completion`` for this run: asked again, it is answered free."""
        with self._lock:
            self._memory[key] = dataclasses.replace(completion, cost_usd=0.0, cache_hit=True)

    def failed(self, exc: sqlite3.Error) -> None:
        """Note a failed write; the first one is said, on one line."""
        with self._lock:
            first, self.error = self.error is None, self.error or str(exc)
        if first:
            _log.warning(
                "warning: the call cache %s cannot be written (%s); this run keeps its answers in memory, "
                "a later run pays for them again (free some space, or pass --cache-dir DIR)", self.path, exc)
