"""A missing API key is a configuration error (exit 2), found before any model loads, on every path.

docs/guarantees.md's table and ``booksum_app/errors.py``'s tree say so; a key the server
rejects (401) is an ``AuthError`` (exit 4), found by a call. The embedded model not installed
is a configuration error too (exit 2, with the install line), found at start-up; the tests at
the end run booksum with llama-cpp-python hidden, so they hold with and without the ``local``
extra.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import booksum_app
from booksum_app.cli import cli
from booksum_app.errors import AuthError, ConfigError, MissingAPIKey, ModelError
from booksum_app.llm.providers import catalog
from booksum_app.plugin import BackendBase, Completion, Request
from booksum_app.testing.fake_server import FakeServer

OPENAI = "openai:gpt-4o-mini"
ANTHROPIC = "anthropic:claude-3-5-haiku"


class KeyedBackend(BackendBase):
    """A plugin backend that needs its own key, as a hosted provider's plugin would."""

    @classmethod
    def from_spec(cls, spec: Any, settings: Any, env: Any) -> BackendBase:
        if not env.get("KEYED_API_KEY"):
            raise MissingAPIKey("No Keyed API key: set KEYED_API_KEY")
        return cls(spec.info)

    def complete(self, request: Request) -> Completion:
        return Completion("Never called.", "stop")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "plugin" / "booksum_keyed-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: booksum-keyed\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[booksum.backends]\nkeyed = booksum_keyed_plugin:KeyedBackend\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "plugin"))
    monkeypatch.setitem(sys.modules, "booksum_keyed_plugin", sys.modules[__name__])
    monkeypatch.setattr(catalog, "BACKENDS", catalog.BackendRegistry())
    importlib.invalidate_caches()


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    return book


def _summaries(tmp_path: Path) -> Path:
    path = tmp_path / "sums.json"
    path.write_text(json.dumps({"lisk.txt": "Mara bakes bread. She sells it in Lisk."}), encoding="utf-8")
    return path


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    book, sums, out = str(_book(tmp_path)), str(_summaries(tmp_path)), str(tmp_path / "out")
    return {
        "summarize openai": ["summarize", book, "-m", OPENAI, "-o", out, "--yes"],
        "summarize anthropic": ["summarize", book, "-m", ANTHROPIC, "-o", out, "--yes"],
        "summarize plugin": ["summarize", book, "-m", "keyed:tiny", "-o", out, "--yes"],
        "score openai judge": ["score", sums, "--judge", OPENAI, "--yes"],
        "score anthropic judge": ["score", sums, "--judge", ANTHROPIC, "--yes"],
        "score plugin judge": ["score", sums, "--judge", "keyed:tiny", "--yes"],
        "compare openai": ["compare", book, "--models", OPENAI, "--no-judge", "--out", out, "--yes"],
        "compare anthropic": ["compare", book, "--models", ANTHROPIC, "--no-judge", "--out", out, "--yes"],
        "compare judge": ["compare", book, "--models", "local", "--judge", ANTHROPIC, "--out", out, "--yes"],
        "compare plugin": ["compare", book, "--models", "keyed:tiny", "--no-judge", "--out", out, "--yes"],
    }


@pytest.mark.usefixtures("plugin")
@pytest.mark.parametrize("path", [
    "summarize openai", "summarize anthropic", "summarize plugin", "score openai judge", "score anthropic judge",
    "score plugin judge", "compare openai", "compare anthropic", "compare judge", "compare plugin",
])
def test_a_missing_key_is_one_line_and_exit_2_on_every_path(path: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, _commands(tmp_path)[path])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "Traceback" not in result.output and len(errors) == 1, result.stderr
    assert "API key" in errors[0] and "_API_KEY" in errors[0]
    assert not (tmp_path / "out.json").exists()  # nothing written: no call was made


@pytest.mark.usefixtures("plugin")
@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC, "keyed:tiny"])
def test_the_library_raises_the_configuration_error(model: str, tmp_path: Path) -> None:
    with pytest.raises(MissingAPIKey) as summarizing:
        booksum_app.summarize(_book(tmp_path), strategy="direct", model=model)
    with pytest.raises(MissingAPIKey):
        booksum_app.score({"lisk.txt": "Mara bakes bread."}, judge=model)
    error = summarizing.value
    assert isinstance(error, ConfigError) and not isinstance(error, ModelError) and error.exit_code == 2


def test_a_key_the_server_rejects_is_an_auth_error_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with FakeServer(fault_rate=1.0, fault_kinds=("401",)) as server:
        result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url",
                                          server.openai_base_url, "-o", str(tmp_path / "out"), "--yes"])
    assert result.exit_code == AuthError.exit_code == 4, result.output
    assert "rejected" in result.stderr


@pytest.mark.parametrize("command", ["summarize", "score", "compare"])
def test_every_commands_help_puts_a_missing_key_under_exit_2(command: str) -> None:
    text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
    assert "2 bad option, config (no API key set, a backend not installed)" in text
    assert "4 model or server failed (a key rejected" in text


# what an install without the ``local`` extra looks like to booksum: no llama_cpp to find or import
HIDE_LLAMA_CPP = """
import importlib.util, sys
_find_spec = importlib.util.find_spec
def find_spec(name, package=None):
    if name == "llama_cpp" or name.startswith("llama_cpp."):
        return None
    return _find_spec(name, package)
importlib.util.find_spec = find_spec
sys.modules["llama_cpp"] = None  # import llama_cpp raises ImportError
"""


def _booksum_without_llama_cpp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(HIDE_LLAMA_CPP, encoding="utf-8")
    root = Path(booksum_app.__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=os.pathsep.join([str(shim), str(root)]), BOOKSUM_CACHE_DIR=str(tmp_path / "cache"),
               BOOKSUM_CONFIG=str(tmp_path / "none.toml"))
    return subprocess.run([sys.executable, "-m", "booksum_app", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120, check=False)


def test_without_llama_cpp_the_missing_judge_key_is_still_the_error(tmp_path: Path) -> None:
    """compare --models local --judge anthropic:..., no key, no llama-cpp-python: the key, exit 2."""
    done = _booksum_without_llama_cpp(tmp_path, *_commands(tmp_path)["compare judge"])
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "ANTHROPIC_API_KEY" in errors[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [
    ["summarize", "{book}", "-m", "local", "-o", "{out}", "--yes"],
    ["compare", "{book}", "--models", "local", "--no-judge", "--out", "{out}", "--yes"],
    ["score", "{sums}", "--judge", "local", "--yes"],
])
def test_the_embedded_model_not_installed_is_exit_2_with_the_install_line(tmp_path: Path, args: list[str]) -> None:
    paths = {"book": str(_book(tmp_path)), "out": str(tmp_path / "out"), "sums": str(_summaries(tmp_path))}
    done = _booksum_without_llama_cpp(tmp_path, *(a.format(**paths) for a in args))
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pip install 'booksum[local]'" in errors[0], done.stderr
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out").exists()


def test_the_check_never_imports_llama_cpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from booksum_app.errors import NotInstalled
    from booksum_app.llm.registry import LLMSettings, choose_model
    from booksum_app.llm.startup import check_ready

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    settings = LLMSettings(config_path=tmp_path / "none.toml")
    with pytest.raises(NotInstalled, match=r"llama-cpp-python: pip install 'booksum\[local\]'") as caught:
        check_ready([choose_model("local", settings=settings, env={})], settings=settings, env={})
    assert caught.value.exit_code == 2 and isinstance(caught.value, ConfigError)
    anthropic = choose_model(ANTHROPIC, settings=settings, env={})
    with pytest.raises(MissingAPIKey):  # every key before any install: the order does not depend on the list
        check_ready([choose_model("local", settings=settings, env={}), anthropic], settings=settings, env={})
