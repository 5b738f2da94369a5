"""The call layer's books: every paid reply, every answered call, and what looked wrong.

A :class:`Ledger` belongs to one :class:`~booksum_app.llm.calls.Client`. Each reply a provider
sends is billed the moment it arrives, used or not (a retried empty answer was paid): into
the ledger's totals, the call's own :class:`Spent`, and every
:class:`~booksum_app.llm.meter.Meter` open in the caller's context. An answered call is then
counted once (a cache hit with its list price, nothing paid). A reply without usage, or with a
count the call cannot hold, is counted with the tokenizer and marked estimated
(:func:`priced`), and the ledger keeps one line about it for the end of the run. The tokenizer
sees only the answer's text: a reasoning model's hidden tokens are charged as the room the
request reserved for them (what the cost ceiling already counts, and the most a provider can
bill), so a server that reports nothing is never cheaper than one that reports its usage.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from booksum_app.llm.base import MAX_CHARS_PER_TOKEN, Completion, ModelInfo, Request, Tally, Usage
from booksum_app.llm.meter import bill
from booksum_app.llm.origin import Origins

# a reported count past these is not a count (10^13 tokens once priced a call at $27M): the
# call is counted with the tokenizer instead, and the client says so
PROMPT_SLACK = 1.5  # reported prompt tokens at most this times the context window
OUTPUT_SLACK_TOKENS = 64  # reported completion tokens at most max_tokens plus this


@dataclass(frozen=True)
class CallRecord:
    """One finished call as the progress display and the run record see it: its tokens and
    dollars are the call's in all, its wasted attempts included."""

    purpose: str
    cache_hit: bool
    usage: Usage
    latency_s: float
    cost_usd: float
    finish_reason: str
    attempts: int = 1
    model: str = ""
    think_chars_removed: int = 0  # of the answer's text, characters of reasoning removed (llm/providers/thinking.py)


@dataclass
class Spent:
    """One call's attempts so far and what its paid replies cost."""

    attempts: int = 0
    tally: Tally = dataclasses.field(default_factory=Tally)

    @property
    def usage(self) -> Usage:
        t = self.tally
        return Usage(t.input_tokens, t.output_tokens, t.cached_input_tokens, t.cache_write_input_tokens)


def plausible(info: ModelInfo, request: Request, usage: Usage, *, extra_output_tokens: int) -> bool:
    """Whether a reported count could be true of ``request`` (a prompt past the window is refused,
    an answer past its max_tokens is cut)."""
    prompt_cap = PROMPT_SLACK * info.context_window + 1024
    output_cap = request.max_tokens + extra_output_tokens + OUTPUT_SLACK_TOKENS
    return usage.input_tokens <= prompt_cap and usage.output_tokens <= output_cap


def priced(
    info: ModelInfo, request: Request, completion: Completion, *, count_prompt: Callable[[Request], int],
    count: Callable[[str], int], extra_output_tokens: int,
) -> tuple[Completion, str | None]:
    """``completion`` with its cost, and its usage counted with the tokenizer when the server's is
    missing or absurd; plus the line to tell the user about it (None when nothing was wrong)."""
    usage = completion.usage
    trusted = completion.usage_reported and plausible(info, request, usage, extra_output_tokens=extra_output_tokens)
    note = None
    if completion.usage_reported and not trusted:
        note = (f"{info.name}: the server reported {usage.input_tokens:,} prompt and {usage.output_tokens:,} "
                "completion tokens for one call, more than the call can hold; such calls are counted with "
                "the tokenizer (estimated)")
    elif not completion.usage_reported:
        note = (f"{info.name}: the server's replies carry no token usage; tokens are counted with "
                "the tokenizer (estimated)")
    if trusted:
        return dataclasses.replace(completion, cost_usd=info.cost_usd(usage)), note
    if note is not None and extra_output_tokens:
        note += (f", and each reply is charged the {extra_output_tokens:,} tokens reserved for "
                 "hidden reasoning")
    hidden = max(0, extra_output_tokens)  # what the text cannot show: the reasoning room, in full
    # a provider bills at most the request's room: a longer text is not tokenized whole
    visible_room = max(0, request.max_tokens)
    text = completion.text
    visible = visible_room if len(text) > MAX_CHARS_PER_TOKEN * max(1, visible_room) else min(count(text), visible_room)
    usage = Usage(count_prompt(request), visible + hidden)
    estimated = dataclasses.replace(completion, usage=usage, usage_reported=False, reasoning_tokens=hidden,
                                    cost_usd=info.cost_usd(usage))
    return estimated, note


class Ledger:
    """Totals, paid tokens, the call log and notes of one client (thread-safe)."""

    def __init__(self, info: ModelInfo, on_call: Callable[[CallRecord], None] | None,
                 origins: Origins | None = None) -> None:
        self.info = info
        self.on_call = on_call
        self.origins = origins or Origins(None, None, None)  # the servers called, and replays from others
        self._lock = threading.Lock()
        self._totals = Tally()  # every call answered through the client, cached or not, and every paid reply
        self._paid = Usage()  # tokens of the replies that reached the provider
        self._records: list[CallRecord] = []
        self._notes: list[str] = []

    @property
    def totals(self) -> Tally:
        with self._lock:
            return self._totals

    @property
    def paid(self) -> Usage:
        with self._lock:
            return self._paid

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    @property
    def notes(self) -> list[str]:
        """One line per anomaly in the replies (missing or absurd usage, reasoning removed from answers)."""
        with self._lock:
            removed = self._totals.think_chars_removed
            line = (f"{self.info.name}: {removed:,} characters of reasoning (think blocks opening its replies) "
                    "were removed from the answers' text")
            notes = list(self._notes) + ([line] if removed else [])
        return notes + self.origins.notes()

    def note(self, line: str | None) -> None:
        """Keep ``line`` once (the same anomaly on every call is one line)."""
        if line is None:
            return
        with self._lock:
            if line not in self._notes:
                self._notes.append(line)

    def bill(self, completion: Completion, spent: Spent, *, wasted: bool) -> None:
        """Count one reply the provider sent: here, in the call's ``spent`` and in every open meter."""
        usage = completion.usage
        item = Tally(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cost_usd=completion.cost_usd, spent_usd=completion.cost_usd,
            cached_input_tokens=usage.cached_input_tokens, cache_write_input_tokens=usage.cache_write_input_tokens,
            billed_input_tokens=self.info.billed_input_tokens(usage), wasted_attempts=int(wasted),
            estimated_tokens=0 if completion.usage_reported else usage.input_tokens + usage.output_tokens,
            think_chars_removed=completion.think_chars_removed,
        )
        spent.tally = spent.tally + item
        with self._lock:
            self._totals = self._totals + item
            self._paid = self._paid + usage
        bill(item)

    def finish(self, request: Request, completion: Completion, spent: Spent) -> None:
        """Count one answered call; its paid replies were billed as they came (:meth:`bill`)."""
        hit = completion.cache_hit
        if hit:
            self.origins.replayed(completion)
        item = Tally.of_call(self.info, completion.usage, cache_hit=True, spent_usd=0.0) if hit else Tally(calls=1)
        record = CallRecord(
            purpose=request.purpose, cache_hit=hit, usage=completion.usage if hit else spent.usage,
            latency_s=completion.latency_s, cost_usd=completion.cost_usd if hit else spent.tally.spent_usd,
            finish_reason=completion.finish_reason, attempts=spent.attempts,
            model=completion.model or self.info.name, think_chars_removed=completion.think_chars_removed,
        )
        with self._lock:
            self._totals = self._totals + item
            self._records.append(record)
        bill(item)
        if self.on_call is not None:
            self.on_call(record)

    def report_failed(self, request: Request, spent: Spent) -> None:
        """A call that failed after paid replies: the progress display still sees the money."""
        if self.on_call is None or not (spent.tally.spent_usd or spent.tally.output_tokens):
            return
        self.on_call(CallRecord(
            purpose=request.purpose, cache_hit=False, usage=spent.usage, latency_s=0.0,
            cost_usd=spent.tally.spent_usd, finish_reason="error", attempts=spent.attempts, model=self.info.name,
        ))


# The cost ceiling reserves each call's prompt as the provider will bill it, not as booksum counts
# it: a provider's tokenizer (Anthropic's, a server's chat template) may count more. Until the
# first reply says how much more, a prompt is reserved at this margin over booksum's count.
UNSEEN_INPUT_MARGIN = 1.5
MIN_LEARNING_TOKENS = 256  # a shorter prompt is too much chat-template framing (~10 tokens) to learn from


class InputRatio:
    """Billed over counted prompt tokens of one model: the most any reply of the run showed (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._most: float | None = None

    @property
    def factor(self) -> float:
        """What to multiply booksum's prompt count by to reserve what the provider bills."""
        with self._lock:
            return UNSEEN_INPUT_MARGIN if self._most is None else self._most

    def learn(self, completion: Completion, counted_tokens: int) -> None:
        """Take in one priced reply whose prompt booksum counted ``counted_tokens``; estimated usage teaches nothing."""
        if not completion.usage_reported or counted_tokens < MIN_LEARNING_TOKENS:
            return
        ratio = completion.usage.input_tokens / counted_tokens
        with self._lock:
            self._most = ratio if self._most is None else max(self._most, ratio)


def fallback_counter(info: ModelInfo) -> Callable[[str], int]:
    """Count with the chunking layer's tokenizer for ``info`` (imported lazily)."""
    state: dict[str, Any] = {}

    def count(text: str) -> int:
        tokenizer = state.get("tok")
        if tokenizer is None:
            from booksum_app.chunking import get_tokenizer

            tokenizer = state["tok"] = get_tokenizer(info.tokenizer)
        return int(tokenizer.count(text))

    return count


__all__ = ["UNSEEN_INPUT_MARGIN", "CallRecord", "InputRatio", "Ledger", "Origins", "Spent", "fallback_counter",
           "plausible", "priced"]
