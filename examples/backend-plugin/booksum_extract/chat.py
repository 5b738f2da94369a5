"""``chat:``: a backend plugin for any OpenAI-compatible server, written with booksum's plugin HTTP door.

It is the template for a provider that talks HTTP. It sends with :func:`post_json`, which
holds each attempt to booksum's ``--timeout`` on every socket operation (a server that drips
its reply is cut and the socket freed), caps the reply at 64 MB, reads the JSON safely, and
maps an error status with :func:`error_for_status` (429 retried after Retry-After, 5xx
retried, 401 a key to check...), the server's text redacted. What it reads of the reply is
checked here and refused with :class:`TransientModelError` (retried) when it is not an answer.

Model strings ``chat:<model id>``; the server is ``--base-url`` (or ``CHAT_BASE_URL``) and
the key, if the server wants one, ``CHAT_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from booksum_app.plugin import (
    BackendBase,
    Completion,
    ConfigError,
    LLMSettings,
    ModelSpec,
    Request,
    TransientModelError,
    Usage,
    post_json,
)


class ChatBackend(BackendBase):
    """Chat completions over HTTP(S) to one OpenAI-compatible server."""

    kind = "chat"
    default_concurrency = 4
    # it sends only with post_json, which stops at the attempt's deadline by itself: booksum may call
    # it on the caller's thread (inside that deadline) instead of timing it again on a worker thread
    bounds_own_attempts = True
    model_defaults: ClassVar[Mapping[str, object]] = {
        "context_window": 8192,
        "tokenizer": "cl100k_base",
        "note": "a chat: model (an OpenAI-compatible server); add it under [models] for its real window",
    }

    def __init__(self, spec: ModelSpec, *, url: str, key: str, timeout_s: float) -> None:
        super().__init__(spec.info)
        self.model_id = spec.model_id
        self.base_url = url  # part of the call cache key
        self._key = key
        self._timeout_s = timeout_s

    @classmethod
    def from_spec(cls, spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> ChatBackend:
        url = (settings.base_url or env.get("CHAT_BASE_URL") or "").rstrip("/")
        if not url:
            raise ConfigError("chat: needs a server: pass --base-url URL (or set CHAT_BASE_URL)")
        return cls(spec, url=url, key=env.get("CHAT_API_KEY", ""), timeout_s=settings.timeout_s)

    def complete(self, request: Request) -> Completion:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.user_text})
        payload = {"model": self.model_id, "messages": messages, "max_tokens": request.max_tokens,
                   "temperature": request.temperature, "top_p": request.top_p}
        if request.stop:
            payload["stop"] = list(request.stop)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        reply = post_json(f"{self.base_url}/chat/completions", payload, headers=headers, timeout=self._timeout_s,
                          name=self.info.name, secret=self._key, key_hint="CHAT_API_KEY")
        return _completion(reply, self.info.name)


def _completion(reply: Any, name: str) -> Completion:
    """The answer in a chat-completions reply, or TransientModelError (retried) when there is none."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise TransientModelError(f"{name}: the server's reply carries no answer text")
    finish = first.get("finish_reason") if isinstance(first, dict) else None
    usage = reply.get("usage")
    counts = usage if isinstance(usage, dict) else {}
    prompt, completion = counts.get("prompt_tokens"), counts.get("completion_tokens")
    # booksum checks the counts too: anything but whole numbers is counted with the tokenizer
    reported = isinstance(prompt, int) and isinstance(completion, int)
    return Completion(text, finish if isinstance(finish, str) else "stop",
                      Usage(prompt, completion) if reported else Usage(), usage_reported=reported)
