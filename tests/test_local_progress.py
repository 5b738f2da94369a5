"""The embedded model shows tokens moving inside a call, says when the machine is busy, and paces the ETA in tokens.

No weights needed: a stand-in for ``llama_cpp.Llama`` whose ``eval`` advances one batch each
time the test lets it, so the progress line is read at known points inside one call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from booksum_app.cli.live import snapshot_line
from booksum_app.llm.base import BackendBase, CallProgress, Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.llm.providers.local_progress import TokenWatch
from booksum_app.runners.progress import ProgressSnapshot, RunProgress, call_parts

INFO = ModelInfo(name="local", context_window=8192, tokenizer="estimate")


class SteppedLlama:
    """``Llama.eval`` as llama-cpp-python has it (batches of ``n_batch``, ``n_tokens`` kept), one batch per step."""

    def __init__(self, n_batch: int) -> None:
        self.n_batch = n_batch
        self.n_tokens = 0
        self.step = threading.Semaphore(0)
        self.evaluated = threading.Event()

    def eval(self, tokens: Sequence[int]) -> None:
        for i in range(0, len(tokens), self.n_batch):
            assert self.step.acquire(timeout=10), "the test never let this batch run"
            self.n_tokens += len(tokens[i:i + self.n_batch])
            self.evaluated.set()

    def generate(self, prompt: Sequence[int], answer_tokens: int) -> None:
        self.n_tokens = 0
        self.eval(prompt)  # as Llama.generate: the prompt, then one token per step
        for token in range(answer_tokens):
            self.eval([token])


class SteppedBackend(BackendBase):
    """A backend over :class:`SteppedLlama`, watched as the embedded model's backend is."""

    bounds_own_attempts = True

    def __init__(self, prompt_tokens: int, answer_tokens: int) -> None:
        super().__init__(INFO)
        self.llm = SteppedLlama(n_batch=4)
        self.watch = TokenWatch(self.llm, threads=0)  # 0: no CPU verdict (this test's CPU is the machine's)
        self.prompt_tokens, self.answer_tokens = prompt_tokens, answer_tokens

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def call_progress(self) -> CallProgress | None:
        return self.watch.snapshot()

    def complete(self, request: Request) -> Completion:
        self.watch.begin(self.prompt_tokens)
        try:
            self.llm.generate(list(range(self.prompt_tokens)), self.answer_tokens)
        finally:
            self.watch.end()
        return Completion(text="Mara bakes bread.", finish_reason="stop", usage=Usage(input_tokens=self.prompt_tokens,
                                                                 output_tokens=self.answer_tokens))


def _advance(llm: SteppedLlama, batches: int) -> None:
    for _ in range(batches):
        llm.evaluated.clear()
        llm.step.release()
        assert llm.evaluated.wait(10)


def test_tokens_move_on_the_progress_line_while_one_call_runs() -> None:
    backend = SteppedBackend(prompt_tokens=10, answer_tokens=4)
    progress = RunProgress()
    with Client(backend) as client:
        progress.attach(client)
        future = client.submit(Request(prompt="summarize this", max_tokens=50))
        lines = []
        for batches in (1, 2, 1, 2):  # prompt 4/10, 10/10 (the third batch holds 2), then 1 and 3 answer tokens
            _advance(backend.llm, batches)
            lines.append(snapshot_line(progress.snapshot()))
        _advance(backend.llm, 1)
        future.result(timeout=10)
    assert "reading prompt 4/10 tok" in lines[0], lines
    assert "writing, 1 tok" in lines[2] and "writing, 3 tok" in lines[3], lines
    assert len(set(lines)) == len(lines), "the line changes while the call runs"
    assert progress.snapshot().call is None, "between calls nothing is in progress"


def test_watch_counts_a_reused_prefix_as_read() -> None:
    llm = SteppedLlama(n_batch=4)
    watch = TokenWatch(llm, threads=1)
    watch.begin(10)
    llm.n_tokens = 8  # llama.cpp kept 8 tokens of the previous prompt: 2 are evaluated
    thread = threading.Thread(target=llm.eval, args=([8, 9],))
    thread.start()
    _advance(llm, 1)
    thread.join()
    call = watch.snapshot()
    assert call is not None and call.read_tokens == 10 and call.written_tokens == 0


def test_a_busy_machine_is_named() -> None:
    wall = iter([0.0, 10.0])
    cpu = iter([0.0, 5.0])  # 5 s of CPU in 10 s on 2 threads: 0.5 cores of 2
    watch = TokenWatch(SteppedLlama(n_batch=4), threads=2, clock=lambda: next(wall), cpu_clock=lambda: next(cpu))
    watch.begin(100)
    call = watch.snapshot()
    assert call is not None and call.machine_busy
    assert call_parts(call)[1] == (1, "machine busy: 0.5 of 2 cores")
    idle = CallProgress(100, 100, 5, 100.0, 10.0, cores_used=1.9, threads=2)
    assert not idle.machine_busy and len(call_parts(idle)) == 1


def test_eta_is_paced_in_tokens_not_by_the_first_call() -> None:
    # 2 of 10 calls done: 2,000 prompt tokens read at 100/s, 200 answer tokens (100 each) at 10/s;
    # the call in progress has read 500 of its prompt; the plan reads 10,000 prompt tokens in all
    call = CallProgress(prompt_tokens=1000, read_tokens=500, written_tokens=0, read_per_s=100.0,
                        written_per_s=10.0, cores_used=2.0, threads=2)
    snap = ProgressSnapshot("summaries", 2, 10, calls=2, cache_hits=0, in_flight=1, input_tokens=2000,
                            output_tokens=200, cost_usd=0.0, elapsed_s=5000.0, planned_calls=10, call=call,
                            planned_input_tokens=10_000)
    # prompt: (10,000 - 2,500) / 100 = 75 s; answers: 8 calls left x 100 tokens / 10 per s = 80 s
    assert snap.eta_s == 155.0
    without = ProgressSnapshot("summaries", 2, 10, calls=2, cache_hits=0, in_flight=1, input_tokens=2000,
                               output_tokens=200, cost_usd=0.0, elapsed_s=5000.0, planned_calls=10)
    assert without.eta_s == 20_000.0, "a model that reports no pace keeps the calls' pace"


def test_before_the_first_answer_the_eta_charges_the_plans_answers() -> None:
    # the first call of 10 has read 500 of its 1,000 prompt tokens at 100/s; nothing written yet
    call = CallProgress(prompt_tokens=1000, read_tokens=500, written_tokens=0, read_per_s=100.0,
                        written_per_s=0.0, cores_used=2.0, threads=2)
    snap = ProgressSnapshot("waiting for the first answer", 0, 0, calls=0, cache_hits=0, in_flight=1,
                            input_tokens=0, output_tokens=0, cost_usd=0.0, elapsed_s=5.0, planned_calls=10,
                            call=call, planned_input_tokens=10_000, planned_output_tokens=2_000)
    # prompt: 9,500 / 100 = 95 s; answers: 10 x 200 tokens at a tenth of the read pace (10/s) = 200 s
    assert snap.eta_s == 295.0
