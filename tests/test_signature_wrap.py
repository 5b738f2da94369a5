"""Signatures break only after ``|`` at any width: never inside a field, and copied back they are whole."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from booksum_app.cli.consoles import plain_console, print_signature
from booksum_app.signature import wrap_signature

field = st.text("abcdefghijklmnopqrstuvwxyz0123456789:.-_/", min_size=1, max_size=30)
signature = st.lists(field, min_size=1, max_size=12).map("|".join)
REAL = ("booookscore|judge:openai:gpt-4o-mini|prompt:j4-3f2a9c|mode:sentence|split:punkt-en-1a2b3c|"
        "splitv:3.9.1|temp:0|v:0.3.0")


@given(text=signature, width=st.integers(min_value=40, max_value=200))
def test_breaks_only_after_a_bar_and_joins_back(text: str, width: int) -> None:
    lines = wrap_signature(text, width)
    assert "".join(lines) == text, "copied line by line, the signature is whole"
    assert all(line.endswith("|") for line in lines[:-1]), "every break is right after a |"
    for line in lines:
        assert len(line) <= width or "|" not in line.rstrip("|"), f"only a lone field may pass the width: {line!r}"
    fields = text.split("|")
    assert [f for line in lines for f in line.rstrip("|").split("|")] == fields, "no field is cut"


@given(name=st.text("abcdefgh -", min_size=1, max_size=20), width=st.integers(min_value=40, max_value=200))
def test_a_named_signature_keeps_its_signature_whole(name: str, width: int) -> None:
    lines = wrap_signature(f"{name}: {REAL}", width)
    assert "".join(lines) == f"{name}: {REAL}"
    assert all(len(line) <= width for line in lines)


@given(width=st.integers(min_value=40, max_value=200))
def test_a_terminal_of_any_width_gets_whole_fields(width: int) -> None:
    out = io.StringIO()
    terminal = plain_console(file=out, width=width, force_terminal=True, color_system=None)
    print_signature(terminal, f"gpt4-2048-hier: {REAL}")
    lines = out.getvalue().splitlines()
    assert "".join(lines) == f"gpt4-2048-hier: {REAL}"
    assert all(len(line) <= width for line in lines)


def test_a_pipe_gets_one_line() -> None:
    out = io.StringIO()
    print_signature(plain_console(file=out, width=40, color_system=None), REAL)
    assert out.getvalue() == REAL + "\n"


def test_score_signatures_in_a_real_terminal(tmp_path: Path) -> None:
    import pytest
    from click.testing import CliRunner
    from test_tables_pty import in_terminal

    from booksum_app.cli import cli

    path = tmp_path / "small.json"
    path.write_text(json.dumps({"lisk.epub": "Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it.",
                                "north.epub": "An old pilot flies mail across the mountains. He teaches her."}),
                    encoding="utf-8")
    piped = CliRunner().invoke(cli, ["score", str(path), "--no-judge"], catch_exceptions=False).stdout
    whole = [line for line in piped.splitlines() if line.startswith("small: ")]
    assert len(whole) == 2 and max(map(len, whole)) > 40
    for columns in (40, 60):
        text = in_terminal(["score", str(path), "--no-judge"], columns, {})
        lines = [line.rstrip() for line in text.splitlines()]
        assert all(len(line) <= columns for line in lines), [line for line in lines if len(line) > columns]
        rejoined = re.sub(r"\|\n", "|", "\n".join(lines)).splitlines()
        missing = [line for line in whole if line not in rejoined]
        if missing:
            pytest.fail(f"at {columns} columns a signature broke inside a field: {missing}\n{text}")
