"""The call layer against servers that misbehave as real ones do, on every carrier.

Each quirk of ``booksum_app.testing.quirks`` (and the fake server's faults) meets each way a
call travels: the lean HTTP client, the ``openai`` SDK, the ``anthropic`` SDK. Every case ends
in a right number or one line, within its bound; the money counted equals what the server
billed, to the token, retried and wasted replies included.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from booksum_app.errors import CostLimitExceeded, ModelError, TransientModelError
from booksum_app.llm.base import Backend, Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.llm.meter import metering
from booksum_app.llm.providers.anthropic import AnthropicBackend
from booksum_app.llm.providers.openai import OpenAIBackend
from booksum_app.llm.retry_policy import BudgetSpentOnReasoning, ServerAskedToWait
from booksum_app.testing.fake_server import FakeServer
from booksum_app.testing.quirks import REASONING_TOKENS

KEY = "vllm-token-ABCDEFGH12345678"
PRICED = {"input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10.0}
PATHS = ("direct", "sdk", "anthropic")
GUARD_S = 60.0  # a hang detector, not a timing: each case ends within a few --timeout


def backend_for(path: str, server: FakeServer, *, timeout_s: float = 30.0, **options: Any) -> Backend:
    if path == "anthropic":
        info = ModelInfo(name="anthropic:claude-sonnet-4-5", context_window=200_000, tokenizer="cl100k_base",
                         **PRICED)
        return AnthropicBackend(info, model_id="claude-test", api_key=KEY,
                                base_url=server.anthropic_base_url, timeout_s=timeout_s)
    info = ModelInfo(name=options.pop("name", "openai:gpt-4o"), context_window=128_000, tokenizer="cl100k_base",
                     **PRICED)
    return OpenAIBackend(info, model_id=options.pop("model_id", "gpt-4o"), api_key=KEY,
                         base_url=server.openai_base_url, timeout_s=timeout_s,
                         transport="auto" if path == "direct" else "sdk", **options)


def client_for(backend: Backend, **options: Any) -> Client:
    options.setdefault("backoff_initial_s", 0.01)
    options.setdefault("backoff_max_s", 0.05)
    return Client(backend, **options)


def bounded(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread; fail the test (instead of hanging the suite) if it never ends."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()  # the caller's open meters count the calls made there
    threading.Thread(target=lambda: context.run(run), daemon=True).start()
    assert done.wait(GUARD_S), "the call layer hung"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(retry_after_s=0.01, hang_s=3.0, drip_s=0.2) as fake:
        yield fake


REQ = Request(prompt="Summarize: the cat sat on the mat. It was warm.", max_tokens=200)


# ---- no limit, retry, fault or timeout deadlocks the pool --------------------------------


@pytest.mark.parametrize("limit", [1, 4, None])  # Ollama/llama.cpp/vLLM's 1, a fixed N, adaptive
def test_every_default_limit_completes_under_faults(limit: int | None) -> None:
    faults = ("429", "500", "drop", "timeout", "empty")
    with FakeServer(fault_rate=0.3, fault_kinds=faults, retry_after_s=0.01, hang_s=2.0, seed=7) as fake:
        backend = backend_for("direct", fake, timeout_s=0.5)
        adaptive = limit is None
        client = client_for(backend, concurrency=limit or 64, initial_concurrency=4 if adaptive else None,
                            adaptive=adaptive, max_attempts=10)
        requests = [Request(prompt=f"Part {i}. The cat sat.", max_tokens=50) for i in range(24)]
        try:
            answers = bounded(lambda: client.complete_many(requests))
        finally:
            client.close()
    assert len(answers) == len(requests)
    assert client.limit >= 1


def test_a_retry_does_not_wait_for_a_slot_held_by_a_call_no_thread_runs() -> None:
    """--concurrency 1 and a first attempt that fails: the retry must get the one slot back."""
    with FakeServer(script=["500", None, "429", None], retry_after_s=0.01) as fake:
        client = client_for(backend_for("direct", fake), concurrency=1)
        try:
            answers = bounded(lambda: client.complete_many([Request(prompt=f"P{i}.", max_tokens=20) for i in range(3)]))
        finally:
            client.close()
    assert all(a.text for a in answers) and fake.call_count == 5


# ---- every attempt is a bill -------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_retried_empty_answers_are_billed_to_the_token(path: str, server: FakeServer) -> None:
    server.add_faults("empty", "empty")
    client = client_for(backend_for(path, server))
    with metering() as meter:
        answer = bounded(lambda: client.complete(REQ))
    client.close()
    assert answer.text and server.call_count == 3
    billed = server.billed
    assert (client.usage.input_tokens, client.usage.output_tokens) == (billed.input_tokens, billed.output_tokens)
    assert meter.tally.input_tokens == billed.input_tokens and meter.tally.wasted_attempts == 2
    info = client.info
    assert client.cost_usd == pytest.approx(info.cost_usd(Usage(billed.input_tokens, billed.output_tokens)))
    assert client.calls[-1].attempts == 3 and client.calls[-1].cost_usd == pytest.approx(client.cost_usd)


@pytest.mark.parametrize("path", PATHS)
def test_an_empty_answer_cut_at_the_limit_is_not_resent(path: str, server: FakeServer) -> None:
    server.add_faults("cutempty")
    client = client_for(backend_for(path, server))
    answer = bounded(lambda: client.complete(REQ))
    client.close()
    assert answer.text == "" and answer.cut_off and server.call_count == 1
    assert client.usage.output_tokens == server.billed.output_tokens == REQ.max_tokens


def test_a_reasoning_model_unknown_to_booksum_spends_its_budget_once_and_says_so(server: FakeServer) -> None:
    """A base-URL model booksum does not know as reasoning: 200 tokens of budget, 700 hidden."""
    server.fault_rate, server.fault_kinds = 1.0, ("reasoning",)
    client = client_for(backend_for("direct", server, name="openai:thinker", model_id="thinker"))
    with pytest.raises(BudgetSpentOnReasoning, match="hidden reasoning.*--reasoning-effort"):
        bounded(lambda: client.complete(REQ))
    client.close()
    assert server.call_count == 1  # never resent: it would fail the same way
    assert client.usage.output_tokens == server.billed.output_tokens == REQ.max_tokens


@pytest.mark.parametrize("path", ["direct", "sdk"])
def test_a_reasoning_model_gets_room_for_its_hidden_tokens_and_they_are_billed(path: str, server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("reasoning",)
    backend = backend_for(path, server, name="openai:o4-mini", model_id="o4-mini", reasoning=True)
    client = client_for(backend)
    answer = bounded(lambda: client.complete(REQ))
    client.close()
    assert answer.text and answer.reasoning_tokens == REASONING_TOKENS
    assert client.usage.output_tokens == server.billed.output_tokens > REASONING_TOKENS
    assert server.requests[-1].payload["max_completion_tokens"] > REQ.max_tokens + REASONING_TOKENS


# ---- usage that is missing or absurd -----------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("quirk", ["nousage", "hugeusage", "negusage"])
def test_usage_missing_or_absurd_is_estimated_not_trusted(path: str, quirk: str, server: FakeServer) -> None:
    server.add_faults(quirk)
    client = client_for(backend_for(path, server))
    with metering() as meter:
        answer = bounded(lambda: client.complete(REQ))
    client.close()
    assert answer.text and server.call_count == 1  # a paid answer is not resent over its usage
    assert not answer.usage_reported
    tally = meter.tally
    assert tally.estimated_tokens == tally.input_tokens + tally.output_tokens > 0
    assert tally.input_tokens < 1000 and tally.spent_usd < 0.01  # not 10^13 tokens, not negative
    assert client.notes and "estimated" in client.notes[0]


def test_the_cost_ceiling_holds_when_the_server_reports_no_usage(server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("nousage",)
    client = client_for(backend_for("direct", server), max_cost_usd=0.02)
    done = 0
    with pytest.raises(CostLimitExceeded):
        for i in range(50):
            bounded(lambda i=i: client.complete(Request(prompt=f"Part {i}. " + "words " * 300, max_tokens=200)))
            done += 1
    client.close()
    assert 0 < done < 50 and client.cost_usd <= 0.02


# ---- transports that never let one read time out -----------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("quirk", ["drip", "slowheaders", "endless", "reset"])
def test_an_attempt_is_bounded_in_wall_clock_time(path: str, quirk: str, server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, (quirk,)
    client = client_for(backend_for(path, server, timeout_s=1.0), max_attempts=2)
    with pytest.raises(TransientModelError, match="failed 2 times"):
        bounded(lambda: client.complete(REQ))
    client.close()
    assert server.call_count == 2


def test_a_redirect_names_where_it_points_in_one_clean_line(server: FakeServer) -> None:
    """The lean client follows no redirect (the SDKs follow them themselves)."""
    server.add_faults("redirect")
    client = client_for(backend_for("direct", server))
    with pytest.raises(ModelError) as caught:
        bounded(lambda: client.complete(REQ))
    client.close()
    message = str(caught.value)
    assert "\x1b" not in message and "\n" not in message
    assert "redirected the request (307) to http://127.0.0.1:9/elsewhere;" in message  # the whole CSI gone


@pytest.mark.parametrize("path", PATHS)
def test_a_far_retry_after_fails_at_once_with_the_servers_figure(path: str, server: FakeServer) -> None:
    server.add_faults("farretry")
    waits: list[float] = []
    client = client_for(backend_for(path, server), sleep=waits.append)
    with pytest.raises(ServerAskedToWait, match="asks to wait 999,999,999 s"):
        bounded(lambda: client.complete(REQ))
    client.close()
    assert server.call_count == 1 and not waits


@pytest.mark.parametrize("path", PATHS)
def test_a_key_quoted_near_the_message_cut_never_prints(path: str, server: FakeServer) -> None:
    server.fault_rate, server.fault_kinds = 1.0, ("echokeyfar",)
    client = client_for(backend_for(path, server), max_attempts=1)
    with pytest.raises(TransientModelError) as caught:
        bounded(lambda: client.complete(REQ))
    client.close()
    message = str(caught.value)
    assert not any(KEY[i : i + 6] in message for i in range(len(KEY) - 5)), message


# ---- a run that fails still says what it spent -------------------------------------------


def test_a_failed_calls_paid_replies_reach_the_meter_and_the_display(server: FakeServer) -> None:
    server.add_faults("empty", "500", "500")
    seen: list[Any] = []
    client = client_for(backend_for("direct", server), max_attempts=3, on_call=seen.append)
    with metering() as meter, pytest.raises(TransientModelError):
        bounded(lambda: client.complete(REQ))
    client.close()
    assert meter.tally.input_tokens == server.billed.input_tokens > 0
    assert meter.tally.wasted_attempts == 1 and meter.tally.calls == 0
    assert seen and seen[-1].finish_reason == "error" and seen[-1].cost_usd == pytest.approx(meter.tally.spent_usd)


def test_answers_keep_flowing_after_bills(server: FakeServer) -> None:
    client = client_for(backend_for("direct", server))
    answers: list[Completion] = bounded(lambda: client.complete_many([REQ, Request(prompt="Other.", max_tokens=30)]))
    client.close()
    assert all(a.text for a in answers)
    assert (client.usage.input_tokens, client.usage.output_tokens) == (server.billed.input_tokens,
                                                                        server.billed.output_tokens)


def test_wasted_replies_are_in_the_call_log_with_their_money(server: FakeServer, tmp_path: Any) -> None:
    from booksum_app.llm.cache import CallCache
    from booksum_app.llm.call_log import read_log

    server.add_faults("empty", "empty")
    client = client_for(backend_for("direct", server), cache=CallCache(tmp_path))
    bounded(lambda: client.complete(REQ))
    stats = client.cache.stats() if client.cache is not None else None
    client.close()
    log = read_log(tmp_path)
    assert log is not None and len(log.calls) == 3
    assert sum("(wasted)" in c.purpose for c in log.calls) == 2
    assert sum(c.usage.input_tokens for c in log.calls) == server.billed.input_tokens
    assert stats is not None and stats.calls == 1  # the cache holds one answer


# ---- numbers from outside that are not numbers -------------------------------------------


@pytest.mark.parametrize("price", ["nan", "inf", "-1.0", '"free"'])
def test_a_config_price_that_is_not_a_price_is_refused(price: str, tmp_path: Any) -> None:
    from booksum_app.errors import ConfigError
    from booksum_app.llm.registry import LLMSettings, choose_model

    config = tmp_path / "config.toml"
    config.write_text(f'[models."openai:mine"]\ninput_usd_per_mtok = {price}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="input_usd_per_mtok must be a number from 0 to 10,000"):
        choose_model("openai:mine", settings=LLMSettings(config_path=config), env={})


def test_a_runaway_answer_is_cut_where_it_can_end_not_searched_whole() -> None:
    """An answer of megabytes (under the 64 MB reply cap) is cut as its head would be."""
    from booksum_app.chunking import get_tokenizer
    from booksum_app.compression.validity import truncate_at_sentence_end

    count = get_tokenizer("cl100k_base").count
    head = "The crew left port at dawn. They sailed north for a week. The storm came on the eighth day. "
    runaway = head + "and then the sea was grey " * 400_000  # 10 MB, no sentence end after the head
    cut = bounded(lambda: truncate_at_sentence_end(runaway, max_tokens=40, count_tokens=count))
    assert cut == truncate_at_sentence_end(head + "and then the sea was grey " * 10, max_tokens=40,
                                           count_tokens=count)
    assert cut.endswith("eighth day.")


# ---- Ollama's native API ------------------------------------------------------------------


def test_ollama_a_dripping_reply_is_cut_at_the_attempts_deadline() -> None:
    from booksum_app.llm.providers.ollama import OllamaBackend
    from booksum_app.testing.fake_ollama import FakeOllama

    info = ModelInfo(name="ollama:llama3.1:8b", context_window=8192, tokenizer="estimate")
    with FakeOllama(script=["drip", "drip"]) as fake:
        client = client_for(OllamaBackend(info, model_id="llama3.1:8b", host=fake.url, timeout_s=1.0), max_attempts=2)
        with pytest.raises(TransientModelError, match="failed 2 times.*timed out"):
            bounded(lambda: client.complete(REQ))
        client.close()
        assert len(fake.requests) == 2


def test_ollama_a_reply_without_counts_is_estimated() -> None:
    from booksum_app.llm.providers.ollama import OllamaBackend
    from booksum_app.testing.fake_ollama import FakeOllama

    info = ModelInfo(name="ollama:llama3.1:8b", context_window=8192, tokenizer="estimate")
    with FakeOllama(script=["nousage"]) as fake:
        client = client_for(OllamaBackend(info, model_id="llama3.1:8b", host=fake.url, timeout_s=5.0))
        with metering() as meter:
            answer = bounded(lambda: client.complete(REQ))
        client.close()
    assert answer.text and not answer.usage_reported
    assert meter.tally.estimated_tokens == meter.tally.input_tokens + meter.tally.output_tokens > 0
