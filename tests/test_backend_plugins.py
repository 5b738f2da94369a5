"""Backends as plugins: the ``booksum.backends`` entry point group, as strategies are found."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

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


def make_wide(spec, settings, env):  # type: ignore[no-untyped-def]
    """A factory function that declares its models' planning defaults, as catalog.py documents."""
    return EchoBackend(spec.info)


make_wide.MODEL_DEFAULTS = {"context_window": 32768, "tokenizer": "cl100k_base",  # type: ignore[attr-defined]
                            "input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.5}


def make_broken_defaults(spec, settings, env):  # type: ignore[no-untyped-def]
    return EchoBackend(spec.info)


make_broken_defaults.MODEL_DEFAULTS = {"context_window": "lots"}  # type: ignore[attr-defined]


def make_keyerror(spec, settings, env):  # type: ignore[no-untyped-def]
    """A factory that fails as a careless author's does: a KeyError quoting the key it looked at."""
    raise KeyError(f"no region for key {env['URLCHAT_API_KEY']}")

URLCHAT_KEY = "urlchat-" + "Zx9Yw8Vu7Ts6" * 2


class UrllibChat(BackendBase):
    """A backend as most authors would write one: urllib, whose timeout bounds each read, not the reply;
    and careless with its key in error text."""

    kind = "urlchat"
    default_concurrency = 1
    model_defaults: Mapping[str, Any] = {"context_window": 16384, "tokenizer": "cl100k_base",
                                         "input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}

    @classmethod
    def from_spec(cls, spec, settings, env):  # type: ignore[no-untyped-def]
        backend = cls(spec.info)
        backend.url = (settings.base_url or "") + "/chat/completions"
        backend.key = env.get("URLCHAT_API_KEY", "")
        backend.timeout = settings.timeout_s
        return backend

    def complete(self, request: Request) -> Completion:
        payload = {"model": "x", "max_tokens": request.max_tokens,
                   "messages": [{"role": "user", "content": request.user_text}]}
        sent = urllib.request.Request(self.url, data=json.dumps(payload).encode(), method="POST",
                                      headers={"Authorization": f"Bearer {self.key}",
                                               "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(sent, timeout=self.timeout) as reply:
                body = json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            exc.close()
            raise RuntimeError(f"HTTP {exc.code} for key {self.key}") from None
        usage = body["usage"]
        return Completion(body["choices"][0]["message"]["content"], "stop",
                          Usage(usage["prompt_tokens"], usage["completion_tokens"]))


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


def test_a_factory_s_model_defaults_are_read_and_checked_through_inspect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.cli import cli

    _install(tmp_path, monkeypatch, "wide = booksum_echo_plugin:make_wide\n"
             "odd = booksum_echo_plugin:make_broken_defaults\n")
    book = tmp_path / "b.txt"
    book.write_text("Chapter 1\n\nMara bakes bread in Lisk. Teo counts the coins twice.\n", encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_CONFIG", str(tmp_path / "none.toml"))
    result = CliRunner().invoke(cli, ["inspect", str(book), "-m", "wide:x", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["context_window"] == 32768, "the factory's MODEL_DEFAULTS, not 8192"
    odd = CliRunner().invoke(cli, ["inspect", str(book), "-m", "odd:x", "--json"])
    assert odd.exit_code == 2 and "context_window must be an integer from 1" in odd.stderr, odd.output
    assert "'lots'" in odd.stderr and "Traceback" not in odd.output


class Quitter(EchoBackend):
    """Answers once, then ends the process the way a careless plugin might."""

    kind = "quitter"
    default_concurrency = 1
    answered = 0

    def complete(self, request: Request) -> Completion:
        if Quitter.answered:
            raise SystemExit(0)
        Quitter.answered += 1
        return super().complete(request)


class Counted(EchoBackend):
    """Counts how often booksum builds it: a plugin may check its key against the network when built."""

    kind = "counted"
    built = 0

    @classmethod
    def from_spec(cls, spec, settings, env):  # type: ignore[no-untyped-def]
        Counted.built += 1
        return cls(spec.info)


def _plugin_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str, model: str = "urlchat:x") -> Any:
    from booksum_app.cli import cli

    _install(tmp_path, monkeypatch, "urlchat = booksum_echo_plugin:UrllibChat\nquitter = booksum_echo_plugin:Quitter\n"
             "counted = booksum_echo_plugin:Counted\n")
    monkeypatch.setenv("URLCHAT_API_KEY", URLCHAT_KEY)
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKSUM_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.chdir(tmp_path)
    book = tmp_path / "lisk.txt"
    book.write_text("\n".join(f"Chapter {n}\n\nThe {n}th morning began in Lisk. Mara baked bread before dawn. "
                              "Teo counted the coins twice.\n" for n in range(1, 4)), encoding="utf-8")
    return CliRunner().invoke(cli, ["summarize", str(book), "-m", model, "--no-clean", *args])


@pytest.mark.slow
def test_a_urllib_plugin_against_a_dripping_server_ends_within_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.testing.fake_server import FakeServer

    with FakeServer(fault_rate=1.0, fault_kinds=("drip",), drip_s=0.2) as server:
        started = time.monotonic()
        result = _plugin_run(tmp_path, monkeypatch, "--base-url", server.openai_base_url, "--timeout", "3")
        took = time.monotonic() - started
    assert result.exit_code == 4, result.output
    assert took < 60, f"{took:.1f} s: every attempt cut at 3 s, retries included"
    last = result.stderr.splitlines()[-1]
    assert "request timed out (no reply within --timeout 3 s" in last and "failed 6 times" in last
    assert "Traceback" not in result.output
    assert "Zx9Yw8" not in result.output


def test_a_plugin_failure_after_paid_calls_is_one_redacted_line_and_a_failed_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.testing.fake_server import FakeServer

    with FakeServer(script=[None, "400"]) as server:  # the first call is answered, the second rejected
        result = _plugin_run(tmp_path, monkeypatch, "--base-url", server.openai_base_url, "--chunk-size", "64",
                             "-o", str(tmp_path / "out" / "lisk"))
    assert result.exit_code == 4, result.output
    assert "the backend failed (RuntimeError: HTTP 400 for key [redacted])" in result.stderr.splitlines()[-1]
    assert "Zx9Yw8" not in result.output and "Traceback" not in result.output
    failed = json.loads((tmp_path / "out" / "lisk.failed.json").read_text(encoding="utf-8"))
    assert failed["status"] == "failed" and failed["totals"]["spent_usd"] > 0 and "Zx9Yw8" not in failed["error"]


def test_a_plugin_backend_is_built_once_to_check_it_and_once_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command checks before it reads the book and its runner checks again; the second is not a second build."""
    monkeypatch.setattr(Counted, "built", 0)
    result = _plugin_run(tmp_path, monkeypatch, "--chunk-size", "64", "--yes", "-o", str(tmp_path / "out" / "lisk"),
                         model="counted:x")
    assert result.exit_code == 0, result.output
    assert Counted.built == 2


def test_a_plugin_that_raises_system_exit_fails_with_exit_4_and_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Quitter, "answered", 0)
    result = _plugin_run(tmp_path, monkeypatch, "--chunk-size", "64", "-o", str(tmp_path / "out" / "lisk"),
                         model="quitter:x")
    assert result.exit_code == 4, result.output
    assert "the backend raised SystemExit" in result.stderr.splitlines()[-1] and "Traceback" not in result.output
    assert (tmp_path / "out" / "lisk.failed.json").exists() and not (tmp_path / "out" / "lisk.md").exists()


def test_a_plugin_factory_that_raises_is_one_redacted_config_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, monkeypatch, "careless = booksum_echo_plugin:make_keyerror\n")
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match=r"backend 'careless' could not be built \(KeyError: ") as caught:
        get_model("careless:x", settings=settings, env={"URLCHAT_API_KEY": URLCHAT_KEY})
    assert "Zx9Yw8" not in str(caught.value) and "[redacted]" in str(caught.value)
    assert "\n" not in str(caught.value)
