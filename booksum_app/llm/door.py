"""The door every backend's answer comes through, built-in or plugin: a bound, a check, one line.

:class:`Door` is how the call layer (``llm/calls.py``) calls ``backend.complete``:

- **A wall-clock bound on every attempt.** A backend that cuts its own attempts at the deadline
  (``BackendBase.bounds_own_attempts``: the built-in HTTP carriers, whose transports free the
  socket, and in-process models) is called on the caller's thread. Any other backend (a plugin
  written with ``urllib``, whose timeout bounds one read, not a reply) runs on a worker thread
  inside :func:`~booksum_app.llm.deadline.attempt_deadline` (so ``booksum_app.plugin.post_json``
  sees the deadline); at the deadline the door gives up with a :class:`TransientModelError`
  (retried, then exit 4) and the worker is abandoned. One exception: an attempt that is inside
  ``post_json`` at the deadline is bounded by that same deadline (post_json marks it,
  :func:`~booksum_app.llm.deadline.self_bounded`), so the door waits up to
  :data:`SELF_BOUND_GRACE_S` for its own timeout error instead of abandoning the thread. A
  backend that bounds itself is called on the caller's thread, inside the same deadline. A reply
  that still arrives later was paid for: it is handed to ``on_late`` (the call layer bills it as a
  wasted reply). At most :data:`MAX_ABANDONED` abandoned attempts of one backend may still run
  at once: past that the next attempt fails at once with one line, so threads cannot pile up.
- **Every Completion is checked** (:func:`checked`): a ``str`` or anything else that is not a
  :class:`Completion`, text or a finish reason that is not text, is a :class:`ModelError`;
  usage that is not non-negative integer counts (or all zero: ``Completion``'s default) is
  treated as no usage (the call layer counts the call with the tokenizer, as for a server's
  reply); ``cache_hit`` is booksum's cache's to say, never the backend's.
- **Every failure is one redacted line** (:func:`translated`): booksum errors keep their class
  with their text redacted; ``OSError``/``http.client`` failures are a :class:`TransientModelError`
  (retried); any other exception, and a ``BaseException`` such as ``SystemExit(0)``, is a
  :class:`ModelError` (exit 4). Only ``KeyboardInterrupt`` passes through. Redaction
  (:mod:`booksum_app.redaction`) removes the backend's keys and the value of every environment
  variable whose name says it holds a credential, by value, and credentials by their shape.
"""

from __future__ import annotations

import contextvars
import dataclasses
import http.client
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from booksum_app.config import checked_count, checked_real, is_int, is_real
from booksum_app.errors import (
    BooksumError,
    ModelError,
    TransientModelError,
    environment_secrets,
    redact,
    server_message,
)
from booksum_app.llm.base import MAX_CHARS_PER_TOKEN, Backend, Completion, Request, Usage
from booksum_app.llm.deadline import attempt_deadline, watched_attempt
from booksum_app.llm.origin import public_url

MAX_ABANDONED = 16  # attempts past their deadline that may still run, per backend
# an attempt inside post_json stops at the deadline by itself: the door waits this long more for
# that timeout error before it abandons the thread (it never needs to, unless the plugin also blocks)
SELF_BOUND_GRACE_S = 2.0
MAX_ROOM_FACTOR = 4  # an answer of more tokens than this times its room was not cut at max_tokens
SLACK_CHARS, SLACK_TOKENS = 1024, 256  # on top: a tokenizer other than the model's may count a short answer high


class _InFlight:
    """The attempts in flight in this process and when each began: what a Ctrl-C waits for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._began: dict[int, float] = {}
        self._next = 0

    def begin(self) -> int:
        with self._lock:
            self._next += 1
            self._began[self._next] = time.monotonic()
            return self._next

    def end(self, token: int) -> None:
        with self._lock:
            self._began.pop(token, None)

    def snapshot(self) -> tuple[int, float]:
        """Attempts in flight, and for how many seconds the longest has run (0 when none)."""
        with self._lock:
            oldest = min(self._began.values(), default=None)
            return len(self._began), 0.0 if oldest is None else time.monotonic() - oldest


ATTEMPTS = _InFlight()


def attempts_in_flight() -> tuple[int, float]:
    """Attempts in flight through every door of this process, and the longest one's age in seconds."""
    return ATTEMPTS.snapshot()


class Door:
    """Calls one backend's ``complete``: bounded, checked, failures as one redacted line."""

    def __init__(self, backend: Backend, *, name: str, timeout_s: float | None,
                 on_late: Callable[[Request, Completion], None], secrets: Sequence[str] = ()) -> None:
        self.backend = backend
        self.name = name
        self.secrets = tuple(secrets)  # the keys the backend was built with, removed from its messages
        self.deadline_s = timeout_s  # --timeout: every attempt runs inside it (post_json reads it)
        # the door's own bound applies to backends that do not bound their attempts themselves
        guarded = timeout_s is not None and not backend.bounds_own_attempts
        self.timeout_s = timeout_s if guarded else None
        self._on_late = on_late
        self._lock = threading.Lock()
        self.abandoned = 0  # attempts given up at their deadline and still running

    def call(self, request: Request) -> Completion:
        """One attempt: the backend's checked answer, or a booksum error."""
        start = time.perf_counter()
        token = ATTEMPTS.begin()
        try:
            if self.timeout_s is None:  # the backend stops at the deadline itself: on this thread, inside it
                try:
                    if self.deadline_s is None:
                        reply = self.backend.complete(request)
                    else:
                        with attempt_deadline(self.deadline_s):
                            reply = self.backend.complete(request)
                except BaseException as exc:
                    raise translated(exc, self.name, self.secrets) from exc
            else:
                reply = self._bounded(request, self.timeout_s)
        finally:
            ATTEMPTS.end(token)
        return checked(reply, name=self.name, latency_s=time.perf_counter() - start)

    def _bounded(self, request: Request, timeout_s: float) -> Any:
        with self._lock:
            if self.abandoned >= MAX_ABANDONED:
                raise ModelError(
                    f"{self.name}: {self.abandoned} attempts given up at --timeout ({timeout_s:g} s) are still "
                    "running; the backend does not stop at its deadline (a plugin can send with "
                    "booksum_app.plugin.post_json, which does)"
                )
        attempt = _Attempt()
        context = contextvars.copy_context()  # the caller's run and book labels, and its meters

        def work() -> None:
            try:
                with attempt_deadline(timeout_s), watched_attempt(attempt.self_bounded):
                    attempt.reply = self.backend.complete(request)
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller's thread, or dropped if late
                attempt.error = exc
            with self._lock:
                late = attempt.abandoned
                attempt.done.set()
            if late:
                try:
                    if attempt.error is None:
                        self._late(request, attempt.reply)
                finally:  # counted as running until its reply is billed
                    with self._lock:
                        self.abandoned -= 1

        worker = threading.Thread(target=context.run, args=(work,), name="booksum-attempt", daemon=True)
        worker.start()
        finished = attempt.done.wait(timeout_s)
        if not finished and attempt.self_bounded.is_set():  # inside post_json: it stops at this deadline
            finished = attempt.done.wait(SELF_BOUND_GRACE_S)
        if not finished:
            with self._lock:
                if not attempt.done.is_set():
                    attempt.abandoned = True
                    self.abandoned += 1
            if attempt.abandoned:
                raise TransientModelError(f"{self.name}: request timed out (no reply within --timeout "
                                          f"{timeout_s:g} s; the attempt was abandoned)")
        if attempt.error is not None:
            raise translated(attempt.error, self.name, self.secrets) from attempt.error
        return attempt.reply

    def _late(self, request: Request, reply: Any) -> None:
        """A reply that came after its attempt was given up: paid, so billed (never used)."""
        try:
            completion = checked(reply, name=self.name, latency_s=0.0)
            self._on_late(request, completion)
        except Exception:  # noqa: BLE001, S110 -- not an answer, or the client closed meanwhile: a worker
            pass  # thread must not print a traceback after its caller moved on


@dataclasses.dataclass
class _Attempt:
    reply: Any = None
    error: BaseException | None = None
    abandoned: bool = False
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    # set while the attempt is inside a transport bounded by the same deadline (deadline.self_bounded)
    self_bounded: threading.Event = dataclasses.field(default_factory=threading.Event)


def translated(exc: BaseException, name: str, secrets: Sequence[str] = ()) -> BaseException:
    """``exc`` raised by a backend, as the booksum error it stands for, its text redacted (``secrets``
    and every secret of the environment)."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    known = [*secrets, *environment_secrets()]
    if isinstance(exc, BooksumError):
        text = str(exc)
        clean = redact(text, *known)
        if clean != text:
            exc.args = (clean,)
        return exc
    detail = server_message(str(exc), *known)
    kind = type(exc).__name__
    if isinstance(exc, OSError | http.client.HTTPException):  # urllib's URLError, a reset, a socket timeout
        return TransientModelError(f"{name}: the backend's connection failed ({kind}: {detail})")
    if isinstance(exc, Exception):
        return ModelError(f"{name}: the backend failed ({kind}: {detail})")
    return ModelError(f"{name}: the backend raised {kind} ({detail or 'no message'}) instead of answering")


MAX_CONCURRENCY = 10_000  # a backend's declared calls in flight; threads are few hundred


def checked(reply: Any, *, name: str, latency_s: float) -> Completion:
    """``reply`` as a :class:`Completion` booksum can count, or :class:`ModelError` when it is not one."""
    if not isinstance(reply, Completion):
        raise ModelError(f"{name}: the backend returned a {type(reply).__name__}, not a Completion")
    if not isinstance(reply.text, str):
        raise ModelError(f"{name}: the backend's Completion has a {type(reply.text).__name__} as its text")
    if not isinstance(reply.finish_reason, str):
        raise ModelError(f"{name}: the backend's Completion has a {type(reply.finish_reason).__name__} "
                         "as its finish reason")
    usage = reply.usage
    counts = isinstance(usage, Usage) and all(_is_count(getattr(usage, f.name)) for f in dataclasses.fields(Usage))
    counts = counts and usage.cached_input_tokens + usage.cache_write_input_tokens <= usage.input_tokens
    # Completion's default Usage() says nothing: no reply to a prompt costs zero tokens
    counts = counts and usage.input_tokens + usage.output_tokens > 0
    reasoning = reply.reasoning_tokens if counts and _is_count(reply.reasoning_tokens) else 0
    latency = reply.latency_s
    fine_latency = is_real(latency)
    return Completion(
        text=reply.text,
        finish_reason=reply.finish_reason,
        usage=usage if counts else Usage(),
        model=reply.model if isinstance(reply.model, str) else "",
        latency_s=float(latency) if fine_latency and latency >= 0 else latency_s,
        cost_usd=0.0,  # the call layer prices every reply
        cache_hit=False,  # only booksum's cache replays answers
        usage_reported=bool(reply.usage_reported is True and counts),
        reasoning_tokens=min(reasoning, usage.output_tokens) if counts else 0,
        think_chars_removed=reply.think_chars_removed if _is_count(reply.think_chars_removed) else 0,
        reasoning_chars=reply.reasoning_chars if _is_count(reply.reasoning_chars) else 0,
        server=reply.server if _is_public_url(reply.server) else None,
    )


def _is_public_url(server: object) -> bool:
    """Whether a backend's ``server`` (the replica that answered) is URLs in the public form the cache
    stores: anything else (a password, a query, not text) is not kept rather than stored."""
    if not isinstance(server, str) or not server.strip() or len(server) > 4096:
        return False
    return all(public_url(u) == u.strip() for u in server.split(",") if u.strip())


def checked_members(backend: Any) -> None:
    """A backend whose numbers booksum can plan and bill with (a plugin's ``info``, reasoning room and
    concurrency pass the one rule of :func:`~booksum_app.config.checked_count`), else one line.

    Raises:
        TypeError: not a backend (derive it from BackendBase).
        ConfigError: a member out of range (``extra_output_tokens = -50``, a window of 10**30).
    """
    if not isinstance(backend, Backend):  # BackendBase: every member the client reads has a default
        raise TypeError(f"{type(backend).__name__} is not a backend: derive it from booksum_app.plugin.BackendBase")
    info, name = backend.info, type(backend).__name__
    checked_count(backend.extra_output_tokens, what=f"backend {name}'s extra_output_tokens")  # hidden reasoning room
    checked_count(backend.default_concurrency, what=f"backend {name}'s default_concurrency", minimum=1,
                  maximum=MAX_CONCURRENCY)
    checked_count(info.context_window, what=f"backend {name}'s info.context_window", minimum=1)
    if info.max_output_tokens is not None:
        checked_count(info.max_output_tokens, what=f"backend {name}'s info.max_output_tokens", minimum=1)
    for field in ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok", "cache_write_usd_per_mtok"):
        price = getattr(info, field)
        if price is not None:  # priced by the table or the plugin's checked defaults; here: a number at all
            checked_real(price, what=f"backend {name}'s info.{field}")


def overlong(completion: Completion, room_tokens: int, count: Callable[[str], int]) -> bool:
    """Whether an answer is far longer than ``room_tokens`` (max_tokens and a reasoning model's room)
    could hold: no provider bills past it, so it is not an answer to the request.

    Far longer: more than :data:`MAX_CHARS_PER_TOKEN` characters a token of room (decided without
    reading the text), or more than :data:`MAX_ROOM_FACTOR` times the room by the tokenizer, each
    plus a fixed slack (counted only when the text has that many characters: a token is at least one).
    """
    room = max(1, room_tokens)
    chars = len(completion.text)
    if chars > MAX_CHARS_PER_TOKEN * room + SLACK_CHARS:
        return True
    most = MAX_ROOM_FACTOR * room + SLACK_TOKENS
    return chars > most and count(completion.text) > most


def _is_count(value: Any) -> bool:
    return is_int(value) and value >= 0


__all__ = ["MAX_ABANDONED", "MAX_CHARS_PER_TOKEN", "MAX_CONCURRENCY", "MAX_ROOM_FACTOR", "Door", "attempts_in_flight",
           "checked", "checked_members", "environment_secrets", "overlong", "translated"]
