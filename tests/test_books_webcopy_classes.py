"""Web copies of 回-novels as classes of inputs, generated: noise marks at any place of a heading,
headings repeated after residue, back matter, site advertising.

Each generated copy is a novel of N chapters (第X回/第X章, Chinese numerals written the ways books
write them, Arabic and full-width digits, with or without couplet titles, any spacing) that a web
site has been through: marks where a re-encoding lost characters (in 第, the numeral, the unit, a
separator, the title; or added), zero-width characters, page titles repeated above headings
after navigation and advertising lines, advertising between paragraphs, front matter (title line,
简介, a contents list) and back matter (后记, 跋, 附录, …). The reader must give back exactly the
chapters, once each, in order, titled, with exactly their paragraphs: no residue line and no back
matter in any chapter, and the residue counted in the book's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.books import open_book
from booksum_app.books.numerals import NOISE_MARKS
from booksum_app.books.webcopy import residue_kind

DIGITS = "零一二三四五六七八九"


def numeral(n: int, style: str) -> str:
    """n as a book writes it (written here independently of the reader's own renderer)."""
    if style == "arabic":
        return str(n)
    if style == "fullwidth":
        return "".join(chr(ord("０") + int(d)) for d in str(n))
    hundreds, tens, ones = n // 100, n // 10 % 10, n % 10
    out = ""
    if hundreds:
        out += DIGITS[hundreds] + "百"
        if tens == 0 and ones:
            out += "〇" if style == "ling-circle" else "零"
        elif tens:
            out += ("十" if style == "short" and tens == 1 else DIGITS[tens] + "十")
    elif tens:
        out += ("" if tens == 1 else DIGITS[tens]) + "十"
    if ones:
        out += DIGITS[ones]
    return out


# common characters of 回目 couplets; no numerals, units, question words or punctuation
TITLE_CHARS = (
    "宝玉黛钗湘云凤姐贾母王夫人宁国府荣大观园梦醉眠芍药香菱情解石榴裙寿怡红群芳开夜宴金丹独艳理亲丧"
    "林潇湘魁夺菊花诗薛蘅芜讽和螃蟹咏英雄豪杰结义斩黄巾首立功张翼德怒鞭督邮谋诛宦竖议温明董卓叱丁原"
)
SPACES = [" ", "\u3000", "\t", "  ", "\u3000\u3000", " \u3000"]
SEPARATORS = [*SPACES, ":", "：", "、", ""]
NOISE = list(NOISE_MARKS)
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
SITES = ["笔趣阁", "顶点小说", "八一中文网", "书趣阁", "新笔趣阁", "看书网"]
AD_FORMS = [
    "本书首发于{site}，转载请注明出处",
    "手机阅读本书请访问 {m}",
    "Read on your phone at {m}",
    "天才一秒记住本站地址：{www}",
    "本章未完，请点击下一页继续阅读》》",
    "最新章节请到{site}阅读",
    "请收藏本站：https://{www}。{site}手机版：https://{m}",
    "{site}招聘兼职编辑，有意者请联系本站",
    "（未完待续）",
    "（本章完）",
    "求月票！求推荐票！",
    "百度搜索 {site} 即可找到本书最新章节",
    "一秒记住【{site} {www}】，精彩小说无弹窗免费阅读！",
    "喜欢本书请收藏 {domain}",
    "{www}",
    "http://{www}/book/123/",
    "上一章 ← 章节目录 → 下一章",
    "返回书页 | 加入书签 | 投票推荐",
    "首页|原创书库|古典名著|武侠小说|排行榜",
    "后一页 前一页 回目录 回首页",
]
BACK_MATTER = ["后记", "後記", "跋", "附录", "附錄", "完本感言", "作者的话", "后记：写在三十年后",
               "附录一 人物表", "【后记】", "後　記", "跋（二〇〇五年版）"]
FRONT_MATTER = ["内容简介", "前言", "序", "作者的话"]


@st.composite
def ad_lines(draw: st.DrawFn) -> str:
    name = draw(st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=8))
    tld = draw(st.sampled_from(["com", "net", "la", "cc", "info", "org"]))
    line = draw(st.sampled_from(AD_FORMS)).format(
        site=draw(st.sampled_from(SITES)), domain=f"{name}.{tld}", www=f"www.{name}.{tld}",
        m=f"m.{name}.{tld}",
    )
    return line if draw(st.booleans()) else line.replace(".", "．")  # full-width dots too


@dataclass
class Chapter:
    heading: str  # as written in the copy (zero-width characters included)
    paragraphs: list[str]
    repeated_as: str | None = None  # the page title printed above the heading


@dataclass
class WebCopy:
    text: str
    chapters: list[Chapter]
    residue_lines: int
    back_titles: list[str] = field(default_factory=list)


def noisy(draw: st.DrawFn, heading: str) -> str:
    """The heading with one or two marks put in (replacing a character, or added) anywhere."""
    chars = list(heading)
    for _ in range(draw(st.integers(1, 2))):
        mark = draw(st.sampled_from(NOISE))
        if draw(st.booleans()) and chars:
            chars[draw(st.integers(0, len(chars) - 1))] = mark
        else:
            chars.insert(draw(st.integers(0, len(chars))), mark)
    return "".join(chars)


@st.composite
def web_copies(draw: st.DrawFn) -> WebCopy:
    n = draw(st.integers(2, 12))
    first = draw(st.integers(1, 121 - n))
    style = draw(st.sampled_from(["standard", "short", "ling-circle", "arabic", "fullwidth"]))
    unit = draw(st.sampled_from("回章"))
    titled = draw(st.booleans())
    block_mode = draw(st.booleans())  # a blank line after every paragraph
    residue = 0
    lines = ["《石头记》曹雪芹"]
    if draw(st.booleans()):
        lines += [draw(st.sampled_from(FRONT_MATTER)), "　　这是一部写大家族兴衰的小说，前后共有若干回。"]
    chapters = []
    for number in range(first, first + n):
        title = ""
        if titled:
            halves = [draw(st.text(TITLE_CHARS, min_size=5, max_size=8)) for _ in range(2)]
            title = draw(st.sampled_from(SEPARATORS)) + draw(st.sampled_from(SPACES)).join(halves)
        clean = f"第{numeral(number, style)}{unit}{title}"
        # one clean heading anchors the sequence (the last, so the ones before it are read
        # backwards from it): in a copy whose every heading is damaged nothing says which of
        # "第5?章"'s numbers (5, 50..59) the first is (docs/books.md)
        anchor = number == first + n - 1
        heading = noisy(draw, clean) if not anchor and draw(st.integers(0, 2)) == 0 else clean
        if draw(st.integers(0, 4)) == 0:  # zero-width characters a site slips in
            at = draw(st.integers(0, len(heading)))
            heading = heading[:at] + draw(st.sampled_from(ZERO_WIDTH)) + heading[at:]
        paragraphs = [
            f"话说第{number}{unit}第{k}段，众人在园中说笑，一时散了，各自回房歇息去了。"
            + draw(st.sampled_from(["", "宝玉问道：你去吗？", "第二回中此事已经表明。"]))
            for k in range(1, draw(st.integers(2, 4)) + 1)
        ]
        chapter = Chapter(heading, paragraphs)
        if draw(st.integers(0, 3)) == 0:
            chapter.repeated_as = noisy(draw, clean) if not anchor and draw(st.booleans()) else clean
            lines.append(chapter.repeated_as)
            between = draw(st.lists(ad_lines(), min_size=0, max_size=3))
            residue += len(between)
            lines += between or ([""] if block_mode else [])
        lines.append(("　　" if draw(st.booleans()) else "") + heading)
        for paragraph in paragraphs:
            lines.append(("　　" if draw(st.booleans()) else "") + paragraph)
            if block_mode:
                lines.append("")
            if draw(st.integers(0, 3)) == 0:
                lines.append(draw(ad_lines()))
                residue += 1
        chapters.append(chapter)
    back_titles = draw(st.lists(st.sampled_from(BACK_MATTER), min_size=0, max_size=2, unique=True))
    for back in back_titles:
        lines += [*([""] if block_mode else []), back,
                  f"　　写完这部书，用了整整三年。{back}里的话，感谢读者一路相伴。", "　　书中人物皆有所本。"]
        if draw(st.booleans()):
            lines.append(draw(ad_lines()))
            residue += 1
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return WebCopy(newline.join(lines), chapters, residue, back_titles)


def without_zero_width(text: str) -> str:
    return "".join(ch for ch in text if ch not in ZERO_WIDTH).strip()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(copy=web_copies())
def test_generated_web_copies_read_every_chapter_once_in_order(tmp_path_factory: pytest.TempPathFactory,
                                                               copy: WebCopy) -> None:
    path = tmp_path_factory.mktemp("copy") / "novel.txt"
    path.write_text(copy.text, encoding="utf-8")
    book = open_book(path)
    chapters = book.selected_chapters()
    assert len(chapters) == len(copy.chapters), [c.title for c in chapters]
    for got, want in zip(chapters, copy.chapters, strict=True):
        titles = {without_zero_width(want.heading)}
        if want.repeated_as is not None:
            titles.add(without_zero_width(want.repeated_as))
        assert got.title in titles
        assert list(got.paragraphs) == want.paragraphs  # no residue, no back matter, nothing lost
    excluded = {c.title for c in book.excluded_chapters}
    assert all(title in excluded for title in copy.back_titles)
    assert int(book.metadata.get("web_residue_lines", "0")) == copy.residue_lines


@settings(max_examples=200, deadline=None)
@given(line=ad_lines())
def test_generated_advertising_lines_are_residue(line: str) -> None:
    assert residue_kind(line) is not None


@pytest.mark.parametrize(
    "line",
    ["教练公布了首发名单，他不在其中。", "他把收藏的字画都拿了出来。", "她拿起手机看了一眼，没有说话。",
     "“请收藏好这封信，”他说。", "第二回中此事已经表明。", "宝玉问道：你去吗？", "那网中的鱼都跳了出来。",
     "He read the letter twice.", "See www.example.com for details", "作者在序中说过此事。"],
)
def test_text_near_the_advertising_class_stays(line: str) -> None:
    assert residue_kind(line) is None


HEADING = "第一百零二回 宁国府骨肉病灾祲 大观园符水驱妖孽"


def _book(mid: str) -> str:
    titles = ["第一百回 破好事香菱结深恨 悲远嫁宝玉感离情", "第一百零一回 大观园月夜感幽魂 散花寺神签惊异兆",
              mid, "第一百零三回 施毒计金桂自焚身 昧真禅雨村空遇旧", "第一百零四回 醉金刚小鳅生大浪 痴公子余痛触前情"]
    lines = []
    for number, title in enumerate(titles, start=100):
        lines += [title, f"　　第{number}回第一段，众人说笑。", f"　　第{number}回第二段，各自散了。"]
    return "\n".join(lines)


VARIANTS = sorted(
    {HEADING[:i] + mark + HEADING[i + 1:] for i in range(len(HEADING)) for mark in NOISE}
    | {HEADING[:i] + mark + HEADING[i:] for i in range(len(HEADING) + 1) for mark in NOISE}
    | {HEADING.replace(" ", space, 1) for space in SPACES} | {HEADING.replace(" ", "", 1)}
    | {HEADING.replace(" ", space) .replace("灾祲", "灾?") for space in SPACES}
)


def test_a_noise_mark_at_every_position_of_a_heading(tmp_path: Path) -> None:
    # one test over every variant (about 260): as many parametrized items cost a tenth of the suite's items
    path = tmp_path / "book.txt"
    for heading in VARIANTS:
        path.write_text(_book(heading), encoding="utf-8")
        chapters = open_book(path, lang="zh").selected_chapters()
        assert [c.title for c in chapters][2] == heading, heading
        assert [c.paragraphs[0][:7] for c in chapters] == [f"第{n}回第一" for n in range(100, 105)], heading


@pytest.mark.xfail(strict=True, reason="known: a noisy heading between two chapters of identical titles, each under "
                   "120 characters, reads as a repeat of the chapter before it")
def test_a_noisy_heading_that_fills_the_sequence_is_not_a_repeat(tmp_path: Path) -> None:
    # found by test_generated_web_copies_read_every_chapter_once_in_order: chapter 10's text is
    # dropped as the residue between two copies of its heading
    para = "话说第{n}回第{k}段，众人在园中说笑，一时散了，各自回房歇息去了。"
    title = "丁丁丁丁丁 丁丁丁丁丁"
    lines = [f"第九回 {title}", para.format(n=9, k=1), f"第十回 {title}", f"\u200b?第十回 {title}",
             para.format(n=10, k=1), para.format(n=10, k=2), f"\u200b第十?回 {title}", para.format(n=11, k=1),
             f"第十二回 {title}", para.format(n=12, k=1)]
    path = tmp_path / "book.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    chapters = open_book(path, lang="zh").selected_chapters()
    assert [c.paragraphs[0].split("回")[0] for c in chapters] == ["话说第9", "话说第10", "话说第11", "话说第12"]
