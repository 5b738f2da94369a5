"""``booksum inspect``: a book's sections, chunks and per-strategy plans; no LLM call."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from booksum_app.cli.base import (
    CONTEXT_WINDOW_HELP,
    console,
    emit_json,
    err_console,
    handle_errors,
    json_file,
    json_option,
    llm_settings,
)
from booksum_app.cli.book_input import book_from_arg, print_book_warnings
from booksum_app.config import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TIMEOUT_S,
    LANG_CHOICES,
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
@click.option("--prompts", default="paper", show_default=True,
              help="Prompt set to plan with: paper, simple, or a directory of templates.")
@click.option("--lang", type=click.Choice(LANG_CHOICES), default="auto", show_default=True,
              help="Language of the prompts; auto: the book's declared language, else detected from its text.")
@click.option("--set", "set_options", multiple=True, metavar="NAME=VALUE",
              help="A strategy's own option (repeatable), for the strategies that declare it.")
@json_option("the report")
@click.option("--base-url", default=None,
              help="Server to plan for (Ollama reports the model's context; OpenAI-compatible servers) "
                   "[default: OPENAI_BASE_URL / OLLAMA_HOST].")
@click.option("--timeout", "timeout_s", type=float, default=None,  # checked once, in LLMSettings
              help=f"Seconds to wait for the server's model information, at most {MAX_TIMEOUT_S:g} "
                   f"[default: {DEFAULT_TIMEOUT_S:g}].")
@click.option("--context-window", type=click.IntRange(min=256), default=None, metavar="TOKENS",
              help=CONTEXT_WINDOW_HELP)
@handle_errors
def inspect_command(
    book: Path,
    model: str | None,
    strategies: tuple[str, ...],
    base_url: str | None,
    timeout_s: float | None,
    chunk_size: int,
    max_summary_len: int,
    chapter_aware: bool,
    include_front_matter: bool,
    json_out: Path | None,
    prompts: str,
    lang: str,
    set_options: tuple[str, ...],
    context_window: int | None,
) -> None:
    """Show a book's sections, tokens, chunks and what each strategy would cost; calls no LLM
    (- reads BOOK from stdin)."""
    from booksum_app.runners.inspect import inspect_book
    from booksum_app.runners.run_config import parse_set

    json_file(json_out)  # a bad --json FILE fails before the book is read
    report = inspect_book(
        book_from_arg(book, include_front_matter=include_front_matter),
        model=model,
        strategies=strategies or None,
        chunk_size=chunk_size,
        max_summary_tokens=max_summary_len,
        chapter_aware=chapter_aware,
        include_front_matter=include_front_matter,
        prompts=prompts,
        lang=lang,
        options=parse_set(set_options),
        llm_settings=llm_settings(base_url=base_url, cache_dir=None, no_cache=True, concurrency=None,
                                  timeout_s=timeout_s, max_cost=None, context_window=context_window),
    )
    if json_out is not None:
        if report.model_notice:
            err_console.print(f"[yellow]note:[/] {esc(report.model_notice)}", highlight=False, soft_wrap=True)
        print_book_warnings(report.anomalies)
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
    if report.input_chars:
        excluded = report.input_chars - report.kept_chars
        console.print(esc(f"characters: {report.kept_chars:,} kept, {excluded:,} excluded "
                          f"({excluded / report.input_chars:.1%}) in {len(report.excluded_spans)} spans "
                          "(each listed by booksum inspect --json)"), highlight=False)
    print_book_warnings(report.anomalies)
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
    if report.settings:  # each resolved value with where it came from
        names = {"timeout_s": "timeout {:g} s", "temperature": "temperature {:g}", "context_window": "context {:,}"}
        console.print(esc("settings: " + ", ".join(
            f"{names[k].format(v['value'])} ({v['source']})" for k, v in report.settings.items() if k in names)),
            highlight=False, soft_wrap=True)
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
