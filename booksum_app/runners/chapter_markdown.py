"""The layout of ``summarize --chapters``' Markdown, and reading it back (``score`` of such a file).

``## The book``, the book's summary, ``## Chapter by chapter``, then ``### <title>`` and the
chapter's summary per chapter.
"""

from __future__ import annotations

BOOK_HEADING, CHAPTERS_HEADING, CHAPTER_PREFIX = "## The book", "## Chapter by chapter", "### "


def split_chapters_markdown(text: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The book summary and ``(title, summary)`` per chapter of a :func:`chapters_markdown` text;
    None when ``text`` is not laid out so (its first line the book heading, then the chapters heading)."""
    lines = text.strip("\n").split("\n")
    if not lines or lines[0] != BOOK_HEADING or CHAPTERS_HEADING not in lines:
        return None
    at = lines.index(CHAPTERS_HEADING)
    book = "\n".join(lines[1:at]).strip()
    chapters: list[tuple[str, list[str]]] = []
    for line in lines[at + 1:]:
        if line.startswith(CHAPTER_PREFIX):
            chapters.append((line[len(CHAPTER_PREFIX):], []))
        elif chapters:
            chapters[-1][1].append(line)
        elif line.strip():
            return None  # text between the chapters heading and the first chapter: not our layout
    return book, tuple((title, "\n".join(body).strip()) for title, body in chapters)


__all__ = ["BOOK_HEADING", "CHAPTERS_HEADING", "CHAPTER_PREFIX", "split_chapters_markdown"]
