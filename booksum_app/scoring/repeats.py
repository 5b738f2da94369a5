"""Repetition and list shapes in a summary (CNNSum App. E.4, E.5, E.7), for the failure detectors.

Sentences or lines said again (:func:`duplicate_count`), a tail looping until the token limit
(:func:`periodic_tail`), numbered lists and which of them are answer scaffolding
(:func:`checklist_items`). Pure functions over text; thresholds documented in docs/scoring.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from booksum_app.scoring.detector_rules import CHECKLIST_LINE, LIST_CUE, OUTLINE_ITEM

MIN_REPEATED_SENTENCE_CHARS = 10  # shorter sentences/lines ("Yes." "第一章") are not counted...
MIN_REPEATED_SENTENCE_CHARS_ZH = 6  # ...in Chinese, where 6 characters make a sentence ("他走进了房间")
MIN_TAIL_REPEATS = 3  # a periodic tail is a block repeated at least this many times...
MIN_TAIL_CHARS = 30  # ...over at least this many characters (whitespace collapsed)
MIN_CHECKLIST_ITEMS = 2  # numbered lines count when at least this many come in a row
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
_SENTENCE_TRIM = " \t\r\n.!?。！？…,，;；:：\"'“”‘’「」"


def _normalized_unit(text: str) -> str:
    # numbers are masked: "段落7: X" and "段落8: X" are the same line (CNNSum App. E.5)
    return _DIGITS.sub("#", _SPACE.sub(" ", text.lower())).strip(_SENTENCE_TRIM)


def duplicate_count(units: Iterable[str], *, lang: str = "en") -> int:
    """Occurrences beyond the first of each unit (case, spaces, numbers, end marks ignored)."""
    shortest = MIN_REPEATED_SENTENCE_CHARS_ZH if lang == "zh" else MIN_REPEATED_SENTENCE_CHARS
    counts = Counter(u for u in map(_normalized_unit, units) if len(u) >= shortest)
    return sum(c - 1 for c in counts.values())


def _z_function(text: str) -> list[int]:
    n = len(text)
    z = [0] * n
    left = right = 0
    for i in range(1, n):
        if i < right:
            z[i] = min(right - i, z[i - left])
        while i + z[i] < n and text[z[i]] == text[i + z[i]]:
            z[i] += 1
        if i + z[i] > right:
            left, right = i, i + z[i]
    return z


def periodic_tail(text: str) -> tuple[int, int]:
    """``(repeats, chars)`` of the text's periodic tail, ``(0, 0)`` when it has none.

    The tail is the longest suffix of the whitespace-collapsed text with a period ``p`` (the
    smallest such): it must hold the block at least 3 times (copies cut at either end count) over at
    least 30 characters, and the block must hold two letters, digits or CJK characters. Linear
    time: the Z-function of the reversed text gives every period's suffix at once.
    """
    # a loop the model closed with a full stop ("...and then they wait.") is still a loop
    flat = _SPACE.sub(" ", text).strip().rstrip(".!?。！？…．｡ ")
    rev = flat[::-1]
    z = _z_function(rev)
    for period in range(1, len(rev) // MIN_TAIL_REPEATS + 1):
        length = z[period] + period  # the suffix of this length has period `period`
        if length < MIN_TAIL_REPEATS * period or length < MIN_TAIL_CHARS:
            continue
        if sum(ch.isalnum() for ch in rev[:period]) < 2:
            continue
        return -(-length // period), length  # a copy cut at either end counts
    return 0, 0


def _numbered_runs(text: str) -> list[tuple[str, list[str]]]:
    """Runs of numbered lines ("1." "2)" "（3）" "四、"), each with the non-blank line before it."""
    runs: list[tuple[str, list[str]]] = []
    before, run = "", []
    for line in text.splitlines():
        if CHECKLIST_LINE.match(line):
            run.append(line)
        elif line.strip():  # blank lines between items do not end a list
            if run:
                runs.append((before, run))
                run = []
            before = line
    if run:
        runs.append((before, run))
    return [(cue, items) for cue, items in runs if len(items) >= MIN_CHECKLIST_ITEMS]


def numbered_items(text: str) -> int:
    """Numbered lines in runs of at least two (any list, scaffolding or the story's own)."""
    return sum(len(items) for _, items in _numbered_runs(text))


def checklist_items(text: str) -> int:
    """Items of numbered lists that are answer scaffolding: introduced as the answer's parts
    ("摘要应包含以下要素：", "Key events:") or made of outline labels ("1. Plot:", "（2）人物：")."""
    return sum(
        len(items)
        for cue, items in _numbered_runs(text)
        if LIST_CUE.search(cue) or sum(bool(OUTLINE_ITEM.match(i)) for i in items) >= MIN_CHECKLIST_ITEMS
    )


__all__ = [
    "MIN_CHECKLIST_ITEMS",
    "MIN_REPEATED_SENTENCE_CHARS",
    "MIN_REPEATED_SENTENCE_CHARS_ZH",
    "MIN_TAIL_CHARS",
    "MIN_TAIL_REPEATS",
    "checklist_items",
    "duplicate_count",
    "numbered_items",
    "periodic_tail",
]
