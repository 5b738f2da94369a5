"""BooookScore's values: the 8 confusion types (§3, Table 3) and per-sentence / per-summary judgements.

A :class:`SentenceJudgement` is one sentence's verdict: confusing (questions and types), no
confusion, or unparseable (the judge never gave an answer we could read, after retries). A
:class:`SummaryJudgement` holds the verdicts of one summary and how many sentences it
has; :func:`normalise_type` maps the spellings judges use ("Entity Omissions", "omission of
entity", "causal-omission") onto the 8 canonical names and rejects anything else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ERROR_TYPES: tuple[str, ...] = (
    "entity omission",
    "event omission",
    "causal omission",
    "salience",
    "discontinuity",
    "duplication",
    "inconsistency",
    "language",
)
NO_CONFUSION = "no confusion"

# Spellings seen from judges (after lowercasing, hyphens/underscores to spaces, plurals folded).
_ALIASES: dict[str, str] = {
    "entity": "entity omission",
    "entities omission": "entity omission",
    "omission of entity": "entity omission",
    "omitted entity": "entity omission",
    "missing entity": "entity omission",
    "event": "event omission",
    "events omission": "event omission",
    "omission of event": "event omission",
    "omitted event": "event omission",
    "missing event": "event omission",
    "causal": "causal omission",
    "cause omission": "causal omission",
    "causality omission": "causal omission",
    "omission of cause": "causal omission",
    "causal omission of reason": "causal omission",
    "missing cause": "causal omission",
    "missing reason": "causal omission",
    "salient": "salience",
    "saliency": "salience",
    "discontinuous": "discontinuity",
    "discontinuities": "discontinuity",
    "duplicate": "duplication",
    "duplicated": "duplication",
    "repetition": "duplication",
    "redundancy": "duplication",
    "inconsistent": "inconsistency",
    "inconsistencies": "inconsistency",
    "contradiction": "inconsistency",
    "language error": "language",
    "language issue": "language",
    "language problem": "language",
    "grammar": "language",
}
# What a labelled field may say for "no confusion". Deliberately not "no", "nothing", "null":
# a bare word must never read as a clean sentence (the whole answer is checked for its labels
# in answers.py; the release's own parser accepts only "no confusion").
_NO_CONFUSION_WORDS = frozenset({"no confusion", "no confusions", "none", "n/a", "no confusion found"})
_PUNCT_EDGES = " \t\r\n.,;:!*_`'\"“”‘’()[]{}<>-"


def _canonical_key(text: str) -> str:
    key = text.strip().strip(_PUNCT_EDGES).lower()
    key = re.sub(r"[-_/]+", " ", key)
    key = re.sub(r"\s+", " ", key).strip()
    key = re.sub(r"\b(omission|type|error|issue)s\b", r"\1", key)
    return re.sub(r"\s+(type|error|confusion)$", "", key) if key not in _NO_CONFUSION_WORDS else key


def normalise_type(text: str) -> str | None:
    """The canonical confusion type for a judge's spelling of it, or None if it is not one of the 8."""
    key = _canonical_key(text)
    if key in ERROR_TYPES:
        return key
    if key.endswith("s") and key[:-1] in ERROR_TYPES:  # "duplications", "languages"
        return key[:-1]
    return _ALIASES.get(key)


def is_no_confusion(text: str) -> bool:
    """Whether a questions/types field says "no confusion" (or "none", "N/A"); empty text, "no",
    "nothing" and "null" do not."""
    key = " ".join(text.strip().strip(_PUNCT_EDGES.replace("/", "")).lower().split())
    return key in _NO_CONFUSION_WORDS


@dataclass(frozen=True)
class SentenceJudgement:
    """One sentence's verdict: no confusion, confusing (questions + types), or unparseable."""

    index: int  # position in the summary (0-based); -1 when unknown (a release file's extra sentence)
    sentence: str
    questions: str | None = None
    types: tuple[str, ...] = ()
    unparseable: bool = False
    answer: str | None = None  # the judge's last raw answer when it could not be parsed

    @property
    def confusing(self) -> bool:
        """A parsed verdict with questions or types (the release's definition)."""
        return not self.unparseable and bool(self.questions or self.types)


@dataclass(frozen=True)
class SummaryJudgement:
    """The verdicts on one summary's sentences.

    ``sentences`` lists every sentence when the judge ran (or a batched/v2 file was read); a
    per-sentence release file lists only the confusing ones, so ``n_sentences`` (from splitting
    the summary) is the denominator, not ``len(sentences)``.
    """

    book: str
    n_sentences: int
    sentences: tuple[SentenceJudgement, ...] = ()
    summary: str | None = None

    @property
    def n_confusing(self) -> int:
        """Sentences with at least one confusion."""
        return sum(1 for s in self.sentences if s.confusing)

    @property
    def n_unparseable(self) -> int:
        """Sentences the judge never answered readably (excluded from the denominator)."""
        return sum(1 for s in self.sentences if s.unparseable)

    @property
    def n_judged(self) -> int:
        """The denominator: sentences minus unparseable ones."""
        return self.n_sentences - self.n_unparseable

    @property
    def score(self) -> float | None:
        """BooookScore of this summary (fraction of judged sentences with no confusion), None if none."""
        if self.n_judged <= 0:
            return None
        return 1.0 - self.n_confusing / self.n_judged

    def type_counts(self) -> dict[str, int]:
        """How many sentences carry each confusion type (a sentence with two types counts for both)."""
        counts = dict.fromkeys(ERROR_TYPES, 0)
        for judgement in self.sentences:
            if judgement.confusing:
                for kind in judgement.types:
                    counts[kind] = counts.get(kind, 0) + 1
        return counts
