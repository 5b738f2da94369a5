"""A batch backend's calls (vLLM): the requests not cached sent as one batch through the call layer.

:func:`complete_batch` is :meth:`~booksum_app.llm.calls.Client.complete_many` for a
:class:`~booksum_app.llm.base.BatchBackend`: answers in the cache are replayed, requests another
run holds are waited for (or taken over), the rest go as one batch under the client's cost
ceiling and retries, and every answer of the batch is committed before any is reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from booksum_app.errors import CostLimitExceeded
from booksum_app.llm.base import BatchBackend, Completion, Request
from booksum_app.llm.billing import Spent
from booksum_app.llm.cache import Lease
from booksum_app.llm.door import checked

if TYPE_CHECKING:
    from booksum_app.llm.calls import Client


def complete_batch(client: Client, requests: list[Request]) -> list[Completion]:
    """Answer ``requests`` on a batch backend (vLLM): cached answers replayed, the rest sent as one batch,
    requests another run holds waited for."""
    keys = [client._key(r) for r in requests]
    results: list[Completion | None] = [None] * len(requests)
    todo: list[int] = []  # ours to send in one batch
    leases: dict[int, Lease] = {}
    elsewhere: list[int] = []  # in flight in another run (or twice in this batch)
    for i, key in enumerate(keys):
        claimed = client.cache.try_claim(key) if client.cache is not None else None
        if isinstance(claimed, Completion):
            results[i] = claimed
            client._ledger.finish(requests[i], claimed, Spent())
        elif claimed is None and client.cache is not None:
            elsewhere.append(i)
        else:
            todo.append(i)
            if claimed is not None:
                leases[i] = claimed
    try:
        if todo:
            _send_batch(client, requests, keys, todo, results, leases)
    finally:
        for lease in leases.values():  # not answered: a waiting run takes them over
            if client.cache is not None:
                client.cache.release(lease)
    for i in elsewhere:  # waits for the other run's answer, or takes the request over
        results[i] = client.complete(requests[i])
    return [r for r in results if r is not None]

def _send_batch(
    client: Client,
    requests: list[Request],
    keys: list[str],
    todo: list[int],
    results: list[Completion | None],
    leases: dict[int, Lease],
) -> None:
    """Send ``todo`` as one batch; commit every answer, then report each (fills ``results``)."""
    backend = client.backend
    if not isinstance(backend, BatchBackend):  # pragma: no cover - guarded by caller
        raise TypeError("not a batch backend")
    batch = [requests[i] for i in todo]
    reserved = 0.0
    try:
        for request in batch:
            reserved += client._reserve(request)
    except CostLimitExceeded:
        with client._lock:
            client._reserved_usd -= reserved
        raise
    try:
        with client._lock:
            client._batch_in_flight += len(batch)
        try:
            completions = [checked(c, name=client.info.name, latency_s=0.0)
                           for c in client._retrying()(backend.complete_batch, batch)]
        finally:
            with client._lock:
                client._batch_in_flight -= len(batch)
    finally:
        with client._lock:
            client._reserved_usd -= reserved
    answered = [client._priced(request, c) for request, c in zip(batch, completions, strict=True)]
    spents = [Spent(attempts=1) for _ in answered]
    for request, completion, spent in zip(batch, answered, spents, strict=True):
        client._ledger.bill(completion, spent, wasted=not completion.text.strip())
        if not completion.text.strip():
            client._log_wasted(request, completion)
    # every answer of the batch is committed before any is reported: an on_call hook
    # (progress display) that fails, or a kill meanwhile, must not cost the others
    if client.cache is not None:
        for i, completion in zip(todo, answered, strict=True):
            client.cache.put(
                keys[i], completion, purpose=requests[i].purpose, lease=leases.pop(i, None),
                meta=client._meta(requests[i]),
            )
    for i, completion, spent in zip(todo, answered, spents, strict=True):
        client.reasoning.check(completion)  # kept in the cache; one that only reasoned ends the run
        results[i] = completion
        client._ledger.finish(requests[i], completion, spent)


__all__ = ["complete_batch"]
