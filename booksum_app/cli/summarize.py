"""``booksum summarize``: one book, one strategy; the summary and its full record."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from booksum_app.cli.base import (
    Verbosity,
    call_printer,
    confirm_plan,
    console,
    err_console,
    handle_errors,
    llm_options,
    llm_settings,
    plan_options,
)
from booksum_app.cli.book_input import book_from_arg, print_book_warnings
from booksum_app.cli.consoles import print_with_signature
from booksum_app.cli.live import Heartbeat, fitted_stats, progress_bar, snapshot_line
from booksum_app.cli.model_notes import print_model_notes
from booksum_app.config import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TEMPERATURE,
    LANG_CHOICES,
    LENGTH_POLICIES,
)
from booksum_app.errors import BooksumError
from booksum_app.llm.controller import summary_line
from booksum_app.money import usd
from booksum_app.prompts import DIRECT_TEMPLATES
from booksum_app.textsafe import markup_safe as esc  # outside text: no markup, no control sequences
from booksum_app.textsafe import printable

if TYPE_CHECKING:
    from rich.progress import Progress

    from booksum_app.books import Book
    from booksum_app.llm.registry import LLMSettings, ModelSpec
    from booksum_app.runners.plan import CallPlan
    from booksum_app.runners.progress import ProgressSnapshot, RunProgress
    from booksum_app.runners.run_config import RunConfig
    from booksum_app.runners.summarize_outputs import OutputPaths
    from booksum_app.strategies.record import SummaryRecord


def _strategies_help() -> str:
    from booksum_app.strategies import STRATEGIES

    return f"One of the installed strategies: {', '.join(STRATEGIES)} (plugins included; see docs/architecture.md)."


@click.command("summarize")
@click.argument("book", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--strategy", default="hier", show_default=True, help=_strategies_help())
@click.option("--model", "-m", "model_name", default=None,
              help="Model string, e.g. openai:gpt-4o (default: configured or local).")
@click.option("--chunk-size", type=click.IntRange(min=64), default=DEFAULT_CHUNK_SIZE, show_default=True,
              help="Tokens per chunk.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=DEFAULT_MAX_SUMMARY_TOKENS, show_default=True,
              help="G: token budget of the final summary.")
@click.option("--prompts", default="paper", show_default=True,
              help="Prompt set: paper, simple, or a directory of templates.")
@click.option("--temperature", type=float, default=DEFAULT_TEMPERATURE, show_default=True,  # checked in RunConfig
              help="Sampling temperature of the summary calls, 0-2 (recorded in the record and its signature).")
@click.option("--lang", type=click.Choice(LANG_CHOICES), default="auto", show_default=True,
              help="Language of the prompts and the sentence splitter; auto: the book's declared language, "
                   "else detected from its text.")
@click.option("--set", "set_options", multiple=True, metavar="NAME=VALUE",
              help="A strategy's own option (repeatable); `booksum models` lists each strategy's options.")
@click.option("--direct-template", type=click.Choice(DIRECT_TEMPLATES), default=None,
              help="direct: instruction before (ib, the default) or after (ie) the book (CNNSum Prompt-IB/IE); "
                   "--set direct_template=...")
@click.option("--evidence-tokens", type=click.IntRange(min=1), default=None,
              help="hier-evidence: source tokens of evidence per merged summary (default: that summary's own budget); "
                   "--set evidence_tokens=...")
@click.option("--no-clean", is_flag=True, help="Skip artifact removal (keep the raw summary).")
@click.option("--include-front-matter", is_flag=True, help="Also summarize title page, contents, colophon, ...")
@click.option("--chapter-aware", is_flag=True, help="Never let a chunk straddle two chapters.")
@click.option("--chapters", "per_chapter", is_flag=True,
              help="hier: also one summary per chapter, from the tree where it can be (implies --chapter-aware); "
                   "--set chapters=true.")
@click.option("--length-policy", type=click.Choice(LENGTH_POLICIES), default=None,
              help="An answer past its length limit: regenerate it (the paper's rule) or cut it at its last "
                   "sentence end [default: the model's; truncate for the embedded SmolLM2].")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the summary to OUT.md and the record to OUT.json [default: the summary to stdout, the "
                   "record to booksum-out/]. - (stdout), a FIFO or a device get the summary only.")
@plan_options
@click.option("--plan-only", is_flag=True,
              help="Print the pre-flight plan (calls, tokens, dollars: upper bounds) on stdout and stop; no call.")
@llm_options
@handle_errors
def summarize_command(
    book: Path, strategy: str, model_name: str | None, chunk_size: int, max_summary_len: int, prompts: str,
    temperature: float, lang: str, set_options: tuple[str, ...], direct_template: str | None,
    evidence_tokens: int | None, no_clean: bool, include_front_matter: bool, chapter_aware: bool, per_chapter: bool,
    length_policy: str | None, output: Path | None, max_plan_cost: float, yes: bool, plan_only: bool, **llm: Any,
) -> None:
    """Summarize BOOK (.epub, .pdf, .txt, .html, .md; - reads it from standard input) and write the summary and its
    full record."""
    from booksum_app.books import Book, open_book
    from booksum_app.books.plausibility import anomalies
    from booksum_app.llm.registry import choose_model
    from booksum_app.llm.startup import check_ready
    from booksum_app.runners.run_config import RunConfig, option_aliases, parse_set
    from booksum_app.runners.summarize_outputs import output_paths

    aliases = option_aliases(direct_template=direct_template, chapters=per_chapter or None,
                             evidence_tokens=evidence_tokens)
    run = RunConfig(  # every option validated once, before any file is read or written
        strategy=strategy, model=model_name, chunk_size=chunk_size, max_summary_tokens=max_summary_len,
        temperature=temperature, prompts=prompts, lang=lang, clean=not no_clean, chapter_aware=chapter_aware,
        include_front_matter=include_front_matter, options={**aliases, **parse_set(set_options)},
    )
    settings = dataclasses.replace(llm_settings(**llm), length_policy=length_policy)
    spec = choose_model(model_name, settings=settings)  # resolved once; a bad model fails here, before any output
    if not plan_only and run.impl.calls_model:  # keys and installs, before the book is read or a model loads
        check_ready([spec], settings=settings)
    paths = None if plan_only else output_paths(book, strategy, output)  # checked before the first paid call
    source = book_from_arg(book, include_front_matter=include_front_matter)  # "-": read stdin now, before any call
    if not isinstance(source, Book):  # opened once: the run and the quality line read the same book
        source = open_book(source, include_front_matter=include_front_matter)
    print_model_notes(spec)
    print_book_warnings(anomalies(source, include_front_matter=include_front_matter))
    if paths is None:
        _print_plan_only(source, run, settings)
        return
    record = _run_with_progress(source, run, settings, spec, paths, max_plan_cost=max_plan_cost, yes=yes,
                                book_arg=str(book))
    _write_and_report(record, source, run, paths)


def plan_line(model: str, plan: CallPlan) -> str:
    """One plan as one line: ``plan (MODEL, STRATEGY, upper bound): calls, tokens, dollars``."""
    cost = usd(plan.cost_usd) if plan.price_known else f"cost unknown (booksum has no price for {model})"
    return (f"plan ({model}, {plan.strategy}, upper bound): {plan.calls:,} calls, "
            f"{plan.input_tokens:,} in + {plan.output_tokens:,} out tokens, {cost}")


def _print_plan_only(source: Book, run: RunConfig, settings: LLMSettings) -> None:
    """``--plan-only``: the plan the run would ask about, on stdout; no model call, nothing written."""
    from booksum_app.runners.inspect import plan_summary

    plan, model = plan_summary(source, run, llm_settings=settings)
    console.print(printable(plan_line(model, plan)), highlight=False, markup=False)


def _run_with_progress(source: Book, run: RunConfig, settings: LLMSettings, spec: ModelSpec, paths: OutputPaths,
                       *, max_plan_cost: float, yes: bool, book_arg: str) -> SummaryRecord:
    """The run under a live progress line (the phase, then the strategy's stages) that asks about a paid plan."""
    from booksum_app.cli.interrupt import on_quit
    from booksum_app.llm.meter import open_meters
    from booksum_app.runners.progress import RunProgress
    from booksum_app.runners.summarize import run_summary, write_failed_record

    tracker = RunProgress()
    bar = progress_bar("{task.description}", "{task.fields[count]}")
    tracker.listeners.append(_drawer(bar, tracker))

    def before_run(plan: CallPlan) -> None:  # the book is chunked, nothing is spent yet
        if plan.cost_usd <= 0 and plan.price_known:  # a free model (local, your own server): nothing to ask
            return
        err_console.print(printable(plan_line(spec.info.name, plan)), highlight=False, markup=False, soft_wrap=True)
        confirm_plan(plan.cost_usd if plan.price_known else None, max_plan_cost=max_plan_cost, yes=yes,
                     what="This summary", live=bar)

    def record_failure(exc: BaseException) -> Path | None:
        if getattr(exc, "spent", None) is None and (meters := open_meters()):  # a Ctrl-C still inside the run
            exc.spent = meters[-1]  # type: ignore[attr-defined]
        return write_failed_record(paths.record, exc, run=run, model=spec.info.name, book=book_arg)

    try:
        with bar, Heartbeat(lambda: snapshot_line(tracker.snapshot())), on_quit(record_failure):
            return run_summary(source, run, llm_settings=settings, progress=tracker, on_call=call_printer(),
                               spec=spec, before_run=before_run)
    except (BooksumError, KeyboardInterrupt) as exc:  # what it paid is recorded before the one line goes out
        exc.spent_record = record_failure(exc)  # type: ignore[union-attr]  # Ctrl-C: its meter rides on it
        raise


def _drawer(bar: Progress, tracker: RunProgress) -> Any:
    """The progress line's listener: the phase or stage, done/total, and the figures that fit the width."""
    task = bar.add_task(esc(tracker.snapshot().stage), total=None, count="", stats="")

    def draw(snap: ProgressSnapshot) -> None:
        count = f"{snap.done}/{snap.total}" if snap.total else ""
        bar.update(task, description=esc(snap.stage), completed=snap.done, total=snap.total or None,
                   count=count, stats=fitted_stats(snap, label=snap.stage, count=count))

    return draw


def _write_and_report(record: SummaryRecord, source: Book, run: RunConfig, paths: OutputPaths) -> None:
    """Write the summary and the record, then the after-run lines on stderr (the summary itself on stdout
    when there is no -o)."""
    from booksum_app.runners.quality import quality_line
    from booksum_app.runners.summarize import cut_note
    from booksum_app.runners.summarize_outputs import write_outputs

    record, quality, markdown = write_outputs(record, source, paths, per_chapter=run.per_chapter)
    if paths.summary is not None:
        err_console.print(printable(f"summary: {paths.summary}"), highlight=False, markup=False, soft_wrap=True)
    else:
        console.print(printable(markdown.rstrip("\n"), newlines=True), highlight=False, markup=False, soft_wrap=True)
    t = record.totals
    if record.truncation is not None:
        err_console.print(
            f"[yellow]warning:[/] the book ({record.truncation.book_tokens:,} tokens) exceeds the context; "
            f"kept {record.truncation.head_tokens:,} head + {record.truncation.tail_tokens:,} tail tokens, "
            f"cut {record.truncation.cut_tokens:,}", highlight=False)  # numbers only
    print_with_signature(err_console, printable(  # in a terminal the signature breaks only at "|": it copies whole
        f"record: {paths.record}  |  {t.calls} calls ({t.cache_hits} cached), "
        f"{t.input_tokens:,} in{f' ({t.cached_input_tokens:,} cached)' if t.cached_input_tokens else ''} + "
        f"{t.output_tokens:,} out tokens, {usd(t.spent_usd, digits=4)}, {t.wall_s:.1f}s  |  "),
        printable(record.signature))
    cut = cut_note(record)  # the record says it per call; the terminal must say it too
    if cut is not None:
        err_console.print(f"[yellow]warning:[/] {cut}", highlight=False, soft_wrap=True)
    for note in record.extra.get("call_notes", ()):  # replies without usage, absurd counts: estimated
        err_console.print(f"[yellow]warning:[/] {esc(note)}", highlight=False, soft_wrap=True)
    if Verbosity.level >= 2:  # -v: what the concurrency limit did, so a slow run can be explained
        for who, report in record.extra.get("limiter", {}).items():
            err_console.print(printable(f"limiter ({who}): {summary_line(report)}"), highlight=False,
                              soft_wrap=True, markup=False)
    err_console.print(quality_line(quality), highlight=False, soft_wrap=True, markup=False)
    if not record.summary.strip():  # a run that produced nothing is not a success, even if it was paid for
        raise BooksumError(
            f"the final summary is empty (the model returned nothing usable after cleaning); the raw summary "
            f"and every call are in {paths.record}; try another model or --no-clean"
        )
