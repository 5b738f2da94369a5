"""The ollama:MODEL backend against a fake Ollama that truncates like the real one (issue 13 item 1)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.errors import ContextTooLong, ModelError, ModelUnavailable, TransientModelError
from booksum_app.llm.base import ModelInfo, Request
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.ollama import OllamaBackend, fit_num_ctx, normalize_host
from booksum_app.llm.registry import LLMSettings, choose_model, get_model
from booksum_app.testing.fake_ollama import FakeOllama

try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef,import-not-found,unused-ignore]

MODEL = "llama3.1:8b"
LONG_TEXT = " ".join(f"Sentence {i} tells how Mara bakes bread in Lisk." for i in range(900))


def _info(context: int = 8192) -> ModelInfo:
    return ModelInfo(name=f"ollama:{MODEL}", context_window=context, tokenizer="estimate")


def _backend(fake: FakeOllama, **kwargs: object) -> OllamaBackend:
    return OllamaBackend(_info(), model_id=MODEL, host=fake.url, timeout_s=5, **kwargs)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_fake_truncates_a_long_prompt_sent_without_num_ctx() -> None:
    """The control: what Ollama's OpenAI endpoint does to a long prompt, so the next test can fail."""
    with FakeOllama() as fake:
        reply = httpx.post(f"{fake.url}/api/chat", json={
            "model": MODEL, "stream": False, "messages": [{"role": "user", "content": LONG_TEXT}],
            "options": {"num_predict": 200}}, timeout=10).json()
    call = fake.requests[0]
    assert call.truncated and call.prompt_tokens > 2048
    assert reply["prompt_eval_count"] == call.kept_tokens <= 2048
    assert "Sentence 0 " not in reply["message"]["content"], "the start was cut, like Ollama does"


def test_the_backend_sizes_num_ctx_so_nothing_is_truncated() -> None:
    with FakeOllama() as fake:
        backend = _backend(fake)
        completion = backend.complete(Request(prompt=LONG_TEXT, max_tokens=300, temperature=0.2))
        backend.close()
    call = fake.requests[0]
    assert not call.truncated
    options = call.payload["options"]
    assert options["num_ctx"] >= call.prompt_tokens + 300
    assert options["num_ctx"] & (options["num_ctx"] - 1) == 0, "a power of two: fewer reloads"
    assert options["num_predict"] == 300 and options["temperature"] == 0.2
    assert call.payload["stream"] is False
    assert completion.usage.input_tokens == call.prompt_tokens
    assert 0 < completion.usage.output_tokens <= 300
    assert "Sentence 0 " in completion.text


def test_context_length_and_family_come_from_api_show() -> None:
    with FakeOllama(models={MODEL: 32768}, family="qwen2") as fake:
        backend = _backend(fake)
        backend.close()
    assert backend.info.context_window == 32768
    assert backend.family == "qwen2"


def test_num_ctx_is_capped_and_a_prompt_that_cannot_fit_is_refused_before_sending() -> None:
    assert fit_num_ctx(5000, 1000, 131072) == 8192
    assert fit_num_ctx(30000, 1000, 32768) == 32768
    with FakeOllama(models={MODEL: 4096}) as fake:
        backend = _backend(fake)
        with pytest.raises(ContextTooLong, match="4096-token context"):
            backend.complete(Request(prompt=LONG_TEXT, max_tokens=300))
        backend.close()
    assert fake.requests == []


def test_num_ctx_never_shrinks_so_ollama_does_not_reload_the_model() -> None:
    with FakeOllama() as fake:
        backend = _backend(fake)
        backend.complete(Request(prompt=LONG_TEXT, max_tokens=100))
        backend.complete(Request(prompt="Short text to summarize.", max_tokens=100))
        backend.close()
    first, second = (c.payload["options"]["num_ctx"] for c in fake.requests)
    assert second == first > 2048


def test_unknown_model_and_missing_server_are_one_clear_line() -> None:
    with FakeOllama() as fake, pytest.raises(ModelUnavailable, match="run `ollama pull mistral`"):
        OllamaBackend(_info(), model_id="mistral", host=fake.url)
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(ModelUnavailable, match="start it with `ollama serve`"):
        OllamaBackend(_info(), model_id=MODEL, host=url, timeout_s=2)


def test_a_server_that_is_not_ollama_is_named_as_such() -> None:
    with FakeOllama() as fake:
        backend = _backend(fake)
        response = httpx.Response(404, text="File Not Found", request=httpx.Request("POST", fake.url))
        error = backend._translate(response)
        backend.close()
    assert isinstance(error, ModelUnavailable) and "is it an Ollama server?" in str(error)
    assert "ollama pull" not in str(error)


@pytest.mark.parametrize("fault", ["notjson", "500", "drop"])
def test_a_misbehaving_peer_is_transient_and_retried(fault: str) -> None:
    with FakeOllama(script=[fault]) as fake:
        backend = _backend(fake)
        with pytest.raises(TransientModelError):
            backend.complete(Request(prompt="Mara bakes bread.", max_tokens=50))
        client = Client(backend, cache=None, max_attempts=3, backoff_initial_s=0.01)
        fake.add_faults(fault)  # one more fault, then a good reply
        completion = client.complete(Request(prompt="Mara bakes bread.", max_tokens=50))
        backend.close()
    assert completion.text and [c.fault for c in fake.requests] == [fault, fault, None]


def test_server_error_text_is_redacted_and_a_400_is_not_retried() -> None:
    with FakeOllama() as fake:
        backend = _backend(fake)
        response = httpx.Response(
            400, json={"error": "bad option; api_key=sk-abcdefghijklmnop"},
            request=httpx.Request("POST", fake.url))
        error = backend._translate(response)
        backend.close()
    assert isinstance(error, ModelError) and not isinstance(error, TransientModelError)
    assert "sk-abcdefghijklmnop" not in str(error)


def test_ollama_host_is_normalized_like_ollama_reads_it() -> None:
    assert normalize_host(None) == "http://127.0.0.1:11434"
    assert normalize_host("0.0.0.0") == "http://127.0.0.1:11434"
    assert normalize_host("gpu-box:8080") == "http://gpu-box:8080"
    assert normalize_host("https://ollama.example/") == "https://ollama.example:443"


def test_registry_resolves_ollama_models_with_colons_and_reads_ollama_host() -> None:
    spec = choose_model(f"ollama:{MODEL}", env={})
    assert (spec.provider, spec.model_id, spec.info.tokenizer) == ("ollama", MODEL, "estimate")
    assert not spec.known and spec.note and "/api/show" in spec.note
    with FakeOllama(models={MODEL: 16384}) as fake:
        client = get_model(f"ollama:{MODEL}", settings=LLMSettings(use_cache=False),
                           env={"OLLAMA_HOST": fake.url})
        assert client.info.context_window == 16384
        assert client.concurrency == 1
        client.backend.close()  # type: ignore[attr-defined]


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    paragraphs = [f"Mara bakes bread in Lisk on day {i}. The ovens glow and the town wakes."
                  for i in range(700)]
    book.write_text("Chapter 1\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    return book


def test_summarize_end_to_end_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOllama() as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", f"ollama:{MODEL}",
            "--strategy", "direct", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    calls = fake.requests
    assert calls and not any(c.truncated for c in calls)
    assert max(c.prompt_tokens for c in calls) > 2048, "the book would have been cut at 2048"
    record = json.loads((tmp_path / "out.json").read_text("utf-8"))
    assert f"ollama:{MODEL}" in json.dumps(record)
    assert (tmp_path / "out.md").read_text("utf-8").strip()


@pytest.mark.parametrize("case", ["unknown-model", "server-down"])
def test_cli_exits_4_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    with FakeOllama() as fake:
        host = fake.url if case == "unknown-model" else f"http://127.0.0.1:{_free_port()}"
        monkeypatch.setenv("OLLAMA_HOST", host)
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "ollama:mistral",
            "--strategy", "direct", "-o", str(tmp_path / "out")])
    assert result.exit_code == 4, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    hint = "ollama pull mistral" if case == "unknown-model" else "ollama serve"
    assert len(lines) == 1 and hint in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_a_config_entry_with_only_a_context_window_plans_for_the_smaller_window(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[models."ollama:{MODEL}"]\ncontext_window = 16384\n', encoding="utf-8")
    env = {"BOOKSUM_CONFIG": str(config)}
    spec = choose_model(f"ollama:{MODEL}", env=env)  # a KeyError on 'tokenizer' before
    assert (spec.info.context_window, spec.info.tokenizer, spec.known) == (16384, "estimate", True)
    with FakeOllama(models={MODEL: 131072}) as fake:
        client = get_model(f"ollama:{MODEL}", settings=LLMSettings(use_cache=False),
                           env={**env, "OLLAMA_HOST": fake.url})
        assert client.info.context_window == 16384, "the user's smaller window wins"
        client.backend.close()  # type: ignore[attr-defined]


def test_inspect_plans_with_the_context_the_ollama_server_reports(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    book = tmp_path / "b.txt"
    book.write_text("Chapter 1\n\n" + LONG_TEXT, encoding="utf-8")
    with FakeOllama(models={MODEL: 32768}) as fake:
        result = CliRunner().invoke(cli, ["inspect", str(book), "-m", f"ollama:{MODEL}", "--base-url", fake.url,
                                          "--chunk-size", "16000", "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["context_window"] == 32768, "the server's context, not the 8192 default"
        assert not fake.requests, "inspect asks the server about the model, never for a completion"
    with FakeOllama(models={MODEL: 32768}) as fake:
        pass
    gone = CliRunner().invoke(cli, ["inspect", str(book), "-m", f"ollama:{MODEL}", "--base-url", fake.url])
    assert gone.exit_code != 0 and gone.stderr.count("\n") == 1 and "Traceback" not in gone.stderr
