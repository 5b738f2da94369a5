"""Read and write the BooookScore release formats (summaries and annotations).

Formats (github.com/lilakk/BooookScore, ``summaries/`` and ``annotations/``):

- summaries: ``{book_file_name: summary}``.
- per-sentence annotations (the paper's method, §4.1): ``{book: {sentence: {"questions": str,
  "types": [type, ...]}}}`` holding only the sentences judged confusing; a book whose value is
  null, or that is absent, has no confusing sentence. The number of sentences of a summary is
  not stored: it comes from splitting the summary with NLTK Punkt English, exactly as the
  original ``get_booookscore`` does, so these files are scored together with their summaries.
- batched "v2" annotations: ``{book: {sentence: {"sentence_num", "sentence", "questions",
  "types"}}}`` with every sentence present (questions/types null where there is no confusion;
  types a comma-separated string). The denominator is the number of entries, as in the
  original ``calc_booookscore_v2`` (a sentence repeated verbatim in a summary is one entry).

- span lists (e.g. ``annotations/llama2-2048-hier.json``): ``{book: [{"span", "questions",
  "types"}, ...]}``, the confusing sentences as a list (a span may repeat; every entry counts,
  as in the original); scored like per-sentence files, with their summaries.
- human annotations (``annotations/human_annotations/summary-{config}.json``): ``{book:
  {"summary": str, "singles": [{"span", "questions", "labels"}], "relations": [{"span_a",
  "span_b", "shared_questions", "shared_labels"}]}}``. The file carries its summaries; by the
  original rule a summary's confusing count is the number of singles plus relations, over the
  sentences of its summary (NLTK Punkt). Spans are phrases, not sentences: each single or
  relation is one judgement placed on the sentence where its (first) span starts.

Deviation (ours, additive): a sentence the judge never answered readably is written with
``"unparseable": true`` and null questions/types; reading it back marks it unparseable. The
original per-sentence scorer would count such an entry as confusing, never as no confusion.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from booksum_app.chunking import detect_lang, split_sentences
from booksum_app.errors import InputError
from booksum_app.files import write_json_atomic
from booksum_app.jsonin import read_json
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement, normalise_type

AnnotationFormat = Literal["sentence", "batched", "spans", "human"]
ANNOTATION_FORMATS: tuple[AnnotationFormat, ...] = ("sentence", "batched", "spans", "human")
# Share of annotated sentences that may be absent from the split summaries before the
# annotations are refused as belonging to other summaries. The release itself has 9 of 415
# (chatgpt-2048-hier) and 21 of 651 (chatgpt-2048-inc) annotated sentences that the cleaning
# pass removed from the summaries (3.2% at most); a mismatched pair misses 99.8% or more.
MAX_UNMATCHED_SHARE = 0.05
# Share of the summaries' sentences a per-sentence file may leave without an entry (their books
# absent) before it is refused as partial. Absent books count as having no confusing sentence
# (the format's rule, and the original get_booookscore's), so a file covering half the books
# scores 94-95 instead of 89.4. Counted in sentences, not books: a book's weight in the score is
# its sentences, and the books a subset drops are the long, much-annotated ones (gpt4-2048-hier
# without its 9 most-annotated books: 25 of 100 books, 25.1% of the sentences, 92.57 for 89.40).
# The release's own files leave 2.1% to 15.2% of the sentences (4 to 16 of 100 books: books
# without a confusing sentence, and the two every per-sentence file lacks: the-faraway-world,
# the-ferryman).
MAX_ABSENT_SHARE = 0.25


class PartialAnnotationsWarning(UserWarning):
    """Annotations scored although they cover only part of the summaries (``allow_partial``)."""


def load_json(path: Path, *, what: str) -> Any:
    """Parse a JSON file, turning every failure (deep nesting included) into a one-line :class:`InputError`."""
    return read_json(path, what=what)


def read_summaries(path: Path) -> dict[str, str]:
    """Read a ``{book: summary}`` JSON file.

    Raises:
        InputError: the file is missing, not JSON, or not an object of strings.
    """
    data = load_json(path, what="summaries")
    return parse_summaries(data, source=str(path))


def parse_summaries(data: Any, *, source: str = "summaries") -> dict[str, str]:
    """Validate a ``{book: summary}`` object."""
    if not isinstance(data, dict) or not data:
        raise InputError(f"{source} must be a non-empty JSON object {{book: summary}}")
    bad = [book for book, text in data.items() if not isinstance(text, str)]
    if bad:
        raise InputError(f"{source}: the summary of {bad[0]!r} is not a string; expected {{book: summary}}")
    return dict(data)


def detect_format(data: Mapping[str, Any]) -> AnnotationFormat:
    """The release format of ``data``: ``"human"`` (books with summary/singles/relations),
    ``"spans"`` (books with lists), ``"batched"`` (entries with ``sentence_num``), else ``"sentence"``."""
    for entries in data.values():
        if isinstance(entries, list):
            return "spans"
        if isinstance(entries, dict):
            if isinstance(entries.get("summary"), str) and ("singles" in entries or "relations" in entries):
                return "human"
            for entry in entries.values():
                if isinstance(entry, dict) and "sentence_num" in entry:
                    return "batched"
    return "sentence"


def summaries_in(data: Any) -> dict[str, str] | None:
    """The ``{book: summary}`` carried by an annotations object (human format), else None."""
    if not isinstance(data, dict) or not data or detect_format(data) != "human":
        return None
    return {
        book: entry["summary"]
        for book, entry in data.items()
        if isinstance(entry, dict) and isinstance(entry.get("summary"), str)
    }


def _types(value: Any, *, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        items: Iterable[Any] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        raise InputError(f"{where}: 'types' must be a list, a string or null")
    kinds = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            continue
        kinds.append(normalise_type(item) or item.strip().lower())  # keep unknown names visible
    return tuple(kinds)


def _questions(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    text = str(value).strip()
    return text or None


def _entry(sentence: str, entry: Any, *, index: int, where: str) -> SentenceJudgement:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: each annotation must be an object with 'questions' and 'types'")
    if entry.get("unparseable"):
        return SentenceJudgement(index=index, sentence=sentence, unparseable=True)
    return SentenceJudgement(
        index=index,
        sentence=sentence,
        questions=_questions(entry.get("questions")),
        types=_types(entry.get("types"), where=where),
    )


def judgements_from_release(
    data: Any,
    *,
    summaries: Mapping[str, str] | None = None,
    fmt: AnnotationFormat | None = None,
    source: str = "annotations",
    allow_partial: bool = False,
) -> list[SummaryJudgement]:
    """Turn a release annotations object into one :class:`SummaryJudgement` per summary.

    Per-sentence format: one judgement per book of ``summaries`` (required), in its order;
    absent/null books have no confusing sentence. Batched (v2): one per annotated book; when
    ``summaries`` is given both must name the same books.

    Partial annotations are refused (:func:`check_coverage`) unless ``allow_partial``, which
    scores them and issues a :class:`PartialAnnotationsWarning` saying what is missing.

    Raises:
        InputError: malformed data, books that do not match the summaries, or partial annotations.
    """
    if not isinstance(data, dict):
        raise InputError(f"{source} must be a JSON object {{book: {{sentence: annotation}}}}")
    fmt = fmt or detect_format(data)
    if fmt not in ANNOTATION_FORMATS:
        raise InputError(f"unknown annotations format {fmt!r}; use one of {ANNOTATION_FORMATS}")
    shape = list if fmt == "spans" else dict
    for book, entries in data.items():
        if entries is not None and not isinstance(entries, shape):
            kind = "a list" if fmt == "spans" else "an object"
            raise InputError(f"{source}: annotations of {book!r} must be {kind} or null ({fmt} format)")
    if fmt == "human":
        return _human_file(data, summaries=summaries, source=source)
    if summaries is not None:
        extra = sorted(set(data) - set(summaries))
        if extra:
            raise InputError(
                f"{source} annotates {len(extra)} book(s) absent from the summaries "
                f"(e.g. {extra[0]!r}); pass the summaries file the annotations were made from"
            )
    if fmt in ("sentence", "spans"):
        if summaries is None:
            raise InputError(
                f"{source} holds per-sentence annotations (only confusing sentences): the summaries "
                "are needed to count sentences; pass the summaries file too"
            )
        judged = [
            _per_sentence(book, summary, _pairs(data.get(book), source=f"{source}[{book!r}]"), source=source)
            for book, summary in summaries.items()
        ]
        check_sentences_match(judged, source=source)
        _check_absent_sentences(judged, data, source=source, allow_partial=allow_partial)
        return judged
    if summaries is not None:
        missing = sorted(set(summaries) - set(data))
        if missing:
            raise InputError(
                f"{source} (batched v2) has no annotations for {len(missing)} summary(ies) "
                f"(e.g. {missing[0]!r}); rerun the judge on them or score a matching summaries file"
            )
    judged = [
        _batched(book, entries or {}, summary=None if summaries is None else summaries[book], source=source)
        for book, entries in data.items()
    ]
    if summaries is not None:
        check_sentences_match(judged, source=source)
    _check_batched_coverage(judged, source=source, allow_partial=allow_partial)
    return judged


def _partial(message: str, allow_partial: bool) -> None:
    if not allow_partial:
        raise InputError(f"{message}; score complete annotations, or pass --allow-partial to score them anyway")
    warnings.warn(f"{message}; scored anyway (--allow-partial)", PartialAnnotationsWarning, stacklevel=3)


def _check_absent_sentences(judged: Sequence[SummaryJudgement], data: Mapping[str, Any], *, source: str,
                            allow_partial: bool) -> None:
    """Refuse a per-sentence file whose absent books hold more than MAX_ABSENT_SHARE of the sentences."""
    absent = [j for j in judged if j.book not in data]
    total = sum(j.n_sentences for j in judged)
    lost = sum(j.n_sentences for j in absent)
    if total and lost > MAX_ABSENT_SHARE * total:
        _partial(f"{source}: {len(absent)} of {len(judged)} books ({lost} of {total} summary sentences, "
                 f"{lost / total:.1%}) have no entry in these per-sentence annotations (more than "
                 f"{MAX_ABSENT_SHARE:.0%} of the sentences): they would count as having no confusing sentence",
                 allow_partial)


def _check_batched_coverage(judged: Sequence[SummaryJudgement], *, source: str, allow_partial: bool) -> None:
    """v2 files list every sentence: refuse one whose summaries' sentences lack entries.

    A sentence is missing when it is one of its summary's sentences (NLTK Punkt, as the judge
    split it) without an entry; the release's v2 files miss none. Without the summaries nothing
    is checked: ``sentence_num`` restarts with every batch of 10 and skips where the judge
    merged a repeated sentence (44 and 245 skips in the release), so it cannot tell.
    """
    missing = books = total = 0
    for judgement in judged:
        if judgement.summary is None:
            continue
        sentences = set(split_sentences(judgement.summary, lang=detect_lang(judgement.summary)))
        gap = len(sentences - {j.sentence for j in judgement.sentences})
        total += len(sentences)
        missing += gap
        books += gap > 0
    if missing:
        _partial(f"{source}: {missing} of {total} summary sentences in {books} book(s) have no entry in these "
                 "batched (v2) annotations, which list every sentence", allow_partial)


def check_sentences_match(judgements: Sequence[SummaryJudgement], *, source: str = "annotations") -> None:
    """Refuse annotations whose sentences are not sentences of the summaries they are scored with.

    An annotated sentence matches when it is, verbatim, one of the sentences the summary
    splits into (NLTK Punkt, as the judge splits). Up to :data:`MAX_UNMATCHED_SHARE` of the
    annotated sentences may be unmatched (the release's own leftovers of its cleaning pass).

    Raises:
        InputError: more unmatched sentences than that, with the count.
    """
    total = unmatched = 0
    for judgement in judgements:
        if judgement.summary is None:
            continue
        sentences = set(split_sentences(judgement.summary, lang=detect_lang(judgement.summary)))
        total += len(judgement.sentences)
        unmatched += sum(1 for j in judgement.sentences if j.sentence not in sentences)
    if unmatched and unmatched > MAX_UNMATCHED_SHARE * total:
        raise InputError(
            f"{source}: {unmatched} of {total} annotated sentences do not occur in the summaries "
            f"(at most {MAX_UNMATCHED_SHARE:.0%} may); the annotations belong to other summaries: "
            "pass the summaries file they were made from"
        )


def _pairs(entries: Any, *, source: str) -> list[tuple[str, Any]]:
    """``(sentence, annotation)`` pairs of a per-sentence object or of a span list."""
    if not entries:
        return []
    if isinstance(entries, dict):
        return list(entries.items())
    pairs = []
    for item in entries:
        if not isinstance(item, dict) or not isinstance(item.get("span"), str):
            raise InputError(f"{source}: each item must be an object with a 'span' string")
        pairs.append((item["span"], item))
    return pairs


def _per_sentence(
    book: str, summary: str, entries: Iterable[tuple[str, Any]], *, source: str
) -> SummaryJudgement:
    sentences = split_sentences(summary, lang=detect_lang(summary))
    positions: dict[str, list[int]] = {}
    for i, sentence in enumerate(sentences):
        positions.setdefault(sentence, []).append(i)
    judged = []
    for sentence, entry in entries:
        slots = positions.get(sentence)
        index = slots.pop(0) if slots else -1
        judged.append(_entry(sentence, entry, index=index, where=f"{source}[{book!r}]"))
    judged.sort(key=lambda j: (j.index < 0, j.index))
    return SummaryJudgement(book=book, n_sentences=len(sentences), sentences=tuple(judged), summary=summary)


def _batched(book: str, entries: Mapping[str, Any], *, summary: str | None, source: str) -> SummaryJudgement:
    judged = []
    for position, (sentence, entry) in enumerate(entries.items()):
        num = entry.get("sentence_num") if isinstance(entry, dict) else None
        index = num - 1 if isinstance(num, int) and num >= 1 else position
        judged.append(_entry(sentence, entry, index=index, where=f"{source}[{book!r}]"))
    return SummaryJudgement(book=book, n_sentences=len(entries), sentences=tuple(judged), summary=summary)


def carries_annotations(path: Path) -> bool:
    """Whether ``path`` is a JSON annotations file that carries its own summaries (human format)."""
    path = Path(path)
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    return summaries_in(load_json(path, what="annotations")) is not None


def _flat(text: str) -> str:
    return " ".join(text.split())


def _human_file(data: Mapping[str, Any], *, summaries: Mapping[str, str] | None, source: str) -> list[SummaryJudgement]:
    """Judgements of a human-annotations file; ``summaries``, when given, must be the file's own."""
    carried = summaries_in(data) or {}
    if len(carried) != len(data):
        bad = next(book for book in data if book not in carried)
        raise InputError(f"{source}: the entry of {bad!r} has no 'summary' string (human annotations format)")
    if summaries is not None:
        missing = sorted(set(summaries) - set(carried)) or sorted(set(carried) - set(summaries))
        differ = [book for book in carried if book in summaries and _flat(summaries[book]) != _flat(carried[book])]
        if missing or differ:
            raise InputError(
                f"{source} carries its own summaries and {len(missing)} book(s) are missing from one side "
                f"and {len(differ)} summary(ies) differ from the summaries given; score the file alone"
            )
    return [_human(book, entry, source=f"{source}[{book!r}]") for book, entry in data.items()]


def _human(book: str, entry: Mapping[str, Any], *, source: str) -> SummaryJudgement:
    summary: str = entry["summary"]
    sentences = split_sentences(summary, lang=detect_lang(summary))
    singles, relations = entry.get("singles") or [], entry.get("relations") or []
    if not isinstance(singles, list) or not isinstance(relations, list):
        raise InputError(f"{source}: 'singles' and 'relations' must be lists")
    judged = []
    for item in [*singles, *relations]:
        if not isinstance(item, dict):
            raise InputError(f"{source}: each single or relation must be an object")
        spans: list[str] = [v for k in ("span", "span_a", "span_b") if isinstance(v := item.get(k), str)]
        if not spans:
            raise InputError(f"{source}: a single or relation has no 'span' / 'span_a' string")
        questions = _questions(item.get("questions", item.get("shared_questions")))
        types = _types(item.get("labels", item.get("shared_labels")), where=source)
        if not questions and not types:  # the original counts every entry as confusing
            questions = "(annotated without questions or labels)"
        index = _span_index(spans[0], sentences)
        text = " / ".join(spans)
        judged.append(SentenceJudgement(index=index, sentence=text, questions=questions, types=types))
    judged.sort(key=lambda j: (j.index < 0, j.index))
    return SummaryJudgement(book=book, n_sentences=len(sentences), sentences=tuple(judged), summary=summary)


def _span_index(span: str, sentences: Sequence[str]) -> int:
    """The sentence where ``span`` starts (-1 if none holds its beginning)."""
    head = _flat(span)[:60]
    for i, sentence in enumerate(sentences):
        flat = _flat(sentence)
        if head in flat or (flat and head.startswith(flat[:60])):
            return i
    return -1


def read_annotations(
    path: Path,
    *,
    summaries: Mapping[str, str] | None = None,
    fmt: AnnotationFormat | None = None,
    allow_partial: bool = False,
) -> list[SummaryJudgement]:
    """Read a release annotations file (format detected unless ``fmt`` is given).

    Raises:
        InputError: unreadable or malformed file, books that do not match the summaries, or
            partial annotations (unless ``allow_partial``).
    """
    data = load_json(path, what="annotations")
    return judgements_from_release(data, summaries=summaries, fmt=fmt, source=str(path),
                                   allow_partial=allow_partial)


def to_release(judgements: Iterable[SummaryJudgement], *, fmt: AnnotationFormat) -> dict[str, Any]:
    """The release object for ``judgements``: per-sentence (confusing only) or batched v2 (all)."""
    out: dict[str, Any] = {}
    for summary in judgements:
        if fmt == "sentence":
            entries: dict[str, Any] = {}
            for j in summary.sentences:
                if j.unparseable:
                    entries[j.sentence] = {"questions": None, "types": None, "unparseable": True}
                elif j.confusing:
                    entries[j.sentence] = {"questions": j.questions, "types": list(j.types)}
            out[summary.book] = entries or None
        elif fmt == "batched":
            entries = {}
            for j in summary.sentences:
                entry: dict[str, Any] = {
                    "sentence_num": j.index + 1,
                    "sentence": j.sentence,
                    "questions": j.questions if j.confusing else None,
                    "types": ", ".join(j.types) if j.confusing and j.types else None,
                }
                if j.unparseable:
                    entry["unparseable"] = True
                entries.setdefault(j.sentence, entry)
            out[summary.book] = entries
        else:
            raise InputError(f"annotations are written as 'sentence' or 'batched', not {fmt!r}")
    return out


def write_annotations(path: Path, judgements: Iterable[SummaryJudgement], *, fmt: AnnotationFormat) -> None:
    """Write ``judgements`` to ``path`` in the release format ``fmt``."""
    write_json_atomic(path, to_release(judgements, fmt=fmt))
