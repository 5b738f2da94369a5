"""Provider prompt caching: breakpoints in requests, cached tokens at their price, the fake server's stand-in."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from booksum_app.chunking import get_tokenizer
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.cache import MIGRATIONS, CallCache
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.anthropic import AnthropicBackend
from booksum_app.llm.providers.openai import OpenAIBackend
from booksum_app.testing.fake_server import FakeServer

PRICES = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0, "cached_input_usd_per_mtok": 0.1}
OPENAI = ModelInfo(name="openai:test", context_window=128_000, tokenizer="cl100k_base", **PRICES)
ANTHROPIC = ModelInfo(name="anthropic:test", context_window=200_000, tokenizer="cl100k_base",
                      cache_write_usd_per_mtok=1.25, **PRICES)
CONSTANT = "Instructions and demonstrations that every judge call shares, word for word. " * 90
SUMMARY_1 = "Mara inherits a bakery in the harbour town of Lisk and refuses to sell it. " * 20
SUMMARY_2 = "An old pilot flies mail across the northern mountains until his engine fails. " * 20


def count(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


def judge_request(summary: str, sentence: str) -> Request:
    prefix = CONSTANT + summary
    return Request(prompt=f"[Your sentence] {sentence}", shared_prefix=prefix, prefix_breaks=(len(CONSTANT),),
                   max_tokens=40)


def openai_client(server: FakeServer) -> Client:
    return Client(OpenAIBackend(OPENAI, model_id="test", api_key="k", base_url=server.openai_base_url))


def anthropic_client(server: FakeServer) -> Client:
    return Client(AnthropicBackend(ANTHROPIC, model_id="test", api_key="k", base_url=server.anthropic_base_url))


# ---- the request and the price --------------------------------------------------------------


def test_prefix_blocks_are_cut_at_the_breaks_and_keep_the_text() -> None:
    request = Request(prompt="S.", shared_prefix="abcdef", prefix_breaks=(2, 4), max_tokens=5)
    assert request.prefix_blocks() == ["ab", "cd", "ef"] and request.user_text == "abcdefS."
    assert Request(prompt="S.", max_tokens=5).prefix_blocks() == []
    for bad in ((0,), (6,), (4, 2), (3, 3)):
        with pytest.raises(ValueError, match="prefix_breaks"):
            Request(prompt="S.", shared_prefix="abcdef", prefix_breaks=bad, max_tokens=5)


def test_cache_reads_and_writes_are_priced_apart() -> None:
    usage = Usage(10_000, 100, cached_input_tokens=6_000, cache_write_input_tokens=2_000)
    # 2,000 plain at $1 + 6,000 read at $0.10 + 2,000 written at $1.25 = 5,100 input-token equivalents
    assert ANTHROPIC.billed_input_tokens(usage) == pytest.approx(5_100)
    assert ANTHROPIC.cost_usd(usage) == pytest.approx((5_100 + 100 * 4) / 1e6)
    unpriced = ModelInfo(name="openai:old", context_window=8_192, tokenizer="cl100k_base", input_usd_per_mtok=1.0)
    assert unpriced.billed_input_tokens(usage) == 10_000  # no cached price known: the input price
    free = ModelInfo(name="local", context_window=8_192, tokenizer="native")
    assert free.billed_input_tokens(usage) == 10_000 and free.cost_usd(usage) == 0
    assert OPENAI.cost_usd(Usage(100, 0, cached_input_tokens=500)) >= 0  # an odd count costs nothing extra


# ---- OpenAI: automatic prefix caching -----------------------------------------------------------


def test_openai_prefix_caching_is_reported_in_128_token_steps_and_priced() -> None:
    with FakeServer(prompt_caching=True) as server, openai_client(server) as client:
        first = client.complete(judge_request(SUMMARY_1, "One."))
        second = client.complete(judge_request(SUMMARY_1, "Two."))
        other = client.complete(judge_request(SUMMARY_2, "One."))
        short = [client.complete(Request(prompt=f"Short {i}. " + "word " * 50, max_tokens=9)) for i in (1, 1)]
    shared = count(CONSTANT + SUMMARY_1 + "[Your sentence] ")
    assert first.usage.cached_input_tokens == 0
    cached = second.usage.cached_input_tokens
    assert cached % 128 == 0 and shared - 128 < cached <= shared  # the longest seen prefix, in steps
    assert 1024 <= other.usage.cached_input_tokens <= count(CONSTANT)  # only the constant part is shared
    assert all(c.usage.cached_input_tokens == 0 for c in short)  # under 1,024 tokens: never cached
    assert second.cost_usd == pytest.approx(OPENAI.cost_usd(second.usage)) and second.cost_usd < first.cost_usd / 3
    assert client.usage.cached_input_tokens == cached + other.usage.cached_input_tokens


def test_without_the_option_the_fake_server_reports_no_cache() -> None:
    with FakeServer() as server, openai_client(server) as client:
        completions = [client.complete(judge_request(SUMMARY_1, s)) for s in ("One.", "Two.")]
    assert [c.usage.cached_input_tokens for c in completions] == [0, 0]


def test_concurrent_first_calls_on_a_new_prefix_all_miss() -> None:
    with FakeServer(prompt_caching=True, latency_s=0.2) as server, openai_client(server) as client:
        wave = client.complete_many([judge_request(SUMMARY_1, f"S{i}.") for i in range(4)])
    assert [c.usage.cached_input_tokens for c in wave] == [0, 0, 0, 0]


# ---- Anthropic: cache_control breakpoints -------------------------------------------------------


def test_anthropic_breakpoints_after_the_constant_part_and_after_the_summary() -> None:
    with FakeServer(prompt_caching=True) as server, anthropic_client(server) as client:
        first = client.complete(judge_request(SUMMARY_1, "One."))
        second = client.complete(judge_request(SUMMARY_1, "Two."))
        other = client.complete(judge_request(SUMMARY_2, "One."))
    blocks = server.requests[0].payload["messages"][0]["content"]
    assert [b["text"] for b in blocks] == [CONSTANT, SUMMARY_1, "[Your sentence] One."]
    assert [b.get("cache_control") for b in blocks] == [{"type": "ephemeral"}] * 2 + [None]
    whole = count(CONSTANT + SUMMARY_1)
    assert (first.usage.cached_input_tokens, first.usage.cache_write_input_tokens) == (0, whole)
    assert (second.usage.cached_input_tokens, second.usage.cache_write_input_tokens) == (whole, 0)
    read, written = other.usage.cached_input_tokens, other.usage.cache_write_input_tokens
    assert read == count(CONSTANT) and written == count(CONSTANT + SUMMARY_2) - read
    assert first.cost_usd == pytest.approx(ANTHROPIC.cost_usd(first.usage))
    assert first.cost_usd > (whole * 1.25) / 1e6  # writes at 1.25x the input price
    assert second.cost_usd < first.cost_usd / 5


# ---- the call cache keeps the counts ----------------------------------------------------------


def test_call_cache_keeps_cache_reads_and_writes(tmp_path: Path) -> None:
    done = Completion("Answer.", "stop", Usage(3000, 20, 1000, 1500), model="m")
    CallCache(tmp_path).put("k", done)
    assert CallCache(tmp_path).get("k").usage == done.usage  # type: ignore[union-attr]


def test_an_older_cache_file_gains_the_cache_write_column(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "calls.sqlite3", isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL)")
    for migration in MIGRATIONS[:3]:  # a cache written before cache writes were counted
        migration(db)
        db.execute("INSERT INTO _migrations VALUES (?, 0)", (migration.__name__.lstrip("_"),))
    db.execute("INSERT INTO calls (key, text, finish_reason, input_tokens, output_tokens, cached_input_tokens, "
               "model, created, latency_s) VALUES ('old', 'Old answer.', 'stop', 10, 2, 4, 'm', 0, 0)")
    db.close()
    assert CallCache(tmp_path).get("old").usage == Usage(10, 2, 4, 0)  # type: ignore[union-attr]


# ---- a misbehaving OpenAI-compatible server -------------------------------------------------------


class _OddUsage(BaseHTTPRequestHandler):
    """Replies with more cached tokens than prompt tokens (a buggy compatible server)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52,
                      "prompt_tokens_details": {"cached_tokens": 900}},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture()
def odd_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _OddUsage)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_cached_tokens_over_the_prompt_are_clamped(odd_server: str) -> None:
    with Client(OpenAIBackend(OPENAI, model_id="m", api_key=None, base_url=odd_server)) as client:
        completion = client.complete(Request(prompt="Hello.", max_tokens=5))
    assert completion.usage.cached_input_tokens == 50 == completion.usage.input_tokens
    assert completion.cost_usd == pytest.approx((50 * 0.1 + 2 * 4) / 1e6)
