"""Chinese web copies in the styles of novel sites (tests/book_sites.py: expected chapters written
first), the real 红楼梦 heading, evidence in proportion to what an exclusion removes, and the
anomalies said on the terminal and kept in the record."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from book_sites import ENCODINGS, NUMERALS, STYLES, site_copy
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.books import open_book
from booksum_app.books.numerals import zh_number
from booksum_app.books.plausibility import AUTHOR_NOTE_MAX_CHARS, anomalies, heading_key
from booksum_app.books.webcopy import heading_form, residue_kind
from booksum_app.cli import cli

MODEL = "openai:gpt-4o"  # tiktoken-counted: no local weights


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), style=st.sampled_from(STYLES), numerals=st.sampled_from(NUMERALS),
       encoding=st.sampled_from(ENCODINGS))
def test_site_copies_read_exactly_their_chapters(tmp_path: Path, seed: int, style: str, numerals: str,
                                                 encoding: str) -> None:
    copy = site_copy(random.Random(seed), style=style, numerals=numerals, encoding=encoding)
    path = tmp_path / f"copy-{seed}.txt"
    path.write_bytes(copy.data)
    book = open_book(path)
    got = book.selected_chapters()
    assert [c.title for c in got] == [next((c.title for c in got if title in c.title), title)
                                      for title, _ in copy.expected], "one chapter per expected chapter, in order"
    for chapter, (title, paragraphs) in zip(got, copy.expected, strict=True):
        assert title in chapter.title
        assert "页)" not in chapter.title and "頁)" not in chapter.title
        assert list(chapter.paragraphs) == paragraphs  # nothing of the site, nothing lost
    assert [c.title for c in book.excluded_chapters if c.paragraphs and c.title != "Opening"] == copy.excluded_titles
    notes = anomalies(book)
    appendix = [t for t, _ in copy.expected if t in ("附录", "附錄")]
    assert bool(appendix) == any("kept as story" in n for n in notes), notes
    assert not any("numbered headings" in n for n in notes), notes  # the sequence reads clean


@pytest.mark.parametrize(
    ("line", "form"),
    [("正文 第一回 宴桃园", "第一回 宴桃园"), ("正文卷 第一章", "第一章"), ("VIP章节 第一章 风起", "第一章 风起"),
     ("【第一章】", "第一章"), ("【第一章】 风起", "第一章 风起"), ("卷一 第一回", "第一回"),
     ("第一卷 第一章 风起", "第一章 风起"), ("第一卷第一章 风起", "第一章 风起"), ("【重发】第二回", "第二回"),
     ("第一章 风起(第2/3页)", "第一章 风起"), ("第一章 风起【2/3页】", "第一章 风起"),
     # left alone: a chapter whose title starts with 第, a volume heading, prose
     ("第一章 第一次见面", "第一章 第一次见面"), ("第一卷 风云", "第一卷 风云"),
     ("他说了第一回的事。", "他说了第一回的事。")],
)
def test_site_prefixes_brackets_and_page_marks_around_a_heading(line: str, form: str) -> None:
    assert heading_form(line) == form


@pytest.mark.parametrize(("digits", "value"), [("一零二", 102), ("一〇二", 102), ("壹佰零贰", 102), ("叁拾捌", 38),
                                               ("參拾捌", 38), ("０３８", 38), ("038", 38), ("一百零二", 102)])
def test_numerals_in_every_style(digits: str, value: int) -> None:
    assert zh_number(digits) == value


def test_the_real_honglou_heading_with_a_mark_in_a_digit_by_digit_book(tmp_path: Path) -> None:
    titles = ["第一零一回  大观园月夜感幽魂 散花寺神签惊异兆", "第一零二回  宁国府骨肉病灾襟?大观园符水驱妖孽",
              "第一零三回  施毒计金桂自焚身 昧真禅雨村空遇旧"]
    lines = []
    for number, title in enumerate(titles, start=101):
        lines += [title, f"　　第{number}回第一段，众人说笑。", f"　　第{number}回第二段，各自散了。"]
    path = tmp_path / "hongloumeng.txt"
    path.write_text("\n".join(lines), encoding="gb18030")
    chapters = open_book(path).selected_chapters()
    assert [heading_key(c.title) for c in chapters] == ["回101", "回102", "回103"]
    assert [len(c.paragraphs) for c in chapters] == [2, 2, 2]


def test_an_author_note_line_is_residue(tmp_path: Path) -> None:
    assert residue_kind("作者有話說：本章有改動，請刷新。") == "author's note"
    lines = ["第一回 甲", "　　第一回的事。", "作者有話說：本章有改動，請刷新。", "　　又一段。",
             "第二回 乙", "　　第二回的事。"]
    path = tmp_path / "big5.txt"
    path.write_bytes("\n".join(lines).encode("big5"))
    book = open_book(path)
    assert [c.paragraphs for c in book.selected_chapters()] == [("第一回的事。", "又一段。"), ("第二回的事。",)]
    assert "author's note 1" in book.metadata["web_residue"]


def _chapter_lines(numbers: range, heading: str = "第{}回 標題") -> list[str]:
    out = []
    for n in numbers:
        out.append(heading.format(n))
        out += [f"　　第{n}回第{k}段，眾人在園中說笑，一時散了，各自回房歇息去了。" for k in range(1, 6)]
    return out


def test_an_author_note_section_past_its_bound_is_kept_and_said(tmp_path: Path) -> None:
    # the note's title opens a section; the chapters after it have headings no rule reads ("56. 標題"):
    # excluded, they would be a third of the book gone without a word
    lines = [*_chapter_lines(range(1, 56)), "作者有話說", *_chapter_lines(range(56, 81), "{}. 標題")]
    path = tmp_path / "big5.txt"
    path.write_bytes("\n".join(lines).encode("big5"))
    book = open_book(path)
    noted = [c for c in book.chapters if c.title == "作者有話說"]
    assert noted and noted[0].narrative, "kept: an author's note is a few lines"
    assert sum(len(p) for p in noted[0].paragraphs) > AUTHOR_NOTE_MAX_CHARS
    assert any("author's note" in n and "kept" in n for n in anomalies(book))
    # a real note stays excluded
    short = [*_chapter_lines(range(1, 10)), "作者有話說", "　　謝謝大家。", *_chapter_lines(range(10, 12))]
    path.write_bytes("\n".join(short).encode("big5"))
    book = open_book(path)
    assert [c.title for c in book.excluded_chapters] == ["作者有話說"]


def test_a_short_appendix_at_the_end_stays_back_matter(tmp_path: Path) -> None:
    lines = [*_chapter_lines(range(1, 8)), "附錄", "　　人物表：寶玉，黛玉。"]
    path = tmp_path / "book.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    book = open_book(path)
    assert [c.title for c in book.excluded_chapters] == ["附錄"]


@pytest.mark.parametrize(
    ("numbers", "said"),
    [([1, 2, 4, 5, 6], "skip: 2→4"), ([1, 2, 2, 3, 4], "repeat: 2"), ([1, 2, 5, 3, 4], "run backwards: 5→3"),
     ([1, 2, 3, 1, 2, 3], None), ([1, 2, 3, 4, 5], None)],
)
def test_numbered_headings_that_skip_repeat_or_run_backwards_are_said(tmp_path: Path, numbers: list[int],
                                                                      said: str | None) -> None:
    lines = []
    for k, n in enumerate(numbers):  # each chapter's own text: a repeat is not a page saved twice
        lines += [f"第{n}章 标题{k}", f"　　这是第{k}段故事，众人说笑，各自散了。"]
    path = tmp_path / "book.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    notes = [n for n in anomalies(open_book(path)) if "numbered headings" in n]
    assert (said is None and not notes) or (said is not None and any(said in n for n in notes)), notes


def test_a_section_many_times_the_median_and_a_large_exclusion_are_said(tmp_path: Path) -> None:
    lines = ["Chapter 1", "", "Short text here.", "", "Chapter 2", "", "Short text too.", "", "Chapter 3", "",
             "Short again.", "", "Chapter 4", "", "Brief.", "", "Chapter 5", "", "A long one. " * 200, "",
             "Preface", "", "About this edition. " * 30]
    path = tmp_path / "book.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    notes = anomalies(open_book(path))
    assert any("'Chapter 5' is" in n and "the median section" in n for n in notes), notes
    assert any(n.startswith("excluded text is") and "'Preface'" in n for n in notes), notes


def test_inspect_lists_every_excluded_span_and_summarize_keeps_the_warnings(tmp_path: Path) -> None:
    from booksum_app.testing.fake_server import FakeServer

    copy = site_copy(random.Random(7), style="pages", numerals="digit", encoding="big5")
    path = tmp_path / "copy.txt"
    lines = copy.data.decode("big5").split("\n")
    lines[len(lines) // 2:len(lines) // 2] = ["第九十九章 跳號", "　　這一章的號碼不對。"]
    path.write_bytes("\n".join(lines).encode("big5"))
    result = CliRunner().invoke(cli, ["inspect", str(path), "--model", MODEL, "--json", "-"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    kinds = {s["kind"] for s in report["excluded_spans"]}
    assert {"page marker", "advertisement"} <= kinds
    assert all(s["chars"] >= 0 and s["reason"] for s in report["excluded_spans"])
    assert report["kept_chars"] + sum(s["chars"] for s in report["excluded_spans"]) == report["input_chars"]
    assert any("numbered headings" in a for a in report["anomalies"])
    assert "warning: numbered headings" in result.stderr
    with FakeServer() as server:
        run = CliRunner(env={"OPENAI_API_KEY": "dummy"}).invoke(cli, [
            "summarize", str(path), "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
            "--strategy", "direct", "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert "warning: numbered headings" in run.stderr
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert any("numbered headings" in a for a in record["book"]["anomalies"])
    assert record["book"]["input_chars"] == report["input_chars"]
    assert record["book"]["excluded_chars"]["page marker"] > 0


@pytest.mark.parametrize(("head", "named"), [("Contents\n\n", "'Contents'"), ("", "'Opening'")])
def test_a_long_opening_after_a_contents_block_is_kept_and_said(tmp_path: Path, head: str, named: str) -> None:
    contents = "\n".join(f"Chapter {n}" for n in range(1, 4))  # one block of heading lines: a contents list
    prologue = "\n\n".join(f"The prologue goes on, part {k}, in short lines of verse." for k in range(200))
    chapters = "\n\n".join(f"Chapter {n}\n\nThe story of chapter {n} goes on for a while." for n in range(1, 4))
    path = tmp_path / "book.txt"
    path.write_text(f"{head}{contents}\n\n{prologue}\n\n{chapters}", encoding="utf-8")
    book = open_book(path)
    assert "The prologue goes on, part 199, in short lines of verse." in book.text()
    assert any(named in n and "kept" in n for n in anomalies(book)), anomalies(book)


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_html_and_markdown_keep_a_titled_exclusion_past_its_bound(tmp_path: Path, suffix: str) -> None:
    story = " ".join(["The preface is where the story really happens, page after page."] * 120)
    short = "A short chapter."
    if suffix == ".html":
        text = (f"<html><body><h2>Preface</h2><p>{story}</p>"
                + "".join(f"<h2>Chapter {n}</h2><p>{short}</p>" for n in range(1, 4))
                + f"<h2>Notes</h2><p>{short}</p></body></html>")
    else:
        text = f"## Preface\n\n{story}\n\n" + "".join(f"## Chapter {n}\n\n{short}\n\n" for n in range(1, 4)) \
            + f"## Notes\n\n{short}\n"
    path = tmp_path / f"book{suffix}"
    path.write_text(text, encoding="utf-8")
    book = open_book(path)
    assert [c.title for c in book.selected_chapters()] == ["Preface", "Chapter 1", "Chapter 2", "Chapter 3"]
    assert [c.title for c in book.excluded_chapters] == ["Notes"]  # a short one stays excluded
    assert any("'Preface'" in n and "kept" in n for n in anomalies(book))


def test_xiyouji_appendix_between_chapters_is_story(tmp_path: Path) -> None:
    story = [f"　　却说陈光蕊赴任，第{k}段，刘洪将他推入江中，殷小姐生下一子，抛入江中，长大后为僧。"
             for k in range(40)]
    lines = [*_chapter_lines(range(1, 9)), "附录　陈光蕊赴任逢灾　江流僧复仇报本", *story,
             *_chapter_lines(range(9, 12)), "后记", "　　谢谢。"]
    path = tmp_path / "xiyouji.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    book = open_book(path)
    kept = [c.title for c in book.selected_chapters()]
    assert kept[8] == "附录　陈光蕊赴任逢灾　江流僧复仇报本" and len(kept) == 12
    assert [c.title for c in book.excluded_chapters if c.paragraphs] == ["后记"]
    assert any("附录" in n and "kept as story" in n for n in anomalies(book))


def test_compare_names_a_book_anomaly_before_its_plan(tmp_path: Path) -> None:
    lines = []
    for k, n in enumerate([1, 2, 3, 7, 8]):
        lines += [f"第{n}章 标题{k}", f"　　这是第{k}段故事，众人说笑，各自散了。"]
    path = tmp_path / "skips.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(path), "--strategies", "direct", "-m", "openai:gpt-4o-mini",
                                      "--out", str(tmp_path / "out"), "--plan-only"])
    assert result.exit_code == 0, result.output
    assert "warning: skips.txt: numbered headings skip: 3→7" in result.stderr
