"""The HTML report's layout: questions level with their sentences, books side by side, ROUGE-L filled."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.scoring.aggregate import aggregate
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.scoring.ngrams import ngram_stats, summarize_ngrams
from booksum_app.scoring.report import render_report
from booksum_app.scoring.results import BooookScoreResult, SummaryRow, SystemScores

CONFUSING = {2: "Who is the <stranger>?", 19: "Why does the mill burn?", 33: "Where did the letter come from?"}


def _summary(n: int = 36) -> tuple[str, list[str]]:
    sentences = [f"In the {k}th chapter, Ada walks to the mill by the river and speaks with the miller "
                 f"about the harvest, the weather and the price of flour in town." for k in range(n)]
    return " ".join(sentences), sentences


def _system(name: str, *, book: str = "ada.epub", confusing: dict[int, str] = CONFUSING) -> SystemScores:
    text, sentences = _summary()
    judged = tuple(
        SentenceJudgement(k, s, questions=confusing.get(k), types=("entity omission",) if k in confusing else ())
        for k, s in enumerate(sentences))
    judgement = SummaryJudgement(book=book, n_sentences=len(sentences), summary=text, sentences=judged)
    result = BooookScoreResult(signature="booookscore|judge:fake|v:0", mode="sentence", summaries=(judgement,),
                               system=aggregate([judgement]))
    stats = ngram_stats(text)
    return SystemScores(name=name, path=f"{name}.json", rows=(SummaryRow(book, text, judgement, stats),),
                        booookscore=result, ngrams=summarize_ngrams([stats]))


def test_each_question_is_in_the_grid_row_of_its_sentence() -> None:
    page = render_report([_system("hier")])
    summary = page[page.index('<div class="summary">'):page.index("</section>")]
    rows = re.findall(r'<p class="text">(.*?)</p>(<ol class="notes"[^>]*>.*?</ol>|<div class="notes"></div>)', summary)
    assert len(rows) == 4, "one row before the first confusing sentence, then one row per confusing sentence"
    for text_html, notes in rows[1:]:
        refs = re.findall(r'<sup class="ref">(\d+)</sup>', text_html)
        values = re.findall(r'<li value="(\d+)"', notes)
        assert refs[:1] == values[:1], "the row's first sentence is the one its note asks about"
        assert text_html.startswith("<mark"), "the row starts at the confusing sentence"
    assert "Who is the &lt;stranger&gt;?" in page and "<stranger>" not in page


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (apt-get install -y chromium) - layout check skipped")


# measures, after layout, how far each note's top is from the top of the sentence it belongs to
_MEASURE = """<script>
const out = [];
for (const sup of document.querySelectorAll('.summary sup.ref')) {
  const mark = sup.previousElementSibling;
  const li = sup.closest('.summary').querySelector('li[value="' + sup.textContent + '"]');
  out.push([mark.getBoundingClientRect().top, li.getBoundingClientRect().top]);
}
const pre = document.createElement('pre'); pre.id = 'measured'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def test_questions_are_level_with_their_sentences_in_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    page = tmp_path / "report.html"
    page.write_text(render_report([_system("hier")]).replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1200,2000",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    measured = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', done.stdout).group(1))  # type: ignore[union-attr]
    assert len(measured) == 3
    for sentence_top, note_top in measured:
        assert abs(note_top - sentence_top) < 5, measured  # the same line, not a screen away
    assert measured[-1][0] - measured[0][0] > 300, "the sentences are far apart in the text"


def test_books_of_two_systems_are_shown_side_by_side() -> None:
    hier = _system("gpt4-2048-hier")
    inc = _system("gpt4-2048-inc", confusing={5: "What <treaty>?"})
    alone = _system("solo", book="other.epub")
    page = render_report([hier, inc, alone])
    assert '<h2 id="side">Side by side</h2>' in page
    side = page[page.index('<h2 id="side">'):page.index('<h2 id="sys0">')]
    assert side.count('<details class="side"') == 1, "only the book two systems share"
    assert "ada.epub" in side and "other.epub" not in side
    columns = re.findall(r'<div class="col"><h4>(.*?)</h4>(.*?)</div>', side)
    assert [name for name, _ in columns] == ["gpt4-2048-hier", "gpt4-2048-inc"]
    assert "Why does the mill burn?" in columns[0][1] and "What &lt;treaty&gt;?" in columns[1][1]
    assert "What &lt;treaty&gt;?" not in columns[0][1]
    assert render_report([hier]).count('id="side"') == 0, "one system: no side-by-side view"


def test_rouge_l_column_is_filled_when_references_were_given(tmp_path: Path) -> None:
    summaries = tmp_path / "s.json"
    summaries.write_text(json.dumps({"lisk.epub": "Mara inherits a bakery in Lisk. Teo wants to sell it.",
                                     "north.epub": "An old pilot flies mail across the mountains."}), encoding="utf-8")
    references = tmp_path / "r.json"
    references.write_text(json.dumps({"lisk.txt": "Mara gets a bakery in Lisk; Teo wants it sold.",
                                      "north": "A pilot flies mail over mountains."}), encoding="utf-8")
    report = tmp_path / "o.html"
    result = CliRunner().invoke(cli, ["score", str(summaries), "--no-judge", "--references", str(references),
                                      "--report", str(report)])
    assert result.exit_code == 0, result.output
    page = report.read_text(encoding="utf-8")
    head, row = re.findall(r"<tr>(.*?)</tr>", page)[:2]
    cells = dict(zip(re.findall(r"<th>(.*?)</th>", head), re.findall(r"<td>(.*?)</td>", row), strict=True))
    assert re.fullmatch(r"\d+\.\d", cells["ROUGE-L F"]), cells
    assert page.count("ROUGE-L F ") >= 2, "each summary's ROUGE-L in its own line too"


def test_a_system_without_references_shows_a_dash_not_zero() -> None:
    page = render_report([dataclasses.replace(_system("hier"), rouge_l=None)])
    head, row = re.findall(r"<tr>(.*?)</tr>", page)[:2]
    cells = dict(zip(re.findall(r"<th>(.*?)</th>", head), re.findall(r"<td>(.*?)</td>", row), strict=True))
    assert cells["ROUGE-L F"] == "–"
