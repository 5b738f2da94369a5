"""The model one run hands its strategy: every call through it is the run's, whatever thread makes it.

A run counts its money on a :class:`~booksum_app.llm.meter.Meter` and labels its calls with its
run id and book (``booksum logs``); both live in the run's context. A strategy that calls the
model from threads of its own (``threading.Thread``) calls it outside that context, so the
client itself carries it: :class:`RunClient` keeps a copy of the context it was made in and
runs every call made from another thread in a copy of it. The run is counted on its meter and
the call log names its run and book, whoever calls.

When the strategy's ``run()`` returns, the run closes its client: the calls still in flight
are waited for (so the record counts them), and a call made after that is refused before
anything is sent (one line, nothing paid).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from booksum_app.errors import BooksumError
from booksum_app.llm.base import ChatModel, Completion, ModelInfo, Request
from booksum_app.llm.meter import Meter, is_open

T = TypeVar("T")


class RunClosed(BooksumError):
    """A call through a run's client after the run ended: refused, never sent, nothing paid."""


class RunClient:
    """A :class:`ChatModel` bound to one run (see the module docstring); other members read through."""

    def __init__(self, model: ChatModel, meter: Meter, *, strategy: str = "") -> None:
        self._model = model
        self._meter = meter
        self._strategy = strategy
        self._context = contextvars.copy_context()  # the run's labels and open meters, for other threads
        self._idle = threading.Condition()
        self._in_flight = 0
        self._closed = False
        self.refused = 0  # calls made after the run ended

    @property
    def info(self) -> ModelInfo:
        return self._model.info

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def __getattr__(self, name: str) -> Any:  # tokenizer_name, notes, backend, cache, ...: the model's own
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._model, name)

    def complete(self, request: Request) -> Completion:
        return self._call(self._model.complete, request)

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]:
        self._enter()
        try:
            future = self._in_run(lambda: self._model.submit(request, priority=priority))
        except BaseException:
            self._leave()
            raise
        future.add_done_callback(lambda _f: self._leave())
        return future

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        return self._call(self._model.complete_many, requests)

    def close(self, *, wait: bool = True) -> None:
        """Refuse calls from now on; with ``wait``, return once the calls in flight have ended."""
        with self._idle:
            self._closed = True
            while wait and self._in_flight:
                self._idle.wait()

    def _call(self, method: Callable[[Any], T], argument: Any) -> T:
        self._enter()
        try:
            return self._in_run(lambda: method(argument))
        finally:
            self._leave()

    def _in_run(self, call: Callable[[], T]) -> T:
        if is_open(self._meter):  # the run's own thread, or a worker it submitted from
            return call()
        return self._context.copy().run(call)  # a thread the strategy started: the run's context

    def _enter(self) -> None:
        with self._idle:
            if self._closed:
                self.refused += 1
                who = f"strategy {self._strategy!r}" if self._strategy else "a strategy"
                raise RunClosed(f"{who} called the model after its run() returned; the call was refused "
                                "(not sent, not paid): join your threads before run() returns")
            self._in_flight += 1

    def _leave(self) -> None:
        with self._idle:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.notify_all()


@contextmanager
def run_client(model: ChatModel, meter: Meter, *, strategy: str = "") -> Iterator[RunClient]:
    """A :class:`RunClient` for the run inside; closed at the end (waiting for its calls unless it failed)."""
    client = RunClient(model, meter, strategy=strategy)
    try:
        yield client
    except BaseException:
        client.close(wait=False)  # the failure goes out now; the meter still counts calls that end later
        raise
    client.close()


__all__ = ["RunClient", "RunClosed", "run_client"]
