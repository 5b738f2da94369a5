"""Benchmark: read + chunk a long book (default War and Peace, ~750K cl100k tokens) at 2048.

Each run is a fresh subprocess (cold caches: encoding load, lazy imports), timed inside from
just before reading to just after chunking; peak memory is that process's max RSS
(``resource.getrusage``), which includes the interpreter and every import.
Targets: median < 3 s, peak < 400 MB.

    python benchmarks/bench_chunking.py [--runs 5] [--chunk-size 2048] [--tokenizer cl100k_base]
    python benchmarks/bench_chunking.py --estimate-ratio   # estimate vs cl100k/o200k per book
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BOOKS = REPO.parent / "shared" / "books"
DEFAULT_BOOK = BOOKS / "leo-tolstoy_war-and-peace.epub"

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
path, chunk_size, tok_name, aware = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
t0 = time.perf_counter()
import booksum_app.chunking as chunking
try:
    from booksum_app.books import open_book
except ImportError:
    from booksum_app.books.epub import read_epub as open_book
t1 = time.perf_counter()
c1 = time.process_time()
book = open_book(Path(path))
t2 = time.perf_counter()
tok = chunking.get_tokenizer(tok_name)
chunks = chunking.chunk_book(book, chunk_size=chunk_size, tokenizer=tok, chapter_aware=aware)
t3 = time.perf_counter()
c3 = time.process_time()
print(json.dumps({
    "cpu_s": c3 - c1,
    "import_s": t1 - t0, "read_s": t2 - t1, "chunk_s": t3 - t2, "total_s": t3 - t1,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "tokens": sum(c.n_tokens for c in chunks), "chunks": len(chunks),
    "max_chunk": max(c.n_tokens for c in chunks),
}))
"""


def run_once(book: Path, chunk_size: int, tokenizer: str, chapter_aware: bool) -> dict[str, float]:
    """One cold run in a subprocess; returns its timings and memory."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(book),
            str(chunk_size),
            tokenizer,
            str(int(chapter_aware)),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def estimate_ratios() -> None:
    """Print estimate / cl100k and estimate / o200k token ratios for every sample book."""
    from booksum_app.chunking import chunk_book, get_tokenizer

    try:
        from booksum_app.books import open_book  # type: ignore[attr-defined]
    except ImportError:
        from booksum_app.books.epub import read_epub as open_book
    cl, o2, est = (get_tokenizer(n) for n in ("cl100k_base", "o200k_base", "estimate"))
    print(
        f"{'book':40} {'cl100k':>8} {'o200k':>8} {'estimate':>9} {'est/cl':>7} {'est/o2':>7}"
        f" {'max cl100k of 2048-est chunks':>30}"
    )
    for path in sorted(BOOKS.glob("*.epub")):
        book = open_book(path)
        text = book.text()
        n_cl, n_o2, n_est = cl.count(text), o2.count(text), est.count(text)
        worst = max(cl.count(c.text) for c in chunk_book(book, chunk_size=2048, tokenizer=est))
        print(
            f"{path.stem[:40]:40} {n_cl:8d} {n_o2:8d} {n_est:9d} {n_est / n_cl:7.3f} {n_est / n_o2:7.3f} {worst:30d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=DEFAULT_BOOK)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunk-size", type=int, default=2048)
    parser.add_argument("--tokenizer", default="cl100k_base")
    parser.add_argument("--chapter-aware", action="store_true")
    parser.add_argument("--estimate-ratio", action="store_true")
    args = parser.parse_args()
    if args.estimate_ratio:
        estimate_ratios()
        return
    runs = [
        run_once(args.book, args.chunk_size, args.tokenizer, args.chapter_aware)
        for _ in range(args.runs)
    ]
    med = {
        k: statistics.median(r[k] for r in runs)
        for k in ("read_s", "chunk_s", "total_s", "import_s", "cpu_s")
    }
    peak = max(r["peak_rss_mb"] for r in runs)
    last = runs[-1]
    print(
        f"book {args.book.name}  chunk size {args.chunk_size}  tokenizer {args.tokenizer}  runs {args.runs}"
    )
    print(
        f"read+chunk median {med['total_s']:.2f} s  (read {med['read_s']:.2f} s, chunk {med['chunk_s']:.2f} s;"
        f" package import {med['import_s']:.2f} s not counted; CPU {med['cpu_s']:.2f} s)"
        f"  min {min(r['total_s'] for r in runs):.2f} s"
    )
    print(
        f"peak RSS {peak:.0f} MB  tokens {last['tokens']:.0f}  chunks {last['chunks']:.0f}"
        f"  largest chunk {last['max_chunk']:.0f}  chunks/s {last['chunks'] / med['chunk_s']:.0f}"
        f"  tokens/s (chunking) {last['tokens'] / med['chunk_s'] / 1e6:.2f} M"
    )
    ok = med["total_s"] < 3 and peak < 400
    print("targets (<3 s median, <400 MB peak):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
