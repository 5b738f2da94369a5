"""The ``booksum`` command line: parse options, build a config, call one runner, render.

Nothing else in the package prints or exits; this module turns :mod:`booksum_app.errors`
into one-line messages and exit codes.
"""

from __future__ import annotations

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

# ---- compare ---------------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    cli()
