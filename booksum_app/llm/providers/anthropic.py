"""Anthropic Messages API through the ``anthropic`` SDK (the only module that imports it).

``Request.shared_prefix`` goes in content blocks marked ``cache_control: ephemeral``, one per
cache breakpoint (``Request.prefix_blocks``: the judge's are after the demonstrations, shared
by every summary, and after the summary), so repeated judge prompts are read from Anthropic's
prompt cache. ``usage.cache_read_input_tokens`` is reported as cached input and
``cache_creation_input_tokens`` as cache writes (billed 1.25x input).
``stop_reason`` "max_tokens" becomes finish reason "length". The raw reply is read by
``anthropic_wire``, which refuses what is not a message (the SDK does not validate its
models). SDK retries are off; the call layer retries. The key never appears in a message. An
error status is ``http_status.error_for_status``'s; a reply is cut at ``deadline.MAX_REPLY_BYTES``.

Deviation: the installed SDK (anthropic 2.x) no longer exposes ``temperature`` / ``top_p`` on
``messages.create``, and current Claude models choose their own sampling. They are sent (via
``extra_body``) only to models known to accept them (``claude-3*``); for the others the
request's temperature is not applied, so Anthropic judge scores are less repeatable than
OpenAI ones at temperature 0. The call cache still makes reruns identical.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic

from booksum_app.config import DEFAULT_TIMEOUT_S
from booksum_app.errors import MissingAPIKey, TransientModelError, server_message
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request
from booksum_app.llm.deadline import MAX_REPLY_BYTES, SDK_POOL, attempt_deadline, deadline_transport, reply_over_cap
from booksum_app.llm.http_status import error_for_status
from booksum_app.llm.providers.anthropic_wire import completion_from_message
from booksum_app.llm.providers.wire import sdk_error_body


class AnthropicBackend(BackendBase):
    """Messages through the ``anthropic`` SDK."""

    kind = "anthropic"
    bounds_own_attempts = True  # its transport cuts each attempt at --timeout and frees the socket
    default_concurrency = 8

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_id: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        send_sampling: bool | None = None,
    ) -> None:
        if not api_key:
            raise MissingAPIKey("No Anthropic API key: set ANTHROPIC_API_KEY")
        self.info = info
        self.model_id = model_id
        self.base_url = base_url
        self.send_sampling = (
            model_id.startswith("claude-3") if send_sampling is None else send_sampling
        )
        self._secret = api_key  # only to redact it from server messages; never printed
        self.timeout_s = timeout_s
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0,
            # --timeout bounds each attempt in all, not one socket read (deadline.py)
            http_client=anthropic.DefaultHttpxClient(transport=deadline_transport(**SDK_POOL)),
        )

    def complete(self, request: Request) -> Completion:
        """Send one message; translate failures into booksum errors."""
        content: list[dict[str, Any]] = [
            {"type": "text", "text": block, "cache_control": {"type": "ephemeral"}}
            for block in request.prefix_blocks()
        ]
        if request.prompt or not content:
            content.append({"type": "text", "text": request.prompt})
        params: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if self.send_sampling:
            sampling: dict[str, float] = {"temperature": request.temperature}
            if request.top_p < 1.0:  # Claude rejects temperature and top_p together on newer models
                sampling["top_p"] = request.top_p
            params["extra_body"] = sampling
        if request.system:
            params["system"] = request.system
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        start = time.perf_counter()
        try:
            # the raw reply, read by anthropic_wire: the SDK's models are built without validation
            with attempt_deadline(self.timeout_s):
                raw = self._client.messages.with_raw_response.create(**params)
                body = raw.read()
        except anthropic.APITimeoutError as exc:
            raise TransientModelError(f"{self.info.name}: request timed out") from exc
        except anthropic.APIConnectionError as exc:
            if reply_over_cap():
                raise TransientModelError(
                    f"{self.info.name}: the reply is larger than {MAX_REPLY_BYTES // 2**20} MB") from exc
            detail = server_message(str(exc), self._secret)
            raise TransientModelError(f"{self.info.name}: connection failed ({detail})") from exc
        except anthropic.APIStatusError as exc:
            raise self._translate(exc) from exc
        return completion_from_message(body, name=self.info.name, model_id=self.model_id,
                                       latency_s=time.perf_counter() - start, secret=self._secret)

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()

    def _translate(self, exc: anthropic.APIStatusError) -> Exception:
        return error_for_status(exc.status_code, sdk_error_body(exc.body, str(exc.message)), exc.response.headers,
                                name=self.info.name, secret=self._secret, key_hint="ANTHROPIC_API_KEY")
