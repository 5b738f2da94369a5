"""Ctrl-C during a run: the first says what it waits for, the second quits at once.

The first Ctrl-C stops the run as Python's default handler does (``KeyboardInterrupt``), and
says on stderr how many calls are in flight and for how long the longest has run: closing the
client waits for them, so the answers already paid for are cached. A second Ctrl-C quits from
the signal handler itself, wherever the run is waiting: the command's quit hooks write what it
had paid (summarize's failed record, from the meter the first interrupt carries in ``spent``),
one line says so, and the process ends at once (``os._exit``), abandoning the calls in flight.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

QUIT_EXIT_CODE = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C

QuitHook = Callable[[KeyboardInterrupt], Path | None]  # writes what the run paid; returns where
_HOOKS: list[QuitHook] = []


def waiting_line(in_flight: int, longest_s: float) -> str:
    """What the first Ctrl-C prints: the calls it waits for and how to stop waiting."""
    return (f"interrupted: waiting for {_calls(in_flight)} in flight (the longest running for {longest_s:.0f} s) "
            "so the answers already paid for are cached; press Ctrl-C again to quit now")


def quit_line(in_flight: int, recorded: Path | None) -> str:
    """What the second Ctrl-C prints before the process ends."""
    where = f"; what it paid is recorded in {recorded}" if recorded is not None else ""
    return (f"quit: {_calls(in_flight)} in flight abandoned; answers already in are cached, rerun the same "
            f"command to resume{where}")


def _calls(n: int) -> str:
    return f"{n} call{'s' if n != 1 else ''}"


@contextmanager
def on_quit(hook: QuitHook) -> Iterator[None]:
    """Within the block, a second Ctrl-C runs ``hook`` (with the first interrupt) before quitting."""
    _HOOKS.append(hook)
    try:
        yield
    finally:
        _HOOKS.remove(hook)


@contextmanager
def two_step_interrupt(in_flight: Callable[[], tuple[int, float]], say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, Ctrl-C stops the run and says what it waits for; a second one quits the process.

    Outside the main thread (a library caller's worker) signals cannot be caught: nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    first: KeyboardInterrupt | None = None

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal first
        if first is not None:  # may run inside the first handler's own print: quit from here, never unwind
            _quit(first, in_flight, say)
        first = KeyboardInterrupt()
        count, longest_s = in_flight()
        if count:
            say(waiting_line(count, longest_s))
        raise first

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _quit(first: KeyboardInterrupt, in_flight: Callable[[], tuple[int, float]], say: Callable[[str], None]) -> None:
    """Run the quit hooks, say what was kept, and end the process at once (no thread is joined)."""
    recorded = None
    for hook in reversed(_HOOKS):
        with contextlib.suppress(Exception):  # quitting must not fail: the answers are cached regardless
            recorded = hook(first) or recorded
    say(quit_line(in_flight()[0], recorded))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(QUIT_EXIT_CODE)


__all__ = ["QUIT_EXIT_CODE", "QuitHook", "on_quit", "quit_line", "two_step_interrupt", "waiting_line"]
