"""Chapter summaries taken from a hierarchical run (``summarize --chapters``).

With chapter-aware chunking every level-0 summary belongs to one chapter. A chapter's summary
is then, without any extra call, the leaf summary when the chapter is one chunk, or the merge
node whose span is exactly the chapter's chunks when the tree has one; only the other
chapters (several chunks, no node of their own) cost one merge call each, with the ``merge``
template over their leaf summaries, budgeted at G_1 and validated like every summary.

The plan (:func:`plan_chapter_merges`) charges that merge call to every chapter of several
chunks, whether or not the tree will have a node of its own for it: an upper bound, as the
strategy's own plan is.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from booksum_app.books import Book
from booksum_app.chunking.base import Chunk, ChunkSpan
from booksum_app.compression.validity import CallEntry, Regenerator, regenerator
from booksum_app.llm.base import ChatModel, Completion
from booksum_app.runners.chapter_markdown import BOOK_HEADING, CHAPTER_PREFIX, CHAPTERS_HEADING
from booksum_app.strategies import PromptBundle, StrategyConfig, StrategyResult
from booksum_app.strategies.hierarchical import ITEM_OVERHEAD_TOKENS, format_group
from booksum_app.strategies.record import SummaryRecord


@dataclass(frozen=True)
class ChapterSummary:
    """One chapter's summary and where it came from."""

    title: str
    chunk_span: tuple[int, int]  # first and last chunk of the chapter
    text: str
    source: str  # the tree node reused ("L0.3", "L1.0") or "merge" when made by an extra call


@dataclass(frozen=True)
class ChapterMergePlan:
    """Upper bounds on the extra merge calls of ``--chapters``."""

    calls: int
    input_tokens: int
    output_tokens: int


def chapter_chunk_indices(chunks: Sequence[Chunk | ChunkSpan]) -> dict[int, list[int]]:
    """Each chapter's chunk indices, in book order (chapter-aware chunks: one chapter per chunk)."""
    spans: dict[int, list[int]] = {}
    for index, chunk in enumerate(chunks):  # a chunk's index is its position
        for chapter in chunk.chapter_indices[:1]:
            spans.setdefault(chapter, []).append(index)
    return spans


def plan_chapter_merges(
    chunks: Sequence[Chunk | ChunkSpan], *, level_budgets: Sequence[int], max_summary_tokens: int,
    merge_overhead_tokens: int,
) -> ChapterMergePlan:
    """One merge call for every chapter of several chunks, each leaf at G_0 and the answer at G_1."""
    leaf = level_budgets[0] if level_budgets else max_summary_tokens
    answer = level_budgets[1] if len(level_budgets) > 1 else max_summary_tokens
    sizes = [len(indices) for indices in chapter_chunk_indices(chunks).values() if len(indices) > 1]
    return ChapterMergePlan(
        calls=len(sizes),
        input_tokens=sum(merge_overhead_tokens + n * (leaf + ITEM_OVERHEAD_TOKENS) for n in sizes),
        output_tokens=len(sizes) * answer,
    )


def chapter_summaries(
    book: Book,
    chunks: tuple[Chunk, ...],
    result: StrategyResult,
    *,
    model: ChatModel,
    prompts: PromptBundle,
    config: StrategyConfig,
) -> tuple[tuple[ChapterSummary, ...], tuple[CallEntry, ...]]:
    """Every chapter's summary (in book order) and the extra calls made for them."""
    spans = chapter_chunk_indices(chunks)
    by_span = {node.chunk_span: node for node in result.nodes}
    budget = result.level_budgets[1] if len(result.level_budgets) > 1 else config.max_summary_tokens
    found: dict[int, ChapterSummary] = {}
    pending: dict[int, tuple[Regenerator, Future[Completion], Any]] = {}
    template = prompts["merge"]
    for chapter, indices in spans.items():
        span = (indices[0], indices[-1])
        title = book.chapters[chapter].title
        node = by_span.get(span)
        if node is not None:
            found[chapter] = ChapterSummary(title, span, node.text, node.id)
            continue
        leaves = [by_span[(i, i)].text for i in indices if (i, i) in by_span]
        summaries = format_group(leaves)

        def render(words: int, summaries: str = summaries) -> str:
            return template.render(summaries=summaries, word_limit=words)

        regen = regenerator(model, render, max_tokens=budget, purpose="chapter", node=f"chapter.{chapter}",
                            sampling=config.sampling)
        request = regen.request()
        pending[chapter] = (regen, model.submit(request, priority=(0, span[0])), request)
    calls: list[CallEntry] = []
    while pending:
        for chapter, (regen, future, request) in list(pending.items()):
            if regen.feed(request, future.result()):
                generation = regen.result()
                calls.extend(generation.calls)
                span = (spans[chapter][0], spans[chapter][-1])
                found[chapter] = ChapterSummary(book.chapters[chapter].title, span, generation.text, "merge")
                del pending[chapter]
            else:
                retry = regen.request()
                pending[chapter] = (regen, model.submit(retry, priority=(0, 0)), retry)
    return tuple(found[c] for c in sorted(found)), tuple(calls)


def chapters_markdown(book_summary: str, chapters: tuple[ChapterSummary, ...]) -> str:
    """The Markdown of ``summarize --chapters``: the book summary, then one heading per chapter."""
    parts = [BOOK_HEADING, "", book_summary.strip(), "", CHAPTERS_HEADING, ""]
    for chapter in chapters:
        parts += [f"{CHAPTER_PREFIX}{chapter.title}", "", chapter.text.strip(), ""]
    return "\n".join(parts)


def chapters_markdown_from_record(record: SummaryRecord) -> str:
    """:func:`chapters_markdown` of a record written with ``chapters=True``."""
    chapters = tuple(
        ChapterSummary(str(c["title"]), (int(c["chunk_span"][0]), int(c["chunk_span"][1])), str(c["text"]),
                       str(c["source"]))
        for c in record.extra.get("chapters", ())
    )
    return chapters_markdown(record.summary, chapters)


__all__ = ["ChapterMergePlan", "ChapterSummary", "chapter_chunk_indices", "chapter_summaries", "chapters_markdown",
           "chapters_markdown_from_record", "plan_chapter_merges"]
