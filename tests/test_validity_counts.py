"""Issue 9 item 6: a summary's length is the provider's count when it gives one, our estimate only as a last resort."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from booksum_app.compression.validity import OVER_LIMIT, Regenerator
from booksum_app.llm.base import Completion, Usage

TEXT = "The heir returns to the bakery. Her cousin wants to sell it. She refuses."  # ends a sentence


def _regen(*, estimated: bool, count: int, max_tokens: int = 100) -> Regenerator:
    return Regenerator(render=lambda words: "prompt", words=60, max_tokens=max_tokens, temperature=0.5,
                       purpose="summarize", node="L0.0", count_tokens=lambda text: count, max_tries=2,
                       estimated_counts=estimated)


def _feed(regen: Regenerator, reported: int) -> tuple[str, ...]:
    """The problems found in one answer: () when accepted, else why it is regenerated."""
    done = regen.feed(regen.request(), Completion(TEXT, "stop", Usage(input_tokens=50, output_tokens=reported)))
    return regen.result().attempts[0].problems if done else (OVER_LIMIT,)


def test_the_providers_count_decides_when_our_estimate_over_counts() -> None:
    assert _feed(_regen(estimated=True, count=140), reported=95) == ()  # estimate 1.4x, provider says 95 <= 100


def test_without_a_provider_count_the_estimate_gets_its_documented_margin() -> None:
    assert _feed(_regen(estimated=True, count=112), reported=0) == ()  # 112 / 1.15 = 97 <= 100
    assert _feed(_regen(estimated=True, count=120), reported=0) == (OVER_LIMIT,)  # 120 / 1.15 = 104 > 100


def test_an_exact_tokenizer_gets_no_margin() -> None:
    assert _feed(_regen(estimated=False, count=101), reported=0) == (OVER_LIMIT,)


def test_a_server_that_under_reports_is_not_believed() -> None:
    # our count 300 is more than twice the reported 10: the report is implausible, ours decides
    assert _feed(_regen(estimated=True, count=300), reported=10) == (OVER_LIMIT,)
    assert _feed(_regen(estimated=False, count=150), reported=60) == (OVER_LIMIT,)


@pytest.mark.slow
def test_hier_with_an_unknown_server_model_makes_the_planned_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.books import open_book
    from booksum_app.chunking import CallableTokenizer, chunk_book, get_tokenizer
    from booksum_app.llm.registry import LLMSettings, choose_model
    from booksum_app.runners.plan import plan_strategy
    from booksum_app.runners.summarize import summarize_book
    from booksum_app.strategies import StrategyConfig
    from booksum_app.testing.fake_server import FakeServer
    from tests.conftest import book_path

    monkeypatch.setitem(os.environ, "OPENAI_API_KEY", "dummy")
    book = book_path("pride")
    with FakeServer() as server:  # reports completion_tokens in cl100k; booksum only has its estimate
        settings = LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path, concurrency=16)
        record = summarize_book(book, strategy="hier", model="openai:my-local-model", llm_settings=settings)
    info = choose_model("openai:my-local-model", settings=settings).info
    assert info.tokenizer == "estimate"
    count = get_tokenizer("estimate").count
    chunks = chunk_book(open_book(book), chunk_size=2048, tokenizer=CallableTokenizer("estimate", count))
    plan = plan_strategy("hier", chunk_tokens=[c.n_tokens for c in chunks], info=info, count_tokens=count,
                         config=StrategyConfig())
    assert record.totals.calls <= plan.calls * 1.10, (record.totals.calls, plan.calls)  # was 180 for 123
