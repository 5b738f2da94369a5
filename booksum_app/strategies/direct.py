"""Direct long-context baseline (CNNSum §4, App. F.1; CLongEval LStSum).

The whole book goes into one prompt, with the instruction before the text (Prompt-IB,
``--direct-template ib``, the default as in CLongEval) or after it (Prompt-IE). The answer is
budgeted at G tokens and validated like every other summary (regenerated, then truncated).

When the book does not fit (instructions + text + G + margin > W) it is cut in the middle:
the first half of the text budget is filled with whole sentences from the beginning, the
second half with whole sentences from the end, joined by a ``[...]`` line (the head+tail
truncation LongBench and CNNSum use for over-long inputs, at sentence rather than token
boundaries). The record keeps the book's tokens, the tokens kept at each end, and the tokens
cut, and the CLI warns about it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from itertools import accumulate

from booksum_app.chunking.sentences import sentence_spans
from booksum_app.compression.budget import (
    PROMPT_MARGIN_TOKENS,
    check_fits,
    direct_text_budget,
    words_for_tokens,
)
from booksum_app.compression.validity import Generation, generate
from booksum_app.errors import ConfigError, ContextTooLong
from booksum_app.llm.base import ChatModel
from booksum_app.prompts import DIRECT_TEMPLATES
from booksum_app.strategies.base import (
    DirectTruncation,
    Option,
    PlanInput,
    ProgressFn,
    PromptBundle,
    StrategyBase,
    StrategyConfig,
    StrategyJob,
    StrategyPlan,
    StrategyResult,
    SummaryNode,
    notify,
)

HEAD_SHARE = 0.5
TRUNCATION_MARKER = "\n\n[...]\n\n"
MAX_FIT_ROUNDS = 8


def head_tail(
    text: str,
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    lang: str,
    head_share: float = HEAD_SHARE,
) -> tuple[str, str]:
    """Whole sentences from the start (``head_share`` of the budget) and from the end (the rest)."""
    count = count_tokens
    spans = sentence_spans(text, lang=lang)
    sizes = [count(text[s:e]) + 1 for s, e in spans]  # +1: the whitespace joining sentences
    head_budget = int(budget_tokens * head_share)
    tail_budget = budget_tokens - head_budget
    prefix = list(accumulate(sizes))
    n_head = bisect.bisect_right(prefix, head_budget)
    suffix = list(accumulate(reversed(sizes)))
    n_tail = min(bisect.bisect_right(suffix, tail_budget), len(spans) - n_head)
    head = text[: spans[n_head - 1][1]] if n_head else ""
    tail = text[spans[len(spans) - n_tail][0] :] if n_tail else ""
    return head, tail


class Direct(StrategyBase):
    """The ``direct`` strategy."""

    name = "direct"
    description = "direct baseline: the whole book in one prompt (head and tail kept when too long)"
    uses_chunks = False
    calls_model = True
    options = (Option("direct_template", "ib", choices=DIRECT_TEMPLATES,
                      help="the instruction before (ib) or after (ie) the book (CNNSum Prompt-IB/IE)"),)

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]:
        """The one CNNSum template selected by the ``direct_template`` option."""
        return (str(self.option(config, "direct_template")),)

    def base_prompt_set(self, config: StrategyConfig) -> str | None:
        """Direct prompts come from the ``direct`` set (``benchmark``: the benchmarks' verbatim wording)."""
        return "benchmark" if config.prompts == "benchmark" else "direct"

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """One call holding as much of the book as fits (head + tail when truncated)."""
        config = plan_input.config
        overhead = plan_input.overhead_tokens[str(self.option(config, "direct_template"))]
        text_room = direct_text_budget(
            context_window=plan_input.context_window,
            overhead_tokens=overhead,
            max_summary_tokens=config.max_summary_tokens,
        )
        book = sum(plan_input.chunk_tokens)
        return StrategyPlan(
            calls=1,
            input_tokens=min(book, text_room) + overhead,
            output_tokens=config.max_summary_tokens,
            truncated_tokens=max(0, book - text_room),
        )

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize ``job.text`` in one call."""
        cfg = job.config
        text = job.text  # as given: a benchmark sample's context goes in byte for byte
        if not text.strip():
            raise ConfigError("the book has no text to summarize; check --include-front-matter")
        G = cfg.max_summary_tokens
        window = model.info.context_window
        count = model.count_tokens
        template = prompts[str(self.option(cfg, "direct_template"))]
        words = words_for_tokens(G)

        def render(words: int, body: str) -> str:
            if "word_limit" in template.fields:
                return template.render(text=body, word_limit=words)
            return template.render(text=body)

        overhead = count(render(words, ""))
        budget = direct_text_budget(
            context_window=window, overhead_tokens=overhead, max_summary_tokens=G
        )
        if budget < 64:
            raise ContextTooLong(
                f"the model's {window}-token context leaves no room for book text with a {G}-token "
                "summary; lower --max-summary-len or use a model with a larger context window"
            )
        body, truncation = _fit_text(
            text, budget, count=count, lang=cfg.lang,
            fits=lambda body: count(render(words, body)) + G + PROMPT_MARGIN_TOKENS <= window,
        )
        prompt_tokens = count(render(words, body))
        check_fits(
            prompt_tokens=prompt_tokens + PROMPT_MARGIN_TOKENS,
            max_tokens=G,
            context_window=window,
            what="direct prompt",
            fix="lower --max-summary-len",
        )
        generation = generate(model, lambda w: render(w, body), max_tokens=G, purpose="direct", node="direct",
                              sampling=cfg.sampling, words=words, count_tokens=count)
        notify(on_progress, "direct", 1, 1, "direct")
        return StrategyResult(
            summary=generation.text, nodes=(_node(job, generation, G, prompt_tokens),), calls=generation.calls,
            truncation=truncation,
        )


def _node(job: StrategyJob, generation: Generation, budget: int, prompt_tokens: int) -> SummaryNode:
    """The record's one node: the whole book in one call."""
    return SummaryNode(
        id="direct",
        kind="direct",
        level=0,
        index=0,
        children=(),
        chunk_span=(0, max(0, len(job.chunks) - 1)),
        text=generation.text,
        tokens=generation.tokens,
        budget_tokens=budget,
        words_asked=generation.attempts[-1].words_asked,
        prompt_tokens=prompt_tokens,
        retries=generation.retries,
        truncated=generation.truncated,
        attempts=generation.attempts,
    )


def _fit_text(
    text: str, budget: int, *, count: Callable[[str], int], lang: str, fits: Callable[[str], bool]
) -> tuple[str, DirectTruncation | None]:
    """The book text as it goes in the prompt: whole when it fits ``budget``, else head + tail."""
    book_tokens = count(text)
    if book_tokens <= budget:
        return text, None
    target = budget
    for _ in range(MAX_FIT_ROUNDS):  # per-sentence counts are estimates: shrink until it fits
        head, tail = head_tail(text, budget_tokens=target, count_tokens=count, lang=lang)
        body = head + TRUNCATION_MARKER + tail
        if fits(body):
            break
        target = int(target * 0.97)
    head_tokens, tail_tokens = count(head), count(tail)
    return body, DirectTruncation(
        book_tokens=book_tokens,
        text_budget_tokens=budget,
        head_tokens=head_tokens,
        tail_tokens=tail_tokens,
        cut_tokens=max(0, book_tokens - head_tokens - tail_tokens),
        head_share=HEAD_SHARE,
        marker=TRUNCATION_MARKER.strip(),
    )


__all__ = ["HEAD_SHARE", "TRUNCATION_MARKER", "Direct", "head_tail"]
