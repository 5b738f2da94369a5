"""Benchmark: what summarize's quality line costs after the last answer, in time and peak memory.

Summarizes a book with ``hier`` against the in-process fake (``FakeBackend`` describing
``openai:gpt-4``, no latency), then runs the quality line (``record_quality``) and prints the
run's time, the line's time and the process's peak RSS before and after the line (VmHWM).
Each repeat runs in a fresh interpreter, so one repeat's memory does not count in the next.

    python benchmarks/bench_quality_line.py [--book PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ONE_RUN = """
import sys, time
from booksum_app.books import open_book
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.runners.quality import record_quality
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_backend import FakeBackend

def hwm():
    return next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))

info = ModelInfo(name="openai:gpt-4", context_window=8192, tokenizer="cl100k_base", max_output_tokens=None)
book = open_book(sys.argv[1])
started = time.perf_counter()
record = summarize_book(book, strategy="hier", model=Client(FakeBackend(info), concurrency=128))
answered = time.perf_counter()
run_peak = hwm()
record_quality(record, book)
print(answered - started, time.perf_counter() - answered, run_peak, hwm())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data = Path(os.environ.get("BOOKSUM_DATA_DIR", "."))
    parser.add_argument("--book", type=Path, default=data / "books" / "shi-naian_shuihuzhuan.txt",
                        help="default: 水浒传 under $BOOKSUM_DATA_DIR/books")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", ONE_RUN, str(args.book)], capture_output=True, text=True,
                             check=True)
        rows.append([float(x) for x in out.stdout.split()])
        print(describe(rows[-1]), flush=True)
    print("median:", describe([statistics.median(col) for col in zip(*rows, strict=True)]))


def describe(row: list[float]) -> str:
    run, line, before, after = row
    return f"run {run:.2f} s, line {line:.2f} s, peak {before:.0f} MB before the line, {after:.0f} MB after"


if __name__ == "__main__":
    main()
