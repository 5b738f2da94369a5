"""Issue 25, leaks and hostile input: a key at the message cut, escape sequences in titles,
headings, file names and server messages, links out of a scored directory, JSON nested
100,000 deep, and a call cache whose disk is full."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from booksum_app.books import Book, Chapter
from booksum_app.cli import cli
from booksum_app.errors import DETAIL_CHARS, REDACTED, InputError, ModelError, server_message
from booksum_app.jsonin import parse_json, read_json
from booksum_app.llm.base import Request
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.ollama import _error_text
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.textsafe import markup_safe, printable

KEY = "vllm-token-ABCDEFGH12345678"  # no known key shape: only the key in use finds it
CLEAR = "\x1b[2J"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes "echo pwned" to the clipboard
HOSTILE = f"Bad{CLEAR}Title{OSC52}\x9b31m red\x07\x08\x7f[bold]x[/bold]"


# ---- redact, then cut --------------------------------------------------------------------


def _leaked(message: str) -> str:
    """The longest piece of KEY (5 characters or more) that appears in ``message``."""
    best = ""
    for start in range(len(KEY)):
        for end in range(start + 5, len(KEY) + 1):
            if KEY[start:end] in message and end - start > len(best):
                best = KEY[start:end]
    return best


@pytest.mark.parametrize("at", [DETAIL_CHARS - 26, DETAIL_CHARS - 10, DETAIL_CHARS - 1, DETAIL_CHARS + 5])
def test_a_key_straddling_the_cut_is_redacted_whole(at: int) -> None:
    text = "x" * at + KEY + " and more words after the key"
    message = server_message(text, KEY)
    assert len(message) <= DETAIL_CHARS
    assert _leaked(message) == ""


class _Echo(BaseHTTPRequestHandler):
    """Answers every POST with a 400 whose message puts the bearer key 26 characters before the cut."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        key = (self.headers.get("authorization") or "").removeprefix("Bearer ") or self.headers.get("x-api-key", "")
        message = "y" * (DETAIL_CHARS - 26) + key + " was rejected"
        body = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("api", ["openai", "openai-sdk", "anthropic"])
def test_a_server_echoing_the_key_near_the_cut_leaks_none_of_it(api: str, echo_server: str, tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    if api == "openai-sdk":
        env["BOOKSUM_OPENAI_TRANSPORT"] = "sdk"
    model = "anthropic:claude-haiku-4-5" if api == "anthropic" else "openai:gpt-4o"
    base = echo_server if api == "anthropic" else echo_server + "/v1"
    client = get_model(model, settings=LLMSettings(base_url=base, use_cache=False, config_path=tmp_path / "none",
                                                   max_attempts=1),
                       env=env)
    try:
        with pytest.raises(ModelError) as caught:
            client.complete(Request(prompt="hello", max_tokens=5))
    finally:
        client.close()
    message = str(caught.value)
    assert "rejected (400)" in message or "400" in message
    assert _leaked(message) == "", message


def test_ollama_error_text_is_redacted_before_it_is_cut() -> None:
    key = "sk-" + "A1b2C3d4E5" * 3
    class Response:  # what _error_text reads of an httpx response
        text = json.dumps({"error": "z" * (DETAIL_CHARS - 13) + " " + key})

        def json(self) -> Any:
            return json.loads(self.text)

    response: Any = Response()
    detail = server_message(_error_text(response))
    assert "A1b2C3" not in detail and detail.endswith(" " + REDACTED[: len(detail) - (DETAIL_CHARS - 12)])


# ---- control characters ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (HOSTILE, "BadTitle red[bold]x[/bold]"),
        ("tab\tkept", "tab\tkept"),
        ("two\nlines\r\nhere", "two lines here"),
        ("unterminated \x1b]52;c;AAAA", "unterminated "),
        ("st-terminated \x1b]0;title\x1b\\ok", "st-terminated ok"),
        ("dcs \x1bP1;2|xx\x1b\\ done", "dcs  done"),
        ("reset \x1bc and \x1b7save", "reset  and save"),
        ("c1 \x9d52;c;QQ\x9c osc", "c1  osc"),
        ("日本語 and émigré", "日本語 and émigré"),
    ],
)
def test_printable_removes_sequences_and_controls(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_keeps_newlines_when_asked() -> None:
    assert printable(f"one{CLEAR}\ntwo\r\nthree", newlines=True) == "one\ntwo\nthree"


def test_rich_output_of_markup_safe_text_has_no_escape_or_markup() -> None:
    console = Console(record=True, force_terminal=True, color_system=None, width=200)
    console.print(f"[bold]{markup_safe(HOSTILE)}[/]")
    out = console.export_text(styles=False)
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    assert "[bold]x[/bold]" in out  # the title's own brackets are shown, not applied


def test_book_titles_headings_and_authors_are_printable() -> None:
    book = Book(title=HOSTILE, authors=(f"A{OSC52}uthor",), language="en",
                chapters=(Chapter(title=f"Chapter{CLEAR} 1", paragraphs=("text",), excluded_reason=f"r{CLEAR}"),))
    assert book.title == "BadTitle red[bold]x[/bold]" and book.authors == ("Author",)
    assert book.chapters[0].title == "Chapter 1" and book.chapters[0].excluded_reason == "r"


def test_inspect_prints_no_escape_sequence_from_a_title_or_a_heading(tmp_path: Path) -> None:
    book = tmp_path / f"evil{CLEAR}.html"
    book.write_text(
        f"<html><head><title>The {CLEAR}Title{OSC52}</title></head><body>"
        f"<h1>Chapter{CLEAR} One{OSC52}</h1>" + "<p>Mara bakes bread in Lisk every morning.</p>" * 40
        + "</body></html>", encoding="utf-8")
    result = CliRunner().invoke(cli, ["inspect", str(book), "-m", "openai:gpt-4o"])
    assert result.exit_code == 0, result.output
    assert "The Title" in result.output and "Chapter One" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output


def test_an_error_naming_a_hostile_file_prints_no_escape_sequence(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / f"missing{CLEAR}{OSC52}.epub")])
    assert result.exit_code != 0
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "missing" in result.output


def test_error_messages_are_printable() -> None:
    assert str(InputError(f"cannot read {HOSTILE}")) == "cannot read BadTitle red[bold]x[/bold]"


# ---- links out of a scored directory ------------------------------------------------------


def test_score_refuses_a_link_out_of_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash", encoding="utf-8")
    scored = tmp_path / "summaries"
    scored.mkdir()
    (scored / "book.txt").write_text("Mara bakes bread. Teo sells it.", encoding="utf-8")
    (scored / "passwd.txt").symlink_to(outside)
    result = CliRunner().invoke(cli, ["score", str(scored), "--no-judge"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "passwd.txt" in lines[0] and "outside" in lines[0]
    assert "root:x" not in result.output


def test_score_follows_a_link_inside_the_directory(tmp_path: Path) -> None:
    scored = tmp_path / "summaries"
    scored.mkdir()
    (scored / "real.md").write_text("Mara bakes bread. Teo sells it.", encoding="utf-8")
    (scored / "alias.txt").symlink_to(scored / "real.md")
    result = CliRunner().invoke(cli, ["score", str(scored), "--no-judge", "--json", "-"])
    assert result.exit_code == 0, result.output


# ---- deeply nested JSON ------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_parse_json_turns_deep_nesting_into_one_input_error() -> None:
    with pytest.raises(InputError, match="nested too deeply"):
        parse_json(DEEP, where="x")


@pytest.mark.parametrize("flag", [None, "--annotations", "--references"])
def test_score_inputs_nested_too_deeply_are_one_line(flag: str | None, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text('{"a.epub": "Mara bakes bread. Teo sells it."}', encoding="utf-8")
    args = ["score", str(deep), "--no-judge"] if flag is None else ["score", str(good), flag, str(deep), "--no-judge"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1
    assert not isinstance(result.exception, RecursionError)


def test_read_json_says_which_file(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match=r"summaries file .*deep\.json is nested too deeply"):
        read_json(deep, what="summaries")


def test_a_dataset_line_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    from booksum_app.runners.datasets import _rows

    data = tmp_path / "set.jsonl"
    data.write_text('{"context": "a", "summary": "b"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"set\.jsonl line 2 is nested too deeply"):
        _rows(data)


# ---- a call cache on a full disk -----------------------------------------------------------


class _FullDisk:
    """A sqlite3 connection whose disk fills up when ``full`` is set: writes fail as SQLite's
    do on SQLITE_FULL, which rolls the transaction back itself (so a second ROLLBACK fails with
    "cannot rollback - no transaction is active")."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.full = False

    @property
    def in_transaction(self) -> bool:
        return self._db.in_transaction

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.full and sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        if self.full:
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.executemany(sql, rows)

    def close(self) -> None:
        self._db.close()


class _FullDiskCache(CallCache):
    def _connect(self) -> sqlite3.Connection:
        self.conn = _FullDisk(super()._connect())
        return self.conn  # type: ignore[return-value]


def test_a_full_disk_loses_no_paid_answer_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = _FullDiskCache(tmp_path / "cache")
    backend = FakeBackend()
    client = Client(backend, cache=cache, concurrency=4)
    stored = client.complete(Request(prompt="stored before the disk filled up", max_tokens=20))
    cache.conn.full = True
    requests = [Request(prompt=f"call number {n}: Mara bakes bread.", max_tokens=20) for n in range(12)]
    with caplog.at_level(logging.WARNING, logger="booksum_app.llm.cache"):
        answers = client.complete_many(requests)
        again = client.complete_many(requests)  # answered from memory, not paid again
    assert [a.text for a in answers] == [a.text for a in again] and all(a.text for a in answers)
    assert backend.call_count == 1 + len(requests)
    assert all(a.cache_hit for a in again) and not any(a.cache_hit for a in answers)
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and "database or disk is full" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()
    assert cache.fallback.error == "database or disk is full"
    assert client.complete(Request(prompt="stored before the disk filled up", max_tokens=20)).text == stored.text
    client.close()
    cache.close()


def test_a_full_disk_mid_summary_finishes_the_run(tmp_path: Path) -> None:
    from booksum_app.scoring import score_summary

    cache = _FullDiskCache(tmp_path / "cache")
    client = Client(FakeBackend(reply=lambda r: "Questions: no confusion\nTypes: no confusion"), cache=cache)
    cache.conn.full = True
    result = score_summary("The cat sat. The dog ran. The bird sang.", judge=client)
    assert result.score == 1.0 and result.system.n_unparseable == 0
    client.close()
    cache.close()


def test_summarize_and_logs_print_no_escape_sequence_from_a_hostile_book(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booksum_app.testing.fake_server import FakeServer

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = tmp_path / f"evil{CLEAR}{OSC52}.html"
    book.write_text(
        f"<html><head><title>The {CLEAR}Title{OSC52}</title></head><body><h1>Chapter{CLEAR} One</h1>"
        + "<p>Mara bakes bread in Lisk every morning. Teo sells it.</p>" * 30 + "</body></html>",
        encoding="utf-8")
    cache = tmp_path / "cache"
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "summarize", str(book), "--model", "openai:fake", "--base-url", server.openai_base_url,
            "--strategy", "direct", "--cache-dir", str(cache), "-o", str(tmp_path / f"out{CLEAR}")])
    assert result.exit_code == 0, result.output
    assert "record:" in result.output and "\x1b" not in result.output and "\x07" not in result.output
    for args in (["logs"], ["logs", "--prompts", "--responses"]):
        shown = CliRunner().invoke(cli, [*args, "--cache-dir", str(cache)])
        assert shown.exit_code == 0, shown.output
        assert "evil" in shown.output and "\x1b" not in shown.output and "\x07" not in shown.output


def test_on_a_pty_inspect_writes_no_clear_screen_or_clipboard_sequence(tmp_path: Path) -> None:
    """On a real terminal rich writes its own colour sequences; the book's must not be among them."""
    import os
    import pty
    import subprocess
    import sys

    book = tmp_path / f"evil{CLEAR}.html"
    book.write_text(f"<html><head><title>The {CLEAR}Title{OSC52}</title></head><body><h1>Chapter{CLEAR} One</h1>"
                    + "<p>Mara bakes bread in Lisk every morning.</p>" * 40 + "</body></html>", encoding="utf-8")
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "booksum_app", "inspect", str(book), "-m", "openai:gpt-4o"]
    proc = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env,
                            cwd=Path(__file__).parent.parent)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    out = b"".join(chunks)
    assert b"The Title" in out and b"Chapter One" in out
    assert b"\x1b[2J" not in out and b"\x1b]52" not in out and b"\x07" not in out


def test_precomputed_sets_and_records_nested_too_deeply_are_one_line(tmp_path: Path) -> None:
    from booksum_app.scoring.release import read_summaries  # compare --precomputed reads through it
    from booksum_app.strategies.record import read_record

    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    for read in (read_summaries, read_record):
        with pytest.raises(InputError, match="nested too deeply"):
            read(deep)
