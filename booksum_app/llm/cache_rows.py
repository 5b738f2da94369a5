"""What a stored answer may hold: the range of every column of the call cache's ``calls`` table.

One rule, checked in two places: ``cache --import`` refuses a line with any field out of range
before it stores anything (:func:`row_problem`), and ``cache`` / ``logs`` read only the rows
inside it (:func:`in_range_sql`), counting the others, so a row that some other writer left
(``created: 1e308`` cannot be shown as a date; token counts near 2^63 overflow SQLite's
``SUM``) is one line, never a traceback. The bounds are far past anything a call can hold: a
call's tokens are bounded by its context window (10^9 is a thousand times the largest), its
latency by ``--timeout`` (at most a day) and a week of retries, its time by the clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, TypeGuard

MAX_TOKENS = 10**9  # per call; sums of 2^33 rows of these still fit SQLite's 64-bit integers
MAX_LATENCY_S = 7 * 86_400.0
FUTURE_SLACK_S = 366 * 86_400.0  # a clock a year fast still imports; later than that is not a time
MAX_TEXT_CHARS = 64 * 2**20  # an answer or a request: the reply byte cap
MAX_NAME_CHARS = 4_096  # a key, model, purpose, finish reason, run id or book name

INTS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens")
TIMES = ("created", "latency_s")
NAMES = ("key", "finish_reason", "model", "purpose")
TEXTS = ("text",)
OPTIONAL_NAMES = ("model_string", "run", "book")
OPTIONAL_TEXTS = ("request",)
SERVER = ("server_url", "server_identity")  # absent from files older booksums exported
COLUMNS = (*NAMES, *TEXTS, *INTS, *TIMES, *OPTIONAL_NAMES, *OPTIONAL_TEXTS, *SERVER)


def latest_created(now: float | None = None) -> float:
    """The latest ``created`` time a row may carry (now plus a year of clock skew)."""
    return (time.time() if now is None else now) + FUTURE_SLACK_S


def row_problem(row: Mapping[str, Any], *, now: float | None = None) -> str | None:
    """Why ``row`` (a ``calls`` row as a dict) cannot be stored: ``"field: what is wrong"``; None if it can."""
    for name in INTS:
        value = row.get(name)
        if not _is_int(value):
            return f"{name}: not a whole number"
        if not 0 <= value <= MAX_TOKENS:
            return f"{name}: {_show(value)} is outside 0..{MAX_TOKENS:,}"
    if row["cached_input_tokens"] + row["cache_write_input_tokens"] > row["input_tokens"]:
        return "cached_input_tokens: with cache_write_input_tokens, more than input_tokens"
    for name, high in (("created", latest_created(now)), ("latency_s", MAX_LATENCY_S)):
        value = row.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{name}: not a number"
        if (isinstance(value, float) and not math.isfinite(value)) or not 0 <= value <= high:
            return f"{name}: {_show(value)} is outside 0..{high:.0f}"
    for names, limit, optional in ((NAMES, MAX_NAME_CHARS, False), (TEXTS, MAX_TEXT_CHARS, False),
                                   (OPTIONAL_NAMES, MAX_NAME_CHARS, True), (OPTIONAL_TEXTS, MAX_TEXT_CHARS, True)):
        for name in names:
            if name not in row:
                return f"{name}: missing"
            value = row[name]
            if value is None and optional:
                continue
            if not isinstance(value, str):
                return f"{name}: not text"
            if len(value) > limit:
                return f"{name}: longer than {limit:,} characters"
    for name in SERVER:
        value = row.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_NAME_CHARS):
            return f"{name}: not text of at most {MAX_NAME_CHARS:,} characters"
    if not row["key"]:
        return "key: empty"
    if not row["text"].strip():
        return "text: empty (the cache never stores an empty answer)"
    return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: float) -> str:
    """A number for a message: short, whatever its size."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"{'-' if value < 0 else ''}2^{value.bit_length() - 1} or more"
    text = repr(value)
    return text if len(text) <= 24 else f"{value:.3g}"


def in_range_sql(now: float | None = None) -> str:
    """The same rule in SQL, for rows already stored (``typeof``: SQLite keeps what it was given,
    and a NaN it was given reads as NULL)."""
    return (
        " AND ".join(f"(typeof({c}) = 'integer' AND {c} BETWEEN 0 AND {MAX_TOKENS})" for c in INTS)
        + " AND cached_input_tokens + cache_write_input_tokens <= input_tokens"
        + f" AND typeof(created) IN ('integer', 'real') AND created BETWEEN 0 AND {latest_created(now):.0f}"
        + f" AND typeof(latency_s) IN ('integer', 'real') AND latency_s BETWEEN 0 AND {MAX_LATENCY_S:.0f}"
    )


__all__ = ["COLUMNS", "MAX_TOKENS", "in_range_sql", "latest_created", "row_problem"]
