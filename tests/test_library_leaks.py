"""Library entry points close what they open: three calls of each leave no thread and no open
SQLite file behind (a judge or model client holds a dispatcher, workers, a lease renewer and
a connection to the call cache)."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import booksum_app
from booksum_app.testing.fake_server import FakeServer

SUMMARY = "Mara bakes bread in Lisk. Her cousin Teo wants to sell the bakery. She refuses him."


def _sqlite_files() -> list[str]:
    """Paths of the SQLite databases (and their WAL/SHM files) this process holds open."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith((".sqlite", ".sqlite3", ".db", "-wal", "-shm")):
            found.append(target)
    return sorted(found)


def _threads() -> set[str]:
    """The process's threads, less the fake server's own request handlers (the server's, not booksum's:
    a handler may still be finishing its reply when the client has already closed)."""
    return {f"{t.name}#{t.ident}" for t in threading.enumerate() if "process_request_thread" not in t.name}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        yield fake


def _entry_points(tmp_path: Path, server: FakeServer) -> dict[str, Callable[[], Any]]:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 80, encoding="utf-8")
    judge = "openai:gpt-4o-mini"

    def get_model() -> Any:
        with booksum_app.get_model(judge) as client:
            return client.info

    return {
        "summarize": lambda: booksum_app.summarize(book, strategy="direct", model="openai:fake",
                                                   max_summary_len=120),
        "run_summary": lambda: booksum_app.run_summary(
            book, booksum_app.RunConfig(strategy="direct", model="openai:fake", max_summary_tokens=120)),
        "score": lambda: booksum_app.score({"lisk.txt": SUMMARY}, judge=judge),
        "score_summary": lambda: booksum_app.score_summary(SUMMARY, judge=judge),
        "score_summaries": lambda: booksum_app.score_summaries({"lisk.txt": SUMMARY}, judge=judge),
        "inspect": lambda: booksum_app.inspect(book, model="openai:fake"),
        "get_model": get_model,
    }


@pytest.mark.parametrize("name", ["summarize", "run_summary", "score", "score_summary", "score_summaries",
                                  "inspect", "get_model"])
def test_three_calls_leave_no_thread_and_no_open_cache(name: str, tmp_path: Path, server: FakeServer) -> None:
    call = _entry_points(tmp_path, server)[name]
    call()  # the first call may load what stays for the process (tokenizers, NLTK data)
    gc.collect()
    threads, files = _threads(), _sqlite_files()
    for _ in range(3):
        call()
    gc.collect()
    assert _threads() - threads == set()
    assert _sqlite_files() == files
    assert not any("booksum" in f or "cache" in f for f in _sqlite_files())


def test_a_failed_call_closes_its_client_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.errors import AuthError

    monkeypatch.setenv("OPENAI_API_KEY", "rejected")
    with FakeServer(fault_rate=1.0, fault_kinds=("401",)) as rejecting:
        monkeypatch.setenv("OPENAI_BASE_URL", rejecting.openai_base_url)
        with pytest.raises(AuthError):
            booksum_app.score_summary(SUMMARY, judge="openai:gpt-4o-mini")
        gc.collect()
        threads, files = _threads(), _sqlite_files()
        for _ in range(3):
            with pytest.raises(AuthError):
                booksum_app.score_summary(SUMMARY, judge="openai:gpt-4o-mini")
        gc.collect()
        assert _threads() - threads == set() and _sqlite_files() == files
