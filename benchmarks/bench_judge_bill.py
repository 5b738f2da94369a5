"""The judge's bill: input tokens billed per judged sentence, with and without prompt caching (issue 11).

Judges real summaries (the first ``--books`` of the BooookScore release's gpt4-2048-hier set
when ``--release`` points at it, else synthetic ones) through the real SDKs and call layer
against the fake server (deterministic answers: every answer parses at its first attempt, so
every call counted is a first attempt). For each mode (per-sentence, batched), provider shape
(OpenAI, Anthropic) and cache setting it prints:

- ``raw in/sent``: prompt tokens sent per judged sentence;
- ``billed in/sent``: input-token equivalents billed per judged sentence at a cached price of
  10% of the input price (Anthropic cache writes at 125%), the issue's yardstick;
- ``plan/actual``: the pre-flight plan's predicted billed input over the measured one.

Cache settings: ``off`` (no provider cache), ``on`` (the fake server's stand-in for the
providers' caches, with the judge's warm-up) and ``on, no warm-up`` (first calls fan out at
once). The fake server counts cl100k_base tokens; the plan counts with the same tokenizer.

Run by hand: ``python benchmarks/bench_judge_bill.py [--books 10] [--release DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from booksum_app.chunking import get_tokenizer
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.anthropic import AnthropicBackend
from booksum_app.llm.providers.openai import OpenAIBackend
from booksum_app.runners.data import data_path
from booksum_app.runners.judge_plan import cache_style, judge_estimate, priced
from booksum_app.scoring.booookscore import BooookScoreJudge, JudgeMode
from booksum_app.testing.fake_server import FakeServer

RELEASE = data_path("booookscore-release", os.environ)  # BOOKSUM_DATA_DIR / `booksum data fetch ...`
PRICES = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0, "cached_input_usd_per_mtok": 0.1}
GOALS = {"sentence": 550.0, "batched": 200.0}  # billed input-token equivalents per sentence
PLAN_TOLERANCE = 0.25


def load_summaries(release: Path, n_books: int) -> tuple[dict[str, str], str]:
    """The first ``n_books`` release summaries, or synthetic ones when the release is absent."""
    path = release / "summaries" / "gpt4-2048-hier-cleaned.json"
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        return dict(list(data.items())[:n_books]), f"{path.name} (first {n_books})"
    names = ("Mara", "Teo", "Quill", "Ilse", "Bram")
    synthetic = {
        f"book{b}.txt": " ".join(
            f"{names[i % 5]} walks to the harbour on day {i} of book {b} and finds clue {i * 7}." for i in range(30)
        )
        for b in range(n_books)
    }
    return synthetic, f"synthetic ({n_books} summaries of 30 sentences)"


def _client(api: str, server: FakeServer, concurrency: int) -> Client:
    if api == "openai":
        info = ModelInfo(name="openai:bench-judge", context_window=128_000, tokenizer="cl100k_base", **PRICES)
        backend: Any = OpenAIBackend(info, model_id="bench-judge", api_key="bench", base_url=server.openai_base_url)
    else:
        info = ModelInfo(name="anthropic:bench-judge", context_window=200_000, tokenizer="cl100k_base",
                         cache_write_usd_per_mtok=1.25, **PRICES)
        backend = AnthropicBackend(info, model_id="bench-judge", api_key="bench", base_url=server.anthropic_base_url)
    return Client(backend, concurrency=concurrency)


def measure(summaries: dict[str, str], *, mode: JudgeMode, api: str, caching: bool, warm_up: bool,
            concurrency: int, latency_s: float) -> dict[str, Any]:
    """Judge ``summaries`` once; the measured and planned bill."""
    with FakeServer(prompt_caching=caching, latency_s=latency_s) as server, \
            _client(api, server, concurrency) as client:
        judgements = BooookScoreJudge(client, mode=mode, warm_up=warm_up).judge(summaries)
        usage, info = client.usage, client.info
    sentences = sum(j.n_sentences for j in judgements)
    count = get_tokenizer("cl100k_base").count
    style = cache_style(info) if caching else None
    plan = priced(info, judge_estimate(count, mode=mode, batch_size=10, summaries=list(summaries.values()),
                                       style=style))
    billed = info.billed_input_tokens(usage)
    return {
        "mode": mode, "api": api, "caching": caching, "warm_up": warm_up, "calls": client.n_calls,
        "sentences": sentences, "unparseable": sum(j.n_unparseable for j in judgements),
        "input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_input_tokens": usage.cache_write_input_tokens,
        "raw_input_per_sentence": usage.input_tokens / sentences,
        "billed_input_per_sentence": billed / sentences,
        "plan_billed_input_per_sentence": plan.billed_input_tokens / sentences,
        "plan_over_actual": plan.billed_input_tokens / billed,
        "plan_calls": plan.calls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--books", type=int, default=10)
    parser.add_argument("--release", type=Path, default=Path(os.environ.get("BOOKSUM_RELEASE_DIR") or RELEASE))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02, help="fake server seconds per call")
    parser.add_argument("--json", action="store_true", help="one JSON line per run instead of the table")
    args = parser.parse_args(argv)
    os.environ.setdefault("BOOKSUM_CACHE_DIR", tempfile.mkdtemp(prefix="bench-judge-bill-"))
    summaries, source = load_summaries(args.release, args.books)
    settings = [(False, True), (True, True), (True, False)]  # (caching, warm-up)
    rows = [measure(summaries, mode=mode, api=api, caching=c, warm_up=w, concurrency=args.concurrency,
                    latency_s=args.latency)
            for mode in ("sentence", "batched") for api in ("openai", "anthropic") for c, w in settings]
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"summaries: {source}; cached price 10% of input, Anthropic cache writes 125%; "
          f"concurrency {args.concurrency}, {args.latency * 1000:.0f} ms per call")
    print(f"{'mode':9} {'api':10} {'cache':16} {'calls':>6} {'sent.':>6} {'raw in/sent':>12} "
          f"{'billed in/sent':>15} {'plan/actual':>12}")
    for r in rows:
        cache = "off" if not r["caching"] else "on" if r["warm_up"] else "on, no warm-up"
        print(f"{r['mode']:9} {r['api']:10} {cache:16} {r['calls']:6d} {r['sentences']:6d} "
              f"{r['raw_input_per_sentence']:12.0f} {r['billed_input_per_sentence']:15.0f} "
              f"{r['plan_over_actual']:12.3f}")
    for mode, goal in GOALS.items():
        best = [r for r in rows if r["mode"] == mode and r["caching"] and r["warm_up"]]
        for r in best:
            met = "met" if r["billed_input_per_sentence"] <= goal else "MISSED"
            plan = "met" if abs(r["plan_over_actual"] - 1) <= PLAN_TOLERANCE else "MISSED"
            print(f"goal {mode}/{r['api']}: billed <= {goal:.0f} per sentence: {met} "
                  f"({r['billed_input_per_sentence']:.0f}); plan within 25%: {plan} ({r['plan_over_actual']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
