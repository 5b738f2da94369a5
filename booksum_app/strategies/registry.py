"""Where strategies come from: the ``booksum.strategies`` entry point group, as simonw/llm finds plugins.

booksum's own strategies register in that group too (``pyproject.toml``); when booksum runs
from a source tree without installed metadata they are taken from :data:`BUILTIN` instead,
through the same loader. A third-party package adds a strategy by declaring::

    [project.entry-points."booksum.strategies"]
    lead = "booksum_lead:Lead"

The object (or class, instantiated with no arguments) must provide the
:class:`~booksum_app.strategies.base.Strategy` protocol. A plugin that fails to load or
lacks part of the protocol is not offered; asking for it by name gives the reason.
Built-in names cannot be taken over by a plugin.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from booksum_app.errors import ConfigError
from booksum_app.signature import code_hash
from booksum_app.strategies.base import Strategy

ENTRY_POINT_GROUP = "booksum.strategies"
BUILTIN = {
    "hier": "booksum_app.strategies.hierarchical:Hierarchical",
    "inc": "booksum_app.strategies.incremental:Incremental",
    "direct": "booksum_app.strategies.direct:Direct",
    "hier-evidence": "booksum_app.strategies.hier_evidence:HierEvidence",
}
REQUIRED = ("name", "description", "uses_chunks", "calls_model", "options", "templates_dir", "template_names",
            "base_prompt_set", "plan", "record_fields", "signature_fields", "run")


def _instantiate(obj: Any, name: str) -> Strategy:
    strategy = obj() if isinstance(obj, type) else obj
    missing = [attr for attr in REQUIRED if not hasattr(strategy, attr)]
    if missing:
        raise TypeError(f"it lacks {', '.join(missing)} of the Strategy protocol")
    if strategy.name != name:
        raise TypeError(f"it calls itself {strategy.name!r}, registered as {name!r}")
    return strategy  # type: ignore[no-any-return]


def _load_path(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


class StrategyRegistry(Mapping[str, Strategy]):
    """The installed strategies by name, loaded on first use (importing a plugin can be slow)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._strategies: dict[str, Strategy] | None = None
        self._broken: dict[str, str] = {}
        self._dists: dict[str, tuple[str, str]] = {}
        self._codes: dict[str, str] = {}

    def _load(self) -> dict[str, Strategy]:
        with self._lock:
            if self._strategies is None:
                self._strategies = self._discover()
            return self._strategies

    def _discover(self) -> dict[str, Strategy]:
        found: dict[str, Strategy] = {}
        sources: dict[str, Any] = dict(BUILTIN)
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if entry.name in BUILTIN and entry.value != BUILTIN[entry.name]:
                self._broken[entry.name] = f"{entry.value} cannot replace the built-in {entry.name!r}"
                continue
            sources.setdefault(entry.name, entry)
        for name, source in sources.items():
            try:
                loaded = _load_path(source) if isinstance(source, str) else source.load()
                found[name] = _instantiate(loaded, name)
                dist = None if isinstance(source, str) else source.dist
                if dist is not None and name not in BUILTIN:  # a plugin's package: its version signs its records
                    self._dists[name] = (str(dist.metadata["Name"] or dist.name), str(dist.version))
                if not isinstance(source, str) and name not in BUILTIN:  # and its code, changed or not its version
                    self._codes[name] = code_hash(source.module)
            except Exception as exc:  # noqa: BLE001 -- a broken plugin must not break the built-in strategies
                self._broken[name] = f"{type(exc).__name__}: {exc}"
        return found

    def __getitem__(self, name: str) -> Strategy:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    @property
    def broken(self) -> Mapping[str, str]:
        """Strategies that were found but could not be loaded, with the reason."""
        self._load()
        return dict(self._broken)

    def get_strategy(self, name: str) -> Strategy:
        """The strategy called ``name``.

        Raises:
            ConfigError: no such strategy, or its plugin failed to load (the message says why).
        """
        strategies = self._load()
        if name in strategies:
            return strategies[name]
        if name in self._broken:
            raise ConfigError(f"strategy {name!r} is installed but could not be loaded: {self._broken[name]}")
        raise ConfigError(f"unknown strategy {name!r}; installed: {', '.join(strategies)}")

    def distribution(self, name: str) -> tuple[str, str] | None:
        """``(package name, version)`` of the plugin that provides ``name``; None for booksum's own."""
        self._load()
        return self._dists.get(name)

    def code(self, name: str) -> str | None:
        """A short hash of the code of the plugin that provides ``name`` (``signature.code_hash``); None
        for booksum's own."""
        self._load()
        return self._codes.get(name)

    def reload(self) -> None:
        """Forget what was found (after installing a plugin in the same process: tests)."""
        with self._lock:
            self._strategies, self._broken, self._dists, self._codes = None, {}, {}, {}


STRATEGIES = StrategyRegistry()


def get_strategy(name: str) -> Strategy:
    """The installed strategy called ``name`` (see :meth:`StrategyRegistry.get_strategy`)."""
    return STRATEGIES.get_strategy(name)


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "STRATEGIES", "StrategyRegistry", "get_strategy"]
