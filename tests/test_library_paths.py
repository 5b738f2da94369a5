"""The library takes ``str`` or ``Path`` wherever it takes a path: every public entry point of
booksum_app and of the runners docs/compare.md shows, called with both."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import release_file

import booksum_app
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.compare import run_compare
from booksum_app.runners.compare_plan import plan_grid
from booksum_app.runners.experiment import DatasetSpec, Experiment, PrecomputedSet, load_experiment, release_sets
from booksum_app.runners.score import ScoreSettings, plan_score, run_score
from booksum_app.testing.fake_backend import FakeBackend

KINDS: list[Callable[[Path], str | os.PathLike[str]]] = [str, Path]
TEXT = "Chapter 1\n\n" + "Mara bakes bread in Lisk every morning, and Teo sells it at the market. " * 40


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    books = tmp_path / "books"
    books.mkdir()
    for name in ("lisk.txt", "teo.txt"):
        (books / name).write_text(TEXT, encoding="utf-8")
    (books / "README.md").write_text("# two books\n", encoding="utf-8")
    return books


@pytest.mark.parametrize("kind", KINDS)
def test_book_entry_points(kind: Callable[[Path], str | os.PathLike[str]], folder: Path, tmp_path: Path) -> None:
    book = kind(folder / "lisk.txt")
    assert booksum_app.open_book(book).title
    assert booksum_app.inspect(book, model="openai:gpt-4o").plans
    record = booksum_app.summarize(book, strategy="direct", model=Client(FakeBackend()),
                                   llm_settings=LLMSettings(cache_dir=kind(tmp_path / "cache")))
    written = tmp_path / "record.json"
    written.write_text(json.dumps(record.to_dict()), encoding="utf-8")
    assert booksum_app.read_record(kind(written)).summary == record.summary


@pytest.mark.parametrize("kind", KINDS)
def test_score_entry_points(kind: Callable[[Path], str | os.PathLike[str]], folder: Path, tmp_path: Path) -> None:
    summaries = tmp_path / "summaries"
    summaries.mkdir()
    (summaries / "lisk.txt").write_text("Mara bakes bread. Teo sells it.", encoding="utf-8")
    scores = booksum_app.score(kind(summaries), judge=None, sources=kind(folder))
    assert scores.ngrams.n_with_source == 1
    settings = ScoreSettings(use_judge=False, source=kind(folder))  # type: ignore[arg-type]
    assert plan_score([kind(summaries)], settings) is None
    assert run_score([kind(summaries)], settings).systems[0].ngrams.n_with_source == 1
    annotations = release_file("annotations/gpt4-2048-hier.json")
    released = json.loads(release_file("summaries/gpt4-2048-hier-cleaned.json").read_text(encoding="utf-8"))
    assert booksum_app.score_annotations(kind(annotations), summaries=released).system.score is not None


@pytest.mark.parametrize("kind", KINDS)
def test_compare_as_docs_compare_md_writes_it(kind: Callable[[Path], str | os.PathLike[str]], folder: Path,
                                              tmp_path: Path) -> None:
    exp = Experiment(books=(kind(folder),), strategies=("direct",), models=("fake",),  # type: ignore[arg-type]
                     out=kind(tmp_path / "compare-out"), use_judge=False)  # type: ignore[arg-type]
    assert [p.name for p in exp.books] == ["lisk.txt", "teo.txt"] and exp.notes
    files = Experiment(books=tuple(kind(folder / n) for n in ("lisk.txt", "teo.txt")),  # type: ignore[misc]
                       strategies=("direct",), models=("openai:gpt-4o-mini",), use_judge=False)
    assert plan_grid(files).calls > 0
    result = run_compare(exp, models={"fake": Client(FakeBackend())}, plots=False)
    assert len(result.rows[0].books) == 2 and (tmp_path / "compare-out" / "results.json").is_file()


@pytest.mark.parametrize("kind", KINDS)
def test_experiment_parts_take_str_paths(kind: Callable[[Path], str | os.PathLike[str]], tmp_path: Path) -> None:
    assert isinstance(DatasetSpec(kind(tmp_path / "d.jsonl")).path, Path)  # type: ignore[arg-type]
    precomputed = PrecomputedSet("x", kind(tmp_path / "s.json"), kind(tmp_path / "a.json"))  # type: ignore[arg-type]
    assert isinstance(precomputed.summaries, Path) and isinstance(precomputed.annotations, Path)
    toml = tmp_path / "e.toml"
    toml.write_text('strategies = ["direct"]\n', encoding="utf-8")
    assert load_experiment(kind(toml))["strategies"] == ("direct",)
    release = release_file("summaries/gpt4-2048-hier-cleaned.json").parents[1]
    assert len(release_sets(kind(release))) == 4
    assert isinstance(LLMSettings(cache_dir=kind(tmp_path)).cache_dir, Path)  # type: ignore[arg-type]
