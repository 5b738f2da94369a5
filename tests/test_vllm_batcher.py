"""The gatherer under the vLLM backend: batches close when every expected caller is in, errors reach their callers.

No clock is waited on: the expected-caller count closes each batch, and the sender is held
with an event where a test needs calls to pile up behind a running batch.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from booksum_app.llm.providers.batcher import Gatherer


class Sender:
    """Records batches; the first one can be held until released."""

    def __init__(self, *, hold_first: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()

    def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        self.entered.set()
        self.release.wait()
        if any(item < 0 for item in items):
            raise KeyError("a negative item")  # stands for a per-request refusal
        return [item * 10 for item in items]


def test_callers_from_many_threads_form_one_batch() -> None:
    sender = Sender()
    gatherer: Gatherer[int, int] = Gatherer(sender, quiet_s=0.0, window_s=60.0)
    gatherer.expect(lambda: 12)  # twelve callers hold a slot: wait for all of them
    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(gatherer.submit, range(12)))
    assert results == [i * 10 for i in range(12)]
    assert len(sender.batches) == 1 and sorted(sender.batches[0]) == list(range(12))
    gatherer.close()


def test_calls_arriving_during_a_batch_form_the_next_one() -> None:
    sender = Sender(hold_first=True)
    gatherer: Gatherer[int, int] = Gatherer(sender, quiet_s=0.0, window_s=60.0)
    expected = [1]
    gatherer.expect(lambda: expected[0])
    with ThreadPoolExecutor(6) as pool:
        first = pool.submit(gatherer.submit, 0)
        assert sender.entered.wait(30)
        expected[0] = 5  # five more callers, all waiting behind the running batch
        later = [pool.submit(gatherer.submit, i) for i in range(1, 6)]
        sender.release.set()  # the next batch still waits for all five (the expected count)
        assert first.result() == 0 and [f.result() for f in later] == [10, 20, 30, 40, 50]
    assert [len(b) for b in sender.batches] == [1, 5]
    gatherer.close()


def test_a_group_joins_the_waiting_singles_and_gets_its_answers_in_order() -> None:
    sender = Sender()
    gatherer: Gatherer[int, int] = Gatherer(sender, quiet_s=0.0, window_s=60.0)
    gatherer.expect(lambda: 0)  # no single callers: the group goes at once
    assert gatherer.submit_all([3, 1, 2]) == [30, 10, 20]
    assert sender.batches == [[3, 1, 2]]
    gatherer.close()


def test_a_per_request_error_is_isolated_by_halving() -> None:
    sender = Sender()
    gatherer: Gatherer[int, int] = Gatherer(sender, quiet_s=0.0, window_s=60.0, split_on=(KeyError,))
    with pytest.raises(KeyError):
        gatherer.submit_all([1, 2, -3, 4])
    assert sender.batches[0] == [1, 2, -3, 4] and [-3] in sender.batches and [1, 2] in sender.batches
    gatherer.close()


def test_an_engine_failure_reaches_every_caller_of_the_batch() -> None:
    def broken(items: list[int]) -> list[int]:
        raise RuntimeError("CUDA out of memory")

    gatherer: Gatherer[int, int] = Gatherer(broken, quiet_s=0.0, window_s=60.0, split_on=(KeyError,))
    gatherer.expect(lambda: 3)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(gatherer.submit, i) for i in range(3)]
        for future in futures:
            with pytest.raises(RuntimeError, match="out of memory"):
                future.result()
    assert gatherer.batch_sizes == [3]
    gatherer.close()


def test_close_answers_waiting_callers_with_an_error() -> None:
    sender = Sender()
    gatherer: Gatherer[int, int] = Gatherer(sender, quiet_s=0.0, window_s=60.0)
    gatherer.expect(lambda: 2)  # a second caller never comes: the first waits
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(gatherer.submit, 1)
        gatherer.close()  # before or after it arrived, the caller gets the error, never a hang
        with pytest.raises(RuntimeError, match="closed"):
            waiting.result()
    with pytest.raises(RuntimeError, match="closed"):
        gatherer.submit(2)
