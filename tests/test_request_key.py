"""The request key is the sha256 of the whole canonical JSON, though built by parts; per-prefix
work is done once however many workers ask at once."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time

import pytest

from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.llm.request_key import OnceMemo, prompt_tokens, request_key
from booksum_app.testing.fake_backend import FakeBackend

BACKEND = {"kind": "openai", "model": "openai:gpt-4o", "base_url": None}
AWKWARD = 'é "q" \\ \n\t\x01 — 水浒传 😀\u2028'  # every kind of JSON escape, and non-ASCII


def whole_key(request: Request, backend: dict[str, str | None]) -> str:
    """The key as defined: one json.dumps of everything, user text concatenated."""
    payload = {
        "backend": dict(sorted(backend.items())), "system": request.system,
        "user": request.shared_prefix + request.prompt, "max_tokens": request.max_tokens,
        "temperature": request.temperature, "top_p": request.top_p, "stop": list(request.stop),
        "sample_index": request.sample_index,
    }
    if request.stop_at_loop:
        payload["stop_at_loop"] = request.stop_at_loop
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "call-v1:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_keys_of_caches_written_before_are_unchanged() -> None:
    plain = Request(prompt="Summarize: text.", max_tokens=100, system="You summarize.")
    assert request_key(plain, backend=BACKEND) == (
        "call-v1:f53ad904ddebf92ffe003a695c91299d579064403aa662d5cd15bd1823645add"
    )
    awkward = Request(
        prompt='é "q" \\ \n\t\x01 — 水浒传 😀', shared_prefix='Summary:\n"x"\x1f', max_tokens=7,
        temperature=0.0, stop=("\n\n",), sample_index=2,
    )
    backend = {"kind": "anthropic", "model": "anthropic:claude", "base_url": "http://h/v1"}
    assert request_key(awkward, backend=backend) == (
        "call-v1:346355a145deedf82757c766575115cd795efe1ed9ce49010d0bb36818e18fa6"
    )


@pytest.mark.parametrize("cut", range(len(AWKWARD) + 1))
@pytest.mark.parametrize("system", [None, "", AWKWARD])
def test_a_key_built_by_parts_is_the_key_of_the_whole(cut: int, system: str | None) -> None:
    request = Request(prompt=AWKWARD[cut:], shared_prefix=AWKWARD[:cut], system=system, max_tokens=9)
    assert request_key(request, backend=BACKEND) == whole_key(request, BACKEND)
    for backend in ({**BACKEND, "base_url": AWKWARD}, {**BACKEND, "model": "x"}):
        assert request_key(request, backend=backend) == whole_key(request, backend)


def test_a_request_that_may_stop_at_a_loop_has_a_key_of_its_own() -> None:
    """An answer stopped a sentence after a repeat must never be replayed to a request that
    wants it whole; a request without the hint keeps the key it always had."""
    from booksum_app.llm.request_key import request_json

    whole = Request(prompt="Summarize: text.", max_tokens=100, system="You summarize.")
    hinted = dataclasses.replace(whole, stop_at_loop="en")
    assert request_key(whole, backend=BACKEND).endswith(
        "f53ad904ddebf92ffe003a695c91299d579064403aa662d5cd15bd1823645add"
    )
    assert request_key(hinted, backend=BACKEND) != request_key(whole, backend=BACKEND)
    assert request_key(hinted, backend=BACKEND) != request_key(dataclasses.replace(whole, stop_at_loop="zh"),
                                                               backend=BACKEND)
    for prefix_cut in (0, 6):
        parted = dataclasses.replace(hinted, shared_prefix=hinted.prompt[:prefix_cut],
                                     prompt=hinted.prompt[prefix_cut:])
        assert request_key(parted, backend=BACKEND) == whole_key(parted, BACKEND)
    assert "stop_at_loop" not in request_json(whole) and json.loads(request_json(hinted))["stop_at_loop"] == "en"


def test_the_prefix_hash_remembers_the_head_too() -> None:
    """Same prefix, different options: the memo of the prefix's hash must not mix them up."""
    first = Request(prompt="p", shared_prefix="A long shared prefix. ", max_tokens=5)
    for change in ({"max_tokens": 6}, {"system": "s"}, {"sample_index": 1}, {"temperature": 0.0}):
        other = dataclasses.replace(first, **change)
        assert request_key(first, backend=BACKEND) != request_key(other, backend=BACKEND)
        assert request_key(other, backend=BACKEND) == whole_key(other, BACKEND)


def test_a_burst_on_one_key_computes_it_once() -> None:
    memo: OnceMemo[str, int] = OnceMemo(size=2)
    computed: list[str] = []

    def slow_len(text: str) -> int:
        computed.append(text)
        time.sleep(0.05)  # long enough for every thread to ask while it runs
        return len(text)

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(memo.get("prefix", slow_len)))
               for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [6] * 16 and computed == ["prefix"]
    memo.get("b", slow_len), memo.get("c", slow_len)  # size 2: "prefix" is the oldest, dropped
    memo.get("prefix", slow_len)
    assert computed == ["prefix", "b", "c", "prefix"]


def test_a_failed_computation_is_not_remembered() -> None:
    memo: OnceMemo[str, int] = OnceMemo()
    with pytest.raises(ZeroDivisionError):
        memo.get("x", lambda _: 1 // 0)
    assert memo.get("x", len) == 1


def test_the_cost_ceiling_counts_a_shared_prefix_once_and_the_parts_by_their_tokens() -> None:
    counted: list[int] = []

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text.split())

    prefix = "word " * 1000
    memo: OnceMemo[str, int] = OnceMemo()
    requests = [Request(prompt=f"sentence {i}", shared_prefix=prefix, system="be brief", max_tokens=5)
                for i in range(50)]
    assert [prompt_tokens(r, count, memo) for r in requests] == [1000 + 2 + 2] * 50
    assert counted.count(len(prefix)) == 1
    assert prompt_tokens(Request(prompt="a b c", max_tokens=5), count, memo) == 3


def test_a_client_under_a_cost_ceiling_counts_a_long_prefix_once_across_its_workers() -> None:
    counted: list[int] = []
    prefix = "The whole summary. " * 2000

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text) // 4

    requests = [Request(prompt=f"Sentence {i}.", shared_prefix=prefix, max_tokens=5) for i in range(64)]
    with Client(FakeBackend(), concurrency=32, max_cost_usd=100.0, count_tokens=count) as client:
        client.complete_many(requests)
    assert counted.count(len(prefix)) == 1
    assert len(prefix) + len("Sentence 1.") not in counted  # no call counts the whole user text
