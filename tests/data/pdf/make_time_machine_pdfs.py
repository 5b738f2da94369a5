"""How time-machine-groff.pdf and time-machine-qt.pdf were made (kept for the record; tests only read the PDFs).

Source: Standard Ebooks' "The Time Machine" (H. G. Wells, 1895; public domain; Standard Ebooks
dedicates its edition to the public domain, CC0), the epub of ``booksum data fetch sample-books``.

    python make_time_machine_pdfs.py EPUB_UNZIPPED_DIR
    groff -k -ms -Tpdf -P-pa5 -dpaper=a5 tm.ms > time-machine-groff.pdf      # groff 1.22.4 (Debian 12)
    wkhtmltopdf -q -s A5 --title "The Time Machine" book.html time-machine-qt.pdf   # 0.12.6, Qt 5.15.8

The groff edition has an outline (a bookmark per chapter), a running head ("The Time Machine" and
the chapter) and a page number on every page, and hyphenates; the Qt edition has none of these
(Debian's wkhtmltopdf is built without headers, footers and outlines) and Roman-numeral headings.
"""

import sys
from pathlib import Path

from lxml import etree

XHTML = "{http://www.w3.org/1999/xhtml}"
root = Path(sys.argv[1]) / "epub" / "text"
parts = [f"chapter-{i}" for i in range(1, 13)] + ["epilogue"]

ms = [".ds LH The Time Machine", ".ds CH", ".ds RH \\\\*[CHAPTER]", ".ds CF \\\\n%", ".nr PS 11", ".nr VS 13",
      ".nr PO 0.8i", ".nr LL 4.2i", ".hy 14", ".TL", "The Time Machine", ".AU", "H. G. Wells",
      ".pdfinfo /Title The Time Machine", ".pdfinfo /Author H. G. Wells"]
html = []
for name in ["titlepage", *parts]:
    doc = etree.parse(str(root / f"{name}.xhtml")).getroot()
    body = doc.find(f".//{XHTML}body")
    html.append(etree.tostring(body, encoding="unicode").split(">", 1)[1].rsplit("<", 1)[0])
    if name == "titlepage":
        continue
    title = "".join(body.find(f".//{XHTML}h2").itertext()).strip()
    label = f"Chapter {title}" if name.startswith("chapter") else title
    ms += [".bp", f".ds CHAPTER {label}", f'.pdfbookmark 1 "{label}"', ".SH", label]
    for p in body.iter(f"{XHTML}p"):
        text = " ".join("".join(p.itertext()).replace("\\", "\\e").split())
        if text:
            ms += [".PP", "\\&" + text if text.startswith((".", "'")) else text]
Path("tm.ms").write_text("\n".join(ms) + "\n", encoding="utf-8")
style = ("body{font-family:serif;font-size:11pt;text-align:justify} h2{page-break-before:always;text-align:center}"
         " p{margin:0;text-indent:1.5em} section{page-break-before:always}")
Path("book.html").write_text(f'<!DOCTYPE html><html lang="en-GB"><head><meta charset="utf-8"><title>The Time Machine'
                             f"</title><style>{style}</style></head><body>{''.join(html)}</body></html>",
                             encoding="utf-8")
