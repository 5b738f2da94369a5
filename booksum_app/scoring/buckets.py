"""ROUGE-L of a benchmark dataset by sample length (CNNSum §4, Table 2, Fig. 3); pure, no I/O.

- Per configuration and dataset: mean ROUGE-L F (x100) over samples, mean sample length, mean
  summary length, and the same per length bucket. Buckets are the dataset's own when it names them (CNNSum L 16k /
  XL 32k / 2XL 64k / 3XL 128k; CLongEval small / medium / large), otherwise the quartiles of the
  sample lengths (:func:`quartile_buckets`: ``statistics.quantiles(method="inclusive")``, a
  sample at a cut point goes to the lower quartile).
- Moving median (:func:`moving_median`, CNNSum Fig. 3, window 15): samples sorted by length
  (ties by name); one point per full window of consecutive samples, at the window's median
  length and median ROUGE-L. A dataset smaller than the window yields one point over all its
  samples, and the window actually used is reported (deviation: CNNSum has no such case).
- Prompt-position gap (:func:`bucket_mse`, CNNSum Table 2 "MSE (P-IE vs P-IB)"): the mean over
  the buckets both runs scored of the squared difference of their bucket means, on the x100
  scale the table uses.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_WINDOW = 15
CNNSUM_BUCKETS = ("L", "XL", "2XL", "3XL")
CLONGEVAL_BUCKETS = ("small", "medium", "large")
QUARTILE_BUCKETS = ("Q1", "Q2", "Q3", "Q4")
KNOWN_ORDER = (*CNNSUM_BUCKETS, *CLONGEVAL_BUCKETS, *QUARTILE_BUCKETS)


@dataclass(frozen=True)
class SampleScore:
    """ROUGE-L of one sample's summary against its reference."""

    dataset: str
    sample: str
    length_tokens: int  # the sample's context length
    bucket: str
    rouge_l: float  # F-measure in [0, 1]
    lang: str = "en"
    summary_tokens: int = 0  # the summary's length (same tokenizer as length_tokens)
    sample_id: str = ""  # the dataset's own id (or line number)
    rouge_signature: str = ""  # how rouge_l was computed (scoring/rouge.py); "" : rouge-score's default


@dataclass(frozen=True)
class BucketScore:
    """Mean ROUGE-L (x100) and length of the samples of one bucket."""

    bucket: str
    n: int
    rouge_l: float  # x100
    mean_length_tokens: float
    min_length_tokens: int
    max_length_tokens: int
    mean_summary_tokens: float = 0.0


@dataclass(frozen=True)
class DatasetScores:
    """What one configuration scored on one dataset."""

    dataset: str
    n: int
    rouge_l: float  # mean F x100
    mean_length_tokens: float
    buckets: tuple[BucketScore, ...]
    moving_median: tuple[tuple[float, float], ...]  # (median length, median ROUGE-L x100)
    window: int  # samples per moving-median window actually used
    samples: tuple[SampleScore, ...] = ()
    mean_summary_tokens: float = 0.0


def quartile_buckets(lengths: Sequence[int]) -> list[str]:
    """``Q1``..``Q4`` for each length, by the quartiles of ``lengths`` (empty in, empty out)."""
    if not lengths:
        return []
    if len(lengths) == 1:
        return ["Q1"]
    cuts = statistics.quantiles(lengths, n=4, method="inclusive")
    out = []
    for length in lengths:
        index = sum(1 for cut in cuts if length > cut)
        out.append(QUARTILE_BUCKETS[index])
    return out


def moving_median(points: Iterable[tuple[str, int, float]], *, window: int = DEFAULT_WINDOW
                  ) -> tuple[tuple[tuple[float, float], ...], int]:
    """Moving median of ``(name, length, value)`` over length; returns the points and the window used.

    Raises:
        ValueError: ``window`` below 1.
    """
    if window < 1:
        raise ValueError("the moving-median window must be at least 1")
    ordered = sorted(points, key=lambda p: (p[1], p[0]))
    if not ordered:
        return (), 0
    size = min(window, len(ordered))
    out = []
    for start in range(len(ordered) - size + 1):
        part = ordered[start:start + size]
        out.append((float(statistics.median(p[1] for p in part)), float(statistics.median(p[2] for p in part))))
    return tuple(out), size


def bucket_order(names: Iterable[str]) -> list[str]:
    """Known bucket names in their natural order (L before XL ...), then others alphabetically."""
    unique = set(names)
    known = [b for b in KNOWN_ORDER if b in unique]
    return known + sorted(unique - set(known))


def dataset_scores(samples: Sequence[SampleScore], *, window: int = DEFAULT_WINDOW) -> tuple[DatasetScores, ...]:
    """One :class:`DatasetScores` per dataset of ``samples`` (datasets in first-seen order)."""
    by_dataset: dict[str, list[SampleScore]] = {}
    for s in samples:
        by_dataset.setdefault(s.dataset, []).append(s)
    out = []
    for name, items in by_dataset.items():
        buckets = []
        for bucket in bucket_order(s.bucket for s in items):
            part = [s for s in items if s.bucket == bucket]
            lengths = [s.length_tokens for s in part]
            buckets.append(BucketScore(
                bucket, len(part), 100 * statistics.fmean(s.rouge_l for s in part),
                statistics.fmean(lengths), min(lengths), max(lengths),
                statistics.fmean(s.summary_tokens for s in part)))
        median, used = moving_median(((s.sample, s.length_tokens, 100 * s.rouge_l) for s in items), window=window)
        out.append(DatasetScores(
            dataset=name, n=len(items), rouge_l=100 * statistics.fmean(s.rouge_l for s in items),
            mean_length_tokens=statistics.fmean(s.length_tokens for s in items),
            buckets=tuple(buckets), moving_median=median, window=used, samples=tuple(items),
            mean_summary_tokens=statistics.fmean(s.summary_tokens for s in items)))
    return tuple(out)


def bucket_mse(first: DatasetScores, second: DatasetScores) -> float | None:
    """Mean over shared buckets of the squared difference of bucket ROUGE-L (x100); None if none shared."""
    a = {b.bucket: b.rouge_l for b in first.buckets}
    b = {b.bucket: b.rouge_l for b in second.buckets}
    shared = [k for k in a if k in b]
    if not shared:
        return None
    return statistics.fmean((a[k] - b[k]) ** 2 for k in shared)


__all__ = [
    "CLONGEVAL_BUCKETS",
    "CNNSUM_BUCKETS",
    "DEFAULT_WINDOW",
    "QUARTILE_BUCKETS",
    "BucketScore",
    "DatasetScores",
    "SampleScore",
    "bucket_mse",
    "bucket_order",
    "dataset_scores",
    "moving_median",
    "quartile_buckets",
]
