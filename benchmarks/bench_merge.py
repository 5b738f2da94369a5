"""Benchmark: ``compare --merge`` of two shards against the unsharded run of the same grid.

Runs a grid (hier + direct, judge on) over the sample books against the stand-in in this
process (``--latency`` a call), then the same grid as two shards (``--shard 0/2``, ``1/2``,
each its own call cache, as on two machines), then the merge with an empty call cache, and
prints each one's wall time, the merge's calls and its ratio to the unsharded run. Each
step is a fresh ``booksum compare`` process, so imports count as they would.

    python benchmarks/bench_merge.py [--books DIR] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from booksum_app.testing.fake_server import FakeServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=Path, default=Path(os.environ.get("BOOKSUM_DATA_DIR", ".")) / "books")
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    books = sorted(str(p) for p in args.books.glob("*.epub") if "war-and-peace" not in p.name)
    env = {**os.environ, "OPENAI_API_KEY": "dummy"}
    with FakeServer(latency_s=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        def compare(out: str, cache: str, *extra: str) -> float:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "booksum_app", "compare", *books, "--strategies", "hier,direct",
                            "--models", "openai:gpt-4o-mini", "--judge", "openai:gpt-4o-mini", "--base-url",
                            server.openai_base_url, "--cache-dir", f"{tmp}/{cache}", "--out", f"{tmp}/{out}",
                            "--no-plots", "--yes", "-q", *extra], check=True, env=env, capture_output=True)
            return time.perf_counter() - started

        whole = compare("whole", "c-whole")
        shards = [compare(f"s{i}", f"c{i}", "--shard", f"{i}/2") for i in range(2)]
        calls = server.call_count
        merge = compare("merged", "c-empty", "--merge", f"{tmp}/s0", "--merge", f"{tmp}/s1")
        print(f"{len(books)} books: unsharded {whole:.1f} s, shards {shards[0]:.1f} + {shards[1]:.1f} s, "
              f"merge {merge:.1f} s ({merge / whole:.2f}x the unsharded run), "
              f"merge calls {server.call_count - calls}")


if __name__ == "__main__":
    main()
