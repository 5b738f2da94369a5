"""A strategy that fails or answers nonsense ends in one line (exit 1) and the failed run's record.

The runner checks what ``StrategyBase.run`` gives back (``runners/summarize.py``): a plugin's
exception (``SystemExit`` included) or a result that is not a ``StrategyResult`` with a text
summary is one redacted line, never a traceback, and what the run paid is in ``NAME.failed.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.plugin import Request, StrategyResult
from booksum_app.strategies import STRATEGIES
from booksum_app.testing.fake_server import FakeServer

KEY = "sk-strat" + "M3n4B5v6C7x8" * 2


def _paid_then(outcome: Any) -> Any:
    def run(job: Any, *, model: Any, prompts: Any, on_progress: Any = None) -> Any:
        model.complete(Request(prompt="Mara bakes bread in Lisk.", max_tokens=20, purpose="summarize"))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return run


@pytest.mark.parametrize(("outcome", "says"), [
    (RuntimeError(f"lost my key {KEY}"), "strategy 'direct' failed (RuntimeError: lost my key [redacted])"),
    (SystemExit(0), "strategy 'direct' failed (SystemExit: 0)"),
    ("just a summary", "strategy 'direct' returned a str, not a StrategyResult"),
    (StrategyResult(summary=None, nodes=(), calls=()),  # type: ignore[arg-type]
     "strategy 'direct' returned a StrategyResult whose summary is a NoneType"),
    (StrategyResult(summary="Fine.", nodes=None, calls=()),  # type: ignore[arg-type]
     "whose nodes is a NoneType"),
])
def test_a_failing_strategy_is_one_line_exit_1_and_a_failed_record(
    outcome: Any, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(STRATEGIES["direct"], "run", _paid_then(outcome))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKSUM_CONFIG", str(tmp_path / "none.toml"))
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\nMara baked bread before dawn. Teo counted the coins twice.\n", encoding="utf-8")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(book), "--strategy", "direct", "-m", "openai:gpt-4o",
                                          "--base-url", server.openai_base_url, "--no-clean", "--yes",
                                          "-o", str(tmp_path / "out" / "lisk")])
    assert result.exit_code == 1, result.output
    last = result.stderr.splitlines()[-1]
    assert says in last and "Traceback" not in result.output and "M3n4B5" not in result.output
    failed = json.loads((tmp_path / "out" / "lisk.failed.json").read_text(encoding="utf-8"))
    assert failed["totals"]["calls"] == 1 and failed["totals"]["input_tokens"] > 0
    assert not (tmp_path / "out" / "lisk.json").exists()
