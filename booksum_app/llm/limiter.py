"""How many calls may be in flight, and which waiting call goes next.

:class:`AdaptiveLimit` is TCP's congestion control applied to an API's rate limits: it starts
at ``initial``, grows 1.5x per full window of successes (slow start) until the first
rate-limit answer, then halves on a 429 or overload (at most once per window: calls already
sent under the old limit do not halve it again) and grows by one call per window of
successes (additive increase). ``maximum`` is a hard cap (``--concurrency N``). A fixed
limit is the same object with ``adaptive=False``.

:class:`PriorityPool` runs calls on worker threads and, whenever a slot frees up, starts the
waiting call with the lowest priority value: work that unblocks the most goes first (a
regeneration a merge waits for before the next leaf), instead of first come, first served.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
SLOW_START_STEP = 0.5


class AdaptiveLimit:
    """An additive-increase / multiplicative-decrease limit on calls in flight (thread-safe)."""

    def __init__(self, *, initial: int, maximum: int, minimum: int = 1, adaptive: bool = True) -> None:
        self.maximum = max(1, maximum)
        self.minimum = max(1, min(minimum, self.maximum))
        self.adaptive = adaptive
        self._limit = float(min(max(initial, self.minimum), self.maximum) if adaptive else self.maximum)
        self._slow_start = adaptive
        self._in_flight = 0
        self._started = 0  # calls started so far: a decrease ignores answers to calls sent before it
        self._decreased_at = -1
        self._cond = threading.Condition()
        self.rejections = 0

    @property
    def limit(self) -> int:
        """The current limit (what the progress display shows)."""
        with self._cond:
            return int(self._limit)

    def acquire(self) -> int:
        """Wait for a slot; returns the call's start number."""
        with self._cond:
            while self._in_flight >= int(self._limit):
                self._cond.wait()
            self._in_flight += 1
            self._started += 1
            return self._started

    def mark(self) -> int:
        """The number of calls started so far: pass it to :meth:`feedback` for an attempt starting now."""
        with self._cond:
            return self._started

    def release(self) -> None:
        """Free a slot taken by :meth:`acquire`."""
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def feedback(self, ticket: int, *, overloaded: bool) -> None:
        """How one attempt of call ``ticket`` went: answered, or refused as rate limited/overloaded."""
        if not self.adaptive:
            return
        with self._cond:
            if overloaded:
                self.rejections += 1
                if ticket > self._decreased_at:  # once per window: calls sent before do not count
                    self._limit = max(float(self.minimum), self._limit / 2)
                    self._slow_start = False
                    self._decreased_at = self._started
            elif self._slow_start:  # +1/2 per answer: x1.5 per window, so the overshoot that
                # finds the provider's limit costs a third of a window, not half
                self._limit = min(float(self.maximum), self._limit + SLOW_START_STEP)
            else:
                self._limit = min(float(self.maximum), self._limit + 1 / self._limit)  # +1 per window
            self._cond.notify_all()


class PriorityPool:
    """Starts the most urgent waiting call whenever the limit allows one more.

    One dispatcher thread takes a slot, then the waiting call with the lowest priority value
    (equal ones in submission order), and hands both to a worker thread; the worker gives the
    slot back when the call is done; the call takes it over for its first attempt
    (:meth:`take_slot`).
    """

    def __init__(self, limit: AdaptiveLimit, *, name: str = "booksum-call") -> None:
        self._limit = limit
        self._queue: list[tuple[Any, int, Future[Any], Callable[[], Any]]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._local = threading.local()
        self._executor = ThreadPoolExecutor(max_workers=limit.maximum, thread_name_prefix=name)
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
            self._limit.acquire()
            item = self._next()
            if item is None:
                self._limit.release()
                return
            future, fn = item
            if not future.set_running_or_notify_cancel():
                self._limit.release()
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

    def shutdown(self, *, cancel_futures: bool = True) -> None:
        """Stop taking work, cancel what has not started, wait for running calls."""
        with self._cond:
            self._closed = True
            pending, self._queue = (self._queue, []) if cancel_futures else ([], self._queue)
            self._cond.notify_all()
        for _, _, future, _ in pending:
            future.cancel()
        if self._dispatcher is not threading.current_thread():
            self._dispatcher.join()
        self._executor.shutdown(wait=True)


__all__ = ["AdaptiveLimit", "PriorityPool"]
