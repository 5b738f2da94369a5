"""PDF books made in the tests with reportlab: running heads, page numbers, an outline or none,
broken words, image-only (scanned) pages, encryption."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from reportlab.lib.pagesizes import A5
from reportlab.lib.utils import ImageReader, simpleSplit
from reportlab.pdfgen import canvas

WIDTH, HEIGHT = A5
LEFT, TOP, BOTTOM = 50, HEIGHT - 70, 60
BODY = ("Times-Roman", 11)


@dataclass
class PdfBook:
    chapters: list[tuple[str, list[str]]]
    title: str = "The Test Book"
    author: str = "A. Writer"
    outline: bool = True
    head: str | None = "The Test Book"  # a running head on every page
    chapter_heads: bool = False  # the chapter's title as a second running head on its pages
    numbers: str | None = "bare"  # "bare" ("12"), "page of" ("Page 12 of 40"), "dashes" ("- 12 -"), None
    numbers_at_top: bool = False
    break_words: bool = False  # hyphenate long words at line ends
    scanned_pages: int = 0  # image-only pages after the text
    encrypt: str | None = None  # a user password
    chapter_on_new_page: bool = True
    extra_lines: list[str] = field(default_factory=list)


def _wrap(text: str, width: float, *, break_words: bool) -> list[str]:
    lines = simpleSplit(text, *BODY, width)
    if not break_words:
        return lines
    out: list[str] = []
    carry = ""
    for line in lines:
        line = (carry + " " + line).strip() if carry else line
        carry = ""
        words = line.split(" ")
        last = words[-1]
        if len(words) > 2 and len(last) >= 8 and last.isalpha():
            cut = len(last) // 2
            out.append(" ".join(words[:-1]) + " " + last[:cut] + "-")
            carry = last[cut:]
        else:
            out.append(line)
    if carry:
        out.append(carry)
    return out


def _scan_image() -> ImageReader:
    from PIL import Image, ImageDraw

    image = Image.new("L", (300, 420), 255)
    draw = ImageDraw.Draw(image)
    for y in range(20, 400, 14):
        draw.line((20, y, 280, y), fill=0, width=3)  # lines of "text", as pixels
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    buf.seek(0)
    return ImageReader(buf)


def write_pdf(path: Path, book: PdfBook) -> Path:
    """Lay ``book`` out on A5 pages as a typesetter would and write it to ``path``."""
    kwargs = {"encrypt": book.encrypt} if book.encrypt else {}
    c = canvas.Canvas(str(path), pagesize=A5, **kwargs)
    c.setTitle(book.title)
    c.setAuthor(book.author)
    state = {"page": 1, "y": TOP, "chapter": ""}

    def furniture() -> None:
        c.setFont("Times-Italic", 9)
        if book.head:
            c.drawCentredString(WIDTH / 2, HEIGHT - 35, book.head)
        if book.chapter_heads and state["chapter"] and state["page"] % 2 == 1:
            c.drawRightString(WIDTH - LEFT, HEIGHT - 47, str(state["chapter"]))
        label = {"bare": str(state["page"]), "page of": f"Page {state['page']} of 99",
                 "dashes": f"- {state['page']} -"}.get(book.numbers or "")
        if label:
            c.drawCentredString(WIDTH / 2, HEIGHT - 22 if book.numbers_at_top else 30, label)

    def new_page() -> None:
        furniture()
        c.showPage()
        state["page"] = int(state["page"]) + 1
        state["y"] = TOP

    def line(text: str, *, font: tuple[str, int] = BODY, indent: float = 0, gap: float = 14) -> None:
        if float(state["y"]) < BOTTOM:
            new_page()
        c.setFont(*font)
        c.drawString(LEFT + indent, float(state["y"]), text)
        state["y"] = float(state["y"]) - gap

    for n, (title, paragraphs) in enumerate(book.chapters):
        if n and book.chapter_on_new_page or float(state["y"]) - 34 < BOTTOM:
            new_page()  # a title never stands alone at a page's foot, nor heads a page it is not on
        state["chapter"] = title
        key = f"chapter-{n}"
        c.bookmarkHorizontal(key, 0, float(state["y"]) + 20)
        if book.outline:
            c.addOutlineEntry(title, key, level=0)
        state["y"] = float(state["y"]) - 6
        line(title, font=("Times-Bold", 15), gap=28)
        for paragraph in paragraphs:
            for i, text in enumerate(_wrap(paragraph, WIDTH - 2 * LEFT - 14, break_words=book.break_words)):
                line(text, indent=14 if i == 0 else 0)
    for text in book.extra_lines:
        line(text)
    new_page()
    for _ in range(book.scanned_pages):
        c.drawImage(_scan_image(), 20, 20, WIDTH - 40, HEIGHT - 40)
        c.showPage()
    c.save()
    return path


WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "Mara", "bakes",
         "extraordinary", "bread", "and", "Teo", "carries", "unquestionably", "heavy", "baskets", "through",
         "the", "marketplace")


def sample_paragraphs(seed: int, count: int = 6) -> list[str]:
    """Deterministic prose: sentences of the words above, each paragraph ending with a period."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."
                     for _ in range(rng.randint(2, 6))]
        out.append(" ".join(sentences))
    return out


def sample_book(chapters: int = 3, **kwargs: object) -> PdfBook:
    return PdfBook([(f"Chapter {n}", sample_paragraphs(n)) for n in range(1, chapters + 1)], **kwargs)  # type: ignore[arg-type]


def amplifying_pdf(pages: int, lines: int, *, words: int = 12, shared: bool = True) -> bytes:
    """``pages`` pages that all draw one Flate-compressed content stream of ``lines`` lines of ``words``
    words (``shared``), or each its own copy: a few hundred KB that pypdf extracts as megabytes."""
    import io as _io

    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                                                NameObject("/Subtype"): NameObject("/Type1"),
                                                NameObject("/BaseFont"): NameObject("/Helvetica")}))
    line = " ".join(["amplified"] * words)
    ops = ["BT /F1 6 Tf 20 800 Td 7 TL", *(f"({line}) '" for _ in range(lines)), "ET"]

    def stream() -> object:
        content = DecodedStreamObject()
        content.set_data("\n".join(ops).encode())
        return writer._add_object(content.flate_encode())

    one = stream()
    for _ in range(pages):
        page = writer.add_blank_page(595, 842)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        page[NameObject("/Contents")] = one if shared else stream()
    out = _io.BytesIO()
    writer.write(out)
    return out.getvalue()
