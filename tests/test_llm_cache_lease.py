"""Leases in the call cache: runs sharing a cache pay each request once; dead owners are taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from booksum_app.errors import AuthError, ModelError
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.llm.cache import CallCache, Lease
from booksum_app.llm.calls import Client
from booksum_app.testing.fake_server import FakeServer

N_PROMPTS = 24
DONE = Completion("A summary.", "stop", Usage(12, 3), model="m", latency_s=0.1)

# One run: wait for the go file, then answer every prompt through the real call layer.
CHILD = """
import sys, time
from pathlib import Path
from booksum_app.llm.base import Request
from booksum_app.llm.registry import LLMSettings, get_model

url, cache_dir, n, ready, go = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5])
settings = LLMSettings(
    base_url=url, cache_dir=cache_dir, concurrency=4, config_path=cache_dir / "none.toml"
)
client = get_model("openai:gpt-4o", settings=settings, env={"OPENAI_API_KEY": "dummy"})
requests = [Request(prompt=f"Chapter {i}. Things happened.", max_tokens=50) for i in range(n)]
ready.touch()
while not go.exists():
    time.sleep(0.005)
results = client.complete_many(requests)
assert [r.text for r in results] and all(r.text.strip() for r in results)
print(client.n_cache_hits, len(results), flush=True)
client.close()
"""

# Take a lease, say so, then hang until killed.
HOLDER = """
import sys, time
from booksum_app.llm.cache import CallCache
lease = CallCache(sys.argv[1]).claim(sys.argv[2])
print(type(lease).__name__, flush=True)
time.sleep(120)
"""


def leases(cache_dir: Path) -> list[tuple[str, str, int, str, float]]:
    db = sqlite3.connect(cache_dir / "calls.sqlite3")
    try:
        return list(db.execute("SELECT key, token, pid, host, expires FROM leases"))
    finally:
        db.close()


def plant_lease(
    cache_dir: Path, key: str, *, pid: int, expires: float, host: str | None = None
) -> None:
    """Write a lease row as another process would have left it."""
    db = sqlite3.connect(cache_dir / "calls.sqlite3")
    with db:
        db.execute(
            "INSERT OR REPLACE INTO leases (key, token, pid, host, expires) VALUES (?,?,?,?,?)",
            (key, "someone-else", pid, host or socket.gethostname(), expires),
        )
    db.close()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")
def test_two_runs_started_together_pay_each_request_once(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    cache_dir, go = tmp_path / "cache", tmp_path / "go"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with FakeServer(latency_s=0.1) as server:
        readies = [tmp_path / f"ready-{n}" for n in range(2)]
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(script),
                    server.openai_base_url,
                    str(cache_dir),
                    str(N_PROMPTS),
                    str(ready),
                    str(go),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for ready in readies
        ]
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in readies) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()  # both runs start sending at the same moment
        outputs = [child.communicate(timeout=120) for child in children]
        assert [c.returncode for c in children] == [0, 0], [err for _, err in outputs]
        prompts = [json.dumps(r.payload["messages"], sort_keys=True) for r in server.requests]
    assert len(set(prompts)) == N_PROMPTS
    assert len(prompts) == N_PROMPTS, "a request in flight in one run was sent again by the other"
    hits = [int(out.split()[0]) for out, _ in outputs]
    assert sum(hits) == N_PROMPTS  # every answer the other run paid for came from the cache
    assert leases(cache_dir) == []


def test_a_waiter_gets_the_answer_the_owner_commits(tmp_path: Path) -> None:
    owner, waiter = CallCache(tmp_path), CallCache(tmp_path)
    lease = owner.claim("k")
    assert isinstance(lease, Lease)
    assert waiter.try_claim("k") is None  # held by a live owner
    got: list[Completion | Lease] = []
    thread = threading.Thread(target=lambda: got.append(waiter.claim("k")))
    thread.start()
    time.sleep(0.2)
    assert thread.is_alive(), "the waiter must wait while the lease is held"
    owner.put("k", DONE, lease=lease)
    thread.join(timeout=5)
    assert len(got) == 1 and isinstance(got[0], Completion) and got[0].cache_hit
    assert leases(tmp_path) == []


@pytest.mark.parametrize("case", ["dead pid", "expired"])
def test_a_stale_lease_is_taken_over_at_once(tmp_path: Path, case: str) -> None:
    CallCache(tmp_path).close()
    if case == "dead pid":  # killed owner, expiry still far ahead
        plant_lease(tmp_path, "k", pid=dead_pid(), expires=time.time() + 3600)
    else:  # live process (ours' parent) that stopped renewing
        plant_lease(tmp_path, "k", pid=os.getppid(), expires=time.time() - 1)
    cache = CallCache(tmp_path)
    lease = cache.try_claim("k")  # never waits: a stale lease is taken over at once, not after a poll
    assert isinstance(lease, Lease)
    assert [row[1] for row in leases(tmp_path)] == [lease.token]
    cache.close()


def test_a_live_lease_elsewhere_is_respected(tmp_path: Path) -> None:
    CallCache(tmp_path).close()
    plant_lease(tmp_path, "k", pid=os.getppid(), expires=time.time() + 60)
    plant_lease(tmp_path, "k2", pid=dead_pid(), expires=time.time() + 60, host="another-host")
    cache = CallCache(tmp_path)
    assert cache.try_claim("k") is None
    assert cache.try_claim("k2") is None  # we cannot see another host's pids: only expiry tells
    cache.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_killed_owner_is_taken_over_quickly(tmp_path: Path) -> None:
    CallCache(tmp_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "k"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "Lease"
        cache = CallCache(tmp_path)
        assert cache.try_claim("k") is None  # alive and renewing
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    assert isinstance(cache.try_claim("k"), Lease)  # taken over at once: its pid is dead
    cache.close()


def test_leases_are_renewed_while_held(tmp_path: Path) -> None:
    cache = CallCache(tmp_path, lease_ttl_s=0.3)
    lease = cache.claim("k")
    assert isinstance(lease, Lease)
    time.sleep(1.0)  # three TTLs: without renewal the lease would have expired
    (row,) = leases(tmp_path)
    assert row[4] > time.time()
    assert CallCache(tmp_path).try_claim("k") is None
    cache.close()
    assert leases(tmp_path) == []  # close releases what is still held


class _Failing(BackendBase):
    """A backend whose first call is refused (not retried, and not a refusal every call would meet), then answers."""

    kind = "fake"
    info = ModelInfo(name="fake-model", context_window=10_000, tokenizer="estimate")

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        if self.calls == 1:
            raise ModelError("refused")
        return DONE


def test_a_failed_call_releases_its_lease(tmp_path: Path) -> None:
    backend = _Failing()
    client = Client(backend, cache=CallCache(tmp_path))
    request = Request(prompt="Summarize: text.", max_tokens=10)
    with pytest.raises(ModelError):
        client.complete(request)
    assert leases(tmp_path) == []
    other = CallCache(tmp_path)
    assert isinstance(other.try_claim(client._key(request)), Lease)  # nobody holds it: no wait
    other.close()
    assert client.complete(request).text == "A summary."
    client.close()


def test_a_waiter_takes_over_when_the_owner_fails(tmp_path: Path) -> None:
    owner, waiter = CallCache(tmp_path), CallCache(tmp_path)
    lease = owner.claim("k")
    assert isinstance(lease, Lease)
    got: list[Completion | Lease] = []
    thread = threading.Thread(target=lambda: got.append(waiter.claim("k")))
    thread.start()
    time.sleep(0.1)
    owner.release(lease)
    thread.join(timeout=5)
    assert len(got) == 1 and isinstance(got[0], Lease)


# ---- issue 9 item 17: an answer that has arrived is committed before anything else --------


class _Refused(RuntimeError):
    """Raised by a progress hook standing in for a crash between answers."""


@pytest.mark.parametrize("batch", [False, True])
def test_answers_are_committed_before_they_are_reported(tmp_path: Path, batch: bool) -> None:
    from test_llm_calls import FakeBatchBackend

    from booksum_app.testing.fake_backend import FakeBackend

    backend = FakeBatchBackend() if batch else FakeBackend()
    requests = [Request(prompt=f"Chapter {i}. Things happened.", max_tokens=20) for i in range(4)]
    seen: list[int] = []

    def on_call(record: object) -> None:  # the first report crashes the run
        seen.append(len(CallCache(tmp_path)))
        raise _Refused("progress display crashed")

    client = Client(backend, cache=CallCache(tmp_path), concurrency=1, on_call=on_call)
    with pytest.raises(_Refused):
        client.complete_many(requests)
    client.close()
    # when the first answer was reported, it (and the rest of a batch that arrived with it) was
    # already in the cache (one at a time, the next call may have been answered meanwhile: its
    # slot frees when the first call's attempt ends, before that call is reported)
    assert seen[0] == len(requests) if batch else seen[0] >= 1
    assert len(CallCache(tmp_path)) >= seen[0]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_during_hier_repays_at_most_the_calls_in_flight(tmp_path: Path) -> None:
    from test_compare import write_book

    concurrency = 8
    book = write_book(tmp_path / "book.txt", seed=3, chapters=8, paragraphs=10)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env = {**env, "OPENAI_API_KEY": "dummy", "BOOKSUM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer(latency_s=0.2) as server:
        argv = [
            sys.executable, "-m", "booksum_app", "summarize", str(book), "--strategy", "hier",
            "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
            "--chunk-size", "256", "--max-summary-len", "120",
            "--concurrency", str(concurrency), "--output", str(tmp_path / "summary"),
        ]  # fmt: skip
        run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while server.completed_count < 12 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        assert run.returncode == -signal.SIGKILL, "killed mid-run"
        rerun = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert rerun.returncode == 0, rerun.stderr
        payloads = [json.dumps(r.payload, sort_keys=True) for r in server.requests]
    repaid = len(payloads) - len(set(payloads))
    assert 0 <= repaid <= concurrency  # only answers that had not arrived when it died


@pytest.mark.parametrize("first_fails", [False, True])
def test_a_batch_waits_for_requests_another_run_has_in_flight(
    tmp_path: Path, first_fails: bool
) -> None:
    from test_llm_calls import FakeBatchBackend

    started, release = threading.Event(), threading.Event()

    class Slow(FakeBatchBackend):
        def complete_batch(self, requests: object) -> list[Completion]:
            started.set()
            release.wait(10)
            if first_fails:
                raise AuthError("rejected")
            return super().complete_batch(requests)  # type: ignore[arg-type]

    requests = [Request(prompt=f"Chapter {i}. Things happened.", max_tokens=20) for i in range(4)]
    first, second = Slow(), FakeBatchBackend()
    errors: list[BaseException] = []

    def run_first() -> None:
        try:
            Client(first, cache=CallCache(tmp_path)).complete_many(requests)
        except AuthError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run_first)
    thread.start()
    assert started.wait(10)
    got: list[list[Completion]] = []
    waiter = threading.Thread(
        target=lambda: got.append(Client(second, cache=CallCache(tmp_path)).complete_many(requests))
    )
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and second.call_count == 0, "the second run must wait, not send"
    release.set()
    thread.join(10)
    waiter.join(10)
    assert len(got) == 1 and [c.text for c in got[0]] == [r.prompt for r in requests]
    if first_fails:  # the first run's leases were released: the second made the calls itself
        assert len(errors) == 1 and second.call_count == len(requests)
    else:
        assert second.call_count == 0 and all(c.cache_hit for c in got[0])
    assert leases(tmp_path) == []


def test_leases_expired_long_ago_are_pruned_on_open(tmp_path: Path) -> None:
    CallCache(tmp_path).close()
    plant_lease(tmp_path, "old", pid=dead_pid(), expires=time.time() - 7200)
    plant_lease(tmp_path, "recent", pid=dead_pid(), expires=time.time() - 60)
    CallCache(tmp_path).close()
    assert [row[0] for row in leases(tmp_path)] == ["recent"]
