"""Time open_book on every sample epub (median of N runs) and print kept/excluded sections.

Run by hand: ``python benchmarks/bench_books.py [--runs 5] [--verbose]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from booksum_app.books import open_book

BOOKS = Path(__file__).resolve().parents[1].parent / "shared" / "books"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print(f"{'book':45} {'sections':>8} {'kept':>5} {'excl':>5} {'words':>8} {'median_s':>9}")
    for path in sorted(BOOKS.glob("*.epub")):
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            book = open_book(path)
            times.append(time.perf_counter() - start)
        kept = book.selected_chapters()
        words = sum(len(c.text.split()) for c in kept)
        print(
            f"{path.stem:45} {len(book.chapters):8} {len(kept):5} "
            f"{len(book.excluded_chapters):5} {words:8} {statistics.median(times):9.3f}"
        )
        if args.verbose:
            for c in book.excluded_chapters:
                print(f"    excluded  {c.title!r:40} {c.excluded_reason}")


if __name__ == "__main__":
    main()
