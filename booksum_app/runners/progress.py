"""Live progress of a summarization run: strategy events plus the call layer's per-call hook.

Thread-safe; the CLI reads :meth:`RunProgress.snapshot` to draw its progress line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from booksum_app.llm.base import BackendBase, CallProgress
from booksum_app.llm.calls import CallRecord
from booksum_app.money import usd
from booksum_app.strategies.base import ProgressEvent


@dataclass(frozen=True)
class ProgressSnapshot:
    """What a progress display shows at one moment."""

    stage: str
    done: int
    total: int
    calls: int
    cache_hits: int
    in_flight: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    elapsed_s: float
    planned_calls: int = 0  # the pre-flight plan's calls (an upper bound before regenerations); 0: unknown
    limit: int = 0  # calls allowed in flight now (the adaptive limit); 0: unknown
    call: CallProgress | None = None  # inside the call in progress (the embedded model)
    planned_input_tokens: int = 0  # the plan's prompt tokens (0: unknown)
    planned_output_tokens: int = 0  # the plan's answer tokens, each at its max_tokens (0: unknown)

    @property
    def eta_s(self) -> float | None:
        """Seconds left: in tokens at the model's pace when it reports one (the embedded model), else
        from the planned calls at the pace so far; None before there is a pace or past the plan."""
        tokens = self._eta_in_tokens_s()
        if tokens is not None:
            return tokens
        if not self.planned_calls or not self.calls or self.calls >= self.planned_calls:
            return None
        return self.elapsed_s / self.calls * (self.planned_calls - self.calls)

    def _eta_in_tokens_s(self) -> float | None:
        """Prompt tokens left at the read pace plus answer tokens left at the write pace.

        Prompt tokens left are the plan's less those read; answer tokens left are the calls left
        times the answers' mean length so far (the plan charges each answer its max_tokens, a
        ceiling that real answers rarely reach; before the first answer that ceiling is all there is)."""
        call = self.call
        if call is None or call.read_per_s <= 0 or not self.planned_input_tokens or not self.planned_calls:
            return None
        read = self.input_tokens + call.read_tokens
        calls_left = max(0, self.planned_calls - self.calls)
        mean_answer = (self.output_tokens / self.calls if self.calls
                       else self.planned_output_tokens / self.planned_calls)
        answer_left = max(0.0, calls_left * mean_answer - call.written_tokens)
        write_pace = call.written_per_s or call.read_per_s / 10  # writing is ~10x slower per token than reading
        return max(0, self.planned_input_tokens - read) / call.read_per_s + answer_left / write_pace


class RunProgress:
    """Collects strategy progress events and finished calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._stage, self._done, self._total = "reading the book", 0, 0
        self._calls = self._hits = self._in = self._out = 0
        self._cost = 0.0
        self._model: Any = None
        self._planned = self._planned_in = self._planned_out = 0
        self.listeners: list[Any] = []

    def set_planned_calls(self, calls: int, input_tokens: int = 0, output_tokens: int = 0) -> None:
        """The run's pre-flight plan (its calls, and its tokens when known), for the ETA."""
        with self._lock:
            self._planned, self._planned_in, self._planned_out = calls, input_tokens, output_tokens

    def set_stage(self, text: str) -> None:
        """A stage with no count of its own (``score``: "judging 4 summaries"); the calls are the count."""
        with self._lock:
            self._stage, self._done, self._total = text, 0, 0
        self._notify()

    def attach(self, model: Any) -> None:
        """Remember the model so calls in flight can be shown (a Client has ``in_flight``)."""
        self._model = model

    def on_event(self, event: ProgressEvent) -> None:
        """Strategy hook."""
        with self._lock:
            self._stage, self._done, self._total = event.stage, event.done, event.total
        self._notify()

    def on_call(self, record: CallRecord) -> None:
        """Call-layer hook (``Client(on_call=...)``)."""
        with self._lock:
            self._calls += 1
            self._hits += int(record.cache_hit)
            self._in += record.usage.input_tokens
            self._out += record.usage.output_tokens
            self._cost += record.cost_usd if not record.cache_hit else 0.0
        self._notify()

    def _notify(self) -> None:
        for listener in list(self.listeners):
            listener(self.snapshot())

    def snapshot(self) -> ProgressSnapshot:
        """The current state."""
        in_flight = int(getattr(self._model, "in_flight", 0) or 0)
        limit = int(getattr(self._model, "limit", 0) or 0)
        call = _call_progress(self._model)
        with self._lock:
            return ProgressSnapshot(
                self._stage,
                self._done,
                self._total,
                self._calls,
                self._hits,
                in_flight,
                self._in,
                self._out,
                self._cost,
                time.perf_counter() - self._start,
                self._planned,
                limit,
                call,
                self._planned_in,
                self._planned_out,
            )


def _call_progress(model: Any) -> CallProgress | None:
    """Inside the call in progress, when the model's backend can see there (a Client's ``backend``)."""
    backend = getattr(model, "backend", model)
    return backend.call_progress() if isinstance(backend, BackendBase) else None


def call_parts(call: CallProgress) -> list[tuple[int, str]]:
    """The call in progress as ``(priority, text)`` parts: tokens moving first, then the CPU."""
    moving = (f"reading prompt {call.read_tokens:,}/{call.prompt_tokens:,} tok" if call.read_tokens < call.prompt_tokens
              else f"writing, {call.written_tokens:,} tok")
    parts = [(0, moving)]
    if call.machine_busy:
        parts.append((1, f"machine busy: {call.cores_used:.1f} of {call.threads} cores"))
    return parts


# ---- a whole comparison ---------------------------------------------------------------------


@dataclass(frozen=True)
class GridSnapshot:
    """What the whole-set progress display shows."""

    done: int
    total: int
    reused: int
    running: tuple[str, ...]
    calls: int
    cache_hits: int
    in_flight: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    elapsed_s: float
    configs: tuple[tuple[str, int, int], ...] = ()  # (configuration, summaries done, summaries in all)


class GridProgress:
    """Progress of a whole comparison: summaries done, what runs now, and every call (thread-safe)."""

    def __init__(self) -> None:
        self._calls = RunProgress()  # reused for call accounting across all models
        self._lock = threading.Lock()
        self._done = self._total = self._reused = 0
        self._running: dict[str, str] = {}
        self._configs: dict[str, list[int]] = {}  # configuration -> [done, total], in grid order
        self._models: list[Any] = []
        self.listeners: list[Callable[[GridSnapshot], None]] = []

    def on_call(self, record: CallRecord) -> None:
        """Call-layer hook of every client."""
        self._calls.on_call(record)
        self._notify()

    def attach(self, model: Any) -> None:
        with self._lock:
            self._models.append(model)

    def start(self, total: int, configs: Mapping[str, int] | None = None) -> None:
        """The grid's size: summaries in all and, per configuration, how many it makes."""
        with self._lock:
            self._total = total
            self._configs = {name: [0, n] for name, n in (configs or {}).items()}
        self._notify()

    def stage(self, job: str, text: str) -> None:
        with self._lock:
            self._running[job] = text
        self._notify()

    def finish(self, job: str, *, reused: bool, config: str | None = None) -> None:
        with self._lock:
            self._running.pop(job, None)
            self._done += 1
            self._reused += int(reused)
            if config in self._configs:
                self._configs[config][0] += 1
        self._notify()

    def _notify(self) -> None:
        snap = self.snapshot()
        for listener in list(self.listeners):
            listener(snap)

    def snapshot(self) -> GridSnapshot:
        calls = self._calls.snapshot()
        with self._lock:
            in_flight = sum(int(getattr(m, "in_flight", 0) or 0) for m in self._models)
            return GridSnapshot(
                self._done, self._total, self._reused,
                tuple(f"{k}: {v}" for k, v in self._running.items()),
                calls.calls, calls.cache_hits, in_flight, calls.input_tokens, calls.output_tokens,
                calls.cost_usd, calls.elapsed_s,
                tuple((name, done, total) for name, (done, total) in self._configs.items()),
            )


# ---- one line that fits: what a live display shows in the width it has ---------------------

ELLIPSIS = "…"
_BREAKS = " _-"  # where a name may be cut: between words, and between a file name's parts


def fit_parts(parts: Sequence[tuple[int, str]], width: int, sep: str = " · ") -> str:
    """The parts that fit ``width`` joined by ``sep``, in their order; ``(priority, text)``, 0 kept first.

    A part is left out whole rather than cut, except the first-priority one, which is cut with an ellipsis.
    """
    kept: set[int] = set()
    used = 0
    for i in sorted(range(len(parts)), key=lambda i: parts[i][0]):
        cost = len(parts[i][1]) + (len(sep) if kept else 0)
        if used + cost <= width:
            kept.add(i)
            used += cost
    if not kept and parts:
        first = min(range(len(parts)), key=lambda i: parts[i][0])
        return shorten(parts[first][1], width)
    return sep.join(text for i, (_, text) in enumerate(parts) if i in kept)


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with an ellipsis (at a word end when one is near)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    cut = text[: width - 1]
    if text[width - 1] not in _BREAKS:  # the cut falls inside a word
        end = max(cut.rfind(ch) for ch in _BREAKS)
        if end >= width // 2:  # a whole word dropped reads better than half a word
            cut = cut[:end]
    return cut.rstrip(" ·:;,_-" + ELLIPSIS) + ELLIPSIS


def grid_stat_parts(snap: GridSnapshot) -> list[tuple[int, str]]:
    """A comparison's figures in display order with their priority: calls and dollars before tokens."""
    parts = [(0, f"{snap.calls:,} calls"), *([(5, f"{snap.cache_hits:,} cached")] if snap.cache_hits else []),
             (4, f"{snap.in_flight} in flight"),
             (3, f"{snap.input_tokens:,}+{snap.output_tokens:,} tok"),
             (1, f"{usd(snap.cost_usd, digits=4)}")]
    if snap.done and snap.total > snap.done:
        eta = snap.elapsed_s / snap.done * (snap.total - snap.done)
        parts.append((2, f"ETA {int(eta) // 60}:{int(eta) % 60:02d}"))
    return parts


BOOK_NAME_CHARS = 24  # a book's name in the running line: enough to tell the sample books apart


def running_line(running: Sequence[str], width: int) -> str:
    """What runs now (``"book · config: stage"`` items), as one line of at most ``width`` characters.

    Long book names are shortened with an ellipsis; items that do not fit are counted ("+3").
    """
    full = _pack(list(running), width)
    if full.count("; ") + 1 == len(running) and not full.endswith(ELLIPSIS):
        return full  # every item whole: nothing to shorten
    short = []
    for item in running:
        head, colon, stage = item.partition(": ")
        book, dot, config = head.partition(" · ")
        short.append(f"{shorten(book, BOOK_NAME_CHARS)}{dot}{config}{colon}{stage}")
    return _pack(short, width)


def _pack(items: Sequence[str], width: int) -> str:
    """As many items as fit, then the count of the others; a first item too long is cut."""
    kept: list[str] = []
    for n, item in enumerate(items):
        rest = len(items) - n - 1
        suffix = f" (+{rest})" if rest else ""
        if len("; ".join([*kept, item]) + suffix) <= width:
            kept.append(item)
            continue
        if kept:  # the line before this item fitted with this very count after it
            return "; ".join(kept) + f" (+{rest + 1})"
        return shorten(item, max(1, width - len(suffix))) + suffix
    return "; ".join(kept)


__all__ = ["GridProgress", "GridSnapshot", "ProgressSnapshot", "RunProgress", "call_parts", "fit_parts",
           "grid_stat_parts", "running_line", "shorten"]
