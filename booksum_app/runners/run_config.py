"""One summary run's configuration: built once, validated once, serialized once.

A :class:`RunConfig` holds everything that decides a summary apart from the book and the model
object: the strategy, the model string, the budgets, the prompts, the language, cleaning and
chunking. ``booksum summarize`` builds it from its options, ``compare`` from the experiment
and a grid configuration, the library from :func:`~booksum_app.runners.summarize.summarize_book`'s
keywords. The record's ``config``, its signature and compare's job key all derive from it, so a
field added here reaches every one of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from booksum_app.books import Book
from booksum_app.chunking import resolve_lang
from booksum_app.config import (
    COMPRESSION_TEMPERATURE,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
    LANG_CHOICES,
)
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.providers import catalog  # catalog.BACKENDS per use: tests swap it
from booksum_app.llm.spec import checked_temperature
from booksum_app.prompts import PROMPT_SETS
from booksum_app.signature import make_signature, rules_version, short_hash
from booksum_app.strategies import STRATEGIES, Strategy, StrategyConfig, get_strategy, load_prompts
from booksum_app.strategies.base import OptionValue, PromptBundle, resolve_options, strategy_prompts

DECODINGS = ("validated", "once")


def book_lang(lang: str, book: Book) -> str:
    """``en`` or ``zh`` for prompts and sentence splitting; ``auto`` reads the book's metadata, else its text."""
    return resolve_lang(lang, declared=book.language, text=lambda: book.text()[:20_000])


@dataclass(frozen=True)
class RunConfig:
    """What one summary run is asked to do (defaults: BooookScore §5); invalid values raise ConfigError.

    ``options`` are the strategy's own (``--set NAME=VALUE``): given as a mapping or pairs, they
    are checked against what the strategy declares and hold every declared option once built.
    """

    strategy: str = "hier"
    model: str | None = None  # None: the configured default model
    chunk_size: int = DEFAULT_CHUNK_SIZE
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS  # G
    temperature: float = DEFAULT_TEMPERATURE
    compression_temperature: float = COMPRESSION_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    prompts: str = "paper"  # a built-in set name or a directory of override templates
    lang: str = "auto"  # "auto" until :meth:`for_book` reads the book
    clean: bool = True  # artifact removal on the final summary
    chapter_aware: bool = False  # chunks never straddle chapters (implied by a ``chapters`` option)
    include_front_matter: bool = False
    options: Mapping[str, object] | tuple[tuple[str, OptionValue], ...] = ()
    # "validated": the paper's validity rule (regenerate, then truncate); "once": a benchmark's
    # decoding, one call and its answer as returned (compare --dataset presets)
    decoding: str = "validated"
    system: str | None = None  # a system message sent with every summary call (a benchmark's)
    # where ``temperature`` came from when not the caller: a dataset preset ("cnnsum preset"); None: see
    # :attr:`temperature_origin`
    temperature_source: str | None = None

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise ConfigError(f"decoding {self.decoding!r}: use one of {', '.join(DECODINGS)}")
        impl = get_strategy(self.strategy)  # ConfigError naming the installed ones (or why a plugin failed)
        object.__setattr__(self, "strategy", impl.name)
        object.__setattr__(self, "temperature", checked_temperature(self.temperature))
        if self.lang not in LANG_CHOICES:
            raise ConfigError(f"--lang {self.lang!r}: use one of {', '.join(LANG_CHOICES)}")
        given = dict(self.options.items() if isinstance(self.options, Mapping) else self.options)
        object.__setattr__(self, "options", resolve_options(impl.options, given, strategy=impl.name))
        if self.per_chapter and not self.chapter_aware:
            object.__setattr__(self, "chapter_aware", True)  # chapter summaries need chapter-bound chunks
        if not impl.calls_model and self.clean:
            object.__setattr__(self, "clean", False)  # an extractive strategy has no LLM artifacts to remove
        self.strategy_config()  # the budgets are validated now, before any book is read
        if self.prompts not in PROMPT_SETS and not Path(self.prompts).expanduser().is_dir():
            raise ConfigError(
                f"--prompts {self.prompts!r} is neither a built-in set ({', '.join(PROMPT_SETS)}) "
                "nor an existing directory"
            )

    @property
    def impl(self) -> Strategy:
        return get_strategy(self.strategy)

    @property
    def option_values(self) -> dict[str, OptionValue]:
        """The strategy's options, every declared one, by name."""
        return dict(self.options.items() if isinstance(self.options, Mapping) else self.options)  # type: ignore[arg-type]

    @property
    def temperature_origin(self) -> str:
        """Where ``temperature`` came from: a preset, ``"default"`` (booksum's), or ``"given"`` (an option)."""
        if self.temperature_source is not None:
            return self.temperature_source
        return "default" if self.temperature == DEFAULT_TEMPERATURE else "given"

    @property
    def per_chapter(self) -> bool:
        """A strategy's ``chapters`` option (hier): the runner adds one summary per chapter."""
        return self.option_values.get("chapters") is True

    def for_book(self, book: Book) -> RunConfig:
        """This configuration with ``lang`` resolved from the book when it is ``auto``."""
        return self if self.lang != "auto" else replace(self, lang=book_lang(self.lang, book))

    def strategy_config(self) -> StrategyConfig:
        """The knobs the strategy itself reads (``lang`` must be resolved to run; ``en`` stands in)."""
        return StrategyConfig(
            chunk_size=self.chunk_size,
            max_summary_tokens=self.max_summary_tokens,
            temperature=self.temperature,
            compression_temperature=self.compression_temperature,
            top_p=self.top_p,
            prompts=self.prompts,
            lang=self.lang if self.lang != "auto" else "en",
            options=tuple(self.option_values.items()),
            once=self.decoding == "once",
            system=self.system,
        )

    def prompt_bundle(self) -> PromptBundle:
        """The strategy's templates in the resolved language."""
        return strategy_prompts(self.impl, self.strategy_config())

    def clean_bundle(self) -> PromptBundle | None:
        """The artifact-removal template, or None when cleaning is off."""
        if not self.clean:
            return None
        return load_prompts(self.prompts if self.prompts != "simple" else "paper", lang=self.strategy_config().lang,
                            names=("clean",))

    def plugins(self, model_name: str) -> dict[str, str | None]:
        """The plugins making this run, the strategy's and the model's backend's: each distribution's
        ``name-version`` and a hash of its code (a plugin changed without a version bump signs apart)."""
        return {"plugin": _dist_label(STRATEGIES.distribution(self.strategy)),
                "plugincode": STRATEGIES.code(self.strategy), **catalog.plugin_fields(model_name)}

    def signature(self, info: ModelInfo, bundle: PromptBundle, *, thinking: str = "auto") -> str:
        """The record's signature: what a reader needs to know the summary was made the same way.

        ``thinking`` is the ``--thinking`` mode the model was sent (``think:off``; absent for auto).
        """
        sc = self.strategy_config()
        return make_signature(
            self.strategy,
            model=info.name,
            chunk=self.chunk_size if self.impl.uses_chunks else None,
            G=self.max_summary_tokens,
            prompts=bundle.signature,
            lang=sc.lang,
            temp=self.temperature,
            top_p=self.top_p if self.top_p != DEFAULT_TOP_P else None,
            decode=self.decoding if self.decoding != "validated" else None,  # absent: the paper's rule
            system=short_hash(self.system) if self.system is not None else None,
            clean="on" if self.clean else "off",
            cut=rules_version("chunk"),  # where chunks and head/tail truncation end: chunker and splitter rules
            length="truncate" if info.length_policy == "truncate" else None,  # absent: the paper's rule
            think=thinking if thinking != "auto" else None,  # enable_thinking sent: another model behaviour
            **{k: _sig_value(v) for k, v in self.impl.signature_fields(sc).items()},
            **self.plugins(info.name),
        )

    def record_dict(self, info: ModelInfo, bundle: PromptBundle) -> dict[str, Any]:
        """The ``config`` a record keeps: these fields with the model's facts and the templates' versions."""
        sc = self.strategy_config()
        return {
            "strategy": self.strategy,
            "model": info.name,
            "context_window": info.context_window,
            "tokenizer": info.tokenizer,
            "chunk_size": self.chunk_size,
            "max_summary_tokens": self.max_summary_tokens,
            "temperature": self.temperature,
            "temperature_source": self.temperature_origin,
            "compression_temperature": self.compression_temperature,
            "top_p": self.top_p,
            "prompts": self.prompts,
            "prompt_signature": bundle.signature,
            "templates": {n: t.version for n, t in bundle.templates.items()},
            "lang": sc.lang,
            "clean": self.clean,
            "chapter_aware": self.chapter_aware,
            "include_front_matter": self.include_front_matter,
            "max_tries": 1 if sc.once else sc.max_tries,
            "decoding": self.decoding,
            "system": self.system,
            "length_policy": info.length_policy,
            "options": self.option_values,
            **{k: v for k, v in self.plugins(info.name).items() if v is not None},
            **self.impl.record_fields(sc),
        }

    def job_key(self, *, book_sha256: str, chunk_size: int | None, thinking: str = "auto") -> str:
        """What a finished compare record must match to be reused: these fields, the prompts, the book bytes.

        ``chunk_size`` is the grid's (None for a strategy that reads the whole text). The
        strategy's options and the plugin distributions' versions are part of it: a record of
        an older plugin is not reused.
        """
        sc, clean = self.strategy_config(), self.clean_bundle()
        fields = {
            "strategy": self.strategy, "model": self.model, "chunk_size": chunk_size,
            "G": self.max_summary_tokens, "prompts": self.prompt_bundle().signature,
            "clean": clean.signature if clean is not None else None,
            "lang": sc.lang, "chapter_aware": self.chapter_aware, "front_matter": self.include_front_matter,
            "options": self.option_values, **self.impl.record_fields(sc),
            **self.plugins(self.model or ""), "book": book_sha256,
        }
        # decoding other than booksum's (a benchmark preset's): part of the key; absent otherwise,
        # so records made before these fields were keyed stay reusable
        if (self.temperature, self.top_p) != (DEFAULT_TEMPERATURE, DEFAULT_TOP_P):
            fields.update(temperature=self.temperature, top_p=self.top_p)
        if self.decoding != "validated" or self.system is not None:
            fields.update(decoding=self.decoding, system=self.system)
        if thinking != "auto":  # --thinking on/off: the model was asked another thing
            fields.update(thinking=thinking)
        return short_hash(json.dumps(fields, sort_keys=True, default=str), 16)


def parse_set(items: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` items as ``{NAME: VALUE}`` (values parsed later, by the strategy's options).

    Raises:
        ConfigError: an item without ``=`` or a name, or one name set twice.
    """
    parsed: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ConfigError(f"--set {item!r}: give NAME=VALUE, e.g. --set direct_template=ie")
        if name in parsed:
            raise ConfigError(f"--set {name} given twice")
        parsed[name] = value.strip()
    return parsed


def option_aliases(**flags: object) -> dict[str, object]:
    """The options a command's own flags set (``--direct-template ie`` is ``--set direct_template=ie``).

    None: the flag was not given.
    """
    return {name: value for name, value in flags.items() if value is not None}


def _dist_label(dist: tuple[str, str] | None) -> str | None:
    return None if dist is None else f"{dist[0]}-{dist[1]}"


def _sig_value(value: object) -> object:
    """An option's value as a signature shows it (None: ``auto``; a signature field is never dropped)."""
    return "auto" if value is None else str(value).lower() if isinstance(value, bool) else value


__all__ = ["DECODINGS", "LANG_CHOICES", "RunConfig", "book_lang", "option_aliases", "parse_set"]
