"""Shared test setup: caches in a temp dir, no real keys; sample books and the BooookScore release
where ``booksum data`` puts them.

Data: ``BOOKSUM_DATA_DIR`` (a local copy laid out as ``books/`` and ``data/booookscore-release/``;
CI's .ci/run sets it to the copy beside its clone), else the user cache after ``booksum data fetch
sample-books`` / ``booksum data fetch booookscore-release``; tests that need missing data skip and
say which command fetches it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# CI runs each generated test on the examples the code's own seed gives: a correct build never
# fails on a rare example found by chance there. Locally each run explores new examples.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

from booksum_app.runners.data import ENV_DATA_DIR, data_path, data_root

REPO = Path(__file__).resolve().parents[1]
# resolved from the real environment at import, before the fixture below moves the cache dir
# (which it then pins with BOOKSUM_DATA_DIR, so `booksum data` and later imports agree)
DATA_ROOT = data_root(os.environ)
BOOKS_DIR = data_path("sample-books", os.environ)
RELEASE_DIR = data_path("booookscore-release", os.environ)
FETCH_HINT = {
    "sample-books": f"run `booksum data fetch sample-books` or set {ENV_DATA_DIR}",
    "booookscore-release": f"run `booksum data fetch booookscore-release` or set {ENV_DATA_DIR}",
}


def release_file(name: str) -> Path:
    """A file of the BooookScore release (``summaries/...``, ``annotations/...``), or skip saying why."""
    path = RELEASE_DIR / name
    if not path.is_file():
        pytest.skip(f"BooookScore release file {name} not in {RELEASE_DIR}: {FETCH_HINT['booookscore-release']}")
    return path


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point every cache at a temp dir and hide real keys and user config, so tests never pay or leak."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("BOOKSUM_CONFIG", str(home / "no-config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(home / "tiktoken"))
    monkeypatch.setenv(ENV_DATA_DIR, str(DATA_ROOT))  # the data stay where they were, not in the temp cache
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "BOOKSUM_MODEL", "BOOKSUM_JUDGE"):
        monkeypatch.delenv(var, raising=False)


def book_path(stem: str) -> Path:
    """Path of a sample book (``booksum data fetch sample-books``) by a part of its file name."""
    matches = sorted(BOOKS_DIR.glob(f"*{stem}*.epub"))
    if not matches:
        pytest.skip(f"sample book {stem!r} not in {BOOKS_DIR}: {FETCH_HINT['sample-books']}")
    return matches[0]


# a skip for want of llama.cpp, its weights or the 'local' extra: the test needs the embedded model
_NEEDS_LOCAL_MODEL = re.compile(r"llama[-_ ]cpp|llm[-_]smollm2|'local' extra|booksum\[local\]|embedded model",
                                re.IGNORECASE)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that skips for want of the embedded model must carry the local_model marker: the
    install without the 'local' extra runs every other test (scripts/test), and an unmarked one
    would be skipped there and deselected in the other install, so it would never run."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.skipped or item.get_closest_marker("local_model") is not None:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if _NEEDS_LOCAL_MODEL.search(reason):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} skips for want of the embedded model ({reason}) but is not marked "
                           "@pytest.mark.local_model, so no install of scripts/test would run it")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Keep the run's last line pytest's summary: llama_cpp opens two /dev/null files at import
    and never closes them, which Python reports as unclosed files after pytest's summary."""
    import sys

    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()
