"""ROUGE-L (Lin, 2004) of a summary against one reference, English and Chinese (CNNSum §4, CLongEval).

Equivalent to ``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)`` on
English text: tokens from :func:`booksum_app.scoring.words.rouge_words` (lowercase,
non-alphanumeric runs to spaces), the whole text as one sequence (not ``rougeLsum``'s
per-sentence union LCS), precision = LCS / |candidate|, recall = LCS / |reference|,
F = 2PR / (P + R) (beta = 1). Chinese text is segmented into words with jieba, as CNNSum does.
A candidate or reference with no tokens scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from booksum_app.scoring.words import rouge_words
from booksum_app.signature import make_signature


@dataclass(frozen=True)
class RougeScore:
    """Precision, recall and F-measure, in [0, 1]."""

    precision: float
    recall: float
    fmeasure: float


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (O(len(a)*len(b)) time)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            if token == other:
                current.append(previous[j - 1] + 1)
            else:
                current.append(max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l_tokens(candidate: Sequence[str], reference: Sequence[str]) -> RougeScore:
    """ROUGE-L of two token sequences."""
    if not candidate or not reference:
        return RougeScore(0.0, 0.0, 0.0)
    lcs = lcs_length(candidate, reference)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    f = 0.0 if lcs == 0 else 2 * precision * recall / (precision + recall)
    return RougeScore(precision, recall, f)


def rouge_l(candidate: str, reference: str, *, lang: str | None = None) -> RougeScore:
    """ROUGE-L of a summary against a reference (language detected from the reference if not given)."""
    if lang is None:
        from booksum_app.chunking import resolve_lang

        lang = resolve_lang(None, text=reference)
    return rouge_l_tokens(rouge_words(candidate, lang=lang), rouge_words(reference, lang=lang))


def rouge_signature(lang: str = "en") -> str:
    """Signature of ROUGE-L scores: tokenisation per language."""
    tok = "jieba" if lang == "zh" else "rouge-score-default"
    return make_signature("rougeL", tok=tok, stem="no", lang=lang)
