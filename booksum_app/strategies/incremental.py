"""Incremental updating (BooookScore §2, App. A.2, App. A.2.1, App. J.1).

1. ``inc_init`` summarizes chunk 1 -> S_1.
2. For each next chunk c_i, ``inc_update`` rewrites S_{i-1} with c_i -> S_i.
3. Whenever S_i exceeds G tokens it is compressed (``compress``, temperature 1.0, bounded
   retries, then truncation at a sentence end: :func:`booksum_app.compression.compress_to_budget`).

Budget policy (:mod:`booksum_app.compression.budget`): the prompts ask for the progress target
``max(min(G, 128), G * i / n)`` tokens' worth of words after chunk i of n (the reference
code's growing target), and a compression brings S_i down to that target, so the running
summary grows with progress through the book and reaches G only at the end. Init/update calls
may write up to 1.5 G tokens so an over-long summary arrives complete and can be compressed
(an answer cut off even there is regenerated, then truncated). Deviation from the reference
code: on overflow it compresses S_{i-1} and redoes the update; we compress S_i as App. A.2
step 3 describes, which costs one call less per overflow.

The calls are sequential by nature (each update needs the previous summary).
"""

from __future__ import annotations

from booksum_app.compression.budget import (
    PROMPT_MARGIN_TOKENS,
    check_fits,
    inc_target_tokens,
    inc_update_max_tokens,
    words_for_tokens,
)
from booksum_app.compression.compress import compress_to_budget
from booksum_app.compression.validity import CallEntry, Generation, generate
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ChatModel
from booksum_app.prompts import Template
from booksum_app.strategies.base import (
    CompressionInfo,
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

TEMPLATES = ("inc_init", "inc_update", "compress")


class Incremental(StrategyBase):
    """The ``inc`` strategy."""

    name = "inc"
    description = (
        "incremental updating: keep one running summary, update it chunk by chunk, compress past G"
    )
    uses_chunks = True
    calls_model = True

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]:
        """Templates this strategy renders."""
        return TEMPLATES

    def base_prompt_set(self, config: StrategyConfig) -> str | None:
        """None: the configured summarization set."""
        return None

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """One call per chunk with the running summary at its target, plus at most one compression per update."""
        overhead, g = plan_input.overhead_tokens, plan_input.config.max_summary_tokens
        n = len(plan_input.chunk_tokens)
        update_max = inc_update_max_tokens(max_summary_tokens=g)
        calls = input_tokens = output_tokens = 0
        for i, tokens in enumerate(plan_input.chunk_tokens):
            running = 0 if i == 0 else inc_target_tokens(i - 1, n, max_summary_tokens=g)
            calls += 1
            input_tokens += tokens + running + overhead["inc_update" if i else "inc_init"]
            output_tokens += update_max
            if i:  # the summary can only overflow G once per update
                calls += 1
                input_tokens += update_max + overhead["compress"]
                output_tokens += inc_target_tokens(i, n, max_summary_tokens=g)
        return StrategyPlan(calls, input_tokens, output_tokens)

    def record_fields(self, config: StrategyConfig) -> dict[str, object]:
        """Nothing beyond the shared configuration."""
        return {}

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize ``job.chunks`` by incremental updating."""
        cfg = job.config
        if not job.chunks:
            raise ConfigError(
                "the book has no text to summarize (no chunks); check --include-front-matter"
            )
        G = cfg.max_summary_tokens
        window = model.info.context_window
        count = model.count_tokens
        cap = _update_cap(G, model.info.max_output_tokens)
        n = len(job.chunks)
        nodes: list[SummaryNode] = []
        calls: list[CallEntry] = []
        running = ""
        for i, chunk in enumerate(job.chunks):
            target = inc_target_tokens(i, n, max_summary_tokens=G)
            template = prompts["inc_init"] if i == 0 else prompts["inc_update"]
            previous = running

            def render(
                words: int,
                text: str = chunk.text,
                previous: str = previous,
                template: Template = template,
            ) -> str:
                if "summary" not in template.fields:
                    return template.render(text=text, word_limit=words)
                return template.render(text=text, summary=previous, word_limit=words)

            words = words_for_tokens(target)
            prompt_tokens = count(render(words))
            room = window - prompt_tokens - PROMPT_MARGIN_TOKENS
            max_tokens = min(cap, room)
            if max_tokens < G:  # the update must at least be able to write a G-token summary
                check_fits(
                    prompt_tokens=prompt_tokens + PROMPT_MARGIN_TOKENS,
                    max_tokens=G,
                    context_window=window,
                    what=f"update with chunk {i}",
                    fix=f"lower --chunk-size (now {cfg.chunk_size}) or --max-summary-len",
                )
            generation = generate(model, render, max_tokens=max_tokens, purpose="inc_init" if i == 0 else "inc_update",
                                  node=f"inc.{i}", sampling=cfg.sampling, words=words, count_tokens=count)
            calls.extend(generation.calls)
            running, tokens = generation.text, generation.tokens
            compression: CompressionInfo | None = None
            if tokens > G:
                running, tokens, compression, more = _compress(running, target, node=f"inc.{i}", model=model,
                                                               prompts=prompts, cfg=cfg)
                calls.extend(more)
            nodes.append(_node(i, running, tokens, target, generation, prompt_tokens, compression))
            notify(on_progress, "updates", i + 1, n, f"inc.{i}")
        return StrategyResult(summary=running, nodes=tuple(nodes), calls=tuple(calls))


def _node(
    i: int, text: str, tokens: int, target: int, generation: Generation, prompt_tokens: int,
    compression: CompressionInfo | None,
) -> SummaryNode:
    """The record's node of update ``i``: the running summary after chunk ``i``."""
    return SummaryNode(
        id=f"inc.{i}",
        kind="inc_init" if i == 0 else "inc_update",
        level=0,
        index=i,
        children=(),
        chunk_span=(0, i),
        text=text,
        tokens=tokens,
        budget_tokens=target,
        words_asked=generation.attempts[-1].words_asked,
        prompt_tokens=prompt_tokens,
        retries=generation.retries,
        truncated=generation.truncated,
        attempts=generation.attempts,
        compression=compression,
    )


def _update_cap(max_summary_tokens: int, max_output_tokens: int | None) -> int:
    """``max_tokens`` of an update call, within the model's output limit."""
    cap = inc_update_max_tokens(max_summary_tokens=max_summary_tokens)
    if max_output_tokens is None:
        return cap
    if max_summary_tokens > max_output_tokens:
        raise ConfigError(
            f"--max-summary-len {max_summary_tokens} exceeds the model's {max_output_tokens}-token output "
            "limit; lower it"
        )
    return min(cap, max_output_tokens)


def _compress(
    running: str, target: int, *, node: str, model: ChatModel, prompts: PromptBundle, cfg: StrategyConfig
) -> tuple[str, int, CompressionInfo, tuple[CallEntry, ...]]:
    """Compress an update past G to its target: ``(text, tokens, what was done, calls)``."""
    result = compress_to_budget(
        running,
        model=model,
        max_tokens=target,
        template=prompts["compress"],
        lang=cfg.lang,
        max_tries=cfg.max_tries,
        node=node,
        temperature=cfg.compression_temperature,
        top_p=cfg.top_p,
    )
    info = CompressionInfo(
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        target_tokens=target,
        truncated=result.truncated,
        attempts=result.attempts,
        text_before=running,
    )
    return result.text, result.output_tokens, info, tuple(result.calls)


__all__ = ["Incremental"]
