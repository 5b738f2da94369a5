"""The model seam: requests, completions, usage, model metadata and the protocols behind them.

Strategies and scorers depend only on :class:`ChatModel`; every backend derives from
:class:`BackendBase` (one ``complete``), and ``llm/calls.py`` wraps a backend with the
retries, concurrency bound, call cache and cost accounting that every call gets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from itertools import pairwise
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from booksum_app.config import FIXED_CONCURRENCY
from booksum_app.errors import ConfigError

if TYPE_CHECKING:
    from booksum_app.llm.spec import LLMSettings, ModelSpec


@dataclass(frozen=True)
class Usage:
    """Token usage of one call (or a sum of calls)."""

    input_tokens: int = 0  # every prompt token, cached or not
    output_tokens: int = 0
    cached_input_tokens: int = 0  # part of input_tokens read from a provider prompt cache
    cache_write_input_tokens: int = 0  # part of input_tokens written to it (Anthropic bills 1.25x)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_input_tokens + other.cache_write_input_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cached_input_tokens - other.cached_input_tokens,
            self.cache_write_input_tokens - other.cache_write_input_tokens,
        )


@dataclass(frozen=True)
class Tally:
    """Calls, tokens and dollars of a set of calls: the one counting type of summarize, score and compare.

    Tokens and ``cost_usd`` count every call, answered from booksum's cache or not, so a
    rerun reports the same work at the same list price; ``spent_usd`` is what reached the
    provider in the run that made the call (cache hits are free). Record and result types
    that need more (wall time, retries, judged sentences) extend it.
    """

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0  # every prompt token, cached or not
    output_tokens: int = 0
    cost_usd: float = 0.0  # list price of every call, prompt-cache reads and writes at their prices
    spent_usd: float = 0.0  # of which paid: calls that reached the provider
    cached_input_tokens: int = 0  # of input_tokens, read from a provider prompt cache
    cache_write_input_tokens: int = 0  # of input_tokens, written to it
    billed_input_tokens: float = 0.0  # input-token equivalents at the model's cache prices
    # replies paid for and not used: empty answers, answers cut with nothing in them, each
    # resent; their tokens and dollars are in the fields above
    wasted_attempts: int = 0
    # tokens counted with the tokenizer because the server's reply said none (or nonsense)
    estimated_tokens: int = 0
    # characters of reasoning (<think> blocks) removed from replies' text (llm/providers/thinking.py)
    think_chars_removed: int = 0

    @classmethod
    def of_call(cls, info: ModelInfo, usage: Usage, *, cache_hit: bool, spent_usd: float) -> Tally:
        """One call's tally, priced with ``info``'s prices."""
        return cls(
            calls=1, cache_hits=int(cache_hit), input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cost_usd=info.cost_usd(usage), spent_usd=0.0 if cache_hit else spent_usd,
            cached_input_tokens=usage.cached_input_tokens, cache_write_input_tokens=usage.cache_write_input_tokens,
            billed_input_tokens=info.billed_input_tokens(usage),
        )

    def __add__(self, other: Tally) -> Tally:
        return Tally(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(Tally)})


# an answer longer than this many characters per token of its room is not one a provider can
# have billed within max_tokens (the longest tokens are runs of spaces or repeated symbols)
MAX_CHARS_PER_TOKEN = 16
FINISH_LOOP = "loop"  # generation stopped after a repeated sentence (Request.stop_at_loop)


@dataclass(frozen=True)
class Request:
    """One chat completion request: an optional system message and one user message.

    ``shared_prefix`` is text placed before ``prompt`` in the user message that many
    calls share (judge instructions + demonstrations + the summary); backends that
    support prompt caching mark it cacheable (Anthropic ``cache_control``), others simply
    concatenate. ``prefix_breaks`` are character offsets inside ``shared_prefix`` where an
    earlier cache breakpoint falls (the judge's: after the demonstrations, shared by every
    summary); the end of ``shared_prefix`` is always one. They change no text, so they are
    not part of the call cache key. ``purpose`` labels the call in records ("summarize", "merge", "judge", ...)
    and is not part of the cache key; ``sample_index`` is, so deliberate resampling
    (regenerating an invalid summary) gets a fresh answer instead of the cached one.

    ``stop_at_loop`` (a language, "en" or "zh"; "" for none) says the caller will cut the
    answer before its first sentence that repeats an earlier one (the ``truncate`` length
    policy), so a backend that watches its own generation (the embedded model) may stop a
    sentence after the repeat and answer ``finish_reason == "loop"`` (:data:`FINISH_LOOP`);
    others ignore it. It is part of the key only when set: an answer stopped early is never
    replayed to a request that wants it whole.
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
    prefix_breaks: tuple[int, ...] = ()
    stop_at_loop: str = ""

    def __post_init__(self) -> None:
        last = 0
        for offset in self.prefix_breaks:
            if not last < offset < len(self.shared_prefix):
                raise ValueError("prefix_breaks must be increasing offsets strictly inside shared_prefix")
            last = offset

    @property
    def user_text(self) -> str:
        return self.shared_prefix + self.prompt

    def prefix_blocks(self) -> list[str]:
        """``shared_prefix`` cut at ``prefix_breaks``: one block per cache breakpoint (none if no prefix)."""
        if not self.shared_prefix:
            return []
        cuts = [0, *self.prefix_breaks, len(self.shared_prefix)]
        return [self.shared_prefix[a:b] for a, b in pairwise(cuts)]


@dataclass(frozen=True)
class Completion:
    """A model's answer with what it cost."""

    text: str
    finish_reason: str  # "stop", "length" (cut off at max_tokens), "loop" (FINISH_LOOP), or the backend's own word
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cache_hit: bool = False  # replayed from booksum's call cache: no tokens paid this time
    usage_reported: bool = True  # False: the reply carried no usage; ``usage`` is zero or an estimate
    reasoning_tokens: int = 0  # of usage.output_tokens, hidden reasoning the answer does not show
    # characters of the reply's text removed as reasoning (a leading <think> block), tags included
    think_chars_removed: int = 0
    # characters of reasoning the reply carried outside ``text`` (removed from it, or a field the
    # server separated): a reply with reasoning and no text is a model that only reasoned
    reasoning_chars: int = 0
    # the server that wrote the answer (llm/origin.py): the replica that answered, when a backend
    # balances several and says which; for a replayed answer, the URL(s) the cache stored
    server: str | None = None

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"

    @property
    def visible_output_tokens(self) -> int:
        """Of ``usage.output_tokens``, the tokens of the answer's text: hidden reasoning taken out.

        What an answer's length is judged by; ``usage.output_tokens`` is what was billed.
        """
        out = self.usage.output_tokens
        return out - min(max(self.reasoning_tokens, 0), max(out, 0))


@dataclass(frozen=True)
class ModelInfo:
    """What booksum needs to know about a model to plan calls and price them."""

    name: str  # canonical model string, e.g. "openai:gpt-4o", "local"
    context_window: int  # tokens, prompt + completion
    tokenizer: str  # "cl100k_base", "o200k_base", "estimate", or "native"
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    cached_input_usd_per_mtok: float | None = None  # None: cache reads at the input price
    max_output_tokens: int | None = None
    cache_write_usd_per_mtok: float | None = None  # None: cache writes at the input price
    # "regenerate" (the paper's rule) or "truncate": an answer past its length limit is cut
    # at its last sentence end at once, for models that run past word limits whatever they
    # are asked (the embedded SmolLM2-135M)
    length_policy: str = "regenerate"
    # False: a paid API's model with no price in booksum's table or the config file: its plans say
    # "cost unknown" (never $0) and --max-cost refuses it
    price_known: bool = True

    @property
    def cached_price(self) -> float:
        """USD per Mtok of prompt-cache reads (the input price when none is known)."""
        p = self.cached_input_usd_per_mtok
        return self.input_usd_per_mtok if p is None else p

    @property
    def write_price(self) -> float:
        """USD per Mtok of prompt-cache writes (the input price when none is known)."""
        p = self.cache_write_usd_per_mtok
        return self.input_usd_per_mtok if p is None else p

    def input_usd(self, usage: Usage) -> float:
        """Dollars for the prompt tokens of ``usage``: plain, cache reads and cache writes each at their price."""
        plain = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_input_tokens)
        return (
            plain * self.input_usd_per_mtok
            + usage.cached_input_tokens * self.cached_price
            + usage.cache_write_input_tokens * self.write_price
        ) / 1_000_000

    def cost_usd(self, usage: Usage) -> float:
        """Dollars for one call's usage under this model's prices."""
        return self.input_usd(usage) + usage.output_tokens * self.output_usd_per_mtok / 1_000_000

    def billed_input_tokens(self, usage: Usage) -> float:
        """Prompt tokens as billed, in input-token equivalents (a cache read at 10% counts 0.1).

        A model without an input price (local, self-hosted) counts every token once.
        """
        if self.input_usd_per_mtok <= 0:
            return float(usage.input_tokens)
        return self.input_usd(usage) * 1_000_000 / self.input_usd_per_mtok


@dataclass(frozen=True)
class CallProgress:
    """Inside an in-process model's call: prompt tokens read, answer tokens written, the pace, the CPU."""

    prompt_tokens: int  # the call in progress (0: none)
    read_tokens: int  # of its prompt, read so far (a prefix kept from the previous call counts as read)
    written_tokens: int  # of its answer, written so far
    read_per_s: float  # prompt tokens read per second over every call so far (0: not measured yet)
    written_per_s: float  # answer tokens written per second over every call so far (0: not measured yet)
    cores_used: float  # CPU cores this process used during the call so far
    threads: int  # the threads the model computes on

    @property
    def machine_busy(self) -> bool:
        """Whether the model gets well under the cores it computes on: other work holds the CPU."""
        return self.threads > 0 and self.cores_used < BUSY_CORE_SHARE * self.threads


BUSY_CORE_SHARE = 0.6  # below this share of its threads' cores, the machine, not the model, sets the pace


class BackendBase(ABC):
    """What every backend derives from: one ``complete`` to write, the optional members defaulted.

    A backend turns a :class:`Request` into a :class:`Completion`, translating its provider's
    errors into :mod:`booksum_app.errors`. The client (``llm/calls.py``) adds the cache,
    retries, concurrency bound and cost accounting; it reads the members below directly, so a
    subclass overrides only what differs from these defaults:

    - ``kind``: part of the call cache key (calls of two kinds never share answers);
      "" means the class name.
    - ``default_concurrency``: calls in flight when the user sets none.
    - ``base_url``: the server it talks to (None: the provider's own).
    - ``cache_location``: where the model lives, as the cache key sees it; by default
      ``base_url``. A backend whose answers do not depend on the URL that reached the model
      (an OpenAI-compatible server, Ollama) names the deployment instead, so another spelling
      of the host, another port or an added replica replays the same answers.
    - ``server_identity``: the weights the server reports serving (vLLM's ``root``, llama.cpp's
      ``model_path``, Ollama's digest); keys the cache in place of the model name alone, and is
      stored with each answer. ``deployment``: the user's ``--deployment`` name, for the record.
    - ``count_tokens``: counts with the tokenizer ``info.tokenizer`` names. Override it only for
      ``tokenizer="native"`` (the model's own tokenizer): a named tokenizer is what ``inspect``
      and compare's plan count with, so the run counts with it too.
    - ``close``: release connections or weights (nothing by default).
    - ``extra_output_tokens``: room the backend adds to each request's ``max_tokens`` (a
      reasoning model's hidden tokens); the cost ceiling counts it.
    - ``reasoning_effort``: a setting that changes the answer without changing the request;
      part of the cache key when set.
    - ``thinking``: the ``--thinking`` mode sent to the model ("auto": nothing is sent); part of
      the cache key when not "auto" (a request that turns thinking off is another request).
    - ``reasoning_advice``: what a failure says to do when the model spent its answer's room on
      reasoning (the option that applies to this model).
    - ``expect_callers``: told how many callers may be waiting for a slot (a backend that
      gathers calls into batches waits for them); ignored by default.
    - ``call_progress``: where the call in progress is (:class:`CallProgress`), for a backend
      that can see inside it (the embedded model); None by default.
    - ``bounds_own_attempts``: True when ``complete`` itself stops at ``--timeout`` (the built-in
      HTTP carriers, whose transports free the socket at the deadline; a plugin that sends only
      with ``post_json`` and blocks on nothing else) or has no remote peer (an in-process model):
      the call layer then calls it on the caller's thread, inside the attempt's deadline. False
      (the default; a plugin that sends with ``urllib``, ``requests`` or an SDK): each attempt
      runs on a worker thread that the call layer gives up on at the deadline (``llm/door.py``);
      while such an attempt is inside ``post_json`` it is not given up on, since ``post_json``
      stops at the same deadline.
    """

    info: ModelInfo
    kind: str = ""
    default_concurrency: int = FIXED_CONCURRENCY
    base_url: str | None = None
    server_identity: str | None = None
    deployment: str | None = None
    extra_output_tokens: int = 0
    reasoning_effort: str | None = None
    thinking: str = "auto"
    reasoning_advice: str = "give it more room (raise the summary length) or turn its reasoning off"
    bounds_own_attempts: bool = False
    # a plugin's planning defaults (context_window, tokenizer, prices, note) for models that
    # neither booksum's table nor the user's config lists; None: 8192 tokens, estimated, unpriced
    model_defaults: ClassVar[Mapping[str, Any] | None] = None

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    @classmethod
    def from_spec(cls, spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> BackendBase:
        """The backend for a resolved model: how a plugin's entry point is built (``cls(spec.info)``).

        Override it to read ``spec.model_id``, ``settings`` (timeouts, base URL) or ``env`` (keys).
        """
        return cls(spec.info)

    @abstractmethod
    def complete(self, request: Request) -> Completion:
        """Answer one request (no retries here: the client retries RateLimited and TransientModelError)."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under ``info.tokenizer`` (a ``native`` backend must override this)."""
        from booksum_app.chunking import (
            get_tokenizer,  # chunking sits below llm; imported on first count
        )

        if self.info.tokenizer == "native":
            raise ConfigError(f"{type(self).__name__} declares tokenizer 'native' but does not count tokens; "
                              "override count_tokens or name a tokenizer (cl100k_base, o200k_base, estimate)")
        return int(get_tokenizer(self.info.tokenizer).count(text))

    def close(self) -> None:
        """Release what the backend holds (connections, weights); nothing by default."""

    def call_progress(self) -> CallProgress | None:
        """Where the call in progress is, for a backend that can see inside it; None by default."""
        return None

    def expect_callers(self, callers: Callable[[], int]) -> None:
        """``callers()`` tells how many calls hold or wait for a slot now; a batching backend uses it."""

    @property
    def cache_location(self) -> str | None:
        """Where the model lives, for the call cache key (see the class doc); ``base_url`` by default."""
        return self.base_url

    @property
    def cache_kind(self) -> str:
        """``kind``, or the class name when it is unset: what the call cache keys calls by."""
        return self.kind or type(self).__name__

    @property
    def counts_natively(self) -> bool:
        """Whether tokens are counted by the model's own tokenizer (``tokenizer="native"``)."""
        return self.info.tokenizer == "native"


Backend = BackendBase  # the name the rest of booksum types backends with


@runtime_checkable
class BatchBackend(Protocol):
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
