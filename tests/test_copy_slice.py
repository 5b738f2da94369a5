"""The quality line's copy index: only the source n-grams one summary can match, the same report.

``summary_source_index`` segments only the parts of the book that share a 4-unit run with the
summary; these tests check that the copy detector's figures equal those from the whole book's
index, on real books and on generated summaries (copies, near copies, case changes, copies
across lines and jieba blocks), and that a summary of 水浒传 keeps the process small.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.books import open_book
from booksum_app.scoring.copy_slice import summary_source_index
from booksum_app.scoring.detectors import SourceIndex, detect_failures
from tests.conftest import BOOKS_DIR, REPO, book_path

ZH_SOURCE = (
    "第一回　张天师祈禳瘟疫　洪太尉误走妖魔\n话说大宋仁宗天子在位，嘉祐三年三月三日五更三点，天子驾坐紫宸殿。"
    "受百官朝贺。但见：祥云迷凤阁，瑞气罩龙楼。\n宋江道：“兄弟，你且听我说。”李逵大叫：“哥哥！”"
    "林冲在沧州牢城营里，ABC公司的Mr. Wang来到东京。梁山泊好汉一百单八人。\n\n——\n武松打虎在景阳冈上。"
)
EN_SOURCE = (
    "It was a bright cold day in April, and the clocks were striking thirteen.\n"
    "Winston Smith, his chin nuzzled into his breast in an effort to escape the vile wind,\n"
    "slipped quickly through the glass doors of Victory Mansions, though not quickly enough.\n"
    "\n\nThe hallway smelt of boiled cabbage and old rag mats.\n"
)


def reports_agree(summary: str, source: str, lang: str) -> None:
    whole = detect_failures(summary, source=SourceIndex.build(source, lang=lang), lang=lang)
    sliced = detect_failures(summary, source=summary_source_index(source, summary, lang=lang), lang=lang)
    assert (sliced.copy_ngrams, sliced.copied_share, sliced.longest_copied_words, sliced.approx_copied_words) == (
        whole.copy_ngrams, whole.copied_share, whole.longest_copied_words, whole.approx_copied_words)


def excerpt(source: str, data: st.DataObject) -> str:
    start = data.draw(st.integers(0, len(source) - 1))
    end = data.draw(st.integers(start, min(len(source), start + 80)))
    text = source[start:end]
    if data.draw(st.booleans()) and text:  # a near copy: one character changed
        at = data.draw(st.integers(0, len(text) - 1))
        text = text[:at] + data.draw(st.sampled_from("的了X,。 \n")) + text[at + 1:]
    return text.upper() if data.draw(st.booleans()) else text


@settings(max_examples=60, deadline=None)
@given(data=st.data(), lang=st.sampled_from(["zh", "en"]))
def test_generated_summaries_get_the_whole_books_copy_figures(data: st.DataObject, lang: str) -> None:
    source = ZH_SOURCE if lang == "zh" else EN_SOURCE
    noise = st.text(alphabet="宋江武松说了好 abcthe\n", max_size=20)
    parts = data.draw(st.lists(st.one_of(st.builds(lambda: excerpt(source, data)), noise), min_size=1, max_size=5))
    reports_agree("".join(parts), source, lang)


def test_a_copy_across_lines_and_blocks_is_found() -> None:
    summary = "天子驾坐紫宸殿。受百官朝贺。但见：祥云迷凤阁，瑞气罩龙楼。宋江道：“兄弟，你且听我说。”"
    reports_agree(summary, ZH_SOURCE, "zh")
    report = detect_failures(summary, source=summary_source_index(ZH_SOURCE, summary, lang="zh"), lang="zh")
    assert report.copied_share and report.copied_share > 0.5
    reports_agree("the vile wind, slipped quickly through the glass doors of Victory Mansions", EN_SOURCE, "en")


@functools.cache
def shuihuzhuan() -> str:
    path = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"
    if not path.is_file():
        pytest.skip(f"水浒传 not in {BOOKS_DIR}")
    return open_book(path).text()


@pytest.mark.slow
def test_real_books_agree() -> None:
    text = shuihuzhuan()
    para = [p for p in text.split("\n") if len(p) > 60]
    summary = "".join(p[10:70] for p in para[100:4000:400]) + "宋江与众好汉聚义梁山泊，替天行道。"
    reports_agree(summary, text, "zh")
    english = open_book(book_path("time-machine")).text()
    reports_agree(english[5000:5600] + " The traveller returns and tells his friends.", english, "en")


PEAK_SCRIPT = """
import sys
from booksum_app.books import open_book
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.runners.quality import record_quality
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_backend import FakeBackend
info = ModelInfo(name="openai:gpt-4", context_window=8192, tokenizer="cl100k_base", max_output_tokens=None)
book = open_book(sys.argv[1])
record = summarize_book(book, strategy="hier", model=Client(FakeBackend(info), concurrency=128))
record, _ = record_quality(record, book)
# VmHWM: this process's own peak (ru_maxrss keeps the parent's peak across fork and exec)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(int(hwm.split()[1]) // 1024, len(record.calls))
"""
SUMMARIZE_PEAK_MB = 220  # budget: 水浒传 summarize + quality line, in-process fake (issue 34)


@pytest.mark.slow
def test_budget_shuihuzhuan_summarize_peak_memory(tmp_path: object) -> None:
    shuihuzhuan()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(BOOKS_DIR / "shi-naian_shuihuzhuan.txt")],
                         capture_output=True, text=True, env=env, check=True, timeout=300)
    peak = int(out.stdout.split()[0])
    assert peak < SUMMARIZE_PEAK_MB, (
        f"budget: 水浒传 summarize + quality line peak RSS {peak} MB >= {SUMMARIZE_PEAK_MB} MB ({out.stdout})")
