"""Tables and live displays that fit the terminal: columns chosen for the width, never squashed.

A rich table given more columns than fit shrinks every one of them ("Mod…", "340…"). Like ``gh``
and ``llm``, booksum instead keeps the columns that fit at their full width, in priority order,
and says in a footnote which ones were left out and where they are (the JSON/CSV files).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text

from booksum_app.cli.base import esc
from booksum_app.runners.progress import GridSnapshot, fit_parts, grid_stat_parts, running_line

_EDGE = 1  # the table's left border
_PER_COLUMN = 3  # one space of padding each side and a border


@dataclass(frozen=True)
class Col:
    """One column: its header, alignment, priority (0 first), and whether its cells are prose.

    Identifiers (ids, model names, paths) and numbers are never cut or broken: the column is as
    wide as its widest cell, or it is left out. A prose column (``wrap=True``: failure modes, a
    note) may wrap, at spaces only: it is at least as wide as its longest word, and at most
    ``max_width`` when the cells' full width is more.
    """

    header: str
    priority: int
    justify: str = "right"
    max_width: int | None = None
    wrap: bool = False


@dataclass
class FittedTable:
    table: Table | None  # None: not even the first column fits; ``records`` holds the rows instead
    dropped: list[str] = field(default_factory=list)
    records: list[str] = field(default_factory=list)


def _words(text: str) -> list[str]:
    return text.split() or [""]


def _need(col: Col, cells: Sequence[str]) -> int:
    header_word = max((cell_len(w) for w in col.header.split()), default=1)  # headers wrap at spaces only
    widest = max((cell_len(c) for c in cells), default=1)
    if not col.wrap:  # an identifier or a number: whole, on one line
        return max(header_word, widest)
    longest_word = max((cell_len(w) for c in cells for w in _words(c)), default=1)
    cap = col.max_width if col.max_width else widest
    return max(header_word, longest_word, min(widest, cap))


def fit_table(title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> FittedTable:
    """A table with the columns that fit ``width`` at full width, taken in priority order.

    Cells are plain text (escape markup first). When even the highest-priority column does not
    fit, the rows are folded into ``records`` (one ``header: value`` line per cell) instead.
    """
    needs = [_need(col, [row[i] for row in rows]) for i, col in enumerate(columns)]
    kept: set[int] = set()
    used = _EDGE
    for i in sorted(range(len(columns)), key=lambda i: columns[i].priority):
        if used + needs[i] + _PER_COLUMN <= width:
            kept.add(i)
            used += needs[i] + _PER_COLUMN
        elif not kept:  # the first column alone is wider than the terminal: fold the rows
            return FittedTable(None, [], _records(title, columns, rows))
    # room left over lets headers stand on one line, highest priority first
    widths = {i: needs[i] for i in kept}
    for i in sorted(kept, key=lambda i: columns[i].priority):
        full = max(needs[i], cell_len(columns[i].header))
        if used + full - needs[i] <= width:  # only where the whole header then fits: no half-gain
            used += full - needs[i]
            widths[i] = full
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        if i in kept:  # a fixed width: rich never shrinks it below what was measured here
            # no_wrap stays off so that headers wrap at spaces; an identifier or number cell is never
            # wrapped all the same, its column being as wide as its widest cell
            table.add_column(col.header, justify=col.justify, width=widths[i],  # type: ignore[arg-type]
                             overflow="fold")
    for row in rows:
        table.add_row(*(cell for i, cell in enumerate(row) if i in kept))
    return FittedTable(table, [col.header for i, col in enumerate(columns) if i not in kept])


def _records(title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows too wide for any table: each a block of ``header: value`` lines, in priority order."""
    order = sorted(range(len(columns)), key=lambda i: columns[i].priority)
    lines = [title]
    for row in rows:
        lines.append("")
        lines.extend(f"{columns[i].header}: {row[i]}" for i in order)
    return lines


def print_fitted(console: Console, title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]],
                 *, where: str) -> None:
    """Print the fitted table and, when columns were left out, one footnote line saying where they are."""
    fitted = fit_table(title, columns, rows, console.width)
    if fitted.table is None:
        for line in fitted.records:  # cells come escaped, as for the table
            console.print(line, highlight=False, soft_wrap=True)
        return
    console.print(fitted.table)
    if fitted.dropped:
        console.print(f"Not shown at {console.width} columns: {', '.join(fitted.dropped)}; every column is in "
                      f"{where} (or widen the terminal).", highlight=False, markup=False)


# ---- compare's live display -----------------------------------------------------------------

LABEL_WIDTH = 28
_BAR_WIDTH = 10
_COUNT_WIDTH = 9
_ELAPSED_WIDTH = 7


class _Bar(BarColumn):
    """No bar on the row that lists what runs now."""

    def render(self, task: Task) -> Any:
        return Text("") if task.fields.get("note") else super().render(task)


class _Elapsed(TimeElapsedColumn):
    def render(self, task: Task) -> Text:
        return Text("") if task.fields.get("note") else super().render(task)


class GridDisplay:
    """compare's live display: the grid's row, a row of what runs now, one row per configuration.

    Every cell is one line cut to the width (an ellipsis marks a cut): stats keep their most
    useful figures, book names are shortened whole, never folded mid-word onto the next line.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._label_column = Column(no_wrap=True, overflow="ellipsis", max_width=LABEL_WIDTH)
        columns: list[ProgressColumn] = [
            TextColumn("{task.fields[label]}", table_column=self._label_column),
            _Bar(bar_width=_BAR_WIDTH),
            TextColumn("{task.fields[count]}", table_column=Column(no_wrap=True, max_width=_COUNT_WIDTH)),
            _Elapsed(),
            TextColumn("{task.fields[stats]}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")),
        ]
        self.progress = Progress(*columns, console=console, transient=True, expand=True,
                                 disable=not console.is_terminal)  # a pipe: the heartbeat, no blank line
        self.grid = self.progress.add_task("", total=None, label="summaries", count="", stats="")
        self.now = self.progress.add_task("", total=None, label="  now", count="", stats="", note=True)
        self.per_config: dict[str, Any] = {}

    def _room(self) -> int:
        """Columns left for the figures; sets the label column as wide as the longest label (a
        configuration's name stays whole) while 12 columns of figures still fit."""
        labels = [str(t.fields.get("label", "")) for t in self.progress.tasks]
        count_w = min(_COUNT_WIDTH, max((len(str(t.fields.get("count", ""))) for t in self.progress.tasks), default=0))
        fixed = _BAR_WIDTH + count_w + _ELAPSED_WIDTH + 5
        label_w = min(max(LABEL_WIDTH, self.console.width - fixed - 12), max((len(x) for x in labels), default=0))
        self._label_column.max_width = max(label_w, 1)
        return max(12, self.console.width - label_w - fixed)

    def draw(self, snap: GridSnapshot) -> None:
        if len(snap.configs) > 1:  # one row per configuration under the whole grid's
            for name, _done, total in snap.configs:
                if name not in self.per_config:
                    self.per_config[name] = self.progress.add_task("", total=total, label=f"  {esc(name)}",
                                                                   count="", stats="")
        count = f"{snap.done}/{snap.total}" if snap.total else ""
        self.progress.update(self.grid, count=count)
        for name, done, total in snap.configs:
            if name in self.per_config:
                self.progress.update(self.per_config[name], count=f"{done}/{total}")
        room = self._room()
        self.progress.update(self.grid, completed=snap.done, total=snap.total or None, count=count,
                             stats=esc(fit_parts(grid_stat_parts(snap), room)))
        self.progress.update(self.now, stats=esc(running_line(snap.running, room)))
        for name, done, total in snap.configs:
            if name in self.per_config:
                self.progress.update(self.per_config[name], completed=done, count=f"{done}/{total}")

    def __enter__(self) -> Self:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)


# compare's final table: which columns a narrow terminal keeps first (the rest: results.csv/json)
COMPARE_PRIORITY = ("Model", "Strategy", "BooookScore (95% CI)", "Avg. len", "% rep. 3-g", "Cost", "Chunk",
                    "Failure modes", "Books", "% novel 3-g", "Calls (cached)", "Judge $", "Wall s", "In tok",
                    "Out tok", "Judge in/sent.")
_LEFT = ("Model", "Strategy", "Failure modes")
_PROSE = {"Failure modes": 24, "Failure modes (summaries)": 24}  # wraps at spaces past this width


def compare_columns(headers: Sequence[str]) -> list[Col]:
    """compare's headers as :class:`Col` in their display order, with COMPARE_PRIORITY's priorities."""
    rank: Mapping[str, int] = {h: i for i, h in enumerate(COMPARE_PRIORITY)}
    return [Col(h, rank.get(h, len(rank)), "left" if h in _LEFT else "right", _PROSE.get(h), h in _PROSE)
            for h in headers]


# score's table, the same way (its columns already depend on what the run has)
SCORE_PRIORITY = ("System", "BooookScore", "95% CI", "Avg len", "% rep 3g", "ROUGE-L F/R", "n",
                  "Failure modes (summaries)", "% novel 3g", "Unparsed", "Calls (cached) / cost", "In/sent.")
WIDE_TABLE = 260  # piped or redirected: wide enough for every column of either table


def score_columns(headers: Sequence[str]) -> list[Col]:
    """score's headers as :class:`Col`, with SCORE_PRIORITY's priorities."""
    rank: Mapping[str, int] = {h: i for i, h in enumerate(SCORE_PRIORITY)}
    return [Col(h, rank.get(h, len(rank)), "left" if h == "System" else "right", _PROSE.get(h), h in _PROSE)
            for h in headers]


__all__ = [
    "COMPARE_PRIORITY", "SCORE_PRIORITY", "WIDE_TABLE", "Col", "FittedTable", "GridDisplay", "compare_columns",
    "fit_table", "print_fitted", "score_columns",
]
