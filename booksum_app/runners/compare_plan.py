"""Pre-flight of ``booksum compare``: job identity (what a finished record must match) and the plan.

- Job key: strategy, model, chunk size, G, the prompt templates' hashes (clean prompt
  included), language, chapter/front-matter options, direct template and the book file's
  SHA-256. A record in ``OUT/records/<config-slug>/<book-stem>.json`` whose
  ``extra["compare"]["job_key"]`` matches is reused; anything else is run again (from the
  call cache when its calls were made before).
- Plan (:func:`plan_grid`): upper bounds from :func:`~booksum_app.runners.plan.plan_strategy`
  for every remaining (configuration, book), chunked with each model's tokenizer (no LLM
  call), plus the judge's predicted bill (:mod:`~booksum_app.runners.judge_plan`): summaries
  that exist (finished records, precomputed sets without annotations) are split and counted
  as the judge will send them; a summary still to write is taken to have G tokens in
  ``ceil(G / 20)`` sentences (an over-estimate for the 25-30-token sentences summaries
  usually have). Provider prompt caching is accounted; judge calls the call cache will
  replay (a finished record judged before by the same judge) are not subtracted. Large grids
  have their books cut by worker processes (:mod:`~booksum_app.runners.plan_cuts`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from booksum_app.books import Book, open_book
from booksum_app.books.plausibility import anomalies
from booksum_app.chunking import CallableTokenizer, get_tokenizer
from booksum_app.chunking.base import ChunkSpan
from booksum_app.chunking.memo import ChunkMemo, is_named
from booksum_app.config import DEFAULT_CHUNK_SIZE, DEFAULT_TEMPERATURE
from booksum_app.errors import BookFormatError, BooksumError
from booksum_app.files import file_sha256
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.providers.thinking import planned_room_tokens
from booksum_app.llm.registry import LLMSettings, choose_judge, choose_model
from booksum_app.llm.startup import check_ready
from booksum_app.runners.compare_scores import read_scores, scores_key, scores_path
from booksum_app.runners.datasets import Sample, load_samples, sample_run
from booksum_app.runners.experiment import Experiment, GridConfig
from booksum_app.runners.judge_plan import (
    DEFAULT_MAX_PLAN_COST_USD,
    JUDGE_TOKENS_PER_SENTENCE_EST,
    cache_style,
    check_cost,
    judge_estimate,
    priced,
    token_counter,
    unreplayed,
)
from booksum_app.runners.plan import plan_strategy
from booksum_app.runners.plan_cuts import CutOrder, PlanCutters
from booksum_app.runners.run_config import RunConfig, book_lang
from booksum_app.scoring.release import read_summaries
from booksum_app.strategies.record import SummaryRecord, read_record

# ---- job identity ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BookContext:
    path: Path
    book: Book
    lang: str
    sha256: str

    @property
    def key(self) -> str:
        return self.path.name


def open_context(path: Path, exp: Experiment) -> BookContext:
    book = open_book(path, include_front_matter=exp.include_front_matter)
    digest = file_sha256(path)
    return BookContext(Path(path), book, book_lang(exp.lang, book), digest)


def run_config(config: GridConfig, job: Experiment, lang: str) -> RunConfig:
    """The run one (configuration, book) gets: ``job`` is the experiment :meth:`Experiment.for_job` made for it."""
    return RunConfig(
        strategy=config.strategy,
        model=config.model,
        chunk_size=config.chunk_size or (job.chunk_sizes[0] if job.chunk_sizes else DEFAULT_CHUNK_SIZE),
        max_summary_tokens=job.max_summary_tokens,
        prompts=job.prompts,
        lang=lang,
        clean=job.clean,
        chapter_aware=job.chapter_aware,
        include_front_matter=job.include_front_matter,
        options=job.options_for(config),
        temperature=DEFAULT_TEMPERATURE if job.temperature is None else job.temperature,
    )


def job_key(config: GridConfig, job: Experiment, ctx: BookContext) -> str:
    """What a finished record must match to be reused: the configuration, prompts and book bytes."""
    return run_config(config, job, ctx.lang).job_key(book_sha256=ctx.sha256, chunk_size=config.chunk_size)


def record_path(out: Path, config: GridConfig, book: Path) -> Path:
    """``OUT/records/<config-slug>/<book-stem>.json``."""
    return Path(out) / "records" / config.slug / f"{Path(book).stem}.json"


def finished_record(path: Path, key: str) -> SummaryRecord | None:
    if not path.is_file():
        return None
    try:
        record = read_record(path)
    except BooksumError:
        return None  # half-written or foreign: run it again (the cache makes that free)
    return record if record.extra.get("compare", {}).get("job_key") == key else None


# ---- planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanLine:
    """Upper bounds for one configuration over all books still to run."""

    name: str
    books: int
    remaining: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached_input_tokens: int = 0  # of input_tokens, predicted to be read from a provider prompt cache


@dataclass(frozen=True)
class GridPlan:
    """The pre-flight plan of a comparison (summaries: upper bounds, finished records excluded; the judge's
    predicted bill, finished records included unless the call cache holds all their judge calls)."""

    lines: tuple[PlanLine, ...]  # one per configuration, plus "judge" when a judge runs
    judge: str | None
    judge_replayed_calls: int = 0  # judge calls left out: answered from the call cache
    book_warnings: tuple[str, ...] = ()  # what looks wrong in a book ("book.txt: numbered headings skip: 55→81")

    @property
    def calls(self) -> int:
        return sum(line.calls for line in self.lines)

    @property
    def input_tokens(self) -> int:
        return sum(line.input_tokens for line in self.lines)

    @property
    def output_tokens(self) -> int:
        return sum(line.output_tokens for line in self.lines)

    @property
    def cost_usd(self) -> float:
        return sum(line.cost_usd for line in self.lines)


def _resolve(exp: Experiment, settings: LLMSettings) -> dict[str | None, ModelInfo]:
    return {m: choose_model(m, settings=settings).info for m in (exp.models if exp.books or exp.datasets else ())}


_Todo = tuple[GridConfig, RunConfig, "str | None", int]  # a configuration to plan: its run, model, chunk size


def _reopened(path: Path, book_id: str, exp: Experiment) -> Book:
    """A deferred book read again when no worker cut it: refused if the file changed meanwhile."""
    ctx = open_context(path, exp)
    if ctx.sha256 != book_id:
        raise BookFormatError(f"{path.name}: the file changed while the grid was being planned; run again")
    return ctx.book


def judge_string(exp: Experiment, settings: LLMSettings | None = None) -> str | None:
    """The judge: ``--judge`` (or the experiment's ``judge``) > ``BOOKSUM_JUDGE`` > config ``judge_model``.

    None when none was chosen on purpose: as in ``score``, booksum never picks a judge (not even
    one of the grid's models, whose summaries it would then grade).
    """
    return choose_judge(exp.judge, settings=settings or LLMSettings())


def needs_judge(exp: Experiment, settings: LLMSettings | None = None) -> bool:
    wants = exp.use_judge and (bool(exp.books or exp.datasets) or any(p.annotations is None for p in exp.precomputed))
    return wants and judge_string(exp, settings) is not None


def check_grid_ready(exp: Experiment, settings: LLMSettings) -> None:
    """Keys and installs of every model the grid calls and of its judge, before any loads (llm/startup.py).

    Raises:
        MissingAPIKey, NotInstalled, ConfigError: exit 2, before anything is loaded or spent.
    """
    from booksum_app.strategies import get_strategy

    calls = bool(exp.books or exp.datasets) and any(get_strategy(s).calls_model for s in exp.strategies)
    specs = [choose_model(m, settings=settings) for m in exp.models] if calls else []
    judge = judge_string(exp, settings) if needs_judge(exp, settings) else None
    if judge is not None:
        specs.append(choose_model(judge, settings=settings))
    check_ready(specs, settings=settings)


class _SummaryPlanner:
    """The summaries' part of a plan: each book's unfinished configurations, priced from its chunks.

    With many book files (:class:`~booksum_app.runners.plan_cuts.PlanCutters`), a book's cuts
    are handed to worker processes once it is read, and its configurations priced at
    :meth:`finish`; otherwise each book is cut and priced as it is read.
    """

    def __init__(self, exp: Experiment, infos: dict[str | None, ModelInfo],
                 counters: dict[str | None, Callable[[str], int]], memo: ChunkMemo, judge: str | None = None,
                 settings: LLMSettings | None = None) -> None:
        self.exp, self.infos, self.counters, self.memo = exp, infos, counters, memo
        self.thinking = settings.thinking if settings is not None else "auto"  # part of a record's reuse key
        self.rooms = {m: planned_room_tokens(info.name, thinking=self.thinking, effort=settings.reasoning_effort)
                      if settings is not None else 0 for m, info in infos.items()}  # a thinking model's room
        self.judge = judge  # the judge's model name when one judges: stored scores under it are not judged again
        # the same counters as tokenizers: the named one itself where there is one, so its cuts are shared
        self.tokenizers = {m: get_tokenizer(info.tokenizer) if info.tokenizer != "native" else
                           CallableTokenizer(f"model:{info.name}", counters[m]) for m, info in infos.items()}
        names = {m: info.name for m, info in infos.items()}
        self.grid = exp.grid(lambda m: names[m])
        self.by_name = {name: m for m, name in names.items()}
        self.totals: dict[GridConfig, list[int | float]] = {c: [0, 0, 0, 0, 0.0] for c in self.grid}
        self.remaining = 0
        self.written: list[str] = []  # summaries of finished records: the judge judges them too
        self.cut_options = {"chapter_aware": exp.chapter_aware, "include_front_matter": exp.include_front_matter}
        self.cutters = PlanCutters.for_grid(len(exp.books),
                                            tokenizers_named=all(map(is_named, self.tokenizers.values())),
                                            **self.cut_options)
        self.ordered: dict[str, tuple[Path, set[tuple[str, int]]]] = {}  # by sha256: identical copies cut once
        self.deferred: list[tuple[str, list[_Todo]]] = []  # priced once the workers have cut their books

    def add(self, ctx: BookContext, sample: Sample | None) -> None:
        """One book (or benchmark sample): skip its finished configurations, price or defer the rest."""
        exp, todo = self.exp, []
        for config in self.grid:
            run = sample_run(run_config(config, exp.for_job(
                config, max_summary_tokens=sample.max_new_tokens if sample else None), ctx.lang), sample)
            job = run.job_key(book_sha256=ctx.sha256, chunk_size=config.chunk_size, thinking=self.thinking)
            finished = finished_record(record_path(exp.out, config, ctx.path), job)
            if finished is not None:
                key = scores_key(job, judge=self.judge,
                                 mode=exp.judge_mode, batch_size=exp.batch_size)
                if sample is not None or read_scores(scores_path(exp.out, config.slug, ctx.path), key) is None:
                    self.written.append(finished.summary)  # judged by this run (from the cache, if there)
                continue
            self.remaining += 1
            todo.append((config, run, self.by_name[config.model], config.chunk_size or max(exp.chunk_sizes)))
        cutters = self.cutters
        if cutters is not None and sample is None and todo and cutters.wanted(
                len(ctx.book.text(include_front_matter=exp.include_front_matter))):
            path, cuts = self.ordered.setdefault(ctx.sha256, (ctx.path, set()))
            new = {(self.tokenizers[m].name, size) for _, _, m, size in todo} - cuts
            if new:
                cuts |= new
                cutters.submit(CutOrder(path, ctx.sha256, tuple(sorted(new))))
            self.deferred.append((ctx.sha256, todo))
        else:
            self._price(ctx.book, ctx.sha256, todo)

    def finish(self) -> None:
        """Take the workers' cuts into the memo and price the books that waited for them."""
        if self.cutters is None:
            return
        for order, spans in self.cutters.results():
            for (name, size), book_spans in spans.items():
                self.memo.add(book_spans, book_id=order.sha256, tokenizer_name=name, chunk_size=size,
                              **self.cut_options)
        for book_id, todo in self.deferred:
            self._price(None, book_id, todo)

    def close(self) -> None:
        if self.cutters is not None:
            self.cutters.close()

    def _price(self, book: Book | None, book_id: str, todo: list[_Todo]) -> None:
        """Add one book's unfinished configurations to the totals (``book``: None when deferred)."""
        chunks: dict[tuple[str | None, int], list[int]] = {}
        cuts: dict[tuple[str | None, int], tuple[ChunkSpan, ...]] = {}
        for config, run, model, size in todo:
            if (model, size) not in chunks:
                tokenizer = self.tokenizers[model]
                spans = self.memo.known(book_id=book_id, tokenizer_name=tokenizer.name, chunk_size=size,
                                        **self.cut_options) if is_named(tokenizer) else None
                if spans is None:
                    if book is None:  # deferred, and no worker cut it
                        book = _reopened(self.ordered[book_id][0], book_id, self.exp)
                    spans = self.memo.spans(book, book_id=book_id, tokenizer=tokenizer, chunk_size=size,
                                            **self.cut_options)
                chunks[(model, size)] = [c.n_tokens for c in spans]
                cuts[(model, size)] = tuple(spans)
            plan = plan_strategy(config.strategy, chunk_tokens=chunks[(model, size)], info=self.infos[model],
                                 count_tokens=self.counters[model], config=run.strategy_config(), clean=run.clean,
                                 chapter_chunks=cuts[(model, size)] if run.per_chapter else None,
                                 reasoning_room_tokens=self.rooms[model])
            t = self.totals[config]
            t[0] = int(t[0]) + 1
            t[1] = int(t[1]) + plan.calls
            t[2] = int(t[2]) + plan.input_tokens
            t[3] = int(t[3]) + plan.output_tokens
            t[4] = float(t[4]) + plan.cost_usd


def plan_grid(exp: Experiment, settings: LLMSettings | None = None, *, chunk_memo: ChunkMemo | None = None) -> GridPlan:
    """Upper bounds on calls, tokens and dollars of what remains of ``exp``; calls no LLM.

    ``chunk_memo`` keeps where each book was cut, for the run to reuse (see
    :mod:`booksum_app.chunking.memo`).

    Raises:
        ConfigError, BookFormatError: bad options, model strings or books.
    """
    settings = settings or LLMSettings()
    infos = _resolve(exp, settings)
    counters = {m: token_counter(info, settings, m) for m, info in infos.items()}
    judging = needs_judge(exp, settings)
    judge = choose_model(judge_string(exp, settings), settings=settings).info.name if judging else None
    planner = _SummaryPlanner(exp, infos, counters, chunk_memo if chunk_memo is not None else ChunkMemo(), judge,
                              settings=settings)
    samples = {s.key: s for s in load_samples(exp)}  # benchmark datasets: samples play the part of books
    contexts = itertools.chain((open_context(p, exp) for p in exp.books),
                               (BookContext(s.path, s.book, s.lang, s.sha256) for s in samples.values()))
    warnings: list[str] = []
    try:
        for ctx in contexts:
            if ctx.key not in samples:
                found = anomalies(ctx.book, include_front_matter=exp.include_front_matter)
                warnings += [f"{ctx.key}: {line}" for line in found]
            planner.add(ctx, samples.get(ctx.key))
        planner.finish()
    finally:
        planner.close()
    totals, written, remaining_summaries = planner.totals, planner.written, planner.remaining
    lines = [PlanLine(c.slug, len(exp.books) + len(samples), int(t[0]), int(t[1]), int(t[2]), int(t[3]), float(t[4]))
             for c, t in totals.items()]
    judge_name, replayed = None, 0
    if needs_judge(exp, settings):
        judge = judge_string(exp, settings)
        info = choose_model(judge, settings=settings).info
        judge_name = info.name
        count = counters.get(judge) or token_counter(info, settings, judge)
        texts = [t for p in exp.precomputed if p.annotations is None for t in read_summaries(p.summaries).values()]
        texts, replayed = unreplayed(texts + written, judge=judge, mode=exp.judge_mode,  # type: ignore[arg-type]
                                     batch_size=exp.batch_size, settings=settings)
        j = priced(info, judge_estimate(
            count, mode=exp.judge_mode, batch_size=exp.batch_size, summaries=texts,  # type: ignore[arg-type]
            n_estimated=remaining_summaries, max_summary_tokens=exp.max_summary_tokens, style=cache_style(info),
        ))
        lines.append(PlanLine("judge", len(exp.books), remaining_summaries + len(texts), j.calls, j.input_tokens,
                              j.output_tokens, j.cost_usd, j.cached_input_tokens))
    return GridPlan(tuple(lines), judge_name, replayed, tuple(warnings))


def check_plan(plan: GridPlan, *, max_cost_usd: float, confirmed: bool, interactive: bool) -> bool:
    """Whether the grid may start without asking (see :func:`~booksum_app.runners.judge_plan.check_cost`)."""
    return check_cost(plan.cost_usd, max_cost_usd=max_cost_usd, confirmed=confirmed, interactive=interactive)


__all__ = [
    "DEFAULT_MAX_PLAN_COST_USD",
    "JUDGE_TOKENS_PER_SENTENCE_EST",
    "BookContext",
    "GridPlan",
    "PlanLine",
    "check_plan",
    "finished_record",
    "job_key",
    "judge_string",
    "needs_judge",
    "open_context",
    "plan_grid",
    "record_path",
    "run_config",
]
