"""How often a Ctrl-C pressed the instant a yes/no question appears leaves the process waiting.

Each trial starts a child at a pseudo-terminal that asks ``Run it? [y/N]`` and sends it Ctrl-C
as soon as the prompt is read back; a child that has not ended 3 s later is counted as hung and
killed. ``--prompt click`` asks with ``click.confirm`` (``input()``, blocked in ``read()``);
``--prompt booksum`` with ``booksum_app.cli.ask.confirm`` (a ``select()`` that wakes every
0.2 s). The race is in the child's few microseconds between writing the prompt and entering
``read()``, so it shows most on a busy machine: run it beside CPU burners
(``sh -c 'while :; do :; done' &`` once per core) to see it.

    python benchmarks/bench_prompt_race.py --prompt click --trials 40
    python benchmarks/bench_prompt_race.py --prompt booksum --trials 40
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pty_terminal import read_until

CHILD = """
import sys
import click
from booksum_app.cli.ask import confirm
try:
    confirm("Run it?") if sys.argv[1] == "booksum" else click.confirm("Run it?", err=True)
except (KeyboardInterrupt, click.Abort):
    sys.stderr.write("\\n<no>\\n")
    sys.exit(6)
"""


def trial(prompt: str) -> bool:
    """One child asked and interrupted; True when it ended on its own."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", CHILD, prompt], dict(os.environ, PYTHONPATH=str(ROOT)))
    read_until(fd, b"[y/N]: ", 30)
    os.write(fd, b"\x03")
    ended = b"<no>" in read_until(fd, b"<no>", 3)
    if not ended:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", choices=("click", "booksum"), default="booksum")
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args()
    started = time.monotonic()
    hung = sum(not trial(args.prompt) for _ in range(args.trials))
    print(f"{args.prompt}: {hung} of {args.trials} children hung after Ctrl-C at the prompt "
          f"({time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
