"""booksum: summarize book-length texts with LLMs and measure summary coherence (BooookScore).

The library API mirrors the CLI::

    import booksum_app
    book = booksum_app.open_book("book.epub")                       # booksum inspect
    record = booksum_app.summarize("book.epub", strategy="hier", model="openai:gpt-4o")
    result = booksum_app.score({"book": record.summary}, judge="openai:gpt-4o")

Names are imported on first use, so ``import booksum_app`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from booksum_app._version import __version__

# public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "open_book": ("booksum_app.books", "open_book"),
    "Book": ("booksum_app.books", "Book"),
    "Chapter": ("booksum_app.books", "Chapter"),
    "chunk_book": ("booksum_app.chunking", "chunk_book"),
    "get_tokenizer": ("booksum_app.chunking", "get_tokenizer"),
    "split_sentences": ("booksum_app.chunking", "split_sentences"),
    "get_model": ("booksum_app.llm.registry", "get_model"),
    "LLMSettings": ("booksum_app.llm.registry", "LLMSettings"),
    "inspect": ("booksum_app.runners.inspect", "inspect_book"),
    "summarize": ("booksum_app.runners.summarize", "summarize_book"),
    "RunConfig": ("booksum_app.runners.run_config", "RunConfig"),
    "run_summary": ("booksum_app.runners.summarize", "run_summary"),
    "score": ("booksum_app.runners.score", "score_texts"),
    "score_summaries": ("booksum_app.scoring.results", "score_summaries"),
    "score_summary": ("booksum_app.scoring.results", "score_summary"),
    "score_annotations": ("booksum_app.scoring.results", "score_annotations"),
    "SummaryRecord": ("booksum_app.strategies.record", "SummaryRecord"),
    "read_record": ("booksum_app.strategies.record", "read_record"),
    "STRATEGIES": ("booksum_app.strategies", "STRATEGIES"),
}

__all__ = [
    "STRATEGIES",
    "Book",
    "Chapter",
    "LLMSettings",
    "RunConfig",
    "SummaryRecord",
    "__version__",
    "chunk_book",
    "get_model",
    "get_tokenizer",
    "inspect",
    "open_book",
    "read_record",
    "run_summary",
    "score",
    "score_annotations",
    "score_summaries",
    "score_summary",
    "split_sentences",
    "summarize",
]

if TYPE_CHECKING:
    from booksum_app.books import Book, Chapter, open_book
    from booksum_app.chunking import chunk_book, get_tokenizer, split_sentences
    from booksum_app.llm.registry import LLMSettings, get_model
    from booksum_app.runners.inspect import inspect_book as inspect
    from booksum_app.runners.run_config import RunConfig
    from booksum_app.runners.score import score_texts as score
    from booksum_app.runners.summarize import run_summary
    from booksum_app.runners.summarize import summarize_book as summarize
    from booksum_app.scoring.results import score_annotations, score_summaries, score_summary
    from booksum_app.strategies import STRATEGIES
    from booksum_app.strategies.record import SummaryRecord, read_record


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'booksum_app' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
