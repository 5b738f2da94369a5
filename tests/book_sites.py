"""Web copies of Chinese novels in the styles of novel sites, generated from a seed with their
expected chapters written first.

A copy is a novel of N chapters (第X回 or 第X章, numbered in one of the ways books number them:
Arabic, zero-padded, full-width, 一二三, digit by digit 一零二, financial 壹贰叁) that a site has
been through: a short prefix or a bracket around every ordinal heading (正文, 正文卷, VIP章节,
【第一章】, 卷一, 第一卷, 【重发】), chapters split into pages whose headings carry (第2/3页),
the site's own heading (第038章) above the text's (第三十八回), navigation, advertising and
author's-note lines, a story section titled 附录 between two chapters, an afterword at the end;
saved as UTF-8, GB18030 or Big5 (then in traditional characters). Written independently of the
reader: nothing here imports booksum_app.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

DIGITS = "零一二三四五六七八九"
FINANCIAL = "零壹贰叁肆伍陆柒捌玖"
FINANCIAL_TRAD = "零壹貳參肆伍陸柒捌玖"

SIMPLIFIED = (
    "宝玉黛钗湘云凤姐贾母王夫人宁国府荣大观园梦醉眠芍药香菱情解石榴裙寿怡红群芳开夜宴金丹独艳理亲丧"
    "林潇湘魁夺菊花诗薛蘅芜讽和螃蟹咏英雄豪杰结义斩黄巾首立功张翼德怒鞭督邮谋诛宦竖议温明董卓叱丁原"
)
TRADITIONAL = (
    "寶玉黛釵湘雲鳳姐賈母王夫人寧國府榮大觀園夢醉眠芍藥香菱情解石榴裙壽怡紅群芳開夜宴金丹獨艷理親喪"
    "林瀟湘魁奪菊花詩薛蘅蕪諷和螃蟹詠英雄豪傑結義斬黃巾首立功張翼德怒鞭督郵謀誅宦豎議溫明董卓叱丁原"
)
PREFIXES = ["正文 ", "正文卷 ", "VIP章节 ", "正文　"]
STYLES = ["prefix", "bracket", "volume", "volume-restart", "repost", "pages", "site-title", "plain"]
NUMERALS = ["arabic", "padded", "fullwidth", "standard", "digit", "financial"]
ENCODINGS = ["utf-8", "gb18030", "big5"]


def numeral(n: int, style: str, *, trad: bool = False) -> str:
    """n written in one of a book's numeral styles."""
    if style == "arabic":
        return str(n)
    if style == "padded":
        return f"{n:03d}"
    if style == "fullwidth":
        return "".join(chr(ord("０") + int(d)) for d in str(n))
    if style == "digit":
        return "".join(DIGITS[int(d)] for d in str(n)) if n >= 10 else DIGITS[n]
    hundreds, tens, ones = n // 100, n // 10 % 10, n % 10
    out = ""
    if hundreds:
        out += DIGITS[hundreds] + "百"
        if tens == 0 and ones:
            out += "零"
        elif tens:
            out += DIGITS[tens] + "十"
    elif tens:
        out += ("" if tens == 1 else DIGITS[tens]) + "十"
    if ones:
        out += DIGITS[ones]
    if style == "financial":
        digits = FINANCIAL_TRAD if trad else FINANCIAL
        out = out.translate(str.maketrans(DIGITS[1:] + "十百", digits[1:] + "拾佰"))
    return out


@dataclass
class SiteCopy:
    """A generated copy: its bytes, and the chapters a reader must find (title text, paragraphs)."""

    data: bytes
    encoding: str
    style: str
    numerals: str
    expected: list[tuple[str, list[str]]]
    excluded_titles: list[str] = field(default_factory=list)
    residue_lines: int = 0


def _t(text: str, trad: bool) -> str:
    """The few simplified characters of the fixed strings below, in traditional form for Big5."""
    if not trad:
        return text
    return text.translate(str.maketrans(
        "话说众们园时间门这个开书页节录发转载请处记后笔阅读机访问网园来写读谢绍称号陈赴灾复报仇阴观头却点宝长击吗继团圆续",
        "話說眾們園時間門這個開書頁節錄發轉載請處記後筆閱讀機訪問網園來寫讀謝紹稱號陳赴災復報仇陰觀頭卻點寶長擊嗎繼團圓續",
    ))


def site_copy(rng: random.Random, *, style: str | None = None, numerals: str | None = None,
              encoding: str | None = None) -> SiteCopy:
    """One generated copy (see module docstring)."""
    style = style or rng.choice(STYLES)
    numerals = numerals or rng.choice(NUMERALS)
    encoding = encoding or rng.choice(ENCODINGS)
    trad = encoding == "big5"
    chars = TRADITIONAL if trad else SIMPLIFIED
    unit = "章" if style in ("site-title",) else rng.choice("回章")
    n = rng.randint(6, 14)
    first = rng.randint(1, 120 - n) if style not in ("volume-restart",) else 1
    prefix = rng.choice(PREFIXES).replace("节", "節") if trad else rng.choice(PREFIXES)
    per_volume = rng.randint(2, 4)
    appendix_after = rng.randint(first, first + n - 2) if rng.random() < 0.4 else None
    lines = [_t("《大观园记》", trad), _t("作者：石头", trad), ""]
    expected: list[tuple[str, list[str]]] = []
    residue = 0
    for index, number in enumerate(range(first, first + n)):
        title = "".join(rng.choice(chars) for _ in range(rng.randint(5, 8)))
        paragraphs = [
            _t(f"话说第{number}{unit}第{k}段，众人在园中说笑，一时散了，各自回房歇息去了。", trad)
            + rng.choice(["", _t("宝玉问道：你去吗？", trad), "「好。」"])
            for k in range(1, rng.randint(3, 5) + 1)
        ]
        shown = number if style != "volume-restart" else index % per_volume + 1
        ordinal = f"第{numeral(shown, numerals, trad=trad)}{unit}"
        heading = f"{ordinal} {title}"
        if style == "prefix":
            heading = prefix + heading
        elif style == "bracket":
            heading = f"【{ordinal}】 {title}"
        elif style in ("volume", "volume-restart"):
            volume = index // per_volume + 1
            heading = (f"卷{numeral(volume, 'standard')} " if rng.random() < 0.5
                       else f"第{numeral(volume, 'standard')}卷 ") + heading
        elif style == "repost" and rng.random() < 0.5:
            heading = ("【重发】" if not trad else "【重發】") + heading
        expected.append((title, paragraphs))
        if style == "site-title":  # the site's page title, then its links, then the text's own heading
            lines += [f"第{number:03d}章 {title}", _t("上一章 ← 章节目录 → 下一章", trad),
                      f"第{numeral(number, 'standard')}回 {title}"]
            residue += 1
        elif style == "pages":
            pages = rng.randint(2, 3)
            per_page = -(-len(paragraphs) // pages)
            for page in range(pages):
                mark = f"(第{page + 1}/{pages}{'頁' if trad else '页'})"
                lines.append(f"{heading}{mark}")
                lines += ["　　" + p for p in paragraphs[page * per_page:(page + 1) * per_page]]
                if page < pages - 1:
                    lines.append(_t("本章未完，请点击下一页继续阅读", trad))
                    residue += 1
            lines.append("")
            if appendix_after == number:
                lines += _appendix(rng, chars, trad, expected)
            continue
        else:
            lines.append(heading)
        for k, p in enumerate(paragraphs):
            lines.append("　　" + p)
            if k == 0 and rng.random() < 0.3:
                lines.append("作者有話說：本章有改動，請刷新。" if trad else "作者有话说：本章有改动，请刷新。")
                residue += 1
        if rng.random() < 0.3:
            lines.append(_t("上一页 回目录 下一页", trad))
            residue += 1
        lines.append("")
        if appendix_after == number:
            lines += _appendix(rng, chars, trad, expected)
    excluded = []
    if rng.random() < 0.5:
        after = _t("后记", trad)
        lines += [after, _t("　　写完这部书，用了整整三年，谢谢读者。", trad)]
        excluded.append(after)
    text = "\r\n".join(lines) if rng.random() < 0.3 else "\n".join(lines)
    return SiteCopy(text.encode(encoding), encoding, style, numerals, expected, excluded, residue)


def _appendix(rng: random.Random, chars: str, trad: bool, expected: list[tuple[str, list[str]]]) -> list[str]:
    """A story section titled 附录 between two chapters, as long as a chapter (kept, with a line)."""
    title = _t("附录", trad)
    paragraphs = [
        _t(f"却说陈光蕊赴任途中遇灾，第{k}段，江流儿长大后复仇报本，一家团圆，众人称快。", trad)
        + "".join(rng.choice(chars) for _ in range(40))
        for k in range(1, 11)
    ]
    expected.append((title, paragraphs))
    return [title, *["　　" + p for p in paragraphs], ""]
