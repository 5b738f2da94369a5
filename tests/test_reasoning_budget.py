"""A reasoning model's answers are judged by their visible text, not by the tokens billed.

Budget test: a reasoning model that spends hidden tokens on every answer makes at most 1.25x
the requests of a plain model on the same book, on a first run and when replayed from the
cache, whether or not the server says how many of its completion tokens were hidden.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from booksum_app.chunking import get_tokenizer
from booksum_app.compression.validity import OVER_LIMIT, Regenerator, measured_tokens
from booksum_app.errors import CostLimitExceeded
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.billing import priced
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.openai import DEFAULT_REASONING_EFFORT, REASONING_ROOM, OpenAIBackend
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.summarize import summarize_book
from booksum_app.testing.fake_server import FakeServer

REQUEST_BOUND = 1.25  # a reasoning model's requests over a plain model's, same book
PRICES = {"input_usd_per_mtok": 1.1, "output_usd_per_mtok": 4.4}  # o4-mini's list price
TEXT = "The heir returns to the bakery. Her cousin wants to sell it. She refuses."


def _book(tmp_path: Path) -> Path:
    path = tmp_path / "mill.txt"
    path.write_text(" ".join(f"In part {i} Anna walked to the mill at dawn and met Tom, who had sold it to a "
                             f"stranger from the coast." for i in range(700)), encoding="utf-8")
    return path


def _requests(book: Path, model: str, cache: Path, quirk: str | None, *, runs: int = 1) -> list[int]:
    """Requests the server saw in each of ``runs`` summaries of ``book`` (the base URL, part of the
    cache key, is the same for each)."""
    faults = (quirk,) if quirk else ("reset",)
    seen = []
    with FakeServer(fault_rate=1.0 if quirk else 0.0, fault_kinds=faults) as server:
        settings = LLMSettings(base_url=server.openai_base_url, cache_dir=cache, concurrency=8)
        for _ in range(runs):
            before = server.call_count
            summarize_book(book, strategy="hier", model=model, chunk_size=1024, llm_settings=settings)
            seen.append(server.call_count - before)
    return seen


@pytest.mark.parametrize("quirk", ["reasoning", "reasoningbare"])
def test_a_reasoning_model_makes_at_most_a_quarter_more_requests(
    quirk: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(os.environ, "OPENAI_API_KEY", "dummy")
    book = _book(tmp_path)
    [plain] = _requests(book, "openai:gpt-4o-mini", tmp_path / "plain", None)
    # the second run replays the cache, which keeps the tokens billed, not how many were hidden
    thinking, replayed = _requests(book, "openai:o4-mini", tmp_path / "thinking", quirk, runs=2)
    assert plain > 5 and thinking <= plain * REQUEST_BOUND, (thinking, plain)
    assert replayed == 0


def _regen(count: int | None = None, max_tokens: int = 100) -> Regenerator:
    """Our count is ``count``, or 10 tokens a word."""
    return Regenerator(render=lambda words: "prompt", words=60, max_tokens=max_tokens, temperature=0.5,
                       purpose="summarize", node="L0.0", max_tries=2,
                       count_tokens=lambda text: 10 * len(text.split()) if count is None else count)


def test_hidden_tokens_the_reply_separates_are_not_the_answers_length() -> None:
    regen = _regen(count=90)
    answer = Completion(TEXT, "stop", Usage(50, 790), reasoning_tokens=700)
    assert answer.visible_output_tokens == 90
    assert regen.feed(regen.request(), answer) and regen.result().attempts[0].problems == ()


@given(billed=st.integers(0, 10**9), reasoning=st.integers(-(10**6), 10**12))
def test_visible_tokens_are_never_negative_nor_more_than_billed(billed: int, reasoning: int) -> None:
    answer = Completion(TEXT, "stop", Usage(1, billed), reasoning_tokens=reasoning)
    assert 0 <= answer.visible_output_tokens <= billed


@given(counted=st.integers(1, 5_000), reported=st.integers(0, 10**7))
def test_a_count_that_disagrees_with_the_text_either_way_gives_way_to_ours(counted: int, reported: int) -> None:
    tokens, source = measured_tokens(TEXT, reported_tokens=reported, count_tokens=lambda _: counted)
    if source == "provider":
        assert tokens == reported and counted / 2 <= reported <= counted * 2
    else:
        assert tokens == counted


def test_an_over_long_answer_is_still_over_long_behind_hidden_tokens() -> None:
    regen = _regen()  # the text itself is 140 tokens, past the 100-token budget
    assert not regen.feed(regen.request(), Completion(TEXT, "stop", Usage(50, 850), reasoning_tokens=700))
    assert regen.feed(regen.request(), Completion(TEXT, "stop", Usage(50, 900)))  # hidden, not separated
    assert [a.problems for a in regen.result().attempts] == [(OVER_LIMIT,), (OVER_LIMIT,)]


def _ceiling_run(quirk: str, max_cost_usd: float) -> tuple[int, float, float, Client]:
    """Calls answered before the ceiling, dollars counted, dollars the server billed, the client."""
    with FakeServer(fault_rate=1.0, fault_kinds=(quirk,)) as server:
        info = ModelInfo(name="openai:o4-mini", context_window=128_000, tokenizer="o200k_base", **PRICES)
        backend = OpenAIBackend(info, model_id="o4-mini", api_key="k", base_url=server.openai_base_url,
                                timeout_s=30, reasoning=True)
        client = Client(backend, max_cost_usd=max_cost_usd)
        done = 0
        with pytest.raises(CostLimitExceeded):
            for i in range(60):
                client.complete(Request(prompt=f"Part {i}. " + "words " * 300, max_tokens=200))
                done += 1
        client.close()
        return done, client.cost_usd, info.cost_usd(server.billed), client


def test_a_reasoning_model_without_usage_is_charged_its_reasoning_room() -> None:
    with_usage, counted, billed, _ = _ceiling_run("reasoning", 0.08)
    assert counted == pytest.approx(billed)  # reported usage: to the token
    without, counted, billed, client = _ceiling_run("reasoningnousage", 0.08)
    assert 0 < without <= with_usage, (without, with_usage)
    assert billed <= counted <= 0.08  # the estimate never bills less than the server did
    assert client.usage.output_tokens >= without * REASONING_ROOM[DEFAULT_REASONING_EFFORT]
    assert any("reserved for hidden reasoning" in note and "estimated" in note for note in client.notes)


def test_a_plain_model_without_usage_is_charged_its_text_only() -> None:
    info = ModelInfo(name="openai:gpt-4o", context_window=128_000, tokenizer="o200k_base", **PRICES)
    request = Request(prompt="Summarize.", max_tokens=200)
    answer = Completion("Anna sells the mill.", "stop", Usage(), usage_reported=False)
    count = get_tokenizer("o200k_base").count
    priced_answer, note = priced(info, request, answer, count_prompt=lambda r: count(r.prompt), count=count,
                                 extra_output_tokens=0)
    assert priced_answer.usage == Usage(count("Summarize."), count("Anna sells the mill."))
    assert not priced_answer.usage_reported and priced_answer.reasoning_tokens == 0
    assert note is not None and "reasoning" not in note
    thinking, note = priced(info, request, answer, count_prompt=lambda r: count(r.prompt), count=count,
                            extra_output_tokens=4096)
    assert thinking.usage.output_tokens == count("Anna sells the mill.") + 4096
    assert thinking.visible_output_tokens == count("Anna sells the mill.")  # the answer is judged by its text


def test_an_anthropic_reply_with_thinking_is_judged_by_its_text() -> None:
    """Anthropic's Messages API reports one output_tokens, thinking included, and no breakdown."""
    from booksum_app.llm.providers.anthropic_wire import completion_from_message

    body = json.dumps({
        "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
        "content": [{"type": "thinking", "thinking": "Let me think. " * 200, "signature": "x"},
                    {"type": "text", "text": TEXT}],
        "usage": {"input_tokens": 50, "output_tokens": 890},
    }).encode()
    answer = completion_from_message(body, name="anthropic:claude-sonnet-4-5", model_id="claude-sonnet-4-5",
                                     latency_s=0.1, secret=None)
    assert answer.text == TEXT and answer.usage.output_tokens == 890  # billed: thinking and text
    regen = _regen(max_tokens=200)  # 14 words: 140 tokens by our count, within the budget
    assert regen.feed(regen.request(), answer) and regen.result().attempts[0].problems == ()
