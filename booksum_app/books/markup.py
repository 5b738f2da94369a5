"""Safe XML/HTML parsing and (X)HTML to paragraphs, shared by the epub and html readers.

Parsing never touches the network or the file system and never expands entities:
lxml parsers run with ``resolve_entities=False, no_network=True, load_dtd=False``, and a
document that declares entities in its DOCTYPE (the shape of external-entity and
entity-expansion attacks) is refused outright. ``huge_tree=True`` lifts libxml2's depth
limit from 256 to :data:`MAX_DEPTH` elements (2048): past its limit libxml2 drops the rest of
the document without an error a reader would see, later chapters included, so a document
nested deeper than that is refused with one line instead (entities are refused above, and
files are capped at 512 MiB, which is what the other huge-tree limits guard against).
EPUB 2 files often use HTML named entities (``&nbsp;``) that are only defined
by the XHTML DTD we refuse to load; they are replaced by character references
before parsing.

Text extraction: block elements (p, div, li, blockquote, h1-h6, ...) become
paragraphs; ``<br>`` becomes a newline inside a paragraph; whitespace runs
collapse to one space; invisible format characters (word joiner, zero-width
space, soft hyphen, BOM) are dropped since they only cost tokens. Footnote
reference markers (``epub:type="noteref"``, ``role="doc-noteref"``, and links
whose whole text is a marker like ``[3]`` or ``*`` pointing at a fragment) and
footnote asides are dropped; headings are kept as blocks flagged ``heading``,
so a reader can take the leading ones as the chapter title.

Hidden content is not the book's text and is dropped with its element: the ``hidden``
attribute, an inline style ``display: none`` or ``visibility: hidden``/``collapse``, and
``<noscript>`` (what a page shows only without scripts). Hiding by a class in a stylesheet is
not seen (stylesheets are not evaluated); ``aria-hidden="true"`` text is kept: it is hidden
from screen readers, not from the eye (a drop cap's letter, a decorative ornament).
The tree is walked with an explicit stack, never recursion, so every depth the parser
accepts is read whole.
"""

from __future__ import annotations

import html.entities
import re
from collections import Counter
from dataclasses import dataclass, field

from lxml import etree
from lxml import html as lxml_html

from booksum_app.books.model import counted_chars
from booksum_app.errors import BookFormatError

EPUB_NS = "http://www.idpf.org/2007/ops"
EPUB_TYPE = f"{{{EPUB_NS}}}type"

MAX_DEPTH = 2048  # libxml2's element depth limit with huge_tree (256 without)
_XML_PARSER_OPTS = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "huge_tree": True,
    "remove_comments": True,
}
_TOO_DEEP = "Excessive depth in document"
_HIDING_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))\b", re.IGNORECASE)
_ENTITY_DECL = re.compile(rb"<!ENTITY", re.IGNORECASE)
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")
_NAMED_REF = re.compile(r"&([A-Za-z][A-Za-z0-9]{1,31});")
_XML_BUILTIN = frozenset({"amp", "lt", "gt", "quot", "apos"})
_INVISIBLE = re.compile("[\u2060\u200b\u00ad\ufeff\u200c\u200d]")
_BREAK = "\x00"  # never occurs in parsed XML text

_BLOCK = frozenset(
    """p div section article aside nav header footer main body blockquote pre li ul ol dl dt dd
    table thead tbody tfoot tr td th caption figure figcaption hgroup address hr center
    h1 h2 h3 h4 h5 h6 details summary""".split()  # noqa: SIM905
)
_SKIP = frozenset(
    "head script style template svg math img object embed video audio title noscript".split()  # noqa: SIM905
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_NOTE_ASIDES = frozenset({"footnote", "endnote", "rearnote", "note", "footnotes", "endnotes"})
_MARKER = re.compile(r"^\s*(?:\[\s*\w{1,4}\s*\]|\(\s*\d{1,4}\s*\)|\d{1,4}|[*†‡§¶]+)\s*$")


class HostileXMLError(BookFormatError):
    """A document declares entities: the shape of XXE and entity-expansion attacks."""


class NestedTooDeepError(BookFormatError):
    """Elements nested past the parser's depth limit: what lies deeper would be lost."""


def _too_deep(name: str) -> NestedTooDeepError:
    return NestedTooDeepError(
        f"{name}: elements nested more than {MAX_DEPTH} levels deep; the text past that depth (the rest "
        "of the file) could not be read, so the book is refused rather than cut short"
    )


def is_hidden(el: etree._Element) -> bool:
    """Whether the element is hidden from a reader: ``hidden``, an inline ``display: none`` /
    ``visibility: hidden``."""
    return el.get("hidden") is not None or bool(_HIDING_STYLE.search(el.get("style") or ""))


def _check_entities(data: bytes, name: str) -> None:
    if _ENTITY_DECL.search(data[:65536]) or (b"<!ENTITY" in data):
        raise HostileXMLError(
            f"{name}: declares XML entities in its DOCTYPE (possible external-entity or "
            "entity-expansion attack); refusing to parse it"
        )


def _named_to_numeric(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        ent = m.group(1)
        if ent in _XML_BUILTIN:
            return m.group(0)
        cp = html.entities.name2codepoint.get(ent)
        return f"&#{cp};" if cp is not None else m.group(0)

    return _NAMED_REF.sub(repl, text)


def _fix_named_entities(data: bytes) -> bytes:
    """Replace HTML named entities by numeric references (only when there are any)."""
    if b"&" not in data or not _NAMED_REF.search(data.decode("latin-1")):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    fixed = _named_to_numeric(text)
    return fixed.encode("utf-8") if fixed != text else data


def parse_xml(data: bytes, *, name: str) -> etree._Element:
    """Parse an XML document safely; malformed or hostile input raises BookFormatError."""
    _check_entities(data, name)
    parser = etree.XMLParser(**_XML_PARSER_OPTS)
    try:
        root = etree.fromstring(_fix_named_entities(data), parser)
    except etree.XMLSyntaxError as exc:
        if _TOO_DEEP in str(exc):
            raise _too_deep(name) from None
        raise BookFormatError(f"{name}: malformed XML ({exc})") from exc
    if root is None:
        raise BookFormatError(f"{name}: empty XML document")
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise HostileXMLError(
            f"{name}: declares XML entities in its DOCTYPE (possible external-entity or "
            "entity-expansion attack); refusing to parse it"
        )
    return root


def parse_html(data: bytes | str, *, name: str) -> etree._Element:
    """Parse HTML with lxml's forgiving parser (no network, no DTD, no entity expansion)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _check_entities(raw, name)
    parser = lxml_html.HTMLParser(
        no_network=True, huge_tree=True, remove_comments=True, remove_pis=True
    )
    if isinstance(data, str):
        data = re.sub(r"^\s*<\?xml[^>]*\?>", "", data)  # lxml refuses str with an encoding decl
    try:
        root = lxml_html.document_fromstring(data, parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        if _TOO_DEEP in str(exc):
            raise _too_deep(name) from None
        raise BookFormatError(f"{name}: cannot parse HTML ({exc})") from exc
    if any(_TOO_DEEP in entry.message for entry in parser.error_log):  # the forgiving parser stops there
        raise _too_deep(name)
    return root


def parse_xhtml(data: bytes, *, name: str) -> etree._Element:
    """Parse an epub content document as XML, falling back to the HTML parser if malformed."""
    try:
        return parse_xml(data, name=name)
    except (HostileXMLError, NestedTooDeepError):
        raise
    except BookFormatError:
        head = data[:4096]
        if (b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff"))) or len(
            _BINARY.findall(head)
        ) > len(head) // 20:
            raise BookFormatError(
                f"{name}: is binary data, not XHTML (encrypted without declaring it, or corrupt); "
                "use a DRM-free, undamaged copy of this book"
            ) from None
        return parse_html(data, name=name)


def localname(el: etree._Element) -> str:
    """Tag name without namespace, lower-cased ("" for comments and PIs)."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    if tag[0] == "{":
        tag = tag.rpartition("}")[2]
    return tag.lower()


def epub_types(el: etree._Element) -> tuple[str, ...]:
    """The epub:type tokens of an element (namespaced or, in HTML-parsed files, literal)."""
    value = el.get(EPUB_TYPE) or el.get("epub:type") or ""
    return tuple(value.split())


def clean_text(text: str) -> str:
    """Collapse whitespace and drop invisible characters, keeping hard breaks as newlines."""
    text = _INVISIBLE.sub("", text)
    if _BREAK not in text:
        return " ".join(text.split())
    lines = (" ".join(line.split()) for line in text.split(_BREAK))
    return "\n".join(line for line in lines if line)


@dataclass(frozen=True)
class Block:
    """One paragraph of extracted text; ``heading`` when it came from h1-h6 or an hgroup."""

    text: str
    heading: bool = False
    level: int = 0


@dataclass
class Segment:
    """Blocks between two split points; ``anchor`` is the id or tag that opened it."""

    anchor: str | None
    blocks: list[Block] = field(default_factory=list)


def dropped_kind(el: etree._Element, name: str) -> str:
    """Why an element's text is left out: ``hidden``, ``footnote``, or the element (``<script>``)."""
    if is_hidden(el):
        return "hidden"
    if name in _SKIP:
        return f"<{name}>"
    return "footnote"


def element_chars(el: etree._Element) -> int:
    """The counted characters of an element's text (its tail aside)."""
    return counted_chars("".join(el.itertext()))


class _Extractor:
    def __init__(self, split_ids: frozenset[str], split_tags: frozenset[str]) -> None:
        self.dropped: Counter[str] = Counter()  # counted characters left out, by why
        self.split_ids = split_ids
        self.split_tags = split_tags
        self.segments = [Segment(None)]
        self.parts: list[str] = []
        self.heading_level = 0
        self.pre = 0
        self._saved = (0, 0)

    def flush(self) -> None:
        if self.parts:
            text = clean_text("".join(self.parts))
            self.parts.clear()
            if text:
                self.segments[-1].blocks.append(
                    Block(text, heading=self.heading_level > 0, level=self.heading_level)
                )

    def add(self, text: str | None) -> None:
        if text:
            self.parts.append(text.replace("\n", _BREAK) if self.pre else text)

    def walk(self, top: etree._Element) -> None:
        """Read ``top`` and everything inside it, then its tail, depth first with a stack."""
        stack: list[tuple[str, etree._Element, tuple[bool, int, int]]] = [("enter", top, (False, 0, 0))]
        while stack:
            step, el, saved = stack.pop()
            if step == "tail":
                self.add(el.tail)
                continue
            if step == "exit":
                block, level, pre = saved
                if block:
                    self.flush()
                self.heading_level, self.pre = level, pre
                continue
            stack.append(("tail", el, saved))
            name = localname(el)
            if not name or name in _SKIP or self._is_note(el, name) or is_hidden(el):
                if name:  # comments and processing instructions hold no text (itertext skips them)
                    chars = element_chars(el)
                    if chars:
                        self.dropped[dropped_kind(el, name)] += chars
                continue
            opened = self._open(el, name)
            if opened is None:  # <br>: no children to read
                continue
            stack.append(("exit", el, (opened, *self._saved)))
            stack.extend(("enter", child, (False, 0, 0)) for child in reversed(el))
            self.add(el.text)

    def _is_note(self, el: etree._Element, name: str) -> bool:
        if name == "a":
            types = epub_types(el)
            role = el.get("role", "")
            if "noteref" in types or role == "doc-noteref":
                return True
            href = el.get("href", "")
            return "#" in href and bool(_MARKER.match("".join(el.itertext())))
        if name == "aside":
            role = el.get("role", "")
            return bool(_NOTE_ASIDES.intersection(epub_types(el))) or role in (
                "doc-footnote",
                "doc-endnote",
            )
        return False

    def _open(self, el: etree._Element, name: str) -> bool | None:
        """Start element ``el``: split, flush, heading and ``<pre>`` state; whether it is a block
        (None for ``<br>``, which holds nothing). The state to restore is left in ``_saved``."""
        ident = el.get("id")
        if (ident and ident in self.split_ids) or name in self.split_tags:
            self.flush()
            self.segments.append(Segment(ident if ident in self.split_ids else name))
        if name == "br":
            self.parts.append(_BREAK)
            return None
        block = name in _BLOCK
        level = 0
        if name in _HEADINGS:
            level = int(name[1])
        elif name == "hgroup":
            level = 7  # provisional: an hgroup counts as a heading of its own
        if block:
            self.flush()
        self._saved = (self.heading_level, self.pre)
        if level and not self.heading_level:
            self.heading_level = level
        if name == "pre":
            self.pre += 1
        return block


def extract_segments(
    root: etree._Element,
    *,
    split_ids: frozenset[str] = frozenset(),
    split_tags: frozenset[str] = frozenset(),
    dropped: Counter[str] | None = None,
) -> list[Segment]:
    """Paragraph blocks of a document body, cut at elements with ``split_ids`` or ``split_tags``;
    the counted characters of what is left out (hidden, notes, scripts) are added to ``dropped``."""
    body = _find_body(root)
    ex = _Extractor(split_ids, split_tags)
    ex.add(body.text)
    for child in body:
        ex.walk(child)
    ex.flush()
    if dropped is not None:
        dropped.update(ex.dropped)
    return ex.segments


def _find_body(root: etree._Element) -> etree._Element:
    for el in root.iter():
        if localname(el) == "body":
            return el
    return root


def find_body(root: etree._Element) -> etree._Element:
    """The ``<body>`` element of a document (the root when there is none)."""
    return _find_body(root)


def split_title(blocks: list[Block]) -> tuple[str, list[Block]]:
    """Take the leading heading blocks as a title; return (title, remaining blocks)."""
    n = 0
    while n < len(blocks) and blocks[n].heading:
        n += 1
    if n == 0:
        return "", blocks
    title = ": ".join(b.text.replace("\n", " ") for b in blocks[:n])
    return title, blocks[n:]
