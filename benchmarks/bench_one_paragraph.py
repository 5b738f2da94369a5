"""Benchmark: ``booksum inspect`` on a book that is one paragraph of many short sentences.

Writes a text of ``--sentences`` generated sentences (4-10 words each, one a line, no blank
line: one paragraph of about 37 characters a sentence, seeded) and times
``python -m booksum_app inspect FILE`` on it with the default model (the embedded one, whose
llama.cpp tokenizer counts every sentence), wall clock from spawn to exit.

    python benchmarks/bench_one_paragraph.py [--sentences 300000] [--repo /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_WORDS = ("the", "a", "cat", "dog", "house", "river", "walked", "quickly", "slowly", "under", "over", "green", "red",
          "old", "young", "man", "woman", "saw", "found")


def one_paragraph(n_sentences: int, *, seed: int = 1) -> str:
    """A title, a blank line, then ``n_sentences`` sentences on single lines."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_sentences):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 10)))
        lines.append(words[0].upper() + words[1:] + ".")
    return "Title\n\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=300_000)
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose booksum_app runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one_paragraph.txt"
        path.write_text(one_paragraph(args.sentences), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(args.repo)}
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "booksum_app", "inspect", str(path)], env=env, cwd=args.repo, check=True,
                       stdout=subprocess.DEVNULL)
        print(f"inspect, one paragraph of {args.sentences:,} sentences "
              f"({path.stat().st_size:,} bytes): {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
