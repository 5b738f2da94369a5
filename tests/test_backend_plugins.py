"""Backends as plugins: the ``booksum.backends`` entry point group, as strategies are found."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
from pathlib import Path

import pytest

from booksum_app.errors import ConfigError
from booksum_app.llm.calls import Client
from booksum_app.llm.providers import catalog as backends
from booksum_app.llm.registry import LLMSettings, choose_model, get_model, installed_backends, provider_entry
from booksum_app.plugin import BackendBase, Completion, Request, Usage


class EchoBackend(BackendBase):
    """A minimal third-party backend: answers with the first words of the prompt."""

    kind = "echo"
    default_concurrency = 2
    model_defaults = {"context_window": 4096}  # noqa: RUF012 -- a test double
    closed = 0

    def complete(self, request: Request) -> Completion:
        words = request.user_text.split()[:5]
        return Completion(" ".join(words) + ".", "stop", Usage(len(request.user_text.split()), len(words)))

    def close(self) -> None:
        EchoBackend.closed += 1


def make_backend(spec, settings, env):  # type: ignore[no-untyped-def]
    """The older form of an entry point: a factory function (no planning defaults of its own)."""
    return EchoBackend(spec.info)


def make_nothing(spec, settings, env):  # type: ignore[no-untyped-def]
    return object()


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
    _install(tmp_path, monkeypatch, "echo = booksum_echo_plugin:EchoBackend\nold = booksum_echo_plugin:make_backend\n")
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    spec = choose_model("echo:tiny", settings=settings, env={})
    assert spec.provider == "echo" and spec.info.context_window == 4096, "the plugin's own defaults"
    assert spec.note is not None and "backend plugin" in spec.note  # a note, not a notice: nothing is priced
    assert provider_entry(spec).distribution == ("booksum-echo", "1.0"), "from the package metadata"
    assert not spec.hosted
    client = get_model("echo:tiny", settings=settings, env={})
    assert client.complete(Request(prompt="Mara bakes bread in Lisk every day", max_tokens=20)).text == (
        "Mara bakes bread in Lisk."
    )
    assert client.concurrency == 2 and client.tokenizer_name == "estimate", "BackendBase members, read as attributes"
    before = EchoBackend.closed
    client.close()
    assert EchoBackend.closed == before + 1
    assert installed_backends()["echo"] is True
    assert choose_model("old:x", settings=settings, env={}).info.context_window == 8192, "a factory: the defaults"
    get_model("old:x", settings=settings, env={}).close()


def test_the_defaults_of_a_backend_base() -> None:
    from booksum_app.chunking import get_tokenizer
    from booksum_app.testing.fake_backend import FAKE_MODEL_INFO

    class Minimal(BackendBase):
        def complete(self, request: Request) -> Completion:
            return Completion("Done.", "stop")

    backend = Minimal(FAKE_MODEL_INFO)
    assert backend.cache_kind == "Minimal" and backend.base_url is None and backend.default_concurrency == 8
    assert backend.count_tokens("Mara bakes.") == get_tokenizer(FAKE_MODEL_INFO.tokenizer).count("Mara bakes.")
    backend.close()  # nothing to release
    native = Minimal(dataclasses.replace(FAKE_MODEL_INFO, tokenizer="native"))
    with pytest.raises(ConfigError, match="declares tokenizer 'native' but does not count tokens"):
        Client(native).count_tokens("x")


def test_a_broken_plugin_is_one_clear_error_and_cannot_shadow_a_builtin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, monkeypatch, "broken = booksum_no_such_module:make\nopenai = booksum_echo_plugin:make_backend\n"
             "nothing = booksum_echo_plugin:make_nothing\n")
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match=r"backend 'broken' cannot be used: ModuleNotFoundError"):
        get_model("broken:x", settings=settings, env={})
    assert backends.BACKENDS.broken()["openai"].endswith("cannot replace the built-in 'openai'")
    assert backends.BACKENDS.provider("openai") is backends.BUILTIN["openai"]
    with pytest.raises(ConfigError,
                       match="built a object, not a backend: derive it from booksum_app.plugin.BackendBase"):
        get_model("nothing:x", settings=settings, env={})
    assert installed_backends()["broken"] is False
    with pytest.raises(ConfigError, match="unknown model"):
        choose_model("nobody:x", settings=settings, env={})
    assert importlib.metadata.entry_points(group="booksum.backends")  # the fixture really registered them
