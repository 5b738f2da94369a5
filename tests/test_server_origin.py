"""Answers are named by the server that gave them.

A server's answers are keyed by deployment (so ``localhost`` replays ``127.0.0.1``), then by
the weights the server reports (vLLM's ``root``, llama-server's ``model_path``, Ollama's
digest): two servers of different weights never share. Each answer is stored with its server's
URL; a run that replays answers another server wrote says so in one line, and the run record
names the server(s) it called, their identity and the deployment.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from book_fixtures import MILL, chapters_txt
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.llm.base import Completion
from booksum_app.llm.cache import CallCache
from booksum_app.llm.cache_schema import MIGRATIONS
from booksum_app.llm.origin import Origins, public_url, replay_note, same_server
from booksum_app.testing.fake_describing_server import DescribingServer
from booksum_app.testing.fake_ollama import FakeOllama
from booksum_app.testing.fake_server import FakeServer

MODEL = "llama-3.1-8b"


def _book(tmp_path: Path) -> Path:
    return chapters_txt(tmp_path / "book.txt", MILL, chapters=2, sentences=60)


def _summarize(tmp_path: Path, *extra: str, out: str = "out") -> tuple[str, dict[str, Any]]:
    """Summarize the book with ``extra`` options; the terminal's text and the run record."""
    result = CliRunner().invoke(cli, [
        "summarize", str(_book(tmp_path)), "--model", f"openai:{MODEL}", "--strategy", "hier",
        "--chunk-size", "512", "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / out), *extra],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output, json.loads((tmp_path / f"{out}.json").read_text("utf-8"))


def test_another_servers_answers_are_named_on_the_terminal_and_in_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as a, FakeServer() as b:
        first, record = _summarize(tmp_path, "--base-url", a.openai_base_url)
        paid = a.call_count
        assert "another server" not in first
        assert record["extra"]["servers"]["urls"] == [a.openai_base_url]
        assert record["extra"]["servers"]["deployment"] is None
        # the same server under another spelling: the same answers, nothing said
        port = a.url.rsplit(":", 1)[1]
        again, _ = _summarize(tmp_path, "--base-url", f"http://localhost:{port}/v1/", out="again")
        assert "another server" not in again and a.call_count == paid
        # another server under the same model name: replayed (keyed by deployment), and said
        other, record = _summarize(tmp_path, "--base-url", b.openai_base_url, out="other")
        assert b.call_count == 0
        line = next(line for line in other.splitlines() if "another server" in line)
        assert f"{paid} answers" in line and a.openai_base_url in line and "--deployment" in line
        servers = record["extra"]["servers"]
        assert servers["urls"] == [b.openai_base_url]
        assert servers["replayed_from_other_servers"] == {a.openai_base_url: paid}
        # a replica added beside the first server: it shares a URL with the answers' server
        both, _ = _summarize(tmp_path, "--base-url", f"{b.openai_base_url},{a.openai_base_url}", out="both")
        assert "another server" not in both
        # --deployment keeps them apart: asked again, and the record names the deployment
        _, record = _summarize(tmp_path, "--base-url", b.openai_base_url, "--deployment", "q4", out="q4")
        assert b.call_count == paid and record["extra"]["servers"]["deployment"] == "q4"


@pytest.mark.parametrize("report", ["root", "model_path"])
def test_servers_reporting_other_weights_never_share_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")

    def server(weights: str) -> DescribingServer:
        if report == "root":
            return DescribingServer(max_model_len={MODEL: 8192}, root=weights)
        return DescribingServer(props_n_ctx=8192, model_path=weights)

    with server("/models/llama-8b-fp16") as a, server("/models/llama-8b-q4") as b, \
            server("/models/llama-8b-fp16") as c:
        _, record = _summarize(tmp_path, "--base-url", a.openai_base_url)
        paid = a.call_count
        assert record["extra"]["servers"]["identity"] == "/models/llama-8b-fp16"
        output, record = _summarize(tmp_path, "--base-url", b.openai_base_url, out="b")
        assert b.call_count == paid, "other weights under the same name are asked again"
        assert "another server" not in output and record["extra"]["servers"]["identity"] == "/models/llama-8b-q4"
        # the same weights on another server: replayed, vouched for by the identity, nothing said
        output, _ = _summarize(tmp_path, "--base-url", c.openai_base_url, out="c")
        assert c.call_count == 0 and "another server" not in output


def test_two_ollama_servers_with_different_digests_never_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(fake: FakeOllama, out: str) -> tuple[str, dict[str, Any]]:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "ollama:llama3.1:8b", "--strategy", "direct",
            "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / out)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output, json.loads((tmp_path / f"{out}.json").read_text("utf-8"))

    with FakeOllama(digests={"llama3.1:8b": "sha256:aaa"}) as a, FakeOllama(digests={"llama3.1:8b": "sha256:bbb"}) \
            as b, FakeOllama(digests={"llama3.1:8b": "sha256:aaa"}) as c, FakeOllama() as plain:
        _, record = run(a, "a")
        assert record["extra"]["servers"]["identity"] == "sha256:aaa"
        paid = len(a.requests)
        run(b, "b")
        assert len(b.requests) == paid
        run(c, "c")
        assert len(c.requests) == 0, "the same digest on another server replays"
        output, _ = run(plain, "plain")  # no digest listed: keyed by name alone, so asked again
        assert len(plain.requests) == paid and "another server" not in output


def _cache_before_servers(directory: Path) -> None:
    """A cache as booksum left it before answers kept their server: one answer."""
    directory.mkdir(parents=True)
    db = sqlite3.connect(directory / "calls.sqlite3", isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL)")
    for m in MIGRATIONS[:5]:
        m(db)
        db.execute("INSERT INTO _migrations VALUES (?, ?)", (m.__name__.lstrip("_"), time.time()))
    db.execute("INSERT INTO calls (key, text, finish_reason, input_tokens, output_tokens, cached_input_tokens, "
               "model, created, latency_s) VALUES ('k', 'An old answer.', 'stop', 10, 5, 0, 'm', ?, 1.0)",
               (time.time(),))
    db.close()


def test_an_old_cache_migrates_and_its_answers_replay_as_unrecorded(tmp_path: Path) -> None:
    assert MIGRATIONS[5].__name__ == "_m006_add_server"
    _cache_before_servers(tmp_path / "cache")
    cache = CallCache(tmp_path / "cache")
    old = cache.get("k")
    assert old is not None and old.text == "An old answer." and old.server is None
    origins = Origins("http://127.0.0.1:8000/v1", None, None)
    origins.replayed(old)
    record = origins.record()
    assert record is not None and record["replayed_without_server"] == 1 and origins.notes() == []
    from booksum_app.llm.cache import CallMeta

    cache.put("new", Completion("A new answer.", "stop"), meta=CallMeta(server_url="http://h:1/v1",
                                                                         server_identity="/m"))
    new = cache.get("new")
    assert new is not None and new.server == "http://h:1/v1"
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / "calls.sqlite3")
    assert db.execute("SELECT server_identity FROM calls WHERE key = 'new'").fetchone() == ("/m",)
    db.close()


def test_each_answer_is_stored_with_the_replica_that_wrote_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.llm.base import Request
    from booksum_app.llm.registry import LLMSettings, get_model

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer(latency_s=0.05) as a, FakeServer(latency_s=0.05) as b:
        client = get_model(f"openai:{MODEL}", settings=LLMSettings(
            base_url=f"{a.openai_base_url},{b.openai_base_url}", cache_dir=tmp_path / "cache", concurrency=8))
        client.complete_many([Request(prompt=f"Summarize part {i} of the story.", max_tokens=20) for i in range(24)])
        client.close()
        counts = {public_url(a.openai_base_url): a.call_count, public_url(b.openai_base_url): b.call_count}
    db = sqlite3.connect(tmp_path / "cache" / "calls.sqlite3")
    stored = [url for (url,) in db.execute("SELECT server_url FROM calls")]
    db.close()
    assert min(counts.values()) > 0, "both replicas answered"
    assert {url: stored.count(url) for url in counts} == counts and len(stored) == 24, "one URL each, not the list"


_HOSTS = st.sampled_from(["127.0.0.1", "localhost", "gpu-01.lan", "10.0.0.7", "[::1]"])
_SECRETS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=6, max_size=20)


@given(host=_HOSTS, port=st.integers(1, 65535), user=_SECRETS, password=_SECRETS,
       query=st.booleans(), slash=st.booleans())
def test_a_stored_url_never_carries_a_secret(host: str, port: int, user: str, password: str, query: bool,
                                             slash: bool) -> None:
    url = f"http://{user}:{password}@{host}:{port}/v1{'/' if slash else ''}{f'?key={password}' if query else ''}"
    shown = public_url(url)
    assert password not in shown and user not in shown
    assert shown.endswith(f":{port}/v1")
    origins = Origins(url, None, None)
    stamped = origins.stamp()[0]
    assert stamped is not None and password not in stamped
    assert same_server(stamped, (public_url(url.replace(host, "localhost" if host != "gpu-01.lan" else host)),)) \
        == (host != "10.0.0.7")


@given(stored=st.lists(st.integers(8000, 8010), min_size=1, max_size=3),
       current=st.lists(st.integers(8000, 8010), min_size=1, max_size=3))
def test_replay_is_from_another_server_exactly_when_no_url_is_shared(stored: list[int], current: list[int]) -> None:
    origins = Origins(",".join(f"http://localhost:{p}/v1" for p in current), None, None)
    answer = Completion("x", "stop", cache_hit=True, server=",".join(f"http://127.0.0.1:{p}/v1" for p in stored))
    origins.replayed(answer)
    record = origins.record()
    assert record is not None
    shared = bool(set(stored) & set(current))
    assert bool(record["replayed_from_other_servers"]) == (not shared)
    assert (replay_note(record) is None) == shared


def test_a_vouched_replay_is_recorded_not_said() -> None:
    for origins in (Origins("http://b:1/v1", "/models/x", None), Origins("http://b:1/v1", None, "q4")):
        origins.replayed(Completion("x", "stop", cache_hit=True, server="http://a:1/v1"))
        record = origins.record()
        assert record is not None and record["replayed_from_same_weights"] == {"http://a:1/v1": 1}
        assert origins.notes() == []


def test_a_judge_replaying_another_servers_answers_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "small.json"
    summaries.write_text(json.dumps({"a.epub": "Mara inherits a bakery. Her cousin wants to sell it. It stays."}),
                         encoding="utf-8")

    def score(server: FakeServer, out: str) -> tuple[str, dict[str, Any]]:
        result = CliRunner().invoke(cli, [
            "score", str(summaries), "--judge", f"openai:{MODEL}", "--base-url", server.openai_base_url,
            "--cache-dir", str(tmp_path / "cache"), "--json", str(tmp_path / out)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output, json.loads((tmp_path / out).read_text("utf-8"))

    with FakeServer() as a, FakeServer() as b:
        output, data = score(a, "a.json")
        assert "another server" not in output and data["judge_servers"]["urls"] == [a.openai_base_url]
        output, data = score(b, "b.json")
        assert b.call_count == 0 and a.call_count > 0
        assert "judge: " in output and a.openai_base_url in output and "--deployment" in output
        assert data["judge_servers"]["replayed_from_other_servers"] == {a.openai_base_url: a.call_count}
