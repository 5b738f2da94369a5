"""compare's plots: one legend entry per visible marker, the table's names, an all-$0 cost plot that says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.llm.base import Tally
from booksum_app.runners.compare_results import BookResult, ConfigResult
from booksum_app.runners.plots import NO_COST, require_matplotlib, scatter_figure, write_plots
from booksum_app.scoring.aggregate import SystemScore
from booksum_app.scoring.ngrams import NgramStats, NgramSummary

pytest.importorskip("matplotlib")


def _row(name: str, score: float, length: float, cost: float, *, kind: str = "run") -> ConfigResult:
    stats = NgramStats(n_tokens=int(length), n_ngrams=10, n_distinct=10, n_repeated=0)
    ngrams = NgramSummary(n_summaries=1, avg_tokens=length, repeated_pct=0.0, novel_pct=None, n_with_source=0,
                          signature="ngrams|v:0")
    book = BookResult(book="a.epub", summary="A.", ngrams=stats, usage=Tally(calls=3, cost_usd=cost))
    system = SystemScore(score=score, ci_low=score - 0.02, ci_high=score + 0.02, n_summaries=1, n_unscored=0,
                         n_sentences=5, n_confusing=1, n_unparseable=0, type_counts=())
    model, _, strategy = name.rpartition("-")
    return ConfigResult(name=name, kind=kind, model=model, strategy=strategy, chunk_size=2048, books=(book,),
                        booookscore=system, booookscore_signature="b|v:0", ngrams=ngrams)


def _points(rows: list[ConfigResult], *, by: str) -> list[tuple[ConfigResult, float, tuple[float, float, float]]]:
    out = []
    for r in rows:
        assert r.booookscore is not None and r.booookscore.score is not None
        x = r.usage.cost_usd if by == "cost" else float(r.ngrams.avg_tokens or 0)
        out.append((r, x, (100 * r.booookscore.score, 2.0, 2.0)))
    return out


def _legend(fig: object) -> list[str]:
    ax = fig.axes[0]  # type: ignore[attr-defined]
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_labels_are_the_table_names_and_coincident_points_share_one_entry() -> None:
    plt = require_matplotlib()
    rows = [_row("gpt4-2048-hier", 0.80, 700, 1.0, kind="precomputed"),
            _row("openai-gpt-4o-2048-hier", 0.75, 650, 2.0),
            _row("openai-gpt-4o-2048-inc", 0.75, 650, 2.5)]  # same spot as the one before
    fig = scatter_figure(plt, _points(rows, by="length"), "score_vs_length", empty="", xlabel="x", title="t")
    assert _legend(fig) == ["gpt4-2048-hier", "openai-gpt-4o-2048-hier = openai-gpt-4o-2048-inc"]
    plt.close(fig)


def test_more_series_than_colours_get_distinct_markers() -> None:
    plt = require_matplotlib()
    rows = [_row(f"m{k}-2048-hier", 0.5 + k / 100, 100 + 10 * k, 0.1) for k in range(12)]
    fig = scatter_figure(plt, _points(rows, by="length"), "score_vs_length", empty="", xlabel="x", title="t")
    data_lines = [container.lines[0] for container in fig.axes[0].containers]  # one errorbar per series
    looks = {(line.get_color(), line.get_marker()) for line in data_lines}
    assert len(_legend(fig)) == 12 and len(looks) == 12, looks
    plt.close(fig)


def test_an_all_zero_cost_plot_says_no_cost(tmp_path: Path) -> None:
    plt = require_matplotlib()
    rows = [_row("ollama-qwen-2048-hier", 0.7, 500, 0.0), _row("ollama-qwen-2048-inc", 0.6, 450, 0.0)]
    fig = scatter_figure(plt, _points(rows, by="cost"), "cost_vs_score", empty="", xlabel="cost", title="t")
    ax = fig.axes[0]
    assert _legend(fig) == [] and not ax.lines and not ax.collections, "no strip of points at x=0"
    assert [t.get_text() for t in ax.texts] == [NO_COST]
    plt.close(fig)
    written = write_plots(rows, tmp_path)
    assert NO_COST.split(":")[0] in (tmp_path / "cost_vs_score.svg").read_text(encoding="utf-8")
    assert tmp_path / "score_vs_length.png" in written


def test_some_cost_keeps_a_zero_based_axis() -> None:
    plt = require_matplotlib()
    rows = [_row("a-2048-hier", 0.7, 500, 0.0), _row("b-2048-hier", 0.6, 450, 0.5)]
    fig = scatter_figure(plt, _points(rows, by="cost"), "cost_vs_score", empty="", xlabel="cost", title="t")
    assert fig.axes[0].get_xlim()[0] == 0 and _legend(fig) == ["a-2048-hier", "b-2048-hier"]
    plt.close(fig)


def _no_overlap(fig: object) -> None:
    """Every name on the figure (legend entries, any text in the axes) has a box of its own, and the
    legend stays off the axes, where the points are."""
    fig.canvas.draw()  # type: ignore[attr-defined]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax = fig.axes[0]  # type: ignore[attr-defined]
    legend = ax.get_legend()
    texts = [*(legend.get_texts() if legend is not None else []), *ax.texts]
    boxes = [t.get_window_extent(renderer).shrunk(0.98, 0.9) for t in texts if t.get_text()]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)
    if legend is not None:
        assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=40)


@settings(max_examples=15, deadline=None)
@given(spots=st.lists(st.tuples(names, st.floats(0.0, 1.0), st.floats(100, 2000), st.floats(0, 5)),
                      min_size=1, max_size=20, unique_by=lambda t: t[0]))
def test_plot_labels_never_overlap(spots: list[tuple[str, float, float, float]]) -> None:
    plt = require_matplotlib()
    rows = [_row(name, score, length, cost) for name, score, length, cost in spots]
    for by, stem in (("length", "score_vs_length"), ("cost", "cost_vs_score")):
        fig = scatter_figure(plt, _points(rows, by=by), stem, empty="", xlabel="x", title="t")
        _no_overlap(fig)
        plt.close(fig)


def test_close_points_of_the_release_grid_keep_their_names_apart() -> None:
    plt = require_matplotlib()
    rows = [_row(f"gpt4-{size}-{s}", 0.80 + k / 1000, 700 + k, 1.0, kind="precomputed")
            for k, (size, s) in enumerate((a, b) for a in (2048, 4096, 8192) for b in ("hier", "inc"))]
    fig = scatter_figure(plt, _points(rows, by="length"), "score_vs_length", empty="", xlabel="x", title="t")
    assert len(_legend(fig)) == 6
    _no_overlap(fig)
    plt.close(fig)
