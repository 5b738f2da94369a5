"""What booksum's own client sustains with hundreds of calls in flight: calls/s and peak in flight
against the fake server, which answers every call after a fixed latency and never saturates.

The fake server runs in its own process (so the client's threads do not share its interpreter),
on the same machine: the figures are the client's ceiling on this machine, not a GPU server's
throughput. A call that the server holds ``--latency`` seconds lets N calls in flight reach at
most N / latency calls/s; the client keeps up while calls/s stays near that bound.

Run by hand: ``python benchmarks/bench_in_flight.py [--calls 2048] [--latency 1.0] [--concurrency 128,384,512]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from booksum_app.llm.base import Request
from booksum_app.llm.registry import LLMSettings, get_model

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The ship left port at dawn. Storms came at noon. By night the crew was lost. " * 10


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(latency_s: float) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "booksum_app.testing.fake_server", "--port", str(port),
                                "--latency", str(latency_s)], env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=1):
                return process, url
        except urllib.error.HTTPError:
            return process, url  # it answers (a 404 is an answer)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the fake server did not start")


def run(url: str, *, calls: int, concurrency: int, tag: str) -> tuple[float, int, float]:
    """(seconds, peak in flight, client CPU seconds) for ``calls`` calls at ``concurrency``."""
    settings = LLMSettings(base_url=url, use_cache=False, concurrency=concurrency)
    batch = [Request(prompt=f"{tag} {i}. Summarize.\n\n{TEXT}", max_tokens=40) for i in range(calls)]
    peak = 0
    with get_model("openai:gpt-4o-mini", settings=settings, env={"OPENAI_API_KEY": "dummy"}) as client:
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        futures = [client.submit(r) for r in batch]
        while not all(f.done() for f in futures):
            peak = max(peak, client.in_flight)
            time.sleep(0.01)
        for future in futures:
            future.result()
        elapsed = time.perf_counter() - start
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return elapsed, peak, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2048)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the fake server holds each call")
    parser.add_argument("--concurrency", default="128,384,512")
    args = parser.parse_args()
    process, url = _start_server(args.latency)
    try:
        print(f"{args.calls} calls, fake server in its own process holding each {args.latency:g} s, "
              f"{os.cpu_count()} CPUs:")
        for n in (int(x) for x in args.concurrency.split(",")):
            elapsed, peak, cpu = run(url, calls=args.calls, concurrency=n, tag=f"c{n}")
            bound = n / args.latency
            print(f"  --concurrency {n:4d}: {args.calls / elapsed:7.1f} calls/s (bound {bound:.0f}), "
                  f"peak {peak} in flight, client CPU {cpu / args.calls * 1000:.2f} ms per call")
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
