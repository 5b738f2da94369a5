"""Ways a real server misbehaves, for the fake server: each a fault kind a test can script.

Replies a provider bills but reports oddly:

- ``nousage``: a normal answer without a ``usage`` object (some gateways and local servers);
- ``hugeusage``: usage of 10^13 prompt tokens (a broken counter);
- ``negusage``: negative token counts;
- ``cutempty``: ``finish_reason: length`` with no text, every completion token spent;
- ``reasoning``: a reasoning model that spends ``REASONING_TOKENS`` hidden tokens out of
  ``max_completion_tokens`` before it writes; with too small a budget the answer is empty and
  cut, and all of the budget is billed (as o-series and gpt-5 models do);
- ``reasoningbare``: the same, but the reply does not say how many of its completion tokens
  were hidden (no ``completion_tokens_details``, as some compatible servers answer);
- ``reasoningnousage``: the same, with no ``usage`` at all.

Transports that never let one socket read time out, or break the exchange:

- ``drip``: headers at once, then the body a byte every ``drip_s``;
- ``slowheaders``: the status line, then the headers a byte every ``drip_s``;
- ``endless``: a chunked body that never ends;
- ``reset``: half of the body, then a TCP reset;
- ``redirect``: 307 to another path (the lean client does not follow redirects);
- ``farretry``: 429 with ``Retry-After: 999999999``;
- ``echokeyfar``: a 500 whose message quotes the credentials where an error message is cut.

Bodies no answer can be:

- ``deepjson``: a 200 whose body is an array nested ``DEEP_LEVELS`` deep;
- ``hugetext``: a well-formed answer of ``HUGE_TEXT_BYTES`` (under the byte cap), far past any
  ``max_tokens``, its usage saying ``max_tokens`` completion tokens (what a provider bills);
- ``hugebody``: a 200 announcing ``HUGE_BODY_BYTES`` and sending them (past the byte cap).

The server counts what each 200 reply billed (``FakeServer.billed``): what a client must
account for, to the token. A quirk reaches the server and its handler through two protocols
(:class:`QuirkServer`, :class:`QuirkHandler`), never the server's module: the server imports
this one, not the other way round.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from booksum_app.errors import DETAIL_CHARS
from booksum_app.llm.base import Request
from booksum_app.testing.fake_prompt_cache import count_tokens
from booksum_app.testing.fake_wire import anthropic_body, openai_body, parse_anthropic, parse_openai


class QuirkServer(Protocol):
    """What a quirk needs of the fake server (``fake_server.FakeServer``): its replies, its bill, its stop."""

    reply: Callable[[Request], str]
    drip_s: float
    _stopping: threading.Event

    def _bill(self, input_tokens: int, output_tokens: int) -> None: ...

    def _completed(self) -> None: ...


class QuirkHandler(Protocol):
    """What a quirk needs of the fake server's request handler: the HTTP handler's own members and its
    JSON and error replies (``fake_handler._Handler``)."""

    headers: Any
    wfile: Any
    connection: Any
    close_connection: bool

    def send_response(self, code: int, message: str | None = None) -> None: ...

    def send_header(self, keyword: str, value: str) -> None: ...

    def end_headers(self) -> None: ...

    def _leave_once(self) -> None: ...

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None: ...

    def _send_error(self, api: str, status: int, kind: str, message: str,
                    headers: dict[str, str] | None = None) -> None: ...

USAGE_QUIRKS = ("nousage", "hugeusage", "negusage", "cutempty", "reasoning", "reasoningbare",
                "reasoningnousage")
TRANSPORT_QUIRKS = ("drip", "slowheaders", "endless", "reset", "redirect", "farretry", "echokeyfar")
BODY_QUIRKS = ("deepjson", "hugetext", "hugebody")
QUIRKS = USAGE_QUIRKS + TRANSPORT_QUIRKS + BODY_QUIRKS
DEEP_LEVELS = 100_000
HUGE_TEXT_BYTES = 8 * 2**20
HUGE_BODY_BYTES = 100 * 2**20
# A reply after which the server hangs up says so, as real servers do; without it the client may
# send its next request down the same socket and race the close ("closed without reply").
CLOSE = "Connection: close\r\n"
REASONING_TOKENS = 700
HUGE_TOKENS = 10**13
FAR_RETRY_AFTER_S = 999_999_999


def serve_quirk(handler: QuirkHandler, fake: QuirkServer, api: str, payload: dict[str, Any], quirk: str) -> None:
    """Answer one request the way ``quirk`` says (``notjson`` and ``echokey`` are the fake server's own
    hostile-proxy faults)."""
    if quirk in ("notjson", "echokey"):
        _hostile(handler, api, quirk)
    elif quirk in USAGE_QUIRKS:
        _usage_quirk(handler, fake, api, payload, quirk)
    elif quirk in BODY_QUIRKS:
        _body_quirk(handler, fake, api, payload, quirk)
    elif quirk == "redirect":
        _raw(handler, b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/elsewhere\x1b[2J\r\n"
                      b"Content-Length: 0\r\n\r\n")
    elif quirk == "farretry":
        handler._send_error(api, 429, "rate_limit_error", "slow down (fake)",
                            {"retry-after": str(FAR_RETRY_AFTER_S)})
    elif quirk == "echokeyfar":
        sent = handler.headers.get("authorization") or handler.headers.get("x-api-key") or ""
        key = sent.removeprefix("Bearer ")
        # the key straddles the point where error messages are cut
        message = "x" * (DETAIL_CHARS - len(key) // 2 - 7) + f" token {key} was refused"
        handler._send_error(api, 500, "api_error", message)
    else:
        _transport_quirk(handler, fake, api, payload, quirk)


def _usage_quirk(handler: QuirkHandler, fake: QuirkServer, api: str, payload: dict[str, Any], quirk: str) -> None:
    request = parse_openai(payload) if api == "openai" else parse_anthropic(payload)
    prompt_text = (request.system or "") + request.user_text
    n_in = count_tokens(prompt_text)
    text = fake.reply(request)
    n_out = count_tokens(text)
    finish = "stop"
    hidden = 0
    budget = int(payload.get("max_completion_tokens") or payload.get("max_tokens") or 4096)
    if quirk == "cutempty":
        text, n_out, finish = "", budget, "length"
    elif quirk.startswith("reasoning"):
        hidden = min(REASONING_TOKENS, budget)
        if hidden + n_out > budget:  # the budget ran out while it thought, or while it wrote
            text, n_out, finish = "", 0, "length"
    billed_out = n_out + hidden
    fake._bill(n_in, billed_out)
    if api == "openai":
        body = openai_body(payload, text, finish, n_in, billed_out)
        if quirk == "reasoning":
            body["usage"]["completion_tokens_details"] = {"reasoning_tokens": hidden}
    else:
        body = anthropic_body(payload, text, "max_tokens" if finish == "length" else "end_turn",
                              input_tokens=n_in, output_tokens=billed_out, cache_read=0, cache_write=0)
    if quirk in ("nousage", "reasoningnousage"):
        body.pop("usage", None)
    elif quirk == "hugeusage":
        key = "prompt_tokens" if api == "openai" else "input_tokens"
        body["usage"][key] = HUGE_TOKENS
    elif quirk == "negusage":
        key = "completion_tokens" if api == "openai" else "output_tokens"
        body["usage"][key] = -5
    fake._completed()
    handler._send_json(200, body)


def _body_quirk(handler: QuirkHandler, fake: QuirkServer, api: str, payload: dict[str, Any], quirk: str) -> None:
    if quirk == "hugetext":
        budget = int(payload.get("max_completion_tokens") or payload.get("max_tokens") or 4096)
        request = parse_openai(payload) if api == "openai" else parse_anthropic(payload)
        n_in = count_tokens((request.system or "") + request.user_text)
        text = "Mara baked bread. " * (HUGE_TEXT_BYTES // 18)
        fake._bill(n_in, budget)
        fake._completed()
        if api == "openai":
            body = openai_body(payload, text, "stop", n_in, budget)
        else:
            body = anthropic_body(payload, text, "end_turn", input_tokens=n_in, output_tokens=budget,
                                  cache_read=0, cache_write=0)
        handler._send_json(200, body)
        return
    handler._leave_once()
    handler.close_connection = True
    size = DEEP_LEVELS if quirk == "deepjson" else HUGE_BODY_BYTES
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n{CLOSE}\r\n".encode()
    try:
        _send(handler, head)
        if quirk == "deepjson":
            _send(handler, b"[" * size)
            return
        block = b"[" + b" " * (2**20 - 1)
        for _ in range(size // len(block)):
            if fake._stopping.is_set():
                return
            _send(handler, block)
    except OSError:
        pass  # the client stopped reading at its cap


def _transport_quirk(handler: QuirkHandler, fake: QuirkServer, api: str, payload: dict[str, Any], quirk: str) -> None:
    request = parse_openai(payload) if api == "openai" else parse_anthropic(payload)
    text = fake.reply(request)
    n_in, n_out = count_tokens((request.system or "") + request.user_text), count_tokens(text)
    if api == "openai":
        body = openai_body(payload, text, "stop", n_in, n_out)
    else:
        body = anthropic_body(payload, text, "end_turn", input_tokens=n_in, output_tokens=n_out,
                              cache_read=0, cache_write=0)
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n{CLOSE}\r\n".encode()
    handler._leave_once()
    handler.close_connection = True
    try:
        if quirk == "drip":
            _send(handler, head)
            _drip(handler, fake, data)
        elif quirk == "slowheaders":
            _drip(handler, fake, head)
            _send(handler, data)
        elif quirk == "endless":
            _send(handler, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            _send(handler, b"1\r\n{\r\n")
            while not fake._stopping.wait(fake.drip_s):
                _send(handler, b"1\r\n \r\n")
        elif quirk == "reset":
            _send(handler, head + data[: len(data) // 2])
            time.sleep(0.05)  # let the half reach the client before the reset
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()
    except OSError:
        pass  # the client gave up: that is what a bounded attempt does


def _hostile(handler: QuirkHandler, api: str, fault: str) -> None:
    """A misbehaving proxy: a 200 whose body is not JSON, or a 500 quoting the credentials."""
    if fault == "echokey":
        sent = handler.headers.get("authorization") or handler.headers.get("x-api-key") or ""
        handler._send_error(api, 500, "api_error", f"upstream rejected request with headers Authorization: {sent}")
        return
    data = b"<html><body>502 Bad Gateway (fake proxy)</body></html>"
    handler._leave_once()
    try:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        _send(handler, data)
    except OSError:
        handler.close_connection = True


def _send(handler: QuirkHandler, data: bytes) -> None:
    handler.wfile.write(data)
    handler.wfile.flush()


def _drip(handler: QuirkHandler, fake: QuirkServer, data: bytes) -> None:
    for i in range(len(data)):
        if fake._stopping.wait(fake.drip_s):
            return
        _send(handler, data[i : i + 1])


def _raw(handler: QuirkHandler, data: bytes) -> None:
    handler._leave_once()
    handler.close_connection = True
    try:
        _send(handler, data)
    except OSError:
        pass


__all__ = ["BODY_QUIRKS", "QUIRKS", "REASONING_TOKENS", "TRANSPORT_QUIRKS", "USAGE_QUIRKS", "serve_quirk"]
