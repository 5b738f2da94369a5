"""``map-only``: summarize every chunk on its own and print the summaries in book order.

The first level of hierarchical merging without the merges (BooookScore §3.1): a floor showing
what merging adds. One option, ``per_chunk_tokens`` (``--set per_chunk_tokens=120``), sets the
budget of each chunk's summary; by default the chunks share G equally. Its one template,
``templates/map_chunk.txt``, ships with the package. Every summary goes through booksum's
:func:`generate`: regenerated when invalid, then truncated, as the paper's strategies are.
"""

from __future__ import annotations

from pathlib import Path

from booksum_app.plugin import (
    CallEntry,
    ChatModel,
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
    generate,
    notify,
)

MIN_CHUNK_TOKENS = 16


class MapOnly(StrategyBase):
    """The ``map-only`` strategy."""

    name = "map-only"
    description = "each chunk summarized on its own, the summaries joined in order (no merging)"
    options = (Option("per_chunk_tokens", None, kind=int, minimum=MIN_CHUNK_TOKENS,
                      help="tokens of each chunk's summary (auto: an equal share of G)"),)
    templates_dir = Path(__file__).parent / "templates"

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]:
        return ("map_chunk",)

    def budget(self, config: StrategyConfig, chunks: int) -> int:
        """Tokens of one chunk's summary: the option, else G shared by the chunks."""
        chosen = self.option(config, "per_chunk_tokens")
        return int(chosen) if chosen is not None else max(MIN_CHUNK_TOKENS, config.max_summary_tokens // max(1, chunks))

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """One call per chunk: the chunk and the template in, one budget out."""
        n = len(plan_input.chunk_tokens)
        per = self.budget(plan_input.config, n)
        overhead = plan_input.overhead_tokens["map_chunk"]
        return StrategyPlan(calls=n, input_tokens=sum(plan_input.chunk_tokens) + n * overhead, output_tokens=n * per)

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize each chunk with ``map_chunk`` within the budget; join them."""
        template, per = prompts["map_chunk"], self.budget(job.config, len(job.chunks))
        nodes: list[SummaryNode] = []
        calls: list[CallEntry] = []
        for i, chunk in enumerate(job.chunks):

            def render(words: int, text: str = chunk.text) -> str:
                return template.render(text=text, word_limit=words)

            generation = generate(model, render, max_tokens=per, purpose="map", node=f"map.{i}",
                                  sampling=job.config.sampling)
            calls.extend(generation.calls)
            nodes.append(SummaryNode(
                id=f"map.{i}", kind="map", level=0, index=i, children=(), chunk_span=(i, i), text=generation.text,
                tokens=generation.tokens, budget_tokens=per, words_asked=generation.attempts[0].words_asked,
                prompt_tokens=model.count_tokens(template.render(text=chunk.text, word_limit=0)),
                retries=generation.retries, truncated=generation.truncated, attempts=generation.attempts,
            ))
            notify(on_progress, "chunks", i + 1, len(job.chunks), f"map.{i}")
        summary = "\n\n".join(n.text for n in nodes if n.text)
        return StrategyResult(summary=summary, nodes=tuple(nodes), calls=tuple(calls))
