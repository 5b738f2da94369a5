"""A provider booksum has no backend for (Gemini, Mistral, Groq, ...) is named with the route that works:
``openai:MODEL --base-url`` its OpenAI-compatible endpoint; docs/models.md lists the same endpoints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.openai_compatible import COMPATIBLE_PROVIDERS, compatible_route
from booksum_app.llm.registry import choose_model

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"
model_ids = st.text(st.characters(whitelist_categories=("Ll", "Nd"), whitelist_characters="-./"), min_size=1,
                    max_size=30)


@given(provider=st.sampled_from(sorted(COMPATIBLE_PROVIDERS)), model_id=model_ids)
def test_every_compatible_provider_names_its_route(provider: str, model_id: str) -> None:
    entry = COMPATIBLE_PROVIDERS[provider]
    with pytest.raises(ConfigError) as raised:
        choose_model(f"{provider}:{model_id}")
    message = str(raised.value)
    assert f"-m openai:{model_id} --base-url {entry.base_url}" in message
    assert "\n" not in message and "unknown model" not in message


@pytest.mark.parametrize("spelling", ["google:gemini-2.5-flash", "Gemini:gemini-2.5-flash", "grok:grok-4",
                                      "togetherai:meta-llama/Llama-3.3-70B-Instruct-Turbo"])
def test_other_spellings_of_a_provider_get_the_route(spelling: str) -> None:
    assert compatible_route(spelling) is not None


@pytest.mark.parametrize("model", ["openai:gpt-4o", "gpt-4o", "claude-sonnet-4-5", "local", "nonsense"])
def test_other_strings_are_not_rerouted(model: str) -> None:
    assert compatible_route(model) is None


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    book = tmp_path / "b.txt"
    book.write_text("Chapter 1\n\nMara bakes bread.\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["inspect", str(book), "-m", "groq:llama-3.3-70b-versatile"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--base-url https://api.groq.com/openai/v1" in result.stderr


def test_docs_list_every_provider_with_its_base_url() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Providers reached through their OpenAI-compatible endpoint"):]
    rows = dict(re.findall(r"^\| `(\w+):` \| [^|]+\| `([^`]+)` \|", section, re.MULTILINE))
    assert rows == {name: entry.base_url for name, entry in COMPATIBLE_PROVIDERS.items()}
