"""What the embedded model is doing inside a call: prompt tokens read, answer tokens written, CPU.

llama-cpp-python evaluates a prompt in batches of ``n_batch`` tokens, then one token per
step while it writes, all through ``Llama.eval``; :class:`TokenWatch` takes that method's
place on the instance and evaluates the same batches one at a time, counting after each, so
a progress line can show tokens moving within a call that takes minutes on a busy machine.
It also keeps the pace (tokens read and written per second, over every call so far) for an
ETA in tokens, and the CPU cores the process got during the call (``time.process_time``
over the wall clock): well under the threads the model computes on, the machine is busy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from booksum_app.llm.base import CallProgress


class TokenWatch:
    """Counts the tokens an llama.cpp model evaluates, per call and in all (thread-safe)."""

    def __init__(self, llm: Any, *, threads: int, clock: Callable[[], float] = time.perf_counter,
                 cpu_clock: Callable[[], float] = time.process_time) -> None:
        self._llm = llm
        self._threads = threads
        self._clock, self._cpu_clock = clock, cpu_clock
        self._lock = threading.Lock()
        self._prompt = self._read = self._written = 0
        self._started = self._cpu_started = 0.0
        self._read_total = self._written_total = 0
        self._read_s = self._written_s = 0.0
        self._eval: Callable[[Sequence[int]], None] = llm.eval
        llm.eval = self._evaluate  # generate() calls self.eval: the instance attribute wins

    def begin(self, prompt_tokens: int) -> None:
        """A call starts with a prompt of this many tokens."""
        with self._lock:
            self._prompt, self._read, self._written = prompt_tokens, 0, 0
            self._started, self._cpu_started = self._clock(), self._cpu_clock()

    def end(self) -> None:
        """The call is over."""
        with self._lock:
            self._prompt = self._read = self._written = 0

    def _evaluate(self, tokens: Sequence[int]) -> None:
        step = max(1, int(getattr(self._llm, "n_batch", 512) or 512))
        for i in range(0, len(tokens), step):
            batch = tokens[i:i + step]
            start = self._clock()
            self._eval(batch)
            took_s = self._clock() - start
            with self._lock:
                if self._prompt and self._read < self._prompt:  # a prompt's batch (after any reused prefix)
                    self._read = min(self._prompt, int(getattr(self._llm, "n_tokens", 0) or 0) or
                                     self._read + len(batch))
                    self._read_total += len(batch)
                    self._read_s += took_s
                else:  # one token of the answer
                    self._written += len(batch)
                    self._written_total += len(batch)
                    self._written_s += took_s

    def snapshot(self) -> CallProgress | None:
        """The call in progress, None between calls."""
        with self._lock:
            if not self._prompt:
                return None
            wall_s = self._clock() - self._started
            cores = (self._cpu_clock() - self._cpu_started) / wall_s if wall_s > 0 else 0.0
            return CallProgress(
                prompt_tokens=self._prompt, read_tokens=self._read, written_tokens=self._written,
                read_per_s=self._read_total / self._read_s if self._read_s > 0 else 0.0,
                written_per_s=self._written_total / self._written_s if self._written_s > 0 else 0.0,
                cores_used=cores, threads=self._threads,
            )


__all__ = ["TokenWatch"]
