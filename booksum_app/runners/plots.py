"""Plots of a comparison (PNG and SVG, matplotlib's Agg backend, imported lazily).

- ``score_vs_length``: BooookScore (with its 95% CI over books as error bars) against average
  summary length in cl100k tokens, one point per configuration; new runs are filled circles,
  precomputed sets (e.g. the BooookScore release) hollow squares.
- ``rouge_vs_length`` (benchmark datasets only): the moving median of ROUGE-L over sample
  length (CNNSum Fig. 3), one line per configuration and dataset, the samples as faint dots.
- ``cost_vs_score``: list-price cost of a configuration's summarization calls (all books)
  against its BooookScore; only configurations that were run (precomputed sets have no cost).

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
    if row.kind == "precomputed":
        return row.name
    chunk = f" {row.chunk_size}" if row.chunk_size else ""
    return f"{row.model.split(':', 1)[-1]} {row.strategy}{chunk}"


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


def _points(ax: Any, rows: list[tuple[ConfigResult, float, tuple[float, float, float]]]) -> None:
    """One marker per configuration; configurations at the same spot share one joined label."""
    labels: dict[tuple[float, float], list[str]] = {}
    for row, x, (y, lo, hi) in rows:
        run = row.kind == "run"
        ax.errorbar(
            x, y, yerr=[[lo], [hi]], fmt="o" if run else "s", capsize=3, markersize=7,
            markerfacecolor=None if run else "white", label=_label(row),
        )
        labels.setdefault((round(x, 6), round(y, 3)), []).append(_label(row))
    for (x, y), names in labels.items():
        ax.annotate(" = ".join(names), (x, y), textcoords="offset points", xytext=(6, 5), fontsize=7)


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
            label = f"{_label(row)}{' ' + row.template if row.template else ''} · {d.dataset} (window {d.window})"
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
    fig, ax = plt.subplots(figsize=(7.5, 5))
    _points(ax, points)
    if points:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    xs = [x for _, x, _ in points]
    if stem == "cost_vs_score" and xs:  # dollars are never negative; all-zero runs get a readable axis
        ax.set_xlim(left=0, right=max(xs) * 1.15 if max(xs) > 0 else 1.0)
        if max(xs) == 0:
            xlabel += "; every configuration cost $0 (local model or all calls cached)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel("BooookScore (95% CI over books)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    written = _save(fig, directory, stem)
    plt.close(fig)
    return written


__all__ = ["PLOT_FORMATS", "require_matplotlib", "write_plots"]
