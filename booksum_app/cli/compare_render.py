"""What ``booksum compare`` prints: the plan, the results, the benchmark datasets; every table
fits the terminal by whole columns (:mod:`booksum_app.cli.tables`)."""

from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING, Any

from booksum_app.cli.base import console, err_console, esc
from booksum_app.cli.consoles import plain_console, print_signature
from booksum_app.errors import BooksumError
from booksum_app.money import usd
from booksum_app.signature import detector_signature

if TYPE_CHECKING:
    from booksum_app.runners.compare_plan import GridPlan
    from booksum_app.runners.compare_results import CompareResult


def plan_dict(plan: GridPlan) -> dict[str, Any]:
    """The plan as JSON: one object per line (configurations, then the judge), and the totals."""
    return {"judge": plan.judge, "lines": [dataclasses.asdict(line) for line in plan.lines], "calls": plan.calls,
            "input_tokens": plan.input_tokens, "output_tokens": plan.output_tokens,
            "cost_usd": round(plan.cost_usd, 6), "judge_replayed_calls": plan.judge_replayed_calls}


PLAN_COLUMNS = (  # (header, priority): the configuration and its cost first
    ("configuration", 0), ("summaries", 3), ("calls", 2), ("input tokens (cached)", 4), ("output tokens", 5),
    ("cost", 1),
)


def render_plan(plan: GridPlan, *, output: bool = False) -> None:
    """The plan table: on stderr before a run, on stdout when it is the output (``--plan-only``)."""
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted

    rows = []
    for line in plan.lines:
        name = f"judge ({plan.judge})" if line.name == "judge" else line.name
        cached = f" ({line.cached_input_tokens:,})" if line.cached_input_tokens else ""
        rows.append([esc(name), f"{line.remaining}", f"{line.calls:,}", f"{line.input_tokens:,}{cached}",
                     f"{line.output_tokens:,}", f"{usd(line.cost_usd)}"])
    rows.append(["total", "", f"{plan.calls:,}", f"{plan.input_tokens:,}", f"{plan.output_tokens:,}",
                 f"{usd(plan.cost_usd)}"])
    where = console if output else err_console
    columns = [Col(h, p, "left" if h == "configuration" else "right") for h, p in PLAN_COLUMNS]
    print_fitted(where if where.is_terminal else plain_console(stderr=not output, width=WIDE_TABLE),
                 "Pre-flight plan (upper bounds; the judge's prompt-cache reads predicted)", columns, rows,
                 where="compare --plan-only --json")
    if plan.judge_replayed_calls:
        where.print(f"{plan.judge_replayed_calls:,} judge calls are answered from the call cache (free) "
                    "and left out of the plan", highlight=False, markup=False)


def refuse_empty_summaries(result: CompareResult) -> None:
    """A grid that produced empty summaries is not a success (as in summarize): say where, exit 1."""
    empty = [(row.name, b) for row in result.rows if row.kind == "run" for b in row.books if not b.summary.strip()]
    if empty:
        where = ", ".join(f"{name}: {b.book}" for name, b in empty[:3]) + (
            f" (+{len(empty) - 3})" if len(empty) > 3 else ""
        )
        raise BooksumError(
            f"{len(empty)} final summaries are empty (the model returned nothing usable after cleaning): {where}; "
            f"their records (raw summaries, every call) are under {result.out}/records/; their rows count them as "
            "length 0; try another model or --no-clean"
        )


def render_compare(result: CompareResult) -> None:
    from booksum_app.cli.tables import WIDE_TABLE, compare_columns, print_fitted

    if result.judge_notice:
        err_console.print(f"[yellow]note:[/] {esc(result.judge_notice)}", highlight=False, soft_wrap=True)
    show_failures = any(any(row.failures.counts.values()) for row in result.rows)
    columns = ("Model", "Strategy", "Chunk", "Books", "BooookScore (95% CI)", "Avg. len", "% novel 3-g",
               "% rep. 3-g", *(("Failure modes",) if show_failures else ()), "Calls (cached)", "In tok", "Out tok",
               "Cost", "Judge $", "Judge in/sent.", "Wall s")
    rows: list[list[str]] = []

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    for row in result.rows:
        b = row.booookscore
        score = "–"
        if b is not None and b.score is not None:
            score = f"{100 * b.score:.1f} ({100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f})"
        usage, judge = row.usage, row.judge_usage
        per = row.judge_billed_input_per_sentence  # billed input-token equivalents (docs/scoring.md)
        judge_cells = [f"{usd(judge.cost_usd, digits=4)}" if judge.calls or row.kind == "run" else "–", f1(per)]
        cost_cells = [f"{usage.calls} ({usage.cache_hits})", f"{usage.input_tokens:,}", f"{usage.output_tokens:,}",
                      f"{usd(usage.cost_usd, digits=4)}", *judge_cells, f"{row.wall_s:.1f}"] \
            if row.kind == "run" else (["–"] * 4 + judge_cells + ["–"])
        strategy = f"{row.strategy or '–'}{' ' + row.template if row.template else ''}"
        name = row.model if row.kind == "run" else f"{row.model} (released)" if row.strategy else row.name
        # summaries showing each mode, e.g. "subjective 2, repetition 1" (definitions in docs/scoring.md)
        failures = ", ".join(f"{mode} {n}" for mode, n in row.failures.counts.items() if n) or "–"
        rows.append([esc(name), esc(strategy), str(row.chunk_size or "–"), str(len(row.books)), score,
                     f1(row.ngrams.avg_tokens), f1(row.ngrams.novel_pct), f1(row.ngrams.repeated_pct),
                     *((failures,) if show_failures else ()), *cost_cells])
    # the columns that fit the terminal, in COMPARE_PRIORITY order; the rest are in results.csv/json
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE),
                 "BooookScore comparison (Table 2 shape)", compare_columns(columns), rows,
                 where=f"{result.out}/results.csv and results.json")
    signatures = dict.fromkeys(r.booookscore_signature for r in result.rows if r.booookscore_signature)
    for signature in signatures:  # each broken only at "|" in a terminal: a copied signature is whole
        print_signature(console, f"BooookScore: {signature}")
    for signature in dict.fromkeys(r.ngrams.signature for r in result.rows):  # words differ by language
        print_signature(console, f"n-grams: {signature}")
    if result.rows:
        print_signature(console, f"Failure modes: {detector_signature()}")
    render_datasets(result)
    for row in result.rows:
        for signature in row.summary_signatures:
            print_signature(console, f"{row.name}: {signature}")
    err_console.print(
        f"{sum(len(r.books) for r in result.rows if r.kind == 'run')} summaries ({result.reused} from finished "
        f"records) in {result.wall_s:.1f}s; results in {result.out}/ (results.json, results.csv, records/, "
        f"report.html, summaries/, annotations/, plots/)", highlight=False, soft_wrap=True, markup=False)


def render_datasets(result: CompareResult) -> None:
    """The benchmark-dataset table: ROUGE-L F (x100) overall and per length bucket, and IB/IE MSE."""
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted
    from booksum_app.runners.compare_results import template_gaps
    from booksum_app.scoring.buckets import bucket_order
    from booksum_app.scoring.rouge import rouge_signature

    rows = [(row, d) for row in result.rows for d in row.datasets]
    if not rows:
        return
    buckets = bucket_order(b.bucket for _, d in rows for b in d.buckets)
    gaps = {(g.model, g.strategy, g.dataset): g.mse for g in template_gaps(result.rows)}
    headers = ("Configuration", "Dataset", "Samples", "ROUGE-L", "Mean len", "Summary len", *buckets, "MSE IB/IE")
    rank = {"Configuration": 0, "Dataset": 1, "ROUGE-L": 2, "Samples": 3, "MSE IB/IE": 4}
    columns = [Col(h, rank.get(h, 5 + i), "left" if h in ("Configuration", "Dataset") else "right")
               for i, h in enumerate(headers)]
    table_rows = []
    for row, d in rows:
        by_bucket = {b.bucket: b for b in d.buckets}
        cells = [f"{by_bucket[k].rouge_l:.1f} ({by_bucket[k].mean_length_tokens:,.0f})" if k in by_bucket else "–"
                 for k in buckets]
        mse = gaps.get((row.model, row.strategy or "", d.dataset))
        table_rows.append([esc(row.name), esc(d.dataset), str(d.n), f"{d.rouge_l:.1f}", f"{d.mean_length_tokens:,.0f}",
                           f"{d.mean_summary_tokens:,.0f}", *cells, "–" if mse is None else f"{mse:.2f}"])
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE),
                 "Benchmark datasets: ROUGE-L F x100 (bucket cells: mean sample length, cl100k tokens)", columns,
                 table_rows, where=f"{result.out}/results.json")
    signatures = dict.fromkeys(s.rouge_signature or rouge_signature(s.lang) for _, d in rows for s in d.samples)
    for signature in signatures:
        print_signature(console, f"ROUGE-L: {signature}")
    for (model, strategy), values in _mean_mse(gaps).items():  # CNNSum Table 2: one file per subset, mean over them
        console.print(f"MSE IB/IE, {model} {strategy}: {statistics.fmean(values):.2f} (mean over {len(values)} "
                      f"datasets)", highlight=False, soft_wrap=True, markup=False)


def _mean_mse(gaps: dict[tuple[str, str, str], float | None]) -> dict[tuple[str, str], list[float]]:
    """Per (model, strategy), the IB/IE MSE of each dataset both scored, where there are several."""
    out: dict[tuple[str, str], list[float]] = {}
    for (model, strategy, _), mse in gaps.items():
        if mse is not None:
            out.setdefault((model, strategy), []).append(mse)
    return {k: v for k, v in out.items() if len(v) > 1}
