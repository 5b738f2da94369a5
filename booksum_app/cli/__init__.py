"""The ``booksum`` command line: one module per command (options -> runner -> render).

``base`` holds what they share; no business logic lives here, only parsing and printing.
"""

from __future__ import annotations

import threading

import click

from booksum_app import __version__
from booksum_app.cli.base import EXIT_CODES, Verbosity, handle_errors, shared_options, thread_error_line
from booksum_app.cli.cache import cache_command
from booksum_app.cli.compare import compare_command
from booksum_app.cli.consoles import quiet_broken_pipe
from booksum_app.cli.data import data_command
from booksum_app.cli.inspect import inspect_command
from booksum_app.cli.live import chunk_heartbeat, page_heartbeat
from booksum_app.cli.logs import logs_command
from booksum_app.cli.models import models_command
from booksum_app.cli.score import score_command
from booksum_app.cli.serve import serve_local_command
from booksum_app.cli.summarize import summarize_command
from booksum_app.llm.limiter import raise_open_files_limit
from booksum_app.progress_hooks import CHUNKING, PAGES


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="booksum")
@click.option("-q", "--quiet", is_flag=True, help="Print only results and errors (no notes, no progress).")
@click.option("-v", "--verbose", is_flag=True, help="Also print one line per model call (tokens, time, cost).")
def cli(quiet: bool, verbose: bool) -> None:
    """Summarize book-length texts with LLMs and score summary coherence (BooookScore)."""
    Verbosity.apply(quiet=quiet, verbose=verbose)
    threading.excepthook = thread_error_line  # a plugin's thread that fails is one line, not a traceback
    raise_open_files_limit()  # calls in flight each hold a connection
    PAGES.report_to(page_heartbeat())  # a long PDF says how far its reading is
    CHUNKING.report_to(chunk_heartbeat())  # ... and a book-long paragraph its chunking


for command in (inspect_command, summarize_command, score_command, compare_command, models_command, cache_command,
                logs_command, data_command, serve_local_command):
    cli.add_command(shared_options(command))


def main() -> None:
    """Console-script entry point."""
    try:
        cli()
    except BrokenPipeError:  # help or usage text into a closed pipe, outside any command
        quiet_broken_pipe()


__all__ = ["cli", "handle_errors", "main"]
