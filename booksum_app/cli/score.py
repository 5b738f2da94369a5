"""``booksum score``: BooookScore, n-gram statistics and ROUGE-L for sets of summaries."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from booksum_app.cli.base import (
    call_printer,
    confirm_plan,
    console,
    err_console,
    handle_errors,
    json_option,
    llm_options,
    llm_settings,
    plan_options,
)
from booksum_app.cli.base import (
    judge_mode as choose_judge_mode,
)
from booksum_app.cli.consoles import print_signature
from booksum_app.cli.live import Heartbeat, fitted_stats, progress_bar, snapshot_line
from booksum_app.cli.model_notes import print_model_notes
from booksum_app.config import DEFAULT_BATCH_SIZE, JUDGE_MODES
from booksum_app.files import files_in
from booksum_app.money import usd
from booksum_app.signature import detector_signature
from booksum_app.textsafe import markup_safe as esc  # outside text: no markup, no control sequences
from booksum_app.textsafe import printable

if TYPE_CHECKING:
    from booksum_app.llm.calls import CallRecord
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.judge_plan import JudgePlan
    from booksum_app.runners.progress import ProgressSnapshot
    from booksum_app.runners.score import ScoreRun, ScoreSettings
    from booksum_app.scoring.aggregate import SystemScore
    from booksum_app.scoring.results import SystemScores


def _score_modes() -> list[str]:
    return list(JUDGE_MODES)


def _no_model(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``score --model X``: the model score calls is the judge; say which option that is."""
    if value is not None:
        raise click.UsageError(f"score has no --model: the model that scores is the judge, --judge {value}")


@click.command("score")
@click.argument("summaries", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--judge", "judge_name", default=None,
              help="Judge model string, e.g. openai:gpt-4o (default: BOOKSUM_JUDGE, then config judge_model; "
                   "none: no BooookScore).")
@click.option("--judge-mode", type=click.Choice(_score_modes()), default=None,
              help="sentence: one judge call per sentence (the paper) [default]; batched: several numbered "
                   "sentences per call.")
@click.option("--mode", "mode_alias", type=click.Choice(_score_modes()), default=None, hidden=True,
              help="Another spelling of --judge-mode.")
@click.option("--model", "-m", "model_trap", default=None, hidden=True, expose_value=False, callback=_no_model,
              help="score calls no summarizer: the judge is --judge.")
@click.option("--batch-size", type=click.IntRange(min=1), default=DEFAULT_BATCH_SIZE, show_default=True,
              help="Sentences per call in batched mode.")
@click.option("--annotations", "annotations", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Score from existing annotations (release format), no LLM call; one per SUMMARIES, in order.")
@click.option("--allow-partial", is_flag=True,
              help="Score --annotations that cover only part of the summaries "
                   "(refused otherwise; a note says what is missing).")
@click.option("--no-judge", is_flag=True, help="Skip BooookScore; n-gram statistics (and ROUGE-L) only.")
@click.option("--judge-base-url", default=None, metavar="URL|api",
              help="The judge's server, over --base-url and its config entry (api: its provider's own API).")
@click.option("--source", type=click.Path(path_type=Path), default=None,
              help="Directory of source books (or one book) matched by file-name stem: enables % novel 3-grams.")
@click.option("--references", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="{book: reference summary} JSON: enables ROUGE-L.")
@click.option("--rouge-variant", type=click.Choice(["rouge-score", "clongeval", "cnnsum"]), default="rouge-score",
              show_default=True, help="ROUGE-L as rouge-score computes it, or as CLongEval / CNNSum score it "
                                      "(rouge 1.0.1 on jieba words; docs/scoring.md).")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a standalone HTML report.")
@json_option("all scores")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one CSV row per system.")
@click.option("--annotations-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the judge's annotations in the release format.")
@plan_options
@click.option("--seed", type=int, default=None,
              help="Bootstrap seed of the 95% CI (default: fixed, printed in the JSON).")
@click.option("--chapters", is_flag=True,
              help="Also score each chapter summary of a summarize --chapters output, one row each.")
@llm_options
@handle_errors
def score_command(
    summaries: tuple[Path, ...], judge_name: str | None, judge_mode: str | None, mode_alias: str | None,
    batch_size: int, annotations: tuple[Path, ...], allow_partial: bool, no_judge: bool, source: Path | None,
    references: Path | None, rouge_variant: str, report: Path | None, json_out: Path | None, csv_out: Path | None,
    annotations_out: Path | None, seed: int | None, max_plan_cost: float, yes: bool, judge_base_url: str | None,
    chapters: bool, **llm: Any,
) -> None:
    """Score SUMMARIES (release JSON, summary records, a directory, or text files): BooookScore and n-gram
    statistics."""
    from booksum_app.files import check_writable
    from booksum_app.runners.score import ScoreSettings, check_judge_ready, plan_score
    from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED

    for path in (report, json_out, csv_out, annotations_out):
        if path is not None and str(path) != "-":
            check_writable(path)  # before the judge is paid
    settings_llm = _judge_settings(judge_name, judge_base_url, no_judge=no_judge, llm=llm)
    mode = choose_judge_mode(judge_mode, mode_alias, "--judge-mode", "--mode") or "sentence"
    settings = ScoreSettings(judge=judge_name, use_judge=not no_judge, mode=mode, batch_size=batch_size,  # type: ignore[arg-type]
                             annotations=annotations, source=source, references=references,
                             rouge_variant=rouge_variant, allow_partial=allow_partial, llm=settings_llm,
                             seed=DEFAULT_BOOTSTRAP_SEED if seed is None else seed, chapters=chapters)
    summaries = _expand_summary_sets(summaries, annotations)
    plan = plan_score(list(summaries), settings)
    if plan is not None:  # the judge is paid: its key first, then how much at most, and ask above the threshold
        from booksum_app.llm.registry import choose_model

        check_judge_ready(settings)
        priced = choose_model(plan.judge, settings=settings_llm).info.price_known  # else unknown, never $0
        unknown = "" if priced else f"; cost unknown (booksum has no price for {esc(plan.judge)})"
        err_console.print(_judge_plan_line(plan) + unknown, highlight=False, soft_wrap=True)
        confirm_plan(plan.budget_usd if priced else None, max_plan_cost=max_plan_cost, yes=yes, what="Judging")
    run = _score_with_progress(summaries, settings, planned_calls=None if plan is None else
                               plan.calls + plan.replayed_calls)
    _print_outputs(run, json_out=json_out, csv_out=csv_out, annotations_out=annotations_out, report=report)


def _judge_settings(judge_name: str | None, judge_base_url: str | None, *, no_judge: bool,
                    llm: dict[str, Any]) -> LLMSettings:
    """The call settings, with the judge's own server; a judge's notes (typo, unknown price) printed."""
    settings = llm_settings(**llm)
    if judge_base_url is not None and not no_judge:
        from booksum_app.llm.registry import choose_judge
        from booksum_app.runners.servers import judge_server

        settings = judge_server(settings, choose_judge(judge_name, settings=settings), judge_base_url)
    if judge_name:
        from booksum_app.llm.registry import choose_model

        # a typo'd judge would be priced conservatively: say so before paying
        print_model_notes(choose_model(judge_name, settings=settings))
    return settings


def _judge_plan_line(plan: JudgePlan) -> str:
    """The judge's plan: the figure to budget for first (no prompt-cache hit), the cached bill second."""
    cached = (f" ({usd(plan.cost_usd)} if the prompt cache serves {plan.cached_input_tokens:,} input tokens)"
              if plan.cached_input_tokens and plan.cost_usd < plan.budget_usd else "")
    per = plan.billed_input_per_sentence
    return (f"judge plan ({esc(plan.judge)}, upper bound): {plan.calls:,} calls, {plan.input_tokens:,} in + "
            f"{plan.output_tokens:,} out tokens, {usd(plan.budget_usd)}{cached}"
            + ("" if per is None else f"; {per:,.0f} billed input tokens per sentence")
            + (f"; {plan.replayed_calls:,} calls answered from the call cache, free" if plan.replayed_calls else ""))


def _score_with_progress(summaries: tuple[Path, ...], settings: ScoreSettings, *,
                         planned_calls: int | None) -> ScoreRun:
    """The scoring run under a bar over the plan's calls (cached ones included), with ETA and dollars."""
    from booksum_app.runners.progress import RunProgress
    from booksum_app.runners.score import run_score

    tracker = RunProgress()
    if planned_calls is not None:
        tracker.set_planned_calls(planned_calls)
    bar = progress_bar("{task.description}", "{task.fields[count]}")
    task = bar.add_task("scoring", total=None, count="", stats="")

    def draw(snap: ProgressSnapshot) -> None:
        total = snap.planned_calls or None
        count = f"{snap.calls}/{total}" if total else f"{snap.calls} calls"
        bar.update(task, description=esc(snap.stage), completed=min(snap.calls, total or snap.calls), total=total,
                   count=count, stats=fitted_stats(snap, label=snap.stage, count=count))

    tracker.listeners.append(draw)
    printer = call_printer()

    def on_call(record: CallRecord) -> None:
        if printer is not None:
            printer(record)
        tracker.on_call(record)

    with bar, Heartbeat(lambda: snapshot_line(tracker.snapshot())):
        run = run_score(list(summaries), settings, on_call=on_call, on_stage=tracker.set_stage)
    if run.judge_notice:
        err_console.print(f"[yellow]note:[/] {esc(run.judge_notice)}", highlight=False, soft_wrap=True)
    for note in run.notes:
        err_console.print(f"[yellow]warning:[/] {esc(note)}", highlight=False, soft_wrap=True)
    return run


def _print_outputs(run: ScoreRun, *, json_out: Path | None, csv_out: Path | None, annotations_out: Path | None,
                   report: Path | None) -> None:
    """The files first (a reader that closes stdout early, ``| head -3``, must not cost them), then
    the tables on stdout, or the JSON there for ``--json -``."""
    from booksum_app.runners.score_outputs import run_to_dict, write_outputs

    to_stdout = json_out is not None and str(json_out) == "-"  # machine output instead of the tables
    for path in write_outputs(run, json_path=None if to_stdout else json_out, csv_path=csv_out,
                              annotations_path=annotations_out, report_path=report):
        err_console.print(printable(f"wrote {path}"), highlight=False, markup=False, soft_wrap=True)
    if to_stdout:
        click.echo(json.dumps(run_to_dict(run), ensure_ascii=False, indent=1))
    else:
        _render_scores(run)


def _summary_set(path: Path) -> bool:
    """Whether ``path`` is a ``{book: summary}`` set with several books (compare's summaries/<config>.json,
    a release file), not one summary record."""
    from booksum_app.scoring.release import load_json

    data = load_json(path, what="summaries")
    if not isinstance(data, dict) or not data or not all(isinstance(v, str) for v in data.values()):
        return False
    return not isinstance(data.get("summary", data.get("final_summary")), str)


def _expand_summary_sets(paths: tuple[Path, ...], annotations: tuple[Path, ...]) -> tuple[Path, ...]:
    """A directory holding only ``{book: summary}`` sets (compare's ``grid/summaries/``) is one system per
    file, as if each were named; a directory of records or text files stays one system."""
    if annotations:  # one annotations file per SUMMARIES, as given: no expansion
        return paths
    out: list[Path] = []
    for path in paths:
        files = files_in(path, what="scored directory") if path.is_dir() else []
        if files and all(p.suffix.lower() == ".json" for p in files) and all(map(_summary_set, files)):
            out.extend(files)
        else:
            out.append(path)
    return tuple(out)


def _render_scores(run: ScoreRun) -> None:
    """The scores table, the error-type table and the signatures, on stdout."""
    from booksum_app.cli.consoles import plain_console
    from booksum_app.cli.tables import WIDE_TABLE, print_fitted, score_columns

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    def booookscore(s: SystemScores) -> SystemScore | None:
        return s.booookscore.system if s.booookscore else None

    def score_cell(s: SystemScores) -> str:
        b = booookscore(s)
        return "–" if b is None or b.score is None else f"{100 * b.score:.1f}"

    def ci_cell(s: SystemScores) -> str:
        b = booookscore(s)
        if b is None or b.score is None:
            return "–"
        return f"{100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f}"

    def failures_cell(s: SystemScores) -> str:  # e.g. "subjective 95, repetition 4": definitions in docs/scoring.md
        counts = s.failures.counts if s.failures else {}
        return ", ".join(f"{mode} {n}" for mode, n in counts.items() if n) or "–"

    def unparsed_cell(s: SystemScores) -> str:
        b = booookscore(s)
        return "–" if b is None else str(b.n_unparseable)

    def rouge_cell(s: SystemScores) -> str:
        r = s.rouge_l
        # two decimals, as the benchmarks publish ROUGE-L (CLongEval 17.38, CNNSum)
        return "–" if r is None else f"{100 * r.fmeasure:.2f} / {100 * r.recall:.2f}"

    judged = any(s.booookscore for s in run.systems)
    any_calls = any(s.totals.calls for s in run.systems)
    # unparseable judge answers exist only when we ran the judge (annotation files have none)
    any_unparsed = any_calls or any(b and b.n_unparseable for b in map(booookscore, run.systems))
    # (header, cell, shown): only the columns this run has, so a row fits 80 columns
    columns: list[tuple[str, Callable[[SystemScores], str], bool]] = [
        ("BooookScore", score_cell, judged),
        ("95% CI", ci_cell, judged),
        ("n", lambda s: str(len(s.rows)), True),
        ("Unparsed", unparsed_cell, any_unparsed),
        ("Avg len", lambda s: f1(s.ngrams.avg_tokens), True),
        ("% rep 3g", lambda s: f1(s.ngrams.repeated_pct), True),
        ("% novel 3g", lambda s: f1(s.ngrams.novel_pct), any(s.ngrams.n_with_source for s in run.systems)),
        ("ROUGE-L F/R", rouge_cell, any(s.rouge_l for s in run.systems)),
        ("Failure modes (summaries)", failures_cell, any(s.failures and any(s.failures.counts.values())
                                                         for s in run.systems)),
        ("Calls (cached) / cost",
         lambda s: f"{s.totals.calls} ({s.totals.cache_hits}) / {usd(s.totals.cost_usd, digits=4)}", any_calls),
        # billed input-token equivalents per judged sentence: prompt-cache reads at their price
        ("In/sent.", lambda s: f1(s.totals.billed_input_per_sentence), any_calls),
    ]
    shown = [(header, cell) for header, cell, show in columns if show]
    # in a terminal, the columns that fit its width (in SCORE_PRIORITY order); piped, all of them
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE), "booksum scores",
                 score_columns(["System", *(header for header, _ in shown)]),
                 [[esc(s.name), *(esc(cell(s)) for _, cell in shown)] for s in run.systems],
                 where="the --json and --csv outputs")
    _render_error_types(run)
    for s in run.systems:  # each broken only at "|" in a terminal: a copied signature is whole
        if s.booookscore:
            print_signature(console, printable(f"{s.name}: {s.booookscore.signature}"))
        print_signature(console, printable(f"{s.name}: {s.ngrams.signature}"))
        if s.rouge_signature:
            print_signature(console, printable(f"{s.name}: {s.rouge_signature}"))
        if s.failures is not None:
            print_signature(console, printable(f"{s.name}: {detector_signature()}"))

def _render_error_types(run: ScoreRun) -> None:
    """Per judged system, how often each of the 8 error types was labelled (systems that do not fit
    the terminal are left out whole, and named)."""
    from booksum_app.cli.consoles import plain_console
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted
    from booksum_app.scoring.judgement import ERROR_TYPES

    scored = [(s.name, s.booookscore.system) for s in run.systems if s.booookscore]
    if not scored:
        return
    columns = [Col("Type", 0, "left"), *(Col(esc(name), i + 1) for i, (name, _) in enumerate(scored))]
    rows = [[kind, *(f"{dict(b.type_counts).get(kind, 0)} ({100 * b.type_distribution.get(kind, 0.0):.1f}%)"
                     for _, b in scored)] for kind in ERROR_TYPES]
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE),
                 "Error types (sentences, % of labels)", columns, rows, where="the --json output")
