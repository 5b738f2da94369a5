"""How many calls may be in flight, and which waiting call goes next.

:class:`AdaptiveLimit` is the thread-safe gate around a
:class:`~booksum_app.llm.controller.LatencyController`, which decides the limit (slow start, cuts
on 429s and overloaded answers, latency cuts that are tested and undone when latency does not
fall after them, a baseline re-measured by periodic probes: see ``llm/controller.py``). It starts
at ``initial``; hosted APIs start at 128, and a book of 370 leaves has them all out after one
round instead of two. ``maximum`` is a hard cap (``--concurrency N``, else 512). A fixed limit is
the same object with ``adaptive=False``. With ``latency=False`` only refusals move it: a backend
with several replicas controls each replica by its own latency (``llm/providers/endpoints.py``),
and one replica's slowness must not cut the calls the others serve.

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
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from booksum_app.llm.controller import LatencyController

T = TypeVar("T")


class AdaptiveLimit:
    """The gate on calls in flight to one model, its limit set by a :class:`LatencyController` (thread-safe)."""

    def __init__(self, *, initial: int, maximum: int, minimum: int = 1, adaptive: bool = True,
                 clock: Callable[[], float] = time.monotonic, deadline_s: float | None = None,
                 latency: bool = True) -> None:
        self.control = LatencyController(initial=initial, maximum=maximum, minimum=minimum, adaptive=adaptive,
                                         latency=latency, clock=clock, deadline_s=deadline_s)
        self.maximum = self.control.maximum
        self.minimum = self.control.minimum
        self.adaptive = adaptive
        self.deadline_s = deadline_s  # an attempt's timeout: waits in a server's queue must stay under it
        self._in_flight = 0  # slots taken
        self._urgent = 0  # retries waiting for a slot: they go before new calls
        self._sending = 0  # requests past the send gate and not yet answered
        self._cond = threading.Condition()
        self.queued = 0  # calls waiting in the pool for a slot (set by PriorityPool): demand

    @property
    def limit(self) -> int:
        """The current limit (what the progress display shows)."""
        with self._cond:
            return self.control.limit

    @property
    def sending(self) -> int:
        """Requests past the send gate and not yet answered."""
        with self._cond:
            return self._sending

    @property
    def rejections(self) -> int:
        """429 and overloaded answers seen."""
        return self.control.stats.rejections

    @property
    def queue_backoffs(self) -> int:
        """Cuts because answers came later (a queue, or waits near the timeout), undone ones included."""
        cuts = self.control.stats.cuts
        return cuts["queue"] + cuts["deadline"]

    def report(self) -> dict[str, Any]:
        """Every decision of the controller, for the run record."""
        with self._cond:
            return self.control.report()

    def callers(self) -> int:
        """Calls holding a slot, plus those waiting in the pool that a free slot would start now."""
        with self._cond:
            return min(self._in_flight + self.queued, max(self._in_flight, self.control.limit))

    def acquire(self, *, urgent: bool = False) -> None:
        """Wait for a slot. An ``urgent`` caller (a retry: its call has already been paid for
        once) goes before every waiting non-urgent one, so new calls cannot starve a retry."""
        with self._cond:
            if urgent:
                self._urgent += 1
                try:
                    while self._in_flight >= self.control.limit:
                        self._cond.wait()
                finally:
                    self._urgent -= 1
            else:
                while self._in_flight >= self.control.limit or self._urgent:
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
            while self._sending >= self.control.limit:
                self._cond.wait()
            self._sending += 1
            return self.control.sent(self._sending)

    def answered(self, ticket: int, *, overloaded: bool | None, latency_s: float | None = None) -> None:
        """Request ``ticket`` came back: answered (False) after ``latency_s``, refused as rate
        limited or overloaded (True), or failed otherwise (None: says nothing about the provider's limit)."""
        with self._cond:
            if overloaded:
                self.control.overloaded(ticket, in_flight=self._sending)
            elif overloaded is False:
                self.control.answered(ticket, latency_s=latency_s, in_flight=self._sending,
                                      waiting=self.queued > 0)
            else:
                self.control.failed(ticket)
            self._sending -= 1
            self._cond.notify_all()


def limit_for(backend: Any, *, start: int, cap: int, adaptive: bool, deadline_s: float | None) -> AdaptiveLimit:
    """The call layer's limit for ``backend``: from ``start`` under ``cap``, its queues kept under the
    attempt's bound ``deadline_s`` (the resolved ``--timeout``). Several replicas
    (``backend.replicas``): each slow-starts from ``start`` and reads its own latency
    (``llm/providers/endpoints.py``), so this one starts at their sum and moves only on refusals."""
    replicas = max(1, int(getattr(backend, "replicas", 1)))
    return AdaptiveLimit(initial=min(cap, start * replicas), maximum=cap, adaptive=adaptive,
                         deadline_s=deadline_s, latency=replicas == 1)


def limiter_report(limit: AdaptiveLimit, backend: Any) -> dict[str, Any]:
    """Every decision of an adaptive ``limit`` (``model``) and of ``backend``'s replicas (by URL); {} when fixed."""
    if not limit.adaptive:
        return {}
    report: dict[str, Any] = {"model": limit.report()}
    replicas = getattr(backend, "limiter_report", None)
    if callable(replicas):
        report.update({f"replica {url}": entry for url, entry in replicas().items()})
    return report


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


__all__ = ["AdaptiveLimit", "PriorityPool", "limit_for", "limiter_report", "raise_open_files_limit", "socket_room"]
