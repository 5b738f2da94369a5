"""A model wrapper that tallies the calls answered through it (one job's share of a shared client).

``compare`` shares one client per model across books and ``score`` one judge across systems;
wrapping the client per job gives that job's own :class:`~booksum_app.llm.base.Tally`, counted
the same way everywhere (every answered call, cache hits included, priced with the model's
prices).
"""

from __future__ import annotations

import threading
from typing import Any

from booksum_app.llm.base import ChatModel, Completion, ModelInfo, Request, Tally


class Metered:
    """A ChatModel that forwards to another and sums the tally of the answers it returns."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model
        self._lock = threading.Lock()
        self.tally = Tally()

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

    def _add(self, completion: Completion) -> Completion:
        item = Tally.of_call(self.info, completion.usage, cache_hit=completion.cache_hit,
                             spent_usd=completion.cost_usd)
        with self._lock:
            self.tally = self.tally + item
        return completion

    def complete(self, request: Request) -> Completion:
        return self._add(self._model.complete(request))

    def submit(self, request: Request, *, priority: Any = 0) -> Any:
        future = self._model.submit(request, priority=priority)
        future.add_done_callback(  # a cancelled future has no exception to ask for: it raises
            lambda f: None if f.cancelled() or f.exception() else self._add(f.result())
        )
        return future

    def complete_many(self, requests: Any) -> list[Completion]:
        return [self._add(c) for c in self._model.complete_many(requests)]


__all__ = ["Metered"]
