"""Chinese novels from web copies are read whole: every chapter once, in order, no site furniture.

The fixtures are built here the way such copies come about: a site's chapter pages saved as
text (a menu bar, the page title above the heading, "后一页 前一页 回目录 回首页" links), the
whole re-encoded to GB2312 so characters outside it become "?" (裀 in 第六十二回's title, 祲 in
第一百零二回's), "．" as the full stop. The second fixture (a different site's furniture, UTF-8
with U+FFFD, a contents list, a page saved twice) was written after the rules, to check them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.books import open_book
from booksum_app.books.plausibility import heading_key
from booksum_app.books.webcopy import is_web_residue, parse_noisy_heading
from booksum_app.chunking.sentences import split_sentences

HONGLOU_TITLES = {
    36: "第三十六回 绣鸳鸯梦兆绛芸轩 识分定情悟梨香院",
    37: "第三十七回 秋爽斋偶结海棠社 蘅芜苑夜拟菊花题",
    38: "第三十八回 林潇湘魁夺菊花诗 薛蘅芜讽和螃蟹咏",
    61: "第六十一回 投鼠忌器宝玉瞒赃 判冤决狱平儿行权",
    62: "第六十二回 憨湘云醉眠芍药裀 呆香菱情解石榴裙",
    63: "第六十三回 寿怡红群芳开夜宴 死金丹独艳理亲丧",
    101: "第一百零一回 大观园月夜感幽魂 散花寺神签惊异兆",
    102: "第一百零二回 宁国府骨肉病灾祲 大观园符水驱妖孽",
    118: "第一百十八回 记微嫌舅兄欺弱女 惊谜语妻妾谏痴人",
    119: "第一百十九回 中乡魁宝玉却尘缘 沐皇恩贾家延世泽",
    120: "第一百二十回 甄士隐详说太虚情 贾雨村归结红楼梦",
}
MENU = "首页|原创书库|古典名著|武侠小说|言情小说|排行榜"
NAV = ["后一页", "前一页", "回目录", "回首页"]


def body(number: int) -> list[str]:
    """Four paragraphs of a chapter, "．" as the full stop, each naming its chapter."""
    return [
        f"　　话说第{number}回开头，宝玉从外头回来，见众人都在园中．黛玉笑道：“你又往哪里去了？”",
        f"　　宝玉道：“不过在外头走了一走．”说着，便坐下吃茶．这是第{number}回的事．",
        f"　　一时贾母打发人来叫，众人方散了．袭人收拾了东西，又回来服侍．第{number}回中此事最要紧．",
        f"　　且听下回分解．第{number}回完．",
    ]


def honglou_web_copy() -> str:
    lines = ["《红楼梦》曹雪芹", ""]
    for number, title in HONGLOU_TITLES.items():
        lines.append(MENU)
        if number in (38, 119):  # the page title above the heading, with the links between
            lines += [title, *NAV]
        heading = title + "?" if number == 62 else title  # a stray mark after the title
        lines += [heading, *body(number), *NAV, ""]
    return "\r\n".join(lines)


def test_honglou_web_copy_reads_every_chapter_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "hongloumeng.txt"
    path.write_bytes(honglou_web_copy().encode("gb2312", errors="replace"))
    book = open_book(path)
    chapters = book.selected_chapters()
    assert [heading_key(c.title) for c in chapters] == [f"回{n}" for n in HONGLOU_TITLES]
    assert chapters[4].title == "第六十二回 憨湘云醉眠芍药? 呆香菱情解石榴裙?"  # kept as written
    assert chapters[7].title == "第一百零二回 宁国府骨肉病灾? 大观园符水驱妖孽"
    for number, chapter in zip(HONGLOU_TITLES, chapters, strict=True):
        assert len(chapter.paragraphs) == 4, chapter.title
        assert all(f"第{number}回" in p for p in chapter.paragraphs)
        assert not any(word in chapter.text for word in ("首页", "回目录", "后一页", "原创书库"))
    excluded = [c for c in book.chapters if not c.narrative]
    assert all(c.title in ("Opening", "") or not c.paragraphs for c in excluded)


def test_full_width_full_stop_splits_chinese_sentences() -> None:
    paragraph = body(62)[1].strip()
    assert split_sentences(paragraph, lang="zh") == [
        "宝玉道：“不过在外头走了一走．”", "说着，便坐下吃茶．", "这是第62回的事．",
    ]
    assert split_sentences("他走了｡她也走了。", lang="zh") == ["他走了｡", "她也走了。"]
    assert split_sentences("一共１．５两银子．够了。", lang="zh") == ["一共１．５两银子．", "够了。"]


SANGUO_TITLES = [
    "第一回　宴桃园豪杰三结义　斩黄巾英雄首立功",
    "第二回　张翼德怒鞭督邮　何国舅谋诛宦竖",
    "第三回　议温明董卓叱丁原　馈金珠李肃说吕布",
    "第四回　废汉帝陈留践位　谋董贼孟德\ufffd刀",  # 献 lost in a bad decode
    "第五回　发矫诏诸镇应曹公　破关兵三英战吕布",
]


def sanguo_web_copy() -> str:
    lines = ["三国演义", "作者：罗贯中", "", "www.example-novel.com", "", "目录"]
    lines += [t.replace("\ufffd", "献") for t in SANGUO_TITLES]  # the contents, one line each
    lines.append("")
    pages = list(enumerate(SANGUO_TITLES, start=1))
    pages.insert(3, pages[2])  # the third page saved twice
    for number, title in pages:
        lines += [
            "上一章 ← 章节目录 → 下一章",
            title,
            f"　　却说第{number}回里，玄德与关、张二人商议已定。次日，众人同往城外。",
            f"　　操闻之大喜，便令左右设宴款待。酒至半酣，忽报第{number}回的军情到了。",
            "返回书页 | 加入书签 | 投票推荐",
            "http://www.example-novel.com/book/123/",
            "",
        ]
    return "\n".join(lines)


def test_held_out_web_copy_with_contents_and_a_page_saved_twice(tmp_path: Path) -> None:
    path = tmp_path / "sanguo.txt"
    path.write_text(sanguo_web_copy(), encoding="utf-8")
    book = open_book(path)
    chapters = book.selected_chapters()
    assert [heading_key(c.title) for c in chapters] == [f"回{n}" for n in range(1, 6)]
    for number, chapter in enumerate(chapters, start=1):
        assert len(chapter.paragraphs) == 2 and all(f"第{number}回" in p for p in chapter.paragraphs)
        assert not any(w in chapter.text for w in ("章节目录", "返回书页", "example-novel"))


@pytest.mark.parametrize(
    "line",
    ["首页|原创书库|古典名著|武侠小说", "后一页", "后一页 前一页 回目录 回首页", "上一章 ← 章节目录 → 下一章",
     "返回书页 | 加入书签 | 投票推荐", "http://www.example.com/a/1.html", "www.example.com"],
)
def test_web_residue_lines(line: str) -> None:
    assert is_web_residue(line)


@pytest.mark.parametrize(
    "line",
    ["目录", "宝玉道：“回目录去吧。”", "首页写着三个字，众人都看了。", "甲|乙", "他说 上一章 写得好",
     "贾母|王夫人|薛姨妈说了一句话，众人都笑了。", "第一回 宴桃园豪杰三结义"],
)
def test_text_that_looks_like_residue_is_text(line: str) -> None:
    assert not is_web_residue(line)


@pytest.mark.parametrize(
    ("line", "numbers"),
    [("第六十二回 憨湘云醉眠芍药? 呆香菱情解石榴裙?", {62}), ("第二回　贾夫人仙逝扬州城\ufffd", {2}),
     ("第六?二回 憨湘云醉眠芍药", {62}), ("?六十二回 憨湘云", {62}), ("第六十二?憨湘云醉眠芍药", {62}),
     ("第二回是怎么回事?", None), ("第四回中既将薛家母子略已表明。?", None), ("第二回 你去吗？", None)],
)
def test_headings_with_noise_characters(line: str, numbers: set[int] | None) -> None:
    parsed = parse_noisy_heading(line)
    assert (parsed.numbers >= numbers if numbers and parsed else parsed is None and numbers is None)


@pytest.mark.parametrize(
    ("title", "key"),
    [("第三十八回 林潇湘", "回38"), ("第38回", "回38"), ("第３８回", "回38"), ("第一百零二回 x?", "回102"),
     ("第一百十九回", "回119"), ("第十章", "章10"), ("第两千零一章", "章2001"), ("Chapter 1", "chapter1")],
)
def test_heading_keys(title: str, key: str) -> None:
    assert heading_key(title) == key


def test_shuihuzhuan_chapters_once_in_order() -> None:
    from tests.conftest import BOOKS_DIR

    path = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"
    if not path.is_file():
        pytest.skip("水浒传 is not in the books of BOOKSUM_DATA_DIR (booksum data does not fetch it)")
    chapters = open_book(path).selected_chapters()
    keys = [heading_key(c.title) for c in chapters]
    assert keys[0].startswith("楔子") and keys[1:] == [f"回{n}" for n in range(1, 121)]
    assert all(c.paragraphs for c in chapters)


def test_side_stories_spaced_ordinals_and_unknown_lines_between_repeated_headings(tmp_path: Path) -> None:
    lines = [
        "第 1 回 宴桃园豪杰三结义", "　　话说天下大势，分久必合，合久必分。",
        "第2回 张翼德怒鞭督邮", "某某文学 第一时间", "第２回 张翼德怒鞭督邮", "　　且说董卓字仲颖。",
        "番外一 桃园旧事", "　　那年桃花开得正好。",
        "后记", "　　此书写了三年。",
    ]
    path = tmp_path / "novel.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    book = open_book(path)
    assert [(c.title, c.paragraphs) for c in book.selected_chapters()] == [
        ("第 1 回 宴桃园豪杰三结义", ("话说天下大势，分久必合，合久必分。",)),
        ("第２回 张翼德怒鞭督邮", ("且说董卓字仲颖。",)),  # the unknown line between is residue
        ("番外一 桃园旧事", ("那年桃花开得正好。",)),
    ]
    assert [c.title for c in book.excluded_chapters] == ["后记"]
    assert book.metadata["web_residue"] == "between repeated headings 1"


def test_damaged_headings_before_the_first_clean_one_are_read_backwards(tmp_path: Path) -> None:
    # "第５�章" alone could be 5 or 50-59; the clean 第５４章 after it says 52, then 53
    lines = ["第５�章 甲", "　　第52章的事。", "第□５３? 乙", "　　第53章的事。", "第５４章 丙", "　　第54章的事。"]
    path = tmp_path / "novel.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    chapters = open_book(path, lang="zh").selected_chapters()
    assert [(c.title, c.paragraphs) for c in chapters] == [
        ("第５�章 甲", ("第52章的事。",)), ("第□５３? 乙", ("第53章的事。",)), ("第５４章 丙", ("第54章的事。",)),
    ]


def honglou_second_copy() -> str:
    """Another copy of the same chapters: the mark in another place of each damaged heading,
    tabs and full-width spaces, and an advertising line between a page title and its heading."""
    lines = ["《红楼梦》曹雪芹", ""]
    for number, title in HONGLOU_TITLES.items():
        if number in (38, 119):
            lines += [title, "手机阅读本书请访问 m.example.com"]
        if number == 62:
            title = "第六十二回?憨湘云醉眠芍药?呆香菱情解石榴裙"  # the separator and 裀 lost
        if number == 102:
            title = "第一百零二回\t宁国府骨肉病灾?　大观园符水驱妖孽"
        lines += [title, *body(number), "本章未完，请点击下一页继续阅读", ""]
    lines += ["后记", "　　此本据网上旧本录出。"]
    return "\n".join(lines)


def test_honglou_second_copy_reads_every_chapter_once_with_back_matter_apart(tmp_path: Path) -> None:
    path = tmp_path / "hongloumeng2.txt"
    path.write_text(honglou_second_copy(), encoding="utf-8")
    book = open_book(path)
    chapters = book.selected_chapters()
    assert [heading_key(c.title) for c in chapters] == [f"回{n}" for n in HONGLOU_TITLES]
    for number, chapter in zip(HONGLOU_TITLES, chapters, strict=True):
        assert [p.strip("　") for p in chapter.paragraphs] == [p.strip("　") for p in body(number)]
    assert [c.title for c in book.excluded_chapters if c.title == "后记"] == ["后记"]
    assert book.metadata["web_residue"] == f"advertisement {len(HONGLOU_TITLES) + 2}"


@pytest.mark.parametrize(
    "line",
    ["www．example．com", "ｈｔｔｐ://ｗｗｗ．example．com/1.html", "Read on your phone at m．b29．la"],
)
def test_full_width_addresses_are_residue(line: str) -> None:  # found by the generated copies
    assert is_web_residue(line)


def test_mixed_width_ordinal_with_a_mark_is_read_in_its_own_digits() -> None:  # found likewise
    parsed = parse_noisy_heading("第５□章\t药府温人夫")
    assert parsed is not None and 53 in parsed.numbers and parsed.unit == "章"


def test_consecutive_chapters_with_one_title_are_not_a_repeat(tmp_path: Path) -> None:  # likewise
    lines = ["第八回 丁丁丁", "　　第八回的事。", "?第九回 丁丁丁", "　　第九回的事。",
             "第十□回 丁丁丁", "　　第十回的事。", "第十一回 丁丁丁", "　　第十一回的事。"]
    path = tmp_path / "novel.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert [c.paragraphs[0] for c in open_book(path, lang="zh").selected_chapters()] == [
        "第八回的事。", "第九回的事。", "第十回的事。", "第十一回的事。"]


def test_two_afterwords_in_a_row_stay_two_sections(tmp_path: Path) -> None:  # likewise
    lines = ["第一回 甲", "　　第一回的事。", "後記", "　　写完了。", "後　記", "　　又写了一篇。"]
    path = tmp_path / "novel.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    book = open_book(path, lang="zh")
    assert [c.title for c in book.excluded_chapters] == ["後記", "後　記"]
