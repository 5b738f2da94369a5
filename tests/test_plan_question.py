"""Ctrl-C at the plan question is a no: ``declined: nothing was spent``, exit 6 (docs/guarantees.md).

The first test asks a real terminal (a pseudo-terminal) and presses Ctrl-C there; the others
stand in for an interrupt that arrives outside click's own prompt (while the progress display
pauses, or before the prompt is drawn) on each paid command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pty_terminal import exit_status, read_until

from booksum_app.cli import base, cli
from booksum_app.errors import PlanDeclined
from booksum_app.testing.fake_server import FakeServer

MODEL = "openai:gpt-4-turbo"


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 200, encoding="utf-8")
    return book


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_ctrl_c_at_the_terminal_question_exits_6_and_sends_nothing(tmp_path: Path) -> None:
    import pty

    book = _book(tmp_path)
    root = Path(base.__file__).resolve().parents[2]
    with FakeServer() as server:
        pid, fd = pty.fork()
        if pid == 0:  # the child: booksum at a terminal
            env = dict(os.environ, OPENAI_API_KEY="dummy", BOOKSUM_CACHE_DIR=str(tmp_path / "cache"),
                       BOOKSUM_CONFIG=str(tmp_path / "none.toml"), PYTHONPATH=str(root), PYTHONFAULTHANDLER="1")
            os.execve(sys.executable, [sys.executable, "-m", "booksum_app", "summarize", str(book), "-m", MODEL,
                                       "--base-url", server.openai_base_url, "--max-plan-cost", "0.000001",
                                       "-o", str(tmp_path / "out" / "lisk")], env)
        asked = read_until(fd, b"[y/N]", 60)
        os.write(fd, b"\x03")
        said = read_until(fd, b"nothing was spent", 30)
        code, stacks = exit_status(pid, fd, 30)
        os.close(fd)
        requests = server.requests
    assert b"Run it?" in asked, asked[-400:]
    assert code == PlanDeclined.exit_code == 6, (said + stacks)[-3000:]
    assert b"declined: nothing was spent" in said and b"Traceback" not in said
    assert requests == [] and not (tmp_path / "out" / "lisk.json").exists()


def _interrupted(*_args: Any, **_kwargs: Any) -> Any:
    raise KeyboardInterrupt


@pytest.mark.parametrize("command", ["summarize", "score", "compare"])
@pytest.mark.parametrize("where", ["prompt", "display"])
def test_an_interrupt_anywhere_in_the_question_is_a_no(command: str, where: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setattr(base, "stdin_is_terminal", lambda: True)
    if where == "prompt":
        monkeypatch.setattr(click, "confirm", _interrupted)
    else:  # the progress display pausing for the question (summarize's; the others have none there)
        from rich.progress import Progress

        stop, pressed = Progress.stop, []

        def stop_once(self: Progress) -> None:  # Ctrl-C as the display pauses; it stops for good later
            if not pressed:
                pressed.append(True)
                raise KeyboardInterrupt
            stop(self)

        monkeypatch.setattr(Progress, "stop", stop_once)
        monkeypatch.setattr(click, "confirm", _interrupted)
    summaries = tmp_path / "sums.json"
    summaries.write_text('{"lisk.txt": "Mara bakes bread. She sells it in Lisk every morning."}', encoding="utf-8")
    with FakeServer() as server:
        url = server.openai_base_url
        args = {
            "summarize": ["summarize", str(_book(tmp_path)), "-m", MODEL, "-o", str(tmp_path / "out" / "lisk")],
            "score": ["score", str(summaries), "--judge", MODEL],
            "compare": ["compare", str(_book(tmp_path)), "--models", MODEL, "--no-judge",
                        "--out", str(tmp_path / "cmp")],
        }[command]
        result = CliRunner().invoke(cli, [*args, "--base-url", url, "--max-plan-cost", "0.000001"])
        requests = server.requests
    assert result.exit_code == 6, (result.output, result.exception)
    assert "declined: nothing was spent" in result.stderr and "interrupted" not in result.stderr
    assert requests == []
