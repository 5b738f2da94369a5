"""Several base URLs for one model: spread by calls in flight, a failing replica skipped (issue 11 item 4)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from booksum_app.llm.base import Request
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_server import FakeServer


def _requests(n: int) -> list[Request]:
    return [Request(prompt=f"Summarize part {i} of the story.", max_tokens=20) for i in range(n)]


def test_calls_are_spread_over_every_replica(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(latency_s=0.05) as a, FakeServer(latency_s=0.05) as b:
        urls = f"{a.openai_base_url},{b.openai_base_url}"
        client = get_model("openai:gpt-4o-mini", settings=LLMSettings(base_url=urls, cache_dir=tmp_path,
                                                                      concurrency=8))
        answers = client.complete_many(_requests(40))
        client.close()
        counts = (a.call_count, b.call_count)
    assert len(answers) == 40 and sum(counts) == 40
    assert min(counts) >= 12, f"least-in-flight spreads the load: {counts}"


def test_a_dead_replica_is_skipped_and_every_call_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with FakeServer() as alive:
        client = get_model("openai:gpt-4o-mini", settings=LLMSettings(
            base_url=f"{dead},{alive.openai_base_url}", cache_dir=tmp_path, concurrency=4))
        client._sleep = lambda seconds: None  # type: ignore[attr-defined]  # retries without waiting
        answers = client.complete_many(_requests(30))
        client.close()
        assert alive.call_count == 30
    assert len(answers) == 30 and all(a.text for a in answers)


def test_calls_to_one_endpoint_spread_over_lanes_of_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the SDK, many calls in flight to one URL open more SDK clients (connection pools),
    each holding at most LANE_CALLS."""
    from booksum_app.llm.providers import openai as openai_backend

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("BOOKSUM_OPENAI_TRANSPORT", "sdk")
    monkeypatch.setattr(openai_backend._SdkSender, "LANE_CALLS", 4)
    busiest: list[int] = []
    real_take = openai_backend._SdkSender._take_lane

    def take_lane(sender: openai_backend._SdkSender) -> openai_backend._Lane:
        lane = real_take(sender)
        busiest.append(lane.in_flight)
        return lane

    monkeypatch.setattr(openai_backend._SdkSender, "_take_lane", take_lane)
    with FakeServer(latency_s=0.1) as server:
        client = get_model("openai:gpt-4o-mini", settings=LLMSettings(base_url=server.openai_base_url,
                                                                      cache_dir=tmp_path, concurrency=12))
        answers = client.complete_many(_requests(36))
        backend = client.backend
        assert isinstance(backend, openai_backend.OpenAIBackend)
        (endpoint,) = backend._endpoints
        sender = endpoint.sender
        assert isinstance(sender, openai_backend._SdkSender)
        lanes = list(sender.lanes)
        client.close()
        assert server.call_count == 36 and server.max_in_flight > 4
    assert len(answers) == 36 and all(a.text for a in answers)
    assert max(busiest) <= 4, "no lane holds more than LANE_CALLS calls"
    assert 2 <= len(lanes) <= 3, f"12 in flight need 3 lanes of 4, no more: {len(lanes)}"
    assert all(lane.in_flight == 0 for lane in lanes) and endpoint.in_flight == 0
