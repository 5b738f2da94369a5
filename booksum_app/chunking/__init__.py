"""Tokens, sentences and chunks (BooookScore §2, App. A)."""

from __future__ import annotations

from booksum_app.chunking.base import Chunk, Tokenizer
from booksum_app.chunking.chunker import MIN_CHUNK_SIZE, chunk_book, chunk_text
from booksum_app.chunking.sentences import (
    SPLITTER_NAMES,
    detect_lang,
    repeated_sentence_start,
    resolve_lang,
    sentence_spans,
    split_sentences,
)
from booksum_app.chunking.tokens import (
    ENCODING_NAMES,
    ESTIMATE_NAME,
    CallableTokenizer,
    EstimateTokenizer,
    ReversibleTokenizer,
    TiktokenTokenizer,
    count_many,
    get_tokenizer,
)

__all__ = [
    "ENCODING_NAMES",
    "ESTIMATE_NAME",
    "MIN_CHUNK_SIZE",
    "SPLITTER_NAMES",
    "CallableTokenizer",
    "Chunk",
    "EstimateTokenizer",
    "ReversibleTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "chunk_book",
    "chunk_text",
    "count_many",
    "detect_lang",
    "get_tokenizer",
    "repeated_sentence_start",
    "resolve_lang",
    "sentence_spans",
    "split_sentences",
]
