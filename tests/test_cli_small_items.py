"""Small things a new user meets: stderr's first line, route hints, inspect's options, the progress
total, ``import booksum``, ``data list --json``, the library's units."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from setuptools import find_packages

import booksum_app
from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.llm.registry import LLMSettings, choose_model
from booksum_app.runners.inspect import inspect_book
from booksum_app.runners.summarize import summarize_book
from booksum_app.strategies.base import ProgressEvent
from booksum_app.testing.fake_backend import FakeBackend

ROOT = Path(__file__).resolve().parents[1]
GPT4 = ModelInfo(name="openai:gpt-4", context_window=8192, tokenizer="cl100k_base")


def _book(tmp_path: Path) -> Path:
    path = tmp_path / "lisk.txt"
    path.write_text("".join(f"Chapter {c}\n\n" + "".join(f"On day {c}-{k} Mara baked bread in Lisk and Teo counted "
                                                         f"coin {k}. " for k in range(90)) + "\n\n"
                            for c in range(1, 4)), encoding="utf-8")
    return path


def test_stderr_has_no_blank_first_line(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"a.epub": "Mara bakes bread. Teo counts the coins."}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["score", str(path), "--no-judge"], catch_exceptions=False)
    assert result.exit_code == 0 and not result.stderr.startswith("\n") and "\n\n" not in result.stderr


@pytest.mark.parametrize(("name", "route"), [("llama3.1:8b", "ollama:llama3.1:8b"),
                                             ("Qwen/Qwen3-8B", "vllm:Qwen/Qwen3-8B"),
                                             ("mistral-small", "openai:mistral-small --base-url URL"),
                                             ("weights.gguf", "local:weights.gguf")])
def test_a_bare_model_name_gets_its_route(name: str, route: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="name its route with a provider prefix") as caught:
        choose_model(name, settings=LLMSettings(config_path=tmp_path / "none.toml"), env={})
    assert route in str(caught.value)


def test_inspect_takes_prompts_lang_and_set(tmp_path: Path) -> None:
    book = _book(tmp_path)
    base = ["inspect", str(book), "-m", "openai:gpt-4o", "--strategy", "hier", "--chunk-size", "256",
            "--max-summary-len", "120", "--json", "-"]
    plain = json.loads(CliRunner().invoke(cli, base, catch_exceptions=False).stdout)
    chapters = json.loads(CliRunner().invoke(cli, [*base, "--set", "chapters=true", "--prompts", "simple",
                                                   "--lang", "en"], catch_exceptions=False).stdout)
    assert chapters["plans"][0]["calls"] > plain["plans"][0]["calls"], "the chapter merges are planned"
    refused = CliRunner().invoke(cli, [*base, "--set", "nope=1"])
    assert refused.exit_code == 2 and "--set nope: not an option of hier" in refused.stderr


def test_the_progress_total_is_inspects_chunk_count(tmp_path: Path) -> None:
    book = _book(tmp_path)
    events: list[ProgressEvent] = []
    summarize_book(book, model=Client(FakeBackend(GPT4)), chunk_size=256, max_summary_tokens=120,
                   on_progress=events.append)
    report = inspect_book(book, model="openai:gpt-4", chunk_size=256, max_summary_tokens=120, strategies=["hier"],
                          llm_settings=LLMSettings(config_path=tmp_path / "none.toml", use_cache=False))
    totals = {e.total for e in events if e.stage == "chunks"}
    assert totals == {report.chunks.count}, (totals, report.chunks.count)
    assert max(e.done for e in events if e.stage == "chunks") == report.chunks.count


def test_import_booksum_is_the_public_api_and_ships_in_the_wheel() -> None:
    import booksum

    assert booksum.__all__ == booksum_app.__all__
    assert booksum.summarize is booksum_app.summarize and booksum.__version__ == booksum_app.__version__
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert "booksum" in find_packages(where=str(ROOT), include=include)
    with pytest.raises(AttributeError):
        booksum.not_a_name  # noqa: B018


def test_data_list_json() -> None:
    result = CliRunner().invoke(cli, ["data", "list", "--json"], catch_exceptions=False)
    data = json.loads(result.stdout)
    assert data["kind"] == "booksum.data-list"
    assert {d["name"] for d in data["datasets"]} >= {"booookscore-release", "sample-books"}
    assert all(isinstance(d["present"], bool) and d["path"] for d in data["datasets"])


def test_the_library_says_its_units() -> None:
    doc = booksum_app.score.__doc__ or ""
    assert "fractions in [0, 1]" in doc and "percentages (0-100)" in doc
