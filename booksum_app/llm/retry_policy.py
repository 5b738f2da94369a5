"""When a failed call is tried again, how long it waits, and which failures end it at once.

The call layer (``calls.Client``) retries ``RateLimited`` and ``TransientModelError`` with
exponential backoff and full jitter (tenacity), honouring a server's ``Retry-After`` up to
``RETRY_AFTER_MAX_S``. The errors here are the ones it raises or returns instead of retrying:
a wait the server asks for that is too long to sit out silently, an empty answer cut at the
token limit (the same request would be cut the same way), a reasoning model's budget spent
on hidden tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, wait_random_exponential

from booksum_app.errors import ModelError, TransientModelError
from booksum_app.llm.base import BackendBase, Completion

DEFAULT_MAX_ATTEMPTS = 6
BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
# a server that asks for a longer wait than this is not waited for: the call fails at once
# with the server's figure (a run that sits silent for minutes looks hung; rerun later)
RETRY_AFTER_MAX_S = 120.0


class ServerAskedToWait(ModelError):
    """A Retry-After longer than booksum waits: not retried."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BudgetSpentOnReasoning(ModelError):
    """A reasoning model spent the whole completion budget on hidden tokens: resending is futile."""


class EmptyReply(TransientModelError):
    """An empty answer: retried like a transient failure (it was paid for: it is billed first)."""

    def __init__(self, completion: Completion) -> None:
        super().__init__("the model returned an empty reply")
        self.completion = completion


class CutEmpty(ModelError):
    """An empty answer cut at the token limit: the same request would be cut the same way."""

    def __init__(self, completion: Completion) -> None:
        super().__init__("the model's answer was cut at the token limit before any text")
        self.completion = completion


def retry_wait(initial_s: float, max_s: float) -> Callable[[RetryCallState], float]:
    jitter = wait_random_exponential(multiplier=initial_s, max=max_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(exc, "retry_after_s", None)
        if retry_after is not None and retry_after >= 0:
            return float(min(retry_after, RETRY_AFTER_MAX_S))  # longer ones were not retried
        return float(jitter(state))

    return wait


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, if present and numeric."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            seconds = float(ms) / 1000
        else:
            value = headers.get("retry-after")
            if value is None:
                return None
            seconds = float(value)
    except (TypeError, ValueError):
        return None  # an HTTP date or junk: fall back to our own backoff
    return max(0.0, seconds) if math.isfinite(seconds) else None


def cut_empty_error(name: str, completion: Completion) -> ModelError:
    """The error for an answer cut at the limit with no text: resending it would be cut again."""
    if completion.reasoning_tokens:
        return BudgetSpentOnReasoning(
            f"{name} spent its whole budget of {completion.usage.output_tokens:,} completion tokens on "
            f"hidden reasoning ({completion.reasoning_tokens:,} tokens) and wrote no answer; lower "
            "--reasoning-effort or raise the summary length"
        )
    return CutEmpty(completion)


class ReasoningOnly(ModelError):
    """A reply with reasoning and no answer: the model spent its room thinking, so resending is futile."""


def reasoning_only_error(name: str, completion: Completion, advice: str) -> ModelError:
    """The one line for a model that only reasoned (its answer's room spent on reasoning): what to do."""
    cut = " and was cut at its token limit" if completion.cut_off else ""
    hidden = f" ({completion.reasoning_tokens:,} tokens)" if completion.reasoning_tokens else ""
    return ReasoningOnly(
        f"{name} only reasoned: its reply held {completion.reasoning_chars:,} characters of reasoning{hidden} and no "
        f"answer{cut}; {advice}"
    )


class Reasoning:
    """A backend's hidden reasoning as the call layer sees it: the room each request gets, read per call,
    the ``--thinking`` mode, and what an answer without text means.

    A thinking model seen mid-run gets room from then on (the backend's ``extra_output_tokens``
    grows): ``note`` is told once.
    """

    def __init__(self, backend: BackendBase, note: Callable[[str | None], None]) -> None:
        self.backend, self._note = backend, note
        self._at_start = backend.extra_output_tokens

    @staticmethod
    def key_parts(backend: BackendBase) -> dict[str, str]:
        """What the call cache key adds: the ``--thinking`` mode when one is sent (absent for auto)."""
        return {} if backend.thinking == "auto" else {"thinking": str(backend.thinking)}

    @property
    def mode(self) -> str:
        """The ``--thinking`` mode the backend sends ("auto": none), part of the summary's signature."""
        return self.backend.thinking

    @property
    def tokens(self) -> int:
        """The room now (what a plan counts per call, and the cost ceiling per request)."""
        room = self.backend.extra_output_tokens
        if room > self._at_start:
            self._note(thinking_seen_note(self.backend.info.name, room))
        return room

    def empty_error(self, completion: Completion, *, sent_tokens: int) -> ModelError:
        """The error for a reply with no answer: a model that only reasoned (:class:`ReasoningOnly`, or
        :class:`EmptyReply` when the request went out with less room than the model has now), one cut at
        the limit (:func:`cut_empty_error`), else :class:`EmptyReply` (retried)."""
        if completion.reasoning_chars:
            if self.tokens > sent_tokens:  # sent before the model was seen thinking: resent with room
                return EmptyReply(completion)
            return reasoning_only_error(self.backend.info.name, completion, self.backend.reasoning_advice)
        return cut_empty_error(self.backend.info.name, completion) if completion.cut_off else EmptyReply(completion)

    def check(self, completion: Completion) -> None:
        """Raise :class:`ReasoningOnly` for a reply with reasoning and no answer (a batch's)."""
        if not completion.text.strip() and completion.reasoning_chars:
            raise reasoning_only_error(self.backend.info.name, completion, self.backend.reasoning_advice)


def thinking_mode(model: object) -> str:
    """The ``--thinking`` mode ``model`` (a client, or a wrapper of one) sends; "auto" for anything else."""
    backend = getattr(model, "backend", None)
    return str(backend.thinking) if isinstance(backend, BackendBase) else "auto"


def reasoning_room_tokens(model: object) -> int:
    """The room each request of ``model`` (a client, or a wrapper of one) gets for reasoning now: a plan counts it."""
    backend = getattr(model, "backend", None)
    return int(backend.extra_output_tokens) if isinstance(backend, BackendBase) else 0


def thinking_seen_note(name: str, room_tokens: int) -> str:
    """The run's one line when a model is seen thinking mid-run and its requests get room for it."""
    return (f"{name} thinks before it answers (seen in its replies): each request from then on asked for "
            f"{room_tokens:,} more tokens for its reasoning (--thinking off turns it off where the server allows)")


def too_long_a_wait(name: str, exc: ModelError) -> ServerAskedToWait | None:
    """A server asking for a wait past RETRY_AFTER_MAX_S: the error to fail with now, else None."""
    wait = getattr(exc, "retry_after_s", None)
    if wait is not None and wait > RETRY_AFTER_MAX_S:
        return ServerAskedToWait(
            f"{name}: the server asks to wait {wait:,.0f} s before the next try ({exc}); "
            "rerun later: completed calls are cached", retry_after_s=wait,
        )
    return None


__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "DEFAULT_MAX_ATTEMPTS",
    "RETRY_AFTER_MAX_S",
    "BudgetSpentOnReasoning",
    "CutEmpty",
    "EmptyReply",
    "Reasoning",
    "ReasoningOnly",
    "ServerAskedToWait",
    "cut_empty_error",
    "reasoning_only_error",
    "retry_after_seconds",
    "retry_wait",
    "thinking_seen_note",
    "too_long_a_wait",
]
