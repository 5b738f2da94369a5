"""``summarize --chapters``: the plan is an upper bound on the run, per-chapter merges included."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.runners.plan import CallPlan
from booksum_app.runners.run_config import RunConfig
from booksum_app.runners.summarize import run_summary
from booksum_app.strategies.record import SummaryRecord
from booksum_app.testing.fake_backend import FakeBackend

# priced like a small hosted model, so the plan's dollars are compared with billed dollars
PRICED = ModelInfo(name="openai:gpt-4o-mini", context_window=8192, tokenizer="o200k_base",
                   input_usd_per_mtok=0.15, output_usd_per_mtok=0.60)
SENTENCES = ("The storm came in from the sea and the harbour filled with boats. ",
             "Mara counted the coins twice before she paid the baker. ",
             "Teo walked the long road to the mill in the cold morning. ")


def _planned_and_run(path: Path, *, chunk_size: int, budget: int) -> tuple[CallPlan, SummaryRecord, float]:
    plans: list[CallPlan] = []
    run = RunConfig(strategy="hier", chunk_size=chunk_size, max_summary_tokens=budget, options={"chapters": True})
    backend = FakeBackend(PRICED)
    with Client(backend, concurrency=8) as client:
        record = run_summary(path, run, chat=client, before_run=plans.append)
    return plans[0], record, record.totals.cost_usd


def _book(tmp_path: Path, chapter_sentences: list[int]) -> Path:
    parts = []
    for i, n in enumerate(chapter_sentences, start=1):
        body = "".join(SENTENCES[(i + k) % 3] for k in range(n))
        parts.append(f"Chapter {i}: Part {i}\n\n{body}\n")
    path = tmp_path / "book.txt"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _check(plan: CallPlan, record: SummaryRecord, cost_usd: float) -> None:
    merges = sum(c.purpose == "chapter" for c in record.calls)
    assert len(record.calls) <= plan.calls, f"{len(record.calls)} calls made ({merges} chapter merges) > {plan.calls}"
    assert record.totals.input_tokens <= plan.input_tokens
    assert record.totals.output_tokens <= plan.output_tokens
    assert cost_usd <= plan.cost_usd + 1e-12, f"${cost_usd} spent > ${plan.cost_usd} planned"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chapter_sentences=st.lists(st.integers(min_value=2, max_value=90), min_size=1, max_size=7),
       chunk_size=st.sampled_from([128, 256, 512]), budget=st.sampled_from([60, 120]))
def test_chapters_never_spend_more_than_planned(tmp_path: Path, chapter_sentences: list[int], chunk_size: int,
                                                budget: int) -> None:
    plan, record, cost_usd = _planned_and_run(_book(tmp_path, chapter_sentences), chunk_size=chunk_size,
                                              budget=budget)
    _check(plan, record, cost_usd)


def test_the_plan_counts_a_merge_for_every_split_chapter(tmp_path: Path) -> None:
    # chapter 2 spans several chunks: its merge call is in the plan, whether or not the tree reuses a node
    path = _book(tmp_path, [3, 80, 3])
    plan, record, cost_usd = _planned_and_run(path, chunk_size=256, budget=120)
    without = RunConfig(strategy="hier", chunk_size=256, max_summary_tokens=120, chapter_aware=True)
    plans: list[CallPlan] = []
    with Client(FakeBackend(PRICED)) as client:
        run_summary(path, without, chat=client, before_run=plans.append)
    assert plan.calls == plans[0].calls + 1, "one merge call planned for the one split chapter"
    assert dataclasses.replace(plan, calls=0) != dataclasses.replace(plans[0], calls=0)
    _check(plan, record, cost_usd)


def test_chapters_of_the_sample_book_stay_within_the_plan() -> None:
    from conftest import book_path

    plan, record, cost_usd = _planned_and_run(book_path("time-machine"), chunk_size=2048, budget=900)
    _check(plan, record, cost_usd)
