"""Benchmark: time from starting ``booksum summarize`` to the server's first request.

Everything before the first model call (interpreter start, imports, reading, chunking,
planning) is time the user waits for nothing; this measures it end to end. Each run starts
a fresh ``python -m booksum_app summarize BOOK -m openai:gpt-4 --base-url URL --no-cache --yes``
against an in-process :class:`~booksum_app.testing.fake_server.FakeServer` and times from just
before the process is spawned to the arrival of the server's first request (both
``time.monotonic``); the process is then stopped, since what follows is the call phase.

    python benchmarks/bench_first_call.py [--book leo-tolstoy_war-and-peace.epub|PATH] [--runs 3]
    python benchmarks/bench_first_call.py --repo /path/to/other/checkout   # compare a revision
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from booksum_app.runners.data import data_path
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]


def one_run(book: Path, repo: Path, timeout_s: float) -> float:
    """Seconds from spawning the CLI to the server's first request."""
    with FakeServer() as server, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(repo), "OPENAI_API_KEY": "dummy"}
        command = [sys.executable, "-m", "booksum_app", "summarize", str(book), "-m", "openai:gpt-4",
                   "--base-url", server.openai_base_url, "--no-cache", "--yes",
                   "-o", str(Path(out) / "summary")]
        started = time.monotonic()
        child = subprocess.Popen(command, env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while not server.requests:
                if child.poll() is not None:
                    raise SystemExit(f"summarize exited ({child.returncode}) before any call: "
                                     f"{child.stderr.read().decode()[-500:] if child.stderr else ''}")
                if time.monotonic() - started > timeout_s:
                    raise SystemExit(f"no call within {timeout_s:.0f} s")
                time.sleep(0.005)
            return server.requests[0].received_s - started
        finally:
            child.kill()
            child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--book", default="leo-tolstoy_war-and-peace.epub",
                        help="a book file, or a sample book's file name")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose booksum_app runs")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    book = Path(args.book) if Path(args.book).is_file() else data_path("sample-books", os.environ) / args.book
    if not book.is_file():
        raise SystemExit(f"no book {args.book!r} here or in the sample books ({book.parent})")
    times = [one_run(book, args.repo, args.timeout) for _ in range(args.runs)]
    print(f"{args.book}: first call after {statistics.median(times):.2f} s (median of {args.runs}; "
          f"runs {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
