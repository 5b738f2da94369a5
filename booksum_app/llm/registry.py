"""Model strings, aliases, metadata and prices; the one entry point that builds a ready client.

Model strings: ``openai:<model>``, ``anthropic:<model>``, ``vllm:<hf-model-or-path>``,
``ollama:<model>`` (Ollama's native API at ``OLLAMA_HOST``, or the ``base_url`` setting),
``local`` / ``local:<path.gguf>``; an OpenAI-compatible server is ``openai:<model>`` plus a
base URL (``base_url`` setting or ``OPENAI_BASE_URL``). Bare names from the table
(``gpt-4o``, ``claude-sonnet-4-5``, ``sonnet``) are aliases. Metadata and list prices come
from ``booksum_app/data/models.json``; a user config file (TOML, ``BOOKSUM_CONFIG`` or
``<user config dir>/booksum/config.toml``) can add or override models and aliases and set
``default_model``. The default model is: explicit > ``BOOKSUM_MODEL`` > config
``default_model`` > ``local`` (with a notice that says how to use a real model).

This module (with the CLI) is the only place in ``llm/`` that reads the environment: API keys,
base URL, cache dir, config path and default model are read here and passed down.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from booksum_app.config import (
    ADAPTIVE_INITIAL_CONCURRENCY,
    ADAPTIVE_MAX_CONCURRENCY,
    ENV_JUDGE,
    ENV_MODEL,
    LENGTH_POLICIES,
    SERVER_INITIAL_CONCURRENCY,
)
from booksum_app.errors import BooksumError, ConfigError, server_message
from booksum_app.llm.base import Backend, BackendBase, ModelInfo
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import CallRecord, Client
from booksum_app.llm.door import environment_secrets
from booksum_app.llm.limiter import socket_room
from booksum_app.llm.model_names import family, own_server
from booksum_app.llm.model_table import (
    ModelTable,
    _shipped_table,
    config_path,
    default_cache_dir,
    load_table,
)
from booksum_app.llm.openai_compatible import compatible_route
from booksum_app.llm.providers import catalog  # catalog.BACKENDS per use: tests swap it
from booksum_app.llm.providers.catalog import BUILTIN, Provider
from booksum_app.llm.spec import FALLBACK_NOTICE, LLMSettings, ModelSource, ModelSpec

DEFAULT_MODEL = "local"
NO_JUDGE_NOTE = (
    "BooookScore left out: it needs a strong judge chosen on purpose; pass --judge openai:gpt-4o "
    f"(or set {ENV_JUDGE}, or judge_model in the config file)"
)
DEMO_JUDGE_WARNING = (
    "the judge is the embedded 135M demo model: its BooookScores prove the pipeline and mean "
    "nothing about the summaries"
)
def _split(model: str, table: ModelTable) -> tuple[str, str]:
    """``(provider, model_id)`` of a model string or alias."""
    model = model.strip()
    if not model:
        raise ConfigError("empty model string; use e.g. openai:gpt-4o or local")
    seen: list[str] = []
    while model in table.aliases:
        if model in seen:  # a -> b -> a names no model: say so, not "unknown model 'a'"
            loop = " -> ".join(repr(a) for a in [*seen[seen.index(model):], model])
            raise ConfigError(f"the config file's aliases form a loop ({loop}); point one of them at a model "
                              "string, e.g. openai:gpt-4o")
        seen.append(model)
        model = table.aliases[model]
    if model == "local":
        return "local", ""
    provider, sep, model_id = model.partition(":")
    if sep and catalog.BACKENDS.is_provider(provider):
        if not model_id and provider != "local":
            raise ConfigError(f"model string {model!r} names no model; use e.g. {provider}:<model>")
        return provider, model_id
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai", model
    if model.startswith("claude"):
        return "anthropic", model
    route = compatible_route(model)  # a hosted provider reached through its OpenAI-compatible endpoint
    if route is not None:
        raise ConfigError(route)
    known = [*table.models, *table.aliases, *(name.partition(":")[2] for name in table.models)]
    close = difflib.get_close_matches(model, [k for k in known if k], n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? Else " if close else ""
    raise ConfigError(f"unknown model {model!r}; {hint}{route_hint(model)}")


def route_hint(model: str) -> str:
    """How to reach a bare model name that no table lists, by its shape: the provider prefix to add."""
    if model.lower().endswith(".gguf"):
        routes = [f"local:{model} (the embedded llama.cpp runs the file)"]
    elif ":" in model:  # name:tag is how Ollama names models
        routes = [f"ollama:{model} (Ollama)", f"openai:{model} --base-url URL (a server that serves it)",
                  f"a provider {model.partition(':')[0]!r} from a plugin that is not installed (booksum models)"]
    elif "/" in model:  # org/name is a Hugging Face repository id
        routes = [f"vllm:{model} (vLLM in this process)", f"openai:{model} --base-url URL (vllm serve, a server)"]
    else:
        routes = [f"ollama:{model} (Ollama)", f"openai:{model} --base-url URL (a server that serves it)",
                  f"vllm:ORG/{model} (vLLM)"]
    return "name its route with a provider prefix: " + ", or ".join(routes)


_REASONING_FAMILIES = re.compile(r"(?:[\w.-]*/)?(?:o1|o3|o4|gpt-5)(?:$|[-.:_])", re.IGNORECASE)


def is_reasoning_model(model_id: str) -> bool:
    """Whether ``model_id`` names an OpenAI reasoning model (o1, o3, o4, gpt-5 families, dated ids
    and a server's ``org/`` prefix too): they take ``max_completion_tokens`` and think in
    hidden, billed tokens."""
    return bool(_REASONING_FAMILIES.match(model_id.strip()))


def _price_or_none(entry: Mapping[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return None if value is None else float(value)


def _snapshot_family(name: str, table: ModelTable) -> dict[str, Any] | None:
    """The row of a dated snapshot's family, where the provider publishes dated snapshots of it:
    Anthropic's models from the 4.6 generation on have dateless pinned ids (``dated_snapshots``
    false in the table), so a dated id of one is a model booksum does not know."""
    row = table.models.get(family(name)) if family(name) != name else None
    return dict(row) if row is not None and row.get("dated_snapshots", True) else None


def _spec_from(
    provider: str, model_id: str, table: ModelTable, *, base_url: str | None, n_ctx: int | None
) -> ModelSpec:
    name = "local" if provider == "local" and not model_id else f"{provider}:{model_id}"
    entry = table.models.get(name) or _snapshot_family(name, table)
    defaults_key = "openai-compatible" if provider == "openai" and base_url else provider
    note = None
    provider_defaults = table.providers.get(defaults_key) or catalog.BACKENDS.plugin_defaults(provider)
    if entry is None:
        entry = dict(provider_defaults)
        note = str(entry.pop("note", "")) or None
        # a typo (openai:gpt-4o-mni) would silently plan with conservative prices: say so
        close = difflib.get_close_matches(name, [*table.models, *table.aliases], n=1, cutoff=0.85)
        if close and note and defaults_key != "openai-compatible":
            note += f"; did you mean {close[0]!r}?"
    else:  # a config entry may set only some fields: the provider's defaults fill the rest
        defaults = {k: v for k, v in provider_defaults.items() if k != "note"}
        entry = {**defaults, **entry}
    hosted = provider in BUILTIN and BUILTIN[provider].hosted
    context = int(entry["context_window"])
    context_source = "config file" if name in table.from_config else "shipped table" if note is None else (
        f"{defaults_key} defaults")
    if provider == "local" and n_ctx is not None:
        context, context_source = n_ctx, "n_ctx setting"
    info = ModelInfo(
        name=name,
        context_window=context,
        tokenizer=str(entry["tokenizer"]),
        input_usd_per_mtok=float(entry.get("input_usd_per_mtok", 0.0)),
        output_usd_per_mtok=float(entry.get("output_usd_per_mtok", 0.0)),
        cached_input_usd_per_mtok=_price_or_none(entry, "cached_input_usd_per_mtok"),
        max_output_tokens=entry.get("max_output_tokens"),
        length_policy=str(entry.get("length_policy") or "regenerate"),
        cache_write_usd_per_mtok=_price_or_none(entry, "cache_write_usd_per_mtok"),
        # a paid API's model priced by neither the table nor the config file: unknown, never $0
        price_known=not hosted or all(k in entry for k in ("input_usd_per_mtok", "output_usd_per_mtok")),
    )
    return ModelSpec(
        provider=provider,
        model_id=model_id,
        info=info,
        reasoning=bool(entry.get("reasoning", False)) or (provider == "openai" and is_reasoning_model(model_id)),
        known=note is None,
        note=note,
        base_url=base_url if provider == "openai" else None,
        hosted=hosted,
        context_source=context_source,
    )


def provider_entry(spec: ModelSpec) -> Provider:
    """The provider table's row for a model (built-in or plugin)."""
    return catalog.BACKENDS.provider(spec.provider)


def choose_model(
    model: str | None = None,
    *,
    settings: LLMSettings = LLMSettings(),
    env: Mapping[str, str] | None = None,
) -> ModelSpec:
    """Resolve a model string (or the configured default) to its provider, id and metadata.

    Raises:
        ConfigError: the string names no known provider, or the config file is invalid.
    """
    env = os.environ if env is None else env
    table = load_table(settings.config_path or config_path(env))
    source: ModelSource
    if model is not None:  # an explicit '' is refused by _split, never read as "the default"
        source = "explicit"
    elif ENV_MODEL in env:  # the usual precedence: flag > environment > config file > default
        if not env[ENV_MODEL].strip():  # set but empty would silently mean the demo model
            raise ConfigError(f"{ENV_MODEL} is set but empty; unset it or give a model string, e.g. openai:gpt-4o")
        model, source = env[ENV_MODEL], "env"
    elif table.default_model:
        model, source = table.default_model, "config"
    else:
        model, source = DEFAULT_MODEL, "default"
    provider, model_id = _split(model, table)
    full = "local" if provider == "local" and not model_id else f"{provider}:{model_id}"
    server = own_server(model, full, settings.servers, table.models)
    base_url = (server or None) if server is not None else settings.base_url or (env.get("OPENAI_BASE_URL") or None)
    spec = _spec_from(
        provider,
        model_id,
        table,
        base_url=base_url if provider == "openai" else None,
        n_ctx=settings.n_ctx,
    )
    if spec.base_url is not None:  # a server that describes itself: its window and slots
        from booksum_app.llm.providers.server_info import describe_spec

        spec = describe_spec(spec, api_key=env.get("OPENAI_API_KEY") or None, timeout_s=settings.timeout_s)
    if settings.context_window is not None and spec.base_url is not None:  # --context-window: the user's word
        spec = dataclasses.replace(spec, info=dataclasses.replace(spec.info, context_window=settings.context_window),
                                   context_source="option",
                                   server_note=f"context {settings.context_window:,} tokens from --context-window")
    if settings.length_policy is not None:
        if settings.length_policy not in LENGTH_POLICIES:
            raise ConfigError(f"length policy {settings.length_policy!r}; use one of {LENGTH_POLICIES}")
        spec = dataclasses.replace(spec, info=dataclasses.replace(spec.info, length_policy=settings.length_policy))
    return dataclasses.replace(spec, source=source, server=server, config_warnings=table.warnings)


def choose_judge(
    judge: str | None = None,
    *,
    settings: LLMSettings = LLMSettings(),
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The BooookScore judge's model string: explicit > ``BOOKSUM_JUDGE`` > config ``judge_model``.

    None when no judge was chosen: unlike summarization there is no fallback, because the
    embedded demo model would judge for hours and print numbers that mean nothing.
    """
    if judge is not None:
        return judge
    env = os.environ if env is None else env
    table = load_table(settings.config_path or config_path(env))
    return env.get(ENV_JUDGE) or table.judge_model or None


def is_demo_model(model: str, *, settings: LLMSettings = LLMSettings(), env: Mapping[str, str] | None = None) -> bool:
    """Whether ``model`` resolves to the embedded demo model (``local`` without a GGUF path)."""
    spec = choose_model(model, settings=settings, env=env)
    return spec.provider == "local" and not spec.model_id


@dataclass(frozen=True)
class ModelEntry:
    """One row of ``booksum models``: a known model, its metadata and where the values come from."""

    name: str
    aliases: tuple[str, ...]
    context_window: int
    tokenizer: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None
    source: str  # "shipped" (booksum's table), "config" (the user's file) or "shipped+config"
    cache_write_usd_per_mtok: float | None = None


def list_models(*, settings: LLMSettings = LLMSettings(), env: Mapping[str, str] | None = None) -> list[ModelEntry]:
    """Every model of the shipped table and the user's config file, with where each comes from.

    Raises:
        ConfigError: the config file is invalid.
    """
    env = os.environ if env is None else env
    table = load_table(settings.config_path or config_path(env))
    shipped = _shipped_table()["models"]
    aliases: dict[str, list[str]] = {}
    for alias, target in table.aliases.items():
        aliases.setdefault(target, []).append(alias)
    rows = []
    for name, entry in sorted(table.models.items()):
        in_shipped, in_config = name in shipped, name in table.from_config
        source = "shipped+config" if in_shipped and in_config else "config" if in_config else "shipped"
        cached = entry.get("cached_input_usd_per_mtok")
        rows.append(ModelEntry(
            name=name, aliases=tuple(sorted(aliases.get(name, ()))),
            context_window=int(entry.get("context_window", 0)), tokenizer=str(entry.get("tokenizer", "")),
            input_usd_per_mtok=float(entry.get("input_usd_per_mtok", 0.0)),
            output_usd_per_mtok=float(entry.get("output_usd_per_mtok", 0.0)),
            cached_input_usd_per_mtok=None if cached is None else float(cached), source=source,
            cache_write_usd_per_mtok=_price_or_none(entry, "cache_write_usd_per_mtok"),
        ))
    return rows


def installed_backends() -> dict[str, bool]:
    """Provider -> whether it can be used here: built-ins whose package imports (checked without
    importing it), plugins of the ``booksum.backends`` group (False when one failed to load)."""
    import importlib.util

    builtin = {name: importlib.util.find_spec(p.package) is not None for name, p in BUILTIN.items()}
    plugins = {provider: True for provider in catalog.BACKENDS.providers() if provider not in builtin}
    return {**builtin, **plugins, **{provider: False for provider in catalog.BACKENDS.broken()}}


def resolve_model(
    model: str | None = None,
    *,
    settings: LLMSettings = LLMSettings(),
    env: Mapping[str, str] | None = None,
) -> ModelInfo:
    """Metadata (context window, tokenizer, prices) of a model, for planning without a backend."""
    return choose_model(model, settings=settings, env=env).info


def _build_backend(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    entry = provider_entry(spec)
    try:
        built = entry.factory(spec, settings, env)  # built-ins and booksum.backends plugins
    except (BooksumError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # a plugin's bug (SystemExit included): one redacted line, not a traceback
        if entry.name in BUILTIN:
            raise
        detail = server_message(str(exc), *environment_secrets(env)) or "no message"
        raise ConfigError(f"backend {spec.provider!r} could not be built ({type(exc).__name__}: {detail})") from exc
    if not isinstance(built, BackendBase):
        raise ConfigError(f"backend {spec.provider!r} built a {type(built).__name__}, not a backend: "
                          "derive it from booksum_app.plugin.BackendBase")
    return built


def native_counter(
    spec: ModelSpec, *, settings: LLMSettings = LLMSettings(), env: Mapping[str, str] | None = None,
) -> Callable[[str], int] | None:
    """The model's own token counter, loaded without the model where its provider can (vLLM: the
    tokenizer alone, no engine); None when the provider has no such counter."""
    env = os.environ if env is None else env
    counter = provider_entry(spec).counter
    return None if counter is None else counter(spec, settings, env)


def get_model(
    model: str | ModelSpec | None = None,
    *,
    settings: LLMSettings = LLMSettings(),
    env: Mapping[str, str] | None = None,
    on_call: Callable[[CallRecord], None] | None = None,
    backend: Backend | None = None,
) -> Client:
    """A ready :class:`Client` for a model string (or the default model), with cache and limits.

    ``model`` may be a :class:`ModelSpec` that :func:`choose_model` resolved already (a command
    resolves its model once, before any output, and passes the spec down).

    ``backend`` replaces the provider's backend (tests, dry runs with the fake backend); the
    client then uses that backend's own ``info`` and cache identity. ``client.notice`` (and
    ``client.spec.notice``) is set when the default fell back to the embedded demo model.

    Raises:
        ConfigError: bad model string, config file or cache directory.
        MissingAPIKey: the provider's API key is missing (a ConfigError, exit 2).
        ModelUnavailable: the backend's package or weights are missing.
    """
    env = os.environ if env is None else env
    spec = model if isinstance(model, ModelSpec) else choose_model(model, settings=settings, env=env)
    if settings.max_cost_usd is not None and not spec.info.price_known and backend is None:
        raise ConfigError(f"--max-cost cannot bound {spec.info.name}: booksum knows no price for it; give "
                          f"input_usd_per_mtok and output_usd_per_mtok under [models.\"{spec.info.name}\"] in "
                          "config.toml (docs/models.md), or run without --max-cost")
    if spec.server is not None:  # its own server, for the backend as for the cache identity
        settings = dataclasses.replace(settings, base_url=spec.server or None)
    built = backend if backend is not None else _build_backend(spec, settings, env)
    cache_store = None
    if settings.use_cache:
        cache_store = CallCache(settings.cache_dir or default_cache_dir(env))
    adaptive = spec.hosted and backend is None
    start = None  # the adaptive limit starts at its cap (--concurrency N: the user's quota)
    cap = settings.concurrency  # None: the backend's default_concurrency, which the client reads
    if cap is None and adaptive:
        cap = socket_room(ADAPTIVE_MAX_CONCURRENCY)  # then slow start from 128 to the cap
        start = min(ADAPTIVE_INITIAL_CONCURRENCY, cap)
        if spec.server_slots:  # a queueing server said how many it serves: more would only wait
            cap = start = min(spec.server_slots, cap)
        elif spec.base_url is not None:  # a server that did not say: a small first burst (config.py)
            start = min(SERVER_INITIAL_CONCURRENCY, cap)
    client = Client(
        built,
        cache=cache_store,
        concurrency=cap,
        initial_concurrency=start,
        adaptive=adaptive,
        on_call=on_call,
        spec=spec,
        notice=spec.notice,
        settings=settings,  # whole: --timeout at the door and the limiter, retries, the cost ceiling
        secrets=environment_secrets(env),  # the keys of the mapping the backend was built from
    )
    return client


__all__ = [
    "DEFAULT_MODEL", "FALLBACK_NOTICE", "LLMSettings", "ModelEntry", "ModelSpec", "choose_judge", "choose_model",
    "config_path", "default_cache_dir", "get_model", "installed_backends", "is_demo_model", "is_reasoning_model",
    "list_models", "load_table", "native_counter", "provider_entry", "resolve_model",
]
