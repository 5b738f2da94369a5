"""A thinking model's reasoning never reaches a summary, a merge or a judge answer, on any carrier.

Stand-ins that think (``fake_replies.THINKING``, with a marker found in no book): the fake
OpenAI-compatible server without a reasoning parser (``<think>`` in the content, or only
``</think>`` when the chat template opened the block) and with one (``reasoning_content``),
the fake Ollama (``message.thinking`` and tags), and the vLLM stand-in (tags in the text).
:func:`split_thinking` is checked on generated block shapes (hypothesis).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from book_fixtures import chapters_txt
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.llm.base import Request
from booksum_app.llm.providers import batcher
from booksum_app.llm.providers.ollama import OllamaBackend
from booksum_app.llm.providers.thinking import THINKING_ROOM, Split, ThinkWatch, known_to_think, split_thinking
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.score import score_texts
from booksum_app.testing import fake_vllm
from booksum_app.testing.fake_ollama import FakeOllama
from booksum_app.testing.fake_replies import THINKING, reply_text, with_thinking
from booksum_app.testing.fake_server import FakeServer

MARKER = "THINKING-MARKER"
ANSWER_WORDS = st.text(st.characters(codec="utf-8", exclude_characters="<>"), min_size=1, max_size=40).filter(
    lambda t: t.strip() != "")


def _book(tmp_path: Path) -> Path:
    return chapters_txt(tmp_path / "book.txt", "On day {c}-{s} the keeper lit {s} lamps along the river and wrote it "
                        "down.", chapters=3, sentences=90)


def _summary_json(tmp_path: Path) -> Path:
    path = tmp_path / "summaries.json"
    text = " ".join(f"The keeper lit {i} lamps along the river on day {i}." for i in range(10))
    path.write_text(json.dumps({"book-a": text}), encoding="utf-8")
    return path


def _no_reasoning_in(*paths: Path) -> None:
    for path in paths:
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            text = file.read_text("utf-8", errors="replace")
            assert MARKER not in text and "<think>" not in text and "</think>" not in text, file


# ---- the rule -----------------------------------------------------------------------------

@given(answer=ANSWER_WORDS, reasoning=ANSWER_WORDS,
       open_tag=st.sampled_from(["<think>", "<THINK>", "< think >", "<Think>"]),
       close_tag=st.sampled_from(["</think>", "</THINK>", "< /think >", "</ Think>"]),
       gap=st.sampled_from(["", "\n", "\n\n", "  \n "]), lead=st.sampled_from(["", "\n", " "]))
@example(answer="The end.", reasoning="a <think>nested</think> b", open_tag="<think>", close_tag="</think>",
         gap="\n\n", lead="")
def test_a_closed_block_leaves_only_the_answer(answer: str, reasoning: str, open_tag: str, close_tag: str,
                                                gap: str, lead: str) -> None:
    split = split_thinking(f"{lead}{open_tag}{reasoning}{close_tag}{gap}{answer}")
    assert split.visible == answer.lstrip()
    assert "think>" not in split.visible.lower().replace(answer.lower(), "")


@given(reasoning=ANSWER_WORDS, open_tag=st.sampled_from(["<think>", "<THINK>", "< think>"]))
def test_an_unclosed_block_cut_at_the_limit_is_no_answer_at_all(reasoning: str, open_tag: str) -> None:
    """Cut at max_tokens while thinking: nothing visible, so the call layer sees a model that only reasoned."""
    text = f"{open_tag}\n{reasoning}"
    split = split_thinking(text, cut=True)
    assert split.visible == "" and split.reasoning == reasoning.strip() and split.removed_chars == len(text)
    assert split_thinking(text, thinks=True).visible == ""


@given(answer=ANSWER_WORDS)
def test_an_answer_opening_with_a_quoted_tag_is_kept_when_nothing_says_it_thinks(answer: str) -> None:
    text = f"<think> is the tag the narrator quotes. {answer}"
    assert split_thinking(text) == Split(text, "")


@given(answer=ANSWER_WORDS, reasoning=ANSWER_WORDS)
def test_a_block_the_template_opened_is_cut_at_its_close_for_a_model_that_thinks(answer: str, reasoning: str) -> None:
    text = f"{reasoning}</think>\n\n{answer}"
    split = split_thinking(text, thinks=True)
    assert split.visible == answer.lstrip() and split.removed_chars == len(text) - len(split.visible)
    assert split_thinking(text) == Split(text, "")  # a model not known to think: a quoted tag, kept


@given(answer=ANSWER_WORDS)
def test_text_without_a_block_is_kept_whole(answer: str) -> None:
    assert split_thinking(answer) == Split(answer, "")


QUOTED = st.sampled_from(["<think>", "</think>", "</THINK>", "< /think >", "<think></think>", "</think><think>"])


@given(words=st.lists(ANSWER_WORDS, min_size=2, max_size=8), tags=st.lists(QUOTED, min_size=1, max_size=4),
       data=st.data())
@example(words=["The keeper wrote", "on the wall."], tags=["</think>"], data=None)
def test_answers_quoting_tags_anywhere_after_their_start_lose_no_text(words: list[str], tags: list[str],
                                                                     data: st.DataObject | None) -> None:
    """A tag quoted at any position but the reply's first character: the answer, whole, every character."""
    pieces = list(words)
    for tag in tags:
        at = data.draw(st.integers(1, len(pieces))) if data is not None else 1
        pieces.insert(at, tag)
    text = " ".join(pieces)
    if not text.strip() or _starts_with_tag(text):
        return
    assert split_thinking(text) == Split(text, "")
    assert split_thinking(text, cut=True) == Split(text, "")


def _starts_with_tag(text: str) -> bool:
    return text.lstrip().lower().startswith(("<think", "< think"))


@given(answer=ANSWER_WORDS, reasoning=ANSWER_WORDS, quoted=QUOTED)
def test_a_leading_block_is_stripped_and_counted_and_a_tag_quoted_after_it_kept(
        answer: str, reasoning: str, quoted: str) -> None:
    text = f"<think>{reasoning}</think>\n\nThe note read {quoted} twice. {answer}"
    split = split_thinking(text)
    assert split.visible == f"The note read {quoted} twice. {answer}"
    assert split.removed_chars == len(text) - len(split.visible) > len(reasoning)


def test_a_model_seen_opening_its_blocks_keeps_a_later_bare_close() -> None:
    """Once the model writes its own <think>, a </think> with no opener is quoted, even for Qwen3."""
    watch = ThinkWatch("Qwen/Qwen3-8B")
    assert watch.known and watch.room_tokens == THINKING_ROOM["low"]
    assert watch.split("<think>plan</think>The answer.").visible == "The answer."
    text = "He wrote </think> on the wall. Then he left."
    assert watch.split(text).visible == text


def test_a_model_not_known_to_think_is_seen_thinking_and_gets_room_from_then_on() -> None:
    watch = ThinkWatch("my-model")
    assert not watch.thinks and watch.room_tokens == 0
    assert watch.split("plain answer </think> quoted").removed_chars == 0 and not watch.seen
    watch.split("", separated="the server's reasoning_content")
    assert watch.seen and watch.room_tokens == THINKING_ROOM["low"]


@pytest.mark.parametrize(("model", "thinks"), [
    ("Qwen/Qwen3-8B", True), ("openai:qwen3-32b", True), ("qwq-32b", True), ("deepseek-ai/DeepSeek-R1", True),
    ("deepseek-r1-distill-qwen-7b", True), ("Qwen/Qwen3-235B-A22B-Thinking-2507", True),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", False), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", False),
    ("gpt-4o", False), ("llama3.1:8b", False), ("mistral-large", False)])
def test_models_known_to_think(model: str, thinks: bool) -> None:
    assert known_to_think(model) is thinks


def test_the_mode_is_asked_of_the_server_and_off_is_a_different_request() -> None:
    assert ThinkWatch("x", mode="off").chat_template_kwargs() == {"enable_thinking": False}
    assert ThinkWatch("x", mode="on").chat_template_kwargs() == {"enable_thinking": True}
    assert ThinkWatch("Qwen3-8B").chat_template_kwargs() is None
    assert ThinkWatch("Qwen3-8B", mode="off").room_tokens == 0 and ThinkWatch("x", mode="on").room_tokens > 0


def test_a_book_quoting_the_tags_is_summarized_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real shape of the finding: a book whose sentences quote the tags, a model that does not think;
    the summary is as long as the one of the same book with the tags spelled otherwise, nothing removed."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    records = {}
    for name, tag in (("quoted", "</think>"), ("plain", "[end-think]")):
        book = tmp_path / f"{name}.txt"
        book.write_text("\n\n".join(f"Chapter {c}\n\n" + " ".join(
            f"On day {c}-{s} the clerk stamped {tag} on form {s} and filed it." if s % 3 == 0 else
            f"On day {c}-{s} the keeper lit {s} lamps along the river." for s in range(120)) for c in range(1, 4)),
            encoding="utf-8")
        with FakeServer() as server:
            result = CliRunner().invoke(cli, [
                "summarize", str(book), "--model", "openai:house-model", "--base-url", server.openai_base_url,
                "--chunk-size", "512", "--cache-dir", str(tmp_path / f"c-{name}"), "-o", str(tmp_path / name)],
                catch_exceptions=False)
        assert result.exit_code == 0, result.output
        records[name] = json.loads((tmp_path / f"{name}.json").read_text("utf-8"))
    quoted, plain = records["quoted"], records["plain"]
    assert quoted["totals"]["think_chars_removed"] == 0 and "</think>" in quoted["summary"]
    # the same extractive length within the tags' token difference (the finding: a 30-word fragment)
    assert len(quoted["summary"].split()) >= 0.8 * len(plain["summary"].split()) > 150
    assert not quoted["summary"].startswith(" on form")  # no answer begins where a quoted tag was


# ---- every carrier ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["tags", "open", "parser"])
def test_server_summaries_and_judge_answers_carry_no_reasoning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = tmp_path / "out"
    with FakeServer(thinking=mode) as server:
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "openai:qwen3-8b", "--base-url", server.openai_base_url,
            "--strategy", "hier", "--chunk-size", "512", "--cache-dir", str(tmp_path / "c"), "-o", str(out)],
            catch_exceptions=False)
        assert result.exit_code == 0, result.output
        annotations = tmp_path / "annotations.json"
        scored = CliRunner().invoke(cli, [
            "score", str(_summary_json(tmp_path)), "--judge", "openai:qwen3-8b", "--base-url",
            server.openai_base_url, "--cache-dir", str(tmp_path / "c"), "--annotations-out", str(annotations),
            "--json", str(tmp_path / "score.json"), "--yes"], catch_exceptions=False)
        assert scored.exit_code == 0, scored.output
    _no_reasoning_in(tmp_path / "out.md", tmp_path / "out.json", annotations, tmp_path / "score.json")
    assert MARKER not in result.output + scored.output
    record = json.loads((tmp_path / "out.json").read_text("utf-8"))
    assert record["summary"].strip()


@pytest.mark.parametrize("mode", ["field", "tags"])
def test_ollama_answers_carry_no_reasoning_and_count_it_hidden(mode: str) -> None:
    from booksum_app.llm.base import ModelInfo

    with FakeOllama(thinking=mode) as fake:
        backend = OllamaBackend(ModelInfo(name="ollama:qwen3", context_window=8192, tokenizer="estimate"),
                                model_id="llama3.1:8b", host=fake.url, timeout_s=5)
        completion = backend.complete(Request(prompt="The keeper lit lamps. The river rose.", max_tokens=200))
        backend.close()
    assert MARKER not in completion.text and "think>" not in completion.text
    assert completion.text.startswith("The keeper lit lamps.")
    assert 0 < completion.reasoning_tokens < completion.usage.output_tokens
    assert "seed" in fake.requests[0].payload["options"]


def test_vllm_summaries_and_judge_answers_carry_no_reasoning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def thinks(conversation: fake_vllm.Conversation, params: fake_vllm.SamplingParams) -> str:
        return with_thinking(reply_text(conversation[-1]["content"], max_tokens=params.max_tokens or 16), "tags")

    module = fake_vllm.install(reply=thinks)
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(batcher, "QUIET_S", 0.05)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "summarize", str(_book(tmp_path)), "--model", "vllm:Qwen/Qwen3-8B", "--strategy", "hier",
        "--chunk-size", "512", "--cache-dir", str(tmp_path / "c"), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    _no_reasoning_in(tmp_path / "out.md", tmp_path / "out.json")
    summary = " ".join(f"The keeper lit {i} lamps along the river on day {i}." for i in range(10))
    scores = score_texts({"a": summary}, judge="vllm:Qwen/Qwen3-8B", llm_settings=LLMSettings(cache_dir=tmp_path / "j"))
    assert scores.booookscore is not None
    assert MARKER not in json.dumps(scores.to_dict() if hasattr(scores, "to_dict") else str(scores))
    assert MARKER in THINKING  # the control: the stand-in did think


def test_the_hidden_tokens_do_not_count_against_the_summary_length(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A thinking server bills reasoning + answer; the answer alone is held to the word budget:
    it takes the same requests as a server that does not think (no regeneration for length)."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    sent = {}
    for mode in (None, "tags", "parser"):
        with FakeServer(thinking=mode) as server:
            result = CliRunner().invoke(cli, [
                "summarize", str(_book(tmp_path)), "--model", "openai:qwen3-8b", "--base-url",
                server.openai_base_url, "--strategy", "hier", "--chunk-size", "512", "--max-summary-len", "60",
                "--cache-dir", str(tmp_path / f"c-{mode}"), "-o", str(tmp_path / f"out-{mode}")],
                catch_exceptions=False)
            assert result.exit_code == 0, result.output
            sent[mode] = [(r.payload["messages"][-1]["content"], r.payload["seed"]) for r in server.requests]
    assert sorted(sent["tags"]) == sorted(sent[None]) == sorted(sent["parser"])
