"""Dollars are printed by one function (booksum_app.money.usd) that never shows an amount as less
than it is: ``--max-cost 0.003`` is not "$0.00" (issue 32), and a non-finite amount is not "$inf"."""

from __future__ import annotations

import math
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from booksum_app.money import usd

REPO = Path(__file__).resolve().parents[1]


@given(st.floats(min_value=0, max_value=1e11, allow_nan=False), st.sampled_from([2, 4]))
def test_a_shown_amount_is_the_amount_to_two_significant_digits(value: float, digits: int) -> None:
    shown = usd(value, digits=digits)
    assert shown.startswith("$")
    number = float(shown[1:].replace(",", ""))
    if value == 0:
        assert number == 0
    else:
        assert number > 0, f"{value} shown as {shown}"
        assert math.isclose(number, value, rel_tol=0.05, abs_tol=0.5 * 10.0 ** -digits), shown
    assert len(shown.partition(".")[2]) >= digits


def test_the_cases_of_the_report() -> None:
    assert usd(0.003) == "$0.003"
    assert usd(1e308) == "$1e+308" and usd(float("inf")) == "$?" and usd(float("nan")) == "$?"
    assert usd(1234.5) == "$1,234.50" and usd(0.1234, digits=4) == "$0.1234"


def test_no_module_outside_llm_formats_dollars_itself() -> None:
    """Every f-string dollar amount in the package goes through usd (llm/ is being restructured)."""
    own = re.compile(r"\$\{[^}]*:[^}]*f\}|\$\{[^}]*:g\}")
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in (REPO / "booksum_app").rglob("*.py")
                 if "llm" not in path.relative_to(REPO / "booksum_app").parts
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if own.search(line)]
    assert offenders == []
