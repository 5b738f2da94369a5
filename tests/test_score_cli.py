"""``booksum score`` through click's CliRunner: annotations, fake judge, outputs, exit codes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import RELEASE_DIR  # where `booksum data` puts the release

from booksum_app.cli import cli
from booksum_app.runners.score import ScoreSettings, load_summaries, run_score
from booksum_app.scoring.aggregate import aggregate
from booksum_app.scoring.release import read_annotations
from booksum_app.testing.fake_server import FakeServer

SMALL = {
    "lisk.epub": ("Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it. "
                  "The bakery stays in the family for good."),
    "north.epub": "An old pilot flies mail across the mountains. His engine fails one winter. He teaches her to fly.",
}


def _release(name: str) -> Path:
    path = RELEASE_DIR / name
    if not path.is_file():
        pytest.skip(f"BooookScore release file {path} not found")
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def small_json(tmp_path: Path) -> Path:
    path = tmp_path / "small-cleaned.json"
    path.write_text(json.dumps(SMALL), encoding="utf-8")
    return path


def test_scores_release_annotations_without_any_llm_call(tmp_path: Path) -> None:
    out = tmp_path / "scores.json"
    code, stdout, _ = invoke(
        "score",
        str(_release("summaries/gpt4-2048-hier-cleaned.json")),
        "--annotations",
        str(_release("annotations/gpt4-2048-hier.json")),
        "--json",
        str(out),
    )
    assert code == 0
    assert "89.4" in stdout and "778.6" in stdout
    assert "judge:release-annotations|file:gpt4-2048-hier.json" in stdout
    data = json.loads(out.read_text())
    assert data["kind"] == "booksum.scores" and data["schema_version"] == 1
    system = data["systems"][0]
    assert system["name"] == "gpt4-2048-hier"
    assert round(system["booookscore"]["score"], 1) == 89.4
    assert system["booookscore"]["bootstrap_seed"] == 20240101
    assert system["calls"]["calls"] == 0


@pytest.mark.parametrize("mode", ["sentence", "batched"])
def test_fake_judge_over_http_writes_every_output(
    tmp_path: Path, small_json: Path, mode: str
) -> None:
    paths = {k: tmp_path / f"out.{k}" for k in ("json", "csv", "html")}
    annotations = tmp_path / "annotations.json"
    with FakeServer() as server:
        code, stdout, stderr = invoke(
            "score",
            str(small_json),
            "--judge",
            "openai:gpt-4o-mini",
            "--base-url",
            server.openai_base_url,
            "--mode",
            mode,
            "--batch-size",
            "2",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
            str(paths["json"]),
            "--csv",
            str(paths["csv"]),
            "--report",
            str(paths["html"]),
            "--annotations-out",
            str(annotations),
        )
    assert code == 0, stderr
    assert f"mode:{mode}" in stdout and "judge:openai:gpt-4o-mini" in stdout
    data = json.loads(paths["json"].read_text())
    system = data["systems"][0]
    assert system["booookscore"]["n_sentences"] == 6
    assert system["calls"]["calls"] == (
        6 if mode == "sentence" else 4
    )  # 3 sentences: batches of 2 + 1
    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert rows[0]["system"] == "small" and float(rows[0]["booookscore"]) == pytest.approx(
        system["booookscore"]["score"]
    )
    # annotations round-trip: reading them back gives the same score
    again = aggregate(read_annotations(annotations, summaries=SMALL))
    assert 100 * (again.score or 0) == pytest.approx(system["booookscore"]["score"], abs=1e-3)
    assert "<mark" in paths["html"].read_text() or system["booookscore"]["n_confusing"] == 0


def test_rerun_is_free_thanks_to_the_call_cache(tmp_path: Path, small_json: Path) -> None:
    with FakeServer() as server:
        args = [
            "score",
            str(small_json),
            "--judge",
            "openai:gpt-4o-mini",
            "--base-url",
            server.openai_base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
        ]
        assert invoke(*args, str(tmp_path / "a.json"))[0] == 0
        assert invoke(*args, str(tmp_path / "b.json"))[0] == 0
    first = json.loads((tmp_path / "a.json").read_text())["systems"][0]
    second = json.loads((tmp_path / "b.json").read_text())["systems"][0]
    assert second["calls"]["cache_hits"] == second["calls"]["calls"] == first["calls"]["calls"] > 0
    assert second["booookscore"]["score"] == first["booookscore"]["score"]


def test_bad_summaries_file_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    code, _, stderr = invoke("score", str(bad), "--no-judge")
    assert code == 2
    assert "not valid JSON" in stderr and len(stderr.strip().splitlines()) == 1
    assert "Traceback" not in stderr


def test_missing_file_and_annotation_mismatch_are_input_errors(
    tmp_path: Path, small_json: Path
) -> None:
    code, _, stderr = invoke("score", str(tmp_path / "nope.json"), "--no-judge")
    assert code == 2 and "does not exist" in stderr
    other = tmp_path / "ann.json"
    other.write_text(
        json.dumps({"elsewhere.epub": {"A.": {"questions": "Q?", "types": ["salience"]}}})
    )
    code, _, stderr = invoke("score", str(small_json), "--annotations", str(other))
    assert code == 2 and "absent from the summaries" in stderr


def test_max_cost_stops_with_its_exit_code(tmp_path: Path, small_json: Path) -> None:
    with FakeServer() as server:
        code, _, stderr = invoke(
            "score",
            str(small_json),
            "--judge",
            "openai:gpt-4o",
            "--base-url",
            server.openai_base_url,
            "--no-cache",
            "--max-cost",
            "0.000001",
        )
    assert code == 5 and "--max-cost" in stderr


def test_no_judge_directory_of_records_and_text_files_with_source_and_references(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text(
        json.dumps(
            {
                "kind": "booksum.summary",
                "summary": "The fox ran into the wood. The fox slept.",
                "book": {"title": "Fox", "source_path": "/books/fox.txt"},
            }
        )
    )
    (runs / "owl.md").write_text("The owl watched the fox. The owl flew away.", encoding="utf-8")
    books = tmp_path / "books"
    books.mkdir()
    (books / "fox.txt").write_text(
        "The fox ran into the wood at night. Then the fox slept under a tree.\n", encoding="utf-8"
    )
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"fox.txt": "The fox ran into the wood and slept."}))
    assert load_summaries(runs) == {
        "fox.txt": "The fox ran into the wood. The fox slept.",
        "owl.md": "The owl watched the fox. The owl flew away.",
    }
    run = run_score([runs], ScoreSettings(use_judge=False, source=books, references=refs))
    system = run.systems[0]
    assert system.booookscore is None
    fox = next(r for r in system.rows if r.book == "fox.txt")
    # summary 3-grams: the fox ran / fox ran into / ran into the / into the wood / the wood . /
    # wood . the / . the fox / the fox slept / fox slept . -> 9 distinct; absent from the source:
    # "the wood ." "wood . the" ". the fox" "the fox slept" -> 4 novel
    assert fox.ngrams.n_distinct == 9 and fox.ngrams.n_novel == 4
    assert system.ngrams.n_with_source == 1
    assert any("no source book" in n for n in run.notes)
    assert system.rouge_l is not None and system.n_with_reference == 1
    code, stdout, _ = invoke(
        "score", str(runs), "--no-judge", "--source", str(books), "--references", str(refs)
    )
    assert code == 0 and "% novel 3g" in stdout and "ROUGE-L" in stdout
