"""What ``booksum score`` writes: the JSON document, the CSV table, release-format annotations, the report.

Pure functions of a :class:`~booksum_app.runners.score.ScoreRun`; nothing here calls a model.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from booksum_app.errors import InputError
from booksum_app.files import atomic_write_text, write_json_atomic
from booksum_app.scoring.detectors import FAILURE_MODES, failure_summary_to_dict, report_to_dict
from booksum_app.scoring.judgement import ERROR_TYPES
from booksum_app.scoring.release import AnnotationFormat, to_release
from booksum_app.scoring.report import render_report
from booksum_app.scoring.results import SummaryRow, SystemScores, write_judge_signature
from booksum_app.signature import detector_signature

if TYPE_CHECKING:
    from booksum_app.runners.score import ScoreRun

RESULT_KIND = "booksum.scores"


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 4)


def system_to_dict(system: SystemScores) -> dict[str, Any]:
    """The JSON-ready form of one system's scores."""
    b = system.booookscore
    out: dict[str, Any] = {"name": system.name, "path": system.path, "n_summaries": len(system.rows)}
    if b is not None:
        s = b.system
        out["booookscore"] = {
            "score": _pct(s.score),
            "ci95": [_pct(s.ci_low), _pct(s.ci_high)],
            "confidence": s.confidence,
            "bootstrap_seed": s.bootstrap_seed,
            "bootstrap_resamples": s.bootstrap_resamples,
            "mode": b.mode,
            "signature": b.signature,
            "n_summaries_scored": s.n_summaries,
            "n_summaries_unscored": s.n_unscored,
            "n_sentences": s.n_sentences,
            "n_confusing": s.n_confusing,
            "n_unparseable": s.n_unparseable,
            "type_counts": dict(s.type_counts),
            "type_distribution": s.type_distribution,
        }
    out["ngrams"] = {
        "avg_tokens": system.ngrams.avg_tokens,
        "repeated_3gram_pct": system.ngrams.repeated_pct,
        "novel_3gram_pct": system.ngrams.novel_pct,
        "n_with_source": system.ngrams.n_with_source,
        "signature": system.ngrams.signature,
    }
    if system.rouge_l is not None:
        out["rouge_l"] = {
            "f": system.rouge_l.fmeasure,
            "recall": system.rouge_l.recall,
            "precision": system.rouge_l.precision,
            "n_with_reference": system.n_with_reference,
            "n_failed_calls": system.n_failed_calls,
            "signature": system.rouge_signature,
        }
    t = system.totals
    out["calls"] = {
        "calls": t.calls,
        "cache_hits": t.cache_hits,
        "input_tokens": t.input_tokens,
        "cached_input_tokens": t.cached_input_tokens,
        "cache_write_input_tokens": t.cache_write_input_tokens,
        "billed_input_tokens": round(t.billed_input_tokens, 1),
        "judged_sentences": t.judged_sentences,
        "billed_input_per_sentence": None if (per := t.billed_input_per_sentence) is None else round(per, 1),
        "output_tokens": t.output_tokens,
        "cost_usd": round(t.cost_usd, 6),
        "spent_usd": round(t.spent_usd, 6),
        "wall_s": t.wall_s,
    }
    if system.failures is not None:
        out["failures"] = {**failure_summary_to_dict(system.failures), "signature": detector_signature()}
    out["summaries"] = [_row_to_dict(r) for r in system.rows]
    return out


def _row_to_dict(row: SummaryRow) -> dict[str, Any]:
    j = row.judgement
    return {
        "book": row.book,
        "booookscore": None if j is None else _pct(j.score),
        "n_sentences": None if j is None else j.n_sentences,
        "n_confusing": None if j is None else j.n_confusing,
        "n_unparseable": None if j is None else j.n_unparseable,
        "tokens": row.ngrams.n_tokens,
        "repeated_3gram_pct": row.ngrams.repeated_pct,
        "novel_3gram_pct": row.ngrams.novel_pct,
        "rouge_l_f": None if row.rouge is None else row.rouge.fmeasure,
        "rouge_l_recall": None if row.rouge is None else row.rouge.recall,
        "failures": None if row.failures is None else report_to_dict(row.failures),
    }


def run_to_dict(run: ScoreRun) -> dict[str, Any]:
    """The JSON document ``--json`` writes (``kind`` and ``schema_version`` first)."""
    return {
        "kind": RESULT_KIND,
        "schema_version": run.schema_version,
        "notes": list(run.notes),
        "systems": [system_to_dict(s) for s in run.systems],
        **({"judge_servers": dict(run.judge_servers)} if run.judge_servers else {}),
    }


CSV_COLUMNS = (
    "system",
    "booookscore",
    "ci95_low",
    "ci95_high",
    "n_summaries",
    "n_sentences",
    "n_unparseable",
    "avg_tokens",
    "repeated_3gram_pct",
    "novel_3gram_pct",
    "rouge_l_f",
    "rouge_l_recall",
    "judge_cost_usd",
    "judge_billed_input_per_sentence",
    *(f"type_{t.replace(' ', '_')}" for t in ERROR_TYPES),
    *(f"failures_{m}" for m in FAILURE_MODES),  # summaries showing each failure mode
    "signature",
)


def run_to_csv(run: ScoreRun) -> str:
    """One CSV row per system (the table ``--csv`` writes)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in run.systems:
        b = s.booookscore.system if s.booookscore else None
        counts = dict(b.type_counts) if b else {}
        writer.writerow(
            [
                s.name,
                _pct(b.score) if b else "",
                _pct(b.ci_low) if b else "",
                _pct(b.ci_high) if b else "",
                len(s.rows),
                b.n_sentences if b else "",
                b.n_unparseable if b else "",
                s.ngrams.avg_tokens,
                s.ngrams.repeated_pct,
                "" if s.ngrams.novel_pct is None else s.ngrams.novel_pct,
                "" if s.rouge_l is None else s.rouge_l.fmeasure,
                "" if s.rouge_l is None else s.rouge_l.recall,
                round(s.totals.cost_usd, 6) if s.totals.calls else "",
                "" if (per := s.totals.billed_input_per_sentence) is None else round(per, 1),
                *(counts.get(t, "") if b else "" for t in ERROR_TYPES),
                *(s.failures.counts.get(m, 0) if s.failures else "" for m in FAILURE_MODES),
                s.booookscore.signature if s.booookscore else "",
            ]
        )
    return buffer.getvalue()


def _per_system_path(path: Path, name: str, n_systems: int) -> Path:
    return path if n_systems == 1 else path.with_name(f"{path.stem}.{name}{path.suffix}")


def write_outputs(
    run: ScoreRun,
    *,
    json_path: Path | None = None,
    csv_path: Path | None = None,
    annotations_path: Path | None = None,
    report_path: Path | None = None,
) -> list[Path]:
    """Write the requested outputs; several systems get ``<stem>.<system><suffix>`` annotation files.

    Raises:
        InputError: an output path cannot be written.
    """
    written: list[Path] = []
    try:
        if json_path is not None:
            write_json_atomic(json_path, run_to_dict(run))
            written.append(Path(json_path))
        if csv_path is not None:
            atomic_write_text(csv_path, run_to_csv(run))
            written.append(Path(csv_path))
        if annotations_path is not None:
            for s in run.systems:
                if s.booookscore is None:
                    continue
                target = _per_system_path(Path(annotations_path), s.name, len(run.systems))
                fmt: AnnotationFormat = "batched" if s.booookscore.mode == "batched" else "sentence"
                data = to_release(s.booookscore.summaries, fmt=fmt)
                write_json_atomic(target, data)
                written.append(target)
                if "judge:release-annotations" not in s.booookscore.signature:  # a judge ran: sign it beside
                    written.append(write_judge_signature(target, data, s.booookscore.signature))
        if report_path is not None:
            atomic_write_text(report_path, render_report(run.systems, notes=run.notes))
            written.append(Path(report_path))
    except OSError as exc:
        raise InputError(f"cannot write {exc.filename}: {exc.strerror}; choose another output path") from exc
    return written
