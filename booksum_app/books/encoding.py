"""Decoding the bytes of a text file (.txt, and .html/.md without a declared charset).

Encodings: a BOM decides first (UTF-8, UTF-16 LE/BE, UTF-32); NUL bytes
mean BOM-less UTF-16 when one byte order decodes to text rich in ASCII and CJK
punctuation; otherwise NULs or a high share of control characters mean a binary
file, refused. Then strict UTF-8. Then cp1252 when its text reads as a Latin-script
language (few accented letters, rarely two in a row: the detector misreads short
Latin-1 French). Then charset-normalizer, trusted only for non-Latin encodings (Big5,
Shift-JIS, GB18030, EUC-KR, cp1251, KOI8-R, Greek, Hebrew, Arabic, Thai) that decode
the whole file strictly. Then GB18030 when it looks Chinese: at least 90 % of the
non-ASCII characters are CJK ideographs or CJK/full-width punctuation and ideographs
make up at least 5 % of letters (or ``lang="zh"`` was given). Anything else is refused.
"""

from __future__ import annotations

import codecs
import re

from booksum_app.books.language import count_cjk
from booksum_app.errors import BookFormatError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
CJKISH = re.compile(
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u2010-\u2027]"
)


# ---- decoding --------------------------------------------------------------


def decode_text(data: bytes, *, name: str, lang: str | None = None) -> tuple[str, str]:
    """Decode the bytes of a text file; return (text, encoding name).

    Raises:
        BookFormatError: the file is binary or in no supported encoding.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise BookFormatError(
                    f"{name}: starts with a {encoding} byte-order mark but is not valid {encoding} "
                    f"({exc.reason} at byte {exc.start}); re-save it as UTF-8"
                ) from exc
            return _check_not_binary(
                text, name
            ), f"{encoding}-bom" if encoding == "utf-8" else encoding
    if b"\x00" in data:
        return _decode_utf16_without_bom(data, name)
    try:
        return _check_not_binary(data.decode("utf-8"), name), "utf-8"
    except UnicodeDecodeError:
        pass
    return _decode_legacy(data, name=name, lang=lang)


def _decode_legacy(data: bytes, *, name: str, lang: str | None) -> tuple[str, str]:
    """Decode bytes that are neither UTF-8 nor UTF-16/32: heuristics first, then the detector."""
    cp = _try(data, "cp1252")
    if cp is not None and _looks_latin(cp):
        return _check_not_binary(cp, name), "cp1252"  # the detector misreads short Latin-1 text
    guess = _detect_encoding(data)
    if guess is not None:
        return _check_not_binary(data.decode(guess), name), guess
    gb = _try(data, "gb18030")
    if gb is not None and _looks_chinese(gb, lang=lang):
        return _check_not_binary(gb, name), "gb18030"
    # a book piped in (booksum summarize -) has no file to name in the advice
    fix = ("pipe it through iconv -f ENCODING -t UTF-8 first" if name.startswith("stdin.")
           else f"e.g. iconv -f ENCODING -t UTF-8 {name} > book-utf8.txt")
    raise BookFormatError(
        f"{name}: cannot decode the text: its encoding is unclear (not UTF-8, UTF-16, GB18030, "
        f"Big5, Shift-JIS, cp1251 or cp1252 with confidence); re-save it as UTF-8, {fix}"
    )


# Encodings the detector is trusted with: the ones whose text cp1252 turns into runs of
# accented letters and symbols (CJK, Cyrillic, Greek, Hebrew, Arabic, Thai). Latin guesses
# (cp1250, cp1257, ...) are not trusted: the detector often picks them for French or German.
_TRUSTED = {
    "big5": "big5",
    "big5hkscs": "big5hkscs",
    "cp950": "cp950",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "gb18030": "gb18030",
    "hz": "hz",
    "shift_jis": "cp932",
    "cp932": "cp932",
    "shift_jis_2004": "shift_jis_2004",
    "shift_jisx0213": "shift_jisx0213",
    "euc_jp": "euc_jp",
    "euc_jis_2004": "euc_jis_2004",
    "euc_jisx0213": "euc_jisx0213",
    "iso2022_jp": "iso2022_jp",
    "euc_kr": "cp949",
    "cp949": "cp949",
    "johab": "johab",
    "cp1251": "cp1251",
    "koi8_r": "koi8_r",
    "koi8_u": "koi8_u",
    "iso8859_5": "iso8859_5",
    "cp866": "cp866",
    "mac_cyrillic": "mac_cyrillic",
    "cp1253": "cp1253",
    "iso8859_7": "iso8859_7",
    "cp1255": "cp1255",
    "iso8859_8": "iso8859_8",
    "cp1256": "cp1256",
    "iso8859_6": "iso8859_6",
    "cp874": "cp874",
    "tis_620": "tis_620",
}
_DETECT_SAMPLE_BYTES = 1_000_000


def _detect_encoding(data: bytes) -> str | None:
    """The detector's encoding when it is trusted and decodes the whole file strictly, else None."""
    from charset_normalizer import from_bytes  # imported here: ~50 ms, only for legacy files

    sample = data
    if len(data) > _DETECT_SAMPLE_BYTES:  # end the sample at a line break, not mid-character
        cut = data.rfind(b"\n", 0, _DETECT_SAMPLE_BYTES)
        sample = data[: cut if cut > 0 else _DETECT_SAMPLE_BYTES]
    for match in from_bytes(sample):
        encoding = _TRUSTED.get(match.encoding)
        if encoding is None:
            continue
        text = _try(data, encoding)
        if text is not None and _reads_as_letters(text, encoding=encoding):
            return encoding
        if match.encoding in ("big5", "cp950") and _try(data, "big5hkscs") is not None:
            return "big5hkscs"  # the sample ends mid-file; HKSCS extends Big5
    return None


_MIN_DETECT_CHARS = 16


_KOREAN = ("cp949", "johab")
_JAPANESE = ("cp932", "shift_jis_2004", "shift_jisx0213", "euc_jp", "euc_jis_2004")
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")
_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")


def _reads_as_letters(text: str, *, encoding: str) -> bool:
    """Enough non-ASCII text to judge by, mostly letters, and the script the encoding is for.

    Korean text is Hangul in short words between spaces, with few ideographs (Chinese read
    as cp949 gives Hangul mixed with ideographs, unspaced); Japanese text has kana.
    """
    non_ascii = [ch for ch in text[:200_000] if ord(ch) > 127]
    if len(non_ascii) < _MIN_DETECT_CHARS:
        return False  # a few bytes decode as anything
    letters = [ch for ch in non_ascii if ch.isalpha() or CJKISH.match(ch)]
    if len(letters) < 0.7 * len(non_ascii):
        return False
    if encoding in _KOREAN:  # GB2312's ideograph rows decode to Hangul
        runs = _HANGUL_RUN.findall(text[:200_000])
        hangul = sum(len(r) for r in runs)
        ideographs = count_cjk(text[:200_000])
        return hangul >= 4 * ideographs and hangul <= 6 * len(runs)
    if encoding in _JAPANESE:
        return sum(1 for ch in letters if _KANA.match(ch)) >= 0.1 * len(letters)
    return True


# What Latin-script prose uses beyond ASCII: letters, general punctuation (curly quotes,
# dashes, ellipsis), and a few Latin-1 signs. Other Latin-1 symbols (¤ ¦ ¨ ¬ ¯ ² ´ ¶ ¸ ...)
# are what Big5/GBK lead bytes turn into.
_PUNCT = re.compile(r"[\u2000-\u206f«»]")
_LATIN_PROSE = re.compile(r"[\u00a0\u00c0-\u024f\u2000-\u206f\u20ac«»°©®·ºª¿¡§½¼¾£¢¥±×÷]")


def _looks_latin(text: str) -> bool:
    """cp1252-decoded text reads as a Latin-script language: few non-ASCII characters, mostly alone.

    Text in another encoding read as cp1252 gives runs of accented letters and symbols
    (each CJK character is two bytes; each Cyrillic letter one high byte).
    """
    sample = text[:200_000]
    non_ascii = [i for i, ch in enumerate(sample) if ord(ch) > 127]
    if not non_ascii:
        return True
    ascii_letters = sum(1 for ch in sample if ch.isascii() and ch.isalpha())
    other = sum(1 for i in non_ascii if not _PUNCT.match(sample[i]))  # quotes and dashes aside
    if other > 0.15 * (ascii_letters + other):
        return False
    if sum(1 for i in non_ascii if not _LATIN_PROSE.match(sample[i])) > 0.1 * len(non_ascii):
        return False  # odd symbols: not the accents and quotes of a Latin-script language
    paired = sum(  # two non-ASCII in a row, unless both are punctuation ("…”", "—“")
        1
        for i in non_ascii
        if i + 1 < len(sample)
        and ord(sample[i + 1]) > 127
        and not (_PUNCT.match(sample[i]) and _PUNCT.match(sample[i + 1]))
    )
    return paired <= 0.15 * len(non_ascii)


def _try(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def _looks_chinese(text: str, *, lang: str | None) -> bool:
    text = text[:200_000]
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    if non_ascii == 0:
        return False
    cjkish = len(CJKISH.findall(text))
    if cjkish < 0.9 * non_ascii:
        return False
    if lang == "zh":
        return True
    letters = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return count_cjk(text) >= 0.05 * (count_cjk(text) + letters)


_UTF16_SIGNAL = re.compile(r"[\t\n\r -~\u3000-\u303f\uff00-\uffef]")


def _decode_utf16_without_bom(data: bytes, name: str) -> tuple[str, str]:
    """Decode BOM-less UTF-16, choosing the byte order that yields more ASCII and CJK punctuation.

    NUL parity alone misleads for Chinese: a newline puts its NUL on one side, U+3000 on the other.
    """
    best: tuple[int, str, str] | None = None
    if len(data) % 2 == 0:
        for encoding in ("utf-16-le", "utf-16-be"):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                continue
            score = len(_UTF16_SIGNAL.findall(text[:65536]))
            if best is None or score > best[0]:
                best = (score, text, encoding)
    if best is not None:
        score, text, encoding = best
        if score >= 0.05 * min(len(text), 65536) and not _too_many_controls(text) and _nul_characters_plausible(text):
            return text, encoding
    raise BookFormatError(
        f"{name}: looks like a binary file, not text (it contains NUL bytes); "
        "give booksum an .epub, .pdf, .txt, .html or .md book"
    )


def _nul_characters_plausible(text: str) -> bool:
    """Binary data pairs its bytes into plausible-looking ideographs, so look where its NULs go.

    In UTF-16 text a NUL byte belongs to an ASCII or Latin-1 character (U+00xx), or to one of
    the form U+xx00 that text uses (U+3000 the ideographic space, U+4E00 一, ...). Binary
    data puts NULs anywhere: U+0100, U+0200, U+0000, ... Refused when more than 2% of the
    characters holding a NUL byte are none of those.
    """
    holding = [c for c in text[:65536] if ord(c) < 0x100 or ord(c) & 0xFF == 0]
    odd = sum(
        1 for c in holding
        if (0x100 <= ord(c) < 0x3000) or (ord(c) < 0x100 and not (c.isprintable() or c in "\t\n\r"))
    )
    return odd <= 0.02 * len(holding)


def _too_many_controls(text: str) -> bool:
    sample = text[:65536]
    return len(_CONTROL.findall(sample)) > max(8, len(sample) // 100)


def _check_not_binary(text: str, name: str) -> str:
    if _too_many_controls(text):
        raise BookFormatError(
            f"{name}: looks like a binary file, not text (many control characters); "
            "give booksum an .epub, .pdf, .txt, .html or .md book"
        )
    return text
