"""A planted recovery journal never renames anything but this write's own regular files.

``summarize -o out/OUT`` finishes a swap a killed writer left (``.OUT.md.PID.journal.booksum-swap``).
The journal is a file in the output folder, which may be shared or unpacked from an archive:
generated journals name files outside the folder (absolute, ``..``, through a symlinked folder),
FIFOs, sockets and device nodes as targets or temporary files, torn or garbled JSON, wrong types.
Whatever they hold, nothing outside the write's own files changes, no node that is not a regular
file is renamed over, and a journal that does not fit is said in one line and left alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app import files
from booksum_app.files import atomic_write_texts, recover_interrupted

DEAD = 999_999_999  # above any pid_max: never a live process
JOURNAL = f".OUT.md.{DEAD}.journal.booksum-swap"
TMP_MD = f".OUT.md.{DEAD}.abcdefgh.tmp"
TMP_JSON = f".OUT.json.{DEAD}.a1b2c3d4.tmp"
OWN = {"OUT.md", "OUT.json", TMP_MD, TMP_JSON, JOURNAL}  # the only names recovery may change


@pytest.fixture(autouse=True)
def _fresh_reports() -> Iterator[None]:
    files._reported.clear()  # each case's warning is said again
    yield


def _node(path: Path, kind: str) -> None:
    """Make ``path`` a node of ``kind``: file, fifo, socket, device (skipped where not permitted), link."""
    if kind == "file":
        path.write_text(f"{path.name} keeps this\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(path))
        finally:
            sock.close()  # the node stays
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        except OSError:
            path.write_text("no device here\n")  # not root: a plain file stands in
    elif kind == "link":
        path.symlink_to(path.parent.parent / "outside" / "victim")


def _folder(root: Path, kinds: dict[str, str]) -> Path:
    """root/out (the write's folder, with old outputs and a dead writer's files), root/outside."""
    out, outside = root / "out", root / "outside"
    out.mkdir()
    outside.mkdir()
    for name in ("victim", "fifo", "socket", "device"):
        _node(outside / name, "file" if name == "victim" else name)
    (out / "linked").symlink_to(outside, target_is_directory=True)  # a symlinked folder out
    (out / "OUT.md").write_text("old summary\n")
    (out / "OUT.json").write_text("old record\n")
    for name in (TMP_MD, TMP_JSON):
        _node(out / name, kinds.get(name, "file"))
    for name in ("OUT.md", "OUT.json"):
        if kinds.get(name, "file") != "file":
            (out / name).unlink()
            _node(out / name, kinds[name])
    return out


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry under ``root``, links not followed: (type bits, inode, content digest of a regular file)."""
    seen = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            st = os.lstat(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
            seen[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_ino, digest)
    return seen


def _only_own_regular_files_changed(before: dict[str, tuple[int, int, str]],
                                    after: dict[str, tuple[int, int, str]]) -> None:
    for path, (kind, inode, digest) in before.items():
        if not path.startswith("out/") or kind != stat.S_IFREG or path.removeprefix("out/") not in OWN:
            assert after.get(path) == (kind, inode, digest), f"{path} changed: not this write's regular file"
    assert set(after) <= set(before), "nothing new appears"


HOSTILE_NAMES = st.sampled_from([
    "OUT.md", "OUT.json", TMP_MD, TMP_JSON, "../outside/victim", "linked/victim", "linked/fifo", "linked/device",
    "linked/socket", "/etc/passwd", "/dev/null", "..", ".", "", "OTHER.md", f".OTHER.md.{DEAD}.abcdefgh.tmp",
    f".OUT.md.{DEAD}.toolongname.tmp", ".OUT.md.123.abcdefgh.tmp", "OUT.md/", "./OUT.md", "out/OUT.md",
    "a\x00b", "victim",
]) | st.text(max_size=12)
ABSOLUTE = st.sampled_from(["ABS_OUT/OUT.md", "ABS_OUT/" + TMP_MD, "ABS_OUTSIDE/victim", "ABS_OUTSIDE/device",
                            "ABS_OUTSIDE/fifo", "ABS_OUT/linked/victim", "ABS_OUT/../outside/victim"])
ENTRY = HOSTILE_NAMES | ABSOLUTE
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                    max_size=3), max_leaves=8)


@st.composite
def journals(draw: st.DrawFn) -> bytes:
    """A journal's bytes: pairs of hostile entries, garbled JSON, torn text or wrong types."""
    how = draw(st.sampled_from(["pairs", "pairs", "pairs", "torn", "garbled", "types", "extra"]))
    pairs = draw(st.lists(st.lists(ENTRY, min_size=2, max_size=2), min_size=1, max_size=3))
    body = json.dumps({"swap": pairs})
    if how == "torn":
        return body.encode()[: draw(st.integers(0, len(body) - 1))]
    if how == "garbled":
        return draw(st.binary(max_size=64))
    if how == "types":
        return json.dumps({"swap": draw(JSONISH)} if draw(st.booleans()) else draw(JSONISH)).encode()
    if how == "extra":
        return json.dumps({"swap": pairs, draw(st.text(max_size=5)): 1}).encode()
    return body.encode()


KINDS = st.fixed_dictionaries({}, optional={
    "OUT.md": st.sampled_from(["fifo", "socket", "device", "link"]),
    "OUT.json": st.sampled_from(["fifo", "socket", "device", "link"]),
    TMP_MD: st.sampled_from(["fifo", "socket", "device", "link"]),
    TMP_JSON: st.sampled_from(["fifo", "socket", "device", "link"]),
})


def _spelled(body: bytes, root: Path) -> bytes:
    return body.replace(b"ABS_OUTSIDE", str(root / "outside").encode()).replace(b"ABS_OUT", str(root / "out").encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=journals(), kinds=KINDS)
def test_a_planted_journal_changes_nothing_but_this_writes_own_regular_files(
    body: bytes, kinds: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        out = _folder(root, kinds)
        (out / JOURNAL).write_bytes(_spelled(body, root))
        before = _snapshot(root)
        ours = not files.is_stream(out / "OUT.md")  # a stream is written in place: no journal is its
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="booksum_app.files"):
            recover_interrupted([out / "OUT.md", out / "OUT.json"])
        after = _snapshot(root)
        _only_own_regular_files_changed(before, after)
        if ours and (out / JOURNAL).exists():  # left alone: said once, on one line, naming it
            lines = [r.getMessage() for r in caplog.records if JOURNAL in r.getMessage()]
            assert len(lines) == 1 and "\n" not in lines[0], caplog.text
            assert after == before, "a journal left alone leaves its files alone too"


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "link"])
@pytest.mark.parametrize("where", ["OUT.md", "OUT.json", TMP_MD, TMP_JSON])
def test_a_well_formed_journal_never_renames_over_or_moves_a_node(tmp_path: Path, kind: str, where: str) -> None:
    out = _folder(tmp_path, {where: kind})
    (out / JOURNAL).write_text(json.dumps({"swap": [[TMP_MD, "OUT.md"], [TMP_JSON, "OUT.json"]]}))
    if kind == "device" and not stat.S_ISCHR(os.lstat(out / where).st_mode):
        pytest.skip("cannot make a device node here (needs root)")
    before = _snapshot(tmp_path)
    recover_interrupted([out / "OUT.md", out / "OUT.json"])
    _only_own_regular_files_changed(before, _snapshot(tmp_path))
    assert (out / JOURNAL).exists() or files.is_stream(out / "OUT.md"), "left alone, not finished"
    assert (out / "OUT.md").exists() and (out / "OUT.json").exists()
    assert (tmp_path / "outside" / "victim").read_text() == "victim keeps this\n"


def test_the_reported_attack_leaves_the_file_outside_untouched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The measured case: a dead-pid journal naming a file outside the folder, absolute and through ``..``."""
    out = _folder(tmp_path, {})
    victim = tmp_path / "outside" / "victim"
    (out / JOURNAL).write_text(json.dumps({"swap": [[str(out / TMP_MD), str(out / "OUT.md")],
                                                    [str(out / TMP_JSON), str(victim)]]}))
    with caplog.at_level(logging.WARNING, logger="booksum_app.files"):
        recover_interrupted([out / "OUT.md", out / "OUT.json"])
    assert victim.read_text() == "victim keeps this\n"
    assert (out / "OUT.md").read_text() == "old summary\n" and (out / JOURNAL).exists()
    assert "not a file of its own folder" in caplog.text and "left alone" in caplog.text


@pytest.mark.parametrize("order", [0, 1])
def test_a_journal_booksum_wrote_is_still_finished(tmp_path: Path, order: int) -> None:
    """The real journal (names only, this write's targets and temporary names) is honoured, whatever
    was already swapped when the writer died."""
    out = _folder(tmp_path, {})
    (out / TMP_MD).write_text("new summary\n")
    (out / TMP_JSON).write_text("new record\n")
    if order:  # killed after the first rename: the old record gone, the summary new
        (out / "OUT.json").unlink()
        (out / TMP_MD).replace(out / "OUT.md")
    (out / JOURNAL).write_text(json.dumps({"swap": [[TMP_MD, "OUT.md"], [TMP_JSON, "OUT.json"]]}))
    recover_interrupted([out / "OUT.md", out / "OUT.json"])
    assert (out / "OUT.md").read_text() == "new summary\n" and (out / "OUT.json").read_text() == "new record\n"
    assert sorted(p.name for p in out.iterdir()) == ["OUT.json", "OUT.md", "linked"]


def test_the_journal_written_names_siblings_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a write puts in its journal: bare names, which recovery reads (the renames follow no path)."""
    seen: list[str] = []
    real = files._swap_in

    def spy(temps: list[tuple[str, Path]]) -> None:
        seen.extend(p.read_text() for p in tmp_path.glob("*.booksum-swap"))
        real(temps)

    monkeypatch.setattr(files, "_swap_in", spy)
    atomic_write_texts({tmp_path / "OUT.md": "s\n", tmp_path / "OUT.json": "{}\n"})
    swap = json.loads(seen[0])["swap"]
    assert [t for _, t in swap] == ["OUT.md", "OUT.json"] and all("/" not in s for pair in swap for s in pair)


def test_files_written_together_share_one_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one directory"):
        atomic_write_texts({tmp_path / "a" / "OUT.md": "s", tmp_path / "b" / "OUT.json": "{}"})
    assert not [p for p in tmp_path.rglob("*") if p.is_file()], "no temporary file left"


def test_a_leftover_named_like_a_temporary_file_but_not_a_file_stays(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / f".OUT.md.{DEAD}.abcdefgh.tmp")
    (tmp_path / f".OUT.md.{DEAD}.zzzzzzzz.tmp").mkdir()
    recover_interrupted([tmp_path / "OUT.md"])
    assert stat.S_ISFIFO(os.lstat(tmp_path / f".OUT.md.{DEAD}.abcdefgh.tmp").st_mode)
    assert (tmp_path / f".OUT.md.{DEAD}.zzzzzzzz.tmp").is_dir()


def test_summarize_o_with_a_planted_journal_writes_its_pair_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The reported case end to end: ``summarize -o out/OUT`` with a dead-pid journal in ``out/`` naming a
    file outside and a device node; the run writes OUT.md and OUT.json, says one line, touches nothing else."""
    from click.testing import CliRunner

    from booksum_app.cli import cli
    from booksum_app.testing.fake_server import FakeServer

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.chdir(tmp_path)
    out = _folder(tmp_path, {})
    _node(tmp_path / "outside" / "null", "device")
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    (out / JOURNAL).write_text(json.dumps({"swap": [[str(out / TMP_MD), str(out / "OUT.md")],
                                                    [str(out / TMP_JSON), str(tmp_path / "outside" / "victim")],
                                                    [str(out / TMP_MD), str(tmp_path / "outside" / "null")]]}))
    outside = {k: v for k, v in _snapshot(tmp_path).items() if k.startswith("outside")}
    with caplog.at_level(logging.WARNING, logger="booksum_app.files"), FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(book), "-m", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o", "out/OUT"])
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in _snapshot(tmp_path).items() if k.startswith("outside")} == outside
    assert (out / "OUT.md").read_text() != "old summary\n" and json.loads((out / "OUT.json").read_text())
    assert (out / JOURNAL).exists() and len([r for r in caplog.records if JOURNAL in r.getMessage()]) == 1
