"""The OpenAI backend's two carriers against a raw-socket peer that misbehaves at the HTTP level.

The fake server speaks correct HTTP; real servers and proxies do not always. This peer
answers each request with scripted bytes: a body cut off before its Content-Length, gzip,
chunked encoding, shapes that are JSON but not a completion, a keep-alive connection closed
while idle. Both carriers (the lean ``http_json`` client and the SDK) must refuse what is not
an answer, retry it, and never send a request twice.
"""

from __future__ import annotations

import gc
import gzip
import json
import select
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from booksum_app.errors import TransientModelError
from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.llm.providers import http_json
from booksum_app.llm.providers.openai import OpenAIBackend
from booksum_app.llm.registry import LLMSettings, get_model

TRANSPORTS = ("direct", "sdk")
GOOD = {"model": "m", "choices": [{"message": {"content": "The crew was lost."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5}}
REQ = Request(prompt="Summarize within 30 words.\n\nThe ship left port at dawn.", max_tokens=40)


def http_reply(body: bytes, *, status: str = "200 OK", headers: tuple[str, ...] = (),
               length: int | None = None) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json",
            f"Content-Length: {len(body) if length is None else length}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(body: bytes) -> bytes:
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    half = len(body) // 2
    parts = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (body[:half], body[half:]))
    return head.encode() + parts + b"0\r\n\r\n"


class RawPeer:
    """Answers each request with the next scripted action; after the script, good replies.

    Actions: ``("send", bytes)`` keeps the connection open, ``("send_close", bytes)`` closes it
    after sending, ``("idle_close", bytes)`` sends then closes it 50 ms later without saying so,
    ``("drip", bytes)`` sends the head at once and then a byte of the body every 0.2 s.
    """

    def __init__(self, script: list[tuple[str, bytes]]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if not line.startswith(b"POST "):  # booksum asks a server what it is (GET /models, /props)
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                body = json.loads(reader.read(length))
                with self._lock:
                    self.bodies.append(body)
                    action, data = (self.script.pop(0) if self.script
                                    else ("send", http_reply(json.dumps(GOOD).encode())))
                if action == "drip":
                    head, _, rest = data.partition(b"\r\n\r\n")
                    try:
                        conn.sendall(head + b"\r\n\r\n")
                        for i in range(len(rest)):
                            time.sleep(0.2)
                            conn.sendall(rest[i : i + 1])
                    except OSError:
                        return  # the client gave up
                    continue
                conn.sendall(data)
                if action == "send_close":
                    return
                if action == "idle_close":
                    time.sleep(0.05)
                    return

    def close(self) -> None:
        self._sock.close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def opened() -> Iterator[list[Client]]:
    clients: list[Client] = []
    yield clients
    for client in clients:
        client.close()


def client_for(peer: RawPeer, transport: str, tmp_path: Path, opened: list[Client], **settings: object) -> Client:
    options: dict[str, object] = {"cache_dir": tmp_path / "cache", "config_path": tmp_path / "none", "timeout_s": 5.0}
    options.update(settings)
    client = get_model("openai:gpt-4o-mini", settings=LLMSettings(base_url=peer.url, **options),  # type: ignore[arg-type]
                       env={"OPENAI_API_KEY": "sk-test-raw-peer-0001",
                            "BOOKSUM_OPENAI_TRANSPORT": "sdk" if transport == "sdk" else "auto"})
    assert isinstance(client.backend, OpenAIBackend) and client.backend.transports == [transport]
    client._sleep = lambda seconds: None  # no real waiting between retries
    opened.append(client)
    return client


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_body_cut_off_before_its_length_is_retried_never_read_as_an_answer(
    transport: str, tmp_path: Path, opened: list[Client]
) -> None:
    whole = json.dumps(GOOD).encode()
    peer = RawPeer([("send_close", http_reply(whole[:40], length=len(whole)))])
    client = client_for(peer, transport, tmp_path, opened)
    completion = client.complete(REQ)
    assert completion.text == "The crew was lost." and len(peer.bodies) == 2
    assert client.calls[-1].attempts == 2
    peer.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("body", [
    b'{"choices": "none"}',
    b'{"choices": [{"message": {"content": 5}, "finish_reason": "stop"}]}',
    b'{"choices": [{"text": "a legacy completion, not a chat one"}]}',
    b'{"choices": [{"message": {"content": "ok"}, "finish_reason": 1}]}',
    b'[1, 2, 3]',
    b'{"error": {"message": "upstream overloaded, key sk-test-raw-peer-0001"}}',
])
def test_json_that_is_not_a_completion_is_refused_in_one_line(
    transport: str, body: bytes, tmp_path: Path, opened: list[Client]
) -> None:
    peer = RawPeer([("send", http_reply(body))] * 2)
    client = client_for(peer, transport, tmp_path, opened, max_attempts=2)
    with pytest.raises(TransientModelError) as caught:
        client.complete(REQ)
    message = str(caught.value)
    assert "failed 2 times" in message and "\n" not in message
    assert "malformed reply" in message or "answered with an error: upstream overloaded" in message
    assert "sk-test-raw-peer" not in message and len(peer.bodies) == 2 and not client.calls
    peer.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("usage", [b'{"prompt_tokens": -3, "completion_tokens": 2}',
                                   b'{"prompt_tokens": "12", "completion_tokens": 2}'])
def test_an_answer_whose_usage_is_not_counts_is_kept_and_counted_with_the_tokenizer(
    transport: str, usage: bytes, tmp_path: Path, opened: list[Client]
) -> None:
    """The answer was paid for: resending it over its usage would pay again."""
    body = b'{"choices": [{"message": {"content": "ok"}}], "usage": ' + usage + b"}"
    peer = RawPeer([("send", http_reply(body))])
    client = client_for(peer, transport, tmp_path, opened, max_attempts=2)
    completion = client.complete(REQ)
    assert completion.text == "ok" and not completion.usage_reported and len(peer.bodies) == 1
    assert completion.usage.input_tokens > 0 and client.tally.estimated_tokens > 0
    assert any("estimated" in note for note in client.notes)
    peer.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_gzip_and_chunked_replies_are_read(
    transport: str, tmp_path: Path, opened: list[Client]
) -> None:
    whole = json.dumps(GOOD).encode()
    peer = RawPeer([("send", http_reply(gzip.compress(whole), headers=("Content-Encoding: gzip",))),
                    ("send", chunked(whole))])
    client = client_for(peer, transport, tmp_path, opened, use_cache=False)
    first, second = client.complete(REQ), client.complete(REQ)
    assert first.text == second.text == "The crew was lost."
    assert first.usage.input_tokens == 12 and second.usage.output_tokens == 5
    assert len(peer.bodies) == 2
    peer.close()


@pytest.mark.parametrize(("transport", "has_poll"), [*((t, True) for t in TRANSPORTS), ("direct", False)])
def test_a_keep_alive_connection_closed_while_idle_is_not_reused_and_nothing_is_sent_twice(
    transport: str, has_poll: bool, tmp_path: Path, opened: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not has_poll:  # as on Windows
        monkeypatch.delattr(select, "poll")
    whole = json.dumps(GOOD).encode()
    peer = RawPeer([("idle_close", http_reply(whole))] * 5)  # keep-alive promised, then closed
    client = client_for(peer, transport, tmp_path, opened, use_cache=False)
    for _ in range(5):
        assert client.complete(REQ).text == "The crew was lost."
        time.sleep(0.15)  # the peer has closed the idle connection by now
    assert len(peer.bodies) == 5, "each call reached the server exactly once"
    assert all(call.attempts == 1 for call in client.calls)
    peer.close()


def test_a_reply_over_the_size_limit_is_refused(
    tmp_path: Path, opened: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_json, "MAX_BODY_BYTES", 1000)
    huge = json.dumps({**GOOD, "padding": "x" * 5000}).encode()
    peer = RawPeer([("send", http_reply(huge)),
                    ("send", http_reply(gzip.compress(huge), headers=("Content-Encoding: gzip",)))])
    client = client_for(peer, "direct", tmp_path, opened, max_attempts=2)
    with pytest.raises(TransientModelError, match="larger than"):
        client.complete(REQ)
    assert len(peer.bodies) == 2
    peer.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("says_close", [False, True], ids=["keep-alive", "connection-close"])
def test_a_dripping_body_is_cut_at_the_timeout_whether_or_not_the_server_says_it_will_close(
    transport: str, says_close: bool, tmp_path: Path, opened: list[Client]
) -> None:
    """http.client hands the socket to the response on "Connection: close": the deadline must
    still reach it, and a failed read must still close it (an unclosed socket fails this test)."""
    headers = ("Connection: close",) if says_close else ()
    peer = RawPeer([("drip", http_reply(json.dumps(GOOD).encode(), headers=headers))])
    client = client_for(peer, transport, tmp_path, opened, max_attempts=1, timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="timed out|no complete reply"):
        client.complete(REQ)
    assert time.monotonic() - started < 5, "the attempt's deadline, not the body's pace"
    assert len(peer.bodies) == 1
    peer.close()


@pytest.mark.parametrize("says_close", [False, True], ids=["keep-alive", "connection-close"])
def test_a_reply_over_the_size_limit_closes_its_socket(
    says_close: bool, tmp_path: Path, opened: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_json, "MAX_BODY_BYTES", 1000)
    headers = ("Connection: close",) if says_close else ()
    huge = json.dumps({**GOOD, "padding": "x" * 5000}).encode()
    peer = RawPeer([("send", http_reply(huge, headers=headers))])
    client = client_for(peer, "direct", tmp_path, opened, max_attempts=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(TransientModelError, match="larger than"):
            client.complete(REQ)
        gc.collect()
    peer.close()


def test_the_lean_client_is_used_only_where_no_proxy_or_tls_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.llm.base import ModelInfo

    info = ModelInfo(name="openai:m", context_window=8192, tokenizer="cl100k_base")

    def transports(base_url: str | None, transport: str = "auto") -> list[str]:
        backend = OpenAIBackend(info, model_id="m", api_key="k", base_url=base_url, transport=transport)  # type: ignore[arg-type]
        backend.close()
        return backend.transports

    assert transports("http://10.0.0.5:8000/v1,https://example.org/v1") == ["direct", "sdk"]
    assert transports(None) == ["sdk"]  # api.openai.com
    assert transports("http://user:secret@10.0.0.5:8000/v1") == ["sdk"]  # basic auth in the URL: the SDK's
    assert transports("http://10.0.0.5:8000/v1?api-version=1") == ["sdk"]
    assert transports("http://10.0.0.5:8000/v1", "sdk") == ["sdk"]
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert transports("http://10.0.0.5:8000/v1") == ["sdk"]  # the SDK routes through the proxy
    monkeypatch.setenv("NO_PROXY", "10.0.0.5")
    assert transports("http://10.0.0.5:8000/v1") == ["direct"]


def test_requests_are_the_same_bytes_of_json_through_either_carrier(
    tmp_path: Path, opened: list[Client]
) -> None:
    sent = []
    for transport in TRANSPORTS:
        peer = RawPeer([])
        client = client_for(peer, transport, tmp_path / transport, opened)
        client.complete(Request(prompt="Résumé: 水浒传, «quoted».", system="Be brief.", max_tokens=9, stop=("\n\n",)))
        sent.append(peer.bodies[0])
        peer.close()
    assert sent[0] == sent[1]
    assert sent[0]["messages"] == [{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "Résumé: 水浒传, «quoted»."}]


def test_an_unknown_transport_setting_is_refused_in_one_line(tmp_path: Path) -> None:
    from booksum_app.errors import ConfigError

    with pytest.raises(ConfigError, match=r"BOOKSUM_OPENAI_TRANSPORT='httpx': use auto \(the default\) or sdk"):
        get_model("openai:gpt-4o-mini", settings=LLMSettings(base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path),
                  env={"BOOKSUM_OPENAI_TRANSPORT": "httpx"})
