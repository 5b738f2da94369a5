"""A run killed with SIGKILL resumes from the call cache: no finished call is paid for twice.

The fake server runs in this process, so it counts every answer; the run under test is a
real subprocess, killed while its next calls are in flight, then run again to completion.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from booksum_app.llm.base import Request
from booksum_app.llm.cache import CallCache
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.fake_server import FakeServer

N_CALLS = 24
DONE_BEFORE_KILL = 8

CHILD = """
import sys
from pathlib import Path
from booksum_app.llm.base import Request
from booksum_app.llm.registry import LLMSettings, get_model

url, cache_dir, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
settings = LLMSettings(
    base_url=url, cache_dir=cache_dir, concurrency=2, config_path=cache_dir / "none.toml"
)
client = get_model("openai:gpt-4o", settings=settings, env={"OPENAI_API_KEY": "dummy"})
requests = [Request(prompt=f"Chapter {i}. Things happened.", max_tokens=50) for i in range(n)]
results = client.complete_many(requests)
print(client.n_cache_hits, len(results), flush=True)
"""


def run_child(script: Path, server: FakeServer, cache_dir: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.Popen(
        [sys.executable, str(script), server.openai_base_url, str(cache_dir), str(N_CALLS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(condition: object, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the child run")
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_run_resumes_without_repeating_finished_calls(tmp_path: Path) -> None:
    answered: list[str] = []
    lock = threading.Lock()
    gate = {"closed": True}
    release = threading.Event()

    def reply(request: Request) -> str:
        with lock:
            hold = gate["closed"] and len(answered) >= DONE_BEFORE_KILL
            if not hold:
                answered.append(request.prompt)
        if hold:  # the calls in flight when the run is killed never get an answer
            release.wait(30)
            raise ConnectionAbortedError("abandoned: its client was killed")
        return default_reply(request)

    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    cache_dir = tmp_path / "cache"
    with FakeServer(reply=reply) as server:
        child = run_child(script, server, cache_dir)
        try:
            probe = CallCache(cache_dir)
            wait_for(lambda: len(probe) >= DONE_BEFORE_KILL, 60)
            wait_for(lambda: server.call_count >= DONE_BEFORE_KILL + 2, 10)  # both slots held
            probe.close()
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL
        release.set()
        gate["closed"] = False

        rerun = run_child(script, server, cache_dir)
        out, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        hits, total = map(int, out.split())

    assert total == N_CALLS
    assert hits == DONE_BEFORE_KILL  # everything finished before the kill came from the cache
    assert server.completed_count == N_CALLS  # each call answered (and paid) exactly once
    assert sorted(answered) == sorted(f"Chapter {i}. Things happened." for i in range(N_CALLS))
