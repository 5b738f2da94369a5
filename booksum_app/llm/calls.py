"""The one call layer every model goes through: cache, retries, concurrency bound, cost.

:class:`Client` wraps any :class:`~booksum_app.llm.base.Backend` and implements
:class:`~booksum_app.llm.base.ChatModel`:

- a persistent call cache (``llm/cache.py``) consulted before and filled after each call,
  with a lease on each request in flight so runs sharing the cache wait instead of re-paying;
- retries (tenacity) with exponential backoff and full jitter on ``RateLimited`` and
  ``TransientModelError`` (429, 5xx, timeouts, dropped connections), honouring the
  server's Retry-After up to ``RETRY_AFTER_MAX_S`` (a longer one fails the call at once, with
  the server's figure); no retry on other errors (auth, context too long, bad request);
  a bounded number of attempts, then a one-line error that says what to do;
- an empty reply is retried like a transient failure; if every attempt is empty the last
  (empty, uncached) completion is returned so the strategy's own validation can resample. An
  empty reply cut at the token limit is not resent (it would be cut again); a reasoning
  model's that spent the budget on hidden tokens fails with a line that says so;
- a bound on calls in flight, shared by ``complete`` from any thread, ``submit`` and
  ``complete_many``; batch backends (vLLM) get whole batches instead;
- accounting of every reply the provider sent, used or not (a retried empty answer was paid):
  in the client's totals, in the call's record and in every :class:`~booksum_app.llm.meter.Meter`
  open in the caller's context (a run's totals); a reply without usage, or with a count the
  call cannot hold, is counted with the tokenizer and marked estimated (:attr:`Client.notes`);
- an optional cost ceiling checked before every uncached call against its worst case (input
  tokens + max_tokens + a reasoning model's hidden-token room), and again before each retry;
- a thread-safe log of :class:`CallRecord` and an ``on_call`` hook for progress displays.
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Self

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from booksum_app.config import FIXED_CONCURRENCY
from booksum_app.errors import CostLimitExceeded, ModelError, RateLimited, TransientModelError
from booksum_app.llm.base import Backend, BatchBackend, Completion, ModelInfo, Request, Tally, Usage
from booksum_app.llm.cache import CallMeta, CallStore, Lease
from booksum_app.llm.context import current_context, ranked
from booksum_app.llm.limiter import AdaptiveLimit, PriorityPool
from booksum_app.llm.meter import bill
from booksum_app.llm.request_key import OnceMemo, prompt_tokens, request_json, request_key

DEFAULT_MAX_ATTEMPTS = 6
BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
# a server that asks for a longer wait than this is not waited for: the call fails at once
# with the server's figure (a run that sits silent for minutes looks hung; rerun later)
RETRY_AFTER_MAX_S = 120.0
# a reported count past these is not a count (10^13 tokens once priced a call at $27M): the
# call is counted with the tokenizer instead, and the client says so
PROMPT_SLACK = 1.5  # reported prompt tokens at most this times the context window
OUTPUT_SLACK_TOKENS = 64  # reported completion tokens at most max_tokens plus this


class ServerAskedToWait(ModelError):
    """A Retry-After longer than booksum waits: not retried."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BudgetSpentOnReasoning(ModelError):
    """A reasoning model spent the whole completion budget on hidden tokens: resending is futile."""


class _EmptyReply(TransientModelError):
    """An empty answer: retried like a transient failure (it was paid for: it is billed first)."""

    def __init__(self, completion: Completion) -> None:
        super().__init__("the model returned an empty reply")
        self.completion = completion


class _CutEmpty(ModelError):
    """An empty answer cut at the token limit: the same request would be cut the same way."""

    def __init__(self, completion: Completion) -> None:
        super().__init__("the model's answer was cut at the token limit before any text")
        self.completion = completion


@dataclass(frozen=True)
class CallRecord:
    """One finished call as the progress display and the run record see it."""

    purpose: str
    cache_hit: bool
    usage: Usage
    latency_s: float
    cost_usd: float
    finish_reason: str
    attempts: int = 1
    model: str = ""


def _retry_wait(initial_s: float, max_s: float) -> Callable[[RetryCallState], float]:
    jitter = wait_random_exponential(multiplier=initial_s, max=max_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(exc, "retry_after_s", None)
        if retry_after is not None and retry_after >= 0:
            return float(min(retry_after, RETRY_AFTER_MAX_S))  # longer ones were not retried
        return float(jitter(state))

    return wait


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, if present and numeric."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            seconds = float(ms) / 1000
        else:
            value = headers.get("retry-after")
            if value is None:
                return None
            seconds = float(value)
    except (TypeError, ValueError):
        return None  # an HTTP date or junk: fall back to our own backoff
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _fallback_counter(info: ModelInfo) -> Callable[[str], int]:
    """Count with the chunking layer's tokenizer for ``info`` (imported lazily)."""
    state: dict[str, Any] = {}

    def count(text: str) -> int:
        tokenizer = state.get("tok")
        if tokenizer is None:
            from booksum_app.chunking import get_tokenizer

            tokenizer = state["tok"] = get_tokenizer(info.tokenizer)
        return int(tokenizer.count(text))

    return count


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
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.backend = backend
        self.cache = cache
        default = getattr(backend, "default_concurrency", FIXED_CONCURRENCY)
        self.concurrency = max(1, int(concurrency if concurrency is not None else default))
        self.max_cost_usd = max_cost_usd
        self.max_attempts = max_attempts
        self.on_call = on_call
        self._sleep = sleep
        self._wait = _retry_wait(backoff_initial_s, backoff_max_s)
        native = getattr(backend, "count_tokens", None)
        self._count = count_tokens or native or _fallback_counter(backend.info)
        # the named tokenizer count_tokens uses (chunk cuts made with it can be shared); None
        # when it counts with the model's own counter or one it was given
        self.tokenizer_name: str | None = None if count_tokens or native else backend.info.tokenizer
        self._prefix_tokens: OnceMemo[str, int] = OnceMemo()  # a judge's prefix is counted once
        self._identity: dict[str, str | None] = {
            "kind": getattr(backend, "kind", type(backend).__name__),
            "model": backend.info.name,
            "base_url": getattr(backend, "base_url", None),
        }
        effort = getattr(backend, "reasoning_effort", None)
        if effort:  # absent otherwise: every other model's keys stay as they were
            self._identity["reasoning_effort"] = str(effort)
        # calls in flight: a fixed cap, or (adaptive) AIMD under it from initial_concurrency, as TCP does
        start = self.concurrency if initial_concurrency is None else min(initial_concurrency, self.concurrency)
        self._limit = AdaptiveLimit(initial=start, maximum=self.concurrency, adaptive=adaptive)
        getattr(backend, "expect_callers", lambda _: None)(self._limit.callers)  # vLLM gathers callers
        self._lock = threading.Lock()
        self._totals = Tally()  # every call answered through this client, cached or not
        self._paid = Usage()  # tokens of the calls that reached the provider
        self._reserved_usd = 0.0
        self._batch_in_flight = 0  # a batch backend's calls bypass the limit's send gate
        self._records: list[CallRecord] = []
        self._notes: list[str] = []
        # room a backend adds to each request's max_tokens (a reasoning model's hidden tokens)
        self._extra_output_tokens = int(getattr(backend, "extra_output_tokens", 0))
        self._executor: PriorityPool | None = None
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
                self._finish(request, claimed, _Spent())
                return claimed
            lease = claimed
        spent = _Spent()
        try:
            estimate = self._reserve(request)
            try:
                completion = self._call_with_retries(request, spent)
            except BaseException:
                if spent.attempts:  # paid replies of a call that failed still reach the totals' display
                    self._report_failed(request, spent)
                raise
            finally:
                with self._lock:
                    self._reserved_usd -= estimate
            if self.cache is not None and lease is not None:
                self.cache.put(
                    key, completion, purpose=request.purpose, lease=lease, meta=self._meta(request)
                )
                lease = None
        finally:
            if self.cache is not None and lease is not None:
                self.cache.release(lease)  # failed: a waiting run takes the request over
        self._finish(request, completion, spent)
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
            return self._complete_batch(list(requests))
        futures = [self.submit(request) for request in requests]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise

    # ---- accounting --------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """Tokens paid for by this client (cache hits excluded)."""
        with self._lock:
            return self._paid

    @property
    def tally(self) -> Tally:
        """Every call answered through this client (cache hits included), as records count them."""
        with self._lock:
            return self._totals

    @property
    def cost_usd(self) -> float:
        """Dollars spent by this client (cache hits cost nothing)."""
        with self._lock:
            return self._totals.spent_usd

    @property
    def calls(self) -> list[CallRecord]:
        """A copy of the log of finished calls, in finishing order."""
        with self._lock:
            return list(self._records)

    @property
    def n_calls(self) -> int:
        """Calls answered (cached or not)."""
        with self._lock:
            return self._totals.calls

    @property
    def n_cache_hits(self) -> int:
        """Calls answered from the cache."""
        with self._lock:
            return self._totals.cache_hits

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
        close_backend = getattr(self.backend, "close", None)
        if callable(close_backend):
            close_backend()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- internals ---------------------------------------------------------------------

    def is_cached(self, request: Request) -> bool:
        """Whether the call cache holds an answer to ``request``: a plan's free call. Calls nothing."""
        return self.cache is not None and self.cache.get(self._key(request)) is not None

    def _key(self, request: Request) -> str:
        return request_key(request, backend=self._identity)

    def _meta(self, request: Request) -> CallMeta:
        """What the call log keeps: the request as sent, the model string, the caller's run and book."""
        context = current_context()
        return CallMeta(request_json(request), self.info.name, context.run, context.book)

    def _pool(self) -> PriorityPool:
        with self._lock:
            if self._executor is None:
                self._executor = PriorityPool(self._limit, name="booksum-call")
            return self._executor

    def _worst_case_usd(self, request: Request) -> float:
        if self.max_cost_usd is None:
            return 0.0
        tokens = prompt_tokens(request, self._count, self._prefix_tokens)
        return self.info.cost_usd(Usage(tokens, request.max_tokens + self._extra_output_tokens))

    def _reserve(self, request: Request) -> float:
        """Hold the worst-case cost of a call about to be made, or raise CostLimitExceeded."""
        estimate = self._worst_case_usd(request)
        if self.max_cost_usd is None:
            return 0.0
        with self._lock:
            committed = self._totals.spent_usd + self._reserved_usd
            if committed + estimate > self.max_cost_usd:
                sent = self.in_flight
                in_flight = (
                    f"; {sent} call(s) in flight may add up to ${self._reserved_usd:.4f} and are "
                    "cached when they finish" if sent else ""
                )
                raise CostLimitExceeded(
                    f"the next call could cost up to ${estimate:.4f}, which would pass the ceiling "
                    f"of ${self.max_cost_usd:.2f} (spent ${self._totals.spent_usd:.4f}{in_flight}); raise "
                    "--max-cost or rerun: a rerun replays every answered call for free and pays only "
                    "for the rest"
                )
            self._reserved_usd += estimate
        return estimate

    def _give_back_slot(self) -> None:
        """On a pool thread whose call still holds the slot it was started with: free it."""
        pool = self._executor
        if pool is not None and pool.take_slot():
            self._limit.release()

    def _attempt(self, request: Request, spent: _Spent) -> Completion:
        retry = spent.attempts > 0
        if retry:
            self._check_retry_ceiling()
        pool = self._executor
        if pool is None or not pool.take_slot():  # a pooled call's first attempt has its slot
            self._limit.acquire(urgent=retry)  # a retry goes before calls not yet started
        try:
            ticket = self._limit.send()  # a 429 meanwhile may have lowered the limit: wait for it
            overloaded: bool | None = None  # a 500 or a timeout says nothing of the quota
            try:
                completion = self.backend.complete(request)
                overloaded = False
            except (RateLimited, TransientModelError) as exc:
                overloaded = True if isinstance(exc, RateLimited) or exc.overloaded else None
                spent.attempts += 1
                self._refuse_long_wait(exc)
                raise
            finally:
                latency = completion.latency_s if overloaded is False else None
                self._limit.answered(ticket, overloaded=overloaded, latency_s=latency)
        finally:
            self._limit.release()  # also between retries: a backoff is not spent holding a slot
        spent.attempts += 1
        completion = self._priced(request, completion)
        empty = not completion.text.strip()
        self._bill(completion, spent, wasted=empty)
        if empty:
            self._log_wasted(request, completion)
        if empty and completion.cut_off:
            raise self._cut_empty(request, completion)
        if empty:
            raise _EmptyReply(completion)
        return completion

    def _refuse_long_wait(self, exc: RateLimited | TransientModelError) -> None:
        """A server asking for a wait past RETRY_AFTER_MAX_S: fail now, saying so, instead of sitting silent."""
        wait = exc.retry_after_s
        if wait is not None and wait > RETRY_AFTER_MAX_S:
            raise ServerAskedToWait(
                f"{self.info.name}: the server asks to wait {wait:,.0f} s before the next try ({exc}); "
                "rerun later: completed calls are cached", retry_after_s=wait,
            ) from exc

    def _cut_empty(self, request: Request, completion: Completion) -> ModelError:
        """The error for an answer cut at the limit with no text: resending it would be cut again."""
        name = self.info.name
        if completion.reasoning_tokens:
            return BudgetSpentOnReasoning(
                f"{name} spent its whole budget of {completion.usage.output_tokens:,} completion tokens on "
                f"hidden reasoning ({completion.reasoning_tokens:,} tokens) and wrote no answer; lower "
                "--reasoning-effort or raise the summary length"
            )
        return _CutEmpty(completion)

    def _check_retry_ceiling(self) -> None:
        """Before a retry: the paid attempts so far plus the calls reserved must stay under --max-cost."""
        if self.max_cost_usd is None:
            return
        with self._lock:
            spent = self._totals.spent_usd
            if spent + self._reserved_usd > self.max_cost_usd:
                raise CostLimitExceeded(
                    f"retrying a failed call could pass the ceiling of ${self.max_cost_usd:.2f} (spent "
                    f"${spent:.4f}, including paid attempts that failed); raise --max-cost or rerun: a rerun "
                    "replays every answered call for free"
                )

    def _priced(self, request: Request, completion: Completion) -> Completion:
        """``completion`` with its cost, its usage counted by the tokenizer when the server's is missing or absurd."""
        usage = completion.usage
        reported = completion.usage_reported and self._plausible(request, usage)
        if completion.usage_reported and not reported:
            self._note(
                f"{self.info.name}: the server reported {usage.input_tokens:,} prompt and "
                f"{usage.output_tokens:,} completion tokens for one call, more than the call can hold; "
                "such calls are counted with the tokenizer (estimated)"
            )
        elif not completion.usage_reported:
            self._note(f"{self.info.name}: the server's replies carry no token usage; tokens are counted "
                       "with the tokenizer (estimated)")
        if not reported:
            usage = Usage(prompt_tokens(request, self._count, self._prefix_tokens), self._count(completion.text))
        return dataclasses.replace(
            completion, usage=usage, usage_reported=reported, cost_usd=self.info.cost_usd(usage)
        )

    def _plausible(self, request: Request, usage: Usage) -> bool:
        """Whether a reported count could be true of this request (a prompt past the window is refused,
        an answer past its max_tokens is cut)."""
        prompt_cap = PROMPT_SLACK * self.info.context_window + 1024
        output_cap = request.max_tokens + self._extra_output_tokens + OUTPUT_SLACK_TOKENS
        return usage.input_tokens <= prompt_cap and usage.output_tokens <= output_cap

    def _note(self, line: str) -> None:
        with self._lock:
            if line not in self._notes:
                self._notes.append(line)

    @property
    def notes(self) -> list[str]:
        """One line per anomaly seen in the replies (missing or absurd usage), for the end of a run."""
        with self._lock:
            return list(self._notes)

    def _bill(self, completion: Completion, spent: _Spent, *, wasted: bool) -> None:
        """Count one reply the provider sent: in the client's totals, the call's and every open meter."""
        usage = completion.usage
        item = Tally(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cost_usd=completion.cost_usd, spent_usd=completion.cost_usd,
            cached_input_tokens=usage.cached_input_tokens, cache_write_input_tokens=usage.cache_write_input_tokens,
            billed_input_tokens=self.info.billed_input_tokens(usage), wasted_attempts=int(wasted),
            estimated_tokens=0 if completion.usage_reported else usage.input_tokens + usage.output_tokens,
        )
        spent.tally = spent.tally + item
        with self._lock:
            self._totals = self._totals + item
            self._paid = self._paid + usage
        bill(item)

    def _log_wasted(self, request: Request, completion: Completion) -> None:
        """Keep a wasted reply in the call log (``booksum logs`` counts its money); never fatal."""
        if self.cache is None:
            return
        try:
            self.cache.log_wasted(completion, purpose=request.purpose, meta=self._meta(request))
        except sqlite3.Error as exc:
            self._note(f"the call log could not keep a wasted reply ({exc}); the run's totals still count it")

    def _retrying(self) -> Retrying:
        return Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type((RateLimited, TransientModelError)),
            sleep=self._sleep,
            reraise=True,
        )

    def _call_with_retries(self, request: Request, spent: _Spent) -> Completion:
        retrying = self._retrying()
        try:
            return retrying(self._attempt, request, spent)
        except _EmptyReply as exc:
            return exc.completion  # every attempt empty: the strategy's own validation resamples
        except _CutEmpty as exc:
            return exc.completion  # likewise, once: the same request would be cut the same way
        except ServerAskedToWait:
            raise
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

    def _complete_batch(self, requests: list[Request]) -> list[Completion]:
        keys = [self._key(r) for r in requests]
        results: list[Completion | None] = [None] * len(requests)
        todo: list[int] = []  # ours to send in one batch
        leases: dict[int, Lease] = {}
        elsewhere: list[int] = []  # in flight in another run (or twice in this batch)
        for i, key in enumerate(keys):
            claimed = self.cache.try_claim(key) if self.cache is not None else None
            if isinstance(claimed, Completion):
                results[i] = claimed
                self._finish(requests[i], claimed, _Spent())
            elif claimed is None and self.cache is not None:
                elsewhere.append(i)
            else:
                todo.append(i)
                if claimed is not None:
                    leases[i] = claimed
        try:
            if todo:
                self._send_batch(requests, keys, todo, results, leases)
        finally:
            for lease in leases.values():  # not answered: a waiting run takes them over
                if self.cache is not None:
                    self.cache.release(lease)
        for i in elsewhere:  # waits for the other run's answer, or takes the request over
            results[i] = self.complete(requests[i])
        return [r for r in results if r is not None]

    def _send_batch(
        self,
        requests: list[Request],
        keys: list[str],
        todo: list[int],
        results: list[Completion | None],
        leases: dict[int, Lease],
    ) -> None:
        """Send ``todo`` as one batch; commit every answer, then report each (fills ``results``)."""
        backend = self.backend
        if not isinstance(backend, BatchBackend):  # pragma: no cover - guarded by caller
            raise TypeError("not a batch backend")
        batch = [requests[i] for i in todo]
        reserved = 0.0
        try:
            for request in batch:
                reserved += self._reserve(request)
        except CostLimitExceeded:
            with self._lock:
                self._reserved_usd -= reserved
            raise
        try:
            with self._lock:
                self._batch_in_flight += len(batch)
            try:
                completions = self._retrying()(backend.complete_batch, batch)
            finally:
                with self._lock:
                    self._batch_in_flight -= len(batch)
        finally:
            with self._lock:
                self._reserved_usd -= reserved
        answered = [self._priced(request, c) for request, c in zip(batch, completions, strict=True)]
        spents = [_Spent(attempts=1) for _ in answered]
        for request, completion, spent in zip(batch, answered, spents, strict=True):
            self._bill(completion, spent, wasted=not completion.text.strip())
            if not completion.text.strip():
                self._log_wasted(request, completion)
        # every answer of the batch is committed before any is reported: an on_call hook
        # (progress display) that fails, or a kill meanwhile, must not cost the others
        if self.cache is not None:
            for i, completion in zip(todo, answered, strict=True):
                self.cache.put(
                    keys[i], completion, purpose=requests[i].purpose, lease=leases.pop(i, None),
                    meta=self._meta(requests[i]),
                )
        for i, completion, spent in zip(todo, answered, spents, strict=True):
            results[i] = completion
            self._finish(requests[i], completion, spent)

    def _finish(self, request: Request, completion: Completion, spent: _Spent) -> None:
        """Count one answered call; its paid replies were billed as they came (``_bill``)."""
        if completion.cache_hit:
            item = Tally.of_call(self.info, completion.usage, cache_hit=True, spent_usd=0.0)
        else:
            item = Tally(calls=1)
        paid = spent.tally
        record = CallRecord(
            purpose=request.purpose,
            cache_hit=completion.cache_hit,
            # what the call cost in all, its wasted attempts included: what the progress line adds up
            usage=completion.usage if completion.cache_hit else Usage(
                paid.input_tokens, paid.output_tokens, paid.cached_input_tokens, paid.cache_write_input_tokens),
            latency_s=completion.latency_s,
            cost_usd=completion.cost_usd if completion.cache_hit else paid.spent_usd,
            finish_reason=completion.finish_reason,
            attempts=spent.attempts,
            model=completion.model or self.info.name,
        )
        with self._lock:
            self._totals = self._totals + item
            self._records.append(record)
        bill(item)
        if self.on_call is not None:
            self.on_call(record)

    def _report_failed(self, request: Request, spent: _Spent) -> None:
        """A call that failed after paid replies: the progress display still sees the money."""
        if self.on_call is None or not spent.tally.spent_usd and not spent.tally.output_tokens:
            return
        paid = spent.tally
        self.on_call(CallRecord(
            purpose=request.purpose, cache_hit=False,
            usage=Usage(paid.input_tokens, paid.output_tokens, paid.cached_input_tokens, paid.cache_write_input_tokens),
            latency_s=0.0, cost_usd=paid.spent_usd, finish_reason="error", attempts=spent.attempts,
            model=self.info.name,
        ))


@dataclass
class _Spent:
    """One call's attempts so far and what its paid replies cost."""

    attempts: int = 0
    tally: Tally = dataclasses.field(default_factory=Tally)
