"""The chunking's heartbeat: a book-long paragraph under a slow tokenizer takes a minute or more."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from booksum_app.cli.base import heartbeat_interval
from booksum_app.cli.consoles import err_console
from booksum_app.textsafe import printable


def chunk_heartbeat() -> Callable[[str, int, int], None]:
    """A chunking's progress as a line on stderr every ``BOOKSUM_HEARTBEAT_S`` (30 s) of it; a
    terminal gets it too (the progress bar, where one runs, names only the stage)."""
    started: dict[str, float] = {}
    said: dict[str, float] = {}
    reached: dict[str, int] = {}

    def heartbeat(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < reached.get(name, total + 1):  # a new chunking of this book
            started[name] = said[name] = now
        reached[name] = done
        if now - said[name] >= heartbeat_interval(os.environ.get("BOOKSUM_HEARTBEAT_S")):
            said[name] = now
            line = (f"booksum [{now - started[name]:.0f}s] chunking {name}: "
                    f"{100 * done // max(1, total)}% of {total // 2:,} characters")
            err_console.print(printable(line), markup=False, highlight=False, soft_wrap=True)

    return heartbeat
