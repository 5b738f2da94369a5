"""Scoring: BooookScore (LLM judge, §4.1, App. J.4), n-gram statistics (Table 2) and ROUGE-L.

Public API (see docs/scoring.md for every definition)::

    score_summary(text, judge="openai:gpt-4o", mode="sentence") -> BooookScoreResult
    score_summaries({book: text}, judge=..., mode=...)         -> BooookScoreResult
    score_annotations(path, summaries=...)                      -> BooookScoreResult (no LLM call)
    ngram_stats(text, source=...) / summarize_ngrams(stats)     -> NgramStats / NgramSummary
    rouge_l(candidate, reference)                               -> RougeScore
"""

from __future__ import annotations

from booksum_app.config import JUDGE_MODES, JudgeMode
from booksum_app.scoring.aggregate import SystemScore, aggregate, bootstrap_ci
from booksum_app.scoring.answers import JudgeAnswer, parse_batch_answer, parse_sentence_answer
from booksum_app.scoring.booookscore import (
    BooookScoreJudge,
    load_judge_prompt,
)
from booksum_app.scoring.judgement import (
    ERROR_TYPES,
    SentenceJudgement,
    SummaryJudgement,
    normalise_type,
)
from booksum_app.scoring.ngrams import NgramStats, NgramSummary, ngram_stats, summarize_ngrams
from booksum_app.scoring.release import (
    read_annotations,
    read_summaries,
    to_release,
    write_annotations,
)
from booksum_app.scoring.results import (
    BooookScoreResult,
    score_annotations,
    score_summaries,
    score_summary,
)
from booksum_app.scoring.rouge import RougeScore, rouge_l

__all__ = [
    "ERROR_TYPES",
    "JUDGE_MODES",
    "BooookScoreJudge",
    "BooookScoreResult",
    "JudgeAnswer",
    "JudgeMode",
    "NgramStats",
    "NgramSummary",
    "RougeScore",
    "SentenceJudgement",
    "SummaryJudgement",
    "SystemScore",
    "aggregate",
    "bootstrap_ci",
    "load_judge_prompt",
    "ngram_stats",
    "normalise_type",
    "parse_batch_answer",
    "parse_sentence_answer",
    "read_annotations",
    "read_summaries",
    "rouge_l",
    "score_annotations",
    "score_summaries",
    "score_summary",
    "summarize_ngrams",
    "to_release",
    "write_annotations",
]
