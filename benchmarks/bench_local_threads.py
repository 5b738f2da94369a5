"""Embedded model speed by thread count: prompt tokens/s and decode tokens/s (run by hand).

    python benchmarks/bench_local_threads.py [--prompt-tokens 2000] [--decode-tokens 128] [--repeats 3]

Prints the median of each figure per thread count and the ratio to one thread. The
quickstart's summarize step is bound by prompt processing (74K prompt tokens, 7.9K output
tokens on The Time Machine), so prompt tokens/s x threads is the figure that matters.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from booksum_app.llm.providers.local_weights import bundled_weights, open_llama

TEXT = " ".join(("the traveller spoke of time as a dimension and the others listened " * 400).split())


def measure_rates(path: Path, n_threads: int, prompt_tokens: int, decode_tokens: int,
                  repeats: int) -> tuple[float, float]:
    """Median prompt and decoded tokens/s of the GGUF at ``path`` on ``n_threads`` (greedy, one sequence)."""
    llm = open_llama(path, n_ctx=4096, n_threads=n_threads, n_threads_batch=n_threads, verbose=False)
    tokens = llm.tokenize(TEXT.encode())[:prompt_tokens]
    prompt_rates, decode_rates = [], []
    for _ in range(repeats):
        llm.reset()  # no prefix reuse between repeats: measure the full prompt each time
        start = time.perf_counter()
        llm.eval(tokens)
        prompt_rates.append(len(tokens) / (time.perf_counter() - start))
        start = time.perf_counter()
        generated = 0
        for _token in llm.generate(tokens[-8:], temp=0.0, reset=False):
            generated += 1
            if generated >= decode_tokens:
                break
        decode_rates.append(generated / (time.perf_counter() - start))
    llm.close()
    return statistics.median(prompt_rates), statistics.median(decode_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt-tokens", type=int, default=2000)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    base: tuple[float, float] | None = None
    print(f"cores available: {cores}; load average {os.getloadavg()[0]:.2f}")
    for n in sorted({1, max(1, cores // 2), cores}):
        prompt, decode = measure_rates(bundled_weights(), n, args.prompt_tokens, args.decode_tokens, args.repeats)
        base = base or (prompt, decode)
        print(f"n_threads={n}: prompt {prompt:7.0f} tok/s ({prompt / base[0]:.2f}x), "
              f"decode {decode:6.1f} tok/s ({decode / base[1]:.2f}x)")


if __name__ == "__main__":
    main()
