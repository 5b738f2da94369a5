"""The one call layer every model goes through: cache, retries, concurrency bound, cost.

:class:`Client` wraps any :class:`~booksum_app.llm.base.Backend` and implements
:class:`~booksum_app.llm.base.ChatModel`:
- a persistent call cache (``llm/cache.py``) with a lease on each request in flight, so runs sharing it wait;
- retries (tenacity, exponential backoff, full jitter) on ``RateLimited`` and ``TransientModelError``,
  honouring Retry-After up to ``RETRY_AFTER_MAX_S``; other errors are not retried; then one line;
- an empty reply is retried; if every attempt is empty the last (uncached) one is returned for the
  strategy to resample; one cut at the limit is not resent (a reasoning model's fails with a line);
- a bound on calls in flight (``complete`` from any thread, ``submit``, ``complete_many``); vLLM batches
  (``batches.py``);
- every paid reply counted, used or not, in the totals, the call's record and every open ``Meter``;
- an optional cost ceiling checked against each uncached call's worst case, and before each retry;
- a thread-safe log of :class:`CallRecord` and an ``on_call`` hook for progress displays;
- every attempt through one door (``llm/door.py``: ``attempt_timeout_s`` bounds it, its Completion is checked, a
  failure is one redacted line); a late reply is billed as wasted, an answer far past ``max_tokens`` retried.
"""

from __future__ import annotations

import contextvars
import functools
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Self

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from booksum_app.errors import AuthError, BooksumError, CostLimitExceeded, RateLimited, TransientModelError
from booksum_app.llm.base import Backend, BatchBackend, Completion, ModelInfo, Request, Tally, Usage
from booksum_app.llm.batches import complete_batch
from booksum_app.llm.billing import CallRecord, InputRatio, Ledger, Origins, Spent, fallback_counter, priced
from booksum_app.llm.cache import CallMeta, CallStore, Lease
from booksum_app.llm.context import current_context, ranked
from booksum_app.llm.door import Door, checked_members, overlong
from booksum_app.llm.limiter import PriorityPool, limit_for, limiter_report
from booksum_app.llm.request_key import OnceMemo, prompt_tokens, request_json, request_key
from booksum_app.llm.retry_policy import (
    BACKOFF_INITIAL_S,
    BACKOFF_MAX_S,
    DEFAULT_MAX_ATTEMPTS,
    BudgetSpentOnReasoning,
    CutEmpty,
    EmptyReply,
    Reasoning,
    ReasoningOnly,
    retry_wait,
    too_long_a_wait,
)
from booksum_app.llm.spec import LLMSettings
from booksum_app.money import usd

# Failures no other request of the model would escape: after one, the client sends nothing more.
MODEL_WIDE = (AuthError, ReasoningOnly, BudgetSpentOnReasoning)


class Client:
    """A :class:`ChatModel` around one backend: cache, retries, concurrency bound, cost accounting."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: CallStore | None = None,
        concurrency: int | None = None,
        initial_concurrency: int | None = None,
        max_cost_usd: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        adaptive: bool = False,
        count_tokens: Callable[[str], int] | None = None,
        on_call: Callable[[CallRecord], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        spec: Any = None,
        notice: str | None = None,
        attempt_timeout_s: float | None = None, secrets: Sequence[str] = (),  # the door's: --timeout, keys
        settings: LLMSettings | None = None,
    ) -> None:
        if settings is not None:  # the resolved call settings, whole (get_model): they win over the keywords
            attempt_timeout_s, max_attempts = settings.timeout_s, settings.max_attempts
            max_cost_usd = settings.max_cost_usd
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.settings = settings
        self.timeout_s = attempt_timeout_s  # one attempt's bound: the door's and the limiter's
        self.backend = backend
        self.cache = cache
        checked_members(backend)  # a BackendBase (every member read below has a default), numbers in range
        self.concurrency = max(1, int(concurrency if concurrency is not None else backend.default_concurrency))
        self.max_cost_usd, self.max_attempts = max_cost_usd, max_attempts
        self._ledger, self._input_ratio = Ledger(backend.info, on_call, Origins.of(backend)), InputRatio()
        self._sleep = sleep
        self._wait = retry_wait(backoff_initial_s, backoff_max_s)
        # a named tokenizer is what inspect and compare's plan count with: the run counts with it too
        native = backend.count_tokens if backend.counts_natively else None
        self._count = count_tokens or native or fallback_counter(backend.info)
        # the named tokenizer count_tokens uses (chunk cuts made with it can be shared); None
        # when it counts with the model's own counter or one it was given
        self.tokenizer_name: str | None = None if count_tokens or native else backend.info.tokenizer
        self._prefix_tokens: OnceMemo[str, int] = OnceMemo()  # a judge's prefix is counted once
        self._identity: dict[str, str | None] = {
            "kind": backend.cache_kind,
            "model": backend.info.name,
            "base_url": backend.cache_location,  # the model's deployment, not the URL that reached it
        }
        effort = backend.reasoning_effort
        if effort:  # absent otherwise: every other model's keys stay as they were
            self._identity["reasoning_effort"] = str(effort)
        self._identity.update(Reasoning.key_parts(backend))  # --thinking on/off: another request than auto's
        start = self.concurrency if initial_concurrency is None else min(initial_concurrency, self.concurrency)
        self._limit = limit_for(backend, start=start, cap=self.concurrency, adaptive=adaptive,
                                deadline_s=self.timeout_s)  # fixed, or adaptive; queues kept under an attempt's bound
        self.limiter_report = functools.partial(limiter_report, self._limit, backend)  # the record's ``limiter``
        backend.expect_callers(self._limit.callers)  # vLLM gathers the callers' calls into batches
        self._lock, self._reserved_usd = threading.Lock(), 0.0
        self._stopped: BooksumError | None = None  # a failure every later request would meet (MODEL_WIDE)
        self._batch_in_flight = 0  # a batch backend's calls bypass the limit's send gate
        # room a backend adds to each request's max_tokens (a reasoning model's hidden tokens), read per call
        self.reasoning = Reasoning(backend, self._ledger.note)
        self._executor: PriorityPool | None = None
        self._door = Door(backend, name=backend.info.name, timeout_s=self.timeout_s, on_late=self._bill_late,
                          secrets=secrets)
        self.spec: Any = spec  # the registry's ModelSpec when built by get_model
        self.notice = notice  # one line for the CLI (e.g. fell back to the demo model)

    # ---- ChatModel ---------------------------------------------------------------------

    @property
    def info(self) -> ModelInfo:
        """The backend's model metadata (context window, tokenizer, prices)."""
        return self.backend.info

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as this model counts them."""
        return self._count(text)

    def complete(self, request: Request) -> Completion:
        """Answer one request: from the cache when possible, else from the backend with retries."""
        key = self._key(request)
        lease: Lease | None = None
        if self.cache is not None:
            claimed = self.cache.try_claim(key)
            if claimed is None:  # another caller is answering it: wait for that without a slot
                self._give_back_slot()
                claimed = self.cache.claim(key)
            if isinstance(claimed, Completion):
                self._ledger.finish(request, claimed, Spent())
                return claimed
            lease = claimed
        spent = Spent()
        try:
            estimate = self._reserve(request)
            try:
                completion = self._call_with_retries(request, spent)
            except BaseException:
                if spent.attempts:  # paid replies of a call that failed still reach the totals' display
                    self._ledger.report_failed(request, spent)
                raise
            finally:
                with self._lock:
                    self._reserved_usd -= estimate
            if self.cache is not None and lease is not None:
                self.cache.put(
                    key, completion, purpose=request.purpose, lease=lease, meta=self._meta(request, completion)
                )
                lease = None
        finally:
            if self.cache is not None and lease is not None:
                self.cache.release(lease)  # failed: a waiting run takes the request over
        self._ledger.finish(request, completion, spent)
        return completion

    def submit(self, request: Request, *, priority: Any = 0) -> Future[Completion]:
        """Start ``request`` on the client's worker pool; the result comes back as a future.

        When calls wait for a slot, the lowest caller's rank (``CallContext.rank``), then ``priority``,
        starts first (equal ones in submission order): strategies put their critical path first.
        The call runs in a copy of the caller's context: it keeps the caller's run and book labels.
        """
        context = contextvars.copy_context()  # one per call: a Context runs in one thread at a time
        return self._pool().submit(lambda: context.run(self.complete, request), priority=ranked(priority))

    def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        """Answer every request concurrently (or as one batch); results in request order."""
        if isinstance(self.backend, BatchBackend):
            return complete_batch(self, list(requests))
        futures = [self.submit(request) for request in requests]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise

    # ---- accounting --------------------------------------------------------------------

    @property
    def on_call(self) -> Callable[[CallRecord], None] | None:
        """The hook told of each finished call (a progress display)."""
        return self._ledger.on_call

    @on_call.setter
    def on_call(self, hook: Callable[[CallRecord], None] | None) -> None:
        self._ledger.on_call = hook

    @property
    def usage(self) -> Usage:
        """Tokens paid for by this client (cache hits excluded), wasted replies included."""
        return self._ledger.paid

    @property
    def tally(self) -> Tally:
        """Every call answered through this client (cache hits included) and every paid reply."""
        return self._ledger.totals

    @property
    def cost_usd(self) -> float:
        """Dollars spent by this client (cache hits cost nothing)."""
        return self._ledger.totals.spent_usd

    @property
    def calls(self) -> list[CallRecord]:
        """A copy of the log of finished calls, in finishing order."""
        return self._ledger.records

    servers = property(lambda self: self._ledger.origins.record(), doc="The run record's servers (llm/origin.py).")

    @property
    def n_calls(self) -> int:
        """Calls answered (cached or not)."""
        return self._ledger.totals.calls

    @property
    def n_cache_hits(self) -> int:
        """Calls answered from the cache."""
        return self._ledger.totals.cache_hits

    @property
    def notes(self) -> list[str]:
        """One line per anomaly seen in the replies (missing or absurd usage), for the end of a run."""
        return self._ledger.notes

    @property
    def limit(self) -> int:
        """Calls allowed in flight now (the adaptive limit, or the fixed cap)."""
        return self._limit.limit

    @property
    def in_flight(self) -> int:
        """Calls sent to the backend and not yet answered (the send gate's, and a batch's)."""
        return self._limit.sending + self._batch_in_flight  # the gate counts under its own lock

    def close(self) -> None:
        """Stop the worker pool (waiting for running calls), close the cache and the backend."""
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None
        if self.cache is not None:
            self.cache.close()
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_cached(self, request: Request) -> bool:
        """Whether the call cache holds an answer to ``request``: a plan's free call. Calls nothing."""
        return self.cached_answer(request) is not None

    def cached_answer(self, request: Request) -> Completion | None:
        """The call cache's answer to ``request``, or None; claims nothing, logs nothing, calls nothing."""
        return self.cache.get(self._key(request)) if self.cache is not None else None

    def _key(self, request: Request) -> str:
        return request_key(request, backend=self._identity)

    def _meta(self, request: Request, completion: Completion | None = None) -> CallMeta:
        """What the call log keeps: the request as sent (and the key's backend), the model string, run, book,
        and the server: the replica that wrote ``completion`` when its backend named it, else the client's."""
        context = current_context()
        urls, identity = self._ledger.origins.stamp()
        if completion is not None and completion.server:
            urls = completion.server
        return CallMeta(request_json(request, backend=self._identity), self.info.name, context.run, context.book,
                        urls, identity)

    def _pool(self) -> PriorityPool:
        with self._lock:
            if self._executor is None:
                self._executor = PriorityPool(self._limit, name="booksum-call")
            return self._executor

    def _worst_case_usd(self, request: Request) -> float:  # the prompt as the provider bills it (billing.py)
        if self.max_cost_usd is None:
            return 0.0
        tokens = math.ceil(prompt_tokens(request, self._count, self._prefix_tokens) * self._input_ratio.factor)
        return self.info.cost_usd(Usage(tokens, request.max_tokens + self.reasoning.tokens))

    def _reserve(self, request: Request) -> float:
        """Hold the worst-case cost of a call about to be made, or raise CostLimitExceeded."""
        estimate = self._worst_case_usd(request)
        if self.max_cost_usd is None:
            return 0.0
        with self._lock:
            spent = self._ledger.totals.spent_usd
            committed = spent + self._reserved_usd
            if committed + estimate > self.max_cost_usd:
                sent = self.in_flight
                in_flight = (f"; {sent} call(s) in flight may add up to {usd(self._reserved_usd, digits=4)} and are "
                             "cached when they finish" if sent else "")
                raise CostLimitExceeded(
                    f"the next call could cost up to {usd(estimate, digits=4)}, which would pass the ceiling of "
                    f"{usd(self.max_cost_usd)} (spent {usd(spent, digits=4)}{in_flight}); raise --max-cost or rerun: "
                    "a rerun replays every answered call for free and pays only for the rest")
            self._reserved_usd += estimate
        return estimate

    def _give_back_slot(self) -> None:
        """On a pool thread whose call still holds the slot it was started with: free it."""
        pool = self._executor
        if pool is not None and pool.take_slot():
            self._limit.release()

    def _stop_sending(self, error: BooksumError) -> None:
        """After a failure every request would meet (a rejected key, a model that only reasons), send
        nothing more: calls waiting for a slot fail with the same line instead of paying for it."""
        with self._lock:
            if self._stopped is None:
                self._stopped = error

    def _attempt(self, request: Request, spent: Spent) -> Completion:
        stopped = self._stopped
        if stopped is not None:
            raise type(stopped)(*stopped.args)
        retry = spent.attempts > 0
        if retry:
            self._check_retry_ceiling()
        pool = self._executor
        if pool is None or not pool.take_slot():  # a pooled call's first attempt has its slot
            self._limit.acquire(urgent=retry)  # a retry goes before calls not yet started
        try:
            ticket = self._limit.send()  # a 429 meanwhile may have lowered the limit: wait for it
            room_sent = self.reasoning.tokens
            overloaded: bool | None = None  # a 500 or a timeout says nothing of the quota
            try:
                completion = self._door.call(request)
                overloaded = False
                early = self._model_wide(completion, room_sent)
                if early is not None:  # decided before the slot is freed: no waiting call is sent meanwhile
                    self._stop_sending(early)
            except AuthError as exc:
                self._stop_sending(exc)
                raise
            except (RateLimited, TransientModelError) as exc:
                overloaded = True if isinstance(exc, RateLimited) or exc.overloaded else None
                spent.attempts += 1
                refusal = too_long_a_wait(self.info.name, exc)
                if refusal is not None:
                    raise refusal from exc
                raise
            finally:
                latency = completion.latency_s if overloaded is False else None
                self._limit.answered(ticket, overloaded=overloaded, latency_s=latency)
        finally:
            self._limit.release()  # also between retries: a backoff is not spent holding a slot
        spent.attempts += 1
        completion = self._priced(request, completion)
        too_long = overlong(completion, request.max_tokens + self.reasoning.tokens, self._count)
        empty = too_long or not completion.text.strip()
        self._ledger.bill(completion, spent, wasted=empty)
        if empty:
            self._log_wasted(request, completion)
        if too_long:  # paid (at most max_tokens), never an answer: not cached, retried like a malformed reply
            raise TransientModelError(f"{self.info.name}: the answer ({len(completion.text):,} characters) is far "
                                      f"longer than its max_tokens ({request.max_tokens:,}) allows")
        if empty:  # retried, or returned once cut, or (a model that only reasoned) one line now
            raise self.reasoning.empty_error(completion, sent_tokens=room_sent)
        return completion

    def _model_wide(self, completion: Completion, room_sent: int) -> BooksumError | None:
        """The failure an answer shows for every request of this model, if any (MODEL_WIDE)."""
        if completion.text.strip():
            return None
        error = self.reasoning.empty_error(completion, sent_tokens=room_sent)
        return error if isinstance(error, MODEL_WIDE) else None

    def _check_retry_ceiling(self) -> None:
        """Before a retry: the paid attempts so far plus the calls reserved must stay under --max-cost."""
        if self.max_cost_usd is None:
            return
        spent = self._ledger.totals.spent_usd
        with self._lock:
            if spent + self._reserved_usd > self.max_cost_usd:
                raise CostLimitExceeded(
                    f"retrying a failed call could pass the ceiling of {usd(self.max_cost_usd)} (spent "
                    f"{usd(spent, digits=4)}, including paid attempts that failed); raise --max-cost or rerun: a rerun "
                    "replays every answered call for free"
                )

    def _priced(self, request: Request, completion: Completion) -> Completion:
        completion, note = priced(
            self.info, request, completion, count=self._count, extra_output_tokens=self.reasoning.tokens,
            count_prompt=lambda r: prompt_tokens(r, self._count, self._prefix_tokens),
        )
        self._ledger.note(note)
        if self.max_cost_usd is not None:  # how much more than booksum the provider counts a prompt
            self._input_ratio.learn(completion, prompt_tokens(request, self._count, self._prefix_tokens))
        return completion

    def _bill_late(self, request: Request, completion: Completion) -> None:  # given up at --timeout, then paid
        completion = self._priced(request, completion)
        self._ledger.bill(completion, Spent(attempts=1), wasted=True)
        self._log_wasted(request, completion)
        self._ledger.note(f"{self.info.name}: replies that came after --timeout were billed as wasted replies")

    def _log_wasted(self, request: Request, completion: Completion) -> None:
        """Keep a wasted reply in the call log (``booksum logs`` counts its money); never fatal."""
        if self.cache is None:
            return
        try:
            self.cache.log_wasted(completion, purpose=request.purpose, meta=self._meta(request, completion))
        except sqlite3.Error as exc:
            self._ledger.note(f"the call log could not keep a wasted reply ({exc}); the run's totals still count it")

    def _retrying(self) -> Retrying:
        return Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type((RateLimited, TransientModelError)),
            sleep=self._sleep,
            reraise=True,
        )

    def _call_with_retries(self, request: Request, spent: Spent) -> Completion:
        retrying = self._retrying()
        try:
            return retrying(self._attempt, request, spent)
        except EmptyReply as exc:
            return exc.completion  # every attempt empty: the strategy's own validation resamples
        except CutEmpty as exc:
            return exc.completion  # likewise, once: the same request would be cut the same way
        except RateLimited as exc:
            raise RateLimited(
                f"{self.info.name}: still rate limited after {spent.attempts} attempts ({exc}); "
                "lower --concurrency or wait and rerun: completed calls are cached",
                retry_after_s=exc.retry_after_s,
            ) from exc
        except TransientModelError as exc:
            raise TransientModelError(
                f"{self.info.name}: failed {spent.attempts} times ({exc}); check the service "
                "or your connection and rerun: completed calls are cached",
                retry_after_s=exc.retry_after_s,
            ) from exc


__all__ = ["CallRecord", "Client"]
