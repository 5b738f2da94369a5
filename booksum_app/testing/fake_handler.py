"""How the fake server (:mod:`booksum_app.testing.fake_server`) answers one request on the wire.

:class:`_Handler` routes ``POST /v1/chat/completions`` and ``POST /v1/messages``, takes the next
scripted or random fault, serves it (or a quirk, ``quirks.py``), else builds the reply: the
reply function's text cut at ``max_tokens``, a thinking model's reasoning, latency (per call,
per token, queued behind ``slots``), prompt-cache usage, and the bill. It reaches the server
through :class:`HandledServer`, never its module: the server imports this one.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from booksum_app.jsonin import parse_json_or_none
from booksum_app.testing.fake_prompt_cache import BreakpointCache, PrefixCache, count_tokens, encode
from booksum_app.testing.fake_replies import THINKING, long_thinking, thinking_enabled, with_thinking
from booksum_app.testing.fake_wire import (
    anthropic_body,
    anthropic_breakpoints,
    openai_body,
    parse_anthropic,
    parse_openai,
    within_budget,
)
from booksum_app.testing.quiet_server import QuietServer
from booksum_app.testing.quirks import QUIRKS, QuirkServer, serve_quirk


class HandledServer(QuirkServer, Protocol):
    """What the handler reads and updates of the fake server (``fake_server.FakeServer``)."""

    rate_limit_in_flight: int | None
    hang_s: float
    retry_after_s: float
    thinking: str | None
    latency_s: float
    latency_per_token_s: float
    usage_ratio: float
    slots: threading.Semaphore | None
    prompt_caching: bool
    _prefix_cache: PrefixCache
    _breakpoint_cache: BreakpointCache

    def _next_fault(self) -> str | None: ...

    def _log(self, entry: LoggedRequest) -> None: ...

    def _enter(self) -> None: ...

    def _leave(self) -> None: ...

    def _current_in_flight(self) -> int: ...

    def _reject(self) -> None: ...


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server received (never its auth headers)."""

    api: str  # "openai" or "anthropic"
    payload: dict[str, Any]
    fault: str | None
    had_key: bool
    received_s: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid a 40 ms stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake server keeps its own log."""

    def do_POST(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        api = {"/v1/chat/completions": "openai", "/chat/completions": "openai"}.get(path)
        if path in ("/v1/messages", "/messages"):
            api = "anthropic"
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if api is None:
            self._send_json(
                404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            )
            return
        payload = parse_json_or_none(body or b"{}")
        if payload is None:
            self._send_error(api, 400, "invalid_request_error", "body is not JSON")
            return
        had_key = bool(self.headers.get("authorization") or self.headers.get("x-api-key"))
        fake._enter()
        self._in_flight = True
        try:
            self._serve(fake, api, payload, had_key)
        finally:
            self._leave_once()

    def _leave_once(self) -> None:
        """Stop counting this request as in flight (before its answer goes out, so a client
        that has its answer and sends the next request never sees a stale count)."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.fake._leave()

    def _serve(self, fake: HandledServer, api: str, payload: dict[str, Any], had_key: bool) -> None:
        if payload.get("stream"):
            fake._log(LoggedRequest(api, payload, "stream", had_key))
            self._send_error(api, 400, "invalid_request_error", "this fake server does not stream")
            return
        fault = fake._next_fault()
        if fake.rate_limit_in_flight is not None and fake._current_in_flight() > fake.rate_limit_in_flight:
            fault = "429"  # like a provider's concurrency limit: over it, answer 429 at once
            fake._reject()
        fake._log(LoggedRequest(api, payload, fault, had_key))
        if fault == "drop":
            self._drop()
            return
        if fault == "timeout":
            fake._stopping.wait(fake.hang_s)
            self._drop()
            return
        if fault in ("429", "500", "503", "400", "401", "context"):
            self._send_fault(api, fault, fake.retry_after_s)
            return
        if fault in QUIRKS or fault in ("notjson", "echokey"):
            serve_quirk(self, fake, api, payload, fault)
            return
        request = parse_openai(payload) if api == "openai" else parse_anthropic(payload)
        if fault == "echo":
            text = "\n\n".join(part for part in (request.system, request.user_text) if part)
        else:
            text = "" if fault == "empty" else fake.reply(request)
        finish = "stop"
        thinking = fake.thinking if thinking_enabled(payload) else None  # enable_thinking false: no trace
        text = long_thinking(text, request.user_text) if thinking == "long" else text  # spends max_tokens too
        if fault == "truncated":
            words = text.split()
            text, finish = " ".join(words[: max(1, len(words) // 2)]), "length"
        text, cut = within_budget(text, payload)
        if cut:  # as a real server does: it stops generating at max_tokens
            finish = "length"
        prompt_text = (request.system or "") + request.user_text
        text = with_thinking(text, thinking) if thinking else text
        n_out = count_tokens(text) + (count_tokens(THINKING) if thinking == "parser" else 0)
        caching = _Caching(fake, api, payload, prompt_text)  # looked up now, stored when answered
        delay = fake.latency_s + fake.latency_per_token_s * n_out
        if fake.slots is not None:
            fake.slots.acquire()  # a queuing server: the latency starts when a slot is free
        try:
            fake._stopping.wait(delay)
        finally:
            if fake.slots is not None:
                fake.slots.release()
        n_in = round(count_tokens(prompt_text) * fake.usage_ratio)
        fake._bill(n_in, n_out)
        if api == "openai":
            body = openai_body(payload, text, finish, n_in, n_out, cached=caching.read)
            if thinking == "parser":  # vllm serve --reasoning-parser: the reasoning beside the content
                body["choices"][0]["message"]["reasoning_content"] = THINKING
        else:
            body = anthropic_body(
                payload,
                text,
                "max_tokens" if finish == "length" else "end_turn",
                input_tokens=max(0, n_in - caching.read - caching.written),
                output_tokens=n_out,
                cache_read=caching.read,
                cache_write=caching.written,
            )
        caching.store()
        fake._completed()  # counted before sending, so a client that has its answer sees the count
        self._send_json(200, body)

    def _send_fault(self, api: str, fault: str, retry_after_s: float) -> None:
        if fault == "429":
            headers = {"retry-after": _fmt(retry_after_s)}
            self._send_error(api, 429, "rate_limit_error", "rate limited (fake)", headers)
        elif fault == "500":
            self._send_error(api, 500, "api_error", "internal error (fake)")
        elif fault == "503":
            self._send_error(api, 503, "overloaded_error", "service unavailable (fake)")
        elif fault == "401":
            self._send_error(api, 401, "authentication_error", "invalid api key (fake)")
        elif fault == "context":
            message = (
                "This model's maximum context length is 8192 tokens (fake): context_length_exceeded"
                if api == "openai"
                else "prompt is too long: 300000 tokens > 200000 maximum (fake)"
            )
            self._send_error(api, 400, "invalid_request_error", message)
        else:
            self._send_error(api, 400, "invalid_request_error", "bad request (fake)")

    def _send_error(
        self, api: str, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        if api == "anthropic":
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            body = {"error": {"message": message, "type": kind, "code": None, "param": None}}
        self._send_json(status, body, headers)

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode("utf-8")
        self._leave_once()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away (e.g. after its own timeout)
            self.close_connection = True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass


class _Server(QuietServer):
    fake: HandledServer


def _fmt(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


class _Caching:
    """One request's prompt-cache lookup (at arrival) and store (when answered); no-op when caching is off."""

    def __init__(self, fake: HandledServer, api: str, payload: dict[str, Any], prompt_text: str) -> None:
        self.read = self.written = 0
        self._store: Callable[[], None] = lambda: None
        if not fake.prompt_caching:
            return
        if api == "openai":
            openai_points = fake._prefix_cache.points(encode(prompt_text))
            self.read = fake._prefix_cache.lookup(openai_points)
            self._store = lambda: fake._prefix_cache.store(openai_points)
        else:
            points = fake._breakpoint_cache.points(anthropic_breakpoints(payload))
            self.read, self.written = fake._breakpoint_cache.lookup(points)
            self._store = lambda: fake._breakpoint_cache.store(points)

    def store(self) -> None:
        self._store()


__all__ = ["HandledServer", "LoggedRequest"]
