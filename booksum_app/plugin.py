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

A backend that talks to a server sends with :func:`post_json` (the attempt's ``--timeout``
deadline on every socket operation, the :data:`MAX_REPLY_BYTES` cap, JSON read safely) and maps
an error status with :func:`error_for_status` (429, 5xx, 401... to the errors above, the
server's text redacted); :func:`redact` and :func:`server_message` clean any other text that
came from outside. Whatever a backend does, booksum's call layer bounds each attempt at
``--timeout`` (a backend that ignores it is given up on and its late reply billed as wasted),
checks every :class:`Completion`, and turns any exception into one redacted line (exit 4).

A backend for a model that thinks in its text (Qwen3, R1 distills) reads its answers through
:func:`split_thinking` (or a :class:`ThinkWatch`, which remembers whether the model was seen
thinking, says how much room its reasoning gets, and what ``--thinking on|off`` sends as
``chat_template_kwargs``): only a block that opens the reply is reasoning, never a tag quoted
inside an answer. It sets ``Completion.think_chars_removed`` (:attr:`Split.removed_chars`) and
``reasoning_chars``: a reply with reasoning and no text ends the call with one line instead of
being resent.

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
    redact,
    server_message,
)
from booksum_app.llm.base import BackendBase, ChatModel, Completion, ModelInfo, Request, Usage
from booksum_app.llm.deadline import MAX_REPLY_BYTES
from booksum_app.llm.http_status import error_for_status
from booksum_app.llm.providers.plugin_http import post_json
from booksum_app.llm.providers.thinking import Split, ThinkWatch, split_thinking
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
    "MAX_REPLY_BYTES",
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
    "Split",
    "StrategyBase",
    "StrategyConfig",
    "StrategyJob",
    "StrategyPlan",
    "StrategyResult",
    "SummaryNode",
    "ThinkWatch",
    "TransientModelError",
    "Usage",
    "error_for_status",
    "generate",
    "notify",
    "post_json",
    "redact",
    "regenerator",
    "server_message",
    "split_sentences",
    "split_thinking",
    "words_for_tokens",
]
