"""Replies no answer can be, on every carrier: too large, nested too deep, far past max_tokens.

Each case meets the lean HTTP client, the ``openai`` SDK, the ``anthropic`` SDK and Ollama's
client (and ``plugin.post_json``): one transient error line within the attempt's bound, never
gigabytes buffered, a traceback, or a count of millions of tokens no provider billed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_conformance import PATHS, REQ, backend_for, bounded, client_for

from booksum_app.errors import (
    REDACTED,
    AuthError,
    ContextTooLong,
    ModelError,
    RateLimited,
    TransientModelError,
)
from booksum_app.llm import calls
from booksum_app.llm.base import ModelInfo, Request
from booksum_app.llm.cache import CallCache
from booksum_app.llm.deadline import attempt_deadline
from booksum_app.plugin import error_for_status, post_json
from booksum_app.testing.fake_server import FakeServer

KEY = "sk-bounds" + "P0o9I8u7Y6t5" * 2


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(retry_after_s=0.01, drip_s=0.2) as fake:
        yield fake


@pytest.mark.parametrize("path", PATHS)
def test_a_reply_past_the_byte_cap_is_cut_on_every_carrier(path: str, server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("hugebody",)  # 100 MB announced and sent
    client = client_for(backend_for(path, server, timeout_s=60.0), max_attempts=1)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="larger than 64 MB"):
        bounded(lambda: client.complete(REQ))
    client.close()
    assert time.monotonic() - started < 30, "cut at the cap, not read whole"


@pytest.mark.parametrize("path", PATHS)
def test_a_reply_nested_too_deep_is_one_transient_line(path: str, server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("deepjson",)
    client = client_for(backend_for(path, server), max_attempts=2)
    with pytest.raises(TransientModelError, match="failed 2 times .*nested too deeply") as caught:
        bounded(lambda: client.complete(REQ))
    client.close()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("path", PATHS)
def test_an_answer_far_past_max_tokens_is_billed_as_the_server_billed_and_not_cached(
    path: str, server: FakeServer, tmp_path: Path
) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("hugetext",)  # 8 MB of text for a 200-token request
    cache = CallCache(tmp_path / "calls.sqlite")
    client = client_for(backend_for(path, server), max_attempts=2, cache=cache)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="far longer than its max_tokens"):
        bounded(lambda: client.complete(REQ))
    assert time.monotonic() - started < 20, "refused by its length, not tokenized or split"
    tally = client.tally
    assert (tally.input_tokens, tally.output_tokens) == (server.billed.input_tokens, server.billed.output_tokens)
    assert tally.output_tokens == 2 * REQ.max_tokens and tally.wasted_attempts == 2
    assert cache.get(client._key(REQ)) is None
    client.close()


@pytest.mark.parametrize("fault", ["hugebody", "deepjson"])
def test_ollama_caps_and_parses_its_replies_as_the_others_do(fault: str) -> None:
    from booksum_app.llm.providers.ollama import OllamaBackend
    from booksum_app.testing.fake_ollama import FakeOllama

    info = ModelInfo(name="ollama:llama3.1:8b", context_window=8192, tokenizer="estimate")
    with FakeOllama(script=[fault]) as fake:
        client = client_for(OllamaBackend(info, model_id="llama3.1:8b", host=fake.url, timeout_s=60.0),
                            max_attempts=1)
        started = time.monotonic()
        with pytest.raises(TransientModelError, match="larger than 64 MB" if fault == "hugebody" else "nested too"):
            bounded(lambda: client.complete(REQ))
        client.close()
    assert time.monotonic() - started < 30


def test_summarize_writes_its_failed_record_when_a_reply_is_nested_too_deep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.cli import cli

    monkeypatch.setattr(calls, "retry_wait", lambda initial, most: lambda state: 0.0)  # no real backoff
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKSUM_CONFIG", str(tmp_path / "none.toml"))
    book = tmp_path / "lisk.txt"
    book.write_text("\n".join(f"Chapter {n}\n\nThe {n}th morning began in Lisk. Mara baked bread before dawn. "
                              "Teo counted the coins twice.\n" for n in range(1, 4)), encoding="utf-8")
    with FakeServer(script=[None] + ["deepjson"] * 6) as server:
        result = CliRunner().invoke(cli, ["summarize", str(book), "-m", "openai:gpt-4o", "--base-url",
                                          server.openai_base_url, "--chunk-size", "64", "--concurrency", "1",
                                          "--no-clean", "--yes", "-o", str(tmp_path / "out" / "lisk")])
    assert result.exit_code == 4, result.output
    assert "nested too deeply" in result.stderr.splitlines()[-1] and "Traceback" not in result.output
    failed = json.loads((tmp_path / "out" / "lisk.failed.json").read_text(encoding="utf-8"))
    assert failed["totals"]["input_tokens"] > 0 and "nested too deeply" in failed["error"]


# ---- the door plugins get: post_json and error_for_status --------------------------------


def test_post_json_stops_at_the_attempts_deadline(server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("drip",)
    payload = {"model": "x", "messages": [{"role": "user", "content": "Mara bakes."}], "max_tokens": 20}
    started = time.monotonic()
    with attempt_deadline(1.0), pytest.raises(TransientModelError, match="timed out"):
        post_json(server.openai_base_url + "/chat/completions", payload, timeout=600)
    assert time.monotonic() - started < 3, "the attempt's deadline, not the 600 s given"


@pytest.mark.parametrize(("fault", "error", "says"), [
    ("echokey", TransientModelError, REDACTED),
    ("401", AuthError, "check CHAT_API_KEY"),
    ("429", RateLimited, "rate limited (429)"),
    ("context", ContextTooLong, "prompt too long"),
    ("400", ModelError, "request rejected (400)"),
    ("notjson", TransientModelError, "not valid JSON"),
    ("deepjson", TransientModelError, "nested too deeply"),
    ("hugebody", TransientModelError, "larger than 64 MB"),
])
def test_post_json_maps_every_failure_to_one_redacted_line(
    fault: str, error: type[Exception], says: str, server: FakeServer
) -> None:
    server.add_faults(fault)
    payload = {"model": "x", "messages": [{"role": "user", "content": "Mara bakes."}], "max_tokens": 20}
    with pytest.raises(error) as caught:
        post_json(server.openai_base_url + "/chat/completions", payload, headers={"Authorization": f"Bearer {KEY}"},
                  timeout=30, name="chat:x", secret=KEY, key_hint="CHAT_API_KEY")
    message = str(caught.value)
    assert says in message and "P0o9I8" not in message and "\n" not in message and message.startswith("chat:x: ")


def test_post_json_returns_the_parsed_reply(server: FakeServer) -> None:
    payload = {"model": "x", "messages": [{"role": "user", "content": "Mara bakes bread."}], "max_tokens": 20}
    reply: Any = post_json(server.openai_base_url + "/chat/completions", payload, timeout=30)
    assert reply["choices"][0]["message"]["content"] and reply["usage"]["prompt_tokens"] > 0


@pytest.mark.parametrize(("status", "error", "retry_after", "overloaded"), [
    (429, RateLimited, 7.0, False), (401, AuthError, None, False), (403, AuthError, None, False),
    (408, TransientModelError, None, False), (500, TransientModelError, 7.0, False),
    (503, TransientModelError, None, True), (529, TransientModelError, None, True),
    (404, ModelError, None, False), (307, ModelError, None, False), (413, ContextTooLong, None, False),
    (400, ModelError, None, False), (422, ModelError, None, False),
])
def test_error_for_status_is_one_mapping(
    status: int, error: type[Exception], retry_after: float | None, overloaded: bool
) -> None:
    headers = {"retry-after": "7"} if retry_after else {}
    body = json.dumps({"error": {"message": f"no (key {KEY}) Authorization: Bearer abc.def"}}).encode()
    made = error_for_status(status, body, headers, name="p:m", secret=KEY)
    assert type(made) is error and str(made).startswith("p:m: ") and "P0o9I8" not in str(made)
    assert "abc.def" not in str(made)
    if isinstance(made, RateLimited | TransientModelError):
        assert made.retry_after_s == retry_after
    if isinstance(made, TransientModelError):
        assert made.overloaded is overloaded


def test_error_for_status_reads_text_bodies_and_context_messages() -> None:
    assert "Bad Gateway" in str(error_for_status(502, b"<html>502 Bad Gateway</html>", None))
    made = error_for_status(400, "This model's maximum context length is 8192 tokens", None)
    assert isinstance(made, ContextTooLong)
    assert isinstance(error_for_status(400, {"error": "prompt is too long: 300000 tokens"}, None), ContextTooLong)
    deep = b"[" * 100_000
    assert "request rejected (400)" in str(error_for_status(400, deep, None)), "a deep body is text, not a crash"


def test_request_is_importable_for_plugins() -> None:
    assert Request(prompt="x", max_tokens=1).max_tokens == 1
