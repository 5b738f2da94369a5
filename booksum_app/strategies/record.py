"""The summary record: everything one summarization run produced, as versioned JSON.

Written atomically (temp file in the same directory + ``os.replace``) so an interrupted run
never leaves half a file; read back into the same frozen values. Schema: docs/summarize.md.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from booksum_app.compression.validity import AttemptInfo, CallEntry
from booksum_app.config import is_int
from booksum_app.errors import InputError
from booksum_app.files import write_json_atomic
from booksum_app.jsonin import read_json
from booksum_app.llm.base import ModelInfo, Tally
from booksum_app.strategies.base import CompressionInfo, DirectTruncation, SummaryNode

SCHEMA_VERSION = 1
RECORD_KIND = "booksum.summary"


@dataclass(frozen=True)
class BookInfo:
    """The book a summary is of."""

    title: str
    authors: tuple[str, ...]
    language: str
    source_path: str
    format: str
    chapters_kept: tuple[str, ...]
    chapters_excluded: tuple[tuple[str, str], ...]  # (title, reason)
    n_chunks: int
    n_tokens: int  # tokens of the summarized text under the model's tokenizer
    input_chars: int = 0  # counted characters of the input (books/accounting.py); 0 in older records
    excluded_chars: dict[str, int] = field(default_factory=dict)  # counted characters left out, by kind
    anomalies: tuple[str, ...] = ()  # what looked wrong in the book (books/plausibility.py), one line each


@dataclass(frozen=True)
class Totals(Tally):
    """The run's calls as a :class:`Tally` (list price in ``cost_usd``, paid in ``spent_usd``) and what the
    strategy did."""

    wall_s: float = 0.0
    retries: int = 0
    truncations: int = 0
    compressions: int = 0


def tally_of(calls: Sequence[CallEntry], info: ModelInfo) -> Tally:
    """A record's calls as one :class:`Tally`, priced with ``info`` (list price; paid as recorded)."""
    return sum((Tally.of_call(info, c.usage, cache_hit=c.cache_hit, spent_usd=c.cost_usd) for c in calls), Tally())


def _totals(data: dict[str, Any]) -> Totals:
    if "spent_usd" not in data:  # records before the one tally type: cost_usd was what was paid
        data = {**data, "spent_usd": data.get("cost_usd", 0.0)}
    return Totals(**data)


@dataclass(frozen=True)
class SummaryRecord:
    """One summary with its configuration, signature, intermediate summaries, calls and totals."""

    strategy: str
    model: str
    signature: str
    config: dict[str, Any]
    book: BookInfo
    summary: str  # the cleaned final summary (equal to raw_summary when cleaning is off)
    raw_summary: str
    nodes: tuple[SummaryNode, ...]
    calls: tuple[CallEntry, ...]
    totals: Totals
    level_budgets: tuple[int, ...] = ()
    truncation: DirectTruncation | None = None
    cleaning: dict[str, Any] | None = None  # llm_text, llm_rejected, removed
    schema_version: int = SCHEMA_VERSION
    created_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``kind`` and ``schema_version`` first)."""
        data = dataclasses.asdict(self)
        return {"kind": RECORD_KIND, "schema_version": self.schema_version, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SummaryRecord:
        """Rebuild a record from :meth:`to_dict` output.

        Raises:
            InputError: not a summary record, or a newer schema.
        """
        if data.get("kind") != RECORD_KIND:
            raise InputError("not a booksum summary record (missing kind 'booksum.summary')")
        version = data.get("schema_version")
        if not is_int(version) or version > SCHEMA_VERSION:
            raise InputError(
                f"summary record schema {version!r} is newer than this booksum reads ({SCHEMA_VERSION}); "
                "upgrade booksum"
            )
        try:
            book = data["book"]
            return cls(
                strategy=data["strategy"],
                model=data["model"],
                signature=data["signature"],
                config=dict(data["config"]),
                book=BookInfo(
                    title=book["title"],
                    authors=tuple(book["authors"]),
                    language=book["language"],
                    source_path=book["source_path"],
                    format=book["format"],
                    chapters_kept=tuple(book["chapters_kept"]),
                    chapters_excluded=tuple((t, r) for t, r in book["chapters_excluded"]),
                    n_chunks=book["n_chunks"],
                    n_tokens=book["n_tokens"],
                    input_chars=int(book.get("input_chars", 0)),
                    excluded_chars={str(k): int(v) for k, v in dict(book.get("excluded_chars", {})).items()},
                    anomalies=tuple(str(a) for a in book.get("anomalies", ())),
                ),
                summary=data["summary"],
                raw_summary=data["raw_summary"],
                nodes=tuple(_node(n) for n in data["nodes"]),
                calls=tuple(CallEntry(**c) for c in data["calls"]),
                totals=_totals(data["totals"]),
                level_budgets=tuple(data.get("level_budgets", ())),
                truncation=DirectTruncation(**data["truncation"])
                if data.get("truncation")
                else None,
                cleaning=data.get("cleaning"),
                schema_version=version,
                created_at=data.get("created_at", ""),
                extra=dict(data.get("extra", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"malformed summary record ({exc!r}); regenerate it with booksum summarize"
            ) from exc


def _attempts(items: list[dict[str, Any]]) -> tuple[AttemptInfo, ...]:
    return tuple(
        AttemptInfo(a["words_asked"], a["tokens"], a["finish_reason"], tuple(a["problems"]))
        for a in items
    )


def _node(data: dict[str, Any]) -> SummaryNode:
    compression = data.get("compression")
    values = dict(data)
    values["children"] = tuple(data["children"])
    values["chunk_span"] = tuple(data["chunk_span"])
    values["attempts"] = _attempts(data.get("attempts", []))
    values["compression"] = (
        CompressionInfo(**{**compression, "attempts": _attempts(compression["attempts"])})
        if compression
        else None
    )
    return SummaryNode(**values)


def write_record(record: SummaryRecord, path: Path) -> Path:
    """Write ``record`` as JSON atomically; returns the path."""
    return write_json_atomic(path, record.to_dict())


def read_record(path: str | os.PathLike[str]) -> SummaryRecord:
    """Read a record written by :func:`write_record`.

    Raises:
        InputError: unreadable, not JSON, or not a summary record.
    """
    path = Path(path)
    data = read_json(path, what="summary record")
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a summary record (expected a JSON object)")
    return SummaryRecord.from_dict(data)


__all__ = [
    "RECORD_KIND",
    "SCHEMA_VERSION",
    "BookInfo",
    "SummaryRecord",
    "Totals",
    "read_record",
    "write_record",
]
