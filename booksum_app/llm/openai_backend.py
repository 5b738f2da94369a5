"""OpenAI chat completions, and any OpenAI-compatible server (``vllm serve``, llama.cpp server) by base URL.

Several base URLs (comma-separated) serve one model from several replicas: each call goes to
the healthy one with the fewest calls in flight; one that fails (connection, timeout, 5xx) is
skipped for 5 s, doubling per failure in a row up to 60 s, and retried after.

The only module that imports ``openai``. SDK retries are off (``max_retries=0``): the call
layer retries with its own backoff. SDK exceptions become booksum errors at this boundary;
no message ever contains the API key. Official OpenAI models get ``max_completion_tokens``
(required by reasoning models, accepted by all current chat models); servers reached by base
URL get the older ``max_tokens``, which every compatible server understands. Reasoning models
(o-series, gpt-5) are sent no temperature / top_p, which they reject.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import openai

from booksum_app.errors import (
    AuthError,
    ContextTooLong,
    ModelError,
    RateLimited,
    TransientModelError,
    redact,
)
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import retry_after_seconds

DUMMY_KEY = "booksum-no-key"  # servers reached by base URL often need no key; the SDK wants one


def _is_context_error(message: str) -> bool:
    lowered = message.lower()
    return (
        "context_length" in lowered or "context length" in lowered or "maximum context" in lowered
    )


class OpenAIBackend:
    """Chat completions through the ``openai`` SDK."""

    kind = "openai"
    default_concurrency = 8

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_id: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        reasoning: bool = False,
        legacy_max_tokens: bool | None = None,
    ) -> None:
        if not api_key:
            if base_url is None:
                raise AuthError(
                    "No OpenAI API key: set OPENAI_API_KEY (or pass --base-url for a local server)"
                )
            api_key = DUMMY_KEY
        self.info = info
        self.model_id = model_id
        self.base_url = base_url
        self.reasoning = reasoning
        # compatible servers get ``max_tokens``; api.openai.com gets ``max_completion_tokens``
        self.legacy_max_tokens = (
            base_url is not None if legacy_max_tokens is None else legacy_max_tokens
        )
        self._secret = api_key  # only to redact it from server messages; never printed
        urls = [u.strip() for u in base_url.split(",") if u.strip()] if base_url else [None]
        def new_client(url: str | None) -> Callable[[], openai.OpenAI]:
            return lambda: openai.OpenAI(api_key=api_key, base_url=url, timeout=timeout_s, max_retries=0)

        self._endpoints = [_Endpoint(url, new_client(url)) for url in urls]
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        """Send one chat completion; translate failures into booksum errors."""
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user_text})
        params: dict[str, Any] = {"model": self.model_id, "messages": messages}
        if self.legacy_max_tokens:
            params["max_tokens"] = request.max_tokens
        else:
            params["max_completion_tokens"] = request.max_tokens
        if not self.reasoning:
            params["temperature"] = request.temperature
            params["top_p"] = request.top_p
        if request.stop:
            params["stop"] = list(request.stop)
        start = time.perf_counter()
        picked = self._pick()
        try:
            response = self._send(picked, params)
        except openai.APITimeoutError as exc:
            raise TransientModelError(f"{self.info.name}: request timed out") from exc
        except openai.APIConnectionError as exc:
            detail = redact(str(exc), self._secret)
            raise TransientModelError(f"{self.info.name}: connection failed ({detail})") from exc
        except openai.APIStatusError as exc:
            raise self._translate(exc) from exc
        except json.JSONDecodeError as exc:  # a 200 whose body is not JSON (a proxy's HTML page)
            raise TransientModelError(
                f"{self.info.name}: the server's reply was not JSON (a proxy or gateway error?)"
            ) from exc
        except (
            openai.APIResponseValidationError
        ) as exc:  # pragma: no cover - malformed server reply
            raise TransientModelError(f"{self.info.name}: malformed reply from the server") from exc
        latency = time.perf_counter() - start
        if not response.choices:
            raise TransientModelError(f"{self.info.name}: the reply had no choices")
        choice = response.choices[0]
        usage = Usage()
        if response.usage is not None:
            details = getattr(response.usage, "prompt_tokens_details", None)
            prompt_tokens = response.usage.prompt_tokens or 0
            # a compatible server's odd count (over the prompt, negative) must not make cost negative
            cached = min(max(getattr(details, "cached_tokens", None) or 0, 0), prompt_tokens)
            usage = Usage(
                input_tokens=prompt_tokens,
                output_tokens=response.usage.completion_tokens or 0,
                cached_input_tokens=cached,
            )
        return Completion(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason or "stop",
            usage=usage,
            model=response.model or self.model_id,
            latency_s=latency,
        )

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        for endpoint in self._endpoints:
            for lane in endpoint.lanes:
                lane.client.close()

    def _pick(self) -> tuple[_Endpoint, _Lane]:
        """The healthy endpoint with the fewest calls in flight (or, all down, the first back up), and its lane."""
        with self._lock:
            now = time.monotonic()
            healthy = [e for e in self._endpoints if e.down_until <= now]
            pool = healthy or [min(self._endpoints, key=lambda e: e.down_until)]
            endpoint = min(pool, key=lambda e: e.in_flight)  # ties: the first listed
            return endpoint, endpoint.take_lane()

    def _send(self, picked: tuple[_Endpoint, _Lane], params: dict[str, Any]) -> Any:
        """One request to an endpoint; a connection failure, timeout or 5xx takes it out for a while."""
        endpoint, lane = picked
        failed = True
        try:
            # The SDK walks every create() argument through its TypedDict transform (0.4 ms a
            # call for two messages, a tenth of our CPU per call); ours are plain JSON already,
            # so they go in extra_body, which the SDK merges into the body as it is.
            response = lane.client.chat.completions.create(model=params["model"], messages=[], extra_body=params)
            failed = False
            return response
        except openai.APIStatusError as exc:
            failed = exc.status_code >= 500
            raise
        finally:
            with self._lock:
                endpoint.give_back(lane)
                if len(self._endpoints) > 1:
                    endpoint.record(failed=failed)

    def _translate(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        detail = redact(_message(exc), self._secret)
        name = self.info.name
        if status == 429:
            return RateLimited(
                f"{name}: rate limited (429): {detail}",
                retry_after_s=retry_after_seconds(exc.response.headers),
            )
        if status in (401, 403):
            return AuthError(
                f"{name}: the API key was rejected ({status}); check OPENAI_API_KEY and its access"
            )
        if status == 408 or status >= 500:
            return TransientModelError(
                f"{name}: server error {status}: {detail}",
                retry_after_s=retry_after_seconds(exc.response.headers),
                overloaded=status == 503,
            )
        if status == 404:
            return ModelError(f"{name}: model or endpoint not found (404); check the model name")
        if _is_context_error(detail):
            return ContextTooLong(f"{name}: prompt too long for the context window: {detail}")
        return ModelError(f"{name}: request rejected ({status}): {detail}")


class _Endpoint:
    """One base URL of a model served by several (replicas behind their own URLs)."""

    DOWN_FIRST_S = 5.0  # an endpoint that fails is skipped this long, doubling per failure in a row
    DOWN_MAX_S = 60.0

    # httpcore's connection pool walks all its connections on every request and every response
    # (checking each, polling the idle ones' sockets), so its CPU per call grows with the calls
    # in flight. Calls to one endpoint are spread over lanes, each its own SDK client and pool,
    # a new lane opening when every lane holds this many calls (bench_driver.py).
    LANE_CALLS = 32

    def __init__(self, url: str | None, new_client: Callable[[], openai.OpenAI]) -> None:
        self.url = url
        self._new_client = new_client
        self.lanes = [_Lane(new_client())]
        self.in_flight = 0
        self.failures = 0
        self.down_until = 0.0

    def take_lane(self) -> _Lane:
        """The lane with the fewest calls in flight, or a new one when all are full (under the backend's lock)."""
        lane = min(self.lanes, key=lambda candidate: candidate.in_flight)
        if lane.in_flight >= self.LANE_CALLS:
            lane = _Lane(self._new_client())
            self.lanes.append(lane)
        lane.in_flight += 1
        self.in_flight += 1
        return lane

    def give_back(self, lane: _Lane) -> None:
        lane.in_flight -= 1
        self.in_flight -= 1

    def record(self, *, failed: bool) -> None:
        if not failed:
            self.failures, self.down_until = 0, 0.0
            return
        self.failures += 1
        pause = min(self.DOWN_MAX_S, self.DOWN_FIRST_S * 2 ** (self.failures - 1))
        self.down_until = time.monotonic() + pause


class _Lane:
    """One SDK client (its own HTTP connection pool) of an endpoint, and its calls in flight."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client
        self.in_flight = 0


def _message(exc: openai.APIStatusError) -> str:
    """The server's own error message (never headers, which could carry the key)."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:300]
    return str(exc.message)[:300]
