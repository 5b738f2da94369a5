"""Builders for small EPUB files in tests: a valid book as a {member: bytes} dict, then a zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

from conftest import BOOKS_DIR  # where `booksum data` puts the sample books

CONTAINER = """<?xml version="1.0" encoding="utf-8"?>
<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def sample_book(stem: str) -> Path:
    """Path of a sample epub (``booksum data fetch sample-books``) whose name contains ``stem``."""
    import pytest

    matches = sorted(BOOKS_DIR.glob(f"*{stem}*.epub"))
    if not matches:
        pytest.skip(f"sample book {stem!r} not in {BOOKS_DIR}: run `booksum data fetch sample-books`")
    return matches[0]


MILL = "On day {c}-{s} the miller ground {s} sacks of grain and sold them at the fair."  # for chapters_txt


def chapters_txt(path: Path, sentence: str, *, chapters: int, sentences: int) -> Path:
    """A plain-text book at ``path``: ``Chapter 1`` to ``Chapter N``, each ``sentences`` sentences of
    ``sentence`` filled with the chapter ``{c}`` and the sentence's number ``{s}``."""
    path.write_text("\n\n".join(f"Chapter {c}\n\n" + " ".join(sentence.format(c=c, s=s) for s in range(sentences))
                                  for c in range(1, chapters + 1)), encoding="utf-8")
    return path


def xhtml(
    body: str,
    *,
    title: str = "Section",
    body_type: str = "",
    doctype: str = "",
) -> str:
    """An XHTML content document with ``body`` inside <body>."""
    btype = f' epub:type="{body_type}"' if body_type else ""
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f"{doctype}"
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f"<head><title>{title}</title></head><body{btype}>{body}</body></html>"
    )


def chapter(title: str, *paragraphs: str, section_type: str = "chapter") -> str:
    """A chapter document in Standard Ebooks style (typed section, h2 heading)."""
    paras = "".join(f"<p>{p}</p>" for p in paragraphs)
    stype = f' epub:type="{section_type}"' if section_type else ""
    body_type = "bodymatter z3998:fiction" if section_type in ("chapter", "") else "frontmatter"
    return xhtml(
        f"<section{stype}><h2>{title}</h2>{paras}</section>", title=title, body_type=body_type
    )


def epub_files(
    docs: list[tuple[str, str]],
    *,
    nav: list[tuple[str, str]] | None = None,
    title: str = "A Test Book",
    author: str = "Ann Author",
    language: str = "en",
    linear_no: tuple[str, ...] = (),
    ncx: bool = False,
) -> dict[str, bytes]:
    """Members of a valid EPUB 3 (or EPUB 2 with ``ncx=True``): docs are (file name, xhtml)."""
    files: dict[str, bytes] = {
        "mimetype": b"application/epub+zip",
        "META-INF/container.xml": CONTAINER.encode(),
    }
    items, refs = [], []
    for i, (name, text) in enumerate(docs):
        files[f"OEBPS/{name}"] = text.encode("utf-8")
        items.append(f'<item id="d{i}" href="{name}" media-type="application/xhtml+xml"/>')
        linear = ' linear="no"' if name in linear_no else ""
        refs.append(f'<itemref idref="d{i}"{linear}/>')
    nav_entries = nav if nav is not None else [(name, name.rsplit(".", 1)[0]) for name, _ in docs]
    if ncx:
        points = "".join(
            f'<navPoint id="n{i}"><navLabel><text>{label}</text></navLabel><content src="{href}"/></navPoint>'
            for i, (href, label) in enumerate(nav_entries)
        )
        files["OEBPS/toc.ncx"] = (
            '<?xml version="1.0" encoding="utf-8"?>'
            '<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f"<navMap>{points}</navMap></ncx>"
        ).encode()
        items.append('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>')
        spine_attr, version = ' toc="ncx"', "2.0"
    else:
        lis = "".join(f'<li><a href="{href}">{label}</a></li>' for href, label in nav_entries)
        files["OEBPS/nav.xhtml"] = xhtml(
            f'<nav epub:type="toc"><ol>{lis}</ol></nav>', title="Contents"
        ).encode()
        items.append(
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        )
        spine_attr, version = "", "3.0"
    files["OEBPS/content.opf"] = (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<package xmlns="http://www.idpf.org/2007/opf" version="{version}" unique-identifier="uid">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="uid">urn:test</dc:identifier><dc:title>{title}</dc:title>'
        f"<dc:creator>{author}</dc:creator><dc:language>{language}</dc:language></metadata>"
        f"<manifest>{''.join(items)}</manifest><spine{spine_attr}>{''.join(refs)}</spine></package>"
    ).encode()
    return files


def write_zip(path: Path, files: dict[str, bytes]) -> Path:
    """Write members to a zip (mimetype first, stored), return the path."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            compress = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            zf.writestr(name, data, compress_type=compress)
    return path


def simple_epub(path: Path, **kwargs: object) -> Path:
    """A two-chapter valid EPUB 3 at ``path``."""
    docs = [
        ("ch1.xhtml", chapter("Chapter 1", "It was a dark night.", "The rain fell.")),
        ("ch2.xhtml", chapter("Chapter 2", "Morning came.")),
    ]
    return write_zip(path, epub_files(docs, **kwargs))  # type: ignore[arg-type]
