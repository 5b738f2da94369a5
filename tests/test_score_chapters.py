"""``score`` reads ``summarize --chapters`` output: the .md/.json pair is one run, chapters are rows on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import InputError
from booksum_app.runners.chapter_markdown import split_chapters_markdown
from booksum_app.runners.chapters import ChapterSummary, chapters_markdown
from booksum_app.runners.score_inputs import load_summaries
from booksum_app.testing.fake_server import FakeServer

BOOK = ("Chapter 1: Bread\n\n" + "Mara bakes bread in Lisk. The oven is old. Her cousin Teo counts the coins. " * 4
        + "\n\nChapter 2: Storm\n\n"
        + "The storm came in from the sea and the harbour filled with boats seeking shelter. " * 120
        + "\n\nChapter 3: Coda\n\nMara sells the last loaf and closes the shop for the night.\n")

line = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and not s.startswith("#"))
paragraph = st.lists(line, min_size=1, max_size=4).map("\n".join)


@given(book=paragraph, chapters=st.lists(st.tuples(line, paragraph), max_size=6))
def test_the_chapters_markdown_reads_back(book: str, chapters: list[tuple[str, str]]) -> None:
    text = chapters_markdown(book, tuple(ChapterSummary(t, (0, 0), s, "merge") for t, s in chapters))
    assert split_chapters_markdown(text) == (book, tuple(chapters))


@given(text=paragraph)
def test_a_plain_summary_is_not_read_as_chapters(text: str) -> None:
    assert split_chapters_markdown(text) is None


def _summarize(tmp_path: Path, server: FakeServer) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text(BOOK, encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner(env={"OPENAI_API_KEY": "dummy"}).invoke(cli, [
        "summarize", str(book), "--chapters", "--chunk-size", "256", "--max-summary-len", "120",
        "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url, "--cache-dir", str(tmp_path / "c"),
        "-o", str(out / "book"), "--yes"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def test_readme_flow_summarize_chapters_then_score_the_folder(tmp_path: Path) -> None:
    with FakeServer() as server:
        out = _summarize(tmp_path, server)
        record = json.loads((out / "book.json").read_text(encoding="utf-8"))
        runner = CliRunner(env={"OPENAI_API_KEY": "dummy"})
        args = ["score", str(out), "--judge", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "c"), "--yes"]
        book_only = runner.invoke(cli, [*args, "--json", str(tmp_path / "book.json")], catch_exceptions=False)
        per_chapter = runner.invoke(cli, [*args, "--chapters", "--json", str(tmp_path / "chapters.json")],
                                    catch_exceptions=False)
    assert book_only.exit_code == 0, book_only.output
    assert "add --chapters to score each chapter too" in book_only.stderr
    rows = json.loads((tmp_path / "book.json").read_text())["systems"][0]["summaries"]
    assert [r["book"] for r in rows] == ["lisk.txt"]
    assert load_summaries(out) == {"lisk.txt": record["summary"]}, "the book summary, read once"
    assert per_chapter.exit_code == 0, per_chapter.output
    rows = json.loads((tmp_path / "chapters.json").read_text())["systems"][0]["summaries"]
    titles = [c["title"] for c in record["extra"]["chapters"]]
    assert [r["book"] for r in rows] == ["lisk.txt", *(f"lisk.txt § {t}" for t in titles)]
    assert all(r["booookscore"] is not None for r in rows), "every chapter summary judged"
    texts = load_summaries(out, chapters=True)
    assert list(texts.values())[1:] == [c["text"] for c in record["extra"]["chapters"]]


def test_a_changed_chapters_markdown_is_still_two_summaries(tmp_path: Path) -> None:
    with FakeServer() as server:
        out = _summarize(tmp_path, server)
    md = out / "book.md"
    md.write_text(md.read_text(encoding="utf-8").replace("## The book\n\n", "## The book\n\nEdited. "), "utf-8")
    with pytest.raises(InputError, match="two different summaries of one book"):
        load_summaries(out)


def test_the_markdown_alone_scores_its_book_summary(tmp_path: Path) -> None:
    with FakeServer() as server:
        out = _summarize(tmp_path, server)
    (out / "book.json").unlink()
    record_free = load_summaries(out)
    assert list(record_free) == ["book.md"] and "## " not in record_free["book.md"]
    rows = load_summaries(out / "book.md", chapters=True)
    assert list(rows)[1:] == [f"book.md § Chapter {n}: {t}" for n, t in ((1, "Bread"), (2, "Storm"), (3, "Coda"))]
