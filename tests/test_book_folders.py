"""A books folder is a folder of books: its notes (README, LICENSE, ...), records, hidden files and
other formats are skipped with one note line, by the one rule every reader of a folder uses."""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BOOKS_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.books.folder import BOOK_SUFFIXES, NOT_BOOK_NAMES, book_kind, books_in, is_note_name
from booksum_app.cli import cli
from booksum_app.errors import ConfigError, InputError
from booksum_app.runners.experiment import Experiment, book_sources
from booksum_app.runners.score_inputs import source_index

TEXT = "Chapter 1\n\n" + "Mara bakes bread in Lisk every morning, and Teo sells it at the market. " * 30


def _folder(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "books"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(TEXT, encoding="utf-8")
    return folder


def _cases(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word, word.upper(), word.capitalize()])


note_names = st.builds(lambda stem, suffix: stem + suffix,
                       st.sampled_from(sorted(NOT_BOOK_NAMES)).flatmap(_cases),
                       st.sampled_from(["", ".md", ".txt", ".markdown", ".html", ".rst", ".MD"]))
book_stems = st.text(string.ascii_lowercase + "-_ ", min_size=1, max_size=20).map(str.strip).filter(
    lambda s: s and s.split(".", 1)[0] not in NOT_BOOK_NAMES)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes=st.lists(note_names, min_size=1, max_size=4, unique_by=str.lower),
       books=st.lists(st.tuples(book_stems, st.sampled_from(BOOK_SUFFIXES)), min_size=1, max_size=4,
                      unique_by=lambda b: b[0].lower()),
       others=st.lists(st.sampled_from(["records.json", ".hidden.md", ".DS_Store", "cover.jpg", "book.docx",
                                        "data.csv", "~notes.txt.swp"]), unique=True, max_size=3))
def test_notes_records_hidden_and_other_formats_are_skipped_books_kept(
        tmp_path: Path, notes: list[str], books: list[tuple[str, str]], others: list[str]) -> None:
    folder = tmp_path / f"f{abs(hash((tuple(notes), tuple(books), tuple(others))))}"
    folder.mkdir()
    book_names = [stem + suffix for stem, suffix in books]
    for name in [*notes, *book_names, *others]:
        (folder / name).write_text(TEXT, encoding="utf-8")
    found = books_in(folder)
    assert sorted(p.name for p in found.books) == sorted(book_names)
    assert sorted(p.name for p in found.skipped) == sorted([*notes, *others])
    shutil.rmtree(folder)


@pytest.mark.parametrize("name", ["Notes from Underground.epub", "history-of-rome.txt", "news-from-nowhere.epub",
                                  "readme-for-the-dead.md", "license-to-kill.txt", "the-changelog.md"])
def test_a_book_whose_title_starts_like_a_note_is_a_book(name: str) -> None:
    assert not is_note_name(name) and book_kind(Path(name)) is None


def test_a_readme_among_the_books_does_not_change_compares_plan(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["lisk.txt", "teo.md"])
    args = ["compare", str(folder), "--strategies", "direct", "-m", "openai:gpt-4o-mini", "--no-judge",
            "--out", str(tmp_path / "out"), "--plan-only", "--json", "-"]
    before = CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": "dummy"})
    assert before.exit_code == 0, before.output
    (folder / "README.md").write_text("# Books\n\nFive novels from Standard Ebooks.\n", encoding="utf-8")
    (folder / "LICENSE").write_text("CC0\n", encoding="utf-8")
    (folder / "records.json").write_text("{}", encoding="utf-8")
    after = CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": "dummy"})
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout) == json.loads(before.stdout)
    note = [line for line in after.stderr.splitlines() if "not books" in line]
    assert len(note) == 1 and "LICENSE, README.md, records.json" in note[0], after.stderr


def test_a_folder_of_only_notes_holds_no_books(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["README.md", "NOTES.txt"])
    with pytest.raises(ConfigError, match="holds no books"):
        book_sources([folder])


def test_a_note_named_on_its_own_is_taken(tmp_path: Path) -> None:
    """The rule is about folders: a file the user names is what they asked for."""
    folder = _folder(tmp_path, ["README.md"])
    assert book_sources([folder / "README.md"])[0] == (folder / "README.md",)


def test_a_link_out_of_the_books_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text(TEXT, encoding="utf-8")
    folder = _folder(tmp_path, ["lisk.txt"])
    (folder / "passwd.txt").symlink_to(outside)
    with pytest.raises(InputError, match="is a link out of books folder"):  # files_in: one rule for every folder
        books_in(folder)


def test_score_source_and_the_library_use_the_same_rule(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["lisk.txt", "README.md", "CHANGELOG.md"])
    assert sorted(source_index(folder)) == ["lisk"]
    exp = Experiment(books=(str(folder),), strategies=("direct",))  # a str folder, as a library user writes it
    assert [p.name for p in exp.books] == ["lisk.txt"] and "CHANGELOG.md, README.md" in exp.notes[0]


def test_the_sample_books_folder_with_its_readme(tmp_path: Path) -> None:
    """The real folder ``booksum data fetch sample-books`` fills, with a README.md beside the EPUBs."""
    epubs = sorted(BOOKS_DIR.glob("*.epub")) if BOOKS_DIR.is_dir() else []
    if not epubs:
        pytest.skip(f"no sample books in {BOOKS_DIR}")
    folder = tmp_path / "sample-books"
    folder.mkdir()
    for epub in epubs:
        shutil.copy(epub, folder / epub.name)
    (folder / "README.md").write_text("# sample-books\n\nFetched by booksum data.\n", encoding="utf-8")
    books, notes = book_sources([folder])
    assert [p.name for p in books] == [p.name for p in epubs]
    assert notes == (f"{folder}: skipped 1 file(s) that are not books: README.md",)
