"""booksum's ROUGE-L against Google's rouge-score package, the library it replicates (run by hand).

    pip install rouge-score   # not a booksum dependency: only this comparison needs it
    python benchmarks/bench_rouge_library.py [--pairs 500]

Prints, for generated English summary/reference pairs, the largest difference in ROUGE-L F
between ``booksum_app.scoring.rouge.rouge_l(variant="rouge-score")`` and
``rouge_scorer.RougeScorer(["rougeL"])``, and the time each takes; then what each gives a
Chinese pair (rouge-score's default tokenizer keeps only ASCII letters and digits).
"""

from __future__ import annotations

import argparse
import random
import time

from booksum_app.scoring.rouge import rouge_l

WORDS = ("the", "a", "of", "storm", "harbour", "boats", "Mara", "bread", "Lisk", "coin", "counted", "shelter",
         "sea", "came", "in", "and", "went", "to", "found", "market", "day", "night,", "old.", "new!", "Teo's",
         "don't", "3", "42", "well-known")
ZH = ("风雨来临，港口挤满了避风的船只。玛拉数着硬币。", "玛拉在港口数着硬币，风雨来临。")


def main() -> None:
    from rouge_score import rouge_scorer  # type: ignore[import-not-found,unused-ignore]

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(0)
    pairs = [(" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 300))),
              " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 300)))) for _ in range(args.pairs)]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    start = time.perf_counter()
    theirs = [scorer.score(ref, cand)["rougeL"].fmeasure for cand, ref in pairs]
    their_s = time.perf_counter() - start
    start = time.perf_counter()
    ours = [rouge_l(cand, ref, variant="rouge-score").fmeasure for cand, ref in pairs]
    our_s = time.perf_counter() - start
    worst = max(abs(a - b) for a, b in zip(theirs, ours, strict=True))
    print(f"{args.pairs} English pairs: max |F difference| {worst:.2e}; rouge-score {their_s:.2f} s, "
          f"booksum {our_s:.2f} s")
    print(f"a Chinese pair: rouge-score F {scorer.score(ZH[1], ZH[0])['rougeL'].fmeasure:.4f}, "
          f"booksum F {rouge_l(*ZH, variant='rouge-score').fmeasure:.4f}")


if __name__ == "__main__":
    main()
