"""N-gram statistics of BooookScore Table 2: average length, % novel 3-grams, % repeated 3-grams.

Definitions (the paper gives none; these reproduce its Table 2 on the released summaries):

- length of a summary: its number of tokens under a tiktoken encoding, ``cl100k_base`` by
  default (``encode_ordinary``); the system figure is the mean over summaries. On the
  released ``-cleaned`` summaries this gives exactly 778.6 / 805.4 / 667.3 / 484.5
  (gpt4-hier / gpt4-inc / chatgpt-hier / chatgpt-inc), Table 2's figures.
- words: :func:`booksum_app.scoring.words.ngram_words` (English: Punkt sentences, NLTK word
  tokenizer, lowercased, punctuation kept; Chinese: jieba words); 3-grams are consecutive
  word triples of the whole summary.
- % repeated 3-grams of a summary: distinct 3-grams that occur more than once / distinct
  3-grams, x100; the system figure is the mean over summaries that have a 3-gram. Released
  summaries: 4.17 / 3.24 / 8.71 / 3.46 against Table 2's 4.2 / 3.4 / 9.0 / 3.5 (other
  definitions we tried are further off: duplicate occurrences / all occurrences gives
  4.81 / 4.21 / 9.52 / 4.04; whitespace words 2.5 / 1.6 / 6.3 / 2.2).
- % novel 3-grams of a summary: distinct summary 3-grams that never occur in the source
  text, / distinct summary 3-grams, x100 (same words, same lowercasing); mean over summaries
  with a source. Not checkable against the paper: its source books are not public.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from booksum_app.chunking import get_tokenizer, resolve_lang
from booksum_app.chunking.base import Tokenizer
from booksum_app.scoring.aggregate import mean
from booksum_app.scoring.keyset import KeySet, text_key
from booksum_app.scoring.words import ngram_words
from booksum_app.signature import make_signature, rules_version

DEFAULT_LENGTH_TOKENIZER = "cl100k_base"
WORD_TOKENIZERS = {"en": "nltk-lower", "zh": "jieba"}  # what ngram_words counts in, by language
NGRAM_N = 3


def ngrams(words: Sequence[str], n: int = NGRAM_N) -> list[tuple[str, ...]]:
    """Consecutive ``n``-grams of ``words`` (none when there are fewer than n words)."""
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


SOURCE_PIECE_CHARS = 20_000  # a book is tokenized in paragraph-aligned pieces of about this size


GRAM_SEP = " "  # no word holds whitespace: NLTK splits on it last, jieba cuts at it

SourceGrams = KeySet
"""A source's distinct n-grams: the :func:`~booksum_app.scoring.keyset.text_key` of each
:func:`gram_key`, 8 bytes a gram and the same in every process, so a worker process builds it
(War and Peace's 436K 3-grams: 3.5 MB, where a frozenset of strings took 46 MB in every
process that held it). Two grams share a key with odds of 2**-64: no percentage moves."""


def gram_key(gram: Sequence[str]) -> str:
    """The key of an n-gram in :data:`SourceGrams`."""
    return GRAM_SEP.join(gram)


def _gram_digest(gram: Sequence[str]) -> int:
    """A gram's key in :data:`SourceGrams`: the source's and a summary's grams are keyed here alike."""
    return text_key(gram_key(gram))


def source_ngrams(
    source: str,
    *,
    lang: str | None = None,
    n: int = NGRAM_N,
    piece_chars: int = SOURCE_PIECE_CHARS,
) -> SourceGrams:
    """The keys (:func:`gram_key`) of the ``n``-grams of a source text (for % novel).

    The words of paragraph-aligned pieces are joined before forming n-grams, so the set is
    that of the whole text, but NLTK never tokenizes a whole book at once: its regular
    expressions run under a wall-clock limit (nltk.redos) that a 700 KB book can pass on a
    busy machine (seen: TimeoutError on Wuthering Heights with four books scored at once).
    """
    words: list[str] = []
    piece: list[str] = []
    size = 0
    for paragraph in source.split("\n\n"):
        piece.append(paragraph)
        size += len(paragraph) + 2
        if size >= piece_chars:
            words += ngram_words("\n\n".join(piece), lang=lang)
            piece, size = [], 0
    if piece:
        words += ngram_words("\n\n".join(piece), lang=lang)
    return KeySet(map(_gram_digest, zip(*(words[i:] for i in range(n)), strict=False)))


@dataclass(frozen=True)
class NgramStats:
    """Raw n-gram statistics of one summary; percentages are computed from them."""

    n_tokens: int
    n_ngrams: int
    n_distinct: int
    n_repeated: int  # distinct n-grams that occur more than once
    n_novel: int | None = None  # distinct n-grams absent from the source; None without a source
    words: str = ""  # the word tokenizer the grams were counted in (WORD_TOKENIZERS)

    @property
    def repeated_pct(self) -> float | None:
        """% of distinct 3-grams that occur more than once in the summary."""
        return 100.0 * self.n_repeated / self.n_distinct if self.n_distinct else None

    @property
    def novel_pct(self) -> float | None:
        """% of distinct 3-grams that do not occur in the source."""
        if self.n_novel is None or not self.n_distinct:
            return None
        return 100.0 * self.n_novel / self.n_distinct


def ngram_stats(
    summary: str,
    *,
    source: str | SourceGrams | None = None,
    tokenizer: Tokenizer | None = None,
    lang: str | None = None,
) -> NgramStats:
    """Length and 3-gram statistics of one summary (source text or its :func:`source_ngrams` for % novel)."""
    tokenizer = tokenizer or get_tokenizer(DEFAULT_LENGTH_TOKENIZER)
    summary_lang = resolve_lang(lang, text=summary)
    grams = ngrams(ngram_words(summary, lang=summary_lang))
    counts = Counter(grams)
    n_novel = None
    if source is not None:
        source_set = source if isinstance(source, KeySet) else source_ngrams(source, lang=lang)
        n_novel = source_set.found([_gram_digest(gram) for gram in counts]).count(False)
    return NgramStats(
        n_tokens=tokenizer.count(summary),
        n_ngrams=len(grams),
        n_distinct=len(counts),
        n_repeated=sum(1 for c in counts.values() if c > 1),
        n_novel=n_novel,
        words=WORD_TOKENIZERS[summary_lang],
    )


@dataclass(frozen=True)
class NgramSummary:
    """System-level n-gram statistics: means over summaries."""

    n_summaries: int
    avg_tokens: float | None
    repeated_pct: float | None
    novel_pct: float | None  # None when no summary had a source
    n_with_source: int
    signature: str


def ngram_signature(tokenizer_name: str = DEFAULT_LENGTH_TOKENIZER, words: Iterable[str] = ()) -> str:
    """Signature of the n-gram statistics: length tokenizer, the word tokenizers used, their rules, n.

    ``words``: the word tokenizers the summaries were counted in (``nltk-lower`` for English,
    ``jieba`` for Chinese; both, joined by ``+``, for a mixed set; ``nltk-lower`` when none).
    """
    used = "+".join(sorted(set(words))) or WORD_TOKENIZERS["en"]
    return make_signature("ngrams", len=tokenizer_name, words=used, wordsv=rules_version("words"), n=NGRAM_N)


def summarize_ngrams(stats: Iterable[NgramStats], *, tokenizer_name: str = DEFAULT_LENGTH_TOKENIZER) -> NgramSummary:
    """Mean length, % repeated and % novel 3-grams over summaries."""
    items = list(stats)
    repeated = [p for p in (s.repeated_pct for s in items) if p is not None]
    novel = [p for p in (s.novel_pct for s in items) if p is not None]
    return NgramSummary(
        n_summaries=len(items),
        avg_tokens=mean([float(s.n_tokens) for s in items]),
        repeated_pct=mean(repeated),
        novel_pct=mean(novel),
        n_with_source=sum(1 for s in items if s.n_novel is not None),
        signature=ngram_signature(tokenizer_name, (s.words for s in items if s.words)),
    )
