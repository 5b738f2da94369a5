"""The scoring library entry points: score summaries with a judge, or from existing annotations.

``score_summary(text, judge="openai:gpt-4o")`` and ``score_summaries({book: text}, judge=...)``
run the BooookScore judge; ``score_annotations(path, summaries=...)`` scores a release
annotations file without any LLM call. Each returns a :class:`BooookScoreResult`: the
per-summary judgements, the system score with its seeded CI, and the signature that says how
the numbers were made (judge, prompt version, mode, sentence splitter, temperature).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from booksum_app.chunking import SPLITTER_NAMES, detect_lang
from booksum_app.config import DEFAULT_BATCH_SIZE, JudgeMode
from booksum_app.files import write_json_atomic
from booksum_app.llm.base import ChatModel, Tally
from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED, SystemScore, aggregate
from booksum_app.scoring.booookscore import (
    DEFAULT_MAX_ATTEMPTS,
    BooookScoreJudge,
)
from booksum_app.scoring.detectors import FailureReport, FailureSummary
from booksum_app.scoring.judgement import SummaryJudgement
from booksum_app.scoring.ngrams import NgramStats, NgramSummary
from booksum_app.scoring.release import (
    AnnotationFormat,
    detect_format,
    judgements_from_release,
    load_json,
)
from booksum_app.scoring.rouge import RougeScore
from booksum_app.signature import make_signature, rules_version, short_hash

DEFAULT_BOOK = "summary"


@dataclass(frozen=True)
class BooookScoreResult:
    """BooookScore of a set of summaries: judgements, the system score, and its signature."""

    signature: str
    mode: str  # "sentence" or "batched"
    summaries: tuple[SummaryJudgement, ...]
    system: SystemScore

    @property
    def score(self) -> float | None:
        """The system score in [0, 1] (mean of per-summary scores)."""
        return self.system.score


@contextmanager
def _judge_model(judge: ChatModel | str) -> Iterator[ChatModel]:
    """The judge to call; one built here from a model string is closed on the way out (its
    worker threads, lease renewer and call-cache connection), one given by the caller is theirs."""
    if not isinstance(judge, str):
        yield judge
        return
    from booksum_app.llm.registry import get_model

    with get_model(judge) as client:
        yield client


def score_summaries(
    summaries: Mapping[str, str],
    *,
    judge: ChatModel | str,
    mode: JudgeMode = "sentence",
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    lang: str | None = None,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> BooookScoreResult:
    """Run the BooookScore judge over ``{book: summary}`` and aggregate.

    Args:
        summaries: book name -> summary text.
        judge: a :class:`ChatModel` or a model string (``"openai:gpt-4o"``, ``"local"``).
        mode: ``"sentence"`` (one call per sentence, the paper's method) or ``"batched"``.
        batch_size: sentences per call in batched mode.
        max_attempts: tries per sentence before it counts as unparseable.
        lang: ``"en"`` or ``"zh"`` sentence splitting; None detects per summary.
        seed: bootstrap seed of the CI.

    Raises:
        ConfigError: bad mode, batch size, language or model string.
        ModelError: the judge model failed.
        CostLimitExceeded: the cost ceiling would be passed.
    """
    with _judge_model(judge) as model:
        scorer = BooookScoreJudge(model, mode=mode, batch_size=batch_size, max_attempts=max_attempts, lang=lang)
        judgements = scorer.judge(summaries)
    return BooookScoreResult(
        signature=scorer.signature(),
        mode=mode,
        summaries=tuple(judgements),
        system=aggregate(judgements, seed=seed),
    )


def score_summary(
    summary: str,
    *,
    judge: ChatModel | str,
    mode: JudgeMode = "sentence",
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    lang: str | None = None,
) -> BooookScoreResult:
    """BooookScore of one summary text (see :func:`score_summaries`)."""
    return score_summaries(
        {DEFAULT_BOOK: summary},
        judge=judge,
        mode=mode,
        batch_size=batch_size,
        max_attempts=max_attempts,
        lang=lang,
    )


def content_hash(data: object) -> str:
    """A short hash of JSON content (keys sorted: the same annotations sign alike however written)."""
    return short_hash(json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


def annotations_signature(source: str, *, fmt: str, splitters: Sequence[str], content: object = None,
                          summaries: Mapping[str, str] | None = None) -> str:
    """Signature of a score computed from an annotations file (no judge run by us).

    ``sha`` is a hash of the annotations' content (a subset of a file signs apart from the
    whole), ``summaries`` one of the summaries they were scored with (absent books count as
    perfect, so the summaries' books move the score), ``splitv`` the splitter's rules version.
    """
    name = re.sub(r"[|:\s]+", "_", Path(source).name) or "annotations"
    return make_signature(
        "booookscore",
        judge="release-annotations",
        file=name,
        sha=None if content is None else content_hash(content),
        summaries=None if summaries is None else content_hash(dict(summaries)),
        mode=fmt,
        split="+".join(sorted(set(splitters))) or SPLITTER_NAMES["en"],
        splitv=rules_version("split"),
    )


SIGNATURE_SUFFIX = ".signature"  # beside annotations booksum's judge wrote: "<file>.signature"
SIGNATURE_KIND = "booksum.annotations-signature"


def write_judge_signature(path: Path, data: object, signature: str) -> Path:
    """Beside annotations written by booksum's judge (``data``, as written to ``path``): the judge's
    signature and a hash of the content, so scoring the file again signs the judge, not a file."""
    side = Path(str(path) + SIGNATURE_SUFFIX)
    write_json_atomic(side, {"kind": SIGNATURE_KIND, "signature": signature, "sha": content_hash(data)})
    return side


def _judge_signature(path: Path, data: object, summaries: Mapping[str, str] | None) -> str | None:
    """The judge's signature recorded beside ``path`` when the file is as the judge wrote it and is
    scored whole (every book it judged, no other); else None (then it signs as a file)."""
    side = Path(str(path) + SIGNATURE_SUFFIX)
    if not side.is_file():
        return None
    meta = load_json(side, what="annotations signature")
    if not isinstance(meta, dict) or meta.get("kind") != SIGNATURE_KIND or meta.get("sha") != content_hash(data):
        return None
    signature = meta.get("signature")
    if not isinstance(signature, str) or not signature.startswith("booookscore|judge:"):
        return None
    if summaries is not None and isinstance(data, dict) and set(summaries) != set(data):
        return None
    return signature


def score_annotations(
    path: str | os.PathLike[str],
    *,
    summaries: Mapping[str, str] | None = None,
    fmt: AnnotationFormat | None = None,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    allow_partial: bool = False,
) -> BooookScoreResult:
    """Score an annotations file in a release format, without any LLM call.

    ``allow_partial`` scores annotations that cover only part of the summaries (a
    :class:`~booksum_app.scoring.release.PartialAnnotationsWarning` says what is missing).

    Raises:
        InputError: unreadable/malformed file, books that do not match ``summaries``, or
            partial annotations (see docs/scoring.md).
    """
    data = load_json(Path(path), what="annotations")
    fmt = fmt or (detect_format(data) if isinstance(data, dict) else "sentence")
    judgements = judgements_from_release(data, summaries=summaries, fmt=fmt, source=str(path),
                                         allow_partial=allow_partial)
    splitters = (
        [SPLITTER_NAMES[detect_lang(text)] for text in summaries.values()]
        if summaries is not None and fmt == "sentence"
        else []
    )
    judge = _judge_signature(Path(path), data, summaries)  # annotations booksum's judge wrote sign as its judge
    return BooookScoreResult(
        signature=judge or annotations_signature(str(path), fmt=fmt, splitters=splitters, content=data,
                                                 summaries=summaries),
        mode=fmt,
        summaries=tuple(judgements),
        system=aggregate(judgements, seed=seed),
    )


@dataclass(frozen=True)
class CallTotals(Tally):
    """The tally of one system's judge calls (counted as :class:`Tally` counts), its wall time and sentences."""

    wall_s: float = 0.0
    judged_sentences: int = 0

    @property
    def billed_input_per_sentence(self) -> float | None:
        """Billed input tokens per judged sentence (docs/scoring.md); None without judge calls."""
        if not self.judged_sentences or not self.calls:
            return None
        return self.billed_input_tokens / self.judged_sentences


@dataclass(frozen=True)
class SummaryRow:
    """Everything measured on one summary."""

    book: str
    summary: str
    judgement: SummaryJudgement | None
    ngrams: NgramStats
    rouge: RougeScore | None = None
    failures: FailureReport | None = None  # failure-mode detectors (docs/scoring.md)


@dataclass(frozen=True)
class SystemScores:
    """All statistics of one system (one set of summaries): BooookScore, n-grams, ROUGE-L, cost."""

    name: str
    path: str
    rows: tuple[SummaryRow, ...]
    booookscore: BooookScoreResult | None
    ngrams: NgramSummary
    rouge_l: RougeScore | None = None  # mean over summaries with a reference
    rouge_signature: str | None = None
    n_with_reference: int = 0
    n_failed_calls: int = 0  # predictions left out of ROUGE-L as failed API calls (clongeval variant)
    totals: CallTotals = CallTotals()
    failures: FailureSummary | None = None
