"""Source passages as evidence for merges (``hier-evidence``; Ou & Lapata, Findings of ACL 2025).

Passages: every chunk is cut into passages of at most :data:`PASSAGE_TOKENS` tokens (100, the
retrieval unit of the paper's code, ``HIER_RET_UNIT``) by the chunker itself, so they end at
paragraph or sentence boundaries and their token counts are exact under the model's tokenizer.

Words for BM25: English text lowercased, cut into runs of letters and digits, minus bm25s's
English stopwords and one-character words; Chinese text cut by jieba (precise mode), minus
punctuation and bm25s's Chinese stopwords. The index (bm25s, Lucene BM25, k1 = 1.5, b = 0.75)
holds every passage of the book, so a word's weight is its rarity in the whole book; it is
built once per run, on first use.

Selection for one summary (:meth:`PassageIndex.select`): the summary's own text is the query
and the candidates are the passages of the chunks it covers (its ``chunk_span``), as in the
paper's code, where each summary retrieves from the text beneath it. Candidates are ranked by
score (ties: earlier first; a passage that shares no word with the query is never taken) and
each is taken whole while its cost, its tokens plus the separator's plus one for the join
(BPE never needs more at a boundary), fits what is left of the budget; a shorter passage
further down may still fit. The chosen passages are joined in book order.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from booksum_app.chunking import CallableTokenizer, Chunk, chunk_text

PASSAGE_TOKENS = 100  # the paper's retrieval unit (HIER_RET_UNIT = 100 tokens)
PASSAGE_SEPARATOR = "\n\n"
BM25_K1, BM25_B = 1.5, 0.75  # bm25s defaults (Lucene variant)
_LATIN_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Passage:
    """A run of source text of at most PASSAGE_TOKENS tokens inside one chunk."""

    id: int  # position in the book, 0-based
    chunk: int  # index of the chunk it lies in
    text: str
    tokens: int


@dataclass(frozen=True)
class Evidence:
    """The passages chosen for one summary, joined in book order."""

    passages: tuple[Passage, ...]
    budget: int  # tokens the passages were allowed
    text: str
    tokens: int  # counted on ``text`` (0 when nothing was chosen)


@functools.cache
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # it otherwise prints "Building prefix dict..." on stderr
    logging.getLogger("jieba").setLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


@functools.cache
def _stopwords(lang: str) -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN

    return frozenset(STOPWORDS_CHINESE if lang == "zh" else STOPWORDS_EN)


def _is_word(token: str) -> bool:
    return any(not unicodedata.category(ch).startswith(("P", "S", "Z", "C")) for ch in token)


def bm25_words(text: str, *, lang: str) -> list[str]:
    """The words BM25 indexes and queries (see module docstring)."""
    stop = _stopwords(lang)
    if lang == "zh":
        words = [w.strip().lower() for w in _jieba().lcut(text)]
        return [w for w in words if _is_word(w) and w not in stop]
    return [w for w in _LATIN_WORD.findall(text.lower()) if len(w) > 1 and w not in stop]


class PassageIndex:
    """The book's passages and their BM25 index; :meth:`select` picks evidence for one summary."""

    def __init__(
        self, chunks: Sequence[Chunk], *, count_tokens: Callable[[str], int], lang: str
    ) -> None:
        import bm25s

        self.lang = lang
        self.count = count_tokens
        tokenizer = CallableTokenizer("model", count_tokens)
        passages: list[Passage] = []
        self.first: list[int] = []  # chunk index -> id of its first passage
        for chunk in chunks:
            self.first.append(len(passages))
            for piece in chunk_text(chunk.text, chunk_size=PASSAGE_TOKENS, tokenizer=tokenizer, lang=lang):
                passages.append(Passage(len(passages), chunk.index, piece.text, piece.n_tokens))
        self.first.append(len(passages))
        self.passages = tuple(passages)
        self.separator_tokens = count_tokens(PASSAGE_SEPARATOR)
        self._bm25 = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        self._bm25.index([bm25_words(p.text, lang=lang) for p in passages], show_progress=False)

    def scores(self, query: str) -> list[float]:
        """BM25 score of every passage of the book for ``query``."""
        words = bm25_words(query, lang=self.lang)
        if not words:
            return [0.0] * len(self.passages)
        return [float(x) for x in self._bm25.get_scores(words).tolist()]

    def select(self, query: str, span: tuple[int, int], budget: int) -> Evidence:
        """Whole passages of chunks ``span[0]..span[1]`` most relevant to ``query``, within ``budget``."""
        lo, hi = self.first[span[0]], self.first[span[1] + 1]
        scores = self.scores(query)[lo:hi]
        chosen: list[Passage] = []
        left = budget
        for offset in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
            if scores[offset] <= 0:
                break
            passage = self.passages[lo + offset]
            cost = passage.tokens + self.separator_tokens + 1
            if cost <= left:
                chosen.append(passage)
                left -= cost
        chosen.sort(key=lambda p: p.id)
        text = PASSAGE_SEPARATOR.join(p.text for p in chosen)
        return Evidence(tuple(chosen), budget, text, self.count(text) if text else 0)

    def describe(self) -> dict[str, object]:
        """How the index was built, for the record."""
        from importlib.metadata import version

        return {
            "method": "bm25",
            "package": f"bm25s {version('bm25s')}",
            "k1": BM25_K1,
            "b": BM25_B,
            "words": "jieba" if self.lang == "zh" else "latin-lowercase",
            "passage_tokens": PASSAGE_TOKENS,
            "passages": len(self.passages),
        }


__all__ = ["PASSAGE_TOKENS", "Evidence", "Passage", "PassageIndex", "bm25_words"]
