"""The door every backend's answer comes through (``llm/door.py``): a bound, a check, one redacted line.

Backends here are written as a third party writes them (``booksum_app.plugin`` only) and are
wrapped in the real :class:`~booksum_app.llm.calls.Client`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from booksum_app.errors import REDACTED, ModelError, RateLimited, TransientModelError
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import Client
from booksum_app.llm.door import MAX_ABANDONED, MAX_CHARS_PER_TOKEN
from booksum_app.plugin import BackendBase, Completion, Request, Usage
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO

KEY = "sk-door" + "Q9w8E7r6T5y4" * 2
REQ = Request(prompt="Mara bakes bread in Lisk. Teo counts coins.", max_tokens=40)


class Plugin(BackendBase):
    """A backend whose ``complete`` is whatever the test hands it."""

    def __init__(self, answer: Callable[[Request], Any]) -> None:
        super().__init__(FAKE_MODEL_INFO)
        self.answer = answer
        self.calls = 0

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        return self.answer(request)  # type: ignore[no-any-return]


def _client(answer: Callable[[Request], Any], **options: Any) -> tuple[Client, Plugin]:
    backend = Plugin(answer)
    return Client(backend, sleep=lambda s: None, **options), backend


def _raise(exc: BaseException) -> Callable[[Request], Any]:
    def answer(request: Request) -> Any:
        raise exc

    return answer


class Abort(BaseException):
    """A BaseException a plugin may raise (not KeyboardInterrupt)."""


@pytest.mark.parametrize(("answer", "says"), [
    (_raise(RuntimeError("boom")), "the backend failed (RuntimeError: boom)"),
    (_raise(SystemExit(0)), "the backend raised SystemExit"),
    (_raise(Abort("stop")), "the backend raised Abort (stop) instead of answering"),
    (lambda r: "Mara bakes.", "the backend returned a str, not a Completion"),
    (lambda r: None, "the backend returned a NoneType, not a Completion"),
    (lambda r: Completion(text=None, finish_reason="stop"), "has a NoneType as its text"),  # type: ignore[arg-type]
    (lambda r: Completion(text="Fine.", finish_reason=3), "has a int as its finish reason"),  # type: ignore[arg-type]
])
def test_a_failing_or_malformed_backend_is_one_model_error_not_retried(
    answer: Callable[[Request], Any], says: str
) -> None:
    client, backend = _client(answer)
    with pytest.raises(ModelError) as caught:
        client.complete(REQ)
    assert type(caught.value) is ModelError and says in str(caught.value) and "\n" not in str(caught.value)
    assert backend.calls == 1, "a plugin bug is not retried"
    assert caught.value.exit_code == 4


def test_a_keyboard_interrupt_still_interrupts() -> None:
    client, _ = _client(_raise(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        client.complete(REQ)


def test_a_connection_failure_of_a_plugin_is_retried_as_transient() -> None:
    outcomes: list[Any] = [ConnectionResetError("reset by peer"), Completion("Mara bakes.", "stop", Usage(10, 3))]

    def answer(request: Request) -> Any:
        item = outcomes.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    client, backend = _client(answer)
    assert client.complete(REQ).text == "Mara bakes." and backend.calls == 2


def test_a_key_in_a_plugin_s_exception_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYPROV_API_KEY", "plainkey-without-a-prefix-123")
    for exc in (RuntimeError(f"POST failed with Authorization: Bearer {KEY}"),
                ModelError("rejected key plainkey-without-a-prefix-123 for the account"),
                RateLimited(f"slow down, {KEY}")):
        client, _ = _client(_raise(exc), max_attempts=1)
        with pytest.raises(ModelError) as caught:
            client.complete(REQ)
        message = str(caught.value)
        assert KEY[6:] not in message and "plainkey-without" not in message and REDACTED in message, message


@pytest.mark.parametrize("usage", [
    Usage("100", "5"),  # type: ignore[arg-type]
    Usage(-1000, -5),
    Usage(10.5, 3),  # type: ignore[arg-type]
    Usage(True, 3),  # type: ignore[arg-type]
    Usage(10, 3, cached_input_tokens=50),
    None,
])
def test_usage_that_is_not_counts_is_counted_with_the_tokenizer(usage: Any) -> None:
    client, _ = _client(lambda r: Completion("Mara bakes bread.", "stop", usage))
    answer = client.complete(REQ)
    expected_out = client.count_tokens("Mara bakes bread.")
    assert answer.usage.output_tokens == expected_out and answer.usage.input_tokens > 0
    assert not answer.usage_reported and client.tally.estimated_tokens == answer.usage.input_tokens + expected_out
    assert client.tally.output_tokens == expected_out >= 0 and client.cost_usd > 0
    assert client.notes, "the run says its tokens were estimated"


def test_a_backend_cannot_claim_a_cache_hit() -> None:
    client, _ = _client(lambda r: Completion("Mara bakes.", "stop", Usage(10, 3), cache_hit=True))
    answer = client.complete(REQ)
    assert not answer.cache_hit
    assert (client.tally.input_tokens, client.tally.output_tokens, client.n_cache_hits) == (10, 3, 0), "counted once"
    assert client.usage == Usage(10, 3)


@pytest.mark.parametrize(("server", "kept"), [
    ("http://gpu-a:8000/v1", True),
    ("http://gpu-a:8000/v1,http://gpu-b:8000/v1", True),
    ("http://user:" + KEY + "@gpu-a:8000/v1", False),  # a credential is never stored
    ("http://gpu-a:8000/v1?key=" + KEY, False),
    ("", False),
    (42, False),
])
def test_a_backend_names_the_replica_that_answered_only_as_a_public_url(tmp_path: Path, server: Any,
                                                                       kept: bool) -> None:
    cache = CallCache(tmp_path / "cache")
    client, _ = _client(lambda r: Completion("Mara bakes.", "stop", Usage(10, 3), server=server), cache=cache)
    assert client.complete(REQ).server == (server if kept else None)
    client.close()
    reopened = CallCache(tmp_path / "cache")
    replayed = reopened.get(client._key(REQ))
    reopened.close()
    assert replayed is not None and (replayed.server == server if kept else KEY not in str(replayed.server))


def test_after_a_rejected_key_the_client_sends_nothing_more() -> None:
    """A 401 is met by every request: later calls fail with the same line and are never sent."""
    from booksum_app.errors import AuthError

    client, backend = _client(_raise(AuthError(f"the key {KEY} was rejected")), secrets=())
    with pytest.raises(AuthError):
        client.complete(REQ)
    with pytest.raises(AuthError, match="was rejected") as caught:
        client.complete(Request(prompt="Teo counts coins in Lisk.", max_tokens=20))
    assert backend.calls == 1 and KEY not in str(caught.value)
    client.close()


def _hang_until(release: threading.Event) -> Callable[[Request], Any]:
    def answer(request: Request) -> Any:
        release.wait(30)
        return Completion("Mara bakes late.", "stop", Usage(10, 4))

    return answer


def test_an_attempt_that_ignores_its_deadline_is_given_up_and_its_late_reply_billed(tmp_path: Path) -> None:
    release = threading.Event()
    cache = CallCache(tmp_path / "calls.sqlite")
    client, backend = _client(_hang_until(release), attempt_timeout_s=0.3, max_attempts=2, cache=cache)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match=r"failed 2 times .*request timed out \(no reply within --timeout"):
        client.complete(REQ)
    assert time.monotonic() - started < 3, "two attempts of 0.3 s, not the backend's 30"
    assert client.tally.spent_usd == 0 and backend.calls == 2
    release.set()
    deadline = time.monotonic() + 5
    while client.tally.wasted_attempts < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    tally = client.tally
    assert (tally.wasted_attempts, tally.input_tokens, tally.output_tokens) == (2, 20, 8), "both late replies paid"
    assert cache.get(client._key(REQ)) is None, "a late reply is never an answer"
    assert any("after --timeout" in note for note in client.notes)
    client.close()


def test_abandoned_attempts_are_capped() -> None:
    release = threading.Event()
    before = threading.active_count()
    client, backend = _client(_hang_until(release), attempt_timeout_s=0.05, max_attempts=1)
    try:
        for _ in range(MAX_ABANDONED):
            with pytest.raises(TransientModelError, match="timed out"):
                client.complete(REQ)
        assert threading.active_count() - before <= MAX_ABANDONED
        with pytest.raises(ModelError, match=f"{MAX_ABANDONED} attempts given up at --timeout .* are still running"):
            client.complete(REQ)
        assert backend.calls == MAX_ABANDONED, "past the cap nothing more is started"
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threading.active_count() <= before, "the abandoned workers end when the backend returns"
    assert client.complete(Request(prompt="again", max_tokens=40)).text == "Mara bakes late."


def test_an_answer_far_past_max_tokens_is_billed_at_most_its_room_and_never_cached(tmp_path: Path) -> None:
    huge = "Mara bakes bread. " * 200_000  # 3.6 MB for a 40-token request
    cache = CallCache(tmp_path / "calls.sqlite")
    client, _ = _client(lambda r: Completion(huge, "stop", Usage(12, 40)), max_attempts=2, cache=cache)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match=r"far longer than its max_tokens \(40\)"):
        client.complete(REQ)
    assert time.monotonic() - started < 5, "refused by its length, not tokenized or split"
    assert client.tally.output_tokens == 80 and client.tally.wasted_attempts == 2, "billed 40 a try, as reported"
    assert cache.get(client._key(REQ)) is None
    client.close()

    unreported, _ = _client(lambda r: Completion(huge, "stop"), max_attempts=1)
    with pytest.raises(TransientModelError):
        unreported.complete(REQ)
    assert unreported.tally.output_tokens == 40, "estimated at what a provider can bill, not 800,000 tokens"


def test_an_answer_within_the_char_rule_passes() -> None:
    text = "x" * (MAX_CHARS_PER_TOKEN * 40)
    client, _ = _client(lambda r: Completion(text, "stop", Usage(10, 40)))
    assert client.complete(REQ).text == text


def test_an_answer_of_many_times_its_room_by_the_tokenizer_is_refused_too() -> None:
    text = "湖" * (5 * 100)  # about 500 tokens: under 16 characters a token, past 4x the room plus its slack
    client, _ = _client(lambda r: Completion(text, "stop", Usage(10, 40)), max_attempts=1)
    with pytest.raises(TransientModelError, match="far longer than its max_tokens"):
        client.complete(REQ)
    short = "湖" * 300  # within 4x the room plus the slack a short answer gets
    client, _ = _client(lambda r: Completion(short, "stop", Usage(10, 30)))
    assert client.complete(REQ).text == short


def test_the_keys_a_backend_was_built_with_are_redacted_too() -> None:
    key = "plainkey-from-a-library-env-456"
    client, _ = _client(_raise(RuntimeError(f"rejected {key}")), secrets=[key])
    with pytest.raises(ModelError) as caught:
        client.complete(REQ)
    assert key not in str(caught.value) and REDACTED in str(caught.value)
