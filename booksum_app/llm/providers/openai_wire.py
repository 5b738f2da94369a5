"""The chat-completions wire format: the body booksum sends, and what it accepts back.

Both ways of reaching an OpenAI-compatible server (the SDK, and ``http_json``'s lean client
for plain ``http://`` servers) send the same body and read replies here, so a reply is held
to one standard whichever carried it: JSON, a ``choices`` list whose first entry has a
message with string content, a string finish reason, and token counts that are
non-negative integers. Anything else is refused as a malformed reply (retried by the call
layer), never turned into a plausible empty answer or a negative cost. An error status is
mapped by :func:`booksum_app.llm.http_status.error_for_status`, as every backend's is.
"""

from __future__ import annotations

from typing import Any

from booksum_app.errors import TransientModelError
from booksum_app.llm.base import Completion, Request, Usage
from booksum_app.llm.providers.thinking import ThinkWatch, hidden_share, reasoning_field, split_thinking
from booksum_app.llm.providers.wire import (
    gateway_error,
    json_object,
    malformed,
    reported_usage,
    token_count,
)
from booksum_app.llm.request_key import request_seed


def chat_body(
    request: Request, *, model_id: str, legacy_max_tokens: bool, reasoning: bool,
    reasoning_effort: str | None = None, reasoning_room: int = 0, thinking_room: int = 0,
    template_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat completion request.

    ``legacy_max_tokens``: compatible servers get ``max_tokens``; api.openai.com and every
    reasoning model get ``max_completion_tokens``. Reasoning models get no temperature /
    top_p, which they reject; their hidden reasoning is paid out of ``max_completion_tokens``,
    so they get ``reasoning_room`` tokens on top of the answer's budget, and
    ``reasoning_effort`` when one is set. A model that thinks in its text (Qwen3, R1) gets
    ``thinking_room`` tokens on top of ``max_tokens`` for its reasoning, and ``template_kwargs``
    (``chat_template_kwargs: {"enable_thinking": false}`` under ``--thinking off``), which vLLM,
    SGLang and llama.cpp's server pass to the chat template.
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
        body["max_tokens" if legacy_max_tokens else "max_completion_tokens"] = request.max_tokens + thinking_room
    if template_kwargs:
        body["chat_template_kwargs"] = dict(template_kwargs)
    if not reasoning:
        body["temperature"] = request.temperature
        body["top_p"] = request.top_p
    if request.stop:
        body["stop"] = list(request.stop)
    if not reasoning:  # reasoning models take no sampling options (no temperature, no seed)
        body["seed"] = request_seed(request)  # the same request samples the same answer (where the server can)
    return body


def completion_from_reply(body: bytes, *, name: str, model_id: str, latency_s: float, secret: str | None,
                          watch: ThinkWatch | None = None) -> Completion:
    """The completion in a 2xx reply's body, or :class:`TransientModelError` if it is not one.

    ``watch`` (the backend's evidence that its model thinks) decides what of the text is reasoning
    (``llm/providers/thinking.py``); without one only a block that opens the reply is.
    """
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
    # a thinking model's reasoning: in a field the server's reasoning parser filled, or in the text
    separated = reasoning_field(message)
    cut = finish_reason == "length"
    split = (watch.split(content or "", separated=separated, cut=cut) if watch is not None
             else split_thinking(content or "", cut=cut))
    reasoning = separated or split.reasoning
    hidden = _reasoning_tokens(reply.get("usage")) if reported else 0
    if reasoning and not hidden and reported:
        hidden = hidden_share(usage.output_tokens, reasoning=reasoning, visible=split.visible)
    return Completion(
        text=split.visible,
        finish_reason=finish_reason or "stop",
        usage=usage,
        model=model if isinstance(model, str) and model else model_id,
        latency_s=latency_s,
        usage_reported=reported,
        reasoning_tokens=hidden,
        think_chars_removed=split.removed_chars,
        reasoning_chars=len(separated) + len(split.reasoning),
    )


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
