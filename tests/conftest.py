"""Shared test setup: caches in a temp dir, no real keys, books from ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BOOKS_DIR = SHARED / "books"
RELEASE_DIR = SHARED / "data" / "booookscore-release"


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point every cache at a temp dir and hide real keys and user config, so tests never pay or leak."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("BOOKSUM_CONFIG", str(home / "no-config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(home / "tiktoken"))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "BOOKSUM_MODEL", "BOOKSUM_JUDGE"):
        monkeypatch.delenv(var, raising=False)


def book_path(stem: str) -> Path:
    """Path of a sample book in ../shared/books by a part of its file name."""
    matches = sorted(BOOKS_DIR.glob(f"*{stem}*.epub"))
    if not matches:
        pytest.skip(f"sample book {stem!r} not found in {BOOKS_DIR}")
    return matches[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Keep the run's last line pytest's summary: llama_cpp opens two /dev/null files at import
    and never closes them, which Python reports as unclosed files after pytest's summary."""
    import sys

    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()
