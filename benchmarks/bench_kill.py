"""Benchmark: how many calls does a ``kill -9`` during ``booksum summarize --strategy hier`` cost?

For each concurrency, first runs ``summarize`` once on a fresh cache to count the distinct
requests of the whole run. Then, ``--kills`` times: a fresh cache, a real ``python -m booksum_app
summarize`` subprocess against the fake API server (in this process, so it sees every request),
SIGKILLed at a random moment (after a random number of requests have been sent, plus a random
fraction of one call's latency), then the same command rerun to completion on the same cache.
Calls re-paid = requests sent by both runs - distinct requests; the number the server had in
flight at the kill is printed beside it (the physical bound: those answers never arrived).

    python benchmarks/bench_kill.py [--kills 10] [--concurrency 1 4 8] [--latency 0.2] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "samples" / "h-g-wells_the-time-machine.epub"  # the sample in the repository: no data to fetch


def command(book: Path, server: FakeServer, concurrency: int, out: Path) -> list[str]:
    """The ``summarize`` command line under test."""
    return [
        sys.executable, "-m", "booksum_app", "summarize", str(book), "--strategy", "hier",
        "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
        # the default G (900): at G 300 the stand-in's extractive merges copy the merge prompt's
        # instructions (its longest block), which cleaning then removes, leaving nothing
        "--chunk-size", "2048",
        "--concurrency", str(concurrency), "--output", str(out),
    ]  # fmt: skip


def environment(cache_dir: Path) -> dict[str, str]:
    """The child's environment: a dummy key, its own cache, no real keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, "OPENAI_API_KEY": "dummy", "BOOKSUM_CACHE_DIR": str(cache_dir)}


def run_to_end(argv: list[str], cache_dir: Path) -> None:
    """Run ``argv`` to completion; a failure ends the benchmark with its stderr."""
    done = subprocess.run(
        argv,
        cwd=REPO,
        env=environment(cache_dir),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"summarize failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def distinct(server: FakeServer, start: int) -> int:
    """Distinct request payloads the server saw since index ``start``."""
    return len({json.dumps(r.payload, sort_keys=True) for r in server.requests[start:]})


def one_kill(
    book: Path,
    server: FakeServer,
    concurrency: int,
    total: int,
    latency_s: float,
    rng: random.Random,
    work: Path,
) -> tuple[int, int, int]:
    """Kill one run at a random moment, resume it; (requests before kill, in flight, re-paid)."""
    cache_dir, out = Path(tempfile.mkdtemp(dir=work)), work / "summary"
    start = server.call_count
    target = rng.randint(1, max(1, total - concurrency))
    proc = subprocess.Popen(
        command(book, server, concurrency, out),
        cwd=REPO,
        env=environment(cache_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while server.call_count - start < target and proc.poll() is None:
        time.sleep(0.002)
    time.sleep(rng.uniform(0, latency_s))
    in_flight = server.call_count - server.completed_count
    sent = server.call_count - start
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_to_end(command(book, server, concurrency, out), cache_dir)
    repaid = (server.call_count - start) - distinct(server, start)
    return sent, in_flight, repaid


def main() -> None:
    """Parse options, run the kills for each concurrency, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="kills per concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per fake call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--book", type=Path, default=BOOK)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    print(f"book: {args.book.name}, hier, chunk 2048, fake server {args.latency:.2f} s/call")
    print(
        "concurrency  calls/run  kills  re-paid median  re-paid max  in-flight median  in-flight max"
    )
    with FakeServer(latency_s=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for concurrency in args.concurrency:
            start = server.call_count
            run_to_end(
                command(args.book, server, concurrency, work / "summary"),
                Path(tempfile.mkdtemp(dir=work)),
            )
            total = server.call_count - start
            if distinct(server, start) != total:
                sys.exit("a clean run sent the same request twice: the count below would be wrong")
            rows = [
                one_kill(args.book, server, concurrency, total, args.latency, rng, work)
                for _ in range(args.kills)
            ]
            repaid = [r[2] for r in rows]
            flight = [r[1] for r in rows]
            print(
                f"{concurrency:>11}  {total:>9}  {len(rows):>5}  {statistics.median(repaid):>14}  "
                f"{max(repaid):>11}  {statistics.median(flight):>16}  {max(flight):>13}",
                flush=True,
            )
    print(
        f"wall {time.perf_counter() - wall0:.1f} s, this process's CPU {time.process_time() - cpu0:.1f} s "
        "(the runs are subprocesses; the machine may be shared: wall time is under load)"
    )


if __name__ == "__main__":
    main()
