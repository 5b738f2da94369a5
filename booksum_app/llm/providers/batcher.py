"""Gathers calls made at the same moment, from any thread, into one batch for an engine that batches.

vLLM's offline engine answers a list of requests in one ``LLM.chat`` call and schedules them
together (continuous batching), but each call is a barrier: a request that misses a batch
waits for the whole batch to finish. Strategies make their calls one by one from worker
threads (hierarchical merging submits a level's leaves in a loop), so a :class:`Gatherer`
runs one sender thread that, once a call arrives, keeps collecting until

- arrivals have paused for ``quiet_s`` (the submitting loop is done), and
- every caller that could still come is here (``callers()``: the calls holding or waiting for
  a slot of the client's concurrency limit), or ``window_s`` has passed since collecting
  began (a caller that holds a slot but is busy elsewhere, e.g. waiting on another run's
  lease in the call cache, is not waited for long),

then sends everything waiting as one batch; each caller gets its own answer. Calls that
arrive while a batch runs form the next one. A group of requests (``submit_all``: the judge's
questions) joins the batch forming at the time.

A batch that fails with one of ``split_on`` (an error that may belong to a single request,
such as a prompt longer than the engine allows, which vLLM raises for the whole list) is
halved and each half resent, so only the request at fault gets the error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

QUIET_S = 0.01  # a pause in arrivals this long ends the submitting burst
WINDOW_S = 0.25  # at most this long after the first arrival waiting for callers that hold a slot
POLL_S = 0.002  # how often the slot count is read while waiting (slot releases do not notify us)


@dataclass
class _Item(Generic[T, R]):
    value: T
    single: bool  # a caller of submit(), holding a slot of the client's limit
    future: Future[R] = field(default_factory=Future)


class Gatherer(Generic[T, R]):
    """Sends the items submitted from any thread in batches, through ``send`` on one thread."""

    def __init__(
        self,
        send: Callable[[list[T]], list[R]],
        *,
        quiet_s: float | None = None,
        window_s: float | None = None,
        split_on: tuple[type[BaseException], ...] = (),
        name: str = "booksum-gather",
    ) -> None:
        self._send = send
        self.quiet_s = QUIET_S if quiet_s is None else quiet_s
        self.window_s = WINDOW_S if window_s is None else window_s
        self._split_on = split_on
        self._name = name
        self._callers: Callable[[], int] | None = None
        self._cond = threading.Condition()
        self._pending: list[_Item[T, R]] = []
        self._last_arrival = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.batch_sizes: list[int] = []  # every batch sent (halves of a split one too), in order

    def expect(self, callers: Callable[[], int]) -> None:
        """Tell how many single callers may be on their way (the client's slots held and waited for)."""
        self._callers = callers

    def submit(self, value: T) -> R:
        """Send ``value`` in the next batch and wait for its answer (or its error)."""
        (item,) = self._enqueue([value], single=True)
        return item.future.result()

    def submit_all(self, values: Sequence[T]) -> list[R]:
        """Send ``values`` in the next batch (with whatever else is waiting); answers in order.

        Raises the first error among them, after every one has been answered.
        """
        items = self._enqueue(list(values), single=False)
        errors = [e for e in (item.future.exception() for item in items) if e is not None]
        if errors:
            raise errors[0]
        return [item.future.result() for item in items]

    def close(self) -> None:
        """Stop the sender thread once the batch in progress is done; waiting callers get an error."""
        with self._cond:
            self._closed = True
            pending, self._pending = self._pending, []
            self._cond.notify_all()
        for item in pending:
            item.future.set_exception(RuntimeError("the engine was closed"))
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # ---- the sender thread -------------------------------------------------------------

    def _enqueue(self, values: list[T], *, single: bool) -> list[_Item[T, R]]:
        items: list[_Item[T, R]] = [_Item(value, single) for value in values]
        if not items:
            return items
        with self._cond:
            if self._closed:
                raise RuntimeError("the engine was closed")
            self._pending.extend(items)
            self._last_arrival = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return items

    def _run(self) -> None:
        while True:
            batch = self._collect()
            if batch is None:
                return
            self._deliver(batch)

    def _collect(self) -> list[_Item[T, R]] | None:
        """Wait for a batch to form (see the module doc); None once closed."""
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            first = time.monotonic()
            while not self._closed:
                now = time.monotonic()
                quiet_for = now - self._last_arrival
                if quiet_for >= self.quiet_s and (self._all_here() or now - first >= self.window_s):
                    break
                # until the pause is long enough, then (callers still missing) poll the slot count
                self._cond.wait(self.quiet_s - quiet_for if quiet_for < self.quiet_s else POLL_S)
            if self._closed:  # close() answered whatever was waiting
                return None
            batch, self._pending = self._pending, []
            return batch

    def _all_here(self) -> bool:
        if self._callers is None:
            return True  # nobody says more are coming: a pause in arrivals closes the batch
        singles = sum(1 for item in self._pending if item.single)
        return singles >= self._callers()

    def _deliver(self, batch: list[_Item[T, R]]) -> None:
        """Send ``batch`` (halving it on a per-request error) and answer every item."""
        self.batch_sizes.append(len(batch))
        try:
            results = self._send([item.value for item in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"the engine answered {len(results)} of {len(batch)} requests")
        except self._split_on as exc:
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
                return
            middle = len(batch) // 2
            self._deliver(batch[:middle])
            self._deliver(batch[middle:])
            return
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for item in batch:
                item.future.set_exception(exc)
            return
        for item, result in zip(batch, results, strict=True):
            item.future.set_result(result)


__all__ = ["Gatherer"]
