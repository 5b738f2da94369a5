"""booksum's consoles: quiet on a closed pipe, lines wrapped at spaces in a terminal, no emoji codes.

Text from outside is data: rich's emoji codes are off on every console booksum makes, so a model
name or a title holding ``:v:`` prints as written.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

EPIPE_EXIT = 141  # what a shell reports for a writer killed by SIGPIPE (128 + 13), as `yes | head` does


def quiet_broken_pipe() -> None:
    """Stdout's reader went away (``| head``): stop quietly with the shell's SIGPIPE status, as Unix
    tools do. Stdout is pointed at /dev/null so that Python's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's buffer): nothing to silence
        pass
    sys.exit(EPIPE_EXIT)


class _Console(Console):
    """A rich console that ends a closed pipe as every command does (rich's own exits 1), and
    wraps its lines at spaces in a terminal.

    ``soft_wrap=True`` keeps a line whole for a pipe or a log (grep finds it); in a terminal it
    would leave the wrapping to the terminal, which cuts at the last column, mid-word and
    mid-number (``$0.4`` / ``020``). There rich wraps it at spaces instead.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)  # outside text is data: ":v:" in a model name or title stays ":v:"
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        quiet_broken_pipe()

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap and self.is_terminal:
            soft_wrap = False
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def plain_console(**kwargs: Any) -> Console:
    """A console of booksum's kind (no emoji codes, quiet on a closed pipe), e.g. a wide one for a pipe."""
    return _Console(**kwargs)


def print_signature(target: Console, text: str) -> None:
    """A line holding a signature: whole for a pipe or a log (grep finds it); in a terminal broken
    only after a ``|`` to fit its width (``signature.wrap_signature``), never inside a field, so
    the lines copied back together are the signature."""
    from booksum_app.signature import wrap_signature

    if not target.is_terminal:
        target.print(text, highlight=False, soft_wrap=True, markup=False)
        return
    for line in wrap_signature(text, target.width):
        target.print(line, highlight=False, markup=False, no_wrap=True, overflow="ignore", crop=False)


def print_with_signature(target: Console, prose: str, signature: str) -> None:
    """``prose`` then ``signature`` as one line for a pipe or a log; in a terminal the prose wrapped
    at spaces, then the signature on lines of its own (:func:`print_signature`)."""
    if not target.is_terminal:
        target.print(prose + signature, highlight=False, soft_wrap=True, markup=False)
        return
    target.print(prose.rstrip(), highlight=False, markup=False)
    print_signature(target, signature)


console = _Console()
err_console = _Console(stderr=True)  # notes, warnings, progress: silenced by -q
_error_console = _Console(stderr=True)  # the one error line: never silenced


__all__ = ["EPIPE_EXIT", "console", "err_console", "plain_console", "print_signature", "print_with_signature",
           "quiet_broken_pipe"]
