"""What compare measured on each (configuration, book), kept beside its record.

``OUT/scores/<config-slug>/<book-stem>.json`` holds one :class:`BookResult` (judge verdicts,
n-gram statistics, failure modes, usage) under a key: the record's job key plus the judge, its
mode and batch size. A compare that reuses a finished record reads these instead of judging
and counting again when the key matches, and ``--merge`` copies them from the shards, so a
merge makes no call and reads no book's n-grams. A missing, unreadable or other-key file is
recomputed, never trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from booksum_app.files import write_json_atomic
from booksum_app.jsonin import parse_json_or_none
from booksum_app.llm.base import Tally
from booksum_app.runners.compare_results import BookResult
from booksum_app.scoring.detectors import FailureReport
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.scoring.ngrams import NgramStats

SCORES_KIND = "booksum.compare-scores"
SCORES_DIR = "scores"


def scores_path(out: Path, slug: str, book: Path) -> Path:
    """``OUT/scores/<config-slug>/<book-stem>.json`` (beside ``OUT/records/...``)."""
    return Path(out) / SCORES_DIR / slug / f"{Path(book).stem}.json"


def scores_key(job_key: str, *, judge: str | None, mode: str, batch_size: int) -> str:
    """What a stored result depends on beyond the record: the judge and how it was asked."""
    fields = [job_key, judge, mode if judge else None, batch_size if judge else None]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:32]


def write_scores(path: Path, key: str, result: BookResult) -> None:
    data = dataclasses.asdict(dataclasses.replace(result, record_path=None, reused=False, rouge=None))
    write_json_atomic(path, {"kind": SCORES_KIND, "key": key, "result": data})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def read_scores(path: Path, key: str) -> BookResult | None:
    """The stored result when ``path`` holds one under ``key``; else None (recompute)."""
    try:
        data = parse_json_or_none(path.read_text(encoding="utf-8"))  # refused JSON: recompute
        if data.get("kind") != SCORES_KIND or data.get("key") != key:
            return None
        r = data["result"]
        judgement = r["judgement"]
        if judgement is not None:
            sentences = tuple(SentenceJudgement(**{k: _tuples(v) for k, v in s.items()})
                              for s in judgement["sentences"])
            judgement = SummaryJudgement(judgement["book"], judgement["n_sentences"], sentences, judgement["summary"])
        failures = r["failures"]
        if failures is not None:
            failures = FailureReport(**{k: _tuples(v) for k, v in failures.items()})
        return BookResult(
            book=r["book"], summary=r["summary"], ngrams=NgramStats(**r["ngrams"]), judgement=judgement,
            signature=r["signature"], usage=Tally(**r["usage"]), judge_usage=Tally(**r["judge_usage"]),
            wall_s=r["wall_s"], failures=failures,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


__all__ = ["SCORES_DIR", "read_scores", "scores_key", "scores_path", "write_scores"]
