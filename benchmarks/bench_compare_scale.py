"""Benchmark: `booksum compare` on many books at once (issue 14, the driver goal of issue 11).

Copies one sample book N times (default 40 copies of The Time Machine), starts the fake
OpenAI-compatible server in this process (on its own threads) answering every call after a
fixed latency (default 1 s), and runs the real CLI in a subprocess of its own:

    booksum compare BOOKS --strategies hier --models openai:gpt-4 --chunk-sizes 2048 \\
        --judge openai:gpt-4 --concurrency 256 [--jobs N] --out OUT --yes --no-plots

``--jobs`` is left out by default (booksum's own default: ``--concurrency`` / 4 books at once).

Prints whether it completed, the answered calls (server side), the wall time, answered calls
per second, the rate sustained over the middle 80% of requests, the ceiling the latency allows
(concurrency / latency), the driver's peak RSS and
its CPU time (with its n-gram worker processes), and the stand-in's CPU time apart: on one
machine both share the cores, so the stand-in's cost per call bounds what the driver can reach.

Identical copies share every request, so the call cache's leases make one copy pay and the
others wait: that measures the many-copies case, not throughput. ``--distinct`` writes each
copy as plain text with a marker of its own in every paragraph, so every call is new.

    python benchmarks/bench_compare_scale.py [--books 40] [--latency 1.0] [--concurrency 256] \\
        [--jobs 0] [--distinct] [--timeline]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_driver import cpu_seconds

from booksum_app.runners.data import data_path
from booksum_app.testing.fake_server import FakeServer

SHARED_BOOKS = data_path("sample-books", os.environ)  # BOOKSUM_DATA_DIR / `booksum data fetch sample-books`


def write_distinct_copy(book: Path, target: Path, n: int) -> None:
    """The book's narrative chapters as plain text, a marker of copy ``n`` opening every paragraph."""
    from booksum_app.books import open_book

    parsed = open_book(book)
    parts = [parsed.title, ""]
    for index, chapter in enumerate(c for c in parsed.chapters if c.narrative):
        parts += [f"Chapter {index + 1}", ""]
        parts += [f"(Copy {n}.) {paragraph}\n" for paragraph in chapter.paragraphs]
    target.write_text("\n".join(parts), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=next(iter(sorted(SHARED_BOOKS.glob("*time-machine*.epub"))), None))
    parser.add_argument("--books", type=int, default=40)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=0, help="books at once; 0 (default): leave --jobs out, booksum's "
                        "default for the concurrency")
    parser.add_argument("--strategy", default="hier")
    parser.add_argument("--distinct", action="store_true", help="every copy different: no shared request")
    parser.add_argument("--timeline", action="store_true", help="requests received in each half second")
    args = parser.parse_args()
    if args.book is None or not args.book.is_file():
        sys.exit("no sample book: pass --book PATH.epub")
    server = FakeServer(latency_s=args.latency)
    work = Path(tempfile.mkdtemp(prefix="booksum-scale-"))
    try:
        server.start()
        books = work / "books"
        books.mkdir()
        for n in range(args.books):
            if args.distinct:
                write_distinct_copy(args.book, books / f"copy-{n:03d}.txt", n)
            else:
                shutil.copy(args.book, books / f"copy-{n:03d}{args.book.suffix}")
        env = {**os.environ, "OPENAI_API_KEY": "dummy", "BOOKSUM_CACHE_DIR": str(work / "cache")}
        command = [
            sys.executable, "-c", "from booksum_app.cli import main; main()", "compare", str(books),
            "--strategies", args.strategy, "--models", "openai:gpt-4", "--chunk-sizes", "2048",
            "--judge", "openai:gpt-4", "--base-url", server.openai_base_url, "--concurrency", str(args.concurrency),
            *(["--jobs", str(args.jobs)] if args.jobs else []), "--out", str(work / "out"), "--yes", "--no-plots",
        ]
        start, stand_in_before, started = time.perf_counter(), time.process_time(), time.monotonic()
        with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
            main_cpu = _MainProcessCpu(process.pid)  # the driver alone, without its n-gram workers
            stdout, stderr = process.communicate()
            main_cpu.stop()
        done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        wall_s = time.perf_counter() - start
        stand_in_cpu_s = time.process_time() - stand_in_before  # this process does nothing else meanwhile
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the driver and its n-gram workers
        peak_mb = children.ru_maxrss / 1024
        cpu_s = children.ru_utime + children.ru_stime
        calls = server.call_count
        arrivals = [r.received_s for r in server.requests]
        sustained = sustained_rate(arrivals)
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    tail = done.stderr.strip().splitlines()[-1:] if done.returncode else []
    cores = len(os.sched_getaffinity(0))
    print(f"{args.books} {'distinct' if args.distinct else 'identical'} books x {args.strategy}, "
          f"latency {args.latency:g}s, concurrency {args.concurrency}, "
          f"jobs {args.jobs or 'auto'}, cores {cores}, load {os.getloadavg()[0]:.2f}")
    print(f"completed: {done.returncode == 0} (exit {done.returncode}) {' '.join(tail)}")
    print(f"answered calls: {calls}; wall {wall_s:.1f}s; {calls / wall_s:.1f} calls/s "
          f"(latency ceiling {args.concurrency / args.latency:.0f} calls/s: "
          f"{calls / wall_s / (args.concurrency / args.latency):.2f}x)")
    print(f"sustained: {sustained:.1f} calls/s over the middle {SUSTAINED_SHARE:.0%} of requests (the grid's start and "
          f"its tail of dependent rounds left out; {sustained / (args.concurrency / args.latency):.2f}x the ceiling)")
    print(f"driver peak RSS: {peak_mb:.0f} MB; driver CPU (with its workers): {cpu_s:.1f}s, "
          f"{1000 * cpu_s / max(calls, 1):.1f} ms per call, {cpu_s / wall_s / cores:.2f} of the cores")
    print(f"  of which the driver's own process (calls, chunking, judging; polled): {main_cpu.seconds:.1f}s, "
          f"{1000 * main_cpu.seconds / max(calls, 1):.1f} ms per call; its n-gram worker processes: "
          f"{cpu_s - main_cpu.seconds:.1f}s, {(cpu_s - main_cpu.seconds) / args.books:.2f}s per book")
    if args.timeline:
        print_timeline(arrivals, started)
    per_call = stand_in_cpu_s / max(calls, 1)
    print(f"stand-in CPU (fake server, this process): {stand_in_cpu_s:.1f}s, {1000 * per_call:.1f} ms per call, "
          f"{stand_in_cpu_s / wall_s / cores:.2f} of the cores; at 150 calls/s it alone would need "
          f"{150 * per_call:.2f} of {cores} cores")


SUSTAINED_SHARE = 0.8


def sustained_rate(arrivals: list[float], share: float = SUSTAINED_SHARE) -> float:
    """Requests per second between the arrivals that open and close the middle ``share`` of them.

    A grid starts with reading and chunking and ends with rounds of one dependent call per
    book (merge, cleaning, the judge's warm-up): its total rate is bounded by that shape. The
    middle of the run is where the driver alone sets the pace.
    """
    times = sorted(arrivals)
    if len(times) < 10:
        return float("nan")
    first = int(len(times) * (1 - share) / 2)
    last = len(times) - 1 - first
    return (last - first) / max(times[last] - times[first], 1e-9)


def print_timeline(arrivals: list[float], started: float, step_s: float = 0.5) -> None:
    """Requests received in each ``step_s`` since the driver started, one line a step."""
    counts: dict[int, int] = {}
    for t in arrivals:
        counts[int((t - started) / step_s)] = counts.get(int((t - started) / step_s), 0) + 1
    for k in range(max(counts, default=-1) + 1):
        print(f"  {k * step_s:5.1f}s {counts.get(k, 0):4} {'#' * (counts.get(k, 0) // 4)}")


class _MainProcessCpu:
    """Polls a process's own CPU (every thread, no children) until it exits: its last reading."""

    def __init__(self, pid: int) -> None:
        self.seconds = 0.0
        self._pid = pid
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.wait(0.1):
            try:
                self.seconds = cpu_seconds(self._pid)
            except (OSError, IndexError):
                return  # exited: the last reading stands (at most 0.1 s short)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


if __name__ == "__main__":
    main()
