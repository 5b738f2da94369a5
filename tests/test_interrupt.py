"""Ctrl-C during a run: the first says what it waits for, a second ends the process within 3 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from booksum_app.cli.interrupt import quit_line, waiting_line
from booksum_app.llm.base import Request
from booksum_app.llm.door import ATTEMPTS, attempts_in_flight
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
FAST_ANSWERS = 2  # the server answers this many calls, then holds every other one for a minute


class SlowAfter:
    """Fake-server reply hook: the first answers come at once, the others wait up to 60 s (or until released)."""

    def __init__(self, fast: int) -> None:
        self.fast = fast
        self.seen = 0
        self.held = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def __call__(self, request: Request) -> str:
        with self.lock:
            self.seen += 1
            slow = self.seen > self.fast
            self.held += slow
        if slow:
            self.release.wait(60)
        return default_reply(request)


def test_waiting_line_names_the_calls_and_the_second_ctrl_c() -> None:
    line = waiting_line(3, 41.6)
    assert "3 calls in flight" in line and "42 s" in line and "Ctrl-C again to quit now" in line
    assert "1 call in flight" in waiting_line(1, 0.2)


def test_attempts_in_flight_counts_and_ages() -> None:
    before, _ = attempts_in_flight()
    token = ATTEMPTS.begin()
    time.sleep(0.05)
    count, oldest_s = attempts_in_flight()
    ATTEMPTS.end(token)
    assert count == before + 1 and oldest_s >= 0.05
    assert attempts_in_flight()[0] == before


def test_quit_line_says_what_was_kept(tmp_path: Path) -> None:
    line = quit_line(2, tmp_path / "b.failed.json")
    assert line.startswith("quit: 2 calls in flight abandoned; answers already in are cached")
    assert line.endswith(f"recorded in {tmp_path / 'b.failed.json'}")


def _read_until(stream: object, needle: str, deadline_s: float, seen: list[str]) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            return False
        seen.append(line)
        if needle in line:
            return True
    return False


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_two_ctrl_c_against_a_slow_server(tmp_path: Path) -> None:
    book = tmp_path / "harbour.txt"
    book.write_text("".join(f"Chapter {i}\n\n" + "".join(f"On day {i} hour {k} the storm came in and boat {k} "
                                                           "sought shelter. " for k in range(60))
                            + "\n\n" for i in range(1, 7)), encoding="utf-8")
    hook = SlowAfter(FAST_ANSWERS)
    env = {**os.environ, "OPENAI_API_KEY": "dummy", "BOOKSUM_CACHE_DIR": str(tmp_path / "cache"),
           "BOOKSUM_CONFIG": str(tmp_path / "none.toml"), "PYTHONPATH": str(REPO)}
    with FakeServer(reply=hook) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "booksum_app", "summarize", str(book), "--model", "openai:gpt-4o-mini",
             "--base-url", server.openai_base_url, "--chunk-size", "256", "--max-summary-len", "120",
             "--concurrency", "1", "--yes", "-o", str(tmp_path / "out" / "harbour")],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while hook.held < 1 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert hook.held >= 1, "the run reached the slow server"
            time.sleep(0.3)  # the answered calls are billed and cached
            seen: list[str] = []
            proc.send_signal(signal.SIGINT)
            assert _read_until(proc.stderr, "press Ctrl-C again to quit now", 5, seen), seen
            assert "waiting for 1 call in flight" in seen[-1] and len(seen) <= 3, "at once, no blank line first"
            second = time.monotonic()
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=10)
            took_s = time.monotonic() - second
            rest = proc.stderr.read()  # type: ignore[union-attr]
        finally:
            hook.release.set()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stderr.close()  # type: ignore[union-attr]
    assert rc == 130, rest
    assert took_s < 3.0, f"the second Ctrl-C took {took_s:.1f} s"
    assert "quit: 1 call in flight abandoned; answers already in are cached" in rest, rest
    failed = json.loads((tmp_path / "out" / "harbour.failed.json").read_text(encoding="utf-8"))
    assert failed["error"] == "interrupted (Ctrl-C)" and failed["totals"]["calls"] == FAST_ANSWERS
    assert failed["totals"]["cache_hits"] == 0
    assert failed["totals"]["spent_usd"] > 0
    assert "harbour.failed.json" in rest
