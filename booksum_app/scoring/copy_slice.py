"""The part of a book one summary's copy detector can match, found without segmenting the book.

:meth:`SourceIndex.build` segments the whole source: for a Chinese novel that is jieba over a
million characters (10-12 s, ~150 MB of words and keys), to answer a few hundred look-ups. A
single summary only needs the source n-grams it holds. :func:`summary_source_index` finds the
source lines that can hold one and segments only those:

1. Units: lowercased letters and digits (Chinese) or words (English), in order, each tagged with
   its source line. A word n-gram found in the source is a run of units found in the summary
   too, so every unit 4-gram inside it is a summary 4-gram.
2. Every source line a matching unit 4-gram touches is marked; runs of consecutive marked lines
   are segmented (joined by their newlines, as in the book). jieba cuts at every character
   outside its word class, newlines included, so a line's words are the words it has in the
   whole book; a source 8-gram that the summary holds lies inside one run.
3. The index holds the runs' 8-grams and the source's approximate-copy keys that the summary
   holds: :func:`detect_failures` gives the same report as with the whole book's index.

Exact for every n-gram whose words hold a letter or a digit (a word made only of other
characters, e.g. a lone combining mark, is not seen by step 1).
"""

from __future__ import annotations

import re
from typing import Any

from booksum_app.scoring.keyset import KeySet
from booksum_app.scoring.source_index import APPROX_N, COPY_N, SourceIndex, gram_keys, words_of

# jieba's word class (its ``re_han_default``): it segments each maximal run of these characters
# on its own, so a cut just before such a run changes no word
_JIEBA_BLOCK_START = re.compile(r"(?<=[^\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-])(?=[\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-])")


def _pieces(source: str, lang: str) -> list[str]:
    """``source`` cut where no word can straddle: jieba's blocks (Chinese, as segmented:
    lowercased), lines (English); the pieces join back to the text."""
    if lang == "zh":
        return _JIEBA_BLOCK_START.split(source.lower())
    return source.splitlines(keepends=True)


def _keys(units: list[str]) -> Any:
    import numpy as np

    count = max(0, len(units) - APPROX_N + 1)
    return np.fromiter(gram_keys(units, APPROX_N), dtype=np.int64, count=count)


def _runs(pieces: list[str], owner: Any, hits: Any) -> list[str]:
    """The text of each run of pieces that matching unit 4-grams touch (``owner``: the piece
    of each unit; ``hits``: where a matching 4-gram starts). Pieces without units (blank lines,
    punctuation) between two touched pieces join their run: no word separates them."""
    import numpy as np

    if not len(hits):
        return []
    marked = np.unique(np.concatenate([owner[hits + k] for k in range(APPROX_N)]))
    rank = np.searchsorted(np.unique(owner), marked)  # place among the pieces that hold units
    runs: list[str] = []
    first = previous = int(marked[0])
    for number, place, last_place in zip(marked[1:].tolist(), rank[1:].tolist(), rank[:-1].tolist(), strict=True):
        if place != last_place + 1:
            runs.append("".join(pieces[first:previous + 1]))
            first = number
        previous = number
    runs.append("".join(pieces[first:previous + 1]))
    return runs


def _marked_runs(pieces: list[str], summary_units: list[str], lang: str) -> tuple[list[str], Any]:
    """Runs of lines holding a unit 4-gram of the summary, and the matching source keys."""
    import numpy as np

    wanted = np.unique(_keys(summary_units))
    units: list[str] = []
    owner: list[int] = []
    for number, piece in enumerate(pieces):
        found = words_of(piece, lang=lang)
        units += found
        owner += [number] * len(found)
    keys = _keys(units)
    del units
    hit = np.isin(keys, wanted)
    return _runs(pieces, np.array(owner, dtype=np.int64), np.flatnonzero(hit)), keys[hit]


_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is str.isalnum() or "_"
_MIX = 0x100000001B3  # FNV-1a's 64-bit prime: a polynomial hash of code points, modulo 2**64


def _char_keys(text: str) -> Any:
    """A uint64 key of every 4 consecutive characters of ``text`` (equal strings, equal keys;
    rarely, two strings share one: a line marked in vain, never one missed)."""
    import numpy as np

    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    n = len(codes) - APPROX_N + 1
    if n < 1:
        return np.zeros(0, dtype=np.uint64)
    keys = codes[:n].astype(np.uint64)
    for k in range(1, APPROX_N):  # in place: a novel's keys are one 8-byte array, no temporaries
        keys *= np.uint64(_MIX)  # wraps modulo 2**64
        keys += codes[k:k + n]
    return keys


def _member(keys: Any, wanted: Any) -> Any:
    """Which of ``keys`` are in ``wanted`` (small): a bisection each, no sort of ``keys``."""
    import numpy as np

    wanted = np.unique(wanted)
    if not len(wanted):
        return np.zeros(len(keys), dtype=bool)
    at = np.searchsorted(wanted, keys)
    np.minimum(at, len(wanted) - 1, out=at)
    return wanted[at] == keys


def _chinese_slice(source: str, summary: str) -> tuple[list[str], Any]:
    """Runs of jieba blocks holding a 4-character run of the summary (letters and digits,
    lowercased), and the source's approximate-copy keys that the summary holds.

    Characters are handled as numpy code points: a Python string per character of a novel
    would take ~70 MB.
    """
    import numpy as np

    pieces = _pieces(source, "zh")
    lengths = np.fromiter((len(_NOT_ALNUM.sub("", piece)) for piece in pieces), dtype=np.int64, count=len(pieces))
    owner = np.repeat(np.arange(len(pieces), dtype=np.int32), lengths)
    lowered = _NOT_ALNUM.sub("", source.lower())
    hits = np.flatnonzero(_member(_char_keys(lowered), _char_keys(_NOT_ALNUM.sub("", summary.lower()))))
    del lowered
    runs = _runs(pieces, owner, hits)
    # approximate copies compare characters as written: exact keys only where the summary has the run
    written = _NOT_ALNUM.sub("", source)
    at = np.flatnonzero(_member(_char_keys(written), _char_keys(_NOT_ALNUM.sub("", summary))))
    approx = [hash(tuple(written[i:i + APPROX_N])) for i in at.tolist()]
    return runs, np.array(approx, dtype=np.int64)


def summary_source_index(source: str, summary: str, *, lang: str) -> SourceIndex:
    """The n-grams of ``source`` that ``summary`` can match (see module docstring).

    ``detect_failures(summary, source=summary_source_index(source, summary, lang=lang))`` equals
    ``detect_failures(summary, source=SourceIndex.build(source, lang=lang))``; the index is
    for this summary only.
    """
    if lang == "zh":
        runs, matched = _chinese_slice(source, summary)
    else:  # English: the approximate-copy units are the words, marked here too
        runs, matched = _marked_runs(_pieces(source, lang), words_of(summary, lang=lang), lang)
    keys: list[int] = []
    n_words = 0
    for run in runs:
        words = words_of(run, lang=lang)
        n_words += len(words)
        keys += gram_keys(words, COPY_N)
    return SourceIndex(lang=lang, n=COPY_N, n_words=n_words, keys=KeySet(keys), approx_keys=KeySet(matched))


__all__ = ["summary_source_index"]
