"""The one module a booksum plugin imports: every name a backend or a strategy plugin needs.

booksum finds plugins through two entry point groups, as simonw/llm finds its own (``llm``)::

    [project.entry-points."booksum.backends"]      # a provider: model strings "<name>:<model id>"
    upper = "booksum_upper:UpperBackend"           # a BackendBase subclass

    [project.entry-points."booksum.strategies"]    # a strategy: --strategy <name>
    map-only = "booksum_maponly:MapOnly"           # a StrategyBase subclass (or an instance)

A **backend** derives from :class:`BackendBase` and writes ``complete(request) -> Completion``;
everything else has a default (``kind``, ``default_concurrency``, ``base_url``, ``count_tokens``,
``close``, ``from_spec``, ``model_defaults``). booksum's client adds the call cache, retries on
:class:`RateLimited`/:class:`TransientModelError`, the concurrency bound and the cost accounting.

A **strategy** derives from :class:`StrategyBase`, declares its :class:`Option` values (set with
``--set NAME=VALUE``; read with ``self.option(config, NAME)``), may ship templates in
``templates_dir`` and writes ``plan`` (upper bounds, no call) and ``run``. Every summary it asks
a model for goes through :func:`generate`, the paper's validity rule (BooookScore App. A.2.1):
non-empty, within budget, not cut off, ending a sentence; else regenerated, then truncated.

Records, signatures and compare's reuse keys carry the plugin's package name and version and
every option's value, so a record of an older plugin or another option is never reused. The
names here are kept stable across booksum releases; anything imported from elsewhere in
``booksum_app`` is internal. ``examples/backend-plugin`` and ``examples/strategy-plugin`` are
complete plugins that import only this module.
"""

from __future__ import annotations

from booksum_app.chunking import split_sentences
from booksum_app.compression.budget import words_for_tokens
from booksum_app.compression.validity import CallEntry, Generation, Sampling, generate, regenerator
from booksum_app.errors import (
    AuthError,
    BooksumError,
    ConfigError,
    ContextTooLong,
    MissingAPIKey,
    ModelError,
    RateLimited,
    TransientModelError,
)
from booksum_app.llm.base import BackendBase, ChatModel, Completion, ModelInfo, Request, Usage
from booksum_app.llm.registry import LLMSettings, ModelSpec
from booksum_app.strategies.base import (
    Option,
    PlanInput,
    ProgressFn,
    PromptBundle,
    StrategyBase,
    StrategyConfig,
    StrategyJob,
    StrategyPlan,
    StrategyResult,
    SummaryNode,
    notify,
)

__all__ = [
    "AuthError",
    "BackendBase",
    "BooksumError",
    "CallEntry",
    "ChatModel",
    "Completion",
    "ConfigError",
    "ContextTooLong",
    "Generation",
    "LLMSettings",
    "MissingAPIKey",
    "ModelError",
    "ModelInfo",
    "ModelSpec",
    "Option",
    "PlanInput",
    "ProgressFn",
    "PromptBundle",
    "RateLimited",
    "Request",
    "Sampling",
    "StrategyBase",
    "StrategyConfig",
    "StrategyJob",
    "StrategyPlan",
    "StrategyResult",
    "SummaryNode",
    "TransientModelError",
    "Usage",
    "generate",
    "notify",
    "regenerator",
    "split_sentences",
    "words_for_tokens",
]
