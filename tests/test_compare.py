"""`booksum compare`: the grid against the fake server, resume, pre-flight, experiment files, plots, release rows."""

from __future__ import annotations

import dataclasses
import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BOOKS_DIR, RELEASE_DIR

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.calls import Client
from booksum_app.runners.compare import run_compare
from booksum_app.runners.compare_plan import check_plan, plan_grid
from booksum_app.runners.compare_results import split_release_name
from booksum_app.runners.experiment import (
    Experiment,
    GridConfig,
    PrecomputedSet,
    build_experiment,
    load_experiment,
    parse_precomputed,
    release_sets,
)
from booksum_app.scoring.booookscore import split_summary
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_judge import is_fake_confusing
from booksum_app.testing.fake_server import FakeServer

NAMES = ("Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo")
PLACES = ("harbour", "library", "orchard", "station", "market", "chapel", "mill", "bridge")
THINGS = ("a letter", "a brass key", "an old map", "a torn coat", "a silver coin", "a locked box")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_book(path: Path, *, seed: int, chapters: int = 3, paragraphs: int = 6) -> Path:
    """A short synthetic novel (.txt, 'Chapter N' headings, ~2-3k tokens) with varied sentences."""
    rng = random.Random(seed)
    parts = [f"The Story of Book {seed}\n"]
    for c in range(1, chapters + 1):
        parts.append(f"Chapter {c}\n")
        for p in range(paragraphs):
            sentences = []
            for s in range(5):
                who, where, what = rng.choice(NAMES), rng.choice(PLACES), rng.choice(THINGS)
                sentences.append(f"On day {c}-{p}-{s}, {who} went to the {where} and found {what} there.")
            parts.append(" ".join(sentences) + "\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


@pytest.fixture()
def books(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "books"
    folder.mkdir()
    return [write_book(folder / f"book-{n}.txt", seed=n) for n in (1, 2)]


def grid_args(books: list[Path], server: FakeServer, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["compare", *map(str, books), "--strategies", "hier,inc,direct", "--models", "openai:gpt-4o-mini",
            "--chunk-sizes", "256,512", "--max-summary-len", "120", "--base-url", server.openai_base_url,
            "--cache-dir", str(cache), "--out", str(out), "--judge", "openai:gpt-4o-mini", *extra]


def test_grid_runs_every_configuration_and_a_rerun_makes_no_call(
    books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = tmp_path / "out"
    with FakeServer() as server:
        args = grid_args(books, server, out, tmp_path / "cache", "--no-plots")
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        first_calls = server.call_count
        assert first_calls > 0
        again = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert again.exit_code == 0, again.output
        assert server.call_count == first_calls, "finished records + call cache: no call repeated"
    assert "10 from finished records" in again.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["kind"] == "booksum.compare" and data["schema_version"] == 1
    names = [r["name"] for r in data["rows"]]
    assert names == ["openai-gpt-4o-mini-256-hier", "openai-gpt-4o-mini-512-hier", "openai-gpt-4o-mini-256-inc",
                     "openai-gpt-4o-mini-512-inc", "openai-gpt-4o-mini-direct"], "direct runs once per model"
    for row in data["rows"]:
        assert row["n_books"] == 2 and row["booookscore"]["score"] is not None
        assert row["usage"]["calls"] > 0 and row["usage"]["cost_usd"] > 0
        assert row["novel_3gram_pct"] is not None, "sources known: % novel 3-grams computed"
        assert row["booookscore"]["ci95"][0] <= row["booookscore"]["score"] <= row["booookscore"]["ci95"][1]
        summaries = json.loads((out / "summaries" / f"{row['name']}.json").read_text(encoding="utf-8"))
        assert sorted(summaries) == ["book-1.txt", "book-2.txt"]
        # the fake judge flags a fixed, checkable set of sentences: the score is theirs
        for book in row["books"]:
            sentences = split_summary(summaries[book["book"]])[0]
            expected = 100 * sum(not is_fake_confusing(s) for s in sentences) / len(sentences)
            assert book["booookscore"] == pytest.approx(expected, abs=1e-3)
        assert (out / "annotations" / f"{row['name']}.json").is_file()
        for book in ("book-1", "book-2"):
            record = json.loads((out / "records" / row["name"] / f"{book}.json").read_text(encoding="utf-8"))
            assert record["kind"] == "booksum.summary" and record["extra"]["compare"]["job_key"]
    csv_lines = (out / "results.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[0].startswith("name,kind,model,strategy,chunk_size") and len(csv_lines) == 6
    for column in ("BooookScore (95% CI)", "Avg. len", "% novel 3-g", "% rep. 3-g", "Calls (cached)", "Wall s"):
        assert column in result.output
    assert "booookscore|judge:openai:gpt-4o-mini" in result.output


def test_changed_options_rerun_only_what_changed(books: list[Path], tmp_path: Path) -> None:
    """A record whose job key no longer matches (here: another G) is run again; others are reused."""
    model = Client(FakeBackend(), concurrency=4)
    exp = Experiment(books=tuple(books), strategies=("direct",), models=("fake",), max_summary_tokens=120,
                     out=tmp_path / "o", use_judge=False)
    first = run_compare(exp, models={"fake": model}, plots=False)
    assert first.reused == 0 and first.rows[0].usage.calls > 0
    second = run_compare(exp, models={"fake": model}, plots=False)
    assert second.reused == 2
    third = run_compare(dataclasses.replace(exp, max_summary_tokens=100), models={"fake": model}, plots=False)
    assert third.reused == 0


def test_a_finished_books_ngram_sets_are_dropped_unless_a_precomputed_set_needs_them(
    books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat in the number of books (issue 11: 200 books took 2.2 GB when every set was kept)."""
    from booksum_app.runners import compare

    left: dict[str, set[str]] = {}
    close = compare._GridRun.close

    def spy(self: compare._GridRun) -> None:
        left.update(sources=set(self.sources), indexes=set(self.copy_indexes), jobs=set(self.source_jobs))
        close(self)

    monkeypatch.setattr(compare._GridRun, "close", spy)
    (tmp_path / "pre.json").write_text(json.dumps({"book-2.txt": "A short summary of the second book."}),
                                       encoding="utf-8")
    exp = Experiment(books=tuple(books), strategies=("direct",), models=("fake",), max_summary_tokens=120,
                     out=tmp_path / "o", use_judge=False, precomputed=(PrecomputedSet("pre", tmp_path / "pre.json"),))
    result = run_compare(exp, models={"fake": Client(FakeBackend(), concurrency=4)}, plots=False)
    assert left == {"sources": {"book-2.txt"}, "indexes": set(), "jobs": set()}
    pre = next(r for r in result.rows if r.kind == "precomputed")
    assert pre.ngrams.novel_pct is not None, "the precomputed set's book kept its source n-grams"


def test_plots_are_valid_png_and_svg(books: list[Path], tmp_path: Path) -> None:
    exp = Experiment(books=tuple(books), strategies=("hier", "direct"), models=("fake",), chunk_sizes=(256,),
                     max_summary_tokens=120, out=tmp_path / "o", judge="fake")
    result = run_compare(exp, models={"fake": Client(FakeBackend(), concurrency=4)})
    for stem in ("score_vs_length", "cost_vs_score"):
        png = tmp_path / "o" / "plots" / f"{stem}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5_000
        root = ET.parse(tmp_path / "o" / "plots" / f"{stem}.svg").getroot()
        assert root.tag.endswith("svg")
        assert any(png == f for f in result.files)
    svg = (tmp_path / "o" / "plots" / "score_vs_length.svg").read_text(encoding="utf-8")
    assert "fake-model-256-hier" in svg and "fake-model-direct" in svg, "every configuration is labelled with its name"


def test_an_all_free_grid_gets_a_readable_cost_axis(books: list[Path], tmp_path: Path) -> None:
    import dataclasses

    from booksum_app.testing.fake_backend import FAKE_MODEL_INFO

    free = dataclasses.replace(FAKE_MODEL_INFO, input_usd_per_mtok=0.0, output_usd_per_mtok=0.0,
                               cached_input_usd_per_mtok=0.0)
    exp = Experiment(books=tuple(books[:1]), strategies=("direct",), models=("fake",), max_summary_tokens=120,
                     out=tmp_path / "o", judge="fake")
    run_compare(exp, models={"fake": Client(FakeBackend(free), concurrency=4)})
    cost_svg = (tmp_path / "o" / "plots" / "cost_vs_score.svg").read_text(encoding="utf-8")
    assert "every configuration cost $0" in cost_svg, "an all-zero axis says why instead of showing -0.04..0.04"


def test_preflight_refuses_over_threshold_without_yes(books: list[Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        args = grid_args(books, server, tmp_path / "out", tmp_path / "cache", "--max-plan-cost", "0")
        result = CliRunner().invoke(cli, args, input="")  # stdin is not a TTY
        assert result.exit_code == 2
        assert "--yes" in result.output and "--max-plan-cost" in result.output
        assert "Traceback" not in result.output
        assert server.call_count == 0, "nothing is spent before confirmation"
        planned = CliRunner().invoke(cli, [*args, "--plan-only"], catch_exceptions=False)
        assert planned.exit_code == 0 and "Pre-flight plan" in planned.output and server.call_count == 0


def test_plan_counts_every_remaining_summary_and_the_judge(books: list[Path], tmp_path: Path) -> None:
    exp = Experiment(books=tuple(books), strategies=("hier", "inc", "direct"), models=("openai:gpt-4o-mini",),
                     chunk_sizes=(256, 512), max_summary_tokens=120, out=tmp_path / "o", judge="openai:gpt-4o-mini")
    plan = plan_grid(exp)
    assert [line.name for line in plan.lines] == [
        "openai-gpt-4o-mini-256-hier", "openai-gpt-4o-mini-512-hier", "openai-gpt-4o-mini-256-inc",
        "openai-gpt-4o-mini-512-inc", "openai-gpt-4o-mini-direct", "judge"]
    assert all(line.remaining == 2 for line in plan.lines[:-1])
    assert plan.lines[-1].remaining == 10 and plan.lines[-1].calls == 10 * 6  # ceil(120 / 20) sentences
    hier256, hier512 = plan.lines[0], plan.lines[1]
    assert hier256.calls > hier512.calls > 2, "smaller chunks: more leaf summaries"
    assert plan.cost_usd == pytest.approx(sum(line.cost_usd for line in plan.lines)) and plan.cost_usd > 0
    assert check_plan(plan, max_cost_usd=100.0, confirmed=False, interactive=False)
    assert check_plan(plan, max_cost_usd=0.0, confirmed=True, interactive=False)
    assert not check_plan(plan, max_cost_usd=0.0, confirmed=False, interactive=True)
    with pytest.raises(ConfigError, match="--yes"):
        check_plan(plan, max_cost_usd=0.0, confirmed=False, interactive=False)


def test_experiment_file_with_overrides(books: list[Path], tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(
        'books = ["books"]\nstrategies = ["hier", "inc"]\nmodels = ["openai:gpt-4o-mini"]\n'
        'chunk_sizes = [1024, 2048]\njudge = "openai:gpt-4o"\nout = "results"\nmax_summary_len = 300\n'
        '[[precomputed]]\nname = "mine"\nsummaries = "s.json"\nannotations = "a.json"\n',
        encoding="utf-8",
    )
    values = load_experiment(path)
    assert values["books"] == (tmp_path / "books",) and values["out"] == tmp_path / "results"
    exp = build_experiment(values, {"chunk_sizes": (512,), "strategies": None, "precomputed": ()})
    assert exp.books == tuple(books), "a directory expands to its books"
    assert exp.chunk_sizes == (512,) and exp.strategies == ("hier", "inc") and exp.max_summary_tokens == 300
    assert exp.precomputed == (PrecomputedSet("mine", tmp_path / "s.json", tmp_path / "a.json"),)
    assert exp.judge == "openai:gpt-4o"
    path.write_text('strategy = ["hier"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'strategy'"):
        load_experiment(path)
    path.write_text('chunk_sizes = ["big"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="chunk_sizes must be an integer"):
        load_experiment(path)


def test_example_experiment_file_loads() -> None:
    if not (RELEASE_DIR / "summaries").is_dir() or not BOOKS_DIR.is_dir():
        pytest.skip("the example reads the sample books and the BooookScore release through booksum data: "
                    "set BOOKSUM_DATA_DIR or run booksum data fetch")
    example = Path(__file__).resolve().parents[1] / "examples" / "experiment.toml"
    values = load_experiment(example)
    exp = build_experiment(values, {})
    assert len(exp.books) == 5 and "war-and-peace" not in " ".join(p.name for p in exp.books)
    assert len(exp.grid()) == 5 and len(exp.precomputed) == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=s.json", PrecomputedSet("a", Path("s.json"))),
        ("a=s.json:n.json", PrecomputedSet("a", Path("s.json"), Path("n.json"))),
        ("x y = dir/s.json", PrecomputedSet("x y", Path(" dir/s.json"))),
    ],
)
def test_parse_precomputed(text: str, expected: PrecomputedSet) -> None:
    assert parse_precomputed(text) == expected


@pytest.mark.parametrize("bad", ["s.json", "=s.json", "a="])
def test_parse_precomputed_rejects(bad: str) -> None:
    with pytest.raises(ConfigError, match="NAME=SUMMARIES.json"):
        parse_precomputed(bad)


def test_grid_slugs_and_release_names() -> None:
    exp = Experiment(books=(Path("b.txt"),), strategies=("hier", "direct"), models=("openai:gpt-4o", "local"),
                     chunk_sizes=(2048, 4096))
    assert [c.slug for c in exp.grid()] == [
        "openai-gpt-4o-2048-hier", "openai-gpt-4o-4096-hier", "openai-gpt-4o-direct",
        "local-2048-hier", "local-4096-hier", "local-direct"]
    assert GridConfig("inc", "vllm:Qwen/Qwen2.5-7B", 1024).slug == "vllm-Qwen-Qwen2.5-7B-1024-inc"
    assert split_release_name("gpt4-2048-hier") == ("gpt4", 2048, "hier")
    assert split_release_name("claude-2-88k-inc-cleaned") == ("claude-2-88k-inc-cleaned", None, None)
    with pytest.raises(ConfigError, match="unknown strategy"):
        Experiment(strategies=("tree",))


def test_precomputed_set_with_annotations_joins_the_table(tmp_path: Path) -> None:
    """Hand-checkable: two summaries of 4 and 2 sentences, one confusing sentence in the first -> 87.5."""
    summaries = {"a.epub": "Ann left. Bob stayed. Cy ran home. Dee slept.", "b.epub": "It rained. Then it stopped."}
    annotations = {"a.epub": {"Cy ran home.": {"questions": "Who is Cy?", "types": ["entity omission"]}},
                   "b.epub": None}
    (tmp_path / "s.json").write_text(json.dumps(summaries), encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps(annotations), encoding="utf-8")
    exp = Experiment(precomputed=(PrecomputedSet("m-1024-inc", tmp_path / "s.json", tmp_path / "a.json"),),
                     out=tmp_path / "o")
    result = run_compare(exp, plots=False)
    (row,) = result.rows
    assert row.kind == "precomputed" and (row.model, row.chunk_size, row.strategy) == ("m", 1024, "inc")
    assert row.booookscore is not None and row.booookscore.score == pytest.approx(0.875)
    assert row.ngrams.novel_pct is None, "no source book: % novel 3-grams unavailable"
    assert json.loads((tmp_path / "o" / "summaries" / "m-1024-inc.json").read_text(encoding="utf-8")) == summaries


def test_released_configurations_show_their_table_2_figures(tmp_path: Path) -> None:
    if not (RELEASE_DIR / "summaries").is_dir():
        pytest.skip("BooookScore release not found")
    result = run_compare(Experiment(precomputed=release_sets(RELEASE_DIR), out=tmp_path / "o"), plots=False)
    table2 = {  # BooookScore Table 2: score, average length, % repeated 3-grams
        "gpt4-2048-hier": (89.4, 778.6, 4.2),
        "gpt4-2048-inc": (82.9, 805.4, 3.4),
        "chatgpt-2048-hier": (84.5, 667.3, 9.0),
        "chatgpt-2048-inc": (67.7, 484.5, 3.5),
    }
    assert [r.name for r in result.rows] == list(table2)
    for row in result.rows:
        score, length, repeated = table2[row.name]
        assert row.booookscore is not None and round(100 * (row.booookscore.score or 0), 1) == score
        assert round(row.ngrams.avg_tokens or 0, 1) == length
        assert abs((row.ngrams.repeated_pct or 0) - repeated) < 0.35
        assert row.ngrams.novel_pct is None and len(row.books) == 100


def test_with_release_option_adds_the_four_configurations() -> None:
    if not (RELEASE_DIR / "summaries").is_dir():
        pytest.skip("BooookScore release not found")
    sets = release_sets(RELEASE_DIR)
    assert [s.name for s in sets] == ["gpt4-2048-hier", "gpt4-2048-inc", "chatgpt-2048-hier", "chatgpt-2048-inc"]
    assert all(s.annotations is not None and s.annotations.is_file() for s in sets)
    with pytest.raises(ConfigError, match="--with-release"):
        release_sets(RELEASE_DIR / "annotations")


@pytest.mark.slow
def test_five_book_grid_with_the_release_in_one_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's acceptance run: 3 strategies x 2 chunk sizes over the five shorter sample books."""
    from conftest import BOOKS_DIR

    five = sorted(p for p in BOOKS_DIR.glob("*.epub") if "war-and-peace" not in p.name)
    if len(five) != 5 or not (RELEASE_DIR / "summaries").is_dir():
        pytest.skip("sample books or BooookScore release not found")
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = tmp_path / "out"
    with FakeServer() as server:
        args = ["compare", *map(str, five), "--strategies", "hier,inc,direct", "--models", "openai:gpt-4o-mini",
                "--chunk-sizes", "2048,4096", "--base-url", server.openai_base_url, "--out", str(out),
                "--with-release", str(RELEASE_DIR), "--judge", "openai:gpt-4o-mini", "--yes"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        calls = server.call_count
        again = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert again.exit_code == 0 and server.call_count == calls
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    by_name = {r["name"]: r for r in data["rows"]}
    assert len(by_name) == 9
    for name in ("2048-hier", "4096-hier", "2048-inc", "4096-inc", "direct"):
        row = by_name[f"openai-gpt-4o-mini-{name}"]
        assert row["n_books"] == 5 and row["booookscore"]["score"] > 0 and row["novel_3gram_pct"] is not None
    assert by_name["gpt4-2048-hier"]["booookscore"]["score"] == pytest.approx(89.4, abs=0.05)
    assert by_name["chatgpt-2048-inc"]["avg_tokens"] == pytest.approx(484.5, abs=0.05)
    for stem in ("score_vs_length", "cost_vs_score"):
        assert (out / "plots" / f"{stem}.png").read_bytes()[:8] == PNG_MAGIC
        assert (out / "plots" / f"{stem}.svg").is_file()


def test_model_option_is_spelled_as_on_every_command(books: list[Path], tmp_path: Path) -> None:
    args = ["compare", *map(str, books), "--strategies", "direct", "-m", "openai:gpt-4o-mini", "--model",
            "openai:gpt-4o,openai:gpt-4o-mini", "--judge", "openai:gpt-4o", "--out", str(tmp_path / "out"),
            "--plan-only"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    # --plan-only: the plan is the output, on stdout (issue 28)
    assert "openai-gpt-4o-mini-direct" in result.stdout and "openai-gpt-4o-direct" in result.stdout
    assert result.stdout.count("openai-gpt-4o-mini-direct") == 1, "a model named twice runs once"
    empty = CliRunner().invoke(cli, ["compare", *map(str, books), "-m", " , ", "--out", str(tmp_path / "o"),
                                     "--plan-only"])
    assert empty.exit_code == 2 and "names nothing" in empty.stderr


def test_failure_modes_appear_in_the_table_json_and_csv(books: list[Path], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    from booksum_app.testing.fake_replies import JUDGE_MARKER, default_reply

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    commentary = "The story explores grief and loss in a quiet town. The narrative highlights themes of courage."

    def reply(request):  # type: ignore[no-untyped-def]
        return default_reply(request) if JUDGE_MARKER in request.user_text else commentary

    with FakeServer(reply=reply) as server:
        args = ["compare", *map(str, books), "--strategies", "direct", "-m", "openai:gpt-4o-mini", "--base-url",
                server.openai_base_url, "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "out"),
                "--no-plots", "--yes", "--no-clean"]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Failure modes" in result.stdout and "subjective 2" in result.stdout
    row = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["rows"][0]
    assert row["failures"]["counts"]["subjective"] == 2 and row["failures"]["counts"]["copying"] == 0
    assert row["failures"]["n_with_source"] == 2, "compare knows the source: copying is measured"
    assert any("explores" in term for term in row["books"][0]["failures"]["subjective_terms"])
    with (tmp_path / "out" / "results.csv").open(encoding="utf-8") as handle:
        line = next(csv.DictReader(handle))
    assert line["failures_subjective"] == "2" and line["failures_too_short"] == "2"  # 2 sentences for a G of 900


def test_every_configuration_reports_every_failure_mode(books: list[Path], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, grid_args(books, server, tmp_path / "out", tmp_path / "c", "--no-plots",
                                                   "--no-judge"))
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["rows"]
    for row in rows:
        assert set(row["failures"]["counts"]) == {"subjective", "copying", "repetition", "echo", "too_short", "cut_off"}
        assert all(isinstance(n, int) for n in row["failures"]["counts"].values())


def test_the_run_takes_the_plans_cuts_instead_of_chunking_each_book_again(
    books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import booksum_app.chunking.memo as memo_module
    import booksum_app.runners.summarize as summarize_module

    cuts: list[int] = []
    real_spans, real_chunk_book = memo_module.chunk_book_spans, summarize_module.chunk_book
    monkeypatch.setattr(memo_module, "chunk_book_spans",
                        lambda book, **kw: cuts.append(kw["chunk_size"]) or real_spans(book, **kw))
    monkeypatch.setattr(summarize_module, "chunk_book",
                        lambda book, **kw: cuts.append(-1) or real_chunk_book(book, **kw))
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        args = grid_args(books, server, tmp_path / "out", tmp_path / "cache", "--no-plots", "--yes")
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert sorted(cuts) == sorted([256, 512] * len(books)), "each book cut once per chunk size, by the plan"


def test_each_books_calls_carry_its_place_in_the_grid(
    books: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rank puts an earlier book's calls first, so books finish in turn rather than in lockstep
    import booksum_app.llm.calls as calls_module
    from booksum_app.llm.context import current_context

    seen: set[tuple[str | None, int]] = set()
    real_ranked = calls_module.ranked

    def ranked(priority: object) -> tuple[object, ...]:
        seen.add((current_context().book, current_context().rank))
        return real_ranked(priority)

    monkeypatch.setattr(calls_module, "ranked", ranked)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        args = ["compare", *map(str, books), "--strategies", "hier", "--models", "openai:gpt-4o-mini",
                "--chunk-sizes", "256", "--max-summary-len", "120", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots", "--yes"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert {rank for _, rank in seen} == {0, 1} and len(seen) == 2, seen
    assert {rank for book, rank in seen if book is not None and book.endswith("book-1.txt")} == {0}
