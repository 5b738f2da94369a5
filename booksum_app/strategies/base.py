"""What every strategy takes and returns: the job, its configuration, nodes, progress events.

A strategy turns chunks (or, for ``direct``, the whole text) into one raw summary plus every
intermediate summary it wrote (:class:`SummaryNode`) and every call it made
(:class:`~booksum_app.compression.validity.CallEntry`). Post-processing (artifact removal)
and the full record are the runner's job.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from booksum_app.chunking.base import Chunk
from booksum_app.compression.validity import AttemptInfo, CallEntry, Sampling
from booksum_app.config import (
    COMPRESSION_TEMPERATURE,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
    MAX_COUNT,
    MAX_TOKENS,
    checked_count,
    checked_real,
)
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ChatModel
from booksum_app.prompts import (
    PROMPT_SETS,
    Template,
    load_template,
    parse_template,
    templates_signature,
)

DEFAULT_MAX_TRIES = 4  # one try + 3 regenerations (App. A.1 "a fixed number of times")
MIN_EVIDENCE_TOKENS = 128  # hier-evidence: room for one whole passage (at most 100 tokens) and its separators

OptionValue = str | int | float | bool | None
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


@dataclass(frozen=True)
class Option:
    """One setting a strategy declares, as simonw/llm's model ``Options`` do.

    Users set it with ``--set NAME=VALUE`` (summarize, compare) or an experiment's ``[options]``
    table; the strategy reads it with ``config.option(NAME)``. Records, signatures and compare's
    reuse keys carry every declared option, so a strategy adds one without touching booksum.
    ``kind`` is ``str``, ``int``, ``float`` or ``bool``; with a ``None`` default, ``auto`` or
    ``none`` give None back.
    """

    name: str
    default: OptionValue
    help: str = ""
    kind: type = str
    choices: tuple[OptionValue, ...] = ()
    minimum: float | None = None

    def parse(self, raw: object) -> OptionValue:
        """``raw`` (a command-line string or a TOML/library value) as this option's value.

        Raises:
            ConfigError: not a value of this option (one line naming it).
        """
        where = f"--set {self.name}={raw}"
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("auto", "none") and self.default is None):
            if self.default is not None:
                raise ConfigError(f"{where}: give a value")
            return None
        value = self._convert(raw, where)
        if self.choices and value not in self.choices:
            raise ConfigError(f"{where}: use one of {', '.join(map(str, self.choices))}")
        if self.minimum is not None and isinstance(value, int | float) and value < self.minimum:
            raise ConfigError(f"{where}: use at least {self.minimum:g}")
        return value

    def _convert(self, raw: object, where: str) -> OptionValue:
        text = raw.strip() if isinstance(raw, str) else None
        if self.kind is bool:
            if isinstance(raw, bool):
                return raw
            if text is not None and text.lower() in (*_TRUE, *_FALSE):
                return text.lower() in _TRUE
            raise ConfigError(f"{where}: give true or false")
        if self.kind in (int, float):
            wanted = ConfigError(f"{where}: give {'an integer' if self.kind is int else 'a number'}")
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                raise wanted
            try:
                number = float(raw)
            except (ValueError, OverflowError):
                raise wanted from None
            # the one rule for numbers (config.py): finite and in range; 1e30 is no token count
            if self.kind is float:
                return checked_real(number, what=f"--set {self.name}", minimum=-MAX_COUNT)
            if not math.isfinite(number) or not number.is_integer():
                raise wanted
            return checked_count(int(number), what=f"--set {self.name}", minimum=-MAX_TOKENS)
        if not isinstance(raw, str):
            raise ConfigError(f"{where}: give a string")
        return text


def resolve_options(
    declared: Sequence[Option], given: Mapping[str, object], *, strategy: str
) -> tuple[tuple[str, OptionValue], ...]:
    """Every declared option's value, in declaration order: ``given``'s parsed, else the default.

    Raises:
        ConfigError: ``given`` names an option ``strategy`` does not declare, or a bad value.
    """
    known = {o.name: o for o in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        offered = ", ".join(known) or "none"
        raise ConfigError(f"--set {unknown[0]}: not an option of strategy {strategy!r} (its options: {offered})")
    return tuple((o.name, o.parse(given[o.name]) if o.name in given else o.default) for o in declared)


@dataclass(frozen=True)
class StrategyConfig:
    """Knobs shared by all strategies (defaults: BooookScore §5) and the strategy's own options."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS  # G
    temperature: float = DEFAULT_TEMPERATURE
    compression_temperature: float = COMPRESSION_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    prompts: str = "paper"  # a built-in set name or a directory of override templates
    lang: str = "en"  # "en" or "zh": prompt language and sentence splitting
    max_tries: int = DEFAULT_MAX_TRIES
    options: tuple[tuple[str, OptionValue], ...] = ()  # the strategy's declared options, resolved
    once: bool = False  # a benchmark's decoding: one call per summary, the answer as returned
    system: str | None = None  # a benchmark's system message (None: none)

    def __post_init__(self) -> None:
        if self.chunk_size < 64:
            raise ConfigError(
                f"--chunk-size {self.chunk_size} is too small; use at least 64 tokens"
            )
        if self.max_summary_tokens < 16:
            raise ConfigError(
                f"--max-summary-len {self.max_summary_tokens} is too small; use at least 16"
            )
        if self.max_tries < 1:
            raise ConfigError("max_tries must be at least 1")

    def option(self, name: str) -> OptionValue:
        """The value of the strategy's option ``name`` (its default unless set)."""
        for key, value in self.options:
            if key == name:
                return value
        raise KeyError(f"{name!r} is not among this run's options ({', '.join(k for k, _ in self.options)})")

    @property
    def sampling(self) -> Sampling:
        """How :func:`~booksum_app.compression.validity.generate` samples under this configuration."""
        return Sampling(temperature=self.temperature, retry_temperature=self.compression_temperature,
                        top_p=self.top_p, max_tries=self.max_tries, lang=self.lang, once=self.once,
                        system=self.system)


@dataclass(frozen=True)
class PromptBundle:
    """The templates a run uses, resolved once, and their signature (``paper-1a2b3c``)."""

    label: str
    lang: str
    templates: Mapping[str, Template]

    def __getitem__(self, name: str) -> Template:
        return self.templates[name]

    @property
    def signature(self) -> str:
        return templates_signature(self.label, self.templates.values())


def load_prompts(
    prompts: str, *, lang: str, names: tuple[str, ...], base_set: str | None = None,
    own_dir: Path | None = None,
) -> PromptBundle:
    """Resolve ``names``: the ``--prompts`` directory first, then ``own_dir`` (a plugin strategy's
    shipped templates), then the built-in set (``prompts``, or ``base_set``, or ``paper``).

    A directory holds ``<lang>/<name>.txt`` or ``<name>.txt``.

    Raises:
        ConfigError: ``prompts`` is neither a built-in set nor a directory.
        PromptError: a template is missing or malformed.
    """
    override: Path | None = None
    if prompts in PROMPT_SETS:
        label = prompts
    else:
        override = Path(prompts).expanduser()
        if not override.is_dir():
            raise ConfigError(
                f"--prompts {prompts!r} is neither a built-in set ({', '.join(PROMPT_SETS)}) "
                "nor an existing directory"
            )
        label = "custom"
    builtin = base_set or (prompts if override is None else "paper")
    if base_set is not None:
        label = base_set if override is None else f"{base_set}+custom"
    templates = {
        name: _own_template(name, (override, own_dir), lang)
        or load_template(name, prompt_set=builtin, lang=lang)
        for name in names
    }
    return PromptBundle(label, lang, templates)


def _own_template(name: str, folders: tuple[Path | None, ...], lang: str) -> Template | None:
    """``name`` from the first folder that has it (``<lang>/<name>.txt``, then ``<name>.txt``)."""
    for folder in folders:
        if folder is None:
            continue
        for candidate in (folder / lang / f"{name}.txt", folder / f"{name}.txt"):
            if candidate.is_file():
                return parse_template(name, candidate.read_text(encoding="utf-8"), source=str(candidate))
    return None


@dataclass(frozen=True)
class CompressionInfo:
    """A compression of the running summary (inc) with its attempts."""

    input_tokens: int
    output_tokens: int
    target_tokens: int
    truncated: bool
    attempts: tuple[AttemptInfo, ...]
    text_before: str


@dataclass(frozen=True)
class SummaryNode:
    """One summary a strategy wrote: a tree node (hier), a running summary (inc), the answer (direct)."""

    id: str  # "L0.3" (hier), "inc.12", "direct"
    kind: str  # "chunk", "merge", "inc_init", "inc_update", "direct"
    level: int  # hier level (0 = chunk summaries); 0 for inc/direct
    index: int  # position within its level (hier) or chunk index (inc)
    children: tuple[int, ...]  # indices of the level below it merges (hier); () otherwise
    chunk_span: tuple[int, int]  # first and last chunk index it covers
    text: str  # the summary kept (after truncation / compression)
    tokens: int
    budget_tokens: int
    words_asked: int
    prompt_tokens: int
    context_node: str | None = None  # hier: the prior merged summary given as context
    context_tokens: int = 0
    retries: int = 0
    truncated: bool = False
    attempts: tuple[AttemptInfo, ...] = ()
    compression: CompressionInfo | None = None


@dataclass(frozen=True)
class DirectTruncation:
    """How a book too long for one prompt was cut (head and tail kept)."""

    book_tokens: int
    text_budget_tokens: int
    head_tokens: int
    tail_tokens: int
    cut_tokens: int
    head_share: float
    marker: str


@dataclass(frozen=True)
class StrategyResult:
    """A strategy's output before post-processing."""

    summary: str
    nodes: tuple[SummaryNode, ...]
    calls: tuple[CallEntry, ...]
    level_budgets: tuple[int, ...] = ()  # hier: the planned G_l
    truncation: DirectTruncation | None = None
    extra: Mapping[str, object] = field(default_factory=dict)  # goes to the record's ``extra``


@dataclass(frozen=True)
class ProgressEvent:
    """A strategy's progress: ``done`` of ``total`` units of ``stage``."""

    stage: str  # "chunks", "merges", "updates", "direct"
    done: int
    total: int
    node: str = ""


ProgressFn = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class StrategyJob:
    """What a strategy summarizes: the chunks (hier, inc), the whole text (direct), the chapters."""

    chunks: tuple[Chunk, ...]
    text: str
    config: StrategyConfig = field(default_factory=StrategyConfig)
    chapters: tuple[tuple[str, str], ...] = ()  # (title, text) of each chapter summarized


@dataclass(frozen=True)
class PlanInput:
    """What a pre-flight plan is computed from; nothing here costs a call."""

    chunk_tokens: tuple[int, ...]  # tokens of each chunk, in order
    context_window: int
    overhead_tokens: Mapping[str, int]  # template name -> tokens of its fixed text
    config: StrategyConfig


@dataclass(frozen=True)
class StrategyPlan:
    """Upper bounds on one strategy's calls and tokens on one book (artifact removal excluded)."""

    calls: int
    input_tokens: int
    output_tokens: int
    levels: int | None = None  # hier only
    truncated_tokens: int = 0  # direct only: book tokens that do not fit the context
    level_budgets: tuple[int, ...] = ()  # hier only: G_l per level, as the run will use them


class Strategy(Protocol):
    """A summarization strategy, found through the ``booksum.strategies`` entry point group.

    A strategy owns everything about itself: its templates, whether the chunk size matters to
    it, whether it calls a model at all, its options, its pre-flight plan, its run and the
    record fields it adds. :class:`StrategyBase` gives the optional members their defaults;
    see ``examples/strategy-plugin`` for a complete third-party one.
    """

    name: str
    description: str
    uses_chunks: bool  # False: the chunk size does not change the run (direct); compare runs it once
    calls_model: bool  # False: no LLM call at all (extractive baselines); no artifact removal either
    options: tuple[Option, ...]  # what --set NAME=VALUE may set
    templates_dir: Path | None  # the strategy's own templates (<lang>/<name>.txt); None: booksum's sets

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]: ...

    def base_prompt_set(self, config: StrategyConfig) -> str | None: ...

    def plan(self, plan_input: PlanInput) -> StrategyPlan: ...

    def record_fields(self, config: StrategyConfig) -> dict[str, object]: ...

    def signature_fields(self, config: StrategyConfig) -> dict[str, object]: ...

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult: ...


class StrategyBase(ABC):
    """A base for strategies: every member of :class:`Strategy` but ``name``, ``description``,
    ``plan`` and ``run`` has a default (chunked, calls a model, no options, no templates)."""

    name: str = ""
    description: str = ""
    uses_chunks: bool = True
    calls_model: bool = True
    options: tuple[Option, ...] = ()
    templates_dir: Path | None = None

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]:
        """No templates."""
        return ()

    def base_prompt_set(self, config: StrategyConfig) -> str | None:
        """Templates not found in ``templates_dir`` come from ``--prompts`` (default ``paper``)."""
        return None

    @abstractmethod
    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """Upper bounds on the calls and tokens of one run (nothing here may call a model)."""

    def option(self, config: StrategyConfig, name: str) -> OptionValue:
        """Option ``name`` as ``config`` sets it, else as this strategy declares its default."""
        values = dict(config.options)
        if name in values:
            return values[name]
        for declared in self.options:
            if declared.name == name:
                return declared.default
        raise KeyError(f"{name!r} is not an option of strategy {self.name!r}")

    def record_fields(self, config: StrategyConfig) -> dict[str, object]:
        """Every option's value, under its name."""
        return {o.name: self.option(config, o.name) for o in self.options}

    def signature_fields(self, config: StrategyConfig) -> dict[str, object]:
        """The options set away from their defaults (a default run signs as it always did)."""
        return {o.name: value for o in self.options if (value := self.option(config, o.name)) != o.default}

    @abstractmethod
    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize ``job``; every summary through :func:`~booksum_app.compression.validity.generate`."""


def strategy_prompts(strategy: Strategy, config: StrategyConfig) -> PromptBundle:
    """The templates ``strategy`` renders under ``config``: what its run and its plan both read."""
    return load_prompts(config.prompts, lang=config.lang, names=strategy.template_names(config),
                        base_set=strategy.base_prompt_set(config), own_dir=strategy.templates_dir)


def notify(
    on_progress: ProgressFn | None, stage: str, done: int, total: int, node: str = ""
) -> None:
    """Send a progress event when someone listens."""
    if on_progress is not None:
        on_progress(ProgressEvent(stage, done, total, node))


__all__ = [
    "CompressionInfo",
    "DirectTruncation",
    "Option",
    "OptionValue",
    "PlanInput",
    "ProgressEvent",
    "ProgressFn",
    "PromptBundle",
    "Strategy",
    "StrategyBase",
    "StrategyConfig",
    "StrategyJob",
    "StrategyPlan",
    "StrategyResult",
    "SummaryNode",
    "load_prompts",
    "notify",
    "resolve_options",
    "strategy_prompts",
]
