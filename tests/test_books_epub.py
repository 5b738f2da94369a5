"""EPUB reader: the sample books, structure, front matter, and refusal of bad input."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from book_fixtures import chapter, epub_files, sample_book, simple_epub, write_zip, xhtml

from booksum_app.books import Book, open_book
from booksum_app.books.archive import SafeZip, ZipLimits
from booksum_app.errors import BookFormatError, DRMProtectedError


@pytest.fixture(scope="module")
def pride() -> Book:
    return open_book(sample_book("pride-and-prejudice"))


@pytest.fixture(scope="module")
def frankenstein() -> Book:
    return open_book(sample_book("frankenstein"))


# ---- sample books ----------------------------------------------------------


def test_pride_and_prejudice_has_61_narrative_chapters(pride: Book) -> None:
    kept = pride.selected_chapters()
    assert len(kept) == 61
    assert [c.title for c in kept[:3]] == ["Chapter I", "Chapter II", "Chapter III"]
    assert kept[-1].title == "Chapter LXI"
    assert kept[0].paragraphs[0].startswith("It is a truth universally acknowledged")


def test_pride_and_prejudice_metadata(pride: Book) -> None:
    assert pride.title == "Pride and Prejudice"
    assert pride.authors == ("Jane Austen",)
    assert pride.language == "en"
    assert pride.metadata["language_tag"] == "en-GB"
    assert pride.format == "epub"


def test_pride_and_prejudice_front_and_back_matter_excluded_with_reasons(pride: Book) -> None:
    excluded = {c.source.rsplit("/", 1)[-1]: c.excluded_reason for c in pride.excluded_chapters}
    assert excluded == {
        "titlepage.xhtml": "epub:type=titlepage",
        "imprint.xhtml": "epub:type=imprint",
        "colophon.xhtml": "epub:type=colophon",
        "uncopyright.xhtml": "epub:type=copyright-page",
    }
    assert "Standard Ebooks" not in pride.text()
    assert "Standard Ebooks" in pride.text(include_front_matter=True)


def test_frankenstein_has_4_letters_and_24_chapters(frankenstein: Book) -> None:
    kept = frankenstein.selected_chapters()
    assert len(kept) == 28
    assert [c.title for c in kept[:5]] == [
        "Letter I",
        "Letter II",
        "Letter III",
        "Letter IV",
        "Chapter I",
    ]
    assert kept[-1].title == "Chapter XXIV"
    # the nested "Walton, in Continuation" subsection stays inside Chapter XXIV, as a paragraph
    assert "Walton, in Continuation" in kept[-1].paragraphs


def test_frankenstein_introduction_preface_dedication_epigraph_excluded(frankenstein: Book) -> None:
    reasons = {c.title: c.excluded_reason for c in frankenstein.excluded_chapters}
    assert reasons["Introduction"] == "epub:type=introduction"
    assert reasons["Preface"] == "epub:type=preface"
    assert reasons["Dedication"] == "epub:type=dedication"
    assert reasons["Epigraph"] == "epub:type=epigraph"
    assert reasons["Endnotes"] == "epub:type=endnotes"


def test_include_front_matter_keeps_every_section(frankenstein: Book) -> None:
    every = frankenstein.selected_chapters(include_front_matter=True)
    assert len(every) == len(frankenstein.chapters) == 38
    dedication = next(c for c in every if c.title == "Dedication")
    assert dedication.paragraphs[0].startswith("To\nWilliam Godwin,")  # <br/> -> newline


def test_letter_header_and_noterefs(frankenstein: Book) -> None:
    letter = frankenstein.selected_chapters()[0]
    assert letter.paragraphs[:2] == (
        "To Mrs. Saville, England.",
        "St. Petersburgh, Dec. 11th, 17—.",
    )


def test_footnote_reference_markers_are_dropped() -> None:
    book = open_book(sample_book("time-machine"))
    text = book.text()
    assert "noticed that the floor of the gallery sloped at all. The end I had come in" in text
    assert [c.title for c in book.selected_chapters()][-1] == "Epilogue"
    assert len(book.selected_chapters()) == 13


def test_war_and_peace_title_paths_and_division_pages() -> None:
    book = open_book(sample_book("war-and-peace"))
    kept = book.selected_chapters()
    assert len(kept) == 364
    assert kept[0].title == "Book I / Part I: 1805 / Chapter I"
    assert kept[-1].title == "Epilogue / Second Epilogue / Chapter XII"
    division = next(c for c in book.chapters if c.source.endswith("book-1.xhtml"))
    assert (division.narrative, division.excluded_reason, division.paragraphs) == (
        False,
        "no text",
        (),
    )
    reasons = {c.excluded_reason for c in book.excluded_chapters}
    assert "epub:type=z3998:dramatis-personae" in reasons


@pytest.mark.parametrize(
    "stem", ["wuthering", "time-machine", "pride", "frankenstein", "chickens", "war-and-peace"]
)
def test_every_sample_book_reads_cleanly(stem: str) -> None:
    book = open_book(sample_book(stem))
    assert book.selected_chapters(), "no narrative chapters"
    for c in book.chapters:
        assert c.narrative == (c.excluded_reason is None)
        assert all(p and p == p.strip() for p in c.paragraphs)
        assert not any("\u2060" in p or "  " in p for p in c.paragraphs)
    for c in book.selected_chapters():
        assert c.paragraphs, f"narrative chapter {c.title!r} has no text"
    assert {"titlepage", "imprint", "colophon", "copyright-page"} <= {
        (c.excluded_reason or "").removeprefix("epub:type=") for c in book.excluded_chapters
    }


# ---- structure of small synthetic books ------------------------------------


def test_epub2_with_ncx_and_title_heuristics(tmp_path: Path) -> None:
    doctype = (
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
        '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n'
    )
    docs = [
        ("toc.html", xhtml("<h1>Contents</h1><p>Chapter 1 .... 3</p>", doctype=doctype)),
        ("copy.html", xhtml("<h2>Copyright</h2><p>All rights reserved.</p>", doctype=doctype)),
        (
            "c1.html",
            xhtml(
                "<h2>The Start</h2><p>Once&nbsp;upon a time&mdash;long ago.</p>", doctype=doctype
            ),
        ),
        ("ack.html", xhtml("<h2>Acknowledgements</h2><p>Thanks to all.</p>", doctype=doctype)),
    ]
    nav = [
        ("toc.html", "Contents"),
        ("copy.html", "Copyright"),
        ("c1.html", "Chapter 1"),
        ("ack.html", "Acknowledgements"),
    ]
    book = open_book(write_zip(tmp_path / "b.epub", epub_files(docs, nav=nav, ncx=True)))
    assert [(c.title, c.excluded_reason) for c in book.chapters] == [
        ("Contents", "title: Contents"),
        ("Copyright", "title: Copyright"),
        ("Chapter 1", None),
        ("Acknowledgements", "title: Acknowledgements"),
    ]
    assert book.chapters[2].paragraphs == ("Once upon a time—long ago.",)
    assert book.metadata["opf_version"] == "2.0"


def test_title_falls_back_to_first_heading_without_nav(tmp_path: Path) -> None:
    files = epub_files([("a.xhtml", xhtml("<h1>The Storm</h1><p>Wind.</p>"))], nav=[])
    book = open_book(write_zip(tmp_path / "b.epub", files))
    assert book.chapters[0].title == "The Storm"
    assert book.chapters[0].paragraphs == ("Wind.",)


def test_several_chapters_in_one_file_are_split_at_nav_fragments(tmp_path: Path) -> None:
    body = (
        '<h2 id="c1">Chapter I</h2><p>First.</p><p>More first.</p>'
        '<h2 id="c2">Chapter II</h2><p>Second.</p>'
    )
    files = epub_files(
        [("all.xhtml", xhtml(body))],
        nav=[("all.xhtml#c1", "Chapter I"), ("all.xhtml#c2", "Chapter II")],
    )
    book = open_book(write_zip(tmp_path / "b.epub", files))
    assert [(c.title, c.paragraphs) for c in book.chapters] == [
        ("Chapter I", ("First.", "More first.")),
        ("Chapter II", ("Second.",)),
    ]
    assert [c.source for c in book.chapters] == ["OEBPS/all.xhtml#c1", "OEBPS/all.xhtml#c2"]


def test_non_linear_spine_items_are_not_narrative(tmp_path: Path) -> None:
    docs = [
        ("c1.xhtml", xhtml("<p>Story.</p>")),
        ("popup.xhtml", xhtml("<p>An aside.</p>")),
    ]
    book = open_book(write_zip(tmp_path / "b.epub", epub_files(docs, linear_no=("popup.xhtml",))))
    assert [c.excluded_reason for c in book.chapters] == [None, "spine linear=no"]


def test_epigraph_inside_a_chapter_is_kept(tmp_path: Path) -> None:
    body = (
        '<section epub:type="chapter"><h2>I</h2>'
        '<blockquote epub:type="epigraph"><p>Quoth the raven.</p></blockquote><p>Story.</p></section>'
    )
    files = epub_files([("c1.xhtml", xhtml(body, body_type="bodymatter"))], nav=[("c1.xhtml", "I")])
    chapter_ = open_book(write_zip(tmp_path / "b.epub", files)).chapters[0]
    assert (chapter_.title, chapter_.narrative) == ("Chapter I", True)
    assert chapter_.paragraphs == ("Quoth the raven.", "Story.")


def test_language_argument_overrides_metadata(tmp_path: Path) -> None:
    book = open_book(simple_epub(tmp_path / "b.epub", language="fr"), lang="zh")
    assert book.language == "zh"
    assert open_book(tmp_path / "b.epub").language == "fr"


# ---- refusals ----------------------------------------------------------------


def _refused(path: Path, *fragments: str, exc: type[Exception] = BookFormatError) -> str:
    with pytest.raises(exc) as info:
        open_book(path)
    message = str(info.value)
    assert "\n" not in message and path.name in message
    for fragment in fragments:
        assert fragment in message
    return message


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "fake.epub"
    path.write_text("just some text, not an archive")
    _refused(path, "not a valid zip archive")


def test_truncated_zip(tmp_path: Path) -> None:
    good = simple_epub(tmp_path / "good.epub").read_bytes()
    path = tmp_path / "cut.epub"
    path.write_bytes(good[: len(good) // 2])
    _refused(path, "corrupt or truncated")


def test_corrupt_member(tmp_path: Path) -> None:
    data = bytearray(simple_epub(tmp_path / "good.epub").read_bytes())
    start = data.find(b"OEBPS/ch1.xhtml") + len("OEBPS/ch1.xhtml")  # first local header's data
    for i in range(start + 5, start + 25):
        data[i] ^= 0xFF
    path = tmp_path / "bad.epub"
    path.write_bytes(bytes(data))
    _refused(path, "damaged")


def test_missing_container(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    del files["META-INF/container.xml"]
    _refused(write_zip(tmp_path / "b.epub", files), "META-INF/container.xml is missing")


def test_missing_opf(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    del files["OEBPS/content.opf"]
    _refused(write_zip(tmp_path / "b.epub", files), "OEBPS/content.opf", "missing")


def test_spine_points_at_missing_file(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text.")), ("gone.xhtml", chapter("II", "X."))])
    del files["OEBPS/gone.xhtml"]
    _refused(write_zip(tmp_path / "b.epub", files), "spine item OEBPS/gone.xhtml is missing")


def test_spine_points_at_unknown_manifest_id(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["OEBPS/content.opf"] = files["OEBPS/content.opf"].replace(b'idref="d0"', b'idref="nope"')
    _refused(write_zip(tmp_path / "b.epub", files), "'nope'", "not in the manifest")


def test_book_without_text(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", xhtml('<img src="a.png" alt=""/>'))])
    _refused(write_zip(tmp_path / "b.epub", files), "no text found")


def test_book_with_only_front_matter(tmp_path: Path) -> None:
    docs = [
        ("t.xhtml", chapter("Title", "A Book", section_type="titlepage")),
        ("c.xhtml", chapter("Colophon", "Set in Garamond.", section_type="colophon")),
    ]
    path = write_zip(tmp_path / "b.epub", epub_files(docs))
    _refused(path, "no narrative text", "epub:type=colophon", "--include-front-matter")
    book = open_book(path, include_front_matter=True)
    assert book.selected_chapters() == ()
    assert len(book.selected_chapters(include_front_matter=True)) == 2


def test_external_entity_is_refused(tmp_path: Path) -> None:
    hostile = (
        '<?xml version="1.0"?><!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&xxe;</p></body></html>'
    )
    files = epub_files([("c.xhtml", hostile)])
    _refused(write_zip(tmp_path / "b.epub", files), "declares XML entities")


def test_billion_laughs_in_opf_is_refused(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    lol = (
        b'<?xml version="1.0"?><!DOCTYPE package [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;">]>'
    )
    files["OEBPS/content.opf"] = lol + files["OEBPS/content.opf"].split(b"?>", 1)[1].replace(
        b"A Test Book", b"&c;"
    )
    _refused(write_zip(tmp_path / "b.epub", files), "entity-expansion")


ADEPT = b"""<?xml version="1.0"?>
<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
  xmlns:enc="http://www.w3.org/2001/04/xmlenc#" xmlns:ds="http://www.w3.org/2000/09/xmldsig#">
 <enc:EncryptedData>
  <enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
  <ds:KeyInfo><resource xmlns="http://ns.adobe.com/adept">urn:uuid:1</resource></ds:KeyInfo>
  <enc:CipherData><enc:CipherReference URI="OEBPS/c.xhtml"/></enc:CipherData>
 </enc:EncryptedData>
</encryption>"""


def _font_obfuscation(algorithm: str, uri: str) -> bytes:
    return f"""<?xml version="1.0"?>
<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
  xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
 <enc:EncryptedData>
  <enc:EncryptionMethod Algorithm="{algorithm}"/>
  <enc:CipherData><enc:CipherReference URI="{uri}"/></enc:CipherData>
 </enc:EncryptedData>
</encryption>""".encode()


def test_encrypted_content_is_refused_as_drm(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["META-INF/encryption.xml"] = ADEPT
    _refused(
        write_zip(tmp_path / "b.epub", files), "Adobe ADEPT", "OEBPS/c.xhtml", exc=DRMProtectedError
    )


def test_unknown_encryption_of_content_is_refused(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["META-INF/encryption.xml"] = ADEPT.replace(b"http://ns.adobe.com/adept", b"urn:x")
    _refused(
        write_zip(tmp_path / "b.epub", files), "unknown scheme", "aes128-cbc", exc=DRMProtectedError
    )


@pytest.mark.parametrize(
    "algorithm", ["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"]
)
def test_font_obfuscation_alone_is_accepted(tmp_path: Path, algorithm: str) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["OEBPS/fonts/a.otf"] = b"\x00obfuscated font bytes"
    files["META-INF/encryption.xml"] = _font_obfuscation(algorithm, "OEBPS/fonts/a.otf")
    book = open_book(write_zip(tmp_path / "b.epub", files))
    assert book.selected_chapters()[0].paragraphs == ("Text.",)


@pytest.mark.parametrize(
    ("member", "scheme"),
    [
        ("META-INF/rights.xml", "Adobe ADEPT"),
        ("META-INF/sinf.xml", "Apple FairPlay"),
        ("META-INF/license.lcpl", "Readium LCP"),
    ],
)
def test_drm_marker_files_are_refused(tmp_path: Path, member: str, scheme: str) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files[member] = b"<rights/>"
    _refused(write_zip(tmp_path / "b.epub", files), scheme, exc=DRMProtectedError)


def test_high_compression_ratio_member_is_refused(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["OEBPS/bomb.xhtml"] = b"\x00" * (8 * 1024 * 1024)
    _refused(write_zip(tmp_path / "b.epub", files), "compression ratio", "zip bomb")


def test_many_small_highly_compressed_members_are_refused(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    for i in range(40):  # each 256 KiB (under the per-member floor), 10 MiB in all
        files[f"OEBPS/pad{i}.css"] = b" " * (256 * 1024)
    _refused(write_zip(tmp_path / "b.epub", files), "archive has compression ratio", "zip bomb")


def test_epub_of_10000_small_chapters_is_a_book(tmp_path: Path) -> None:
    docs = [
        (f"c{i}.xhtml", chapter(f"Chapter {i}", f"Day {i} began with rain, tea and letters."))
        for i in range(1, 10_001)
    ]
    book = open_book(write_zip(tmp_path / "long.epub", epub_files(docs)))
    narrative = [c for c in book.chapters if c.narrative]
    assert len(narrative) == 10_000
    assert "Day 10000 began" in narrative[-1].text


def test_zip_limits_on_total_size(tmp_path: Path) -> None:
    path = simple_epub(tmp_path / "b.epub")
    with pytest.raises(BookFormatError, match="would unpack to"):
        SafeZip(path, limits=ZipLimits(max_total_bytes=100))
    with SafeZip(path, limits=ZipLimits(max_member_bytes=10**6)) as zf:
        assert zf.read("OEBPS/ch1.xhtml").startswith(b"<?xml")


def test_zip_with_docx_layout_is_not_an_epub(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("word/document.xml", "<w:document/>")
    _refused(path, "not an EPUB")


def test_undeclared_binary_content_document_is_refused(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["OEBPS/c.xhtml"] = bytes(range(256)) * 64  # what encrypted bytes look like
    _refused(write_zip(tmp_path / "b.epub", files), "binary data, not XHTML")


def test_malformed_xhtml_falls_back_to_the_html_parser(tmp_path: Path) -> None:
    files = epub_files([("c.xhtml", "<html><body><p>Unclosed <b>bold<p>Next</body></html>")])
    book = open_book(write_zip(tmp_path / "b.epub", files))
    assert book.chapters[0].paragraphs == ("Unclosed bold", "Next")
