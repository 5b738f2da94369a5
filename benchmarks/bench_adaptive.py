"""Benchmark: default concurrency against a 0.2 s stand-in, with and without a provider limit.

Runs ``summarize_book(strategy="hier")`` on a sample book through the real OpenAI SDK to the
fake server (in this process, answering each call after ``--latency`` seconds), with the
default options (adaptive limit for hosted APIs); then the same with the fake server in a
process of its own (as a real server is: its CPU no longer shares this process's GIL); then
against a server in this process that answers 429 above ``--server-limit`` calls in flight.
Prints calls, wall time, the critical path
(longest chain of dependent calls x latency, from the record: a leaf's tries, then each merge
after its inputs and the previous group of its level, then cleaning) and their ratio, the
peak in flight, and the share of calls rejected. ``--scale-latencies`` adds own-process runs at
longer latencies (a hosted API's), each beside ``--concurrency 128`` (the limit starting at and
capped to 128, as the default was before slow start), so the ratio of each pair is measured in
turns on the same machine; ``--per-token`` makes their latency grow with each answer's length.

    python benchmarks/bench_adaptive.py [--book pride] [--latency 0.2] [--server-limit 16] [--scale-latencies 1,2]
        [--per-token 0.01]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_hier import start_server

from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.data import data_path
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_server import FakeServer

SHARED_BOOKS = data_path("sample-books", os.environ)  # BOOKSUM_DATA_DIR / `booksum data fetch sample-books`


def critical_calls(record: Any) -> int:
    """Calls on the longest dependency chain of a hier record (tries counted)."""
    return round(critical_path_s(record, latency=1.0))


def critical_path_s(record: Any, *, latency: float, per_token: float = 0.0) -> float:
    """Seconds of the longest dependency chain of a hier record, each call taking what the
    stand-in made it wait: ``latency`` plus ``per_token`` per output token (tries counted)."""
    took: dict[str, float] = {}
    for call in record.calls:
        took[call.node] = took.get(call.node, 0.0) + latency + per_token * call.output_tokens
    done: dict[str, float] = {}
    by_level: dict[int, list[Any]] = {}
    for node in record.nodes:
        by_level.setdefault(node.level, []).append(node)
    for level in sorted(by_level):
        previous = 0.0
        for node in sorted(by_level[level], key=lambda n: n.index):
            inputs = max((done[f"L{level - 1}.{c}"] for c in node.children), default=0.0)
            finish = max(inputs, previous if level > 0 else 0.0) + took.get(node.id, latency)
            done[node.id] = finish
            previous = finish
    cleaning = sum(latency + per_token * c.output_tokens for c in record.calls if c.purpose == "clean")
    return max(done.values()) + cleaning


def run(book: Path, latency: float, server_limit: int | None, concurrency: int | None = None) -> None:
    with FakeServer(latency_s=latency, rate_limit_in_flight=server_limit, retry_after_s=latency) as server:
        settings = LLMSettings(base_url=server.openai_base_url, cache_dir=Path(tempfile.mkdtemp()),
                               concurrency=concurrency)
        start, started = time.perf_counter(), time.monotonic()
        record = summarize_book(book, strategy="hier", model="openai:gpt-4o-mini", llm_settings=settings)
        wall = time.perf_counter() - start
        requests = server.call_count
        first_call = min((r.received_s for r in server.requests), default=started) - started
        rejected, peak = server.rejected, server.max_in_flight
    critical = critical_calls(record) * latency
    label = f"server 429 above {server_limit}" if server_limit else "no server limit"
    label += f", cap {concurrency}" if concurrency else ", adaptive"
    print(f"{label:36} calls {record.totals.calls:4} requests {requests:4} rejected {rejected:3} "
          f"({100 * rejected / max(requests, 1):4.1f}%) peak in flight {peak:3} | wall {wall:5.2f}s, "
          f"critical path {critical:4.2f}s, ratio {wall / critical:4.2f}x; first call at {first_call:4.2f}s")


def run_own_process(book: Path, latency: float, concurrency: int | None = None, per_token: float = 0.0) -> None:
    """Default options against a stand-in in a process of its own, as a real server is: its CPU
    then does not share this process's GIL (the calls it counts are not visible from here)."""
    server, url = start_server(latency, per_token)
    try:
        summarize_book(book, strategy="direct", model="openai:gpt-4o-mini", max_summary_tokens=100,  # its warm-up
                       llm_settings=LLMSettings(base_url=url, cache_dir=Path(tempfile.mkdtemp())))
        settings = LLMSettings(base_url=url, cache_dir=Path(tempfile.mkdtemp()), concurrency=concurrency)
        start, cpu = time.perf_counter(), time.process_time()
        record = summarize_book(book, strategy="hier", model="openai:gpt-4o-mini", llm_settings=settings)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        server.terminate()
        server.wait()
    critical = critical_path_s(record, latency=latency, per_token=per_token)
    label = f"own process, {latency:g} s" + (f" + {1000 * per_token:g} ms/token" if per_token else "")
    label += f", start = cap {concurrency}" if concurrency else ", adaptive"
    print(f"{label:44} calls {record.totals.calls:4} | wall {wall:5.2f}s, "
          f"critical path {critical:4.2f}s, ratio {wall / critical:4.2f}x; driver CPU {cpu:4.2f}s "
          f"({1000 * cpu / max(record.totals.calls, 1):.1f} ms a call, reading and chunking included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", default="pride")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--server-limit", type=int, default=16)
    parser.add_argument("--scale-latencies", default="",
                        help="comma-separated latencies (s) of further own-process runs, each against a fixed "
                             "start of 128 (the default before slow start): at a hosted API's latencies the "
                             "rounds of leaves weigh more than the driver's CPU")
    parser.add_argument("--per-token", type=float, default=0.0,
                        help="the scale runs' stand-in also waits this many seconds per output token, as a "
                             "hosted API's latency grows with the answer")
    args = parser.parse_args()
    book = next(iter(sorted(SHARED_BOOKS.glob(f"*{args.book}*.epub"))))
    os.environ.setdefault("OPENAI_API_KEY", "dummy")
    print(f"{book.name}, latency {args.latency}s, load {os.getloadavg()[0]:.2f}")
    with FakeServer() as server:  # warm-up: imports, tokenizers and the book parse are not measured
        summarize_book(book, strategy="direct", model="openai:gpt-4o-mini", max_summary_tokens=100,
                       llm_settings=LLMSettings(base_url=server.openai_base_url, cache_dir=Path(tempfile.mkdtemp())))
    run(book, args.latency, None, concurrency=8)  # a cap of 8 in flight (the default before the adaptive limit)
    run(book, args.latency, None)
    run_own_process(book, args.latency)
    run(book, args.latency, args.server_limit)
    for latency in (float(x) for x in args.scale_latencies.split(",") if x.strip()):
        run_own_process(book, latency, concurrency=128, per_token=args.per_token)
        run_own_process(book, latency, per_token=args.per_token)


if __name__ == "__main__":
    main()
