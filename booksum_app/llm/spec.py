"""What a model string resolves to, and how calls are made: plain data, the bottom of ``llm/``.

Providers (``llm/providers/``) are built from these two records; the registry fills them in.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from booksum_app.config import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, is_real
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ModelInfo

ModelSource = Literal["explicit", "config", "env", "default"]
FALLBACK_NOTICE = (
    "using the embedded SmolLM2-135M demo model; pass --model openai:gpt-4o "
    "(and set OPENAI_API_KEY) for real summaries"
)

# where a resolved value came from: the command line names its option ("--timeout"), else one of these
DEFAULT_SOURCE = "default"


def checked_timeout_s(value: object) -> float:
    """``--timeout``: seconds one attempt may take, over 0 and at most :data:`MAX_TIMEOUT_S`; the one check of it.

    Raises:
        ConfigError: not a number in that range (nan and infinities included).
    """
    if is_real(value) and 0 < value <= MAX_TIMEOUT_S:
        return float(value)
    raise ConfigError(f"--timeout {value!r}: give the seconds one attempt may take, over 0 and at most "
                      f"{MAX_TIMEOUT_S:g}")


def checked_temperature(value: object) -> float:
    """``--temperature``: a sampling temperature from 0 to 2; the one check of it.

    Raises:
        ConfigError: not a number in that range (nan and infinities included).
    """
    if is_real(value) and 0 <= value <= 2:
        return float(value)
    raise ConfigError(f"--temperature {value!r}: give a number from 0 to 2")


@dataclass(frozen=True)
class LLMSettings:
    """How calls are made: cache, concurrency, cost ceiling, retries, server and engine options."""

    cache_dir: Path | None = None  # None: BOOKSUM_CACHE_DIR, else the user cache dir
    use_cache: bool = True
    concurrency: int | None = None  # None: per-provider default (API 8, local 1, vLLM batches)
    max_cost_usd: float | None = None
    base_url: str | None = None  # OpenAI-compatible server; None: OPENAI_BASE_URL if set
    max_attempts: int = 6
    timeout_s: float = DEFAULT_TIMEOUT_S  # per attempt (hosted APIs and servers), then retried
    tensor_parallel_size: int = 1
    engine_args: tuple[tuple[str, Any], ...] = ()  # vLLM engine arguments; override the config's [vllm_engine]
    n_ctx: int | None = None  # local model context; None: the model's window (8192)
    length_policy: str | None = None  # "regenerate"/"truncate"; None: the model's own (models.json, config)
    config_path: Path | None = None  # None: BOOKSUM_CONFIG, else the user config dir
    reasoning_effort: str | None = None  # reasoning models: minimal/low/medium/high; None: low
    thinking: str = "auto"  # --thinking: "auto" (as the model does), "on", "off" (llm/providers/thinking.py)
    servers: tuple[tuple[str, str], ...] = ()  # model string -> its own server over base_url (llm/model_names.py)
    # the weights behind a server, when two serve different weights under one name: part of the
    # call cache key in place of the URL (which is not: localhost, 127.0.0.1 and a replica are one model)
    deployment: str | None = None
    # the context window of a model on an OpenAI-compatible server (--context-window), over what the server
    # reports and the config file says; None: the server's, the config file's, or booksum's assumption
    context_window: int | None = None

    # where a value came from, for the values a user sets more than one way: field name -> the option
    # that set it ("--timeout"); a field not named here holds its default (:meth:`source_of`)
    sources: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("cache_dir", "config_path"):  # the library takes str or Path wherever it takes a path
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        object.__setattr__(self, "timeout_s", checked_timeout_s(self.timeout_s))  # resolved once, checked once

    def source_of(self, name: str) -> str:
        """Where the value of field ``name`` came from: the option that set it, else ``"default"``
        (the field's default value) or ``"given"`` (set by the library's caller)."""
        recorded = dict(self.sources).get(name)
        if recorded is not None:
            return recorded
        default = next(f.default for f in fields(self) if f.name == name)
        return DEFAULT_SOURCE if getattr(self, name) == default else "given"


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model string: provider, provider's model id, metadata, and how it was chosen."""

    provider: str
    model_id: str  # what the provider calls it ("gpt-4o", a HF id, a GGUF path, "" for bundled)
    info: ModelInfo
    reasoning: bool = False  # OpenAI reasoning model: max_completion_tokens, no temperature
    known: bool = True
    note: str | None = None  # why defaults were assumed, when not known
    source: ModelSource = "explicit"
    base_url: str | None = None
    server_slots: int | None = None  # requests the server serves at once, as it reports (llm/providers/server_info.py)
    server_note: str | None = None  # where the window came from, when the server reported it
    server: str | None = None  # the model's own server (settings.servers, config base_url); "": the provider's API
    server_identity: str | None = None  # the weights the server reports serving (server_info.py): keys its answers
    # where info.context_window came from: "option" (--context-window), "shipped table", "config file",
    # "<provider> defaults" or "llama-cpp-python's default" (assumed), "n_ctx setting", or "server"
    # (what the model's server reported)
    context_source: str = "shipped table"
    hosted: bool = False  # a built-in paid API (its own endpoint, not a server at a base URL): adaptive, priced
    config_warnings: tuple[str, ...] = ()  # unknown keys in the config file

    @property
    def notice(self) -> str | None:
        """One line for the CLI: config-file typos, the demo-model fallback, or a model not in the table."""
        lines = list(self.config_warnings)
        if self.source == "default" and self.provider == "local":
            lines.append(FALLBACK_NOTICE)
        # vLLM and Ollama report their context; hosted prices and a server's 8,192 tokens are assumed
        elif self.server_note:  # the server said what it holds: nothing is assumed
            lines.append(f"{self.info.name}: {self.server_note}")
        elif self.note and self.hosted:
            lines.append(f"{self.info.name}: {self.note}")
        return "; ".join(lines) or None
