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


# the Claude 5 family: rows read from platform.claude.com's pricing and model pages (2026-11-27)
CLAUDE_5 = {  # model: (input, output, cache read, 5m cache write) USD per Mtok, 1M window, 128K out
    "claude-fable-5-1": (10.0, 50.0, 0.25, 12.5), "claude-fable-5": (10.0, 50.0, 1.0, 12.5),
    "claude-opus-5": (5.0, 25.0, 0.5, 6.25), "claude-sonnet-5-5": (2.0, 10.0, 0.2, 2.5),
    "claude-sonnet-5": (2.0, 10.0, 0.2, 2.5), "claude-opus-5-5": (4.0, 20.0, 0.2, 5.0),
    # the tier of prompts up to 100K; its cache-read price is not on its page: planned at the input price
    "claude-haiku-5-5": (0.1, 0.5, 0.1, 0.125),
}


@pytest.mark.parametrize("model", sorted(CLAUDE_5))
def test_the_claude_5_family_is_planned_at_its_published_prices(model: str) -> None:
    info = choose_model(model, env={}).info
    assert (info.input_usd_per_mtok, info.output_usd_per_mtok, info.cached_input_usd_per_mtok,
            info.cache_write_usd_per_mtok) == CLAUDE_5[model]
    assert (info.context_window, info.max_output_tokens) == (1_000_000, 128_000)
    assert choose_model(f"anthropic:{model}", env={}).known


def test_a_dated_id_of_a_dateless_generation_is_not_priced_as_its_family() -> None:
    """Anthropic's ids from the 4.6 generation on are dateless and pinned: no snapshot of them exists."""
    spec = choose_model("anthropic:claude-sonnet-5-20270115", env={})
    assert not spec.known and spec.note is not None
    assert choose_model("anthropic:claude-sonnet-4-5-20250929", env={}).known, "older generations keep snapshots"


def test_every_checked_row_says_when_and_where() -> None:
    rows = _shipped_table()["models"]
    checked = {name: row["source"] for name, row in rows.items() if "source" in row}
    assert {f"anthropic:{m}" for m in CLAUDE_5} <= set(checked)
    for name, source in checked.items():
        assert len(source["checked"]) == 10
        if name.startswith("anthropic:"):  # Anthropic's own pages; other providers' rows name theirs
            assert all(page.startswith("https://platform.claude.com/") for page in source["pages"])
        else:
            assert source["pages"] and source.get("note"), "a row priced from another page says why"
