"""How long ``booksum logs`` takes to read a large call cache (100,000 calls by default).

Run by hand: ``python benchmarks/bench_logs.py [--calls 100000] [--prompt-chars 2000]``.
Fills a temporary cache with synthetic rows (500 calls per run and book), then times
:func:`booksum_app.llm.call_log.read_log` for the default view and each kind of filter.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time

from booksum_app.llm.cache import CallCache
from booksum_app.llm.call_log import LogFilter, PriceBook, read_log

PURPOSES = ("summarize", "merge", "judge")


def fill(directory: str, calls: int, prompt_chars: int) -> float:
    CallCache(directory).close()  # the current schema
    request = json.dumps({"messages": [{"role": "user", "content": "x" * prompt_chars}]})
    now = time.time()
    db = sqlite3.connect(f"{directory}/calls.sqlite3")
    db.executemany(
        "INSERT INTO calls (key, text, finish_reason, input_tokens, output_tokens, cached_input_tokens, model, "
        "created, latency_s, purpose, request, model_string, run, book) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(f"k{i}", "answer " * 50, "stop", 2000, 300, 0, "gpt-4o-mini", now - i, 1.0, PURPOSES[i % 3], request,
          "openai:gpt-4o-mini", f"run{i // 500}", f"book{i // 500}.epub") for i in range(calls)],
    )
    db.commit()
    db.close()
    return now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--prompt-chars", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        now = fill(directory, args.calls, args.prompt_chars)
        prices = PriceBook.from_registry()
        for label, f in (("newest 20", LogFilter()), ("--purpose merge", LogFilter(purpose="merge")),
                         ("--run last", LogFilter(run="last")), ("--book book7", LogFilter(book="book7")),
                         ("--since 1h", LogFilter(since=now - 3600))):
            start = time.perf_counter()
            log = read_log(directory, f, prices=prices)
            elapsed = time.perf_counter() - start
            assert log is not None
            print(f"{label:16} {len(log.calls):3} of {log.matched:7,} matching calls in {elapsed * 1e3:6.0f} ms")


if __name__ == "__main__":
    main()
