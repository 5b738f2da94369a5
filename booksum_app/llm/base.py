"""The model seam: requests, completions, usage, model metadata and the protocols behind them.

Strategies and scorers depend only on :class:`ChatModel`; every backend implements
:class:`Backend` (one ``complete``), and ``llm/calls.py`` wraps a backend with the
retries, concurrency bound, call cache and cost accounting that every call gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Usage:
    """Token usage of one call (or a sum of calls)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # part of input_tokens served from a provider prompt cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )


@dataclass(frozen=True)
class Request:
    """One chat completion request: an optional system message and one user message.

    ``shared_prefix`` is text placed before ``prompt`` in the user message that many
    calls share (judge instructions + demonstrations + the summary); backends that
    support prompt caching mark it cacheable (Anthropic ``cache_control``), others simply
    concatenate. ``purpose`` labels the call in records ("summarize", "merge", "judge", ...)
    and is not part of the cache key; ``sample_index`` is, so deliberate resampling
    (regenerating an invalid summary) gets a fresh answer instead of the cached one.
    """

    prompt: str
    max_tokens: int
    temperature: float = 0.5
    top_p: float = 1.0
    system: str | None = None
    shared_prefix: str = ""
    stop: tuple[str, ...] = ()
    sample_index: int = 0
    purpose: str = ""

    @property
    def user_text(self) -> str:
        return self.shared_prefix + self.prompt


@dataclass(frozen=True)
class Completion:
    """A model's answer with what it cost."""

    text: str
    finish_reason: str  # "stop", "length" (cut off at max_tokens), or the backend's own word
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cache_hit: bool = False  # replayed from booksum's call cache: no tokens paid this time

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


@dataclass(frozen=True)
class ModelInfo:
    """What booksum needs to know about a model to plan calls and price them."""

    name: str  # canonical model string, e.g. "openai:gpt-4o", "local"
    context_window: int  # tokens, prompt + completion
    tokenizer: str  # "cl100k_base", "o200k_base", "estimate", or "native"
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    cached_input_usd_per_mtok: float | None = None
    max_output_tokens: int | None = None
    # "regenerate" (the paper's rule) or "truncate": an answer past its length limit is cut
    # at its last sentence end at once, for models that run past word limits whatever they
    # are asked (the embedded SmolLM2-135M)
    length_policy: str = "regenerate"

    def cost_usd(self, usage: Usage) -> float:
        """Dollars for one call's usage under this model's prices."""
        cached_price = (
            self.input_usd_per_mtok
            if self.cached_input_usd_per_mtok is None
            else self.cached_input_usd_per_mtok
        )
        uncached = usage.input_tokens - usage.cached_input_tokens
        return (
            uncached * self.input_usd_per_mtok
            + usage.cached_input_tokens * cached_price
            + usage.output_tokens * self.output_usd_per_mtok
        ) / 1_000_000


@runtime_checkable
class Backend(Protocol):
    """One provider: turns a request into a completion, translating its errors into ours."""

    info: ModelInfo

    def complete(self, request: Request) -> Completion: ...


@runtime_checkable
class BatchBackend(Backend, Protocol):
    """A backend that prefers whole batches (vLLM's offline engine)."""

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion]: ...


class ChatModel(Protocol):
    """What strategies and scorers call: a backend with caching, retries and accounting."""

    @property
    def info(self) -> ModelInfo: ...

    def count_tokens(self, text: str) -> int: ...

    def complete(self, request: Request) -> Completion: ...

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]: ...

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]: ...
