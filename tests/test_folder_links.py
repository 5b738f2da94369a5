"""Every reader of a directory follows one rule (issue 32): a symbolic link whose target lies outside
the directory is refused in one line, whatever the reader (score DIR, score --source DIR, compare's
books folder, a --prompts directory, a shard's records); links that stay inside are read. Generated
link layouts; and a scored folder's files that are no summary are skipped with one note each."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import BooksumError, InputError, PromptError
from booksum_app.files import files_in

KINDS = ("file", "inside", "outside", "chain-out", "dangling", "dir-out")


def _layout(root: Path, kinds: list[str], suffix: str) -> tuple[Path, set[str], bool]:
    """A folder with one entry per kind; (folder, names that must be read, whether any link leaves)."""
    folder = root / "folder"
    outside = root / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    secret = outside / f"secret{suffix}"
    secret.write_text("Chapter 1\n\nA secret from outside the folder.\n", encoding="utf-8")
    read: set[str] = set()
    leaves = False
    for n, kind in enumerate(kinds):
        entry = folder / f"e{n}{suffix}"
        if kind == "file":
            entry.write_text(f"Chapter 1\n\nMara bakes loaf {n}. Teo sells it.\n", encoding="utf-8")
            read.add(entry.name)
        elif kind == "inside":
            target = folder / f"t{n}.data"  # a file of the folder the reader does not list itself
            target.write_text(f"Chapter 1\n\nTeo carries basket {n}.\n", encoding="utf-8")
            entry.symlink_to(target.name)
            read.add(entry.name)
        elif kind == "outside":
            entry.symlink_to(secret)
            leaves = True
        elif kind == "chain-out":
            hop = folder / f"hop{n}.data"
            hop.symlink_to(secret)
            entry.symlink_to(hop.name)
            leaves = True
        elif kind == "dangling":
            entry.symlink_to(folder / "nowhere")
        else:
            entry.symlink_to(outside, target_is_directory=True)  # a folder outside: refused as well
            leaves = True
    return folder, read, leaves


layouts = st.lists(st.sampled_from(KINDS), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=layouts)
def test_files_in_reads_inside_links_and_refuses_any_link_out(tmp_path_factory: pytest.TempPathFactory,
                                                              kinds: list[str]) -> None:
    folder, read, leaves = _layout(tmp_path_factory.mktemp("l"), kinds, ".txt")
    if leaves:
        with pytest.raises(InputError, match="is a link out of") as caught:
            files_in(folder, suffixes=(".txt",))
        assert "\n" not in str(caught.value)
    else:
        assert {p.name for p in files_in(folder, suffixes=(".txt",))} == read


def _readers() -> dict[str, Callable[[Path], Any]]:
    from booksum_app.runners.experiment import book_files
    from booksum_app.runners.score_inputs import load_summaries, source_index

    return {"score DIR": load_summaries, "score --source DIR": source_index,
            "compare's books folder": lambda folder: book_files([folder])}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=layouts)
def test_every_reader_of_a_folder_follows_the_one_rule(tmp_path_factory: pytest.TempPathFactory,
                                                       kinds: list[str]) -> None:
    for name, read in _readers().items():
        folder, expected, leaves = _layout(tmp_path_factory.mktemp("r"), kinds, ".txt")
        if leaves:
            with pytest.raises(BooksumError, match="is a link out of") as caught:
                read(folder)
            assert caught.value.exit_code == 2 and "\n" not in str(caught.value), name
        elif expected:
            got = read(folder)
            names = {Path(k).name for k in got} if isinstance(got, dict) else {p.name for p in got}
            assert {Path(n).stem for n in names} == {Path(n).stem for n in expected}, name


def test_compare_refuses_a_book_that_links_out_before_any_call(tmp_path: Path) -> None:
    folder, _, _ = _layout(tmp_path, ["file", "outside"], ".txt")
    result = CliRunner().invoke(cli, ["compare", str(folder), "--strategies", "direct", "--models", "mock",
                                      "--no-judge", "--out", str(tmp_path / "out"), "--plan-only"])
    assert result.exit_code == 2, result.output
    assert "is a link out of" in " ".join(result.output.split())
    assert "secret" not in result.output.replace(str(tmp_path), "")


def test_a_prompt_template_that_links_out_is_refused(tmp_path: Path) -> None:
    from booksum_app.prompts import load_template, prompt_files

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("the system's secrets", encoding="utf-8")
    (prompts / "summarize_chunk.txt").symlink_to(secret)
    with pytest.raises(PromptError, match="out of prompt directory"):
        load_template("summarize_chunk", override_dir=prompts)
    with pytest.raises(PromptError, match="out of prompt directory"):
        prompt_files(prompts)


def test_a_shard_record_that_links_out_is_refused(tmp_path: Path) -> None:
    from booksum_app.files import files_in as listed

    records = tmp_path / "shard" / "records" / "grid"
    records.mkdir(parents=True)
    (tmp_path / "elsewhere.json").write_text("{}", encoding="utf-8")
    (records / "book.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(InputError, match="out of shard records"):
        listed(records, suffixes=(".json",), what="shard records")


# ---- what a scored folder holds besides summaries ----------------------------------------------


def _record(text: str, book: str) -> str:
    return json.dumps({"kind": "booksum.summary", "schema_version": 1, "summary": text,
                       "book": {"title": book, "source_path": f"/books/{book}.epub"}})


def test_a_scored_folder_skips_what_is_no_summary_with_one_note_each(tmp_path: Path) -> None:
    folder = tmp_path / "scored"
    folder.mkdir()
    text = "Mara bakes bread every morning. She sells it by noon to the town."
    (folder / "book.json").write_text(_record(text, "book"), encoding="utf-8")
    (folder / "book.md").write_text(text + "\n", encoding="utf-8")
    (folder / "other.json").write_text(_record("Teo carries heavy baskets to the market.", "other"),
                                       encoding="utf-8")
    (folder / "notes.txt").write_text("remember to rerun", encoding="utf-8")
    (folder / "owl.md").write_text("The owl watched the fox. The owl flew away.", encoding="utf-8")
    (folder / "book.failed.json").write_text(json.dumps({"status": "failed", "error": "x"}), encoding="utf-8")
    (folder / "results.json").write_text(json.dumps({"kind": "booksum.scores", "systems": []}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["score", str(folder), "--no-judge", "--json", "-"])
    assert result.exit_code == 0, result.output
    for name in ("notes.txt", "book.failed.json", "results.json"):
        assert f"skipped {name}" in result.stderr, name
    scores = json.loads(result.stdout)
    assert scores["systems"][0]["n_summaries"] == 3, "two records, each once, and a text summary"
    assert len(scores["notes"]) == 3


def test_a_folder_of_plain_text_summaries_still_counts_each_file(tmp_path: Path) -> None:
    from booksum_app.runners.score_inputs import load_summaries

    folder = tmp_path / "scored"
    folder.mkdir()
    for name in ("a.txt", "b.md", "README.md"):
        (folder / name).write_text(f"Summary in {name}.", encoding="utf-8")
    notes: list[str] = []
    assert set(load_summaries(folder, notes)) == {"a.txt", "b.md"}
    assert notes == ["skipped README.md: a readme file, not a summary"]


def test_links_inside_stay_read_when_the_folder_itself_is_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("x", encoding="utf-8")
    (real / "b.txt").symlink_to("a.txt")
    alias = tmp_path / "alias"
    os.symlink(real, alias)
    assert [p.name for p in files_in(alias, suffixes=(".txt",))] == ["a.txt", "b.txt"]
