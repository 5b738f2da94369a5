"""A persistent SQLite cache of completed calls, so an interrupted run resumes without paying twice.

The key is a tagged sha256 of a canonical JSON of everything that determines the answer:
backend kind, model, base URL (for OpenAI-compatible servers), system message, user text
(shared prefix + prompt), max_tokens, temperature, top_p, stop sequences and sample index.
``purpose`` is a label, not part of the key. Keys, auth headers and environment are never
stored. Each completed call is committed on its own (WAL mode), so killing a run loses
nothing that finished. Failed, empty and error replies are not cached. The schema is
versioned by a table of applied migrations, each migration a named function (as in
simonw/llm's ``migrations.py``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from booksum_app.errors import ConfigError
from booksum_app.llm.base import Completion, Request, Usage

CACHE_FILENAME = "calls.sqlite3"
KEY_TAG = "call-v1"


def request_key(request: Request, *, backend: Mapping[str, str | None]) -> str:
    """The cache key of ``request`` sent to ``backend`` (kind, model, base_url)."""
    payload = {
        "backend": dict(sorted(backend.items())),
        "system": request.system,
        "user": request.user_text,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "stop": list(request.stop),
        "sample_index": request.sample_index,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{KEY_TAG}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


def _m001_create_calls(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE calls (
            key TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            finish_reason TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cached_input_tokens INTEGER NOT NULL,
            model TEXT NOT NULL,
            created REAL NOT NULL,
            latency_s REAL NOT NULL
        )"""
    )


def _m002_add_purpose(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE calls ADD COLUMN purpose TEXT NOT NULL DEFAULT ''")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m001_create_calls, _m002_add_purpose]


def migrate(db: sqlite3.Connection) -> None:
    """Apply every migration not yet recorded in ``_migrations``, in order, in one transaction.

    ``BEGIN IMMEDIATE`` takes the write lock first, so two processes opening a new cache at
    once do not both try to create the tables.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL)")
        done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
        for migration in MIGRATIONS:
            name = migration.__name__.lstrip("_")
            if name not in done:
                migration(db)
                db.execute(
                    "INSERT INTO _migrations (name, applied) VALUES (?, ?)", (name, time.time())
                )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class CallCache:
    """Completed calls keyed by :func:`request_key`, in one SQLite file; safe across threads and processes."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).expanduser()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create cache directory {self.directory}: {exc.strerror}; "
                "pass --cache-dir DIR or --no-cache"
            ) from exc
        self.path = self.directory / CACHE_FILENAME
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        db = self._db()
        with self._lock:
            migrate(db)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(
                    self.path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise ConfigError(
                    f"cannot open call cache {self.path}: {exc}; pass --cache-dir DIR or --no-cache"
                ) from exc
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, marked as a cache hit, or None."""
        row = (
            self._db()
            .execute(
                "SELECT text, finish_reason, input_tokens, output_tokens, cached_input_tokens, model, "
                "latency_s FROM calls WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            return None
        text, finish_reason, input_tokens, output_tokens, cached_input_tokens, model, latency = row
        return Completion(
            text=text,
            finish_reason=finish_reason,
            usage=Usage(input_tokens, output_tokens, cached_input_tokens),
            model=model,
            latency_s=latency,
            cost_usd=0.0,
            cache_hit=True,
        )

    def put(self, key: str, completion: Completion, *, purpose: str = "") -> None:
        """Store a completed call (committed at once); empty replies are not stored."""
        if not completion.text.strip():
            return
        usage = completion.usage
        self._db().execute(
            "INSERT OR REPLACE INTO calls (key, text, finish_reason, input_tokens, output_tokens, "
            "cached_input_tokens, model, created, latency_s, purpose) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                key,
                completion.text,
                completion.finish_reason,
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens,
                completion.model,
                time.time(),
                completion.latency_s,
                purpose,
            ),
        )

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close every connection this cache opened."""
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()
