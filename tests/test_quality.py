"""The quality line after `summarize`: the failure-mode detectors' flags, printed and recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.runners.quality import REPEATED_3GRAM_FLAG_PCT, assess, quality_line
from booksum_app.testing.fake_server import FakeServer

# the shape of the embedded SmolLM2-135M quickstart summary: paragraphs restating each other
_PARAGRAPHS = (
    ("The story is set in a world where time is a double-edged sword. The Time Traveller is a great hero "
    "who is a great hero who is also a villain, and he travels to the future."),
    ("In the future, the Time Traveller is a great hero who is a great hero who is also a villain. "
    "The world where time is a double-edged sword is a world of Eloi and Morlocks."),
    ("The Time Traveller is a great hero who is a great hero who is also a villain. He travels to the "
    "future, where time is a double-edged sword, and he meets the Eloi and the Morlocks."),
)
DEMO = "\n\n".join((*_PARAGRAPHS, _PARAGRAPHS[0]))

CLEAN = (
    "Elizabeth Bennet, the second of five daughters, meets the wealthy Mr. Darcy at a ball in Meryton, "
    "where he refuses to dance with her. She is charmed instead by the officer Wickham, who tells her "
    "that Darcy cheated him of a living. Darcy proposes to her at Hunsford, and she refuses him, citing "
    "his part in separating her sister Jane from Bingley. His letter explains the truth about Wickham. "
    "When Lydia elopes with Wickham, Darcy quietly pays for their marriage. Elizabeth learns of it, "
    "and she accepts his second proposal."
)


def test_the_demo_summary_is_flagged_repetitive_with_its_repeated_3grams() -> None:
    quality = assess(DEMO, source=None, lang="en", requested_tokens=300)
    assert "repetitive" in quality.flags
    assert quality.repeated_3gram_pct is not None and quality.repeated_3gram_pct > REPEATED_3GRAM_FLAG_PCT
    line = quality_line(quality)
    assert line.startswith("quality: repetitive (") and f"{quality.repeated_3gram_pct:.0f}% repeated 3-grams" in line
    assert "\n" not in line


def test_a_clean_summary_has_no_flags() -> None:
    quality = assess(CLEAN, source=None, lang="en", requested_tokens=120)
    assert quality.flags == ()
    assert quality_line(quality).startswith("quality: no flags")
    assert "ok: repetition, commentary, ending, length" in quality_line(quality)


def test_repeated_3grams_alone_flag_repetition_above_the_threshold() -> None:
    # no sentence repeats whole, but the same phrases recur throughout
    looping = " ".join(f"Chapter {n} shows the hero who is a great hero who is also a villain again." for n in
                       ("one", "two", "three", "four", "five", "six"))
    quality = assess(looping, source=None, lang="en", requested_tokens=None)
    assert quality.report.repeated_sentences == 0
    assert "repetitive" in quality.flags
    assert "length" not in quality_line(quality), "no length asked: not claimed ok"


def test_copying_cut_off_and_too_short_are_named() -> None:
    book = ("It was a dark and stormy night; the rain fell in torrents, except at occasional intervals, "
            "when it was checked by a violent gust of wind which swept up the streets. ") * 3
    copied = "It was a dark and stormy night; the rain fell in torrents, except at occasional intervals, when it was"
    quality = assess(copied, source=book, lang="en", requested_tokens=900)
    assert {"copying", "cut off", "too short"} <= set(quality.flags)
    line = quality_line(quality)
    assert "copying (100% of 8-grams from the book" in line and "cut off (ends mid-sentence)" in line
    assert "too short (" in line and "of 900 tokens asked" in line


def test_summarize_prints_the_line_and_records_the_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    with FakeServer(reply=lambda request: DEMO) as server:
        result = CliRunner().invoke(cli, ["summarize", str(book), "--model", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("quality: ")]
    assert len(lines) == 1 and lines[0].startswith("quality: repetitive (")
    record = json.loads((tmp_path / "o.json").read_text())
    assert "repetitive" in record["extra"]["quality"]["flags"]
    assert record["extra"]["quality"]["repeated_3gram_pct"] > REPEATED_3GRAM_FLAG_PCT
    assert "repetition" in record["extra"]["quality"]["detectors"]["failures"]
