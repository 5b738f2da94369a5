"""The terminal question: its answers, and a Ctrl-C that races the prompt (cli/ask.py).

A child at a pseudo-terminal asks the question and prints its answer. The race is made
deterministic: the child's main thread blocks SIGINT at the kernel, so the terminal's Ctrl-C is
taken by another thread; Python's handler is then pending for the main thread while that thread
already waits for input, which is where a Ctrl-C pressed just as the prompt appears leaves it.
A plain ``input()`` waits there for a line; the question must end within a fraction of a second.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from pty_terminal import exit_status, read_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import signal, sys, threading, time
from booksum_app.cli.ask import confirm
if sys.argv[1] == "race":
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
try:
    answer = confirm("Delete 3 stored answers?")
except KeyboardInterrupt:
    sys.stderr.write("\\n<interrupted>\\n")
    sys.exit(6)
sys.stderr.write(f"\\n<answer {answer}>\\n")
"""


def _ask(keys: list[bytes], mode: str = "plain") -> tuple[bytes, int]:
    """What the child printed after its question was answered with ``keys``, and its exit code."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", CHILD, mode],
                  dict(os.environ, PYTHONPATH=str(ROOT), PYTHONFAULTHANDLER="1"))
    said = read_until(fd, b"[y/N]: ", 30)
    for key in keys:
        os.write(fd, key)
        said += read_until(fd, b"[y/N]: " if key.endswith(b"\r") else b">", 0.5)
    said += read_until(fd, b">\r\n", 5)
    code, stacks = exit_status(pid, fd, 5)
    os.close(fd)
    return said + stacks, code


@pytest.mark.parametrize(("keys", "answer"), [
    ([b"y\r"], b"<answer True>"),
    ([b"YES\r"], b"<answer True>"),
    ([b"n\r"], b"<answer False>"),
    ([b"\r"], b"<answer False>"),
    ([b"\x04"], b"<answer False>"),  # end of input: nobody will answer
    ([b"maybe\r", b"y\r"], b"<answer True>"),
])
def test_the_question_reads_its_answers(keys: list[bytes], answer: bytes) -> None:
    said, code = _ask(keys)
    assert answer in said and code == 0, said
    assert (b"Error: invalid input" in said) == (keys[0] == b"maybe\r")


def test_ctrl_c_at_the_question_is_an_interrupt() -> None:
    said, code = _ask([b"\x03"])
    assert b"<interrupted>" in said and code == 6, said


def test_a_ctrl_c_that_races_the_prompt_still_ends_the_question() -> None:
    started = time.monotonic()
    said, code = _ask([b"\x03"], mode="race")
    assert b"<interrupted>" in said and code == 6, said
    assert time.monotonic() - started < 10
