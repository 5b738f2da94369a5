"""Where money is counted: every reply a provider sent, at the one place every call passes.

The :class:`~booksum_app.llm.calls.Client` bills each reply it receives (a retried empty
answer, an answer cut at the token limit and resent, a regeneration: each was paid) to every
:class:`Meter` open in the caller's context. A run opens one meter around its work, so its
totals are what the provider billed, whatever a strategy reports about its own calls (a
plugin that returns no call list still pays for its calls). ``Client.submit`` copies the
caller's context into the worker thread, so calls made on the pool count for their caller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from booksum_app.llm.base import Tally

_OPEN: ContextVar[tuple[Meter, ...]] = ContextVar("booksum_meters", default=())


class Meter:
    """A thread-safe running :class:`Tally` of the calls made while it is open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tally = Tally()

    @property
    def tally(self) -> Tally:
        with self._lock:
            return self._tally

    def add(self, item: Tally) -> None:
        with self._lock:
            self._tally = self._tally + item


@contextmanager
def metering(meter: Meter | None = None) -> Iterator[Meter]:
    """Count the calls made inside (and submitted from inside) on ``meter`` (a new one if None)."""
    meter = meter or Meter()
    token = _OPEN.set((*_OPEN.get(), meter))
    try:
        yield meter
    finally:
        _OPEN.reset(token)


def is_open(meter: Meter) -> bool:
    """Whether ``meter`` is open in the current context (calls made here now count on it)."""
    return any(open_meter is meter for open_meter in _OPEN.get())


def bill(item: Tally) -> None:
    """Add ``item`` to every meter open in the current context."""
    for meter in _OPEN.get():
        meter.add(item)


def open_meters() -> tuple[Meter, ...]:
    """The meters open in the current context, outermost first (a second Ctrl-C reads the run's)."""
    return _OPEN.get()


__all__ = ["Meter", "bill", "is_open", "metering", "open_meters"]
