"""A persistent SQLite cache of completed calls, so an interrupted run resumes without paying twice.

The key (``llm/request_key.py``) is a tagged sha256 of a canonical JSON of everything that
determines the answer:
backend kind, model, base URL (for OpenAI-compatible servers), system message, user text
(shared prefix + prompt), max_tokens, temperature, top_p, stop sequences and sample index.
``purpose`` is a label, not part of the key. Keys, auth headers and environment are never
stored. Each completed call is committed on its own (WAL mode), so killing a run loses
nothing that finished. Failed, empty and error replies are not cached. The schema is
versioned by a table of applied migrations (``cache_schema``), each migration a named function (as in
simonw/llm's ``migrations.py``).

A request being answered is *leased* (table ``leases``): :meth:`CallCache.claim` either
returns the cached answer, or records this caller as the owner of the key (pid, host and a
random token) with an expiry that a background thread renews while the call runs, or waits
(polling with backoff) while another live owner holds it. Two runs sharing a cache therefore
pay for each distinct request once. A lease whose expiry has passed, or whose owner process
is gone (same host, pid not alive), is taken over, so a killed run never blocks others for
longer than :data:`LEASE_TTL_S`. :meth:`CallCache.put` commits the answer and drops the lease
in one transaction; :meth:`CallCache.release` drops it after a failed call.

A cache that cannot be written (a full disk) never costs a paid answer: see ``cache_fallback``;
a lease that cannot be written is granted without its row.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from booksum_app.errors import ConfigError
from booksum_app.llm.base import Completion, Usage
from booksum_app.llm.cache_fallback import WriteFallback, rollback
from booksum_app.llm.cache_rows import in_range_sql
from booksum_app.llm.cache_schema import MIGRATIONS, migrate
from booksum_app.llm.netfs import refusal

__all__ = [
    "ANSWERS_ONLY", "CACHE_FILENAME", "EXPORT_COLUMNS", "MIGRATIONS", "WASTED_PREFIX", "CacheStats", "CallCache",
    "CallMeta", "CallStore", "Lease", "migrate",
]

CACHE_FILENAME = "calls.sqlite3"
WAIT_FIRST_S = 0.02  # first poll interval of a waiter; grows by half each time ...
WAIT_MAX_S = 0.5  # ... up to this
LEASE_TTL_S = 30.0  # a lease not renewed for this long is taken over

_HOST = socket.gethostname()
_LIVE_TOKENS: set[str] = set()  # tokens of leases held by this process (any CallCache)
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Lease:
    """This caller's claim on a key: it must answer the request, then ``put`` or ``release``."""

    key: str
    token: str


class CallStore(Protocol):
    """What the call layer needs from a cache: answers by key, and leases on keys in flight.

    :class:`CallCache` (SQLite, one file) implements it; a shared or server-backed store only
    has to provide these methods for :class:`~booksum_app.llm.calls.Client` to use it.
    """

    def get(self, key: str) -> Completion | None: ...

    def claim(self, key: str) -> Completion | Lease: ...

    def try_claim(self, key: str) -> Completion | Lease | None: ...

    def put(
        self, key: str, completion: Completion, *, purpose: str = "", lease: Lease | None = None,
        meta: CallMeta | None = None,
    ) -> None: ...

    def release(self, lease: Lease) -> None: ...

    def log_wasted(self, completion: Completion, *, purpose: str = "", meta: CallMeta | None = None) -> None: ...

    def close(self) -> None: ...


WASTED_PREFIX = "wasted:"  # the key of a logged reply that was paid for and not used
ANSWERS_ONLY = f"key NOT LIKE '{WASTED_PREFIX}%'"  # SQL: rows that are answers, not wasted replies


@dataclass(frozen=True)
class CallMeta:
    """What the logs keep about a call besides its answer; None: not known to the caller."""

    request: str | None = None  # request_json(): the messages and options as sent
    model_string: str | None = None  # booksum's name for the model ("openai:gpt-4o"), which prices it
    run: str | None = None
    book: str | None = None
    server_url: str | None = None  # the server(s) that answered, without credentials (llm/origin.py)
    server_identity: str | None = None  # the weights it reported serving


@dataclass(frozen=True)
class CacheStats:
    """What ``booksum cache`` shows about one cache file."""

    path: str
    size_bytes: int
    calls: int
    leases: int
    oldest: float | None  # unix time of the oldest stored answer
    newest: float | None
    by_model: tuple[tuple[str, int, int, int], ...]  # (model, calls, input tokens, output tokens)
    out_of_range: int = 0  # rows with a field outside cache_rows' ranges: never shown nor replayed


EXPORT_COLUMNS = ("key", "text", "finish_reason", "input_tokens", "output_tokens", "cached_input_tokens",
                  "cache_write_input_tokens", "model", "created", "latency_s", "purpose", "request", "model_string",
                  "run", "book", "server_url", "server_identity")  # every column of ``calls``

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists but not ours (EPERM)
    return True


def _owner_gone(token: str, pid: int, host: str) -> bool:
    """Whether the process that took a lease can no longer answer it (checked on this host only)."""
    if host != _HOST:
        return False  # another machine: only the expiry tells
    if pid == os.getpid():
        with _LIVE_LOCK:
            return token not in _LIVE_TOKENS  # a CallCache of ours closed without releasing it
    return not _pid_alive(pid)


def _set_wal(db: sqlite3.Connection, *, patience_s: float = 30.0) -> None:
    """Switch to WAL, retrying while another process does: SQLite refuses the switch without
    calling the busy handler while another connection creates or recovers the file (seen in CI,
    four processes opening a new cache at once)."""
    deadline, wait_s = time.monotonic() + patience_s, WAIT_FIRST_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() + wait_s > deadline:
                raise
        time.sleep(wait_s)
        wait_s = min(wait_s * 1.5, WAIT_MAX_S)


class CallCache:
    """Completed calls keyed by :func:`request_key`, in one SQLite file; safe across threads and processes."""

    def __init__(self, directory: Path | str, *, lease_ttl_s: float = LEASE_TTL_S) -> None:
        if lease_ttl_s <= 0:
            raise ValueError("lease_ttl_s must be positive")
        self.directory = Path(directory).expanduser()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create cache directory {self.directory}: {exc.strerror}; "
                "pass --cache-dir DIR or --no-cache"
            ) from exc
        why = refusal(self.directory)
        if why is not None:
            raise ConfigError(why)
        self.path = self.directory / CACHE_FILENAME
        # one connection, one transaction at a time: one per thread made our threads wait on each
        # other in SQLite's busy handler (1-100 ms sleeps) at 128 in flight
        self._conn: sqlite3.Connection | None = None
        self._conn_lock = threading.RLock()
        self._lock = threading.Lock()
        self.lease_ttl_s = lease_ttl_s
        self._held: dict[str, str] = {}  # token -> key of the leases this cache holds
        self.fallback = WriteFallback(self.path)  # answers a failed write kept for this run
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        with self._db() as db:
            migrate(db)
            # leases of killed runs whose keys nobody asked for again: expired long ago, just rows
            db.execute("DELETE FROM leases WHERE expires < ?", (time.time() - 3600,))

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The cache's connection, held by this thread until the block ends (opened on first use)."""
        with self._conn_lock:
            if self._conn is None:
                self._conn = self._connect()
            yield self._conn

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            _set_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open call cache {self.path}: {exc}; pass --cache-dir DIR or --no-cache") from exc
        return db

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, marked as a cache hit, or None."""
        kept = self.fallback.get(key)
        if kept is not None:
            return kept
        with self._db() as db:
            return self._get(db, key)

    @staticmethod
    def _get(db: sqlite3.Connection, key: str) -> Completion | None:
        row = db.execute(
            "SELECT text, finish_reason, input_tokens, output_tokens, cached_input_tokens, "
            f"cache_write_input_tokens, model, latency_s, server_url FROM calls WHERE key = ? AND {in_range_sql()}",
            (key,),  # a row out of range (another writer's) is a miss: the fresh answer replaces it
        ).fetchone()
        if row is None:
            return None
        text, finish_reason, input_tokens, output_tokens, cached, written, model, latency, server = row
        return Completion(
            text=text,
            finish_reason=finish_reason,
            usage=Usage(input_tokens, output_tokens, cached, written),
            model=model,
            latency_s=latency,
            cost_usd=0.0,
            cache_hit=True,
            server=server if isinstance(server, str) and server else None,
        )

    # ---- leases ------------------------------------------------------------------------

    def claim(self, key: str) -> Completion | Lease:
        """The cached answer for ``key``, or a lease to answer it, waiting while another owner holds one.

        Args:
            key: a :func:`request_key`.

        Returns:
            The cached completion (possibly one another process committed while we waited), or
            a :class:`Lease`: the caller must then make the call and ``put`` or ``release``.
        """
        delay_s = WAIT_FIRST_S
        while True:
            got = self.try_claim(key)
            if got is not None:
                return got
            time.sleep(delay_s)
            delay_s = min(delay_s * 1.5, WAIT_MAX_S)

    def try_claim(self, key: str) -> Completion | Lease | None:
        """Like :meth:`claim` without waiting: None while another live owner holds the key."""
        kept = self.fallback.get(key)
        if kept is not None:
            return kept
        with self._db() as db:
            hit = self._get(db, key)  # the common case needs no write lock
            if hit is not None:
                return hit
            token = secrets.token_hex(8)
            with _LIVE_LOCK:
                _LIVE_TOKENS.add(token)  # before the row is visible, so our own threads see it live
            try:
                db.execute("BEGIN IMMEDIATE")
                hit = self._get(db, key)
                row = db.execute(
                    "SELECT token, pid, host, expires FROM leases WHERE key = ?", (key,)
                ).fetchone()
                now = time.time()
                held = row is not None and row[3] > now and not _owner_gone(row[0], row[1], row[2])
                if hit is None and not held:
                    db.execute(
                        "INSERT OR REPLACE INTO leases (key, token, pid, host, expires) "
                        "VALUES (?,?,?,?,?)",
                        (key, token, os.getpid(), _HOST, now + self.lease_ttl_s),
                    )
                db.execute("COMMIT")
            except sqlite3.OperationalError as exc:  # cannot write the lease: answer without it
                rollback(db)
                self.fallback.failed(exc)
                hit, held = None, False
            except BaseException:
                rollback(db)
                self._forget(token)
                raise
        if hit is not None or held:
            self._forget(token)
            return hit
        with self._lock:
            self._held[token] = key
        self._ensure_renewer()
        return Lease(key=key, token=token)

    def release(self, lease: Lease) -> None:
        """Give up ``lease`` without an answer (the call failed): a waiter takes the key over."""
        self._forget(lease.token)
        with self._db() as db, contextlib.suppress(sqlite3.OperationalError):  # else it expires
            db.execute("DELETE FROM leases WHERE key = ? AND token = ?", (lease.key, lease.token))

    def _forget(self, token: str) -> None:
        with _LIVE_LOCK:
            _LIVE_TOKENS.discard(token)
        with self._lock:
            self._held.pop(token, None)

    def _ensure_renewer(self) -> None:
        with self._lock:
            if self._renewer is not None and self._renewer.is_alive():
                return
            self._stop.clear()
            self._renewer = threading.Thread(
                target=self._renew_loop, name="booksum-cache-lease", daemon=True
            )
            self._renewer.start()

    def _renew_loop(self) -> None:
        """Push the expiry of every held lease forward, a third of the TTL at a time."""
        while not self._stop.wait(self.lease_ttl_s / 3):
            with self._lock:
                held = list(self._held.items())
            if not held:
                continue
            expires = time.time() + self.lease_ttl_s
            try:
                with self._db() as db:
                    db.executemany(
                        "UPDATE leases SET expires = ? WHERE key = ? AND token = ?",
                        [(expires, key, token) for token, key in held],
                    )
            except sqlite3.Error:
                continue  # busy for 30 s: try again next round, the TTL has slack

    def put(
        self, key: str, completion: Completion, *, purpose: str = "", lease: Lease | None = None,
        meta: CallMeta | None = None,
    ) -> None:
        """Store a completed call (with ``meta`` for the logs) and drop any lease on ``key``, in one
        commit; empty replies are not stored. When the write fails (a full disk), the answer is
        kept in memory for this run instead, and the failure said once (module docstring)."""
        if not completion.text.strip():
            if lease is not None:
                self.release(lease)
            return
        usage, meta = completion.usage, meta or CallMeta()
        with self._db() as db:
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute(
                    "INSERT OR REPLACE INTO calls (key, text, finish_reason, input_tokens, "
                    "output_tokens, cached_input_tokens, cache_write_input_tokens, model, created, latency_s, purpose, "
                    "request, model_string, run, book, server_url, server_identity) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        key,
                        completion.text,
                        completion.finish_reason,
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cached_input_tokens,
                        usage.cache_write_input_tokens,
                        completion.model,
                        time.time(),
                        completion.latency_s,
                        purpose,
                        meta.request,
                        meta.model_string,
                        meta.run,
                        meta.book,
                        meta.server_url,
                        meta.server_identity,
                    ),
                )
                db.execute("DELETE FROM leases WHERE key = ?", (key,))  # the answer is here now
                db.execute("COMMIT")
            except sqlite3.OperationalError as exc:  # a full disk: the paid answer stays in memory
                rollback(db)
                self.fallback.keep(key, completion)
                self.fallback.failed(exc)
                if lease is not None:
                    self.release(lease)
                return
            except BaseException:
                rollback(db)
                raise
        if lease is not None:
            self._forget(lease.token)

    def log_wasted(self, completion: Completion, *, purpose: str = "", meta: CallMeta | None = None) -> None:
        """Log a paid reply that was not used (empty, cut before any text) so ``booksum logs`` counts
        its money. Its key (``wasted:...``) matches no request: it is never replayed as an answer."""
        usage, meta = completion.usage, meta or CallMeta()
        with self._db() as db, db:
            db.execute(
                "INSERT INTO calls (key, text, finish_reason, input_tokens, output_tokens, cached_input_tokens, "
                "cache_write_input_tokens, model, created, latency_s, purpose, request, model_string, run, book) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (WASTED_PREFIX + secrets.token_hex(12), completion.text, completion.finish_reason,
                 usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
                 usage.cache_write_input_tokens, completion.model, time.time(), completion.latency_s,
                 f"{purpose} (wasted)" if purpose else "(wasted)", meta.request, meta.model_string, meta.run,
                 meta.book),
            )

    def __len__(self) -> int:
        """Stored answers (logged wasted replies are not answers)."""
        with self._db() as db:
            answers = f"SELECT COUNT(*) FROM calls WHERE {ANSWERS_ONLY} AND {in_range_sql()}"
            return int(db.execute(answers).fetchone()[0])

    def stats(self) -> CacheStats:
        """Size, rows, age range and tokens per model of this cache."""
        with self._db() as db:
            answers = f"FROM calls WHERE {ANSWERS_ONLY} AND {in_range_sql()}"
            n, oldest, newest = db.execute(f"SELECT COUNT(*), MIN(created), MAX(created) {answers}").fetchone()
            bad = db.execute(f"SELECT COUNT(*) FROM calls WHERE ({in_range_sql()}) IS NOT 1").fetchone()[0]
            leases = db.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
            rows = db.execute(
                f"SELECT model, COUNT(*), SUM(input_tokens), SUM(output_tokens) {answers} GROUP BY model "
                "ORDER BY 2 DESC"
            ).fetchall()
        size = sum(f.stat().st_size for f in self.path.parent.glob(self.path.name + "*") if f.is_file())
        return CacheStats(str(self.path), size, int(n), int(leases), oldest, newest,
                          tuple((str(m), int(c), int(i or 0), int(o or 0)) for m, c, i, o in rows), int(bad))

    def prune(self, *, older_than_s: float | None = None) -> int:
        """Delete stored answers (all, or those older than ``older_than_s``, and rows out of range,
        which are no answers); returns how many."""
        with self._db() as db:
            with db:
                if older_than_s is None:
                    cursor = db.execute("DELETE FROM calls")
                else:
                    cursor = db.execute(f"DELETE FROM calls WHERE created < ? OR ({in_range_sql()}) IS NOT 1",
                                        (time.time() - older_than_s,))
            db.execute("VACUUM")
        return int(cursor.rowcount)

    def export_rows(self) -> Iterator[dict[str, Any]]:
        """Every stored answer as a dict of its columns (``booksum cache --export``), oldest first."""
        with self._db() as db:  # streamed: a large cache is never held in memory whole
            rows = f"SELECT {', '.join(EXPORT_COLUMNS)} FROM calls WHERE {in_range_sql()} ORDER BY created, key"
            for row in db.execute(rows):  # rows out of range are no answers: an import would refuse them
                yield dict(zip(EXPORT_COLUMNS, row, strict=True))

    def import_rows(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Store exported answers whose keys this cache lacks, in one transaction; returns how many were new.

        ``rows`` is read as it is stored (a file streamed line by line); an error it raises rolls
        back every row stored before it."""
        values = (tuple(row.get(c) for c in EXPORT_COLUMNS) for row in rows)  # older exports lack the server's
        with self._db() as db:
            before = db.total_changes
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(f"INSERT OR IGNORE INTO calls ({', '.join(EXPORT_COLUMNS)}) "
                               f"VALUES ({', '.join('?' * len(EXPORT_COLUMNS))})", values)
            except BaseException:
                rollback(db)  # a full disk's own error, not "cannot rollback"
                raise
            db.execute("COMMIT")
            return int(db.total_changes - before)

    def close(self) -> None:
        """Stop renewing, release the leases still held, close the connection."""
        self._stop.set()
        renewer = self._renewer
        if renewer is not None:
            renewer.join()
            self._renewer = None
        with self._lock:
            held = list(self._held.items())
        for token, key in held:
            try:
                self.release(Lease(key=key, token=token))
            except sqlite3.Error:
                self._forget(token)  # expires on its own
        with self._conn_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
