"""Dated snapshot ids priced as their family; the table's date and sources; a config entry's own server."""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.errors import ConfigError
from booksum_app.llm.registry import LLMSettings, _shipped_table, choose_model


@pytest.mark.parametrize(("model", "family"), [
    ("gpt-4o-2024-08-06", "openai:gpt-4o"),
    ("openai:gpt-4o-mini-2024-07-18", "openai:gpt-4o-mini"),
    ("openai:gpt-5-2025-08-07", "openai:gpt-5"),
    ("claude-3-5-sonnet-20241022", "anthropic:claude-3-5-sonnet"),
    ("anthropic:claude-sonnet-4-5-20250929", "anthropic:claude-sonnet-4-5"),
    ("anthropic:claude-3-5-haiku-20241022", "anthropic:claude-3-5-haiku"),
])
def test_a_dated_id_is_priced_as_its_family_and_sent_as_dated(model: str, family: str) -> None:
    spec = choose_model(model, env={})
    entry = _shipped_table()["models"][family]
    assert spec.known and spec.notice is None
    assert spec.model_id == model.partition(":")[2] or spec.model_id == model, "the provider gets the dated id"
    assert spec.info.input_usd_per_mtok == entry["input_usd_per_mtok"]
    assert spec.info.output_usd_per_mtok == entry["output_usd_per_mtok"]
    assert spec.info.context_window == entry["context_window"]
    assert spec.reasoning == bool(entry.get("reasoning", False))


def test_a_snapshot_priced_apart_keeps_its_own_price_and_short_suffixes_are_not_dates() -> None:
    first_4o = choose_model("openai:gpt-4o-2024-05-13", env={}).info
    assert (first_4o.input_usd_per_mtok, first_4o.output_usd_per_mtok) == (5.0, 15.0), "not gpt-4o's $2.50/$10"
    assert not choose_model("openai:gpt-3.5-turbo-1106", env={}).known, "a MMDD suffix is not mapped"


def test_the_table_is_dated_and_says_where_prices_come_from() -> None:
    table = _shipped_table()
    assert len(table["prices_as_of"]) == 10 and table["price_sources"]["anthropic"].startswith("https://")


def test_a_config_base_url_must_be_a_string(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[models."openai:my-model"]\nbase_url = 8000\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="base_url must be a URL string"):
        choose_model("openai:my-model", settings=LLMSettings(config_path=config), env={})
    config.write_text('[models."openai:my-model"]\nbase_url = "http://gpu-1:8000/v1"\ncontext_window = 32768\n',
                      encoding="utf-8")
    spec = choose_model("openai:my-model", settings=LLMSettings(config_path=config, base_url="http://x/v1"), env={})
    assert spec.base_url == "http://gpu-1:8000/v1" and spec.info.context_window == 32768
    assert spec.server == "http://gpu-1:8000/v1"
