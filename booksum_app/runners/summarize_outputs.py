"""Where ``booksum summarize`` writes, checked before the first call, and the writing itself:
the summary (``OUT.md``, a stream, or stdout) and its record (``OUT.json``), together or not at all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from booksum_app.books import Book
from booksum_app.files import atomic_write_texts, check_writable, is_stream, json_text, recover_interrupted
from booksum_app.runners.summarize import default_record_path
from booksum_app.strategies.record import SummaryRecord

if TYPE_CHECKING:
    from booksum_app.runners.quality import SummaryQuality


@dataclass(frozen=True)
class OutputPaths:
    """``summary``: the file (or stream) the summary goes to, None for stdout; ``record``: the JSON record."""

    summary: Path | None
    record: Path


def output_paths(book: str | Path, strategy: str, output: str | Path | None) -> OutputPaths:
    """The outputs of one summarize run, each checked writable now (before any paid call).

    ``-o -`` is stdout; ``-o FIFO`` or a device (/dev/stdout, a pipe) gets the summary as a
    stream and the record goes where it goes without ``-o``: no ``-.md``, no ``/dev/null.json``.
    ``book`` is the BOOK argument (``-`` for stdin).
    """
    out = None if output is None else Path(output)
    summary = None
    if out is not None and (str(out) == "-" or is_stream(out)):
        summary = None if str(out) == "-" else check_writable(out)
        out = None
    elif out is not None:
        summary = check_writable(out if out.suffix == ".md" else out.with_suffix(".md"))
    record = check_writable(default_record_path("stdin" if str(book) == "-" else str(book), strategy, out))
    # a pair a killed run left half swapped is finished now, before this run reads or replaces it
    recover_interrupted([p for p in (summary, record) if p is not None])
    return OutputPaths(summary, record)


def summary_markdown(record: SummaryRecord, *, per_chapter: bool) -> str:
    """The summary as written: the book's summary, or with ``chapters`` one section per chapter."""
    if per_chapter:
        from booksum_app.runners.chapters import chapters_markdown_from_record

        return chapters_markdown_from_record(record)
    return record.summary + "\n"


def write_outputs(record: SummaryRecord, source: Book, paths: OutputPaths, *,
                  per_chapter: bool) -> tuple[SummaryRecord, SummaryQuality, str]:
    """Record the detectors' flags, then write the .md and the .json of the run atomically together.

    Returns the record as written, its quality report and the summary's Markdown (for stdout
    when ``paths.summary`` is None).
    """
    # the detectors (scoring) load here, after the last answer: the output check before the
    # first call imports this module, and must not pay for them
    from booksum_app.runners.quality import record_quality

    markdown = summary_markdown(record, per_chapter=per_chapter)
    record, quality = record_quality(record, source)
    outputs = {paths.record: json_text(record.to_dict())}
    if paths.summary is not None:
        outputs = {paths.summary: markdown, **outputs}
    atomic_write_texts(outputs)  # the .md and the .json of one run appear together or not at all
    return record, quality, markdown


__all__ = ["OutputPaths", "output_paths", "summary_markdown", "write_outputs"]
