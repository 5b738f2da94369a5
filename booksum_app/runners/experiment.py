"""The comparison grid of ``booksum compare``: what to run, read from options or an experiment TOML.

An experiment is books x strategies x models x chunk sizes (BooookScore §5 compares hier and
inc at chunk sizes 2048/4096 per model, Table 2), plus precomputed summary sets (e.g. the
BooookScore release) that join the same table. ``direct`` reads the whole book and ignores
the chunk size, so it appears once per model however many chunk sizes the grid has (a
deliberate deduplication: running it per chunk size would repeat identical work).

Experiment file (TOML; every key optional, command-line options override it)::

    books = ["books/", "data:sample-books"]   # files, directories, and data sets of `booksum data`
    strategies = ["hier", "inc", "direct"]
    models = ["openai:gpt-4o-mini"]
    chunk_sizes = [2048, 4096]
    judge = "openai:gpt-4o"
    out = "compare-out"
    max_summary_len = 900
    [options]                              # strategies' own options (--set NAME=VALUE)
    direct_template = ["ib", "ie"]         # a list: one grid configuration per value
    [[precomputed]]
    name = "gpt4-2048-hier"
    summaries = "release/summaries/gpt4-2048-hier-cleaned.json"
    annotations = "release/annotations/gpt4-2048-hier.json"   # optional

Relative paths in the file are relative to the file.
"""

from __future__ import annotations

import itertools
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from booksum_app.books.folder import BOOK_SUFFIXES, book_files, book_sources
from booksum_app.config import (
    ADAPTIVE_INITIAL_CONCURRENCY,
    DEFAULT_BATCH_SIZE,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    JUDGE_MODES,
    checked_count,
    is_int,
    suggestion,
)
from booksum_app.errors import ConfigError
from booksum_app.llm.spec import checked_temperature
from booksum_app.strategies import get_strategy
from booksum_app.strategies.base import OptionValue

DEFAULT_STRATEGIES = ("hier", "inc")
DEFAULT_OUT = Path("booksum-compare")
DEFAULT_JOBS = 4
CALLS_PER_JOB = 4  # calls in flight one book keeps on average: 64 books filled 256 (docs/compare.md)
MAX_AUTO_JOBS = 64
DEFAULT_BUCKET_MAX_TOKENS = (("L", 400), ("XL", 400), ("2XL", 500), ("3XL", 500))  # CNNSum §4
RELEASE_CONFIGS = ("gpt4-2048-hier", "gpt4-2048-inc", "chatgpt-2048-hier", "chatgpt-2048-inc")
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PrecomputedSet:
    """A summary set made elsewhere: ``{book: summary}`` JSON, optionally with its annotations."""

    name: str
    summaries: Path
    annotations: Path | None = None

    def __post_init__(self) -> None:  # str or Path
        object.__setattr__(self, "summaries", Path(self.summaries))
        if self.annotations is not None:
            object.__setattr__(self, "annotations", Path(self.annotations))


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset (JSONL, one sample a line) and how to read its fields (runners/datasets.py)."""

    path: Path
    preset: str = "auto"  # auto | cnnsum | clongeval | custom
    context_field: str | None = None
    reference_field: str | None = None
    id_field: str | None = None
    bucket_field: str | None = None
    rouge_variant: str | None = None  # None: the preset's own (scoring/rouge.py), rouge-score for custom

    def __post_init__(self) -> None:  # str or Path
        object.__setattr__(self, "path", Path(self.path))


@dataclass(frozen=True)
class GridConfig:
    """One configuration of the grid: strategy x model x chunk size (None for ``direct``) x variant.

    ``variant`` holds the values of the options the experiment gives several values (direct's
    ``direct_template = ["ib", "ie"]``: CNNSum Table 2), one configuration per combination.
    """

    strategy: str
    model: str  # resolved model name, e.g. "openai:gpt-4o-mini"
    chunk_size: int | None
    variant: tuple[tuple[str, OptionValue], ...] = ()

    @property
    def template(self) -> str | None:
        """The variant's values as a label ("ie"), None without a variant."""
        return "-".join(str(v) for _, v in self.variant) or None

    @property
    def slug(self) -> str:
        """File-name-safe name, release style: ``<model>-<chunk>-<strategy>[-<variant>]``."""
        model = _SLUG_BAD.sub("-", self.model.replace(":", "-")).strip("-") or "model"
        middle = f"-{self.chunk_size}" if self.chunk_size is not None else ""
        tail = f"-{_SLUG_BAD.sub('-', self.template)}" if self.template else ""
        return f"{model}{middle}-{self.strategy}{tail}"


@dataclass(frozen=True)
class Experiment:
    """Everything one comparison needs; built from options and/or an experiment file."""

    books: tuple[Path, ...] = ()
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    models: tuple[str | None, ...] = (None,)  # None: the configured default model
    chunk_sizes: tuple[int, ...] = (DEFAULT_CHUNK_SIZE,)
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS
    judge: str | None = None  # None: BOOKSUM_JUDGE, else the config's judge_model, else no BooookScore
    use_judge: bool = True
    judge_mode: str = "sentence"
    batch_size: int = DEFAULT_BATCH_SIZE
    precomputed: tuple[PrecomputedSet, ...] = ()
    out: Path = DEFAULT_OUT
    prompts: str = "paper"
    lang: str = "auto"
    clean: bool = True
    chapter_aware: bool = False
    include_front_matter: bool = False
    # strategies' options, each for the strategies that declare it; several values (a tuple): one
    # configuration per value, e.g. direct_template ("ib", "ie") as CNNSum Table 2
    options: tuple[tuple[str, tuple[object, ...]], ...] = ()
    jobs: int = DEFAULT_JOBS  # books summarized at once
    datasets: tuple[DatasetSpec, ...] = ()  # benchmark samples summarized like books, scored with ROUGE-L
    bucket_max_tokens: tuple[tuple[str, int], ...] = DEFAULT_BUCKET_MAX_TOKENS  # G per length bucket
    regenerate: bool = False  # presets: booksum's validity rule instead of the benchmark's one call
    extra: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what reading BOOKS skipped (a folder's README, records): one line each
    temperature: float | None = None  # the summarizers' sampling temperature; None: booksum's default

    def __post_init__(self) -> None:
        self._paths_as_paths()
        for strategy in self.strategies:
            get_strategy(strategy)  # ConfigError naming the installed ones (or why a plugin failed)
        if not self.strategies and self.books:
            raise ConfigError("no strategies given; pass e.g. --strategies hier,inc")
        bad = [c for c in self.chunk_sizes if c < 64]
        if bad:
            raise ConfigError(f"chunk size {bad[0]} is too small; use at least 64 tokens")
        if self.max_summary_tokens < 16:
            raise ConfigError("--max-summary-len must be at least 16 tokens")
        if self.judge_mode not in JUDGE_MODES:
            raise ConfigError(f"judge mode {self.judge_mode!r}; use one of {', '.join(JUDGE_MODES)}")
        if self.jobs < 1:
            raise ConfigError("--jobs must be at least 1")
        self._check_options()
        if any(tokens < 16 for _, tokens in self.bucket_max_tokens):
            raise ConfigError("--bucket-max-tokens: each limit must be at least 16 tokens")
        names = [p.name for p in self.precomputed]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ConfigError(f"two precomputed sets named {min(dupes)!r}; give each its own NAME")

    def _paths_as_paths(self) -> None:
        """The library takes ``str`` or ``Path`` wherever it takes a path: books (a directory is its
        books), ``out``, datasets and precomputed sets given as strings become what they name."""
        if any(isinstance(b, str) or Path(b).is_dir() for b in self.books):
            books, notes = book_sources(self.books)
            object.__setattr__(self, "books", books)
            object.__setattr__(self, "notes", (*self.notes, *notes))
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "datasets", tuple(
            DatasetSpec(Path(d)) if isinstance(d, str | os.PathLike) else d for d in self.datasets))
        object.__setattr__(self, "precomputed", tuple(
            parse_precomputed(p) if isinstance(p, str) else p for p in self.precomputed))
        if self.temperature is not None:
            object.__setattr__(self, "temperature", checked_temperature(self.temperature))

    def _check_options(self) -> None:
        """Every option belongs to a strategy of the grid and each of its values parses there."""
        object.__setattr__(self, "options",
                           tuple((name, tuple(values) if isinstance(values, tuple | list) else (values,))
                                 for name, values in self.options))
        for name, values in self.options:
            declared = [o for s in self.strategies for o in get_strategy(s).options if o.name == name]
            if not declared:
                raise ConfigError(
                    f"--set {name}: not an option of the grid's strategies ({', '.join(self.strategies)})"
                )
            for option in declared:
                for value in values:
                    option.parse(value)

    def variants(self, strategy: str) -> tuple[tuple[tuple[str, OptionValue], ...], ...]:
        """The option combinations ``strategy`` runs under: one per value of its several-valued options."""
        declared = {o.name: o for o in get_strategy(strategy).options}
        axes = [[(name, declared[name].parse(v)) for v in values] for name, values in self.options
                if name in declared and len(values) > 1]
        return tuple(itertools.product(*axes))

    def options_for(self, config: GridConfig) -> dict[str, object]:
        """The options one configuration runs with: the experiment's single values, then its variant."""
        declared = {o.name for o in get_strategy(config.strategy).options}
        fixed = {name: values[0] for name, values in self.options if name in declared and len(values) == 1}
        return {**fixed, **dict(config.variant)}

    def grid(self, resolve: Any = None) -> tuple[GridConfig, ...]:
        """The configurations to run (none without books), ``direct`` once per model.

        ``resolve`` maps a model string (None: the default model) to its resolved name.
        """
        out: list[GridConfig] = []
        if not self.books and not self.datasets:
            return ()
        for model in self.models:
            name = resolve(model) if resolve is not None else (model or "default")
            for strategy in self.strategies:
                uses_chunks = get_strategy(strategy).uses_chunks  # direct: one run whatever the chunk size
                sizes: Sequence[int | None] = self.chunk_sizes if uses_chunks else (None,)
                for size in sizes:
                    for variant in self.variants(strategy):
                        config = GridConfig(strategy, name, size, variant)
                        if config not in out:
                            out.append(config)
        return tuple(out)

    def for_job(self, config: GridConfig, *, max_summary_tokens: int | None = None) -> Experiment:
        """The experiment one (configuration, book or sample) runs under: its G (its options: :meth:`options_for`)."""
        return replace(self, max_summary_tokens=max_summary_tokens or self.max_summary_tokens)


def jobs_for(concurrency: int | None, *, hosted: bool) -> int:
    """Books at once when ``--jobs`` is not given: enough to fill the calls in flight, ``--concurrency
    N`` or, for a hosted API, the adaptive limit's start (a book past its leaves keeps about one
    call in flight per dependent round, so a wide limit needs many books), from 4 to 64."""
    if concurrency is None:
        concurrency = ADAPTIVE_INITIAL_CONCURRENCY if hosted else 0
    return max(DEFAULT_JOBS, min(MAX_AUTO_JOBS, concurrency // CALLS_PER_JOB))


def parse_precomputed(text: str, *, base: Path | None = None) -> PrecomputedSet:
    """Parse ``NAME=SUMMARIES.json[:ANNOTATIONS.json]``.

    Raises:
        ConfigError: malformed value.
    """
    name, sep, rest = text.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise ConfigError(
            f"--precomputed {text!r}: use NAME=SUMMARIES.json or NAME=SUMMARIES.json:ANNOTATIONS.json"
        )
    summaries, annotations = rest, None
    head, colon, tail = rest.rpartition(":")
    if colon and head and tail.lower().endswith(".json") and head.lower().endswith(".json"):
        summaries, annotations = head, tail
    return PrecomputedSet(
        name=name.strip(),
        summaries=_rel(Path(summaries), base),
        annotations=_rel(Path(annotations), base) if annotations else None,
    )


def release_sets(directory: str | os.PathLike[str]) -> tuple[PrecomputedSet, ...]:
    """The four configurations of BooookScore Table 2 in a release checkout, with their annotations.

    Raises:
        ConfigError: the directory does not hold the released summaries.
    """
    directory = Path(directory)
    sets = []
    for name in RELEASE_CONFIGS:
        summaries = directory / "summaries" / f"{name}-cleaned.json"
        if not summaries.is_file():
            raise ConfigError(
                f"--with-release {directory}: {summaries.relative_to(directory)} is missing; "
                "point it at a BooookScore release (summaries/ and annotations/)"
            )
        annotations = directory / "annotations" / f"{name}.json"
        sets.append(PrecomputedSet(name, summaries, annotations if annotations.is_file() else None))
    return tuple(sets)


DATA_PREFIX = "data:"  # "data:sample-books/x.epub": inside a data set of `booksum data`, wherever it lives


def _rel(path: Path, base: Path | None) -> Path:
    text = str(path)
    if text.startswith(DATA_PREFIX):
        from booksum_app.runners.data import data_path

        name, _, rest = text[len(DATA_PREFIX):].partition("/")
        return data_path(name, os.environ) / rest
    path = path.expanduser()
    return path if base is None or path.is_absolute() else base / path


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) or is_int(v) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(str(v).strip() for v in value)


def load_experiment(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read an experiment TOML into :class:`Experiment` field values (paths resolved).

    Raises:
        ConfigError: unreadable file, unknown key or wrong type.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read experiment file {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"experiment file {path} is not valid TOML: {exc}") from exc
    base = path.parent
    where = str(path)
    allowed = {f.name for f in fields(Experiment)} - {"extra", "max_summary_tokens", "notes"}
    allowed |= {"max_summary_len", "with_release", "direct_template"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{suggestion(unknown[0], sorted(allowed))}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "books":
            values["books"] = tuple(_rel(Path(p), base) for p in _strings(value, key, where))
        elif key in ("strategies", "models"):
            values[key] = _strings(value, key, where)
        elif key == "chunk_sizes":
            items = value if isinstance(value, list) else [value]
            values["chunk_sizes"] = tuple(checked_count(v, what=f"{where}: chunk_sizes", minimum=1) for v in items)
        elif key in ("max_summary_len", "batch_size", "jobs"):
            values["max_summary_tokens" if key == "max_summary_len" else key] = checked_count(
                value, what=f"{where}: {key}", minimum=1)
        elif key in ("use_judge", "clean", "chapter_aware", "include_front_matter", "regenerate"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {key} must be true or false")
            values[key] = value
        elif key == "temperature":  # checked where every temperature is (llm/spec.py)
            values["temperature"] = value
        elif key == "datasets":
            values["datasets"] = tuple(DatasetSpec(_rel(Path(p), base)) for p in _strings(value, key, where))
        elif key == "bucket_max_tokens":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: bucket_max_tokens must be a table of integers, e.g. {{L = 400}}")
            values["bucket_max_tokens"] = tuple(
                (str(k), checked_count(v, what=f"{where}: bucket_max_tokens {k}", minimum=1)) for k, v in value.items())
        elif key == "options":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: [options] must be a table, e.g. direct_template = [\"ib\", \"ie\"]")
            values["options"] = _merge_options(values.get("options", ()), _option_values(value))
        elif key == "direct_template":  # the older spelling of [options] direct_template
            values["options"] = _merge_options(values.get("options", ()), direct_template_option(str(value)))
        elif key == "out":
            values["out"] = _rel(Path(str(value)), base)
        elif key == "with_release":
            values.setdefault("precomputed", ())
            values["precomputed"] += release_sets(_rel(Path(str(value)), base))
        elif key == "precomputed":
            values.setdefault("precomputed", ())
            values["precomputed"] += _precomputed_entries(value, base, where)
        else:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: {key} must be a string")
            values[key] = value
    return values


def _precomputed_entries(value: Any, base: Path, where: str) -> tuple[PrecomputedSet, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: precomputed must be an array of tables ([[precomputed]])")
    out = []
    for entry in value:
        if isinstance(entry, str):
            out.append(parse_precomputed(entry, base=base))
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(
            entry.get("summaries"), str
        ):
            raise ConfigError(f"{where}: each [[precomputed]] needs name and summaries strings")
        annotations = entry.get("annotations")
        out.append(
            PrecomputedSet(
                entry["name"],
                _rel(Path(entry["summaries"]), base),
                _rel(Path(str(annotations)), base) if annotations else None,
            )
        )
    return tuple(out)


def _option_values(table: Mapping[str, Any]) -> tuple[tuple[str, tuple[object, ...]], ...]:
    """``[options]`` / ``--set`` values: a list (or comma-separated string) is several values."""
    out = []
    for name, value in table.items():
        items = (value if isinstance(value, list)
                 else [v for v in value.split(",")] if isinstance(value, str) else [value])
        out.append((str(name).replace("-", "_"), tuple(items)))
    return tuple(out)


def set_options(parsed: Mapping[str, str]) -> tuple[tuple[str, tuple[object, ...]], ...]:
    """compare's ``--set NAME=V1,V2`` items: several values are one configuration each."""
    return _option_values(parsed)


def direct_template_option(value: str) -> tuple[tuple[str, tuple[object, ...]], ...]:
    """``--direct-template ib|ie|both`` as the direct strategy's option (both: a configuration each)."""
    return (("direct_template", ("ib", "ie") if value == "both" else (value,)),)


def _merge_options(
    base: tuple[tuple[str, tuple[object, ...]], ...], new: tuple[tuple[str, tuple[object, ...]], ...]
) -> tuple[tuple[str, tuple[object, ...]], ...]:
    merged = dict(base)
    merged.update(dict(new))
    return tuple(merged.items())


def build_experiment(file_values: Mapping[str, Any], overrides: Mapping[str, Any]) -> Experiment:
    """An :class:`Experiment` from file values with command-line overrides (None/empty = not given).

    Precomputed sets from both sources are kept (file first); books given on the command line
    replace the file's.
    """
    values = dict(file_values)
    for key, value in overrides.items():
        if value is None or (isinstance(value, tuple) and not value):
            continue
        if key == "precomputed":
            values["precomputed"] = tuple(values.get("precomputed", ())) + tuple(value)
        elif key == "options":  # --set on the command line replaces the file's value of that option
            values["options"] = _merge_options(values.get("options", ()), tuple(value))
        else:
            values[key] = value
    if "books" in values:
        values["books"], values["notes"] = book_sources(values["books"])
    return replace(Experiment(), **values)


__all__ = [
    "BOOK_SUFFIXES",
    "RELEASE_CONFIGS",
    "DatasetSpec",
    "Experiment",
    "GridConfig",
    "PrecomputedSet",
    "book_files",
    "book_sources",
    "build_experiment",
    "direct_template_option",
    "load_experiment",
    "parse_precomputed",
    "release_sets",
    "set_options",
]
