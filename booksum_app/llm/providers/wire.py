"""What every provider's reply is held to, whatever its shape: the pieces both wire formats share.

``openai_wire`` (chat completions) and ``anthropic_wire`` (messages) each check their own
shape; both start from a body that must be a JSON object, report a gateway's 200 that carries
an error object with that error's own message, refuse token counts that are not non-negative
integers, and name what was wrong in one "malformed reply" line. Every body is parsed by
:func:`booksum_app.jsonin.parse_json`: a proxy's HTML page, a cut body and a reply nested
100,000 levels deep all end as one :class:`TransientModelError` line (retried, then exit 4).
An error status is :func:`booksum_app.llm.http_status.error_for_status`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from booksum_app.errors import TransientModelError, server_message
from booksum_app.jsonin import parse_json
from booksum_app.llm.base import Usage
from booksum_app.llm.http_status import error_message


def json_object(body: bytes, name: str) -> dict[str, Any]:
    """The reply body as a JSON object, or :class:`TransientModelError` (retried) if it is not one."""
    reply = parse_json(body, where=f"{name}: the server's reply", error=TransientModelError)
    if not isinstance(reply, dict):
        raise malformed(name, "not a JSON object")
    return reply


def gateway_error(name: str, reply: Any, secret: str | None) -> TransientModelError:
    """A 200 whose body is an error object: its own message, redacted, on one line."""
    detail = server_message(error_message(reply) or "no message", secret)
    return TransientModelError(f"{name}: the server answered with an error: {detail}")


def sdk_error_body(body: Any, sdk_message: str) -> Any:
    """What :func:`~booksum_app.llm.http_status.error_for_status` reads of an SDK's status error: its
    parsed body when that carries ``error.message``, else the SDK's text (never headers, which could
    carry the key)."""
    return body if error_message(body) else sdk_message


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
