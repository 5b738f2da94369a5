"""Every table and after-run line in a real pseudo-terminal of 80 and 120 columns: no identifier (run id,
model name, configuration, path) and no number is cut or broken across lines; prose wraps at spaces."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.money import usd
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


def in_terminal(args: list[str], columns: int, env: dict[str, str], timeout: float = 120) -> str:
    """``python -m booksum_app ARGS`` with stdin, stdout and stderr on a pseudo-terminal of ``columns``
    columns (as a user's terminal: isatty, TIOCGWINSZ); what it printed, colour codes removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full_env = {k: v for k, v in {**os.environ, **env}.items() if k not in ("COLUMNS", "LINES")}
    full_env.update(TERM="xterm", PYTHONPATH=str(REPO), NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "booksum_app", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=full_env, cwd=env.get("CWD", str(REPO)), close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError as exc:  # EIO: the child closed the terminal
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=timeout)
    text = _ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "\n")
    assert proc.returncode == 0, text
    return text


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def assert_whole(text: str, tokens: list[str], columns: int) -> None:
    """Every token appears whole on one line, and no line is wider than the terminal."""
    lines = _lines(text)
    assert all(len(line) <= columns for line in lines), [line for line in lines if len(line) > columns]
    for token in tokens:
        assert any(token in line for line in lines), (token, text)


@pytest.fixture()
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A call cache holding a few calls of two runs (a summary and a scoring), and what logs --json says of them."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / "jane-austen_pride-and-prejudice.txt"
    book.write_text("Chapter 1\n\n" + "Elizabeth walks to Netherfield in the rain, and Darcy notices. " * 60,
                    encoding="utf-8")
    cache = tmp_path / "cache"
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(book), "-m", "openai:gpt-4o-mini", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "--cache-dir", str(cache),
                                          "-o", str(tmp_path / "out"), "--yes"])
        assert result.exit_code == 0, result.output
    calls = json.loads(CliRunner().invoke(cli, ["logs", "--cache-dir", str(cache), "--json", "-"]).stdout)
    assert calls
    return {"cache": cache, "calls": calls, "book": book, "tmp": tmp_path}


@pytest.mark.parametrize("columns", [80, 120])
def test_logs_shows_whole_run_ids_models_and_costs(logged: dict[str, object], columns: int) -> None:
    text = in_terminal(["logs", "--cache-dir", str(logged["cache"])], columns, {"OPENAI_API_KEY": "dummy"})
    calls = logged["calls"]
    assert isinstance(calls, list)
    tokens = [c["run"] for c in calls] + [c["model"] for c in calls]
    tokens += [usd(c["cost_usd"], digits=4) for c in calls if c["cost_usd"]]  # booksum's one money format
    assert_whole(text, tokens, columns)
    assert "…" not in text


@pytest.mark.parametrize("columns", [80, 120])
def test_models_shows_whole_model_names_and_numbers(columns: int, tmp_path: Path) -> None:
    env = {"BOOKSUM_CONFIG": str(tmp_path / "none.toml")}
    listing = json.loads(CliRunner().invoke(cli, ["models", "--json", "-"], env=env).stdout)
    text = in_terminal(["models"], columns, env)
    table = text[:text.index("Backends:")]
    names = [m["name"] for m in listing["models"]]
    assert len(names) > 10
    assert_whole(table, [*names, *(f"{m['context_window']:,}" for m in listing["models"])], columns)
    assert "…" not in table


@pytest.mark.parametrize("columns", [80, 120])
def test_compares_plan_shows_whole_configurations(logged: dict[str, object], columns: int) -> None:
    book = logged["book"]
    out = Path(str(logged["tmp"])) / "grid"
    args = ["compare", str(book), "--strategies", "hier,inc,direct", "-m", "openai:gpt-4o-mini,openai:gpt-4o",
            "--chunk-sizes", "2048,4096", "--judge", "openai:gpt-4o-mini", "--out", str(out), "--plan-only"]
    plan = json.loads(CliRunner().invoke(cli, [*args, "--json", "-"], env={"OPENAI_API_KEY": "d"}).stdout)
    text = in_terminal(args, columns, {"OPENAI_API_KEY": "d"})
    names = [line["name"] for line in plan["lines"] if line["name"] != "judge"]
    assert len(names) == 10
    assert_whole(text, [*names, f"${plan['cost_usd']:.2f}", f"{plan['calls']:,}"], columns)
    assert "…" not in text


@pytest.mark.parametrize("columns", [80, 120])
def test_after_run_lines_wrap_at_spaces_only(logged: dict[str, object], columns: int) -> None:
    """summarize's record line (path, calls, tokens, dollars, signature) wraps between words in a terminal."""
    tmp = Path(str(logged["tmp"]))
    with FakeServer() as server:
        text = in_terminal(["summarize", str(logged["book"]), "-m", "openai:gpt-4o-mini", "--base-url",
                            server.openai_base_url, "--strategy", "direct", "--cache-dir", str(logged["cache"]),
                            "-o", str(tmp / "again"), "--yes"], columns, {"OPENAI_API_KEY": "dummy"})
    record = json.loads((tmp / "again.json").read_text(encoding="utf-8"))
    start = text.index("record: ")
    words = " ".join(text[start:].split("quality:")[0].split()).split(" ")
    assert_whole(text, [w for w in words if len(w) <= columns], columns)
    assert record["signature"] in " ".join(text.split()) or len(record["signature"]) > columns


@pytest.mark.parametrize("columns", [80, 120])
def test_inspect_shows_whole_section_figures_and_strategies(columns: int) -> None:
    from conftest import book_path

    book = book_path("pride")
    report = json.loads(CliRunner().invoke(cli, ["inspect", str(book), "-m", "openai:gpt-4o", "--json", "-"]).stdout)
    text = in_terminal(["inspect", str(book), "-m", "openai:gpt-4o"], columns, {})
    tokens = [f"{s['tokens']:,}" for s in report["sections"]] + [p["strategy"] for p in report["plans"]]
    tokens += [f"${p['cost_usd']:.2f}" for p in report["plans"]]
    assert_whole(text, tokens, columns)


def test_a_table_whose_first_column_is_wider_than_the_terminal_folds_its_rows() -> None:
    from booksum_app.cli.tables import Col, fit_table

    name = "openai:" + "x" * 90
    fitted = fit_table("t", [Col("model", 0, "left"), Col("cost", 1)], [[name, "$1.00"]], 80)
    assert fitted.table is None and f"model: {name}" in fitted.records and "cost: $1.00" in fitted.records
