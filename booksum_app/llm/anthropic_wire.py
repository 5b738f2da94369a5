"""What booksum accepts back from the Anthropic Messages API (or a server that speaks it).

The SDK builds its reply models without validating them, so a reply whose ``content`` is not a
list, a text block whose text is a number, or ``usage`` missing made the backend fail with a
Python ``TypeError`` (a traceback, not an error line), and negative token counts went on into
the cost. The raw reply is read here instead, held to the same standard as
``openai_wire``'s: JSON, a ``content`` list of blocks, text blocks with text, a string stop
reason, and token counts that are non-negative integers. Anything else is a malformed reply
(retried by the call layer, then one line), never a plausible empty answer or a negative cost.
"""

from __future__ import annotations

import json
from typing import Any

from booksum_app.errors import TransientModelError, redact
from booksum_app.llm.base import Completion, Usage

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
DETAIL_CHARS = 300


def completion_from_message(body: bytes, *, name: str, model_id: str, latency_s: float, secret: str | None) -> Completion:
    """The completion in a 2xx Messages reply's body, or :class:`TransientModelError` if it is not one."""
    try:
        reply = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:  # a proxy's HTML page, a cut-off body
        raise TransientModelError(
            f"{name}: the server's reply was not JSON (a proxy or gateway error?)"
        ) from exc
    if not isinstance(reply, dict):
        raise _malformed(name, "not a JSON object")
    content = reply.get("content")
    if content is None and isinstance(reply.get("error"), dict):  # a gateway's 200 carrying an error
        message = reply["error"].get("message")
        detail = " ".join(message.split())[:DETAIL_CHARS] if isinstance(message, str) else "no message"
        raise TransientModelError(f"{name}: the server answered with an error: {redact(detail, secret)}")
    if not isinstance(content, list):
        raise _malformed(name, "no content list")
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _malformed(name, "a content block without a type")
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                raise _malformed(name, "a text block whose text is not text")
            texts.append(block["text"])
    stop_reason = reply.get("stop_reason")
    if not (stop_reason is None or isinstance(stop_reason, str)):
        raise _malformed(name, "the stop reason is not text")
    model = reply.get("model")
    return Completion(
        text="".join(texts),
        finish_reason=_FINISH.get(stop_reason or "end_turn", stop_reason or ""),
        usage=_usage(reply.get("usage"), name),
        model=model if isinstance(model, str) and model else model_id,
        latency_s=latency_s,
    )


def _usage(usage: Any, name: str) -> Usage:
    if usage is None:
        return Usage()
    if not isinstance(usage, dict):
        raise _malformed(name, "usage is not an object")
    # Anthropic's input_tokens excludes cache reads and writes; ours is the total
    cache_read = _count(usage.get("cache_read_input_tokens"), name)
    cache_write = _count(usage.get("cache_creation_input_tokens"), name)
    return Usage(
        input_tokens=_count(usage.get("input_tokens"), name) + cache_read + cache_write,
        output_tokens=_count(usage.get("output_tokens"), name),
        cached_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
    )


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _malformed(name, "a token count is not a non-negative integer")
    return value


def _malformed(name: str, why: str) -> TransientModelError:
    return TransientModelError(f"{name}: malformed reply from the server ({why})")
