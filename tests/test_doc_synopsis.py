"""Each command's synopsis in its doc names every option its --help lists (hidden aliases excepted)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from booksum_app.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = {"summarize": "docs/summarize.md", "score": "docs/scoring.md"}


def synopsis(doc: str, command: str) -> str:
    """The fenced block of ``doc`` that starts with ``booksum COMMAND``."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
        if block.startswith(f"booksum {command} "):
            return block
    pytest.fail(f"{doc} has no synopsis block starting with 'booksum {command}'")


@pytest.mark.parametrize("command", sorted(DOCS))
def test_synopsis_lists_every_option(command: str) -> None:
    cmd = cli.commands[command]
    block = synopsis(DOCS[command], command)
    named = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", block))
    missing = []
    for param in cmd.params:
        if not isinstance(param, click.Option) or param.hidden or "--help" in param.opts:
            continue
        if not set(param.opts) & named:
            missing.append("/".join(param.opts))
    assert not missing, f"{DOCS[command]}'s synopsis of {command} misses {missing}"
