"""Dollars as booksum prints them: one function, so no amount shows as less than it is.

``usd(0.003)`` is ``$0.003``, not ``$0.00`` (a ``--max-cost 0.003`` ceiling must not read "ceiling of
$0.00"): an amount under the shown precision gets the decimals its first two significant digits
need. Thousands are grouped; a non-finite amount (which the model table refuses as a price)
prints as ``$?`` rather than ``$inf``.
"""

from __future__ import annotations

import math


def usd(value: float, *, digits: int = 2) -> str:
    """``value`` dollars with at least ``digits`` decimals, and two significant digits when smaller."""
    if not math.isfinite(value):
        return "$?"
    if abs(value) >= 1e12:  # no bill is this large: a typo's size, said short
        return f"${value:.3g}"
    places = digits
    if 0 < abs(value) < 10.0 ** -digits * 100:  # shown with fewer than two significant digits
        places = max(digits, 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{places}f}"
    if places > digits:  # the extra decimals only as far as they carry a digit
        whole, _, decimals = text.partition(".")
        text = f"{whole}.{decimals[:digits]}{decimals[digits:].rstrip('0')}"
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


__all__ = ["usd"]
