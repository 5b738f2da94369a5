"""The code's shape: no module over 500 lines, no function over 80 (click commands aside)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "booksum_app"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _is_click_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # the option lists of a command are declarations, not logic
    return any("command" in ast.unparse(d) for d in node.decorator_list)


def test_no_module_is_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES}
    assert not long, f"split these modules: {long}"


def test_no_function_is_over_80_lines() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_click_command(node):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "split these functions: " + "; ".join(long)
