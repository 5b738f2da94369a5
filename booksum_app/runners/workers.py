"""Worker processes that end with the process that started them.

A ``ProcessPoolExecutor`` worker blocks reading its call queue, and holds that queue's write
end too, so when its parent is killed with SIGKILL it never reads EOF and lives on, an
orphan holding its memory (seen after ``kill -9`` of ``booksum compare``). The pool's
initializer :func:`exit_with_parent` starts a watcher that ends the worker once its parent
is gone.

Their work (n-gram statistics of whole books) is never what a paid call waits for, but on a
small machine it competes for the cores with the process that sends those calls:
:func:`background_worker` also lowers the worker's priority, so the scheduler gives the
driver the CPU first and the statistics the rest (measured: 89 -> 109 calls/s on a 200-book
grid on 2 cores, ``benchmarks/bench_compare_scale.py --books 200 --distinct``).
"""

from __future__ import annotations

import os
import threading
import time

PARENT_POLL_S = 1.0
BACKGROUND_NICENESS = 10  # added to the parent's: below the driver, not starved on an idle box


def exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """A pool initializer: end this worker within ``poll_s`` of its parent ``parent_pid`` dying."""

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent_pid:  # re-parented: the parent is gone
                os._exit(0)

    threading.Thread(target=watch, name="booksum-parent-watch", daemon=True).start()


def background_worker(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """A pool initializer: run this worker below its parent's priority, and end it with the parent."""
    try:
        os.nice(BACKGROUND_NICENESS)
    except OSError:  # a platform or sandbox without it: same work, same priority
        pass
    exit_with_parent(parent_pid, poll_s)


__all__ = ["BACKGROUND_NICENESS", "background_worker", "exit_with_parent"]
