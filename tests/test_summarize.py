"""summarize_book and `booksum summarize`: records, round trips, the CLI against the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BOOKS_DIR, book_path

from booksum_app.cli import cli
from booksum_app.errors import ConfigError, InputError
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.runners.progress import RunProgress
from booksum_app.runners.summarize import default_record_path, summarize_book
from booksum_app.signature import parse_signature
from booksum_app.strategies import STRATEGIES
from booksum_app.strategies.record import SCHEMA_VERSION, read_record, write_record
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer


@pytest.fixture(scope="module")
def time_machine() -> Path:
    return book_path("time-machine")


def client(**kwargs: object) -> Client:
    return Client(FakeBackend(**kwargs), concurrency=16)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_record_round_trips_through_json(strategy: str, time_machine: Path, tmp_path: Path) -> None:
    record = summarize_book(time_machine, strategy=strategy, model=client())
    assert record.strategy == strategy and record.summary and record.raw_summary
    assert record.book.title and record.book.chapters_excluded, (
        "front matter is excluded by default"
    )
    assert record.totals.calls == len(record.calls) > 0
    assert record.totals.input_tokens == sum(c.input_tokens for c in record.calls)
    fields = parse_signature(record.signature)
    assert (
        fields["kind"] == strategy
        and fields["G"] == "900"
        and fields["prompts"].split("-")[0] in ("paper", "direct")
    )
    path = write_record(record, tmp_path / "r.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["kind"] == "booksum.summary" and data["schema_version"] == SCHEMA_VERSION
    assert read_record(path) == record
    assert not list(tmp_path.glob(".*.tmp")), "atomic write leaves no temp file"


def test_progress_sees_every_call_and_the_final_stage(time_machine: Path) -> None:
    progress = RunProgress()
    events = []
    record = summarize_book(
        time_machine, strategy="hier", model=client(), progress=progress, on_progress=events.append
    )
    snap = progress.snapshot()
    # chunks count the book's chunks (inspect's count), merges the rest: together every node
    last = {event.stage: event for event in events}
    chunks = sum(1 for node in record.nodes if node.kind == "chunk")
    assert last["chunks"].done == last["chunks"].total == chunks
    assert sum(event.done for event in last.values()) == len(record.nodes)
    assert snap.stage == events[-1].stage and snap.done == events[-1].done


def test_no_clean_keeps_the_raw_summary(time_machine: Path) -> None:
    backend = FakeBackend()
    record = summarize_book(time_machine, strategy="inc", model=Client(backend), clean=False)
    assert record.summary == record.raw_summary and record.cleaning is None
    assert all(r.purpose != "clean" for r in backend.calls)


def test_unknown_strategy_and_bad_prompts_are_config_errors(time_machine: Path) -> None:
    with pytest.raises(ConfigError, match="hier"):
        summarize_book(time_machine, strategy="nope", model=client())
    with pytest.raises(ConfigError, match="--prompts"):
        summarize_book(time_machine, prompts="/no/such/dir", model=client())


def test_reading_a_non_record_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"kind": "other"}', encoding="utf-8")
    with pytest.raises(InputError):
        read_record(path)


def test_default_record_path() -> None:
    assert default_record_path("b/Pride.epub", "hier", None) == Path("booksum-out/Pride-hier.json")
    assert default_record_path("b/Pride.epub", "hier", Path("o/sum.md")) == Path("o/sum.json")


def test_cli_summarize_against_the_fake_server(
    time_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        out = tmp_path / "tm"
        args = [
            "summarize",
            str(time_machine),
            "--model",
            "openai:fake",
            "--base-url",
            server.openai_base_url,
            "--strategy",
            "hier",
            "--cache-dir",
            str(tmp_path / "cache"),
            "-o",
            str(out),
        ]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        summary = (tmp_path / "tm.md").read_text(encoding="utf-8")
        record = read_record(tmp_path / "tm.json")
        assert summary.strip() == record.summary and record.model == "openai:fake"
        n_requests = len(server.requests)
        again = CliRunner().invoke(cli, args, catch_exceptions=False)  # resumes from the call cache
        assert again.exit_code == 0 and len(server.requests) == n_requests
        assert read_record(tmp_path / "tm.json").totals.cache_hits == record.totals.calls


def test_cli_reports_a_chunk_size_too_big_for_the_model(
    time_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        result = CliRunner().invoke(
            cli,
            [
                "summarize",
                str(time_machine),
                "--model",
                "openai:gpt-4",
                "--base-url",
                server.openai_base_url,
                "--chunk-size",
                "100000",
                "--yes",  # gpt-4's plan of the whole book is above --max-plan-cost
                "--no-cache",
                "-o",
                str(tmp_path / "x"),
            ],
        )
    assert result.exit_code == 4 and "--chunk-size" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("book", sorted(p.name for p in BOOKS_DIR.glob("*.epub")))
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_sample_book_with_every_strategy(book: str, strategy: str) -> None:
    backend = FakeBackend(ModelInfo(name="fake:8k", context_window=8192, tokenizer="cl100k_base"))
    record = summarize_book(
        BOOKS_DIR / book, strategy=strategy, model=Client(backend, concurrency=32)
    )
    for request in backend.calls:
        assert backend.count_tokens(request.user_text) + request.max_tokens <= 8192
    assert record.summary and all(
        n.tokens <= n.budget_tokens or n.kind.startswith("inc") for n in record.nodes
    )
    assert all(n.tokens <= 900 for n in record.nodes)
    if strategy == "hier":
        assert record.nodes[-1].budget_tokens == 900
        assert len([n for n in record.nodes if n.level == 0]) == record.book.n_chunks
    if strategy == "direct":
        assert record.truncation is not None and record.truncation.cut_tokens > 0


def test_length_policy_truncate_cuts_over_long_answers_instead_of_regenerating(
    time_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rambling = "The traveller talks about time. " * 400  # far past any leaf budget, cut off
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    outcomes = {}
    for policy in ("regenerate", "truncate"):
        with FakeServer(reply=lambda request: rambling) as server:
            args = ["summarize", str(time_machine), "-m", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
                    "--cache-dir", str(tmp_path / "cache"), "--length-policy", policy, "--no-clean",
                    "-o", str(tmp_path / policy)]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, result.output
            outcomes[policy] = (server.call_count, read_record(tmp_path / f"{policy}.json"))
    (regen_calls, regen), (cut_calls, cut) = outcomes["regenerate"], outcomes["truncate"]
    assert regen.totals.retries > 0 and cut.totals.retries == 0, "truncate: no regeneration at all"
    assert cut_calls < regen_calls and cut.totals.calls == cut_calls
    assert all(n.truncated for n in cut.nodes), "every over-long answer is recorded as truncated"
    assert parse_signature(cut.signature)["length"] == "truncate" and "length" not in parse_signature(regen.signature)
    assert cut.config["length_policy"] == "truncate"


def test_the_embedded_model_truncates_by_default_and_a_config_can_say_otherwise(tmp_path: Path) -> None:
    from booksum_app.llm.registry import LLMSettings, choose_model

    none = tmp_path / "none.toml"
    assert choose_model("local", settings=LLMSettings(config_path=none), env={}).info.length_policy == "truncate"
    assert (choose_model("openai:gpt-4o", settings=LLMSettings(config_path=none), env={}).info.length_policy
            == "regenerate")
    override = LLMSettings(config_path=none, length_policy="regenerate")
    assert choose_model("local", settings=override, env={}).info.length_policy == "regenerate"
    config = tmp_path / "config.toml"
    config.write_text('[models."openai:gpt-4o"]\nlength_policy = "cut"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="length_policy"):
        choose_model("openai:gpt-4o", settings=LLMSettings(config_path=config), env={})
