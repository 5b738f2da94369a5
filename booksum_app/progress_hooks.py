"""Progress of long work before the first call: the work reports how far it is, the command line says so.

A PDF of thousands of pages takes minutes to read (pypdf: about 20 ms a page), and a book-long
paragraph minutes to chunk under a slow tokenizer (the embedded model counts about 1.5 MB of
text a second). The reader calls :data:`PAGES` after each page and the chunker :data:`CHUNKING`
now and then; the hook the command line installs (``report_to``) prints a heartbeat line at its
own pace. Without a hook nothing is said.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]  # (book's name, work done, work in all)


class ProgressHook:
    """One kind of long work's progress, sent to the hook installed with :meth:`report_to`."""

    def __init__(self) -> None:
        self._hook: Progress | None = None

    def report_to(self, hook: Progress | None) -> None:
        """Send every report to ``hook`` (None: to nothing)."""
        self._hook = hook

    def __call__(self, name: str, done: int, total: int) -> None:
        """Report that ``done`` of ``total`` units of the work on ``name`` are done."""
        hook = self._hook
        if hook is not None:
            hook(name, done, total)


PAGES = ProgressHook()  # a reader's pages read, of the book's pages
CHUNKING = ProgressHook()  # the chunker's work: two passes over the text's characters

__all__ = ["CHUNKING", "PAGES", "Progress", "ProgressHook"]
