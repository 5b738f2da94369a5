"""HTML and Markdown readers, and format detection in open_book."""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.books import open_book
from booksum_app.books.markdown import strip_inline
from booksum_app.errors import BookFormatError

HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The Tale</title>
<meta name="author" content="Some Writer"></head>
<body>
<section id="pg-header"><p>The Project Gutenberg eBook of The Tale</p></section>
<h1>The Tale</h1>
<p>by Some Writer</p>
<h2>Contents</h2>
<ul><li>Chapter I</li><li>Chapter II</li></ul>
<h2>Chapter I</h2><h3>The Start</h3>
<p>It began<a href="#fn1" class="noteref">[1]</a> on a Monday&nbsp;morning,
   when   nobody was awake.</p>
<p>Line one<br/>line two</p>
<h2>Chapter II</h2>
<p>It ended on a Sunday.</p>
<script>var x = "not text";</script>
<section id="pg-footer"><p>License text.</p></section>
</body></html>
"""


def test_html_chapters_at_h2_with_single_h1_as_title(tmp_path: Path) -> None:
    path = tmp_path / "tale.html"
    path.write_text(HTML, encoding="utf-8")
    book = open_book(path)
    assert (book.title, book.authors, book.language, book.format) == (
        "The Tale",
        ("Some Writer",),
        "en",
        "html",
    )
    assert [(c.title, c.excluded_reason) for c in book.chapters] == [
        ("Opening", "front matter before the first chapter heading"),
        ("Contents", "title: Contents"),
        ("Chapter I: The Start", None),
        ("Chapter II", None),
    ]
    first = book.selected_chapters()[0]
    assert first.paragraphs == (
        "It began on a Monday morning, when nobody was awake.",
        "Line one\nline two",
    )
    assert "Gutenberg" not in book.text(include_front_matter=True)
    assert "not text" not in book.text(include_front_matter=True)


def test_html_without_charset_is_decoded_like_text(tmp_path: Path) -> None:
    path = tmp_path / "zh.htm"
    body = "<html><body><h1>第一章</h1><p>那是一个寒冷的早晨。</p><h1>第二章</h1><p>结局。</p></body></html>"
    path.write_bytes(body.encode("gb18030"))
    book = open_book(path)
    assert book.language == "zh"
    assert [c.title for c in book.chapters] == ["第一章", "第二章"]
    assert book.chapters[0].paragraphs == ("那是一个寒冷的早晨。",)


def test_html_entity_declaration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.html"
    path.write_text(
        '<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><html><body>'
        "<p>&xxe;</p></body></html>",
        encoding="utf-8",
    )
    with pytest.raises(BookFormatError, match="declares XML entities"):
        open_book(path)


MARKDOWN = """---
title: "A Markdown Tale"
author: Some Writer
---

# A Markdown Tale

## Contents

- [Chapter 1](#chapter-1)

## Chapter 1

It was a **dark** and _stormy_ night, see [the map](map.png) and `code`.
The snake_case_name stays.[^1]

![a picture](pic.png)

> A quoted line.

***

After the break.

### A subheading

More.

Chapter 2
---------

The end.

[^1]: A footnote.
"""


def test_markdown_chapters_and_inline_markup(tmp_path: Path) -> None:
    path = tmp_path / "tale.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    book = open_book(path)
    assert (book.title, book.authors, book.format) == ("A Markdown Tale", ("Some Writer",), "md")
    assert [(c.title, c.excluded_reason) for c in book.chapters] == [
        ("Contents", "title: Contents"),
        ("Chapter 1", None),
        ("Chapter 2", None),
    ]
    assert book.chapters[1].paragraphs == (
        "It was a dark and stormy night, see the map and code. The snake_case_name stays.",
        "A quoted line.",
        "After the break.",
        "A subheading",
        "More.",
    )
    assert book.chapters[2].paragraphs == ("The end.",)


@pytest.mark.parametrize(
    ("marked", "plain"),
    [
        ("**bold** and *italic*", "bold and italic"),
        ("__bold__ and _italic_", "bold and italic"),
        ("a [link](http://x.org) here", "a link here"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("file_name_here", "file_name_here"),
        ("~~gone~~ kept", "gone kept"),
        (r"\*literal\*", "*literal*"),
        ("see [the map](https://en.wikipedia.org/wiki/Lisk_(town)) now", "see the map now"),
        ("an ![image](a.png) gone", "an  gone"),
        ("`code # here` stays", "code # here stays"),
    ],
)
def test_strip_inline(marked: str, plain: str) -> None:
    assert strip_inline(marked) == plain


def test_markdown_script_and_style_bodies_are_not_story_text(tmp_path: Path) -> None:
    path = tmp_path / "tale.md"
    path.write_text(
        "# Chapter 1\n\nIt began on a Monday.\n\n"
        '<script type="text/javascript">\nvar secret = "not text";\n\nalert(1);\n</script>\n\n'
        "<STYLE>p { color: red; }</STYLE> After the style.\n\n"
        "<!-- a comment\n\nover lines -->\n\n"
        "```html\n<script>shown code</script>\n```\n\n"
        "# Chapter 2\n\nIt ended on a Sunday.\n",
        encoding="utf-8",
    )
    book = open_book(path)
    text = book.text()
    for code in ("secret", "alert", "color", "comment", "over lines"):
        assert code not in text
    assert "After the style." in text
    assert "shown code" in text  # a fenced example is the book's text, kept
    assert [c.title for c in book.chapters] == ["Chapter 1", "Chapter 2"]
    assert book.chapters[1].source == "line 21"  # line numbers survive the removal


def test_markdown_without_headings_is_one_chapter(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("Just *one* paragraph\nwrapped.\n", encoding="utf-8")
    (only,) = open_book(path).chapters
    assert (only.title, only.paragraphs) == ("note", ("Just one paragraph wrapped.",))


# ---- format detection ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [
        ("book.pdf", b"%PDF-1.7\n...", "not a readable PDF"),
        ("book.docx", b"PK\x03\x04rest", "Word files are not supported"),
        ("book.xyz", b"some words", "unknown book format '.xyz'"),
        ("book", b"some words", "unknown book format 'no extension'"),
        ("empty.txt", b"", "the file is empty"),
    ],
)
def test_unsupported_inputs_are_refused_in_one_line(
    tmp_path: Path, name: str, data: bytes, fragment: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BookFormatError) as info:
        open_book(path)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_missing_path_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BookFormatError, match="no such file"):
        open_book(tmp_path / "nope.epub")
    with pytest.raises(BookFormatError, match="not a file"):
        open_book(tmp_path)


def test_epub_is_sniffed_whatever_the_extension(tmp_path: Path) -> None:
    from book_fixtures import simple_epub

    path = simple_epub(tmp_path / "book.bin")
    assert open_book(path).format == "epub"


def test_html_is_sniffed_without_extension(tmp_path: Path) -> None:
    path = tmp_path / "page"
    path.write_text("<!DOCTYPE html><html><body><p>Hello there.</p></body></html>")
    assert open_book(path).format == "html"


def test_markdown_code_is_never_a_heading_and_links_with_parentheses_survive(tmp_path: Path) -> None:
    path = tmp_path / "b.md"
    path.write_text(
        "# One\n\nMara went to [Lisk](https://en.wikipedia.org/wiki/Lisk_(town)) at dawn.\n\n"
        "    # not a heading, an indented code line\n\n"
        "```\n# not a heading either\n```\n\n"
        "Two\n===\n\n"
        "- a list item with *emphasis*\n  - a nested item\n\n"
        "> a quote\n\n"
        "| who | where |\n|---|---|\n| Mara | Lisk |\n\n"
        "<div>kept <b>text</b></div>\n\n"
        "<script>alert('no')</script>\n",
        encoding="utf-8",
    )
    book = open_book(path)
    assert [c.title for c in book.chapters] == ["One", "Two"], "code lines starting with # are not chapters"
    one, two = book.chapters
    assert one.paragraphs[0] == "Mara went to Lisk at dawn."
    assert "# not a heading, an indented code line" in one.paragraphs[1]
    assert one.paragraphs[2] == "# not a heading either"
    assert two.paragraphs[:3] == ("a list item with emphasis", "a nested item", "a quote")
    assert "Mara | Lisk" in two.paragraphs and "kept text" in two.paragraphs
    assert not any("alert" in p for p in two.paragraphs)


def test_a_book_on_stdin_is_sniffed_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import shutil

    from click.testing import CliRunner
    from conftest import book_path

    from booksum_app.cli import cli
    from booksum_app.testing.fake_server import FakeServer

    text = "Chapter 1\n\n" + "Mara bakes bread in Lisk every morning before dawn. " * 40 + "\n"
    inspected = CliRunner().invoke(cli, ["inspect", "-", "--json", "-m", "openai:gpt-4o"], input=text.encode())
    assert inspected.exit_code == 0, inspected.output
    assert json.loads(inspected.stdout)["path"] == "stdin.txt"
    md = CliRunner().invoke(cli, ["inspect", "-", "--json", "-m", "openai:gpt-4o"],
                            input=b"# The Baker\n\n## One\n\nMara bakes.\n\n## Two\n\nTom sells.\n")
    assert md.exit_code == 0 and json.loads(md.stdout)["format"] == "md"
    epub = book_path("time-machine")
    if epub.is_file():
        shutil.copy(epub, tmp_path / "b.epub")
        read = CliRunner().invoke(cli, ["inspect", "-", "--json", "-m", "openai:gpt-4o"],
                                  input=(tmp_path / "b.epub").read_bytes())
        assert read.exit_code == 0 and json.loads(read.stdout)["format"] == "epub"
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as server:
        done = CliRunner().invoke(cli, ["summarize", "-", "-m", "openai:gpt-4o-mini",
                                        "--base-url", server.openai_base_url,
                                        "--cache-dir", str(tmp_path / "c"), "--strategy", "direct", "-o",
                                        str(tmp_path / "out")], input=text.encode())
    assert done.exit_code == 0, done.output
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["book"]["source_path"] == "stdin.txt"
    for bad, why in ((b"", "no book on standard input"), (b"\x00\x01\x02garbage\xff" * 50, "")):
        refused = CliRunner().invoke(cli, ["inspect", "-", "-m", "openai:gpt-4o"], input=bad)
        assert refused.exit_code in (2, 3) and refused.stderr.count("\n") == 1 and why in refused.stderr
        assert "Traceback" not in refused.stderr
