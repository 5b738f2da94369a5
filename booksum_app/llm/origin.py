"""Which server wrote a cached answer, and when a run replays answers another server wrote.

A server's answers are cached by its deployment (``--deployment``, else the weights' identity
the server reports, else the model name), not by the URL that reached it, so another spelling
of the host or an added replica replays them. Each stored answer also keeps the URL it came
from (among replicas, the one that answered) and the identity the server reported (vLLM's
``root``, llama.cpp's ``model_path``, Ollama's digest). A run whose servers share no URL with
the one that wrote a replayed answer counts it in its record, and says so in one line when that
replay rests on the model name alone (neither a reported identity nor ``--deployment`` in the
key). An answer stored before servers were kept counts as replayed without a server, in the
record only.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from booksum_app.llm.base import Completion

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"})


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment, and without a trailing slash: safe to store and print."""
    parts = urllib.parse.urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def urls_of(base_url: str | None) -> tuple[str, ...]:
    """The public form of each comma-separated URL of ``base_url``."""
    return tuple(public_url(u) for u in (base_url or "").split(",") if u.strip())


def _place(url: str) -> tuple[str, str, int | None, str]:
    """What tells two URLs apart: ``localhost`` and ``127.0.0.1`` are one machine."""
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.scheme.lower(), "loopback" if host in LOOPBACK else host, port, parts.path.rstrip("/"))


def same_server(stored: str, current: tuple[str, ...]) -> bool:
    """Whether the server(s) of a stored answer (a comma list) share a URL with ``current``."""
    places = {_place(u) for u in current}
    return any(_place(u) in places for u in stored.split(",") if u.strip())


class Origins:
    """The servers a client calls, and the answers it replayed from others (thread-safe)."""

    def __init__(self, base_url: str | None, identity: str | None, deployment: str | None) -> None:
        self.urls = urls_of(base_url)
        self.identity = identity
        self.deployment = deployment
        self._lock = threading.Lock()
        self._others: Counter[str] = Counter()  # stored URL -> answers replayed from it on the model name alone
        self._vouched: Counter[str] = Counter()  # ... keyed by the reported weights or the user's --deployment
        self._unrecorded = 0  # replayed answers stored without their server (before it was kept)

    @classmethod
    def of(cls, backend: Any) -> Origins:
        """The servers of ``backend`` (a :class:`~booksum_app.llm.base.BackendBase`)."""
        return cls(backend.base_url, backend.server_identity, backend.deployment)

    def stamp(self) -> tuple[str | None, str | None]:
        """``(server_url, server_identity)`` to store with an answer this client receives."""
        return (",".join(self.urls) or None, self.identity)

    def replayed(self, completion: Completion) -> None:
        """Count a cache hit that another server (or an unrecorded one) wrote."""
        if not self.urls:
            return  # a hosted API or an in-process model: answers belong to the model name
        if completion.server is None:
            with self._lock:
                self._unrecorded += 1
        elif not same_server(completion.server, self.urls):
            with self._lock:  # the key held the weights' identity or the deployment: the same weights
                (self._vouched if self.identity or self.deployment else self._others)[completion.server] += 1

    def notes(self) -> list[str]:
        """One line when answers written by another server were replayed, else none."""
        line = replay_note(self.record())
        return [line] if line else []

    def record(self) -> dict[str, Any] | None:
        """What the run record keeps: the servers, their identity, the deployment and the replays."""
        if not self.urls:
            return None
        with self._lock:
            others, vouched, unrecorded = dict(self._others), dict(self._vouched), self._unrecorded
        return {"urls": list(self.urls), "identity": self.identity, "deployment": self.deployment,
                "replayed_from_other_servers": others, "replayed_from_same_weights": vouched,
                "replayed_without_server": unrecorded}


def replay_note(record: Mapping[str, Any] | None) -> str | None:
    """The line a run prints when its record (:meth:`Origins.record`) counts answers another server wrote."""
    others = dict(record.get("replayed_from_other_servers") or {}) if record else {}
    if not others or record is None:
        return None
    n = sum(others.values())
    places = ", ".join(sorted(others))
    keep_apart = ("pass another --deployment NAME" if record.get("deployment")
                  else "pass --deployment NAME if it serves other weights")
    return (f"{n} answer{'s' if n != 1 else ''} replayed from the cache {'were' if n != 1 else 'was'} written by "
            f"another server ({places}) under the same model name: {keep_apart} to ask this one")


__all__ = ["LOOPBACK", "Origins", "public_url", "replay_note", "same_server", "urls_of"]
