"""ROUGE-L of a summary against one reference, in three variants (``--rouge-variant``).

- ``rouge-score`` (booksum's default for books): as
  ``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)`` on English text:
  tokens from :func:`booksum_app.scoring.words.rouge_words` (lowercase, non-alphanumeric runs to
  spaces); Chinese segmented into words with jieba, punctuation dropped. The whole text is one
  sequence (not ``rougeLsum``), tokens count with multiplicity: precision = LCS / |candidate|,
  recall = LCS / |reference|, F = 2PR / (P + R). A side with no tokens scores 0.
- ``clongeval``: CLongEval's ``metrics.rouge_zh_score`` (Qiu et al. 2024, LStSum): both texts
  cut by jieba (precise mode, HMM on), the words joined by spaces, punctuation and case kept,
  and scored as the PyPI ``rouge`` 1.0.1 package's ``Rouge().get_scores(...)[0]["rouge-l"]``
  scores them (:func:`package_rouge_l` reimplements it exactly: the package walks its LCS back
  recursively through a dict table, ~0.5 s a summary and ~1,000 frames deep; the tests compare
  the two float for float). The package splits each text into "sentences" at every ASCII ``.``, and with its default
  ``exclusive=True`` counts *distinct* words: precision = |union-LCS words| / |distinct
  candidate words|, recall the same over the reference's, F = 2PR / (P + R + 1e-8). An empty
  candidate scores 0 (as CLongEval's code does).
- ``cnnsum``: CNNSum's ``Inference.py`` ``rouge_zh_score`` (Wei et al. 2024): CLongEval's, plus
  a candidate made only of ``.`` scores 0 (the package would raise on it).

Failed calls: CLongEval's ``eval.py`` leaves out of the mean every prediction holding
``HTTP_ERROR`` or ``UNKNOW_ERROR`` (its released GPT-4-Turbo outputs have 10 such rows, API
calls that failed 5 times). Under the ``clongeval`` variant booksum applies the same rule
(:func:`failed_call`): such a row gets no ROUGE-L and is counted in one note.

Both benchmark variants report ROUGE-L F only (neither reports ROUGE-1/2). Where the package
raises because the candidate has no sentence left (e.g. ``"..."`` under ``clongeval``, whose own
script would stop there), the candidate scores 0 as CNNSum scores it; a reference with no
sentence is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from booksum_app.errors import InputError
from booksum_app.scoring.words import _jieba, rouge_words  # _jieba: one dictionary for the process
from booksum_app.signature import make_signature, rules_version

ROUGE_SCORE = "rouge-score"
CLONGEVAL = "clongeval"
CNNSUM = "cnnsum"
ROUGE_VARIANTS = (ROUGE_SCORE, CLONGEVAL, CNNSUM)
DEFAULT_ROUGE_VARIANT = ROUGE_SCORE
ROUGE_PACKAGE = "rouge-1.0.1"  # the PyPI package both benchmarks score with, reimplemented (package_rouge_l)
# zexuanqiu/CLongEval eval.py get_prediction_answer: `if "HTTP_ERROR" in cur_pred or "UNKNOW_ERROR" in
# cur_pred: continue` (predictions its API loop could not get are left out of the score)
FAILED_CALL_MARKERS = ("HTTP_ERROR", "UNKNOW_ERROR")


@dataclass(frozen=True)
class RougeScore:
    """Precision, recall and F-measure, in [0, 1]."""

    precision: float
    recall: float
    fmeasure: float


def check_variant(variant: str) -> str:
    """``variant`` if it is one booksum knows.

    Raises:
        InputError: an unknown variant.
    """
    if variant not in ROUGE_VARIANTS:
        raise InputError(f"ROUGE variant {variant!r}: use one of {', '.join(ROUGE_VARIANTS)}")
    return variant


def failed_call(prediction: str, variant: str) -> bool:
    """Whether the variant's benchmark leaves ``prediction`` out as a failed call (``clongeval`` only)."""
    return variant == CLONGEVAL and any(marker in prediction for marker in FAILED_CALL_MARKERS)


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
    """ROUGE-L of two token sequences (the ``rouge-score`` variant's arithmetic)."""
    if not candidate or not reference:
        return RougeScore(0.0, 0.0, 0.0)
    lcs = lcs_length(candidate, reference)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    f = 0.0 if lcs == 0 else 2 * precision * recall / (precision + recall)
    return RougeScore(precision, recall, f)


def jieba_joined(text: str) -> str:
    """``" ".join(jieba.cut(text, cut_all=False))``: the benchmarks' input to the ``rouge`` package."""
    return " ".join(_jieba().lcut(text, cut_all=False))


def _words(sentence: str) -> list[str]:
    """The package's words of one sentence: whitespace runs collapsed, split on single spaces."""
    return " ".join(sentence.split()).split(" ")  # a blank sentence is one empty word, as there


def _sentences(joined: str) -> list[list[str]]:
    """The package's sentences: the pieces between ASCII ``.`` that are not empty."""
    return [_words(piece) for piece in joined.split(".") if len(piece) > 0]


def _lcs_words(x: Sequence[str], y: Sequence[str]) -> set[str]:
    """The distinct words of the LCS of ``x`` and ``y`` that rouge 1.0.1's ``_recon_lcs`` walks back.

    Ties matter (another LCS may hold other words): from (i, j) the walk takes a match
    diagonally, else goes up when ``table[i-1][j] > table[i][j-1]``, else left, as the package
    does. The table is built a row at a time with numpy (row[j] = max(row[j-1], prev[j-1] + 1
    on a match, else prev[j])); the package's dict-of-tuples table took ~0.5 s a summary.
    """
    import numpy as np

    ids: dict[str, int] = {}
    xs = [ids.setdefault(w, len(ids)) for w in x]
    ys = np.array([ids.setdefault(w, len(ids)) for w in y], dtype=np.int64)
    table = np.zeros((len(xs) + 1, len(ys) + 1), dtype=np.int32)
    for i, token in enumerate(xs, start=1):
        prev = table[i - 1]
        step = np.where(ys == token, prev[:-1] + 1, prev[1:])
        np.maximum.accumulate(step, out=table[i, 1:])
    words: set[str] = set()
    i, j = len(xs), len(ys)
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            words.add(x[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1, j] > table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return words


def package_rouge_l(hypothesis: str, reference: str) -> RougeScore:
    """``rouge.Rouge().get_scores(hypothesis, reference)[0]["rouge-l"]`` of rouge 1.0.1, exactly.

    Summary-level union LCS with ``exclusive=True``: every reference sentence against every
    hypothesis sentence, the LCS words pooled in one set; P and R divide its size by the
    distinct words of each side; F = 2 * (P * R / (P + R + 1e-8)), in the package's order of
    operations so the floats agree bit for bit (tests/test_rouge_variants.py checks it against
    the package).

    Raises:
        ValueError: a side has no sentence (the package's own error).
    """
    hyp, ref = _sentences(hypothesis), _sentences(reference)
    if not hyp or not ref:
        raise ValueError("Collections must contain at least 1 sentence.")
    m = len({w for s in ref for w in s})
    n = len({w for s in hyp for w in s})
    union: set[str] = set()
    for ref_words in ref:
        for hyp_words in hyp:
            union |= _lcs_words(ref_words, hyp_words)
    llcs = len(union)
    r_lcs = llcs / m
    p_lcs = llcs / n
    f_lcs = 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))
    return RougeScore(p_lcs, r_lcs, f_lcs)


def _has_sentence(joined: str) -> bool:
    """Whether the ``rouge`` package finds a sentence (a non-empty piece between ``.``) in ``joined``."""
    return any(piece for piece in joined.split("."))


def benchmark_rouge_l(candidate: str, reference: str, *, variant: str) -> RougeScore:
    """ROUGE-L of the ``clongeval`` or ``cnnsum`` variant (see the module docstring).

    Raises:
        InputError: the reference has no sentence the ``rouge`` package can score.
    """
    if candidate == "":
        return RougeScore(0.0, 0.0, 0.0)
    if variant == CNNSUM and set(candidate) == {"."}:
        return RougeScore(0.0, 0.0, 0.0)
    hyp, ref = jieba_joined(candidate), jieba_joined(reference)
    if not _has_sentence(ref):
        raise InputError(f"reference {reference[:40]!r} has no words for ROUGE-L ({variant}); fix the reference")
    if not _has_sentence(hyp):
        return RougeScore(0.0, 0.0, 0.0)
    return package_rouge_l(hyp, ref)


def rouge_l(candidate: str, reference: str, *, lang: str | None = None,
            variant: str = DEFAULT_ROUGE_VARIANT) -> RougeScore:
    """ROUGE-L of a summary against a reference.

    ``lang`` (``rouge-score`` only; detected from the reference if not given) picks the
    tokenizer; the benchmark variants cut every text with jieba, as the benchmarks do.

    Raises:
        InputError: an unknown variant, or a reference the benchmark variants cannot score.
    """
    if check_variant(variant) != ROUGE_SCORE:
        return benchmark_rouge_l(candidate, reference, variant=variant)
    if lang is None:
        from booksum_app.chunking import resolve_lang

        lang = resolve_lang(None, text=reference)
    return rouge_l_tokens(rouge_words(candidate, lang=lang), rouge_words(reference, lang=lang))


def rouge_signature(lang: str = "en", variant: str = DEFAULT_ROUGE_VARIANT, *, preset: str | None = None,
                    overrides: Sequence[str] = ()) -> str:
    """Signature of ROUGE-L scores: the variant, its tokenisation and counting.

    ``preset``: the benchmark whose protocol made the summaries (``compare --dataset``);
    ``overrides``: the parts of that protocol an option replaced (e.g. ``G``, ``rouge``).
    """
    extra: dict[str, object] = {"preset": preset, "overrides": "+".join(overrides) or None}
    if check_variant(variant) == ROUGE_SCORE:
        tok = "jieba" if lang == "zh" else "rouge-score-default"
        return make_signature("rougeL", variant=variant, tok=tok, stem="no", lang=lang,
                              rules=rules_version("rouge"), **extra)
    return make_signature("rougeL", variant=variant, impl=ROUGE_PACKAGE, tok="jieba-joined", punct="kept",
                          lcs="distinct-words", lang=lang, rules=rules_version("rouge"), **extra)


__all__ = [
    "CLONGEVAL",
    "CNNSUM",
    "DEFAULT_ROUGE_VARIANT",
    "FAILED_CALL_MARKERS",
    "ROUGE_SCORE",
    "ROUGE_VARIANTS",
    "RougeScore",
    "benchmark_rouge_l",
    "check_variant",
    "failed_call",
    "jieba_joined",
    "lcs_length",
    "package_rouge_l",
    "rouge_l",
    "rouge_l_tokens",
    "rouge_signature",
]
