"""One resolved call-settings object from the command line to the wire (``llm/spec.py``).

``--timeout`` and ``--temperature`` are checked once (the same line from the command line and
from the library), resolved with their source, and handed down whole: the request on the wire
carries the temperature, and the backend, the door and the concurrency limiter read the same
timeout. A plugin that sends with ``post_json`` is not double-timed by the door.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.config import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from booksum_app.errors import ConfigError, TransientModelError
from booksum_app.llm import registry
from booksum_app.llm.calls import Client
from booksum_app.llm.spec import LLMSettings, checked_temperature, checked_timeout_s
from booksum_app.plugin import BackendBase, Completion, Request, Usage, post_json
from booksum_app.runners.experiment import Experiment
from booksum_app.runners.run_config import RunConfig
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO, FakeBackend
from booksum_app.testing.fake_server import FakeServer

BOOK_TEXT = "Chapter 1\n\nAda walked to the harbour. She spoke about the storm.\n\nThe mill stood still that winter.\n"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")


def _book(tmp_path: Path) -> Path:
    path = tmp_path / "book.txt"
    path.write_text(BOOK_TEXT, encoding="utf-8")
    return path


class _Recorded(Client):
    """The real client, remembered when built, so the test can read what reached it."""

    built: ClassVar[list[Client]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Recorded.built.append(self)


def test_timeout_and_temperature_follow_one_object_from_the_command_line_to_the_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _Recorded.built = []
    monkeypatch.setattr(registry, "Client", _Recorded)
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
            "--strategy", "direct", "--no-clean", "--timeout", "7", "--temperature", "0.3",
            "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out")], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        sent = [r.payload["temperature"] for r in server.requests]
    # the first try at the temperature given; regenerations of an invalid answer at the paper's 1.0
    assert sent[0] == 0.3 and set(sent[1:]) <= {1.0}, sent
    (client,) = _Recorded.built
    resolved = client.settings
    assert resolved is not None and resolved.timeout_s == 7.0 and resolved.source_of("timeout_s") == "--timeout"
    # one value, read by every layer that bounds an attempt: the carrier, the door, the limiter
    assert (client.timeout_s, client._door.deadline_s, client._limit.deadline_s) == (7.0, 7.0, 7.0)
    assert (client.max_attempts, client.max_cost_usd) == (resolved.max_attempts, resolved.max_cost_usd)
    assert client.backend.timeout_s == 7.0  # type: ignore[attr-defined]
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert record["config"]["temperature"] == 0.3 and record["config"]["temperature_source"] == "given"


def test_without_the_options_the_defaults_are_used_and_said_to_be_defaults(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--json", "-"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)["settings"]
    assert shown["timeout_s"] == {"value": DEFAULT_TIMEOUT_S, "source": "default"}
    assert shown["temperature"] == {"value": 0.5, "source": "default"}
    assert shown["context_window"] == {"value": 128_000, "source": "shipped table"}
    given_ = CliRunner().invoke(cli, ["inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--timeout", "12"],
                                catch_exceptions=False)
    assert "timeout 12 s (--timeout)" in given_.stdout and "context 128,000 (shipped table)" in given_.stdout


def test_a_plugin_backend_gets_the_resolved_timeout_at_the_door_and_the_limiter() -> None:
    # before: the limiter read getattr(backend, "timeout_s", None), None for every plugin
    client = registry.get_model("openai:gpt-4o", settings=LLMSettings(timeout_s=42, use_cache=False),
                                backend=FakeBackend())
    assert (client.timeout_s, client._door.timeout_s, client._limit.deadline_s) == (42.0, 42.0, 42.0)
    assert client.settings is not None and client.settings.source_of("timeout_s") == "given"
    client.close()


BAD_TIMEOUTS = ["0", "-0.0", "-3", "nan", "inf", str(MAX_TIMEOUT_S * 2)]
BAD_TEMPERATURES = ["-0.1", "2.01", "nan", "inf", "-inf"]


@pytest.mark.parametrize("bad", BAD_TIMEOUTS)
def test_a_bad_timeout_is_refused_with_the_librarys_line(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError) as refused:
        LLMSettings(timeout_s=float(bad))
    line = str(refused.value)
    for command in (["summarize", str(_book(tmp_path)), "-m", "openai:gpt-4o"], ["inspect", str(_book(tmp_path))]):
        result = CliRunner().invoke(cli, [*command, "--timeout", bad])
        assert result.exit_code == 2 and line in result.stderr, result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("bad", BAD_TEMPERATURES)
def test_a_bad_temperature_is_refused_with_the_librarys_line(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError) as refused:
        RunConfig(temperature=float(bad))
    line = str(refused.value)
    with pytest.raises(ConfigError, match="--temperature"):
        Experiment(temperature=float(bad))
    for command in ("summarize", "compare"):
        result = CliRunner().invoke(cli, [command, str(_book(tmp_path)), "-m", "openai:gpt-4o", "--temperature", bad])
        assert result.exit_code == 2 and line in result.stderr, result.output


def test_the_range_of_each_value_is_checked_in_one_place() -> None:
    """No click type range-checks --timeout or --temperature: the one check is llm/spec.py's."""
    def options(command: click.Command) -> list[click.Parameter]:
        if isinstance(command, click.Group):
            return [p for sub in command.commands.values() for p in options(sub)]
        return [p for p in command.params if p.name in ("timeout_s", "temperature")]

    found = options(cli)
    assert len(found) >= 5, "summarize, score, compare, inspect --timeout; summarize and compare --temperature"
    for param in found:
        assert not isinstance(param.type, click.FloatRange), f"{param.name}: a second range check"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.booleans()))
def test_the_checks_accept_exactly_their_ranges(value: float | bool) -> None:
    number = not isinstance(value, bool)
    for check, fits in ((checked_timeout_s, lambda v: 0 < v <= MAX_TIMEOUT_S), (checked_temperature,
                                                                                lambda v: 0 <= v <= 2)):
        if number and fits(value):
            assert check(value) == float(value)
        else:
            with pytest.raises(ConfigError):
                check(value)


class _PostJsonPlugin(BackendBase):
    """A plugin written as the docs say: it sends with post_json and sets nothing else."""

    def __init__(self, url: str, *, self_bounded: bool = False) -> None:
        super().__init__(FAKE_MODEL_INFO)
        self.url = url
        self.bounds_own_attempts = self_bounded

    def complete(self, request: Request) -> Completion:
        reply = post_json(self.url, {"model": "fake", "messages": [{"role": "user", "content": request.prompt}],
                                     "max_tokens": request.max_tokens})
        return Completion(reply["choices"][0]["message"]["content"], "stop", Usage(1, 1))


@pytest.mark.parametrize("self_bounded", [False, True])
def test_a_post_json_plugin_is_not_double_timed(self_bounded: bool) -> None:
    """post_json stops at the attempt's deadline itself: the door abandons no thread, and a plugin
    that says it bounds its attempts still gets --timeout (not post_json's 300 s default)."""
    request = Request(prompt="Mara bakes bread.", max_tokens=20)
    before = threading.active_count()
    with FakeServer(script=["drip"] * 4, drip_s=0.5) as server:
        backend = _PostJsonPlugin(server.openai_base_url + "/chat/completions", self_bounded=self_bounded)
        client = Client(backend, settings=LLMSettings(timeout_s=1, max_attempts=2), sleep=lambda s: None)
        started = time.monotonic()
        with pytest.raises(TransientModelError, match="timed out"):
            client.complete(request)
        assert time.monotonic() - started < 6, "two attempts of 1 s"
        assert client._door.abandoned == 0, "no attempt given up while post_json still bounded it"
        client.close()
    time.sleep(0.2)
    assert threading.active_count() <= before + 1
