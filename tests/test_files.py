"""Atomic writes: the old file or the new one, never half a file, and no temp files left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from booksum_app.files import atomic_write_text, write_json_atomic

REPO = Path(__file__).resolve().parents[1]


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


# ---- a pair written together: a kill at every step ------------------------------------------

_KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from booksum_app import files

kill_at = int(sys.argv[1])
steps = 0
real_replace, real_unlink = os.replace, os.unlink

def step() -> None:
    global steps
    steps += 1
    if steps == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

def replace(src, dst, **kw):
    step()
    return real_replace(src, dst, **kw)

def unlink(path, **kw):
    step()
    return real_unlink(path, **kw)

os.replace, os.unlink = replace, unlink
targets = [Path(a) for a in sys.argv[2:]]
files.atomic_write_texts({t: f"new {t.suffix}\\n" for t in targets})
print(steps)
"""


def _run_writer(kill_at: int, targets: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(kill_at), *map(str, targets)],
                          check=False, capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _generations(targets: list[Path]) -> set[str]:
    return {t.read_text().split()[0] for t in targets if t.exists()}


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("old", [True, False], ids=["replacing", "new"])
def test_a_kill_at_any_step_of_a_pair_never_leaves_old_and_new_side_by_side(
    tmp_path: Path, count: int, old: bool
) -> None:
    """SIGKILL before each rename or unlink of ``atomic_write_texts``: the targets present are of one run,
    and the next write's recovery completes the swap (or keeps the old run) and leaves no temporary file."""
    from booksum_app.files import recover_interrupted

    names = ["out.md", "out.json", "out.txt"][:count]
    finished = _run_writer(0, [tmp_path / "probe" / n for n in names])
    assert finished.returncode == 0, finished.stderr
    total = int(finished.stdout)
    assert total >= count + 2, "journal in, old targets out, new ones in, journal out"
    for kill_at in range(1, total + 1):
        folder = tmp_path / f"kill-{kill_at}"
        folder.mkdir()
        targets = [folder / n for n in names]
        if old:
            for t in targets:
                t.write_text(f"old {t.suffix}\n")
        killed = _run_writer(kill_at, targets)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        assert len(_generations(targets)) <= 1, f"old and new side by side after a kill at step {kill_at}"
        recover_interrupted(targets)
        present = [t for t in targets if t.exists()]
        assert present in ([], targets), f"after recovery: all of the pair or none (step {kill_at})"
        assert len(_generations(targets)) <= 1
        if not old and present:
            assert _generations(targets) == {"new"}
        assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in present), "no temporary left"


def test_recovery_leaves_a_live_writers_temporary_files_alone(tmp_path: Path) -> None:
    from booksum_app.files import recover_interrupted

    target = tmp_path / "out.md"
    mine = tmp_path / f".out.md.{os.getpid()}.abc123.tmp"
    dead = tmp_path / ".out.md.999999999.abc123.tmp"
    mine.write_text("mine")
    dead.write_text("dead")
    recover_interrupted([target])
    assert mine.exists() and not dead.exists()
