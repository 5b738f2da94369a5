"""Pool workers end with their parent, even when the parent is killed with SIGKILL; background
workers also run below their parent's priority."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from booksum_app.runners.workers import BACKGROUND_NICENESS

PARENT = """
import multiprocessing, os, sys
from concurrent.futures import ProcessPoolExecutor
from booksum_app.runners.workers import background_worker, exit_with_parent

if __name__ == "__main__":
    initializer = {"watched": exit_with_parent, "background": background_worker}.get(sys.argv[1])
    kwargs = {"initializer": initializer, "initargs": (os.getpid(), 0.1)} if initializer else {}
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"), **kwargs)
    print(pool.submit(os.getpid).result(), pool.submit(os.nice, 0).result() - os.nice(0), flush=True)
    os.kill(os.getpid(), 9)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


def _worker_of_a_killed_parent(tmp_path: Path, mode: str) -> tuple[int, int]:
    """The worker's pid and its niceness above its parent's, read before the parent is killed."""
    script = tmp_path / "parent.py"
    script.write_text(PARENT, encoding="utf-8")
    # read the worker's pid, not to EOF: an orphaned worker keeps the parent's stdout open
    with subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as parent:
        assert parent.stdout is not None
        worker, niceness = map(int, parent.stdout.readline().split())
        assert parent.wait(timeout=60) == -signal.SIGKILL
        return worker, niceness


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="re-parenting as Linux does it")
def test_a_watched_worker_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    worker, niceness = _worker_of_a_killed_parent(tmp_path, "watched")
    assert niceness == 0
    assert _gone_within(worker, 10), "the worker outlived its killed parent"


@pytest.mark.skipif(sys.platform != "linux", reason="re-parenting as Linux does it")
def test_without_the_watcher_the_worker_would_be_orphaned(tmp_path: Path) -> None:
    worker, _ = _worker_of_a_killed_parent(tmp_path, "bare")
    try:
        assert not _gone_within(worker, 2), "the bug the watcher fixes is no longer there; drop the watcher?"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)


@pytest.mark.skipif(sys.platform != "linux", reason="re-parenting as Linux does it")
def test_a_background_worker_runs_below_its_parent_and_ends_with_it(tmp_path: Path) -> None:
    worker, niceness = _worker_of_a_killed_parent(tmp_path, "background")
    assert niceness == BACKGROUND_NICENESS
    assert _gone_within(worker, 10), "the background worker outlived its killed parent"
