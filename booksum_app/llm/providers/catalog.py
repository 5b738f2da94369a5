"""Which backend serves a provider: built-in factories and the ``booksum.backends`` entry points.

A provider is the part of a model string before the first colon (``openai:gpt-4o``). Each maps
to a factory ``(spec, settings, env) -> Backend``; a built-in factory imports its SDK only when
called, so ``vllm`` (CUDA only) and ``llama_cpp`` stay optional. A third-party package adds a
provider the way strategies are added (docs/architecture.md)::

    [project.entry-points."booksum.backends"]
    myprov = "booksum_myprov:make_backend"

The factory receives the resolved :class:`~booksum_app.llm.registry.ModelSpec` (``model_id``,
``info``), the :class:`~booksum_app.llm.registry.LLMSettings` and the environment, and returns
an object with the :class:`~booksum_app.llm.base.Backend` protocol. It may carry a
``MODEL_DEFAULTS`` mapping (``context_window``, ``tokenizer``, prices, ``note``) for models the
table does not list (as a BackendBase subclass declares ``model_defaults``); the factory's
own attribute is read first, then its module's ``MODEL_DEFAULTS``. Else booksum plans with an
8192-token context, estimated token counts and no price, and says so. Declared defaults are
checked when a model of the plugin is chosen (a context window that is not a positive whole
number, a price that is not a finite non-negative number: one ConfigError line). A plugin
cannot take a built-in provider's name; one that fails to load is reported by name when asked
for, without breaking the others.
"""

from __future__ import annotations

import importlib.metadata
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from booksum_app.config import MAX_PRICE_USD_PER_MTOK, checked_count, checked_real, shown
from booksum_app.errors import ConfigError, server_message
from booksum_app.llm.base import Backend, BackendBase
from booksum_app.llm.door import environment_secrets
from booksum_app.llm.openai_compatible import COMPATIBLE_PROVIDERS
from booksum_app.signature import code_hash

if TYPE_CHECKING:
    from booksum_app.llm.spec import LLMSettings, ModelSpec

ENTRY_POINT_GROUP = "booksum.backends"
Factory = Callable[["ModelSpec", "LLMSettings", Mapping[str, str]], "Backend"]
# the model's own token counter, built without the model (planning must not load an engine)
CounterFactory = Callable[["ModelSpec", "LLMSettings", Mapping[str, str]], Callable[[str], int]]
PLUGIN_DEFAULTS: Mapping[str, Any] = {
    "context_window": 8192,
    "tokenizer": "estimate",
    "input_usd_per_mtok": 0.0,
    "output_usd_per_mtok": 0.0,
}


def _openai(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    from booksum_app.llm.providers.openai import OpenAIBackend, Transport

    # BOOKSUM_OPENAI_TRANSPORT=sdk: every call through the openai SDK, even to a plain http:// server
    chosen = env.get("BOOKSUM_OPENAI_TRANSPORT", "").strip().lower() or "auto"
    if chosen not in ("auto", "sdk"):
        raise ConfigError(f"BOOKSUM_OPENAI_TRANSPORT={chosen[:20]!r}: use auto (the default) or sdk")
    transport: Transport = "sdk" if chosen == "sdk" else "auto"
    # BOOKSUM_ENDPOINT_MAX_IN_FLIGHT=N: at most N calls in flight on each of several base URLs
    limit = env.get("BOOKSUM_ENDPOINT_MAX_IN_FLIGHT", "").strip()
    if limit and (not limit.isdigit() or int(limit) < 1):
        raise ConfigError(f"BOOKSUM_ENDPOINT_MAX_IN_FLIGHT={limit[:20]!r}: give a whole number of calls, at least 1")
    return OpenAIBackend(spec.info, model_id=spec.model_id, api_key=env.get("OPENAI_API_KEY") or None,
                         base_url=spec.base_url, timeout_s=settings.timeout_s, reasoning=spec.reasoning,
                         reasoning_effort=settings.reasoning_effort, transport=transport,
                         max_in_flight_per_endpoint=int(limit) if limit else None, deployment=settings.deployment,
                         concurrency=settings.concurrency, thinking=settings.thinking,
                         server_identity=spec.server_identity)


def _compatible(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    """A hosted provider by its own name (``groq:``, ``gemini:``, ...): its OpenAI-compatible endpoint and key."""
    from booksum_app.errors import MissingAPIKey
    from booksum_app.llm.providers.openai import OpenAIBackend

    entry = COMPATIBLE_PROVIDERS[spec.provider]
    key = env.get(entry.key_env) or None
    if key is None:
        raise MissingAPIKey(f"No {entry.name} API key: set {entry.key_env} (booksum sends {spec.provider}:MODEL "
                            f"to {entry.base_url})")
    return OpenAIBackend(spec.info, model_id=spec.model_id, api_key=key, base_url=entry.base_url,
                         timeout_s=settings.timeout_s, reasoning_effort=settings.reasoning_effort,
                         legacy_max_tokens=True, concurrency=settings.concurrency, thinking=settings.thinking)


def _anthropic(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    from booksum_app.llm.providers.anthropic import AnthropicBackend

    return AnthropicBackend(spec.info, model_id=spec.model_id, api_key=env.get("ANTHROPIC_API_KEY") or None,
                            base_url=settings.base_url if settings.base_url else env.get("ANTHROPIC_BASE_URL"),
                            timeout_s=settings.timeout_s)


def _ollama(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    from booksum_app.llm.providers.ollama import OllamaBackend

    return OllamaBackend(spec.info, model_id=spec.model_id, host=settings.base_url or env.get("OLLAMA_HOST") or None,
                         timeout_s=settings.timeout_s, known_context=spec.known, deployment=settings.deployment,
                         thinking=settings.thinking, reasoning_effort=settings.reasoning_effort)


def _vllm_engine_args(settings: LLMSettings, env: Mapping[str, str]) -> dict[str, Any]:
    from booksum_app.llm.model_table import config_path, load_table

    # engine arguments pass through untouched: config [vllm_engine], then --engine-arg k=v
    engine = {**load_table(settings.config_path or config_path(env)).vllm_engine, **dict(settings.engine_args)}
    engine.setdefault("tensor_parallel_size", settings.tensor_parallel_size)
    return engine


def _vllm(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    from booksum_app.llm.providers.vllm import VLLMBackend

    return VLLMBackend(spec.info, model_id=spec.model_id, known_context=spec.known, thinking=settings.thinking,
                       reasoning_effort=settings.reasoning_effort, **_vllm_engine_args(settings, env))


def _vllm_counter(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Callable[[str], int]:
    from booksum_app.llm.providers.vllm import tokenizer_counter

    return tokenizer_counter(spec.model_id, _vllm_engine_args(settings, env))


def _local(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> Backend:
    from booksum_app.llm.model_table import default_cache_dir
    from booksum_app.llm.providers.local import LocalBackend

    # the bundled weights' faster copy lives beside the call cache (local_weights.py)
    weights_dir = (settings.cache_dir or default_cache_dir(env)) / "weights"
    return LocalBackend(spec.info, model_path=Path(spec.model_id).expanduser() if spec.model_id else None,
                        n_ctx=settings.n_ctx, weights_dir=weights_dir)


@dataclass(frozen=True)
class Provider:
    """One provider: how its backend is built and what booksum must know about it before a call."""

    name: str
    factory: Factory
    package: str  # the module that must import for the provider to be usable (``booksum models``)
    hosted: bool = False  # a paid API: adaptive concurrency limit, notes on assumed prices
    server_context: bool = False  # the server reports each model's context window (inspect asks it)
    model_defaults: Mapping[str, Any] | None = None  # a plugin's planning defaults for unlisted models
    distribution: tuple[str, str] | None = None  # a plugin's (name, version) from its package metadata
    code: str | None = None  # a plugin's code hash (signature.code_hash): moves when its code does
    counter: CounterFactory | None = None  # a native tokenizer's counter without the engine (vLLM)


BUILTIN: Mapping[str, Provider] = {p.name: p for p in (
    Provider("openai", _openai, "openai", hosted=True),
    Provider("anthropic", _anthropic, "anthropic", hosted=True),
    Provider("vllm", _vllm, "vllm", counter=_vllm_counter),
    Provider("ollama", _ollama, "openai", server_context=True),  # its HTTP client comes with openai
    Provider("local", _local, "llama_cpp"),
    # hosted APIs by their own names and keys, through their OpenAI-compatible endpoints (openai_compatible.py)
    *(Provider(name, _compatible, "openai", hosted=True) for name in COMPATIBLE_PROVIDERS),
)}


def _plugin_provider(name: str, loaded: Any, dist: tuple[str, str] | None, code: str | None = None) -> Provider:
    """A plugin's entry point as a provider: a BackendBase subclass (``from_spec``) or a factory function."""
    if isinstance(loaded, type) and issubclass(loaded, BackendBase):
        defaults = loaded.model_defaults if isinstance(loaded.model_defaults, Mapping) else None
        return Provider(name, loaded.from_spec, loaded.__module__.partition(".")[0], model_defaults=defaults,
                        distribution=dist, code=code)
    if not callable(loaded):
        raise TypeError("it is neither a BackendBase subclass nor a factory function")
    module = sys.modules.get(getattr(loaded, "__module__", "") or "")
    declared = getattr(loaded, "MODEL_DEFAULTS", None) or getattr(module, "MODEL_DEFAULTS", None)
    return Provider(name, loaded, name, model_defaults=declared if isinstance(declared, Mapping) else None,
                    distribution=dist, code=code)


def plugin_fields(model_name: str) -> dict[str, str | None]:
    """What signs the backend plugin serving ``model_name``: ``backend`` (its package ``name-version``)
    and ``backendcode`` (its code hash); both None for a built-in provider."""
    provider = model_name.partition(":")[0]
    if provider in BUILTIN or not BACKENDS.is_provider(provider):
        return {"backend": None, "backendcode": None}
    entry = BACKENDS.provider(provider)
    dist = entry.distribution
    return {"backend": None if dist is None else f"{dist[0]}-{dist[1]}", "backendcode": entry.code}


_PRICES = ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok", "cache_write_usd_per_mtok")


def _checked_defaults(name: str, declared: Mapping[str, Any]) -> Mapping[str, Any]:
    """A plugin's declared defaults, or ConfigError naming the first value booksum cannot plan with."""
    what = f"the {name!r} backend plugin's model defaults:"
    if "context_window" in declared:
        checked_count(declared["context_window"], what=f"{what} context_window", minimum=1)
    for key in ("tokenizer", "note"):
        if key in declared and not isinstance(declared[key], str):
            raise ConfigError(f"{what} {key} must be text; got {shown(declared[key])}")
    for key in _PRICES:
        if declared.get(key) is not None:
            checked_real(declared[key], what=f"{what} {key}", maximum=MAX_PRICE_USD_PER_MTOK)
    return declared


def _distribution(entry: importlib.metadata.EntryPoint) -> tuple[str, str] | None:
    dist = entry.dist
    return None if dist is None else (str(dist.metadata["Name"] or dist.name), str(dist.version))


class BackendRegistry:
    """Built-in providers plus the installed plugins', loaded on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plugins: dict[str, Provider] | None = None
        self._broken: dict[str, str] = {}

    def _discover(self) -> dict[str, Provider]:
        with self._lock:
            if self._plugins is None:
                found: dict[str, Provider] = {}
                for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                    if entry.name in BUILTIN:
                        self._broken[entry.name] = f"{entry.value} cannot replace the built-in {entry.name!r}"
                        continue
                    try:
                        found[entry.name] = _plugin_provider(entry.name, entry.load(), _distribution(entry),
                                                             code_hash(entry.module))
                    except Exception as exc:  # noqa: BLE001 -- one broken plugin must not break the rest
                        detail = server_message(str(exc), *environment_secrets())
                        self._broken[entry.name] = f"{type(exc).__name__}: {detail}"
                self._plugins = found
            return self._plugins

    def providers(self) -> tuple[str, ...]:
        """Built-in providers, then plugin providers that loaded."""
        return (*BUILTIN, *sorted(self._discover()))

    def is_provider(self, name: str) -> bool:
        return name in BUILTIN or name in self._discover() or name in self._broken

    def provider(self, name: str) -> Provider:
        """The provider called ``name``; ConfigError with the reason for a broken or unknown plugin."""
        if name in BUILTIN:
            return BUILTIN[name]
        plugins = self._discover()
        if name in plugins:
            return plugins[name]
        reason = self._broken.get(name) or "it is not installed"
        raise ConfigError(f"backend {name!r} cannot be used: {reason}")

    def plugin_defaults(self, name: str) -> Mapping[str, Any]:
        """Planning defaults of a plugin provider's models the table does not list."""
        declared = self.provider(name).model_defaults if name in self._discover() else None
        note = (f"model of the {name!r} backend plugin: assuming an 8192-token context, estimated token "
                "counts and no price; add it under [models] in config.toml")
        return {**PLUGIN_DEFAULTS, "note": note, **_checked_defaults(name, declared or {})}

    def factory(self, name: str) -> Factory:
        """The factory of ``name``; ConfigError with the reason for a broken or unknown plugin."""
        return self.provider(name).factory

    def broken(self) -> Mapping[str, str]:
        """Plugins that failed to load, with why."""
        self._discover()
        return dict(self._broken)


BACKENDS = BackendRegistry()

__all__ = ["BACKENDS", "BUILTIN", "ENTRY_POINT_GROUP", "BackendRegistry", "Factory", "Provider", "plugin_fields"]
