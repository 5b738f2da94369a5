"""Strategies are plugins: the registry's handling of built-ins, broken plugins and impostors.

tests/test_example_plugins.py installs ``examples/strategy-plugin`` and drives it through the CLI.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_example_plugins import _book  # the same five-chapter book the plugins summarize

from booksum_app.errors import ConfigError
from booksum_app.strategies import STRATEGIES, StrategyConfig, StrategyJob
from booksum_app.strategies import registry as registry_module
from booksum_app.strategies.registry import StrategyRegistry


def test_without_the_plugin_lead_is_refused_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "--strategy", "lead"])
    assert result.exit_code == 2
    assert "unknown strategy 'lead'" in result.stderr and "hier" in result.stderr


def test_builtins_come_first_and_own_their_plans() -> None:
    assert list(STRATEGIES)[:3] == ["hier", "inc", "direct"]
    assert STRATEGIES["direct"].uses_chunks is False and STRATEGIES["hier"].uses_chunks is True
    assert STRATEGIES["direct"].record_fields(StrategyConfig(options=(("direct_template", "ie"),))) == {
        "direct_template": "ie"}
    assert STRATEGIES["direct"].record_fields(StrategyConfig()) == {"direct_template": "ib"}, "the declared default"


class _EntryPoint:
    def __init__(self, name: str, value: str, loaded: Any) -> None:
        self.name, self.value, self._loaded = name, value, loaded

    def load(self) -> Any:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


def test_broken_and_impostor_plugins_are_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    good = SimpleNamespace(
        name="echo", description="d", uses_chunks=False, calls_model=False, options=(), templates_dir=None,
        template_names=lambda c: (), base_prompt_set=lambda c: None, plan=lambda p: None,
        record_fields=lambda c: {}, signature_fields=lambda c: {}, run=lambda job, **kw: job,
    )
    points = [
        _EntryPoint("hier", "evil:Hier", object()),
        _EntryPoint("crash", "crash:Crash", ImportError("no module named crash_deps")),
        _EntryPoint("partial", "partial:P", SimpleNamespace(name="partial")),
        _EntryPoint("echo", "echo:Echo", good),
    ]
    monkeypatch.setattr(registry_module.importlib.metadata, "entry_points", lambda group: points)
    registry = StrategyRegistry()
    assert list(registry) == ["hier", "inc", "direct", "hier-evidence", "echo"]
    assert type(registry["hier"]).__name__ == "Hierarchical", "a plugin cannot replace a built-in"
    broken = registry.broken
    assert "cannot replace the built-in" in broken["hier"]
    assert "crash_deps" in broken["crash"] and "lacks" in broken["partial"]
    with pytest.raises(ConfigError, match="installed but could not be loaded: ImportError"):
        registry.get_strategy("crash")
    the_job = StrategyJob((), "x")
    assert registry.get_strategy("echo").run(the_job, model=None, prompts=None) is the_job, "the plugin's own object"
    assert registry.distribution("echo") is None, "no package metadata: nothing to sign with"
