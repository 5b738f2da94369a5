"""Score sets of summaries (``booksum score``): BooookScore, n-gram statistics, ROUGE-L; write outputs.

Each SUMMARIES path is one *system*: a ``{book: summary}`` JSON (BooookScore release format),
one booksum summary record (``*.json`` with a ``summary`` / ``final_summary`` string), a
directory of such records and/or ``.txt`` / ``.md`` files (one summary per file), or a single
text file. A summary's book key is the record's ``book.source_path`` file name (so it matches
release keys such as ``yellowface.epub``), else its ``book.title``, else the file name.

BooookScore comes from ``--annotations`` files (no LLM call) or from the judge model; the
n-gram statistics follow. Sources (``--source``) are matched to summaries by file-name
stem, references (``--references``) by key or stem. Nothing here prints; the CLI renders the
returned :class:`ScoreRun`.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from booksum_app.config import DEFAULT_BATCH_SIZE, JudgeMode
from booksum_app.errors import BooksumError, InputError
from booksum_app.llm.base import ChatModel
from booksum_app.llm.calls import CallRecord, Client
from booksum_app.llm.context import default_context
from booksum_app.llm.metered import Metered
from booksum_app.llm.origin import replay_note
from booksum_app.llm.registry import (
    DEMO_JUDGE_WARNING,
    NO_JUDGE_NOTE,
    LLMSettings,
    choose_judge,
    choose_model,
    get_model,
    is_demo_model,
)
from booksum_app.llm.startup import check_ready
from booksum_app.runners import score_inputs as inputs
from booksum_app.runners.judge_plan import JudgePlan, plan_judge
from booksum_app.runners.notes import cut_answers_note
from booksum_app.runners.score_inputs import (
    load_summaries,
    source_index,
    stem,
    system_name,
)
from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED, aggregate
from booksum_app.scoring.booookscore import (
    DEFAULT_MAX_ATTEMPTS,
    BooookScoreJudge,
)
from booksum_app.scoring.detectors import SourceIndex, detect_failures, summarize_failures
from booksum_app.scoring.ngrams import ngram_stats, source_ngrams, summarize_ngrams
from booksum_app.scoring.release import (
    PartialAnnotationsWarning,
    carries_annotations,
)
from booksum_app.scoring.results import (
    BooookScoreResult,
    CallTotals,
    SummaryRow,
    SystemScores,
    score_annotations,
)
from booksum_app.scoring.rouge import (
    DEFAULT_ROUGE_VARIANT,
    FAILED_CALL_MARKERS,
    RougeScore,
    check_variant,
    failed_call,
    rouge_l,
    rouge_signature,
)

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ScoreSettings:
    """Options of one scoring run (the CLI builds this from its flags)."""

    judge: str | None = None  # model string; None: the configured default model
    use_judge: bool = True  # False: n-gram statistics (and ROUGE-L) only
    mode: JudgeMode = "sentence"
    batch_size: int = DEFAULT_BATCH_SIZE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    annotations: tuple[Path, ...] = ()  # one per SUMMARIES path, in order
    source: Path | None = None
    references: Path | None = None
    rouge_variant: str = DEFAULT_ROUGE_VARIANT  # scoring/rouge.py: rouge-score, clongeval or cnnsum
    allow_partial: bool = False  # score annotations covering part of the summaries (with a note)
    chapters: bool = False  # a ``summarize --chapters`` output: each chapter summary is a row too
    llm: LLMSettings = field(default_factory=LLMSettings)
    seed: int = DEFAULT_BOOTSTRAP_SEED

    def __post_init__(self) -> None:  # the library takes str or Path wherever it takes a path
        object.__setattr__(self, "annotations", tuple(Path(p) for p in self.annotations))
        for name in ("source", "references"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))


@dataclass(frozen=True)
class ScoreRun:
    """The result of ``booksum score``: one :class:`SystemScores` per SUMMARIES path, plus notes."""

    systems: tuple[SystemScores, ...]
    notes: tuple[str, ...] = ()  # one-line warnings for the user (unmatched sources, ...)
    judge_servers: Mapping[str, Any] | None = None  # the judge's server(s), identity, deployment (llm/origin.py)
    judge_notice: str | None = None
    schema_version: int = SCHEMA_VERSION


# ---- inputs ------------------------------------------------------------------------------


def _score_sources(
    settings: ScoreSettings, loaded: Sequence[tuple[Path, Mapping[str, str]]]
) -> tuple[tuple[Path, ...], str | None]:
    """Where the BooookScores come from: annotation files (given, or carried by the summaries) or a judge."""
    self_annotated = settings.judge is None and settings.use_judge and all(carries_annotations(p) for p, _ in loaded)
    annotations = settings.annotations or (tuple(p for p, _ in loaded) if self_annotated else ())
    judge = None
    if not annotations and settings.use_judge:
        judge = choose_judge(settings.judge, settings=settings.llm)
    return tuple(annotations), judge


def plan_score(paths: Sequence[str | os.PathLike[str]], settings: ScoreSettings = ScoreSettings()) -> JudgePlan | None:
    """The judge's pre-flight plan for :func:`run_score` with the same arguments; None when no judge runs.

    Raises:
        InputError, ConfigError: as :func:`run_score`, before any call.
    """
    loaded = [(Path(p), load_summaries(Path(p), chapters=settings.chapters)) for p in paths]
    annotations, judge = _score_sources(settings, loaded)
    if annotations or judge is None:
        return None
    texts = {f"{n}/{book}": text for n, (_, summaries) in enumerate(loaded) for book, text in summaries.items()}
    return plan_judge(texts, judge=judge, mode=settings.mode, batch_size=settings.batch_size, settings=settings.llm)


def check_judge_ready(settings: ScoreSettings) -> None:
    """The judge's key and install (``llm/startup.py``), before it is asked about or loaded; a plan needs neither."""
    judge = choose_judge(settings.judge, settings=settings.llm) if settings.use_judge else None
    if judge is not None:
        check_ready([choose_model(judge, settings=settings.llm)], settings=settings.llm)


def run_score(
    paths: Sequence[str | os.PathLike[str]],
    settings: ScoreSettings = ScoreSettings(),
    *,
    on_call: Callable[[CallRecord], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    model: ChatModel | None = None,
) -> ScoreRun:
    """Score every SUMMARIES path (one system each) as ``settings`` says.

    ``model`` replaces the judge model built from ``settings.judge`` (tests, dry runs).

    Raises:
        InputError: unreadable summaries, annotations, sources or references.
        ConfigError: bad options or model string.
        ModelError / CostLimitExceeded: the judge failed or would pass --max-cost.
    """
    if not paths:
        raise InputError("no SUMMARIES given; pass a summaries JSON, a directory or text files")
    if settings.annotations and len(settings.annotations) != len(paths):
        raise InputError(
            f"{len(settings.annotations)} --annotations file(s) for {len(paths)} SUMMARIES; "
            "give one annotations file per summaries path, in the same order"
        )
    stage = on_stage or (lambda _: None)
    notes: list[str] = []
    loaded = [(Path(p), load_summaries(Path(p), notes, chapters=settings.chapters)) for p in paths]
    annotations, judge_name = _score_sources(settings, loaded)
    references = inputs.references(settings.references) if settings.references else None
    check_variant(settings.rouge_variant)
    index = source_index(settings.source) if settings.source else None
    built: Client | None = None  # a judge we build, and so close
    notice = None
    demo_judge = False
    if not annotations and settings.use_judge and model is None:
        if judge_name is None:
            notice = NO_JUDGE_NOTE
        else:
            demo_judge = is_demo_model(judge_name, settings=settings.llm)
            check_ready([choose_model(judge_name, settings=settings.llm)], settings=settings.llm)
            built = get_model(judge_name, settings=settings.llm, on_call=on_call)
            notice = DEMO_JUDGE_WARNING if demo_judge else None
    judge_model: ChatModel | None = model if model is not None else built
    try:
        with default_context():  # one run id for every judge call, in ``booksum logs``
            systems = []
            for n, (path, summaries) in enumerate(loaded):
                name = system_name(path)
                booookscore: BooookScoreResult | None = None
                totals = CallTotals()
                if annotations:
                    stage(f"{name}: reading annotations")
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", PartialAnnotationsWarning)
                        booookscore = score_annotations(annotations[n], summaries=summaries, seed=settings.seed,
                                                        allow_partial=settings.allow_partial)
                    notes.extend(str(w.message) for w in caught if issubclass(w.category, PartialAnnotationsWarning))
                elif judge_model is not None:
                    stage(f"{name}: judging {len(summaries)} summaries")
                    booookscore, totals, judge_notes = _judge_system(judge_model, summaries, settings,
                                                                     demo_judge=demo_judge)
                    notes.extend(f"{name}: {note}" for note in judge_notes)
                stage(f"{name}: n-gram statistics")
                system, system_notes = _statistics(name, path, summaries, booookscore, totals, index, references,
                                                   rouge_variant=settings.rouge_variant)
                systems.append(system)
                notes.extend(system_notes)
    finally:
        if built is not None:
            built.close()  # release its connections
    servers = getattr(judge_model, "servers", None)  # the judge's server(s); answers replayed from others
    notes.extend(f"judge: {line}" for line in [replay_note(servers)] if line)
    return ScoreRun(systems=tuple(systems), notes=tuple(notes), judge_notice=notice, judge_servers=servers)


def _judge_system(
    judge_model: ChatModel, summaries: Mapping[str, str], settings: ScoreSettings, *, demo_judge: bool = False
) -> tuple[BooookScoreResult, CallTotals, list[str]]:
    """BooookScore of one system's summaries, what its judge calls cost, and notes for the user
    (sentences never answered readably; answers cut at the token limit)."""
    metered = Metered(judge_model)  # this system's share of a judge shared across systems
    start = time.perf_counter()
    judge = BooookScoreJudge(metered, mode=settings.mode, batch_size=settings.batch_size,
                             max_attempts=settings.max_attempts)
    judgements = judge.judge(summaries)
    result = BooookScoreResult(
        signature=judge.signature() + ("|warning:demo-judge" if demo_judge else ""),
        mode=settings.mode,
        summaries=tuple(judgements),
        system=aggregate(judgements, seed=settings.seed),
    )
    sentences = sum(j.n_sentences for j in judgements)
    totals = CallTotals(**dataclasses.asdict(metered.tally), wall_s=time.perf_counter() - start,
                        judged_sentences=sentences)
    unparsed, cut = sum(j.n_unparseable for j in judgements), cut_answers_note(judge.n_cut, judge.n_answers)
    notes = [(f"{unparsed} of {sentences} sentences got no readable judge answer in {settings.max_attempts} "
             "attempts; left out of BooookScore")] if unparsed else []
    return result, totals, notes + ([f"judge: {cut}"] if cut else [])


def score_texts(
    summaries: Mapping[str, str] | str | os.PathLike[str],
    *,
    judge: str | ChatModel | None = None,
    mode: JudgeMode = "sentence",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sources: str | os.PathLike[str] | None = None,
    references: Mapping[str, str] | str | os.PathLike[str] | None = None,
    rouge_variant: str = DEFAULT_ROUGE_VARIANT,
    llm_settings: LLMSettings | None = None,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    name: str = "summaries",
) -> SystemScores:
    """Every statistic ``booksum score`` computes, for one set of summaries, from Python.

    Args:
        summaries: ``{book: summary}``, or a path ``booksum score`` reads (release JSON,
            records, a directory of text files).
        judge: the BooookScore judge (a model string or a ready ChatModel); None computes
            everything but BooookScore (no model is chosen for you).
        mode: ``"sentence"`` (one call per sentence, the paper's method) or ``"batched"``.
        batch_size: sentences per call in batched mode.
        sources: a book file or a directory of them, matched to summaries by file stem: % novel
            3-grams and the copying detector.
        references: ``{book: reference}`` or a JSON/text path, for ROUGE-L.
        rouge_variant: ``"rouge-score"`` (default), ``"clongeval"`` or ``"cnnsum"`` (docs/scoring.md).
        llm_settings: how calls are made, as on the command line: ``base_url``, ``concurrency``,
            ``cache_dir``/``use_cache``, ``timeout_s``, ``max_cost_usd``.
        seed: bootstrap seed of the 95% CI.
        name: the system's name in the result.

    Returns:
        :class:`SystemScores`: ``booookscore`` (None without a judge), ``ngrams``, ``rouge_l``,
        ``failures``, ``totals`` (the judge's calls and cost), and one row per summary. Notes
        (unmatched sources, no reference found) are issued as :class:`UserWarning`. Units:
        BooookScore (``booookscore.system.score``, its CI) and ROUGE-L (``rouge_l.fmeasure``) are
        fractions in [0, 1], as rouge_score returns them (the CLI and its JSON print them x100);
        n-gram figures named ``*_pct`` are percentages (0-100), as everywhere.

    Raises:
        InputError, ConfigError, ModelError, CostLimitExceeded.
    """
    path = None if isinstance(summaries, Mapping) else Path(summaries)
    texts = dict(summaries) if isinstance(summaries, Mapping) else load_summaries(Path(summaries))
    settings = ScoreSettings(mode=mode, batch_size=batch_size, llm=llm_settings or LLMSettings(), seed=seed)
    refs = (dict(references) if isinstance(references, Mapping)
            else inputs.references(Path(references)) if references else None)
    index = source_index(Path(sources)) if sources is not None else None
    built = get_model(judge, settings=settings.llm) if isinstance(judge, str) else None
    judge_model = built if built is not None else judge if not isinstance(judge, str) else None
    booookscore, totals = None, CallTotals()
    judge_notes: list[str] = []
    try:
        if judge_model is not None:
            booookscore, totals, judge_notes = _judge_system(judge_model, texts, settings)
    finally:
        if built is not None:
            built.close()
    result, notes = _statistics(name, path or Path(name), texts, booookscore, totals, index, refs,
                                rouge_variant=check_variant(rouge_variant))
    notes = (*judge_notes, *notes)
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    return result


def _statistics(
    name: str,
    path: Path,
    summaries: Mapping[str, str],
    booookscore: BooookScoreResult | None,
    totals: CallTotals,
    index: Mapping[str, Path] | None,
    references: Mapping[str, str] | None,
    *,
    rouge_variant: str = DEFAULT_ROUGE_VARIANT,
) -> tuple[SystemScores, tuple[str, ...]]:
    """One system's statistics, and the notes for the user (sources skipped or unmatched, no references)."""
    notes: list[str] = []
    judged = {j.book: j for j in booookscore.summaries} if booookscore else {}
    refs_by_stem = {stem(k): v for k, v in references.items()} if references else {}
    rows = []
    unmatched = []
    rouge_scores: list[RougeScore] = []
    failed_calls = 0
    for book, text in summaries.items():
        source = copy_index = None
        lang = _lang_of({book: text})
        if index is not None:
            match = index.get(stem(book))
            if match is None:
                unmatched.append(book)
            else:
                try:
                    source_text = inputs.source_text(match)
                    source = source_ngrams(source_text)
                    copy_index = SourceIndex.build(source_text, lang=lang)
                except BooksumError as exc:
                    notes.append(f"{name}: source of {book!r} skipped: {exc}")
        rouge = None
        if references is not None and inputs.chapter_book(book) is None:  # a reference summarizes a book
            reference = references.get(book, refs_by_stem.get(stem(book)))
            if reference is not None and failed_call(text, rouge_variant):
                failed_calls += 1  # the benchmark's own rule: a failed API call is not a summary
            elif reference is not None:
                rouge = rouge_l(text, reference, variant=rouge_variant)
                rouge_scores.append(rouge)
        failures = detect_failures(text, source=copy_index, lang=lang)
        rows.append(SummaryRow(book=book, summary=text, judgement=judged.get(book),
                               ngrams=ngram_stats(text, source=source), rouge=rouge, failures=failures))
    if unmatched:
        notes.append(
            f"{name}: no source book for {len(unmatched)} of {len(summaries)} summaries "
            f"(e.g. {unmatched[0]!r}); % novel 3-grams uses the others"
        )
    if failed_calls:
        notes.append(f"{name}: {failed_calls} of {len(summaries)} predictions are failed API calls "
                     f"({' or '.join(FAILED_CALL_MARKERS)}); left out of ROUGE-L as CLongEval's eval.py does")
    if references is not None and not rouge_scores:
        notes.append(f"{name}: no reference matches any summary; ROUGE-L left out")
    mean_rouge = None
    if rouge_scores:
        k = len(rouge_scores)
        mean_rouge = RougeScore(
            precision=sum(r.precision for r in rouge_scores) / k,
            recall=sum(r.recall for r in rouge_scores) / k,
            fmeasure=sum(r.fmeasure for r in rouge_scores) / k,
        )
    return SystemScores(
        name=name,
        path=str(path),
        rows=tuple(rows),
        booookscore=booookscore,
        ngrams=summarize_ngrams(r.ngrams for r in rows),
        rouge_l=mean_rouge,
        rouge_signature=rouge_signature(_lang_of(summaries), rouge_variant) if mean_rouge else None,
        n_with_reference=len(rouge_scores),
        n_failed_calls=failed_calls,
        totals=totals,
        failures=summarize_failures(r.failures for r in rows if r.failures is not None),
    ), tuple(notes)


def _lang_of(summaries: Mapping[str, str]) -> str:
    from booksum_app.chunking import detect_lang

    return detect_lang(" ".join(list(summaries.values())[:3]))



__all__ = ["SCHEMA_VERSION", "ScoreRun", "ScoreSettings", "load_summaries", "plan_score", "run_score"]
