"""Benchmark: how many calls per second one booksum process drives (issue 11, "a driver that scales").

Starts the fake OpenAI-compatible server in a process of its own (``bench_hier.start_server``),
answering every call after ``--latency`` seconds, then sends ``--calls`` distinct ~1,000-token requests from this
process through the real call layer (``get_model``: OpenAI SDK, call cache with leases,
adaptive limit capped at ``--concurrency``, retries), as ``booksum compare`` does. Prints
calls per second against the ceiling the latency allows (concurrency / latency), CPU per
call of the driver and of the stand-in, and the driver's peak RSS. The stand-in shares the
machine's cores with the driver, so on a small machine both figures are lower bounds.

``--transport sdk`` sends through the openai SDK instead of the lean client that plain http://
servers get by default (``BOOKSUM_OPENAI_TRANSPORT=sdk``); ``--transport both`` measures both, in turns.

    python benchmarks/bench_driver.py [--calls 2000] [--concurrency 256] [--latency 1.0] [--repeats 3]
                                      [--transport auto|sdk|both]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from bench_hier import start_server

from booksum_app.llm.base import Request
from booksum_app.llm.registry import LLMSettings, get_model

TEXT = "The ship left port at dawn. Storms came at noon. By night the crew was lost. " * 60


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(url: str, server_pid: int, calls: int, concurrency: int, tag: str,
            transport: str = "auto") -> tuple[float, float, float]:
    """(calls/s, driver CPU ms per call, stand-in CPU ms per call) of one batch."""
    settings = LLMSettings(base_url=url, cache_dir=Path(tempfile.mkdtemp()), concurrency=concurrency)
    requests = [Request(prompt=f"{tag} part {i}. Summarize within 50 words.\n\n{TEXT}", max_tokens=80)
                for i in range(calls)]
    with get_model("openai:gpt-4o-mini", settings=settings, env={"OPENAI_API_KEY": "dummy",
                                                                      "BOOKSUM_OPENAI_TRANSPORT": transport}) as client:
        server_cpu, cpu, start = cpu_seconds(server_pid), time.process_time(), time.perf_counter()
        client.complete_many(requests)
        wall = time.perf_counter() - start
        cpu, server_cpu = time.process_time() - cpu, cpu_seconds(server_pid) - server_cpu
    return calls / wall, 1000 * cpu / calls, 1000 * server_cpu / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--transport", choices=("auto", "sdk", "both"), default="auto")
    args = parser.parse_args()
    transports = ("auto", "sdk") if args.transport == "both" else (args.transport,)
    server, url = start_server(args.latency)  # in its own process, on a free port
    runs: dict[str, list[tuple[float, float, float]]] = {t: [] for t in transports}
    try:
        for transport in transports:
            one_run(url, server.pid, 20, 8, f"warm-up {transport}", transport)  # imports, first connections
        for r in range(args.repeats):
            for transport in transports:  # in turns, so drift in the machine hits both alike
                runs[transport].append(one_run(url, server.pid, args.calls, args.concurrency, f"run {r} {transport}",
                                               transport))
    finally:
        server.terminate()
        server.wait()
    ceiling = args.concurrency / args.latency
    print(f"{args.calls} calls, {args.concurrency} in flight at most, stand-in answering in {args.latency:g} s "
          f"(its own process), cores {len(os.sched_getaffinity(0))}, load {os.getloadavg()[0]:.2f}")
    for transport, results in runs.items():
        rate = statistics.median(r[0] for r in results)
        label = "lean client" if transport == "auto" else "openai SDK"
        print(f"[{label}] calls/s, median of {args.repeats}: {rate:.0f} "
              f"(runs: {', '.join(f'{r[0]:.0f}' for r in results)}); latency ceiling {ceiling:.0f}/s: "
              f"{rate / ceiling:.2f}x")
        print(f"[{label}] CPU per call: driver {statistics.median(r[1] for r in results):.2f} ms, "
              f"stand-in {statistics.median(r[2] for r in results):.2f} ms")
    print(f"driver peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
