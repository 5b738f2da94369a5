"""Worker processes that end with the process that started them.

A ``ProcessPoolExecutor`` worker blocks reading its call queue, and holds that queue's write
end too, so when its parent is killed with SIGKILL it never reads EOF and lives on, an
orphan holding its memory (seen after ``kill -9`` of ``booksum compare``). The pool's
initializer :func:`exit_with_parent` starts a watcher that ends the worker once its parent
is gone.
"""

from __future__ import annotations

import os
import threading
import time

PARENT_POLL_S = 1.0


def exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """A pool initializer: end this worker within ``poll_s`` of its parent ``parent_pid`` dying."""

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent_pid:  # re-parented: the parent is gone
                os._exit(0)

    threading.Thread(target=watch, name="booksum-parent-watch", daemon=True).start()


__all__ = ["exit_with_parent"]
