"""Peak memory of the BooookScore judge on one long synthetic summary (issue 9 item 14).

Each size runs in a child process (so peaks do not mix) that judges one summary of N
sentences with an instant fake judge behind the real call layer (``Client``, concurrency 8,
no cache) and prints its peak RSS, peak traced Python memory (tracemalloc) and CPU/wall
seconds. The child's address space is capped (``--limit-mb``): a run that would need more
is reported as ``over limit`` instead of taking the machine's memory.

Run by hand: ``python benchmarks/bench_judge_memory.py [--sizes 1000 4000 16000] [--mode sentence]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

from booksum_app.llm.base import Completion, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.scoring.booookscore import BooookScoreJudge, JudgeMode
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_judge import BATCH_MARKER, judge_reply

_NAMES = ("Mara", "Teo", "Quill", "Ilse", "Bram", "Odile", "Pim", "Rasa")
_PLACES = ("the harbour", "the bakery", "the mill", "the old lighthouse", "the market")


def synthetic_summary(n_sentences: int) -> str:
    """``n_sentences`` distinct plain sentences (about 70 characters each)."""
    return " ".join(
        f"{_NAMES[i % len(_NAMES)]} walks to {_PLACES[i % len(_PLACES)]} on day {i} and finds clue {i * 7}."
        for i in range(n_sentences)
    )


def fast_reply(request: Request) -> Completion:
    """The fake judge's answer, read from the per-call part only (no whole-prompt copy or count)."""
    marker = BATCH_MARKER if BATCH_MARKER in request.prompt else "[Your sentence]"
    text = judge_reply(marker + request.prompt.split(marker, 1)[-1])
    return Completion(text=text, finish_reason="stop", usage=Usage(1000, 20), model="fake:model")


def child(n_sentences: int, mode: JudgeMode, limit_mb: int) -> None:
    """Judge one synthetic summary and print the measurements as one JSON line."""
    if limit_mb:
        limit = limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    summary = synthetic_summary(n_sentences)
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = "ok"
    calls = 0
    try:
        client = Client(FakeBackend(reply=fast_reply), concurrency=8)
        judgement = BooookScoreJudge(client, mode=mode).judge({"long.txt": summary})[0]
        calls = client.n_calls
        if judgement.n_sentences != n_sentences:
            outcome = f"split into {judgement.n_sentences} sentences"
        client.close()
    except MemoryError:
        outcome = "over limit"
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({
        "n": n_sentences,
        "summary_mb": len(summary) / 1e6,
        "outcome": outcome,
        "calls": calls,
        "traced_peak_mb": peak / 1e6,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
    }))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--mode", choices=["sentence", "batched"], default="sentence")
    parser.add_argument("--limit-mb", type=int, default=4096, help="address-space cap per child (0: none)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.mode, args.limit_mb)
        return
    print(f"{'sentences':>9} {'summary_MB':>10} {'calls':>6} {'traced_MB':>9} {'maxRSS_MB':>9} "
          f"{'wall_s':>7} {'cpu_s':>7}  outcome")
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--child", str(n), "--mode", args.mode, "--limit-mb", str(args.limit_mb)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"{n:9} {'':>10} {'':>6} {'':>9} {'':>9} {'':>7} {'':>7}  failed (rc {done.returncode}): {tail}")
            continue
        r = json.loads(lines[-1])
        print(f"{r['n']:9} {r['summary_mb']:10.2f} {r['calls']:6} {r['traced_peak_mb']:9.1f} "
              f"{r['maxrss_mb']:9.1f} {r['wall_s']:7.1f} {r['cpu_s']:7.1f}  {r['outcome']}")


if __name__ == "__main__":
    main()
