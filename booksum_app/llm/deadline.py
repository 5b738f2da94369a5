"""A wall-clock bound on one attempt of a call, whatever the server does meanwhile.

A socket timeout bounds one read, not a reply: a server that drips its body a byte a second,
sends its headers slowly or streams an endless chunked body never lets a read time out. Two
ways to hold an attempt to ``--timeout`` seconds in all:

- :class:`Watchdog`: one thread that shuts a connection's socket down when its deadline
  passes, which wakes the read blocked on it (``http_json``'s lean client);
- :func:`attempt_deadline` with :func:`deadline_transport`: the attempt's deadline in a
  thread-local, and an ``httpx`` transport whose socket reads and writes never wait past it
  (the ``openai`` and ``anthropic`` SDKs and the Ollama client, which send on the calling
  thread). A read with no time left raises ``httpcore.ReadTimeout``, which the SDKs turn into
  their own timeout error.

The same attempt also has a byte budget, :data:`MAX_REPLY_BYTES`, counted on every read of the
transport: a server that sends 100 MB where a chat completion is kilobytes is cut there (the
read raises ``httpcore.ReadError``; :func:`reply_over_cap` tells the backend why), instead of
buffering gigabytes.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_local = threading.local()
MAX_REPLY_BYTES = 64 * 2**20  # a chat completion is kilobytes; a server sending more is broken


@contextmanager
def attempt_deadline(seconds: float, *, max_bytes: int | None = None) -> Iterator[None]:
    """Run the block as one attempt that may take at most ``seconds`` of wall-clock time and
    read at most ``max_bytes`` (default :data:`MAX_REPLY_BYTES`) through :func:`deadline_transport`."""
    previous = (getattr(_local, "deadline", None), getattr(_local, "budget", None))
    _local.deadline = time.monotonic() + seconds
    _local.budget = MAX_REPLY_BYTES if max_bytes is None else max_bytes
    _local.over = False  # kept after the block: the caller's error handler asks why the read failed
    try:
        yield
    finally:
        _local.deadline, _local.budget = previous


@contextmanager
def watched_attempt(flag: threading.Event) -> Iterator[None]:
    """Run the block as an attempt a door watches from another thread: :func:`self_bounded` sets ``flag``
    while the attempt is inside a transport that stops at the attempt's own deadline."""
    previous = getattr(_local, "self_bounded", None)
    _local.self_bounded = flag
    try:
        yield
    finally:
        _local.self_bounded = previous


@contextmanager
def self_bounded() -> Iterator[None]:
    """Mark the block as bounded by the attempt's deadline itself (``post_json``'s transport), so the
    door watching the attempt waits for it to return at that deadline instead of abandoning it."""
    flag: threading.Event | None = getattr(_local, "self_bounded", None)
    if flag is not None:
        flag.set()
    try:
        yield
    finally:
        if flag is not None:
            flag.clear()


def reply_over_cap() -> bool:
    """Whether the current (or just finished) attempt's reply passed its byte budget."""
    return bool(getattr(_local, "over", False))


def _spend(count: int) -> None:
    """Count ``count`` bytes read against the attempt's budget; ReadError past it."""
    budget = getattr(_local, "budget", None)
    if budget is None:
        return
    _local.budget = budget - count
    if _local.budget < 0:
        _local.over = True
        httpcore, _ = _http_modules()
        raise httpcore.ReadError("the reply is larger than the byte cap")


def time_left() -> float | None:
    """Seconds left to the current attempt's deadline (None: no deadline on this thread)."""
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


class Watchdog:
    """Calls a function at a deadline unless disarmed first; one thread for every armed call."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._armed: set[int] = set()
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> int:
        """Call ``action`` in ``seconds`` unless :meth:`disarm` comes first; returns a handle."""
        handle = next(self._order)
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + seconds, handle, action))
            self._armed.add(handle)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="booksum-watchdog", daemon=True)
                self._thread.start()
            elif self._heap[0][1] == handle:
                self._cond.notify()  # an earlier deadline than the one the thread sleeps toward
        return handle

    def disarm(self, handle: int) -> bool:
        """Cancel ``handle``; False when its action already ran (or is running)."""
        with self._cond:
            if handle in self._armed:
                self._armed.discard(handle)
                return True
            return False

    def _watch(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)  # disarmed
                if not self._heap:
                    self._cond.wait()
                    continue
                due, handle, action = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._armed.discard(handle)
            try:
                action()
            except Exception:  # noqa: BLE001, S110 - a socket already closed needs no shutdown
                pass


WATCHDOG = Watchdog()


def shut_down(sock: socket.socket | None) -> None:
    """Wake whatever blocks on ``sock``: shut both directions down (closing alone may not)."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _clamp(timeout: float | None) -> float | None:
    """``timeout`` for one socket operation, no longer than the attempt has left."""
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        httpcore, _ = _http_modules()
        raise httpcore.ReadTimeout("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


def _http_modules() -> tuple[Any, Any]:
    """httpcore and httpx as the installed SDKs name them (``httpcore2``/``httpx2`` in current releases)."""
    try:
        import httpcore2
        import httpx2
    except ImportError:  # older SDK releases
        import httpcore as httpcore2  # type: ignore[no-redef,import-not-found,unused-ignore]
        import httpx as httpx2  # type: ignore[no-redef,import-not-found,unused-ignore]
    return httpcore2, httpx2


http_modules = _http_modules  # the public name (plugin_http)


# the pool limits a client would have had: a transport handed to an httpx client brings its own
# pool, and httpcore's default is 10 connections
SDK_POOL: dict[str, Any] = {"max_connections": 1000, "max_keepalive_connections": 100}  # openai/anthropic SDKs'
HTTPX_POOL: dict[str, Any] = {"max_connections": 100, "max_keepalive_connections": 20}  # httpx.Client's


def deadline_transport(**pool_options: Any) -> Any:
    """An ``httpx.HTTPTransport`` whose socket operations stop at the attempt's deadline.

    ``pool_options`` go to ``httpcore.ConnectionPool`` (``ssl_context``, ``max_connections``, ...):
    pass :data:`SDK_POOL` or :data:`HTTPX_POOL`, the limits the client would have had.
    """
    httpcore, httpx = _http_modules()

    class _Stream:  # httpcore's NetworkStream interface (duck-typed: httpcore checks no type)
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            data = bytes(self._inner.read(max_bytes, _clamp(timeout)))
            _spend(len(data))
            return data

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _clamp(timeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class _Backend:  # httpcore's NetworkBackend interface
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None, socket_options: Any = None) -> Any:
            return _Stream(self._inner.connect_tcp(host, port, _clamp(timeout), local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return _Stream(self._inner.connect_unix_socket(path, _clamp(timeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    transport = httpx.HTTPTransport()
    if "ssl_context" not in pool_options:
        pool_options["ssl_context"] = httpx.create_ssl_context()
    # httpx builds its pool without a way to name the network backend: replace the pool
    transport._pool = httpcore.ConnectionPool(network_backend=_Backend(), **pool_options)
    return transport


__all__ = [
    "HTTPX_POOL", "MAX_REPLY_BYTES", "SDK_POOL", "WATCHDOG", "Watchdog", "attempt_deadline", "deadline_transport",
    "http_modules", "reply_over_cap", "shut_down", "time_left",
]
