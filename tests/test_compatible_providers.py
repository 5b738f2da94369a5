"""Hosted providers by their own names (Groq, Gemini, Mistral, ...): ``groq:MODEL`` goes to the
provider's OpenAI-compatible endpoint with its own key variable, priced by the model table; a
model the table has no price for plans at an unknown cost, never $0, and ``--max-cost`` refuses
it. docs/models.md lists the same endpoints and keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import ConfigError, MissingAPIKey
from booksum_app.llm.openai_compatible import COMPATIBLE_PROVIDERS, compatible_route
from booksum_app.llm.registry import LLMSettings, choose_model, get_model, load_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"
model_ids = st.text(st.characters(whitelist_categories=("Ll", "Nd"), whitelist_characters="-./"), min_size=1,
                    max_size=30).filter(lambda s: s.strip() == s and not s.startswith("."))


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "b.txt"
    book.write_text("Chapter 1\n\n" + " ".join(f"Mara bakes {i} loaves of bread." for i in range(300)) + "\n",
                    encoding="utf-8")
    return book


@settings(max_examples=40)
@given(provider=st.sampled_from(sorted(COMPATIBLE_PROVIDERS)), model_id=model_ids)
def test_every_provider_is_taken_by_its_own_name(provider: str, model_id: str) -> None:
    spec = choose_model(f"{provider}:{model_id}", env={})
    assert spec.provider == provider and spec.model_id == model_id and spec.hosted
    listed = f"{provider}:{model_id}" in load_table(None).models
    if not listed:  # a model with no price in the table: unknown, never $0
        assert not spec.info.price_known and spec.notice is not None and "no known price" in spec.notice
    assert spec.info.price_known == listed or spec.info.input_usd_per_mtok > 0


@pytest.mark.parametrize("provider", sorted(COMPATIBLE_PROVIDERS))
def test_each_provider_reads_its_own_key_and_endpoint(provider: str) -> None:
    entry = COMPATIBLE_PROVIDERS[provider]
    with pytest.raises(MissingAPIKey, match=re.escape(entry.key_env)):
        get_model(f"{provider}:some-model", settings=LLMSettings(use_cache=False), env={"OPENAI_API_KEY": "sk-x"})
    client = get_model(f"{provider}:some-model", settings=LLMSettings(use_cache=False),
                       env={entry.key_env: "key-of-the-provider"})
    try:
        assert client.backend.base_url == entry.base_url
        assert client.servers is not None and client.servers["urls"] == [entry.base_url.rstrip("/")]
    finally:
        client.close()


def test_max_cost_refuses_a_model_without_a_price_in_one_line() -> None:
    with pytest.raises(ConfigError, match="--max-cost cannot bound groq:unlisted-model") as raised:
        get_model("groq:unlisted-model", settings=LLMSettings(use_cache=False, max_cost_usd=1.0),
                  env={"GROQ_API_KEY": "gsk-x"})
    assert "\n" not in str(raised.value)
    get_model("groq:llama-3.3-70b-versatile", settings=LLMSettings(use_cache=False, max_cost_usd=1.0),
              env={"GROQ_API_KEY": "gsk-x"}).close()  # priced: the ceiling holds


def test_groq_plan_only_plans_a_priced_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "groq:llama-3.3-70b-versatile",
                                      "--plan-only", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith("plan (groq:llama-3.3-70b-versatile,")
    dollars = float(re.findall(r"\$([0-9.]+)", line)[-1])
    assert dollars > 0, line
    spec = choose_model("groq:llama-3.3-70b-versatile", env={})
    assert (spec.info.input_usd_per_mtok, spec.info.output_usd_per_mtok) == (0.59, 0.79)


def test_an_unpriced_model_plans_as_unknown_and_is_asked_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "key-x")
    plan = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "mistral:mistral-large-latest",
                                    "--plan-only", "--cache-dir", str(tmp_path / "cache")])
    assert plan.exit_code == 0, plan.output
    assert "cost unknown" in plan.stdout and "$0.00" not in plan.stdout
    run = CliRunner().invoke(cli, ["summarize", str(_book(tmp_path)), "-m", "mistral:mistral-large-latest",
                                   "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "cost is unknown" in run.stderr, run.output  # nobody to ask: refused


@pytest.mark.parametrize(("spelling", "name"), [("google:gemini-2.5-flash", "gemini:gemini-2.5-flash"),
                                                ("Gemini:gemini-2.5-flash", "gemini:gemini-2.5-flash"),
                                                ("grok:grok-4", "xai:grok-4"),
                                                ("togetherai:meta-llama/Llama-3.3-70B-Instruct-Turbo",
                                                 "together:meta-llama/Llama-3.3-70B-Instruct-Turbo")])
def test_other_spellings_of_a_provider_name_the_string_that_works(spelling: str, name: str) -> None:
    route = compatible_route(spelling)
    assert route is not None and f"-m {name}" in route
    with pytest.raises(ConfigError, match=re.escape(name)):
        choose_model(spelling, env={})


@pytest.mark.parametrize("model", ["openai:gpt-4o", "gpt-4o", "claude-sonnet-4-5", "local", "nonsense",
                                   "groq:llama-3.3-70b-versatile"])
def test_other_strings_are_not_rerouted(model: str) -> None:
    assert compatible_route(model) is None


def test_docs_list_every_provider_with_its_base_url_and_key() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Hosted providers by their own names"):]
    rows = {name: (url, key) for name, url, key in
            re.findall(r"^\| `(\w+):` \| [^|]+\| `([^`]+)` \| `(\w+)` \|", section, re.MULTILINE)}
    assert rows == {name: (e.base_url, e.key_env) for name, e in COMPATIBLE_PROVIDERS.items()}


def test_compare_with_an_unpriced_model_is_asked_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "key-x")
    books = tmp_path / "books"
    books.mkdir()
    _book(books)
    result = CliRunner().invoke(cli, ["compare", str(books), "--strategies", "direct", "-m",
                                      "mistral:mistral-large-latest", "--no-judge", "--cache-dir",
                                      str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots"])
    assert result.exit_code == 2, result.output
    assert "booksum has no price for mistral:mistral-large-latest" in result.stderr
    assert "cost is unknown" in result.stderr  # nobody to ask: refused before any call
