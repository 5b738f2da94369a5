"""How the judge's requests reach the model: in order, a bounded window ahead, caches warmed first.

Requests are built lazily and pulled only as slots free up (:func:`answer_in_order`), so a
long run never holds every request in memory. A provider's prompt cache (OpenAI's automatic
prefix cache, Anthropic's ``cache_control`` breakpoints) only serves calls that start after
the call that wrote it: a first wave of concurrent calls on a new prefix all miss and all pay
full price (Anthropic: all pay the 1.25x cache write). So the first request on each prefix
(:class:`WarmUp`) is answered alone before any later request is sent; the rest fan out after.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from itertools import islice

from booksum_app.llm.base import Backend, BatchBackend, ChatModel, Completion, Request

# Requests built and not yet answered, per slot of the model's concurrency: enough to keep
# every slot busy, small enough that memory does not grow with the number of sentences.
WINDOW_PER_SLOT = 4
DEFAULT_WINDOW_SLOTS = 8  # a model that does not say its concurrency
BATCH_WINDOW = 256  # requests per complete_many batch (vLLM wants whole batches; opaque wrappers)


@dataclass
class WarmUp:
    """The cacheable prefixes already sent once; ``key`` names a request's prefix."""

    key: Callable[[Request], str]
    seen: set[int] = field(default_factory=set)  # hashes, not the (long) prefixes themselves

    def first(self, request: Request) -> bool:
        """Whether ``request`` is the first on its prefix (and mark the prefix seen)."""
        digest = hash(self.key(request))
        if digest in self.seen:
            return False
        self.seen.add(digest)
        return True


def _streams(model: ChatModel) -> bool:
    """Whether ``model`` is known to answer single submitted calls (not a batch engine).

    A model that shows its backend (``Client``) is; an opaque wrapper is given batches
    through ``complete_many``, which it routes as it likes.
    """
    backend = getattr(model, "backend", None)
    return isinstance(backend, Backend) and not isinstance(backend, BatchBackend)


def _batch_engine(model: ChatModel) -> bool:
    return isinstance(getattr(model, "backend", None), BatchBackend)


def request_window(model: ChatModel) -> int:
    """How many requests :func:`answer_in_order` keeps built and unanswered for ``model``."""
    if not _streams(model):
        return BATCH_WINDOW
    slots = getattr(model, "concurrency", None)
    return WINDOW_PER_SLOT * (slots if isinstance(slots, int) and slots > 0 else DEFAULT_WINDOW_SLOTS)


def answer_in_order(
    model: ChatModel, requests: Iterable[Request], *, window: int, warm_up: WarmUp | None = None
) -> Iterator[Completion]:
    """Answer ``requests`` in order, pulling at most ``window`` of them ahead of the answers.

    Requests are taken from the iterable only as slots free up, so a lazy iterable is never
    materialised; batch backends and opaque wrappers get ``complete_many`` batches of
    ``window``. With ``warm_up``, the first request on each prefix is answered before any
    later one is sent (a batch engine, which shares prefixes inside a batch, is not held
    back). An error (``CostLimitExceeded``, a model failure) stops submission, cancels what
    has not started, and propagates after the answers before it.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    source = iter(requests)
    if not _streams(model):
        warm = None if _batch_engine(model) else warm_up
        while chunk := list(islice(source, window)):
            yield from _answer_chunk(model, chunk, warm)
        return
    in_flight: deque[Future[Completion]] = deque()
    try:
        for request in source:
            future = model.submit(request)
            in_flight.append(future)
            if warm_up is not None and warm_up.first(request):
                wait([future])  # the calls after it read the prefix it wrote
                if future.exception() is not None:
                    break  # send nothing more; the error surfaces in order below
            if len(in_flight) >= window:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        for future in in_flight:
            future.cancel()


def _answer_chunk(model: ChatModel, chunk: list[Request], warm_up: WarmUp | None) -> Iterator[Completion]:
    """One ``complete_many`` batch, after answering alone each request that opens a prefix."""
    if warm_up is None:
        yield from model.complete_many(chunk)
        return
    start = 0
    for i, request in enumerate(chunk):
        if warm_up.first(request):
            if i > start:
                yield from model.complete_many(chunk[start:i])
            yield model.complete(request)
            start = i + 1
    if start < len(chunk):
        yield from model.complete_many(chunk[start:])


__all__ = ["BATCH_WINDOW", "WINDOW_PER_SLOT", "WarmUp", "answer_in_order", "request_window"]
