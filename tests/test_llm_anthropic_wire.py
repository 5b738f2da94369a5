"""The Anthropic backend against a raw-socket peer: a reply that is not a message is refused,
never a traceback or a negative cost.

The SDK builds its reply models without validating them; before ``anthropic_wire`` a reply
whose content was not a list, or whose text block held a number, ended in a Python
``TypeError``, and negative token counts went on into the cost.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_llm_http_json import RawPeer, http_reply

from booksum_app.errors import TransientModelError
from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings, get_model

SECRET = "sk-ant-test-raw-peer-0001"
GOOD = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "The crew was lost."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 5}}
REQ = Request(prompt="Summarize within 30 words.\n\nThe ship left port at dawn.", max_tokens=40)


def client_for(peer: RawPeer, tmp_path: Path, **settings: object) -> Client:
    options: dict[str, object] = {"cache_dir": tmp_path / "cache", "config_path": tmp_path / "none", "timeout_s": 5.0}
    options.update(settings)
    client = get_model("anthropic:claude-haiku-4-5",
                       settings=LLMSettings(base_url=peer.url.removesuffix("/v1"), **options),  # type: ignore[arg-type]
                       env={"ANTHROPIC_API_KEY": SECRET})
    client._sleep = lambda seconds: None  # no real waiting between retries
    return client


@pytest.mark.parametrize("usage", [
    {"input_tokens": -50, "output_tokens": 3},
    {"input_tokens": "12", "output_tokens": 3},
    {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": -7},
    "none",
])
def test_an_answer_whose_usage_is_not_counts_is_kept_and_estimated(usage: object, tmp_path: Path) -> None:
    """The answer was paid for: resending it over its usage would pay again (docs/guarantees.md)."""
    peer = RawPeer([("send", http_reply(json.dumps({**GOOD, "usage": usage}).encode()))])
    client = client_for(peer, tmp_path)
    completion = client.complete(REQ)
    assert completion.text and not completion.usage_reported and len(peer.bodies) == 1
    assert client.tally.estimated_tokens > 0 and any("estimated" in note for note in client.notes)
    client.close()
    peer.close()


@pytest.mark.parametrize("reply", [
    {**GOOD, "content": None},
    {**GOOD, "content": "just a string"},
    {**GOOD, "content": [{"type": "text", "text": 5}]},
    {**GOOD, "content": [{"text": "a block without a type"}]},
    {**GOOD, "stop_reason": 3},
    [1, 2],
    {"type": "error", "error": {"type": "overloaded_error", "message": f"Overloaded; your key {SECRET}"}},
])
def test_a_reply_that_is_not_a_message_is_refused_in_one_line(reply: object, tmp_path: Path) -> None:
    peer = RawPeer([("send", http_reply(json.dumps(reply).encode()))] * 2)
    client = client_for(peer, tmp_path, max_attempts=2)
    with pytest.raises(TransientModelError) as caught:
        client.complete(REQ)
    message = str(caught.value)
    assert "failed 2 times" in message and "\n" not in message and SECRET not in message
    assert "malformed reply" in message or "answered with an error: Overloaded" in message
    assert len(peer.bodies) == 2 and not client.calls
    client.close()
    peer.close()


def test_a_message_is_read_from_its_text_blocks_with_every_token_counted(tmp_path: Path) -> None:
    reply = {**GOOD, "stop_reason": "max_tokens",
             "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "The crew "},
                         {"type": "text", "text": "was lost."}],
             "usage": {"input_tokens": 12, "output_tokens": 5, "cache_read_input_tokens": 1000,
                       "cache_creation_input_tokens": None}}
    whole = json.dumps(reply).encode()
    peer = RawPeer([("send_close", http_reply(whole[:30], length=len(whole))), ("send", http_reply(whole))])
    client = client_for(peer, tmp_path)
    completion = client.complete(REQ)
    assert completion.text == "The crew was lost." and completion.finish_reason == "length"
    assert completion.usage.input_tokens == 1012 and completion.usage.cached_input_tokens == 1000
    assert completion.usage.output_tokens == 5 and completion.cost_usd > 0
    assert len(peer.bodies) == 2 and client.calls[-1].attempts == 2, "a body cut short is retried"
    client.close()
    peer.close()
