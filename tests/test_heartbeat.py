"""BOOKSUM_HEARTBEAT_S: a number of seconds, never a busy loop, never a traceback."""

from __future__ import annotations

import io
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from booksum_app.cli.live import HEARTBEAT_MAX_S, HEARTBEAT_MIN_S, Heartbeat, heartbeat_interval
from booksum_app.config import HEARTBEAT_S


@pytest.mark.parametrize(("raw", "expected"), [
    (None, HEARTBEAT_S), ("", HEARTBEAT_S), ("5", 5.0), ("2.5", 2.5),
    ("0", HEARTBEAT_MIN_S), ("-1", HEARTBEAT_MIN_S), ("1e-9", HEARTBEAT_MIN_S),  # a busy loop before
    ("nan", HEARTBEAT_S), ("inf", HEARTBEAT_S), ("abc", HEARTBEAT_S),  # a traceback or a hang before
    ("1e10", HEARTBEAT_MAX_S), ("1e300", HEARTBEAT_MAX_S),  # OverflowError in the heartbeat thread before
])
def test_the_heartbeat_interval_is_a_sane_number(raw: str | None, expected: float) -> None:
    assert heartbeat_interval(raw) == expected


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=12)))
def test_any_value_is_an_interval_the_thread_can_wait(raw: str) -> None:
    interval = heartbeat_interval(raw)
    assert HEARTBEAT_MIN_S <= interval <= HEARTBEAT_MAX_S <= threading.TIMEOUT_MAX


def test_a_huge_interval_starts_and_stops_the_heartbeat_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.cli import base

    monkeypatch.setenv("BOOKSUM_HEARTBEAT_S", "1e10")
    monkeypatch.setattr(base, "err_console", Console(file=io.StringIO()))  # not a terminal: it starts
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    with Heartbeat(lambda: "line"):
        pass
    assert errors == []
