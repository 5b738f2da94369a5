"""booksum against a real OpenAI-compatible server: llama-cpp-python's, serving the bundled GGUF.

``booksum serve-local`` starts it (llama-cpp-python's ``server`` extra) with a 8,192-token
window; booksum reads that window back from the server's answer to an over-long prompt, so
the default ``--chunk-size 2048`` plans and runs. One URL and two, summarize and score, the
window read and given. Kept short: the 135M model on 2 cores, a tiny book, a few calls.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_llm_local import needs_local_model

from booksum_app.cli import cli
from booksum_app.llm.providers import server_info
from booksum_app.llm.providers.serve_local import server_installed
from booksum_app.llm.registry import LLMSettings
from booksum_app.runners.score import ScoreSettings, run_score

N_CTX = 8192
START_S = 120.0

pytestmark = [
    pytest.mark.local_model,
    needs_local_model,
    pytest.mark.skipif(not server_installed(), reason="llama-cpp-python's server: pip install 'booksum[server]'"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(cache_dir: Path, n_ctx: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    log = cache_dir / f"serve-{port}.log"
    with log.open("wb") as sink:  # a file, not a pipe nobody reads (a full pipe would stall the server)
        process = subprocess.Popen(
            [sys.executable, "-m", "booksum_app", "serve-local", "--port", str(port), "--n-ctx", str(n_ctx),
             "--threads", "1", "--cache-dir", str(cache_dir)],  # two servers on 2 cores: no spinning pair
            env=env, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve-local exited {process.returncode}: {log.read_text('utf-8')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("serve-local did not answer in time")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Two servers of the bundled model, each with a 8,192-token window."""
    cache = tmp_path_factory.mktemp("serve-cache")
    first, url_a = _start(cache, N_CTX)
    try:
        second, url_b = _start(cache, N_CTX)
        try:
            yield url_a, url_b
        finally:
            _stop(second)
    finally:
        _stop(first)
    server_info.forget()


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "mill.txt"
    book.write_text(
        "Chapter 1\n\nMara kept the mill by the river. Each morning she ground wheat for the village, "
        "and each evening she counted the sacks.\n\nChapter 2\n\nOne spring the river flooded the mill. "
        "Mara and her neighbours carried the grain to the hill, and the bread that summer was the best in years.\n",
        encoding="utf-8")
    return book


def _summarize(tmp_path: Path, base_url: str, *extra: str) -> tuple[str, dict[str, object]]:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "summarize", str(_book(tmp_path)), "-m", "openai:smollm2", "--base-url", base_url, "--strategy", "hier",
        "--max-summary-len", "96", "--length-policy", "truncate", "--cache-dir", str(tmp_path / "cache"),
        "-o", str(out), *extra],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.with_suffix(".json").read_text("utf-8"))


def test_one_server_reads_its_window_and_summarizes_at_the_default_chunk_size(
    servers: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url, _ = servers
    output, record = _summarize(tmp_path, url)  # --chunk-size 2048, the default: it fits 8,192
    assert "context 8,192 tokens (named in its answer to an over-long prompt)" in output
    assert record["config"]["chunk_size"] == 2048  # type: ignore[index]
    assert record["config"]["context_window"] == N_CTX  # type: ignore[index]
    assert record["extra"]["context_source"] == "server"  # type: ignore[index]
    servers_seen = record["extra"]["servers"]  # type: ignore[index]
    assert servers_seen["urls"] == [url] and str(servers_seen["identity"]).endswith(".gguf")
    assert str(record["summary"]).strip()


def test_two_servers_share_the_calls_and_the_window_can_be_given(
    servers: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    both = ",".join(servers)
    output, record = _summarize(tmp_path, both, "--context-window", "4096")
    assert "context 4,096 tokens from --context-window" in output
    assert record["config"]["context_window"] == 4096  # type: ignore[index]
    assert record["extra"]["context_source"] == "option"  # type: ignore[index]
    assert record["extra"]["servers"]["urls"] == list(servers)  # type: ignore[index]
    shown = CliRunner().invoke(cli, ["inspect", str(_book(tmp_path)), "-m", "openai:smollm2", "--base-url", both,
                                     "--json", "-"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["context_window"] == N_CTX, "the smallest window either server names"


def test_score_with_the_server_as_judge(servers: tuple[str, str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge on the real server: one sentence, one attempt (the 135M model's answers are rarely
    readable, and each retry re-reads the judge's long prompt)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summaries = tmp_path / "small.json"
    summaries.write_text(json.dumps({"mill.epub": "Mara kept the mill by the river."}), encoding="utf-8")
    settings = ScoreSettings(judge="openai:smollm2", max_attempts=1,
                             llm=LLMSettings(base_url=servers[1], cache_dir=tmp_path / "cache"))
    run = run_score([summaries], settings)
    assert run.judge_servers is not None and run.judge_servers["urls"] == [servers[1]]
    system = run.systems[0]
    assert system.totals.calls == 1, "the judge asked the real server about the sentence, once"
    assert system.booookscore is not None and system.booookscore.summaries[0].n_sentences == 1


def test_serve_local_loads_its_model_inside_the_plain_cpu_switch(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """``python -m llama_cpp.server`` on an AMX build dies on its first completion; serve-local loads
    the model (create_app) and serves it with llama.cpp's extra weight buffers off."""
    import llama_cpp.llama_cpp as low
    import llama_cpp.server.app as server_app
    import uvicorn

    from booksum_app.llm.providers import local_weights, serve_local

    monkeypatch.setattr(local_weights, "amx_compiled_in", lambda: True)
    seen: dict[str, bool] = {}

    def create_app(**kwargs: object) -> object:
        seen["at_load"] = low.llama_model_default_params().use_extra_bufts
        return object()

    def run(app: object, **kwargs: object) -> None:
        seen["while_serving"] = low.llama_model_default_params().use_extra_bufts

    monkeypatch.setattr(server_app, "create_app", create_app)
    monkeypatch.setattr(uvicorn, "run", run)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    serve_local.serve(serve_local.LocalServer(model_path=gguf))
    assert seen == {"at_load": False, "while_serving": False}
    assert low.llama_model_default_params().use_extra_bufts, "the library's defaults are left as they were"
