"""Property-based tests of the call layer: random faults, usage, finish reasons and bodies.

docs/guarantees.md promises, for every call: it ends within its bound (``--timeout`` an
attempt, a bounded number of attempts); what was billed is what is shown (the run's meter, the
client's totals and the call's record agree, every count a non-negative whole number no larger
than the call can hold); a failure is one line with the documented exit code and no key in it;
nothing is paid twice (a rerun on the same cache replays the answer without a call); nothing is
cached that was not an answer. Hypothesis draws sequences of attempt outcomes for a plugin-style
backend (in process) and of faults and quirks for the fake HTTP server (every carrier), and
checks those promises on each. Failing examples it found are kept as ``@example``\\ s.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from booksum_app.errors import BooksumError, ModelError, RateLimited, TransientModelError
from booksum_app.llm.base import BackendBase, Completion, Request, Usage
from booksum_app.llm.billing import OUTPUT_SLACK_TOKENS, PROMPT_SLACK
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import Client
from booksum_app.llm.meter import metering
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO

KEY = "sk-prop" + "H7g6F5d4S3a2" * 2
REQ = Request(prompt="Mara bakes bread in Lisk. Teo counts the coins twice.", max_tokens=40)
TIMEOUT_S = 0.05
MAX_ATTEMPTS = 3

COUNTS = st.one_of(
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=-10**6, max_value=-1),
    st.just(10**13),
    st.just(2**63),
    st.text(alphabet="0123456789", min_size=1, max_size=4),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
USAGES = st.one_of(st.none(), st.builds(Usage, COUNTS, COUNTS), st.builds(Usage, COUNTS, COUNTS, COUNTS))
TEXTS = st.sampled_from(["", "   ", "Mara bakes bread.", "Mara bakes bread. Teo counts the coins.",
                         "Mara " * 700, "x" * 16 * 40]) | st.text(max_size=40)
FINISHES = st.sampled_from(["stop", "length", "", "content_filter", "loop", None, 3])
ANSWERS = st.tuples(st.just("answer"), TEXTS, USAGES, FINISHES, st.booleans())
FAULTS = st.tuples(st.sampled_from(["rate", "transient", "model", "runtime", "oserror", "systemexit", "hang",
                                    "str", "none", "textless"]))
OUTCOMES = st.lists(st.one_of(ANSWERS, FAULTS), max_size=MAX_ATTEMPTS + 1)


class Scripted(BackendBase):
    """A plugin-style backend that plays one outcome per attempt, then answers plainly."""

    kind = "scripted"

    def __init__(self, outcomes: list[Any], release: threading.Event) -> None:
        super().__init__(FAKE_MODEL_INFO)
        self._outcomes = list(outcomes)
        self._release = release
        self._lock = threading.Lock()
        self.calls = 0

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.calls += 1
            outcome = self._outcomes.pop(0) if self._outcomes else ("answer", "Done here.", Usage(12, 3), "stop", False)
        kind = outcome[0]
        if kind == "answer":
            _, text, usage, finish, hit = outcome
            usage_arg = {} if usage is None else {"usage": usage}
            return Completion(text, finish, model="m", cache_hit=hit, **usage_arg)
        errors: dict[str, BaseException] = {
            "rate": RateLimited(f"slow down {KEY}", retry_after_s=0.0),
            "transient": TransientModelError(f"bad gateway Authorization: Bearer {KEY}"),
            "model": ModelError(f"request rejected (400): api_key={KEY}"),
            "runtime": RuntimeError(f"boom with {KEY}"),
            "oserror": ConnectionResetError(f"reset {KEY}"),
            "systemexit": SystemExit(0),
        }
        if kind in errors:
            raise errors[kind]
        if kind == "hang":
            self._release.wait(10)
            return Completion("Late answer.", "stop", Usage(12, 3))
        if kind == "str":
            return "Mara bakes."  # type: ignore[return-value]
        if kind == "none":
            return None  # type: ignore[return-value]
        return Completion(text=None, finish_reason="stop")  # type: ignore[arg-type]


def _check_tally(tally: Any, replies: int) -> None:
    """Every count a non-negative whole number, none past what ``replies`` paid replies can hold."""
    for f in dataclasses.fields(tally):
        value = getattr(tally, f.name)
        assert isinstance(value, int | float) and not isinstance(value, bool) and value >= 0, (f.name, value)
    room = REQ.max_tokens + OUTPUT_SLACK_TOKENS
    assert tally.output_tokens <= replies * room, tally
    assert tally.input_tokens <= replies * (PROMPT_SLACK * FAKE_MODEL_INFO.context_window + 1024), tally


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outcomes=OUTCOMES)
@example(outcomes=[("answer", "Mara bakes bread.", Usage("100", "5"), "stop", False)])  # type: ignore[arg-type]
@example(outcomes=[("answer", "Mara bakes bread.", Usage(-1000, -5), "stop", False)])
@example(outcomes=[("answer", "Mara bakes bread.", Usage(10, 3), "stop", True)])
@example(outcomes=[("systemexit",)])
@example(outcomes=[("hang",), ("hang",), ("hang",)])
@example(outcomes=[("answer", "Mara " * 700, Usage(10, 40), "stop", False)] * 3)
@example(outcomes=[("answer", "", Usage(10, 40), "length", False)])
def test_a_plugin_call_keeps_every_promise(outcomes: list[Any]) -> None:
    release = threading.Event()
    backend = Scripted(outcomes, release)
    with tempfile.TemporaryDirectory() as tmp:
        cache = CallCache(Path(tmp) / "calls.sqlite")
        client = Client(backend, cache=cache, max_attempts=MAX_ATTEMPTS, attempt_timeout_s=TIMEOUT_S,
                        sleep=lambda s: None)
        error: BaseException | None = None
        answer: Completion | None = None
        started = time.monotonic()
        with metering() as meter:
            try:
                answer = client.complete(REQ)
            except BaseException as exc:  # noqa: BLE001 -- the property is what escapes
                error = exc
            took = time.monotonic() - started
            release.set()  # hung attempts now answer late: billed, never used
            deadline = time.monotonic() + 5
            while client._door.abandoned and time.monotonic() < deadline:
                time.sleep(0.005)
        assert took < MAX_ATTEMPTS * (TIMEOUT_S + 0.5), "the call ends within its bound"
        assert backend.calls <= MAX_ATTEMPTS
        # one line, the documented exit code, no key
        if error is not None:
            assert isinstance(error, BooksumError), repr(error)
            message = str(error)
            assert error.exit_code == 4 and "\n" not in message and "H7g6F5" not in message, message
        # billed == shown: the run's meter, the client's totals; the call's record when nothing came late
        tally = client.tally
        assert (meter.tally.input_tokens, meter.tally.output_tokens, meter.tally.wasted_attempts) == (
            tally.input_tokens, tally.output_tokens, tally.wasted_attempts)
        _check_tally(tally, replies=backend.calls)
        if answer is not None and not any(o[0] == "hang" for o in outcomes):
            record = client.calls[-1]
            assert (record.usage.input_tokens, record.usage.output_tokens) == (tally.input_tokens, tally.output_tokens)
            assert not answer.cache_hit and isinstance(answer.text, str)
        # nothing cached that was not an answer
        cached = cache.get(client._key(REQ))
        if answer is None or not answer.text.strip():
            assert cached is None
        else:
            assert cached is not None and cached.text == answer.text
        client.close()
        # nothing paid twice: a rerun replays the answer without calling the backend
        if cached is not None:
            again = Scripted([("runtime",)] * MAX_ATTEMPTS, threading.Event())
            rerun = Client(again, cache=CallCache(Path(tmp) / "calls.sqlite"), max_attempts=MAX_ATTEMPTS,
                           sleep=lambda s: None)
            replayed = rerun.complete(REQ)
            assert replayed.text == cached.text and replayed.cache_hit and again.calls == 0
            assert rerun.tally.spent_usd == 0 and rerun.usage == Usage()
            rerun.close()


# ---- the same promises over HTTP, on every carrier ---------------------------------------

HTTP_FAULTS = st.sampled_from(["429", "500", "503", "drop", "empty", "truncated", "notjson", "deepjson", "nousage",
                               "negusage", "hugeusage", "cutempty", "hugetext", "400", "401", "echokey", "timeout",
                               "drip", "reset"])
USAGE_FAULTS = {"nousage", "negusage", "hugeusage"}
HTTP_TIMEOUT_S = 0.5


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(["direct", "sdk", "anthropic"]), script=st.lists(st.none() | HTTP_FAULTS, max_size=3))
@example(path="sdk", script=["deepjson", "hugetext", "nousage"])
@example(path="direct", script=["drip", "drip", "drip"])
def test_a_call_over_http_keeps_every_promise(path: str, script: list[str | None]) -> None:
    from test_conformance import KEY as SERVER_KEY
    from test_conformance import backend_for

    from booksum_app.testing.fake_server import FakeServer

    with FakeServer(retry_after_s=0.0, hang_s=1.0, drip_s=0.2, script=script) as server, \
            tempfile.TemporaryDirectory() as tmp:
        cache = CallCache(Path(tmp) / "calls.sqlite")
        request = Request(prompt="Summarize: Mara bakes bread in Lisk. Teo counts the coins.", max_tokens=200)
        client = Client(backend_for(path, server, timeout_s=HTTP_TIMEOUT_S), cache=cache, max_attempts=MAX_ATTEMPTS,
                        sleep=lambda s: None)
        error: BaseException | None = None
        answer: Completion | None = None
        started = time.monotonic()
        with metering() as meter:
            try:
                answer = client.complete(request)
            except BaseException as exc:  # noqa: BLE001 -- the property is what escapes
                error = exc
        assert time.monotonic() - started < MAX_ATTEMPTS * (HTTP_TIMEOUT_S + 2.0)
        if error is not None:
            message = str(error)
            assert isinstance(error, BooksumError) and error.exit_code == 4, repr(error)
            assert "\n" not in message and SERVER_KEY[12:] not in message, message
        tally = client.tally
        assert (meter.tally.input_tokens, meter.tally.output_tokens) == (tally.input_tokens, tally.output_tokens)
        if not USAGE_FAULTS & set(script):  # every reply reported its usage: counted to the token
            assert (tally.input_tokens, tally.output_tokens) == (server.billed.input_tokens,
                                                                 server.billed.output_tokens)
        for f in dataclasses.fields(tally):
            assert getattr(tally, f.name) >= 0
        assert tally.output_tokens <= server.call_count * (request.max_tokens + OUTPUT_SLACK_TOKENS)
        cached = cache.get(client._key(request))
        if answer is None or not answer.text.strip():
            assert cached is None
        else:
            assert cached is not None and cached.text == answer.text
        client.close()
        if cached is not None:
            calls_before = server.call_count
            rerun = Client(backend_for(path, server, timeout_s=HTTP_TIMEOUT_S),
                           cache=CallCache(Path(tmp) / "calls.sqlite"), sleep=lambda s: None)
            assert rerun.complete(request).text == cached.text and server.call_count == calls_before
            assert rerun.tally.spent_usd == 0
            rerun.close()


# ---- any body a server may send: one Completion that can be counted, or one transient line -------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)
CHAT_LIKE = st.fixed_dictionaries({}, optional={
    "choices": st.lists(st.fixed_dictionaries({}, optional={
        "message": st.fixed_dictionaries({}, optional={"content": JSON_VALUES, "role": JSON_VALUES}) | JSON_VALUES,
        "finish_reason": JSON_VALUES}) | JSON_VALUES, max_size=2) | JSON_VALUES,
    "content": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use"]) | JSON_VALUES},
                                              optional={"text": JSON_VALUES}) | JSON_VALUES, max_size=2) | JSON_VALUES,
    "usage": st.fixed_dictionaries({}, optional={k: COUNTS | JSON_VALUES for k in (
        "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "cache_read_input_tokens")})
    | JSON_VALUES,
    "error": JSON_VALUES, "model": JSON_VALUES, "stop_reason": JSON_VALUES,
})


@settings(max_examples=200, deadline=None)
@given(body=CHAT_LIKE | JSON_VALUES, raw=st.none() | st.binary(max_size=40))
@example(body=None, raw=b"[" * 100_000)
@example(body={"choices": [{"message": {"content": "Hi."}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": -1000, "completion_tokens": "5"}}, raw=None)
def test_any_reply_body_is_an_answer_that_can_be_counted_or_one_transient_line(body: Any, raw: bytes | None) -> None:
    from booksum_app.llm.providers.anthropic_wire import completion_from_message
    from booksum_app.llm.providers.openai_wire import completion_from_reply

    data = raw if raw is not None else json.dumps(body, allow_nan=True).encode()
    for read in (completion_from_reply, completion_from_message):
        try:
            answer = read(data, name="p:m", model_id="m", latency_s=0.0, secret=KEY)
        except TransientModelError as exc:
            assert "\n" not in str(exc) and "H7g6F5" not in str(exc)
            continue
        assert isinstance(answer.text, str) and isinstance(answer.finish_reason, str)
        for f in dataclasses.fields(Usage):
            value = getattr(answer.usage, f.name)
            assert isinstance(value, int) and not isinstance(value, bool) and value >= 0


@settings(max_examples=200, deadline=None)
@given(status=st.integers(min_value=300, max_value=599), body=st.binary(max_size=60) | JSON_VALUES.map(
    lambda v: json.dumps(v).encode()), retry_after=st.none() | st.text(max_size=12))
def test_any_error_status_is_one_booksum_error_line(status: int, body: bytes, retry_after: str | None) -> None:
    from booksum_app.errors import ModelError
    from booksum_app.llm.http_status import error_for_status

    headers = {} if retry_after is None else {"retry-after": retry_after}
    made = error_for_status(status, body + f" Bearer {KEY}".encode(), headers, name="p:m", secret=KEY)
    assert isinstance(made, ModelError) and str(made).startswith("p:m: ")
    assert "\n" not in str(made) and "H7g6F5" not in str(made)
    wait = getattr(made, "retry_after_s", None)
    assert wait is None or (math.isfinite(wait) and wait >= 0)
