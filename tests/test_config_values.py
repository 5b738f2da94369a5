"""Numbers read from a config file, a model table or an experiment file (issue 32): ``true`` is no
integer (``context_window = true`` was a 1-token window), and a price is a number from 0 to
MAX_PRICE_USD_PER_MTOK (``1e308`` printed every cost as ``$inf``). One validator, every reader."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.config import MAX_PRICE_USD_PER_MTOK, MAX_TOKENS, is_int, is_price
from booksum_app.errors import ConfigError
from booksum_app.llm.registry import LLMSettings, resolve_model

NO_ENV: dict[str, str] = {}


def _resolve(tmp_path: Path, toml: str) -> object:
    config = tmp_path / "config.toml"
    config.write_text(toml, encoding="utf-8")
    return resolve_model("openai:x", settings=LLMSettings(config_path=config, cache_dir=tmp_path / "c"), env=NO_ENV)


def test_is_int_and_is_price() -> None:
    assert is_int(3) and not is_int(True) and not is_int(False) and not is_int(3.0) and not is_int("3")
    assert is_price(0) and is_price(2.5) and is_price(MAX_PRICE_USD_PER_MTOK)
    for bad in (True, -0.01, 1e308, float("inf"), float("nan"), "1", MAX_PRICE_USD_PER_MTOK * 1.01):
        assert not is_price(bad), bad


toml_values = st.one_of(
    st.sampled_from(["true", "false", "nan", "inf", "-inf", "1e308", "-1", "0", "\"128000\"", "[1]", "{ a = 1 }"]),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).replace("e+", "e")),
    st.integers(-10**6, 10**18).map(str),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["context_window", "max_output_tokens", "input_usd_per_mtok",
                              "output_usd_per_mtok", "cached_input_usd_per_mtok"]), value=toml_values)
def test_a_model_entry_takes_only_what_its_field_means(tmp_path: Path, field: str, value: str) -> None:
    import tomllib

    try:
        parsed = tomllib.loads(f"x = {value}")["x"]
    except tomllib.TOMLDecodeError:
        return
    toml = f'[models."openai:x"]\ncontext_window = 8000\n{field} = {value}\n' if field != "context_window" else \
        f'[models."openai:x"]\n{field} = {value}\n'
    counts = field in ("context_window", "max_output_tokens")
    good = (is_int(parsed) and 0 < parsed <= MAX_TOKENS) if counts else is_price(parsed)
    if good:
        _resolve(tmp_path, toml)
    else:
        with pytest.raises(ConfigError, match=field) as caught:
            _resolve(tmp_path, toml)
        assert "\n" not in str(caught.value)


def test_context_window_true_is_refused_not_a_one_token_window(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="context_window must be an integer from 1 to 100,000,000; got True"):
        _resolve(tmp_path, '[models."openai:x"]\ncontext_window = true\n')


def test_an_absurd_price_is_refused_before_it_prints_as_inf(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="output_usd_per_mtok must be a number from 0 to 10,000"):
        _resolve(tmp_path, '[models."openai:x"]\ncontext_window = 8000\noutput_usd_per_mtok = 1e308\n')


def test_the_shipped_table_passes_the_same_checks() -> None:
    table = json.loads(importlib.resources.files("booksum_app").joinpath("data", "models.json").read_text("utf-8"))
    for entry in table["models"].values():
        for key, value in entry.items():
            if key.endswith("_usd_per_mtok"):
                assert is_price(value), (key, value)
            if key in ("context_window", "max_output_tokens"):
                assert is_int(value) and value > 0


@pytest.mark.parametrize("line", ["bucket_max_tokens = { L = true }", "chunk_sizes = [true]",
                                  "max_summary_len = true"])
def test_an_experiment_file_refuses_a_bool_where_a_number_goes(tmp_path: Path, line: str) -> None:
    from booksum_app.runners.experiment import load_experiment

    path = tmp_path / "grid.toml"
    path.write_text(f'books = ["b.txt"]\nstrategies = ["direct"]\nmodels = ["mock"]\n{line}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="integer"):
        load_experiment(path)
