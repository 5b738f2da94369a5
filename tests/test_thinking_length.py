"""Thinking models at their real length, and a model that only reasons stopped at once.

The fake server's ``thinking="long"`` writes a 600-800 token ``<think>`` trace before every answer,
paid out of the request's ``max_tokens`` as Qwen3 or an R1 distill served without a reasoning
parser does. Budget tests: The Time Machine at defaults takes the same calls and requests as a
model that does not think (the reasoning gets its own room); ``--thinking off`` sends
``enable_thinking: false`` in every request; a model that answers only in reasoning is stopped
after the replies already in flight, with one line naming ``--thinking off``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from book_fixtures import chapters_txt
from click.testing import CliRunner

from booksum_app.books import open_book
from booksum_app.chunking import chunk_book, get_tokenizer
from booksum_app.cli import cli
from booksum_app.llm.base import Request
from booksum_app.llm.providers.thinking import THINKING_ROOM
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.inspect import plan_summary
from booksum_app.runners.run_config import RunConfig
from booksum_app.testing.fake_replies import long_trace
from booksum_app.testing.fake_server import FakeServer
from tests.conftest import book_path

MARKER = "THINKING-MARKER"
TIME_MACHINE_CALLS = 35  # hier at defaults: leaves, merges and the cleaning call of a model that does not think


def _summarize(server: FakeServer, model: str, tmp_path: Path, name: str, *extra: str) -> tuple[int, str, dict]:
    out = tmp_path / name
    result = CliRunner().invoke(cli, [
        "summarize", str(book_path("time-machine")), "--model", model, "--base-url", server.openai_base_url,
        "--cache-dir", str(tmp_path / "cache"), "-o", str(out), "--yes", *extra], catch_exceptions=False)
    record = json.loads(out.with_suffix(".json").read_text("utf-8")) if result.exit_code == 0 else {}
    return result.exit_code, result.output, record


def test_the_fake_traces_are_a_thinking_models_real_length() -> None:
    from booksum_app.testing.fake_prompt_cache import count_tokens

    lengths = [count_tokens(long_trace(f"prompt {i}")) for i in range(20)]
    assert 600 <= min(lengths) and max(lengths) <= 830 and len(set(lengths)) > 3


def test_a_thinking_model_summarizes_the_time_machine_at_defaults(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget: 35 calls, 35 requests (no regeneration, no wasted reply); each request has room for the trace."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(thinking="long") as server:
        code, output, record = _summarize(server, "openai:qwen3-8b", tmp_path, "auto")
        sent = [r.payload for r in server.requests]
    assert code == 0, output
    assert record["totals"]["calls"] == TIME_MACHINE_CALLS and len(sent) == TIME_MACHINE_CALLS
    assert record["totals"]["retries"] == 0 and record["totals"]["wasted_attempts"] == 0
    # room on every request (fitted to the 8,192-token window beside the longest merge prompts)
    assert all(p["max_tokens"] >= 1024 and "chat_template_kwargs" not in p for p in sent)
    assert max(p["max_tokens"] for p in sent) >= THINKING_ROOM["low"] + 380
    assert MARKER not in record["summary"] and "think>" not in record["summary"]
    assert len(record["summary"].split()) > 150
    assert record["totals"]["think_chars_removed"] > TIME_MACHINE_CALLS * 2000  # every answer had its trace
    assert "characters of reasoning" in output and "think:" not in record["signature"]


def test_thinking_off_is_sent_in_every_request_and_is_another_request(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(thinking="long") as server:
        assert _summarize(server, "openai:qwen3-8b", tmp_path, "auto")[0] == 0
        before = server.call_count
        code, output, record = _summarize(server, "openai:qwen3-8b", tmp_path, "off", "--thinking", "off")
        sent = [r.payload for r in server.requests[before:]]
    assert code == 0, output
    # the same cache: not one answer of the thinking run is replayed for enable_thinking false
    assert len(sent) == TIME_MACHINE_CALLS and record["totals"]["cache_hits"] == 0
    assert all(p["chat_template_kwargs"] == {"enable_thinking": False} for p in sent)
    assert all(p["max_tokens"] <= 900 for p in sent)  # no room for a reasoning it was told not to do
    assert record["totals"]["think_chars_removed"] == 0 and MARKER not in record["summary"]
    assert "|think:off|" in record["signature"]


def test_a_model_seen_thinking_mid_run_gets_room_from_then_on_and_the_run_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget: the replies sent before the first trace came back are resent once, with room."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(thinking="long") as server:
        code, output, record = _summarize(server, "openai:house-model", tmp_path, "seen")
        requests = server.call_count
    assert code == 0, output
    assert record["totals"]["calls"] == TIME_MACHINE_CALLS and requests <= 2 * TIME_MACHINE_CALLS
    assert output.count("thinks before it answers") == 1 and MARKER not in record["summary"]


def test_the_plan_counts_and_prices_the_reasoning_room(tmp_path: Path) -> None:
    book = book_path("time-machine")
    run = RunConfig(model="openai:qwen3-8b")
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1")
    thinking, _ = plan_summary(book, run, llm_settings=settings)
    plain, _ = plan_summary(book, run, llm_settings=LLMSettings(base_url="http://127.0.0.1:9/v1", thinking="off"))
    assert thinking.calls == plain.calls
    assert thinking.output_tokens - plain.output_tokens == plain.calls * THINKING_ROOM["low"]


# ---- a model that only reasons ------------------------------------------------------------

def _reasoning_only(request: Request) -> str:
    return "<think>\n" + " ".join(["Let me think about the passage once more."] * 400)  # never closed


def _book(tmp_path: Path) -> Path:
    return chapters_txt(tmp_path / "book.txt", "On day {c}-{s} the keeper lit {s} lamps along the river.",
                        chapters=3, sentences=200)


@pytest.mark.parametrize("mode", ["unclosed", "parser"])
@pytest.mark.parametrize("concurrency", ["1", None])
def test_a_model_that_only_reasons_stops_within_the_requests_in_flight(
        mode: str, concurrency: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget: exactly 1 request at --concurrency 1 (the client stops sending before it frees the slot, so no
    waiting call goes out however late the run reacts); at most the first wave of leaves otherwise (was 72
    requests for 3 calls)."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    kwargs = {"reply": _reasoning_only} if mode == "unclosed" else {"reply": lambda r: "", "thinking": "parser"}
    limit = ["--concurrency", concurrency] if concurrency else []
    with FakeServer(**kwargs) as server:  # type: ignore[arg-type]
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "openai:qwen3-8b", "--base-url", server.openai_base_url,
            "--chunk-size", "512", "--cache-dir", str(tmp_path / "c"), "-o", str(tmp_path / "out"), *limit],
            catch_exceptions=False)
        requests = server.call_count
    assert result.exit_code == 4, result.output
    leaves = len(chunk_book(open_book(_book(tmp_path)), chunk_size=512, tokenizer=get_tokenizer("estimate")))
    assert requests == 1 if concurrency == "1" else requests <= leaves, (requests, leaves)
    line = result.output.split("error: ", 1)[1]
    assert "only reasoned" in line and "--thinking off" in line and "--reasoning-effort medium" in line


def test_a_rejected_key_stops_the_client_sending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget: a 401 is met by every request: one request, however many calls wait, and the run's line says it."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(fault_rate=1.0, fault_kinds=("401",)) as server:
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "openai:gpt-4o", "--base-url", server.openai_base_url,
            "--chunk-size", "512", "--cache-dir", str(tmp_path / "c"), "-o", str(tmp_path / "out"),
            "--concurrency", "1"], catch_exceptions=False)
        requests = server.call_count
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert requests == 1, requests


# ---- each carrier asks for the mode and gives the room ------------------------------------

def test_ollama_is_told_think_false_and_a_thinker_gets_room_in_num_predict() -> None:
    from booksum_app.llm.base import ModelInfo
    from booksum_app.llm.providers.ollama import OllamaBackend
    from booksum_app.testing.fake_ollama import FakeOllama

    info = ModelInfo(name="ollama:qwen3:8b", context_window=40960, tokenizer="estimate")
    request = Request(prompt="The keeper lit lamps. The river rose. Summarize within 50 words.", max_tokens=300)
    with FakeOllama(models={"qwen3:8b": 40960}, thinking="long") as fake:
        answers = []
        for mode in ("auto", "off"):
            backend = OllamaBackend(info, model_id="qwen3:8b", host=fake.url, timeout_s=5, thinking=mode)
            answers.append(backend.complete(request))
            backend.close()
        auto, off = (r.payload for r in fake.requests)
    assert "think" not in auto and auto["options"]["num_predict"] == 300 + THINKING_ROOM["low"]
    assert answers[0].text.startswith("The keeper lit lamps.") and answers[0].think_chars_removed > 2000
    assert off["think"] is False and off["options"]["num_predict"] == 300
    assert answers[1].text.startswith("The keeper lit lamps.") and answers[1].think_chars_removed == 0


@pytest.mark.parametrize("mode", ["off", "on", "auto"])
def test_vllm_offline_passes_chat_template_kwargs_and_the_room(mode: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from booksum_app.llm.providers import batcher
    from booksum_app.llm.registry import get_model
    from booksum_app.testing import fake_vllm

    module = fake_vllm.install()
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(batcher, "QUIET_S", 0.05)
    settings = LLMSettings(thinking=mode, cache_dir=tmp_path)
    with get_model("vllm:Qwen/Qwen3-8B", settings=settings) as model:
        model.complete(Request(prompt="The keeper lit lamps. Summarize it.", max_tokens=200))
    [engine] = module.engines  # type: ignore[attr-defined]
    [(_, [params])] = engine.chats
    expected = None if mode == "auto" else {"enable_thinking": mode == "on"}
    assert engine.template_kwargs == [expected]
    assert params.max_tokens == 200 + (0 if mode == "off" else THINKING_ROOM["low"])


def test_compare_does_not_reuse_a_thinking_record_for_thinking_off(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished record is reused only under the --thinking it was made with; the plan agrees with the run."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = _book(tmp_path)
    with FakeServer(thinking="long") as server:
        def compare(*extra: str) -> tuple[int, str]:
            before = server.call_count
            result = CliRunner().invoke(cli, [
                "compare", str(book), "--strategies", "hier", "--models", "openai:qwen3-8b", "--chunk-sizes", "512",
                "--base-url", server.openai_base_url, "--cache-dir", str(tmp_path / "c"), "--out",
                str(tmp_path / "out"), "--no-judge", "--yes", *extra], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            return server.call_count - before, result.output

        first, _ = compare()
        again, _ = compare()
        off, _ = compare("--thinking", "off")
        sent = [r.payload for r in server.requests[first:]]
    assert first > 10 and again == 0 and off == first
    assert all(p.get("chat_template_kwargs") == {"enable_thinking": False} for p in sent)
    records = [json.loads(p.read_text("utf-8")) for p in (tmp_path / "out").rglob("*.json")]
    signatures = [r["signature"] for r in records if r.get("kind") == "booksum.summary"]
    assert len(signatures) == 1 and "|think:off|" in signatures[0]


def test_the_judge_is_told_thinking_off_and_its_signature_says_so(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps({"book-a": " ".join(
        f"The keeper lit {i} lamps along the river on day {i}." for i in range(8))}), encoding="utf-8")
    signatures = {}
    with FakeServer(thinking="long") as server:
        for mode in ("auto", "off"):
            before = server.call_count
            result = CliRunner().invoke(cli, [
                "score", str(summaries), "--judge", "openai:qwen3-8b", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "c"), "--json", str(tmp_path / f"{mode}.json"), "--thinking", mode,
                "--yes"], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            sent = [r.payload for r in server.requests[before:]]
            assert sent and all(("chat_template_kwargs" in p) is (mode == "off") for p in sent)
            signatures[mode] = json.loads((tmp_path / f"{mode}.json").read_text("utf-8"))
    text = json.dumps(signatures)
    assert MARKER not in text and text.count("|think:off|") >= 1
    assert "|think:" not in json.dumps(signatures["auto"])
