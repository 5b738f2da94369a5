"""``booksum cache``: where the call cache is, how big, what it holds; clear all or old answers."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from booksum_app.cli import base
from booksum_app.cli.base import (
    console,
    emit_json,
    err_console,
    handle_errors,
    json_file,
    json_option,
)
from booksum_app.money import usd

if TYPE_CHECKING:
    from collections.abc import Sequence

    from booksum_app.llm.call_log import ModelTotal


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def _bill(totals: Sequence[ModelTotal]) -> str:
    """``N answers (cost $X when they were paid ...)``: what clearing them throws away."""
    calls = sum(t.calls for t in totals)
    priced = sum(t.cost_usd for t in totals if t.cost_usd is not None)
    unpriced = sum(t.calls for t in totals if t.cost_usd is None)
    extra = f"; {unpriced:,} of them from models with no known price" if unpriced else ""
    return f"{calls:,} stored answers ({usd(priced)} at today's list prices{extra})"

if TYPE_CHECKING:
    from booksum_app.llm.cache import CallCache


@click.command("cache")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Call cache directory [default: BOOKSUM_CACHE_DIR, else the user cache dir].")
@click.option("--clear", is_flag=True, help="Delete every stored answer (reruns will pay again); asks first.")
@click.option("--older-than", "older_than_days", type=click.FloatRange(min=0), default=None,
              help="With --clear: only answers stored more than this many days ago.")
@click.option("--yes", "-y", is_flag=True, help="With --clear: do not ask (required when not in a terminal).")
@json_option("the figures")
@click.option("--export", "export_to", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every stored answer to this file (JSON lines), e.g. a shard's, to --import elsewhere.")
@click.option("--import", "import_from", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Add the answers of a file --export wrote (repeatable); answers already stored are kept.")
@handle_errors
def cache_command(cache_dir: Path | None, clear: bool, older_than_days: float | None, yes: bool,
                  json_out: Path | None, export_to: Path | None, import_from: tuple[Path, ...]) -> None:
    """Show the call cache (path, size, answers and their cost per model), clear it, or move answers."""
    import os

    from booksum_app.errors import ConfigError
    from booksum_app.llm.cache import CallCache
    from booksum_app.llm.call_log import model_totals
    from booksum_app.llm.registry import default_cache_dir

    if older_than_days is not None and not clear:
        raise ConfigError("--older-than only applies with --clear")
    json_file(json_out)
    directory = cache_dir or default_cache_dir(os.environ)
    if clear:
        before = None if older_than_days is None else time.time() - older_than_days * 86400
        doomed = model_totals(directory, before=before)
        what = _bill(doomed) + ("" if older_than_days is None else f" older than {older_than_days:g} days")
        if doomed and not yes:
            if not base.stdin_is_terminal():  # nobody to ask: deleting paid answers needs a word
                raise ConfigError(f"--clear would delete {what}; pass --yes to delete them")
            base.ask_or_decline(f"Delete {what}? Reruns will pay for them again",
                                declined="declined: nothing was deleted")
    cache = CallCache(directory)
    try:
        _transfer(cache, export_to, import_from)
        if clear:
            removed = cache.prune(older_than_s=None if older_than_days is None else older_than_days * 86400)
            err_console.print(f"removed {removed:,} stored answers", highlight=False, markup=False)
        stats = cache.stats()
    finally:
        cache.close()
    totals = model_totals(directory)
    if stats.out_of_range:
        err_console.print(out_of_range_line(stats.out_of_range), highlight=False, markup=False, soft_wrap=True)
    if json_out is not None:
        emit_json(json_out, {
            "path": stats.path, "size_bytes": stats.size_bytes, "answers": stats.calls,
            "requests_in_flight": stats.leases, "oldest": _iso(stats.oldest), "newest": _iso(stats.newest),
            "models": [_model_dict(t) for t in totals], "out_of_range_rows": stats.out_of_range,
        })
        return

    def day(ts: float | None) -> str:
        return "–" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))

    console.print(f"{stats.path}: {stats.size_bytes / 1e6:.1f} MB, {stats.calls:,} answers "
                  f"({day(stats.oldest)} to {day(stats.newest)}), {stats.leases} requests in flight",
                  markup=False, highlight=False, soft_wrap=True)
    for t in totals:
        cost = "no known price" if t.cost_usd is None else f"{usd(t.cost_usd, digits=4)}"
        console.print(f"  {t.model}: {t.calls:,} answers, {t.input_tokens:,} input + {t.output_tokens:,} output "
                      f"tokens, {cost}", markup=False, highlight=False, soft_wrap=True)


def out_of_range_line(rows: int) -> str:
    """The warning for rows of the cache with a field out of range (another writer's)."""
    return (f"warning: {rows:,} stored rows hold a field out of range (a time, token count or latency no call "
            "can have); they are left out here and never replayed, and `booksum cache --clear` removes them "
            "(with --older-than too)")


def _model_dict(t: ModelTotal) -> dict[str, Any]:
    return {"model": t.model, "answers": t.calls, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
            "cached_input_tokens": t.cached_input_tokens,
            "cost_usd": None if t.cost_usd is None else round(t.cost_usd, 6)}


def _transfer(cache: CallCache, export_to: Path | None, import_from: tuple[Path, ...]) -> None:
    """``--import`` then ``--export`` (so one command can combine caches into one file)."""
    from booksum_app.llm.cache_export import export_answers, import_answers

    for path in import_from:
        total, added = import_answers(cache, path)
        err_console.print(f"imported {added} of {total} answers from {path} ({total - added} already stored)",
                          highlight=False, markup=False, soft_wrap=True)
    if export_to is not None:
        n, left_out = export_answers(cache, export_to)
        why = (f"; {left_out} left out: stored without the backend their key is made of (an older booksum), "
               "or naming a credential, an import would refuse them" if left_out else "")
        err_console.print(f"exported {n} answers to {export_to}{why}", highlight=False, markup=False, soft_wrap=True)
