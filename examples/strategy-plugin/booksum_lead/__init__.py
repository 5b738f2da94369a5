"""``lead``: an extractive baseline strategy for booksum, shipped as a third-party plugin.

The summary is the leading sentences of each chapter, packed within the summary budget G:
round-robin over the chapters (every chapter's first sentence, then every chapter's second,
...) until the next sentence would pass G, then printed in book order. No LLM call is made,
so it costs nothing and is a floor that any LLM strategy should beat (the lead baseline of
news summarization, applied per chapter). With more chapters than G allows one sentence
each, the earliest chapters are kept.

Everything booksum needs is in this module and one entry point in ``pyproject.toml``; it
imports only ``booksum_app.plugin``. ``map_only.py`` is the second strategy of this package: one
that calls a model, with an option and a template of its own.
"""

from __future__ import annotations

from booksum_app.plugin import (
    ChatModel,
    PlanInput,
    ProgressFn,
    PromptBundle,
    StrategyBase,
    StrategyJob,
    StrategyPlan,
    StrategyResult,
    SummaryNode,
    notify,
    split_sentences,
)


class Lead(StrategyBase):
    """The ``lead`` strategy."""

    name = "lead"
    description = "lead baseline: the first sentences of each chapter within G, no LLM call"
    uses_chunks = False  # reads chapters, not chunks: the chunk size changes nothing
    calls_model = False  # so booksum needs no model (only its tokenizer) and skips artifact removal

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """Zero calls, zero tokens: the plan of a free baseline."""
        return StrategyPlan(calls=0, input_tokens=0, output_tokens=0)

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Pack leading sentences of each chapter into G tokens (counted with the model's tokenizer)."""
        chapters = job.chapters or (("", job.text),)
        lang = job.config.lang
        sentences = [split_sentences(text, lang=lang) for _, text in chapters]
        budget = job.config.max_summary_tokens
        chosen: list[list[str]] = [[] for _ in chapters]
        used = 0
        depth = 0
        while any(depth < len(s) for s in sentences):
            for i, chapter_sentences in enumerate(sentences):
                if depth >= len(chapter_sentences):
                    continue
                cost = model.count_tokens(chapter_sentences[depth]) + 1
                if used + cost > budget:
                    return self._result(chosen, chapters, used, budget, on_progress)
                chosen[i].append(chapter_sentences[depth])
                used += cost
            depth += 1
        return self._result(chosen, chapters, used, budget, on_progress)

    def _result(
        self,
        chosen: list[list[str]],
        chapters: tuple[tuple[str, str], ...],
        used: int,
        budget: int,
        on_progress: ProgressFn | None,
    ) -> StrategyResult:
        first = next((s[0] for s in chosen if s), "")
        joiner = "" if any(ord(c) > 0x2E7F for c in first[:50]) else " "  # CJK sentences join without spaces
        summary = "\n\n".join(joiner.join(s) for s in chosen if s)
        notify(on_progress, "lead", len(chapters), len(chapters))
        node = SummaryNode(
            id="lead", kind="lead", level=0, index=0, children=(), chunk_span=(0, 0), text=summary,
            tokens=used, budget_tokens=budget, words_asked=0, prompt_tokens=0,
        )
        return StrategyResult(summary=summary, nodes=(node,), calls=())
