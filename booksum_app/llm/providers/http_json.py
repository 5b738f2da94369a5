"""A lean HTTP/1.1 client that POSTs JSON to one server over pooled keep-alive connections.

The OpenAI backend sends through it to compatible servers on plain ``http://`` URLs
(``vllm serve`` replicas, llama.cpp's server) when no proxy applies. Why not the SDK's
httpx there: at 256 calls in flight the SDK and httpx spend about 1.5 ms of the driver's one
GIL per call and this about 0.25 ms (``benchmarks/bench_driver.py --transport``), and a
driver that keeps several replicas busy is bound by that CPU. vLLM's own serving benchmark
talks to its server through a bare HTTP client for the same reason.

It knows nothing of OpenAI: it sends bytes and hands back the status, the headers and the
body. A connection the server closed while it sat idle is dropped before reuse, so a request
is never sent twice; a failure after sending (timeout, reset, a reply cut off) is an
:class:`HttpFailure` for the caller to retry.

``timeout_s`` bounds the whole exchange, not one read: a watchdog shuts the socket down when
the reply is not complete in time (a server that drips its body or its headers, or streams
an endless chunked body, would never let a single read time out). Inside an attempt with a
deadline (``deadline.attempt_deadline``) the bound is what that attempt has left.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

from booksum_app.llm.deadline import MAX_REPLY_BYTES, WATCHDOG, shut_down, time_left

MAX_BODY_BYTES = MAX_REPLY_BYTES  # one byte cap on every carrier (deadline.py)
MAX_IDLE = 512  # idle connections kept for reuse (the call layer bounds those in use)


class HttpFailure(Exception):
    """No complete HTTP reply: refused, reset, timed out, cut off, or too large."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class HttpReply:
    """A complete HTTP reply: status, headers (names lower-cased) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes


def is_plain_http(url: str) -> bool:
    """Whether ``url`` is an ``http://`` URL with a host and no credentials or query
    (what :class:`JsonPoster` reaches)."""
    parts = urlsplit(url)
    return parts.scheme == "http" and bool(parts.hostname) and parts.username is None and not parts.query


class JsonPoster:
    """POSTs to paths under one ``http://`` base URL; thread-safe, one connection per call in flight."""

    def __init__(self, base_url: str, *, headers: dict[str, str], timeout_s: float) -> None:
        if not is_plain_http(base_url):
            raise ValueError(f"not a plain http:// URL: {base_url!r}")
        parts = urlsplit(base_url)
        self._host = parts.hostname or ""
        self._port = parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            **headers,
        }
        self._timeout_s = timeout_s
        self._idle: list[http.client.HTTPConnection] = []  # last in, first out: the warmest first
        self._lock = threading.Lock()
        self._closed = False

    def post(self, path: str, body: bytes) -> HttpReply:
        """Send ``body`` to ``path`` (under the base URL's path) and read the whole reply."""
        left = time_left()
        limit_s = self._timeout_s if left is None else min(left, self._timeout_s)
        if limit_s <= 0:
            raise HttpFailure("timed out", timed_out=True)
        connection = self._connection()
        connection.timeout = limit_s  # for the connect of a new connection
        if connection.sock is not None:
            connection.sock.settimeout(limit_s)
        expired: list[bool] = []
        # http.client hands the socket to the response when the server says "Connection: close"
        # (connection.sock is None from then on): keep it here so the watchdog can still cut a
        # dripping body and a failure still closes it.
        held: list[socket.socket] = []
        response: http.client.HTTPResponse | None = None

        def expire() -> None:
            expired.append(True)
            shut_down(connection.sock)
            for sock in held:
                shut_down(sock)

        def close_all() -> None:
            if response is not None:
                response.close()
            connection.close()

        watch = WATCHDOG.arm(limit_s, expire)
        try:
            connection.request("POST", self._prefix + path, body=body, headers=self._headers)
            if connection.sock is not None:
                held.append(connection.sock)
                if expired:  # the deadline passed while connecting
                    shut_down(connection.sock)
            response = connection.getresponse()
            data = response.read(MAX_BODY_BYTES + 1)
            if len(data) > MAX_BODY_BYTES:
                raise HttpFailure(f"the reply is larger than {MAX_BODY_BYTES // 2**20} MB")
            headers = {name.lower(): value for name, value in response.getheaders()}
            data = _decoded(data, headers.get("content-encoding", "identity"))
        except HttpFailure:
            WATCHDOG.disarm(watch)
            close_all()
            raise
        except TimeoutError as exc:
            WATCHDOG.disarm(watch)
            close_all()
            raise HttpFailure("timed out", timed_out=True) from exc
        except (OSError, http.client.HTTPException, zlib.error, ValueError) as exc:
            WATCHDOG.disarm(watch)
            close_all()
            if expired:
                raise HttpFailure(f"no complete reply within {limit_s:g} s", timed_out=True) from exc
            raise HttpFailure(_describe(exc)) from exc
        if not WATCHDOG.disarm(watch):  # the deadline passed: what was read may be cut short
            close_all()
            raise HttpFailure(f"no complete reply within {limit_s:g} s", timed_out=True)
        if response.will_close or not response.isclosed():
            close_all()
        else:
            self._give_back(connection)
        return HttpReply(response.status, headers, data)

    def close(self) -> None:
        """Close the idle connections; those in use are closed when their call ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _connection(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if _still_open(connection):
                    return connection
                connection.close()
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout_s)

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """An idle keep-alive socket with something to read was closed by the server (or sent junk)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        if not hasattr(select, "poll"):  # Windows: no poll(), and its select() has no 1024 cap
            return not select.select([sock], [], [], 0)[0]
        poller = select.poll()  # not select(): it fails on descriptors past 1024
        poller.register(sock, select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


def _decoded(data: bytes, encoding: str) -> bytes:
    """The body without its content coding (we ask for none; a server may still gzip)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding not in ("gzip", "deflate"):
        raise HttpFailure(f"the reply used an unsupported content coding ({encoding[:40]!r})")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(data, MAX_BODY_BYTES + 1)
    if len(out) > MAX_BODY_BYTES:
        raise HttpFailure(f"the reply is larger than {MAX_BODY_BYTES // 2**20} MB")
    return out


def _describe(exc: BaseException) -> str:
    """A short, local description of a transport failure (never the request, never a header)."""
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without replying"
    if isinstance(exc, http.client.IncompleteRead):
        return "the reply was cut off"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, zlib.error):
        return "the reply's compressed body is corrupt"
    return getattr(exc, "strerror", None) or type(exc).__name__
