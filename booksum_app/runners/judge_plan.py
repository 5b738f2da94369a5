"""Pre-flight plan of a BooookScore judge run: calls, tokens and dollars before the first call.

Shared by ``score`` (summaries known: sentences counted from them) and ``compare`` (summaries
not written yet: G/20 sentences assumed per summary). Figures are upper bounds: every
sentence asked once at its output ceiling, no cache hit subtracted, no provider prompt
caching discounted; regenerations of unparseable answers are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from booksum_app.errors import ConfigError
from booksum_app.llm.base import ModelInfo, Usage
from booksum_app.llm.registry import LLMSettings, choose_model, get_model
from booksum_app.scoring.booookscore import (
    BATCH_MAX_TOKENS_PER_SENTENCE,
    SENTENCE_MAX_TOKENS,
    JudgeMode,
    load_judge_prompt,
    split_summary,
)

JUDGE_TOKENS_PER_SENTENCE_EST = 20  # summaries not written yet: G / 20 sentences each
DEFAULT_MAX_PLAN_COST_USD = 1.0


@dataclass(frozen=True)
class JudgePlan:
    """Upper bounds on one judge run."""

    judge: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


def token_counter(info: ModelInfo, settings: LLMSettings, model: str | None) -> Callable[[str], int]:
    """The model's own token counter when it has one, else its tokenizer's (no call made)."""
    from booksum_app.chunking import get_tokenizer

    if info.tokenizer == "native":
        return get_model(model, settings=settings).count_tokens
    return get_tokenizer(info.tokenizer).count


def judge_estimate(
    count: Callable[[str], int],
    *,
    mode: JudgeMode,
    batch_size: int,
    summaries: Sequence[str],
    n_estimated: int = 0,
    max_summary_tokens: int = 0,
) -> tuple[int, int, int]:
    """``(calls, input tokens, output tokens)`` to judge ``summaries`` plus ``n_estimated`` unwritten ones of G tokens."""
    prompt = load_judge_prompt(mode)
    base = count(prompt.shared_prefix(""))
    calls = inp = outp = 0
    sizes = [(len(split_summary(s)[0]), count(s)) for s in summaries]
    g_sentences = math.ceil(max_summary_tokens / JUDGE_TOKENS_PER_SENTENCE_EST)
    sizes += [(g_sentences, max_summary_tokens)] * n_estimated
    for n_sentences, tokens in sizes:
        if mode == "batched":
            n_calls = math.ceil(n_sentences / batch_size)
            out_tokens = n_sentences * BATCH_MAX_TOKENS_PER_SENTENCE + 50 * n_calls
        else:
            n_calls, out_tokens = n_sentences, n_sentences * SENTENCE_MAX_TOKENS
        calls += n_calls
        inp += n_calls * (base + tokens) + tokens  # the sentences themselves, once over all calls
        outp += out_tokens
    return calls, inp, outp


def plan_judge(
    summaries: Mapping[str, str],
    *,
    judge: str,
    mode: JudgeMode,
    batch_size: int,
    settings: LLMSettings | None = None,
) -> JudgePlan:
    """Upper bounds on judging these summaries with ``judge``; calls no model.

    Raises:
        ConfigError: bad model string.
    """
    settings = settings or LLMSettings()
    info = choose_model(judge, settings=settings).info
    count = token_counter(info, settings, judge)
    calls, inp, outp = judge_estimate(count, mode=mode, batch_size=batch_size, summaries=list(summaries.values()))
    return JudgePlan(info.name, calls, inp, outp, info.cost_usd(Usage(inp, outp)))


def check_cost(cost_usd: float, *, max_cost_usd: float, confirmed: bool, interactive: bool) -> bool:
    """Whether a run may start without asking: True below the threshold or with ``--yes``.

    Raises:
        ConfigError: over the threshold, not confirmed, and nobody to ask (stdin is not a TTY).
    """
    if confirmed or cost_usd <= max_cost_usd:
        return True
    if not interactive:
        raise ConfigError(
            f"the plan could cost up to ${cost_usd:.2f}, above --max-plan-cost "
            f"${max_cost_usd:.2f}; pass --yes to run it or raise --max-plan-cost"
        )
    return False


__all__ = [
    "DEFAULT_MAX_PLAN_COST_USD",
    "JUDGE_TOKENS_PER_SENTENCE_EST",
    "JudgePlan",
    "check_cost",
    "judge_estimate",
    "plan_judge",
    "token_counter",
]
