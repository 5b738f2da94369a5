"""The ``booksum`` command line: parse options, build a config, call one runner, render.

Nothing else in the package prints or exits; this module turns :mod:`booksum_app.errors`
into one-line messages and exit codes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, Self, TypeVar

import click
from rich.console import Console
from rich.markup import escape as esc  # everything from outside is data, never markup

from booksum_app import __version__
from booksum_app.config import DEFAULT_TIMEOUT_S, HEARTBEAT_S
from booksum_app.errors import BooksumError

F = TypeVar("F", bound=Callable[..., Any])

console = Console()
err_console = Console(stderr=True)


def _fail(message: str, exit_code: int) -> None:
    err_console.print(f"[bold red]error:[/] {esc(message)}", highlight=False, soft_wrap=True)
    sys.exit(exit_code)


class Heartbeat:
    """A progress line on stderr at least every ``BOOKSUM_HEARTBEAT_S`` (30 s) when stderr is not a terminal.

    Logs, CI and ``nohup`` see no live progress bar; without this a hung server would be an
    hour of silence. On a terminal the progress bar already says everything.
    """

    def __init__(self, line: Callable[[], str]) -> None:
        self._line = line
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if not err_console.is_terminal:
            self._thread = threading.Thread(target=self._run, name="booksum-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        interval_s = float(os.environ.get("BOOKSUM_HEARTBEAT_S") or HEARTBEAT_S)
        start = time.monotonic()
        while not self._stop.wait(interval_s):
            line = f"booksum [{time.monotonic() - start:.0f}s] {self._line()}"
            err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def _snapshot_line(snap: Any) -> str:
    done = f" {snap.done}/{snap.total}" if getattr(snap, "total", 0) else ""
    stage = getattr(snap, "stage", None) or "summaries"
    return (f"{stage}{done}: calls {snap.calls} ({snap.cache_hits} cached), in flight {snap.in_flight}, "
            f"tokens {snap.input_tokens:,}+{snap.output_tokens:,}, ${snap.cost_usd:.4f}")


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
        except OSError as exc:  # a full disk or a vanished directory met outside the checked paths
            where = f" {exc.filename}" if exc.filename else ""
            _fail(f"cannot read or write{where}: {exc.strerror or exc}; completed LLM calls are cached", 1)
        except sqlite3.Error as exc:  # the call cache's disk is full or its file is unusable
            _fail(f"call cache: {exc}; free space or pass --cache-dir elsewhere (or --no-cache)", 1)

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
        err_console.print(f"[yellow]note:[/] {esc(report.model_notice)}", highlight=False)
    authors = ", ".join(report.authors) or "unknown author"
    console.print(f"[bold]{esc(report.title)}[/] by {esc(authors)}  ({esc(report.format)}, language {esc(report.language)})",
                  highlight=False)
    sections = Table(title="Sections", show_lines=False)
    for column in ("#", "title", "tokens", "status"):
        sections.add_column(column, justify="right" if column in ("#", "tokens") else "left")
    for s in report.sections:
        status = "[green]kept[/]" if s.kept else f"[dim]excluded: {esc(s.reason or '')}[/]"
        sections.add_row(str(s.index), esc(s.title or "(untitled)"), f"{s.tokens:,}", status)
    console.print(sections)
    c = report.chunks
    console.print(
        esc(f"{len(report.kept_sections)} sections kept, {len(report.sections) - len(report.kept_sections)} "
        f"excluded; {c.total_tokens:,} tokens ({report.tokenizer}) in {c.count} chunks of at most "
        f"{report.chunk_size} (min {c.min_tokens}, median {c.median_tokens:g}, max {c.max_tokens})"),
        highlight=False,
    )
    plans = Table(
        title=f"Plan for {esc(report.model)} (upper bounds before regenerations; "
        f"context {report.context_window:,})"
    )
    for column in ("strategy", "calls", "input tokens", "output tokens", "cost", "note"):
        plans.add_column(column, justify="left" if column in ("strategy", "note") else "right")
    for p in report.plans:
        note = f"{p.levels} levels" if p.levels else ""
        if p.truncated_tokens:
            note = f"{p.truncated_tokens:,} tokens cut (head+tail kept)"
        plans.add_row(esc(p.strategy), str(p.calls), f"{p.input_tokens:,}", f"{p.output_tokens:,}",
                      f"${p.cost_usd:.2f}", esc(note))
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
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Seconds to wait for one answer from a server before retrying it.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Stop before spending more than USD.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the summary to OUT.md and the record to OUT.json (default: summary to stdout).")
@handle_errors
def summarize_command(
    book: Path, strategy: str, model_name: str | None, base_url: str | None, chunk_size: int,
    max_summary_len: int, prompts: str, lang: str, direct_template: str, no_clean: bool,
    include_front_matter: bool, chapter_aware: bool, cache_dir: Path | None, no_cache: bool,
    concurrency: int | None, timeout_s: float, max_cost: float | None, output: Path | None,
) -> None:
    """Summarize BOOK (.epub, .txt, .html, .md) and write the summary and its full record."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from booksum_app.files import atomic_write_texts, check_writable, json_text
    from booksum_app.llm.registry import LLMSettings, choose_model
    from booksum_app.runners.progress import RunProgress
    from booksum_app.runners.summarize import default_record_path, summarize_book

    # where the outputs go is checked before the first paid call, not after the last one
    record_path = check_writable(default_record_path(str(book), strategy, output))
    summary_path = None
    if output is not None:
        summary_path = check_writable(output if output.suffix == ".md" else output.with_suffix(".md"))
    settings = LLMSettings(cache_dir=cache_dir, use_cache=not no_cache, concurrency=concurrency,
                           max_cost_usd=max_cost, base_url=base_url, timeout_s=timeout_s)
    notice = choose_model(model_name, settings=settings).notice
    if notice:
        err_console.print(f"[yellow]note:[/] {esc(notice)}", highlight=False, soft_wrap=True)
    tracker = RunProgress()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                   TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=err_console, transient=True)
    task = bar.add_task("starting", total=None, count="", stats="")

    def draw(snap: Any) -> None:
        stats = (f"calls {snap.calls} ({snap.cache_hits} cached), in flight {snap.in_flight}, "
                 f"tokens {snap.input_tokens:,}+{snap.output_tokens:,}, ${snap.cost_usd:.4f}")
        count = f"{snap.done}/{snap.total}" if snap.total else ""
        bar.update(task, description=esc(snap.stage), completed=snap.done, total=snap.total or None,
                   count=count, stats=stats)

    tracker.listeners.append(draw)
    with bar, Heartbeat(lambda: _snapshot_line(tracker.snapshot())):
        record = summarize_book(
            book, strategy=strategy, model=model_name, chunk_size=chunk_size,
            max_summary_tokens=max_summary_len, prompts=prompts, lang=lang, clean=not no_clean,
            chapter_aware=chapter_aware, include_front_matter=include_front_matter,
            direct_template=direct_template, llm_settings=settings, progress=tracker,
        )
    outputs = {record_path: json_text(record.to_dict())}
    if summary_path is not None:
        outputs = {summary_path: record.summary + "\n", **outputs}
    atomic_write_texts(outputs)  # the .md and the .json of one run appear together or not at all
    if summary_path is not None:
        err_console.print(f"summary: {summary_path}", highlight=False, markup=False, soft_wrap=True)
    else:
        console.print(record.summary, highlight=False, markup=False, soft_wrap=True)
    t = record.totals
    if record.truncation is not None:
        err_console.print(
            f"[yellow]warning:[/] the book ({record.truncation.book_tokens:,} tokens) exceeds the context; "
            f"kept {record.truncation.head_tokens:,} head + {record.truncation.tail_tokens:,} tail tokens, "
            f"cut {record.truncation.cut_tokens:,}", highlight=False)  # numbers only
    err_console.print(
        f"record: {record_path}  |  {t.calls} calls ({t.cache_hits} cached), "
        f"{t.input_tokens:,} in + {t.output_tokens:,} out tokens, ${t.cost_usd:.4f}, {t.wall_s:.1f}s  |  "
        f"{record.signature}", highlight=False, soft_wrap=True, markup=False)


# ---- score -----------------------------------------------------------------------------


def _score_modes() -> list[str]:
    from booksum_app.scoring.booookscore import JUDGE_MODES

    return list(JUDGE_MODES)


@cli.command("score")
@click.argument("summaries", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--judge", "judge_name", default=None, help="Judge model string, e.g. openai:gpt-4o (default: config judge_model, then BOOKSUM_JUDGE; none: no BooookScore).")
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
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Seconds to wait for one answer from a server before retrying it.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Stop before spending more than USD.")
@handle_errors
def score_command(
    summaries: tuple[Path, ...], judge_name: str | None, base_url: str | None, mode: str, batch_size: int,
    annotations: tuple[Path, ...], no_judge: bool, source: Path | None, references: Path | None,
    report: Path | None, json_out: Path | None, csv_out: Path | None, annotations_out: Path | None,
    seed: int | None, cache_dir: Path | None, no_cache: bool, concurrency: int | None, timeout_s: float,
    max_cost: float | None,
) -> None:
    """Score SUMMARIES (release JSON, summary records, a directory, or text files): BooookScore and n-gram statistics."""
    from rich.table import Table

    from booksum_app.files import check_writable
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.score import ScoreSettings, run_score, write_outputs
    from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED
    from booksum_app.scoring.judgement import ERROR_TYPES

    for path in (report, json_out, csv_out, annotations_out):
        if path is not None:
            check_writable(path)  # before the judge is paid
    llm = LLMSettings(cache_dir=cache_dir, use_cache=not no_cache, concurrency=concurrency,
                      max_cost_usd=max_cost, base_url=base_url, timeout_s=timeout_s)
    settings = ScoreSettings(judge=judge_name, use_judge=not no_judge, mode=mode, batch_size=batch_size,  # type: ignore[arg-type]
                             annotations=annotations, source=source, references=references, llm=llm,
                             seed=DEFAULT_BOOTSTRAP_SEED if seed is None else seed)
    calls = {"n": 0, "hits": 0}

    stage = {"text": "scoring"}
    beat = Heartbeat(lambda: f"{stage['text']}: {calls['n']} calls ({calls['hits']} cached)")
    with err_console.status("scoring", spinner="dots") as status, beat:

        def on_stage(text: str) -> None:
            stage["text"] = text
            status.update(esc(text))

        def on_call(record: Any) -> None:
            calls["n"] += 1
            calls["hits"] += int(record.cache_hit)
            status.update(esc(f"{stage['text']} · {calls['n']} calls ({calls['hits']} cached)"))

        run = run_score(list(summaries), settings, on_call=on_call, on_stage=on_stage)
    if run.judge_notice:
        err_console.print(f"[yellow]note:[/] {esc(run.judge_notice)}", highlight=False, soft_wrap=True)
    for note in run.notes:
        err_console.print(f"[yellow]warning:[/] {esc(note)}", highlight=False, soft_wrap=True)

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    def booookscore(s: Any) -> Any:
        return s.booookscore.system if s.booookscore else None

    def score_cell(s: Any) -> str:
        b = booookscore(s)
        return "–" if b is None or b.score is None else f"{100 * b.score:.1f}"

    def ci_cell(s: Any) -> str:
        b = booookscore(s)
        if b is None or b.score is None:
            return "–"
        return f"{100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f}"

    def rouge_cell(s: Any) -> str:
        r = s.rouge_l
        return "–" if r is None else f"{100 * r.fmeasure:.1f} / {100 * r.recall:.1f}"

    judged = any(s.booookscore for s in run.systems)
    any_calls = any(s.totals.calls for s in run.systems)
    # unparseable judge answers exist only when we ran the judge (annotation files have none)
    any_unparsed = any_calls or any(b and b.n_unparseable for b in map(booookscore, run.systems))
    # (header, cell, shown): only the columns this run has, so a row fits 80 columns
    columns: list[tuple[str, Callable[[Any], str], bool]] = [
        ("BooookScore", score_cell, judged),
        ("95% CI", ci_cell, judged),
        ("n", lambda s: str(len(s.rows)), True),
        ("Unparsed", lambda s: str(booookscore(s).n_unparseable) if s.booookscore else "–", any_unparsed),
        ("Avg len", lambda s: f1(s.ngrams.avg_tokens), True),
        ("% rep 3g", lambda s: f1(s.ngrams.repeated_pct), True),
        ("% novel 3g", lambda s: f1(s.ngrams.novel_pct), any(s.ngrams.n_with_source for s in run.systems)),
        ("ROUGE-L F/R", rouge_cell, any(s.rouge_l for s in run.systems)),
        ("Calls (cached) / cost",
         lambda s: f"{s.totals.calls} ({s.totals.cache_hits}) / ${s.totals.cost_usd:.4f}", any_calls),
    ]
    shown = [(header, cell) for header, cell, show in columns if show]
    table = Table(title="booksum scores", title_justify="left")
    table.add_column("System", justify="left", no_wrap=True)
    for header, _ in shown:
        table.add_column(header, justify="right", overflow="fold")
    for s in run.systems:
        table.add_row(esc(s.name), *(esc(cell(s)) for _, cell in shown))
    console.print(table)
    scored = [s for s in run.systems if s.booookscore]
    if scored:
        types = Table(title="Error types (sentences, % of labels)", title_justify="left")
        types.add_column("Type")
        for s in scored:
            types.add_column(esc(s.name), justify="right")
        for kind in ERROR_TYPES:
            cells = []
            for s in scored:
                b = s.booookscore.system  # type: ignore[union-attr]
                cells.append(f"{dict(b.type_counts).get(kind, 0)} ({100 * b.type_distribution.get(kind, 0.0):.1f}%)")
            types.add_row(kind, *cells)
        console.print(types)
    for s in run.systems:
        if s.booookscore:
            console.print(f"{s.name}: {s.booookscore.signature}", highlight=False, soft_wrap=True, markup=False)
        console.print(f"{s.name}: {s.ngrams.signature}", highlight=False, soft_wrap=True, markup=False)
        if s.rouge_signature:
            console.print(f"{s.name}: {s.rouge_signature}", highlight=False, soft_wrap=True, markup=False)
    for path in write_outputs(run, json_path=json_out, csv_path=csv_out, annotations_path=annotations_out,
                              report_path=report):
        err_console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)


# ---- compare ---------------------------------------------------------------------------


def _csv_list(value: str | None, option: str = "--models") -> tuple[str, ...] | None:
    from booksum_app.errors import ConfigError

    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if not items:  # an empty list given on purpose must not silently mean "the default"
        raise ConfigError(f"{option} {value!r} names nothing; give a comma-separated list or leave it out")
    return items


def _csv_ints(value: str | None) -> tuple[int, ...] | None:
    from booksum_app.errors import ConfigError

    items = _csv_list(value, "--chunk-sizes")
    try:
        return None if items is None else tuple(int(v) for v in items)
    except ValueError as exc:
        raise ConfigError(f"--chunk-sizes {value!r}: give integers separated by commas, e.g. 2048,4096") from exc


@cli.command("compare")
@click.argument("books", nargs=-1, type=click.Path(path_type=Path))
@click.option("--experiment", "-e", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Experiment file (TOML); options given here override its values.")
@click.option("--strategies", default=None, help="Comma-separated, e.g. hier,inc,direct [default: hier,inc].")
@click.option("--models", default=None, help="Comma-separated model strings [default: configured or local].")
@click.option("--chunk-sizes", default=None, help="Comma-separated tokens per chunk, e.g. 2048,4096 [default: 2048].")
@click.option("--judge", default=None, help="BooookScore judge model [default: config judge_model, BOOKSUM_JUDGE, else the first named model].")
@click.option("--no-judge", is_flag=True, default=None, help="Skip BooookScore; n-gram statistics only.")
@click.option("--judge-mode", type=click.Choice(["sentence", "batched"]), default=None,
              help="sentence: one judge call per sentence (the paper) [default]; batched: several per call.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Sentences per judge call in batched mode.")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory [default: booksum-compare]; rerun with the same one to resume.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=None, help="G [default: 900].")
@click.option("--prompts", default=None, help="Prompt set: paper, simple, or a directory [default: paper].")
@click.option("--lang", type=click.Choice(["auto", "en", "zh"]), default=None)
@click.option("--direct-template", type=click.Choice(["ib", "ie"]), default=None)
@click.option("--no-clean", is_flag=True, default=None, help="Skip artifact removal.")
@click.option("--chapter-aware", is_flag=True, default=None, help="Never let a chunk straddle two chapters.")
@click.option("--include-front-matter", is_flag=True, default=None, help="Also summarize front/back matter.")
@click.option("--precomputed", multiple=True, metavar="NAME=SUMMARIES.json[:ANNOTATIONS.json]",
              help="A summary set made elsewhere to add to the table (repeatable).")
@click.option("--with-release", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Add the four BooookScore release configurations (with annotations) from this directory.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Books summarized at once [default: 4].")
@click.option("--base-url", default=None, help="OpenAI-compatible server URL.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Call cache directory.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Calls in flight at most, per model.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Seconds to wait for one answer from a server before retrying it.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None, help="Stop before spending more than USD per model.")
@click.option("--max-plan-cost", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Ask before running a plan whose upper-bound cost is above this (USD).")
@click.option("--yes", "-y", is_flag=True, help="Run without asking, whatever the plan costs.")
@click.option("--plan-only", is_flag=True, help="Print the pre-flight plan and stop.")
@click.option("--no-plots", is_flag=True, help="Do not write the plots (no matplotlib needed).")
@handle_errors
def compare_command(
    books: tuple[Path, ...], experiment: Path | None, strategies: str | None, models: str | None,
    chunk_sizes: str | None, judge: str | None, no_judge: bool | None, judge_mode: str | None,
    batch_size: int | None, out: Path | None, max_summary_len: int | None, prompts: str | None,
    lang: str | None, direct_template: str | None, no_clean: bool | None, chapter_aware: bool | None,
    include_front_matter: bool | None, precomputed: tuple[str, ...], with_release: Path | None,
    jobs: int | None, base_url: str | None, cache_dir: Path | None, concurrency: int | None,
    timeout_s: float, max_cost: float | None, max_plan_cost: float, yes: bool, plan_only: bool, no_plots: bool,
) -> None:
    """Run a grid (strategies x models x chunk sizes) over BOOKS, score every summary, print a Table-2-style table."""
    from booksum_app.errors import ConfigError
    from booksum_app.files import check_writable_dir
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.compare import run_compare
    from booksum_app.runners.compare_plan import check_plan, plan_grid
    from booksum_app.runners.experiment import (
        build_experiment,
        load_experiment,
        parse_precomputed,
        release_sets,
    )

    file_values = load_experiment(experiment) if experiment else {}
    extra_sets = tuple(parse_precomputed(p) for p in precomputed)
    if with_release is not None:
        extra_sets += release_sets(with_release)
    exp = build_experiment(file_values, {
        "books": books or None, "strategies": _csv_list(strategies, "--strategies"),
        "models": _csv_list(models, "--models"), "chunk_sizes": _csv_ints(chunk_sizes), "judge": judge,
        "use_judge": False if no_judge else None, "judge_mode": judge_mode, "batch_size": batch_size,
        "out": out, "max_summary_tokens": max_summary_len, "prompts": prompts, "lang": lang,
        "direct_template": direct_template, "clean": False if no_clean else None,
        "chapter_aware": True if chapter_aware else None,
        "include_front_matter": True if include_front_matter else None,
        "precomputed": extra_sets, "jobs": jobs,
    })
    if not exp.books and not exp.precomputed:
        raise ConfigError("nothing to compare: give BOOKS (files or directories), --experiment, or --precomputed")
    settings = LLMSettings(cache_dir=cache_dir, concurrency=concurrency, max_cost_usd=max_cost, base_url=base_url,
                           timeout_s=timeout_s)
    if not plan_only:
        check_writable_dir(exp.out)  # before the first paid call
    plan = plan_grid(exp, settings)
    _render_plan(plan)
    if plan_only:
        return
    if not check_plan(plan, max_cost_usd=max_plan_cost, confirmed=yes, interactive=sys.stdin.isatty()):
        click.confirm(f"The plan could cost up to ${plan.cost_usd:.2f}. Run it?", abort=True, err=True)
    result = _run_compare_with_progress(exp, settings, run_compare, plots=not no_plots)
    _render_compare(result)


def _render_plan(plan: Any) -> None:
    from rich.table import Table

    table = Table(title="Pre-flight plan (upper bounds; finished records excluded)", title_justify="left")
    for column in ("configuration", "summaries to run", "calls", "input tokens", "output tokens", "cost"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for line in plan.lines:
        name = f"judge ({plan.judge})" if line.name == "judge" else line.name
        table.add_row(esc(name), f"{line.remaining}", f"{line.calls:,}", f"{line.input_tokens:,}",
                      f"{line.output_tokens:,}", f"${line.cost_usd:.2f}")
    table.add_row("[bold]total[/]", "", f"{plan.calls:,}", f"{plan.input_tokens:,}", f"{plan.output_tokens:,}",
                  f"[bold]${plan.cost_usd:.2f}[/]")
    (err_console if err_console.is_terminal else Console(stderr=True, width=160)).print(table)


def _run_compare_with_progress(exp: Any, settings: Any, run: Any, *, plots: bool) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from booksum_app.runners.compare import GridProgress

    tracker = GridProgress()
    bar = Progress(TextColumn("summaries"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), TextColumn("{task.description}"),
                   console=err_console, transient=True)
    task = bar.add_task("", total=None, stats="")

    def draw(snap: Any) -> None:
        stats = (f"calls {snap.calls} ({snap.cache_hits} cached), in flight {snap.in_flight}, "
                 f"tokens {snap.input_tokens:,}+{snap.output_tokens:,}, ${snap.cost_usd:.4f}")
        running = "; ".join(snap.running[:2]) + (f" (+{len(snap.running) - 2})" if len(snap.running) > 2 else "")
        bar.update(task, description=esc(running), completed=snap.done, total=snap.total or None, stats=stats)

    tracker.listeners.append(draw)
    with bar, Heartbeat(lambda: _snapshot_line(tracker.snapshot())):
        return run(exp, settings, progress=tracker, plots=plots)


def _render_compare(result: Any) -> None:
    from rich.table import Table

    if result.judge_notice:
        err_console.print(f"[yellow]note:[/] {esc(result.judge_notice)}", highlight=False, soft_wrap=True)
    table = Table(title="BooookScore comparison (Table 2 shape)", title_justify="left")
    columns = ("Model", "Strategy", "Chunk", "Books", "BooookScore (95% CI)", "Avg. len", "% novel 3-g",
               "% rep. 3-g", "Calls (cached)", "In tok", "Out tok", "Cost", "Judge $", "Wall s")
    for column in columns:
        table.add_column(column, justify="left" if column in ("Model", "Strategy") else "right")

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    for row in result.rows:
        b = row.booookscore
        score = "–"
        if b is not None and b.score is not None:
            score = f"{100 * b.score:.1f} ({100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f})"
        usage, judge = row.usage, row.judge_usage
        cost_cells = [f"{usage.calls} ({usage.cache_hits})", f"{usage.input_tokens:,}", f"{usage.output_tokens:,}",
                      f"${usage.cost_usd:.4f}", f"${judge.cost_usd:.4f}", f"{row.wall_s:.1f}"] \
            if row.kind == "run" else (["–"] * 4 + ([f"${judge.cost_usd:.4f}"] if judge.calls else ["–"]) + ["–"])
        strategy = row.strategy or "–"
        name = row.model if row.kind == "run" else f"{row.model} (released)" if row.strategy else row.name
        table.add_row(esc(name), esc(strategy), str(row.chunk_size or "–"), str(len(row.books)), score, f1(row.ngrams.avg_tokens),
                      f1(row.ngrams.novel_pct), f1(row.ngrams.repeated_pct), *cost_cells)
    (console if console.is_terminal else Console(width=200)).print(table)
    signatures = dict.fromkeys(r.booookscore_signature for r in result.rows if r.booookscore_signature)
    for signature in signatures:
        console.print(f"BooookScore: {signature}", highlight=False, soft_wrap=True, markup=False)
    if result.rows:
        console.print(f"n-grams: {result.rows[0].ngrams.signature}", highlight=False, soft_wrap=True, markup=False)
    for row in result.rows:
        for signature in row.summary_signatures:
            console.print(f"{row.name}: {signature}", highlight=False, soft_wrap=True, markup=False)
    err_console.print(
        f"{sum(len(r.books) for r in result.rows if r.kind == 'run')} summaries ({result.reused} from finished "
        f"records) in {result.wall_s:.1f}s; results in {result.out}/ (results.json, results.csv, records/, "
        f"summaries/, annotations/, plots/)", highlight=False, soft_wrap=True, markup=False)


def main() -> None:
    """Console-script entry point."""
    cli()
