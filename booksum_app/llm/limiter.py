"""How many calls may be in flight, and which waiting call goes next.

:class:`AdaptiveLimit` is TCP's congestion control applied to an API's rate limits. It starts
at ``initial``, halves on a 429 or overload answer (at most once per window: calls already
sent under the old limit do not halve it again) and then grows by one call per window of
successes (additive increase). Below its cap before the first rejection, it doubles per window
(slow start, one call per answer): hosted APIs start at 128, and a book of 370 leaves has them
all out after one round instead of two. It grows only while it is used (calls wait for a
slot, or at least half of it is on the wire when an answer comes), as TCP's window validation
(RFC 7661) does: answers to a few calls at a time say nothing of a provider's limit, and a
limit grown on them would send an untested burst later. Slow start also ends when even the
fastest of the last 8 answers took over twice as long as the fastest of the first 8: a server
that queues (``llama-server -np 4``, vLLM past its batch) sends no 429, its answers just come
later and later, and a longer queue would only run its last calls into the client's timeout.
The minimum of 8 is what tells a queue from answers that differ in length (TCP's HyStart++,
RFC 9406, reads a round's minimum delay the same way).

Past slow start the same signal lowers the limit, as TCP Vegas and Netflix's gradient limiter
do: when even the fastest of the last 8 answers took over twice the fastest answer ever seen
(and at least 50 ms more), the server is queueing, and it serves about ``rate x fastest``
calls at once (Little's law over the answers' arrival rate while it is saturated); the limit
drops to twice that (at most once per window), so its queue stays about as long as what it
serves and waits stay near twice one call, far from the client's timeout. A server that does
not say how many it serves (no ``/props``: older ``llama-server`` builds, any proxy in front)
is found out this way after a few answers. The fastest answer may itself have waited (every
call of the first burst queued behind a slow start), so a second rule needs no baseline: when
even the fastest of the last 8 answers took over half an attempt's timeout (``deadline_s``),
the calls in flight are scaled down by that overshoot, which in a queue shortens the wait in
proportion, before the waits pass the timeout. ``maximum`` is a hard cap (``--concurrency N``,
else 512). A fixed limit is the same object with ``adaptive=False``.

Two counts: *slots* (:meth:`AdaptiveLimit.acquire`) are taken when a call is handed to a
worker thread; the *send gate* (:meth:`AdaptiveLimit.send`) is passed right before the request
goes out. Handing out slots is instant, sending is not (each request costs the SDK a few ms of
CPU), so a burst of 128 slots reaches the wire over tens of ms. A rejection that comes back
meanwhile lowers the limit, and the gate holds back the calls not yet sent: against a provider
that allows 16, a start at 128 costs a few rejected requests, not 112. The halving starts from
the calls on the wire when the rejection came (the provider's real limit), not from a limit
that was never reached.

:class:`PriorityPool` runs calls on worker threads and, whenever a slot frees up, starts the
waiting call with the lowest priority value: work that unblocks the most goes first (a
regeneration a merge waits for before the next leaf), instead of first come, first served.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
SLOW_START_STEP = 1.0  # per answer in slow start: x2 per window, as TCP's
DELAY_SAMPLES = 8  # answers whose fastest is compared (HyStart++'s N_RTT_SAMPLE)
QUEUEING_FACTOR = 2.0  # slow start ends when the recent fastest is this many times the first
MIN_QUEUE_DELAY_S = 0.05  # and at least this much slower: jitter of fast calls is not a queue
QUEUE_HEADROOM = 2.0  # a queueing server gets twice the calls it serves at once
DEADLINE_SHARE = 0.5  # answers slower than this share of an attempt's timeout: fewer in flight


class AdaptiveLimit:
    """An additive-increase / multiplicative-decrease limit on calls in flight (thread-safe)."""

    def __init__(self, *, initial: int, maximum: int, minimum: int = 1, adaptive: bool = True,
                 clock: Callable[[], float] = time.monotonic, deadline_s: float | None = None) -> None:
        self.maximum = max(1, maximum)
        self.minimum = max(1, min(minimum, self.maximum))
        self.adaptive = adaptive
        self._limit = float(min(max(initial, self.minimum), self.maximum) if adaptive else self.maximum)
        self._slow_start = adaptive and self._limit < self.maximum
        self._in_flight = 0  # slots taken
        self._urgent = 0  # retries waiting for a slot: they go before new calls
        self._sending = 0  # requests past the send gate and not yet answered
        self._started = 0  # requests sent so far: a decrease ignores answers to those sent before it
        self._decreased_at = -1
        self._cond = threading.Condition()
        self.rejections = 0
        self.queued = 0  # calls waiting in the pool for a slot (set by PriorityPool): demand
        self._first: list[float] = []  # latencies of the first DELAY_SAMPLES answers
        self._recent: deque[float] = deque(maxlen=DELAY_SAMPLES)  # of the last ones
        self._fastest = math.inf  # the fastest answer seen: a call with no queue ahead of it
        self._clock = clock
        self.deadline_s = deadline_s  # an attempt's timeout: waits in a server's queue must stay under it
        self._arrivals: deque[float] = deque(maxlen=2 * DELAY_SAMPLES)  # when the last answers came
        self.queue_backoffs = 0  # decreases because the server queued (no 429 said so)

    @property
    def limit(self) -> int:
        """The current limit (what the progress display shows)."""
        with self._cond:
            return int(self._limit)

    @property
    def sending(self) -> int:
        """Requests past the send gate and not yet answered."""
        with self._cond:
            return self._sending

    def callers(self) -> int:
        """Calls holding a slot, plus those waiting in the pool that a free slot would start now."""
        with self._cond:
            return min(self._in_flight + self.queued, max(self._in_flight, int(self._limit)))

    def acquire(self, *, urgent: bool = False) -> None:
        """Wait for a slot. An ``urgent`` caller (a retry: its call has already been paid for
        once) goes before every waiting non-urgent one, so new calls cannot starve a retry."""
        with self._cond:
            if urgent:
                self._urgent += 1
                try:
                    while self._in_flight >= int(self._limit):
                        self._cond.wait()
                finally:
                    self._urgent -= 1
            else:
                while self._in_flight >= int(self._limit) or self._urgent:
                    self._cond.wait()
            self._in_flight += 1

    def release(self) -> None:
        """Free a slot taken by :meth:`acquire`."""
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def send(self) -> int:
        """Wait until one more request may go out under the current limit; returns its ticket.

        The caller holds a slot; it must report the answer with :meth:`answered`.
        """
        with self._cond:
            while self._sending >= int(self._limit):
                self._cond.wait()
            self._sending += 1
            self._started += 1
            return self._started

    def answered(self, ticket: int, *, overloaded: bool | None, latency_s: float | None = None) -> None:
        """Request ``ticket`` came back: answered (False) after ``latency_s``, refused as rate
        limited or overloaded (True), or failed otherwise (None: says nothing about the provider's limit)."""
        with self._cond:
            if self.adaptive and overloaded is not None:
                self._adapt(ticket, overloaded, latency_s)
            self._sending -= 1
            self._cond.notify_all()

    def _adapt(self, ticket: int, overloaded: bool, latency_s: float | None) -> None:
        if latency_s is not None and not overloaded and self._watch_delay(latency_s, ticket):
            return  # the server queues: an answer that waited in its queue is no reason to grow
        if overloaded:
            self.rejections += 1
            if ticket > self._decreased_at:  # once per window: calls sent before do not count
                # halve what was on the wire (this request included), not a limit never reached
                self._limit = max(float(self.minimum), min(self._limit, float(self._sending)) / 2)
                self._slow_start = False
                self._decreased_at = self._started
        elif 2 * self._sending < self._limit and not self.queued:
            pass  # the limit is not in use: this answer says nothing of a higher one (RFC 7661)
        elif self._slow_start:
            self._limit = min(float(self.maximum), self._limit + SLOW_START_STEP)
        else:
            self._limit = min(float(self.maximum), self._limit + 1 / self._limit)  # +1 per window

    def _watch_delay(self, latency_s: float, ticket: int) -> bool:
        """Read a queue from answers that come later and later: end slow start, and lower the
        limit to what the server serves (module doc). True while the server queues."""
        self._fastest = min(self._fastest, latency_s)
        self._arrivals.append(self._clock())
        if len(self._first) < DELAY_SAMPLES:
            self._first.append(latency_s)
            return False
        self._recent.append(latency_s)
        if len(self._recent) < DELAY_SAMPLES:
            return False
        floor = min(self._recent)
        late = self.deadline_s is not None and floor > DEADLINE_SHARE * self.deadline_s
        if not late and (floor <= QUEUEING_FACTOR * self._fastest or floor - self._fastest < MIN_QUEUE_DELAY_S):
            return False
        self._slow_start = False
        span = self._arrivals[-1] - self._arrivals[0]
        if ticket <= self._decreased_at or span <= 0:
            return True
        serving = (len(self._arrivals) - 1) / span * self._fastest  # Little's law, with no queue
        target = math.ceil(serving * QUEUE_HEADROOM)
        if late and self.deadline_s is not None:
            # in a queue a wait grows with the calls ahead: scale them so waits fall to that share
            target = min(target, math.floor(self._sending * DEADLINE_SHARE * self.deadline_s / floor))
        target = max(self.minimum, target)
        if target >= self._limit:
            return True
        self._limit = float(target)
        self._decreased_at = self._started
        self.queue_backoffs += 1
        return True


def socket_room(cap: int, *, reserve: int = 64) -> int:
    """``cap``, or fewer where the process may not open that many files: each call in flight holds
    a connection (macOS's default soft limit is 256 open files; ``reserve`` is left for the
    cache, the book and the rest)."""
    try:
        import resource  # not on Windows
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return cap
    if soft == resource.RLIM_INFINITY:
        return cap
    return max(1, min(cap, soft - reserve))


def raise_open_files_limit(target: int = 4096) -> None:
    """Raise the process's soft limit on open files toward ``target`` within its hard limit, as
    Go's runtime does at start: each call in flight holds a connection, a compare run has a
    client per model, and macOS starts at 256. Where it cannot, :func:`socket_room` sizes the
    adaptive cap under the limit there is."""
    try:
        import resource  # not on Windows
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = target if hard == resource.RLIM_INFINITY else min(target, hard)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, OSError, ValueError):
        pass


class PriorityPool:
    """Starts the most urgent waiting call whenever the limit allows one more.

    One dispatcher thread takes a free worker thread, then a slot, then the waiting call with
    the lowest priority value (equal ones in submission order), and hands both to the worker;
    the worker gives the slot back when the call is done; the call takes it over for its first
    attempt (:meth:`take_slot`).

    Why a worker before a slot, and twice as many workers as slots: a call that fails gives its
    slot back for its backoff and waits for one again to retry, still on its worker thread. A
    slot handed to a call that no thread can run yet would wait for the retrying thread, which
    waits for that slot: at ``--concurrency 1`` the first retry hung the run. Here every slot
    is held by a call that is running, and up to ``maximum`` calls can sit out a backoff while
    ``maximum`` others run.
    """

    def __init__(self, limit: AdaptiveLimit, *, name: str = "booksum-call") -> None:
        self._limit = limit
        self._queue: list[tuple[Any, int, Future[Any], Callable[[], Any]]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._local = threading.local()
        workers = 2 * limit.maximum
        self._workers = threading.Semaphore(workers)  # free worker threads
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._dispatcher = threading.Thread(target=self._dispatch, name=f"{name}-dispatch", daemon=True)
        self._dispatcher.start()

    def submit(self, fn: Callable[[], T], *, priority: Any = 0) -> Future[T]:
        """Queue ``fn``; lower ``priority`` values start first."""
        future: Future[T] = Future()
        # one shape for every key, so callers mixing 0 and (0, 3) never make the heap compare
        # an int with a tuple (a TypeError there would corrupt the heap and stall the dispatcher)
        key = tuple(priority) if isinstance(priority, tuple) else (priority,)
        with self._cond:
            if self._closed:
                raise RuntimeError("the call pool is closed")
            heapq.heappush(self._queue, (key, next(self._order), future, fn))
            self._limit.queued = len(self._queue)
            self._cond.notify_all()
        return future

    def take_slot(self) -> bool:
        """On a pool thread whose call has not used its slot yet: hand the slot to the caller.

        The caller then releases it after one attempt; a retry waits for a slot again, so a
        lowered limit applies to retries too (a call never sleeps out a backoff holding a slot).
        """
        if getattr(self._local, "holds", False):
            self._local.holds = False
            return True
        return False

    def _next(self) -> tuple[Future[Any], Callable[[], Any]] | None:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return None
            _, _, future, fn = heapq.heappop(self._queue)
            self._limit.queued = len(self._queue)
            return future, fn

    def _wait_for_work(self) -> bool:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            return bool(self._queue)

    def _dispatch(self) -> None:
        while True:
            # work first, then a slot: a dispatcher idling on a slot would starve calls that
            # take their slot directly (an unpooled call at --concurrency 1 waited forever)
            if not self._wait_for_work():
                return
            self._workers.acquire()
            self._limit.acquire()
            item = self._next()
            if item is None:
                self._limit.release()
                self._workers.release()
                return
            future, fn = item
            if not future.set_running_or_notify_cancel():
                self._limit.release()
                self._workers.release()
                continue
            self._executor.submit(self._run, future, fn)

    def _run(self, future: Future[Any], fn: Callable[[], Any]) -> None:
        self._local.holds = True
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        finally:
            if self._local.holds:  # the call never used its slot (a cache hit): give it back
                self._local.holds = False
                self._limit.release()
            self._workers.release()

    def shutdown(self, *, cancel_futures: bool = True) -> None:
        """Stop taking work, cancel what has not started, wait for running calls."""
        with self._cond:
            self._closed = True
            pending, self._queue = (self._queue, []) if cancel_futures else ([], self._queue)
            self._limit.queued = len(self._queue)
            self._cond.notify_all()
        for _, _, future, _ in pending:
            future.cancel()
        if self._dispatcher is not threading.current_thread():
            self._dispatcher.join()
        self._executor.shutdown(wait=True)


__all__ = ["AdaptiveLimit", "PriorityPool", "raise_open_files_limit", "socket_room"]
