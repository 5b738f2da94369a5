"""Every benchmark in one run, one after another, each printing its own figures and ratios.

Runs the benchmarks of this folder as subprocesses (so one's threads and memory do not skew
the next) with the arguments the README's table quotes, prints each one's output under a
heading with its command and wall time, then a summary of which ones failed. Benchmarks whose
inputs are missing (the shared books, the embedded model) say so and are counted as skipped.

    python benchmarks/bench_all.py                  # everything but the slow ones
    python benchmarks/bench_all.py --slow           # also the quickstart run and 40-book compare
    python benchmarks/bench_all.py --only adaptive,hier

Figures are only worth quoting from a quiet machine: the load average is printed first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# name -> (arguments after the script, slow?)
BENCHMARKS: dict[str, tuple[list[str], bool]] = {
    "books": (["bench_books.py", "--runs", "3"], False),
    "chunking": (["bench_chunking.py", "--runs", "3"], False),
    "first_call": (["bench_first_call.py", "--runs", "3"], False),
    "llm_calls": (["bench_llm_calls.py", "--calls", "200"], False),
    "driver": (["bench_driver.py", "--calls", "2000", "--concurrency", "256", "--latency", "1", "--transport", "both"],
               False),
    "hier": (["bench_hier.py", "--server", "--latency", "0.5", "--repeat", "1"], False),
    "adaptive": (["bench_adaptive.py", "--book", "pride", "--latency", "0.2"], False),
    "adaptive_war_and_peace": (
        ["bench_adaptive.py", "--book", "war", "--latency", "0.2", "--scale-latencies", "2"], True
    ),
    "judge_memory": (["bench_judge_memory.py"], False),
    "judge_bill": (["bench_judge_bill.py"], False),
    "kill": (["bench_kill.py", "--kills", "3"], True),
    "local_threads": (["bench_local_threads.py", "--repeats", "1"], True),
    "compare_scale": (["bench_compare_scale.py", "--books", "40", "--distinct"], True),
    "compare_scale_200": (["bench_compare_scale.py", "--books", "200", "--distinct"], True),
    "quickstart": (["-m", "booksum_app", "summarize", str(REPO / "samples" / "h-g-wells_the-time-machine.epub"),
                    "-o", "{tmp}/the-time-machine"], True),
}


def run_one(name: str, argv: list[str], tmp: Path) -> tuple[str, float, int]:
    args = [a.replace("{tmp}", str(tmp)) for a in argv]
    command = [sys.executable, *([str(HERE / args[0]), *args[1:]] if args[0].endswith(".py") else args)]
    script = HERE / args[0]
    if args[0].endswith(".py") and not script.is_file():
        return "skipped (not in this checkout)", 0.0, 0
    env = {**os.environ, "BOOKSUM_CACHE_DIR": str(tmp / f"cache-{name}")}  # cold: no answer comes from a cache
    print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, check=False)
    wall_s = time.perf_counter() - start
    print(f"--- {name}: exit {done.returncode}, {wall_s:.1f} s", flush=True)
    return ("ok" if done.returncode == 0 else f"failed (exit {done.returncode})"), wall_s, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slow", action="store_true", help="also the benchmarks that take minutes")
    parser.add_argument("--only", default="", help="comma-separated names: " + ", ".join(BENCHMARKS))
    args = parser.parse_args()
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in BENCHMARKS]
    if unknown:
        sys.exit(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    chosen = only or [n for n, (_, slow) in BENCHMARKS.items() if args.slow or not slow]
    print(f"cores {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}; running {', '.join(chosen)}")
    import tempfile

    results = {}
    with tempfile.TemporaryDirectory(prefix="booksum-bench-") as tmp:
        for name in chosen:
            results[name] = run_one(name, BENCHMARKS[name][0], Path(tmp))
    print("\n=== summary")
    for name, (status, wall_s, _) in results.items():
        print(f"{name:24} {status:28} {wall_s:7.1f} s")
    sys.exit(1 if any(code for _, _, code in results.values()) else 0)


if __name__ == "__main__":
    main()
