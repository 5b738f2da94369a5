"""Issue 28: an output path that is a FIFO or a device is written as a stream, never replaced."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app import files
from booksum_app.cli import cli
from booksum_app.testing.fake_server import FakeServer


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")


class FifoReader:
    """A FIFO at ``path`` and a thread reading it to EOF (the writer's open waits for it)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fifo:
            self.data = fifo.read()

    def result(self) -> bytes:
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the FIFO's reader never saw EOF"
        return self.data


@pytest.fixture()
def device(tmp_path: Path) -> Iterator[Path]:
    """A character device node equal to /dev/null (1, 3), made as root; skipped where not permitted."""
    node = _mknod(tmp_path / "node")
    if node is None:
        pytest.skip("cannot make a device node here (needs root, and a file system that allows devices)")
    yield node


def _mknod(node: Path) -> Path | None:
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.chmod(node, 0o666)  # the umask applied to mknod
    except OSError:
        return None
    return node


def _still_device(node: Path) -> None:
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode), "the device node was replaced by a file"
    assert st.st_rdev == os.makedev(1, 3)
    assert stat.S_IMODE(st.st_mode) == 0o666, "the device's mode was changed"


def _summaries(tmp_path: Path) -> Path:
    path = tmp_path / "sums.json"
    path.write_text(json.dumps({"lisk.epub": "Mara inherits a bakery. Teo wants to sell it. It stays."}), "utf-8")
    return path


def test_atomic_write_text_streams_into_a_fifo(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path / "fifo")
    files.atomic_write_text(reader.path, "hello\n")
    assert reader.result() == b"hello\n"
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)


def test_atomic_write_texts_leaves_a_device_a_device(tmp_path: Path, device: Path) -> None:
    files.atomic_write_texts({device: "x", tmp_path / "rec.json": "{}"})
    _still_device(device)
    assert (tmp_path / "rec.json").read_text("utf-8") == "{}"


def test_replacing_streams_what_the_writer_wrote(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path / "fifo")
    with files.replacing(reader.path) as tmp:
        tmp.write_bytes(b"by name")
    assert reader.result() == b"by name"


@pytest.mark.parametrize("option", ["--csv", "--json", "--report"])
def test_score_outputs_go_into_a_fifo(tmp_path: Path, option: str) -> None:
    reader = FifoReader(tmp_path / "fifo")
    result = CliRunner().invoke(cli, ["score", str(_summaries(tmp_path)), "--no-judge", option, str(reader.path)])
    assert result.exit_code == 0, result.output
    data = reader.result().decode("utf-8")
    assert {"--csv": "system", "--json": '"systems"', "--report": "<html"}[option] in data.lower()
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)


@pytest.mark.parametrize("option", ["--csv", "--json", "--report"])
def test_score_outputs_leave_a_device_node_alone(tmp_path: Path, device: Path, option: str) -> None:
    result = CliRunner().invoke(cli, ["score", str(_summaries(tmp_path)), "--no-judge", option, str(device)])
    assert result.exit_code == 0, result.output
    _still_device(device)


def test_logs_json_into_a_fifo_and_a_device(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path / "fifo")
    result = CliRunner().invoke(cli, ["logs", "--cache-dir", str(tmp_path / "cache"), "--json", str(reader.path)])
    assert result.exit_code == 0, result.output
    assert json.loads(reader.result()) == []
    node = _mknod(tmp_path / "node")
    if node is None:
        return
    assert CliRunner().invoke(cli, ["logs", "--cache-dir", str(tmp_path / "cache"), "--json", str(node)]).exit_code == 0
    _still_device(node)


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    return book


def test_summarize_output_into_a_fifo_gets_the_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    reader = FifoReader(tmp_path / "fifo")
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o", str(reader.path)])
    assert result.exit_code == 0, result.output
    summary = reader.result().decode("utf-8")
    assert summary.strip()
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)
    record = json.loads((tmp_path / "booksum-out" / "lisk-direct.json").read_text("utf-8"))
    assert record["summary"].strip() in summary
    assert not list(tmp_path.glob("fifo.*")), "no fifo.md / fifo.json beside the stream"


def test_summarize_output_into_a_device_node(tmp_path: Path, device: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o", str(device)])
    assert result.exit_code == 0, result.output
    _still_device(device)


def test_summarize_output_dash_is_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip()
    assert not list(tmp_path.glob("-*")), "no file named -.md or -.json"
    assert (tmp_path / "booksum-out" / "lisk-direct.json").is_file()
