"""Which run and which book a model call belongs to, so ``booksum logs`` can say so later,
and where the caller's calls stand in line (``rank``).

A context variable rather than a client attribute: one client serves many books at once in
``compare`` (one worker thread per book), so the label must follow the caller, not the client.
:meth:`~booksum_app.llm.calls.Client.submit` copies the caller's context into the worker
that makes the call; code that starts its own threads copies it the same way
(``contextvars.copy_context().run``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class CallContext:
    """Labels stored with each call; None when the caller never set them."""

    run: str | None = None  # new_run_id() of the command or library call that made it
    book: str | None = None  # the book's file name (or title when it has no file)
    # calls of a lower rank start first when calls wait for a slot; compare gives each book its
    # place in the grid, so books started earlier finish first and later books fill free slots
    rank: int = 0


_NONE = CallContext()
_CURRENT: ContextVar[CallContext | None] = ContextVar("booksum_call_context", default=None)


def current_context() -> CallContext:
    """The labels calls made here now get."""
    return _CURRENT.get() or _NONE


def ranked(priority: Any) -> tuple[Any, ...]:
    """A call's place in line: the caller's rank first, then ``priority`` (a value or a tuple)."""
    return (current_context().rank, *(priority if isinstance(priority, tuple) else (priority,)))


def new_run_id() -> str:
    """A run id that sorts by start time and is unique enough to paste: ``20250611-142233-3f9a``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@contextmanager
def call_context(
    *, run: str | None = None, book: str | None = None, rank: int | None = None
) -> Iterator[CallContext]:
    """Label the calls made inside (and the calls submitted from inside) with ``run``, ``book`` and ``rank``.

    A field left None keeps the outer value.
    """
    outer = current_context()
    inner = replace(outer, run=outer.run if run is None else run, book=outer.book if book is None else book,
                    rank=outer.rank if rank is None else rank)
    token = _CURRENT.set(inner)
    try:
        yield inner
    finally:
        _CURRENT.reset(token)


@contextmanager
def default_context(*, book: str | None = None) -> Iterator[CallContext]:
    """Fill in only what the caller has not set: a new run id, and ``book``.

    ``summarize_book`` called by ``compare`` keeps compare's run and book; called on its own it
    starts a run of its own.
    """
    outer = current_context()
    with call_context(run=None if outer.run else new_run_id(), book=None if outer.book else book) as inner:
        yield inner


__all__ = ["CallContext", "call_context", "current_context", "default_context", "new_run_id", "ranked"]
