"""The judge on one long summary: memory linear in the summary, a cost ceiling stops it early (issue 9 item 14)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from booksum_app.chunking import split_sentences
from booksum_app.cli import cli
from booksum_app.errors import CostLimitExceeded
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.scoring.booookscore import BooookScoreJudge
from booksum_app.scoring.dispatch import BATCH_WINDOW, answer_in_order, request_window
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_judge import (
    BATCH_MARKER,
    SENTENCE_MARKER,
    is_fake_confusing,
    judge_reply,
)
from booksum_app.testing.fake_server import FakeServer

NAMES = ("Mara", "Teo", "Quill", "Ilse", "Bram", "Odile")
PLACES = ("the harbour", "the bakery", "the mill", "the old lighthouse", "the market")


def long_summary(n_sentences: int) -> str:
    return " ".join(
        f"{NAMES[i % len(NAMES)]} walks to {PLACES[i % len(PLACES)]} on day {i} and finds clue {i * 7}."
        for i in range(n_sentences)
    )


def fast_reply(request: Request) -> Completion:
    """The fake judge's answer from the per-call part alone (no whole-prompt copy or token count)."""
    marker = BATCH_MARKER if BATCH_MARKER in request.prompt else SENTENCE_MARKER
    text = judge_reply(marker + request.prompt.split(marker, 1)[-1])
    return Completion(text=text, finish_reason="stop", usage=Usage(1000, 20), model="fake:model")


class CountingModel:
    """A ChatModel around a Client that counts the requests handed to it (built by the judge)."""

    def __init__(self, client: Client, *, transparent: bool = True) -> None:
        self.client = client
        if transparent:  # shows its backend and concurrency, as Client does: a sliding window
            self.backend = client.backend
            self.concurrency = client.concurrency
        self.handed = 0

    @property
    def info(self) -> ModelInfo:
        return self.client.info

    def count_tokens(self, text: str) -> int:
        return self.client.count_tokens(text)

    def complete(self, request: Request) -> Completion:
        self.handed += 1
        return self.client.complete(request)

    def submit(self, request: Request) -> Future[Completion]:
        self.handed += 1
        return self.client.submit(request)

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        self.handed += len(requests)
        return self.client.complete_many(requests)


def judge_peak_bytes(n_sentences: int, mode: Any = "sentence") -> int:
    """Peak traced memory while judging one summary of ``n_sentences`` (summary built beforehand)."""
    summary = long_summary(n_sentences)
    split_sentences("Warm up. The splitter.")  # load Punkt outside the measurement
    with Client(FakeBackend(reply=fast_reply), concurrency=4) as client:
        judge = BooookScoreJudge(client, mode=mode)
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            [judgement] = judge.judge({"long.txt": summary})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert judgement.n_sentences == n_sentences
    flagged = sum(is_fake_confusing(s) for s in split_sentences(summary))
    assert judgement.score == pytest.approx(1 - flagged / n_sentences)
    return peak - base


def test_judge_memory_grows_linearly_with_the_summary_not_sentences_times_length() -> None:
    small, large = judge_peak_bytes(1000), judge_peak_bytes(3000)
    summary_bytes = len(long_summary(3000))
    # Three times the sentences and three times the summary: a copy of the summary per
    # request would be nine times the memory (and ~3,000 summaries, 200+ MB, in absolute terms).
    assert large < 4.5 * small, (small, large)
    assert large < 150 * summary_bytes, (large, summary_bytes)


def test_batched_judge_memory_is_bounded_too() -> None:
    assert judge_peak_bytes(3000, mode="batched") < 100 * len(long_summary(3000))


@pytest.mark.parametrize("transparent", [True, False])
def test_cost_ceiling_stops_a_long_judge_run_after_few_calls_without_building_every_request(
    transparent: bool,
) -> None:
    backend = FakeBackend(reply=fast_reply)
    client = Client(backend, concurrency=2, max_cost_usd=0.05, count_tokens=lambda text: len(text) // 4)
    model = CountingModel(client, transparent=transparent)
    summary = long_summary(3000)  # about 45k tokens a call at $1/Mtok: one call fits under $0.05
    with client, pytest.raises(CostLimitExceeded, match="--max-cost"):
        BooookScoreJudge(model).judge({"long.txt": summary})  # type: ignore[arg-type]
    assert backend.call_count <= 2
    window = request_window(model)  # type: ignore[arg-type]
    assert window == (4 * 2 if transparent else BATCH_WINDOW)
    assert model.handed <= window + 1


def test_answer_in_order_keeps_at_most_the_window_ahead_and_keeps_order() -> None:
    backend = FakeBackend(reply=lambda r: r.prompt.upper(), latency_s=0.001)
    pulled = 0

    def requests() -> Any:
        nonlocal pulled
        for i in range(50):
            pulled += 1
            yield Request(prompt=f"p{i}", max_tokens=5)

    with Client(backend, concurrency=3) as client:
        answers = answer_in_order(client, requests(), window=5)
        first = next(answers)
        assert first.text == "P0" and pulled <= 5
        rest = [c.text for c in answers]
    assert rest == [f"P{i}" for i in range(1, 50)]
    assert backend.max_in_flight <= 3
    with pytest.raises(ValueError):
        next(answer_in_order(client, [], window=0))


class FakeBatchJudge(FakeBackend):
    """A fake judge with complete_batch, like vLLM's engine: records each batch's size."""

    def __init__(self) -> None:
        super().__init__(reply=fast_reply)
        self.batches: list[int] = []

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion]:
        self.batches.append(len(requests))
        return [self.complete(r) for r in requests]


def test_batch_backends_get_whole_windows_in_order() -> None:
    backend = FakeBatchJudge()
    summary = long_summary(600)
    with Client(backend, concurrency=1) as client:
        assert request_window(client) == BATCH_WINDOW
        [judgement] = BooookScoreJudge(client).judge({"long.txt": summary})
    assert backend.batches == [BATCH_WINDOW, BATCH_WINDOW, 600 - 2 * BATCH_WINDOW]
    sentences = split_sentences(summary)
    assert [s.sentence for s in judgement.sentences] == sentences
    assert [s.confusing for s in judgement.sentences] == [is_fake_confusing(s) for s in sentences]


def test_score_cli_max_cost_stops_a_long_summary_before_memory_grows(tmp_path: Path) -> None:
    summary = long_summary(3000)
    path = tmp_path / "long-cleaned.json"
    path.write_text(json.dumps({"long.epub": summary}), encoding="utf-8")
    # past the pre-flight plan: --max-cost is what is tested
    args = ["score", str(path), "--judge", "openai:gpt-4o", "--no-cache", "--max-cost", "0.5", "--yes"]
    warm = tmp_path / "warm-cleaned.json"
    warm.write_text(json.dumps({"warm.epub": "Warm up. The judge."}), encoding="utf-8")
    with FakeServer() as server:
        base_url = ["--base-url", server.openai_base_url]
        CliRunner().invoke(cli, ["score", str(warm), *args[2:], *base_url])  # imports, outside the peak
        before = server.call_count
        tracemalloc.start()
        try:
            result = CliRunner().invoke(cli, [*args, *base_url])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        calls = server.call_count - before
    assert result.exit_code == 5 and "--max-cost" in result.stderr
    assert calls <= 3  # about $0.14 a call (worst case) under a $0.50 ceiling
    # was ~3,000 copies of the summary (about 600 MB); then 200-250 while 128 workers each counted
    # and keyed the whole user text at once; 35-45 once the prefix is counted and hashed once
    assert peak < 100 * len(summary), peak
