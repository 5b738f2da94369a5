"""Validity of generated summaries and the regeneration loop (BooookScore App. A.2.1, App. D).

A summary is invalid when it is empty, over its token budget, cut off by ``max_tokens`` (finish reason
``length``), or does not end with sentence-final punctuation (the reference code's check: last character in
``. ? ! " '``; we also accept Chinese 。！？…, closing quotes and brackets). An invalid summary is regenerated a
bounded number of times (App. A.1: "simply asking the model to regenerate up to a fixed number of times"); as
in the reference code each retry asks for 10 % fewer words and samples at temperature 1.0; each retry
increments ``Request.sample_index`` so the call cache does not replay the same answer. When every try fails,
the attempt that keeps the most text after truncation at its last sentence end within the budget is used (App.
D: "truncate the results at the final punctuation mark"), and the node records that it was truncated. Under
the length policy "truncate" (models that run past word limits, such as the embedded SmolLM2-135M) an answer
that is too long or cut off at ``max_tokens`` is truncated at once instead of regenerated.

A benchmark's own decoding (``Sampling.once``, the ``compare --dataset`` presets) skips the
rule: one call, and its answer is the summary as returned (only surrounding whitespace
stripped), cut off, over-long or empty, as CNNSum and CLongEval score it.

:func:`generate` is the one call strategies (built-in or plugin) make for a summary under this
rule; :func:`regenerator` gives the same rule as a small state machine (``request`` ->
``feed``) for callers that run calls on futures (the hierarchical scheduler).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from booksum_app.chunking.sentences import repeated_sentence_start, sentence_spans
from booksum_app.compression.budget import words_for_tokens
from booksum_app.config import COMPRESSION_TEMPERATURE, DEFAULT_TEMPERATURE, DEFAULT_TOP_P
from booksum_app.errors import ModelError
from booksum_app.llm.base import FINISH_LOOP, ChatModel, Completion, Request, Usage

SENTENCE_FINAL = ".!?。！？…．｡"  # ．｡: the full stops of many Chinese web copies
CLOSERS = "\"'”’」』)）]】》*"
REGENERATION_TEMPERATURE = COMPRESSION_TEMPERATURE  # the reference code resamples at 1.0
WORD_SHRINK_PER_RETRY = 0.1  # reference code: word_limit * (1 - 0.1 * attempts)
DEFAULT_MAX_TRIES = 4  # first try + 3 regenerations

# How long an answer is. The provider's own count of the answer's text (its completion tokens less the hidden
# reasoning tokens it reports: OpenAI's usage.completion_tokens_details.reasoning_tokens) is the truth when it reports
# one: it enforces max_tokens with the same tokenizer. Our count of the visible text is used when the provider reports
# nothing, or when its figure is implausible either way: our count more than MAX_REPORT_GAP times it (a server that
# under-reports must not let an over-long summary pass), or it more than MAX_REPORT_GAP times ours (tokens the text
# does not show: a reasoning model's hidden thinking that the reply does not separate, Anthropic's thinking blocks, a
# cached answer replayed without its reasoning count; judging those by the bill would regenerate every answer of a
# reasoning model). With only the conservative `estimate` counter (models whose tokenizer booksum lacks) and no
# provider count, a summary is over the limit only when the estimate exceeds the budget by ESTIMATE_TOLERANCE.
# Measured on 1,948 summary-sized pieces (60 and 300 words) of the six sample epubs, the estimate is 1.02x the real
# cl100k/o200k count at the least, 1.19x at the 1st percentile, 1.40x at the median, 1.76x at most (Chinese, 水浒传:
# 1.04-1.10x): 1.15 forgives most of the over-count while an over-long summary passes by at most ~13% when the real
# tokenizer is as coarse as the estimate (as exact, most valid summaries would be over_limit).
MAX_REPORT_GAP = 2.0
ESTIMATE_TOLERANCE = 1.15

EMPTY = "empty"
CUT_OFF = "cut_off"
OVER_LIMIT = "over_limit"
NO_SENTENCE_END = "no_sentence_end"
REPEATS = "repeats_sentence"  # only under the truncate length policy: a sentence said twice word for word


def ends_sentence(text: str) -> bool:
    """True when ``text`` ends with sentence-final punctuation (closing quotes allowed after it)."""
    stripped = text.rstrip()
    if stripped and stripped[-1] in "\"'":  # the reference code accepts a closing ASCII quote
        return True
    stripped = stripped.rstrip(CLOSERS)
    return bool(stripped) and stripped[-1] in SENTENCE_FINAL


def summary_problems(
    text: str,
    *,
    finish_reason: str,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    tokens: int | None = None,
) -> tuple[str, ...]:
    """Why a generated summary is invalid (empty tuple when it is valid); ``tokens`` if known."""
    if not text.strip():
        return (EMPTY,)
    problems = []
    if finish_reason in ("length", FINISH_LOOP):  # a loop stopped by the backend is cut off too
        problems.append(CUT_OFF)
    if (count_tokens(text) if tokens is None else tokens) > max_tokens:
        problems.append(OVER_LIMIT)
    if not ends_sentence(text):
        problems.append(NO_SENTENCE_END)
    return tuple(problems)


def measured_tokens(text: str, *, reported_tokens: int, count_tokens: Callable[[str], int]) -> tuple[int, str]:
    """``(tokens, source)``: the provider's count of the visible text when plausible (``"provider"``),
    else ours (``"counted"``). ``reported_tokens`` must not include hidden reasoning tokens the
    provider separates; any it does not separate make the count implausibly high, and ours decides."""
    counted = count_tokens(text) if text else 0
    if reported_tokens > 0 and max(counted, reported_tokens) <= min(counted, reported_tokens) * MAX_REPORT_GAP:
        return reported_tokens, "provider"
    return counted, "counted"


MAX_CHARS_PER_TOKEN = 64  # more than any tokenizer's longest common token
_END_WINDOW = 256  # characters before a sentence end that decide whether it ends a sentence


def truncate_at_sentence_end(
    text: str, *, max_tokens: int | None, count_tokens: Callable[[str], int], lang: str = "en"
) -> str:
    """The longest prefix of ``text`` that ends a sentence and fits ``max_tokens`` (None: any length).

    Without any complete sentence that fits, the text is cut at a word (or character, for
    Chinese) boundary and closed with a full stop.
    """
    text = text.strip()
    if not text:
        return ""
    if max_tokens is not None and len(text) > max_tokens * MAX_CHARS_PER_TOKEN:
        # no prefix longer than this fits: a runaway answer of megabytes is searched only
        # where the answer can end (each count and sentence split below is linear in length)
        text = text[: max_tokens * MAX_CHARS_PER_TOKEN]
    elif ends_sentence(text) and (max_tokens is None or count_tokens(text) <= max_tokens):
        return text
    ends = [end for _, end in sentence_spans(text, lang=lang) if _ends_sentence_at(text, end)]
    lo, hi, best = 0, len(ends) - 1, ""
    while lo <= hi:  # token counts grow with the prefix: binary search the last one that fits
        mid = (lo + hi) // 2
        candidate = text[: ends[mid]].rstrip()
        if max_tokens is None or count_tokens(candidate) <= max_tokens:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    if best:
        return best
    return _hard_cut(text, max_tokens=max_tokens, count_tokens=count_tokens, lang=lang)


def _ends_sentence_at(text: str, end: int) -> bool:
    """``ends_sentence(text[:end])`` without copying the prefix (a copy per sentence is quadratic)."""
    window = text[max(0, end - _END_WINDOW) : end]
    if end > _END_WINDOW and not window.strip(" \t\r\n" + CLOSERS):
        return ends_sentence(text[:end])  # only spaces and closers: the decision lies further back
    return ends_sentence(window)


def cut_repetition_loop(text: str, *, lang: str = "en") -> str:
    """``text`` up to the first sentence that repeats an earlier one word for word (whole text if none)."""
    start = repeated_sentence_start(text, lang=lang)
    return text if start is None else text[:start].rstrip()


def _hard_cut(
    text: str, *, max_tokens: int | None, count_tokens: Callable[[str], int], lang: str
) -> str:
    cjk = lang == "zh"
    units = list(text) if cjk else text.split()
    joiner = "" if cjk else " "
    lo, hi = 0, len(units)
    while lo < hi:  # the most units whose text plus a full stop fits
        mid = (lo + hi + 1) // 2
        candidate = joiner.join(units[:mid]) + "."
        if max_tokens is None or count_tokens(candidate) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    head = joiner.join(units[:lo]).rstrip(",;:，；：、 ")
    return head + ("。" if cjk else ".") if head else ""


@dataclass(frozen=True)
class CallEntry:
    """One model call as a summary record keeps it."""

    purpose: str  # "summarize", "merge", "inc_init", "inc_update", "compress", "clean", "direct"
    node: str  # the node it produced: "L0.3", "inc.12", "compress.12", "final", ...
    attempt: int  # 0 for the first try, 1.. for regenerations
    sample_index: int
    max_tokens: int
    temperature: float
    input_tokens: int
    output_tokens: int
    latency_s: float
    cost_usd: float
    cache_hit: bool
    finish_reason: str
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    cache_write_input_tokens: int = 0  # of input_tokens, written to it

    @classmethod
    def of(cls, request: Request, completion: Completion, *, node: str, attempt: int = 0) -> CallEntry:
        """The record entry of one answered request."""
        return cls(
            purpose=request.purpose,
            node=node,
            attempt=attempt,
            sample_index=request.sample_index,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
            latency_s=completion.latency_s,
            cost_usd=completion.cost_usd,
            cache_hit=completion.cache_hit,
            finish_reason=completion.finish_reason,
            cached_input_tokens=completion.usage.cached_input_tokens,
            cache_write_input_tokens=completion.usage.cache_write_input_tokens,
        )

    @property
    def usage(self) -> Usage:
        """The call's tokens, as the provider reported them."""
        return Usage(self.input_tokens, self.output_tokens, self.cached_input_tokens, self.cache_write_input_tokens)


@dataclass(frozen=True)
class AttemptInfo:
    """One try of a validated generation."""

    words_asked: int
    tokens: int
    finish_reason: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Generation:
    """The outcome of a validated generation: the text used and how it was obtained."""

    text: str
    raw_text: str  # the chosen attempt before any truncation
    tokens: int
    attempts: tuple[AttemptInfo, ...]
    truncated: bool
    calls: tuple[CallEntry, ...]

    @property
    def retries(self) -> int:
        return len(self.attempts) - 1


class Regenerator:
    """Validated generation of one summary: bounded regenerations, then truncation."""

    def __init__(
        self,
        *,
        render: Callable[[int], str],
        words: int,
        max_tokens: int,
        temperature: float,
        purpose: str,
        node: str,
        count_tokens: Callable[[str], int],
        lang: str = "en",
        max_tries: int = DEFAULT_MAX_TRIES,
        retry_temperature: float = REGENERATION_TEMPERATURE,
        top_p: float = 1.0,
        estimated_counts: bool = False,  # count_tokens is the conservative estimate, not the model's tokenizer
        truncate_over_length: bool = False,  # length policy "truncate": cut, do not regenerate
        once: bool = False,  # a benchmark's decoding: one call, its answer taken as returned
        system: str | None = None,  # the system message every try sends (None: none)
    ) -> None:
        self._render = render
        self._words = words
        self.max_tokens = max_tokens
        self._temperature = temperature
        self._retry_temperature = retry_temperature
        self._top_p = top_p
        self.purpose = purpose
        self.node = node
        self._count = count_tokens
        self._lang = lang
        self._max_tries = max(1, max_tries)
        self._estimated = estimated_counts
        self._truncate_over_length = truncate_over_length
        self._once = once
        self._system = system
        self._attempts: list[AttemptInfo] = []
        self._texts: list[str] = []
        self._calls: list[CallEntry] = []
        self._done: Generation | None = None

    def words_for_attempt(self, attempt: int) -> int:
        """Words asked for on try ``attempt`` (10 % fewer per regeneration)."""
        return max(1, math.floor(self._words * (1 - WORD_SHRINK_PER_RETRY * attempt)))

    def request(self) -> Request:
        """The request for the next try."""
        attempt = len(self._attempts)
        return Request(
            prompt=self._render(self.words_for_attempt(attempt)),
            max_tokens=self.max_tokens,
            temperature=self._temperature if attempt == 0 else self._retry_temperature,
            top_p=self._top_p,
            system=self._system,
            sample_index=attempt,
            purpose=self.purpose,
            # the truncate policy cuts at the first repeated sentence: a backend may stop there
            stop_at_loop=self._lang if self._truncate_over_length and not self._once else "",
        )

    def feed(self, request: Request, completion: Completion) -> bool:
        """Take the answer to :meth:`request`; True when the generation is finished."""
        attempt = len(self._attempts)
        text = completion.text.strip()
        tokens = self._count(text) if text else 0  # our count: what budgets and prompt packing use
        limit_tokens, source = measured_tokens(
            # a thinking model's hidden reasoning is in output_tokens but not in the answer
            text, reported_tokens=completion.visible_output_tokens, count_tokens=lambda _: tokens
        )
        if source == "counted" and self._estimated:  # only an over-counting estimate: allow its margin
            limit_tokens = math.floor(tokens / ESTIMATE_TOLERANCE)
        problems = summary_problems(
            text,
            finish_reason=completion.finish_reason,
            max_tokens=self.max_tokens,
            count_tokens=self._count,
            tokens=limit_tokens,
        )
        if self._truncate_over_length and repeated_sentence_start(text, lang=self._lang) is not None:
            problems += (REPEATS,)  # a loop: cut before it even when the model stopped on its own
        self._attempts.append(
            AttemptInfo(self.words_for_attempt(attempt), tokens, completion.finish_reason, problems)
        )
        self._texts.append(text)
        self._calls.append(CallEntry.of(request, completion, node=self.node, attempt=attempt))
        if self._once:  # the benchmarks score the raw answer, cut off or not: nothing regenerated or truncated
            self._done = self._generation(text, completion.text, truncated=False, tokens=tokens)
            return True
        if not problems:
            self._done = self._generation(text, text, truncated=False, tokens=tokens)
            return True
        if self._truncate_over_length and {CUT_OFF, OVER_LIMIT, REPEATS} & set(problems):
            # a model that runs past word limits would run past them again: keep what fits,
            # and stop where it started looping (such models run long by repeating themselves)
            cut = truncate_at_sentence_end(
                cut_repetition_loop(text, lang=self._lang), max_tokens=self.max_tokens,
                count_tokens=self._count, lang=self._lang,
            )
            if cut:
                self._done = self._generation(cut, text, truncated=True)
                return True
        if len(self._attempts) < self._max_tries:
            return False
        candidates = [
            (
                truncate_at_sentence_end(
                    t, max_tokens=self.max_tokens, count_tokens=self._count, lang=self._lang
                ),
                t,
            )
            for t in self._texts
            if t
        ]
        candidates = [(cut, raw) for cut, raw in candidates if cut]
        if not candidates:
            raise ModelError(
                f"{self.purpose} {self.node}: the model returned no usable text in "
                f"{len(self._attempts)} tries; try another model or a smaller --chunk-size"
            )
        cut, raw = max(candidates, key=lambda pair: len(pair[0]))  # first of the longest
        self._done = self._generation(cut, raw, truncated=True)
        return True

    def _generation(
        self, text: str, raw: str, *, truncated: bool, tokens: int | None = None
    ) -> Generation:
        if tokens is None:
            tokens = self._count(text) if text else 0
        return Generation(
            text=text,
            raw_text=raw,
            tokens=tokens,
            attempts=tuple(self._attempts),
            truncated=truncated,
            calls=tuple(self._calls),
        )

    def result(self) -> Generation:
        """The finished generation."""
        if self._done is None:
            raise RuntimeError("generation not finished: feed it completions first")
        return self._done


def generate_valid(model: ChatModel, regenerator: Regenerator) -> Generation:
    """Run ``regenerator`` to completion with blocking calls."""
    while True:
        request = regenerator.request()
        if regenerator.feed(request, model.complete(request)):
            return regenerator.result()


@dataclass(frozen=True)
class Sampling:
    """How a validated generation samples: the first try, the regenerations, how many, the language.

    A strategy gets its own from ``StrategyConfig.sampling``; the compression pass samples
    every try at the compression temperature.
    """

    temperature: float = DEFAULT_TEMPERATURE
    retry_temperature: float = REGENERATION_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    max_tries: int = DEFAULT_MAX_TRIES
    lang: str = "en"  # where sentences end, for truncation
    # a benchmark's decoding (``compare --dataset`` presets): one call at ``temperature``, the answer
    # used as returned; no regeneration, no truncation (CNNSum Inference.py, CLongEval inference.py)
    once: bool = False
    system: str | None = None  # the system message of every call (None: none)


def regenerator(
    model: ChatModel,
    render: Callable[[int], str],
    *,
    max_tokens: int,
    purpose: str,
    node: str,
    sampling: Sampling = Sampling(),
    words: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> Regenerator:
    """The paper's validity rule for one summary of at most ``max_tokens`` tokens, not yet run.

    ``render(words)`` is the prompt asking for ``words`` words (default: what ``max_tokens``
    holds); each regeneration asks for 10 % fewer. ``purpose`` and ``node`` label the calls in
    the record. The model decides how tokens are counted and its length policy. Use this to
    drive the calls yourself (``request()``/``feed()``, e.g. on futures); :func:`generate`
    runs it to the end.
    """
    return Regenerator(
        render=render,
        words=words if words is not None else words_for_tokens(max_tokens),
        max_tokens=max_tokens,
        temperature=sampling.temperature,
        retry_temperature=sampling.retry_temperature,
        purpose=purpose,
        node=node,
        count_tokens=count_tokens or model.count_tokens,
        lang=sampling.lang,
        max_tries=sampling.max_tries,
        top_p=sampling.top_p,
        estimated_counts=model.info.tokenizer == "estimate",
        truncate_over_length=model.info.length_policy == "truncate",
        once=sampling.once,
        system=sampling.system,
    )


def generate(
    model: ChatModel,
    render: Callable[[int], str],
    *,
    max_tokens: int,
    purpose: str,
    node: str,
    sampling: Sampling = Sampling(),
    words: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> Generation:
    """Generate one valid summary (BooookScore App. A.2.1): the call every strategy makes.

    The answer must be non-empty, within ``max_tokens``, not cut off, and end a sentence; an
    invalid one is regenerated (fewer words asked, sampled at ``sampling.retry_temperature``)
    up to ``sampling.max_tries`` tries in all, then the best try is truncated at its last
    sentence end. The :class:`Generation` holds the text, its tokens, every attempt and every
    call (for the record's ``calls``). Arguments as for :func:`regenerator`.

    Raises:
        ModelError: no try returned usable text.
    """
    return generate_valid(model, regenerator(model, render, max_tokens=max_tokens, purpose=purpose, node=node,
                                             sampling=sampling, words=words, count_tokens=count_tokens))


__all__ = [
    "CUT_OFF",
    "EMPTY",
    "NO_SENTENCE_END",
    "OVER_LIMIT",
    "REGENERATION_TEMPERATURE",
    "AttemptInfo",
    "CallEntry",
    "Generation",
    "Regenerator",
    "Sampling",
    "cut_repetition_loop",
    "ends_sentence",
    "generate",
    "generate_valid",
    "measured_tokens",
    "regenerator",
    "summary_problems",
    "truncate_at_sentence_end",
]
