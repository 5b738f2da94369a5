"""Strategies are plugins: the example package registers ``lead`` with no change to booksum.

The first test really installs ``examples/strategy-plugin`` (pip, offline, into a temporary
target) and drives the CLI in a subprocess that sees it; the others check the registry's
handling of built-ins, broken plugins and impostors in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from booksum_app.errors import ConfigError
from booksum_app.strategies import STRATEGIES, StrategyConfig, StrategyJob
from booksum_app.strategies import registry as registry_module
from booksum_app.strategies.registry import StrategyRegistry

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "strategy-plugin"


def _book(tmp_path: Path) -> Path:
    chapters = [
        f"Chapter {n}\n\nThe {n}th morning began in Lisk. Mara baked bread before dawn. "
        "Teo counted the coins twice. The baker's cat slept in the flour bin.\n"
        for n in range(1, 6)
    ]
    book = tmp_path / "lisk.txt"
    book.write_text("\n".join(chapters), encoding="utf-8")
    return book


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(PLUGIN)],
        check=True, capture_output=True, text=True,
    )
    return target


def _booksum(plugin_path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(REPO)])}
    return subprocess.run(
        [sys.executable, "-c", "from booksum_app.cli import main; main()", *args],
        check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )


@pytest.mark.slow
def test_installed_plugin_works_in_summarize_inspect_and_compare(plugin_path: Path, tmp_path: Path) -> None:
    book = _book(tmp_path)
    done = _booksum(plugin_path, "summarize", str(book), "--strategy", "lead", "--max-summary-len", "70",
                    "-o", str(tmp_path / "out" / "lisk"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "lisk.md").read_text(encoding="utf-8")
    assert "The 1th morning began in Lisk." in summary and "The 5th morning began in Lisk." in summary
    assert "Teo counted" not in summary, "round-robin: every chapter's first sentence before any second"
    record = json.loads((tmp_path / "out" / "lisk.json").read_text(encoding="utf-8"))
    assert record["strategy"] == "lead" and record["totals"]["calls"] == 0 and record["config"]["clean"] is False

    inspected = _booksum(plugin_path, "inspect", str(book), "--json", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    plans = {p["strategy"]: p for p in json.loads(inspected.stdout)["plans"]}
    assert plans["lead"]["calls"] == 0 and {"hier", "inc", "direct"} <= set(plans)

    helped = _booksum(plugin_path, "summarize", "--help", cwd=tmp_path)
    assert "lead" in helped.stdout

    compared = _booksum(plugin_path, "compare", str(book), "--strategies", "lead", "--no-judge", "--yes",
                        "--no-plots", "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "lead" in compared.stdout


def test_without_the_plugin_lead_is_refused_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "--strategy", "lead"])
    assert result.exit_code == 2
    assert "unknown strategy 'lead'" in result.stderr and "hier" in result.stderr


def test_builtins_come_first_and_own_their_plans() -> None:
    assert list(STRATEGIES)[:3] == ["hier", "inc", "direct"]
    assert STRATEGIES["direct"].uses_chunks is False and STRATEGIES["hier"].uses_chunks is True
    assert STRATEGIES["direct"].record_fields(StrategyConfig(direct_template="ie")) == {"direct_template": "ie"}


class _EntryPoint:
    def __init__(self, name: str, value: str, loaded: Any) -> None:
        self.name, self.value, self._loaded = name, value, loaded

    def load(self) -> Any:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


def test_broken_and_impostor_plugins_are_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    good = SimpleNamespace(
        name="echo", description="d", uses_chunks=False, calls_model=False, template_names=lambda c: (),
        base_prompt_set=lambda c: None, plan=lambda p: None, record_fields=lambda c: {},
        run=lambda job, **kw: job,
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
    assert registry.get_strategy("echo").run(StrategyJob((), "x"), model=None, prompts=None) is not None
