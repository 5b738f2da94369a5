"""Look at a book before spending anything: sections kept and excluded, tokens, chunks, call plans."""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from booksum_app.books import Book, open_book
from booksum_app.books.accounting import account
from booksum_app.books.plausibility import anomalies
from booksum_app.chunking import CallableTokenizer, chunk_book, get_tokenizer
from booksum_app.config import DEFAULT_CHUNK_SIZE, DEFAULT_MAX_SUMMARY_TOKENS
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.providers.thinking import planned_room_tokens
from booksum_app.llm.registry import LLMSettings, choose_model, get_model, native_counter, provider_entry
from booksum_app.llm.spec import ModelSpec
from booksum_app.runners.plan import CallPlan, plan_strategy
from booksum_app.runners.run_config import RunConfig
from booksum_app.strategies import STRATEGIES, get_strategy

INSPECT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SectionReport:
    """One section of the book: kept for summarization or excluded, and why."""

    index: int
    title: str
    kept: bool
    reason: str | None
    tokens: int


@dataclass(frozen=True)
class ExcludedSpanReport:
    """Input text left out of the summary: an excluded section or a span the reader dropped."""

    kind: str  # "front matter", "back matter", "contents", "advertisement", "repeated heading", ...
    reason: str
    where: str  # "line 12", "epub/text/imprint.xhtml"
    title: str
    chars: int  # counted characters: letters, marks, numbers
    tokens: int | None  # under the model's tokenizer; None for a dropped span (its text is not kept)


@dataclass(frozen=True)
class ChunkStats:
    """Distribution of chunk sizes in tokens."""

    count: int
    total_tokens: int
    min_tokens: int
    median_tokens: float
    max_tokens: int
    within_budget: bool


@dataclass(frozen=True)
class InspectReport:
    """Everything ``booksum inspect`` shows."""

    path: str
    title: str
    authors: tuple[str, ...]
    language: str
    format: str
    model: str
    model_notice: str | None
    tokenizer: str
    context_window: int
    chunk_size: int
    chapter_aware: bool
    sections: tuple[SectionReport, ...]
    chunks: ChunkStats
    plans: tuple[CallPlan, ...]
    encoding: str = ""  # how a text file was decoded ("utf-8", "big5", "cp1252", ...); "" for epub
    web_residue: str = ""  # lines of a web page dropped from a text file, by kind ("advertisement 13")
    input_chars: int = 0  # counted characters of the input: kept_chars + the excluded spans' chars
    kept_chars: int = 0
    excluded_spans: tuple[ExcludedSpanReport, ...] = ()
    anomalies: tuple[str, ...] = ()  # what looks wrong in the book, one line each
    # timeout, temperature and context window as resolved, each {"value": ..., "source": ...}
    settings: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    @property
    def kept_sections(self) -> tuple[SectionReport, ...]:
        return tuple(s for s in self.sections if s.kept)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["schema_version"] = INSPECT_SCHEMA_VERSION
        return data


def _token_counter(
    model: str | None, settings: LLMSettings, closing: ExitStack
) -> tuple[ModelInfo, Callable[[str], int], ModelSpec]:
    """The model's facts, token counter and resolved spec; a client built to count is closed with ``closing``."""
    spec = choose_model(model, settings=settings)
    if spec.info.tokenizer == "native":  # vLLM's tokenizer alone; the embedded model's weights
        counter = native_counter(spec, settings=settings)
        if counter is not None:
            return spec.info, counter, spec
        client = closing.enter_context(get_model(spec, settings=dataclasses.replace(settings, use_cache=False)))
        return client.info, client.count_tokens, spec
    info = spec.info
    if provider_entry(spec).server_context:  # the context the server reports for the model
        client = get_model(spec, settings=settings)  # asks /api/show, never for a completion
        info = client.info
        client.close()
    return info, get_tokenizer(info.tokenizer).count, spec


def setting_sources(settings: LLMSettings, run: RunConfig, spec: ModelSpec, info: ModelInfo
                    ) -> dict[str, dict[str, object]]:
    """The resolved values a run is planned with, each with where it came from (``booksum inspect``)."""
    window_source = spec.context_source if info.context_window == spec.info.context_window else "server"
    return {
        "timeout_s": {"value": settings.timeout_s, "source": settings.source_of("timeout_s")},
        "temperature": {"value": run.temperature, "source": run.temperature_origin},
        "context_window": {"value": info.context_window, "source": window_source},
    }


def plan_summary(path_or_book: str | os.PathLike[str] | Book, run: RunConfig, *,
                 llm_settings: LLMSettings | None = None) -> tuple[CallPlan, str]:
    """The pre-flight plan of one summarize run (``summarize --plan-only``) and the model's name:
    the book chunked with the model's tokenizer and planned as the run would be, calling no LLM.

    Raises:
        BookFormatError, ConfigError.
    """
    settings = llm_settings or LLMSettings()
    book = path_or_book if isinstance(path_or_book, Book) else open_book(
        path_or_book, include_front_matter=run.include_front_matter)
    run = run.for_book(book)
    with ExitStack() as closing:  # a client built to count tokens is closed before returning
        info, count, _ = _token_counter(run.model, settings, closing)
        chunks = chunk_book(book, chunk_size=run.chunk_size, tokenizer=CallableTokenizer(f"model:{info.name}", count),
                            chapter_aware=run.chapter_aware, include_front_matter=run.include_front_matter)
        room = planned_room_tokens(info.name, thinking=settings.thinking, effort=settings.reasoning_effort)
        plan = plan_strategy(run.strategy, chunk_tokens=[c.n_tokens for c in chunks], info=info, count_tokens=count,
                             config=run.strategy_config(), clean=run.clean,
                             chapter_chunks=chunks if run.per_chapter else None, reasoning_room_tokens=room)
    return plan, info.name


def inspect_book(
    path_or_book: str | os.PathLike[str] | Book,
    *,
    strategies: Sequence[str] | None = None,
    model: str | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS,
    include_front_matter: bool = False,
    chapter_aware: bool = False,
    prompts: str = "paper",
    lang: str = "auto",
    options: Mapping[str, object] | None = None,
    llm_settings: LLMSettings | None = None,
) -> InspectReport:
    """Read and chunk a book with the model's tokenizer and plan every strategy (or only
    ``strategies``), calling no LLM.

    ``options`` (``--set NAME=VALUE``) go to the planned strategies that declare them (hier's
    ``chapters=true`` plans its chapter merges, and chunks chapter-aware as the run would).

    Raises:
        BookFormatError: the file cannot be read as a book.
        ConfigError: bad model string or options, or an option no planned strategy declares.
    """
    names = tuple(STRATEGIES) if strategies is None else tuple(RunConfig(strategy=s).strategy for s in strategies)
    runs = _strategy_runs(names, options or {}, chunk_size=chunk_size, max_summary_tokens=max_summary_tokens,
                          prompts=prompts, lang=lang, chapter_aware=chapter_aware)
    chapter_aware = chapter_aware or any(r.chapter_aware for r in runs)
    run = RunConfig(chunk_size=chunk_size, max_summary_tokens=max_summary_tokens, prompts=prompts, lang=lang)
    settings = llm_settings or LLMSettings()
    book = (
        path_or_book
        if isinstance(path_or_book, Book)
        else open_book(path_or_book, include_front_matter=include_front_matter)
    )
    with ExitStack() as closing:
        return _report(book, run, model, settings, closing, chapter_aware=chapter_aware,
                       include_front_matter=include_front_matter, runs=runs)


def _strategy_runs(names: Sequence[str], options: Mapping[str, object], **knobs: Any) -> tuple[RunConfig, ...]:
    """One configuration per planned strategy, each with the ``options`` it declares.

    Raises:
        ConfigError: an option that none of the planned strategies declares.
    """
    declared = {name: {o.name for o in get_strategy(name).options} for name in names}
    unknown = sorted(set(options) - set().union(*declared.values()))
    if unknown:
        raise ConfigError(f"--set {unknown[0]}: not an option of {', '.join(names)}; `booksum models` lists each "
                          "strategy's options")
    return tuple(RunConfig(strategy=name, options={k: v for k, v in options.items() if k in declared[name]},
                           **knobs) for name in names)


def _report(
    book: Book, run: RunConfig, model: str | None, settings: LLMSettings, closing: ExitStack, *,
    chapter_aware: bool, include_front_matter: bool, runs: Sequence[RunConfig],
) -> InspectReport:
    chunk_size, max_summary_tokens = run.chunk_size, run.max_summary_tokens
    info, count, spec = _token_counter(model, settings, closing)
    if chunk_size + max_summary_tokens > info.context_window:
        raise ConfigError(
            f"--chunk-size {chunk_size} plus a {max_summary_tokens}-token summary does not fit "
            f"{info.name}'s {info.context_window}-token context; lower --chunk-size"
        )
    tokenizer = CallableTokenizer(f"model:{info.name}", count)
    chunks = chunk_book(
        book,
        chunk_size=chunk_size,
        tokenizer=tokenizer,
        chapter_aware=chapter_aware,
        include_front_matter=include_front_matter,
    )
    sizes = [c.n_tokens for c in chunks]
    plans = tuple(
        plan_strategy(r.strategy, chunk_tokens=sizes, info=info, count_tokens=count,
                      config=r.for_book(book).strategy_config(), chapter_chunks=chunks if r.per_chapter else None)
        for r in runs
    )
    sections = _sections(book, count, include_front_matter=include_front_matter)
    accounting = account(book, include_front_matter=include_front_matter)
    spans = tuple(
        ExcludedSpanReport(s.kind, s.reason, s.where, s.title, s.chars,
                           sections[s.section].tokens if s.section is not None else None)
        for s in accounting.excluded
    )
    return InspectReport(
        path=book.source_path,
        title=book.title,
        authors=book.authors,
        language=book.language,
        format=book.format,
        encoding=book.metadata.get("encoding", ""),
        web_residue=book.metadata.get("web_residue", ""),
        model=info.name,
        model_notice=spec.notice,
        tokenizer=info.tokenizer,
        context_window=info.context_window,
        chunk_size=chunk_size,
        chapter_aware=chapter_aware,
        sections=sections,
        chunks=_chunk_stats(sizes, chunk_size),
        plans=plans,
        input_chars=accounting.input_chars,
        kept_chars=accounting.kept_chars,
        excluded_spans=spans,
        anomalies=anomalies(book, include_front_matter=include_front_matter),
        settings=setting_sources(settings, run, spec, info),
    )


def _sections(book: Book, count: Callable[[str], int], *, include_front_matter: bool) -> tuple[SectionReport, ...]:
    """Every section of the book, kept or excluded (with why), with its tokens."""
    selected = set(map(id, book.selected_chapters(include_front_matter=include_front_matter)))
    return tuple(
        SectionReport(
            index=i,
            title=chapter.title,
            kept=id(chapter) in selected,
            reason=None if id(chapter) in selected else chapter.excluded_reason,
            tokens=count(chapter.text),
        )
        for i, chapter in enumerate(book.chapters)
    )


def _chunk_stats(sizes: list[int], chunk_size: int) -> ChunkStats:
    return ChunkStats(
        count=len(sizes),
        total_tokens=sum(sizes),
        min_tokens=min(sizes, default=0),
        median_tokens=statistics.median(sizes) if sizes else 0.0,
        max_tokens=max(sizes, default=0),
        within_budget=all(s <= chunk_size for s in sizes),
    )
