"""The quality line after ``summarize``: which failure modes one summary shows, without a model call.

The detectors are CNNSum's failure modes (``scoring/detectors.py``, defined in docs/scoring.md):
repetition, copying the book, subjective commentary, a summary cut off mid-sentence, one far
shorter than asked. Beside them, the % of repeated 3-grams that BooookScore's Table 2 reports
(``scoring/ngrams.py``). The flags go into the record (``extra["quality"]``) and onto one line,
so a summary that loops ("a great hero who is a great hero who is...") says so at once.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from booksum_app.books import Book, open_book
from booksum_app.config import is_int
from booksum_app.scoring.detectors import FailureReport, detect_failures, report_to_dict
from booksum_app.scoring.ngrams import ngram_stats
from booksum_app.strategies.record import SummaryRecord

# Table 2 of the BooookScore paper: 3.4-9.0% repeated 3-grams for GPT-4/ChatGPT/Claude summaries;
# over twice the worst of them is flagged even when no whole sentence repeats.
REPEATED_3GRAM_FLAG_PCT = 20.0

# the detectors' modes as the line names them, flagged and passed, in the order they are printed
CHECKS = (("repetition", "repetitive", "repetition"), ("copying", "copying", "copying"),
          ("subjective", "commentary", "commentary"), ("cut_off", "cut off", "ending"),
          ("too_short", "too short", "length"))


@dataclass(frozen=True)
class SummaryQuality:
    """One summary's flags (the line's names) and the figures behind them."""

    flags: tuple[str, ...]
    repeated_3gram_pct: float | None
    report: FailureReport

    def to_dict(self) -> dict[str, Any]:
        return {"flags": list(self.flags), "repeated_3gram_pct": self.repeated_3gram_pct,
                "repeated_3gram_flag_pct": REPEATED_3GRAM_FLAG_PCT, "detectors": report_to_dict(self.report)}


def assess(summary: str, *, source: str | None, lang: str, requested_tokens: int | None) -> SummaryQuality:
    """Flags of one summary (``source``: the summarized text, for the copy detector)."""
    lang = lang if lang in ("en", "zh") else "en"
    # a text source: detect_failures indexes only the n-grams this summary can match
    report = detect_failures(summary, source=source, lang=lang, requested_tokens=requested_tokens)
    pct = ngram_stats(summary, lang=lang).repeated_pct
    shown = set(report.failures)
    if pct is not None and pct >= REPEATED_3GRAM_FLAG_PCT:
        shown.add("repetition")
    flags = tuple(label for mode, label, _ in CHECKS if mode in shown)
    return SummaryQuality(flags, pct, report)


def _details(label: str, quality: SummaryQuality) -> str:
    r = quality.report
    if label == "repetitive":
        parts = (
            [f"{quality.repeated_3gram_pct:.0f}% repeated 3-grams"] if quality.repeated_3gram_pct is not None else []
        )
        if r.repeated_sentences:
            parts.append(f"{r.repeated_sentences} repeated sentence{'s' * (r.repeated_sentences != 1)}")
        if r.tail_repeats:
            parts.append(f"ends in a block repeated {r.tail_repeats} times")
        return ", ".join(parts)
    if label == "copying" and r.copied_share is not None:
        return f"{r.copied_share:.0%} of 8-grams from the book, longest run {r.longest_copied_words} words"
    if label == "commentary":
        return f"{r.subjective_sentences} sentence{'s' * (r.subjective_sentences != 1)}: " + ", ".join(
            r.subjective_terms[:3])
    if label == "cut off":
        return "ends mid-sentence"
    if label == "too short" and r.requested_tokens:
        return f"{r.n_tokens} of {r.requested_tokens} tokens asked"
    return ""


def quality_line(quality: SummaryQuality) -> str:
    """``quality: repetitive (41% repeated 3-grams) · ok: copying, commentary, ending, length``."""
    flagged = []
    for label in quality.flags:
        detail = _details(label, quality)
        flagged.append(f"{label} ({detail})" if detail else label)
    ok = [passed for mode, label, passed in CHECKS if label not in quality.flags
          and not (mode == "copying" and quality.report.copied_share is None)  # no source, not checked
          and not (mode == "too_short" and quality.report.too_short is None)]  # no length asked
    ok_part = f"ok: {', '.join(ok)}" if ok else ""
    if not flagged:
        pct = quality.repeated_3gram_pct
        head = "no flags" + (f" ({pct:.0f}% repeated 3-grams)" if pct is not None else "")
        return f"quality: {head} · {ok_part}" if ok_part else f"quality: {head}"
    return "quality: " + " · ".join(flagged + ([ok_part] if ok_part else []))


def record_quality(
    record: SummaryRecord, source: str | os.PathLike[str] | Book
) -> tuple[SummaryRecord, SummaryQuality]:
    """The record with ``extra["quality"]`` added, and the quality; ``source`` is the book summarized."""
    include_front = bool(record.config.get("include_front_matter", False))
    book = source if isinstance(source, Book) else open_book(source, include_front_matter=include_front)
    requested = record.config.get("max_summary_tokens")
    quality = assess(record.summary, source=book.text(include_front_matter=include_front),
                     lang=str(record.config.get("lang", "en")),
                     requested_tokens=int(requested) if is_int(requested) else None)
    return dataclasses.replace(record, extra={**record.extra, "quality": quality.to_dict()}), quality


__all__ = ["REPEATED_3GRAM_FLAG_PCT", "SummaryQuality", "assess", "quality_line", "record_quality"]
