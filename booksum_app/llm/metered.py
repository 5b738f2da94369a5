"""A model wrapper that tallies the calls made through it (one job's share of a shared client).

``compare`` shares one client per model across books and ``score`` one judge across systems;
wrapping the client per job gives that job's own :class:`~booksum_app.llm.base.Tally`. The
tally is a :class:`~booksum_app.llm.meter.Meter` opened around each call, so it holds what the
client billed: every paid reply (retried and empty ones too) and every answered call, cache
hits included, priced with the model's prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from booksum_app.llm.base import ChatModel, Completion, ModelInfo, Request, Tally
from booksum_app.llm.meter import Meter, metering


class Metered:
    """A ChatModel that forwards to another and counts, on its own meter, what the calls cost."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model
        self._meter = Meter()

    @property
    def tally(self) -> Tally:
        """What the calls made through this wrapper cost (a running total)."""
        return self._meter.tally

    @property
    def info(self) -> ModelInfo:
        return self._model.info

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    @property
    def backend(self) -> Any:
        """The wrapped model's backend, so the judge streams through it (and warms its cache)."""
        return getattr(self._model, "backend", None)

    @property
    def concurrency(self) -> Any:
        return getattr(self._model, "concurrency", None)

    def complete(self, request: Request) -> Completion:
        with metering(self._meter):
            return self._model.complete(request)

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]:
        with metering(self._meter):  # the client copies this context into the worker thread
            return self._model.submit(request, priority=priority)

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        with metering(self._meter):
            return self._model.complete_many(requests)


__all__ = ["Metered"]
