"""Backends as plugins: the ``booksum.backends`` entry point group, as strategies are found."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from booksum_app.errors import ConfigError
from booksum_app.llm import backends
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.registry import LLMSettings, choose_model, get_model, installed_backends


class EchoBackend:
    """A minimal third-party backend: answers with the first words of the prompt."""

    kind = "echo"
    default_concurrency = 2
    base_url = "echo://"

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(self, request: Request) -> Completion:
        words = request.user_text.split()[:5]
        return Completion(" ".join(words) + ".", "stop", Usage(len(request.user_text.split()), len(words)))

    def close(self) -> None:
        pass


def make_backend(spec, settings, env):  # type: ignore[no-untyped-def]
    return EchoBackend(spec.info)


make_backend.MODEL_DEFAULTS = {"context_window": 4096}  # type: ignore[attr-defined]


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: str) -> None:
    """A dist-info folder on sys.path is what pip leaves behind: importlib.metadata finds it."""
    dist = tmp_path / "booksum_echo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: booksum-echo\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[booksum.backends]\n" + lines, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "booksum_echo_plugin", sys.modules[__name__])
    monkeypatch.setattr(backends, "BACKENDS", backends.BackendRegistry())
    importlib.invalidate_caches()


def test_a_plugin_provider_is_built_and_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, "echo = booksum_echo_plugin:make_backend\n")
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    spec = choose_model("echo:tiny", settings=settings, env={})
    assert spec.provider == "echo" and spec.info.context_window == 4096, "the plugin's own defaults"
    assert spec.note is not None and "backend plugin" in spec.note  # a note, not a notice: nothing is priced
    client = get_model("echo:tiny", settings=settings, env={})
    assert client.complete(Request(prompt="Mara bakes bread in Lisk every day", max_tokens=20)).text == "Mara bakes bread in Lisk."
    client.close()
    assert installed_backends()["echo"] is True


def test_a_broken_plugin_is_one_clear_error_and_cannot_shadow_a_builtin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, monkeypatch, "broken = booksum_no_such_module:make\nopenai = booksum_echo_plugin:make_backend\n")
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match=r"backend 'broken' cannot be used: ModuleNotFoundError"):
        get_model("broken:x", settings=settings, env={})
    assert backends.BACKENDS.broken()["openai"].endswith("cannot replace the built-in 'openai'")
    assert backends.BACKENDS.factory("openai") is backends.BUILTIN["openai"]
    assert installed_backends()["broken"] is False
    with pytest.raises(ConfigError, match="unknown model"):
        choose_model("nobody:x", settings=settings, env={})
    assert importlib.metadata.entry_points(group="booksum.backends")  # the fixture really registered them
