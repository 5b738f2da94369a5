"""Atomic writes: the old file or the new one, never half a file, and no temp files left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from booksum_app.files import atomic_write_text, write_json_atomic


def test_atomic_write_creates_parents_and_replaces_content(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "out.json"
    write_json_atomic(path, {"book": "x"})
    write_json_atomic(path, {"book": "y", "ü": "中文"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"book": "y", "ü": "中文"}
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]


def test_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = atomic_write_text(tmp_path / "summary.md", "old\n")

    with pytest.raises(TypeError):
        atomic_write_text(path, 42)  # type: ignore[arg-type]  # fails mid-write
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]


def test_a_file_written_by_name_replaces_the_target_only_when_its_writer_succeeds(tmp_path: Path) -> None:
    """``replacing`` hands another writer (llama.cpp's quantizer) a temp path beside the target."""
    from booksum_app.files import FILE_MODE, replacing

    target = atomic_write_text(tmp_path / "weights" / "copy.gguf", "old")
    with pytest.raises(OSError), replacing(target) as tmp:
        tmp.write_bytes(b"half")
        raise OSError("the writer failed")
    assert target.read_text() == "old" and [p.name for p in target.parent.iterdir()] == ["copy.gguf"]
    with replacing(target) as tmp:
        assert tmp.parent == target.parent and tmp.stat().st_mode & 0o777 == FILE_MODE
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new" and [p.name for p in target.parent.iterdir()] == ["copy.gguf"]
