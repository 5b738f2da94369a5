"""Progress of a long chunking: the chunker reports how far it is, the command line says so.

Chunking a book-long text with a slow tokenizer (the embedded model's counts about 1.5 MB
of text a second) takes a minute or more; the chunker calls :func:`chunked` now and then with
the work done so far, and the hook the command line installs (:func:`report_chunking_to`)
prints a heartbeat line at its own pace. Without a hook nothing is said.
"""

from __future__ import annotations

from collections.abc import Callable

# (book's name, work done, work in all): the work is two passes over the text's characters
ChunkProgress = Callable[[str, int, int], None]

_hook: list[ChunkProgress | None] = [None]


def report_chunking_to(hook: ChunkProgress | None) -> None:
    """Send every chunking's progress to ``hook`` (None: to nothing)."""
    _hook[0] = hook


def chunked(name: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` units of work on ``name`` are done."""
    hook = _hook[0]
    if hook is not None:
        hook(name, done, total)


__all__ = ["ChunkProgress", "chunked", "report_chunking_to"]
