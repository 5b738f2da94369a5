"""The SQLite call cache: what the key depends on, persistence, migrations, what is never stored."""

from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from booksum_app.errors import ConfigError
from booksum_app.llm.base import Completion, Request, Usage
from booksum_app.llm.cache import MIGRATIONS, CallCache, _set_wal
from booksum_app.llm.request_key import request_key

BACKEND = {"kind": "openai", "model": "openai:gpt-4o", "base_url": None}
BASE = Request(prompt="Summarize: text.", max_tokens=100, system="You summarize.")
DONE = Completion("A summary.", "stop", Usage(12, 3, 2), model="gpt-4o", latency_s=1.5)


@pytest.mark.parametrize(
    "change",
    [
        {"prompt": "Summarize: other text."},
        {"max_tokens": 101},
        {"temperature": 0.0},
        {"top_p": 0.9},
        {"system": None},
        {"stop": ("\n\n",)},
        {"sample_index": 1},
    ],
)
def test_key_changes_with_everything_that_changes_the_answer(change: dict[str, object]) -> None:
    assert request_key(dataclasses.replace(BASE, **change), backend=BACKEND) != request_key(
        BASE, backend=BACKEND
    )


def test_key_ignores_purpose_and_how_the_user_text_is_split() -> None:
    split = dataclasses.replace(BASE, shared_prefix="Summarize: ", prompt="text.", purpose="merge")
    assert request_key(split, backend=BACKEND) == request_key(BASE, backend=BACKEND)


@pytest.mark.parametrize(
    "backend",
    [
        {**BACKEND, "model": "openai:gpt-4o-mini"},
        {**BACKEND, "base_url": "http://localhost:8000/v1"},
        {**BACKEND, "kind": "anthropic"},
    ],
)
def test_key_changes_with_the_backend(backend: dict[str, str | None]) -> None:
    assert request_key(BASE, backend=backend) != request_key(BASE, backend=BACKEND)


def test_key_is_tagged_sha256() -> None:
    key = request_key(BASE, backend=BACKEND)
    tag, digest = key.split(":")
    assert tag == "call-v1" and len(digest) == 64


def test_round_trip_across_instances(tmp_path: Path) -> None:
    key = request_key(BASE, backend=BACKEND)
    CallCache(tmp_path).put(key, DONE, purpose="summarize")
    hit = CallCache(tmp_path).get(key)
    assert hit == dataclasses.replace(DONE, cache_hit=True, cost_usd=0.0)
    assert CallCache(tmp_path).get(request_key(BASE, backend={**BACKEND, "model": "x"})) is None


def test_empty_replies_are_not_stored(tmp_path: Path) -> None:
    cache = CallCache(tmp_path)
    cache.put("k", Completion("   ", "stop"))
    assert len(cache) == 0 and cache.get("k") is None


def test_migrations_are_recorded_and_run_once(tmp_path: Path) -> None:
    CallCache(tmp_path).close()
    CallCache(tmp_path).close()  # reopening must not re-run migrations
    db = sqlite3.connect(tmp_path / "calls.sqlite3")
    names = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [m.__name__.lstrip("_") for m in MIGRATIONS]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_concurrent_writers(tmp_path: Path) -> None:
    cache = CallCache(tmp_path)

    def write(i: int) -> None:
        cache.put(f"k{i}", dataclasses.replace(DONE, text=f"S{i}."))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(CallCache(tmp_path)) == 30


def test_unusable_cache_dir_says_how_to_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(ConfigError, match="--no-cache"):
        CallCache(blocker / "cache")


def test_processes_opening_a_new_cache_at_once(tmp_path: Path) -> None:
    code = "import sys; from booksum_app.llm.cache import CallCache; CallCache(sys.argv[1]).close()"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stderr=subprocess.PIPE)
        for _ in range(8)
    ]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    assert len(CallCache(tmp_path)) == 0


class _LockedThenFree:
    """A connection whose journal-mode switch is refused ``refusals`` times, as SQLite does
    (without calling the busy handler) while another process creates or recovers the file."""

    def __init__(self, refusals: int, message: str = "database is locked") -> None:
        self.refusals = refusals
        self.message = message
        self.calls = 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.calls <= self.refusals:
            raise sqlite3.OperationalError(self.message)


def test_wal_switch_waits_out_a_locked_file() -> None:
    db = _LockedThenFree(refusals=3)
    _set_wal(db, patience_s=5.0)  # type: ignore[arg-type]
    assert db.calls == 4


def test_wal_switch_gives_up_after_its_patience() -> None:
    db = _LockedThenFree(refusals=10_000)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _set_wal(db, patience_s=0.2)  # type: ignore[arg-type]


def test_wal_switch_does_not_retry_other_errors() -> None:
    db = _LockedThenFree(refusals=5, message="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk"):
        _set_wal(db, patience_s=5.0)  # type: ignore[arg-type]
    assert db.calls == 1
