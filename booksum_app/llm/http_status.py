"""One mapping from an HTTP error reply to a booksum error, for every backend (plugins included).

:func:`error_for_status` is what ``openai_wire``, ``anthropic`` and ``ollama`` turn a status
into, and what ``booksum_app.plugin`` exports to backend plugins: 429 is
:class:`RateLimited` (with the server's Retry-After), 401/403 :class:`AuthError`, 408, 5xx
and Anthropic's 529 :class:`TransientModelError` (retried; 503 and 529 halve the adaptive
limit), a redirect or a 404 :class:`ModelError`, 413 or a context-length message
:class:`ContextTooLong`, anything else a rejected request. The server's own message (JSON
``error.message``, a plain ``error`` string, else the body's text) is redacted and cut to one
line by :func:`~booksum_app.errors.server_message` before it reaches ours; headers never do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from booksum_app.errors import (
    AuthError,
    BooksumError,
    ContextTooLong,
    ModelError,
    RateLimited,
    TransientModelError,
    server_message,
)
from booksum_app.jsonin import parse_json
from booksum_app.llm.retry_policy import retry_after_seconds
from booksum_app.textsafe import printable

_DETAIL_BYTES = 300 * 64  # of an error body read at all; server_message cuts again
_CONTEXT_WORDS = ("context_length", "context length", "maximum context", "context window", "prompt is too long")


def error_for_status(
    status: int, body: bytes | str | Any, headers: Mapping[str, str] | Any = None, *, name: str = "the model",
    secret: str | None = None, key_hint: str = "the API key",
) -> ModelError:
    """The booksum error for an HTTP error reply.

    Args:
        status: the HTTP status (a 2xx is not an error: don't call this for one).
        body: the reply's body (bytes or text), or an already parsed JSON value.
        headers: the reply's headers (``Retry-After``, ``Location``); any object with ``get``.
        name: the model string the message starts with.
        secret: the API key in use, removed from the server's message whatever it looks like.
        key_hint: what to check when the key is rejected ("OPENAI_API_KEY").

    Returns:
        The error to raise; its message is one redacted, printable line.
    """
    detail = server_message(error_detail(body), secret)
    if status == 429:
        return RateLimited(f"{name}: rate limited (429): {detail}", retry_after_s=retry_after_seconds(headers))
    if status in (401, 403):
        return AuthError(f"{name}: the API key was rejected ({status}); check {key_hint} and its access")
    if status in (408, 529) or status >= 500:
        return TransientModelError(
            f"{name}: server error {status}: {detail}", retry_after_s=retry_after_seconds(headers),
            overloaded=status in (503, 529),
        )
    if 300 <= status < 400:
        location = _header(headers, "location")
        where = f" to {printable(location)[:200]}" if location else ""
        return ModelError(f"{name}: the server redirected the request ({status}){where}; give the final URL as "
                          "--base-url")
    if status == 404:
        return ModelError(f"{name}: model or endpoint not found (404); check the model name")
    if status == 413 or is_context_error(detail):
        return ContextTooLong(f"{name}: prompt too long for the context window: {detail}")
    return ModelError(f"{name}: request rejected ({status}): {detail}")


def error_detail(body: bytes | str | Any) -> str:
    """The server's own message from an error reply's body (JSON ``error.message``, else its text), uncut:
    cut it with :func:`~booksum_app.errors.server_message`, which redacts first."""
    if isinstance(body, bytes | bytearray | str):
        raw = body[:_DETAIL_BYTES]
        try:
            parsed = parse_json(bytes(raw) if not isinstance(raw, str) else raw, where="an error body")
        except BooksumError:  # not JSON (an HTML page, a cut body): its text is the message
            return raw.decode("utf-8", "replace") if not isinstance(raw, str) else raw
    else:
        parsed = body
    return error_message(parsed) or ("no message" if parsed is not None else "")


def error_message(parsed: Any) -> str | None:
    """``error.message`` (or a plain ``error`` string) of a parsed body, uncut."""
    if not isinstance(parsed, dict):
        return None
    inner = parsed.get("error", parsed)
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    return None


def is_context_error(message: str) -> bool:
    """Whether a server's message says the prompt does not fit the context window."""
    lowered = message.lower()
    return any(word in lowered for word in _CONTEXT_WORDS)


def _header(headers: Mapping[str, str] | Any, name: str) -> str:
    try:
        value = headers.get(name) or headers.get(name.title())
    except AttributeError:
        return ""
    return value if isinstance(value, str) else ""


__all__ = ["error_detail", "error_for_status", "error_message", "is_context_error"]
