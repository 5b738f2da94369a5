"""EPUB 2 and 3 reader built on zipfile + lxml (no EbookLib: it is AGPL).

META-INF/container.xml -> OPF package -> metadata (dc:title, dc:creator, dc:language),
manifest and spine. Reading order is the spine. Chapter titles come from the EPUB 3
nav document (``<nav epub:type="toc">``), else the EPUB 2 NCX, else the first
heading of the file, else its ``<title>``. Nested nav entries give a title path,
e.g. "Book I / Part I: 1805 / Chapter I" in War and Peace; a bare ordinal label
("I", "II: A Letter") in a section typed ``chapter`` becomes "Chapter I".

One Chapter per spine item, except when nav entries point at fragments inside one
file (Gutenberg-style epubs with several chapters per file): the file is then cut
at those ids. Standard Ebooks puts one chapter per file, so the sample books never
split. Files holding only headings (War and Peace's "Book I" and "Part I" pages) stay
as non-narrative chapters with reason "no text"; their titles live on in the title
path of the chapters below them.

``linear="no"`` spine items are kept in reading order but marked non-narrative
("spine linear=no") unless their epub:type says chapter/part/...: EPUB uses
non-linear items for auxiliary content (pop-up notes, answer keys).

Non-narrative detection: see ``matter.py``. DRM: META-INF/rights.xml (Adobe ADEPT),
sinf.xml (Apple FairPlay), license.lcpl (Readium LCP), or an encryption.xml that
encrypts content documents are refused with DRMProtectedError; font obfuscation
(IDPF http://www.idpf.org/2008/embedding, Adobe http://ns.adobe.com/pdf/enc#RC)
applied to fonts is harmless and accepted.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from booksum_app.books.archive import SafeZip, join_href
from booksum_app.books.drm import check_drm_markers, check_encryption
from booksum_app.books.language import detect_language
from booksum_app.books.markup import (
    clean_text,
    epub_types,
    extract_segments,
    find_body,
    localname,
    parse_xhtml,
    parse_xml,
    split_title,
)
from booksum_app.books.matter import (
    check_has_text,
    classify_title,
    classify_types,
    has_narrative_type,
)
from booksum_app.books.model import Book, Chapter, Dropped, counted_chars
from booksum_app.errors import BookFormatError

OPF_NS = "http://www.idpf.org/2007/opf"
DC_NS = "http://purl.org/dc/elements/1.1/"
CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
NCX_NS = "http://www.daisy.org/z3986/2005/ncx/"

_TEXT_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/xml", "text/xml"})
_CONTENT_EXT = (".xhtml", ".html", ".htm", ".xml", ".opf", ".ncx", ".txt")
_GUIDE_TYPES = {"title-page": "titlepage", "copyright-page": "copyright-page", "notes": "endnotes"}
_ORDINAL = re.compile(r"^(?:[IVXLCDM]+|\d+)\b\.?(?:\s*[:.—–-]\s*.*)?$")


@dataclass(frozen=True)
class _Item:
    ident: str
    path: str
    media_type: str
    properties: frozenset[str]


@dataclass(frozen=True)
class _NavEntry:
    label: str
    path: str
    fragment: str
    parent: int | None


@dataclass
class _Package:
    opf_path: str
    version: str
    metadata: dict[str, str]
    title: str
    authors: tuple[str, ...]
    language: str
    manifest: dict[str, _Item]
    spine: list[tuple[_Item, bool]]
    ncx: _Item | None
    nav: _Item | None
    guide: dict[str, set[str]] = field(default_factory=dict)


def read_epub(path: Path, *, lang: str | None = None, include_front_matter: bool = False) -> Book:
    """Read an EPUB 2/3 file into a Book.

    Raises:
        BookFormatError: the archive or its package is malformed, hostile or empty.
        DRMProtectedError: the content is encrypted.
    """
    name = path.name
    with SafeZip(path) as zf:
        check_drm_markers(zf, name=name)
        pkg = _read_package(zf, name)
        content = {item.path for item, _ in pkg.spine}
        content |= {i.path for i in (pkg.nav, pkg.ncx) if i is not None}
        check_encryption(zf, name=name, content_paths=content)
        entries, landmarks = _read_navigation(zf, pkg, name)
        dropped: list[Dropped] = []
        chapters = _read_spine(zf, pkg, entries, landmarks, name, dropped)
    return _finish(chapters, pkg, path, lang=lang, include_front_matter=include_front_matter, dropped=dropped)


# ---- package ---------------------------------------------------------------


def _read_package(zf: SafeZip, name: str) -> _Package:
    if not zf.has("META-INF/container.xml"):
        raise BookFormatError(
            f"{name}: not an EPUB (META-INF/container.xml is missing); "
            "re-export the book as EPUB or convert it"
        )
    container = parse_xml(zf.read("META-INF/container.xml"), name=f"{name}: container.xml")
    rootfile = container.find(f".//{{{CONTAINER_NS}}}rootfile")
    if rootfile is None:
        rootfile = next((e for e in container.iter() if localname(e) == "rootfile"), None)
    opf_path = (rootfile.get("full-path") or "").lstrip("/") if rootfile is not None else ""
    if not opf_path:
        raise BookFormatError(f"{name}: container.xml names no OPF package (no rootfile)")
    if not zf.has(opf_path):
        raise BookFormatError(
            f"{name}: the OPF package {opf_path} named in container.xml is missing from the archive"
        )
    opf = parse_xml(zf.read(opf_path), name=f"{name}: {opf_path}")
    opf_dir = posixpath.dirname(opf_path)

    manifest: dict[str, _Item] = {}
    for el in opf.iter(f"{{{OPF_NS}}}item"):
        ident, href = el.get("id"), el.get("href")
        if ident and href:
            manifest[ident] = _Item(
                ident,
                join_href(opf_dir, href)[0],
                (el.get("media-type") or "").lower(),
                frozenset((el.get("properties") or "").split()),
            )
    spine_el = opf.find(f"{{{OPF_NS}}}spine")
    if spine_el is None:
        raise BookFormatError(f"{name}: the OPF package has no <spine>; the epub is malformed")
    spine: list[tuple[_Item, bool]] = []
    for ref in spine_el.iter(f"{{{OPF_NS}}}itemref"):
        idref = ref.get("idref", "")
        if idref not in manifest:
            raise BookFormatError(
                f"{name}: the spine refers to '{idref}', which is not in the manifest; "
                "the epub is malformed"
            )
        spine.append((manifest[idref], ref.get("linear", "yes").lower() != "no"))
    if not spine:
        raise BookFormatError(f"{name}: the spine is empty; the book has no reading order")
    ncx = manifest.get(spine_el.get("toc", "")) or next(
        (i for i in manifest.values() if i.media_type == "application/x-dtbncx+xml"), None
    )
    nav = next((i for i in manifest.values() if "nav" in i.properties), None)

    guide: dict[str, set[str]] = {}
    for ref in opf.iter(f"{{{OPF_NS}}}reference"):
        gtype = (ref.get("type") or "").lower()
        path, frag = join_href(opf_dir, ref.get("href", ""))
        if gtype and path and not frag:
            guide.setdefault(path, set()).add(_GUIDE_TYPES.get(gtype, gtype))

    meta_el = opf.find(f"{{{OPF_NS}}}metadata")
    if meta_el is None:
        meta_el = opf
    title, authors, language, metadata = _read_metadata(meta_el)
    metadata["opf_version"] = opf.get("version", "")
    return _Package(
        opf_path,
        opf.get("version", ""),
        metadata,
        title,
        authors,
        language,
        manifest,
        spine,
        ncx,
        nav,
        guide,
    )


def _read_metadata(meta: etree._Element) -> tuple[str, tuple[str, ...], str, dict[str, str]]:
    def texts(tag: str) -> list[etree._Element]:
        return [e for e in meta.iter(f"{{{DC_NS}}}{tag}") if clean_text(e.text or "")]

    roles: dict[str, str] = {}
    for m in meta.iter(f"{{{OPF_NS}}}meta"):
        if m.get("property") == "role" and m.get("refines", "").startswith("#"):
            roles.setdefault(m.get("refines", "")[1:], (m.text or "").strip())
    titles = texts("title")
    title = clean_text(titles[0].text or "") if titles else ""
    authors: list[str] = []
    for c in texts("creator"):
        role = c.get(f"{{{OPF_NS}}}role") or roles.get(c.get("id", ""), "aut")
        if role in ("aut", ""):
            authors.append(clean_text(c.text or ""))
    if not authors:
        authors = [clean_text(c.text or "") for c in texts("creator")]
    langs = texts("language")
    language = clean_text(langs[0].text or "") if langs else ""
    metadata: dict[str, str] = {}
    for tag in ("identifier", "publisher", "date", "description", "rights"):
        found = texts(tag)
        if found:
            metadata[tag] = clean_text(found[0].text or "")
    if language:
        metadata["language_tag"] = language
    return title, tuple(dict.fromkeys(authors)), language, metadata


# ---- navigation ------------------------------------------------------------


def _read_navigation(
    zf: SafeZip, pkg: _Package, name: str
) -> tuple[list[_NavEntry], dict[str, set[str]]]:
    entries: list[_NavEntry] = []
    landmarks: dict[str, set[str]] = {}
    if pkg.nav is not None and zf.has(pkg.nav.path):
        root = parse_xhtml(zf.read(pkg.nav.path), name=f"{name}: {pkg.nav.path}")
        base = posixpath.dirname(pkg.nav.path)
        for nav in root.iter():
            if localname(nav) != "nav":
                continue
            types = epub_types(nav)
            if "landmarks" in types:
                for a in nav.iter():
                    if localname(a) == "a" and a.get("href"):
                        path, frag = join_href(base, a.get("href", ""))
                        if not frag:
                            landmarks.setdefault(path, set()).update(epub_types(a))
            elif ("toc" in types or nav.get("role") == "doc-toc") and not entries:
                _walk_nav_list(nav, base, None, entries)
    if not entries and pkg.ncx is not None and zf.has(pkg.ncx.path):
        root = parse_xml(zf.read(pkg.ncx.path), name=f"{name}: {pkg.ncx.path}")
        nav_map = root.find(f"{{{NCX_NS}}}navMap")
        if nav_map is not None:
            _walk_ncx(nav_map, posixpath.dirname(pkg.ncx.path), None, entries)
    return entries, landmarks


def _walk_nav_list(el: etree._Element, base: str, parent: int | None, out: list[_NavEntry]) -> None:
    """The entries of a nav's lists, depth first; a stack, not recursion: any depth is read."""
    stack: list[tuple[Iterator[etree._Element], int | None]] = [(iter(el), parent)]
    while stack:
        children, parent = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        tag = localname(child)
        if tag == "li":
            link = next((c for c in child if localname(c) in ("a", "span")), None)
            index = parent
            if link is not None:
                label = clean_text("".join(link.itertext()))
                path, frag = join_href(base, link.get("href", "")) if link.get("href") else ("", "")
                out.append(_NavEntry(label, path, frag, parent))
                index = len(out) - 1
            subs = [sub for sub in child if localname(sub) == "ol"]
            stack.append((itertools.chain.from_iterable(subs), index))
        elif tag in ("ol", "div"):
            stack.append((iter(child), parent))


def _walk_ncx(el: etree._Element, base: str, parent: int | None, out: list[_NavEntry]) -> None:
    """The navPoints of an NCX map, depth first, with a stack."""
    stack: list[tuple[Iterator[etree._Element], int | None]] = [(el.iterchildren(f"{{{NCX_NS}}}navPoint"), parent)]
    while stack:
        points, parent = stack[-1]
        point = next(points, None)
        if point is None:
            stack.pop()
            continue
        text = point.find(f"{{{NCX_NS}}}navLabel/{{{NCX_NS}}}text")
        content = point.find(f"{{{NCX_NS}}}content")
        label = clean_text("".join(text.itertext())) if text is not None else ""
        path, frag = join_href(base, content.get("src", "")) if content is not None else ("", "")
        out.append(_NavEntry(label, path, frag, parent))
        stack.append((point.iterchildren(f"{{{NCX_NS}}}navPoint"), len(out) - 1))


# ---- spine -----------------------------------------------------------------


@dataclass
class _Draft:
    path: str
    source: str
    label: str
    nav_index: int | None
    heading: str
    paragraphs: tuple[str, ...]
    reason: str | None
    in_text: bool = True  # the title is the heading read from the text (not a contents label)


def _read_spine(
    zf: SafeZip,
    pkg: _Package,
    entries: list[_NavEntry],
    landmarks: dict[str, set[str]],
    name: str,
    dropped: list[Dropped],
) -> list[Chapter]:
    by_path: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        if e.path:
            by_path.setdefault(e.path, []).append(i)
    drafts: list[_Draft] = []
    for item, linear in pkg.spine:
        if item.media_type not in _TEXT_TYPES and not item.path.lower().endswith(_CONTENT_EXT):
            continue  # an image or SVG page in the spine carries no text
        if not zf.has(item.path):
            raise BookFormatError(
                f"{name}: spine item {item.path} is missing from the archive; the epub is incomplete"
            )
        root = parse_xhtml(zf.read(item.path), name=f"{name}: {item.path}")
        drafts.extend(
            _drafts_for_file(
                root, item, linear, entries, by_path.get(item.path, []), landmarks, pkg, dropped
            )
        )
    # ancestors named in title paths: narrative files and heading-only division pages
    named_paths = {d.path for d in drafts if d.reason in (None, "no text")}
    chapters = []
    for d in drafts:
        title = _title_path(d, entries, named_paths)
        chapters.append(
            Chapter(
                title=title,
                paragraphs=d.paragraphs,
                narrative=d.reason is None,
                excluded_reason=d.reason,
                source=d.source,
                title_in_text=d.in_text and title == d.heading,
            )
        )
        if d.heading and title != d.heading:  # the contents' label names it; its heading is not kept
            dropped.append(Dropped("heading (the contents names the section)", counted_chars(d.heading), d.source))
    return chapters


def _structure_types(root: etree._Element) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """epub:types of the body and of the outermost typed sections below it."""
    body = find_body(root)
    section_types: list[str] = []
    stack = [(c, 0) for c in reversed(body)]
    while stack:
        el, depth = stack.pop()
        name = localname(el)
        if name not in ("section", "nav", "article", "aside", "div", "main"):
            continue
        types = epub_types(el)
        if types:
            section_types.extend(types)
        elif depth < 3:
            stack.extend((c, depth + 1) for c in reversed(el))
    return epub_types(body), tuple(section_types)


def _drafts_for_file(
    root: etree._Element,
    item: _Item,
    linear: bool,
    entries: list[_NavEntry],
    nav_indexes: list[int],
    landmarks: dict[str, set[str]],
    pkg: _Package,
    dropped: list[Dropped],
) -> list[_Draft]:
    body_types, section_types = _structure_types(root)
    types = set(body_types) | set(section_types)
    types |= landmarks.get(item.path, set()) | pkg.guide.get(item.path, set())
    if "nav" in item.properties:
        types.add("toc")
    whole = [i for i in nav_indexes if not entries[i].fragment]
    # A fragment entry cuts the file only when it is not nested under an entry for the
    # whole file: Frankenstein's "Walton, in Continuation" is a subsection of Chapter XXIV.
    frags = {
        entries[i].fragment: i
        for i in nav_indexes
        if entries[i].fragment and not _nested_in_file(entries, i)
    }
    left_out: Counter[str] = Counter()
    segments = extract_segments(root, split_ids=frozenset(frags), dropped=left_out)
    dropped.extend(Dropped(kind, chars, item.path) for kind, chars in sorted(left_out.items()))
    head_title = ""
    for el in root.iter():
        if localname(el) == "title":
            head_title = clean_text("".join(el.itertext()))
            break
    drafts = []
    for n, seg in enumerate(segments):
        heading, blocks = split_title(seg.blocks)
        paragraphs = tuple(b.text for b in blocks)
        if seg.anchor is None:
            if n == 0 and len(segments) > 1 and not paragraphs:
                if heading:
                    why = "heading before the first contents anchor"
                    dropped.append(Dropped(why, counted_chars(heading), item.path))
                continue  # only headings before the first nav anchor
            index = whole[0] if whole else None
        else:
            index = frags.get(seg.anchor)
        label = entries[index].label if index is not None else ""
        in_text = True
        if not label and not heading and len(segments) == 1:
            heading, in_text = head_title, False
        title = label or heading
        reason = classify_types(types, section_types=section_types)
        if reason is None and not has_narrative_type(types):
            reason = classify_title(title) or (classify_title(heading) if heading else None)
        if reason is None and not linear and not has_narrative_type(types):
            reason = "spine linear=no"
        if reason is None and not paragraphs:
            reason = "no text"
        if label and "chapter" in types and _ORDINAL.match(label):
            label = f"Chapter {label}"
        source = f"{item.path}#{seg.anchor}" if seg.anchor else item.path
        drafts.append(_Draft(item.path, source, label, index, heading, paragraphs, reason, in_text))
    return drafts


def _nested_in_file(entries: list[_NavEntry], index: int) -> bool:
    parent = entries[index].parent
    while parent is not None:
        if entries[parent].path == entries[index].path:
            return True
        parent = entries[parent].parent
    return False


def _title_path(d: _Draft, entries: list[_NavEntry], named_paths: set[str]) -> str:
    own = d.label or d.heading or posixpath.splitext(posixpath.basename(d.path))[0]
    if d.nav_index is None:
        return own
    parts = [own]
    parent = entries[d.nav_index].parent
    while parent is not None:
        e = entries[parent]
        if e.label and (not e.path or e.path in named_paths):
            parts.append(e.label)
        parent = e.parent
    return " / ".join(reversed(parts))


def _finish(
    chapters: list[Chapter],
    pkg: _Package,
    path: Path,
    *,
    lang: str | None,
    include_front_matter: bool,
    dropped: list[Dropped],
) -> Book:
    check_has_text(
        chapters, name=path.name, include_front_matter=include_front_matter, units="spine items"
    )
    language = lang or pkg.language.split("-")[0].lower()
    if not language:
        language = detect_language(" ".join(c.text for c in chapters[:20])[:20000])
    title = pkg.title or path.stem
    return Book(
        title=title,
        authors=pkg.authors,
        language=language,
        chapters=tuple(chapters),
        source_path=str(path),
        format="epub",
        metadata=pkg.metadata,
        dropped=tuple(dropped),
    )
