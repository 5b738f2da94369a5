"""Read past calls back out of the call cache for ``booksum logs`` (as simonw/llm's ``llm logs``).

The cache file is opened read-only and never migrated here: a cache written by an older
booksum is shown as it is, its missing columns (request, model string, run, book, purpose)
read as unknown. Costs are priced with the model table (shipped + config file) at read time,
and only for a model the table names (or an alias of one) or a backend plugin's model (at the
prices the plugin declares): an unknown model's cost is None, never a guess.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from booksum_app.errors import ConfigError, InputError
from booksum_app.jsonin import parse_json
from booksum_app.llm.base import ModelInfo, Usage
from booksum_app.llm.cache import ANSWERS_ONLY, CACHE_FILENAME
from booksum_app.llm.cache_rows import in_range_sql
from booksum_app.llm.providers import catalog  # catalog.BACKENDS per use: tests swap it
from booksum_app.llm.providers.catalog import BUILTIN
from booksum_app.llm.registry import ModelEntry, choose_model, list_models

LAST_RUN = "last"  # --run last: the newest run that has an id
# columns added by later migrations, and what a row stored before them reads as
_OPTIONAL = {"purpose": "''", "request": "NULL", "model_string": "NULL", "run": "NULL", "book": "NULL",
             "cache_write_input_tokens": "0"}
_COLUMNS = ("created", "purpose", "model", "model_string", "run", "book", "input_tokens", "output_tokens",
            "cached_input_tokens", "cache_write_input_tokens", "latency_s", "finish_reason", "text", "request")


@dataclass(frozen=True)
class LogFilter:
    """Which calls to read: the newest ``count`` (0: all) of those matching every filter given."""

    count: int = 20
    model: str | None = None  # model string, its alias, or the name the server reported
    purpose: str | None = None
    run: str | None = None  # a run id, the start of one, or "last"
    book: str | None = None  # part of the book's file name, any case
    since: float | None = None  # unix time
    query: str | None = None  # text in the prompt or the answer, any case (as ``llm logs -q``)


@dataclass(frozen=True)
class LoggedCall:
    """One stored call; None where the row predates the column that holds it."""

    created: float
    purpose: str
    model: str  # booksum's model string when stored, else the name the server reported
    reported_model: str
    run: str | None
    book: str | None
    usage: Usage
    latency_s: float
    finish_reason: str
    cost_usd: float | None  # None: the model has no price in the table
    request: dict[str, Any] | None  # {"messages": [...], "max_tokens": ..., ...}; None: not stored
    response: str


@dataclass(frozen=True)
class CallLog:
    """What :func:`read_log` found: the cache file, its calls in all, and the matching ones, newest first."""

    path: Path
    total: int
    matched: int
    calls: tuple[LoggedCall, ...]
    out_of_range: int = 0  # rows left out: a field outside cache_rows' ranges (another writer's)


class PriceBook:
    """Prices of the models the table names, looked up by model string or alias."""

    def __init__(self, entries: Iterable[ModelEntry]) -> None:
        self._by_name: dict[str, ModelInfo] = {}
        self._unpriced: set[str] = set()
        for e in entries:
            info = ModelInfo(e.name, e.context_window, e.tokenizer, e.input_usd_per_mtok, e.output_usd_per_mtok,
                             e.cached_input_usd_per_mtok, cache_write_usd_per_mtok=e.cache_write_usd_per_mtok)
            for name in (e.name, *e.aliases):
                self._by_name[name] = info

    @classmethod
    def from_registry(cls) -> PriceBook:
        """The shipped table merged with the user's config file."""
        return cls(list_models())

    def canonical(self, name: str) -> str:
        """The model string ``name`` stands for (itself when the table does not know it)."""
        info = self._by_name.get(name)
        return info.name if info is not None else name

    def cost(self, name: str, usage: Usage) -> float | None:
        """Dollars for ``usage`` on model ``name``, or None when neither the table nor its plugin prices it."""
        info = self._by_name.get(name)
        if info is None and name not in self._unpriced:
            info = self._plugin_info(name)
        return None if info is None else info.cost_usd(usage)

    def _plugin_info(self, name: str) -> ModelInfo | None:
        """A backend plugin's model, priced by what the plugin declares (``model_defaults``)."""
        provider = name.partition(":")[0]
        if provider in BUILTIN or not catalog.BACKENDS.is_provider(provider):
            self._unpriced.add(name)  # a built-in provider's unlisted model: its price would be a guess
            return None
        try:
            info = choose_model(name).info
        except ConfigError:
            self._unpriced.add(name)
            return None
        self._by_name[name] = info
        return info


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _where(f: LogFilter, prices: PriceBook, last_run: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if f.since is not None:
        clauses.append("created >= ?")
        args.append(f.since)
    if f.model:
        names = sorted({f.model, prices.canonical(f.model)})
        marks = ",".join("?" * len(names))
        # a bare "gpt-4o" also finds "openai:gpt-4o"
        clauses.append(f"(model IN ({marks}) OR model_string IN ({marks}) OR model_string LIKE ? ESCAPE '\\')")
        args += [*names, *names, "%:" + _like(f.model)]
    if f.purpose:
        clauses.append("purpose = ?")
        args.append(f.purpose)
    if f.run == LAST_RUN:
        clauses.append("run = ?")  # NULL (no run yet) matches nothing
        args.append(last_run)
    elif f.run:
        clauses.append("run LIKE ? ESCAPE '\\'")
        args.append(_like(f.run) + "%")
    if f.book:
        clauses.append("book LIKE ? ESCAPE '\\'")
        args.append("%" + _like(f.book) + "%")
    if f.query:
        clauses.append("(text LIKE ? ESCAPE '\\' OR request LIKE ? ESCAPE '\\')")
        args += ["%" + _like(f.query) + "%"] * 2
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _row(row: tuple[Any, ...], prices: PriceBook) -> LoggedCall:
    v = dict(zip(_COLUMNS, row, strict=True))
    usage = Usage(int(v["input_tokens"]), int(v["output_tokens"]), int(v["cached_input_tokens"]),
                  int(v["cache_write_input_tokens"]))
    name = v["model_string"] or v["model"]
    stored = v["request"]
    try:
        request = parse_json(stored, where="a stored request") if isinstance(stored, str | bytes) and stored else None
    except InputError:
        request = None  # written by something else: shown as not stored rather than failing
    return LoggedCall(
        created=float(v["created"]), purpose=str(v["purpose"] or ""), model=str(name),
        reported_model=str(v["model"]), run=_text(v["run"]), book=_text(v["book"]), usage=usage,
        latency_s=float(v["latency_s"]), finish_reason=str(v["finish_reason"]),
        cost_usd=prices.cost(str(name), usage), request=request if isinstance(request, dict) else None,
        response=str(v["text"]),
    )


def _text(value: object) -> str | None:
    """A nullable text column as text (SQLite keeps whatever type another writer gave it)."""
    return None if value is None else str(value)


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The cache file opened read-only; a file SQLite cannot open or read is one ConfigError line."""
    try:
        db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the call cache {path}: {exc}; pass --cache-dir DIR") from exc
    try:
        yield db
    except sqlite3.DatabaseError as exc:
        raise ConfigError(
            f"cannot read the call cache {path}: {exc}; move the file aside or pass --cache-dir DIR"
        ) from exc
    finally:
        db.close()


def read_log(directory: Path | str, f: LogFilter = LogFilter(), *, prices: PriceBook | None = None) -> CallLog | None:
    """The calls stored in the cache in ``directory`` that match ``f``, newest first.

    Returns:
        None when there is no cache file there (nothing was ever cached).

    Raises:
        ConfigError: the file is not a readable SQLite cache (corrupt, or not a database).
    """
    path = Path(directory).expanduser() / CACHE_FILENAME
    if not path.is_file():
        return None
    prices = prices or PriceBook.from_registry()
    with _read_only(path) as db:
        have = {r[1] for r in db.execute("PRAGMA table_info(calls)")}
        if not have:
            return CallLog(path, 0, 0, ())  # created but never written to
        view = _view(have)
        last_run = None
        if f.run == LAST_RUN:  # looked up once: as a subquery it ran once per row (4 s at 100k rows)
            found = db.execute(
                f"{view}SELECT run FROM c WHERE run IS NOT NULL ORDER BY created DESC LIMIT 1"
            ).fetchone()
            last_run = found[0] if found else None
        where, args = _where(f, prices, last_run)
        stored = int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
        total = int(db.execute(f"{view}SELECT COUNT(*) FROM c").fetchone()[0])
        matched = int(db.execute(f"{view}SELECT COUNT(*) FROM c{where}", args).fetchone()[0])
        limit = f" LIMIT {int(f.count)}" if f.count > 0 else ""
        rows = db.execute(f"{view}SELECT {', '.join(_COLUMNS)} FROM c{where} ORDER BY created DESC{limit}",
                          args).fetchall()
    return CallLog(path, total, matched, tuple(_row(r, prices) for r in rows), out_of_range=stored - total)


def _view(have: set[str]) -> str:
    """``WITH c AS (...)``: the rows of ``calls`` whose every field is in range, old rows read like
    new ones (columns added by later migrations at their defaults)."""
    select = ", ".join(c if c in have or c not in _OPTIONAL else f"{_OPTIONAL[c]} AS {c}" for c in _COLUMNS)
    return f"WITH c AS (SELECT * FROM (SELECT key, {select} FROM calls) WHERE {in_range_sql()}) "


@dataclass(frozen=True)
class ModelTotal:
    """The stored answers of one model (booksum's model string, as ``logs`` names it) and their cost."""

    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: float | None  # None: the table has no price for this model


def model_totals(directory: Path | str, *, before: float | None = None,
                 prices: PriceBook | None = None) -> tuple[ModelTotal, ...]:
    """Answers per model in the cache in ``directory`` (only those stored before ``before``, unix time),
    most answers first; empty when there is no cache file.

    Raises:
        ConfigError: the file is not a readable SQLite cache.
    """
    path = Path(directory).expanduser() / CACHE_FILENAME
    if not path.is_file():
        return ()
    prices = prices or PriceBook.from_registry()
    with _read_only(path) as db:
        have = {r[1] for r in db.execute("PRAGMA table_info(calls)")}
        if not have:
            return ()
        # answers only: a logged wasted reply is money, not an answer
        where = f" WHERE {ANSWERS_ONLY}" + (" AND created < ?" if before is not None else "")
        args = [before] if before is not None else []
        rows = db.execute(
            f"{_view(have)}SELECT COALESCE(model_string, model), COUNT(*), SUM(input_tokens), SUM(output_tokens), "
            f"SUM(cached_input_tokens), SUM(cache_write_input_tokens) FROM c{where} GROUP BY 1 ORDER BY 2 DESC, 1",
            args).fetchall()
    totals = []
    for model, calls, inp, out, cached, written in rows:
        usage = Usage(int(inp or 0), int(out or 0), int(cached or 0), int(written or 0))
        totals.append(ModelTotal(str(model), int(calls), usage.input_tokens, usage.output_tokens,
                                 usage.cached_input_tokens, prices.cost(str(model), usage)))
    return tuple(totals)


__all__ = ["LAST_RUN", "CallLog", "LogFilter", "LoggedCall", "ModelTotal", "PriceBook", "model_totals", "read_log"]
