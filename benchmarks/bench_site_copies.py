"""Read generated web copies of Chinese novels (tests/book_sites.py) and count the chapters found.

Each copy's expected chapters are written before it is read; a copy is read exactly when the
reader gives back its chapters, once each, in order, with exactly their paragraphs. Styles,
numeral styles and encodings are taken in turn, so every pair comes up. Runs against whatever
``booksum_app`` is first on the path (compare two trees with ``PYTHONPATH``).

Run by hand: ``python benchmarks/bench_site_copies.py [--copies 240]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from book_sites import ENCODINGS, NUMERALS, STYLES, site_copy

from booksum_app.books import open_book
from booksum_app.errors import BooksumError


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=240)
    args = parser.parse_args()
    expected = read = exact = 0
    wrong: Counter[str] = Counter()
    total: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.copies):
            copy = site_copy(random.Random(seed), style=STYLES[seed % len(STYLES)],
                             numerals=NUMERALS[seed // len(STYLES) % len(NUMERALS)], encoding=ENCODINGS[seed % 3])
            path = Path(folder) / f"copy-{seed}.txt"
            path.write_bytes(copy.data)
            try:
                got = open_book(path).selected_chapters()
            except BooksumError:
                got = ()
            ok = len(got) == len(copy.expected) and all(
                title in c.title and list(c.paragraphs) == paragraphs
                for c, (title, paragraphs) in zip(got, copy.expected, strict=True))
            expected += len(copy.expected)
            read += len(got)
            exact += ok
            total[copy.style] += 1
            wrong[copy.style] += not ok
    print(f"copies {args.copies}: chapters expected {expected}, read {read}; copies read exactly {exact}")
    print("not exact, by site style: " + ", ".join(f"{s} {wrong[s]}/{total[s]}" for s in STYLES))


if __name__ == "__main__":
    main()
