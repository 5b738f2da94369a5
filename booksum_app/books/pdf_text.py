"""PDF page text to paragraphs: running heads, footers and page numbers out, broken words joined.

Works on the lines of each page as pypdf's layout extraction gives them (words placed by
their position, a blank line where the page has a vertical gap, leading spaces where a line
starts right of the page's text margin). Three things a printed page carries that the book
does not:

- **Running heads and footers**: a line at a page's top or foot set apart from the body by a
  vertical gap, whose text, digits aside, comes back so at another page ("The Time Machine",
  "Chapter III 41"); a short last line of a paragraph at a page's foot is never one. A
  chapter heading that is also the running head of its chapter stays once, where it opens
  the chapter.
- **Page numbers**: an edge line that is only a number ("12", "- 12 -", "[12]", "xii"),
  "Page 12", "Page 12 of 300" or "12 / 300".
- **Line-end hyphens**: "extra-" at the end of a line followed by "ordinary" at the start of
  the next (on the same page or the next one) is "extraordinary"; a hyphen before an
  upper-case letter or a digit ("Anglo-" / "Saxon") is kept.

Paragraphs: a blank line, a line indented past the page's margin, or a line after a short
line that ends a sentence starts a new one; a paragraph runs on across a page break unless
the next page's first line starts one.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Sequence

SHORT_LINE = 0.7  # a line ending a sentence under this share of a full line's length ends its paragraph
APART_LINES = 5  # a page's head (number, book, chapter, title) above its first gap: more is body text
EDGE_LINES = 3  # lines at the top and at the bottom of a page where heads and footers live
# lower-case Roman numerals only: "xii" numbers a preface's page, "XII" or "I" heads a chapter
_PAGE_NUMBER = re.compile(
    r"^(?:[-–—\[(]\s*)?(?:\d{1,5}|[ivxlcdm]{1,8})(?:\s*[-–—\])])?$"
    r"|^(?i:page|p\.|seite|página|pagina)\s*\d{1,5}(?:\s*(?i:of|/|von|de|di)\s*\d{1,5})?$"
    r"|^\d{1,5}\s*(?:of|/)\s*\d{1,5}$"
)
_DIGITS = re.compile(r"\d+")
_BROKEN_WORD = re.compile(r"(?<=[^\W\d_])-$")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")  # "dinner-table" inside a line: a word with its hyphen
_ATTACHED_DASH = re.compile(r"[^\W\d_][-‐—]$")  # a dash after a letter with no space: the line broke at it
_LAST_WORD = re.compile(r"[^\W\d_]+$")
_FIRST_WORD = re.compile(r"[^\W\d_]+")
_INVISIBLE = re.compile("[\u2060\u200b\ufeff\u200c\u200d\u00ad]")  # joiners, zero-width spaces, soft hyphens
_SENTENCE_END = re.compile(r"[.!?:;…\"'”’»)\]]$")


def head_key(line: str) -> str:
    """What makes two edge lines one running head: the words, case and digits aside."""
    return _DIGITS.sub("#", " ".join(line.split()).lower())


def is_page_number(line: str) -> bool:
    """A line that is only a page number ("12", "- 12 -", "xii", "Page 3 of 40", "3 / 40")."""
    return bool(_PAGE_NUMBER.match(" ".join(line.split())))


def edge_lines(lines: Sequence[str]) -> list[int]:
    """Indices of the first and last :data:`EDGE_LINES` non-blank lines of a page."""
    return _edges(lines)


def _set_apart(lines: Sequence[str]) -> set[int]:
    """The edge lines a blank line (a vertical gap) sets apart from the page's body: those above
    the first gap and below the last one, at most :data:`APART_LINES` each. A short last line of
    a paragraph at a page's foot ("extraordinary.") sits against the body and is never one."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    apart: set[int] = set()
    for run in (filled, filled[::-1]):
        block = []
        for a, b in itertools.pairwise(run):
            block.append(a)
            if abs(b - a) > 1:  # a blank line between them
                break
        else:
            block = []  # no gap at all: nothing is set apart
        if len(block) <= APART_LINES:
            apart.update(block)
    return apart


def _edges(lines: Sequence[str]) -> list[int]:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def strip_page_furniture(
    pages: Sequence[Sequence[str]], *, is_heading: Callable[[str], bool] = lambda line: False,
    title: str = "",
) -> list[list[str]]:
    """Each page's lines without running heads, footers and page numbers (blank lines kept).

    ``title`` (the document's own, from its information) is a running head wherever it stands
    set apart at a page's edge, even in a book of one page.

    ``is_heading(line)`` says which lines may open a chapter. A heading opens its chapter once:
    at its first appearance below the top three lines of a page (the chapter opening mid-page,
    or at a page's foot), else at its first appearance; at a page's edge anywhere else it is a
    running head ("Chapter 2" above the pages of chapter 2, and above the page where it opens,
    as LaTeX heads a page with its last chapter). Any other edge line is furniture when it comes
    back, digits aside, at the edge of another page.
    """
    seen_on: Counter[str] = Counter()
    apart = [_set_apart(lines) for lines in pages]
    for lines, edges in zip(pages, apart, strict=True):
        seen_on.update({head_key(lines[i]) for i in edges if len(lines[i].strip()) <= 100})
    repeated = {key for key, count in seen_on.items() if count >= 2}
    if title.strip():
        repeated.add(head_key(title))
    openings = _heading_openings(pages, is_heading)
    out: list[list[str]] = []
    for p, lines in enumerate(pages):
        edges = set(_edges(lines))
        kept: list[str] = []
        for i, raw in enumerate(lines):
            line = raw.strip()
            if line and is_heading(line):  # a heading is a head only where it does not open its chapter
                doomed = (i in edges or i in apart[p]) and openings.get(" ".join(line.split()).lower()) != (p, i)
            else:
                doomed = (i in edges and is_page_number(line)) or (i in apart[p] and head_key(line) in repeated)
            kept.append("" if doomed else raw)
        out.append(kept)
    return out


def _heading_openings(
    pages: Sequence[Sequence[str]], is_heading: Callable[[str], bool]
) -> dict[str, tuple[int, int]]:
    """Where each heading opens its chapter, as (page, line): its first appearance below the top
    of a page (a running head sits at the top, above a chapter opening mid-page or at the foot),
    else its first appearance. A page with three different headings or more is a table of
    contents: its lines open nothing."""
    first: dict[str, tuple[int, int]] = {}
    below_top: dict[str, tuple[int, int]] = {}
    for p, lines in enumerate(pages):
        filled = [i for i, line in enumerate(lines) if line.strip()]
        headings = [i for i in filled if is_heading(lines[i].strip())]
        if len({" ".join(lines[i].split()).lower() for i in headings}) >= 3:
            continue
        top = set(filled[:EDGE_LINES])
        for i in headings:
            key = " ".join(lines[i].split()).lower()
            first.setdefault(key, (p, i))
            if i not in top:
                below_top.setdefault(key, (p, i))
    return {**first, **below_top}


def _visible(line: str) -> str:
    """The line without characters of no width; a soft hyphen ending it is where a word broke."""
    line = line.rstrip()
    broken = line.endswith("\u00ad")
    return _INVISIBLE.sub("", line) + ("-" if broken else "")


def _margin(lines: Sequence[str]) -> int:
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    return Counter(indents).most_common(1)[0][0] if indents else 0


def page_blocks(
    pages: Sequence[Sequence[str]], *, is_heading: Callable[[str], bool] = lambda line: False
) -> list[list[str]]:
    """Paragraph blocks (lists of lines, broken words joined) of the pages read in order; a
    heading line (``is_heading``) starts a block of its own, wherever it stands on its page."""
    pages = [[_visible(line) for line in lines] for lines in pages]
    compounds = {m.group(0).lower() for lines in pages for line in lines for m in _COMPOUND.finditer(line)}
    widths = sorted(len(line.strip()) for lines in pages for line in lines if line.strip())
    full = widths[len(widths) * 3 // 4] if widths else 0  # a full line's length
    blocks: list[list[str]] = []
    current: list[str] = []
    for lines in pages:
        margin = _margin(lines)
        blank_before = on_page = False
        for raw in lines:
            line = raw.rstrip()
            if not line.strip():
                blank_before = on_page  # the blank lines of a removed head are no paragraph break
                continue
            on_page = True
            indent = len(line) - len(line.lstrip(" "))
            text = " ".join(line.split())
            starts = blank_before or indent > margin + 1 or not current or is_heading(text)
            if current and not starts:
                previous = current[-1]
                starts = bool(_SENTENCE_END.search(previous)) and len(previous) < SHORT_LINE * full
            if current and blank_before and _BROKEN_WORD.search(current[-1]) and text[:1].islower():
                starts = False  # "extra-" / page break / "ordinary": one word across the gap
            if starts and current:
                blocks.append(current)
                current = []
            if current and _BROKEN_WORD.search(current[-1]) and text[:1].islower():
                current[-1] = _join_broken(current[-1], text, compounds)
            elif current and _ATTACHED_DASH.search(current[-1]):
                current[-1] += text  # "and—" / "Duration", "Time-" / "Dimension": no space was there
            else:
                current.append(text)
            blank_before = False
        # a page break is no paragraph break: the next page's first line decides
    if current:
        blocks.append(current)
    return blocks


def _join_broken(line: str, following: str, compounds: set[str]) -> str:
    """``line`` ending in "word-" joined to ``following``: "extra-" + "ordinary" is "extraordinary",
    but "dinner-" + "table" stays "dinner-table" when the book writes "dinner-table" elsewhere."""
    head = _LAST_WORD.search(line[:-1])
    tail = _FIRST_WORD.match(following)
    if head and tail and f"{head.group(0)}-{tail.group(0)}".lower() in compounds:
        return line + following
    return line[:-1] + following


def blocks_text(blocks: Sequence[Sequence[str]]) -> str:
    """Blocks as plain text for the text reader: lines kept, a blank line between blocks."""
    return "\n\n".join("\n".join(block) for block in blocks)


__all__ = ["blocks_text", "edge_lines", "head_key", "is_page_number", "page_blocks", "strip_page_furniture"]
