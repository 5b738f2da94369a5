"""Benchmark: does hierarchical merging's scheduler approach the critical path?

Runs ``hier`` on Pride and Prejudice against the in-process FakeBackend with a fixed per-call
latency (no cache: every call is made), then prints calls, tokens, wall time, the critical
path computed from the record's tree (the longest dependency chain: a leaf, then for every
merge max(its children, the previous group of its level) plus one call, times the latency,
counting regenerations), their ratio (target <= 1.25), and the same run one call at a time.

``--server`` sends every call through the real OpenAI SDK to the fake API server
(``booksum_app.testing.fake_server``) running in its own process with the same fixed latency,
so HTTP, the SDK and the call layer are in the measurement (the server's own reply work
runs in that other process, as a remote API's would).

    python benchmarks/bench_hier.py [--latency 0.05] [--window 16384 8192] [--repeat 3] [--server]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from booksum_app.books import open_book
from booksum_app.chunking import CallableTokenizer, chunk_book
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.runners.data import data_path
from booksum_app.strategies import (
    STRATEGIES,
    StrategyConfig,
    StrategyJob,
    StrategyResult,
    load_prompts,
)
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_replies import requested_word_limit

SENTENCE = "Elizabeth Bennet meets Mr. Darcy at a ball in Meryton and forms a poor opinion of him. "

EXTRACTIVE = False  # --extractive: use the default extractive fake replies instead
SERVER_URL: str | None = None  # --server: base URL of the fake API server process
BOOK = data_path("sample-books", os.environ) / "jane-austen_pride-and-prejudice.epub"  # BOOKSUM_DATA_DIR


def critical_calls(result: StrategyResult) -> int:
    """Calls on the longest dependency chain of the tree (regenerations included)."""
    finish: dict[str, int] = {}
    for node in sorted(result.nodes, key=lambda n: (n.level, n.index)):
        ready = 0
        if node.level > 0:
            ready = max(finish[f"L{node.level - 1}.{c}"] for c in node.children)
            if node.context_node:
                ready = max(ready, finish[node.context_node])
        finish[node.id] = ready + len(node.attempts)
    return max(finish.values())


def canned_reply(request: Request) -> Completion:
    """A cheap reply of the requested length, so the fake's own CPU time is not measured.

    The default extractive fake spends milliseconds of Python (regex, tokenizing the prompt)
    per call under the GIL; with 77 concurrent calls that alone is hundreds of milliseconds
    of serialized work that a remote API would not put on this machine.
    """
    words = requested_word_limit(request.prompt[-400:]) or 100
    n_sentences = max(1, words // 17)
    text = SENTENCE * n_sentences
    usage = Usage(input_tokens=len(request.prompt) // 4, output_tokens=n_sentences * 20)
    return Completion(text=text.strip(), finish_reason="stop", usage=usage, model="fake")


def run_once(
    book_chunks: tuple,
    text: str,
    *,
    window: int,
    latency_s: float,
    concurrency: int,
    warm: bool = False,
) -> tuple[float, StrategyResult, Any]:
    """One timed ``hier`` run; ``warm`` first fills the client's worker pool (threads started)."""
    info = ModelInfo(name=f"fake:{window}", context_window=window, tokenizer="cl100k_base")
    backend: Any
    if SERVER_URL:
        from booksum_app.llm.providers.openai import OpenAIBackend

        backend = OpenAIBackend(info, model_id="fake", api_key="dummy", base_url=SERVER_URL)
        backend.max_in_flight = "n/a (server)"
    else:
        backend = FakeBackend(info, latency_s=latency_s, reply=None if EXTRACTIVE else canned_reply)
    model = Client(backend, concurrency=concurrency)  # no cache: every call is made
    if warm:
        model.complete_many(
            [Request(prompt=f"warm-up {i}", max_tokens=1) for i in range(concurrency)]
        )
        if not SERVER_URL:
            backend.calls.clear()
    strategy = STRATEGIES["hier"]
    config = StrategyConfig()
    prompts = load_prompts("paper", lang="en", names=strategy.template_names(config))
    start = time.perf_counter()
    result = strategy.run(StrategyJob(book_chunks, text, config), model=model, prompts=prompts)
    wall = time.perf_counter() - start
    model.close()
    return wall, result, backend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--window", type=int, nargs="+", default=[16384, 8192])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--extractive", action="store_true", help="use the extractive fake replies")
    parser.add_argument(
        "--server", action="store_true", help="go through the OpenAI SDK to the fake API server"
    )
    args = parser.parse_args()
    global EXTRACTIVE, SERVER_URL
    EXTRACTIVE = args.extractive
    server = None
    if args.server:
        server, SERVER_URL = start_server(args.latency)
    try:
        run_all(args)
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def start_server(latency_s: float, per_token_s: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
    """The fake API server in its own process on a free port, answering after ``latency_s`` plus
    ``per_token_s`` per output token."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "booksum_app.testing.fake_server", "--port", str(port),
         "--latency", str(latency_s), "--latency-per-token", str(per_token_s)],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        server.terminate()
        sys.exit(f"the fake API server did not start on port {port}")
    return server, f"http://127.0.0.1:{port}/v1"


def run_all(args: argparse.Namespace) -> None:
    """Every window: timed runs, the critical path, and the one-call-at-a-time run."""

    book = open_book(args.book)
    probe = FakeBackend()
    tokenizer = CallableTokenizer("cl100k_base", probe.count_tokens)
    chunks = tuple(chunk_book(book, chunk_size=2048, tokenizer=tokenizer))
    text = book.text()
    via = "OpenAI SDK -> fake API server process" if SERVER_URL else "in-process FakeBackend"
    print(
        f"book: {book.title} | {len(chunks)} chunks of <= 2048 tokens"
        f" | latency {args.latency * 1000:.0f} ms/call | {via}"
    )
    for window in args.window:
        walls, warm_walls = [], []
        for _ in range(args.repeat):
            wall, result, backend = run_once(
                chunks, text, window=window, latency_s=args.latency, concurrency=args.concurrency
            )
            walls.append(wall)
            warm_walls.append(
                run_once(
                    chunks,
                    text,
                    window=window,
                    latency_s=args.latency,
                    concurrency=args.concurrency,
                    warm=True,
                )[0]
            )
        crit = critical_calls(result)
        critical_s = crit * args.latency
        wall = statistics.median(walls)
        warm_wall = statistics.median(warm_walls)
        levels = max(n.level for n in result.nodes) + 1
        merges = [n for n in result.nodes if n.level > 0]
        tokens_in = sum(c.input_tokens for c in result.calls)
        tokens_out = sum(c.output_tokens for c in result.calls)
        print(
            f"\nW={window}: G_l={result.level_budgets} levels={levels} merges={len(merges)} "
            f"calls={len(result.calls)} tokens={tokens_in:,}+{tokens_out:,} max_in_flight={backend.max_in_flight}"
        )
        print(
            f"  concurrency {args.concurrency}: wall median {wall:.3f}s over {args.repeat} "
            f"(runs: {', '.join(f'{w:.3f}' for w in walls)})"
        )
        print(
            f"  warm pool (worker threads already started): wall median {warm_wall:.3f}s "
            f"(runs: {', '.join(f'{w:.3f}' for w in warm_walls)})"
        )
        print(
            f"  critical path: {crit} calls = {critical_s:.3f}s  -> wall/critical = {wall / critical_s:.2f} cold, "
            f"{warm_wall / critical_s:.2f} warm (target <= 1.25)"
        )
        serial_wall, serial, _ = run_once(
            chunks, text, window=window, latency_s=args.latency, concurrency=1
        )
        print(
            f"  concurrency 1: wall {serial_wall:.3f}s for {len(serial.calls)} calls "
            f"({serial_wall / len(serial.calls) * 1000:.1f} ms/call) -> speed-up {serial_wall / wall:.1f}x"
        )


if __name__ == "__main__":
    main()
