"""The values a comparison produces, and how they are written: results.json, results.csv, release files.

One :class:`ConfigResult` per row of the table (BooookScore Table 2 shape: model, strategy,
chunk size, BooookScore with its 95% CI over books, average length, % novel 3-grams,
% repeated 3-grams) plus what the configuration cost: calls, input/output tokens, dollars and
wall time. Definitions:

- ``cost_usd``: list price of every summarization call the summaries needed, cached or not
  (so a resumed or replayed configuration shows what it costs, not what this run paid);
  ``spent_usd``: what calls that actually reached the provider cost in the runs that made
  the records. Judge calls are counted apart (``judge_*``).
- ``billed_input_tokens``: prompt tokens as billed, in input-token equivalents (a prompt-cache
  read at 10% of the input price counts 0.1, an Anthropic cache write 1.25);
  ``judge_billed_input_per_sentence``: the judge's, divided by the sentences it judged.
- ``wall_s``: the sum over books of each summary's wall time (books run concurrently, so
  the comparison's own elapsed time is shorter; it is ``CompareResult.wall_s``).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from booksum_app.files import atomic_write_text, write_json_atomic
from booksum_app.llm.base import Tally
from booksum_app.scoring.aggregate import SystemScore
from booksum_app.scoring.buckets import DatasetScores, SampleScore, bucket_mse, bucket_order
from booksum_app.scoring.detectors import (
    FAILURE_MODES,
    FailureReport,
    FailureSummary,
    failure_summary_to_dict,
    report_to_dict,
    summarize_failures,
)
from booksum_app.scoring.judgement import ERROR_TYPES, SummaryJudgement
from booksum_app.scoring.ngrams import NgramStats, NgramSummary
from booksum_app.scoring.release import AnnotationFormat, to_release
from booksum_app.scoring.results import write_judge_signature
from booksum_app.scoring.rouge import rouge_signature
from booksum_app.signature import detector_signature

SCHEMA_VERSION = 1
RESULT_KIND = "booksum.compare"
_RELEASE_NAME = re.compile(r"^(?P<model>.+)-(?P<chunk>\d+)-(?P<strategy>hier|inc|direct)$")


@dataclass(frozen=True)
class BookResult:
    """One summary of one book under one configuration, and what was measured on it."""

    book: str  # release key: the book's file name
    summary: str
    ngrams: NgramStats
    judgement: SummaryJudgement | None = None
    record_path: str | None = None
    signature: str | None = None  # the summary record's signature
    usage: Tally = field(default_factory=Tally)
    judge_usage: Tally = field(default_factory=Tally)
    wall_s: float = 0.0
    reused: bool = False  # a finished record from an earlier run
    rouge: SampleScore | None = None  # benchmark samples: ROUGE-L against the reference
    failures: FailureReport | None = None  # failure-mode detectors (docs/scoring.md)


@dataclass(frozen=True)
class ConfigResult:
    """One row of the comparison table."""

    name: str  # config slug, or the precomputed set's name
    kind: str  # "run" or "precomputed"
    model: str
    strategy: str | None
    chunk_size: int | None
    books: tuple[BookResult, ...]
    booookscore: SystemScore | None
    booookscore_signature: str | None
    ngrams: NgramSummary
    source: str | None = None  # precomputed: the summaries file
    datasets: tuple[DatasetScores, ...] = ()  # benchmark datasets: ROUGE-L by length bucket
    template: str | None = None  # direct under --direct-template both: "ib" or "ie"

    @property
    def usage(self) -> Tally:
        """Summarization calls of all books."""
        return sum((b.usage for b in self.books), Tally())

    @property
    def judge_usage(self) -> Tally:
        """Judge calls of all books."""
        return sum((b.judge_usage for b in self.books), Tally())

    @property
    def judged_sentences(self) -> int:
        """Sentences the judge was asked about (unparseable ones included)."""
        return sum(j.n_sentences for j in self.judgements())

    @property
    def judge_billed_input_per_sentence(self) -> float | None:
        """The judge's billed input tokens per judged sentence; None without judge calls."""
        n, usage = self.judged_sentences, self.judge_usage
        return usage.billed_input_tokens / n if n and usage.calls else None

    @property
    def wall_s(self) -> float:
        """Sum of the summaries' wall times."""
        return sum(b.wall_s for b in self.books)

    @property
    def summary_signatures(self) -> tuple[str, ...]:
        """The distinct summary signatures of the row (one unless books differ in language)."""
        return tuple(dict.fromkeys(b.signature for b in self.books if b.signature))

    @property
    def has_usage(self) -> bool:
        return self.kind == "run"

    def summaries(self) -> dict[str, str]:
        """``{book: summary}`` (the release format)."""
        return {b.book: b.summary for b in self.books}

    def judgements(self) -> list[SummaryJudgement]:
        return [b.judgement for b in self.books if b.judgement is not None]

    @property
    def failures(self) -> FailureSummary:
        """Summaries of the row showing each failure mode."""
        return summarize_failures(b.failures for b in self.books if b.failures is not None)


def split_release_name(name: str) -> tuple[str, int | None, str | None]:
    """``gpt4-2048-hier`` -> ``("gpt4", 2048, "hier")``; other names -> ``(name, None, None)``."""
    match = _RELEASE_NAME.match(name.removesuffix("-cleaned"))
    if match is None:
        return name, None, None
    return match["model"], int(match["chunk"]), match["strategy"]


@dataclass(frozen=True)
class TemplateGap:
    """Prompt-IB against Prompt-IE of one model on one dataset (CNNSum Table 2 "MSE")."""

    model: str
    strategy: str
    dataset: str
    ib: DatasetScores
    ie: DatasetScores

    @property
    def mse(self) -> float | None:
        """Mean squared difference of the bucket ROUGE-L (x100) over the buckets both scored."""
        return bucket_mse(self.ib, self.ie)


def template_gaps(rows: tuple[ConfigResult, ...] | list[ConfigResult]) -> tuple[TemplateGap, ...]:
    """Every IB/IE pair of run rows (same model, strategy, chunk size) per dataset both scored."""
    by_key: dict[tuple[str, str | None, int | None], dict[str, ConfigResult]] = {}
    for row in rows:
        if row.kind == "run" and row.template in ("ib", "ie"):
            by_key.setdefault((row.model, row.strategy, row.chunk_size), {})[row.template] = row
    gaps = []
    for (model, strategy, _), pair in by_key.items():
        if "ib" not in pair or "ie" not in pair:
            continue
        ie = {d.dataset: d for d in pair["ie"].datasets}
        gaps += [TemplateGap(model, strategy or "", d.dataset, d, ie[d.dataset])
                 for d in pair["ib"].datasets if d.dataset in ie]
    return tuple(gaps)


@dataclass(frozen=True)
class CompareResult:
    """Everything ``booksum compare`` shows and writes."""

    rows: tuple[ConfigResult, ...]
    out: Path
    wall_s: float
    judge: str | None  # judge model name, None without a judge run
    judge_notice: str | None = None
    notes: tuple[str, ...] = ()
    reused: int = 0  # summaries taken from finished records
    files: tuple[Path, ...] = ()  # everything written under ``out``
    schema_version: int = SCHEMA_VERSION


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 4)


def _usage_dict(usage: Tally) -> dict[str, Any]:
    return {
        "calls": usage.calls,
        "cache_hits": usage.cache_hits,
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_input_tokens": usage.cache_write_input_tokens,
        "billed_input_tokens": round(usage.billed_input_tokens, 1),
        "output_tokens": usage.output_tokens,
        "cost_usd": round(usage.cost_usd, 6),
        "spent_usd": round(usage.spent_usd, 6),
    }


def row_to_dict(row: ConfigResult) -> dict[str, Any]:
    """The JSON form of one row (scores in percent, as the paper reports them)."""
    b = row.booookscore
    out: dict[str, Any] = {
        "name": row.name,
        "kind": row.kind,
        "model": row.model,
        "strategy": row.strategy,
        "chunk_size": row.chunk_size,
        "n_books": len(row.books),
        "booookscore": None,
        "avg_tokens": row.ngrams.avg_tokens,
        "novel_3gram_pct": row.ngrams.novel_pct,
        "repeated_3gram_pct": row.ngrams.repeated_pct,
        "ngram_signature": row.ngrams.signature,
        "summary_signatures": list(row.summary_signatures),
        "source": row.source,
    }
    if b is not None:
        out["booookscore"] = {
            "score": _pct(b.score),
            "ci95": [_pct(b.ci_low), _pct(b.ci_high)],
            "bootstrap_seed": b.bootstrap_seed,
            "bootstrap_resamples": b.bootstrap_resamples,
            "n_summaries_scored": b.n_summaries,
            "n_sentences": b.n_sentences,
            "n_confusing": b.n_confusing,
            "n_unparseable": b.n_unparseable,
            "type_counts": dict(b.type_counts),
            "signature": row.booookscore_signature,
        }
    out["failures"] = {**failure_summary_to_dict(row.failures), "signature": detector_signature()}
    if row.has_usage:
        out["usage"] = {**_usage_dict(row.usage), "wall_s": round(row.wall_s, 3)}
    if row.has_usage or row.judge_usage.calls:
        per = row.judge_billed_input_per_sentence
        out["judge_usage"] = {**_usage_dict(row.judge_usage), "judged_sentences": row.judged_sentences,
                              "billed_input_per_sentence": None if per is None else round(per, 1)}
    out["books"] = [
        {
            "book": r.book,
            "booookscore": None if r.judgement is None else _pct(r.judgement.score),
            "n_sentences": None if r.judgement is None else r.judgement.n_sentences,
            "tokens": r.ngrams.n_tokens,
            "novel_3gram_pct": r.ngrams.novel_pct,
            "repeated_3gram_pct": r.ngrams.repeated_pct,
            "record": r.record_path,
            "reused": r.reused,
            "failures": None if r.failures is None else report_to_dict(r.failures),
            **({"usage": _usage_dict(r.usage), "wall_s": r.wall_s} if row.has_usage else {}),
        }
        for r in row.books
    ]
    if row.datasets:
        out["datasets"] = [_dataset_dict(d) for d in row.datasets]
        for entry, r in zip(out["books"], row.books, strict=True):
            if r.rouge is not None:
                entry.update(id=r.rouge.sample_id, rouge_l=round(100 * r.rouge.rouge_l, 4),
                             length_tokens=r.rouge.length_tokens, bucket=r.rouge.bucket, lang=r.rouge.lang,
                             summary_tokens=r.rouge.summary_tokens)
    return out


def _dataset_dict(d: DatasetScores) -> dict[str, Any]:
    return {
        "dataset": d.dataset, "n_samples": d.n, "rouge_l": round(d.rouge_l, 4),
        "mean_length_tokens": round(d.mean_length_tokens, 2), "mean_summary_tokens": round(d.mean_summary_tokens, 2),
        "buckets": [{"bucket": b.bucket, "n_samples": b.n, "rouge_l": round(b.rouge_l, 4),
                     "mean_length_tokens": round(b.mean_length_tokens, 2), "min_length_tokens": b.min_length_tokens,
                     "max_length_tokens": b.max_length_tokens, "mean_summary_tokens": round(b.mean_summary_tokens, 2)}
                    for b in d.buckets],
        "moving_median": {"window": d.window, "points": [[round(x, 2), round(y, 4)] for x, y in d.moving_median]},
        "rouge_signatures": list(dict.fromkeys(s.rouge_signature or rouge_signature(s.lang) for s in d.samples)),
    }


def gap_to_dict(gap: TemplateGap) -> dict[str, Any]:
    """The JSON form of one IB/IE comparison (scores x100, MSE on that scale)."""
    ib = {b.bucket: b.rouge_l for b in gap.ib.buckets}
    ie = {b.bucket: b.rouge_l for b in gap.ie.buckets}
    return {
        "model": gap.model, "strategy": gap.strategy, "dataset": gap.dataset,
        "ib_rouge_l": round(gap.ib.rouge_l, 4), "ie_rouge_l": round(gap.ie.rouge_l, 4),
        "buckets": [{"bucket": k, "ib": _round(ib.get(k)), "ie": _round(ie.get(k))}
                    for k in bucket_order([*ib, *ie])],
        "mse": _round(gap.mse),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def result_to_dict(result: CompareResult) -> dict[str, Any]:
    """The document written to ``results.json``."""
    return {
        "kind": RESULT_KIND,
        "schema_version": result.schema_version,
        "judge": result.judge,
        "wall_s": round(result.wall_s, 3),
        "notes": list(result.notes),
        "rows": [row_to_dict(r) for r in result.rows],
        **({"template_gaps": [gap_to_dict(g) for g in gaps]} if (gaps := template_gaps(result.rows)) else {}),
    }


CSV_COLUMNS = (
    "name",
    "kind",
    "model",
    "strategy",
    "chunk_size",
    "n_books",
    "booookscore",
    "ci95_low",
    "ci95_high",
    "avg_tokens",
    "novel_3gram_pct",
    "repeated_3gram_pct",
    "calls",
    "cache_hits",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "spent_usd",
    "wall_s",
    "judge_calls",
    "judge_cost_usd",
    "judge_billed_input_per_sentence",
    *(f"type_{t.replace(' ', '_')}" for t in ERROR_TYPES),
    *(f"failures_{m}" for m in FAILURE_MODES),  # summaries showing each failure mode
    "booookscore_signature",
    "summary_signature",
)


def _cell(value: Any) -> Any:
    return "" if value is None else value


def result_to_csv(result: CompareResult) -> str:
    """One CSV row per configuration."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in result.rows:
        b = row.booookscore
        u, j = row.usage, row.judge_usage
        counts = dict(b.type_counts) if b else {}
        usage_cells: list[Any] = (
            [u.calls, u.cache_hits, u.input_tokens, u.output_tokens, round(u.cost_usd, 6),
             round(u.spent_usd, 6), round(row.wall_s, 3)]
            if row.has_usage
            else [""] * 7
        )
        per = row.judge_billed_input_per_sentence
        usage_cells += [j.calls, round(j.cost_usd, 6)] if row.has_usage or j.calls else ["", ""]
        usage_cells.append("" if per is None else round(per, 1))
        writer.writerow(
            [
                row.name, row.kind, row.model, _cell(row.strategy), _cell(row.chunk_size), len(row.books),
                _cell(_pct(b.score) if b else None), _cell(_pct(b.ci_low) if b else None),
                _cell(_pct(b.ci_high) if b else None), _cell(row.ngrams.avg_tokens),
                _cell(row.ngrams.novel_pct), _cell(row.ngrams.repeated_pct), *usage_cells,
                *(counts.get(t, "") if b else "" for t in ERROR_TYPES),
                *(row.failures.counts.get(m, 0) for m in FAILURE_MODES),
                _cell(row.booookscore_signature), " ; ".join(row.summary_signatures),
            ]
        )
    return buffer.getvalue()


DATASET_CSV_COLUMNS = ("name", "model", "strategy", "chunk_size", "template", "dataset", "bucket", "n_samples",
                       "rouge_l", "mean_length_tokens", "mean_summary_tokens", "ib_ie_mse")


def datasets_to_csv(result: CompareResult) -> str:
    """One CSV row per configuration x dataset x bucket (bucket ``all``: the whole dataset)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(DATASET_CSV_COLUMNS)
    mse = {(g.model, g.strategy, g.dataset): g.mse for g in template_gaps(result.rows)}
    for row in result.rows:
        head = [row.name, row.model, _cell(row.strategy), _cell(row.chunk_size), _cell(row.template)]
        for d in row.datasets:
            gap = _cell(_round(mse.get((row.model, row.strategy or "", d.dataset))))
            writer.writerow([*head, d.dataset, "all", d.n, round(d.rouge_l, 4), round(d.mean_length_tokens, 2),
                             round(d.mean_summary_tokens, 2), gap])
            for b in d.buckets:
                writer.writerow([*head, d.dataset, b.bucket, b.n, round(b.rouge_l, 4),
                                 round(b.mean_length_tokens, 2), round(b.mean_summary_tokens, 2), ""])
    return buffer.getvalue()


def write_results(result: CompareResult, out: Path) -> list[Path]:
    """Write results.json, results.csv, summaries/<name>.json and annotations/<name>.json (atomic)."""
    out = Path(out)
    written = []
    path = out / "results.json"
    write_json_atomic(path, result_to_dict(result))
    written.append(path)
    path = out / "results.csv"
    atomic_write_text(path, result_to_csv(result))
    written.append(path)
    if any(row.datasets for row in result.rows):
        path = out / "results_datasets.csv"
        atomic_write_text(path, datasets_to_csv(result))
        written.append(path)
    for row in result.rows:
        path = out / "summaries" / f"{row.name}.json"
        write_json_atomic(path, row.summaries())
        written.append(path)
        judgements = row.judgements()
        if judgements and row.booookscore_signature and "release-annotations" not in row.booookscore_signature:
            mode: AnnotationFormat = "batched" if "mode:batched" in row.booookscore_signature else "sentence"
            path = out / "annotations" / f"{row.name}.json"
            data = to_release(judgements, fmt=mode)
            write_json_atomic(path, data)  # and beside it the judge's signature, which a rescore signs with
            written += [path, write_judge_signature(path, data, row.booookscore_signature)]
    return written


__all__ = [
    "CSV_COLUMNS",
    "DATASET_CSV_COLUMNS",
    "RESULT_KIND",
    "SCHEMA_VERSION",
    "BookResult",
    "CompareResult",
    "ConfigResult",
    "TemplateGap",
    "datasets_to_csv",
    "gap_to_dict",
    "result_to_csv",
    "result_to_dict",
    "row_to_dict",
    "split_release_name",
    "template_gaps",
    "write_results",
]
