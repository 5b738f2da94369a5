"""The ``booksum`` command line: one module per command (options -> runner -> render).

``base`` holds what they share; no business logic lives here, only parsing and printing.
"""

from __future__ import annotations

import click

from booksum_app import __version__
from booksum_app.cli.base import handle_errors
from booksum_app.cli.compare import compare_command
from booksum_app.cli.inspect import inspect_command
from booksum_app.cli.score import score_command
from booksum_app.cli.summarize import summarize_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="booksum")
def cli() -> None:
    """Summarize book-length texts with LLMs and score summary coherence (BooookScore)."""


for command in (inspect_command, summarize_command, score_command, compare_command):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point."""
    cli()


__all__ = ["cli", "handle_errors", "main"]
