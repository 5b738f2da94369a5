"""Failure-mode detectors (CNNSum §4.4, App. E): positive and negative cases, English and Chinese."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import random
import re
from pathlib import Path

import pytest
from conftest import release_file

from booksum_app.errors import ConfigError
from booksum_app.scoring.detectors import (
    FAILURE_MODES,
    SourceIndex,
    detect_failures,
    failure_summary_to_dict,
    periodic_tail,
    report_to_dict,
    summarize_failures,
)

CLEAN_EN = (
    "Elizabeth Bennet meets Mr. Darcy at a ball in Meryton, where he refuses to dance with her. "
    "Later Darcy proposes to Elizabeth at Hunsford, and she rejects him angrily. "
    "He answers with a letter explaining his conduct toward Wickham."
)
CLEAN_ZH = (
    "苏小煜用云天嵩给的五两银子买了两只鳖和柴胡。他在破庙里炮制鳖血柴胡，因火候不当而失败。"
    "高老叫花子指出问题所在，并答应教他针灸之术。"
)


def words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(100_000)}" for _ in range(n)]


@pytest.mark.parametrize(("summary", "lang"), [(CLEAN_EN, "en"), (CLEAN_ZH, "zh")])
def test_clean_summary_triggers_nothing(summary: str, lang: str) -> None:
    report = detect_failures(summary, source="无关的原文。" * 3, lang=lang, requested_tokens=60,
                             count_tokens=len, finish_reason="stop")
    assert report.failures == ()
    assert report.subjective_sentences == 0 and report.subjective_terms == ()
    assert report.copied_share == 0.0
    assert report.repeated_sentences == report.repeated_lines == report.tail_repeats == 0
    assert report.prompt_echo_ngrams == report.answer_cues == 0
    assert report.checklist_items == report.stepwise_traces == 0
    assert report.too_short is False and report.cut_off is False


def test_subjective_commentary_english() -> None:
    summary = (
        "Darcy proposes to Elizabeth. The story explores pride and class. "
        "Her refusal highlights the themes of prejudice. Darcy reveals that Wickham lied."
    )
    report = detect_failures(summary, lang="en")
    # "The story explores pride and class" names the text while telling what it is about:
    # framing, counted apart; talk of themes is commentary
    assert report.subjective_sentences == 1
    assert report.subjective_terms == ("highlights the themes",)  # an idea as the object
    assert report.framing_sentences == 1 and report.framing_terms == ("the story",)
    assert "subjective" in report.failures


def test_plot_reveal_is_not_commentary() -> None:
    report = detect_failures("Darcy reveals that Wickham lied to Elizabeth.", lang="en")
    assert report.subjective_sentences == 0
    told = detect_failures(
        "Heathcliff tells Nelly the story of his return. Victor reflects on his guilt.", lang="en"
    )
    assert told.subjective_sentences == 0
    assert detect_failures("苏小煜抽中了一本书，给他留下深刻印象。", lang="zh").subjective_sentences == 0


def test_subjective_commentary_chinese() -> None:
    # CNNSum App. E.2/E.7 GPT-4o style
    summary = (
        "故事讲述了年轻医师苏小煜的艰辛历程。他向高老叫花子求助，展现了他的决心。"
        "苏小煜买了两只鳖。整个故事深入探讨了女性在封建社会中的地位。"
    )
    report = detect_failures(summary, lang="zh")
    # 讲述了/展现了 tell the plot (framing); 探讨 comments on it
    assert report.subjective_sentences == 1 and report.subjective_terms[0] == "探讨"
    assert report.framing_sentences == 3
    assert report.framing_terms == ("故事讲述", "展现了", "整个故事")


def test_copy_share_matches_independent_count() -> None:
    source_words = words(2000, seed=1)
    copied = source_words[500:540]  # 40 copied words -> 33 copied 8-grams
    summary_words = words(30, seed=2) + copied + words(30, seed=3)
    report = detect_failures(" ".join(summary_words), source=" ".join(source_words), lang="en")
    # independent count: each 8-gram as a space-delimited substring of the source
    padded = " " + " ".join(source_words) + " "
    grams = [summary_words[i : i + 8] for i in range(len(summary_words) - 7)]
    expected = sum(f" {' '.join(g)} " in padded for g in grams) / len(grams)
    assert report.copy_ngrams == len(grams) == 93
    assert report.copied_share == pytest.approx(expected) == pytest.approx(33 / 93)
    assert report.longest_copied_words == 40
    assert "copying" in report.failures


def test_copy_chinese_source() -> None:
    source = (
        "在那神秘声音的指引下，阳旭与众位天才背道而驰，一路向南。路途中，他也遇到了几个往北部山峰赶去的试炼者。"
        "看阳旭的眼神，或是充满轻视，或是充满鄙夷，好像在看一个失败者。"
    )
    summary = "小说节选如下：" + source[:40]
    report = detect_failures(summary, source=source, lang="zh")
    assert report.copied_share is not None and report.copied_share > 0.5
    assert report.longest_copied_words is not None and report.longest_copied_words >= 15
    assert "copying" in report.failures
    clean = detect_failures(CLEAN_ZH, source=source, lang="zh")
    assert clean.copied_share == 0.0 and "copying" not in clean.failures


def test_source_index_reused_and_checked() -> None:
    source = " ".join(words(500, seed=4))
    index = SourceIndex.build(source, lang="en")
    summary = " ".join(source.split()[100:120])
    assert detect_failures(summary, source=index).copied_share == 1.0
    with pytest.raises(ConfigError, match="SourceIndex.build"):
        detect_failures("某人做了某事。", source=index, lang="zh")


def test_index_from_another_process_refused() -> None:
    index = SourceIndex.build("one two three four five six seven eight nine", lang="en")
    foreign = dataclasses.replace(index, process_check=index.process_check + 1)
    with pytest.raises(ConfigError, match="another Python process"):
        detect_failures("one two three four five six seven eight", source=foreign)


def test_unknown_language_refused() -> None:
    with pytest.raises(ConfigError, match="use one of"):
        detect_failures("Texte.", lang="fr")


def test_repeated_sentences_english() -> None:
    summary = (
        "Darcy writes Elizabeth a long letter. She reads it twice.\n"
        "Darcy writes Elizabeth a long letter. Wickham leaves for Brighton."
    )
    report = detect_failures(summary, lang="en")
    assert report.repeated_sentences == 1
    assert report.repeated_lines == 0
    assert "repetition" in report.failures


def test_repeated_numbered_lines_chinese() -> None:
    # CNNSum App. E.5: the same paragraph line, numbered differently, again and again
    lines = [f"段落{i}: 韩立一听此言，心里一松，但随即又有些愕然。" for i in range(6, 10)]
    report = detect_failures("韩立转过身来。\n" + "\n".join(lines), lang="zh")
    assert report.repeated_sentences == 3  # numbers masked: the four sentences are one
    assert report.repeated_lines == 3
    assert "repetition" in report.failures


def test_periodic_tail_with_cut_last_block() -> None:
    # CNNSum App. E.7 InternLM2.5-20B-Chat: a list of names looping until the token limit
    body = "江之寒遇到了很多女孩，包括吴茵、林墨、"
    block = "范琪、汤晴、陈裴、王端端、沈城、"
    repeats, chars = periodic_tail(body + block * 5 + block[:7])
    # the body's last "、" also fits the period: 1 + 5 x 16 + 7 characters, 6 copies begun
    assert chars == 1 + len(block) * 5 + 7
    assert repeats == 6
    report = detect_failures(body + block * 5 + block[:7], lang="zh")
    assert report.tail_repeats == 6 and report.cut_off


def test_periodic_tail_english_and_negatives() -> None:
    assert periodic_tail("He waits. The end is near. " * 4)[0] == 4
    assert periodic_tail(CLEAN_EN) == (0, 0)
    assert periodic_tail("hahaha") == (0, 0)  # too short to count
    assert periodic_tail("Wait" + "." * 60) == (0, 0)  # a run of punctuation is no block


def test_periodic_tail_is_linear() -> None:
    # a quadratic scan would take minutes here
    text = " ".join(words(200_000, seed=5)) + " again and again" * 1000
    assert periodic_tail(text)[0] == 1000


def test_prompt_echo_and_answer_cues_chinese() -> None:
    # CNNSum App. E.6 Llama3.1-70B: the last sentence of Prompt-IE, then the answer cue, looped
    summary = "\n\n请你阅读以上节选后写出相应的摘要，不要输出其他任何内容。\n\n摘要：\n" * 3
    report = detect_failures(summary, lang="zh")
    assert report.prompt_echo_ngrams > 0
    assert report.prompt_echo_fragments[0].startswith("请你阅读以上节选")
    assert report.answer_cues == 3
    assert report.repeated_lines >= 2 and "echo" in report.failures


def test_prompt_echo_english_and_custom_prompt() -> None:
    summary = CLEAN_EN + " Please read it and write the corresponding summary."
    report = detect_failures(summary, lang="en")
    assert report.prompt_echo_fragments == ("please read it and write the corresponding summary",)
    custom = "Tell me what happens to the heroine in {text} using plain words."
    echoed = detect_failures(CLEAN_EN + " Tell me what happens to the heroine.", lang="en")
    assert echoed.prompt_echo_ngrams == 0
    echoed = detect_failures(
        CLEAN_EN + " Tell me what happens to the heroine.", lang="en", prompt_texts=[custom]
    )
    assert echoed.prompt_echo_ngrams == 2  # "tell me what happens to the heroine": two 6-grams


def test_answer_cue_inside_body_english() -> None:
    report = detect_failures(CLEAN_EN + "\n\nUpdated summary (300 words): Darcy leaves.", lang="en")
    assert report.answer_cues == 1
    assert "echo" in report.failures


def test_numbered_checklist() -> None:
    # CNNSum App. E.4 InternLM2.5-20B-Chat
    zh = "李耀击败了燕西北。\n\n请注意，摘要应包含以下要素：\n1. 李耀的斗争\n2. 李耀击败燕西北\n\n3. 李耀成为访问学者\n"
    assert detect_failures(zh, lang="zh").checklist_items == 3
    en = CLEAN_EN + "\n(1) Darcy\n(2) Elizabeth\nThe end.\n1. One only"
    listed = detect_failures(en, lang="en")  # a list, but neither introduced as the answer nor an outline
    assert listed.checklist_items == 0 and listed.numbered_items == 2
    outline = CLEAN_EN + "\n(1) Characters: Darcy\n(2) Plot: a refusal\nThe end."
    assert detect_failures(outline, lang="en").checklist_items == 2
    assert detect_failures("In 1813. 2 people.", lang="en").checklist_items == 0


def test_stepwise_traces() -> None:
    en = "In this excerpt, Darcy proposes. Elizabeth, in the current segment, refuses him."
    assert detect_failures(en, lang="en").stepwise_traces == 2
    zh = "在这一片段中，苏小煜买了鳖。本节选里他失败了。"
    assert detect_failures(zh, lang="zh").stepwise_traces == 2
    assert detect_failures("宋江把这部分银子分给众人。", lang="zh").stepwise_traces == 0


def test_too_short_and_cut_off() -> None:
    report = detect_failures("Darcy proposes.", lang="en", requested_tokens=400)
    assert report.too_short is True and "too_short" in report.failures
    assert detect_failures("Darcy proposes.", lang="en").too_short is None
    long_enough = detect_failures(CLEAN_EN, lang="en", requested_tokens=len(CLEAN_EN) * 4,
                                  count_tokens=len)
    assert long_enough.too_short is False  # exactly 25 %: not under it
    cut = detect_failures(CLEAN_EN, lang="en", finish_reason="length")
    assert cut.cut_off and cut.cut_evidence == "finish_reason"
    unfinished = detect_failures("Darcy proposes and Elizabeth", lang="en")
    assert unfinished.cut_off and unfinished.cut_evidence == "no_final_punctuation"
    stopped = detect_failures("Darcy proposes and Elizabeth", lang="en", finish_reason="stop")
    assert not stopped.cut_off
    assert not detect_failures("苏小煜失败了。", lang="zh").cut_off


def test_summarize_failures_counts_and_shares() -> None:
    reports = [
        detect_failures(CLEAN_EN, lang="en", source=CLEAN_EN),
        detect_failures("The story explores love in a small English town.", lang="en", source="Unrelated."),
        detect_failures("Darcy proposes and", lang="en", finish_reason="length"),
    ]
    summary = summarize_failures(reports)
    assert summary.n_summaries == 3
    assert set(summary.counts) == set(FAILURE_MODES)
    assert summary.counts["subjective"] == 1 and summary.counts["cut_off"] == 1
    assert summary.counts["copying"] == 1  # the summary that is its own source
    assert summary.share("cut_off") == pytest.approx(1 / 3)
    assert summary.n_with_source == 2
    assert summary.mean_copied_share == pytest.approx(0.5)
    assert summarize_failures([]).share("echo") is None


def test_detectors_scale_linearly() -> None:
    # a 1M-word source is indexed in seconds (measured figures in the report, not asserted)
    source = " ".join(words(1_000_000, seed=6))
    index = SourceIndex.build(source, lang="en")
    assert index.n_words == 1_000_000
    summary = " ".join(source.split()[10_000:10_500])
    report = detect_failures(summary, source=index, lang="en")
    assert report.copied_share == 1.0 and report.longest_copied_words == 500
    assert re.fullmatch(r"[\w ]+", summary)


def test_dict_forms_are_json_ready() -> None:
    report = detect_failures("The story explores love. Summary: Darcy leaves and", lang="en")
    data = report_to_dict(report)
    assert data["failures"] == ["subjective", "echo", "cut_off"]
    assert data["subjective_terms"] == ["the story explores love"]
    assert data["copied_share"] is None and data["cut_evidence"] == "no_final_punctuation"
    system = failure_summary_to_dict(summarize_failures([report]))
    assert system["counts"] == {"subjective": 1, "copying": 0, "repetition": 0, "echo": 1,
                                "too_short": 0, "cut_off": 1}
    assert json.loads(json.dumps(system))["shares"]["echo"] == 1.0


def test_score_outputs_carry_failures(tmp_path: Path) -> None:
    # `booksum score` with a source: per-summary reports in the JSON rows, counts in JSON and CSV
    from click.testing import CliRunner

    from booksum_app.cli import cli

    source = " ".join(words(400, seed=7)) + "."
    books = tmp_path / "books"
    books.mkdir()
    (books / "copy.txt").write_text(source, encoding="utf-8")
    (books / "clean.txt").write_text(source, encoding="utf-8")
    summaries = tmp_path / "sys-cleaned.json"
    summaries.write_text(json.dumps({"copy.epub": " ".join(source.split()[:60]) + ".",
                                     "clean.epub": CLEAN_EN}), encoding="utf-8")
    out_json, out_csv = tmp_path / "s.json", tmp_path / "s.csv"
    result = CliRunner().invoke(
        cli, ["score", str(summaries), "--source", str(books), "--json", str(out_json),
              "--csv", str(out_csv)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    system = json.loads(out_json.read_text())["systems"][0]
    assert system["failures"]["counts"]["copying"] == 1
    assert system["failures"]["n_with_source"] == 2
    rows = {r["book"]: r["failures"] for r in system["summaries"]}
    assert rows["copy.epub"]["copied_share"] == 1.0 and rows["copy.epub"]["failures"] == ["copying"]
    assert rows["clean.epub"]["failures"] == []
    csv_row = next(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert csv_row["failures_copying"] == "1" and csv_row["failures_subjective"] == "0"


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        ("chatgpt-2048-hier", (97, 18, 21, 0)),
        ("chatgpt-2048-inc", (15, 2, 0, 0)),
        ("gpt4-2048-hier", (73, 4, 1, 0)),
        ("gpt4-2048-inc", (44, 0, 0, 0)),
    ],
)
def test_release_summaries_counts(system: str, expected: tuple[int, ...]) -> None:
    # the figures docs/scoring.md quotes; hand-checked samples: repeated sentences are real
    path = release_file(f"summaries/{system}-cleaned.json")  # BOOKSUM_DATA_DIR / `booksum data`, else skip
    texts = json.loads(path.read_text(encoding="utf-8")).values()
    counts = summarize_failures(detect_failures(t, lang="en") for t in texts).counts
    assert tuple(counts[m] for m in ("subjective", "repetition", "echo", "cut_off")) == expected


def test_source_index_finds_exactly_what_a_set_of_its_grams_holds() -> None:
    # the index is a sorted int64 array (8 bytes a gram; a frozenset took ~90): its lookups must
    # agree with the plain set it replaced, on hits, misses, both ends and an empty index
    from booksum_app.scoring.source_index import gram_keys as _gram_keys
    from booksum_app.scoring.source_index import words_of

    source = " ".join(words(3000, seed=11))
    index = SourceIndex.build(source, lang="en")
    grams = _gram_keys(words_of(source, lang="en"), index.n)
    assert len(index.keys) == len(set(grams)) and index.keys.keys.nbytes == 8 * len(index.keys)
    probe = " ".join(words(400, seed=12)).split() + source.split()[:50] + source.split()[-50:]
    keys = _gram_keys(probe, index.n) + [min(grams) - 1, max(grams) + 1, min(grams), max(grams)]
    assert index.keys.found(keys) == [k in set(grams) for k in keys]
    empty = SourceIndex.build("too short", lang="en")
    assert len(empty.keys) == 0 and empty.keys.found(keys[:3]) == [False] * 3 and empty.keys.found([]) == []
    both = empty.union(index)
    assert both.keys.found(keys) == index.keys.found(keys) and both.n_words == index.n_words + 2
