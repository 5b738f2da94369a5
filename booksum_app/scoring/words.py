"""Word tokenisation for the n-gram statistics and ROUGE-L, English and Chinese.

- :func:`ngram_words` (n-gram statistics, Table 2): English text is split into sentences
  (NLTK Punkt English), each sentence tokenised with NLTK's ``NLTKWordTokenizer`` (what
  ``nltk.word_tokenize`` runs), and tokens lowercased; punctuation tokens are kept. Chinese
  text is segmented with jieba (punctuation and whitespace tokens dropped).
- :func:`rouge_words` (ROUGE-L): English as ``rouge_score``'s default tokenizer (lowercase,
  every run of characters outside ``[a-z0-9]`` becomes a space, split on whitespace; no
  stemming); Chinese with jieba word segmentation (CNNSum §4), punctuation dropped.

jieba's logger is silenced (it otherwise prints "Building prefix dict..." on stderr); its
dictionary cache goes to the system temp directory, which is the only file it writes.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from typing import Any

from booksum_app.chunking import resolve_lang, split_sentences

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@functools.cache
def _nltk_word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    from booksum_app.chunking.sentences import trusted_class
    from booksum_app.scoring.nltk_words import prechecked

    # NLTK's fixed patterns, without the wall-clock guard, each skipped where it cannot match
    return prechecked(trusted_class(NLTKWordTokenizer)())


@functools.cache
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    logging.getLogger("jieba").setLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def _is_punct_or_space(token: str) -> bool:
    return all(ch.isspace() or unicodedata.category(ch).startswith(("P", "S")) for ch in token)


def chinese_words(text: str) -> list[str]:
    """jieba words of ``text`` (precise mode, no HMM-free tricks), punctuation and spaces dropped."""
    return [w for w in _jieba().lcut(text) if w.strip() and not _is_punct_or_space(w)]


def ngram_words(text: str, *, lang: str | None = None) -> list[str]:
    """The word sequence the n-gram statistics are computed on (see module docstring)."""
    lang = resolve_lang(lang, text=text)
    if lang == "zh":
        return chinese_words(text)
    tokenizer = _nltk_word_tokenizer()
    return [t.lower() for s in split_sentences(text, lang="en") for t in tokenizer.tokenize(s)]


def rouge_words(text: str, *, lang: str | None = None) -> list[str]:
    """The token sequence ROUGE-L is computed on (see module docstring)."""
    lang = resolve_lang(lang, text=text)
    if lang == "zh":
        return chinese_words(text.lower())
    return _NON_ALNUM.sub(" ", text.lower()).split()
