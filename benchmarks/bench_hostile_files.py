"""Files on disk as input: a planted recovery journal and an amplifying PDF, before and after.

Run by hand from the repository root: ``python benchmarks/bench_hostile_files.py [--pages 2000]
[--timeout 150]``. First plants two dead-writer journals in an output folder (one naming a file
outside it by absolute path, one through ``..``) and runs the recovery ``summarize -o`` runs
first; prints whether the files outside were replaced. Then builds a PDF whose pages all draw
one compressed content stream (``--pages`` pages, 1,500 lines a page) and times ``booksum
inspect`` on it in a subprocess, killed after ``--timeout`` seconds. No network, no key. Run it
with ``PYTHONPATH`` set to another checkout to measure that one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pdf_fixtures import amplifying_pdf

from booksum_app.files import recover_interrupted


def journal_attack(root: Path) -> list[str]:
    """Plant the journals, recover as ``summarize -o out/OUT`` does, say what happened outside."""
    out, outside = root / "out", root / "outside"
    out.mkdir(parents=True)
    outside.mkdir()
    victims = [outside / "victim.txt", outside / "victim2.txt"]
    for victim in victims:
        victim.write_text("precious\n")
    for name in (".OUT.md.999999.abcdefgh.tmp", ".OUT.md.999999.evil0000.tmp", ".OUT.json.999998.evil0000.tmp"):
        (out / name).write_text("PLANTED\n")
    (out / ".OUT.md.999999.journal.booksum-swap").write_text(json.dumps({"swap": [
        [str(out / ".OUT.md.999999.abcdefgh.tmp"), str(out / "OUT.md")],
        [str(out / ".OUT.md.999999.evil0000.tmp"), str(victims[0])]]}))  # absolute, outside
    (out / ".OUT.json.999998.journal.booksum-swap").write_text(json.dumps({"swap": [
        [str(out / ".OUT.json.999998.evil0000.tmp"), "out/../outside/victim2.txt"]]}))  # relative, through ..
    here = os.getcwd()
    os.chdir(root)
    try:
        recover_interrupted([Path("out/OUT.md"), Path("out/OUT.json")])
    finally:
        os.chdir(here)
    return [f"{v.name} outside the folder: " + ("untouched" if v.read_text() == "precious\n" else "REPLACED")
            for v in victims]


def amplified_inspect(root: Path, pages: int, timeout_s: float) -> str:
    """``booksum inspect`` on the amplifying PDF: its time, exit status and first stderr line."""
    path = root / "amplified.pdf"
    path.write_bytes(amplifying_pdf(pages, 1500))
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "booksum_app", "inspect", str(path)], check=False,
                              capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        return f"{path.stat().st_size:,} bytes, {pages} pages: no output, killed after {timeout_s:.0f} s"
    first = (done.stderr.strip().splitlines() or [""])[0]
    return (f"{path.stat().st_size:,} bytes, {pages} pages: exit {done.returncode} after "
            f"{time.monotonic() - start:.1f} s: {first}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=150.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for line in journal_attack(Path(folder) / "journal"):
            print("journal:", line)
    with tempfile.TemporaryDirectory() as folder:
        print("pdf:", amplified_inspect(Path(folder), args.pages, args.timeout))


if __name__ == "__main__":
    main()
