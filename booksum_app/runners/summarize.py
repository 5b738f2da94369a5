"""Summarize one book: read, chunk, run a strategy, clean, and build the record.

Post-processing (BooookScore App. A.2 fn. 20, J.3, D.1) runs on the final summary of every
strategy when ``clean`` is on: the LLM artifact-removal pass, then the deterministic cleanup
(prompt echoes, stepwise phrases, sentences copied from the prompts, trailing fragment). The
record keeps both the raw and the cleaned summary.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from booksum_app.books import Book, open_book
from booksum_app.books.accounting import account
from booksum_app.books.plausibility import anomalies
from booksum_app.chunking import (
    ENCODING_NAMES,
    ESTIMATE_NAME,
    CallableTokenizer,
    Tokenizer,
    chunk_book,
    get_tokenizer,
)
from booksum_app.chunking.base import Chunk
from booksum_app.chunking.memo import ChunkMemo
from booksum_app.compression.artifacts import remove_artifacts
from booksum_app.compression.validity import CallEntry
from booksum_app.config import (
    COMPRESSION_TEMPERATURE,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
)
from booksum_app.errors import BooksumError, ConfigError, ModelError, redact, server_message
from booksum_app.files import write_json_atomic
from booksum_app.llm.base import ChatModel, Completion, ModelInfo, Request, Tally
from booksum_app.llm.calls import CallRecord, Client
from booksum_app.llm.context import default_context
from booksum_app.llm.door import environment_secrets
from booksum_app.llm.meter import Meter, metering
from booksum_app.llm.registry import LLMSettings, ModelSpec, choose_model, get_model
from booksum_app.llm.retry_policy import reasoning_room_tokens as room
from booksum_app.llm.retry_policy import thinking_mode
from booksum_app.llm.run_client import run_client
from booksum_app.llm.startup import check_ready
from booksum_app.runners.chapters import chapter_summaries
from booksum_app.runners.notes import cut_answers_note
from booksum_app.runners.plan import CallPlan, plan_strategy
from booksum_app.runners.plan_replay import CacheMiss, replayed_calls
from booksum_app.runners.progress import RunProgress
from booksum_app.runners.run_config import LANG_CHOICES, RunConfig, book_lang
from booksum_app.strategies import StrategyConfig, StrategyJob
from booksum_app.strategies.base import ProgressFn, PromptBundle, StrategyResult
from booksum_app.strategies.record import BookInfo, SummaryRecord, Totals


def default_record_path(book_path: str, strategy: str, out: Path | None) -> Path:
    """Where the JSON record goes: next to OUT, else ``./booksum-out/<stem>-<strategy>.json``."""
    if out is not None:
        return Path(out).with_suffix(".json")
    stem = Path(book_path).stem or "book"
    return Path("booksum-out") / f"{stem}-{strategy}.json"


def summarize_book(
    path_or_book: str | os.PathLike[str] | Book,
    *,
    strategy: str = "hier",
    model: str | ChatModel | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_summary_len: int | None = None,
    max_summary_tokens: int | None = None,
    prompts: str = "paper",
    lang: str = "auto",
    clean: bool = True,
    chapter_aware: bool = False,
    include_front_matter: bool = False,
    direct_template: str | None = None,
    chapters: bool = False,
    temperature: float = DEFAULT_TEMPERATURE,
    compression_temperature: float = COMPRESSION_TEMPERATURE,
    top_p: float = DEFAULT_TOP_P,
    evidence_tokens: int | None = None,
    options: Mapping[str, object] | None = None,
    llm_settings: LLMSettings | None = None,
    base_url: str | None = None,
    on_progress: ProgressFn | None = None,
    on_call: Callable[[CallRecord], None] | None = None,
    progress: RunProgress | None = None,
) -> SummaryRecord:
    """Summarize a book file (or a :class:`Book`) with one strategy and return its full record.

    Args:
        path_or_book: .epub/.pdf/.txt/.html/.md path, or an already opened Book.
        strategy: an installed strategy ("hier", "inc", "direct", or a plugin's).
        model: a model string (see ``booksum_app.llm.registry``), a ready ChatModel, or None
            for the default model.
        chunk_size: tokens per chunk (BooookScore default 2048).
        max_summary_len: G, the final summary's token budget (default 900), as the CLI's
            ``--max-summary-len``; ``max_summary_tokens`` is the same keyword's older name.
        prompts: "paper", "simple", or a directory of override templates.
        lang: "auto", "en" or "zh".
        clean: run artifact removal (LLM pass + deterministic cleanup) on the final summary.
        options: the strategy's own options by name (``--set NAME=VALUE``), e.g. hier's
            ``chapters``, direct's ``direct_template``, hier-evidence's ``evidence_tokens``.
        direct_template, chapters, evidence_tokens: those three options, as keywords.
        llm_settings: cache, concurrency, cost ceiling, server (:class:`LLMSettings`).
        base_url: an OpenAI-compatible server's URL, as the CLI's ``--base-url`` (overrides
            ``llm_settings.base_url``).

    Raises:
        ConfigError, BookFormatError, PromptError, ModelError, CostLimitExceeded.
    """
    aliases = {"direct_template": direct_template, "chapters": chapters or None, "evidence_tokens": evidence_tokens}
    if max_summary_len is not None and max_summary_tokens is not None and max_summary_len != max_summary_tokens:
        raise ConfigError(f"max_summary_len={max_summary_len} and max_summary_tokens={max_summary_tokens} "
                          "name the same budget; give one")
    budget = next((v for v in (max_summary_len, max_summary_tokens) if v is not None), DEFAULT_MAX_SUMMARY_TOKENS)
    if base_url is not None:
        llm_settings = dataclasses.replace(llm_settings or LLMSettings(), base_url=base_url)
    run = RunConfig(  # validated before the book is read or any model is loaded
        strategy=strategy, model=model if isinstance(model, str) else None, chunk_size=chunk_size,
        max_summary_tokens=budget, temperature=temperature,
        compression_temperature=compression_temperature, top_p=top_p, prompts=prompts, lang=lang, clean=clean,
        chapter_aware=chapter_aware, include_front_matter=include_front_matter,
        options={**{k: v for k, v in aliases.items() if v is not None}, **(options or {})},
    )
    return run_summary(
        path_or_book, run, chat=None if model is None or isinstance(model, str) else model,
        llm_settings=llm_settings, on_progress=on_progress, on_call=on_call, progress=progress,
    )


def run_summary(
    path_or_book: str | os.PathLike[str] | Book,
    run: RunConfig,
    *,
    chat: ChatModel | None = None,
    llm_settings: LLMSettings | None = None,
    on_progress: ProgressFn | None = None,
    on_call: Callable[[CallRecord], None] | None = None,
    progress: RunProgress | None = None,
    cpu_gate: AbstractContextManager[Any] | None = None,
    chunk_memo: tuple[ChunkMemo, str] | None = None,
    spec: ModelSpec | None = None,
    before_run: Callable[[CallPlan], None] | None = None,
) -> SummaryRecord:
    """Summarize a book under ``run`` (see :func:`summarize_book` for the keywords that build one).

    ``before_run`` gets the pre-flight plan (:func:`~booksum_app.runners.plan.plan_strategy`:
    upper bounds on calls, tokens and dollars) once the book is chunked and before the first
    model call; raising there stops the run with nothing spent (the CLI asks above
    ``--max-plan-cost`` there).

    ``chat`` is a ready model to use instead of building ``run.model``'s client (compare shares
    one client per model); the caller then closes it. ``spec`` is ``run.model`` already resolved
    (:func:`~booksum_app.llm.registry.choose_model`), so the model string is resolved once.
    ``cpu_gate`` is held while the book is
    chunked (compare: one book per core, so the first books' calls start while others chunk).
    ``chunk_memo`` is a memo and the book's id in it (its file's sha256): compare's plan has
    already cut the book, and the run takes those cuts.
    """
    book = path_or_book if isinstance(path_or_book, Book) else open_book(
        path_or_book, include_front_matter=run.include_front_matter)
    run = run.for_book(book)
    if spec is None and chat is None:
        spec = choose_model(run.model, settings=llm_settings or LLMSettings())
    if chat is None and not run.impl.calls_model and spec is not None:  # no call: the tokenizer alone, no backend
        chat = CountingModel(spec.info)
    if chat is None and spec is not None:  # its key and install, before the model loads (llm/startup.py)
        check_ready([spec], settings=llm_settings or LLMSettings())
    stage = progress.set_stage if progress is not None else None
    if stage is not None and chat is None:  # the embedded model's weights take a while to load
        name = spec.info.name if spec is not None else ""
        stage(f"loading {name}" if 0 < len(name) <= 20 else "loading the model")  # the label shows 28 chars
    model, owned = _chat_model(chat if chat is not None else spec, llm_settings, on_call=on_call, progress=progress)
    notify = _fan_out([f for f in (on_progress, progress.on_event if progress else None) if f is not None])
    label = Path(book.source_path).name if book.source_path else (book.title or None)
    try:
        with default_context(book=label):  # ``booksum logs --run/--book`` find these calls
            return _run(book, run, chat=model, on_progress=notify, cpu_gate=cpu_gate or nullcontext(),
                        on_plan=progress.set_planned_calls if progress is not None else None, chunk_memo=chunk_memo,
                        before_run=before_run, on_stage=stage)
    finally:
        if owned is not None:
            owned.close()


def _chat_model(
    model: ModelSpec | ChatModel | None, settings: LLMSettings | None, *,
    on_call: Callable[[CallRecord], None] | None, progress: RunProgress | None,
) -> tuple[ChatModel, Client | None]:
    """The model to run with, and the client to close afterwards when we built it."""
    owned: Client | None = None
    if model is None or isinstance(model, ModelSpec):
        hooks = [h for h in (on_call, progress.on_call if progress else None) if h is not None]
        owned = get_model(model, settings=settings or LLMSettings(), on_call=_fan_out(hooks))
        chat: ChatModel = owned
    else:
        chat = model
    if progress is not None:
        progress.attach(chat)
    return chat, owned


class CountingModel:
    """A :class:`ChatModel` that only counts tokens: what a strategy that calls no model runs with.

    It counts with the model's named tokenizer, or the conservative ``estimate`` when the model's
    is its own (``native``: counting with it would load the weights a no-call run never needs).
    """

    def __init__(self, info: ModelInfo) -> None:
        named = info.tokenizer if info.tokenizer in ENCODING_NAMES else ESTIMATE_NAME
        self.info = dataclasses.replace(info, tokenizer=named)
        self.tokenizer_name = named
        self._tokenizer = get_tokenizer(named)

    def count_tokens(self, text: str) -> int:
        return int(self._tokenizer.count(text))

    def complete(self, request: Request) -> Completion:
        raise ModelError(f"a strategy that declares calls_model=False asked for a {request.purpose or 'model'} call")

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]:
        return self.complete(request)  # type: ignore[return-value]  # raises

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        return [self.complete(r) for r in requests]


def _fan_out(hooks: list[Callable[[Any], None]]) -> Callable[[Any], None] | None:
    """One hook calling every hook in ``hooks`` (None when there are none)."""
    if not hooks:
        return None

    def call_all(item: Any) -> None:
        for hook in hooks:
            hook(item)

    return call_all


def _run(
    book: Book,
    run: RunConfig,
    *,
    chat: ChatModel,
    on_progress: ProgressFn | None,
    on_plan: Callable[[int, int, int], None] | None = None,
    cpu_gate: AbstractContextManager[Any],
    chunk_memo: tuple[ChunkMemo, str] | None = None,
    before_run: Callable[[CallPlan], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> SummaryRecord:
    started = time.perf_counter()
    stage = on_stage or (lambda _text: None)  # what the progress line says before the strategy's own stages
    impl, config = run.impl, run.strategy_config()
    stage("chunking the book")
    tokenizer = model_tokenizer(chat)
    with cpu_gate:
        if chunk_memo is not None:
            memo, book_id = chunk_memo
            chunks = tuple(memo.chunks(book, book_id=book_id, tokenizer=tokenizer, chunk_size=run.chunk_size,
                                       chapter_aware=run.chapter_aware, include_front_matter=run.include_front_matter))
        else:
            chunks = tuple(chunk_book(book, chunk_size=run.chunk_size, tokenizer=tokenizer,
                                      chapter_aware=run.chapter_aware, include_front_matter=run.include_front_matter))
    text = book.text(include_front_matter=run.include_front_matter)
    bundle = run.prompt_bundle()
    chapter_texts = tuple(
        (c.title, c.text) for c in book.selected_chapters(include_front_matter=run.include_front_matter)
    )
    def summarize_with(model: ChatModel, notify: ProgressFn | None) -> tuple[Any, ...]:
        result = _strategy_result(impl.name, lambda: impl.run(
            StrategyJob(chunks, text, config, chapter_texts), model=model, prompts=bundle, on_progress=notify
        ))
        extra: dict[str, Any] = dict(result.extra)  # hier-evidence: the evidence of every merge
        if run.per_chapter:
            per_chapter, chapter_calls = chapter_summaries(book, chunks, result, model=model, prompts=bundle,
                                                           config=config)
            result = dataclasses.replace(result, calls=result.calls + chapter_calls)
            extra["chapters"] = [dataclasses.asdict(c) for c in per_chapter]
        return result, extra, *_clean(result, chat=model, config=config, bundle=bundle, clean_bundle=run.clean_bundle())

    if on_plan is not None or before_run is not None:  # the plan's calls give the progress display its ETA
        planned = plan_strategy(impl.name, chunk_tokens=[c.n_tokens for c in chunks], info=chat.info,
                                count_tokens=chat.count_tokens, config=config, clean=run.clean,
                                chapter_chunks=chunks if run.per_chapter else None, reasoning_room_tokens=room(chat))
        if on_plan is not None:
            on_plan(planned.calls, planned.input_tokens, planned.output_tokens)
        if before_run is not None:
            # a rerun the call cache answers whole costs nothing (and is not asked about)
            replayed = (replayed_calls(chat, lambda model: summarize_with(model, None))
                        if impl.calls_model and planned.cost_usd > 0 else None)
            if replayed is not None:
                planned = dataclasses.replace(planned, input_tokens=0, output_tokens=0, cost_usd=0.0,
                                              replayed_calls=replayed)
            before_run(planned)
    stage("waiting for the first answer" if impl.calls_model else "summarizing")
    # the run's money is what the client billed (retries, wasted replies), from any thread, until run() returns
    with metering() as meter, _spent_on_failure(meter), run_client(chat, meter, strategy=impl.name) as model:
        result, extra, summary, calls, cleaning = summarize_with(model, on_progress)
    _client_extra(chat, extra)
    return SummaryRecord(
        strategy=impl.name,
        model=chat.info.name,
        signature=run.signature(chat.info, bundle, thinking=thinking_mode(chat)),
        config=run.record_dict(chat.info, bundle),
        book=_book_info(book, chunks, include_front_matter=run.include_front_matter),
        summary=summary,
        raw_summary=result.summary,
        nodes=result.nodes,
        calls=calls,
        totals=_totals(meter.tally, result, wall_s=time.perf_counter() - started),
        level_budgets=result.level_budgets,
        truncation=result.truncation,
        cleaning=cleaning,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        extra=extra,
    )


def _client_extra(chat: ChatModel, extra: dict[str, Any]) -> None:
    """What the record keeps of the client: its anomalies (replies with no or absurd usage), its
    limit's decisions, the server(s) it called with their identity, the deployment and the answers
    replayed from others, and where the model's context window came from."""
    limiter = getattr(chat, "limiter_report", None)  # an adaptive limit's cuts, undos, probes, time at each limit
    facts = {"call_notes": list(getattr(chat, "notes", ())), "limiter": limiter() if callable(limiter) else None,
             "servers": getattr(chat, "servers", None),
             "context_source": getattr(getattr(chat, "spec", None), "context_source", None)}
    extra.update({k: v for k, v in facts.items() if v})


def cut_note(record: SummaryRecord) -> str | None:
    """The end-of-run warning when answers of this run stopped at the token limit, else None."""
    return cut_answers_note(sum(c.finish_reason == "length" for c in record.calls), len(record.calls))


def model_tokenizer(chat: ChatModel) -> Tokenizer:
    """The tokenizer ``chat`` counts with: the named one when it uses one (so cuts made with it
    elsewhere, as by compare's plan, can be shared), else a wrapper of its own counter."""
    name = getattr(chat, "tokenizer_name", None)
    if isinstance(name, str) and name in (*ENCODING_NAMES, ESTIMATE_NAME):
        return get_tokenizer(name)
    return CallableTokenizer(f"model:{chat.info.name}", chat.count_tokens)


def _clean(
    result: StrategyResult, *, chat: ChatModel, config: StrategyConfig, bundle: PromptBundle,
    clean_bundle: PromptBundle | None,
) -> tuple[str, tuple[CallEntry, ...], dict[str, Any] | None]:
    """Artifact removal of the final summary: ``(summary, all calls, what cleaning did)``."""
    if clean_bundle is None:
        return result.summary, result.calls, None
    cleaned = remove_artifacts(
        result.summary,
        model=chat,
        template=clean_bundle["clean"],
        lang=config.lang,
        prompt_texts=[t.text for t in bundle.templates.values()],
        top_p=config.top_p,
    )
    cleaning = {
        "llm_text": cleaned.llm_text,
        "llm_rejected": cleaned.llm_rejected,
        "removed": list(cleaned.removed),
        "prompt": clean_bundle.signature,
    }
    return cleaned.cleaned, result.calls + cleaned.calls, cleaning


def write_failed_record(record_path: Path, exc: BaseException, *, run: RunConfig, model: str,
                        book: str) -> Path | None:
    """``NAME.failed.json`` beside the record a run would have written: what it paid before ``exc``
    (a booksum error, or a Ctrl-C carrying its meter in ``spent``).

    Nothing paid for is lost: the answers are in the call cache (a rerun replays them), and this
    file says what they cost. None when the run had paid nothing (or the file cannot be written).
    """
    carried = getattr(exc, "spent", None)
    spent = carried.tally if isinstance(carried, Meter) else carried
    if not isinstance(spent, Tally) or not (spent.spent_usd or spent.input_tokens):
        return None
    path = record_path.with_name(record_path.stem + ".failed.json")
    error = str(exc) if isinstance(exc, BooksumError) else "interrupted (Ctrl-C)"
    data = {"status": "failed", "error": redact(error), "strategy": run.strategy, "model": model,
            "book": redact(book),
            "totals": dataclasses.asdict(spent), "created_at": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        write_json_atomic(path, data)
    except OSError:
        return None
    return path


def _strategy_result(name: str, run: Callable[[], Any]) -> StrategyResult:
    """A strategy's result, checked: whatever a (plugin) strategy raises or returns ends in one line, exit 1."""
    try:
        result = run()
    except (BooksumError, KeyboardInterrupt, CacheMiss):  # CacheMiss: a plan's replay stopping at a miss
        raise
    except BaseException as exc:  # a plugin's bug, SystemExit included, is one line
        detail = server_message(str(exc), *environment_secrets()) or "no message"
        raise BooksumError(f"strategy {name!r} failed ({type(exc).__name__}: {detail})") from exc
    if not isinstance(result, StrategyResult):
        raise BooksumError(f"strategy {name!r} returned a {type(result).__name__}, not a StrategyResult")
    wrong = [field for field, ok in (
        ("summary", isinstance(result.summary, str)), ("nodes", isinstance(result.nodes, tuple | list)),
        ("calls", isinstance(result.calls, tuple | list)), ("extra", isinstance(result.extra, Mapping)),
    ) if not ok]
    if wrong:
        raise BooksumError(f"strategy {name!r} returned a StrategyResult whose {wrong[0]} is a "
                           f"{type(getattr(result, wrong[0])).__name__}")
    return result


@contextmanager
def _spent_on_failure(meter: Meter) -> Iterator[None]:
    """A run that fails carries its meter (``exc.spent``: what it spent) for its partial record."""
    try:
        yield
    except (BooksumError, KeyboardInterrupt) as exc:  # Ctrl-C too: its partial record says what was paid
        exc.spent = meter  # type: ignore[union-attr]  # read once the client is closed (or at a second Ctrl-C)
        raise


def _totals(tally: Tally, result: StrategyResult, *, wall_s: float) -> Totals:
    return Totals(
        **{**dataclasses.asdict(tally), "cost_usd": round(tally.cost_usd, 6), "spent_usd": round(tally.spent_usd, 6),
           "billed_input_tokens": round(tally.billed_input_tokens, 1)},
        wall_s=round(wall_s, 3),
        retries=sum(n.retries for n in result.nodes),
        truncations=sum(int(n.truncated) for n in result.nodes),
        compressions=sum(int(n.compression is not None) for n in result.nodes),
    )


def _book_info(book: Book, chunks: tuple[Chunk, ...], *, include_front_matter: bool) -> BookInfo:
    accounting = account(book, include_front_matter=include_front_matter)
    excluded: dict[str, int] = {}
    for span in accounting.excluded:
        excluded[span.kind] = excluded.get(span.kind, 0) + span.chars
    return BookInfo(
        title=book.title,
        authors=tuple(book.authors),
        language=book.language,
        source_path=book.source_path,
        format=book.format,
        chapters_kept=tuple(c.title for c in book.selected_chapters(include_front_matter=include_front_matter)),
        chapters_excluded=()
        if include_front_matter
        else tuple((c.title, c.excluded_reason or "") for c in book.excluded_chapters),
        n_chunks=len(chunks),
        n_tokens=sum(c.n_tokens for c in chunks),
        input_chars=accounting.input_chars,
        excluded_chars=dict(sorted(excluded.items())),
        anomalies=anomalies(book, include_front_matter=include_front_matter),
    )


__all__ = ["LANG_CHOICES", "RunConfig", "book_lang", "default_record_path", "run_summary", "summarize_book"]
