"""The top-level library API: pinned names, lazily imported, mirroring the CLI."""

from __future__ import annotations

import subprocess
import sys

import booksum_app
from booksum_app.testing.fake_backend import FakeBackend

PUBLIC = {
    "Book", "Chapter", "LLMSettings", "STRATEGIES", "SummaryRecord", "__version__", "chunk_book",
    "get_model", "get_tokenizer", "inspect", "open_book", "read_record", "score",
    "score_annotations", "score_summary", "split_sentences", "summarize",
}


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert set(booksum_app.__all__) == PUBLIC == set(booksum_app._EXPORTS) | {"__version__"}
    for name in booksum_app.__all__:
        assert getattr(booksum_app, name) is not None


def test_importing_the_package_does_not_import_the_heavy_layers() -> None:
    code = "import sys, booksum_app.errors; print(sorted(m for m in sys.modules if m.startswith(('openai', 'anthropic', 'nltk', 'booksum_app.runners'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_summarize_then_score_through_the_library(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from booksum_app.llm.calls import Client

    text = tmp_path / "story.txt"
    text.write_text(
        "Chapter 1\n\n" + " ".join(f"Anna walked to the mill on day {i}. She met Tom there." for i in range(60))
        + "\n\nChapter 2\n\n" + " ".join(f"Tom sold the mill in year {i}. Anna left town." for i in range(60)),
        encoding="utf-8",
    )
    with Client(FakeBackend()) as model:
        record = booksum_app.summarize(text, strategy="hier", model=model, chunk_size=256)
        assert record.summary.strip() and record.raw_summary.strip()
        result = booksum_app.score({"story": record.summary}, judge=model)
    assert 0.0 <= result.system.score <= 1.0
    assert "booookscore|" in result.signature
