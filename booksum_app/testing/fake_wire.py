"""Wire formats of the fake server: OpenAI chat completions and Anthropic messages, parsed and answered.

Pure functions of JSON payloads (no sockets): :mod:`booksum_app.testing.fake_server` uses them
to read a request into a :class:`~booksum_app.llm.base.Request` and to build reply bodies.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from booksum_app.llm.base import Request
from booksum_app.testing.fake_prompt_cache import count_tokens


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def parse_openai(payload: dict[str, Any]) -> Request:
    """A chat-completions payload as a Request (system and user messages joined)."""
    messages = payload.get("messages") or []
    system = "".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    user = "".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    max_tokens = payload.get("max_completion_tokens") or payload.get("max_tokens") or 4096
    stop = payload.get("stop") or ()
    return Request(
        prompt=user,
        max_tokens=int(max_tokens),
        temperature=float(payload.get("temperature", 1.0)),
        top_p=float(payload.get("top_p", 1.0)),
        system=system or None,
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
    )


def parse_anthropic(payload: dict[str, Any]) -> Request:
    """A messages payload as a Request: leading ``cache_control`` blocks become the shared prefix."""
    prefix, rest = "", ""
    breaks: list[int] = []
    for message in payload.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("cache_control") and not rest:
                    if prefix:
                        breaks.append(len(prefix))
                    prefix += block.get("text", "")
                elif isinstance(block, dict):
                    rest += block.get("text", "")
        else:
            rest += text_of(content)
    return Request(
        prompt=rest,
        shared_prefix=prefix,
        prefix_breaks=tuple(b for b in breaks if 0 < b < len(prefix)),
        max_tokens=int(payload.get("max_tokens") or 4096),
        temperature=float(payload.get("temperature", 1.0)),
        top_p=float(payload.get("top_p", 1.0)),
        system=text_of(payload.get("system")) or None,
        stop=tuple(payload.get("stop_sequences") or ()),
    )


def anthropic_breakpoints(payload: dict[str, Any]) -> list[str]:
    """The prompt text up to and including each ``cache_control`` block, in order (system first)."""
    text = text_of(payload.get("system"))
    system = payload.get("system")
    points = []
    if isinstance(system, list) and any(isinstance(b, dict) and b.get("cache_control") for b in system):
        points.append(text)
    for message in payload.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"text": text_of(content)}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            text += block.get("text", "")
            if block.get("cache_control"):
                points.append(text)
    return points


def openai_body(
    payload: dict[str, Any], text: str, finish: str, n_in: int, n_out: int, *, cached: int = 0
) -> dict[str, Any]:
    """A chat-completion reply; ``cached`` prompt tokens reported as ``prompt_tokens_details.cached_tokens``."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": payload.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": n_in,
            "completion_tokens": n_out,
            "total_tokens": n_in + n_out,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def anthropic_body(
    payload: dict[str, Any],
    text: str,
    stop_reason: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read: int,
    cache_write: int,
) -> dict[str, Any]:
    """A messages reply; ``input_tokens`` excludes cache reads and writes, as Anthropic's does."""
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": payload.get("model", "fake"),
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        },
    }


def within_budget(text: str, payload: dict[str, Any]) -> tuple[str, bool]:
    """``text`` cut to the request's ``max_tokens`` (``max_completion_tokens``) as a server stops
    generating there, and whether it was cut. (The ``hugetext`` quirk is the server that does not.)"""
    budget = payload.get("max_completion_tokens") or payload.get("max_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0 or count_tokens(text) <= budget:
        return text, False
    low, high = 0, len(text)  # the longest prefix within the budget
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low], True
