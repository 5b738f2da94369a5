"""``import booksum``: the library under its distribution's name, the same objects as ``booksum_app``.

``booksum`` is what ``pip install booksum`` installs and what a user types; the code lives in
``booksum_app``. Every public name of ``booksum_app`` (its ``__all__``) is here too, imported on
first use as there::

    import booksum
    record = booksum.summarize("book.epub", strategy="hier", model="openai:gpt-4o")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import booksum_app
from booksum_app._version import __version__ as __version__

if TYPE_CHECKING:
    from booksum_app import *  # the names type checkers see

__all__ = list(booksum_app.__all__)


def __getattr__(name: str) -> Any:
    if name in booksum_app.__all__:
        value = getattr(booksum_app, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'booksum' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
