"""scripts/quickstart says what it does within its first second, a line at least every heartbeat while
pip compiles, builds llama.cpp lean (CMAKE_ARGS), and shows pip's failure. A stand-in python plays
venv, pip (compiling in [N/M] steps) and booksum, so nothing is installed."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = r"""#!/usr/bin/env bash
# stand-in for python: "-m venv DIR" makes DIR/bin/{python,booksum}; "-m pip install ..." compiles slowly
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$1 $2" = "-m venv" ]; then
    mkdir -p "$3/bin"; cp "$0" "$3/bin/python"
    printf '#!/usr/bin/env bash\necho "booksum $*"\n' > "$3/bin/booksum"; chmod +x "$3/bin/python" "$3/bin/booksum"
    exit 0
fi
if [ "$1 $2 $3" = "-m pip install" ]; then
    echo "pip args: $*"; echo "CMAKE_ARGS=$CMAKE_ARGS"
    case "$*" in *local*) ;; *) exit 0 ;; esac
    [ -n "${FAKE_PIP_FAIL:-}" ] && { echo "error: compiler exploded"; exit 1; }
    echo "Building wheel for llama-cpp-python (pyproject.toml): started"
    for i in 1 2 3 4 5; do
        sleep 0.7
        if [ -n "${FAKE_MAKE:-}" ]; then echo "[ ${i}0%] Building CXX object x$i.cpp.o"
        else echo "  [$i/5] Building CXX object ggml/src/x$i.cpp.o"; fi
    done
    exit 0
fi
exit 2
"""


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "quickstart", tmp_path / "scripts" / "quickstart")
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON, encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def _run(checkout: Path, **env: str) -> tuple[list[tuple[float, str]], int]:
    """The script's lines with the second each arrived, and its exit status."""
    full = {**os.environ, "PYTHON": str(checkout / "fake-python"), "QUICKSTART_HEARTBEAT_S": "1", **env}
    start = time.monotonic()
    proc = subprocess.Popen(["bash", str(checkout / "scripts" / "quickstart")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=full, text=True)
    assert proc.stdout is not None
    with proc.stdout:
        lines = [(time.monotonic() - start, line.rstrip("\n")) for line in proc.stdout]
    return lines, proc.wait(timeout=60)


def test_it_says_what_it_does_at_once_and_a_line_every_heartbeat(checkout: Path) -> None:
    lines, status = _run(checkout)
    assert status == 0, lines
    first_at, first = lines[0]
    assert first_at < 1.0 and "two steps" in first and "minutes" in first
    text = "\n".join(line for _, line in lines)
    assert "compiled from source" in text
    beats = [(t, line) for t, line in lines if "compiling llama.cpp [" in line]
    assert beats, text
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(lines)]
    assert max(gaps) < 2.5, "never silent for longer than the heartbeat (1 s here) and a second of slack"
    assert lines[-1][1].startswith("booksum summarize samples/h-g-wells_the-time-machine.epub")


def test_pip_is_not_quiet_and_llama_cpp_is_built_lean(checkout: Path) -> None:
    _, status = _run(checkout, CMAKE_ARGS="-DGGML_NATIVE=OFF")
    assert status == 0
    log = (checkout / ".venv" / "quickstart-pip.log").read_text(encoding="utf-8")
    assert "pip args: -m pip install -v .[local]" in log and " -q" not in log
    cmake = [line for line in log.splitlines() if line.startswith("CMAKE_ARGS=")][-1]
    assert "-DLLAVA_BUILD=OFF" in cmake and "-DLLAMA_BUILD_SERVER=OFF" in cmake
    assert cmake.endswith("-DGGML_NATIVE=OFF"), "the user's own CMAKE_ARGS come last and win"


def test_a_failed_install_shows_the_end_of_pips_output(checkout: Path) -> None:
    lines, status = _run(checkout, FAKE_PIP_FAIL="1")
    text = "\n".join(line for _, line in lines)
    assert status == 1 and "pip failed" in text and "compiler exploded" in text
    assert "booksum summarize" not in text


def test_makes_percentages_are_shown_too(checkout: Path) -> None:
    lines, status = _run(checkout, FAKE_MAKE="1")
    assert status == 0 and any(re.search(r"compiling llama.cpp \[ *\d+%\]", line) for _, line in lines), lines
