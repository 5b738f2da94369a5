"""What the call cache already holds of a summarize run: a rerun that replays is planned at $0.

The pre-flight plan (:mod:`booksum_app.runners.plan`) bounds what a run could spend; a rerun
whose every call is in booksum's call cache spends nothing. :func:`replayed_calls` runs the
strategy (and cleaning) against the cache alone: each request is looked up, never sent, and
the first one missing stops the replay at once (a first run costs one look-up). Like
``score``'s plan (``judge_plan.unreplayed``), a run that replays whole is planned free, so it
runs without ``--yes``; a partly cached run keeps the full upper bound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from booksum_app.llm.base import ChatModel, Completion, ModelInfo, Request


class CacheMiss(Exception):
    """A request of the replay that the call cache does not hold."""


class CacheReplay:
    """A :class:`ChatModel` that answers only from ``client``'s call cache (see module docstring)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.answered = 0
        # a miss met on a thread the strategy started may never reach run()'s caller (the thread
        # dies, run() returns what it has): the replay remembers it, and is then no replay
        self.missed = False
        self.closed = False

    @property
    def info(self) -> ModelInfo:
        return self._client.info  # type: ignore[no-any-return]

    def count_tokens(self, text: str) -> int:
        return self._client.count_tokens(text)  # type: ignore[no-any-return]

    def complete(self, request: Request) -> Completion:
        completion = None if self.closed else self._client.cached_answer(request)
        with self._lock:
            if completion is None:
                self.missed = True
                raise CacheMiss(request.purpose)
            self.answered += 1
        return completion  # type: ignore[no-any-return]

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]:
        future: Future[Completion] = Future()
        future.set_result(self.complete(request))  # a miss raises here: the replay stops at once
        return future

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        return [self.complete(r) for r in requests]


def replayed_calls(chat: ChatModel, run: Callable[[ChatModel], object]) -> int | None:
    """Calls a run made of ``run(model)`` takes when every one is in ``chat``'s call cache; None when
    one is not (or ``chat`` has no cache)."""
    if getattr(chat, "cache", None) is None or not callable(getattr(chat, "cached_answer", None)):
        return None
    replay = CacheReplay(chat)
    try:
        run(replay)
    except CacheMiss:
        return None
    finally:
        replay.closed = True  # a thread that outlives the replay asks nothing more of the cache
    return None if replay.missed else replay.answered


__all__ = ["CacheMiss", "CacheReplay", "replayed_calls"]
