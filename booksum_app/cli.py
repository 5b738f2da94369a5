"""The ``booksum`` command line: parse options, build a config, call one runner, render.

Nothing else in the package prints or exits; this module turns :mod:`booksum_app.errors`
into one-line messages and exit codes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click
from rich.console import Console

from booksum_app import __version__
from booksum_app.errors import BooksumError

F = TypeVar("F", bound=Callable[..., Any])

console = Console()
err_console = Console(stderr=True)


def _fail(message: str, exit_code: int) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(exit_code)


def handle_errors(func: F) -> F:
    """Turn booksum errors into one line on stderr and the error's exit code."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BooksumError as exc:
            _fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; completed LLM calls are cached, rerun the same command to resume", 130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="booksum")
def cli() -> None:
    """Summarize book-length texts with LLMs and score summary coherence (BooookScore)."""


# ---- inspect ---------------------------------------------------------------------------

# ---- summarize -------------------------------------------------------------------------

# ---- score -----------------------------------------------------------------------------

# ---- compare ---------------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    cli()
