"""BOOKSUM_HEARTBEAT_S: a number of seconds, never a busy loop, never a traceback."""

from __future__ import annotations

import pytest

from booksum_app.cli.base import HEARTBEAT_MIN_S, heartbeat_interval
from booksum_app.config import HEARTBEAT_S


@pytest.mark.parametrize(("raw", "expected"), [
    (None, HEARTBEAT_S), ("", HEARTBEAT_S), ("5", 5.0), ("2.5", 2.5),
    ("0", HEARTBEAT_MIN_S), ("-1", HEARTBEAT_MIN_S), ("1e-9", HEARTBEAT_MIN_S),  # a busy loop before
    ("nan", HEARTBEAT_S), ("inf", HEARTBEAT_S), ("abc", HEARTBEAT_S),  # a traceback or a hang before
])
def test_the_heartbeat_interval_is_a_sane_number(raw: str | None, expected: float) -> None:
    assert heartbeat_interval(raw) == expected
