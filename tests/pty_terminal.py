"""Reading a child that runs at a pseudo-terminal: what it printed up to a marker, and how it ended."""

from __future__ import annotations

import os
import select
import signal
import time


def read_until(fd: int, marker: bytes, timeout_s: float) -> bytes:
    """What the terminal's child printed until ``marker`` (or the end, or ``timeout_s``)."""
    seen, deadline = b"", time.monotonic() + timeout_s
    while marker not in seen and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def exit_status(pid: int, fd: int, timeout_s: float) -> tuple[int, bytes]:
    """The child's exit code, or, when it has not ended within ``timeout_s``, the code of killing
    it and the stacks it printed (faulthandler, on SIGABRT, when the child runs with
    ``PYTHONFAULTHANDLER=1``): a child that never answers fails its test with where it waits
    instead of hanging the suite."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), b""
        time.sleep(0.05)
    os.kill(pid, signal.SIGABRT)
    stacks = read_until(fd, b"\x00never", 5)
    os.kill(pid, signal.SIGKILL)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), stacks
