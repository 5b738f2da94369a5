"""Pre-flight plan of a BooookScore judge run: calls, tokens and dollars before the first call.

Shared by ``score`` and ``compare``. Summaries that exist (``score``'s inputs, ``compare``'s
finished records and precomputed sets) are split with the judge's own sentence splitter and
every prompt is counted as the judge will build it; summaries not written yet are taken to
have ``ceil(G / 20)`` sentences of 20 tokens. Output is an upper bound (every call at its
max_tokens); regenerations of unparseable answers are not counted. A summary whose every
first-attempt judge call is already in booksum's call cache is judged free and left out
(:func:`unreplayed`, for a priced judge with the cache on); a partly cached one is counted in
full, so the plan stays an upper bound.

Provider prompt caching (docs/scoring.md, "The judge's bill") is predicted from the prompt
order and the warm-up (:mod:`booksum_app.scoring.dispatch`): OpenAI caches the longest
prefix already seen, 1,024 tokens or more, in 128-token steps; Anthropic reads the
breakpoints it has seen (after the demonstrations, after the summary) and writes the rest at
1.25x. So the first call of the run pays everything, the first call on each later summary
reads the constant part, and every other call reads the constant part and its summary. A
model without a cached price (or not from these providers) gets no discount.
:attr:`JudgePlan.uncached_cost_usd` is the bill if every cache lookup missed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from booksum_app.config import DEFAULT_MAX_PLAN_COST_USD, JudgeMode
from booksum_app.errors import BooksumError
from booksum_app.llm.base import ModelInfo, Usage
from booksum_app.llm.registry import LLMSettings, choose_model, get_model, native_counter
from booksum_app.runners.plan_gate import check_cost
from booksum_app.scoring.booookscore import (
    BATCH_MAX_TOKENS_PER_SENTENCE,
    SENTENCE_MAX_TOKENS,
    BooookScoreJudge,
    JudgePrompt,
    load_judge_prompt,
    split_summary,
)

JUDGE_TOKENS_PER_SENTENCE_EST = 20  # summaries not written yet: G / 20 sentences each
OPENAI_CACHE_MIN_TOKENS = 1024  # OpenAI caches prompts from 1,024 tokens on ...
OPENAI_CACHE_STEP_TOKENS = 128  # ... in steps of 128 tokens
CacheStyle = Literal["prefix", "breakpoints"]


@dataclass(frozen=True)
class JudgePlan:
    """The predicted bill of one judge run (output tokens: upper bound)."""

    judge: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    billed_input_tokens: float = 0.0  # input-token equivalents at the model's cache prices
    sentences: int = 0
    uncached_cost_usd: float = 0.0  # the same calls with no prompt-cache read
    replayed_calls: int = 0  # calls left out: booksum's call cache already holds their answers

    @property
    def billed_input_per_sentence(self) -> float | None:
        return self.billed_input_tokens / self.sentences if self.sentences else None

    @property
    def budget_usd(self) -> float:
        """The figure to budget for: the bill if the provider's prompt cache serves nothing."""
        return max(self.cost_usd, self.uncached_cost_usd)


@dataclass(frozen=True)
class JudgeEstimate:
    """Tokens of a judge run as :func:`judge_estimate` predicts them."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    sentences: int = 0

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cached_input_tokens, self.cache_write_input_tokens)


def cache_style(info: ModelInfo) -> CacheStyle | None:
    """How ``info``'s provider caches prompts, when it bills cached tokens apart; None: no discount."""
    if info.cached_input_usd_per_mtok is None:
        return None
    if info.name.startswith("anthropic:"):
        return "breakpoints"
    return "prefix" if info.name.startswith("openai:") else None


def _openai_cached(tokens: int) -> int:
    if tokens < OPENAI_CACHE_MIN_TOKENS:
        return 0
    return tokens // OPENAI_CACHE_STEP_TOKENS * OPENAI_CACHE_STEP_TOKENS


@dataclass(frozen=True)
class _Summary:
    prefix_tokens: int  # constant part + summary: what every call on the summary shares
    call_tokens: tuple[int, ...]  # the varying part (target template + sentences) of each call
    sentences: int


def _measured(prompt: JudgePrompt, count: Callable[[str], int], text: str, batch_size: int) -> _Summary:
    sentences = split_summary(text)[0]
    if prompt.mode == "batched":
        batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
        tails = tuple(count(prompt.batch_prompt(b)) for b in batches)
    else:
        tails = tuple(count(prompt.sentence_prompt(s)) for s in sentences)
    return _Summary(count(prompt.shared_prefix(text)), tails, len(sentences))


def _estimated(prompt: JudgePrompt, count: Callable[[str], int], tokens: int, batch_size: int) -> _Summary:
    n = math.ceil(tokens / JUDGE_TOKENS_PER_SENTENCE_EST)
    if prompt.mode == "batched":
        sizes = [min(batch_size, n - i) for i in range(0, n, batch_size)]
        empty = count(prompt.batch_prompt([]))
    else:
        sizes, empty = [1] * n, count(prompt.sentence_prompt(""))
    tails = tuple(empty + k * JUDGE_TOKENS_PER_SENTENCE_EST for k in sizes)
    return _Summary(count(prompt.shared_prefix("")) + tokens, tails, n)


def _cached(style: CacheStyle | None, summary: _Summary, constant: int, *, first: bool) -> tuple[int, int]:
    """``(cache reads, cache writes)`` of the calls on one summary, warmed up as the judge does."""
    n, prefix = len(summary.call_tokens), summary.prefix_tokens
    if style == "prefix":
        opening = 0 if first else _openai_cached(constant)
        return opening + (n - 1) * _openai_cached(prefix), 0
    if style == "breakpoints":
        opening = 0 if first else constant
        return opening + (n - 1) * prefix, prefix - opening
    return 0, 0


def judge_estimate(
    count: Callable[[str], int],
    *,
    mode: JudgeMode,
    batch_size: int,
    summaries: Sequence[str],
    n_estimated: int = 0,
    max_summary_tokens: int = 0,
    style: CacheStyle | None = None,
) -> JudgeEstimate:
    """Tokens to judge ``summaries`` plus ``n_estimated`` unwritten ones of ``max_summary_tokens``."""
    prompt = load_judge_prompt(mode)
    constant = count(prompt.constant_prefix)
    planned = [_measured(prompt, count, s, batch_size) for s in summaries]
    if n_estimated:
        planned += [_estimated(prompt, count, max_summary_tokens, batch_size)] * n_estimated
    calls = inp = outp = reads = writes = sentences = 0
    for k, summary in enumerate(s for s in planned if s.call_tokens):
        n = len(summary.call_tokens)
        calls += n
        sentences += summary.sentences
        inp += n * summary.prefix_tokens + sum(summary.call_tokens)
        if mode == "batched":
            outp += summary.sentences * BATCH_MAX_TOKENS_PER_SENTENCE + 50 * n
        else:
            outp += n * SENTENCE_MAX_TOKENS
        read, written = _cached(style, summary, constant, first=k == 0)
        reads, writes = reads + read, writes + written
    return JudgeEstimate(calls, inp, outp, reads, writes, sentences)


def token_counter(info: ModelInfo, settings: LLMSettings, model: str | None) -> Callable[[str], int]:
    """The model's own token counter when it has one, else its tokenizer's (no call made)."""
    from booksum_app.chunking import get_tokenizer

    if info.tokenizer == "native":  # vLLM: its tokenizer alone; the embedded model: a counting client (no cache)
        return native_counter(choose_model(model, settings=settings), settings=settings) or get_model(
            model, settings=dataclasses.replace(settings, use_cache=False)).count_tokens
    return get_tokenizer(info.tokenizer).count


def priced(info: ModelInfo, estimate: JudgeEstimate) -> JudgePlan:
    """The plan of ``estimate`` under ``info``'s prices."""
    usage = estimate.usage
    return JudgePlan(
        judge=info.name, calls=estimate.calls, input_tokens=estimate.input_tokens,
        output_tokens=estimate.output_tokens, cost_usd=info.cost_usd(usage),
        cached_input_tokens=estimate.cached_input_tokens, cache_write_input_tokens=estimate.cache_write_input_tokens,
        billed_input_tokens=info.billed_input_tokens(usage), sentences=estimate.sentences,
        uncached_cost_usd=info.cost_usd(
            Usage(usage.input_tokens, usage.output_tokens, 0, usage.cache_write_input_tokens)
        ),
    )


def unreplayed(
    texts: Sequence[str], *, judge: str | None, mode: JudgeMode, batch_size: int, settings: LLMSettings,
) -> tuple[list[str], int]:
    """``texts`` less the summaries whose every first-attempt judge call is cached, and those calls.

    Only a priced judge with the cache on is asked: a free model has nothing to subtract (and may
    be slow to load), and a judge that cannot be built yet (no key) subtracts nothing.
    """
    info = choose_model(judge, settings=settings).info
    if not settings.use_cache or not texts or info.cost_usd(Usage(1_000_000, 1_000_000)) <= 0:
        return list(texts), 0
    try:
        client = get_model(judge, settings=settings)
    except BooksumError:
        return list(texts), 0
    kept: list[str] = []
    replayed = 0
    with client:
        scorer = BooookScoreJudge(client, mode=mode, batch_size=batch_size)
        for text in texts:
            requests = scorer.first_requests(text)
            if requests and all(client.is_cached(r) for r in requests):
                replayed += len(requests)
            else:
                kept.append(text)
    return kept, replayed


def plan_judge(
    summaries: Mapping[str, str],
    *,
    judge: str,
    mode: JudgeMode,
    batch_size: int,
    settings: LLMSettings | None = None,
) -> JudgePlan:
    """The predicted bill of judging these summaries with ``judge``; calls no model.

    Raises:
        ConfigError: bad model string.
    """
    settings = settings or LLMSettings()
    info = choose_model(judge, settings=settings).info
    count = token_counter(info, settings, judge)
    texts, replayed = unreplayed(list(summaries.values()), judge=judge, mode=mode, batch_size=batch_size,
                                 settings=settings)
    estimate = judge_estimate(count, mode=mode, batch_size=batch_size, summaries=texts, style=cache_style(info))
    return dataclasses.replace(priced(info, estimate), replayed_calls=replayed)


__all__ = [
    "DEFAULT_MAX_PLAN_COST_USD",
    "JUDGE_TOKENS_PER_SENTENCE_EST",
    "JudgeEstimate",
    "JudgePlan",
    "cache_style",
    "check_cost",
    "judge_estimate",
    "plan_judge",
    "priced",
    "token_counter",
    "unreplayed",
]
