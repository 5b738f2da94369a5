"""Ollama's native chat API (``POST /api/chat``), with a context sized to every request.

Through its OpenAI-compatible endpoint Ollama runs every model at its default context
(2,048-4,096 tokens) and silently drops the *start* of a longer prompt: a book summary
quietly built from cut chunks. This backend speaks the native API instead and sets
``options.num_ctx`` on each request to fit the prompt (conservative estimate) plus
``max_tokens`` plus a margin, rounded up to a power of two (so the server does not reload
the model for every size) and capped at the model's own context length, which it reads
from ``POST /api/show`` (``model_info["<architecture>.context_length"]``) when built.
A prompt that cannot fit is refused with :class:`ContextTooLong` before it is sent.

A thinking model's reasoning (``message.thinking`` when the server separates it, else a
``<think>`` block in the content; ``llm/providers/thinking.py``) is left out of the answer and
counted as hidden tokens; ``think`` is left at the server's default under ``--thinking auto`` and
sent as ``true``/``false`` under ``on``/``off``. A model known or seen to think gets room for its
reasoning on top of ``num_predict`` (``ThinkWatch``). Each request carries
``options.seed`` derived from the request (``request_seed``): a rerun samples the same answers.

Token counts come from the reply's ``prompt_eval_count`` / ``eval_count``. The server
address (``OLLAMA_HOST``) is read by ``llm/registry.py`` and passed in; only ``httpx`` is
used (``httpx2`` in openai >= 3; it comes with ``openai``). Errors: no server is :class:`ModelUnavailable` ("start
it with `ollama serve`"), an unknown model too ("run `ollama pull MODEL`"); 5xx, timeouts,
dropped connections and non-JSON replies are :class:`TransientModelError` (retried by the
call layer). A reply is cut at ``deadline.MAX_REPLY_BYTES``; an error status is
``http_status.error_for_status``'s once Ollama's own 404s are told apart.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

try:  # openai >= 3 ships httpx as ``httpx2``; older releases ship ``httpx``
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed openai
    import httpx  # type: ignore[no-redef,import-not-found,unused-ignore]

from booksum_app.config import DEFAULT_TIMEOUT_S
from booksum_app.errors import (
    ContextTooLong,
    ModelError,
    ModelUnavailable,
    TransientModelError,
    server_message,
)
from booksum_app.jsonin import parse_json
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.llm.deadline import HTTPX_POOL, MAX_REPLY_BYTES, attempt_deadline, deadline_transport, reply_over_cap
from booksum_app.llm.http_status import error_detail, error_for_status
from booksum_app.llm.providers.thinking import ThinkWatch, WatchedThinking, hidden_share, reasoning_field
from booksum_app.llm.request_key import request_seed

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434
MIN_NUM_CTX = 2048  # Ollama's smallest default; never ask for less
MARGIN_TOKENS = 256  # chat template, role markers, BOS/EOS
PROMPT_SAFETY = 1.10  # on top of the (already conservative) estimate
SHOW_TIMEOUT_S = 30.0


def normalize_host(host: str | None) -> str:
    """``OLLAMA_HOST`` as Ollama itself reads it, made into a base URL.

    Args:
        host: ``None``/empty (the default), ``host``, ``host:port`` or a full URL.

    Returns:
        ``scheme://host:port`` with no trailing slash; ``0.0.0.0`` (a bind address) becomes
        ``127.0.0.1``.
    """
    host = (host or "").strip()
    if not host:
        return DEFAULT_HOST
    scheme, sep, rest = host.partition("://")
    default_port = DEFAULT_PORT
    if not sep:  # like Ollama: no scheme is http on 11434; an explicit scheme keeps its port
        scheme, rest = "http", host
    elif scheme == "http":
        default_port = 80
    elif scheme == "https":
        default_port = 443
    parts = urlsplit(f"{scheme}://{rest}")
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    port = parts.port if parts.port is not None else default_port
    return f"{scheme}://{hostname}:{port}{parts.path.rstrip('/')}"


def fit_num_ctx(prompt_tokens: int, max_tokens: int, context_length: int) -> int:
    """The ``num_ctx`` to ask for: prompt + output + margin, a power of two, capped.

    Args:
        prompt_tokens: the prompt's estimated tokens.
        max_tokens: the output budget (``num_predict``).
        context_length: the model's own context length.

    Returns:
        The smallest power of two (at least 2048) holding the request, at most
        ``context_length``.
    """
    need = math.ceil(prompt_tokens * PROMPT_SAFETY) + max_tokens + MARGIN_TOKENS
    size = MIN_NUM_CTX
    while size < need:
        size *= 2
    return min(size, context_length)


class OllamaBackend(WatchedThinking, BackendBase):  # type: ignore[override]  # properties over plain defaults
    """Chat completions through Ollama's native ``/api/chat``."""

    kind = "ollama"
    bounds_own_attempts = True  # its transport cuts each attempt at --timeout and frees the socket
    default_concurrency = 1  # Ollama serves OLLAMA_NUM_PARALLEL at once; more calls queue

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_id: str,
        host: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        known_context: bool = False,
        count_tokens: Callable[[str], int] | None = None,
        deployment: str | None = None,
        thinking: str = "auto",
        reasoning_effort: str | None = None,
    ) -> None:
        self.model_id = model_id
        self.thinking = thinking
        self._think = ThinkWatch(model_id, mode=thinking, effort=reasoning_effort)
        self.host = normalize_host(host)
        self.base_url = self.host
        self.deployment = deployment
        self._name = info.name
        self.timeout_s = timeout_s
        # --timeout bounds each attempt in all, not one socket read (deadline.py)
        self._client = httpx.Client(base_url=self.host, timeout=timeout_s, transport=deadline_transport(**HTTPX_POOL))
        self._count = count_tokens or _estimate_counter()
        self._lock = threading.Lock()
        self._num_ctx = 0  # never shrinks: a new num_ctx makes Ollama reload the model
        try:
            show = self._show()
        except ModelError:
            self._client.close()
            raise
        self.family, context_length = _family_and_context(show)
        if context_length is not None and (
            not known_context or context_length < info.context_window
        ):
            info = dataclasses.replace(info, context_window=context_length)
        self.context_length = info.context_window
        self.info = info
        self.server_identity = self._digest()  # the weights behind the name: keys their answers

    def _digest(self) -> str | None:
        """The model's digest from ``GET /api/tags`` (None when the server lists none for it)."""
        try:
            with attempt_deadline(SHOW_TIMEOUT_S):
                response = self._client.get("/api/tags", timeout=SHOW_TIMEOUT_S)
            data = parse_json(response.content, where="/api/tags") if response.status_code == 200 else None
        except Exception:  # noqa: BLE001 - a server that lists nothing leaves answers keyed by name
            return None
        listed = data.get("models") if isinstance(data, dict) else None
        names = {self.model_id, f"{self.model_id}:latest"}
        for row in listed if isinstance(listed, list) else ():
            if isinstance(row, dict) and (row.get("name") in names or row.get("model") in names):
                digest = row.get("digest")
                if isinstance(digest, str) and 0 < len(digest) <= 200 and digest.isprintable():
                    return digest
        return None

    def count_tokens(self, text: str) -> int:
        """A conservative token count (Ollama has no tokenize endpoint)."""
        return self._count(text)

    def complete(self, request: Request) -> Completion:
        """Send one non-streaming chat request; translate failures into booksum errors."""
        num_ctx, room = self._num_ctx_for(request, self._think.room_tokens)
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user_text})
        options: dict[str, Any] = {
            "num_ctx": num_ctx,
            "num_predict": request.max_tokens + room,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.stop:
            options["stop"] = list(request.stop)
        options["seed"] = request_seed(request)  # the same request samples the same answer
        payload = {
            "model": self.model_id,
            "messages": messages,
            "stream": False,
            "options": options,
        }
        if self._think.mode != "auto":
            payload["think"] = self._think.mode == "on"
        start = time.perf_counter()
        data = self._post("/api/chat", payload)
        latency = time.perf_counter() - start
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise TransientModelError(f"{self._name}: the reply had no message content")
        done_reason = data.get("done_reason")
        usage = Usage(
            input_tokens=_int(data.get("prompt_eval_count")),
            output_tokens=_int(data.get("eval_count")),
        )
        # Ollama leaves prompt_eval_count out when the prompt came from its KV cache: the call
        # layer then counts the call with the tokenizer
        reported = all(_is_count(data.get(k)) for k in ("prompt_eval_count", "eval_count"))
        # a thinking model: its reasoning in message.thinking (``think``), or in <think> tags
        separated = reasoning_field(message)
        split = self._think.split(content, separated=separated, cut=done_reason == "length")
        reasoning = separated or split.reasoning
        hidden = hidden_share(usage.output_tokens, reasoning=reasoning, visible=split.visible) if reasoning else 0
        return Completion(
            text=split.visible,
            reasoning_tokens=hidden if reported else 0,
            think_chars_removed=split.removed_chars,
            reasoning_chars=len(separated) + len(split.reasoning),
            finish_reason=done_reason if isinstance(done_reason, str) and done_reason else "stop",
            usage=usage if reported else Usage(),
            model=str(data.get("model") or self.model_id),
            latency_s=latency,
            usage_reported=reported,
        )

    @property
    def cache_location(self) -> str | None:
        """Keyed by model name and digest (or ``--deployment``), not by host: another spelling of the
        host replays, another server's weights under the same name do not."""
        if self.deployment:
            return f"ollama:{self.deployment}"
        return f"ollama@{self.server_identity}" if self.server_identity else "ollama"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    # ---- internals ---------------------------------------------------------------------

    def _num_ctx_for(self, request: Request, room: int = 0) -> tuple[int, int]:
        """The context to ask for, and the reasoning room that fits in the model's own (the room may shrink)."""
        prompt_tokens = self.count_tokens((request.system or "") + "\n" + request.user_text)
        room = min(room, max(0, self.context_length - prompt_tokens - request.max_tokens))
        if prompt_tokens + request.max_tokens > self.context_length:
            raise ContextTooLong(
                f"{self._name}: about {prompt_tokens} prompt tokens + {request.max_tokens} output "
                f"tokens do not fit the model's {self.context_length}-token context; use smaller "
                "chunks or a model with a longer context"
            )
        wanted = fit_num_ctx(prompt_tokens, request.max_tokens + room, self.context_length)
        with self._lock:
            self._num_ctx = max(self._num_ctx, wanted)
            return self._num_ctx, room

    def _show(self) -> dict[str, Any]:
        try:
            return self._post("/api/show", {"model": self.model_id}, timeout_s=SHOW_TIMEOUT_S)
        except TransientModelError as exc:
            detail = str(exc).removeprefix(f"{self._name}: ")
            raise ModelUnavailable(
                f"{self._name}: no working Ollama server at {self.host} ({detail}); "
                "start it with `ollama serve` (or set OLLAMA_HOST)"
            ) from exc

    def _post(
        self, path: str, payload: dict[str, Any], *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {} if timeout_s is None else {"timeout": timeout_s}
        try:
            with attempt_deadline(self.timeout_s if timeout_s is None else timeout_s):
                response = self._client.post(path, json=payload, **kwargs)
        except httpx.TimeoutException as exc:
            raise TransientModelError(f"{self._name}: request timed out") from exc
        except httpx.TransportError as exc:
            if reply_over_cap():
                cap = MAX_REPLY_BYTES // 2**20
                raise TransientModelError(f"{self._name}: the reply is larger than {cap} MB") from exc
            detail = server_message(str(exc))
            raise TransientModelError(f"{self._name}: connection failed ({detail})") from exc
        if response.status_code != 200:
            raise self._translate(response)
        data = parse_json(response.content, where=f"{self._name}: the server's reply",
                          error=TransientModelError)
        if not isinstance(data, dict):
            raise TransientModelError(f"{self._name}: the server's reply was not a JSON object")
        return data

    def _translate(self, response: httpx.Response) -> Exception:
        status = response.status_code
        detail = server_message(_error_text(response))
        name = self._name
        if status == 404 and "model" not in detail.lower():  # not Ollama's "model ... not found"
            return ModelUnavailable(
                f"{name}: {self.host} answered 404 ({detail}); is it an Ollama server? "
                "Set OLLAMA_HOST (or --base-url) to Ollama's address"
            )
        if status == 404:
            return ModelUnavailable(
                f"{name}: Ollama at {self.host} has no model {self.model_id!r}; "
                f"run `ollama pull {self.model_id}`"
            )
        return error_for_status(status, response.content, response.headers, name=name)


def _error_text(response: httpx.Response) -> str:
    """Ollama's ``{"error": "..."}`` message, or the start of the body (never headers)."""
    return error_detail(response.text)


def _family_and_context(show: dict[str, Any]) -> tuple[str, int | None]:
    """The model family and context length from an ``/api/show`` reply."""
    info = show.get("model_info")
    info = info if isinstance(info, dict) else {}
    details = show.get("details")
    details = details if isinstance(details, dict) else {}
    arch = info.get("general.architecture")
    family = str(arch or details.get("family") or "")
    keys = [f"{family}.context_length"] if family else []
    keys += sorted(k for k in info if isinstance(k, str) and k.endswith(".context_length"))
    for key in keys:
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return family, value
    return family, None


def _estimate_counter() -> Callable[[str], int]:
    from booksum_app.chunking import get_tokenizer

    return get_tokenizer("estimate").count


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
