"""``post_json``: the HTTP client booksum gives backend plugins, with the built-ins' bounds.

A plugin that sends with it gets what the built-in carriers get: the attempt's wall-clock
deadline (``--timeout``, or less when the attempt has less left) on every socket operation, so
a server that drips its reply is cut and the socket freed (the exchange is marked self-bounded:
the door, ``llm/door.py``, waits for it to stop at that deadline rather than abandon its thread); the reply capped at
``deadline.MAX_REPLY_BYTES``; the reply parsed by ``jsonin`` (a proxy's HTML page or a reply
nested 100,000 deep is one line); and an error status mapped by
:func:`~booksum_app.llm.http_status.error_for_status`, its text redacted. HTTPS and proxies
(``HTTPS_PROXY``...) work as in ``httpx``, which comes with the ``openai`` package.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from booksum_app.config import DEFAULT_TIMEOUT_S
from booksum_app.errors import TransientModelError, server_message
from booksum_app.jsonin import parse_json
from booksum_app.llm.deadline import (
    HTTPX_POOL,
    MAX_REPLY_BYTES,
    attempt_deadline,
    deadline_transport,
    http_modules,
    reply_over_cap,
    self_bounded,
    time_left,
)
from booksum_app.llm.http_status import error_for_status

_lock = threading.Lock()
_client: Any = None


def _shared_client() -> Any:
    """One ``httpx`` client for every plugin call (thread-safe, pooled connections)."""
    global _client
    with _lock:
        if _client is None:
            _, httpx = http_modules()
            _client = httpx.Client(transport=deadline_transport(**HTTPX_POOL), follow_redirects=False)
        return _client


def post_json(
    url: str, payload: Any, *, headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
    name: str = "the model", secret: str | None = None, key_hint: str = "the API key",
) -> Any:
    """POST ``payload`` as JSON to ``url`` and return the reply's parsed JSON.

    Args:
        url: the endpoint (``http://`` or ``https://``).
        payload: any JSON value.
        headers: extra request headers (``Authorization``...); never part of an error message.
        timeout: seconds for the whole exchange; inside a booksum call the attempt's own
            deadline (``--timeout``) bounds it too, whichever comes first.
        name: the model string error messages start with.
        secret: the API key in use, removed from any server message.
        key_hint: what to check when the server rejects the key ("MYPROV_API_KEY").

    Raises:
        TransientModelError: timed out, connection failed, reply over the byte cap or not JSON,
            408/5xx (retried by booksum's call layer).
        RateLimited: 429 (with the server's Retry-After).
        AuthError, ContextTooLong, ModelError: the other error statuses.
    """
    left = time_left()
    limit = timeout if left is None else min(timeout, left)
    if limit <= 0:
        raise TransientModelError(f"{name}: request timed out")
    _, httpx = http_modules()
    with attempt_deadline(limit), self_bounded():  # the door need not time this attempt as well
        try:
            response = _shared_client().post(url, json=payload, headers=dict(headers or {}), timeout=limit)
        except httpx.TimeoutException as exc:
            raise TransientModelError(f"{name}: request timed out") from exc
        except httpx.TransportError as exc:
            if reply_over_cap():
                raise TransientModelError(f"{name}: the reply is larger than {MAX_REPLY_BYTES // 2**20} MB") from exc
            raise TransientModelError(f"{name}: connection failed ({server_message(str(exc), secret)})") from exc
    if not 200 <= response.status_code < 300:
        raise error_for_status(response.status_code, response.content, response.headers, name=name, secret=secret,
                               key_hint=key_hint)
    return parse_json(response.content, where=f"{name}: the server's reply", error=TransientModelError)


__all__ = ["post_json"]
