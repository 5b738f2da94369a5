"""PDF reading is bounded like every other input, and a long read says how far it is.

A small PDF whose pages all draw one compressed content stream expands a thousandfold (2,000
pages of 320 KB: 180,000 characters a page, 0.6 s a page in pypdf, twenty minutes in all). It
is refused in one line within seconds, before any page's text is extracted; a page or a book
past its text bound is refused on the page that passes it; a long read reports every page.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pdf_fixtures import amplifying_pdf, sample_book, write_pdf

from booksum_app.books import pdf
from booksum_app.books.pdf import read_pdf
from booksum_app.books.text import _CJKISH, join_lines
from booksum_app.cli import cli
from booksum_app.errors import BookFormatError

WORD_CHARS = len("amplified")


def test_the_reported_amplifying_pdf_is_refused_in_one_line_within_seconds(tmp_path: Path) -> None:
    path = tmp_path / "amplified.pdf"
    path.write_bytes(amplifying_pdf(2000, 1500))  # 320 KB; 162,000 characters a page
    start = time.monotonic()
    with pytest.raises(BookFormatError) as refused:
        read_pdf(path, on_page=lambda *_: pytest.fail("no page is read"))
    assert time.monotonic() - start < 30, "refused before the pages are extracted"
    message = str(refused.value)
    assert "amplified.pdf" in message and "refusing" in message and "\n" not in message
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 3 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "content decodes to over" in result.stderr


def test_a_page_past_its_text_bound_is_refused_naming_the_page(tmp_path: Path) -> None:
    path = tmp_path / "dense.pdf"
    path.write_bytes(amplifying_pdf(2, 500, shared=False))  # 54,000 characters a page
    with pytest.raises(BookFormatError, match=r"page 1 holds 54,000 characters of text, more than a page can"):
        read_pdf(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pages=st.integers(1, 12), lines=st.integers(1, 40), words=st.integers(1, 8), shared=st.booleans(),
       page_chars=st.integers(50, 20_000), text_per_byte=st.integers(0, 4), text_floor=st.integers(0, 20_000),
       content_per_byte=st.integers(0, 8), content_floor=st.integers(0, 40_000))
def test_refused_exactly_when_a_bound_is_passed(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, pages: int, lines: int, words: int,
    shared: bool, page_chars: int, text_per_byte: int, text_floor: int, content_per_byte: int, content_floor: int,
) -> None:
    """The bounds scaled down to small generated PDFs: a PDF is read whole when its content and text
    fit (relative to its size), refused in one line naming the bound when either does not."""
    for name, value in (("MAX_PAGE_CHARS", page_chars), ("TEXT_CHARS_PER_BYTE", text_per_byte),
                        ("MIN_TEXT_CHARS", text_floor), ("CONTENT_BYTES_PER_BYTE", content_per_byte),
                        ("MIN_CONTENT_BYTES", content_floor)):
        monkeypatch.setattr(pdf, name, value)
    data = amplifying_pdf(pages, lines, words=words, shared=shared)
    path = tmp_path_factory.mktemp("pdf") / "book.pdf"
    path.write_bytes(data)
    per_page_chars = lines * words * WORD_CHARS
    # the content stream as written: "BT ... TL", one "(LINE) '" a line, "ET", joined by newlines
    per_page_content = 29 + lines * (len(" ".join(["amplified"] * words)) + 5)
    content_over = pages * per_page_content > pdf.content_bound(len(data))
    text_over = per_page_chars > page_chars or pages * per_page_chars > pdf.text_bound(len(data))
    seen: list[tuple[int, int]] = []
    try:
        read_pdf(path, on_page=lambda _, done, total: seen.append((done, total)))
    except BookFormatError as exc:
        message = str(exc)
        event(next((kind for kind in ("content decodes", "holds", "text passes") if kind in message), "other"))
        assert "\n" not in message and "book.pdf" in message
        if "content decodes" in message:
            assert content_over and not seen
        elif "scanned" in message or "no text" in message or "narrative" in message:
            assert not content_over and not text_over  # fits, but too little text to be a book
        else:
            assert text_over and not content_over, message
        return
    event("read whole")
    assert not content_over and not text_over
    assert seen == [(n, pages) for n in range(1, pages + 1)], "every page reported, in order"


def test_a_long_read_reports_every_page_and_the_cli_prints_a_heartbeat(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_pdf(tmp_path / "long.pdf", sample_book(6))
    seen: list[int] = []
    book = read_pdf(path, on_page=lambda name, done, total: seen.append(done))
    assert seen == list(range(1, int(book.metadata["pages"]) + 1))
    monkeypatch.setenv("BOOKSUM_HEARTBEAT_S", "0.1")
    slow = pdf._page_text

    def slowly(reader: object, index: int, name: str) -> str:
        time.sleep(0.06)
        return slow(reader, index, name)

    monkeypatch.setattr(pdf, "_page_text", slowly)
    result = CliRunner().invoke(cli, ["inspect", str(path), "-m", "openai:gpt-4o"])
    assert result.exit_code == 0, result.output
    beats = [line for line in result.stderr.splitlines() if "reading long.pdf: page" in line]
    assert beats and all(" of " in line for line in beats), result.stderr


def _join_by_concatenation(lines: list[str]) -> str:
    """The rule of ``join_lines`` written as the obvious loop (quadratic on a page-long paragraph)."""
    out = lines[0]
    for line in lines[1:]:
        out += line if out and line and _CJKISH.match(out[-1]) and _CJKISH.match(line[0]) else " " + line
    return out


@given(lines=st.lists(st.text(st.sampled_from("ab 中文、。 "), max_size=4), min_size=1, max_size=30))
def test_joining_a_long_paragraph_keeps_the_rule(lines: list[str]) -> None:
    """A PDF of thousands of pages without a blank line is one paragraph of tens of thousands of
    lines: they are joined once, at the end, by the same rule as line by line."""
    assert join_lines(lines) == _join_by_concatenation(lines)
