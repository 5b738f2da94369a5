"""A yes/no question at the terminal that a Ctrl-C always ends.

``input()`` (and so ``click.confirm``) blocks in ``read()``. Python runs its SIGINT handler only
when the main thread gets back to its bytecode loop, so a Ctrl-C that lands between the prompt
being written and ``read()`` starting interrupts nothing: the process waits for a line that may
never come, holding a pending KeyboardInterrupt. Here the wait for the answer is a ``select()``
that wakes every fraction of a second, so a Ctrl-C at any instant is seen within that fraction.

Where stdin is not a real terminal (a test runner's stand-in, Windows), click's prompt is used.
"""

from __future__ import annotations

import os
import select
import sys

import click

POLL_S = 0.2  # how late a Ctrl-C that raced the prompt may be seen


def confirm(question: str) -> bool:
    """Ask ``question [y/N]`` on stderr; True for y/yes, False for n/no, Enter or end of input.

    Raises:
        KeyboardInterrupt: Ctrl-C while asking.
    """
    fd = _terminal_fd()
    if fd is None:
        try:
            return click.confirm(question, default=False, err=True)
        except click.Abort:  # click's answer to end of input or Ctrl-C at its prompt
            raise KeyboardInterrupt from None
    while True:
        click.echo(f"{question} [y/N]: ", nl=False, err=True)
        answer = _read_line(fd)
        if answer is None:  # end of input: nobody will answer
            click.echo(err=True)
            return False
        answer = answer.strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False
        click.echo("Error: invalid input", err=True)


def _terminal_fd() -> int | None:
    """stdin's descriptor when it is a real terminal this module can wait on, else None."""
    if sys.platform == "win32":  # select() takes sockets only there
        return None
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream with no descriptor
        return None
    return fd if os.isatty(fd) else None


def _read_line(fd: int) -> str | None:
    """One line from the terminal (canonical mode hands over a whole line), or None at its end."""
    while not select.select([fd], [], [], POLL_S)[0]:
        pass  # back in the bytecode loop each time: a pending Ctrl-C is raised here
    data = os.read(fd, 4096)
    return data.decode("utf-8", errors="replace") if data else None


__all__ = ["confirm"]
