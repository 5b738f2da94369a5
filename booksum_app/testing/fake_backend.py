"""An in-process fake :class:`~booksum_app.llm.base.Backend`: scripted replies, a call history.

Deterministic and thread-safe; no HTTP. Wrap it in ``booksum_app.llm.calls.Client`` to get
the same retries, cache and accounting a real backend gets, or call it directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from booksum_app.errors import BooksumError
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.testing.fake_replies import default_reply, estimate_tokens

FAKE_MODEL_INFO = ModelInfo(
    name="fake:model",
    context_window=16_384,
    tokenizer="cl100k_base",
    input_usd_per_mtok=1.0,
    output_usd_per_mtok=2.0,
    cached_input_usd_per_mtok=0.5,
)

ReplyFn = Callable[[Request], str | Completion]


def count_tokens_for(info: ModelInfo, text: str) -> int:
    """Tokens of ``text`` under ``info.tokenizer`` when the chunking layer can count them, else an estimate."""
    try:
        from booksum_app.chunking import get_tokenizer

        return int(get_tokenizer(info.tokenizer).count(text))
    except (ImportError, BooksumError):  # chunking not there yet, or a tokenizer it cannot load
        return estimate_tokens(text)


class FakeBackend(BackendBase):
    """A backend whose replies come from a function of the request (default: extractive summaries).

    ``reply`` may return a string (finish reason ``finish_reason``) or a full
    :class:`Completion` (used as is, so a script can return cut-off answers). Every request
    is appended to :attr:`calls` in the order the calls started.
    """

    kind = "fake"

    def __init__(
        self,
        info: ModelInfo | None = None,
        *,
        reply: ReplyFn | None = None,
        latency_s: float = 0.0,
        finish_reason: str = "stop",
    ) -> None:
        self.info = info or FAKE_MODEL_INFO
        self._reply: ReplyFn = reply or default_reply
        self.latency_s = latency_s
        self.finish_reason = finish_reason
        self._lock = threading.Lock()
        self.calls: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def count_tokens(self, text: str) -> int:
        """Token count under this fake model's tokenizer."""
        return count_tokens_for(self.info, text)

    def complete(self, request: Request) -> Completion:
        """Record the request and answer it."""
        with self._lock:
            self.calls.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            start = time.perf_counter()
            if self.latency_s:
                time.sleep(self.latency_s)
            answer = self._reply(request)
            if isinstance(answer, Completion):
                return answer
            prompt = (request.system or "") + request.user_text
            usage = Usage(
                input_tokens=self.count_tokens(prompt), output_tokens=self.count_tokens(answer)
            )
            return Completion(
                text=answer,
                finish_reason=self.finish_reason,
                usage=usage,
                model=self.info.name,
                latency_s=time.perf_counter() - start,
            )
        finally:
            with self._lock:
                self.in_flight -= 1

    @property
    def call_count(self) -> int:
        """How many calls reached this backend."""
        with self._lock:
            return len(self.calls)
