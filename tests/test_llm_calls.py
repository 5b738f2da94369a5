"""The call layer: retries, Retry-After, concurrency bound, cache, cost accounting and ceiling."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from booksum_app.errors import (
    AuthError,
    ContextTooLong,
    CostLimitExceeded,
    ModelError,
    RateLimited,
    TransientModelError,
)
from booksum_app.llm.base import BackendBase, ChatModel, Completion, ModelInfo, Request, Usage
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import CallRecord, Client
from booksum_app.llm.retry_policy import retry_after_seconds
from booksum_app.testing.fake_backend import FakeBackend

PRICED = ModelInfo(
    name="fake:priced",
    context_window=8192,
    tokenizer="cl100k_base",
    input_usd_per_mtok=1_000_000.0,  # $1 per input token: easy arithmetic
    output_usd_per_mtok=2_000_000.0,
)


def scripted(*outcomes: Exception | str) -> Callable[[Request], str]:
    """A reply function that raises or answers per call, in order, then answers 'Done.'."""
    queue = list(outcomes)
    lock = threading.Lock()

    def reply(request: Request) -> str:
        with lock:
            outcome = queue.pop(0) if queue else "Done."
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return reply


def make_client(
    backend: FakeBackend, waits: list[float] | None = None, **options: object
) -> Client:
    sink = waits if waits is not None else []
    return Client(backend, sleep=sink.append, **options)  # type: ignore[arg-type]


REQ = Request(prompt="Tell me. Now.", max_tokens=20)


def test_client_is_a_chat_model() -> None:
    client: ChatModel = make_client(FakeBackend())
    assert client.info.name == "fake:model"
    assert client.count_tokens("hello world") == 2


@pytest.mark.parametrize(
    "error",
    [
        RateLimited("429"),
        TransientModelError("500"),
        TransientModelError("timed out"),
        TransientModelError("connection dropped"),
    ],
)
def test_retryable_errors_are_retried_then_succeed(error: Exception) -> None:
    backend = FakeBackend(reply=scripted(error, error))
    client = make_client(backend)
    assert client.complete(REQ).text == "Done."
    assert backend.call_count == 3
    assert client.calls[-1].attempts == 3


@pytest.mark.parametrize(
    "error", [AuthError("401"), ContextTooLong("too long"), ModelError("400 bad request")]
)
def test_other_errors_are_not_retried(error: Exception) -> None:
    backend = FakeBackend(reply=scripted(error))
    client = make_client(backend)
    with pytest.raises(type(error)):
        client.complete(REQ)
    assert backend.call_count == 1


def test_bounded_attempts_then_a_clear_error() -> None:
    backend = FakeBackend(reply=scripted(*[TransientModelError("503 overloaded")] * 10))
    waits: list[float] = []
    client = make_client(backend, waits, max_attempts=4)
    with pytest.raises(TransientModelError, match="failed 4 times .*rerun"):
        client.complete(REQ)
    assert backend.call_count == 4
    assert len(waits) == 3


def test_rate_limit_exhausted_says_what_to_do() -> None:
    backend = FakeBackend(reply=scripted(*[RateLimited("429")] * 10))
    with pytest.raises(RateLimited, match="still rate limited after 3 attempts.*--concurrency"):
        make_client(backend, max_attempts=3).complete(REQ)


def test_retry_after_is_honoured_and_backoff_grows_with_jitter() -> None:
    backend = FakeBackend(
        reply=scripted(
            RateLimited("429", retry_after_s=7.0),
            TransientModelError("500"),
            TransientModelError("500"),
            TransientModelError("500"),
        )
    )
    waits: list[float] = []
    client = make_client(backend, waits, backoff_initial_s=1.0, backoff_max_s=60.0)
    client.complete(REQ)
    assert waits[0] == 7.0  # exactly the server's Retry-After
    # full jitter: attempt n waits uniformly in [0, 2**n) seconds
    assert all(0 <= w <= 2 ** (n + 1) for n, w in enumerate(waits[1:], start=1))


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_parsing(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


def test_empty_reply_is_retried() -> None:
    backend = FakeBackend(reply=scripted("", "  ", "Real answer."))
    client = make_client(backend)
    assert client.complete(REQ).text == "Real answer."
    assert backend.call_count == 3


def test_always_empty_reply_is_returned_uncached_after_the_attempts(tmp_path: Path) -> None:
    backend = FakeBackend(reply=lambda r: "")
    client = make_client(backend, max_attempts=3, cache=CallCache(tmp_path))
    assert client.complete(REQ).text == ""
    assert backend.call_count == 3
    assert len(CallCache(tmp_path)) == 0


def test_cache_hit_makes_no_backend_call_and_costs_nothing(tmp_path: Path) -> None:
    first = FakeBackend(PRICED)
    client = make_client(first, cache=CallCache(tmp_path))
    answer = client.complete(REQ)
    # a new process would build a new client and backend: simulate it
    second = FakeBackend(PRICED)
    rerun = make_client(second, cache=CallCache(tmp_path))
    again = rerun.complete(REQ)
    assert second.call_count == 0
    assert again.text == answer.text and again.cache_hit and again.cost_usd == 0.0
    assert rerun.cost_usd == 0.0 and rerun.usage == Usage()
    assert rerun.n_cache_hits == 1
    resampled = rerun.complete(Request(prompt=REQ.prompt, max_tokens=20, sample_index=1))
    assert not resampled.cache_hit and second.call_count == 1


def test_cost_and_usage_accounting() -> None:
    backend = FakeBackend(
        PRICED, reply=lambda r: Completion("Answer.", "stop", Usage(10, 3, cached_input_tokens=0))
    )
    client = make_client(backend)
    client.complete_many([Request(prompt=f"Q{i}.", max_tokens=5) for i in range(4)])
    assert client.usage == Usage(40, 12, 0)
    assert client.cost_usd == pytest.approx(4 * (10 * 1.0 + 3 * 2.0))
    assert [r.cost_usd for r in client.calls] == pytest.approx([16.0] * 4)


def test_cost_ceiling_stops_before_the_call_that_could_pass_it() -> None:
    backend = FakeBackend(PRICED, reply=lambda r: Completion("A.", "stop", Usage(10, 3)))
    # worst case per call: count_tokens("Q.")=2 input + max_tokens 5 output -> 2*1 + 5*2 = $12
    client = make_client(backend, max_cost_usd=25.0, count_tokens=lambda text: 2)
    client.complete(Request(prompt="Q.", max_tokens=5))  # spent 16
    with pytest.raises(CostLimitExceeded, match=r"\$25\.00.*--max-cost"):
        client.complete(Request(prompt="Q2.", max_tokens=5))  # 16 + 12 > 25
    assert backend.call_count == 1
    assert client.cost_usd == 16.0


@pytest.mark.parametrize(("billed_tokens", "second_runs"), [(300, True), (420, False)])
def test_the_ceiling_reserves_prompts_at_the_ratio_the_replies_showed(billed_tokens: int, second_runs: bool) -> None:
    """Before any reply a prompt is reserved at 1.5x booksum's count; after one, at the ratio it billed."""
    billed = Completion("A.", "stop", Usage(billed_tokens, 3), usage_reported=True)
    backend = FakeBackend(PRICED, reply=lambda r: billed)
    # counted 300 tokens a prompt: the first call's worst case is 450 + 10 = $460, and it bills billed_tokens + 6
    client = make_client(backend, max_cost_usd=billed_tokens + 6 + 310 + 4, count_tokens=lambda text: 300)
    client.complete(Request(prompt="Q.", max_tokens=5))
    second = Request(prompt="Q2.", max_tokens=5)  # at 1.0x: 310 fits under the ceiling; at 1.4x: 430 does not
    if second_runs:
        client.complete(second)
    else:
        with pytest.raises(CostLimitExceeded):
            client.complete(second)
    assert client.cost_usd <= client.max_cost_usd  # type: ignore[operator]


def test_cost_ceiling_ignores_cached_calls(tmp_path: Path) -> None:
    backend = FakeBackend(PRICED, reply=lambda r: Completion("A.", "stop", Usage(10, 3)))
    make_client(backend, cache=CallCache(tmp_path)).complete(REQ)
    rerun = make_client(FakeBackend(PRICED), cache=CallCache(tmp_path), max_cost_usd=0.01)
    assert rerun.complete(REQ).cache_hit


@pytest.mark.parametrize("bound", [1, 3])
def test_concurrency_bound_is_respected(bound: int) -> None:
    backend = FakeBackend(latency_s=0.02)
    client = make_client(backend, concurrency=bound)
    requests = [Request(prompt=f"Item {i}.", max_tokens=9) for i in range(12)]
    results = client.complete_many(requests)
    assert [r.text for r in results] == [f"Item {i}." for i in range(12)]  # request order
    assert backend.max_in_flight == bound


def test_bound_also_holds_for_direct_calls_from_many_threads() -> None:
    backend = FakeBackend(latency_s=0.02)
    client = make_client(backend, concurrency=2)
    threads = [
        threading.Thread(target=client.complete, args=(Request(prompt=f"T{i}.", max_tokens=9),))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backend.max_in_flight == 2


def test_on_call_hook_and_call_log() -> None:
    seen: list[CallRecord] = []
    client = make_client(FakeBackend(), on_call=seen.append)
    client.complete(Request(prompt="A. B.", max_tokens=9, purpose="summarize"))
    future = client.submit(Request(prompt="C. D.", max_tokens=9, purpose="merge"))
    assert future.result().text == "C. D."
    assert [r.purpose for r in seen] == ["summarize", "merge"]
    assert client.calls == seen and client.n_calls == 2 and client.in_flight == 0


def test_complete_many_raises_the_first_error_and_keeps_finished_work(tmp_path: Path) -> None:
    def reply(request: Request) -> str:
        if request.prompt == "bad":
            raise AuthError("no key")
        return "Fine."

    client = make_client(FakeBackend(reply=reply), cache=CallCache(tmp_path), concurrency=1)
    with pytest.raises(AuthError):
        client.complete_many(
            [Request(prompt="ok", max_tokens=5), Request(prompt="bad", max_tokens=5)]
        )
    assert len(CallCache(tmp_path)) == 1


class FakeBatchBackend(FakeBackend):
    """A FakeBackend with complete_batch, like vLLM's engine."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion]:
        self.batches.append(len(requests))
        return [FakeBackend.complete(self, r) for r in requests]


def test_batch_backends_get_one_batch_of_the_uncached_requests(tmp_path: Path) -> None:
    backend = FakeBatchBackend()
    client = make_client(backend, cache=CallCache(tmp_path))
    client.complete(Request(prompt="P1.", max_tokens=9))
    results = client.complete_many([Request(prompt=f"P{i}.", max_tokens=9) for i in range(5)])
    assert [r.text for r in results] == [f"P{i}." for i in range(5)]
    assert backend.batches == [4]  # P1 came from the cache
    assert results[1].cache_hit


def test_batch_over_the_ceiling_sends_nothing_and_holds_nothing() -> None:
    backend = FakeBatchBackend()
    client = make_client(backend, max_cost_usd=0.00005, count_tokens=lambda text: 10)
    # each call could cost 10 x $1/M + 9 x $2/M = $0.000028: the second one passes the ceiling
    with pytest.raises(CostLimitExceeded):
        client.complete_many([Request(prompt=f"P{i}.", max_tokens=9) for i in range(3)])
    assert backend.batches == [] and client._reserved_usd == 0.0


def test_cost_ceiling_message_counts_the_calls_in_flight() -> None:
    import threading

    gate = threading.Event()

    def slow(request: Request) -> Completion:
        gate.wait(5)
        return Completion("A.", "stop", Usage(10, 3))

    backend = FakeBackend(PRICED, reply=slow)
    client = make_client(backend, max_cost_usd=20.0, count_tokens=lambda text: 2, concurrency=4)
    # reserves $13, in flight: its 2 prompt tokens at the 1.5x margin a prompt gets before any reply, + 5 out
    running = client.submit(Request(prompt="Q.", max_tokens=5))
    deadline = __import__("time").monotonic() + 5
    while client.in_flight < 1 and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.01)
    with pytest.raises(CostLimitExceeded, match=r"1 call\(s\) in flight may add up to \$13\.0000.*rerun replays"):
        client.complete(Request(prompt="Q2.", max_tokens=5))  # 13 reserved + 13 > 20
    gate.set()
    running.result(timeout=5)


class _NoCounterBackend(BackendBase):
    """A backend without a counter of its own: the client counts with its info's tokenizer."""

    def __init__(self) -> None:
        super().__init__(FakeBackend().info)

    def complete(self, request: Request) -> Completion:
        raise AssertionError("not called")


class _OwnCounterBackend(_NoCounterBackend):
    """A backend naming cl100k_base whose own count_tokens disagrees with it (one token a word)."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_the_client_names_the_tokenizer_it_counts_with_only_when_it_uses_a_named_one() -> None:
    from booksum_app.chunking import get_tokenizer

    plain = Client(_NoCounterBackend())
    assert plain.tokenizer_name == "cl100k_base"
    assert plain.count_tokens("one two three") == get_tokenizer("cl100k_base").count("one two three")
    assert Client(_NoCounterBackend(), count_tokens=len).tokenizer_name is None
    native = _OwnCounterBackend()
    native.info = dataclasses.replace(native.info, tokenizer="native")
    assert Client(native).tokenizer_name is None, "the model's own counter is not a named tokenizer"
    assert Client(native).count_tokens("Mara, baking.") == 2


def test_a_named_tokenizer_wins_over_the_backends_own_counter() -> None:
    # inspect and compare's plan count with the tokenizer the model's info names: the run must too
    from booksum_app.chunking import get_tokenizer

    text = "Mara, the baker of Lisk, counted twenty-one loaves."
    client = Client(_OwnCounterBackend())
    assert client.count_tokens(text) == get_tokenizer("cl100k_base").count(text) != len(text.split())
    assert client.tokenizer_name == "cl100k_base"


def test_an_object_that_is_not_a_backend_is_refused_in_one_line() -> None:
    class Bare:
        info = FakeBackend().info

        def complete(self, request: Request) -> Completion:
            raise AssertionError("not called")

    with pytest.raises(TypeError, match="derive it from booksum_app.plugin.BackendBase"):
        Client(Bare())  # type: ignore[arg-type]


def test_a_lower_caller_rank_starts_first_then_the_priority() -> None:
    # compare gives each book its place in the grid as its rank: an earlier book's merges and judge
    # calls go before a later book's leaves, so books finish in turn instead of in lockstep
    from booksum_app.llm.context import call_context

    gate, order = threading.Event(), []

    def reply(request: Request) -> str:
        if request.prompt == "first":
            gate.wait(5)
        order.append(request.prompt)
        return "Done."

    client = make_client(FakeBackend(reply=reply), concurrency=1)
    futures = [client.submit(Request(prompt="first", max_tokens=5))]
    while not client.in_flight:
        threading.Event().wait(0.01)  # the only slot is taken: everything below waits
    for rank, priority, name in ((2, 0, "book 2"), (0, (1, 9), "book 0 leaf"), (1, 0, "book 1"),
                                 (0, (0, 3), "book 0 merge")):
        with call_context(rank=rank):
            futures.append(client.submit(Request(prompt=name, max_tokens=5), priority=priority))
    gate.set()
    for future in futures:
        future.result(timeout=5)
    client.close()
    assert order == ["first", "book 0 merge", "book 0 leaf", "book 1", "book 2"]
