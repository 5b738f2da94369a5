"""Pure aggregation: sentence verdicts -> summary scores -> a system score with a seeded bootstrap CI.

BooookScore (§4.1, Eq. 1): the score of a summary S with sentences s_1..s_n is
``1/n * sum_i [s_i has no confusion]``; the system score is the mean over its summaries
(reported x100). Exactly as the original ``get_booookscore`` (per-sentence release files):
n comes from splitting the summary with NLTK Punkt English, every summary of the set counts
(one with no annotated sentence scores 1), and the number of confusing sentences is the
number of annotated sentences of that book. For batched (v2) files n is the number of entries.

Deviation: sentences the judge never answered readably are *unparseable*; they
are left out of n (never counted as no confusion) and reported. A summary with no judged
sentence (empty, or all unparseable) has no score and is left out of the mean
(``n_unscored``).

The 95% CI is a percentile bootstrap over summaries: ``resamples`` resamples of the
per-summary scores drawn with ``random.Random(seed)``, the mean of each, and the
(alpha/2, 1-alpha/2) quantiles with linear interpolation. The seed is part of the result, so
the interval is reproducible (rouge_score's bootstrap is not seeded; ours is).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from booksum_app.scoring.judgement import ERROR_TYPES, SummaryJudgement

DEFAULT_BOOTSTRAP_SEED = 20240101
DEFAULT_BOOTSTRAP_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class SystemScore:
    """BooookScore of a set of summaries (fractions in [0, 1]) with its CI and error statistics."""

    score: float | None
    ci_low: float | None
    ci_high: float | None
    n_summaries: int  # summaries with a score (the mean's n)
    n_unscored: int  # summaries with no judged sentence
    n_sentences: int  # all sentences, unparseable included
    n_confusing: int
    n_unparseable: int
    type_counts: tuple[tuple[str, int], ...]
    confidence: float = DEFAULT_CONFIDENCE
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES

    @property
    def type_distribution(self) -> dict[str, float]:
        """Share of each confusion type among all type labels given (sums to 1 when any)."""
        total = sum(count for _, count in self.type_counts)
        return {kind: (count / total if total else 0.0) for kind, count in self.type_counts}

    def percent(self) -> float | None:
        """The score x100, as the paper reports it."""
        return None if self.score is None else 100.0 * self.score


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, None for no values."""
    return math.fsum(values) / len(values) if values else None


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values with linear interpolation (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_ci(
    values: Sequence[float],
    *,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of ``values`` (None for no values)."""
    if not values:
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    alpha = 1.0 - confidence
    return quantile(means, alpha / 2), quantile(means, 1.0 - alpha / 2)


def aggregate(
    judgements: Sequence[SummaryJudgement],
    *,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> SystemScore:
    """The system BooookScore of ``judgements`` (one per summary) with a seeded bootstrap CI."""
    scores = [s for s in (j.score for j in judgements) if s is not None]
    counts = dict.fromkeys(ERROR_TYPES, 0)
    for judgement in judgements:
        for kind, count in judgement.type_counts().items():
            counts[kind] = counts.get(kind, 0) + count
    ci = bootstrap_ci(scores, seed=seed, resamples=resamples, confidence=confidence)
    return SystemScore(
        score=mean(scores),
        ci_low=None if ci is None else ci[0],
        ci_high=None if ci is None else ci[1],
        n_summaries=len(scores),
        n_unscored=len(judgements) - len(scores),
        n_sentences=sum(j.n_sentences for j in judgements),
        n_confusing=sum(j.n_confusing for j in judgements),
        n_unparseable=sum(j.n_unparseable for j in judgements),
        type_counts=tuple(counts.items()),
        confidence=confidence,
        bootstrap_seed=seed,
        bootstrap_resamples=resamples,
    )
