"""Book text lost without a word (issue 32): HTML, XHTML (epub) and Markdown nested to any depth the
parser accepts are read whole, deeper ones refused in one line, and hidden content (``hidden``,
``display:none``, ``visibility:hidden``, ``<noscript>``) never reaches the book. Generated structures:
every visible word of the input is in the book, or the one-line refusal says why not."""

from __future__ import annotations

from pathlib import Path

import pytest
from book_fixtures import chapter, epub_files, write_zip, xhtml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from booksum_app.books import open_book
from booksum_app.books.markdown import MAX_NESTING
from booksum_app.books.markup import MAX_DEPTH
from booksum_app.errors import BookFormatError

# elements that nest in any order: with li, td or table the HTML parser closes elements itself (an <li> opened
# in an <li hidden> is its sibling, shown by a browser too), so what is hidden is no longer what the source nests
TAGS = ("div", "section", "blockquote", "span", "b", "i", "em", "article", "aside")
HIDING = (' hidden=""', ' style="display:none"', ' style="color: red; display : none"',
          ' style="visibility:hidden"', ' style="VISIBILITY: collapse"')


@st.composite
def nested_html(draw: st.DrawFn) -> tuple[str, list[str], list[str], int]:
    """(body HTML, visible words, hidden words, deepest nesting) with words at random depths."""
    depth = draw(st.one_of(st.integers(1, 300), st.integers(1900, 2300)))
    tags = [draw(st.sampled_from(TAGS)) for _ in range(min(depth, 40))]
    at = sorted(draw(st.lists(st.integers(0, depth - 1), min_size=1, max_size=6)))
    hide = draw(st.lists(st.integers(0, depth - 1), max_size=2))
    visible: list[str] = []
    hidden: list[str] = []
    opened: list[str] = []
    parts: list[str] = []
    hidden_from: int | None = None
    for level in range(depth):
        tag = tags[level % len(tags)]
        attrs = draw(st.sampled_from(HIDING)) if level in hide else ""
        if attrs and hidden_from is None:
            hidden_from = level
        parts.append(f"<{tag}{attrs}>")
        opened.append(tag)
        for n, where in enumerate(at):
            if where == level:
                word = f"w{level}x{n}"
                (hidden if hidden_from is not None else visible).append(word)
                parts.append(f" {word} ")
    parts.extend(f"</{tag}>" for tag in reversed(opened))
    return "".join(parts), visible, hidden, depth


def _html_book(body: str) -> str:
    return (f"<html><head><title>T</title></head><body><h1>One</h1><p>opening words here</p>{body}"
            "<noscript>noscriptword</noscript><h1>Two</h1><p>laterword stays</p></body></html>")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nested_html())
@example(("<div>" * 255 + " deep " + "</div>" * 255, ["deep"], [], 255))
@example(("<div>" * 2100 + " deep " + "</div>" * 2100, ["deep"], [], 2100))
def test_html_every_visible_word_reaches_the_book_or_one_line_says_why(
    tmp_path: Path, case: tuple[str, list[str], list[str], int]
) -> None:
    body, visible, hidden, depth = case
    path = tmp_path / "book.html"
    path.write_text(_html_book(body), encoding="utf-8")
    try:
        book = open_book(path)
    except BookFormatError as exc:
        assert depth + 3 > MAX_DEPTH, f"refused at depth {depth}"  # html, body and the parser's own
        assert "nested more than" in str(exc) and "\n" not in str(exc)
        return
    text = book.text(include_front_matter=True)
    for word in [*visible, "laterword"]:
        assert f"{word}" in text.split() or word in text, f"{word} lost at depth {depth}"
    for word in [*hidden, "noscriptword"]:
        assert word not in text, f"hidden {word} reached the book"
    assert [c.title for c in book.chapters][-1] == "Two"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.one_of(st.integers(250, 400), st.integers(1900, 2200)))
def test_an_epub_chapter_nested_deep_is_read_whole_or_refused(tmp_path: Path, depth: int) -> None:
    body = "<section epub:type=\"chapter\"><h2>One</h2>" + "<div>" * depth + "<p>deepword</p>" + "</div>" * depth
    body += "<p>afterword</p></section>"
    docs = [("ch1.xhtml", xhtml(body, title="One", body_type="bodymatter")),
            ("ch2.xhtml", chapter("Two", "laterword stays."))]
    path = write_zip(tmp_path / "b.epub", epub_files(docs))
    try:
        book = open_book(path)
    except BookFormatError as exc:
        assert depth + 6 > MAX_DEPTH and "nested more than" in str(exc)
        return
    text = book.text()
    assert "deepword" in text and "afterword" in text and "laterword" in text


def test_a_deep_navigation_list_is_walked_without_recursion(tmp_path: Path) -> None:
    depth = 1000  # 2,000 elements: under the parser's limit, past Python's recursion limit
    nested = "".join(f'<ol><li><a href="ch1.xhtml">Level {i}</a>' for i in range(depth))
    nested += "</li></ol>" * depth
    nav = xhtml(f'<nav epub:type="toc">{nested}</nav>', title="Contents")
    docs = [("ch1.xhtml", chapter("One", "Mara bakes bread.")), ("ch2.xhtml", chapter("Two", "Teo sells it."))]
    files = epub_files(docs)
    files["EPUB/nav.xhtml" if "EPUB/nav.xhtml" in files else next(k for k in files if k.endswith("nav.xhtml"))] = (
        nav.encode())
    book = open_book(write_zip(tmp_path / "b.epub", files))
    assert "Teo sells it." in book.text()


@st.composite
def nested_markdown(draw: st.DrawFn) -> tuple[str, list[str], int]:
    """(Markdown, words, parser levels used) of blockquotes and lists nested at random."""
    depth = draw(st.integers(1, 130))
    kinds = draw(st.lists(st.sampled_from(["quote", "list"]), min_size=depth, max_size=depth))
    lines: list[str] = []
    words: list[str] = []
    prefix = ""
    levels = 0
    for n, kind in enumerate(kinds):
        word = f"w{n}"
        words.append(word)
        if kind == "quote":
            prefix += "> "
            levels += 1
            lines.append(f"{prefix}{word} text")
            lines.append(prefix.rstrip())
        else:
            lines.append(f"{prefix}- {word} item")
            prefix += "  "
            levels += 2
    return "\n".join(lines), words, levels


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nested_markdown())
@example(("> " * 20 + "deep quote", ["deep"], 20))
@example(("".join("  " * i + f"- item{i}\n" for i in range(10)), [f"item{i}" for i in range(10)], 20))
@example(("> " * 300 + "deep quote", ["deep"], 300))
def test_markdown_every_word_of_nested_quotes_and_lists_reaches_the_book_or_one_line(
    tmp_path: Path, case: tuple[str, list[str], int]
) -> None:
    text, words, levels = case
    path = tmp_path / "book.md"
    path.write_text(f"# One\n\nopening words\n\n{text}\n\n# Two\n\nlaterword stays\n", encoding="utf-8")
    try:
        book = open_book(path)
    except BookFormatError as exc:
        assert levels + 3 >= MAX_NESTING - 1, f"refused at {levels} levels: {exc}"
        assert "nested past" in str(exc) and "\n" not in str(exc)
        return
    read = book.text(include_front_matter=True)
    for word in [*words, "laterword"]:
        assert word in read, f"{word} lost ({levels} levels)"


@pytest.mark.parametrize("markup, word", [
    ("text <span hidden>secretword</span> more", "secretword"),
    ('text <span style="display:none">secretword <b>bold</b> rest</span> more', "secretword"),
    ("<div hidden>\nsecretword\n</div>", "secretword"),
    ('<div>\nshown <p style="visibility: hidden">secretword</p>\n</div>', "secretword"),
    ("<noscript>secretword</noscript>", "secretword"),
])
def test_markdown_hidden_html_stays_out_and_the_rest_stays_in(tmp_path: Path, markup: str, word: str) -> None:
    path = tmp_path / "book.md"
    path.write_text(f"# One\n\nfirst words\n\n{markup}\n\nlast words\n", encoding="utf-8")
    text = open_book(path).text(include_front_matter=True)
    assert word not in text and "first words" in text and "last words" in text
    assert "bold" not in text or "display" not in markup


def test_aria_hidden_text_is_kept_it_is_visible(tmp_path: Path) -> None:
    path = tmp_path / "book.html"
    path.write_text('<html><body><p><span aria-hidden="true">O</span>nce upon a time.</p></body></html>')
    assert "Once upon a time." in open_book(path).text(include_front_matter=True)


def test_an_li_opened_in_a_hidden_li_is_shown_as_a_browser_shows_it(tmp_path: Path) -> None:
    """HTML's implied end tags: ``<li hidden><li>x`` makes the second item a sibling, visible."""
    path = tmp_path / "book.html"
    path.write_text(_html_book("<ul><li hidden>gone<li>shown</ul>"), encoding="utf-8")
    text = open_book(path).text(include_front_matter=True)
    assert "shown" in text and "gone" not in text
