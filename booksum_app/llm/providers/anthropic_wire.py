"""What booksum accepts back from the Anthropic Messages API (or a server that speaks it).

The SDK builds its reply models without validating them, so a reply whose ``content`` is not a
list, a text block whose text is a number, or ``usage`` missing made the backend fail with a
Python ``TypeError`` (a traceback, not an error line), and negative token counts went on into
the cost. The raw reply is read here instead, held to the same standard as
``openai_wire``'s: JSON, a ``content`` list of blocks, text blocks with text, a string stop
reason (the checks both share are in ``wire``). Anything else is a malformed reply (retried by
the call layer, then one line), never a plausible empty answer. Usage that is missing or not
non-negative integers is not retried (the answer was paid for): the reply is marked as
carrying no usage, and the call layer counts it with the tokenizer.
"""

from __future__ import annotations

from typing import Any

from booksum_app.llm.base import Completion, Usage
from booksum_app.llm.providers.wire import gateway_error, json_object, malformed, reported_usage, token_count

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def completion_from_message(
    body: bytes, *, name: str, model_id: str, latency_s: float, secret: str | None
) -> Completion:
    """The completion in a 2xx Messages reply's body, or :class:`TransientModelError` if it is not one."""
    reply = json_object(body, name)
    content = reply.get("content")
    if content is None and isinstance(reply.get("error"), dict):  # a gateway's 200 carrying an error
        raise gateway_error(name, reply, secret)
    if not isinstance(content, list):
        raise malformed(name, "no content list")
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise malformed(name, "a content block without a type")
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                raise malformed(name, "a text block whose text is not text")
            texts.append(block["text"])
    stop_reason = reply.get("stop_reason")
    if not (stop_reason is None or isinstance(stop_reason, str)):
        raise malformed(name, "the stop reason is not text")
    model = reply.get("model")
    usage, reported = reported_usage(reply.get("usage"), name, _usage)
    return Completion(
        text="".join(texts),
        finish_reason=_FINISH.get(stop_reason or "end_turn", stop_reason or ""),
        usage=usage,
        model=model if isinstance(model, str) and model else model_id,
        latency_s=latency_s,
        usage_reported=reported,
    )


def _usage(usage: Any, name: str) -> Usage:
    if usage is None:
        return Usage()
    if not isinstance(usage, dict):
        raise malformed(name, "usage is not an object")
    # Anthropic's input_tokens excludes cache reads and writes; ours is the total
    cache_read = token_count(usage.get("cache_read_input_tokens"), name)
    cache_write = token_count(usage.get("cache_creation_input_tokens"), name)
    return Usage(
        input_tokens=token_count(usage.get("input_tokens"), name) + cache_read + cache_write,
        output_tokens=token_count(usage.get("output_tokens"), name),
        cached_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
    )
