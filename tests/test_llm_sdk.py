"""The OpenAI and Anthropic backends against the fake server on localhost.

"openai" reaches the fake server's plain http:// URL through the lean client (``http_json``),
"openai-sdk" through the openai SDK (``BOOKSUM_OPENAI_TRANSPORT=sdk``), "anthropic" through its SDK.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from booksum_app.errors import AuthError, ContextTooLong, MissingAPIKey, ModelError, TransientModelError
from booksum_app.llm.base import ModelInfo, Request
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.openai import (
    DEFAULT_REASONING_EFFORT,
    REASONING_ROOM,
    OpenAIBackend,
    Transport,
)
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.fake_server import FakeServer

SECRET = "sk-test-DO-NOT-LEAK-123"
APIS = ("openai", "openai-sdk", "anthropic")
MODEL = {"openai": "openai:gpt-4o", "openai-sdk": "openai:gpt-4o", "anthropic": "anthropic:claude-haiku-4-5"}
TEXT = "The ship left port at dawn. Storms came at noon. By night the crew was lost."
REQ = Request(prompt=f"Summarize within 30 words.\n\n---\n\n{TEXT}", max_tokens=60)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(retry_after_s=0) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Close every client a test opened (SDK connection pools warn when left to the GC)."""
    yield
    while OPENED:
        OPENED.pop().close()


OPENED: list[Client | OpenAIBackend] = []


def client_for(
    api: str,
    server: FakeServer,
    tmp_path: Path,
    *,
    waits: list[float] | None = None,
    **settings: object,
) -> Client:
    env = {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}
    if api == "openai-sdk":
        env["BOOKSUM_OPENAI_TRANSPORT"] = "sdk"
    base_url = server.anthropic_base_url if api == "anthropic" else server.openai_base_url
    options: dict[str, object] = {"cache_dir": tmp_path / "cache", "config_path": tmp_path / "none"}
    options.update(settings)
    client = get_model(
        MODEL[api],
        settings=LLMSettings(base_url=base_url, **options),
        env=env,  # type: ignore[arg-type]
    )
    client._sleep = (waits if waits is not None else []).append  # no real waiting in tests
    OPENED.append(client)
    return client


@pytest.mark.parametrize("api", APIS)
def test_success(api: str, server: FakeServer, tmp_path: Path) -> None:
    client = client_for(api, server, tmp_path)
    completion = client.complete(REQ)
    assert completion.text == default_reply(REQ) == TEXT
    assert completion.finish_reason == "stop" and not completion.cache_hit
    assert completion.usage.input_tokens > 20 and completion.usage.output_tokens > 10
    assert completion.cost_usd == pytest.approx(client.info.cost_usd(completion.usage))
    assert server.requests[0].had_key


@pytest.mark.parametrize("fault", ["429", "500", "503", "timeout", "drop", "empty"])
@pytest.mark.parametrize("api", APIS)
def test_retryable_faults_are_retried_then_succeed(
    api: str, fault: str, server: FakeServer, tmp_path: Path
) -> None:
    server.add_faults(fault)
    client = client_for(api, server, tmp_path, timeout_s=0.5)
    assert client.complete(REQ).text == TEXT
    assert [r.fault for r in server.requests] == [fault, None]
    assert client.calls[-1].attempts == 2


@pytest.mark.parametrize(
    ("fault", "error"), [("400", ModelError), ("401", AuthError), ("context", ContextTooLong)]
)
@pytest.mark.parametrize("api", APIS)
def test_client_errors_are_not_retried(
    api: str, fault: str, error: type[Exception], server: FakeServer, tmp_path: Path
) -> None:
    server.add_faults(fault)
    client = client_for(api, server, tmp_path)
    with pytest.raises(error) as caught:
        client.complete(REQ)
    assert server.call_count == 1
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("api", APIS)
def test_bounded_attempts_then_a_clear_error(api: str, server: FakeServer, tmp_path: Path) -> None:
    server.add_faults(*["500"] * 5)
    client = client_for(api, server, tmp_path, max_attempts=3)
    with pytest.raises(TransientModelError, match="failed 3 times") as caught:
        client.complete(REQ)
    assert server.call_count == 3
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("api", APIS)
def test_retry_after_header_is_honoured(api: str, tmp_path: Path) -> None:
    waits: list[float] = []
    with FakeServer(retry_after_s=4, script=["429", "429"]) as server:
        client = client_for(api, server, tmp_path, waits=waits)
        assert client.complete(REQ).text == TEXT
    assert waits == [4.0, 4.0]


@pytest.mark.parametrize("api", APIS)
def test_truncated_reply_is_reported_cut_off(api: str, server: FakeServer, tmp_path: Path) -> None:
    server.add_faults("truncated")
    completion = client_for(api, server, tmp_path).complete(REQ)
    assert completion.cut_off and len(completion.text) < len(TEXT)
    assert server.call_count == 1  # a cut-off answer is the strategy's to resample, not ours


@pytest.mark.parametrize("api", APIS)
def test_rerun_is_served_from_the_cache(api: str, server: FakeServer, tmp_path: Path) -> None:
    requests = [Request(prompt=f"Part {i}. {TEXT}", max_tokens=60) for i in range(5)]
    first = client_for(api, server, tmp_path).complete_many(requests)
    assert server.call_count == 5
    rerun = client_for(api, server, tmp_path)
    second = rerun.complete_many(requests)
    assert server.call_count == 5  # zero new calls
    assert [c.text for c in second] == [c.text for c in first]
    assert rerun.cost_usd == 0.0 and rerun.n_cache_hits == 5
    assert SECRET.encode() not in (tmp_path / "cache" / "calls.sqlite3").read_bytes()


@pytest.mark.parametrize("api", APIS)
def test_server_sees_at_most_the_concurrency_bound(api: str, tmp_path: Path) -> None:
    with FakeServer(latency_s=0.05) as server:
        client = client_for(api, server, tmp_path, concurrency=3, use_cache=False)
        client.complete_many([Request(prompt=f"Q{i}. {TEXT}", max_tokens=60) for i in range(15)])
    assert server.call_count == 15
    assert server.max_in_flight == 3


def test_anthropic_shared_prefix_uses_prompt_caching(tmp_path: Path) -> None:
    prefix = "Instructions and a long summary shared by many judge calls. " * 100  # > 1,024 tokens
    with FakeServer(prompt_caching=True) as server:
        client = client_for("anthropic", server, tmp_path)
        first = client.complete(Request(prompt="Sentence 1.", shared_prefix=prefix, max_tokens=50))
        second = client.complete(Request(prompt="Sentence 2.", shared_prefix=prefix, max_tokens=50))
    payload = server.requests[0].payload
    assert payload["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Sentence 1."}]}]
    assert payload["max_tokens"] == 50 and server.requests[0].had_key
    assert first.usage.cached_input_tokens == 0 and first.usage.cache_write_input_tokens > 1000
    assert second.usage.cached_input_tokens > 1000 and second.usage.cache_write_input_tokens == 0
    assert second.usage.input_tokens > second.usage.cached_input_tokens
    assert second.cost_usd < first.cost_usd


@pytest.mark.parametrize("transport", ["auto", "sdk"])
def test_openai_parameter_mapping(transport: Transport, server: FakeServer) -> None:
    info = ModelInfo(name="openai:o3", context_window=200_000, tokenizer="o200k_base")
    official = OpenAIBackend(
        info,
        model_id="o3",
        api_key=SECRET,
        base_url=server.openai_base_url,
        reasoning=True,
        legacy_max_tokens=False,  # what api.openai.com gets
        transport=transport,
    )
    OPENED.append(official)
    official.complete(Request(prompt="Hi.", system="Be brief.", max_tokens=42, stop=("\n\n",)))
    sent = server.requests[-1].payload
    # the body is exactly ours (it bypasses the SDK's transform through extra_body), with the key
    # a reasoning model's hidden tokens come out of max_completion_tokens: room on top of the 42
    room = REASONING_ROOM[DEFAULT_REASONING_EFFORT]
    assert sent == {"model": "o3", "messages": [{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": "Hi."}],
                    "max_completion_tokens": 42 + room, "reasoning_effort": "low", "stop": ["\n\n"]}
    assert server.requests[-1].had_key
    assert "max_tokens" not in sent
    assert "temperature" not in sent and "top_p" not in sent  # reasoning models reject them
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["stop"] == ["\n\n"]
    compatible = OpenAIBackend(info, model_id="m", api_key=None, base_url=server.openai_base_url,
                               transport=transport)
    OPENED.append(compatible)
    compatible.complete(Request(prompt="Hi.", max_tokens=7, temperature=0.5))
    sent = server.requests[-1].payload
    assert sent["max_tokens"] == 7 and sent["temperature"] == 0.5  # and no key was needed
    # behind a base URL too, a reasoning model gets max_completion_tokens (vLLM, gateways take it)
    served = OpenAIBackend(info, model_id="o4-mini-2025-04-16", api_key=None, base_url=server.openai_base_url,
                           reasoning=True, reasoning_effort="minimal", transport=transport)
    OPENED.append(served)
    served.complete(Request(prompt="Hi.", max_tokens=7))
    sent = server.requests[-1].payload
    assert sent["max_completion_tokens"] == 7 + REASONING_ROOM["minimal"] and "max_tokens" not in sent
    assert sent["reasoning_effort"] == "minimal"


def test_openai_without_key_or_server_is_a_missing_key() -> None:
    info = ModelInfo(name="openai:gpt-4o", context_window=128_000, tokenizer="o200k_base")
    with pytest.raises(MissingAPIKey, match="No OpenAI API key: set OPENAI_API_KEY"):
        OpenAIBackend(info, model_id="gpt-4o", api_key=None)


@pytest.mark.parametrize("api", APIS)
def test_a_200_reply_that_is_not_json_is_retried(
    api: str, server: FakeServer, tmp_path: Path
) -> None:
    server.add_faults("notjson")
    client = client_for(api, server, tmp_path)
    assert client.complete(REQ).text == TEXT
    assert [r.fault for r in server.requests] == ["notjson", None]


@pytest.mark.parametrize("api", APIS)
def test_a_200_reply_never_json_ends_in_one_transient_error(
    api: str, server: FakeServer, tmp_path: Path
) -> None:
    server.add_faults(*["notjson"] * 3)
    client = client_for(api, server, tmp_path, max_attempts=3)
    with pytest.raises(TransientModelError, match="not JSON") as caught:
        client.complete(REQ)
    assert "\n" not in str(caught.value) and server.call_count == 3


@pytest.mark.parametrize("api", APIS)
def test_a_server_echoing_the_key_never_leaks_it(
    api: str, server: FakeServer, tmp_path: Path
) -> None:
    server.add_faults(*["echokey"] * 2)
    client = client_for(api, server, tmp_path, max_attempts=2)
    with pytest.raises(TransientModelError) as caught:
        client.complete(REQ)
    message = str(caught.value)
    assert "server error 500" in message and "[redacted]" in message
    assert SECRET not in message and "sk-test" not in message
    assert all(SECRET not in repr(call) for call in client.calls)
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()
