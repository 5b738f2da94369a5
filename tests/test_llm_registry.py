"""Model strings, aliases, the shipped table, the user config file and the default model."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import pytest

from booksum_app.errors import ConfigError, MissingAPIKey
from booksum_app.llm.registry import (
    FALLBACK_NOTICE,
    LLMSettings,
    choose_model,
    get_model,
    resolve_model,
)
from booksum_app.testing.fake_backend import FakeBackend

NO_ENV: dict[str, str] = {}


def settings_with(tmp_path: Path, toml: str | None = None, **kw: object) -> LLMSettings:
    config = tmp_path / "config.toml"
    if toml is not None:
        tmp_path.mkdir(parents=True, exist_ok=True)
        config.write_text(toml, encoding="utf-8")
    return LLMSettings(config_path=config, cache_dir=tmp_path / "cache", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "name", "tokenizer"),
    [
        ("openai:gpt-4o", "openai:gpt-4o", "o200k_base"),
        ("gpt-4o", "openai:gpt-4o", "o200k_base"),
        ("gpt-4.1-mini", "openai:gpt-4.1-mini", "o200k_base"),
        ("gpt-4", "openai:gpt-4", "cl100k_base"),
        ("chatgpt", "openai:gpt-3.5-turbo", "cl100k_base"),
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5", "estimate"),
        ("sonnet", "anthropic:claude-sonnet-4-5", "estimate"),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", "vllm:Qwen/Qwen2.5-7B-Instruct", "native"),
        ("local", "local", "native"),
        ("smollm2", "local", "native"),
    ],
)
def test_model_strings_and_aliases(tmp_path: Path, model: str, name: str, tokenizer: str) -> None:
    info = resolve_model(model, settings=settings_with(tmp_path), env=NO_ENV)
    assert (info.name, info.tokenizer) == (name, tokenizer)


def test_known_models_have_prices_and_windows(tmp_path: Path) -> None:
    gpt4o = resolve_model("gpt-4o", settings=settings_with(tmp_path), env=NO_ENV)
    assert gpt4o.context_window == 128_000
    assert (gpt4o.input_usd_per_mtok, gpt4o.output_usd_per_mtok) == (2.5, 10.0)
    local = resolve_model("local", settings=settings_with(tmp_path), env=NO_ENV)
    assert local.context_window == 8192 and local.output_usd_per_mtok == 0


def test_shipped_table_is_complete() -> None:
    table = json.loads(
        importlib.resources.files("booksum_app").joinpath("data", "models.json").read_text()
    )
    for name, entry in table["models"].items():
        assert entry["context_window"] > 0, name
        assert entry["tokenizer"] in ("cl100k_base", "o200k_base", "estimate", "native"), name
        if name.startswith(("openai:", "anthropic:")):
            assert entry["input_usd_per_mtok"] > 0 and entry["output_usd_per_mtok"] > 0, name


def test_unknown_model_of_a_known_provider_gets_conservative_defaults(tmp_path: Path) -> None:
    spec = choose_model("openai:gpt-99", settings=settings_with(tmp_path), env=NO_ENV)
    assert not spec.known and "config.toml" in (spec.note or "")
    assert spec.info.input_usd_per_mtok >= 10  # priced high so a cost ceiling stays safe
    bare = choose_model("claude-future-9", settings=settings_with(tmp_path), env=NO_ENV)
    assert bare.provider == "anthropic" and bare.info.context_window == 200_000


def test_openai_compatible_server_by_base_url(tmp_path: Path) -> None:
    spec = choose_model(
        "openai:Qwen/Qwen2.5-7B-Instruct",
        settings=settings_with(tmp_path),
        env={"OPENAI_BASE_URL": "http://localhost:8000/v1"},
    )
    assert spec.base_url == "http://localhost:8000/v1"
    assert spec.info.input_usd_per_mtok == 0 and spec.info.tokenizer == "estimate"


@pytest.mark.parametrize("model", ["mystery-model", "cohere:command", "openai:", ""])
def test_bad_model_strings_say_how_to_fix(tmp_path: Path, model: str) -> None:
    with pytest.raises(ConfigError, match="openai:"):
        resolve_model(model or " ", settings=settings_with(tmp_path), env=NO_ENV)


def test_default_model_order(tmp_path: Path) -> None:
    bare = settings_with(tmp_path)
    fallback = choose_model(settings=bare, env=NO_ENV)
    assert fallback.info.name == "local" and fallback.notice == FALLBACK_NOTICE
    from_env = choose_model(settings=bare, env={"BOOKSUM_MODEL": "gpt-4o"})
    assert from_env.info.name == "openai:gpt-4o" and from_env.notice is None
    configured = settings_with(tmp_path / "c", 'default_model = "sonnet"\n')
    # flag > environment > config file > default: the environment is the more specific choice
    assert choose_model(settings=configured, env={"BOOKSUM_MODEL": "gpt-4o"}).info.name == "openai:gpt-4o"
    assert choose_model(settings=configured, env=NO_ENV).info.name == "anthropic:claude-sonnet-4-5"
    explicit = choose_model("local", settings=configured, env=NO_ENV)
    assert explicit.info.name == "local" and explicit.notice is None  # chosen, no notice


def test_config_file_adds_and_overrides_models(tmp_path: Path) -> None:
    toml = """
[aliases]
cheap = "openai:gpt-4o-mini"

[models."openai:gpt-4o"]
input_usd_per_mtok = 1.0

[models."openai:my-finetune"]
context_window = 64000
tokenizer = "o200k_base"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 12.0
aliases = ["ft"]
"""
    settings = settings_with(tmp_path, toml)
    gpt4o = resolve_model("gpt-4o", settings=settings, env=NO_ENV)
    assert gpt4o.input_usd_per_mtok == 1.0 and gpt4o.output_usd_per_mtok == 10.0
    ft = choose_model("ft", settings=settings, env=NO_ENV)
    assert ft.known and ft.info.name == "openai:my-finetune" and ft.info.context_window == 64000
    assert resolve_model("cheap", settings=settings, env=NO_ENV).name == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    "toml",
    [
        "default_model = [",  # not TOML
        '[models."openai:x"]\ncontext_window = "big"\n',
        '[models."openai:x"]\ntokenizer = "gpt2"\n',
        '[models."openai:x"]\nprice = 3\n',
    ],
)
def test_invalid_config_is_a_config_error(tmp_path: Path, toml: str) -> None:
    with pytest.raises(ConfigError, match="config.toml"):
        resolve_model("gpt-4o", settings=settings_with(tmp_path, toml), env=NO_ENV)


def test_missing_keys_are_configuration_errors_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY"):
        get_model("gpt-4o", settings=settings_with(tmp_path), env=NO_ENV)
    with pytest.raises(MissingAPIKey, match="ANTHROPIC_API_KEY"):
        get_model("sonnet", settings=settings_with(tmp_path), env=NO_ENV)


def test_get_model_builds_a_client_with_cache_and_settings(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, concurrency=3, max_cost_usd=1.0)
    client = get_model("gpt-4o", settings=settings, env=NO_ENV, backend=FakeBackend())
    assert client.concurrency == 3 and client.max_cost_usd == 1.0
    assert client.cache is not None and client.cache.directory == tmp_path / "cache"
    no_cache = get_model(
        "gpt-4o",
        settings=settings_with(tmp_path, use_cache=False),
        env=NO_ENV,
        backend=FakeBackend(),
    )
    assert no_cache.cache is None


def test_cache_dir_from_environment(tmp_path: Path) -> None:
    settings = LLMSettings(config_path=tmp_path / "none.toml")
    client = get_model(
        "gpt-4o",
        settings=settings,
        env={"BOOKSUM_CACHE_DIR": str(tmp_path / "envcache")},
        backend=FakeBackend(),
    )
    assert client.cache is not None and client.cache.directory == tmp_path / "envcache"


def test_public_api_is_pinned() -> None:
    from booksum_app import llm

    assert sorted(llm.__all__) == sorted(
        [
            "FALLBACK_NOTICE",
            "Backend",
            "BatchBackend",
            "CallCache",
            "CallRecord",
            "ChatModel",
            "Client",
            "Completion",
            "LLMSettings",
            "ModelInfo",
            "ModelSpec",
            "Request",
            "Usage",
            "choose_model",
            "get_model",
            "request_key",
            "resolve_model",
        ]
    )
    assert all(hasattr(llm, name) for name in llm.__all__)
    assert "openai" not in dir(llm) and "anthropic" not in dir(llm)
