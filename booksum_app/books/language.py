"""Language of a text: "zh" when CJK ideographs dominate, else "en".

A deliberately small rule, enough for the two languages the pipeline supports: ideographs
are counted against Latin words, since one Chinese character carries roughly one English word's worth of text.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def count_cjk(text: str) -> int:
    """Number of CJK ideographs in ``text``."""
    return len(_CJK.findall(text))


def detect_language(text: str, *, sample_chars: int = 50_000) -> str:
    """Return "zh" if CJK ideographs outnumber Latin words in a sample of ``text``, else "en"."""
    sample = text[:sample_chars]
    cjk = count_cjk(sample)
    words = len(_LATIN_WORD.findall(sample))
    return "zh" if cjk > words else "en"
