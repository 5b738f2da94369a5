"""A server that queues silently and does not describe itself: how many generations are wasted.

The stand-in (``DescribingServer`` with ``slots=N`` and neither ``/props`` nor ``max_model_len``:
a 4-slot ``llama-server`` of an older build, or any proxy in front of one) serves N requests at
once and queues the rest in arrival order, without a 429; a request whose client gave up (its
``--timeout`` passed while it waited) is still generated, and counted as wasted. The command
is ``booksum summarize BOOK --strategy hier --timeout T`` in this process, with a fresh cache.

    python benchmarks/bench_queueing.py --book pride --slots 4 --latency 1.0 --timeout 15
    python benchmarks/bench_queueing.py --book pride --first-burst 128   # the burst a hosted API gets
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.llm import registry
from booksum_app.testing.fake_describing_server import DescribingServer

BOOKS = {"pride": "jane-austen_pride-and-prejudice.epub", "time-machine": "h-g-wells_the-time-machine.epub"}


def run(book: Path, *, slots: int, latency_s: float, timeout_s: float, first_burst: int | None) -> dict[str, float]:
    if first_burst is not None:
        registry.SERVER_INITIAL_CONCURRENCY = first_burst  # type: ignore[attr-defined]
    os.environ.setdefault("OPENAI_API_KEY", "dummy")
    with tempfile.TemporaryDirectory() as tmp, DescribingServer(slots=slots, latency_s=latency_s) as server:
        start = time.perf_counter()
        result = CliRunner().invoke(cli, [
            "summarize", str(book), "--model", "openai:llama-3.1-8b", "--base-url", server.openai_base_url,
            "--strategy", "hier", "--timeout", str(timeout_s), "--cache-dir", f"{tmp}/cache",
            "-o", f"{tmp}/out"])
        wall = time.perf_counter() - start
        time.sleep(min(5.0, slots * latency_s))  # let queued generations nobody waits for finish
        generated = server.completed_count
        return {"exit": result.exit_code, "wall_s": wall, "requests": server.call_count, "generated": generated,
                "wasted": server.wasted_count, "peak_in_flight": server.max_in_flight}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", default="pride", choices=sorted(BOOKS))
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds one generation takes in a slot")
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--first-burst", type=int, default=None,
                        help="calls in flight at the start (default: booksum's for a server that does not say)")
    args = parser.parse_args(argv)
    data = Path(os.environ.get("BOOKSUM_DATA_DIR") or Path.home() / ".cache/booksum/data") / "books"
    book = data / BOOKS[args.book]
    if not book.exists():
        print(f"{book} not found: set BOOKSUM_DATA_DIR or run `booksum data fetch sample-books`", file=sys.stderr)
        return 2
    figures = run(book, slots=args.slots, latency_s=args.latency, timeout_s=args.timeout,
                  first_burst=args.first_burst)
    share = figures["wasted"] / figures["generated"] if figures["generated"] else 0.0
    print(f"exit {figures['exit']:.0f}, {figures['wall_s']:.1f} s, {figures['requests']:.0f} requests, "
          f"{figures['generated']:.0f} generated, {figures['wasted']:.0f} wasted ({share:.0%}), "
          f"peak {figures['peak_in_flight']:.0f} in flight")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
