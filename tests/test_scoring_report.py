"""The HTML report: standalone, escaped, highlighted sentences and questions in the rendered DOM."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from booksum_app.scoring.aggregate import aggregate
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.scoring.ngrams import ngram_stats, summarize_ngrams
from booksum_app.scoring.report import render_report
from booksum_app.scoring.results import BooookScoreResult, SummaryRow, SystemScores

SUMMARY = (
    "Ada builds a boat. Meanwhile, the Council of <Nine> meets in secret. "
    "Ada sails north with Bo. The boat sinks."
)


def _system() -> SystemScores:
    judgement = SummaryJudgement(
        book="ada.epub",
        n_sentences=4,
        summary=SUMMARY,
        sentences=(
            SentenceJudgement(0, "Ada builds a boat."),
            SentenceJudgement(
                1,
                "Meanwhile, the Council of <Nine> meets in secret.",
                questions="Who are the Council of <Nine>?",
                types=("entity omission", "discontinuity"),
            ),
            SentenceJudgement(
                2, "Ada sails north with Bo.", unparseable=True, answer="I cannot <say>"
            ),
            SentenceJudgement(
                3,
                "The boat sinks.",
                questions="Why does the boat sink?",
                types=("causal omission",),
            ),
        ),
    )
    result = BooookScoreResult(
        signature="booookscore|judge:fake|v:0",
        mode="sentence",
        summaries=(judgement,),
        system=aggregate([judgement]),
    )
    stats = ngram_stats(SUMMARY)
    return SystemScores(
        name="demo",
        path="demo.json",
        rows=(SummaryRow("ada.epub", SUMMARY, judgement, stats),),
        booookscore=result,
        ngrams=summarize_ngrams([stats]),
    )


def test_report_is_standalone_and_escaped() -> None:
    page = render_report([_system()])
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)  # no external assets
    assert "<script" not in page
    assert "Council of &lt;Nine&gt;" in page and "<Nine>" not in page
    assert "booookscore|judge:fake|v:0" in page
    assert page.count('<mark class="sent') == 2 and 'data-unparseable="true"' in page
    assert "BooookScore 33.3" in page  # 2 confusing of 3 judged; the unparseable one is left out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (apt-get install -y chromium) - DOM check skipped")


def test_report_renders_highlights_and_questions_in_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    page = tmp_path / "report.html"
    page.write_text(render_report([_system()]), encoding="utf-8")
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    dom = done.stdout
    marks = re.findall(r'<mark class="sent ([^"]+)" data-types="([^"]+)"[^>]*>([^<]+)</mark>', dom)
    assert (
        "t-entity-omission",
        "entity omission, discontinuity",
        "Meanwhile, the Council of &lt;Nine&gt; meets in secret.",
    ) in marks
    assert ("t-causal-omission", "causal omission", "The boat sinks.") in marks
    assert "Who are the Council of &lt;Nine&gt;?" in dom and "Why does the boat sink?" in dom
    assert "I cannot &lt;say&gt;" in dom  # the unparseable answer is shown, not hidden


def test_report_has_contents_linking_every_summary_by_position() -> None:
    import dataclasses

    system = _system()
    hostile = dataclasses.replace(system, name='x" onclick="alert(1)', rows=system.rows * 120)
    page = render_report([system, hostile])
    assert "<h2>Contents</h2>" in page
    assert page.count('href="#sys1-') == 120 and 'id="sys1-119"' in page and 'id="sys0"' in page
    for anchor in re.findall(r'href="#([^"]+)"', page):
        assert f'id="{anchor}"' in page, f"dangling link #{anchor}"
    assert 'onclick="alert' not in page, "names are escaped, ids are positions"


def test_report_shows_failure_modes_per_system_and_per_summary_escaped() -> None:
    import dataclasses

    from booksum_app.scoring.detectors import detect_failures, summarize_failures

    looping = "The story explores themes of <grief>. Ada sails north. Ada sails north. Ada sails north."
    clean = "Ada builds a boat. The boat sinks in the first storm of the year."
    rows = tuple(SummaryRow(book, text, None, ngram_stats(text), failures=detect_failures(text))
                 for book, text in (("loop.epub", looping), ("clean.epub", clean)))
    base = _system()
    system = dataclasses.replace(base, rows=rows, booookscore=None,
                                 failures=summarize_failures(r.failures for r in rows if r.failures))
    page = render_report([system])
    assert "<h2>Failure modes (summaries showing each; no LLM call)</h2>" in page
    assert "<td>subjective</td><td>1 of 2</td>" in page and "<td>repetition</td><td>1 of 2</td>" in page
    assert "<td>copying</td><td>0 of 2</td>" in page
    assert "<b>repetition</b>: 2 repeated sentence(s)" in page and "explores" in page
    assert "Failure modes: none." in page, "the clean summary says so"
    assert "<grief>" not in page and "&lt;grief&gt;" in page
