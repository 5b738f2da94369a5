"""The HTTP server booksum's fake model servers run on (the OpenAI/Anthropic one and Ollama's)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """Threaded, a deep listen backlog, and quiet about clients that hang up."""

    daemon_threads = True
    # socketserver's default listen backlog is 5: a burst of 77 concurrent calls (hier's leaves)
    # then overflows it and the kernel drops SYNs, which clients retry after 1 s, 3 s, 7 s...
    request_queue_size = 1024
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connection errors from clients that hung up are expected here; stay quiet."""


__all__ = ["QuietServer"]
