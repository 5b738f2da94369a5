"""Tables and live displays that fit 80 and 120 columns: columns chosen, never squashed to "Mod…"."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from booksum_app.cli import cli
from booksum_app.cli.consoles import plain_console
from booksum_app.cli.tables import COMPARE_PRIORITY, Col, GridDisplay, compare_columns, fit_table
from booksum_app.runners.progress import GridSnapshot, fit_parts, running_line, shorten
from booksum_app.testing.fake_server import FakeServer
from booksum_app.textsafe import markup_safe as esc

HEADERS = ("Model", "Strategy", "Chunk", "Books", "BooookScore (95% CI)", "Avg. len", "% novel 3-g", "% rep. 3-g",
           "Failure modes", "Calls (cached)", "In tok", "Out tok", "Cost", "Judge $", "Judge in/sent.", "Wall s")
ROW = ["openai:gpt-4o-mini", "hier", "2048", "5", "82.3 (79.9–84.6)", "734.2", "88.1", "4.2",
       "subjective 2, repetition 1", "340 (12)", "1,234,567", "123,456", "$0.4567", "$1.2345", "412.3", "812.4"]


def _render(renderable: object, width: int) -> list[str]:
    console = plain_console(width=width, record=True, file=io.StringIO(), force_terminal=True)  # booksum's consoles
    console.print(renderable)
    return console.export_text().rstrip("\n").splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_compare_table_keeps_whole_columns_that_fit(width: int) -> None:
    fitted = fit_table("BooookScore comparison", compare_columns(HEADERS), [ROW, ROW], width)
    lines = _render(fitted.table, width)
    assert all(len(line) <= width for line in lines)
    assert not any("…" in line for line in lines), "no header or cell squashed"
    text = "\n".join(lines)
    kept = [h for h in HEADERS if h not in fitted.dropped]
    assert kept[:3] == ["Model", "Strategy", "Chunk"] or "Chunk" in fitted.dropped
    for header in ("Model", "Strategy", "BooookScore", "openai:gpt-4o-mini", "82.3 (79.9–84.6)"):
        assert header in text
    for header in kept:  # every kept header is there word by word (a long one may take two lines)
        assert all(word in text for word in header.split())
    assert fitted.dropped, "16 columns do not fit 120"
    # the columns kept are the highest-priority ones
    ranks = [COMPARE_PRIORITY.index(h) for h in kept]
    assert max(ranks) < min(COMPARE_PRIORITY.index(h) for h in fitted.dropped)


def test_a_wide_console_shows_every_column() -> None:
    fitted = fit_table("t", compare_columns(HEADERS), [ROW], 260)
    assert fitted.dropped == []


def test_the_grid_display_is_one_line_per_row_at_80_and_120() -> None:
    snap = GridSnapshot(
        done=3, total=20, reused=0,
        running=("jane-austen_pride-and-prejudice · openai-gpt-4o-mini-2048-hier: merging level 2 3/7",
                 "emily-bronte_wuthering-heights · openai-gpt-4o-mini-2048-inc: updating 5/30"),
        calls=1234, cache_hits=12, in_flight=32, input_tokens=1_234_567, output_tokens=123_456, cost_usd=1.2345,
        elapsed_s=60.0,
        configs=(("openai-gpt-4o-mini-2048-hier", 2, 10), ("openai-gpt-4o-mini-2048-inc", 1, 10)),
    )
    for width in (80, 120):
        console = plain_console(width=width, record=True, file=io.StringIO(), force_terminal=True)  # booksum's consoles
        display = GridDisplay(console)
        display.draw(snap)
        lines = _render(display.progress.make_tasks_table(display.progress.tasks), width)
        assert len(lines) == len(display.progress.tasks) == 4, lines  # nothing wrapped onto a second line
        assert all(len(line) <= width for line in lines)
        now = lines[1]
        assert "jane-austen" in now and "…" in now
        assert "prejudice" not in "".join(lines[2:]), "no book name continues on the next row"
        assert "calls" in lines[0] and "$1.2345" in lines[0]
        for name in ("openai-gpt-4o-mini-2048-hier", "openai-gpt-4o-mini-2048-inc"):  # configurations whole
            assert any(name in line for line in lines[2:]), (name, lines)


def test_the_grid_display_keeps_a_long_configuration_name_whole() -> None:
    name = "openai-gpt-4o-mini-2048-hier-evidence"  # 37 characters, 39 with the row's indent
    snap = GridSnapshot(done=1, total=4, reused=0, running=(), calls=10, cache_hits=0, in_flight=2,
                        input_tokens=1000, output_tokens=100, cost_usd=0.01, elapsed_s=5.0,
                        configs=((name, 1, 2), ("openai-gpt-4o-direct", 0, 2)))
    for width in (80, 120):
        console = plain_console(width=width, record=True, file=io.StringIO(), force_terminal=True)  # booksum's consoles
        display = GridDisplay(console)
        display.draw(snap)
        lines = _render(display.progress.make_tasks_table(display.progress.tasks), width)
        assert len(lines) == 4 and all(len(line) <= width for line in lines), lines
        assert any(name in line for line in lines), lines


def test_running_line_shortens_book_names_whole_and_counts_the_rest() -> None:
    running = ["jane-austen_pride-and-prejudice · cfg: merging 3/7", "mary-shelley_frankenstein · cfg: summarizing"]
    assert running_line(running, 200) == "; ".join(running), "room for all: nothing shortened"
    assert running_line(running, 75) == "jane-austen_pride-and… · cfg: merging 3/7; mary-shelley… · cfg: summarizing"
    assert running_line(running, 50) == "jane-austen_pride-and… · cfg: merging 3/7 (+1)"
    assert running_line(running[1:], 50) == running[1], "a name that fits is not shortened"
    assert len(running_line(running, 20)) <= 20
    assert shorten("the quick brown fox", 12) == "the quick…"
    assert fit_parts([(0, "1,234 calls"), (2, "9,999+999 tok"), (1, "$0.1234")], 24) == "1,234 calls · $0.1234"


def test_compare_prints_a_table_that_fits_80_columns_and_says_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning, and Teo sells it. " * 40,
                    encoding="utf-8")
    console = Console(width=80, record=True, file=io.StringIO(), force_terminal=True)
    monkeypatch.setattr("booksum_app.cli.compare_render.console", console)
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "compare", str(book), "--strategies", "direct", "--models", "openai:gpt-4o-mini", "--judge",
            "openai:gpt-4o-mini", "--base-url", server.openai_base_url, "--out", str(tmp_path / "out"),
            "--no-plots", "--yes"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = console.export_text()
    table = text[text.index("BooookScore comparison"):text.index("Not shown at 80 columns")]
    assert all(len(line) <= 80 for line in table.splitlines())
    assert "Mod…" not in table and "…" not in table
    assert "Model" in table and "BooookScore" in table
    # the footnote wraps at spaces: the path in it stays whole on one line
    assert f"{tmp_path / 'out'}/results.csv" in text
    assert f"every column is in {tmp_path / 'out'}/results.csv and results.json" in " ".join(text.split())


def test_score_shows_a_bar_over_the_planned_calls_with_eta_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar's total is the plan's calls; its figures carry dollars and, mid-run, an ETA."""
    import json

    from booksum_app.cli import live

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    updates: list[dict[str, object]] = []
    made = []

    def recording_bar(*args: object, **kwargs: object) -> object:
        bar = live.progress_bar(*args, **kwargs)  # type: ignore[arg-type]
        real = bar.update

        def update(task: object, **fields: object) -> None:
            updates.append(fields)
            real(task, **fields)  # type: ignore[arg-type]

        bar.update = update  # type: ignore[method-assign]
        made.append(bar)
        return bar

    monkeypatch.setattr("booksum_app.cli.score.progress_bar", recording_bar)
    summaries = tmp_path / "small-cleaned.json"
    summaries.write_text(json.dumps({
        "lisk.epub": "Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it. The bakery stays in the family.",
        "north.epub": ("An old pilot flies mail across the mountains. His engine fails one winter. "
                       "He teaches her to fly."),
    }), encoding="utf-8")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["score", str(summaries), "--judge", "openai:gpt-4o-mini", "--base-url",
                                          server.openai_base_url, "--cache-dir", str(tmp_path / "cache"), "--yes"])
    assert result.exit_code == 0, result.output
    planned = int(result.stderr.split("upper bound): ")[1].split(" calls")[0].replace(",", ""))
    assert made and planned > 1
    totals = {u.get("total") for u in updates}
    assert totals == {planned}, "the bar's total is the plan's calls from the first update on"
    stats = [str(u["stats"]) for u in updates]
    assert all("$" in s for s in stats)
    assert any("ETA " in s for s in stats), "an ETA while calls remain"
    assert str(updates[-1]["count"]).endswith(f"/{planned}")


@pytest.mark.parametrize("width", [80, 120])
def test_score_table_fits_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    import json

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "openai-gpt-4o-mini-2048-hier-cleaned.json"
    summaries.write_text(json.dumps({
        "lisk.epub": "Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it. It is a masterpiece of hope.",
        "north.epub": "An old pilot flies mail across the mountains. His engine fails one winter. He teaches her",
    }), encoding="utf-8")
    references = tmp_path / "refs.json"
    references.write_text(json.dumps({"lisk.epub": "Mara keeps the bakery.", "north.epub": "A pilot teaches."}),
                          encoding="utf-8")
    console = plain_console(width=width, record=True, file=io.StringIO(), force_terminal=True)  # booksum's consoles
    monkeypatch.setattr("booksum_app.cli.score.console", console)
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["score", str(summaries), "--judge", "openai:gpt-4o-mini", "--base-url",
                                          server.openai_base_url, "--references", str(references),
                                          "--cache-dir", str(tmp_path / "cache"), "--yes"])
    assert result.exit_code == 0, result.output
    text = console.export_text()
    table = text[text.index("booksum scores"):text.index("Error types")].split("Not shown at")[0]
    lines = table.splitlines()
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    assert "…" not in table
    for header in ("System", "BooookScore", "95% CI", "Avg len"):
        assert all(word in table for word in header.split())
    if width == 80:
        assert "Not shown at 80 columns:" in text and "every column is in the --json and --csv outputs" in text


# ---- generated tables: identifiers and numbers whole, prose wrapped at spaces ---------------

_ids = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_:./", min_size=1, max_size=40)
_numbers = st.one_of(st.integers(0, 10**9).map(lambda n: f"{n:,}"),
                     st.floats(0, 1e4, allow_nan=False).map(lambda x: f"${x:.4f}"))
_prose = st.lists(st.text("abcdefghij", min_size=1, max_size=12), min_size=1, max_size=6).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(kinds=st.lists(st.sampled_from(["id", "number", "prose"]), min_size=1, max_size=8),
       data=st.data(), width=st.integers(40, 200))
def test_generated_tables_never_cut_an_identifier_or_a_number(kinds: list[str], data: st.DataObject,
                                                               width: int) -> None:
    columns = [Col(f"c{i} {kind}", i, "left" if kind != "number" else "right", 16 if kind == "prose" else None,
                   kind == "prose") for i, kind in enumerate(kinds)]
    cell = {"id": _ids, "number": _numbers, "prose": _prose}
    rows = data.draw(st.lists(st.tuples(*(cell[k] for k in kinds)), min_size=1, max_size=4))
    fitted = fit_table("t", columns, [list(r) for r in rows], width)
    if fitted.table is None:  # the first column alone is wider than the terminal: one line per cell
        assert all(f"{columns[0].header}: {row[0]}" in fitted.records for row in rows)
        return
    lines = _render(fitted.table, width)
    assert all(len(line) <= width for line in lines)
    kept = [i for i, col in enumerate(columns) if col.header not in fitted.dropped]
    assert 0 in kept
    for row in rows:
        for i in kept:
            if kinds[i] == "prose":
                assert all(any(word in line for line in lines) for word in row[i].split())
            else:
                assert any(row[i] in line for line in lines), (row[i], lines)


@pytest.mark.parametrize("ident", [":v:", ":smile:", "model:thumbs_up:", "[bold]x[/bold]"])
def test_an_emoji_code_or_markup_in_an_identifier_stays_text(ident: str) -> None:
    """Found by the generated tables: rich turned an id ``:v:`` into an emoji. Outside text is data."""
    fitted = fit_table("t", [Col("model", 0)], [[esc(ident)]], 80)
    assert fitted.table is not None
    assert any(ident in line for line in _render(fitted.table, 80))
