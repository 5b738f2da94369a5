"""PDF books (issue 35): chapters from the outline or from headings, running heads, footers and page
numbers dropped, broken words joined, scanned and encrypted PDFs refused in one line; generated PDFs
(reportlab, every combination of page furniture) and two real ones of a public-domain book."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pdf_fixtures import PdfBook, sample_book, sample_paragraphs, write_pdf

from booksum_app.books import open_book
from booksum_app.books.pdf_text import is_page_number, page_blocks, strip_page_furniture
from booksum_app.cli import cli
from booksum_app.errors import BookFormatError, DRMProtectedError
from booksum_app.testing.fake_server import FakeServer

DATA = Path(__file__).parent / "data" / "pdf"


def _norm(text: str) -> str:
    return " ".join(text.split())


def _read(tmp_path: Path, book: PdfBook, name: str = "book.pdf") -> tuple[list[str], list[list[str]]]:
    read = open_book(write_pdf(tmp_path / name, book))
    assert read.format == "pdf"
    return [c.title for c in read.chapters], [[_norm(p) for p in c.paragraphs] for c in read.chapters]


# ---- generated PDFs ----------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# what hypothesis found, kept: a chapter's running head above its mid-page opening, three lines of
# furniture at the top, a title right under the last line of the chapter before, a word broken
@example(outline=True, numbers="bare", at_top=False, chapter_heads=True, break_words=False, new_page=False,
         seed=0, chapters=2)
@example(outline=False, numbers="bare", at_top=False, chapter_heads=True, break_words=False, new_page=False,
         seed=0, chapters=4)
@example(outline=True, numbers="bare", at_top=False, chapter_heads=False, break_words=False, new_page=False,
         seed=0, chapters=4)
@example(outline=True, numbers="bare", at_top=True, chapter_heads=True, break_words=False, new_page=True,
         seed=0, chapters=3)
@example(outline=False, numbers="bare", at_top=False, chapter_heads=False, break_words=True, new_page=False,
         seed=374, chapters=3)
@example(outline=True, numbers="bare", at_top=False, chapter_heads=False, break_words=False, new_page=False,
         seed=2670, chapters=4)
@example(outline=False, numbers="bare", at_top=False, chapter_heads=True, break_words=False, new_page=False,
         seed=154, chapters=2)  # a LaTeX-style head names the chapter opening at the page's foot
@example(outline=False, numbers="bare", at_top=False, chapter_heads=False, break_words=False, new_page=True,
         seed=326, chapters=4)  # a chapter's one-word last line at two pages' feet is no footer
@example(outline=False, numbers="bare", at_top=False, chapter_heads=False, break_words=False, new_page=False,
         seed=1522, chapters=2)  # a book of one page: its head is the document's title
@given(outline=st.booleans(), numbers=st.sampled_from(["bare", "page of", "dashes", None]),
       at_top=st.booleans(), chapter_heads=st.booleans(), break_words=st.booleans(),
       new_page=st.booleans(), seed=st.integers(0, 10_000), chapters=st.integers(2, 4))
def test_every_word_of_every_paragraph_comes_through_and_no_page_furniture(
    tmp_path: Path, outline: bool, numbers: str | None, at_top: bool, chapter_heads: bool, break_words: bool,
    new_page: bool, seed: int, chapters: int,
) -> None:
    source = [(f"Chapter {n}", sample_paragraphs(seed + n, count=4)) for n in range(1, chapters + 1)]
    book = PdfBook(source, outline=outline, numbers=numbers, numbers_at_top=at_top, chapter_heads=chapter_heads,
                   break_words=break_words, chapter_on_new_page=new_page)
    titles, paragraphs = _read(tmp_path, book)
    assert titles == [t for t, _ in source]
    assert paragraphs == [[_norm(p) for p in ps] for _, ps in source]


def test_the_outline_names_the_chapters_and_the_document_information_the_book(tmp_path: Path) -> None:
    book = PdfBook([("A Beginning", sample_paragraphs(1)), ("The Middle Part", sample_paragraphs(2)),
                    ("Contents", ["One. Two. Three."]), ("An Ending", sample_paragraphs(3))],
                   title="A Real Title", author="Ann Author and Bo Author")
    read = open_book(write_pdf(tmp_path / "b.pdf", book))
    assert [c.title for c in read.chapters] == ["A Beginning", "The Middle Part", "Contents", "An Ending"]
    assert [c.narrative for c in read.chapters] == [True, True, False, True]
    assert read.title == "A Real Title" and read.authors == ("Ann Author", "Bo Author")
    assert read.metadata["chapters_from"] == "outline"
    assert read.chapters[1].source == "page 2"


def test_without_an_outline_headings_open_chapters(tmp_path: Path) -> None:
    read = open_book(write_pdf(tmp_path / "b.pdf", sample_book(outline=False, chapter_on_new_page=False)))
    assert [c.title for c in read.chapters] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    assert read.metadata["chapters_from"] == "headings"


@pytest.mark.parametrize("outline", [True, False])
def test_a_contents_page_opens_no_chapter(tmp_path: Path, outline: bool) -> None:
    chapters = [(f"Chapter {n}", sample_paragraphs(n, count=3)) for n in range(1, 4)]
    book = PdfBook([("Contents", ["Chapter 1", "Chapter 2", "Chapter 3"]), *chapters], outline=outline,
                   chapter_heads=True)
    read = open_book(write_pdf(tmp_path / "b.pdf", book))
    narrative = [(c.title, [_norm(p) for p in c.paragraphs]) for c in read.chapters if c.narrative]
    assert narrative == [(t, [_norm(p) for p in ps]) for t, ps in chapters]


@pytest.mark.parametrize("line, number", [
    ("12", True), ("- 12 -", True), ("[7]", True), ("xii", True), ("Page 3 of 40", True), ("page 3", True),
    ("3 / 40", True), ("XII", False), ("I", False), ("Chapter 12", False), ("12 angry men", False),
])
def test_page_numbers_are_told_from_headings(line: str, number: bool) -> None:
    assert is_page_number(line) is number


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30),
                         max_size=12), max_size=6))
def test_page_text_functions_take_any_lines(pages: list[list[str]]) -> None:
    """Whatever a PDF's pages hold, furniture stripping and paragraphs never raise and keep every
    line that is not at a page's edge."""
    stripped = strip_page_furniture(pages)
    assert [len(p) for p in stripped] == [len(p) for p in pages]
    page_blocks(stripped)


def test_a_broken_word_is_joined_and_a_compound_the_book_writes_keeps_its_hyphen() -> None:
    pages = [["   The dinner-table was laid for an extra-", "ordinary feast at the dinner-", "table."]]
    assert page_blocks(pages) == [["The dinner-table was laid for an extraordinary feast at the dinner-table."]]


# ---- refused in one line -------------------------------------------------------------------


def test_a_scanned_pdf_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scan.pdf", PdfBook([], outline=False, head=None, numbers=None, scanned_pages=4))
    with pytest.raises(BookFormatError, match="scanned PDF") as caught:
        open_book(path)
    assert "\n" not in str(caught.value)
    result = CliRunner().invoke(cli, ["inspect", str(path), "--model", "openai:gpt-4o-mini"])
    assert result.exit_code == 3 and "scanned PDF" in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1


def test_a_book_with_a_few_plates_is_not_a_scan(tmp_path: Path) -> None:
    read = open_book(write_pdf(tmp_path / "plates.pdf", sample_book(scanned_pages=1)))
    assert len(read.chapters) == 3


def test_an_encrypted_pdf_is_refused_as_drm(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "locked.pdf", sample_book(encrypt="secret"))
    with pytest.raises(DRMProtectedError, match="encrypted"):
        open_book(path)
    result = CliRunner().invoke(cli, ["inspect", str(path), "--model", "openai:gpt-4o-mini"])
    assert result.exit_code == 3 and "Traceback" not in result.output


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(8, 4000), junk=st.binary(max_size=200))
@example(cut=3466, junk=b"\x00")  # found by hypothesis: "/SCII85Decode", a filter pypdf does not implement
def test_a_damaged_pdf_is_one_line_never_a_traceback(tmp_path: Path, cut: int, junk: bytes) -> None:
    whole = (tmp_path / "whole.pdf")
    if not whole.exists():
        write_pdf(whole, sample_book())
    data = whole.read_bytes()
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(data[:cut] + junk + data[cut + len(junk):] if junk else data[:cut])
    try:
        open_book(broken)
    except BookFormatError as exc:
        assert "\n" not in str(exc)


# ---- real PDFs of a public-domain book (tests/data/pdf/README.md) ----------------------------


def _epub_chapters() -> list[tuple[str, str]]:
    from conftest import book_path

    epub = open_book(book_path("time-machine"))
    return [(c.title, c.text) for c in epub.chapters if c.narrative]


def _agreement(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False).ratio()


def _without_outline(source: Path, target: Path) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(source))
    writer._root_object.pop("/Outlines", None)  # the same pages, no bookmarks
    with target.open("wb") as fh:
        writer.write(fh)
    return target


@pytest.mark.parametrize("name, outline", [("time-machine-groff.pdf", True), ("time-machine-groff.pdf", False),
                                           ("time-machine-qt.pdf", False)])
def test_real_pdfs_give_the_epubs_chapters_paragraphs_and_words(tmp_path: Path, name: str, outline: bool) -> None:
    path = DATA / name if outline else _without_outline(DATA / name, tmp_path / name)
    read = open_book(path)
    assert read.metadata["chapters_from"] == ("outline" if outline else "headings")
    chapters = [c for c in read.chapters if c.narrative]
    epub = _epub_chapters()
    assert len(chapters) == len(epub) == 13
    for chapter, (title, text) in zip(chapters, epub, strict=True):
        assert chapter.title.split()[-1] == title.split()[-1]  # "Chapter IV" / "IV", "Epilogue"
        assert len(chapter.paragraphs) == text.count("\n\n") + 1, title
        # groff's curly quotes make pypdf's layout extraction run some words together (docs/books.md)
        assert _agreement(chapter.text, text) >= (0.95 if "groff" in name else 0.998), title
        assert chapter.text.count("The Time Machine") == text.count("The Time Machine"), "the running head is dropped"
    assert not any(line.strip().isdigit() for c in chapters for p in c.paragraphs for line in p.split("\n"))


# ---- the commands ----------------------------------------------------------------------------


@pytest.mark.parametrize("outline", [True, False])
def test_summarize_and_inspect_read_a_pdf_with_and_without_an_outline(
    tmp_path: Path, outline: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    path = write_pdf(tmp_path / "book.pdf", sample_book(outline=outline))
    shown = CliRunner().invoke(cli, ["inspect", str(path), "--model", "openai:gpt-4o-mini"])
    assert shown.exit_code == 0, shown.output
    assert "Chapter 3" in shown.output
    with FakeServer() as server:
        result = CliRunner().invoke(cli, ["summarize", str(path), "--model", "openai:fake", "--base-url",
                                          server.openai_base_url, "--strategy", "direct", "-o",
                                          str(tmp_path / "out")])
        assert server.call_count >= 1
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert record["book"]["title"] == "The Test Book" and (tmp_path / "out.md").read_text().strip()
