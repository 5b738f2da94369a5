"""A real kill: `python -m booksum_app compare` is SIGKILLed mid-grid, rerun, and repeats no answered call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from test_compare import write_book

from booksum_app.llm.base import Request
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]


class KillSwitch:
    """Fake-server reply hook: once ``min_records`` records exist, SIGKILL the child on the next request."""

    def __init__(self, records: Path, min_records: int) -> None:
        self.records = records
        self.min_records = min_records
        self.proc: subprocess.Popen[bytes] | None = None
        self.killed = threading.Event()
        self.killed_prompt: str | None = None

    def __call__(self, request: Request) -> str:
        ready = self.proc is not None and not self.killed.is_set()
        if ready and len(list(self.records.glob("*/*.json"))) >= self.min_records:
            os.kill(self.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
            self.killed_prompt = request.user_text
            self.killed.set()
        return default_reply(request)


def command(books: list[Path], server: FakeServer, out: Path) -> list[str]:
    # one call at a time: when a request arrives, every earlier answer is already in the cache,
    # so the kill cuts off exactly one call
    return [sys.executable, "-m", "booksum_app", "compare", *map(str, books), "--strategies", "hier,inc,direct",
            "--models", "openai:gpt-4o-mini", "--chunk-sizes", "256,512", "--max-summary-len", "120",
            "--base-url", server.openai_base_url, "--out", str(out), "--jobs", "1", "--concurrency", "1",
            "--judge", "openai:gpt-4o-mini", "--no-plots", "--yes"]


def payloads(server: FakeServer, start: int, end: int | None = None) -> list[str]:
    return [json.dumps(r.payload, sort_keys=True) for r in server.requests[start:end]]


def rows(out: Path) -> list[tuple[str, float, float]]:
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return [(r["name"], r["booookscore"]["score"], r["avg_tokens"]) for r in data["rows"]]


@pytest.mark.slow
def test_sigkill_then_rerun_repeats_no_answered_call(tmp_path: Path) -> None:
    books_dir = tmp_path / "books"
    books_dir.mkdir()
    books = [write_book(books_dir / f"book-{n}.txt", seed=n) for n in (1, 2)]
    env = {**os.environ, "OPENAI_API_KEY": "dummy", "BOOKSUM_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    switch = KillSwitch(out / "records", min_records=3)
    with FakeServer(reply=switch) as server:
        switch.proc = subprocess.Popen(command(books, server, out), cwd=REPO, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        switch.proc.wait(timeout=120)
        assert switch.killed.is_set() and switch.proc.returncode == -signal.SIGKILL
        killed_calls = server.call_count
        finished = len(list((out / "records").glob("*/*.json")))
        assert 3 <= finished < 10, "killed mid-grid, after some records were written"

        rerun = subprocess.run(command(books, server, out), cwd=REPO, env=env, capture_output=True, timeout=120,
                               check=False)
        assert rerun.returncode == 0, rerun.stderr.decode()
        assert f"({finished} from finished records)" in rerun.stderr.decode()
        total_calls = server.call_count
        resumed = payloads(server, 0)

        # the same grid, uninterrupted, with a fresh cache and output directory
        fresh_env = {**env, "BOOKSUM_CACHE_DIR": str(tmp_path / "cache-fresh")}
        clean = subprocess.run(command(books, server, tmp_path / "out-fresh"), cwd=REPO, env=fresh_env,
                               capture_output=True, timeout=120, check=False)
        assert clean.returncode == 0, clean.stderr.decode()
        uninterrupted = server.call_count - total_calls
        single = payloads(server, total_calls)

    repeated = [p for p, n in Counter(resumed).items() if n > 1]
    assert total_calls == uninterrupted + 1, (killed_calls, total_calls, uninterrupted)
    assert len(repeated) == 1, "only the call cut off by the kill (never answered) is sent again"
    assert switch.killed_prompt is not None and json.dumps(switch.killed_prompt)[1:-1] in repeated[0]
    assert sorted(set(resumed)) == sorted(set(single)), "the resumed run did exactly the same work"
    assert rows(out) == rows(tmp_path / "out-fresh"), "same table as an uninterrupted run"
