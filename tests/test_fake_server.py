"""The fake OpenAI/Anthropic server on its own: routes, wire formats, fault scripting, determinism."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from typing import Any

import pytest

from booksum_app.llm.base import Request
from booksum_app.testing.fake_server import FAULT_KINDS, FakeServer


def post(server: FakeServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read() or b"null")
    finally:
        conn.close()


OPENAI_BODY = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "A. B."}]}
ANTHROPIC_BODY = {
    "model": "m",
    "max_tokens": 50,
    "messages": [{"role": "user", "content": "A. B."}],
}


def test_openai_wire_format() -> None:
    with FakeServer() as server:
        status, _, body = post(server, "/v1/chat/completions", OPENAI_BODY)
    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "A. B."}
    assert (
        body["usage"]["total_tokens"]
        == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


def test_anthropic_wire_format() -> None:
    with FakeServer() as server:
        status, _, body = post(server, "/v1/messages", ANTHROPIC_BODY)
    assert status == 200
    assert body["type"] == "message" and body["stop_reason"] == "end_turn"
    assert body["content"] == [{"type": "text", "text": "A. B."}]


def test_streaming_and_unknown_routes_are_refused() -> None:
    with FakeServer() as server:
        assert post(server, "/v1/chat/completions", {**OPENAI_BODY, "stream": True})[0] == 400
        assert post(server, "/v1/embeddings", {})[0] == 404


def test_script_then_normal_replies_and_retry_after_header() -> None:
    with FakeServer(script=["429", None, "503"], retry_after_s=2) as server:
        first = post(server, "/v1/chat/completions", OPENAI_BODY)
        second = post(server, "/v1/chat/completions", OPENAI_BODY)
        third = post(server, "/v1/messages", ANTHROPIC_BODY)
        fourth = post(server, "/v1/messages", ANTHROPIC_BODY)
        assert server.call_count == 4 and server.completed_count == 2
    assert first[0] == 429 and first[1]["retry-after"] == "2"
    assert [second[0], third[0], fourth[0]] == [200, 503, 200]
    assert third[2]["error"]["type"] == "overloaded_error"


def test_dropped_connection_gives_no_response() -> None:
    with (
        FakeServer(script=["drop"]) as server,
        pytest.raises((http.client.RemoteDisconnected, ConnectionError)),
    ):
        post(server, "/v1/chat/completions", OPENAI_BODY)


def test_random_faults_are_seeded() -> None:
    def faults(seed: int) -> list[str | None]:
        with FakeServer(fault_rate=0.5, seed=seed, fault_kinds=["500", "503"]) as server:
            for _ in range(20):
                post(server, "/v1/chat/completions", OPENAI_BODY)
            return [r.fault for r in server.requests]

    first = faults(1)
    assert first == faults(1)
    assert 3 <= sum(f is not None for f in first) <= 17


def test_pluggable_reply_sees_the_parsed_request() -> None:
    seen: list[Request] = []

    def reply(request: Request) -> str:
        seen.append(request)
        return "Scripted."

    body = {
        "model": "m",
        "max_tokens": 9,
        "system": "Sys.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Prefix. ", "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "Rest."},
                ],
            }
        ],
    }
    with FakeServer(reply=reply) as server:
        assert post(server, "/v1/messages", body)[2]["content"][0]["text"] == "Scripted."
    assert seen == [
        Request(
            prompt="Rest.",
            shared_prefix="Prefix. ",
            system="Sys.",
            max_tokens=9,
            temperature=1.0,
            top_p=1.0,
        )
    ]


def test_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        FakeServer(script=["boom"])
    assert "timeout" in FAULT_KINDS and "truncated" in FAULT_KINDS


def test_runnable_from_the_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "booksum_app.testing.fake_server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--port" in result.stdout and "--fault-rate" in result.stdout
