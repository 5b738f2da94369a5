"""A fake OpenAI + Anthropic server on localhost, so the real SDKs can be tested with no network or key.

Speaks ``POST /v1/chat/completions`` (OpenAI, non-streaming) and ``POST /v1/messages`` (Anthropic) wire formats.
Replies come from a function of the parsed request (default: ``fake_replies.default_reply``); usage: cl100k_base.
As a real server, it stops an answer at the request's ``max_tokens`` (``max_completion_tokens``)
with finish reason "length" (``stop_reason: max_tokens``), whatever the reply function wrote.
Latency (per call and per output token) and faults are configurable: a deterministic
``script`` of fault kinds for the next calls, and/or a seeded random ``fault_rate``.

``thinking="tags"|"open"|"parser"|"long"`` answers as a thinking model does (``fake_replies.THINK_MODES``);
``chat_template_kwargs: {"enable_thinking": false}`` turns it off.

``prompt_caching=True`` reports prompt-cache usage as the providers do
(:mod:`booksum_app.testing.fake_prompt_cache`: OpenAI's automatic prefix cache, Anthropic's
``cache_control`` breakpoints); off by default, every prompt token is then uncached.
Wire formats (parsing, reply bodies) are in :mod:`booksum_app.testing.fake_wire`.

``rate_limit_in_flight=N`` answers 429 (with Retry-After) to every request above N in flight,
as a provider's concurrency limit does; ``slots=N`` serves N at once and silently queues the
rest, as ``llama-server -np N`` or vLLM's ``max_num_seqs`` do. Fault kinds: ``429`` (with
Retry-After), ``500``, ``503``, ``timeout`` (hang past the client's timeout), ``drop`` (close
the socket without a response), ``empty`` (content ""), ``truncated`` (half the reply,
finish_reason "length" / stop_reason "max_tokens"), and the non-retryable ``400``, ``401``,
``context`` (400 "context length exceeded"), and ``echo`` (a well-formed 200 whose content is
the prompt text itself, demonstrations included: a judge that parrots its prompt must not be
read as an answer).

How one request is answered on the wire (routes, faults, replies, latency, billing) is
:mod:`booksum_app.testing.fake_handler`; this module holds the server's settings, scripted
faults, log and counts.

For a dry run by hand: ``python -m booksum_app.testing.fake_server --port 8765``.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Self

from booksum_app.llm.base import Request, Usage
from booksum_app.testing.fake_handler import LoggedRequest, _Handler, _Server
from booksum_app.testing.fake_prompt_cache import BreakpointCache, PrefixCache
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.quirks import QUIRKS

FAULT_KINDS = (
    "429",
    "500",
    "503",
    "timeout",
    "drop",
    "empty",
    "truncated",
    "400",
    "401",
    "context",
    "notjson",
    "echokey",
    "echo",
    *QUIRKS,  # misbehaving peers: booksum_app/testing/quirks.py
)
RETRYABLE_FAULTS = ("429", "500", "503", "timeout", "drop", "empty")
ReplyFn = Callable[[Request], str]


class FakeServer:
    """The fake API server; use as a context manager, point SDKs at :attr:`openai_base_url` etc."""

    def __init__(
        self,
        *,
        reply: ReplyFn | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        latency_per_token_s: float = 0.0,
        script: Iterable[str | None] = (),
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = RETRYABLE_FAULTS,
        seed: int = 0,
        retry_after_s: float = 1.0, hang_s: float = 5.0, drip_s: float = 0.2,
        rate_limit_in_flight: int | None = None,
        slots: int | None = None,
        prompt_caching: bool = False,
        thinking: str | None = None,
        usage_ratio: float = 1.0,  # reported (billed) prompt tokens: this times its count (a tokenizer counting more)
    ) -> None:
        if thinking is not None and thinking not in ("tags", "open", "parser", "long"):
            raise ValueError(f"unknown thinking mode {thinking!r}; use tags, open, parser or long")
        self.thinking = thinking  # a thinking model's reasoning in each answer (fake_replies.THINK_MODES)
        self.reply: ReplyFn = reply or default_reply
        self.prompt_caching = prompt_caching  # simulate providers' prompt caches (fake_prompt_cache.py)
        self.latency_s, self.latency_per_token_s, self.usage_ratio = latency_s, latency_per_token_s, usage_ratio
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        for kind in (*self.fault_kinds, *(k for k in script if k is not None)):
            if kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; use one of {FAULT_KINDS}")
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.drip_s = drip_s  # a dripping quirk's pause between bytes
        self.billed = Usage()  # what the 200 replies billed (prompt and completion tokens, hidden ones too)
        self.rate_limit_in_flight = rate_limit_in_flight  # answer 429 to requests above this many in flight
        self.rejected = 0
        self.slots = threading.Semaphore(slots) if slots else None  # requests served at once; None: all
        self._script: list[str | None] = list(script)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._log_entries: list[LoggedRequest] = []
        self._completed_count = 0
        self._in_flight = 0
        self.max_in_flight = 0
        self._prefix_cache = PrefixCache()
        self._breakpoint_cache = BreakpointCache()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        """Serve in a background thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release hanging handlers."""
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the Anthropic SDK's base URL)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's base URL (``.../v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK's base URL."""
        return self.url

    # ---- scripting and observation -----------------------------------------------------

    def add_faults(self, *kinds: str | None) -> None:
        """Queue fault kinds (None: a normal reply) for the next calls, in order."""
        for kind in kinds:
            if kind is not None and kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; use one of {FAULT_KINDS}")
        with self._lock:
            self._script.extend(kinds)

    @property
    def call_count(self) -> int:
        """Requests received (faults included)."""
        with self._lock:
            return len(self._log_entries)

    @property
    def completed_count(self) -> int:
        """Requests answered with a normal 200 reply (empty / truncated ones included)."""
        with self._lock:
            return self._completed_count

    @property
    def requests(self) -> list[LoggedRequest]:
        """A copy of the request log."""
        with self._lock:
            return list(self._log_entries)

    # ---- used by the handler -----------------------------------------------------------

    def _next_fault(self) -> str | None:
        with self._lock:
            if self._script:
                return self._script.pop(0)
            if self.fault_rate > 0 and self._random.random() < self.fault_rate:
                return self._random.choice(self.fault_kinds)
            return None

    def _log(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._log_entries.append(entry)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _current_in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def _reject(self) -> None:
        with self._lock:
            self.rejected += 1

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _bill(self, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            self.billed = self.billed + Usage(input_tokens, output_tokens)

    def _completed(self) -> None:
        with self._lock:
            self._completed_count += 1


def main(argv: list[str] | None = None) -> None:
    """Run the fake server in the foreground (Ctrl-C to stop)."""
    parser = argparse.ArgumentParser(
        prog="python -m booksum_app.testing.fake_server",
        description="A fake OpenAI/Anthropic API on localhost for dry runs of booksum.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call")
    parser.add_argument("--latency-per-token", type=float, default=0.0, help="seconds per token")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of retryable faults")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate-limit-in-flight", type=int, default=None,
                        help="answer 429 to requests above this many in flight")
    parser.add_argument("--slots", type=int, default=None, help="serve this many at once, queue the rest")
    parser.add_argument("--prompt-caching", action="store_true",
                        help="simulate OpenAI prefix caching and Anthropic cache_control in usage")
    args = parser.parse_args(argv)
    server = FakeServer(
        host=args.host,
        port=args.port,
        latency_s=args.latency,
        latency_per_token_s=args.latency_per_token,
        fault_rate=args.fault_rate,
        seed=args.seed,
        rate_limit_in_flight=args.rate_limit_in_flight,
        slots=args.slots,
        prompt_caching=args.prompt_caching,
    )
    with server:
        print(f"OpenAI-compatible:  --model openai:gpt-4o --base-url {server.openai_base_url}")
        print(f"Anthropic:          ANTHROPIC_BASE_URL={server.anthropic_base_url}")
        print("any API key works (e.g. OPENAI_API_KEY=dummy); Ctrl-C to stop", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
