"""OpenAI chat completions, and any OpenAI-compatible server (``vllm serve``, llama.cpp server) by base URL.

Several base URLs (comma-separated) serve one model from several replicas; which one gets a
call, and when a failing one (connection, timeout, 5xx, a malformed reply) comes back, is
:mod:`booksum_app.llm.providers.endpoints`'s job.

Two carriers, one wire format (``openai_wire``: the body sent, the reply accepted):

- a plain ``http://`` server with no proxy in the way gets ``http_json``'s lean client: 0.75 ms
  of the driver's CPU per call, call layer included, against 1.9 ms through the SDK at 256 in
  flight (``benchmarks/bench_driver.py --transport both``), which is what lets one driver keep
  several replicas busy;
- everything else (api.openai.com, ``https://`` URLs, proxies) goes through the ``openai`` SDK,
  which brings TLS with the system's trust store and proxy support. ``BOOKSUM_OPENAI_TRANSPORT=sdk``
  sends every call through it.

The only module that imports ``openai``. SDK retries are off (``max_retries=0``): the call
layer retries with its own backoff. Failures become booksum errors at this boundary; no
message ever contains the API key. Official OpenAI models get ``max_completion_tokens``
(required by reasoning models, accepted by all current chat models); servers reached by base
URL get the older ``max_tokens``, which every compatible server understands, except for
reasoning models, which get ``max_completion_tokens`` wherever they are served.

Reasoning models (o1, o3, o4, gpt-5 families, dated ids too) are sent no temperature / top_p,
which they reject, and think in hidden tokens paid out of ``max_completion_tokens``: each
request gets ``REASONING_ROOM[effort]`` tokens on top of the answer's budget (the cost plan
and ``--max-cost`` count that room), and ``reasoning_effort`` (default ``low``: a summary
needs little deliberation, and each hidden token is billed as output).

Models that think in their text (Qwen3, R1 distills on a server; ``llm/providers/thinking.py``)
get ``THINKING_ROOM[effort]`` tokens on top of ``max_tokens`` once known (by name, ``--thinking
on``) or seen thinking, fitted to the context window, and compatible servers are sent
``chat_template_kwargs: {"enable_thinking": ...}`` under ``--thinking on|off``.

``timeout_s`` bounds one attempt in wall-clock time, and ``deadline.MAX_REPLY_BYTES`` its reply,
whichever carrier: the lean client's watchdog and read cap, the SDK's transport
(``deadline.deadline_transport``). An error status is ``http_status.error_for_status``'s.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from booksum_app.config import ADAPTIVE_MAX_CONCURRENCY, DEFAULT_TIMEOUT_S, SERVER_INITIAL_CONCURRENCY
from booksum_app.errors import MissingAPIKey, RateLimited, TransientModelError, server_message
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request
from booksum_app.llm.controller import LatencyController
from booksum_app.llm.deadline import MAX_REPLY_BYTES, SDK_POOL, attempt_deadline, deadline_transport, reply_over_cap
from booksum_app.llm.http_status import error_for_status
from booksum_app.llm.origin import public_url
from booksum_app.llm.providers.endpoints import PROBE_TIMEOUT_S, Balancer, Endpoint, http_probe
from booksum_app.llm.providers.http_json import HttpFailure, JsonPoster, is_plain_http
from booksum_app.llm.providers.openai_wire import chat_body, completion_from_reply
from booksum_app.llm.providers.thinking import ThinkWatch
from booksum_app.llm.providers.wire import sdk_error_body

if TYPE_CHECKING:  # the SDK (about 1 s to import) loads only when a URL needs it: plain http:// does not
    import openai

DUMMY_KEY = "booksum-no-key"  # servers reached by base URL often need no key; the SDK wants one
Transport = Literal["auto", "sdk"]
# hidden-token room per reasoning effort, on top of the answer's own budget. OpenAI advises
# reserving about 25,000 tokens for reasoning and outputs at first; a summary at low effort
# needs far less, and a budget spent on reasoning fails with a line that says to lower it
REASONING_ROOM = {"minimal": 1024, "low": 4096, "medium": 12288, "high": 32768}
DEFAULT_REASONING_EFFORT = "low"


class OpenAIBackend(BackendBase):
    """Chat completions to OpenAI or to compatible servers, through the SDK or the lean client."""

    kind = "openai"
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
        reasoning: bool = False,
        reasoning_effort: str | None = None,
        legacy_max_tokens: bool | None = None,
        transport: Transport = "auto",
        max_in_flight_per_endpoint: int | None = None,
        concurrency: int | None = None,
        deployment: str | None = None,
        thinking: str = "auto",
        server_identity: str | None = None,
    ) -> None:
        if not api_key:
            if base_url is None:
                raise MissingAPIKey(
                    "No OpenAI API key: set OPENAI_API_KEY, or name a local OpenAI-compatible server "
                    "(--base-url URL on the command line, base_url= in the library, or OPENAI_BASE_URL)"
                )
            api_key = DUMMY_KEY
        self.info = info
        self.model_id = model_id
        self.base_url = base_url
        self.deployment = deployment
        self.server_identity = server_identity if base_url is not None else None
        self.reasoning = reasoning
        self.timeout_s = timeout_s
        self.reasoning_effort = (reasoning_effort or DEFAULT_REASONING_EFFORT) if reasoning else None
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_ROOM:
            raise ValueError(f"unknown reasoning effort {self.reasoning_effort!r}")
        # the call layer counts this room in each call's worst-case cost
        self._reasoning_room = REASONING_ROOM[self.reasoning_effort] if self.reasoning_effort else 0
        # a model that thinks in its text (Qwen3, R1 on a server): its evidence, mode and room
        # the mode is sent (and keys the cache) only where it can be: a compatible server at a base URL
        self.thinking = thinking if base_url and not reasoning else "auto"
        self._watch = None if reasoning else ThinkWatch(model_id, mode=self.thinking, effort=reasoning_effort)
        # compatible servers get ``max_tokens``; api.openai.com gets ``max_completion_tokens``
        self.legacy_max_tokens = (
            base_url is not None if legacy_max_tokens is None else legacy_max_tokens
        )
        self._secret = api_key  # only to redact it from server messages; never printed
        urls = [u.strip() for u in base_url.split(",") if u.strip()] if base_url else [None]

        def sender(url: str | None) -> _Sender:
            if transport == "auto" and url is not None and _direct_reachable(url):
                headers = {"Authorization": f"Bearer {api_key}", "User-Agent": "booksum"}
                return _DirectSender(JsonPoster(url, headers=headers, timeout_s=timeout_s), info.name, api_key)
            import openai

            return _SdkSender(
                lambda: openai.OpenAI(
                    api_key=api_key, base_url=url, timeout=timeout_s, max_retries=0,
                    http_client=openai.DefaultHttpxClient(transport=deadline_transport(**SDK_POOL)),
                ),
                info.name, api_key,
            )

        probe = http_probe(min(PROBE_TIMEOUT_S, timeout_s)) if len(urls) > 1 else None

        # each replica's own limit, read from its own answers; --concurrency N (a quota) starts them at their share
        start = max(SERVER_INITIAL_CONCURRENCY, -(-concurrency // len(urls)) if concurrency else 0)

        def control() -> LatencyController:
            return LatencyController(initial=start, maximum=ADAPTIVE_MAX_CONCURRENCY, deadline_s=timeout_s)

        self._balancer = Balancer([Endpoint(url, sender(url)) for url in urls], limit=max_in_flight_per_endpoint,
                                  probe=probe, control=control if len(urls) > 1 else None)
        self._endpoints = self._balancer.endpoints

    @property
    def cache_location(self) -> str | None:
        """A server is keyed by its deployment, not its URLs: ``localhost`` for ``127.0.0.1``, another
        port or an added replica serve the same model; ``--deployment NAME`` tells weights apart, and
        so does the identity the server reports (two servers of different weights never share)."""
        if self.base_url is None:
            return None  # api.openai.com: the keys every earlier run wrote
        if self.deployment:
            return f"server:{self.deployment}"
        return f"server@{self.server_identity}" if self.server_identity else "server"

    @property  # a thinking model's room grows once it is seen thinking
    def extra_output_tokens(self) -> int:  # type: ignore[override]
        """Room added to each request's max_tokens: a reasoning model's, or a thinking model's."""
        return self._watch.room_tokens if self._watch is not None else self._reasoning_room

    @property
    def reasoning_advice(self) -> str:  # type: ignore[override]
        """What to do when the model spent its room on reasoning: the option that applies to it."""
        if self._watch is not None:
            return self._watch.advice()
        return "lower --reasoning-effort or raise the summary length"

    @property
    def replicas(self) -> int:
        """Base URLs serving the model: past one, each has its own limit (the call layer's reads no latency)."""
        return len(self._endpoints)

    def limiter_report(self) -> dict[str, Any]:
        """Each replica's limit decisions, for the run record (empty with one base URL)."""
        return self._balancer.report()

    @property
    def transports(self) -> list[str]:
        """How each endpoint is reached: ``"direct"`` (the lean client) or ``"sdk"``."""
        return [endpoint.sender.name for endpoint in self._endpoints]

    def complete(self, request: Request) -> Completion:
        """Send one chat completion; translate failures into booksum errors."""
        watch, thinking_room = self._watch, 0
        if watch is not None and watch.room_tokens:
            thinking_room = watch.fitted_room(
                prompt_tokens=self.count_tokens((request.system or "") + request.user_text),
                max_tokens=request.max_tokens, context_window=self.info.context_window)
        body = chat_body(
            request, model_id=self.model_id, legacy_max_tokens=self.legacy_max_tokens, reasoning=self.reasoning,
            reasoning_effort=self.reasoning_effort, reasoning_room=self._reasoning_room, thinking_room=thinking_room,
            template_kwargs=watch.chat_template_kwargs() if watch is not None else None,
        )
        start = time.perf_counter()
        shared = request.shared_prefix and len(self._endpoints) > 1  # prefix affinity among replicas
        ticket = self._balancer.acquire(hash((request.system, request.shared_prefix)) if shared else None)
        endpoint = ticket.endpoint
        failed: bool | None = True
        overloaded = False
        try:
            with attempt_deadline(self.timeout_s):
                raw = endpoint.sender.send(body)
            completion = completion_from_reply(
                raw, name=self.info.name, model_id=self.model_id,
                latency_s=time.perf_counter() - start, secret=self._secret, watch=watch,
            )
            failed = False
            if endpoint.url is not None and len(self._endpoints) > 1:  # stored with the answer: the replica
                completion = dataclasses.replace(completion, server=public_url(endpoint.url))
            return completion
        except TransientModelError as exc:
            overloaded = exc.overloaded  # a 503: the replica's limit halves too
            raise  # a connection failure, timeout, 5xx or malformed reply counts against the endpoint
        except Exception as exc:
            failed = None  # a 429 or a rejected request says nothing of the endpoint's health
            overloaded = isinstance(exc, RateLimited)
            raise
        finally:
            self._balancer.release(ticket, failed=failed, overloaded=overloaded)

    def close(self) -> None:
        """Close every endpoint's HTTP connections."""
        for endpoint in self._endpoints:
            endpoint.sender.close()


def _direct_reachable(url: str) -> bool:
    """A plain ``http://`` URL that no proxy setting (``HTTP_PROXY``/``ALL_PROXY``, ``NO_PROXY``) routes."""
    if not is_plain_http(url):
        return False
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get("http") or proxies.get("all")):
        return True
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
    return bool(bypass(urlsplit(url).hostname or "", proxies))


class _Sender:
    """How one endpoint's calls travel: ``send`` gives a 2xx reply's body or raises a booksum error."""

    name = ""

    def send(self, body: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _DirectSender(_Sender):
    """The lean client (``http_json``): plain HTTP/1.1 keep-alive, JSON in and out."""

    name = "direct"

    def __init__(self, poster: JsonPoster, model_name: str, secret: str) -> None:
        self._poster = poster
        self._model_name = model_name
        self._secret = secret

    def send(self, body: dict[str, Any]) -> bytes:
        name = self._model_name
        try:
            reply = self._poster.post("/chat/completions", json.dumps(body, ensure_ascii=False).encode())
        except HttpFailure as exc:
            if exc.timed_out:
                raise TransientModelError(f"{name}: request timed out") from exc
            raise TransientModelError(f"{name}: connection failed ({server_message(str(exc), self._secret)})") from exc
        if 200 <= reply.status < 300:
            return reply.body
        raise error_for_status(reply.status, reply.body, reply.headers, name=name, secret=self._secret,
                               key_hint="OPENAI_API_KEY")

    def close(self) -> None:
        self._poster.close()


class _SdkSender(_Sender):
    """The ``openai`` SDK, its calls spread over lanes (each its own client and connection pool).

    httpcore's pool walks every connection on every request and every response (checking each,
    polling the idle ones' sockets), so its CPU per call grows with the calls in flight; a new
    lane opens when every lane holds ``LANE_CALLS`` calls (bench_driver.py).
    """

    name = "sdk"
    LANE_CALLS = 32

    def __init__(self, new_client: Callable[[], openai.OpenAI], model_name: str, secret: str) -> None:
        self._new_client = new_client
        self._model_name = model_name
        self._secret = secret
        self.lanes = [_Lane(new_client())]
        self._lock = threading.Lock()

    def send(self, body: dict[str, Any]) -> bytes:
        import openai  # already loaded: the lanes' clients are the SDK's

        name = self._model_name
        lane = self._take_lane()
        try:
            # The SDK walks every create() argument through its TypedDict transform and builds
            # pydantic models of the reply; ours are plain JSON already, so they go in
            # extra_body (merged into the body as it is) and the raw reply is read in openai_wire.
            raw = lane.client.chat.completions.with_raw_response.create(
                model=body["model"], messages=[], extra_body=body
            )
            return bytes(raw.content)
        except openai.APITimeoutError as exc:
            raise TransientModelError(f"{name}: request timed out") from exc
        except openai.APIConnectionError as exc:
            if reply_over_cap():
                raise TransientModelError(f"{name}: the reply is larger than {MAX_REPLY_BYTES // 2**20} MB") from exc
            raise TransientModelError(f"{name}: connection failed ({server_message(str(exc), self._secret)})") from exc
        except openai.APIStatusError as exc:
            raise error_for_status(exc.status_code, sdk_error_body(exc.body, str(exc.message)), exc.response.headers,
                                   name=name, secret=self._secret, key_hint="OPENAI_API_KEY") from exc
        finally:
            with self._lock:
                lane.in_flight -= 1

    def close(self) -> None:
        for lane in self.lanes:
            lane.client.close()

    def _take_lane(self) -> _Lane:
        """The lane with the fewest calls in flight, or a new one when all are full."""
        with self._lock:
            lane = min(self.lanes, key=lambda candidate: candidate.in_flight)
            if lane.in_flight >= self.LANE_CALLS:
                lane = _Lane(self._new_client())
                self.lanes.append(lane)
            lane.in_flight += 1
            return lane


class _Lane:
    """One SDK client (its own HTTP connection pool) and its calls in flight."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client
        self.in_flight = 0
