"""No credential reaches any output, whatever shape it has or whatever its variable is called.

Generated secrets (environment values under any credential-like name, URL userinfo, Basic and
Bearer headers, ``password=`` / ``token=`` / ``api_key=`` pairs, keys known by their prefix) are
put into every path a message takes: a plugin's exception (the door), a server's error body
(``error_for_status``), a booksum error, the CLI's error line (an ``OSError`` too), ``booksum
logs`` (table, texts, JSON) and a failed run's record (``NAME.failed.json``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import string
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.cli.base import handle_errors
from booksum_app.errors import BooksumError, ModelError, redact
from booksum_app.llm.base import Completion, Tally, Usage
from booksum_app.llm.cache import CallCache, CallMeta
from booksum_app.llm.door import translated
from booksum_app.llm.http_status import error_for_status
from booksum_app.redaction import MIN_SECRET_CHARS, environment_secrets, is_secret_name, is_secret_value
from booksum_app.runners.run_config import RunConfig
from booksum_app.runners.summarize import write_failed_record

# a secret's characters: printable, no brackets (the marker's own, which could rebuild a value
# around ``[redacted]``), no whitespace (a by-value secret with spaces is tested on its own)
SECRET_CHARS = "".join(c for c in string.ascii_letters + string.digits + "!#$%()*+-./:=?@^_{|}~" if c not in "[]")
ALNUM = string.ascii_letters + string.digits
MARKERS = ["AUTH", "PASS", "PWD", "CRED", "SECRET", "TOKEN", "KEY", "password", "Token", "ApiKey"]
PREFIXED = [("sk-", ALNUM + "_-", 20), ("sk-ant-", ALNUM + "_-", 40), ("sk-proj-", ALNUM, 40), ("hf_", ALNUM, 34),
            ("AKIA", string.ascii_uppercase + string.digits, 16), ("ASIA", string.ascii_uppercase + string.digits, 16),
            ("gsk_", ALNUM, 50), ("xai-", ALNUM, 70), ("AIza", ALNUM + "_-", 35), ("ghp_", ALNUM, 36),
            ("gho_", ALNUM, 36), ("github_pat_", ALNUM + "_", 60), ("glpat-", ALNUM, 20), ("xoxb-", ALNUM + "-", 40),
            ("sk_live_", ALNUM, 24), ("pplx-", ALNUM, 40), ("nvapi-", ALNUM, 60)]


@st.composite
def secrets(draw: st.DrawFn) -> tuple[dict[str, str], str, list[str]]:
    """(environment to set, text holding the secret, the substrings that must not appear)."""
    how = draw(st.sampled_from(["env", "env", "prefix", "url", "basic", "bearer", "pair", "json"]))
    value = draw(st.text(SECRET_CHARS, min_size=MIN_SECRET_CHARS, max_size=40).filter(is_secret_value))
    word = draw(st.text(ALNUM, min_size=8, max_size=30))
    if how == "env":
        name = "".join(draw(st.lists(st.sampled_from(["MY_", "SERVICE_", "X", "_", "DB_", "APP"]), max_size=3)))
        name += draw(st.sampled_from(MARKERS)) + draw(st.sampled_from(["", "_2", "_VALUE", "WORD"]))
        if not is_secret_name(name):  # PWD alone: the shell's working directory, not a credential
            name = "DB_" + name
        return {name: value}, value, [value]
    if how == "prefix":
        prefix, chars, size = draw(st.sampled_from(PREFIXED))
        key = prefix + draw(st.text(chars, min_size=size, max_size=size + 10))
        return {}, key, [key]
    if how == "url":
        user, password = draw(st.text(ALNUM + "-._~", min_size=1, max_size=12)), word
        return {}, f"https://{user}:{password}@models.example.com/v1", [f"{user}:{password}", password]
    if how == "basic":
        token = base64.b64encode(f"{draw(st.text(ALNUM, min_size=1, max_size=8))}:{word}".encode()).decode()
        shape = draw(st.sampled_from(["Authorization: Basic {}", "authorization=basic {}", "Basic {}"]))
        return {}, shape.format(token), [token.rstrip("="), word]
    if how == "bearer":
        return {}, draw(st.sampled_from(["Authorization: Bearer {}", "bearer {}", '"Authorization": "{}"'])).format(
            value), [value]
    label = draw(st.sampled_from(["password", "passwd", "token", "access_token", "api_key", "api-key", "apikey",
                                  "x-api-key", "client_secret", "secret", "auth", "PASSWORD", "Token"]))
    if how == "pair":
        return {}, f"{label}={word}&next=1", [word]
    return {}, json.dumps({label: word, "other": 1}), [word]


def _around(text: str, draw_words: tuple[str, str]) -> str:
    return f"{draw_words[0]} {text} {draw_words[1]}"


WORDS = st.tuples(st.sampled_from(["failed:", "request to", "server said", "(", "got"]),
                  st.sampled_from(["was refused", ")", "; retry later", "", "."]))


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _clean(output: str, hidden: list[str]) -> None:
    for secret in hidden:
        assert secret not in output, f"{secret!r} printed in {output!r}"


EXAMPLES = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@EXAMPLES
@given(case=secrets(), words=WORDS)
def test_redact_removes_every_generated_secret(case: tuple[dict[str, str], str, list[str]],
                                               words: tuple[str, str]) -> None:
    env, text, hidden = case
    with environment(env):
        _clean(redact(_around(text, words)), hidden)
        _clean(str(BooksumError(_around(text, words))), hidden)


@EXAMPLES
@given(case=secrets(), words=WORDS, booksum=st.booleans())
def test_a_plugins_exception_is_redacted_at_the_door(case: tuple[dict[str, str], str, list[str]],
                                                     words: tuple[str, str], booksum: bool) -> None:
    env, text, hidden = case
    with environment(env):
        raised = ModelError(_around(text, words)) if booksum else RuntimeError(_around(text, words))
        _clean(str(translated(raised, "plugin:model")), hidden)
        _clean(str(translated(OSError(_around(text, words)), "plugin:model")), hidden)


@EXAMPLES
@given(case=secrets(), words=WORDS, status=st.sampled_from([400, 404, 429, 500, 503]),
       shape=st.sampled_from(["json", "text", "string"]))
def test_a_servers_message_is_redacted(case: tuple[dict[str, str], str, list[str]], words: tuple[str, str],
                                       status: int, shape: str) -> None:
    env, text, hidden = case
    message = _around(text, words)
    body = {"json": json.dumps({"error": {"message": message}}).encode(), "text": message.encode(),
            "string": json.dumps({"error": message}).encode()}[shape]
    with environment(env):
        _clean(str(error_for_status(status, body, {}, name="openai:gpt-4o")), hidden)


@EXAMPLES
@given(case=secrets(), words=WORDS, kind=st.sampled_from(["booksum", "oserror", "timeout"]))
def test_the_cli_error_line_is_redacted(case: tuple[dict[str, str], str, list[str]], words: tuple[str, str],
                                        kind: str) -> None:
    env, text, hidden = case
    message = _around(text, words)

    @click.command()
    @handle_errors
    def failing() -> None:
        if kind == "booksum":
            raise BooksumError(message)
        if kind == "timeout":
            raise TimeoutError(message)
        raise OSError(5, message, f"/tmp/{text}")

    with environment(env):
        result = CliRunner().invoke(failing, [])
    assert result.exit_code != 0
    _clean(result.output, hidden)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=secrets(), words=WORDS)
def test_logs_and_failed_records_are_redacted(tmp_path_factory: pytest.TempPathFactory,
                                              case: tuple[dict[str, str], str, list[str]],
                                              words: tuple[str, str]) -> None:
    env, text, hidden = case
    folder = tmp_path_factory.mktemp("logs")
    message = _around(text, words)
    cache = CallCache(folder / "cache")
    try:
        request = json.dumps({"messages": [{"role": "user", "content": message}]})
        cache.put("call-v1:" + "0" * 64, Completion(text=f"Answer: {message}", finish_reason="stop",
                                                     usage=Usage(10, 5), model=f"m {message}"),
                  purpose="judge", meta=CallMeta(request, "openai:gpt-4o", f"run {message}", f"{text}.txt"))
    finally:
        cache.close()
    with environment(env):
        for args in (["--prompts", "--responses"], ["--json", str(folder / "calls.json")], []):
            result = CliRunner().invoke(cli, ["logs", "--cache-dir", str(folder / "cache"), *args])
            assert result.exit_code == 0, result.output
            _clean(result.output, hidden)
        _clean((folder / "calls.json").read_text("utf-8"), hidden)
        exc = ModelError("placeholder")
        exc.args = (message,)  # set after construction, as a plugin's code may
        exc.spent = Tally(calls=1, input_tokens=10, output_tokens=5, spent_usd=0.01)
        path = write_failed_record(folder / "OUT.json", exc, run=RunConfig(), model="m", book=f"{text}.txt")
        assert path is not None
        _clean(path.read_text("utf-8").replace("\\/", "/"), hidden)


def test_the_reported_case_and_its_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_AUTH", "hunter2-xyz")
    message = ("plugin failed: MY_SERVICE_AUTH=hunter2-xyz Authorization: Basic dXNlcjpodW50ZXIy "
               "https://bob:hunter3@host/x password=p4ss token=t0ken99 hf_abcdefghijklmnopqrstuvwxyz12 "
               "AKIAIOSFODNN7EXAMPLE gsk_abcdefghijklmnopqrstuvwx")
    clean = redact(message)
    for leaked in ("hunter2-xyz", "dXNlcjpodW50ZXIy", "hunter3", "p4ss", "t0ken99", "hf_abc", "AKIAIOSFODNN7",
                   "gsk_abc"):
        assert leaked not in clean
    assert clean.startswith("plugin failed: MY_SERVICE_AUTH=[redacted] Authorization: Basic [redacted]")


@pytest.mark.parametrize("text", [
    "max_tokens=512 input_tokens: 100 output_tokens=20", "a basic idea of the book", "the author: Tolstoy",
    "key: empty", "https://example.com/path@x", "mail bob@example.com", "tokens: 1,234", "task-manager run",
    "cache key call-v1:abc", "--set evidence_tokens=300",
])
def test_ordinary_text_is_left_alone(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("TOKENIZERS_PARALLELISM", "false"), ("SOME_KEY", "1"), ("AUTH_ENABLED", "true"),
                        ("PWD", "/work/books"), ("API_TIMEOUT_KEY", "300000"), ("USE_AUTH", "enabled")):
        monkeypatch.setenv(name, value)
    assert redact(text) == text
    assert not set(environment_secrets()) & {"false", "1", "true", "/work/books", "300000", "enabled"}


@pytest.mark.parametrize(("name", "secret"), [
    ("MY_SERVICE_AUTH", True), ("DB_PWD", True), ("AWS_SECRET_ACCESS_KEY", True), ("HF_TOKEN", True),
    ("GOOGLE_APPLICATION_CREDENTIALS", True), ("PGPASSWORD", True), ("PWD", False), ("OLDPWD", False),
    ("HOME", False), ("PATH", False),
])
def test_which_names_hold_credentials(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
