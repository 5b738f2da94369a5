"""The code's shape: no module over 500 lines, no function over 80, click commands included.

A command's decorators (its option list) are not counted: the function's own lines are what
is measured, from its ``def`` to its end, so logic cannot hide in a command's body.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "booksum_app"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """From the ``def`` line to the last line (decorators above the ``def`` are not counted)."""
    return (node.end_lineno or node.lineno) - node.lineno + 1


def test_no_module_is_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES}
    assert not long, f"split these modules: {long}"


def test_no_function_is_over_80_lines() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _function_lines(node) > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({_function_lines(node)} lines)")
    assert not long, "split these functions: " + "; ".join(long)


def test_the_measure_counts_a_commands_body_and_not_its_options() -> None:
    source = "\n".join(["import click", "@click.command()", *[f"@click.option('--o{i}')" for i in range(90)],
                        "def cmd(**kw):", *["    x = 1"] * 81])
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef))
    assert _function_lines(node) == 82  # the def line and 81 body lines; 90 option lines not counted
