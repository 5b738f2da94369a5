"""The ``booksum`` command line: parse options, build a config, call one runner, render.

Nothing else in the package prints or exits; this module turns :mod:`booksum_app.errors`
into one-line messages and exit codes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from booksum_app import __version__
from booksum_app.errors import BooksumError

F = TypeVar("F", bound=Callable[..., Any])

console = Console()
err_console = Console(stderr=True)


def _fail(message: str, exit_code: int) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(exit_code)


def handle_errors(func: F) -> F:
    """Turn booksum errors into one line on stderr and the error's exit code."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BooksumError as exc:
            _fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; completed LLM calls are cached, rerun the same command to resume", 130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="booksum")
def cli() -> None:
    """Summarize book-length texts with LLMs and score summary coherence (BooookScore)."""


# ---- inspect ---------------------------------------------------------------------------


@cli.command("inspect")
@click.argument("book", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "-m", default=None, help="Model whose tokenizer, context and prices to plan with.")
@click.option("--chunk-size", type=click.IntRange(min=64), default=2048, show_default=True,
              help="Tokens per chunk.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=900, show_default=True,
              help="G: the final summary's token budget.")
@click.option("--chapter-aware", is_flag=True, help="Never let a chunk straddle a chapter boundary.")
@click.option("--include-front-matter", is_flag=True,
              help="Keep title page, imprint, colophon, notes... (excluded by default).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@handle_errors
def inspect_command(
    book: Path,
    model: str | None,
    chunk_size: int,
    max_summary_len: int,
    chapter_aware: bool,
    include_front_matter: bool,
    as_json: bool,
) -> None:
    """Show a book's sections, tokens, chunks and what each strategy would cost; calls no LLM."""
    from booksum_app.runners.inspect import inspect_book

    report = inspect_book(
        book,
        model=model,
        chunk_size=chunk_size,
        max_summary_tokens=max_summary_len,
        chapter_aware=chapter_aware,
        include_front_matter=include_front_matter,
    )
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return
    _render_inspect(report)


def _render_inspect(report: Any) -> None:
    from rich.table import Table

    if report.model_notice:
        err_console.print(f"[yellow]note:[/] {report.model_notice}", highlight=False)
    authors = ", ".join(report.authors) or "unknown author"
    console.print(f"[bold]{report.title}[/] by {authors}  ({report.format}, language {report.language})")
    sections = Table(title="Sections", show_lines=False)
    for column in ("#", "title", "tokens", "status"):
        sections.add_column(column, justify="right" if column in ("#", "tokens") else "left")
    for s in report.sections:
        status = "[green]kept[/]" if s.kept else f"[dim]excluded: {s.reason}[/]"
        sections.add_row(str(s.index), s.title or "(untitled)", f"{s.tokens:,}", status)
    console.print(sections)
    c = report.chunks
    console.print(
        f"{len(report.kept_sections)} sections kept, {len(report.sections) - len(report.kept_sections)} "
        f"excluded; {c.total_tokens:,} tokens ({report.tokenizer}) in {c.count} chunks of at most "
        f"{report.chunk_size} (min {c.min_tokens}, median {c.median_tokens:g}, max {c.max_tokens})"
    )
    plans = Table(title=f"Plan for {report.model} (upper bounds, context {report.context_window:,})")
    for column in ("strategy", "calls", "input tokens", "output tokens", "cost", "note"):
        plans.add_column(column, justify="left" if column in ("strategy", "note") else "right")
    for p in report.plans:
        note = f"{p.levels} levels" if p.levels else ""
        if p.truncated_tokens:
            note = f"{p.truncated_tokens:,} tokens cut (head+tail kept)"
        plans.add_row(p.strategy, str(p.calls), f"{p.input_tokens:,}", f"{p.output_tokens:,}",
                      f"${p.cost_usd:.2f}", note)
    console.print(plans)


# ---- summarize -------------------------------------------------------------------------


def _summarize_strategies() -> list[str]:
    from booksum_app.strategies import STRATEGIES

    return list(STRATEGIES)


@cli.command("summarize")
@click.argument("book", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--strategy", type=click.Choice(_summarize_strategies()), default="hier", show_default=True,
              help="hier: hierarchical merging; inc: incremental updating; direct: whole book in one prompt.")
@click.option("--model", "model_name", default=None, help="Model string, e.g. openai:gpt-4o (default: configured or local).")
@click.option("--base-url", default=None, help="OpenAI-compatible server URL (e.g. a vllm serve endpoint).")
@click.option("--chunk-size", type=click.IntRange(min=64), default=2048, show_default=True, help="Tokens per chunk.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=900, show_default=True,
              help="G: token budget of the final summary.")
@click.option("--prompts", default="paper", show_default=True, help="Prompt set: paper, simple, or a directory of templates.")
@click.option("--lang", type=click.Choice(["auto", "en", "zh"]), default="auto", show_default=True)
@click.option("--direct-template", type=click.Choice(["ib", "ie"]), default="ib", show_default=True,
              help="direct: instruction before (ib) or after (ie) the book (CNNSum Prompt-IB/IE).")
@click.option("--no-clean", is_flag=True, help="Skip artifact removal (keep the raw summary).")
@click.option("--include-front-matter", is_flag=True, help="Also summarize title page, contents, colophon, ...")
@click.option("--chapter-aware", is_flag=True, help="Never let a chunk straddle two chapters.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Call cache directory.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the call cache.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Calls in flight at most.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Stop before spending more than USD.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the summary to OUT.md and the record to OUT.json (default: summary to stdout).")
@handle_errors
def summarize_command(
    book: Path, strategy: str, model_name: str | None, base_url: str | None, chunk_size: int,
    max_summary_len: int, prompts: str, lang: str, direct_template: str, no_clean: bool,
    include_front_matter: bool, chapter_aware: bool, cache_dir: Path | None, no_cache: bool,
    concurrency: int | None, max_cost: float | None, output: Path | None,
) -> None:
    """Summarize BOOK (.epub, .txt, .html, .md) and write the summary and its full record."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.progress import RunProgress
    from booksum_app.runners.summarize import default_record_path, summarize_book
    from booksum_app.strategies.record import write_record

    settings = LLMSettings(cache_dir=cache_dir, use_cache=not no_cache, concurrency=concurrency,
                           max_cost_usd=max_cost, base_url=base_url)
    tracker = RunProgress()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=err_console, transient=True)
    task = bar.add_task("starting", total=None, stats="")

    def draw(snap: Any) -> None:
        stats = (f"calls {snap.calls} ({snap.cache_hits} cached), in flight {snap.in_flight}, "
                 f"tokens {snap.input_tokens:,}+{snap.output_tokens:,}, ${snap.cost_usd:.4f}")
        bar.update(task, description=snap.stage, completed=snap.done, total=snap.total or None, stats=stats)

    tracker.listeners.append(draw)
    with bar:
        record = summarize_book(
            book, strategy=strategy, model=model_name, chunk_size=chunk_size,
            max_summary_tokens=max_summary_len, prompts=prompts, lang=lang, clean=not no_clean,
            chapter_aware=chapter_aware, include_front_matter=include_front_matter,
            direct_template=direct_template, llm_settings=settings, progress=tracker,
        )
    record_path = write_record(record, default_record_path(str(book), record.strategy, output))
    if output is not None:
        summary_path = output if output.suffix == ".md" else output.with_suffix(".md")
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(record.summary + "\n", encoding="utf-8")
        err_console.print(f"summary: {summary_path}", highlight=False)
    else:
        console.print(record.summary, highlight=False, markup=False, soft_wrap=True)
    t = record.totals
    if record.truncation is not None:
        err_console.print(
            f"[yellow]warning:[/] the book ({record.truncation.book_tokens:,} tokens) exceeds the context; "
            f"kept {record.truncation.head_tokens:,} head + {record.truncation.tail_tokens:,} tail tokens, "
            f"cut {record.truncation.cut_tokens:,}", highlight=False)
    err_console.print(
        f"record: {record_path}  |  {t.calls} calls ({t.cache_hits} cached), "
        f"{t.input_tokens:,} in + {t.output_tokens:,} out tokens, ${t.cost_usd:.4f}, {t.wall_s:.1f}s  |  "
        f"{record.signature}", highlight=False, soft_wrap=True)


# ---- score -----------------------------------------------------------------------------


def _score_modes() -> list[str]:
    from booksum_app.scoring.booookscore import JUDGE_MODES

    return list(JUDGE_MODES)


@cli.command("score")
@click.argument("summaries", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--judge", "judge_name", default=None, help="Judge model string, e.g. openai:gpt-4o (default: configured or local).")
@click.option("--base-url", default=None, help="OpenAI-compatible server URL for the judge.")
@click.option("--mode", type=click.Choice(_score_modes()), default="sentence", show_default=True,
              help="sentence: one judge call per sentence (the paper); batched: several numbered sentences per call.")
@click.option("--batch-size", type=click.IntRange(min=1), default=10, show_default=True, help="Sentences per call in batched mode.")
@click.option("--annotations", "annotations", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Score from existing annotations (release format), no LLM call; one per SUMMARIES, in order.")
@click.option("--no-judge", is_flag=True, help="Skip BooookScore; n-gram statistics (and ROUGE-L) only.")
@click.option("--source", type=click.Path(path_type=Path), default=None,
              help="Directory of source books (or one book) matched by file-name stem: enables % novel 3-grams.")
@click.option("--references", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="{book: reference summary} JSON: enables ROUGE-L.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write a standalone HTML report.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write all scores as JSON.")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write one CSV row per system.")
@click.option("--annotations-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the judge's annotations in the release format.")
@click.option("--seed", type=int, default=None, help="Bootstrap seed of the 95% CI (default: fixed, printed in the JSON).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Call cache directory.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the call cache.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Judge calls in flight at most.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Stop before spending more than USD.")
@handle_errors
def score_command(
    summaries: tuple[Path, ...], judge_name: str | None, base_url: str | None, mode: str, batch_size: int,
    annotations: tuple[Path, ...], no_judge: bool, source: Path | None, references: Path | None,
    report: Path | None, json_out: Path | None, csv_out: Path | None, annotations_out: Path | None,
    seed: int | None, cache_dir: Path | None, no_cache: bool, concurrency: int | None, max_cost: float | None,
) -> None:
    """Score SUMMARIES (release JSON, summary records, a directory, or text files): BooookScore and n-gram statistics."""
    from rich.table import Table

    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.score import ScoreSettings, run_score, write_outputs
    from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED
    from booksum_app.scoring.judgement import ERROR_TYPES

    llm = LLMSettings(cache_dir=cache_dir, use_cache=not no_cache, concurrency=concurrency,
                      max_cost_usd=max_cost, base_url=base_url)
    settings = ScoreSettings(judge=judge_name, use_judge=not no_judge, mode=mode, batch_size=batch_size,  # type: ignore[arg-type]
                             annotations=annotations, source=source, references=references, llm=llm,
                             seed=DEFAULT_BOOTSTRAP_SEED if seed is None else seed)
    calls = {"n": 0, "hits": 0}

    with err_console.status("scoring", spinner="dots") as status:
        stage = {"text": "scoring"}

        def on_stage(text: str) -> None:
            stage["text"] = text
            status.update(text)

        def on_call(record: Any) -> None:
            calls["n"] += 1
            calls["hits"] += int(record.cache_hit)
            status.update(f"{stage['text']} · {calls['n']} calls ({calls['hits']} cached)")

        run = run_score(list(summaries), settings, on_call=on_call, on_stage=on_stage)
    if run.judge_notice:
        err_console.print(f"[yellow]note:[/] {run.judge_notice}", highlight=False, soft_wrap=True)
    for note in run.notes:
        err_console.print(f"[yellow]warning:[/] {note}", highlight=False, soft_wrap=True)

    any_source = any(s.ngrams.n_with_source for s in run.systems)
    any_rouge = any(s.rouge_l for s in run.systems)
    any_calls = any(s.totals.calls for s in run.systems)
    table = Table(title="booksum scores", title_justify="left")
    for column in ("System", "BooookScore (95% CI)", "n", "Unparseable", "Avg. length", "% rep. 3-grams"):
        table.add_column(column, justify="left" if column == "System" else "right")
    if any_source:
        table.add_column("% novel 3-grams", justify="right")
    if any_rouge:
        table.add_column("ROUGE-L F / R", justify="right")
    if any_calls:
        table.add_column("Calls (cached) / cost", justify="right")

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    for s in run.systems:
        b = s.booookscore.system if s.booookscore else None
        score = "–"
        if b is not None and b.score is not None:
            score = f"{100 * b.score:.1f} ({100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f})"
        row = [s.name, score, str(len(s.rows)), str(b.n_unparseable) if b else "–",
               f1(s.ngrams.avg_tokens), f1(s.ngrams.repeated_pct)]
        if any_source:
            row.append(f1(s.ngrams.novel_pct))
        if any_rouge:
            row.append(f"{100 * s.rouge_l.fmeasure:.1f} / {100 * s.rouge_l.recall:.1f}" if s.rouge_l else "–")
        if any_calls:
            row.append(f"{s.totals.calls} ({s.totals.cache_hits}) / ${s.totals.cost_usd:.4f}")
        table.add_row(*row)
    console.print(table)
    scored = [s for s in run.systems if s.booookscore]
    if scored:
        types = Table(title="Error types (sentences, % of labels)", title_justify="left")
        types.add_column("Type")
        for s in scored:
            types.add_column(s.name, justify="right")
        for kind in ERROR_TYPES:
            cells = []
            for s in scored:
                b = s.booookscore.system  # type: ignore[union-attr]
                cells.append(f"{dict(b.type_counts).get(kind, 0)} ({100 * b.type_distribution.get(kind, 0.0):.1f}%)")
            types.add_row(kind, *cells)
        console.print(types)
    for s in run.systems:
        if s.booookscore:
            console.print(f"{s.name}: {s.booookscore.signature}", highlight=False, soft_wrap=True)
        console.print(f"{s.name}: {s.ngrams.signature}", highlight=False, soft_wrap=True)
        if s.rouge_signature:
            console.print(f"{s.name}: {s.rouge_signature}", highlight=False, soft_wrap=True)
    for path in write_outputs(run, json_path=json_out, csv_path=csv_out, annotations_path=annotations_out,
                              report_path=report):
        err_console.print(f"wrote {path}", highlight=False)


# ---- compare ---------------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    cli()
