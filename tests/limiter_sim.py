"""A discrete-event simulation of calls against servers: a virtual clock, no sleeps, no threads.

It drives the real classes: :class:`~booksum_app.llm.limiter.AdaptiveLimit` (one server: its
send gate is only entered when it would not wait) and, for several replicas,
:class:`~booksum_app.llm.providers.endpoints.Balancer` with each replica's
:class:`~booksum_app.llm.controller.LatencyController` behind the model's limit, as the
OpenAI-compatible backend builds them. Servers are FIFO queues with ``slots`` served at once; a
server may slow down over time, refuse past a number of calls (429), or be down for a while.
The client may be busy (answers read late for reasons the calls in flight do not cause). A call
still unanswered at ``deadline_s`` is given up and retried; the server still generates it
(a wasted generation). Used by tests/test_limiter_sim.py; run it as a script for the figures.
"""

from __future__ import annotations

import heapq
import inspect
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from booksum_app.llm.limiter import AdaptiveLimit
from booksum_app.llm.providers.endpoints import Balancer, Endpoint

Outcome = str  # "ok", "429", "refused", "timeout"


class Sim:
    """Events on a virtual clock, run in time order (ties in the order they were scheduled)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    def clock(self) -> float:
        return self.now

    def at(self, t: float, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, fn))

    def run(self, *, until: float = math.inf, done: Callable[[], bool] = lambda: False) -> None:
        while self._events and not done():
            t, _, fn = heapq.heappop(self._events)
            if t > until:
                break
            self.now = t
            fn()


@dataclass
class Server:
    """A FIFO server: ``slots`` calls at once, the rest queue; ``service_s(t)`` for a call started at t."""

    slots: int = 1 << 30
    service_s: Callable[[float], float] = lambda t: 1.0
    reject_above: int | None = None  # a 429 for a call arriving with this many in the server
    down: tuple[float, float] | None = None  # connections refused in [start, end)
    busy: int = 0
    in_system: int = 0
    generated: int = 0
    wasted: int = 0  # generations finished for a client that had given up
    busy_area: float = 0.0  # slot-seconds busy
    queue: deque[tuple[Callable[[Outcome], None], list[bool]]] = field(default_factory=deque)
    _last: float = 0.0

    def alive(self, t: float) -> bool:
        return self.down is None or not self.down[0] <= t < self.down[1]

    def _account(self, now: float) -> None:
        self.busy_area += self.busy * (now - self._last)
        self._last = now

    def arrive(self, sim: Sim, reply: Callable[[Outcome], None], gave_up: list[bool]) -> None:
        if not self.alive(sim.now):
            sim.at(sim.now + 0.001, lambda: reply("refused"))
            return
        if self.reject_above is not None and self.in_system >= self.reject_above:
            sim.at(sim.now + 0.01, lambda: reply("429"))
            return
        self.in_system += 1
        if self.busy < self.slots:
            self._start(sim, reply, gave_up)
        else:
            self.queue.append((reply, gave_up))

    def _start(self, sim: Sim, reply: Callable[[Outcome], None], gave_up: list[bool]) -> None:
        self._account(sim.now)
        self.busy += 1

        def finish() -> None:
            self._account(sim.now)
            self.busy -= 1
            self.in_system -= 1
            self.generated += 1
            if gave_up[0]:
                self.wasted += 1
            else:
                reply("ok")
            if self.queue:
                self._start(sim, *self.queue.popleft())

        sim.at(sim.now + self.service_s(sim.now), finish)


@dataclass
class Result:
    """What a run did: when it ended, calls in flight over time, the servers' counts."""

    finished_s: float
    answered: int
    trace: list[tuple[float, int]]  # (t, calls on the wire from t on)
    servers: list[Server]
    refused: int
    timeouts: int
    first_after: dict[int, float]  # replica index -> first call sent to it after ``watch_from``
    report: dict[str, Any]

    def in_flight_quantile(self, q: float, start_s: float = 0.0, end_s: float | None = None) -> float:
        """The time-weighted ``q`` quantile of calls on the wire over [start_s, end_s)."""
        end = self.finished_s if end_s is None else end_s
        spans: dict[int, float] = {}
        for (t, n), (t_next, _) in zip(self.trace, [*self.trace[1:], (end, 0)], strict=True):
            lo, hi = max(t, start_s), min(t_next, end)
            if hi > lo:
                spans[n] = spans.get(n, 0.0) + hi - lo
        total, seen = sum(spans.values()), 0.0
        for n in sorted(spans):
            seen += spans[n]
            if seen >= q * total:
                return float(n)
        return 0.0

    def mean_in_flight(self, start_s: float = 0.0, end_s: float | None = None) -> float:
        end = self.finished_s if end_s is None else end_s
        area = 0.0
        for (t, n), (t_next, _) in zip(self.trace, [*self.trace[1:], (end, 0)], strict=True):
            lo, hi = max(t, start_s), min(t_next, end)
            area += n * max(0.0, hi - lo)
        return area / max(1e-9, end - start_s)

    def slots_used(self) -> float:
        """Busy slot-seconds over slot-seconds available until the run ended (finite-slot servers)."""
        return sum(s.busy_area for s in self.servers) / (sum(s.slots for s in self.servers) * self.finished_s)

    def wasted_share(self) -> float:
        generated = sum(s.generated for s in self.servers)
        return sum(s.wasted for s in self.servers) / max(1, generated)


def run(servers: list[Server], *, calls: int, initial: int, maximum: int, deadline_s: float | None = None,
        client_delay_s: Callable[[float, int], float] = lambda t, n: 0.0, retry_s: float = 0.5,
        watch_from: float = math.inf, until: float = 10_000.0) -> Result:
    """``calls`` calls, all wanted at once (a book's leaves), through the real limit (and balancer)."""
    sim = Sim()
    replicas = len(servers) > 1
    own = replicas and "latency" in inspect.signature(AdaptiveLimit).parameters  # replicas read their own latency
    start = min(maximum, initial * len(servers)) if own else initial  # as the call layer starts several replicas
    limit = AdaptiveLimit(initial=start, maximum=maximum, clock=sim.clock, deadline_s=deadline_s,
                          **({"latency": False} if own else {}))
    balancer: Balancer[int] | None = None
    if replicas:
        urls = [f"http://replica{i}" for i in range(len(servers))]
        kwargs: dict[str, Any] = {}
        if "control" in inspect.signature(Balancer).parameters:
            from booksum_app.llm.controller import LatencyController

            # as the OpenAI-compatible backend builds them: 16 each, or their share of --concurrency N
            start = max(16, -(-initial // len(servers)) if initial == maximum else 0)
            kwargs["control"] = lambda: LatencyController(initial=start, maximum=512, clock=sim.clock,
                                                          deadline_s=deadline_s)
        balancer = Balancer([Endpoint(url, i) for i, url in enumerate(urls)], clock=sim.clock,
                            probe=lambda url: servers[int(url.removeprefix("http://replica"))].alive(sim.now),
                            run_probe=lambda work: sim.at(sim.now + 0.05, work), **kwargs)
    state = {"pending": calls, "answered": 0, "refused": 0, "timeouts": 0, "sent": 0}
    trace: list[tuple[float, int]] = [(0.0, 0)]
    first_after: dict[int, float] = {}

    def note() -> None:
        trace.append((sim.now, limit.sending))

    def pump() -> None:
        while state["pending"] and limit.sending < limit.limit:
            route = None
            if balancer is not None:
                try_acquire = getattr(balancer, "try_acquire", None)
                route = try_acquire(waiting=state["pending"] > 1) if try_acquire else balancer.acquire()
                if route is None:
                    break
            state["pending"] -= 1
            limit.queued = state["pending"]
            ticket = limit.send()  # never waits: the gate has room
            state["sent"] += 1
            send(ticket, route)
        note()

    def send(ticket: int, route: Any) -> None:
        index = route.endpoint.sender if route is not None else 0
        if sim.now >= watch_from and index not in first_after:
            first_after[index] = sim.now
        sent_at, gave_up, number = sim.now, [False], state["sent"]

        def reply(outcome: Outcome) -> None:
            if gave_up[0] and outcome != "timeout":
                return
            delay = client_delay_s(sim.now, number) if outcome == "ok" else 0.0
            sim.at(sim.now + delay, lambda: seen(outcome))

        def seen(outcome: Outcome) -> None:
            latency = sim.now - sent_at
            overloaded = {"ok": False, "429": True}.get(outcome)
            limit.answered(ticket, overloaded=overloaded, latency_s=latency if outcome == "ok" else None)
            if balancer is not None:
                failed = {"ok": False, "429": None}.get(outcome, True)
                kw = {"overloaded": outcome == "429"} if hasattr(balancer, "try_acquire") else {}
                balancer.release(route, failed=failed, **kw)
            if outcome == "ok":
                state["answered"] += 1
            else:
                state["refused" if outcome in ("429", "refused") else "timeouts"] += 1
                sim.at(sim.now + retry_s, retry)
            pump()

        def timeout() -> None:
            if not gave_up[0] and not answered_flag[0]:
                gave_up[0] = True
                seen("timeout")

        answered_flag = [False]

        def reply_once(outcome: Outcome) -> None:
            answered_flag[0] = True
            reply(outcome)

        servers[index].arrive(sim, reply_once, gave_up)
        if deadline_s is not None:
            sim.at(sim.now + deadline_s, timeout)

    def retry() -> None:
        state["pending"] += 1
        limit.queued = state["pending"]
        pump()

    def tick() -> None:  # a waiting acquire wakes every second (probes, pauses running out)
        if state["answered"] < calls:
            pump()
            sim.at(sim.now + 1.0, tick)

    sim.at(0.0, pump)
    sim.at(1.0, tick)
    sim.run(until=until, done=lambda: state["answered"] >= calls)
    report = limit.report() if hasattr(limit, "report") else {}
    if balancer is not None and hasattr(balancer, "report"):
        report = {"model": report, **balancer.report()}
    return Result(sim.now, state["answered"], trace, servers, state["refused"], state["timeouts"], first_after,
                  report)


# ---- the scenarios, each with the figure it must reach ---------------------------------------------


def queueing(slots: int) -> Result:
    """A server of ``slots`` that queues silently (no /props: the client starts at 16), 1 s a call, --timeout 10."""
    return run([Server(slots=slots)], calls=60 * slots, initial=16, maximum=512, deadline_s=10.0)


def slowing() -> Result:
    """Latency 0.2 s -> 0.5 s over 4 s whatever is in flight, --concurrency 128."""
    return run([Server(service_s=lambda t: 0.2 + 0.3 * min(1.0, t / 4.0))], calls=1600, initial=128, maximum=128)


def busy_client(*, every_other_second: bool = False) -> Result:
    """0.3 s answers, read 0.2-0.4 s late from 1 s on (the client's host is busy: its CPU, not the server),
    or only in every other second; --concurrency 128."""
    def late(t: float, n: int) -> float:
        busy = int(t) % 2 == 0 if every_other_second else t >= 1.0
        return 0.2 + 0.2 * ((n * 7919) % 100) / 100 if busy else 0.0
    return run([Server(service_s=lambda t: 0.3)], calls=3000, initial=128, maximum=128, client_delay_s=late)


def replicas(services: list[float], *, slots: int = 4, calls: int = 240) -> Result:
    """Replicas of ``slots`` each (no /props), a call taking ``services[i]`` s on replica i."""
    servers = [Server(slots=slots, service_s=lambda t, s=s: s) for s in services]
    return run(servers, calls=calls, initial=16, maximum=512, deadline_s=60.0)


def open_replicas(services: list[float], *, calls: int = 3000, quota: int | None = None) -> Result:
    """Replicas that do not queue (every call served at once), a call taking ``services[i]`` s; no /props
    (from 16 up to 512), or ``--concurrency quota``."""
    servers = [Server(service_s=lambda t, s=s: s) for s in services]
    return run(servers, calls=calls, initial=quota or 16, maximum=quota or 512, deadline_s=60.0)


def returning() -> Result:
    """Two equal replicas; the second refuses connections from 20 s to 40 s (a restart)."""
    servers = [Server(slots=4), Server(slots=4, down=(20.0, 40.0))]
    return run(servers, calls=480, initial=16, maximum=512, deadline_s=60.0, watch_from=40.0)


def rate_limited() -> Result:
    """A provider that answers 429 past 32 calls at once, 0.5 s a call (hosted: starts at 128)."""
    return run([Server(reject_above=32, service_s=lambda t: 0.5)], calls=3000, initial=128, maximum=512)


def figures() -> dict[str, str]:
    """Every scenario's figure, as the tests check them."""
    out: dict[str, str] = {}
    for slots in (2, 4, 16):
        r = queueing(slots)
        out[f"queueing {slots} slots"] = (f"slots used {r.slots_used():.2f}, wasted {r.wasted_share():.2f}, "
                                          f"{r.finished_s:.0f} s")
    r = slowing()
    out["slowing 0.2->0.5 s"] = (f"median in flight, 2nd half {r.in_flight_quantile(0.5, r.finished_s / 2):.0f} "
                                 f"of 128, {r.finished_s:.2f} s")
    for alternate in (False, True):
        r = busy_client(every_other_second=alternate)
        out[f"busy client{' (every other second)' if alternate else ''}"] = (
            f"median in flight {r.in_flight_quantile(0.5):.0f} of 128, {r.finished_s:.2f} s")
    fast = replicas([1.0])
    for services in ([1.0, 3.0], [1.0, 1.5, 2.0, 3.0]):
        r = replicas(services)
        out[f"4-slot replicas {services}"] = f"{r.finished_s:.1f} s vs fast alone {fast.finished_s:.1f} s"
    for quota in (None, 128):
        fast = open_replicas([0.2], quota=quota)
        for services in ([0.2, 0.6], [0.2, 0.3, 0.4, 0.6]):
            r = open_replicas(services, quota=quota)
            out[f"open replicas {services}{f' --concurrency {quota}' if quota else ''}"] = (
                f"{r.finished_s:.1f} s vs fast alone {fast.finished_s:.1f} s")
    r = returning()
    back = r.first_after.get(1)
    out["returning replica"] = f"used again {back - 40.0:.1f} s after it returned" if back else "never used again"
    r = rate_limited()
    out["429 above 32"] = (f"mean in flight {r.mean_in_flight(0, r.finished_s * 0.9):.1f} of 32, "
                           f"refused {r.refused} of {r.answered}")
    return out


if __name__ == "__main__":
    for name, figure in figures().items():
        print(f"{name}: {figure}")
