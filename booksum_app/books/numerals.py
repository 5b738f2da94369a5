"""Chinese chapter ordinals in every numeral style a book or site writes them (digits, full-width
digits, 一二三, digit by digit 一零二, financial 壹贰叁), and the noise marks (``?``, ``？``, ``□``,
``■``, U+FFFD) a lossy re-encoding leaves where a character was lost."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import product

NOISE_MARKS = "?？□■\ufffd"
NOISE = re.compile(f"[{re.escape(NOISE_MARKS)}]")

ZH_NUM = "0-9０-９零〇一二三四五六七八九十百千万两兩壹贰貳叁參肆伍陆陸柒捌玖拾佰仟"
NUMERAL_CHARS = frozenset("0123456789０１２３４５６７８９" + ZH_NUM[6:])
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2, "兩": 2}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
# financial numerals (壹贰叁, 拾佰仟) read as the everyday ones
_FINANCIAL = str.maketrans("壹贰貳叁參肆伍陆陸柒捌玖拾佰仟", "一二二三三四五六六七八九十百千")
UNIT_CHARS = "章回节節卷部篇集幕"


def zh_number(digits: str) -> int | None:
    """The value of ``38``, ``３８``, ``三十八`` / ``一百零二``, ``一零二`` (digit by digit) or
    ``叁拾捌`` (None when it is not a number)."""
    if digits.isdigit():
        return int(unicodedata.normalize("NFKC", digits))
    digits = digits.translate(_FINANCIAL)
    if len(digits) > 1 and all(ch in _ZH_DIGITS for ch in digits):  # 一零二: positional, no units
        return int("".join(str(_ZH_DIGITS[ch]) for ch in digits))
    total = section = 0
    number = None
    for ch in digits:
        if ch in _ZH_DIGITS:
            number = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            unit = _ZH_UNITS[ch]
            if unit == 10000:
                total += (section + (number or 0)) * unit
                section = 0
            else:
                section += (1 if number is None else number) * unit
            number = None
        else:
            return None
    return total + section + (number or 0)


def _standard_numeral(n: int) -> str:
    """一百零二, 一百一十九, 十一, 两千零一 is written 二千零一 here (variants come after)."""
    out = ""
    zero = False
    for value, unit in ((10000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10 if value < 10000 else n // value
        if digit == 0:
            zero = bool(out)
            continue
        if zero:
            out += "零"
            zero = False
        out += "零一二三四五六七八九"[digit] + unit
    return out[1:] if out.startswith("一十") else out  # 十一, not 一十一


_TO_FINANCIAL = str.maketrans("一二三四五六七八九十百千", "壹贰叁肆伍陆柒捌玖拾佰仟")
_TO_FINANCIAL_TRAD = str.maketrans("一二三四五六七八九十百千", "壹貳參肆伍陸柒捌玖拾佰仟")


@lru_cache(maxsize=4096)
def numeral_forms(n: int) -> frozenset[str]:
    """Ways a Chinese text writes n (1..99999): 一百一十九 and 一百十九, 一十一, 零 or 〇, 两百,
    digit by digit (一零二, 一〇二), financial (壹佰零贰), Arabic and full-width digits."""
    std = _standard_numeral(n)
    forms = {std, std.replace("一十", "十") if "百一十" in std or "千一十" in std else std}
    if std.startswith("十"):
        forms.add("一" + std)
    forms |= {f.replace("零", "〇") for f in forms}
    forms |= {re.sub("二(?=[百千万])", "两", f) for f in forms}
    forms |= {f.translate(table) for f in forms for table in (_TO_FINANCIAL, _TO_FINANCIAL_TRAD)}
    if n >= 10:
        by_digit = "".join("零一二三四五六七八九"[int(d)] for d in str(n))
        forms |= {by_digit, by_digit.replace("零", "〇")}
    forms |= {str(n), str(n).translate(str.maketrans("0123456789", "０１２３４５６７８９"))}
    return frozenset(forms)


_ZH_SUBSTITUTES = tuple("零〇一二三四五六七八九十百千")
_FINANCIAL_SUBSTITUTES = tuple("零〇壹贰貳叁參肆伍陆陸柒捌玖拾佰仟")
_ASCII_DIGITS = tuple("0123456789")
_WIDE_DIGITS = tuple("０１２３４５６７８９")


def _substitutes(template: str) -> tuple[str, ...]:
    """What a mark in this ordinal can stand for: nothing, or a numeral of the ordinal's kind."""
    kinds = [
        subs
        for subs in (_ZH_SUBSTITUTES, _FINANCIAL_SUBSTITUTES, _ASCII_DIGITS, _WIDE_DIGITS)
        if any(ch in subs for ch in template)
    ]
    if any(ch in "万两兩" for ch in template):
        kinds.append(_ZH_SUBSTITUTES)
    return ("", *(ch for subs in (kinds or [_ZH_SUBSTITUTES, _ASCII_DIGITS, _WIDE_DIGITS]) for ch in subs))


def ordinal_candidates(template: str) -> frozenset[int]:
    """The numbers an ordinal with noise marks can stand for ("六?二" → {62}); none with > 2 marks."""
    marks = [i for i, ch in enumerate(template) if ch in NOISE_MARKS]
    if len(marks) > 2:
        return frozenset()
    found = set()
    for combo in product(_substitutes(template), repeat=len(marks)):
        chars = list(template)
        for i, sub in zip(marks, combo, strict=True):
            chars[i] = sub
        text = "".join(chars)
        value = zh_number(text) if text else None
        if value and value < 100000 and text in numeral_forms(value):
            found.add(value)
    return frozenset(found)
