"""BOOK as the commands take it: a path, or ``-`` for a book piped in on standard input."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from booksum_app.books import Book

STDIN_MAX_BYTES = 1 << 30  # a book piped in is read into memory: a gigabyte is far past any book


def book_from_arg(book: Path, *, include_front_matter: bool) -> Path | Book:
    """BOOK as given, or for ``-`` the book read from standard input (format sniffed from its bytes).

    The bytes are spooled to a temporary file only while the reader runs; the book then
    carries the name ``stdin.<format>`` (its records and logs say so).
    """
    if str(book) != "-":
        return book
    import dataclasses
    import tempfile

    from booksum_app.books import open_book
    from booksum_app.books.detect import sniff_suffix
    from booksum_app.errors import InputError

    if sys.stdin.isatty():  # nothing piped in: waiting for typed bytes would look like a hang
        raise InputError("BOOK is - but standard input is a terminal; pipe a book in: booksum summarize - < book.epub")
    data = sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)
    if not data.strip():
        raise InputError("no book on standard input; pipe one in, e.g. booksum summarize - < book.epub")
    if len(data) > STDIN_MAX_BYTES:
        raise InputError(f"the book on standard input is over {STDIN_MAX_BYTES >> 20} MiB; pass it as a file")
    data = _whole_utf8_characters(data)
    name = "stdin" + sniff_suffix(data[:4096])
    with tempfile.TemporaryDirectory(prefix="booksum-stdin-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        opened = open_book(path, include_front_matter=include_front_matter)
    return dataclasses.replace(opened, source_path=name)


def print_book_warnings(lines: Sequence[str]) -> None:
    """What looks wrong in the book (``books.plausibility.anomalies``), one ``warning:`` line each on stderr."""
    from booksum_app.cli.base import err_console
    from booksum_app.textsafe import markup_safe

    for line in lines:
        err_console.print(f"[yellow]warning:[/] {markup_safe(line)}", highlight=False, soft_wrap=True)


def _whole_utf8_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end (``head -c N book.txt | booksum summarize -``).

    A stream may stop mid-character; a file would not. Only an incomplete sequence at the very
    end (at most 3 bytes) is dropped, and only when everything before it is valid UTF-8.
    """
    if b"\x00" in data[:4096]:  # UTF-16/32: not ours to trim
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.end == len(data) and len(data) - exc.start <= 3:
            return data[: exc.start]
    return data


__all__ = ["STDIN_MAX_BYTES", "book_from_arg", "print_book_warnings"]
