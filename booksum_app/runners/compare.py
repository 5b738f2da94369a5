"""Compare strategies on a book set (``booksum compare`` job 2; BooookScore §5, Table 2).

Runs every configuration of an :class:`~booksum_app.runners.experiment.Experiment` on every
book, scores every summary (BooookScore judge + n-gram statistics) and aggregates one row per
configuration; precomputed summary sets (the BooookScore release) join the same rows.

- Concurrency: up to ``jobs`` books at once; the configurations of one book run one after
  another on its worker (so identical requests of two configurations never race past the
  cache), and every call of a model shares one client (its concurrency bound holds across
  books). hier's level-0 calls still run concurrently inside each summary.
- Resumability: each (configuration, book) record is written atomically to
  ``OUT/records/<config-slug>/<book-stem>.json`` as soon as it is done, with a job key
  (strategy, model, chunk size, G, prompts and their hashes, language, options, book bytes)
  in ``extra["compare"]``. A rerun reuses records whose key matches and replays unfinished
  work from the call cache, so no LLM call is repeated; judge calls go through the cache too.
- Pre-flight and job identity: :mod:`booksum_app.runners.compare_plan`; outputs and the
  row values: :mod:`booksum_app.runners.compare_results`; plots: :mod:`booksum_app.runners.plots`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import multiprocessing
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from booksum_app.chunking import resolve_lang
from booksum_app.chunking.memo import ChunkMemo
from booksum_app.files import available_cores
from booksum_app.llm.base import ChatModel, Tally
from booksum_app.llm.context import call_context, default_context
from booksum_app.llm.metered import Metered
from booksum_app.llm.registry import (
    DEMO_JUDGE_WARNING,
    NO_JUDGE_NOTE,
    LLMSettings,
    choose_model,
    get_model,
)
from booksum_app.runners.compare_plan import (
    BookContext,
    check_grid_ready,
    finished_record,
    judge_string,
    needs_judge,
    open_context,
    record_path,
    run_config,
)
from booksum_app.runners.compare_report import write_compare_report
from booksum_app.runners.compare_results import (
    BookResult,
    CompareResult,
    ConfigResult,
    split_release_name,
    write_results,
)
from booksum_app.runners.compare_scores import read_scores, scores_key, scores_path, write_scores
from booksum_app.runners.datasets import Sample, load_samples, sample_run, score_sample
from booksum_app.runners.experiment import Experiment, GridConfig, PrecomputedSet
from booksum_app.runners.progress import GridProgress, GridSnapshot
from booksum_app.runners.summarize import CountingModel, run_summary
from booksum_app.runners.workers import background_worker
from booksum_app.scoring.aggregate import DEFAULT_BOOTSTRAP_SEED, aggregate
from booksum_app.scoring.booookscore import BooookScoreJudge, split_summary
from booksum_app.scoring.buckets import dataset_scores
from booksum_app.scoring.detectors import SourceIndex, detect_failures
from booksum_app.scoring.judgement import SummaryJudgement
from booksum_app.scoring.ngrams import SourceGrams, ngram_stats, source_ngrams, summarize_ngrams
from booksum_app.scoring.release import read_summaries
from booksum_app.scoring.results import score_annotations
from booksum_app.strategies import get_strategy
from booksum_app.strategies.record import tally_of, write_record

# ---- running -------------------------------------------------------------------------------


def run_compare(
    exp: Experiment,
    settings: LLMSettings | None = None,
    *,
    progress: GridProgress | None = None,
    models: Mapping[str | None, ChatModel] | None = None,
    judge_model: ChatModel | None = None,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    plots: bool = True,
    chunk_memo: ChunkMemo | None = None,
) -> CompareResult:
    """Run, score and write the whole comparison; returns the rows of the table.

    ``models`` / ``judge_model`` replace the clients built from model strings (tests, dry runs);
    ``plots`` writes ``OUT/plots/*.png|svg`` (needs matplotlib); ``chunk_memo`` holds the cuts
    :func:`~booksum_app.runners.compare_plan.plan_grid` made, so books are not chunked twice.

    Raises:
        ConfigError, BookFormatError, ModelError, CostLimitExceeded, InputError.
    """
    started = time.perf_counter()
    if plots:  # fail before spending anything
        from booksum_app.runners.plots import require_matplotlib

        require_matplotlib()
    grid_run = _GridRun(exp, settings or LLMSettings(), progress or GridProgress(), models, judge_model, seed,
                        chunk_memo if chunk_memo is not None else ChunkMemo())
    try:
        with default_context():  # one run id for the whole grid in ``booksum logs``
            rows = grid_run.run()
    finally:
        grid_run.close()
    result = CompareResult(
        rows=tuple(rows), out=Path(exp.out), wall_s=time.perf_counter() - started,
        judge=grid_run.judge.info.name if grid_run.judge is not None else None, judge_notice=grid_run.notice,
        reused=grid_run.reused(),
    )
    files = write_results(result, exp.out)
    files.append(write_compare_report(result, exp.out))  # the same page as score --report
    if plots:
        from booksum_app.runners.plots import write_plots

        files += write_plots(result.rows, Path(exp.out) / "plots")
    return dataclasses.replace(result, files=tuple(files))


class _GridRun:
    """One comparison: the clients and judge, every (book, configuration) job, and the rows."""

    def __init__(self, exp: Experiment, settings: LLMSettings, progress: GridProgress,
                 models: Mapping[str | None, ChatModel] | None, judge_model: ChatModel | None, seed: int,
                 chunk_memo: ChunkMemo) -> None:
        self.exp, self.settings, self.progress, self.seed = exp, settings, progress, seed
        self.chunk_memo = chunk_memo
        self.owned: list[Any] = []
        self.samples = {s.key: s for s in load_samples(exp)}  # datasets: read and checked before any call
        self.clients: dict[str | None, ChatModel] = {}
        if models is None and judge_model is None:  # every key and install before the first model loads
            check_grid_ready(exp, settings)
        calls = any(get_strategy(s).calls_model for s in exp.strategies)  # else a token counter is the model
        for m in exp.models if exp.books or self.samples else ():
            client = models[m] if models is not None and m in models else self._own(get_model(
                m, settings=settings, on_call=progress.on_call)) if calls else CountingModel(
                choose_model(m, settings=settings).info)
            self.clients[m] = client
            progress.attach(client)
        names = {m: c.info.name for m, c in self.clients.items()}
        self.grid = exp.grid(lambda m: names[m])
        self.by_name = {name: m for m, name in names.items()}
        self.judge, self.notice = self._choose_judge(judge_model)
        self.sources: dict[str, SourceGrams] = {}
        self.source_jobs: dict[str, Future[SourceGrams]] = {}
        self.copy_indexes: dict[str, SourceIndex] = {}
        # precomputed sets are read once, here, before any call: a bad file fails early
        self.precomputed = {p.name: read_summaries(p.summaries) for p in exp.precomputed}
        # a book's n-gram sets (~10 MB for a 35K-word book) are dropped once its configurations
        # are done, so memory stays flat in the number of books (200 books: 2.2 GB when kept);
        # only the books a precomputed set summarizes keep theirs, for that set's row at the end
        self.kept_sources = {Path(k).stem.lower() for texts in self.precomputed.values() for k in texts}
        self._ngram_pool: ProcessPoolExecutor | None = None
        self._pool_wanted = False
        self.results: dict[GridConfig, dict[str, BookResult]] = {c: {} for c in self.grid}
        self.splitters: set[str] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        # Books run `jobs`-wide for the I/O-bound model calls; the CPU-bound work around them
        # (parsing and chunking a book, the n-grams of its whole text) runs at most one per core, so 40 books
        # on 2 cores do not time-slice each other into minutes (issue 14).
        self.cpu_slots = threading.BoundedSemaphore(available_cores())

    def _own(self, client: Any) -> Any:
        self.owned.append(client)
        return client

    def _choose_judge(self, judge: ChatModel | None) -> tuple[ChatModel | None, str | None]:
        exp, settings = self.exp, self.settings
        if judge is not None:
            return judge, None
        if not needs_judge(exp, settings):
            return None, NO_JUDGE_NOTE if exp.use_judge else None
        judge_str = judge_string(exp, settings)
        if judge_str in self.clients:
            judge = self.clients[judge_str]
        else:
            judge = self._own(get_model(judge_str, settings=settings, on_call=self.progress.on_call))
            self.progress.attach(judge)
        spec = getattr(judge, "spec", None)
        demo = spec is not None and spec.provider == "local" and not spec.model_id
        return judge, DEMO_JUDGE_WARNING if demo else None

    def close(self) -> None:
        for client in self.owned:
            client.close()
        if self._ngram_pool is not None:
            self._ngram_pool.shutdown(wait=False, cancel_futures=True)

    def reused(self) -> int:
        return sum(1 for c in self.grid for b in self.results[c].values() if b.reused)

    # ---- one job -------------------------------------------------------------------------

    def start_source(self, ctx: BookContext) -> None:
        """Start the book's source n-grams in a worker process, beside the book's model calls.

        NLTK's word tokenizer takes ~0.4 s of CPU per 35K-word book (6 s for War and Peace);
        in this process it would hold the GIL against the threads that drive the calls, and
        run when the summaries are done, on the grid's critical path.
        """
        kept = Path(ctx.key).stem.lower() in self.kept_sources  # a precomputed set's row reads it
        if not self._pool_wanted or ctx.key in self.source_jobs or (not kept and self._all_scored(ctx)):
            return  # a book whose every score is stored needs no n-grams (a merge, a finished rerun)
        with self.lock:
            if self._ngram_pool is None:
                # one worker per core, below this process's priority: it sends the paid calls. Spawn,
                # not fork: this process already runs threads (the cache's lease renewer, clients)
                self._ngram_pool = ProcessPoolExecutor(max_workers=available_cores(),
                                                       mp_context=multiprocessing.get_context("spawn"),
                                                       initializer=background_worker, initargs=(os.getpid(),))
        assert self._ngram_pool is not None
        text = ctx.book.text(include_front_matter=self.exp.include_front_matter)
        with self.lock:
            if ctx.key not in self.source_jobs:
                self.source_jobs[ctx.key] = self._ngram_pool.submit(source_ngrams, text, lang=ctx.lang)

    def copy_index_of(self, ctx: BookContext) -> SourceIndex:
        """The book's 8-gram index for the copying detector, built once per book."""
        if ctx.key not in self.copy_indexes:
            with self.cpu_slots:
                text = ctx.book.text(include_front_matter=self.exp.include_front_matter)
                index = SourceIndex.build(text, lang=ctx.lang)
            with self.lock:
                self.copy_indexes.setdefault(ctx.key, index)
        return self.copy_indexes[ctx.key]

    def source_of(self, ctx: BookContext) -> SourceGrams:
        if ctx.key not in self.sources:  # once per book, reused by every configuration of the book
            job = self.source_jobs.get(ctx.key)
            if job is not None:
                self.sources[ctx.key] = job.result()
            else:
                with self.cpu_slots:
                    text = ctx.book.text(include_front_matter=self.exp.include_front_matter)
                    self.sources[ctx.key] = source_ngrams(text, lang=ctx.lang)
        return self.sources[ctx.key]

    def run_book(self, rank: int, unit: Path | Sample) -> None:
        with self.cpu_slots:
            ctx = open_context(unit, self.exp) if isinstance(unit, Path) else BookContext(
                unit.path, unit.book, unit.lang, unit.sha256)
        self.start_source(ctx)
        try:
            # its summaries and its judge calls alike; an earlier book's calls first
            with call_context(book=ctx.key, rank=rank):
                self._run_configs(ctx)
        finally:
            self._forget(ctx)

    def _forget(self, ctx: BookContext) -> None:
        with self.lock:
            self.copy_indexes.pop(ctx.key, None)
            job = self.source_jobs.pop(ctx.key, None)
            if job is not None:
                job.cancel()  # a book that failed before its n-gram statistics: no work for nothing
            if Path(ctx.key).stem.lower() not in self.kept_sources:
                self.sources.pop(ctx.key, None)

    def _run_configs(self, ctx: BookContext) -> None:
        for config in self.grid:
            if self.stop.is_set():
                return
            label = f"{ctx.path.stem} · {config.slug}"
            result = self.run_one(config, ctx, label)
            with self.lock:
                self.results[config][ctx.key] = result
            self.progress.finish(label, reused=result.reused, config=config.slug)

    def _job(self, config: GridConfig, ctx: BookContext) -> tuple[Sample | None, Any, str]:
        """The sample (None for a book), the run configuration and its job key."""
        sample = self.samples.get(ctx.key)  # None for a book (names are checked apart by load_samples)
        run = sample_run(run_config(config, self.exp.for_job(
            config, max_summary_tokens=sample.max_new_tokens if sample else None), ctx.lang), sample)
        return sample, run, run.job_key(book_sha256=ctx.sha256, chunk_size=config.chunk_size,
                                        thinking=self.settings.thinking)

    def _scores_key(self, key: str) -> str:
        judge = self.judge.info.name if self.judge is not None and self.exp.use_judge else None
        return scores_key(key, judge=judge, mode=self.exp.judge_mode, batch_size=self.exp.batch_size)

    def _all_scored(self, ctx: BookContext) -> bool:
        """Whether every configuration of the book has a finished record and its stored scores."""
        for config in self.grid:
            sample, _, key = self._job(config, ctx)
            if sample is not None or finished_record(record_path(self.exp.out, config, ctx.path), key) is None:
                return False
            if read_scores(scores_path(self.exp.out, config.slug, ctx.path), self._scores_key(key)) is None:
                return False
        return True

    def run_one(self, config: GridConfig, ctx: BookContext, label: str) -> BookResult:
        exp, progress = self.exp, self.progress
        sample, run, key = self._job(config, ctx)
        target = record_path(exp.out, config, ctx.path)
        client = self.clients[self.by_name[config.model]]
        record = finished_record(target, key)
        reused = record is not None
        if record is None:
            progress.stage(label, "summarizing")
            record = run_summary(ctx.book, run, chat=client, cpu_gate=self.cpu_slots,
                                 chunk_memo=(self.chunk_memo, ctx.sha256),
                                 on_progress=lambda e: progress.stage(label, f"{e.stage} {e.done}/{e.total}"))
            extra = {**record.extra, "compare": {"job_key": key, "config": config.slug, "book_sha256": ctx.sha256}}
            record = dataclasses.replace(record, extra=extra)
            write_record(record, target)
        stored_at, skey = scores_path(exp.out, config.slug, ctx.path), self._scores_key(key)
        stored = read_scores(stored_at, skey) if reused and sample is None else None
        if stored is not None:  # measured when the record was made (here or in a shard): read, not redone
            if self.judge is not None and exp.use_judge:
                with self.lock:
                    self.splitters.add(split_summary(record.summary)[1])
            if Path(ctx.key).stem.lower() in self.kept_sources:
                self.source_of(ctx)  # a precomputed set's row reads this book's n-grams
            return dataclasses.replace(stored, record_path=str(target), reused=True)
        judgement, judge_usage = self.judge_one(ctx.key, record.summary, label)
        progress.stage(label, "n-gram statistics")
        result = BookResult(
            book=ctx.key, summary=record.summary,
            ngrams=ngram_stats(record.summary, source=self.source_of(ctx), lang=ctx.lang),
            judgement=judgement, record_path=str(target), signature=record.signature,
            usage=tally_of(record.calls, client.info), judge_usage=judge_usage, wall_s=record.totals.wall_s,
            reused=reused, rouge=score_sample(sample, record.summary) if sample else None,
            failures=detect_failures(record.summary, source=self.copy_index_of(ctx), lang=ctx.lang,
                                     requested_tokens=run.max_summary_tokens, count_tokens=client.count_tokens),
        )
        if sample is None:
            write_scores(stored_at, skey, result)
        return result

    def judge_one(self, key: str, summary: str, label: str) -> tuple[SummaryJudgement | None, Tally]:
        if self.judge is None or not self.exp.use_judge:
            return None, Tally()
        self.progress.stage(label, "judging")
        metered = Metered(self.judge)
        scorer = BooookScoreJudge(metered, mode=self.exp.judge_mode, batch_size=self.exp.batch_size)  # type: ignore[arg-type]
        judgement = scorer.judge({key: summary})[0]
        with self.lock:
            self.splitters.add(split_summary(summary)[1])
        return judgement, metered.tally

    # ---- the whole grid ----------------------------------------------------------------------

    def run(self) -> list[ConfigResult]:
        exp = self.exp
        units: list[Path | Sample] = [*exp.books, *self.samples.values()]
        self._pool_wanted = len(units) > 1 and available_cores() > 1  # started by the first book to need it
        self.progress.start(len(self.grid) * len(units), {c.slug: len(units) for c in self.grid})
        errors: list[BaseException] = []
        pool = ThreadPoolExecutor(max_workers=max(1, min(exp.jobs, len(units) or 1)), thread_name_prefix="booksum-book")
        try:
            # each book's worker runs in a copy of this context: its calls keep the run id
            futures = [pool.submit(contextvars.copy_context().run, self.run_book, rank, unit)
                       for rank, unit in enumerate(units)]
            for future in futures:
                try:
                    future.result()
                except Exception as exc:  # noqa: BLE001 - re-raised below; stop the other books, keep their finished records
                    self.stop.set()
                    errors.append(exc)
        except BaseException:  # Ctrl-C: start nothing new; summaries in progress finish into the cache
            self.stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        if errors:
            raise errors[0]
        judge_signature = None
        if self.judge is not None:
            judge_signature = BooookScoreJudge(self.judge, mode=exp.judge_mode,  # type: ignore[arg-type]
                                               batch_size=exp.batch_size).signature(sorted(self.splitters) or None)
        rows = [_grid_row(c, exp, self.results[c], judge_signature, self.seed, self.samples) for c in self.grid]
        rows += [_precomputed_row(p, self.precomputed[p.name], exp, self.judge, self.sources, self.seed)
                 for p in exp.precomputed]
        return rows


def _grid_row(config: GridConfig, exp: Experiment, by_book: Mapping[str, BookResult],
              judge_signature: str | None, seed: int, samples: Mapping[str, Sample]) -> ConfigResult:
    books = tuple(by_book[k] for k in [*(p.name for p in exp.books), *samples] if k in by_book)
    judgements = [b.judgement for b in books if b.judgement is not None]
    return ConfigResult(
        name=config.slug, kind="run", model=config.model, strategy=config.strategy,
        chunk_size=config.chunk_size, books=books,
        booookscore=aggregate(judgements, seed=seed) if judgements else None,
        booookscore_signature=judge_signature if judgements else None,
        ngrams=summarize_ngrams(b.ngrams for b in books), template=config.template,
        datasets=dataset_scores([b.rouge for b in books if b.rouge is not None]),
    )


def _precomputed_row(pre: PrecomputedSet, summaries: Mapping[str, str], exp: Experiment, judge: ChatModel | None,
                     sources: Mapping[str, SourceGrams], seed: int) -> ConfigResult:
    judgements: dict[str, SummaryJudgement] = {}
    signature = None
    judge_usage: dict[str, Tally] = {}
    system = None
    if pre.annotations is not None:
        scored = score_annotations(pre.annotations, summaries=summaries, seed=seed)
        judgements = {j.book: j for j in scored.summaries}
        signature, system = scored.signature, scored.system
    elif judge is not None and exp.use_judge:
        for book, text in summaries.items():
            metered = Metered(judge)
            scorer = BooookScoreJudge(metered, mode=exp.judge_mode, batch_size=exp.batch_size)  # type: ignore[arg-type]
            judgements[book] = scorer.judge({book: text})[0]
            judge_usage[book] = metered.tally
            signature = scorer.signature()
        system = aggregate(list(judgements.values()), seed=seed)
    by_stem = {Path(k).stem.lower(): v for k, v in sources.items()}
    books = tuple(
        BookResult(book=book, summary=text,
                   ngrams=ngram_stats(text, source=by_stem.get(Path(book).stem.lower())),
                   judgement=judgements.get(book), judge_usage=judge_usage.get(book, Tally()),
                   failures=detect_failures(text, lang=resolve_lang(None, text=text)))  # source not kept: no copying
        for book, text in summaries.items()
    )
    model, chunk, strategy = split_release_name(pre.name)
    return ConfigResult(
        name=pre.name, kind="precomputed", model=model, strategy=strategy, chunk_size=chunk, books=books,
        booookscore=system, booookscore_signature=signature,
        ngrams=summarize_ngrams(b.ngrams for b in books), source=str(pre.summaries),
    )


__all__ = [
    "GridProgress",
    "GridSnapshot",
    "run_compare",
]
