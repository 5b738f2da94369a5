"""The replica balancer (llm/providers/endpoints.py): bursts count once, probes before return, limits, prefix affinity.

Unit tests drive a :class:`Balancer` with a hand-moved clock and probes run on the spot; the
last tests put it in front of real servers on localhost, one of them hung (accepts, never answers).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from booksum_app.llm.base import Request
from booksum_app.llm.providers.endpoints import Balancer, Endpoint, http_probe
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_server import FakeServer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def balancer(n: int = 2, *, probe: Callable[[str], bool] | None = None, limit: int | None = None,
             clock: Clock | None = None) -> Balancer[str]:
    endpoints = [Endpoint(f"http://replica-{i}/v1", f"sender-{i}") for i in range(n)]
    return Balancer(endpoints, limit=limit, probe=probe, run_probe=lambda work: work(), clock=clock or Clock())


def test_calls_go_to_the_least_busy_replica_ties_to_the_first() -> None:
    b = balancer(3)
    tickets = [b.acquire() for _ in range(6)]
    assert [t.endpoint.sender for t in tickets] == ["sender-0", "sender-1", "sender-2"] * 2
    b.release(tickets[1], failed=False)
    assert b.acquire().endpoint.sender == "sender-1"


def test_a_burst_of_failures_counts_once() -> None:
    """Eight calls in flight on a replica that stops answering fail together: one failure, a 5 s pause."""
    clock = Clock()
    b = balancer(2, clock=clock)
    stuck = [b.acquire() for _ in range(16)]
    on_first = [t for t in stuck if t.endpoint is b.endpoints[0]]
    assert len(on_first) == 8
    for ticket in on_first:
        b.release(ticket, failed=True)
    first = b.endpoints[0]
    assert first.failures == 1 and first.down_until == clock.now + Balancer.DOWN_FIRST_S
    # a call sent after the burst that fails again counts: the pause doubles
    clock.now = first.down_until
    again = b.acquire()
    assert again.endpoint is first
    b.release(again, failed=True)
    assert first.failures == 2 and first.down_until == clock.now + 2 * Balancer.DOWN_FIRST_S


def test_a_success_sent_after_the_burst_puts_the_replica_back() -> None:
    clock = Clock()
    b = balancer(2, clock=clock)
    old = [b.acquire(), b.acquire()]  # one on each
    b.release(old[0], failed=True)
    late_old_success = old[1]
    b.release(late_old_success, failed=False)  # the other replica: unaffected
    first = b.endpoints[0]
    assert first.down_until > clock.now
    clock.now = first.down_until
    fresh = b.acquire()
    assert fresh.endpoint is first
    b.release(fresh, failed=False)
    assert first.failures == 0 and first.down_until == 0.0


def test_a_replica_comes_back_only_after_its_probe_passes() -> None:
    clock = Clock()
    answers = {"http://replica-0/v1": False}
    probed: list[str] = []

    def probe(url: str) -> bool:
        probed.append(url)
        return answers.get(url, True)

    b = balancer(2, probe=probe, clock=clock)
    first = b.endpoints[0]
    ticket = b.acquire()
    assert ticket.endpoint is first
    b.release(ticket, failed=True)
    clock.now = first.down_until  # pause over: the next pick probes it; it fails; no call goes there
    assert all(b.acquire().endpoint is b.endpoints[1] for _ in range(3))
    assert probed == ["http://replica-0/v1"] and first.failures == 2, "a failed probe counts and doubles the pause"
    answers["http://replica-0/v1"] = True
    clock.now = first.down_until
    picks = [b.acquire().endpoint for _ in range(4)]
    assert probed == ["http://replica-0/v1"] * 2
    # no call waits on a probe: the one that starts it goes elsewhere; after it passes, the replica is back
    assert picks == [b.endpoints[1], first, first, first]


def test_every_replica_out_still_sends_to_the_first_due_back() -> None:
    clock = Clock()
    b = balancer(2, clock=clock)
    a, c = b.acquire(), b.acquire()
    b.release(c, failed=True)
    clock.now += 1
    b.release(a, failed=True)
    assert b.acquire().endpoint is b.endpoints[1], "the call layer's retries need somewhere to go"


def test_the_in_flight_limit_holds_calls_until_a_slot_frees() -> None:
    b = balancer(2, limit=2)
    held = [b.acquire() for _ in range(4)]
    got: list[str] = []
    started = threading.Event()

    def fifth() -> None:
        started.set()
        got.append(b.acquire().endpoint.sender)

    worker = threading.Thread(target=fifth)
    worker.start()
    started.wait()
    assert not got  # both replicas hold 2: it waits
    b.release(held[1], failed=None)  # a 429 frees the slot, says nothing of health
    worker.join(timeout=30)
    assert got == ["sender-1"] and b.endpoints[1].failures == 0
    assert max(e.in_flight for e in b.endpoints) <= 2


def test_a_prefix_sticks_to_a_warm_replica_and_each_cold_one_warms_once() -> None:
    b = balancer(2)
    prefix = 7
    warm_up = b.acquire(prefix)
    assert warm_up.warming and warm_up.endpoint is b.endpoints[0]
    # while the first replica warms, the second gets the prefix's first call there (its own warm-up)
    second = b.acquire(prefix)
    assert second.warming and second.endpoint is b.endpoints[1]
    b.release(warm_up, failed=False)
    b.release(second, failed=False)
    followers = [b.acquire(prefix) for _ in range(6)]
    assert not any(t.warming for t in followers), "both replicas hold the prefix: no more warm-ups"
    assert {t.endpoint.sender for t in followers} == {"sender-0", "sender-1"}


def test_a_prefix_waits_for_its_warm_up_rather_than_missing_the_cache() -> None:
    b = balancer(1 + 1)
    first = b.acquire(5)
    second = b.acquire(5)
    assert {first.endpoint.sender, second.endpoint.sender} == {"sender-0", "sender-1"}
    got: list[bool] = []
    started = threading.Event()

    def third() -> None:
        started.set()
        ticket = b.acquire(5)
        got.append(ticket.warming)

    worker = threading.Thread(target=third)
    worker.start()
    started.wait()
    assert not got, "both replicas are writing the prefix: the third call waits for one"
    b.release(first, failed=False)
    worker.join(timeout=30)
    assert got == [False]


def test_a_busy_warm_replica_hands_the_prefix_to_a_cold_one() -> None:
    b = balancer(2)
    first = b.acquire(9)
    b.release(first, failed=False)  # replica 0 holds prefix 9
    busy = [b.acquire(9) for _ in range(Balancer.WARM_SLACK + 1)]
    assert all(t.endpoint is b.endpoints[0] for t in busy)
    spill = b.acquire(9)
    assert spill.endpoint is b.endpoints[1] and spill.warming


def _answer_on_second(b: Balancer[str], clock: Clock, n: int) -> None:
    """``n`` calls answered by the second replica in 1 s each (the first holds a call and is least busy after)."""
    for _ in range(n):
        ticket = b.acquire()
        assert ticket.endpoint is b.endpoints[1]
        clock.now += 1
        b.release(ticket, failed=False)


def test_a_silent_replica_is_probed_before_its_calls_time_out() -> None:
    """A frozen replica: nothing answered since its oldest call, long past the usual latency: probed, out."""
    clock = Clock()
    probed: list[str] = []

    def probe(url: str) -> bool:
        probed.append(url)
        return False  # the frozen process does not answer the probe either

    b = balancer(2, probe=probe, clock=clock)
    stuck = b.acquire()
    assert stuck.endpoint is b.endpoints[0]
    _answer_on_second(b, clock, 5)
    assert b.latency_s == pytest.approx(1.0) and not probed, "5 s of silence is within the usual"
    clock.now = stuck.sent_at + Balancer.STALL_MIN_S + 0.5
    assert b.acquire().endpoint is b.endpoints[1]
    assert probed == ["http://replica-0/v1"] and b.endpoints[0].failures == 1
    b.release(stuck, failed=True)  # its timeout, much later: the same burst
    assert b.endpoints[0].failures == 1
    assert all(b.acquire().endpoint is b.endpoints[1] for _ in range(4))


def test_a_slow_replica_that_passes_the_probe_keeps_its_calls() -> None:
    clock = Clock()
    b = balancer(2, probe=lambda url: True, clock=clock)
    slow = b.acquire()
    _answer_on_second(b, clock, 5)
    clock.now = slow.sent_at + Balancer.STALL_MIN_S + 0.5
    assert b.acquire().endpoint is b.endpoints[1]  # the probe runs as this call leaves
    first = b.endpoints[0]
    assert first.checked and first.failures == 0
    assert b.acquire().endpoint is first, "back, and not taken out again for the same old call"


# ---- real servers on localhost ----------------------------------------------------------------


class HungServer:
    """Accepts connections, reads the request line, never answers (a SIGSTOPped replica)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.lines: list[str] = []
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            line = conn.makefile("rb").readline().decode("latin-1").strip()
        except OSError:
            return
        with self.lock:
            self.lines.append(line)

    def posts(self) -> int:
        with self.lock:
            return sum(line.startswith("POST") for line in self.lines)

    def close(self) -> None:
        self.closed.set()
        self.sock.close()
        with self.lock:
            for conn in self.conns:
                conn.close()


@pytest.fixture()
def hung() -> Iterator[HungServer]:
    server = HungServer()
    yield server
    server.close()


def test_http_probe_tells_a_server_that_answers_from_a_hung_or_dead_one(hung: HungServer) -> None:
    with FakeServer() as alive:  # /models is not served there (501): the server still answers
        assert http_probe(2.0)(alive.openai_base_url)
    assert not http_probe(0.3)(hung.url)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    assert not http_probe(0.3)(dead)


def test_a_hung_replica_costs_one_timeout_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               hung: HungServer) -> None:
    """Calls stuck on a hung replica time out together, count as one failure, and no real call goes there again."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("BOOKSUM_ENDPOINT_MAX_IN_FLIGHT", "3")
    # the live replica answers in 0.1 s, so the first burst fills both replicas before any answer comes back
    with FakeServer(latency_s=0.1) as alive:
        client = get_model("openai:gpt-4o-mini", settings=LLMSettings(
            base_url=f"{hung.url},{alive.openai_base_url}", cache_dir=tmp_path, concurrency=6, timeout_s=2.0))
        client._sleep = lambda seconds: None  # retries without waiting
        requests = [Request(prompt=f"Summarize part {i} of the story.", max_tokens=20) for i in range(40)]
        answers = client.complete_many(requests)
        backend = client.backend
        stuck = backend._endpoints[0]  # type: ignore[attr-defined]
        client.close()
        assert alive.call_count == 40, "every request answered there once: the three stuck ones were retried there"
    assert len(answers) == 40 and all(a.text for a in answers)
    # how much of the first burst reaches the hung replica depends on thread timing (on a loaded machine the
    # live replica may answer before the burst is out); that nothing follows it does not
    assert 1 <= hung.posts() <= 3, "only the first burst (the per-replica limit) was ever sent to the hung replica"
    assert stuck.failures == 1, "three calls failing at one timeout are one failure"


def test_each_replica_writes_a_shared_prefix_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent calls on one long prefix over two caching replicas: one uncached call per replica, no more."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    prefix = " ".join(f"Instruction {i}: judge each sentence of the summary for confusion." for i in range(160))
    requests = [Request(prompt=f"Sentence {i}: the crew sailed on.", max_tokens=20, shared_prefix=prefix)
                for i in range(24)]
    with FakeServer(prompt_caching=True, latency_s=0.05) as a, FakeServer(prompt_caching=True, latency_s=0.05) as b:
        client = get_model("openai:gpt-4o-mini", settings=LLMSettings(
            base_url=f"{a.openai_base_url},{b.openai_base_url}", cache_dir=tmp_path, concurrency=8))
        answers = client.complete_many(requests)
        client.close()
        counts = (a.call_count, b.call_count)
    uncached = [r for r in answers if r.usage.cached_input_tokens == 0]
    assert answers[0].usage.input_tokens > 1024, "long enough for the providers' prefix cache"
    assert len(uncached) == 2 and min(counts) >= 1, f"one warm-up per replica: {len(uncached)} misses, {counts}"


# ---- routing by measured latency and load (issue 34) --------------------------------------------------------


def simulate(latencies: list[float], *, slots: int, calls: int, per_prefix: int = 0,
             capacity: int = 8) -> tuple[list[int], float, int]:
    """``calls`` calls through a balancer, ``slots`` at once, on replicas that each run
    ``capacity`` calls at a time (the rest queue, as a server's batch does) for their latency; a
    hand-moved clock makes the run exact. ``per_prefix``: consecutive calls sharing a prefix
    (the judge's calls on one summary). Returns the calls per replica, when the last was
    answered, and the calls that were a replica's first on their prefix (cache writes)."""
    import heapq

    clock = Clock()
    start = clock.now
    b = balancer(len(latencies), clock=clock)
    free_at = [[start] * capacity for _ in latencies]  # per replica, when each of its slots frees
    pending: list[tuple[float, int, object]] = []
    sent = 0
    cold = 0

    def send() -> None:
        nonlocal sent, cold
        ticket = b.acquire(sent // per_prefix if per_prefix else None)
        cold += ticket.warming
        index = b.endpoints.index(ticket.endpoint)
        begin = max(clock.now, heapq.heappop(free_at[index]))
        heapq.heappush(free_at[index], begin + latencies[index])
        heapq.heappush(pending, (begin + latencies[index], sent, ticket))
        sent += 1

    for _ in range(min(slots, calls)):
        send()
    while pending:
        clock.now, _, ticket = heapq.heappop(pending)
        b.release(ticket, failed=False)  # type: ignore[arg-type]
        if sent < calls:
            send()
    return [e.sent for e in b.endpoints], clock.now - start, cold


def test_one_call_at_a_time_alternates_between_equal_replicas() -> None:
    counts, _, _ = simulate([1.0, 1.0], slots=1, calls=26)
    assert counts == [13, 13], "one call at a time (inc, a small judge) used only the first URL"


def test_a_slower_replica_gets_fewer_calls_and_adds_throughput() -> None:
    _, one_time, _ = simulate([1.0], slots=32, calls=960)
    counts, time_two, _ = simulate([1.0, 3.0], slots=32, calls=960)
    share = counts[1] / sum(counts)
    assert counts == [715, 245], f"budget: a 3x slower replica took {share:.0%} of the calls"
    assert one_time / time_two >= 1.29, "budget: a second, slower replica adds its third of the throughput"


def test_a_replica_that_is_out_is_probed_on_a_schedule_and_comes_back_at_once() -> None:
    # both servers restarted: one was out for a 60 s pause and got nothing for 139 s; now a probe
    # every REPROBE_S brings it back as soon as it answers, whatever pause its failures earned
    clock = Clock()
    up = {"http://replica-0/v1": False}
    b = balancer(2, probe=lambda url: up.get(url, True), clock=clock)
    first = b.endpoints[0]
    ticket = b.acquire()
    assert ticket.endpoint is first
    b.release(ticket, failed=True)  # its server went down
    for _ in range(5):  # each scheduled probe fails: the pause doubles to 60 s, the probes stay 2 s apart
        assert first.next_probe - clock.now <= Balancer.REPROBE_S
        clock.now = first.next_probe
        b.release(b.acquire(), failed=False)  # a pick starts the due probe
    assert first.down_until - clock.now > 30, "the pause doubled"
    up["http://replica-0/v1"] = True
    clock.now = first.next_probe
    assert first.next_probe - first.failed_at <= Balancer.REPROBE_S
    b.release(b.acquire(), failed=False)  # this pick runs the probe; it passes
    assert first.checked and first.down_until <= clock.now
    assert any(b.acquire().endpoint is first for _ in range(3)), "back at once, not after its pause"


def test_a_replica_left_idle_is_measured_again() -> None:
    # one slow answer made replica 1 look 50x slower: one call at a time never went there again
    clock = Clock()
    b = balancer(2, clock=clock)
    fast, slow = b.endpoints
    for endpoint, latency in ((fast, 0.1), (slow, 5.0)):
        ticket = b.acquire()
        while ticket.endpoint is not endpoint:
            b.release(ticket, failed=False)
            ticket = b.acquire()
        clock.now += latency
        b.release(ticket, failed=False)
    picks = []
    for _ in range(100):
        ticket = b.acquire()
        picks.append(ticket.endpoint)
        clock.now += 0.1
        b.release(ticket, failed=False)
    assert slow in picks[: int(Balancer.REFRESH_S / 0.1) + 1], "re-measured within REFRESH_S"


def test_each_replica_has_its_own_limit_and_its_own_refusals() -> None:
    from booksum_app.llm.controller import LatencyController

    clock = Clock()
    endpoints = [Endpoint(f"http://replica-{i}/v1", f"sender-{i}") for i in range(2)]
    b = Balancer(endpoints, probe=lambda url: True, run_probe=lambda work: work(), clock=clock,
                 control=lambda: LatencyController(initial=4, maximum=64, clock=clock))
    tickets = [b.try_acquire() for _ in range(8)]
    assert all(t is not None for t in tickets) and b.try_acquire() is None, "4 each, then wait"
    refused = next(t for t in tickets if t is not None and t.endpoint is endpoints[0])
    b.release(refused, failed=None, overloaded=True)  # a 429 from replica 0: its limit halves, not replica 1's
    control0, control1 = endpoints[0].control, endpoints[1].control
    assert control0 is not None and control1 is not None
    assert (control0.limit, control1.limit) == (2, 4)
    report = b.report()
    assert report["http://replica-0/v1"]["cuts"]["rate_limited"] == 1
    assert report["http://replica-1/v1"]["cuts"]["rate_limited"] == 0
