"""Failure-mode detectors for summaries, no LLM call (CNNSum §4.4 and App. E).

CNNSum (Wei et al.) catalogues how LLM summaries of long novels fail: subjective commentary
instead of plot (App. E.2), copying the source (E.3, E.5), meaningless repetition (E.4,
E.5), echoing the prompt and answer scaffolding (E.4, E.6), and outputs that are only a
sentence or stop at the token limit (§4.3, §4.4). :func:`detect_failures` counts each on one
summary; :func:`summarize_failures` aggregates over a system's summaries. Every definition
and threshold is documented in ``docs/scoring.md`` ("Failure modes"); the constants below
are those thresholds.

Subjective commentary (what the summary says about the book: themes, craft, the reader) is
told apart from framing (the text named while the plot is told: "The story follows...",
讲述了), which is counted (``framing_sentences``) but is no failure. Copying is found both
verbatim (8-grams) and approximately (4-grams joined across a few changed words; characters
for Chinese). Each detector's precision and recall on its labelled set
(tests/data/detectors) are in docs/scoring.md.

Words: English text is lowercased and split on every run of characters outside
``[a-z0-9]`` (the ROUGE-L tokenizer, :func:`booksum_app.scoring.words.rouge_words`); Chinese
text is segmented into jieba words, punctuation dropped (the same function).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from booksum_app.chunking import get_tokenizer
from booksum_app.chunking.sentences import sentence_spans
from booksum_app.compression.validity import ends_sentence
from booksum_app.errors import ConfigError, PromptError
from booksum_app.prompts import DIRECT_TEMPLATES, TEMPLATE_FIELDS, load_template
from booksum_app.scoring.detector_rules import (
    ANSWER_CUE,
    FRAMING_EN,
    FRAMING_ZH,
    SUBJECTIVE_EN,
    SUBJECTIVE_ZH,
    TRACE_EN,
    TRACE_ZH,
)
from booksum_app.scoring.ngrams import DEFAULT_LENGTH_TOKENIZER
from booksum_app.scoring.repeats import (
    checklist_items,
    duplicate_count,
    numbered_items,
    periodic_tail,
)
from booksum_app.scoring.source_index import (
    _PROCESS_PROBE,
    APPROX_N,
    COPY_N,
    SourceIndex,
    approx_units,
    gram_keys,
    words_of,
)

COPY_FLAG_SHARE = 0.2  # flagged when at least this share of the summary's words is copied...
COPY_MIN_WORDS = 16  # ...and they are at least this many (a short summary may quote a line)...
COPY_FLAG_SPAN_WORDS = 30  # ...or one copied span is at least this many words long
ECHO_N = 6  # prompt echo: summary n-grams looked up in the prompt templates
# approximate copying: summary APPROX_N-grams (source_index.py) looked up in the source...
APPROX_MAX_GAP = 2  # ...runs of covered words joined across at most this many changed words...
APPROX_MIN_DENSITY = 0.7  # ...while at least this share of the joined span is covered
APPROX_SPAN_CHARS_ZH = 45  # Chinese is compared by characters (jieba re-cuts words around a change)
TOO_SHORT_SHARE = 0.25  # too short: under this share of the requested length
FAILURE_MODES = ("subjective", "copying", "repetition", "echo", "too_short", "cut_off")

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Overlap:
    """How much of a word sequence is covered by n-grams of an index."""

    n_grams: int
    n_found: int
    longest_words: int  # longest run of words covered by consecutive found n-grams
    spans: tuple[tuple[int, int], ...]  # (start, end) word offsets of maximal covered runs

    @property
    def share(self) -> float | None:
        """Found n-grams / all n-grams (None when the text has fewer than n words)."""
        return self.n_found / self.n_grams if self.n_grams else None

    @property
    def covered_words(self) -> int:
        """Words inside at least one found n-gram (overlapping runs counted once)."""
        total, reach = 0, 0
        for begin, end in self.spans:  # sorted by start; end is exclusive
            total += max(0, end - max(begin, reach))
            reach = max(reach, end)
        return total


def overlap(words: Sequence[str], index: SourceIndex) -> Overlap:
    """N-grams of ``words`` found in ``index`` and the maximal runs they cover.

    Raises:
        ConfigError: the index was built in another process (its hashes do not apply here).
    """
    if index.process_check != hash(_PROCESS_PROBE):
        raise ConfigError(
            "this SourceIndex was built in another Python process (n-gram hashes differ "
            "between processes); build it with SourceIndex.build in the process that uses it"
        )
    found = index.keys.found(gram_keys(words, index.n))
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, hit in enumerate([*found, False]):
        if hit and start is None:
            start = i
        elif not hit and start is not None:
            spans.append((start, i - 1 + index.n))  # grams start..i-1 cover words start..i-2+n
            start = None
    longest = max((end - begin for begin, end in spans), default=0)
    return Overlap(len(found), sum(found), longest, tuple(spans))


def approximate_copy_words(words: Sequence[str], index: SourceIndex) -> int:
    """Longest span of ``words`` copied from the source with some words changed (0: none).

    ``words``: the summary's words, or for Chinese its letters, digits and characters (as the
    index holds them). A unit is covered when a summary :data:`APPROX_N`-gram holding it is in
    the source; covered
    runs are joined across gaps of at most :data:`APPROX_MAX_GAP` words while at least
    :data:`APPROX_MIN_DENSITY` of the joined span stays covered. A 75-word copy with every fifth
    word changed keeps four words in five: one 75-word span. 0 when the index has no
    approximate keys (built with another ``n``).
    """
    if index.approx_keys is None or len(words) < APPROX_N:
        return 0
    if index.process_check != hash(_PROCESS_PROBE):
        raise ConfigError("this SourceIndex was built in another Python process; rebuild it here")
    covered = [False] * len(words)
    for i, hit in enumerate(index.approx_keys.found(gram_keys(words, APPROX_N))):
        if hit:
            covered[i:i + APPROX_N] = [True] * APPROX_N
    runs: list[tuple[int, int]] = []  # (start, end) of covered runs
    for i, hit in enumerate(covered):
        if hit and (not runs or runs[-1][1] != i):
            runs.append((i, i + 1))
        elif hit:
            runs[-1] = (runs[-1][0], i + 1)
    best = 0
    for first in range(len(runs)):
        start, end, inside = runs[first][0], runs[first][1], runs[first][1] - runs[first][0]
        best = max(best, end - start)
        for nxt_start, nxt_end in runs[first + 1:]:
            if nxt_start - end > APPROX_MAX_GAP:
                break
            inside += nxt_end - nxt_start
            end = nxt_end
            if inside >= APPROX_MIN_DENSITY * (end - start):
                best = max(best, end - start)
    return best


def _prompt_pieces(text: str) -> list[str]:
    # the instruction text between the template's fields (a field never joins two pieces)
    return [literal for literal, *_ in string.Formatter().parse(text) if literal.strip()]


@functools.cache
def builtin_prompt_index(lang: str) -> SourceIndex:
    """Echo index over every built-in prompt template of ``lang`` (paper, simple, direct)."""
    pieces: list[str] = []
    for prompt_set, names in (("paper", TEMPLATE_FIELDS), ("simple", TEMPLATE_FIELDS),
                              ("direct", DIRECT_TEMPLATES)):
        for name in names:
            if prompt_set != "direct" and name in DIRECT_TEMPLATES:
                continue
            try:
                pieces += _prompt_pieces(load_template(name, prompt_set=prompt_set, lang=lang).text)
            except PromptError:
                continue  # a set need not have every template in every language
    return SourceIndex.build(pieces, lang=lang, n=ECHO_N)


@dataclass(frozen=True)
class FailureReport:
    """Failure-mode counts for one summary (definitions in docs/scoring.md, "Failure modes")."""

    lang: str
    n_sentences: int
    subjective_sentences: int  # sentences containing a lexicon term
    subjective_terms: tuple[str, ...]  # distinct terms matched, in order of first appearance
    copy_ngrams: int | None  # summary 8-grams (None without a source)
    copied_share: float | None  # share of them found in the source
    longest_copied_words: int | None
    repeated_sentences: int  # sentence occurrences beyond the first of each
    repeated_lines: int  # non-empty line occurrences beyond the first of each
    tail_repeats: int  # times the periodic tail's block occurs (0: no periodic tail)
    tail_chars: int  # length of the periodic tail (whitespace collapsed)
    prompt_echo_ngrams: int  # summary 6-grams found in a prompt template
    prompt_echo_fragments: tuple[str, ...]  # the echoed runs (at most five)
    answer_cues: int  # "Summary:" / "摘要：" labels anywhere in the text
    checklist_items: int  # numbered lines in runs of at least two
    stepwise_traces: int  # "in this excerpt" / "在这一片段中" phrases
    n_tokens: int
    requested_tokens: int | None
    too_short: bool | None  # None when the requested length is unknown
    cut_off: bool
    cut_evidence: str  # "finish_reason", "no_final_punctuation", or "" when not cut
    # added fields (defaults keep older constructors working)
    framing_sentences: int = 0  # sentences naming the text while telling the plot (not a failure)
    framing_terms: tuple[str, ...] = ()
    approx_copied_words: int | None = None  # longest copy with words changed (None without a source)
    numbered_items: int = 0  # numbered lines in runs of two or more, scaffolding or not
    copied_words: int | None = None  # summary words inside a found 8-gram (None without a source)
    summary_words: int = 0  # words of the summary (the copy detector's units)

    @property
    def failures(self) -> tuple[str, ...]:
        """The failure modes this summary shows, in :data:`FAILURE_MODES` order."""
        copied_words = self.copied_words or 0
        copied = self.copied_share is not None and (
            (copied_words >= COPY_MIN_WORDS and copied_words >= COPY_FLAG_SHARE * self.summary_words)
            or (self.longest_copied_words or 0) >= COPY_FLAG_SPAN_WORDS
            or (self.approx_copied_words or 0)
            >= (APPROX_SPAN_CHARS_ZH if self.lang == "zh" else COPY_FLAG_SPAN_WORDS)
        )
        shown = {
            "subjective": self.subjective_sentences > 0,
            "copying": copied,
            "repetition": self.repeated_sentences + self.repeated_lines + self.tail_repeats > 0,
            "echo": self.prompt_echo_ngrams + self.answer_cues + self.checklist_items
            + self.stepwise_traces > 0,
            "too_short": bool(self.too_short),
            "cut_off": self.cut_off,
        }
        return tuple(mode for mode in FAILURE_MODES if shown[mode])


def _framing(sentences: Sequence[str], lang: str) -> tuple[int, tuple[str, ...]]:
    return _matches(sentences, FRAMING_ZH if lang == "zh" else FRAMING_EN)


def _subjective(sentences: Sequence[str], lang: str) -> tuple[int, tuple[str, ...]]:
    return _matches(sentences, SUBJECTIVE_ZH if lang == "zh" else SUBJECTIVE_EN)


def _matches(sentences: Sequence[str], pattern: re.Pattern[str]) -> tuple[int, tuple[str, ...]]:
    terms: dict[str, None] = {}
    n_sentences = 0
    for sentence in sentences:
        found = [_SPACE.sub(" ", m.group(0).lower()) for m in pattern.finditer(sentence)]
        n_sentences += bool(found)
        terms.update(dict.fromkeys(found))
    return n_sentences, tuple(terms)


def _cut(summary: str, finish_reason: str | None) -> tuple[bool, str]:
    if finish_reason is not None:
        return (True, "finish_reason") if finish_reason == "length" else (False, "")
    if summary.strip() and not ends_sentence(summary):
        return True, "no_final_punctuation"
    return False, ""


def _echo(words: Sequence[str], lang: str, prompt_texts: Sequence[str]) -> tuple[int, tuple[str, ...]]:
    index = builtin_prompt_index(lang)
    if prompt_texts:
        extra = SourceIndex.build([p for t in prompt_texts for p in _prompt_pieces(t)], lang=lang, n=ECHO_N)
        index = index.union(extra)
    found = overlap(words, index)
    joiner = "" if lang == "zh" else " "
    return found.n_found, tuple(joiner.join(words[s:e]) for s, e in found.spans[:5])


@functools.cache
def _default_count_tokens() -> Callable[[str], int]:
    return get_tokenizer(DEFAULT_LENGTH_TOKENIZER).count


def _copy_figures(summary: str, words: list[str], source: str | SourceIndex,
                  lang: str) -> tuple[Overlap, int]:
    """The copy detector's overlap and approximate copied words of one summary against its source."""
    if isinstance(source, SourceIndex):
        index = source
    else:  # one summary: only the source n-grams it can match (the same figures, a fraction of the work)
        from booksum_app.scoring.copy_slice import summary_source_index

        index = summary_source_index(source, summary, lang=lang)
    if index.lang != lang or index.n != COPY_N:
        raise ConfigError(
            f"source index is for lang={index.lang!r}, n={index.n}; this summary needs "
            f"lang={lang!r}, n={COPY_N}: build it with SourceIndex.build(text, lang={lang!r})"
        )
    return overlap(words, index), approximate_copy_words(approx_units(summary, words, lang), index)


def detect_failures(
    summary: str,
    *,
    source: str | SourceIndex | None = None,
    lang: str = "en",
    requested_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
    finish_reason: str | None = None,
    prompt_texts: Sequence[str] = (),
) -> FailureReport:
    """Count every failure mode of one summary (no model call).

    Args:
        summary: the summary text as the system produced it (raw or cleaned).
        source: the summarized text, or its :class:`SourceIndex` (build it once per book when
            many summaries of it are checked); None skips the copy detector.
        lang: ``"en"`` or ``"zh"``.
        requested_tokens: the length the summary was asked for, in ``count_tokens`` units;
            None leaves ``too_short`` unknown.
        count_tokens: the length measure (default: tiktoken ``cl100k_base``).
        finish_reason: the API's finish reason when known (``"length"``: cut at the limit).
        prompt_texts: templates used besides the built-in ones (a ``--prompts`` directory).

    Returns:
        The :class:`FailureReport`.

    Raises:
        ConfigError: unknown language, or a source index built for another language or n.
    """
    words = words_of(summary, lang=lang)
    copy, approx = _copy_figures(summary, words, source, lang) if source is not None else (None, None)
    sentences = [summary[s:e] for s, e in sentence_spans(summary, lang=lang)]
    n_subjective, terms = _subjective(sentences, lang)
    n_framing, framing_terms = _framing(sentences, lang)
    tail_repeats, tail_chars = periodic_tail(summary)
    echo_ngrams, echo_fragments = _echo(words, lang, prompt_texts)
    n_tokens = (count_tokens or _default_count_tokens())(summary)
    cut_off, cut_evidence = _cut(summary, finish_reason)
    return FailureReport(
        lang=lang,
        n_sentences=len(sentences),
        subjective_sentences=n_subjective,
        subjective_terms=terms,
        copy_ngrams=copy.n_grams if copy else None,
        copied_share=copy.share if copy else None,
        longest_copied_words=copy.longest_words if copy else None,
        repeated_sentences=duplicate_count(sentences, lang=lang),
        repeated_lines=duplicate_count((line for line in summary.splitlines() if line.strip()), lang=lang),
        tail_repeats=tail_repeats,
        tail_chars=tail_chars,
        prompt_echo_ngrams=echo_ngrams,
        prompt_echo_fragments=echo_fragments,
        answer_cues=len(ANSWER_CUE.findall(summary)),
        checklist_items=checklist_items(summary),
        stepwise_traces=len((TRACE_ZH if lang == "zh" else TRACE_EN).findall(summary)),
        n_tokens=n_tokens,
        requested_tokens=requested_tokens,
        too_short=None if requested_tokens is None else n_tokens < TOO_SHORT_SHARE * requested_tokens,
        cut_off=cut_off,
        cut_evidence=cut_evidence,
        framing_sentences=n_framing,
        framing_terms=framing_terms,
        approx_copied_words=approx,
        copied_words=copy.covered_words if copy else None,
        summary_words=len(words),
        numbered_items=numbered_items(summary),
    )


@dataclass(frozen=True)
class FailureSummary:
    """Per-system failure counts: summaries showing each mode, and means of the raw figures."""

    n_summaries: int
    counts: Mapping[str, int] = field(default_factory=dict)  # mode -> summaries showing it
    n_with_source: int = 0
    mean_copied_share: float | None = None  # over summaries with a source
    mean_subjective_sentences: float | None = None

    def share(self, mode: str) -> float | None:
        """Share of summaries showing ``mode`` (None with no summaries)."""
        return self.counts.get(mode, 0) / self.n_summaries if self.n_summaries else None


def summarize_failures(reports: Iterable[FailureReport]) -> FailureSummary:
    """Count, per failure mode, the summaries of one system that show it."""
    items = list(reports)
    counts = {mode: sum(mode in r.failures for r in items) for mode in FAILURE_MODES}
    shares = [r.copied_share for r in items if r.copied_share is not None]
    return FailureSummary(
        n_summaries=len(items),
        counts=counts,
        n_with_source=sum(r.copy_ngrams is not None for r in items),
        mean_copied_share=sum(shares) / len(shares) if shares else None,
        mean_subjective_sentences=(
            sum(r.subjective_sentences for r in items) / len(items) if items else None
        ),
    )


def report_to_dict(report: FailureReport) -> dict[str, object]:
    """The JSON-ready form of one summary's report (every field, plus ``failures``)."""
    out: dict[str, object] = {"failures": list(report.failures)}
    for name in FailureReport.__dataclass_fields__:
        value = getattr(report, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def failure_summary_to_dict(summary: FailureSummary) -> dict[str, object]:
    """The JSON-ready form of one system's failure counts and shares."""
    return {
        "n_summaries": summary.n_summaries,
        "counts": {mode: summary.counts.get(mode, 0) for mode in FAILURE_MODES},
        "shares": {mode: summary.share(mode) for mode in FAILURE_MODES},
        "n_with_source": summary.n_with_source,
        "mean_copied_share": summary.mean_copied_share,
        "mean_subjective_sentences": summary.mean_subjective_sentences,
    }


__all__ = [
    "FAILURE_MODES",
    "FailureReport",
    "FailureSummary",
    "Overlap",
    "SourceIndex",
    "approximate_copy_words",
    "builtin_prompt_index",
    "checklist_items",
    "detect_failures",
    "duplicate_count",
    "failure_summary_to_dict",
    "numbered_items",
    "overlap",
    "periodic_tail",
    "report_to_dict",
    "summarize_failures",
]
