"""``booksum inspect``: a book's sections, chunks and per-strategy plans; no LLM call."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from booksum_app.cli.base import (
    CONTEXT_WINDOW_HELP,
    FiniteFloat,
    console,
    emit_json,
    err_console,
    handle_errors,
    json_file,
    json_option,
)
from booksum_app.cli.book_input import book_from_arg
from booksum_app.config import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
)
from booksum_app.money import usd
from booksum_app.textsafe import markup_safe as esc  # outside text: no markup, no control sequences

if TYPE_CHECKING:
    from booksum_app.runners.inspect import InspectReport


@click.command("inspect")
@click.argument("book", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--model", "-m", default=None, help="Model whose tokenizer, context and prices to plan with.")
@click.option("--strategy", "strategies", multiple=True,
              help="Plan only this strategy (repeatable) [default: every installed strategy].")
@click.option("--chunk-size", type=click.IntRange(min=64), default=DEFAULT_CHUNK_SIZE, show_default=True,
              help="Tokens per chunk.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=DEFAULT_MAX_SUMMARY_TOKENS, show_default=True,
              help="G: the final summary's token budget.")
@click.option("--chapter-aware", is_flag=True, help="Never let a chunk straddle a chapter boundary.")
@click.option("--include-front-matter", is_flag=True,
              help="Keep title page, imprint, colophon, notes... (excluded by default).")
@json_option("the report")
@click.option("--base-url", default=None,
              help="Server to plan for (Ollama reports the model's context; OpenAI-compatible servers) "
                   "[default: OPENAI_BASE_URL / OLLAMA_HOST].")
@click.option("--timeout", "timeout_s", type=FiniteFloat(min=1, max=MAX_TIMEOUT_S), default=DEFAULT_TIMEOUT_S,
              show_default=True,
              help="Seconds to wait for the server's model information.")
@click.option("--context-window", type=click.IntRange(min=256), default=None, metavar="TOKENS",
              help=CONTEXT_WINDOW_HELP)
@handle_errors
def inspect_command(
    book: Path,
    model: str | None,
    strategies: tuple[str, ...],
    base_url: str | None,
    timeout_s: float,
    chunk_size: int,
    max_summary_len: int,
    chapter_aware: bool,
    include_front_matter: bool,
    json_out: Path | None,
    context_window: int | None,
) -> None:
    """Show a book's sections, tokens, chunks and what each strategy would cost; calls no LLM
    (- reads BOOK from stdin)."""
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.inspect import inspect_book

    json_file(json_out)  # a bad --json FILE fails before the book is read
    report = inspect_book(
        book_from_arg(book, include_front_matter=include_front_matter),
        model=model,
        strategies=strategies or None,
        chunk_size=chunk_size,
        max_summary_tokens=max_summary_len,
        chapter_aware=chapter_aware,
        include_front_matter=include_front_matter,
        llm_settings=LLMSettings(base_url=base_url, timeout_s=timeout_s, use_cache=False,
                                 context_window=context_window),
    )
    if json_out is not None:
        if report.model_notice:
            err_console.print(f"[yellow]note:[/] {esc(report.model_notice)}", highlight=False, soft_wrap=True)
        emit_json(json_out, report.to_dict())
        return
    _render_inspect(report)


def _render_inspect(report: InspectReport) -> None:
    from booksum_app.cli.consoles import plain_console
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted

    if report.model_notice:
        err_console.print(f"[yellow]note:[/] {esc(report.model_notice)}", highlight=False, soft_wrap=True)
    authors = ", ".join(report.authors) or "unknown author"
    console.print(f"[bold]{esc(report.title)}[/] by {esc(authors)}  "
                  f"({esc(report.format)}, language {esc(report.language)}"
                  f"{', encoding ' + esc(report.encoding) if report.encoding else ''})",
                  highlight=False)
    if report.web_residue:
        console.print(esc(f"web-page lines dropped: {report.web_residue}"), highlight=False)
    fitted = console if console.is_terminal else plain_console(width=WIDE_TABLE)
    section_columns = [Col("#", 1), Col("title", 0, "left", max_width=48, wrap=True), Col("tokens", 2),
                       Col("status", 3, "left", max_width=40, wrap=True)]
    print_fitted(fitted, "Sections", section_columns,
                 [[str(s.index), esc(s.title or "(untitled)"), f"{s.tokens:,}",
                   "kept" if s.kept else f"excluded: {esc(s.reason or '')}"] for s in report.sections],
                 where="booksum inspect --json")
    c = report.chunks
    console.print(
        esc(f"{len(report.kept_sections)} sections kept, {len(report.sections) - len(report.kept_sections)} "
        f"excluded; {c.total_tokens:,} tokens ({report.tokenizer}) in {c.count} chunks of at most "
        f"{report.chunk_size} (min {c.min_tokens}, median {c.median_tokens:g}, max {c.max_tokens})"),
        highlight=False,
    )
    plan_columns = [Col("strategy", 0, "left"), Col("calls", 2), Col("input tokens", 3), Col("output tokens", 4),
                    Col("cost", 1), Col("note", 5, "left", max_width=36, wrap=True)]
    rows = []
    for p in report.plans:
        note = f"{p.levels} levels" if p.levels else ""
        if p.truncated_tokens:
            note = f"{p.truncated_tokens:,} tokens cut (head+tail kept)"
        rows.append([esc(p.strategy), str(p.calls), f"{p.input_tokens:,}", f"{p.output_tokens:,}",
                     f"{usd(p.cost_usd)}", esc(note)])
    print_fitted(fitted, f"Plan for {esc(report.model)} (upper bounds before regenerations; "
                 f"context {report.context_window:,})", plan_columns, rows, where="booksum inspect --json")
