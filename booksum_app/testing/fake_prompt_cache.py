"""Stand-ins for providers' prompt caches, for the fake server (``FakeServer(prompt_caching=True)``).

- :class:`PrefixCache` (OpenAI's automatic caching): a prompt of 1,024 tokens or more is
  served from the longest prefix seen in an earlier prompt, counted in 128-token steps
  (1,024, 1,152, ...), and reported as ``prompt_tokens_details.cached_tokens``.
- :class:`BreakpointCache` (Anthropic's ``cache_control``): the prompt up to a marked block
  is read from the cache when an earlier request marked the same prefix
  (``cache_read_input_tokens``); the rest up to the last marked block is written
  (``cache_creation_input_tokens``). Prefixes under 1,024 tokens are not cached.

Both count cl100k_base tokens, as the fake server does. A prompt is looked up when its
request arrives and stored when its answer is sent, so concurrent requests on a new prefix
all miss, as they do at the providers. Entries never expire (the providers' last 5 minutes
or more after their last use; a fake run is shorter).
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Sequence

from booksum_app.errors import BooksumError

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128
ANTHROPIC_MIN_TOKENS = 1024


def _tokenizer() -> object | None:
    try:
        from booksum_app.chunking import get_tokenizer

        return get_tokenizer("cl100k_base")
    except (ImportError, BooksumError):
        return None


def count_tokens(text: str) -> int:
    """cl100k_base tokens of ``text`` (a quarter of its characters when tiktoken is unavailable)."""
    tokenizer = _tokenizer()
    if tokenizer is None:
        return max(1, len(text) // 4) if text else 0
    return int(tokenizer.count(text))  # type: ignore[attr-defined]


def encode(text: str) -> Sequence[int]:
    """cl100k_base token ids of ``text`` (4-character pieces when tiktoken is unavailable)."""
    tokenizer = _tokenizer()
    if tokenizer is None:
        return [
            int.from_bytes(hashlib.sha1(text[i : i + 4].encode()).digest()[:4], "big") for i in range(0, len(text), 4)
        ]
    return list(tokenizer.encode(text))  # type: ignore[attr-defined]


class PrefixCache:
    """OpenAI-style automatic prefix caching (see the module docstring)."""

    def __init__(self, *, min_tokens: int = OPENAI_MIN_TOKENS, step_tokens: int = OPENAI_STEP_TOKENS) -> None:
        self.min_tokens, self.step_tokens = min_tokens, step_tokens
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def points(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(length, digest of the first length tokens)`` at every cacheable length."""
        out = []
        h = hashlib.sha256()
        done = 0
        for length in range(self.min_tokens, len(ids) + 1, self.step_tokens):
            h.update(array("q", ids[done:length]).tobytes())
            done = length
            out.append((length, h.copy().digest()))
        return out

    def lookup(self, points: Sequence[tuple[int, bytes]]) -> int:
        """Tokens of a prompt (its :meth:`points`) served from the cache: the longest stored step, or 0."""
        with self._lock:
            return max((length for length, digest in points if digest in self._seen), default=0)

    def store(self, points: Sequence[tuple[int, bytes]]) -> None:
        """Remember every cacheable prefix of a prompt (its :meth:`points`)."""
        with self._lock:
            self._seen.update(digest for _, digest in points)


class BreakpointCache:
    """Anthropic-style caching at ``cache_control`` breakpoints (see the module docstring)."""

    def __init__(self, *, min_tokens: int = ANTHROPIC_MIN_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def points(self, prefixes: Sequence[str]) -> list[tuple[int, bytes]]:
        """``(tokens, digest)`` of each breakpoint prefix long enough to be cached."""
        points = [(count_tokens(p), hashlib.sha256(p.encode("utf-8")).digest()) for p in prefixes]
        return [(n, d) for n, d in points if n >= self.min_tokens]

    def lookup(self, points: Sequence[tuple[int, bytes]]) -> tuple[int, int]:
        """``(tokens read, tokens written)`` for a prompt with these breakpoint :meth:`points`."""
        if not points:
            return 0, 0
        with self._lock:
            read = max((n for n, d in points if d in self._seen), default=0)
        return read, max(0, points[-1][0] - read)

    def store(self, points: Sequence[tuple[int, bytes]]) -> None:
        """Remember every cacheable breakpoint prefix."""
        with self._lock:
            self._seen.update(d for _, d in points)


__all__ = ["BreakpointCache", "PrefixCache", "count_tokens", "encode"]
