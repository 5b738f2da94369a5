"""Progress of a long book read: a reader reports the pages it has read, the command line says so.

A PDF of thousands of pages takes minutes to read (pypdf: about 20 ms a page); the reader
calls :func:`pages_read` after each page, and the hook the command line installs
(:func:`report_pages_to`) prints a heartbeat line now and then. Without a hook nothing is said.
"""

from __future__ import annotations

from collections.abc import Callable

PageProgress = Callable[[str, int, int], None]  # (book's name, pages read, pages in all)

_hook: list[PageProgress | None] = [None]


def report_pages_to(hook: PageProgress | None) -> None:
    """Send every reader's page progress to ``hook`` (None: to nothing)."""
    _hook[0] = hook


def pages_read(name: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` pages of book ``name`` are read."""
    hook = _hook[0]
    if hook is not None:
        hook(name, done, total)


__all__ = ["PageProgress", "pages_read", "report_pages_to"]
