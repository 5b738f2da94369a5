"""Accounting follows the client, not the thread: a strategy plugin that calls the run's model from
threads of its own is counted, logged, asked about and closed like a built-in.

The plugins here are installed the way a user installs one (an entry point of the
``booksum.strategies`` group in a distribution's metadata), and call the fake server.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.config import MAX_COUNT
from booksum_app.errors import ConfigError
from booksum_app.llm.run_client import RunClosed
from booksum_app.plugin import (
    ChatModel,
    PlanInput,
    PromptBundle,
    Request,
    StrategyBase,
    StrategyJob,
    StrategyPlan,
    StrategyResult,
)
from booksum_app.runners.plan import checked_plan
from booksum_app.strategies import STRATEGIES
from booksum_app.testing.fake_server import FakeServer

THREADS = 5
MODEL = "openai:gpt-4-turbo"  # priced ($10 / $30 per Mtok), counted with cl100k_base as the fake server counts


class Threaded(StrategyBase):
    """Summarizes each of THREADS slices of the book on a threading.Thread of its own, then joins them."""

    name = "threaded"
    description = "one thread per slice"

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        return StrategyPlan(calls=THREADS, input_tokens=THREADS * 4000, output_tokens=THREADS * 100)

    def run(self, job: StrategyJob, *, model: ChatModel, prompts: PromptBundle, on_progress: Any = None,
            ) -> StrategyResult:
        answers: list[str] = [""] * THREADS

        def one(i: int) -> None:
            answers[i] = model.complete(Request(prompt=f"Summarize part {i}: {job.text[:400]}", max_tokens=60,
                                                purpose="summarize")).text

        threads = [threading.Thread(target=one, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return StrategyResult(summary=" ".join(answers), nodes=(), calls=())


class Crashing(Threaded):
    """A thread of its own fails with an exception booksum does not know (after one paid call)."""

    name = "crashing"

    def run(self, job: StrategyJob, *, model: ChatModel, prompts: PromptBundle, on_progress: Any = None,
            ) -> StrategyResult:
        def fail() -> None:
            model.complete(Request(prompt="One paid call.", max_tokens=20))
            raise ValueError("the slicer lost its place")

        thread = threading.Thread(target=fail, name="slicer")
        thread.start()
        thread.join()
        return StrategyResult(summary="Mara bakes bread.", nodes=(), calls=())


LATE: dict[str, Any] = {}  # what the leaky strategy's late thread met


class Leaky(StrategyBase):
    """Leaves two threads behind: one whose call is in flight when run() returns, one that calls later."""

    name = "leaky"
    description = "threads that outlive run()"

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        return StrategyPlan(calls=2, input_tokens=2000, output_tokens=100)

    def run(self, job: StrategyJob, *, model: ChatModel, prompts: PromptBundle, on_progress: Any = None,
            ) -> StrategyResult:
        started = threading.Event()

        def in_flight() -> None:
            started.set()
            model.complete(Request(prompt="A call still in flight when run() returns.", max_tokens=20))

        def later() -> None:
            LATE["go"].wait(10)
            try:
                model.complete(Request(prompt="A call after run() returned.", max_tokens=20))
            except RunClosed as exc:
                LATE["refused"] = str(exc)
            LATE["done"].set()

        threading.Thread(target=in_flight).start()
        threading.Thread(target=later).start()
        started.wait(5)
        return StrategyResult(summary="Mara bakes bread.", nodes=(), calls=())


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    dist = tmp_path / "site" / "booksum_threads-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: booksum-threads\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[booksum.strategies]\nthreaded = booksum_threads_plugin:Threaded\nleaky = booksum_threads_plugin:Leaky\n"
        "crashing = booksum_threads_plugin:Crashing\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setitem(sys.modules, "booksum_threads_plugin", sys.modules[__name__])
    importlib.invalidate_caches()
    STRATEGIES.reload()
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(tmp_path / "cache"))
    yield
    STRATEGIES.reload()


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning before the bells. " * 80,
                    encoding="utf-8")
    return book


def _summarize(tmp_path: Path, server: FakeServer, strategy: str, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "--strategy", strategy, "-m", MODEL,
                                    "--base-url", server.openai_base_url, "--no-clean",
                                    "-o", str(tmp_path / "out" / "lisk"), *extra])


@pytest.mark.usefixtures("plugins")
def test_every_call_of_a_threaded_plugin_is_in_the_record_and_in_logs(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = _summarize(tmp_path, server, "threaded", "--yes")
        billed = server.billed
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output, "the plan's replay stops each thread at its miss, silently"
    totals = json.loads((tmp_path / "out" / "lisk.json").read_text(encoding="utf-8"))["totals"]
    assert totals["calls"] == THREADS and totals["input_tokens"] == billed.input_tokens > 0
    assert totals["output_tokens"] == billed.output_tokens
    assert totals["spent_usd"] == pytest.approx((billed.input_tokens * 10 + billed.output_tokens * 30) / 1e6, abs=1e-6)
    logged = CliRunner().invoke(cli, ["logs", "--json", "-", "-n", "0"])
    rows = json.loads(logged.stdout)
    assert len(rows) == THREADS, rows
    assert {row["book"] for row in rows} == {"lisk.txt"} and len({row["run"] for row in rows}) == 1
    assert all(row["run"] for row in rows)
    assert sum(row["cost_usd"] for row in rows) == pytest.approx(totals["spent_usd"], abs=1e-6)


@pytest.mark.usefixtures("plugins")
def test_a_threaded_plugin_is_asked_about_like_hier(tmp_path: Path) -> None:
    """Out of a terminal, above --max-plan-cost and without --yes: refused, exit 2, no call."""
    with FakeServer() as server:
        plugin = _summarize(tmp_path, server, "threaded", "--max-plan-cost", "0.0001")
        hier = _summarize(tmp_path, server, "hier", "--max-plan-cost", "0.0001")
        requests = server.requests
    assert plugin.exit_code == hier.exit_code == 2, plugin.output
    assert "above --max-plan-cost" in plugin.stderr and "Traceback" not in plugin.output
    assert requests == [] and not (tmp_path / "out" / "lisk.json").exists()


@pytest.mark.usefixtures("plugins")
def test_calls_in_flight_when_run_returns_are_counted_and_later_ones_refused_unpaid(tmp_path: Path) -> None:
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.summarize import summarize_book

    LATE.clear()
    LATE.update(go=threading.Event(), done=threading.Event())
    with FakeServer(latency_s=0.3) as server:
        record = summarize_book(_book(tmp_path), strategy="leaky", model=MODEL, clean=False,
                                llm_settings=LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "c"))
        LATE["go"].set()
        assert LATE["done"].wait(10)
        requests = len(server.requests)
    assert record.totals.calls == 1 and record.totals.input_tokens > 0, "the call in flight was waited for"
    assert requests == 1, "the late call was never sent"
    assert "called the model after its run() returned" in LATE["refused"] and "not paid" in LATE["refused"]


@pytest.mark.usefixtures("plugins")
def test_a_plugin_thread_that_fails_is_one_line_and_its_call_is_counted(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = _summarize(tmp_path, server, "crashing", "--yes")
    assert result.exit_code == 0, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: a thread 'slicer' ended with ValueError: the slicer lost its place"], result.stderr
    assert "Traceback" not in result.output
    assert json.loads((tmp_path / "out" / "lisk.json").read_text(encoding="utf-8"))["totals"]["calls"] == 1


class _Planned(StrategyBase):
    name = "planned"
    description = "returns whatever plan it is given"

    def __init__(self, plan: Any) -> None:
        self._plan = plan

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        return self._plan  # type: ignore[no-any-return]

    def run(self, job: StrategyJob, *, model: ChatModel, prompts: PromptBundle, on_progress: Any = None,
            ) -> StrategyResult:
        raise AssertionError("never run")


NUMBERS = st.one_of(
    st.integers(-10**15, 10**15), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.sampled_from(["4", None, MAX_COUNT, MAX_COUNT + 1, 10**30, 2.0]),
)
PLAN_INPUT = PlanInput((100,), 8192, {}, None)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(calls=NUMBERS, input_tokens=NUMBERS, output_tokens=NUMBERS, levels=st.one_of(st.none(), NUMBERS))
def test_a_plan_passes_only_with_whole_non_negative_numbers(calls: Any, input_tokens: Any, output_tokens: Any,
                                                             levels: Any) -> None:
    plan = StrategyPlan(calls=calls, input_tokens=input_tokens, output_tokens=output_tokens, levels=levels)
    fields = [calls, input_tokens, output_tokens] + ([] if levels is None else [levels])
    good = all(type(v) is int and 0 <= v <= MAX_COUNT for v in fields)
    if good:
        assert checked_plan(_Planned(plan), PLAN_INPUT) is plan
        return
    with pytest.raises(ConfigError, match=r"strategy 'planned''s plan\(\) \w+ must be an integer") as caught:
        checked_plan(_Planned(plan), PLAN_INPUT)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200


@pytest.mark.parametrize("plan", [None, "4 calls", (4, 10, 10)])
def test_a_plan_that_is_no_plan_is_one_line(plan: Any) -> None:
    with pytest.raises(ConfigError, match=r"plan\(\) returned a \w+, not a StrategyPlan"):
        checked_plan(_Planned(plan), PLAN_INPUT)


@pytest.mark.usefixtures("plugins")
def test_a_negative_nan_plan_stops_the_run_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Threaded, "plan", lambda self, p: StrategyPlan(calls=-4, input_tokens=float("nan"),
                                                                        output_tokens=0))
    with FakeServer() as server:
        result = _summarize(tmp_path, server, "threaded", "--yes")
        requests = server.requests
    assert result.exit_code == 2 and requests == [], result.output
    assert "strategy 'threaded''s plan() calls must be an integer from 0" in result.stderr
    assert "got -4" in result.stderr and "Traceback" not in result.output


def _ceiling_run(tmp_path: Path, ratio: float, ceiling_usd: float, prompt_words: int) -> float:
    """Judge-shaped calls (long prompts, short answers) under ``ceiling_usd`` against a server that bills
    ``ratio`` times the prompt tokens booksum counts; what the server billed, in dollars."""
    from booksum_app.errors import CostLimitExceeded
    from booksum_app.llm.registry import LLMSettings, get_model

    with FakeServer(usage_ratio=ratio, reply=lambda request: "word " * 400) as server:
        client = get_model(MODEL, settings=LLMSettings(base_url=server.openai_base_url, use_cache=False,
                                                        max_cost_usd=ceiling_usd), env={"OPENAI_API_KEY": "dummy"})
        requests = [Request(prompt=f"Sentence {i}. " + "the bells of Lisk ring " * prompt_words, max_tokens=20)
                    for i in range(40)]
        try:
            client.complete_many(requests)
        except CostLimitExceeded:
            pass
        finally:
            client.close()
        billed = server.billed
    return client.info.cost_usd(billed)


@pytest.mark.parametrize("ratio", [1.0, 1.25, 1.5])
def test_the_ceiling_holds_when_the_provider_counts_more(tmp_path: Path, ratio: float) -> None:
    spent = _ceiling_run(tmp_path, ratio, 0.2, 300)
    assert 0 < spent <= 0.2, spent


@settings(max_examples=12, deadline=None)
@given(ratio=st.floats(1.0, 1.5), ceiling_usd=st.floats(0.02, 0.4), prompt_words=st.integers(20, 400))
def test_spent_never_passes_the_ceiling_whatever_the_providers_count(ratio: float, ceiling_usd: float,
                                                                    prompt_words: int) -> None:
    assert _ceiling_run(Path("."), ratio, ceiling_usd, prompt_words) <= ceiling_usd
