"""Issue 9 item 10: output paths fail before the first paid call; .md and .json appear together."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from booksum_app import files
from booksum_app.cli import cli, handle_errors
from booksum_app.testing.fake_server import FakeServer


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    return book


def _summarize(server: FakeServer, book: Path, out: Path) -> click.testing.Result:
    args = ["summarize", str(book), "--model", "openai:fake", "--base-url", server.openai_base_url,
            "--strategy", "direct", "-o", str(out)]
    return CliRunner().invoke(cli, args)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")


def test_output_under_a_file_fails_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with FakeServer() as server:
        result = _summarize(server, _book(tmp_path), tmp_path / "afile" / "out")
        assert server.call_count == 0
    assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "cannot write" in result.stderr and result.stderr.count("\n") == 1


def test_out_md_being_a_directory_fails_first_and_leaves_no_json(tmp_path: Path) -> None:
    (tmp_path / "out.md").mkdir()
    with FakeServer() as server:
        result = _summarize(server, _book(tmp_path), tmp_path / "out")
        assert server.call_count == 0
    assert result.exit_code == 2 and "is a directory" in result.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_full_disk_at_the_end_writes_neither_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = files._write_temp
    written: list[Path] = []

    def full_on_second(target: Path, text: str) -> str:
        if written:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        written.append(target)
        return real(target, text)

    monkeypatch.setattr(files, "_write_temp", full_on_second)
    with FakeServer() as server:
        result = _summarize(server, _book(tmp_path), tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert "No space left on device" in result.stderr and "nothing was written" in result.stderr
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "temporary files are removed"


def test_summary_and_record_are_both_written_with_the_umask(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = _summarize(server, _book(tmp_path), tmp_path / "out")
    assert result.exit_code == 0, result.output
    for name in ("out.md", "out.json"):
        mode = stat.S_IMODE((tmp_path / name).stat().st_mode)
        assert mode == files.FILE_MODE and mode & stat.S_IRGRP, "not 0600: the umask decides"
    assert json.loads((tmp_path / "out.json").read_text())["summary"] == (tmp_path / "out.md").read_text().strip()


def test_score_output_path_fails_before_the_judge_is_paid(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text("Mara bakes bread. She sells it by noon.", encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["score", str(summary), "--judge", "openai:gpt-4o-mini", "--base-url",
                                          server.openai_base_url, "--json", str(tmp_path / "afile" / "s.json")])
        assert server.call_count == 0
    assert result.exit_code == 2 and "cannot write" in result.stderr


def test_compare_out_that_is_a_file_fails_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "results").write_text("x", encoding="utf-8")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["compare", str(_book(tmp_path)), "--models", "openai:fake",
                                          "--base-url", server.openai_base_url,
                                          "--out", str(tmp_path / "results" / "run1"),
                                          "--yes", "--no-plots"])
        assert server.call_count == 0
    assert result.exit_code == 2 and "cannot write" in result.stderr, result.output


@pytest.mark.parametrize(
    "exc",
    [OSError(errno.ENOSPC, "No space left on device", "/x/out.md"),
     sqlite3.OperationalError("database or disk is full")],
)
def test_disk_errors_anywhere_are_one_line(exc: Exception) -> None:
    @click.command()
    @handle_errors
    def failing() -> None:
        raise exc

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_umask_is_read_from_the_process() -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    assert files.FILE_MODE == 0o666 & ~mask


def test_a_hung_server_is_cut_by_timeout_and_the_log_hears_a_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setenv("BOOKSUM_HEARTBEAT_S", "0.2")
    with FakeServer(script=["timeout"], hang_s=30.0) as server:
        start = time.monotonic()
        result = CliRunner().invoke(cli, [
            "summarize", str(_book(tmp_path)), "--model", "openai:fake", "--base-url", server.openai_base_url,
            "--strategy", "direct", "--timeout", "1", "-o", str(tmp_path / "out")])
        wall_s = time.monotonic() - start
    assert result.exit_code == 0, result.output
    assert wall_s < 15, "the 30 s hang was cut at 1 s and retried"
    beats = [line for line in result.stderr.splitlines() if line.startswith("booksum [")]
    assert beats and "calls" in beats[0] and "in flight" in beats[0]


def test_an_empty_final_summary_is_a_failure_with_the_record_kept(tmp_path: Path) -> None:
    with FakeServer(reply=lambda request: "Summary:") as server:
        result = _summarize(server, _book(tmp_path), tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert "final summary is empty" in result.stderr and str(tmp_path / "out.json") in result.stderr
    assert (tmp_path / "out.json").is_file(), "what was paid for is kept"


@pytest.mark.parametrize(("target", "args"), [
    ("out", ["summarize", "{book}", "--model", "openai:fake", "--strategy", "direct", "-o", "{sock}"]),
    ("out.md", ["summarize", "{book}", "--model", "openai:fake", "--strategy", "direct", "-o", "{base}"]),
    ("out.json", ["summarize", "{book}", "--model", "openai:fake", "--strategy", "direct", "-o", "{base}"]),
    ("report.html", ["score", "{sums}", "--judge", "openai:fake", "--report", "{sock}", "--yes"]),
    ("results.json", ["compare", "{book}", "--models", "openai:fake", "--no-judge", "--out", "{dir}",
                      "--json", "{sock}", "--yes"]),
])
def test_a_socket_as_an_output_fails_before_any_call(tmp_path: Path, target: str, args: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    monkeypatch.chdir(tmp_path)  # -o SOCKET sends the record to ./booksum-out/
    sock_path = tmp_path / target
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    sums = tmp_path / "sums.json"
    sums.write_text('{"lisk.txt": "Mara bakes bread. She sells it in Lisk."}', encoding="utf-8")
    fields = {"book": str(_book(tmp_path)), "sock": str(sock_path), "base": str(tmp_path / "out"),
              "sums": str(sums), "dir": str(tmp_path / "cmp")}
    try:
        with FakeServer() as server:
            result = CliRunner().invoke(cli, [*(a.format(**fields) for a in args), "--base-url",
                                              server.openai_base_url])
            assert server.call_count == 0
    finally:
        listener.close()
    assert result.exit_code == 2, result.output
    assert "it is a socket" in result.stderr and "Traceback" not in result.output
