"""How many calls one server (one replica) may have on the wire, read from its answers.

:class:`LatencyController` is a concurrency controller in the shape of the ones that run in
production: Envoy's adaptive concurrency filter (a minimum latency measured in a window and
re-measured at reduced concurrency, a gradient against it with a buffer), Netflix's
concurrency-limits (Gradient2: a tolerance of 1.5x, the cut per window bounded) and TCP (slow
start, AIMD on loss, HyStart++'s minimum of 8 answers, BBR's ProbeRTT). It holds no lock and
reads time only from the clock it is given, so the same object runs under
:class:`~booksum_app.llm.limiter.AdaptiveLimit` (one server, thread-safe), per replica under the
endpoint balancer, and on a virtual clock in the suite's discrete-event simulation.

- **Windows.** Answers are read in windows of :data:`DELAY_SAMPLES`, and only answers to calls
  sent after the last decision count: a decision is judged by the calls it governed. A window's
  latency is its fastest answer: answers differ in length, but in a queue even the fastest
  waits.
- **Baseline.** The first window's latency is the baseline (the server with no queue); a faster
  window lowers it. It is not a lifetime minimum: it is re-measured by the undo below and by a
  periodic probe (Envoy's minRTT window, BBR's ProbeRTT): once the server has shown it queues,
  every :data:`PROBE_EVERY_S` (or :data:`PROBE_EVERY_LATENCIES` baselines, whichever is longer)
  the calls on the wire are held to :data:`PROBE_CONCURRENCY` until :data:`PROBE_SAMPLES`
  answers sent at that level come back; their fastest is the new baseline.
- **Gradient.** A window slower than ``TOLERANCE x baseline`` (and :data:`MIN_QUEUE_DELAY_S`
  slower: jitter of fast calls is no queue) whose fastest call was sent with more calls in
  flight than a recent window answered without a wait (its *level*) means a queue: the server
  serves about ``level x baseline / window`` at once (Little's law), and the limit falls to that
  times ``TOLERANCE`` (a queue of half as many), to no less than :data:`MIN_GRADIENT` of it per
  window. A slow window at a level recently answered fast is not a queue of ours (a busy client,
  a slower model): it is counted, not cut. Slow start (+1 per answer that took at most twice the
  fastest, x2 per window) ends at a window twice the baseline.
- **A cut is an experiment.** In a server that queues, fewer calls in flight wait less: the next
  window, its fastest call sent at ``r`` times the level of the one that caused the cut, should
  be about ``r`` times as slow. When it is not even half-way there, the calls in flight were not
  the cause (a busy client, a model that got slower, longer answers): the cut is undone and the
  baseline moves to the latency now seen. This is what stops a spiral: a cut that did not help
  is never the ground for the next one.
- **The deadline.** A window slower than :data:`DEADLINE_SHARE` of an attempt's timeout scales
  the calls in flight down by that overshoot, with no baseline needed (a first burst that all
  queued); never undone: waits near the timeout waste generations whatever their cause.
- **Refusals.** A 429 or an overloaded answer halves what was on the wire when it came (at most
  once per window); never undone: the provider said so.
- **Growth.** Only while the limit is used (half of it on the wire, or calls waiting: RFC 7661)
  and no queue is seen: +1 per answer in slow start, then +1 per window (additive increase).

Every decision is counted in :class:`LimiterStats` (cuts by reason, undone cuts, slow windows
not cut, probes, time at each limit), which the run record keeps under ``limiter``. Deliberate
deviations: a window's statistic is its minimum (Gradient2 averages; LLM answers differ in
length far more than RPCs), and the cut aims at what the server serves, not at the limit times a
gradient.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SLOW_START_STEP = 1.0  # per answer in slow start: x2 per window, as TCP's
DELAY_SAMPLES = 8  # answers per window (HyStart++'s N_RTT_SAMPLE)
QUEUEING_FACTOR = 2.0  # slow start ends at twice the baseline even within the tolerance rule's cut
TOLERANCE = 1.5  # a window up to 50 % over the baseline is no queue (Gradient2's rttTolerance)
MIN_QUEUE_DELAY_S = 0.05  # and at least this much slower: jitter of fast calls is not a queue
MIN_GRADIENT = 0.25  # one window cuts to no less than a quarter (Gradient2 floors at half, per sample)
DEADLINE_SHARE = 0.5  # windows slower than this share of an attempt's timeout: fewer in flight
PROBE_CONCURRENCY = 2  # calls on the wire while the baseline is re-measured
PROBE_SAMPLES = 4  # answers sent during a probe whose fastest is the new baseline
PROBE_EVERY_S = 60.0  # a baseline older than this is re-measured (once the server has queued)
PROBE_EVERY_LATENCIES = 50.0  # ... and older than this many baselines: a probe costs about two
FAST_LEVEL_TTL_S = 30.0  # how long a window that was fast at a level vouches for that level
MAX_EVENTS = 32  # decisions kept in the record's list (every one is counted)
CUT_REASONS = ("rate_limited", "queue", "deadline")


@dataclass
class LimiterStats:
    """Every decision of one controller: counted, timed, and the first few listed."""

    cuts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CUT_REASONS, 0))
    undone: int = 0  # latency cuts undone because latency did not fall after them
    not_ours: int = 0  # slow windows not cut: as many calls in flight were answered fast a moment before
    probes: int = 0  # baseline re-measurements at reduced concurrency
    rejections: int = 0  # 429 / overloaded answers
    lowest: int = 0
    time_at_limit_s: dict[int, float] = field(default_factory=dict)
    events: list[tuple[float, str, int, int]] = field(default_factory=list)  # (t, what, from, to)

    def report(self, *, limit: int, now_s: float, since_s: float, started_s: float) -> dict[str, Any]:
        """A JSON-able summary: cuts, undone, probes, time at each limit in power-of-two bands."""
        spans = dict(self.time_at_limit_s)
        spans[limit] = spans.get(limit, 0.0) + max(0.0, now_s - since_s)
        bands: dict[str, float] = {}
        for value, seconds in sorted(spans.items()):
            low = 1 << max(0, value.bit_length() - 1)
            key = str(low) if low == 1 else f"{low}-{2 * low - 1}"
            bands[key] = round(bands.get(key, 0.0) + seconds, 3)
        return {"limit": limit, "lowest": self.lowest, "cuts": dict(self.cuts), "undone": self.undone,
                "not_ours": self.not_ours, "probes": self.probes, "rejections": self.rejections,
                "time_at_limit_s": bands,
                "events": [{"t_s": round(t - started_s, 3), "what": what, "from": a, "to": b}
                           for t, what, a, b in self.events]}


@dataclass
class _Check:
    """A latency cut awaiting its test: the limit before, the window's latency and its call's level."""

    limit_before: float
    window_s: float
    level: int  # calls on the wire when the window's fastest call was sent


class LatencyController:
    """The limit on calls in flight to one server: slow start, gradient cuts that are tested, AIMD on refusals."""

    def __init__(self, *, initial: int, maximum: int, minimum: int = 1, adaptive: bool = True,
                 latency: bool = True, clock: Callable[[], float] = time.monotonic,
                 deadline_s: float | None = None) -> None:
        self.maximum = max(1, maximum)
        self.minimum = max(1, min(minimum, self.maximum))
        self.adaptive = adaptive
        self.latency = latency  # False: only refusals move the limit (replicas' own controllers read latency)
        self.deadline_s = deadline_s
        self._clock = clock
        self._limit = float(min(max(initial, self.minimum), self.maximum) if adaptive else self.maximum)
        self.slow_start = adaptive and self._limit < self.maximum
        self.started = 0  # calls sent so far: a call's ticket
        self._decided_at = -1  # answers to calls sent up to this ticket do not judge what came after
        self._window: list[tuple[float, int]] = []  # (latency, calls on the wire when it was sent)
        self._last_window: list[tuple[float, int]] = []
        self._levels: dict[int, int] = {}  # ticket -> calls on the wire when it was sent
        self.baseline_s: float | None = None
        self._check: _Check | None = None
        self._queueing = False  # the last window showed a queue: no growth until one does not
        self._probe_from: int | None = None  # probing: answers to calls sent after this ticket
        self._probe_samples: list[float] = []
        self._next_probe_s = math.inf  # no probe until the server has queued once
        self._fast_level = 0  # the most calls in flight at which a recent window's answers did not wait
        self._fast_level_s = -math.inf  # when that was seen
        now = clock()
        self._started_s = self._since_s = now
        self.stats = LimiterStats(lowest=int(self._limit))

    # ---- what callers read --------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Calls that may be on the wire now (held low while the baseline is re-measured)."""
        if self._probe_from is not None:
            return min(int(self._limit), PROBE_CONCURRENCY)
        return int(self._limit)

    @property
    def capacity(self) -> int:
        """Calls this server was recently seen to answer at once without a wait (1 when not known)."""
        if self._clock() - self._fast_level_s > FAST_LEVEL_TTL_S:
            return 1
        return max(1, self._fast_level)

    @property
    def probing(self) -> bool:
        """Whether the baseline is being re-measured at reduced concurrency."""
        return self._probe_from is not None

    def report(self) -> dict[str, Any]:
        """The record's summary of every decision (:class:`LimiterStats`)."""
        return self.stats.report(limit=int(self._limit), now_s=self._clock(), since_s=self._since_s,
                                 started_s=self._started_s)

    # ---- what callers report ------------------------------------------------------------

    def sent(self, in_flight: int = 0) -> int:
        """A call goes on the wire with ``in_flight`` there (itself included): its ticket, to report its answer with."""
        self.started += 1
        if self.adaptive and self.latency:
            self._levels[self.started] = in_flight
        if (self._probe_from is None and self.adaptive and self.latency and self._clock() >= self._next_probe_s
                and self._limit > PROBE_CONCURRENCY):
            self._probe_from = self.started  # this call went out at full concurrency; the next ones at the probe's
            self._probe_samples = []
            self.stats.probes += 1
            self._event("probe", int(self._limit), PROBE_CONCURRENCY)
        return self.started

    def answered(self, ticket: int, *, latency_s: float | None, in_flight: int, waiting: bool) -> None:
        """Call ``ticket`` was answered after ``latency_s`` with ``in_flight`` on the wire (itself
        included); ``waiting``: calls wait for a slot (the limit holds the run back)."""
        level = self._levels.pop(ticket, in_flight)
        if not self.adaptive:
            return
        if latency_s is not None and self.latency:
            if self._probe_from is not None:
                self._probe_answer(ticket, latency_s)
                return
            if self._watch(ticket, latency_s, in_flight, level):
                return
            floor = self.baseline_s if self.baseline_s is not None else min((w for w, _ in self._window), default=None)
            if self.slow_start and floor is not None and latency_s > QUEUEING_FACTOR * floor:
                return  # an answer that waited twice the fastest: no growth on it (HyStart++ reads each sample)
        if 2 * in_flight < self._limit and not waiting:
            return  # the limit is not in use: this answer says nothing of a higher one (RFC 7661)
        step = SLOW_START_STEP if self.slow_start else 1 / self._limit
        self._set(min(float(self.maximum), self._limit + step))

    def overloaded(self, ticket: int, *, in_flight: int) -> None:
        """Call ``ticket`` was refused (429, 503, 529) with ``in_flight`` on the wire, itself included."""
        self._levels.pop(ticket, None)
        if not self.adaptive:
            return
        self.stats.rejections += 1
        if ticket <= self._decided_at:
            return  # once per window: calls sent before the last decision do not count
        self.slow_start = False
        target = max(float(self.minimum), min(self._limit, float(in_flight)) / 2)
        self._cut(target, "rate_limited", None)

    def failed(self, ticket: int) -> None:
        """Call ``ticket`` failed otherwise (a 500, a timeout): it says nothing of the limit."""
        self._levels.pop(ticket, None)

    # ---- deciding -----------------------------------------------------------------------

    def _watch(self, ticket: int, latency_s: float, in_flight: int, level: int) -> bool:
        """Read one answer into the window; decide at a full window. True holds growth back."""
        if ticket <= self._decided_at:
            return self._queueing
        self._window.append((latency_s, level))
        if len(self._window) < DELAY_SAMPLES:
            return self._queueing
        window_s, level = min(self._window)
        self._last_window, self._window = self._window, []
        if self.baseline_s is None:
            self.baseline_s = window_s
            self._note_fast_levels(window_s)
            return False
        check, self._check = self._check, None
        # in a queue a call waits in proportion to the calls ahead of it: sent at a lower level, the
        # window's fastest should wait about level / check.level as long; undo when it is not half-way there
        fewer = level / max(1, check.level) if check is not None else 1.0
        if check is not None and fewer < 0.9 and window_s >= check.window_s * (1 + fewer) / 2:
            # fewer calls in flight did not wait less: they were not the cause; back, and rebase
            self.stats.undone += 1
            self._event("undo", int(self._limit), int(check.limit_before))
            self._set(check.limit_before)
            self.baseline_s = window_s
            self._decided_at = self.started
            self._queueing = False
            return True
        self.baseline_s = min(self.baseline_s, window_s)
        base = self.baseline_s
        now = self._clock()
        self._note_fast_levels(base)
        late = self.deadline_s is not None and window_s > DEADLINE_SHARE * self.deadline_s
        queue = window_s > TOLERANCE * base and window_s - base >= MIN_QUEUE_DELAY_S
        if self.slow_start and (late or (queue and window_s > QUEUEING_FACTOR * base)):
            self.slow_start = False
        if queue and not late and level <= self._fast_level and now - self._fast_level_s <= FAST_LEVEL_TTL_S:
            # as many calls in flight were answered without waiting a moment ago: not a queue of ours
            self.stats.not_ours += 1
            self._queueing = False
            return True
        self._queueing = late or queue
        if not self._queueing:
            return False
        on_wire = min(self._limit, float(in_flight))
        if late and self.deadline_s is not None:
            # in a queue a wait grows with the calls ahead: scale them so waits fall to that share
            target = math.floor(in_flight * DEADLINE_SHARE * self.deadline_s / window_s)
            check = None  # waits near the timeout waste generations whatever their cause: never undone
        else:
            # the server serves about level x baseline / window at once (Little's law); a queue of half as many
            target = math.ceil(min(on_wire, float(level)) * max(MIN_GRADIENT, TOLERANCE * base / window_s))
            check = _Check(self._limit, window_s, level)
        target = max(self.minimum, target)
        if target < self._limit:
            self.slow_start = False
            self._cut(float(target), "deadline" if check is None else "queue", check)
        return True

    def _note_fast_levels(self, base: float) -> None:
        """Remember the most calls in flight at which an answer of the last window did not wait."""
        fast = [lvl for lat, lvl in self._last_window if lat <= TOLERANCE * base or lat - base < MIN_QUEUE_DELAY_S]
        if fast:
            now = self._clock()
            fresh = now - self._fast_level_s <= FAST_LEVEL_TTL_S
            self._fast_level = max(self._fast_level, *fast) if fresh else max(fast)
            self._fast_level_s = now

    def _probe_answer(self, ticket: int, latency_s: float) -> None:
        if ticket <= (self._probe_from or 0):
            return  # sent before the probe, at full concurrency
        self._probe_samples.append(latency_s)
        if len(self._probe_samples) < PROBE_SAMPLES:
            return
        self.baseline_s = min(self._probe_samples)
        self._probe_from, self._probe_samples = None, []
        self._window, self._check, self._queueing = [], None, False
        self._decided_at = self.started
        self._schedule_probe()
        self._event("baseline", int(self._limit), int(self._limit))

    def _cut(self, target: float, reason: str, check: _Check | None) -> None:
        self.stats.cuts[reason] += 1
        self._event(reason, int(self._limit), int(target))
        self._set(target)
        self._decided_at = self.started
        self._window = []
        self._check = check
        if reason != "rate_limited" and self._next_probe_s == math.inf:
            self._schedule_probe()  # this server queues: its baseline is worth re-measuring

    def _schedule_probe(self) -> None:
        every = max(PROBE_EVERY_S, PROBE_EVERY_LATENCIES * (self.baseline_s or 0.0))
        self._next_probe_s = self._clock() + every

    def _set(self, value: float) -> None:
        before = int(self._limit)
        self._limit = min(float(self.maximum), max(float(self.minimum), value))
        after = int(self._limit)
        if after != before:
            now = self._clock()
            spans = self.stats.time_at_limit_s
            spans[before] = spans.get(before, 0.0) + max(0.0, now - self._since_s)
            self._since_s = now
            self.stats.lowest = min(self.stats.lowest, after)

    def _event(self, what: str, before: int, after: int) -> None:
        if len(self.stats.events) < MAX_EVENTS:
            self.stats.events.append((self._clock(), what, before, after))


def merged_report(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Several controllers' reports (the model's and each replica's) as one record entry."""
    return {name: report for name, report in reports.items() if report}


def summary_line(report: dict[str, Any]) -> str:
    """One line for ``-v``: cuts by reason, undone, probes, lowest and final limit."""
    cuts = report.get("cuts", {})
    said = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in cuts.items() if n) or "no cuts"
    return (f"{said}; {report.get('undone', 0)} undone, {report.get('probes', 0)} probes; "
            f"limit {report.get('limit')} (lowest {report.get('lowest')})")


__all__ = ["CUT_REASONS", "DELAY_SAMPLES", "LatencyController", "LimiterStats", "merged_report", "summary_line"]
