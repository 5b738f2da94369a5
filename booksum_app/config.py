"""Defaults and frozen settings. Defaults follow BooookScore §5 (chunk 2048, G=900, T=0.5/1.0, top-p 1)."""

from __future__ import annotations

import math
from typing import Literal, TypeGuard

from booksum_app.errors import ConfigError

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
# Hosted APIs get an adaptive limit instead (llm/controller.py): with --concurrency N it
# starts at N (your quota) and stays under it; else it starts at ADAPTIVE_INITIAL_CONCURRENCY
# and doubles per window while it is used and no call was refused, up to
# ADAPTIVE_MAX_CONCURRENCY. It halves on a 429/overload and grows back by one call per window;
# answers that wait in a server's queue lower it to what the server serves.
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


def is_real(value: object) -> TypeGuard[int | float]:
    """Whether a value read from outside is a finite number: not a bool, not nan or an infinity."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# no count booksum reads is this large: ten times the largest context window on offer (10M
# tokens); ``context_window = 10**30`` or ``--set evidence_tokens=1e30`` is a typo, not a setting
MAX_TOKENS = 100_000_000
MAX_COUNT = 10**12  # a plan's calls or tokens over a whole book


def shown(value: object) -> str:
    """A value read from outside as a message quotes it: short, on one line (``1e+30``, not 31 digits)."""
    if is_int(value):
        return str(value) if abs(value) < 10**15 else f"{float(value):.3g}"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _bound(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 10**15 else f"{x:g}"


def _checked(value: object, *, what: str, integer: bool, minimum: float, maximum: float) -> None:
    fits = is_int(value) if integer else is_real(value)
    if not fits or not minimum <= value <= maximum:  # type: ignore[operator]
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{what} must be {kind} from {_bound(minimum)} to {_bound(maximum)}; got {shown(value)}")


def checked_count(value: object, *, what: str, minimum: int = 0, maximum: int = MAX_TOKENS) -> int:
    """``value`` when it is a whole number (not a bool, no fraction) from ``minimum`` to ``maximum``.

    The one rule for every number read from a config file, ``--set``, a model table or a plugin
    (with :func:`checked_real`): the type, finiteness, then the range.

    Raises:
        ConfigError: one line naming ``what``, the rule and the value (shown short).
    """
    _checked(value, what=what, integer=True, minimum=minimum, maximum=maximum)
    return value  # type: ignore[return-value]


def checked_real(value: object, *, what: str, minimum: float = 0.0, maximum: float = MAX_COUNT) -> float:
    """``value`` as a float when it is a finite number (not a bool) from ``minimum`` to ``maximum``.

    Raises:
        ConfigError: one line naming ``what``, the rule and the value (shown short).
    """
    _checked(value, what=what, integer=False, minimum=minimum, maximum=maximum)
    return float(value)  # type: ignore[arg-type]


def is_price(value: object) -> bool:
    """Whether a value read from a config or model table is a price: a number (not a bool),
    finite, from 0 to :data:`MAX_PRICE_USD_PER_MTOK`."""
    return is_real(value) and 0 <= value <= MAX_PRICE_USD_PER_MTOK


ENV_MODEL = "BOOKSUM_MODEL"  # default model string
ENV_JUDGE = "BOOKSUM_JUDGE"  # BooookScore judge model string (no default: a judge is chosen on purpose)
ENV_CACHE_DIR = "BOOKSUM_CACHE_DIR"
ENV_CONFIG = "BOOKSUM_CONFIG"  # path of a user config file (TOML)

# the top-level keys of the user config file (TOML); anything else is a typo, warned about
CONFIG_KEYS = ("default_model", "judge_model", "models", "aliases", "vllm_engine")


def suggestion(name: str, known: tuple[str, ...] | list[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``known`` (difflib), else the list of ``known``."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"


def unknown_config_keys(keys: list[str], where: str) -> tuple[str, ...]:
    """One warning per key of the config file that booksum does not read, with the closest known key."""
    return tuple(f"{where}: unknown key {key!r} is ignored{suggestion(key, CONFIG_KEYS)}"
                 for key in keys if key not in CONFIG_KEYS)
