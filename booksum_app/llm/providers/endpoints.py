"""Several base URLs serving one model (replicas): which one gets a call, and when a failing one comes back.

- A call goes to the healthy replica that would answer it first: the fewest calls in flight
  weighted by the replica's own latency (an exponential moving average of its answers; one not
  yet measured counts as fast as the fastest, so it gets tried); among those within 25 % of
  the soonest, the one sent the fewest calls, so comparable replicas share even one call at a
  time instead of the first URL taking them all. At most ``limit`` in flight on one replica
  when a limit is set (the rest wait for a slot).
- Failures count once per burst: calls in flight together on a replica that stops answering
  fail together (a hung replica: all at the same timeout), and they are one event, not N in a
  row. A failure counts only for a call sent after the replica's last counted failure; it
  takes the replica out for 5 s, doubling per counted failure up to 60 s. A success of a call
  sent after that puts it back at once.
- A replica that is out is probed on a schedule, not only when its pause is over (``probe``:
  a GET of ``/models`` with a short timeout, in the background): every ``REPROBE_S``, doubling
  after each probe that passed while calls still failed (up to its pause); a probe that passes
  puts it back at once, so a restarted server gets calls again within seconds, whatever pause
  its failures earned. A hung one fails the probe, so it costs the probe's few seconds, never
  another call's full timeout. Only when every replica is out does a call go to the one due
  back first, so the call layer's retries still end.
- A replica judged slow is measured again: one that has had no call for ``REFRESH_S`` while
  others did gets the next call when it has none in flight, so one slow answer does not keep it
  idle for the rest of the run.
- Per-replica limits (``control``: a factory of
  :class:`~booksum_app.llm.controller.LatencyController`): each replica has its own controller,
  fed with its own answers' latency and refusals, and gets no call past its limit; a slow
  replica is compared with its own baseline, never with a faster one's. The controller also
  says how many calls the replica was seen to answer at once without a wait (its capacity):
  a call there costs its latency until that many are in flight, so a fast replica that does not
  queue is not passed over for a slow one because it already has more calls.
- A stalled replica is probed without waiting for a timeout: one that has answered nothing
  since its oldest call in flight was sent, that call older than ``STALL_FACTOR`` times the
  calls' usual latency (and ``STALL_MIN_S``), gets no new call until a probe passes. A frozen
  process (SIGSTOP) then holds only the calls sent before it was noticed, for one timeout.
- Prefix affinity: a request with a shared prefix (the judge's instructions and summary) goes
  to a replica that already served that prefix (its prompt cache holds it) unless that one
  would answer later than the least busy by more than ``WARM_SLACK`` of its own calls (its
  latency weighted, as above); a replica that has not served it
  gets one call on it alone first (its warm-up) while the others wait or go to warm replicas,
  so each replica's prefix cache is written once, as the judge's warm-up does for one.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from booksum_app.llm.controller import LatencyController

S = TypeVar("S")
PROBE_TIMEOUT_S = 3.0
_UNWELL = (500, 502, 503, 504)


class Endpoint(Generic[S]):
    """One base URL and its state: calls in flight, counted failures, the prefixes it holds warm."""

    WARM_PREFIXES = 4096  # prefixes remembered per replica (hashes), least recently used dropped

    def __init__(self, url: str | None, sender: S) -> None:
        self.url = url
        self.sender = sender
        self.in_flight = 0
        self.sent = 0  # calls sent so far: a call's number tells which burst it belongs to
        self.failures = 0  # counted failures in a row
        self.burst_mark = -1  # calls numbered up to this were in flight at the last counted failure
        self.down_until = 0.0
        self.checked = True  # False while out: a probe must pass before calls come back
        self.probing = False
        self.warm: OrderedDict[int, None] = OrderedDict()
        self.warming: dict[int, int] = {}  # prefix -> its warm-up calls in flight here
        self.open_calls: OrderedDict[int, float] = OrderedDict()  # call number -> when sent, oldest first
        self.last_answer = float("-inf")  # when it last answered anything (a 429 included)
        self.latency_s: float | None = None  # moving average of this replica's answered calls
        self.probe_passed = float("-inf")
        self.last_sent = float("-inf")  # when it was last given a call
        self.next_probe = 0.0  # while out: when the next scheduled probe is due
        self.failed_at = float("-inf")  # when its last failure was counted
        self.false_passes = 0  # probes that passed while calls kept failing: each doubles the probe interval
        self.control: LatencyController | None = None  # its own limit (Balancer's ``control``)

    def is_warm(self, prefix: int) -> bool:
        return prefix in self.warm

    def remember(self, prefix: int) -> None:
        self.warm[prefix] = None
        self.warm.move_to_end(prefix)
        while len(self.warm) > self.WARM_PREFIXES:
            self.warm.popitem(last=False)


@dataclass(slots=True)  # not frozen: one is made per call, and a frozen one costs twice as long to build
class Ticket(Generic[S]):
    """One call's place: its endpoint, its number there, its prefix and whether it warms the prefix."""

    endpoint: Endpoint[S]
    number: int
    prefix: int | None
    warming: bool
    sent_at: float = 0.0
    control_ticket: int = 0  # its number at the endpoint's controller


class Balancer(Generic[S]):
    """Chooses an endpoint per call and keeps each endpoint's health (thread-safe)."""

    DOWN_FIRST_S = 5.0
    DOWN_MAX_S = 60.0
    WARM_SLACK = 4  # calls in flight a warm replica may carry beyond the least busy before a cold one is warmed
    STALL_FACTOR = 4.0  # a replica silent this many usual latencies past its oldest call is probed
    STALL_MIN_S = 10.0
    NEAR = 1.25  # replicas that would answer within this factor of the soonest count as equal
    LATENCY_FLOOR_S = 1e-6  # a latency measured as 0 (a hand-moved clock) still weighs calls in flight
    REPROBE_S = 2.0  # a replica that is out is probed this often (doubling after false passes)
    REFRESH_S = 5.0  # a usable replica given no call for this long while others were gets the next one

    def __init__(
        self,
        endpoints: Sequence[Endpoint[S]],
        *,
        limit: int | None = None,
        probe: Callable[[str], bool] | None = None,
        run_probe: Callable[[Callable[[], None]], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        control: Callable[[], LatencyController] | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("at least one endpoint")
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        self.endpoints = list(endpoints)
        self.limit = limit
        self._probe = probe
        self._run_probe = run_probe or _in_thread
        self._clock = clock
        self._cond = threading.Condition()
        self.latency_s: float | None = None  # moving average of answered calls' latency, every replica
        self.waiting = 0  # callers waiting in acquire for a replica under its limit
        if control is not None:
            for endpoint in self.endpoints:
                endpoint.control = control()
        self._simple = len(self.endpoints) == 1 and limit is None and control is None

    def report(self) -> dict[str, Any]:
        """Each replica's controller decisions (by URL), for the run record; empty without ``control``."""
        with self._cond:
            return {e.url or "default": e.control.report() for e in self.endpoints if e.control is not None}

    def acquire(self, prefix: int | None = None) -> Ticket[S]:
        """An endpoint for one call (waiting while every usable one is at its limit)."""
        if self._simple:  # nothing to choose or hold: the common case
            only = self.endpoints[0]
            with self._cond:
                only.in_flight += 1
                only.sent += 1
                return Ticket(only, only.sent, None, False)
        due: list[Endpoint[S]] = []
        with self._cond:
            self.waiting += 1
            try:
                while True:
                    self._mark_stalled()
                    due += self._due_probes()
                    ticket = self._choose(prefix)
                    if ticket is not None:
                        break
                    self._cond.wait(timeout=1.0)  # a release, a probe's answer, or a pause running out
            finally:
                self.waiting -= 1
        for endpoint in due:
            self._start_probe(endpoint)
        return ticket

    def try_acquire(self, prefix: int | None = None, *, waiting: bool = False) -> Ticket[S] | None:
        """:meth:`acquire` without waiting: an endpoint, or None when every usable one is at its limit
        (probes that are due start either way). ``waiting``: other calls wait too (a simulation's queue)."""
        with self._cond:
            self._mark_stalled()
            due = self._due_probes()
            self.waiting += int(waiting)
            try:
                ticket = self._choose(prefix)
            finally:
                self.waiting -= int(waiting)
        for endpoint in due:
            self._start_probe(endpoint)
        return ticket

    def release(self, ticket: Ticket[S], *, failed: bool | None, overloaded: bool = False) -> None:
        """The call is over: ``failed`` True counts against the endpoint, False proves it well, None neither;
        ``overloaded``: refused with a 429 or 503 (its controller halves the replica's limit)."""
        endpoint = ticket.endpoint
        if self._simple:
            with self._cond:
                endpoint.in_flight -= 1
            return
        with self._cond:
            control = endpoint.control
            if control is not None and overloaded:
                control.overloaded(ticket.control_ticket, in_flight=endpoint.in_flight)
            endpoint.in_flight -= 1
            endpoint.open_calls.pop(ticket.number, None)
            if failed is not True:
                now = self._clock()
                endpoint.last_answer = now
                if failed is False:
                    latency = now - ticket.sent_at
                    if control is not None:
                        control.answered(ticket.control_ticket, latency_s=latency, in_flight=endpoint.in_flight + 1,
                                         waiting=self.waiting > 0)
                    self.latency_s = latency if self.latency_s is None else 0.8 * self.latency_s + 0.2 * latency
                    endpoint.latency_s = (latency if endpoint.latency_s is None
                                          else 0.8 * endpoint.latency_s + 0.2 * latency)
            if control is not None and not overloaded and failed is not False:
                control.failed(ticket.control_ticket)
            if ticket.warming and ticket.prefix is not None:
                left = endpoint.warming.get(ticket.prefix, 1) - 1
                if left > 0:
                    endpoint.warming[ticket.prefix] = left
                else:
                    endpoint.warming.pop(ticket.prefix, None)
            if failed is False and ticket.prefix is not None:
                endpoint.remember(ticket.prefix)
            if len(self.endpoints) > 1 and failed is not None:
                if failed and ticket.number > endpoint.burst_mark:
                    self._count_failure(endpoint)
                elif not failed and ticket.number > endpoint.burst_mark:
                    endpoint.failures, endpoint.down_until, endpoint.checked = 0, 0.0, True
                    endpoint.false_passes = 0
            self._cond.notify_all()

    # ---- choosing ---------------------------------------------------------------------

    def _usable(self, endpoint: Endpoint[S], now: float) -> bool:
        return endpoint.down_until <= now and endpoint.checked

    def _choose(self, prefix: int | None) -> Ticket[S] | None:
        now = self._clock()
        usable = [e for e in self.endpoints if self._usable(e, now)]
        if not usable:  # every one out: the first due back, so the call layer's retries end
            usable = [min(self.endpoints, key=lambda e: e.down_until)]
        open_ = [e for e in usable if (self.limit is None or e.in_flight < self.limit)
                 and (e.control is None or e.in_flight < e.control.limit)]
        if not open_:
            return None
        warming = False
        known = [e.latency_s for e in self.endpoints if e.latency_s is not None]
        fastest = max(self.LATENCY_FLOOR_S, min(known)) if known else 1.0

        def latency(e: Endpoint[S]) -> float:
            return fastest if e.latency_s is None else max(self.LATENCY_FLOOR_S, e.latency_s)

        def cost(e: Endpoint[S]) -> float:  # when a new call there would be answered
            # a replica seen answering k calls at once without a wait (its controller's capacity) serves k at a time
            capacity = e.control.capacity if e.control is not None else 1
            return max(1.0, (e.in_flight + 1) / capacity) * latency(e)

        def pick(candidates: list[Endpoint[S]]) -> Endpoint[S]:
            # a replica given nothing for REFRESH_S while others got calls is measured again
            latest = max(e.last_sent for e in self.endpoints)
            stale = [e for e in candidates if not e.in_flight and e.last_sent > float("-inf")
                     and latest - e.last_sent >= self.REFRESH_S]
            if stale:
                return min(stale, key=lambda e: e.last_sent)
            # within NEAR of the soonest, the one sent the fewest calls: comparable replicas share
            soonest = min(cost(e) for e in candidates)
            return min((e for e in candidates if cost(e) <= self.NEAR * soonest), key=lambda e: (e.sent, cost(e)))

        if prefix is None or len(self.endpoints) == 1:
            endpoint = pick(open_)
        else:
            soonest = min(cost(e) for e in open_)
            warm = [e for e in open_ if e.is_warm(prefix) and cost(e) <= soonest + self.WARM_SLACK * latency(e)]
            cold = [e for e in open_ if not e.is_warm(prefix) and prefix not in e.warming]
            if warm:
                endpoint = pick(warm)
            elif cold:
                endpoint, warming = pick(cold), True
            elif any(e.is_warm(prefix) for e in open_):  # warm ones all busy, the cold ones warming
                endpoint = pick([e for e in open_ if e.is_warm(prefix)])
            else:
                return None  # the prefix's first call is in flight everywhere: wait for one to answer
        endpoint.in_flight += 1
        endpoint.sent += 1
        endpoint.open_calls[endpoint.sent] = now
        endpoint.last_sent = now
        if warming and prefix is not None:
            endpoint.warming[prefix] = endpoint.warming.get(prefix, 0) + 1
        number = endpoint.control.sent(endpoint.in_flight) if endpoint.control is not None else 0
        return Ticket(endpoint, endpoint.sent, prefix, warming, now, number)

    # ---- health -----------------------------------------------------------------------

    def _count_failure(self, endpoint: Endpoint[S], *, by_probe: bool = False) -> None:
        now = self._clock()
        if not by_probe and endpoint.failures and endpoint.probe_passed > endpoint.failed_at:
            endpoint.false_passes += 1  # a probe let it back and calls failed again: probe it less often
        endpoint.failures += 1
        endpoint.failed_at = now
        endpoint.burst_mark = endpoint.sent  # the calls in flight now fail with this one
        pause = min(self.DOWN_MAX_S, self.DOWN_FIRST_S * 2 ** (endpoint.failures - 1))
        endpoint.down_until = now + pause
        endpoint.next_probe = now + min(pause, self.REPROBE_S * 2 ** endpoint.false_passes)
        endpoint.checked = self._probe is None or endpoint.url is None

    def _mark_stalled(self) -> None:
        """Take out, until a probe passes, a replica that answers nothing while its calls age."""
        if self._probe is None or self.latency_s is None or len(self.endpoints) < 2:
            return
        now, patience = self._clock(), max(self.STALL_MIN_S, self.STALL_FACTOR * self.latency_s)
        for e in self.endpoints:
            if not e.open_calls or not e.checked or e.url is None:
                continue
            oldest = next(iter(e.open_calls.values()))
            if now - oldest > patience and e.last_answer < oldest and e.probe_passed < oldest:
                e.checked = False  # no failure counted: the probe decides

    def _due_probes(self) -> list[Endpoint[S]]:
        now = self._clock()
        due = [e for e in self.endpoints if not e.checked and not e.probing
               and (e.down_until <= now or e.next_probe <= now)]
        for endpoint in due:
            endpoint.probing = True
        return due

    def _start_probe(self, endpoint: Endpoint[S]) -> None:
        probe, url = self._probe, endpoint.url
        assert probe is not None and url is not None  # checked is only False with both

        def run() -> None:
            try:
                alive = probe(url)
            except Exception:  # noqa: BLE001 - a probe that breaks says the endpoint is not well
                alive = False
            with self._cond:
                endpoint.probing = False
                if alive:  # back at once: a scheduled probe may pass before its pause is over
                    endpoint.checked, endpoint.probe_passed = True, self._clock()
                    endpoint.down_until = min(endpoint.down_until, endpoint.probe_passed)
                else:
                    self._count_failure(endpoint, by_probe=True)
                self._cond.notify_all()

        self._run_probe(run)


def _in_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="booksum-endpoint-probe", daemon=True).start()


def http_probe(timeout_s: float = PROBE_TIMEOUT_S) -> Callable[[str], bool]:
    """A probe that GETs ``<base URL>/models``: an answer within ``timeout_s`` is alive.

    A 404, 401 or 501 still proves a server that answers (``/models`` is not served
    everywhere); 500, 502, 503 and 504 (a server still loading, a proxy with no server behind
    it), a refused connection or no answer in time do not.
    """

    def probe(url: str) -> bool:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=timeout_s) as reply:
                return int(reply.status) not in _UNWELL
        except urllib.error.HTTPError as exc:
            return exc.code not in _UNWELL
        except (OSError, ValueError):
            return False

    return probe


__all__ = ["PROBE_TIMEOUT_S", "Balancer", "Endpoint", "Ticket", "http_probe"]
