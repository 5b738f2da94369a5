"""Defaults and frozen settings. Defaults follow BooookScore §5 (chunk 2048, G=900, T=0.5/1.0, top-p 1)."""

from __future__ import annotations

import math
from typing import Literal, TypeGuard

DEFAULT_CHUNK_SIZE = 2048  # tokens per chunk (BooookScore §5)
DEFAULT_MAX_SUMMARY_TOKENS = 900  # G: the final summary's token budget (BooookScore §5)
DEFAULT_TEMPERATURE = 0.5  # summarization calls (BooookScore §5)
COMPRESSION_TEMPERATURE = 1.0  # compression calls (BooookScore App. A.2)
DEFAULT_TOP_P = 1.0
JudgeMode = Literal["sentence", "batched"]  # BooookScore: one call per sentence, or a batch of sentences
JUDGE_MODES: tuple[JudgeMode, ...] = ("sentence", "batched")
DEFAULT_BATCH_SIZE = 10  # BooookScore release's v2 default: sentences per batched judge call
DEFAULT_MAX_PLAN_COST_USD = 1.0  # a plan above this upper-bound cost (USD) asks before it runs
LANGUAGES = ("en", "zh")  # prompt sets, sentence splitting, failure detectors: the one list
LANG_CHOICES = ("auto", *LANGUAGES)  # --lang: "auto" reads the book's metadata, else its text
LENGTH_POLICIES = ("regenerate", "truncate")  # an answer past its limit: the paper's rule, or cut at once
DEFAULT_TIMEOUT_S = 300.0  # per attempt of a hosted-API call; long prompts answer well within it
MAX_TIMEOUT_S = 86_400.0  # a day: past that a "timeout" is a typo (1e300 overflowed a deadline)
REASONING_EFFORTS = ("minimal", "low", "medium", "high")  # OpenAI's reasoning_effort values
THINKING_MODES = ("auto", "on", "off")  # --thinking: as the model does, ask it to think, ask it not to
HEARTBEAT_S = 30.0  # a progress line at least this often on stderr when it is not a terminal
JUDGE_TEMPERATURE = 0.0  # scoring should be as repeatable as the provider allows

# Calls in flight. A backend states its own fixed default (``default_concurrency``: 1 for the
# embedded model, vLLM and Ollama, which queue); one that states none gets FIXED_CONCURRENCY.
# Hosted APIs get an adaptive limit instead (AIMD, llm/limiter.py): with --concurrency N it
# starts at N (your quota) and stays under it; else it starts at ADAPTIVE_INITIAL_CONCURRENCY
# and doubles per window while it is used and no call was refused, up to
# ADAPTIVE_MAX_CONCURRENCY. It halves on a 429/overload and grows back by one call per window.
FIXED_CONCURRENCY = 8
ADAPTIVE_INITIAL_CONCURRENCY = 128  # a hosted API's first burst
# a server behind a base URL that does not say how many calls it serves at once (no /props):
# it may queue silently (llama-server -np 4), and calls sent into a long queue cannot be taken
# back, so the first burst is small and slow start doubles it per window while answers keep pace
SERVER_INITIAL_CONCURRENCY = 16
ADAPTIVE_MAX_CONCURRENCY = 512  # War and Peace's 370 leaves at once; threads and sockets stay few hundred

# a price past this (USD per million tokens) is a typo or a hostile table: the dearest model lists
# a few hundred, and 1e308 made every cost print as "$inf"
MAX_PRICE_USD_PER_MTOK = 10_000.0


def is_int(value: object) -> TypeGuard[int]:
    """Whether a value read from JSON or TOML is an integer: ``true`` is not, though Python's
    ``bool`` is an ``int`` (``context_window = true`` must not be a window of one token)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_price(value: object) -> bool:
    """Whether a value read from a config or model table is a price: a number (not a bool),
    finite, from 0 to :data:`MAX_PRICE_USD_PER_MTOK`."""
    return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            and 0 <= value <= MAX_PRICE_USD_PER_MTOK)


ENV_MODEL = "BOOKSUM_MODEL"  # default model string
ENV_JUDGE = "BOOKSUM_JUDGE"  # BooookScore judge model string (no default: a judge is chosen on purpose)
ENV_CACHE_DIR = "BOOKSUM_CACHE_DIR"
ENV_CONFIG = "BOOKSUM_CONFIG"  # path of a user config file (TOML)

# the top-level keys of the user config file (TOML); anything else is a typo, warned about
CONFIG_KEYS = ("default_model", "judge_model", "models", "aliases", "vllm_engine")


def unknown_config_keys(keys: list[str], where: str) -> tuple[str, ...]:
    """One warning per key of the config file that booksum does not read, with the closest known key."""
    import difflib

    warnings = []
    for key in keys:
        if key in CONFIG_KEYS:
            continue
        close = difflib.get_close_matches(key, CONFIG_KEYS, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(CONFIG_KEYS)}"
        warnings.append(f"{where}: unknown key {key!r} is ignored{hint}")
    return tuple(warnings)
