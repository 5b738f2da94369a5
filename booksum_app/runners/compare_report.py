"""``compare``'s HTML report: the same standalone page as ``score --report``, one system per configuration.

Each configuration of the grid becomes a :class:`~booksum_app.scoring.results.SystemScores` built
from what the comparison measured (its judgements, n-gram statistics and failure flags): nothing
is recomputed and no model is called, so the report shows the numbers of the table.
"""

from __future__ import annotations

from pathlib import Path

from booksum_app.files import atomic_write_text
from booksum_app.runners.compare_results import CompareResult, ConfigResult
from booksum_app.scoring.detectors import summarize_failures
from booksum_app.scoring.report import render_report
from booksum_app.scoring.results import BooookScoreResult, SummaryRow, SystemScores

REPORT_NAME = "report.html"


def config_system(row: ConfigResult) -> SystemScores:
    """One configuration as a scored system, from the comparison's own measurements."""
    judged = tuple(b.judgement for b in row.books if b.judgement is not None)
    booookscore = None
    if row.booookscore is not None and row.booookscore_signature and judged:
        mode = "batched" if "mode:batched" in row.booookscore_signature else "sentence"
        booookscore = BooookScoreResult(signature=row.booookscore_signature, mode=mode, summaries=judged,
                                        system=row.booookscore)
    reports = [b.failures for b in row.books if b.failures is not None]
    return SystemScores(
        name=row.name,
        path=row.source or row.name,
        rows=tuple(SummaryRow(book=b.book, summary=b.summary, judgement=b.judgement, ngrams=b.ngrams,
                              failures=b.failures) for b in row.books),
        booookscore=booookscore,
        ngrams=row.ngrams,
        failures=summarize_failures(reports) if reports else None,
    )


def write_compare_report(result: CompareResult, out: Path) -> Path:
    """Write ``OUT/report.html`` for the grid's configurations (summarized or precomputed)."""
    path = Path(out) / REPORT_NAME
    atomic_write_text(path, render_report([config_system(row) for row in result.rows if row.books],
                                          title="booksum comparison"))
    return path


__all__ = ["REPORT_NAME", "config_system", "write_compare_report"]
