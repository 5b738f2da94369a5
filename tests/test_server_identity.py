"""A server run is keyed by the model's deployment, not its URL, and every request carries a seed.

The same ``summarize`` through ``127.0.0.1``, then ``localhost``, then another port (another
fake server: a replica) and then both URLs at once pays for nothing after the first run;
``--deployment NAME`` (two servers, different weights, one name) pays again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from book_fixtures import MILL, chapters_txt
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.llm.base import Request
from booksum_app.llm.request_key import SEED_BITS, request_seed
from booksum_app.testing.fake_ollama import FakeOllama
from booksum_app.testing.fake_server import FakeServer


def _book(tmp_path: Path) -> Path:
    return chapters_txt(tmp_path / "book.txt", MILL, chapters=3, sentences=80)


def _summarize(tmp_path: Path, base_url: str, *extra: str, model: str = "openai:llama-3.1-8b") -> str:
    result = CliRunner().invoke(cli, [
        "summarize", str(_book(tmp_path)), "--model", model, "--base-url", base_url, "--strategy", "hier",
        "--chunk-size", "512", "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out"), *extra],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return (tmp_path / "out.md").read_text("utf-8")


def test_another_spelling_port_or_replica_of_the_server_replays_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as first, FakeServer() as replica:
        port = first.url.rsplit(":", 1)[1]
        summary = _summarize(tmp_path, f"http://127.0.0.1:{port}/v1")
        paid = first.call_count
        assert paid > 3
        for url in (f"http://localhost:{port}/v1", replica.openai_base_url,
                    f"{replica.openai_base_url},http://localhost:{port}/v1/"):
            assert _summarize(tmp_path, url) == summary
        assert first.call_count == paid and replica.call_count == 0, "nothing is paid again"
        _summarize(tmp_path, replica.openai_base_url, "--deployment", "q4-quant")
        assert replica.call_count == paid, "other weights under the same name are asked again"


def test_ollama_on_another_host_spelling_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOllama() as fake:
        port = fake.url.rsplit(":", 1)[1]
        counts = []
        for host in (f"http://127.0.0.1:{port}", f"localhost:{port}"):
            monkeypatch.setenv("OLLAMA_HOST", host)
            result = CliRunner().invoke(cli, [
                "summarize", str(_book(tmp_path)), "--model", "ollama:llama3.1:8b", "--strategy", "direct",
                "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out")], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            counts.append(len(fake.requests))
        assert counts[0] > 0 and counts[1] == counts[0], counts
        assert all(call.payload["options"]["seed"] >= 0 for call in fake.requests)


def test_every_request_to_a_server_carries_the_requests_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        _summarize(tmp_path, server.openai_base_url)
        sent = server.requests
    assert sent and all(isinstance(r.payload.get("seed"), int) for r in sent)
    seeds = [r.payload["seed"] for r in sent]
    assert len(set(seeds)) == len(seeds), "each request its own seed"
    assert all(0 <= s < 2**SEED_BITS for s in seeds)
    # recorded with the request in the call log
    logged = CliRunner().invoke(cli, ["logs", "--cache-dir", str(tmp_path / "cache"), "--json", "-n", "0", "--prompts"])
    assert logged.exit_code == 0, logged.output
    recorded = {row["prompt"]["seed"] for row in json.loads(logged.output)}
    assert recorded == set(seeds)


def test_a_seed_is_stable_and_a_resample_changes_it() -> None:
    request = Request(prompt="Summarize: the miller ground grain.", max_tokens=100, shared_prefix="Book: ",
                      system="Be brief.")
    assert request_seed(request) == request_seed(Request(prompt="Summarize: the miller ground grain.",
                                                         max_tokens=100, shared_prefix="Book: ", system="Be brief."))
    others = [Request(prompt=request.prompt, max_tokens=100, shared_prefix="Book: ", system="Be brief.",
                      sample_index=1),
              Request(prompt=request.prompt, max_tokens=101, shared_prefix="Book: ", system="Be brief."),
              Request(prompt="Book: " + request.prompt, max_tokens=100, system="Be brief."),  # same text, split apart
              Request(prompt=request.prompt, max_tokens=100, shared_prefix="Book: ")]
    assert len({request_seed(r) for r in [request, *others]}) == 5
