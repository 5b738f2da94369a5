"""summarize --chapters (issue 12 item 3): one summary per chapter, from the hier tree where it can be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.calls import Client
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_backend import FakeBackend


def _book(tmp_path: Path) -> Path:
    short = "Mara bakes bread in Lisk. The oven is old. Her cousin Teo counts the coins. " * 4
    long = "The storm came in from the sea and the harbour filled with boats seeking shelter. " * 120
    text = f"Chapter 1: Bread\n\n{short}\n\nChapter 2: Storm\n\n{long}\n\nChapter 3: Coda\n\n{short}\n"
    path = tmp_path / "lisk.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_chapter_summaries_reuse_the_tree_and_pay_only_for_split_chapters(tmp_path: Path) -> None:
    backend = FakeBackend()
    record = summarize_book(_book(tmp_path), strategy="hier", model=Client(backend), chunk_size=256,
                            max_summary_tokens=120, chapters=True)
    chapters = record.extra["chapters"]
    assert [c["title"] for c in chapters] == ["Chapter 1: Bread", "Chapter 2: Storm", "Chapter 3: Coda"]
    assert chapters[0]["source"].startswith("L0.") and chapters[2]["source"].startswith("L0.")  # one chunk each
    assert chapters[1]["chunk_span"][1] > chapters[1]["chunk_span"][0]  # the storm spans several chunks
    extra_calls = [c for c in record.calls if c.purpose == "chapter"]
    assert len(extra_calls) == (1 if chapters[1]["source"] == "merge" else 0)
    assert all(c["text"].strip() for c in chapters)
    assert record.config["chapter_aware"] is True


def test_chapters_need_hier() -> None:
    with pytest.raises(ConfigError, match="--set chapters: not an option of strategy .inc. \\(its options: none\\)"):
        summarize_book("unused.txt", strategy="inc", model=Client(FakeBackend()), chapters=True)


def test_cli_writes_a_heading_per_chapter(tmp_path: Path) -> None:
    from booksum_app.testing.fake_server import FakeServer

    with FakeServer() as server:
        result = CliRunner(env={"OPENAI_API_KEY": "dummy"}).invoke(cli, [
            "summarize", str(_book(tmp_path)), "--chapters", "--chunk-size", "256", "--max-summary-len", "120",
            "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url, "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert markdown.count("### Chapter") == 3 and "## The book" in markdown
    assert len(json.loads((tmp_path / "out.json").read_text())["extra"]["chapters"]) == 3


@pytest.mark.slow
def test_chapters_of_a_sample_book_against_the_fake_server(tmp_path: Path) -> None:
    from conftest import book_path

    from booksum_app.books import open_book

    path = book_path("time-machine")
    record = summarize_book(path, strategy="hier", model=Client(FakeBackend(), concurrency=16), chapters=True)
    chapters = record.extra["chapters"]
    kept = [c.title for c in open_book(path).selected_chapters(include_front_matter=False)]
    assert [c["title"] for c in chapters] == kept, "one summary per chapter, in order (13 for The Time Machine)"
    assert all(c["text"].strip() for c in chapters)


@pytest.mark.local_model
@pytest.mark.slow
def test_chapters_with_the_embedded_model(tmp_path: Path) -> None:
    from test_llm_local import needs_local_model

    if needs_local_model.args and needs_local_model.args[0]:
        pytest.skip("the embedded model needs the 'local' extra")
    from booksum_app.llm.registry import LLMSettings

    record = summarize_book(_book(tmp_path), strategy="hier", model="local", chunk_size=512, max_summary_tokens=120,
                            chapters=True, llm_settings=LLMSettings(cache_dir=tmp_path / "cache",
                                                                    config_path=tmp_path / "none.toml"))
    chapters = record.extra["chapters"]
    assert [c["title"] for c in chapters] == ["Chapter 1: Bread", "Chapter 2: Storm", "Chapter 3: Coda"]
    assert all(c["text"].strip() for c in chapters), "a real model's chapter summaries, each non-empty"
