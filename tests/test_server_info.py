"""Servers that describe themselves: vLLM's max_model_len, llama-server's /props window and slots.

The describing fake server (``booksum_app.testing.fake_describing_server``) answers
``GET /v1/models`` as ``vllm serve`` does and ``GET /props`` as ``llama-server`` does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import book_path

from booksum_app.cli import cli
from booksum_app.llm.providers import server_info
from booksum_app.llm.registry import LLMSettings, choose_model, get_model
from booksum_app.strategies.record import read_record
from booksum_app.testing.fake_describing_server import DescribingServer
from booksum_app.testing.fake_server import FakeServer


def settings(tmp_path: Path, url: str, **kwargs: Any) -> LLMSettings:
    return LLMSettings(base_url=url, cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml", **kwargs)


def test_inspect_plans_for_the_window_vllm_serve_reports(tmp_path: Path) -> None:
    book = str(book_path("time-machine"))
    with DescribingServer(max_model_len={"Qwen/Qwen2.5-7B-Instruct": 32_768, "other": 4096}) as server:
        args = ["inspect", book, "-m", "openai:Qwen/Qwen2.5-7B-Instruct", "--base-url", server.openai_base_url]
        shown = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
        assert shown.exit_code == 0, shown.output
        report = json.loads(shown.stdout)
        assert report["context_window"] == 32_768
        assert report["model_notice"] == (
            "openai:Qwen/Qwen2.5-7B-Instruct: context 32,768 tokens, reported by the server"
        )
        table = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert "context 32,768 tokens, reported by the server" in table.stderr
        assert "context 32,768" in table.stdout
    with FakeServer() as silent:  # says nothing: today's default for an unknown model
        plain = CliRunner().invoke(cli, ["inspect", book, "-m", "openai:Qwen/Qwen2.5-7B-Instruct",
                                         "--base-url", silent.openai_base_url, "--json"], catch_exceptions=False)
        assert json.loads(plain.stdout)["context_window"] == 8192


def test_llama_server_props_give_the_slot_window_and_the_limit(tmp_path: Path) -> None:
    with DescribingServer(props_n_ctx=4096, slots=4) as server:
        spec = choose_model("openai:local-gguf", settings=settings(tmp_path, server.openai_base_url), env={})
        assert spec.info.context_window == 4096 and spec.server_slots == 4
        assert spec.notice == "openai:local-gguf: context 4,096 tokens and 4 parallel slots, reported by the server"
        client = get_model("openai:local-gguf", settings=settings(tmp_path, server.openai_base_url), env={})
        assert client.limit == 4 and client.concurrency == 4
        client.close()
        mine = get_model("openai:local-gguf", settings=settings(tmp_path, server.openai_base_url, concurrency=16),
                         env={})
        assert mine.limit == 16  # --concurrency is the user's to set
        mine.close()


def test_a_smaller_window_in_the_config_file_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[models."openai:big"]\ncontext_window = 16384\n', encoding="utf-8")
    with DescribingServer(max_model_len={"big": 131_072}) as server:
        spec = choose_model("openai:big", settings=LLMSettings(base_url=server.openai_base_url, config_path=config),
                            env={})
    assert spec.info.context_window == 16_384
    assert spec.server_note == ("context 16,384 tokens from the config file (131,072 on the server), "
                                "reported by the server")


def test_replicas_give_their_smallest_window_and_their_slots_together(tmp_path: Path) -> None:
    with DescribingServer(props_n_ctx=8192, slots=4) as a, DescribingServer(props_n_ctx=4096, slots=2) as b:
        report = server_info.describe(f"{a.openai_base_url},{b.openai_base_url}", "m")
        # both load the same GGUF: one identity; a replica that says nothing leaves the weights unknown
        assert report == server_info.ServerReport(context_window=4096, slots=6, identity="model.gguf")
        with FakeServer() as silent:  # one replica that says nothing: its slots are unknown
            mixed = server_info.describe(f"{a.openai_base_url},{silent.openai_base_url}", "m")
            assert mixed == server_info.ServerReport(context_window=8192, slots=None)


class _Junk(BaseHTTPRequestHandler):
    """Answers every GET with something that is not a description."""

    def do_GET(self) -> None:
        bodies = {"/v1/models": b'{"data": [{"id": "m", "max_model_len": "lots"}]}', "/props": b"<html>no</html>"}
        body = bodies.get(self.path, b"[1, 2")
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def junk_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Junk)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield url
    server_info.forget(url)
    httpd.shutdown()
    httpd.server_close()


def test_a_server_that_cannot_describe_itself_leaves_the_defaults(tmp_path: Path, junk_url: str) -> None:
    assert server_info.describe(junk_url, "m") is None
    spec = choose_model("openai:m", settings=settings(tmp_path, junk_url), env={})
    assert spec.info.context_window == 8192 and spec.server_slots is None
    # said, as docs/models.md promises
    assert spec.notice is not None and "assuming an 8192-token context" in spec.notice
    # nothing listening there: the same, at once
    with FakeServer() as gone:
        url = gone.openai_base_url
    server_info.forget(url)
    assert server_info.describe(url, "m") is None
    assert server_info.describe("file:///etc", "m") is None


def test_a_queueing_server_at_default_options_wastes_no_generation(tmp_path: Path) -> None:
    """llama-server -np 4 that answers in 0.4 s, a 2 s timeout: the limit starts (and stays) at 4.

    Started at 128, every leaf past the first few rounds waited past the timeout in the server's
    queue and was generated for nobody, then sent again.
    """
    book = str(book_path("time-machine"))
    with DescribingServer(props_n_ctx=8192, slots=4, latency_s=0.4) as server:
        args = ["summarize", book, "--model", "openai:local-gguf", "--base-url", server.openai_base_url,
                "--strategy", "hier", "--no-clean", "--timeout", "2", "--cache-dir", str(tmp_path / "c"),
                "-o", str(tmp_path / "tm")]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        record = read_record(tmp_path / "tm.json")
        assert server.wasted_count == 0
        assert server.max_in_flight <= 4
        assert server.call_count == record.totals.calls  # no request was sent twice


def test_llama_cpp_python_is_planned_for_its_default_context(tmp_path: Path) -> None:
    """llama-cpp-python's server lists {"owned_by": "me"} cards and no context (app.py get_models);
    its --n_ctx defaults to 2,048, so a plan for 8,192 would overflow it."""
    alias = "/models/SmolLM2-135M-Instruct-Q4_1.gguf"
    with DescribingServer(llama_cpp_python=alias) as server:
        spec = choose_model("openai:smollm2", settings=settings(tmp_path, server.openai_base_url), env={})
        assert spec.info.context_window == 2048
        assert spec.notice is not None and "llama-cpp-python" in spec.notice and "--n_ctx" in spec.notice
        config = tmp_path / "config.toml"
        config.write_text('[models."openai:smollm2"]\ncontext_window = 8192\n', encoding="utf-8")
        mine = choose_model("openai:smollm2", settings=LLMSettings(base_url=server.openai_base_url,
                                                                   config_path=config), env={})
        assert mine.info.context_window == 8192  # started with --n_ctx 8192, said in the config file
        shown = CliRunner().invoke(cli, ["inspect", str(book_path("time-machine")), "-m", "openai:smollm2",
                                         "--base-url", server.openai_base_url, "--chunk-size", "1024",
                                         "--max-summary-len", "300", "--json"], catch_exceptions=False)
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout)["context_window"] == 2048
    with DescribingServer(max_model_len={"smollm2": 8192}) as vllm_like:  # vLLM's cards are not taken for it
        spec = choose_model("openai:smollm2", settings=settings(tmp_path, vllm_like.openai_base_url), env={})
        assert spec.info.context_window == 8192 and "llama-cpp-python" not in (spec.notice or "")


@pytest.mark.parametrize("n_ctx", [2048, 8192, 32768])
def test_llama_cpp_python_names_its_window_when_refusing_an_overlong_prompt(tmp_path: Path, n_ctx: int) -> None:
    """Its only word on --n_ctx is the 400 it answers a prompt longer than the window with
    (llama_cpp/server/errors.py): one probe longer than any window, refused before evaluation."""
    with DescribingServer(llama_cpp_python="/models/smollm2.gguf", n_ctx=n_ctx) as server:
        spec = choose_model("openai:smollm2", settings=settings(tmp_path, server.openai_base_url), env={})
        assert spec.info.context_window == n_ctx and spec.context_source == "server"
        assert spec.notice is not None and f"context {n_ctx:,} tokens (named in its answer" in spec.notice
        assert spec.server_identity == "/models/smollm2.gguf"
        assert server.completion_probes == 1 and server.call_count == 0, "one probe, no chat call"
        given = choose_model("openai:smollm2", env={}, settings=LLMSettings(
            base_url=server.openai_base_url, context_window=4096, config_path=tmp_path / "none.toml"))
        assert given.info.context_window == 4096 and given.context_source == "option"
        assert given.notice is not None and "from --context-window" in given.notice


def test_a_server_started_with_a_larger_window_gets_the_default_chunk_size(tmp_path: Path) -> None:
    book = str(book_path("time-machine"))
    with DescribingServer(llama_cpp_python="/models/smollm2.gguf", n_ctx=8192) as server:
        planned = CliRunner().invoke(cli, ["summarize", book, "-m", "openai:smollm2", "--base-url",
                                           server.openai_base_url, "--plan-only", "--cache-dir",
                                           str(tmp_path / "c")], catch_exceptions=False)
        assert planned.exit_code == 0, planned.output
    with DescribingServer(llama_cpp_python="/models/smollm2.gguf") as silent:  # no window named: the default
        refused = CliRunner().invoke(cli, ["summarize", book, "-m", "openai:smollm2", "--base-url",
                                           silent.openai_base_url, "--plan-only", "--cache-dir", str(tmp_path / "c")])
        assert refused.exit_code != 0 and "--context-window" in refused.output
        given = CliRunner().invoke(cli, ["summarize", book, "-m", "openai:smollm2", "--base-url",
                                         silent.openai_base_url, "--plan-only", "--context-window", "8192",
                                         "--cache-dir", str(tmp_path / "c")], catch_exceptions=False)
        assert given.exit_code == 0, given.output
