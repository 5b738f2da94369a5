"""Plots of a comparison (PNG and SVG, matplotlib's Agg backend, imported lazily).

- ``score_vs_length``: BooookScore (with its 95% CI over books as error bars) against average
  summary length in cl100k tokens, one point per configuration, named in the legend as in
  results.json/csv; new runs have filled markers, precomputed sets (e.g. the BooookScore release)
  hollow ones; configurations at the same spot share one marker and one legend entry. Each spot
  has its own colour and marker, and the names stand in a legend beside the axes, never next
  to the points: a name by its point overlapped its neighbours' whenever points were close.
- ``rouge_vs_length`` (benchmark datasets only): the moving median of ROUGE-L over sample
  length (CNNSum Fig. 3), one line per configuration and dataset, the samples as faint dots.
- ``cost_vs_score``: list-price cost of a configuration's summarization calls (all books)
  against its BooookScore; only configurations that were run (precomputed sets have no cost).
  When every one cost $0 the plot says so instead of stacking the points on x=0.

matplotlib is an optional dependency (extras ``plot`` / ``dev``); without it,
:func:`write_plots` raises a :class:`ConfigError` that says how to install it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from booksum_app.errors import ConfigError
from booksum_app.runners.compare_results import ConfigResult

PLOT_FORMATS = ("png", "svg")


def require_matplotlib() -> Any:
    """matplotlib.pyplot on the Agg backend.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError(
            "plots need matplotlib; install it with: pip install 'booksum[plot]' (or pass --no-plots)"
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _label(row: ConfigResult) -> str:
    """The configuration's name as results.json/csv, summaries/ and the table name it."""
    return row.name


def _score(row: ConfigResult) -> tuple[float, float, float] | None:
    b = row.booookscore
    if b is None or b.score is None:
        return None
    low = b.ci_low if b.ci_low is not None else b.score
    high = b.ci_high if b.ci_high is not None else b.score
    return 100 * b.score, 100 * (b.score - low), 100 * (high - b.score)


def _save(fig: Any, directory: Path, stem: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in PLOT_FORMATS:
        path = directory / f"{stem}.{fmt}"
        tmp = directory / f".{stem}.tmp.{fmt}"
        fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        tmp.replace(path)
        written.append(path)
    return written


# runs: filled markers; precomputed sets (the release): hollow ones. The colour cycles through
# matplotlib's ten, the marker changes each time it wraps, so no two series look alike.
RUN_MARKERS = ("o", "^", "D", "v", "P", "p", "<", ">")
SET_MARKERS = ("s", "X", "h", "*", "d", "H", "8", "1")


def _points(ax: Any, rows: list[tuple[ConfigResult, float, tuple[float, float, float]]]) -> None:
    """One marker and one legend entry per spot: configurations at the same spot share a joined label
    (a marker drawn over another would leave a legend entry for a series nobody can see)."""
    spots: dict[tuple[float, float], list[tuple[ConfigResult, float, tuple[float, float, float]]]] = {}
    for item in rows:
        _, x, (y, _, _) = item
        spots.setdefault((round(x, 6), round(y, 3)), []).append(item)
    for n, members in enumerate(spots.values()):
        _, x, (y, _, _) = members[0]
        lo = max(m[2][1] for m in members)
        hi = max(m[2][2] for m in members)
        run = all(m[0].kind == "run" for m in members)
        markers = RUN_MARKERS if run else SET_MARKERS
        label = " = ".join(_label(m[0]) for m in members)
        ax.errorbar(x, y, yerr=[[lo], [hi]], fmt=markers[(n // 10) % len(markers)], color=f"C{n % 10}",
                    capsize=3, markersize=7, markerfacecolor=None if run else "white", label=label)


def write_plots(rows: list[ConfigResult] | tuple[ConfigResult, ...], directory: Path) -> list[Path]:
    """Write ``score_vs_length`` and ``cost_vs_score`` as PNG and SVG under ``directory``.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    plt = require_matplotlib()
    directory = Path(directory)
    by_length = [(r, r.ngrams.avg_tokens or 0.0, s) for r in rows if (s := _score(r)) is not None]
    by_cost = [(r, r.usage.cost_usd, s) for r in rows if r.kind == "run" and (s := _score(r)) is not None]
    return [
        *_scatter(
            plt, by_length, directory, "score_vs_length",
            empty="no BooookScore (run with a judge)",
            xlabel="average summary length (cl100k tokens)",
            title="BooookScore vs. summary length per configuration",
        ),
        *_scatter(
            plt, by_cost, directory, "cost_vs_score",
            empty="no scored configuration with a cost",
            xlabel="cost of the summarization calls, all books (USD, list price)",
            title="Cost vs. BooookScore per configuration",
        ),
        *(_rouge_by_length(plt, rows, directory) if any(r.datasets for r in rows) else []),
    ]


def _rouge_by_length(plt: Any, rows: list[ConfigResult] | tuple[ConfigResult, ...], directory: Path) -> list[Path]:
    """Moving median of ROUGE-L over sample length (CNNSum Fig. 3), one line per configuration x dataset."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for row in rows:
        for d in row.datasets:
            label = f"{_label(row)} · {d.dataset} (window {d.window})"  # the name carries the template
            xs, ys = [p[0] for p in d.moving_median], [p[1] for p in d.moving_median]
            line = ax.plot(xs, ys, marker="o" if len(xs) < 3 else None, markersize=4, label=label)[0]
            ax.scatter([s.length_tokens for s in d.samples], [100 * s.rouge_l for s in d.samples],
                       s=8, alpha=0.25, color=line.get_color())
    ax.legend(fontsize=7, loc="best")
    ax.set_xlabel("sample length (cl100k tokens)")
    ax.set_ylabel("ROUGE-L F x100 (moving median; dots: samples)")
    ax.set_title("ROUGE-L vs. sample length per configuration")
    ax.grid(True, alpha=0.3)
    written = _save(fig, directory, "rouge_vs_length")
    plt.close(fig)
    return written


def _scatter(
    plt: Any,
    points: list[tuple[ConfigResult, float, tuple[float, float, float]]],
    directory: Path,
    stem: str,
    *,
    empty: str,
    xlabel: str,
    title: str,
) -> list[Path]:
    """One BooookScore-on-y scatter plot with CI bars, saved as PNG and SVG."""
    fig = scatter_figure(plt, points, stem, empty=empty, xlabel=xlabel, title=title)
    written = _save(fig, directory, stem)
    plt.close(fig)
    return written


NO_COST = "no cost: every configuration cost $0 (local model or all calls cached)"


def scatter_figure(
    plt: Any,
    points: list[tuple[ConfigResult, float, tuple[float, float, float]]],
    stem: str,
    *,
    empty: str,
    xlabel: str,
    title: str,
) -> Any:
    """The figure of :func:`_scatter` (tests read its legend)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    xs = [x for _, x, _ in points]
    if stem == "cost_vs_score" and xs and max(xs) == 0:  # a strip at x=0 says nothing: say why
        points, empty = [], NO_COST
        ax.set_xticks([])
    _points(ax, points)
    if points:  # beside the axes: one row per spot, never over a point or another name
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    if stem == "cost_vs_score" and points:  # dollars are never negative
        ax.set_xlim(left=0, right=max(x for _, x, _ in points) * 1.15)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("BooookScore (95% CI over books)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig


__all__ = ["NO_COST", "PLOT_FORMATS", "require_matplotlib", "scatter_figure", "write_plots"]
