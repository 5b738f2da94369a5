"""What every provider's reply is held to, whatever its shape: the pieces both wire formats share.

``openai_wire`` (chat completions) and ``anthropic_wire`` (messages) each check their own
shape; both start from a body that must be a JSON object, report a gateway's 200 that carries
an error object with that error's own message, refuse token counts that are not non-negative
integers, and name what was wrong in one "malformed reply" line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from booksum_app.errors import TransientModelError, server_message
from booksum_app.llm.base import Usage

DETAIL_CHARS = 300  # of a server's error message kept in ours


def json_object(body: bytes, name: str) -> dict[str, Any]:
    """The reply body as a JSON object, or :class:`TransientModelError` (retried) if it is not one."""
    try:
        reply = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:  # a proxy's HTML page, a cut-off body
        raise TransientModelError(
            f"{name}: the server's reply was not JSON (a proxy or gateway error?)"
        ) from exc
    if not isinstance(reply, dict):
        raise malformed(name, "not a JSON object")
    return reply


def gateway_error(name: str, reply: Any, secret: str | None) -> TransientModelError:
    """A 200 whose body is an error object: its own message, redacted, on one line."""
    detail = server_message(error_message(reply) or "no message", secret)
    return TransientModelError(f"{name}: the server answered with an error: {detail}")


def error_message(parsed: Any) -> str | None:
    """``error.message`` (or a plain ``error`` string) of a parsed body, uncut: cut it with
    :func:`~booksum_app.errors.server_message`, which redacts first."""
    if not isinstance(parsed, dict):
        return None
    inner = parsed.get("error", parsed)
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    return None


def sdk_error_detail(body: Any, sdk_message: str) -> str:
    """The server's own message from an SDK's status error: its parsed body's ``error.message``,
    else the SDK's text (never headers, which could carry the key); uncut, as :func:`error_message`."""
    return error_message(body) or sdk_message


def reported_usage(usage: Any, name: str, parse: Callable[[Any, str], Usage]) -> tuple[Usage, bool]:
    """``(usage, reported)``: the reply's usage, or zero and False when it has none or it is not
    counts (negative, not integers). Such a reply is still an answer, and a paid one: retrying it
    would pay again, so the call layer counts it with the tokenizer instead."""
    if usage is None:
        return Usage(), False
    try:
        return parse(usage, name), True
    except TransientModelError:
        return Usage(), False


def token_count(value: Any, name: str) -> int:
    """A reported token count: absent is 0; anything but a non-negative integer is refused."""
    if value is None:
        return 0
    if not is_int(value) or value < 0:
        raise malformed(name, "a token count is not a non-negative integer")
    return int(value)


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool`` (JSON's true would otherwise count as 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def malformed(name: str, why: str) -> TransientModelError:
    return TransientModelError(f"{name}: malformed reply from the server ({why})")
