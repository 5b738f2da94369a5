"""The model table: booksum's shipped ``data/models.json`` merged with the user's config file.

Read once per version of the config file (a command resolves several model strings); every
entry the user adds is checked here, so a typo'd tokenizer, a nan price or a string context
window is one line at start rather than a wrong number later.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import platformdirs

from booksum_app.config import (
    ENV_CACHE_DIR,
    ENV_CONFIG,
    LENGTH_POLICIES,
    MAX_PRICE_USD_PER_MTOK,
    checked_count,
    checked_real,
    shown,
    suggestion,
    unknown_config_keys,
)
from booksum_app.errors import ConfigError
from booksum_app.jsonin import parse_json

TOKENIZERS = ("cl100k_base", "o200k_base", "estimate", "native")
_SPEC_FIELDS = (
    "context_window",
    "tokenizer",
    "input_usd_per_mtok",
    "output_usd_per_mtok",
    "cached_input_usd_per_mtok",
    "cache_write_usd_per_mtok",
    "max_output_tokens",
    "reasoning",
    "length_policy",
)

_PRICE_FIELDS = tuple(f for f in _SPEC_FIELDS if f.endswith("_usd_per_mtok"))



@dataclass(frozen=True)
class ModelTable:
    providers: Mapping[str, Mapping[str, Any]]
    models: Mapping[str, Mapping[str, Any]]
    aliases: Mapping[str, str]
    default_model: str | None
    judge_model: str | None = None
    from_config: frozenset[str] = frozenset()  # model names the user's config file added or changed
    vllm_engine: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # config [vllm_engine]
    warnings: tuple[str, ...] = ()  # keys of the config file booksum does not read


@cache
def _shipped_table() -> dict[str, Any]:
    text = (
        importlib.resources.files("booksum_app").joinpath("data", "models.json").read_text("utf-8")
    )
    # shipped with booksum, so trusted; read strictly all the same (a key written twice in
    # models.json would silently drop a model), through the one reader of JSON
    data: dict[str, Any] = parse_json(text, where="booksum's model table data/models.json")
    return data


def config_path(env: Mapping[str, str]) -> Path:
    """Where the user config file is looked for."""
    explicit = env.get(ENV_CONFIG)
    if explicit:
        return Path(explicit).expanduser()
    return Path(platformdirs.user_config_dir("booksum")) / "config.toml"


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """``BOOKSUM_CACHE_DIR`` if set, else the platform's user cache dir for booksum."""
    explicit = env.get(ENV_CACHE_DIR)
    return Path(explicit).expanduser() if explicit else Path(platformdirs.user_cache_dir("booksum"))


def _check_entry(name: str, entry: Mapping[str, Any], where: str) -> None:
    allowed = (*_SPEC_FIELDS, "aliases", "base_url")
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: model {name!r} has unknown field {unknown[0]!r}{suggestion(unknown[0], allowed)}")
    if not isinstance(entry.get("base_url", ""), str):
        raise ConfigError(f"{where}: model {name!r} base_url must be a URL string (\"\": the provider's own API)")
    tok = entry.get("tokenizer")
    if tok is not None and tok not in TOKENIZERS:
        raise ConfigError(f"{where}: model {name!r} tokenizer {tok!r}; use one of {TOKENIZERS}")
    policy = entry.get("length_policy")
    if policy is not None and policy not in LENGTH_POLICIES:
        raise ConfigError(f"{where}: model {name!r} length_policy {policy!r}; use one of {LENGTH_POLICIES}")
    if "reasoning" in entry and not isinstance(entry["reasoning"], bool):
        raise ConfigError(f"{where}: model {name!r} reasoning must be true or false; got {shown(entry['reasoning'])}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ConfigError(f"{where}: model {name!r} aliases must be a list of names, e.g. aliases = [\"fast\"]")
    for key in ("context_window", "max_output_tokens"):
        if entry.get(key) is not None:
            checked_count(entry[key], what=f"{where}: model {name!r} {key}", minimum=1)
    for key in _PRICE_FIELDS:
        # a nan price makes every comparison with --max-cost false: the ceiling would never hold
        if entry.get(key) is not None:
            checked_real(entry[key], what=f"{where}: model {name!r} {key}",
                         maximum=MAX_PRICE_USD_PER_MTOK)


def _check_aliases(user_aliases: Mapping[str, Any], where: str) -> dict[str, str]:
    """The config's ``[aliases]``: each a name mapped to a model string."""
    for alias, target in user_aliases.items():
        if not isinstance(target, str) or not target.strip():
            raise ConfigError(f"{where}: [aliases] {alias!r} must name a model string, e.g. {alias} = "
                              f"\"openai:gpt-4o\"; got {shown(target)}")
    return dict(user_aliases)


def load_table(path: Path | None) -> ModelTable:
    """The shipped model table merged with the user's config file (if it exists), read once per
    version of the file: a command resolves several model strings (the grid's, the judge's)."""
    try:
        stat = path.stat() if path is not None else None
    except OSError:
        stat = None
    version = (str(path), stat.st_mtime_ns, stat.st_size) if stat is not None else (str(path), 0, -1)
    if version not in _TABLES:
        _TABLES[version] = _read_table(path)
    return _TABLES[version]


_TABLES: dict[tuple[str, int, int], ModelTable] = {}


def _read_table(path: Path | None) -> ModelTable:
    shipped = _shipped_table()
    models: dict[str, dict[str, Any]] = {k: dict(v) for k, v in shipped["models"].items()}
    user: dict[str, Any] = {}
    if path is not None and path.is_file():
        try:
            user = tomllib.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}; fix or remove it") from exc
    user_models = user.get("models", {})
    if not isinstance(user_models, dict):
        raise ConfigError(f"{path}: [models] must be a table of model strings")
    for name, entry in user_models.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: [models.{name!r}] must be a table")
        _check_entry(name, entry, str(path))
        canonical = _canonical_name(name)
        models[canonical] = {**models.get(canonical, {}), **entry}
    aliases: dict[str, str] = {}
    for name, entry in models.items():
        for alias in entry.get("aliases", ()):
            aliases[alias] = name
    user_aliases = user.get("aliases", {})
    if not isinstance(user_aliases, dict):
        raise ConfigError(f"{path}: [aliases] must map names to model strings")
    aliases.update(_check_aliases(user_aliases, str(path)))
    default = user.get("default_model")
    judge = user.get("judge_model")
    for key, value in (("default_model", default), ("judge_model", judge)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            # "" would silently mean the embedded demo model (or no judge): refused
            raise ConfigError(f"{path}: {key} must be a model string, e.g. {key} = \"openai:gpt-4o\"; "
                              "remove the line for booksum's default")
    from_config = frozenset(_canonical_name(name) for name in user_models)
    engine = user.get("vllm_engine", {})
    if not isinstance(engine, dict):
        raise ConfigError(f"{path}: [vllm_engine] must be a table of vLLM engine arguments")
    return ModelTable(shipped["providers"], models, aliases, default, judge, from_config, engine,
                  unknown_config_keys(list(user), str(path)))


def _canonical_name(name: str) -> str:
    return "local" if name in ("local", "local:") else name


__all__ = ["TOKENIZERS", "ModelTable", "config_path", "default_cache_dir", "load_table"]
