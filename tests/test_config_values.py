"""Numbers read from a config file, a model table or an experiment file (issue 32): ``true`` is no
integer (``context_window = true`` was a 1-token window), and a price is a number from 0 to
MAX_PRICE_USD_PER_MTOK (``1e308`` printed every cost as ``$inf``). One validator, every reader."""

from __future__ import annotations

import importlib.resources
import itertools
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


# ---- one rule for every number: config files, --set, plugins (config.checked_count / checked_real) ----

SET_VALUES = st.one_of(
    st.integers(-10**40, 10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e30", "1e308", "1e400", "-1e30", "nan", "inf", "12.5", "0x10", "", "1_000", "auto"]),
)


@settings(max_examples=300, deadline=None)
@given(raw=SET_VALUES)
def test_a_set_number_is_in_range_or_one_short_line(raw: str) -> None:
    from booksum_app.strategies.base import Option

    option = Option("evidence_tokens", None, kind=int, minimum=1)
    try:
        value = option.parse(raw)
    except ConfigError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 160, message
        assert not any(len(run) > 15 for run in message.replace(",", " ").split() if run.isdigit()), message
        return
    assert value is None or (is_int(value) and 1 <= value <= MAX_TOKENS), value


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e400"])
def test_a_float_option_refuses_what_is_not_finite(raw: str) -> None:
    from booksum_app.strategies.base import Option

    with pytest.raises(ConfigError, match="must be a number"):
        Option("ratio", 1.0, kind=float).parse(raw)


def test_a_set_number_far_out_of_range_is_quoted_short() -> None:
    from booksum_app.strategies.base import Option

    with pytest.raises(ConfigError) as caught:
        Option("evidence_tokens", None, kind=int, minimum=1).parse("1e30")
    assert str(caught.value) == "--set evidence_tokens must be an integer from -100,000,000 to 100,000,000; got 1e+30"


@pytest.mark.parametrize(("toml", "says"), [
    ('[models."openai:x"]\ncontext_window = 8000\nreasoning = "yes"\n', "reasoning must be true or false; got 'yes'"),
    ('[models."openai:x"]\ncontext_window = 1000000000000000000000000000000\n', None),
    ('[models."openai:x"]\ncontext_window = 8000\ninput_usd_per_mtk = 1.0\n',
     "unknown field 'input_usd_per_mtk'; did you mean 'input_usd_per_mtok'?"),
    ('[models."openai:x"]\ncontext_window = 8000\naliases = "x"\n', "aliases must be a list of names"),
    ("[aliases]\njudge = 5\n", "[aliases] 'judge' must name a model string"),
    ('[aliases]\nfast = ""\n', "[aliases] 'fast' must name a model string"),
])
def test_config_values_that_mean_nothing_are_refused_in_one_line(tmp_path: Path, toml: str, says: str | None) -> None:
    import tomllib

    try:
        tomllib.loads(toml)
    except tomllib.TOMLDecodeError:  # 10**30 is past TOML's 64-bit integers: the reader refuses it first
        with pytest.raises(ConfigError, match="cannot read config file"):
            _resolve(tmp_path, toml)
        return
    with pytest.raises(ConfigError) as caught:
        _resolve(tmp_path, toml)
    assert says is None or says in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
def test_an_alias_loop_is_named_as_a_loop(tmp_path: Path, names: list[str]) -> None:
    from booksum_app.llm.registry import choose_model

    ring = names + [names[0]]
    lines = "".join(f'{a} = "{b}"\n' for a, b in itertools.pairwise(ring))
    config = tmp_path / "config.toml"
    config.write_text(f"[aliases]\n{lines}", encoding="utf-8")
    with pytest.raises(ConfigError, match="aliases form a loop") as caught:
        choose_model(names[-1], settings=LLMSettings(config_path=config), env=NO_ENV)
    assert "did you mean" not in str(caught.value)
    assert " -> ".join(repr(n) for n in [*names[names.index(names[-1]):], *names[:names.index(names[-1])],
                                          names[-1]]) in str(caught.value)


COUNTS = st.one_of(st.integers(-10**12, 10**12), st.sampled_from([10**9, 10**30, -50, True, 2.5, float("nan")]))


@settings(max_examples=120, deadline=None)
@given(member=st.sampled_from(["extra_output_tokens", "default_concurrency", "context_window", "max_output_tokens"]),
       value=COUNTS)
def test_a_backend_plugins_numbers_pass_the_same_rule(member: str, value: object) -> None:
    import dataclasses

    from booksum_app.config import checked_count
    from booksum_app.llm.calls import Client
    from booksum_app.testing.fake_backend import FakeBackend

    backend = FakeBackend()
    if member in ("context_window", "max_output_tokens"):
        backend.info = dataclasses.replace(backend.info, **{member: value})
    else:
        setattr(backend, member, value)
    low = 1 if member != "extra_output_tokens" else 0
    top = 10_000 if member == "default_concurrency" else MAX_TOKENS
    try:
        checked_count(value, what=member, minimum=low, maximum=top)
    except ConfigError:
        with pytest.raises(ConfigError, match=f"{member} must be an integer from") as caught:
            Client(backend)
        assert "\n" not in str(caught.value)
        return
    Client(backend).close()


# ---- typos in the config file are named, with the closest key ----

@pytest.mark.parametrize(("line", "says"), [
    ('default_modle = "openai:gpt-4o"', "unknown key 'default_modle' is ignored; did you mean 'default_model'?"),
    ('judge = "openai:gpt-4o"', "unknown key 'judge' is ignored; did you mean 'judge_model'?"),
    ("[vllm_engin]\ngpu_memory_utilization = 0.8", "unknown key 'vllm_engin' is ignored; did you mean 'vllm_engine'?"),
])
def test_a_config_typo_is_named_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str,
                                          says: str) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    config = tmp_path / "config.toml"
    config.write_text(line + "\n", encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\nMara bakes bread in Lisk every morning.\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["summarize", str(book), "-m", "openai:gpt-4o", "--plan-only"])
    assert result.exit_code == 0, result.output
    assert says in " ".join(result.stderr.split()), result.stderr


def test_an_experiment_file_typo_gets_the_closest_key(tmp_path: Path) -> None:
    from booksum_app.runners.experiment import load_experiment

    path = tmp_path / "grid.toml"
    path.write_text('books = ["b.txt"]\nstrategies = ["direct"]\nchunk_size = [512]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'chunk_size'; did you mean 'chunk_sizes'"):
        load_experiment(path)
