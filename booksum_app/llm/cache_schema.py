"""The call cache's schema: a table of applied migrations, each migration a named function
(as in simonw/llm's ``migrations.py``), applied in order by :func:`migrate`."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable


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


def _m003_create_leases(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE leases (
            key TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            expires REAL NOT NULL
        )"""
    )


def _m004_add_call_log(db: sqlite3.Connection) -> None:
    # nullable: rows stored before this migration show these as unknown in ``booksum logs``
    for column in ("request", "model_string", "run", "book"):
        db.execute(f"ALTER TABLE calls ADD COLUMN {column} TEXT")
    db.execute("CREATE INDEX calls_created ON calls (created)")  # logs read newest first


def _m005_add_cache_writes(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE calls ADD COLUMN cache_write_input_tokens INTEGER NOT NULL DEFAULT 0")


def _m006_add_server(db: sqlite3.Connection) -> None:
    # nullable: an answer stored before this migration has no recorded server (llm/origin.py)
    for column in ("server_url", "server_identity"):
        db.execute(f"ALTER TABLE calls ADD COLUMN {column} TEXT")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m001_create_calls,
    _m002_add_purpose,
    _m003_create_leases,
    _m004_add_call_log,
    _m005_add_cache_writes,
    _m006_add_server,
]


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
