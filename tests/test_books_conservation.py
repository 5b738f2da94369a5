"""Conservation: every counted character of a book's input is kept in a section or excluded with a
reason (booksum_app/books/accounting.py), for every reader, on generated books and the sample books.

The input is measured here without the reader: the decoded text of a .txt file, the ``<body>``
text of an HTML file or of each spine document of an epub (lxml's ``itertext``).
"""

from __future__ import annotations

import posixpath
import random
import zipfile
from pathlib import Path

import pytest
from book_fixtures import sample_book
from book_sites import ENCODINGS, NUMERALS, STYLES, site_copy
from conftest import BOOKS_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from booksum_app.books import open_book
from booksum_app.books.accounting import account
from booksum_app.books.encoding import decode_text
from booksum_app.books.markup import find_body, parse_html, parse_xhtml
from booksum_app.books.model import Book, counted_chars
from booksum_app.errors import BookFormatError

SAMPLE_EPUBS = sorted(p.stem for p in BOOKS_DIR.glob("*.epub")) if BOOKS_DIR.is_dir() else []


def body_chars(root: etree._Element) -> int:
    return counted_chars("".join(find_body(root).itertext()))


def txt_input_chars(path: Path) -> int:
    text, _ = decode_text(path.read_bytes(), name=path.name)
    return counted_chars(text)


def epub_input_chars(path: Path) -> int:
    """The counted characters of every (X)HTML spine document's body, read with zipfile and lxml."""
    with zipfile.ZipFile(path) as zf:
        container = etree.fromstring(zf.read("META-INF/container.xml"))
        opf_path = next(el.get("full-path") for el in container.iter() if el.get("full-path"))
        opf = etree.fromstring(zf.read(opf_path))
        base = posixpath.dirname(opf_path)
        manifest = {el.get("id"): el for el in opf.iter() if isinstance(el.tag, str) and el.tag.endswith("item")}
        total = 0
        for ref in opf.iter():
            if isinstance(ref.tag, str) and ref.tag.endswith("itemref"):
                item = manifest[ref.get("idref")]
                if "html" not in (item.get("media-type") or ""):
                    continue
                name = posixpath.normpath(posixpath.join(base, item.get("href")))
                total += body_chars(parse_xhtml(zf.read(name), name=name))
        return total


def assert_conserved(book: Book, input_chars: int) -> None:
    acc = account(book)
    assert acc.kept_chars + acc.excluded_chars == input_chars, (
        f"kept {acc.kept_chars} + excluded {acc.excluded_chars} != input {input_chars}: "
        + ", ".join(f"{s.kind} {s.chars}" for s in acc.excluded[:20])
    )
    assert all(s.reason for s in acc.excluded), "every excluded span says why"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), style=st.sampled_from(STYLES), numerals=st.sampled_from(NUMERALS),
       encoding=st.sampled_from(ENCODINGS))
def test_generated_site_copies_conserve_every_character(tmp_path: Path, seed: int, style: str, numerals: str,
                                                        encoding: str) -> None:
    copy = site_copy(random.Random(seed), style=style, numerals=numerals, encoding=encoding)
    path = tmp_path / f"copy-{seed}.txt"
    path.write_bytes(copy.data)
    assert_conserved(open_book(path), txt_input_chars(path))


def test_a_gutenberg_text_conserves_every_character(tmp_path: Path) -> None:
    lines = ["The Project Gutenberg eBook of Tests", "Title: Tests", "Author: Nobody", "",
             "*** START OF THE PROJECT GUTENBERG EBOOK TESTS ***", "", "CONTENTS", "", "Chapter I", "Chapter II", "",
             "CHAPTER I.", "The Start", "", "It was a dark night; 3 + 4 = 7 & so on.", "",
             "CHAPTER II.", "", "The end came.", "", "CHAPTER II.", "", "The end came.", "",
             "*** END OF THE PROJECT GUTENBERG EBOOK TESTS ***", "License text here."]
    path = tmp_path / "book.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    book = open_book(path)
    assert_conserved(book, txt_input_chars(path))
    kinds = {s.kind for s in account(book).excluded}
    assert {"boilerplate", "contents", "repeated chapter"} <= kinds


HTML_PIECES = [
    "<p>Plain text with 12 numbers &amp; symbols + more.</p>",
    "<p hidden>hidden words</p>",
    '<p style="display: none">styled away</p>',
    "<script>var code = 1;</script>",
    "<style>p { color: red }</style>",
    '<p>A note<a href="#n1" epub:type="noteref">[1]</a> marker.</p>',
    '<aside epub:type="footnote">The footnote body</aside>',
    "<noscript>no script text</noscript>",
    "<div><p>Nested <em>emphasis</em> and <b>bold</b></p>tail text</div>",
    "<pre>preformatted\n  lines</pre>",
    "<ul><li>one</li><li>two</li></ul>",
    "<p>Zero\u200bwidth and soft\u00adhyphen</p>",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chapters=st.lists(st.tuples(st.sampled_from(["Chapter 1", "Contents", "Preface", "Chapter 2", "Notes", ""]),
                                   st.lists(st.sampled_from(HTML_PIECES), min_size=0, max_size=6)),
                         min_size=1, max_size=5),
       opening=st.lists(st.sampled_from(HTML_PIECES), max_size=3), gutenberg=st.booleans())
def test_generated_html_conserves_every_character(tmp_path: Path, chapters: list[tuple[str, list[str]]],
                                                  opening: list[str], gutenberg: bool) -> None:
    body = "".join(opening)
    if gutenberg:
        body = '<section id="pg-header"><p>Project Gutenberg header words</p></section>' + body
    for title, pieces in chapters:
        body += (f"<h2>{title}</h2>" if title else "") + "".join(pieces)
    if not any(not p.startswith(("<p hidden", '<p style', "<script", "<style", "<noscript", "<aside"))
               for _, pieces in chapters for p in pieces) and not opening:
        body += "<p>Some text.</p>"
    html = (f'<html xmlns:epub="http://www.idpf.org/2007/ops"><head><title>T</title></head>'
            f"<body><h1>Book</h1>{body}</body></html>")
    path = tmp_path / "book.html"
    path.write_text(html, encoding="utf-8")
    try:
        book = open_book(path, include_front_matter=True)
    except BookFormatError:  # a book with no text at all is refused; that is not this test's matter
        return
    assert_conserved(book, body_chars(parse_html(path.read_text(encoding="utf-8"), name=path.name)))


MD_PIECES = [
    "Plain *emphasis* and **strong** text with `code` & 3 + 4 = 7.",
    "A [link](http://example.com/path) and an ![image alt](pic.png) here.",
    "A note marker[^1] in the text.",
    "[^1]: The footnote body, dropped.",
    "```\nfenced = code | kept\n```",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "> quoted words\n> more",
    "- item one\n- item two\n\n1. first\n2. second",
    "<script>var hidden = 1;</script>",
    "<!-- a comment -->",
    '<div hidden>hidden block text</div>',
    'Inline <span style="display:none">secret</span> shown.',
    "### A level three heading",
    "Text with <b>bold</b> html.",
    "Setext heading\n---",
]


def md_input_chars(text: str) -> int:
    """The counted characters markdown-it's own HTML rendering shows, plus the YAML front matter's."""
    from markdown_it import MarkdownIt

    front = 0
    lines = text.split("\n")
    if lines[0] == "---":
        end = lines.index("---", 1)
        front, text = counted_chars("\n".join(lines[: end + 1])), "\n".join(lines[end + 1:])
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    return front + body_chars(parse_html(f"<html><body>{html}</body></html>", name="md"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chapters=st.lists(st.tuples(st.sampled_from(["# Chapter 1", "## Chapter 2", "## Contents", "# Notes", ""]),
                                   st.lists(st.sampled_from(MD_PIECES), min_size=1, max_size=5)),
                         min_size=1, max_size=4),
       front=st.booleans())
def test_generated_markdown_conserves_every_character(tmp_path: Path, chapters: list[tuple[str, list[str]]],
                                                      front: bool) -> None:
    parts = ["---\ntitle: A Book\nauthor: Someone\n---"] if front else []
    for heading, pieces in chapters:
        parts += ([heading] if heading else []) + pieces
    text = "\n\n".join(parts) + "\n\nclosing words.\n"
    path = tmp_path / "book.md"
    path.write_text(text, encoding="utf-8")
    assert_conserved(open_book(path, include_front_matter=True), md_input_chars(text))


def pdf_input_chars(path: Path) -> int:
    """The counted characters of every page's text as pypdf extracts it (layout mode, as read)."""
    from pypdf import PdfReader

    return sum(counted_chars(page.extract_text(extraction_mode="layout") or "") for page in PdfReader(path).pages)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(outline=st.booleans(), numbers=st.sampled_from(["bare", "page of", "dashes", None]),
       at_top=st.booleans(), chapter_heads=st.booleans(), break_words=st.booleans(),
       new_page=st.booleans(), seed=st.integers(0, 10_000), contents=st.booleans())
def test_generated_pdfs_conserve_every_character(tmp_path: Path, outline: bool, numbers: str | None, at_top: bool,
                                                 chapter_heads: bool, break_words: bool, new_page: bool, seed: int,
                                                 contents: bool) -> None:
    from pdf_fixtures import PdfBook, sample_paragraphs, write_pdf

    source = [(f"Chapter {n}", sample_paragraphs(seed + n, count=3)) for n in range(1, 4)]
    if contents:
        source.insert(0, ("Contents", ["Chapter 1", "Chapter 2", "Chapter 3"]))
    path = write_pdf(tmp_path / "book.pdf", PdfBook(
        source, outline=outline, numbers=numbers, numbers_at_top=at_top, chapter_heads=chapter_heads,
        break_words=break_words, chapter_on_new_page=new_page, title="A Title"))
    assert_conserved(open_book(path), pdf_input_chars(path))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.tuples(st.sampled_from(["Chapter 1", "Contents", "Colophon", "Chapter Two", ""]),
                               st.sampled_from(["chapter", "colophon", ""]),
                               st.lists(st.sampled_from(HTML_PIECES), min_size=1, max_size=4)),
                     min_size=1, max_size=4),
       labels=st.booleans(), ncx=st.booleans())
def test_generated_epubs_conserve_every_character(tmp_path: Path, docs: list[tuple[str, str, list[str]]],
                                                  labels: bool, ncx: bool) -> None:
    from book_fixtures import epub_files, write_zip, xhtml

    members = []
    for i, (title, section_type, pieces) in enumerate(docs):
        stype = f' epub:type="{section_type}"' if section_type else ""
        heading = f"<h2>{title}</h2>" if title else ""
        members.append((f"d{i}.xhtml", xhtml(f"<section{stype}>{heading}{''.join(pieces)}</section>")))
    # the contents' labels name the sections (their headings then are not kept), or nothing does
    nav = [(name, f"Label {i}") for i, (name, _) in enumerate(members)] if labels else []
    path = write_zip(tmp_path / "book.epub", epub_files(members, nav=nav, ncx=ncx))
    try:
        book = open_book(path, include_front_matter=True)
    except BookFormatError:  # no text at all
        return
    assert_conserved(book, epub_input_chars(path))


@pytest.mark.parametrize("stem", SAMPLE_EPUBS)
def test_the_sample_epubs_conserve_every_character(stem: str) -> None:
    path = sample_book(stem)
    book = open_book(path)
    assert_conserved(book, epub_input_chars(path))


def test_shuihuzhuan_conserves_every_character() -> None:
    path = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"
    if not path.is_file():
        pytest.skip("水浒传 is not in the books of BOOKSUM_DATA_DIR")
    assert_conserved(open_book(path), txt_input_chars(path))
