"""What every strategy takes and returns: the job, its configuration, nodes, progress events.

A strategy turns chunks (or, for ``direct``, the whole text) into one raw summary plus every
intermediate summary it wrote (:class:`SummaryNode`) and every call it made
(:class:`~booksum_app.compression.validity.CallEntry`). Post-processing (artifact removal)
and the full record are the runner's job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from booksum_app.chunking.base import Chunk
from booksum_app.compression.validity import AttemptInfo, CallEntry
from booksum_app.config import (
    COMPRESSION_TEMPERATURE,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
)
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ChatModel
from booksum_app.prompts import PROMPT_SETS, Template, load_template, templates_signature

DEFAULT_MAX_TRIES = 4  # one try + 3 regenerations (App. A.1 "a fixed number of times")
MIN_EVIDENCE_TOKENS = 128  # hier-evidence: room for one whole passage (at most 100 tokens) and its separators
DIRECT_TEMPLATE_CHOICES = ("ib", "ie")


@dataclass(frozen=True)
class StrategyConfig:
    """Knobs shared by all strategies (defaults: BooookScore §5)."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS  # G
    temperature: float = DEFAULT_TEMPERATURE
    compression_temperature: float = COMPRESSION_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    prompts: str = "paper"  # a built-in set name or a directory of override templates
    lang: str = "en"  # "en" or "zh": prompt language and sentence splitting
    direct_template: str = "ib"  # CNNSum Prompt-IB or Prompt-IE
    max_tries: int = DEFAULT_MAX_TRIES
    evidence_tokens: int | None = None  # hier-evidence: per merged summary; None = its own budget

    def __post_init__(self) -> None:
        if self.chunk_size < 64:
            raise ConfigError(
                f"--chunk-size {self.chunk_size} is too small; use at least 64 tokens"
            )
        if self.max_summary_tokens < 16:
            raise ConfigError(
                f"--max-summary-len {self.max_summary_tokens} is too small; use at least 16"
            )
        if self.direct_template not in DIRECT_TEMPLATE_CHOICES:
            raise ConfigError(f"--direct-template must be one of {DIRECT_TEMPLATE_CHOICES}")
        if self.max_tries < 1:
            raise ConfigError("max_tries must be at least 1")
        if self.evidence_tokens is not None and self.evidence_tokens < MIN_EVIDENCE_TOKENS:
            raise ConfigError(
                f"--evidence-tokens {self.evidence_tokens} is too small; use at least "
                f"{MIN_EVIDENCE_TOKENS} (one source passage is up to 100 tokens)"
            )


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
    prompts: str, *, lang: str, names: tuple[str, ...], base_set: str | None = None
) -> PromptBundle:
    """Resolve ``names`` from a built-in set, or an override directory over ``paper``/``base_set``.

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
        name: load_template(name, prompt_set=builtin, lang=lang, override_dir=override)
        for name in names
    }
    return PromptBundle(label, lang, templates)


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


class Strategy(Protocol):
    """A summarization strategy, found through the ``booksum.strategies`` entry point group.

    A strategy owns everything about itself: its templates, whether the chunk size matters to
    it, whether it calls a model at all, its pre-flight plan, its run and the record fields it
    adds. See ``examples/strategy-plugin`` for a complete third-party one.
    """

    name: str
    description: str
    uses_chunks: bool  # False: the chunk size does not change the run (direct); compare runs it once
    calls_model: bool  # False: no LLM call at all (extractive baselines); no artifact removal either

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]: ...

    def base_prompt_set(self, config: StrategyConfig) -> str | None: ...

    def plan(self, plan_input: PlanInput) -> StrategyPlan: ...

    def record_fields(self, config: StrategyConfig) -> dict[str, object]: ...

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult: ...


def notify(
    on_progress: ProgressFn | None, stage: str, done: int, total: int, node: str = ""
) -> None:
    """Send a progress event when someone listens."""
    if on_progress is not None:
        on_progress(ProgressEvent(stage, done, total, node))


__all__ = [
    "CompressionInfo",
    "DirectTruncation",
    "PlanInput",
    "ProgressEvent",
    "ProgressFn",
    "PromptBundle",
    "Strategy",
    "StrategyConfig",
    "StrategyJob",
    "StrategyPlan",
    "StrategyResult",
    "SummaryNode",
    "load_prompts",
    "notify",
]
