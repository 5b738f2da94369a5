"""Live progress of a summarization run: strategy events plus the call layer's per-call hook.

Thread-safe; the CLI reads :meth:`RunProgress.snapshot` to draw its progress line.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from booksum_app.llm.calls import CallRecord
from booksum_app.strategies.base import ProgressEvent


@dataclass(frozen=True)
class ProgressSnapshot:
    """What a progress display shows at one moment."""

    stage: str
    done: int
    total: int
    calls: int
    cache_hits: int
    in_flight: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    elapsed_s: float
    planned_calls: int = 0  # the pre-flight plan's calls (an upper bound before regenerations); 0: unknown
    limit: int = 0  # calls allowed in flight now (the adaptive limit); 0: unknown

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far, from the planned calls; None before the first call or past the plan."""
        if not self.planned_calls or not self.calls or self.calls >= self.planned_calls:
            return None
        return self.elapsed_s / self.calls * (self.planned_calls - self.calls)


class RunProgress:
    """Collects strategy progress events and finished calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._stage, self._done, self._total = "starting", 0, 0
        self._calls = self._hits = self._in = self._out = 0
        self._cost = 0.0
        self._model: Any = None
        self._planned = 0
        self.listeners: list[Any] = []

    def set_planned_calls(self, calls: int) -> None:
        """The run's pre-flight plan, for the ETA."""
        with self._lock:
            self._planned = calls

    def attach(self, model: Any) -> None:
        """Remember the model so calls in flight can be shown (a Client has ``in_flight``)."""
        self._model = model

    def on_event(self, event: ProgressEvent) -> None:
        """Strategy hook."""
        with self._lock:
            self._stage, self._done, self._total = event.stage, event.done, event.total
        self._notify()

    def on_call(self, record: CallRecord) -> None:
        """Call-layer hook (``Client(on_call=...)``)."""
        with self._lock:
            self._calls += 1
            self._hits += int(record.cache_hit)
            self._in += record.usage.input_tokens
            self._out += record.usage.output_tokens
            self._cost += record.cost_usd if not record.cache_hit else 0.0
        self._notify()

    def _notify(self) -> None:
        for listener in list(self.listeners):
            listener(self.snapshot())

    def snapshot(self) -> ProgressSnapshot:
        """The current state."""
        in_flight = int(getattr(self._model, "in_flight", 0) or 0)
        limit = int(getattr(self._model, "limit", 0) or 0)
        with self._lock:
            return ProgressSnapshot(
                self._stage,
                self._done,
                self._total,
                self._calls,
                self._hits,
                in_flight,
                self._in,
                self._out,
                self._cost,
                time.perf_counter() - self._start,
                self._planned,
                limit,
            )


__all__ = ["ProgressSnapshot", "RunProgress"]
