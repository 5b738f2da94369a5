"""The in-process fake backend and its deterministic replies (judge answers, extractive summaries)."""

from __future__ import annotations

import threading

import pytest

from booksum_app.llm.base import Backend, Completion, Request
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_judge import judge_reply
from booksum_app.testing.fake_replies import (
    count_words,
    default_reply,
    estimate_tokens,
    requested_word_limit,
)

STORY = (
    "It was a dark and stormy night. The rain fell in torrents, except at occasional "
    'intervals. A gust of wind swept up the streets! "Who goes there?" asked the guard. '
    "Nobody answered him. The lamps flickered and went out. Morning came slowly."
)


def prompt(instruction: str, text: str = STORY) -> str:
    return f"Below is a part of a story:\n\n---\n\n{text}\n\n---\n\n{instruction}"


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("Summarize within 300 words.", 300),
        ("The summary should roughly contain 120 words.", 120),
        ("Write less than 50 words.", 50),
        ("Use fewer than 1,000 words.", 1000),
        ("请用300字以内概括。", 300),
        ("First 500 words of context, then: within 40 words.", 40),  # the last number wins
        ("Summarize the story.", None),
    ],
)
def test_requested_word_limit(text: str, limit: int | None) -> None:
    assert requested_word_limit(text) == limit


@pytest.mark.parametrize("limit", [5, 8, 14, 20, 30, 200])
def test_summary_never_exceeds_the_word_limit_and_ends_a_sentence(limit: int) -> None:
    reply = default_reply(
        Request(prompt=prompt(f"Summarize within {limit} words."), max_tokens=900)
    )
    assert count_words(reply) <= limit
    assert reply.rstrip("\"'”")[-1] in ".!?"
    assert reply.startswith("It was")


def test_summary_takes_whole_sentences_from_the_longest_block() -> None:
    reply = default_reply(Request(prompt=prompt("Summarize within 15 words."), max_tokens=900))
    assert reply == "It was a dark and stormy night."  # 7 words; with the next one, 16


@pytest.mark.parametrize("max_tokens", [3, 10, 25, 60])
def test_summary_fits_max_tokens(max_tokens: int) -> None:
    reply = default_reply(
        Request(prompt=prompt("Summarize within 300 words."), max_tokens=max_tokens)
    )
    assert 0 < estimate_tokens(reply) <= max_tokens
    assert reply[-1] in '.!?"”'


def test_chinese_prompt_counts_characters() -> None:
    text = "他走进了房间。她哭了起来！外面的天已经黑了。第二天早上，雨停了。"
    reply = default_reply(Request(prompt=prompt("请用15字以内概括上文。", text), max_tokens=900))
    assert reply == "他走进了房间。她哭了起来！"
    assert count_words(reply) <= 15


def test_judge_prompts_get_the_judge_answer() -> None:
    judge_prompt = "Summary: A. B.\n\n[Your sentence]: B.\nQuestions:"
    assert default_reply(Request(prompt=judge_prompt, max_tokens=200)) == judge_reply(judge_prompt)


def test_replies_are_deterministic() -> None:
    request = Request(prompt=prompt("Summarize within 30 words."), max_tokens=100)
    assert len({default_reply(request) for _ in range(5)}) == 1


def test_fake_backend_records_calls_and_usage() -> None:
    backend = FakeBackend()
    assert isinstance(backend, Backend)
    request = Request(
        prompt=prompt("Summarize within 30 words."), max_tokens=100, purpose="summarize"
    )
    completion = backend.complete(request)
    assert backend.calls == [request]
    assert completion.finish_reason == "stop"
    assert completion.usage.input_tokens > completion.usage.output_tokens > 0
    assert completion.model == backend.info.name


def test_fake_backend_scripted_reply_and_completion() -> None:
    cut = Completion(text="Half a sent", finish_reason="length")
    backend = FakeBackend(reply=lambda r: cut if r.sample_index == 0 else "Whole sentence.")
    assert backend.complete(Request(prompt="x", max_tokens=5)).cut_off
    assert (
        backend.complete(Request(prompt="x", max_tokens=5, sample_index=1)).text
        == "Whole sentence."
    )


def test_fake_backend_is_thread_safe() -> None:
    backend = FakeBackend(latency_s=0.001)
    threads = [
        threading.Thread(target=backend.complete, args=(Request(prompt=f"T{i}.", max_tokens=9),))
        for i in range(40)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backend.call_count == 40
    assert sorted(r.prompt for r in backend.calls) == sorted(f"T{i}." for i in range(40))
