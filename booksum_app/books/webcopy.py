"""Web copies of Chinese novels: the site's residue around the text, and headings that a lossy
re-encoding marked with noise.

Residue (:func:`residue_kind`): a line that belongs to the web page, not to the book.

- ``author's note``: a line of at most 150 characters opening with "作者有话说：" (作者的话,
  作者留言, ...) and its text: the uploader's word to readers ("本章有改動，請刷新。"), one line.

- ``navigation``: navigation words only ("后一页 前一页 回目录 回首页", "上一章 ← 章节目录 →
  下一章"), or a menu bar of three or more short items between "|" ("首页|原创书库|…").
- ``address``: a bare address ("http://…", "www.…").
- ``advertisement``: a line of at most 150 characters, outside dialogue, that holds a site
  phrase ("转载请注明出处", "本章未完，请点击下一页继续阅读", "最新章节", "请收藏本站", "手机阅读",
  "无弹窗", "（未完待续）", "求月票", …), or a web address together with Chinese text or a reading
  word ("Read on your phone at m.example.com"). Recruitment and first-publication notices
  ("本站招聘编辑", "本书首发于…") count when they name the site, the book or its readers.

Noisy headings (:func:`parse_noisy_heading`): a "第…回/章" line in which ``?``, ``？``, ``□``,
``■`` or U+FFFD stands for a character the copy lost (in the ordinal, for 第, for the unit, in the
title) or for a separator, with any spacing. Which chapter it is comes from the ordinal with
each mark read as any numeral (or nothing), kept only when the result is a numeral as Chinese
writes it; the book's own sequence then picks among the candidates (see
:func:`resolve_noisy_headings`). Zero-width characters are ignored in headings.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from booksum_app.books.numerals import NOISE, NOISE_MARKS, NUMERAL_CHARS, UNIT_CHARS, ZH_NUM, ordinal_candidates

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


_ZERO_WIDTH_CHAR = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")


def without_zero_width(line: str) -> str:
    """The line without zero-width characters (a site's invisible watermark)."""
    return line.translate(_ZERO_WIDTH) if _ZERO_WIDTH_CHAR.search(line) else line


# ---- residue -----------------------------------------------------------------------------

_NAV_WORDS = frozenset({
    "首页", "上一页", "下一页", "前一页", "后一页", "回目录", "回首页", "返回目录", "返回首页",
    "章节目录", "返回书页", "返回书目", "上一章", "下一章", "上一回", "下一回", "上一篇", "下一篇",
    "加入书签", "推荐本书", "返回顶部", "回到顶部", "打印本页", "关闭窗口", "目录", "返回", "书签",
    "投票推荐", "TOP", "top",
})
_NAV_SPLIT = re.compile(r"[|｜/／\\\s·•>»«<\[\]【】()（）←→]+")
_MENU_SPLIT = re.compile(r"\s*[|｜]\s*")
_URL_LINE = re.compile(r"^(?:https?://|www\.)\S+$", re.IGNORECASE)
_SENTENCE_MARKS = re.compile("[。！？；，,.!?;]")
# an address inside a line: a scheme, www./m./wap., or a name under a common top-level domain
_ADDRESS = re.compile(
    r"(?:https?://|\bwww\.|\b(?:m|wap|mobile)\.[a-z0-9-]+\.)"
    r"|\b[a-z0-9-]{2,}\.(?:com|net|org|cc|cn|info|la|me|tw|co|xyz|top|vip|biz|tv|io)\b",
    re.IGNORECASE,
)
_CJK = re.compile("[\u3400-\u9fff]")
_READING_WORDS = re.compile(
    r"\b(?:read(?:ing)?|visit|bookmark|chapters?|novels?|phone|mobile|download|updates?)\b",
    re.IGNORECASE,
)
# phrases only a site or an uploader writes: reprint notices, page-turn prompts, bookmark and
# app prompts, "latest chapters", vote begging, "(to be continued)"
_SITE_PHRASES = re.compile(
    "转载请(?:注明|保留)|请注明出处|本章未完|未完待续|本章完|最新章节|请收藏|收藏本站|加入书签|手机阅读|"
    "手机版|手机用户|手机访问|手机上阅读|无弹窗|一秒记住|记住本站|本站地址|本站网址|本站域名|章节报错|"
    "点击下一页|下一页继续|免费阅读|全文阅读|txt下载|全集下载|电子书下载|更新最快|更新速度最快|最快更新|"
    "首发地址|本书首发|首发于|首发网|正版订阅|支持正版|求月票|求推荐票|求收藏|求订阅|书友群|读者群|"
    "百度搜索|请到.{0,12}(?:阅读|观看)|read\\s+on\\s+your\\s+phone|please\\s+bookmark",
    re.IGNORECASE,
)
# weaker words: residue only when the line also names the site, the book or its readers
_SITE_WORDS_WEAK = re.compile("招聘|诚聘|首发|公众号|关注|投稿|签约|订阅")
_SITE_NOUNS = re.compile("本站|网站|本书|小说|作者|编辑|写手|书友|读者|阅读|章节|网")
_WIDE_LATIN = re.compile("[０-９Ａ-Ｚａ-ｚ．：／]")
# an author's note on a line of its own, with its text after the colon: "作者有話說：本章有改動，請刷新。"
_AUTHOR_NOTE_LINE = re.compile(
    "^[（(【〔]?(?:作者有话说|作者有話說|作者的话|作者的話|作者留言|作者按)[）)】〕]?[:：].+"
)
_DIALOGUE = re.compile("[“”「」『』\"]")


# the traditional forms of the characters the site vocabulary above is written in: a Big5 copy's
# "上一頁 ← 章節目錄 → 下一頁" and "轉載請註明出處" are read as their simplified forms
_TRADITIONAL = str.maketrans(
    "話頁錄節書籤薦轉載請註處發說閱讀機訪記網彈費權頂關閉廣擊繼續與時來過還從號輯簽訂搜尋碼廠頻區戶"
    "誠聘屬稱禮歡迎請點選擇貢獻組應開啟載錢單態壇論報錯誤變換",
    "话页录节书签荐转载请注处发说阅读机访记网弹费权顶关闭广击继续与时来过还从号辑签订搜寻码厂频区户"
    "诚聘属称礼欢迎请点选择贡献组应开启载钱单态坛论报错误变换",
)


def residue_kind(line: str) -> str | None:
    """``navigation``, ``address``, ``advertisement`` or ``author's note`` for a line of the web page,
    else None."""
    line = line.strip().translate(_TRADITIONAL)
    if not line or len(line) > 200:
        return None
    if _URL_LINE.match(line) or (_WIDE_LATIN.search(line) and _URL_LINE.match(unicodedata.normalize("NFKC", line))):
        return "address"
    words = [w for w in _NAV_SPLIT.split(line) if w]
    if words and all(w in _NAV_WORDS for w in words) and words != ["目录"]:
        return "navigation"  # a lone 目录 is a contents title (front matter), not a link
    items = _MENU_SPLIT.split(line)
    if len(items) >= 3 and all(0 < len(item) <= 8 and not _SENTENCE_MARKS.search(item) for item in items):
        return "navigation"
    if len(line) <= 150 and _AUTHOR_NOTE_LINE.match(line):
        return "author's note"
    return "advertisement" if _is_advertisement(line) else None


def _is_advertisement(line: str) -> bool:
    if len(line) > 150 or _DIALOGUE.search(line):
        return False
    # ｗｗｗ．ｘｘ．ｃｏｍ is www.xx.com
    folded = unicodedata.normalize("NFKC", line) if _WIDE_LATIN.search(line) else line
    if _SITE_PHRASES.search(folded):
        return True
    if _ADDRESS.search(folded) and (_CJK.search(folded) or _READING_WORDS.search(folded)):
        return True
    return len(folded) <= 80 and bool(_SITE_WORDS_WEAK.search(folded) and _SITE_NOUNS.search(folded))


def is_web_residue(line: str) -> bool:
    """A line of a web page's furniture or advertising (see :func:`residue_kind`)."""
    return residue_kind(line) is not None


# ---- noisy headings ----------------------------------------------------------------------

_SEPARATORS = " \t\u3000:：、.．"
_TITLE_NOT = re.compile("[。！；…!;“”「」『』]")
_NO_SEPARATOR_NOT = re.compile("[，,、：:（）()]")
# a question, not a damaged heading: "第二回是怎么回事?", "第二回 你去吗？"
_QUESTION = re.compile("[吗呢吧么嘛][?？]|怎么|什么|为什么|难道|是不是|为何|如何|谁")


@dataclass(frozen=True)
class NoisyHeading:
    """A heading line with noise marks: the numbers its ordinal can be, its unit (None when a
    mark stands for it) and its title without marks and spaces (for comparing copies)."""

    numbers: frozenset[int]
    unit: str | None
    title: str


_HEAD_RUN_CHARS = NUMERAL_CHARS | frozenset(NOISE_MARKS)
_HEADING_STARTS = frozenset("第" + NOISE_MARKS + "\u200b\u200c\u200d\u2060\ufeff\u00ad")


_OPEN = "【〖[［〔"
_CLOSE = "】〗]］〕"
_PREFIX_GAP = "[\\s\u3000:：、·]*"
# a site's word, tag or volume before a chapter ordinal: 正文, 正文卷, VIP章节, 【重发】, 卷一, 第一卷
_O = re.escape(_OPEN)
_C = re.escape(_CLOSE)
_PREFIX_PART = re.compile(
    rf"(?:[{_O}][^{_C}第\s]{{1,8}}[{_C}]"
    rf"|第[{ZH_NUM}]+[卷部集篇](?={_PREFIX_GAP}[{_O}]?第)"
    rf"|[卷部][{ZH_NUM}]+(?={_PREFIX_GAP}[{_O}]?第)"
    rf"|(?!第)[^\s。！？；…!?;，,：:“”「」『』《》()（）{_O}{_C}]{{1,8}}(?=[\s\u3000]+[{_O}]?第))"
    rf"{_PREFIX_GAP}"
)
_MAX_PREFIX_CHARS = 14
_PAGE_OF = r"[0-9０-９]{1,3}\s*[/／]\s*[0-9０-９]{1,3}"  # 2/3
_PAGE_CORE = rf"(?:第\s*{_PAGE_OF}\s*[页頁]?|{_PAGE_OF}\s*[页頁])"
#: a page-split marker a site prints after a title or a page's text: (第3/3页), 【2/3页】, 第1/2页
PAGE_MARK = re.compile(rf"[(（\[【［]\s*{_PAGE_CORE}\s*[)）\]】］]|第\s*{_PAGE_OF}\s*[页頁]")


def without_page_marks(line: str) -> str:
    """The line without page-split markers ("第一章 风起(第2/3页)" is "第一章 风起")."""
    return PAGE_MARK.sub("", line).strip() if ("/" in line or "／" in line) else line


def without_site_prefix(line: str) -> str:
    """A heading line without a site's short prefix or bracket around its ordinal: "正文 第一回 x",
    "VIP章节 第一章", "【重发】第二回", "卷一 第一回", "第一卷 第一章" and "【第一章】 x" read as "第一回 x",
    "第一章", "第二回", "第一回", "第一章" and "第一章 x" (the volume does not name the chapter)."""
    if "第" not in line[: _MAX_PREFIX_CHARS + 2]:
        return line
    rest, cut = line, 0
    for _ in range(3):
        if rest.startswith("第") and not re.match(rf"第[{ZH_NUM}]+[卷部集篇]", rest):
            break
        m = _PREFIX_PART.match(rest)
        if m is None:
            break
        rest, cut = rest[m.end():], cut + m.end()
    if cut > _MAX_PREFIX_CHARS or not rest:
        return line
    if rest[0] in _OPEN and rest[1:2] == "第":  # 【第一章】 x: the bracket around the ordinal
        close = rest.find(_CLOSE[_OPEN.index(rest[0])])
        if 0 < close <= 24:
            inner, after = rest[1:close].strip(), rest[close + 1:].strip()
            rest = f"{inner} {after}" if after else inner
    return rest if rest.startswith("第") else line


def heading_form(line: str) -> str:
    """The line as heading rules read it: no zero-width characters, no spaces inside the
    ordinal ("第 62 回" is "第62回"); a space after the ordinal stays a separator."""
    line = without_page_marks(without_site_prefix(line.strip()))
    if not line or line[0] not in _HEADING_STARTS:
        return line  # not a heading's start: the common case, kept cheap
    line = without_zero_width(line).strip()
    if len(line) > 1 and line[0] in NOISE_MARKS and line.lstrip(NOISE_MARKS + " \t\u3000").startswith("第"):
        line = line.lstrip(NOISE_MARKS + " \t\u3000")  # a mark before the heading
    if not line or line[0] not in "第" + NOISE_MARKS:
        return line
    end = 1
    while end < len(line) and (line[end] in _HEAD_RUN_CHARS or line[end] in " \t\u3000"):
        end += 1
    run = line[1:end]
    if not any(ch.isspace() for ch in run):
        return line
    compact = "".join(run.split())
    if end < len(line) and line[end] in UNIT_CHARS:
        return line[0] + compact + line[end:]
    # no unit after the run: a trailing space is the separator after a (lost) unit
    return line[0] + compact + (" " if run[-1:].isspace() else "") + line[end:]


def title_core(text: str) -> str:
    """A title without noise marks, spaces and separators, for comparing two copies."""
    return "".join(ch for ch in NOISE.sub("", text) if ch not in _SEPARATORS and not ch.isspace())


def parse_noisy_heading(line: str) -> NoisyHeading | None:
    """A "第…回" line with noise marks anywhere (see module docstring), else None."""
    if len(line) > 60 or not NOISE.search(line) or line[0] not in "第" + NOISE_MARKS:
        return None
    if _QUESTION.search(line):
        return None
    end = 1
    while end < len(line) and (line[end] in NUMERAL_CHARS or line[end] in NOISE_MARKS):
        end += 1
    run = line[1:end]
    parses: list[tuple[str, str | None, str]] = []
    if end < len(line) and line[end] in UNIT_CHARS:
        parses.append((run, line[end], line[end + 1:]))
    for k in range(1, len(run)):  # a mark standing for the unit
        if run[k] in NOISE_MARKS:
            parses.append((run[:k], None, run[k + 1:] + line[end:]))
    numbers: set[int] = set()
    title = ""
    unit_lost = False
    for template, unit, rest in parses:
        if numbers and unit is None and not unit_lost:
            break  # the unit is there: a mark in the ordinal does not stand for it
        if unit is None and line[0] != "第" and not any(ch in NUMERAL_CHARS for ch in template):
            continue  # nothing of the ordinal left but marks: too little of a heading
        if not _title_fits(rest):
            continue
        found = ordinal_candidates(template)
        if found:
            numbers |= found
            unit_lost = unit is None
            title = title or title_core(rest)
    if not numbers:
        return None
    unit = None if unit_lost else line[end]
    return NoisyHeading(frozenset(numbers), unit, title)


def _title_fits(rest: str) -> bool:
    """What follows a heading's unit: nothing, a separator (or a mark) and a title, or a short
    title without punctuation, as for a clean heading."""
    clean = NOISE.sub("", rest).strip()
    if len(clean) > 40 or _TITLE_NOT.search(clean):
        return False
    separated = not rest or rest[0] in _SEPARATORS or rest[0] in NOISE_MARKS or rest[0].isspace()
    return separated or (len(clean) <= 30 and not _NO_SEPARATOR_NOT.search(clean))


@dataclass(frozen=True)
class NumberedHeading:
    """A heading line whose chapter number is known: its line, unit, number and title core."""

    line: int
    unit: str
    number: int
    title: str


def resolve_noisy_headings(
    lines: Sequence[str], clean: Callable[[str], NumberedHeading | None]
) -> dict[int, str]:
    """The noisy heading lines that are headings, with their chapter keys ("回62").

    A noisy line is a heading when one of its candidate numbers fits the book's sequence
    between the numbered headings around it: the previous number plus one, the next clean one
    minus one, anything between them, or the previous (next) heading's own number when it
    repeats that heading (the same title and at most a few lines between them; without titles,
    nothing but residue between them). Before the first clean heading the sequence is read
    backwards from it. Linear in the lines.
    """
    numbered: list[NumberedHeading | None] = []
    noisy: dict[int, NoisyHeading] = {}
    for i, line in enumerate(lines):
        stripped = line.strip()
        found = clean(stripped) if stripped else None
        numbered.append(found)
        if found is None and stripped:
            parsed = parse_noisy_heading(heading_form(stripped))
            if parsed is not None:
                noisy[i] = parsed
    if not noisy:
        return {}
    next_clean: list[NumberedHeading | None] = [None] * (len(lines) + 1)
    for i in range(len(lines) - 1, -1, -1):
        next_clean[i] = numbered[i] or next_clean[i + 1]
    accepted = _before_first_clean(lines, numbered, noisy)
    prev: NumberedHeading | None = None
    text_since = 0
    for i, line in enumerate(lines):
        if numbered[i] is not None:
            prev, text_since = numbered[i], 0
            continue
        if i in accepted:
            key = accepted[i]
            unit, number = key[0], int(key[1:])
            prev, text_since = NumberedHeading(i, unit, number, noisy[i].title), 0
            continue
        if i not in noisy:
            text_since += len(line.strip())
            continue
        heading = noisy[i]
        choice = _choose(heading, prev, next_clean[i + 1], text_since=text_since)
        if choice is None:
            text_since += len(line.strip())
            continue
        accepted[i] = f"{choice.unit}{choice.number}"
        prev, text_since = NumberedHeading(i, choice.unit, choice.number, heading.title), 0
    return accepted


_REPEAT_RESIDUE_CHARS = 120  # at most this much unrecognised text between two copies of a heading


def _before_first_clean(
    lines: Sequence[str], numbered: Sequence[NumberedHeading | None], noisy: dict[int, NoisyHeading]
) -> dict[int, str]:
    """Noisy headings before the book's first clean one, resolved backwards from it: each is the
    next heading's number (when it repeats that heading) or that number minus one. Nothing
    before them anchors a forward reading ("第5?章" first could be 5 or 50-59)."""
    first = next((i for i, h in enumerate(numbered) if h is not None), None)
    if first is None:
        return {}
    accepted: dict[int, str] = {}
    nxt = numbered[first]
    assert nxt is not None
    text_between = 0
    for i in range(first - 1, -1, -1):
        if i not in noisy:
            text_between += len(lines[i].strip())
            continue
        heading = noisy[i]
        if heading.unit not in (None, nxt.unit):
            text_between += len(lines[i].strip())
            continue
        titled = bool(heading.title and nxt.title)
        repeat = (titled and same_title(heading.title, nxt.title) and text_between <= _REPEAT_RESIDUE_CHARS) or (
            not titled and text_between == 0
        )
        number = nxt.number if repeat else nxt.number - 1
        if number not in heading.numbers or number < 1:
            text_between += len(lines[i].strip())
            continue
        accepted[i] = f"{nxt.unit}{number}"
        nxt, text_between = NumberedHeading(i, nxt.unit, number, heading.title), 0
    return accepted


def same_title(a: str, b: str) -> bool:
    """Two title cores alike enough to be one title damaged differently (75% of characters agree)."""
    return bool(a and b) and SequenceMatcher(None, a, b).ratio() >= 0.75


def _choose(
    heading: NoisyHeading, prev: NumberedHeading | None, nxt: NumberedHeading | None, *, text_since: int
) -> NumberedHeading | None:
    unit = heading.unit or (prev.unit if prev else nxt.unit if nxt else None)
    if unit is None:
        return None
    p = prev.number if prev and prev.unit == unit else None
    q = nxt.number if nxt and nxt.unit == unit else None
    if p is not None and q is not None and p >= q:
        p = None  # the sequence starts again (a contents list before the text, a new volume)
    nums = heading.numbers

    def pick(n: int) -> NumberedHeading:
        return NumberedHeading(-1, unit, n, heading.title)

    if prev is not None and p is not None and p in nums and text_since <= _REPEAT_RESIDUE_CHARS:
        titled = bool(heading.title and prev.title)
        if (titled and same_title(heading.title, prev.title)) or (not titled and text_since == 0):
            return pick(p)
    if p is not None and p + 1 in nums:
        return pick(p + 1)
    if nxt is not None and q is not None and q in nums and same_title(heading.title, nxt.title):
        return pick(q)  # a page title above the next heading, after a gap in the sequence
    if q is not None and q - 1 in nums and (p is None or q - 1 > p):
        return pick(q - 1)
    low = p if p is not None else 0
    between = sorted(n for n in nums if n > low and (q is None or n < q))
    if between and (q is not None or p is None):
        return pick(between[0])
    if p is not None and q is None:
        near = [n for n in between if n <= p + 3]  # a chapter or two lost from the copy
        return pick(near[0]) if near else None
    return None
