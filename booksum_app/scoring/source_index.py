"""A source text's hashed n-grams (:class:`SourceIndex`), the words they are made of, and their keys.

What the copy detector (``detectors.py``) and the per-summary source slice (``copy_slice.py``)
both build on: :func:`words_of` (the ROUGE-L words, :func:`booksum_app.scoring.words.rouge_words`),
:func:`gram_keys` (8 bytes an n-gram) and :data:`COPY_N` / :data:`APPROX_N`, the n-gram sizes of
verbatim and approximate copying (their thresholds: ``detectors.py``, docs/scoring.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from booksum_app.config import LANGUAGES
from booksum_app.errors import ConfigError
from booksum_app.scoring.keyset import KeySet
from booksum_app.scoring.words import rouge_words

COPY_N = 8  # copying: summary n-grams looked up in the source
APPROX_N = 4  # approximate copying: summary 4-grams looked up in the source
LANGS = LANGUAGES
_PROCESS_PROBE = ("booksum", "detectors")  # its hash changes with the process's hash seed


def words_of(text: str, *, lang: str) -> list[str]:
    """The words the copy and echo detectors compare (see module docstring)."""
    if lang not in LANGS:
        raise ConfigError(f"no failure detectors for language {lang!r}; use one of {LANGS}")
    return rouge_words(text, lang=lang)


def gram_keys(words: Sequence[str], n: int) -> list[int]:
    """The keys of the ``n``-grams of ``words``, in order (Python hashes: this process's only)."""
    # hash of the n-gram tuple: 8 bytes a gram instead of a tuple of 8 strings in the set;
    # zip builds the tuples in C (a third faster than slicing a book's 33K words)
    return list(map(hash, zip(*(words[i:] for i in range(n)), strict=False)))


def approx_units(text: str, words: Sequence[str], lang: str) -> Sequence[str]:
    """The units approximate copying compares: the words, or for Chinese its letters, digits and
    characters (changing one word makes jieba cut its neighbours differently)."""
    return [ch for ch in text if ch.isalnum()] if lang == "zh" else words


@dataclass(frozen=True)
class SourceIndex:
    """The hashed ``n``-grams of a source text, built once per book and reused per summary.

    Keys are Python ``hash`` values, which differ between processes (string hash
    randomization): an index unpickled in another process is refused, not silently wrong.
    They are held as a :class:`~booksum_app.scoring.keyset.KeySet`, 8 bytes a gram (War and
    Peace: 4.7 MB, where a frozenset took 54).
    """

    lang: str
    n: int
    n_words: int
    keys: KeySet
    process_check: int = field(default_factory=lambda: hash(_PROCESS_PROBE))
    approx_keys: KeySet | None = None  # the source's APPROX_N-grams (copies with words changed)

    @classmethod
    def build(cls, texts: str | Iterable[str], *, lang: str, n: int = COPY_N) -> SourceIndex:
        """Index a text (or several, n-grams never crossing from one to the next)."""
        keys: list[int] = []
        approx: list[int] = []
        n_words = 0
        for text in [texts] if isinstance(texts, str) else texts:
            words = words_of(text, lang=lang)
            n_words += len(words)
            keys += gram_keys(words, n)
            if n == COPY_N:
                approx += gram_keys(approx_units(text, words, lang), APPROX_N)
        return cls(lang=lang, n=n, n_words=n_words, keys=KeySet(keys),
                   approx_keys=KeySet(approx) if n == COPY_N else None)

    def union(self, other: SourceIndex) -> SourceIndex:
        """The n-grams of both (the same ``n`` and language)."""
        if (other.n, other.lang) != (self.n, self.lang):
            raise ValueError("indexes of different n-gram sizes or languages")
        approx = (
            self.approx_keys.union(other.approx_keys)
            if self.approx_keys is not None and other.approx_keys is not None
            else None
        )
        return SourceIndex(self.lang, self.n, self.n_words + other.n_words, self.keys.union(other.keys),
                           approx_keys=approx)


__all__ = ["APPROX_N", "COPY_N", "LANGS", "SourceIndex", "approx_units", "gram_keys", "words_of"]
