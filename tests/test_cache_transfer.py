"""The call cache on a network file system (refused) and answers moved between caches (--export/--import)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cache_answers import keyed
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm import netfs
from booksum_app.llm.base import Completion, Usage
from booksum_app.llm.cache import EXPORT_COLUMNS, CallCache, CallMeta
from booksum_app.llm.cache_export import CHECKED, export_answers, import_answers

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
server:/export/home /home nfs4 rw,vers=4.2 0 0
//nas/share /mnt/my\\040share cifs rw 0 0
/dev/vdb /home/alice/scratch ext4 rw 0 0
tmpfs /tmp tmpfs rw 0 0
"""


@pytest.mark.parametrize(("path", "kind"), [
    ("/home/alice/.cache/booksum", "nfs4"),
    ("/home/alice/scratch/cache", "ext4"),  # a local disk mounted inside the NFS home
    ("/mnt/my share/cache", "cifs"),  # /proc/mounts writes the space as \040
    ("/mnt/my", "ext4"),
    ("/tmp/x", "tmpfs"),
    ("/homework", "ext4"),  # /home is not a prefix of /homework
])
def test_the_file_system_is_the_longest_mount_above_the_path(path: str, kind: str) -> None:
    assert netfs.filesystem_type(path, MOUNTS) == kind


def test_a_cache_on_nfs_is_refused_with_a_way_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nserver:/x {tmp_path / 'nfs'} nfs rw 0 0\n", encoding="utf-8")
    monkeypatch.setattr(netfs, "MOUNTS", mounts)
    with pytest.raises(ConfigError, match=r"is on nfs, a network file system.*--cache-dir on a local disk"):
        CallCache(tmp_path / "nfs" / "cache")
    CallCache(tmp_path / "local").close()  # the same machine's local disk is fine
    monkeypatch.setenv(netfs.ALLOW_ENV, "allow")
    CallCache(tmp_path / "nfs" / "cache").close()
    monkeypatch.setattr(netfs, "MOUNTS", tmp_path / "no-such-file")  # not Linux: nothing known, nothing refused
    monkeypatch.delenv(netfs.ALLOW_ENV)
    CallCache(tmp_path / "nfs" / "other").close()


def test_the_cli_says_one_line_for_a_cache_on_nfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"server:/x {tmp_path} nfs4 rw 0 0\n", encoding="utf-8")
    monkeypatch.setattr(netfs, "MOUNTS", mounts)
    result = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "network file system" in result.output


def _answer(text: str, n: int) -> Completion:
    return Completion(text=text, finish_reason="stop", usage=Usage(100 + n, 20, 64, 0), model="m", latency_s=0.5)


def test_export_then_import_moves_every_answer_once(tmp_path: Path) -> None:
    assert sorted(CHECKED) == sorted(EXPORT_COLUMNS), "every exported column is checked on import"
    one, other = CallCache(tmp_path / "one"), CallCache(tmp_path / "other")
    try:
        for n in range(5):
            key, request = keyed(n)
            one.put(key, _answer(f"answer «{n}»", n), purpose="judge",
                    meta=CallMeta(request=request, model_string="openai:gpt-4o", run="r1", book="b.txt"))
        other.put(keyed(0)[0], _answer("kept: the other cache's own answer", 0))
        path = tmp_path / "answers.jsonl"
        assert export_answers(one, path) == (5, 0)
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 5 and all(json.loads(line)["kind"] == "booksum.cache-answer" for line in lines)
        assert "«4»" in lines[4], "UTF-8, not escaped"
        assert import_answers(other, path) == (5, 4)
        assert import_answers(other, path) == (5, 0), "importing twice adds nothing"
        got = other.get(keyed(3)[0])
        assert got is not None and got.text == "answer «3»" and got.usage == Usage(103, 20, 64, 0) and got.cache_hit
        assert other.get(keyed(0)[0]).text == "kept: the other cache's own answer"  # type: ignore[union-attr]
        assert len(other) == 5
    finally:
        one.close()
        other.close()


def test_an_export_carries_the_server_that_answered_and_an_older_file_still_imports(tmp_path: Path) -> None:
    one, other, old = CallCache(tmp_path / "one"), CallCache(tmp_path / "other"), CallCache(tmp_path / "old")
    try:
        key, request = keyed(7)
        one.put(key, _answer("from the server", 7), meta=CallMeta(
            request=request, server_url="http://gpu-a:8000/v1,http://gpu-b:8000/v1", server_identity="/m/qwen3-8b"))
        path = tmp_path / "answers.jsonl"
        export_answers(one, path)
        assert import_answers(other, path) == (1, 1)
        replayed = other.get(key)
        assert replayed is not None and replayed.server == "http://gpu-a:8000/v1,http://gpu-b:8000/v1"
        line = json.loads(path.read_text(encoding="utf-8"))
        assert line["server_identity"] == "/m/qwen3-8b"
        # a file written before the server was exported: the answer imports, without a server
        older = {k: v for k, v in line.items() if k not in ("server_url", "server_identity")}
        path.write_text(json.dumps(older) + "\n", encoding="utf-8")
        assert import_answers(old, path) == (1, 1)
        assert old.get(key).server is None  # type: ignore[union-attr]
    finally:
        one.close()
        other.close()
        old.close()


@pytest.mark.parametrize("url", ["http://user:secret@gpu-a:8000/v1", "http://gpu-a:8000/v1?key=secret",
                                 "http://gpu-a:8000/v1,https://u:p@gpu-b/v1"])
def test_an_imported_server_url_with_more_than_its_public_form_is_refused(tmp_path: Path, url: str) -> None:
    good = CallCache(tmp_path / "g")
    good.put(keyed(1)[0], _answer("fine", 1), meta=CallMeta(request=keyed(1)[1]))
    path = tmp_path / "answers.jsonl"
    export_answers(good, path)
    good.close()
    line = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**line, "server_url": url}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "c"), "--import", str(path)])
    assert result.exit_code == 2 and "line 1: server_url: not the public form" in " ".join(result.output.split())
    assert "secret" not in result.output


@pytest.mark.parametrize(("line", "what"), [
    ("{not json", "line 2 is not valid JSON"),
    ('{"kind": "booksum.cache-answer", "key": "k"}', "line 2: input_tokens: not a whole number"),
    ('["a list"]', "line 2: not an exported answer"),
])
def test_a_bad_export_line_is_refused_with_its_number_and_nothing_stored(tmp_path: Path, line: str, what: str) -> None:
    cache = CallCache(tmp_path / "c")
    good = CallCache(tmp_path / "g")
    good.put(keyed(1)[0], _answer("fine", 1), meta=CallMeta(request=keyed(1)[1]))
    path = tmp_path / "answers.jsonl"
    export_answers(good, path)
    good.close()
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "c"), "--import", str(path)])
    assert result.exit_code == 2 and what in " ".join(result.output.split())
    assert len(cache) == 0, "the file is checked whole before any answer is stored"
    cache.close()


def test_cli_export_is_atomic_and_import_reports_counts(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c")
    cache.put(keyed(1)[0], _answer("one", 1), meta=CallMeta(request=keyed(1)[1]))
    cache.close()
    out = tmp_path / "dir" / "answers.jsonl"
    exported = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "c"), "--export", str(out)])
    assert exported.exit_code == 0 and "exported 1 answers" in exported.output
    assert [p.name for p in out.parent.iterdir()] == ["answers.jsonl"], "no temporary file left beside it"
    imported = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "d"), "--import", str(out)])
    assert imported.exit_code == 0 and "imported 1 of 1 answers" in imported.output


# ---- /proc/self/mountinfo: the shared storage of clusters and clouds ----------------------

SHARED = ["nfs4", "nfs", "autofs", "cifs", "smb3", "9p", "lustre", "gpfs", "ceph", "beegfs", "glusterfs",
          "fuse.glusterfs", "fuse.ceph-fuse", "fuse.s3fs", "fuse.gcsfuse", "fuse.goofys", "fuse.rclone",
          "fuse.juicefs", "fuse.sshfs", "fuse.mountpoint-s3", "fuse.blobfuse2", "panfs", "wekafs"]
LOCAL = ["ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "fuse.portal", "fuseblk", "vfat", "squashfs"]
SEGMENT = st.text(st.characters(categories=["Ll", "Nd"]), min_size=1, max_size=8)


def mountinfo_line(mount_id: int, point: str, kind: str, optional: str) -> str:
    """One line as the kernel writes it (proc(5)):
    ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS."""
    escaped = point.replace(" ", "\\040")
    return f"{mount_id} 1 0:{mount_id} / {escaped} rw,relatime {optional}- {kind} src{mount_id} rw\n"


@given(kind=st.sampled_from(SHARED + LOCAL), parts=st.lists(SEGMENT, min_size=1, max_size=4),
       optional=st.sampled_from(["", "shared:1 ", "master:2 ", "shared:3 master:4 ", "propagate_from:5 "]),
       spaced=st.booleans())
def test_mountinfo_lines_name_shared_storage_by_type(kind: str, parts: list[str], optional: str,
                                                     spaced: bool) -> None:
    point = "/" + "/".join(parts) + (" data" if spaced else "")
    text = mountinfo_line(20, "/", "ext4", "shared:1 ") + mountinfo_line(42, point, kind, optional)
    assert netfs.filesystem_type(point + "/booksum/cache", text) == kind
    assert netfs.is_network(kind) == (kind in SHARED)


@pytest.mark.parametrize("kind", SHARED)
def test_a_cache_on_cluster_or_object_storage_is_refused(kind: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = tmp_path / "mountinfo"
    mounts.write_text(mountinfo_line(20, "/", "ext4", "shared:1 ") +
                      mountinfo_line(30, str(tmp_path / "shared"), kind, "master:1 "), encoding="utf-8")
    monkeypatch.setattr(netfs, "MOUNTS", mounts)
    with pytest.raises(ConfigError, match=f"is on {kind}, a network file system"):
        CallCache(tmp_path / "shared" / "cache")
    CallCache(tmp_path / "local").close()


def test_this_machines_own_mountinfo_parses() -> None:
    real = Path("/proc/self/mountinfo")
    if not real.exists():
        pytest.skip("no /proc/self/mountinfo here (not Linux)")
    assert netfs.filesystem_type("/", real.read_text(encoding="utf-8", errors="replace")) is not None
