"""``booksum cache``: where the call cache is, how big, what it holds; clear all or old answers."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from booksum_app.cli.base import console, err_console, handle_errors

if TYPE_CHECKING:
    from booksum_app.llm.cache import CallCache


@click.command("cache")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Call cache directory [default: BOOKSUM_CACHE_DIR, else the user cache dir].")
@click.option("--clear", is_flag=True, help="Delete every stored answer (reruns will pay again).")
@click.option("--older-than", "older_than_days", type=click.FloatRange(min=0), default=None,
              help="With --clear: only answers stored more than this many days ago.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--export", "export_to", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every stored answer to this file (JSON lines), e.g. a shard's, to --import elsewhere.")
@click.option("--import", "import_from", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Add the answers of a file --export wrote (repeatable); answers already stored are kept.")
@handle_errors
def cache_command(cache_dir: Path | None, clear: bool, older_than_days: float | None, as_json: bool,
                  export_to: Path | None, import_from: tuple[Path, ...]) -> None:
    """Show the call cache (path, size, answers per model), or clear it."""
    import os

    from booksum_app.errors import ConfigError
    from booksum_app.llm.cache import CallCache
    from booksum_app.llm.registry import default_cache_dir

    if older_than_days is not None and not clear:
        raise ConfigError("--older-than only applies with --clear")
    cache = CallCache(cache_dir or default_cache_dir(os.environ))
    try:
        _transfer(cache, export_to, import_from)
        if clear:
            removed = cache.prune(older_than_s=None if older_than_days is None else older_than_days * 86400)
            err_console.print(f"removed {removed} stored answers", highlight=False, markup=False)
        stats = cache.stats()
    finally:
        cache.close()
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(stats), indent=1))
        return

    def day(ts: float | None) -> str:
        return "–" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))

    console.print(f"{stats.path}: {stats.size_bytes / 1e6:.1f} MB, {stats.calls:,} answers "
                  f"({day(stats.oldest)} to {day(stats.newest)}), {stats.leases} requests in flight",
                  markup=False, highlight=False, soft_wrap=True)
    for model, calls, inp, out in stats.by_model:
        console.print(f"  {model}: {calls:,} answers, {inp:,} input + {out:,} output tokens",
                      markup=False, highlight=False, soft_wrap=True)


def _transfer(cache: CallCache, export_to: Path | None, import_from: tuple[Path, ...]) -> None:
    """``--import`` then ``--export`` (so one command can combine caches into one file)."""
    from booksum_app.llm.cache_export import export_answers, import_answers

    for path in import_from:
        total, added = import_answers(cache, path)
        err_console.print(f"imported {added} of {total} answers from {path} ({total - added} already stored)",
                          highlight=False, markup=False, soft_wrap=True)
    if export_to is not None:
        n = export_answers(cache, export_to)
        err_console.print(f"exported {n} answers to {export_to}", highlight=False, markup=False, soft_wrap=True)
