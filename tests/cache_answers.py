"""Answers as the call layer stores them: the real key of a real request, and the request's text
with its backend (what ``cache --import`` recomputes the key from)."""

from __future__ import annotations

from booksum_app.llm.base import Request
from booksum_app.llm.request_key import request_json, request_key

BACKEND: dict[str, str | None] = {"kind": "openai", "model": "gpt-4o-mini", "base_url": None}


def keyed(n: int, *, prompt: str | None = None, backend: dict[str, str | None] | None = None) -> tuple[str, str]:
    """(key, stored request text) of request number ``n``."""
    request = Request(prompt=prompt or f"Is sentence {n} coherent?", max_tokens=64, temperature=0.0,
                      system="Answer yes or no.", sample_index=n % 3)
    chosen = BACKEND if backend is None else backend
    return request_key(request, backend=chosen), request_json(request, backend=chosen)
