"""The chat-completions wire format: the body booksum sends, and what it accepts back.

Both ways of reaching an OpenAI-compatible server (the SDK, and ``http_json``'s lean client
for plain ``http://`` servers) send the same body and read replies here, so a reply is held
to one standard whichever carried it: JSON, a ``choices`` list whose first entry has a
message with string content, a string finish reason, and token counts that are
non-negative integers. Anything else is refused as a malformed reply (retried by the call
layer), never turned into a plausible empty answer or a negative cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from booksum_app.errors import (
    AuthError,
    ContextTooLong,
    ModelError,
    RateLimited,
    TransientModelError,
)
from booksum_app.llm.base import Completion, Request, Usage
from booksum_app.llm.providers.wire import (
    DETAIL_CHARS,
    error_message,
    gateway_error,
    json_object,
    malformed,
    reported_usage,
    token_count,
)
from booksum_app.llm.retry_policy import retry_after_seconds
from booksum_app.textsafe import printable


def chat_body(
    request: Request, *, model_id: str, legacy_max_tokens: bool, reasoning: bool,
    reasoning_effort: str | None = None, reasoning_room: int = 0,
) -> dict[str, Any]:
    """The JSON body of one chat completion request.

    ``legacy_max_tokens``: compatible servers get ``max_tokens``; api.openai.com and every
    reasoning model get ``max_completion_tokens``. Reasoning models get no temperature /
    top_p, which they reject; their hidden reasoning is paid out of ``max_completion_tokens``,
    so they get ``reasoning_room`` tokens on top of the answer's budget, and
    ``reasoning_effort`` when one is set.
    """
    messages: list[dict[str, str]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.user_text})
    body: dict[str, Any] = {"model": model_id, "messages": messages}
    if reasoning:
        body["max_completion_tokens"] = request.max_tokens + reasoning_room
        if reasoning_effort:
            body["reasoning_effort"] = reasoning_effort
    else:
        body["max_tokens" if legacy_max_tokens else "max_completion_tokens"] = request.max_tokens
    if not reasoning:
        body["temperature"] = request.temperature
        body["top_p"] = request.top_p
    if request.stop:
        body["stop"] = list(request.stop)
    return body


def completion_from_reply(body: bytes, *, name: str, model_id: str, latency_s: float, secret: str | None) -> Completion:
    """The completion in a 2xx reply's body, or :class:`TransientModelError` if it is not one."""
    reply = json_object(body, name)
    choices = reply.get("choices")
    if choices is None and "error" in reply:  # some gateways answer 200 with an error object
        raise gateway_error(name, reply, secret)
    if not isinstance(choices, list):
        raise malformed(name, "no choices list")
    if not choices:
        raise TransientModelError(f"{name}: the reply had no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise malformed(name, "no message in the first choice")
    content = message.get("content")
    finish_reason = choice.get("finish_reason")
    model = reply.get("model")
    if not (content is None or isinstance(content, str)):
        raise malformed(name, "the message content is not text")
    if not (finish_reason is None or isinstance(finish_reason, str)):
        raise malformed(name, "the finish reason is not text")
    usage, reported = reported_usage(reply.get("usage"), name, _usage)
    return Completion(
        text=content or "",
        finish_reason=finish_reason or "stop",
        usage=usage,
        model=model if isinstance(model, str) and model else model_id,
        latency_s=latency_s,
        usage_reported=reported,
        reasoning_tokens=_reasoning_tokens(reply.get("usage")) if reported else 0,
    )


def status_error(name: str, status: int, headers: Mapping[str, str] | Any, detail: str) -> Exception:
    """The booksum error for an HTTP error status; ``detail`` is the server's message, already redacted."""
    if status == 429:
        return RateLimited(
            f"{name}: rate limited (429): {detail}", retry_after_s=retry_after_seconds(headers)
        )
    if status in (401, 403):
        return AuthError(
            f"{name}: the API key was rejected ({status}); check OPENAI_API_KEY and its access"
        )
    if status == 408 or status >= 500:
        return TransientModelError(
            f"{name}: server error {status}: {detail}",
            retry_after_s=retry_after_seconds(headers),
            overloaded=status == 503,
        )
    if status == 404:
        return ModelError(f"{name}: model or endpoint not found (404); check the model name")
    if 300 <= status < 400:
        location = _header(headers, "location")
        where = f" to {printable(location)[:200]}" if location else ""
        return ModelError(
            f"{name}: the server redirected the request ({status}){where}; give the final URL as --base-url"
        )
    if _is_context_error(detail):
        return ContextTooLong(f"{name}: prompt too long for the context window: {detail}")
    return ModelError(f"{name}: request rejected ({status}): {detail}")


def _header(headers: Mapping[str, str] | Any, name: str) -> str:
    try:
        value = headers.get(name) or headers.get(name.title())
    except AttributeError:
        return ""
    return value if isinstance(value, str) else ""


def error_detail(body: bytes) -> str:
    """The server's own message from an error reply's body (JSON ``error.message``, else its text)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body[: DETAIL_CHARS * 64].decode("utf-8", "replace")  # cut again by server_message
    return error_message(parsed) or "no message"


def _usage(usage: Any, name: str) -> Usage:
    if usage is None:
        return Usage()
    if not isinstance(usage, dict):
        raise malformed(name, "usage is not an object")
    prompt_tokens = token_count(usage.get("prompt_tokens"), name)
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    # a compatible server's odd cached count (over the prompt, negative, not a number) must not
    # make a cost negative: it is read as no cache at all, or at most the whole prompt
    cached_tokens = 0
    if isinstance(cached, int) and not isinstance(cached, bool):
        cached_tokens = min(max(cached, 0), prompt_tokens)
    return Usage(
        input_tokens=prompt_tokens,
        output_tokens=token_count(usage.get("completion_tokens"), name),
        cached_input_tokens=cached_tokens,
    )


def _reasoning_tokens(usage: Any) -> int:
    """Hidden reasoning tokens (``completion_tokens_details.reasoning_tokens``), part of completion_tokens."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    count = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def _is_context_error(message: str) -> bool:
    lowered = message.lower()
    return "context_length" in lowered or "context length" in lowered or "maximum context" in lowered
