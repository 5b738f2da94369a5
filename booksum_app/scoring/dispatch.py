"""How the judge's requests reach the model: in order, a bounded window ahead, caches warmed first.

Requests are built lazily and pulled only as slots free up (:func:`answer_in_order`), so a
long run never holds every request in memory. A provider's prompt cache (OpenAI's automatic
prefix cache, Anthropic's ``cache_control`` breakpoints) only serves calls that start after
the call that wrote it: a first wave of concurrent calls on a new prefix all miss and all pay
full price (Anthropic: all pay the 1.25x cache write). So the first request on each prefix
(:class:`WarmUp`) is answered before any later request on that prefix is sent, and the run's
very first request alone (it caches the instructions all prefixes share); after it, requests
on other prefixes keep flowing while a prefix warms, so the warm-ups of many summaries overlap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
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

    def digest(self, request: Request) -> int:
        """The hash that names ``request``'s prefix."""
        return hash(self.key(request))

    def first(self, request: Request) -> bool:
        """Whether ``request`` is the first on its prefix (and mark the prefix seen)."""
        digest = self.digest(request)
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
    later request on that prefix is sent, while other prefixes' requests go on (a batch
    engine, which shares prefixes inside a batch, is not held back). An error
    (``CostLimitExceeded``, a model failure) in a warm-up stops submission; any error cancels
    what has not started and propagates after the answers before it.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    source = iter(requests)
    if not _streams(model):
        warm = None if _batch_engine(model) else warm_up
        while chunk := list(islice(source, window)):
            yield from _answer_chunk(model, chunk, warm)
        return
    yield from _Stream(model, source, window, warm_up).answers()


@dataclass
class _Slot:
    """One request in order: sent (``future``), or held until its prefix's warm-up is answered."""

    request: Request
    digest: int | None
    future: Future[Completion] | None = None


class _Stream:
    """:func:`answer_in_order` for a model that answers submitted calls one by one.

    The run's first request goes alone (it caches the instructions every prefix starts with).
    After it, a request that opens a prefix is sent at once and the later requests on that
    prefix are held until it is answered, while requests on other prefixes keep being pulled
    and sent: many summaries warm at once and every slot stays busy (one summary warming at a
    time kept 36 of 128 slots busy over 40 summaries).
    """

    def __init__(self, model: ChatModel, source: Iterator[Request], window: int, warm_up: WarmUp | None) -> None:
        self.model, self.source, self.window, self.warm_up = model, source, window, warm_up
        self.slots: deque[_Slot] = deque()
        self.warming: dict[int, Future[Completion]] = {}  # prefix digest -> its first call
        self.held: dict[int, list[_Slot]] = {}
        self.stopped = False  # a warm-up failed: nothing more is pulled or released
        self.opening: Future[Completion] | None = None  # the run's first warm-up

    def answers(self) -> Iterator[Completion]:
        try:
            self.pull()
            while self.slots:
                head = self.slots[0]
                if head.future is not None and head.future.done():
                    self.slots.popleft()
                    yield head.future.result()
                    self.pull()
                    continue
                if head.future is None and head.digest not in self.warming:  # its warm-up is answered
                    head.future = self.model.submit(head.request)
                    continue
                waited = {*self.warming.values(), *([head.future] if head.future is not None else [])}
                wait(waited, return_when=FIRST_COMPLETED)
                self.release()
                self.pull()
        finally:
            for slot in self.slots:
                if slot.future is not None:
                    slot.future.cancel()

    def pull(self) -> None:
        while not self.stopped and len(self.slots) < self.window:
            if self.opening is not None and not self.opening.done():
                return  # the run's first call goes alone: every prefix shares its instructions
            request = next(self.source, None)
            if request is None:
                return
            slot = _Slot(request, None)
            if self.warm_up is None:
                slot.future = self.model.submit(request)
            else:
                slot.digest = self.warm_up.digest(request)
                if self.warm_up.first(request):
                    slot.future = self.warming[slot.digest] = self.model.submit(request)
                    self.opening = self.opening or slot.future
                elif slot.digest in self.warming:
                    self.held.setdefault(slot.digest, []).append(slot)
                else:
                    slot.future = self.model.submit(request)
            self.slots.append(slot)

    def release(self) -> None:
        """Send the requests held behind every warm-up that has been answered."""
        for digest, future in list(self.warming.items()):
            if not future.done():
                continue
            del self.warming[digest]
            held = self.held.pop(digest, [])
            if future.cancelled() or future.exception() is not None:
                self.stopped = True  # send nothing more; the error surfaces in order
                continue
            for slot in held:
                if not self.stopped:
                    slot.future = self.model.submit(slot.request)


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
