"""RunConfig: one validated configuration from which the record's config, signature and compare's job key derive."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import book_path

from booksum_app.books import open_book
from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.calls import Client
from booksum_app.runners.run_config import RunConfig
from booksum_app.runners.summarize import run_summary, summarize_book
from booksum_app.testing.fake_backend import FakeBackend


def client() -> Client:
    return Client(FakeBackend(), concurrency=16)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"strategy": "nope"}, "hier"),
        ({"chunk_size": 10}, "--chunk-size"),
        ({"max_summary_tokens": 3}, "--max-summary-len"),
        ({"lang": "fr"}, "--lang"),
        ({"strategy": "direct", "options": {"direct_template": "xx"}}, r"--set direct_template=xx: use one of ib, ie"),
        ({"strategy": "inc", "options": {"chapters": True}}, r"--set chapters: not an option of strategy 'inc'"),
        ({"strategy": "hier", "options": {"evidence_tokens": 512}},
         r"--set evidence_tokens: not an option of .*'hier'"),
        ({"strategy": "hier-evidence", "options": {"evidence_tokens": 50}}, r"evidence_tokens=50: use at least 128"),
        ({"strategy": "hier", "options": {"chapters": "maybe"}}, r"--set chapters=maybe: give true or false"),
        ({"prompts": "/no/such/dir"}, "--prompts"),
    ],
)
def test_bad_options_are_refused_before_the_book_is_read(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RunConfig(**options)  # type: ignore[arg-type]
    # the library keywords build the same object: the missing book is never opened
    with pytest.raises(ConfigError, match=message):
        summarize_book("/no/such/book.epub", model=client(), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"strategy": "direct", "direct_template": "xx"}, "--set direct_template=xx"),
        ({"strategy": "inc", "chapters": True}, "--set chapters: not an option"),
        ({"strategy": "hier", "evidence_tokens": 512}, "--set evidence_tokens: not an option"),
    ],
)
def test_the_library_keywords_are_aliases_of_the_options(keywords: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        summarize_book("/no/such/book.epub", model=client(), **keywords)  # type: ignore[arg-type]


def test_option_values_are_parsed_by_their_declared_kind() -> None:
    run = RunConfig(strategy="hier-evidence", options={"evidence_tokens": "300"})
    assert run.option_values == {"evidence_tokens": 300}
    assert RunConfig(strategy="hier-evidence", options={"evidence_tokens": "auto"}).option_values == {
        "evidence_tokens": None}
    assert RunConfig(strategy="hier", options={"chapters": "yes"}).per_chapter
    assert RunConfig(strategy="direct").option_values == {"direct_template": "ib"}, "defaults filled in"


def test_set_items_are_parsed_once_and_refused_in_one_line() -> None:
    from booksum_app.runners.run_config import parse_set

    assert parse_set(("direct-template=ie", "chapters = true")) == {"direct_template": "ie", "chapters": "true"}
    with pytest.raises(ConfigError, match="give NAME=VALUE"):
        parse_set(("direct_template",))
    with pytest.raises(ConfigError, match="given twice"):
        parse_set(("a=1", "a=2"))


def test_the_cli_refuses_bad_options_before_reading_stdin() -> None:
    result = CliRunner().invoke(cli, ["summarize", "-", "--strategy", "inc", "--chapters"], input="")
    assert result.exit_code != 0 and "chapters" in result.output and "empty" not in result.output
    result = CliRunner().invoke(cli, ["summarize", "-", "--strategy", "inc", "--set", "nope=1"], input="")
    assert result.exit_code != 0 and "--set nope: not an option of strategy 'inc'" in result.output


def test_chapters_imply_chapter_aware_chunking() -> None:
    assert RunConfig(options={"chapters": True}).chapter_aware
    assert not RunConfig().chapter_aware


def test_the_record_keeps_exactly_what_the_config_serializes() -> None:
    book = open_book(book_path("time-machine"))
    run = RunConfig(strategy="inc", chunk_size=1024, max_summary_tokens=300, temperature=0.3).for_book(book)
    chat = client()
    record = run_summary(book, run, chat=chat)
    bundle = run.prompt_bundle()
    assert record.config == run.record_dict(chat.info, bundle)
    assert record.signature == run.signature(chat.info, bundle)
    assert record.config["chunk_size"] == 1024 and record.config["temperature"] == 0.3
    assert record.config["lang"] == "en" and run.lang == "en"


def test_the_library_keywords_and_a_run_config_give_the_same_record() -> None:
    path = book_path("time-machine")
    by_keywords = summarize_book(path, strategy="hier", chunk_size=1024, model=client())
    by_config = run_summary(path, RunConfig(strategy="hier", chunk_size=1024), chat=client())
    assert by_keywords.config == by_config.config and by_keywords.signature == by_config.signature
    assert by_keywords.summary == by_config.summary


@pytest.mark.parametrize(
    "change",
    [
        {"max_summary_tokens": 500},
        {"prompts": "simple"},
        {"lang": "zh"},
        {"clean": False},
        {"chapter_aware": True},
        {"include_front_matter": True},
        {"model": "openai:gpt-4o"},
    ],
)
def test_the_job_key_changes_with_every_field_that_changes_the_summary(change: dict[str, object]) -> None:
    base = RunConfig(strategy="hier", lang="en")
    key = base.job_key(book_sha256="a" * 64, chunk_size=2048)
    assert dataclasses.replace(base, **change).job_key(book_sha256="a" * 64, chunk_size=2048) != key  # type: ignore[arg-type]
    assert base.job_key(book_sha256="b" * 64, chunk_size=2048) != key
    assert base.job_key(book_sha256="a" * 64, chunk_size=2048) == key


def test_a_strategy_option_is_in_the_key_the_record_and_the_signature() -> None:
    ib = RunConfig(strategy="direct", lang="en")
    ie = RunConfig(strategy="direct", lang="en", options={"direct_template": "ie"})
    assert ib.job_key(book_sha256="a" * 64, chunk_size=None) != ie.job_key(book_sha256="a" * 64, chunk_size=None)
    chat = client()
    assert ie.record_dict(chat.info, ie.prompt_bundle())["options"] == {"direct_template": "ie"}
    assert "direct_template:ie" in ie.signature(chat.info, ie.prompt_bundle())
    assert "direct_template" not in ib.signature(chat.info, ib.prompt_bundle()), "a default signs as before"


def test_a_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunConfig().strategy = "inc"  # type: ignore[misc]


def test_the_cpu_gate_is_held_while_chunking_and_released_before_the_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """compare passes its one-book-per-core slots: chunking waits for one, the calls never hold it."""
    import threading

    import booksum_app.runners.summarize as summarize_module

    gate = threading.Lock()
    held_during_calls: list[bool] = []
    chunked_under_gate: list[bool] = []
    real_chunk_book = summarize_module.chunk_book

    def reply(request: object) -> str:
        held_during_calls.append(gate.locked())
        return "The traveller came back."

    def chunk_book(*args: Any, **kwargs: Any) -> Any:
        chunked_under_gate.append(gate.locked())
        return real_chunk_book(*args, **kwargs)

    monkeypatch.setattr(summarize_module, "chunk_book", chunk_book)
    record = run_summary(book_path("time-machine"), RunConfig(strategy="hier", chunk_size=4096),
                         chat=Client(FakeBackend(reply=reply), concurrency=4), cpu_gate=gate)  # type: ignore[arg-type]
    assert record.summary and chunked_under_gate == [True]
    assert held_during_calls and not any(held_during_calls), "no call waits on the gate"
    assert not gate.locked()


def test_one_resolve_lang_for_books_and_texts() -> None:
    from booksum_app.chunking import resolve_lang

    def never() -> str:
        raise AssertionError("the text is not needed when the metadata says")

    assert resolve_lang("zh", text="The traveller came back.") == "zh", "an explicit language wins"
    assert resolve_lang("auto", declared="en-GB", text=never) == "en"
    assert resolve_lang(None, declared="zh-Hans", text=never) == "zh"
    assert resolve_lang("auto", declared="fr", text="时间旅行者回来了。他讲述了未来的世界。") == "zh"
    assert resolve_lang(None, text="The traveller came back. He told us of the future.") == "en"
    with pytest.raises(ConfigError, match="--lang 'fr': use one of auto, en, zh"):
        resolve_lang("fr")


def test_a_plugins_version_is_in_the_key_and_the_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.strategies import STRATEGIES

    run, chat = RunConfig(strategy="inc", lang="en"), client()
    keys, signatures = [], []
    for version in ("0.1.0", "0.2.0"):
        monkeypatch.setattr(STRATEGIES, "distribution", lambda name, v=version: ("booksum-inc-plus", v))
        keys.append(run.job_key(book_sha256="a" * 64, chunk_size=2048))
        signatures.append(run.signature(chat.info, run.prompt_bundle()))
    assert keys[0] != keys[1], "a record of an older plugin is not reused"
    assert "|plugin:booksum-inc-plus-0.1.0|" in signatures[0] and "|plugin:booksum-inc-plus-0.2.0|" in signatures[1]
