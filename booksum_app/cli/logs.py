"""``booksum logs``: browse past model calls from the call cache (as simonw/llm's ``llm logs``).

Everything printed came from outside (prompts, answers, book names, model strings): it goes
through ``errors.redact`` (no key-looking string is ever shown) and is printed as data, never
as markup.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from booksum_app.cli.base import console, err_console, handle_errors
from booksum_app.cli.consoles import plain_console
from booksum_app.money import usd
from booksum_app.textsafe import markup_safe as esc  # outside text: no markup, no control sequences
from booksum_app.textsafe import printable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from booksum_app.llm.call_log import LoggedCall

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, *, now: float | None = None) -> float:
    """Unix time from ``30m``, ``2h``, ``3d``, ``1w`` (ago) or an ISO date/time (local unless it has an offset).

    Raises:
        ConfigError: neither form.
    """
    from booksum_app.errors import ConfigError

    now = time.time() if now is None else now
    match = _AGO.match(text)
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ConfigError(
            f"--since {text!r}: give an age (30m, 2h, 3d, 1w) or an ISO date (2025-06-01 or 2025-06-01T14:00)"
        ) from None


def _clean(value: Any) -> Any:
    """``value`` with every string redacted (JSON-ready)."""
    from booksum_app.errors import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _cost(value: float | None) -> str:
    if value is None:
        return ""
    return "$0" if value == 0 else usd(value, digits=4)


def _as_dict(call: LoggedCall, *, prompts: bool, responses: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "time": datetime.fromtimestamp(call.created).astimezone().isoformat(timespec="seconds"),
        "run": call.run, "book": call.book, "purpose": call.purpose, "model": call.model,
        "reported_model": call.reported_model, "input_tokens": call.usage.input_tokens,
        "output_tokens": call.usage.output_tokens, "cached_input_tokens": call.usage.cached_input_tokens,
        "cache_write_input_tokens": call.usage.cache_write_input_tokens,
        "cost_usd": None if call.cost_usd is None else round(call.cost_usd, 8),
        "latency_s": round(call.latency_s, 3), "finish_reason": call.finish_reason,
    }
    if prompts:
        data["prompt"] = call.request  # None: stored before booksum kept prompts
    if responses:
        data["response"] = call.response
    cleaned: dict[str, Any] = _clean(data)
    return cleaned


# which columns a narrow terminal keeps first: the run id (what ``--run`` takes) and the model,
# then the money; identifiers and numbers are never cut (the rest is in --json)
LOG_PRIORITY = ("run", "model", "cost", "time", "purpose", "in", "out", "book", "latency", "cached")


def _render_table(calls: Sequence[LoggedCall]) -> None:
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted
    from booksum_app.errors import redact

    show_run = any(c.run for c in calls)
    show_book = any(c.book for c in calls)
    headers = ["time", *(["run"] if show_run else []), *(["book"] if show_book else []),
               "purpose", "model", "in", "out", "cached", "cost", "latency"]
    columns = [Col(h, LOG_PRIORITY.index(h), "right" if h in ("in", "out", "cached", "cost", "latency") else "left")
               for h in headers]
    rows = []
    for c in calls:
        cells = [_when(c.created), *([c.run or ""] if show_run else []), *([c.book or ""] if show_book else []),
                 c.purpose, c.model]
        rows.append([*(esc(redact(x)) for x in cells), f"{c.usage.input_tokens:,}", f"{c.usage.output_tokens:,}",
                     f"{c.usage.cached_input_tokens:,}", _cost(c.cost_usd), f"{c.latency_s:.1f}s"])
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE),
                 "Model calls, newest first (cost in USD; blank: no price known)", columns, rows,
                 where="booksum logs --json")


def _render_texts(calls: Sequence[LoggedCall], *, prompts: bool, responses: bool) -> None:
    """Each call as Markdown (heading, figures, prompt, answer), echoed verbatim."""
    from booksum_app.errors import redact

    for c in calls:
        where = " · ".join(x for x in (f"run {c.run}" if c.run else "", f"book {c.book}" if c.book else "") if x)
        figures = (f"{c.usage.input_tokens:,} in ({c.usage.cached_input_tokens:,} cached) + "
                   f"{c.usage.output_tokens:,} out tokens · {_cost(c.cost_usd) or 'no price known'} · "
                   f"{c.latency_s:.1f}s · finish {c.finish_reason}")
        lines = [f"## {_when(c.created)} · {c.purpose or '(no purpose)'} · {c.model}", "",
                 *([where, ""] if where else []), figures, ""]
        if prompts:
            lines += ["### Prompt", ""]
            if c.request is None:
                lines += ["(not stored: this call was cached before booksum kept prompts)", ""]
            for message in (c.request or {}).get("messages", []):
                lines += [f"**{message.get('role', '?')}:**", "", str(message.get("content", "")), ""]
        if responses:
            lines += ["### Response", "", c.response, ""]
        click.echo(printable(redact("\n".join(lines)), newlines=True))  # prompts and answers: outside text


@click.command("logs")
@click.option("-n", "--count", type=click.IntRange(min=0), default=20, show_default=True,
              help="Show the newest N calls (0: all).")
@click.option("-m", "--model", default=None, help="Only calls of this model (model string, alias or server's name).")
@click.option("--purpose", default=None, help="Only calls with this purpose (summarize, merge, compress, judge, ...).")
@click.option("--run", "run_id", default=None, help="Only calls of this run (its id, the start of one, or 'last').")
@click.option("--book", default=None, help="Only calls for books whose file name contains this (any case).")
@click.option("--since", default=None, help="Only calls since an age (30m, 2h, 3d, 1w) or an ISO date/time.")
@click.option("-q", "--query", default=None,
              help="Only calls whose prompt or answer contains this text (any case), as llm logs -q. "
                   "Here -q is the search: --quiet is spelled out.")
@click.option("--prompts", is_flag=True, help="Also show each call's prompt (system and user messages).")
@click.option("-r", "--responses", is_flag=True, help="Also show each call's answer.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              is_flag=False, flag_value="-",
              help="Write the calls as a JSON array (- or no value: stdout, instead of the table).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Call cache directory [default: BOOKSUM_CACHE_DIR, else the user cache dir].")
@handle_errors
def logs_command(count: int, model: str | None, purpose: str | None, run_id: str | None, book: str | None,
                 since: str | None, query: str | None, prompts: bool, responses: bool, json_out: Path | None,
                 cache_dir: Path | None) -> None:
    """Show past model calls from the call cache: time, purpose, model, tokens, cost, latency."""
    import os

    from booksum_app.files import atomic_write_text, check_writable
    from booksum_app.llm.cache import CACHE_FILENAME
    from booksum_app.llm.call_log import LogFilter, read_log
    from booksum_app.llm.registry import default_cache_dir

    target = json_out if json_out is not None and str(json_out) != "-" else None  # None: stdout
    if target is not None:
        check_writable(target)  # before reading anything
    directory = cache_dir or default_cache_dir(os.environ)
    log = read_log(directory, LogFilter(count=count, model=model, purpose=purpose, run=run_id, book=book,
                                        since=None if since is None else parse_since(since), query=query))
    calls = log.calls if log is not None else ()
    if log is not None and log.out_of_range:
        from booksum_app.cli.cache import out_of_range_line

        err_console.print(out_of_range_line(log.out_of_range), highlight=False, markup=False, soft_wrap=True)
    if json_out is not None:
        text = json.dumps([_as_dict(c, prompts=prompts, responses=responses) for c in calls],
                          ensure_ascii=False, indent=1)
        if target is not None:
            atomic_write_text(target, text + "\n")
            err_console.print(printable(f"wrote {target}"), highlight=False, markup=False, soft_wrap=True)
        else:
            click.echo(text)
    # the result itself on stdout, unless stdout carries the JSON
    say = (console if json_out is None else err_console).print
    if log is None or log.total == 0:
        say(printable(f"no calls logged yet in {Path(directory) / CACHE_FILENAME}"),
            highlight=False, markup=False, soft_wrap=True)
        return
    if not calls:
        say(printable(f"no calls match (the cache holds {log.total:,}: {log.path})"),
            highlight=False, markup=False, soft_wrap=True)
        return
    if json_out is None:
        if prompts or responses:
            _render_texts(calls, prompts=prompts, responses=responses)
        else:
            _render_table(calls)
    if log.matched > len(calls):
        err_console.print(f"showing the newest {len(calls)} of {log.matched:,} matching calls; -n 0 shows all",
                          highlight=False, markup=False, soft_wrap=True)
