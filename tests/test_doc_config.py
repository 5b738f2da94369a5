"""Every config-file example in the docs sets what it shows: each key is read and has its effect.

A block whose top-level keys are config-file keys (``CONFIG_KEYS``) is loaded as the user's
config file; then each setting is checked where a user meets it (the default model, the judge,
an alias, a model's window or price, the vLLM engine arguments). An example that names a role
(the judge, the default model) in a key or a comment must set that role: ``[aliases] judge =``
is an alias, and sets no judge.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from booksum_app.config import CONFIG_KEYS
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.model_table import load_table
from booksum_app.llm.registry import LLMSettings, choose_judge, choose_model

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```toml\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)
ROLE_WORDS = {"judge": "judge_model", "default model": "default_model"}


def toml_blocks() -> list[tuple[str, str]]:
    blocks = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            indent = match["indent"]
            body = "\n".join(line.removeprefix(indent) for line in match["body"].splitlines())
            line = text[:match.start()].count("\n") + 1
            blocks.append((f"{doc.relative_to(ROOT)}:{line}", body))
    return blocks


def config_blocks() -> list[tuple[str, str]]:
    return [(where, body) for where, body in toml_blocks() if set(tomllib.loads(body)) <= set(CONFIG_KEYS)]


def test_the_docs_have_config_examples() -> None:
    found = {where for where, _ in config_blocks()}
    in_models = [where for where, _ in toml_blocks() if where.startswith("docs/models.md")]
    assert len(in_models) >= 5 and set(in_models) <= found, "every TOML block of docs/models.md is a config file"


def _model_field(info: ModelInfo, name: str, value: Any, where: str, model: str, settings: LLMSettings) -> None:
    if name in {f.name for f in dataclasses.fields(ModelInfo)}:
        assert getattr(info, name) == value, f"{where}: {model} {name} is {getattr(info, name)!r}, not {value!r}"
    elif name == "aliases":
        for alias in value:
            assert choose_model(alias, settings=settings, env={}).info.name == info.name, f"{where}: alias {alias}"
    elif name == "reasoning":
        from booksum_app.llm.registry import is_reasoning_model

        assert value or not is_reasoning_model(model.split(":", 1)[1]), f"{where}: {model} reasoning={value}"
    else:
        pytest.fail(f"{where}: [models.{model!r}] sets {name!r}, which booksum does not read")


def check_example(where: str, body: str, tmp_path: Path) -> None:
    """Load ``body`` as the config file and check every setting it shows where a user meets it."""
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    settings = LLMSettings(config_path=path, cache_dir=tmp_path / "cache")
    data = tomllib.loads(body)
    table = load_table(path)
    assert not table.warnings, f"{where}: {table.warnings}"
    if "default_model" in data:
        spec = choose_model(None, settings=settings, env={})
        assert spec.source == "config"
        assert spec.info.name == choose_model(data["default_model"], settings=settings, env={}).info.name
    if "judge_model" in data:
        assert choose_judge(None, settings=settings, env={}) == data["judge_model"], where
    for alias, target in data.get("aliases", {}).items():
        assert (choose_model(alias, settings=settings, env={}).info.name
                == choose_model(target, settings=settings, env={}).info.name), f"{where}: alias {alias}"
    for model, fields in data.get("models", {}).items():
        info = choose_model(model, settings=settings, env={}).info
        for name, value in fields.items():
            _model_field(info, name, value, where, model, settings)
    if "vllm_engine" in data:
        assert dict(table.vllm_engine) == data["vllm_engine"], where
    text = body.lower()
    for word, key in ROLE_WORDS.items():  # a role named in the example is a role it sets
        if word in text:
            assert key in data, f"{where}: the example speaks of the {word} but sets no {key}"


@pytest.mark.parametrize(("where", "body"), config_blocks(), ids=[w for w, _ in config_blocks()])
def test_a_config_example_sets_what_it_shows(where: str, body: str, tmp_path: Path) -> None:
    check_example(where, body, tmp_path)


def test_an_alias_named_judge_is_caught(tmp_path: Path) -> None:
    body = '[aliases]\njudge = "openai:gpt-4o"\n'
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    assert choose_judge(None, settings=LLMSettings(config_path=path), env={}) is None  # the finding itself
    with pytest.raises(AssertionError, match="sets no judge_model"):
        check_example("example", body, tmp_path)
