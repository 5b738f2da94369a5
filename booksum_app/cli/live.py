"""The lines that show a command is working: the heartbeat on a log, the progress bar's stats on a
terminal (calls, tokens, spent, the ETA), a reader's page progress, a long chunking's progress.

Outside text in them (titles, file names) passes ``printable`` and is printed with ``markup=False``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from booksum_app.cli.consoles import err_console
from booksum_app.config import HEARTBEAT_S
from booksum_app.money import usd
from booksum_app.textsafe import printable

if TYPE_CHECKING:
    from rich.progress import Progress

    from booksum_app.runners.progress import GridSnapshot, ProgressSnapshot

    Snapshot = ProgressSnapshot | GridSnapshot


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
        interval_s = heartbeat_interval(os.environ.get("BOOKSUM_HEARTBEAT_S"))
        start = time.monotonic()
        while not self._stop.wait(interval_s):
            line = f"booksum [{time.monotonic() - start:.0f}s] {self._line()}"
            err_console.print(printable(line), markup=False, highlight=False, soft_wrap=True)


def _work_heartbeat(line: Callable[[str, int, int], str]) -> Callable[[str, int, int], None]:
    """A long piece of work's progress as ``line(name, done, total)`` on stderr every
    ``BOOKSUM_HEARTBEAT_S`` (30 s) of it; a terminal gets it too (no progress bar runs then, or
    it names only the stage). Work on a name whose ``done`` goes back is a new run of it."""
    started: dict[str, float] = {}
    said: dict[str, float] = {}
    reached: dict[str, int] = {}

    def heartbeat(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < reached.get(name, done + 1):  # the first report, or a new run on this name
            started[name] = said[name] = now
        reached[name] = done
        if now - said[name] >= heartbeat_interval(os.environ.get("BOOKSUM_HEARTBEAT_S")):
            said[name] = now
            text = f"booksum [{now - started[name]:.0f}s] {line(name, done, total)}"
            err_console.print(printable(text), markup=False, highlight=False, soft_wrap=True)

    return heartbeat


def page_heartbeat() -> Callable[[str, int, int], None]:
    """A reader's page progress (a PDF of thousands of pages takes minutes)."""
    return _work_heartbeat(lambda name, done, total: f"reading {name}: page {done:,} of {total:,}")


HEARTBEAT_MIN_S = 0.1  # a smaller interval would flood the log (0 was a busy loop)
HEARTBEAT_MAX_S = 86_400.0  # a day; threading's wait() overflows near 1e10 s (a traceback in the thread)


def heartbeat_interval(raw: str | None) -> float:
    """``BOOKSUM_HEARTBEAT_S`` as seconds: a finite number clamped to [0.1 s, a day], else the default."""
    try:
        value = float(raw) if raw else HEARTBEAT_S
    except ValueError:
        return HEARTBEAT_S
    return min(HEARTBEAT_MAX_S, max(HEARTBEAT_MIN_S, value)) if math.isfinite(value) else HEARTBEAT_S


def _eta_s(snap: Snapshot) -> float | None:
    eta = getattr(snap, "eta_s", None)  # summarize: from the planned calls
    if eta is None and getattr(snap, "running", None) is not None and snap.done and snap.total > snap.done:
        eta = snap.elapsed_s / snap.done * (snap.total - snap.done)  # compare: from summaries done
    return eta


def stats_text(snap: Snapshot) -> str:
    """Calls, calls in flight, tokens, dollars and ETA of a progress snapshot, compact enough for 60 columns."""
    eta = _eta_s(snap)
    eta_text = f" · ETA {int(eta) // 60}:{int(eta) % 60:02d}" if eta is not None else ""
    in_flight_limit = getattr(snap, "limit", 0)  # summarize's adaptive limit; compare shows none
    limit = f" (limit {in_flight_limit})" if in_flight_limit else ""
    inside = " · ".join(text for _, text in _call_parts(snap))
    return (f"calls {snap.calls} ({snap.cache_hits} cached) · {snap.in_flight} in flight{limit} · "
            f"{snap.input_tokens:,}+{snap.output_tokens:,} tok · {usd(snap.cost_usd, digits=4)}{eta_text}"
            + (f" · {inside}" if inside else ""))


def _call_parts(snap: Snapshot) -> list[tuple[int, str]]:
    """The embedded model's call in progress: tokens moving, and the CPU when the machine is busy."""
    call = getattr(snap, "call", None)
    if call is None:
        return []
    from booksum_app.runners.progress import call_parts

    return call_parts(call)


def stat_parts(snap: Snapshot) -> list[tuple[int, str]]:
    """The figures of :func:`stats_text` as ``(priority, text)`` parts: calls and dollars first."""
    eta = _eta_s(snap)
    in_flight_limit = getattr(snap, "limit", 0)  # summarize's adaptive limit; compare shows none
    limit = f" (limit {in_flight_limit})" if in_flight_limit else ""
    parts = [(0, f"calls {snap.calls} ({snap.cache_hits} cached)"), (4, f"{snap.in_flight} in flight{limit}"),
             (3, f"{snap.input_tokens:,}+{snap.output_tokens:,} tok"), (1, f"{usd(snap.cost_usd, digits=4)}")]
    if eta is not None:
        parts.append((2, f"ETA {int(eta) // 60}:{int(eta) % 60:02d}"))
    return parts + [(0 if p == 0 else 2, text) for p, text in _call_parts(snap)]


_LABEL_WIDTH, _BAR_WIDTH, _ELAPSED_WIDTH, _GAPS = 28, 10, 7, 4  # the progress line's fixed columns and spaces


def fitted_stats(snap: Snapshot, *, label: str, count: str) -> str:
    """The figures that fit on the progress line beside ``label`` and ``count``, whole: a figure
    that does not fit is left out, never cut (the heartbeat and the record carry them all)."""
    from booksum_app.runners.progress import fit_parts

    room = err_console.width - min(len(label), _LABEL_WIDTH) - _BAR_WIDTH - len(count) - _ELAPSED_WIDTH - _GAPS
    return fit_parts(stat_parts(snap), max(12, room))


def progress_bar(label: str, count: str) -> Progress:
    """The live display, one line: label, bar, done/total, elapsed, then the figures of
    :func:`fitted_stats` (those that fit the terminal's width, whole)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    columns = [TextColumn(label, table_column=Column(no_wrap=True, max_width=_LABEL_WIDTH, overflow="ellipsis")),
               BarColumn(bar_width=_BAR_WIDTH), TextColumn(count), TimeElapsedColumn(),
               TextColumn("{task.fields[stats]}", table_column=Column(ratio=1, no_wrap=True, overflow="crop"))]
    # out of a terminal the heartbeat speaks; a live display there only left a blank first line
    return Progress(*columns, console=err_console, transient=True, expand=True, disable=not err_console.is_terminal)


def snapshot_line(snap: Snapshot) -> str:
    """The heartbeat's line: stage, done/total and :func:`stats_text`."""
    done = f" {snap.done}/{snap.total}" if getattr(snap, "total", 0) else ""
    stage = getattr(snap, "stage", None) or "summaries"
    return f"{stage}{done}: {stats_text(snap)}"


def chunk_heartbeat() -> Callable[[str, int, int], None]:
    """A chunking's progress: ``total`` is two passes over the text's characters."""
    return _work_heartbeat(lambda name, done, total:
                           f"chunking {name}: {100 * done // max(1, total)}% of {total // 2:,} characters")


__all__ = [
    "HEARTBEAT_MAX_S",
    "HEARTBEAT_MIN_S",
    "Heartbeat",
    "chunk_heartbeat",
    "fitted_stats",
    "heartbeat_interval",
    "page_heartbeat",
    "progress_bar",
    "snapshot_line",
    "stat_parts",
    "stats_text",
]
