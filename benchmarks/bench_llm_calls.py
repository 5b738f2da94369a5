"""Throughput of the call layer: concurrency against a fake API with latency, cache replay, overhead.

Run by hand: ``python benchmarks/bench_llm_calls.py [--calls 200] [--latency 0.05] [--repeats 3]``.
Prints medians over repeats and speed-up ratios; no network, no key.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

TEXT = "The ship left port at dawn. Storms came at noon. By night the crew was lost. " * 20


def requests(n: int, tag: str) -> list[Request]:
    return [
        Request(prompt=f"{tag} {i}. Summarize within 50 words.\n\n---\n\n{TEXT}", max_tokens=80)
        for i in range(n)
    ]


def timed_many(client: Client, batch: list[Request]) -> float:
    start = time.perf_counter()
    client.complete_many(batch)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05, help="fake API seconds per call")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    env = {"OPENAI_API_KEY": "dummy"}
    with FakeServer(latency_s=args.latency) as server:
        base: float | None = None
        print(
            f"{args.calls} calls to the fake OpenAI API ({args.latency * 1000:.0f} ms each), real SDK:"
        )
        for concurrency in (1, 4, 8, 16):
            times = []
            for r in range(args.repeats):
                settings = LLMSettings(
                    base_url=server.openai_base_url, use_cache=False, concurrency=concurrency
                )
                with get_model("openai:gpt-4o", settings=settings, env=env) as client:
                    times.append(timed_many(client, requests(args.calls, f"c{concurrency}r{r}")))
            median = statistics.median(times)
            base = base or median
            print(
                f"  concurrency {concurrency:2d}: {median:6.2f} s  {args.calls / median:7.1f} calls/s"
                f"  x{base / median:4.1f}"
            )
        with tempfile.TemporaryDirectory() as tmp:
            settings = LLMSettings(
                base_url=server.openai_base_url, cache_dir=Path(tmp), concurrency=8
            )
            batch = requests(args.calls, "cache")
            with get_model("openai:gpt-4o", settings=settings, env=env) as client:
                cold = timed_many(client, batch)
            replays = []
            for _ in range(args.repeats):
                with get_model("openai:gpt-4o", settings=settings, env=env) as client:
                    replays.append(timed_many(client, batch))
            warm = statistics.median(replays)
            print(
                f"  cache: first run {cold:.2f} s, rerun {warm:.3f} s"
                f" ({args.calls / warm:,.0f} calls/s, x{cold / warm:.0f})"
            )
    overheads = []
    for _ in range(args.repeats):
        backend = FakeBackend()
        batch = requests(args.calls, "raw")
        start = time.perf_counter()
        for request in batch:
            backend.complete(request)
        raw = time.perf_counter() - start
        client = Client(FakeBackend(), concurrency=1)
        start = time.perf_counter()
        for request in requests(args.calls, "raw"):
            client.complete(request)
        overheads.append((time.perf_counter() - start - raw) / args.calls * 1e6)
    print(
        "call-layer overhead per uncached call (no cache, fake in-process backend): "
        f"{statistics.median(overheads):.0f} us"
    )


if __name__ == "__main__":
    main()
