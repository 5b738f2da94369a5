"""Hierarchical merging (BooookScore §2, App. A.1, App. J.2; Wu et al. 2021).

1. Level 0: summarize every chunk (``summarize_chunk``) within G_0; these calls are
   independent and are all submitted at once.
2. Level l >= 1: consecutive summaries of level l-1 go into one merge call while instructions +
   prior context + inputs + G_l + margin <= W (real token counts, headers included): greedy, in
   book order, as many as fit (BooookScore §2), so the tree is as shallow as the real summary
   lengths allow. The plan (:func:`plan_hier`) packs worst-case lengths, so it is an upper bound
   on depth and calls; the record's ``extra["tree"]`` holds the planned and the built nodes per
   level. The first group of a level uses ``merge``;
   later ones ``merge_with_context`` with the previous merged summary of the level as context,
   cut at a sentence end to ``min(G_l, 20 % of the free room)`` tokens, its beginning kept.
3. Repeat until one summary, the root (budget G), is left. Budgets and shape: ``plan_hier``.

Every summary is validated (:mod:`booksum_app.compression.validity`): regenerated when empty,
cut off, over budget or unfinished, then truncated at a sentence end.

Scheduling: a dependency-driven event loop over answers as they come, with priorities: when calls
wait for a slot, merges and regenerations (something waits for them) start before first tries of
leaves, earliest part of the book first. All leaves are submitted at once; a merge group of level
l+1 starts as soon as the level-l summaries it covers exist, its boundary is known (the next
summary overflows it, or level l is complete) and, for later groups, the previous group of its
level has finished (the prior-context chain). Levels therefore overlap and the wall time approaches
the critical path (longest dependency chain), not the sum of per-level rounds. Deviation from
App. A.1 step 1: level-0 calls summarize one chunk each (the reference code does too); the chunk
size already fills the budgeted context.

``hier-evidence`` (:mod:`.hier_evidence`) is this run with other merge templates and source
passages beside each merged summary, through four hooks of ``_Run`` (``item_extra_budget``,
``item_extra``, ``group_fields``, ``result_extra``) that add nothing here.
"""

from __future__ import annotations

import dataclasses
import queue
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from booksum_app.compression.budget import (
    PROMPT_MARGIN_TOKENS,
    HierPlan,
    MergeRoom,
    check_fits,
    merge_room,
    plan_hier,
    words_for_tokens,
)
from booksum_app.compression.validity import (
    CallEntry,
    Generation,
    Regenerator,
    regenerator,
    truncate_at_sentence_end,
)
from booksum_app.errors import ConfigError
from booksum_app.llm.base import ChatModel, Completion, Request
from booksum_app.strategies.base import (
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

ITEM_HEADER = "Summary {k}:\n\n"
ITEM_SEPARATOR = "\n\n"
ITEM_OVERHEAD_TOKENS = 8  # plans: numbering and separators around each merged summary (measured: 5-6)


def format_group(texts: list[str]) -> str:
    """The numbered inputs of one merge call (as in the reference implementation)."""
    return ITEM_SEPARATOR.join(ITEM_HEADER.format(k=k) + t for k, t in enumerate(texts, start=1))


@dataclass
class _Level:
    """Run-time state of one level of the tree."""

    nodes: dict[int, SummaryNode] = field(default_factory=dict)
    groups: list[tuple[int, int]] = field(default_factory=list)  # (start, end) over the level below
    next_start: int = 0  # first summary of the level below not yet in a group
    in_flight: bool = False
    complete: bool = False

    @property
    def count(self) -> int:
        return len(self.groups)


@dataclass(frozen=True)
class _Pending:
    regenerator: Regenerator
    request: Request
    level: int
    index: int
    children: tuple[int, ...]
    chunk_span: tuple[int, int]
    budget: int
    prompt_tokens: int
    context_node: str | None
    context_tokens: int


class Hierarchical(StrategyBase):
    """The ``hier`` strategy."""

    name = "hier"
    description = "hierarchical merging: summarize chunks, then merge summaries level by level"
    uses_chunks = True
    calls_model = True
    # the runner adds one summary per chapter from the tree (runners/chapters.py); chunks then
    # never straddle chapters
    options: tuple[Option, ...] = (Option("chapters", False, kind=bool, help="also one summary per chapter"),)
    merge_templates = ("merge", "merge_with_context")  # first group of a level, later groups

    def template_names(self, config: StrategyConfig) -> tuple[str, ...]:
        """Templates this strategy renders."""
        return ("summarize_chunk", *self.merge_templates)

    def item_extra_budget(self, config: StrategyConfig, budget: int) -> int:
        """Worst-case tokens a merge prompt carries beside each summary of ``budget`` (none here)."""
        return 0

    def base_prompt_set(self, config: StrategyConfig) -> str | None:
        """None: the configured summarization set."""
        return None

    def plan(self, plan_input: PlanInput) -> StrategyPlan:
        """One call per chunk, then per level the worst-case merge groups (every summary exactly G_l)."""
        overhead, config, n = plan_input.overhead_tokens, plan_input.config, len(plan_input.chunk_tokens)
        window = plan_input.context_window
        first, later = self.merge_templates

        def extra(budget: int) -> int:
            return self.item_extra_budget(config, budget)

        plan = plan_hier(
            n_leaves=n,
            context_window=window,
            max_summary_tokens=config.max_summary_tokens,
            merge_overhead_tokens=max(overhead[first], overhead[later]),
            item_overhead_tokens=ITEM_OVERHEAD_TOKENS,
            item_extra_tokens=extra,
        )
        calls = n
        input_tokens = sum(plan_input.chunk_tokens) + n * overhead["summarize_chunk"]
        output_tokens = n * plan.budget(0)
        for level in range(1, plan.levels):
            groups = plan.nodes_per_level[level] if level < len(plan.nodes_per_level) else 1
            below = plan.nodes_per_level[level - 1]
            room = merge_room(
                context_window=window,
                overhead_tokens=overhead[later],
                budget_tokens=plan.budget(level),
            )
            calls += groups
            input_tokens += groups * overhead[later]
            item = plan.budget(level - 1) + ITEM_OVERHEAD_TOKENS + extra(plan.budget(level - 1))
            input_tokens += below * item
            input_tokens += (groups - 1) * room.context_tokens  # prior context from the 2nd group on
            output_tokens += groups * plan.budget(level)
        return StrategyPlan(calls, input_tokens, output_tokens, levels=plan.levels, level_budgets=plan.budgets)

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize ``job.chunks`` by hierarchical merging."""
        return _Run(job, model=model, prompts=prompts, on_progress=on_progress).execute()


class _Run:
    """One hierarchical merging run: planning, the event loop, and the result."""

    first_template, later_template = Hierarchical.merge_templates

    def __init__(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None,
    ) -> None:
        if not job.chunks:
            raise ConfigError(
                "the book has no text to summarize (no chunks); check --include-front-matter"
            )
        self.job, self.cfg, self.model, self.prompts = job, job.config, model, prompts
        self.on_progress = on_progress
        self.count = model.count_tokens
        self.window = model.info.context_window
        self.G = self.cfg.max_summary_tokens
        max_out = model.info.max_output_tokens
        if max_out is not None and self.G > max_out:
            raise ConfigError(
                f"--max-summary-len {self.G} exceeds the model's {max_out}-token output limit; lower it"
            )
        ctx_overhead = self.count(prompts[self.later_template].skeleton())
        self.merge_overhead = ctx_overhead
        self.plain_overhead = self.count(prompts[self.first_template].skeleton())
        self.item_overhead = self.count(ITEM_HEADER.format(k=999) + ITEM_SEPARATOR)
        # the same inputs as the pre-flight plan (Hierarchical.plan), so both plan one tree: the
        # larger template, and per item the header plus the boundary token try_group adds
        self.plan: HierPlan = plan_hier(
            n_leaves=len(job.chunks),
            context_window=self.window,
            max_summary_tokens=self.G,
            merge_overhead_tokens=max(ctx_overhead, self.plain_overhead),
            item_overhead_tokens=max(ITEM_OVERHEAD_TOKENS, self.item_overhead + 1),
            item_extra_tokens=self.item_extra_budget,
        )
        self.levels: list[_Level] = [_Level()]
        self.futures: dict[Future[Completion], _Pending] = {}
        # answers in the order they come: wait(FIRST_COMPLETED) locks every pending future each time
        self.answered: queue.SimpleQueue[Future[Completion]] = queue.SimpleQueue()
        self.calls: list[CallEntry] = []
        self.root: SummaryNode | None = None
        self.total_nodes = sum(self.plan.nodes_per_level)
        self.done_nodes = self.done_leaves = 0

    # ---- hooks (hier-evidence) ---------------------------------------------------------

    def item_extra_budget(self, budget: int) -> int:
        """Worst-case tokens sent beside each merged summary of ``budget`` (plan_hier's packing)."""
        return 0

    def item_extra(self, node: SummaryNode) -> int:
        """Tokens actually sent beside ``node`` when it is merged (an upper bound, like its header's)."""
        return 0

    def group_fields(self, node_id: str, nodes: Sequence[SummaryNode]) -> dict[str, str]:
        """Template fields beyond summaries, context and word_limit for the merge ``node_id``."""
        return {}

    def result_extra(self) -> dict[str, object]:
        """What the run adds to the record's ``extra``."""
        return {}

    # ---- planning helpers ------------------------------------------------------------

    def room(self, level: int) -> MergeRoom:
        return merge_room(
            context_window=self.window,
            overhead_tokens=self.merge_overhead,
            budget_tokens=self.plan.budget(level),
        )

    # ---- submission --------------------------------------------------------------------

    def submit(self, pending: _Pending) -> None:
        # critical path first: merges and regenerations (something waits for them) before first
        # tries of leaves, and within each, the earliest part of the book (groups close left to right)
        urgent = pending.level > 0 or pending.request.sample_index > 0
        future = self.model.submit(pending.request, priority=(0 if urgent else 1, pending.chunk_span[0]))
        self.futures[future] = pending
        future.add_done_callback(self.answered.put)

    def start_leaves(self) -> None:
        """Submit every chunk summary at once.

        The prompt size is checked as instructions + the chunk's own token count (the chunker
        measured it with this model's tokenizer), so submitting costs no re-tokenization.
        """
        template = self.prompts["summarize_chunk"]
        budget = self.plan.budget(0)
        words = words_for_tokens(budget)
        instructions = self.count(template.render(text="", word_limit=words))
        for index, chunk in enumerate(self.job.chunks):
            text = chunk.text

            def render(words: int, text: str = text) -> str:
                return template.render(text=text, word_limit=words)

            regen = self._regenerator(render, budget, purpose="summarize", node=f"L0.{index}")
            request = regen.request()
            chunk_tokens = chunk.n_tokens if chunk.n_tokens > 0 else self.count(text)
            prompt_tokens = instructions + chunk_tokens
            check_fits(
                prompt_tokens=prompt_tokens + PROMPT_MARGIN_TOKENS,
                max_tokens=budget,
                context_window=self.window,
                what=f"chunk {index}",
                fix=f"lower --chunk-size (now {self.cfg.chunk_size})",
            )
            self.submit(_Pending(regen, request, 0, index, (), (index, index), budget, prompt_tokens, None, 0))

    def _regenerator(self, render: object, budget: int, *, purpose: str, node: str) -> Regenerator:
        return regenerator(self.model, render, max_tokens=budget, purpose=purpose, node=node,  # type: ignore[arg-type]
                           sampling=self.cfg.sampling, count_tokens=self.count)

    # ---- the event loop ------------------------------------------------------------------

    def execute(self) -> StrategyResult:
        self.start_leaves()
        try:
            while self.futures:
                done = [self.answered.get()]
                while not self.answered.empty():  # every answer already in: one schedule() for all
                    done.append(self.answered.get())
                for future in done:
                    pending = self.futures.pop(future)
                    completion = future.result()
                    if pending.regenerator.feed(pending.request, completion):
                        self.finish(pending, pending.regenerator.result())
                    else:
                        self.submit(dataclasses.replace(pending, request=pending.regenerator.request()))
                self.schedule()
        except BaseException:
            for future in self.futures:
                future.cancel()
            raise
        if self.root is None:  # pragma: no cover - the loop always ends at a root
            raise RuntimeError("hierarchical merging ended without a final summary")
        nodes = tuple(node for level in self.levels for _, node in sorted(level.nodes.items()))
        built = tuple(len(level.nodes) for level in self.levels if level.nodes)
        # the plan is the worst case (every summary at its budget); the tree is what real lengths allow
        tree = {"planned_nodes_per_level": list(self.plan.nodes_per_level), "built_nodes_per_level": list(built)}
        return StrategyResult(
            summary=self.root.text,
            nodes=nodes,
            calls=tuple(self.calls),
            level_budgets=self.plan.budgets,
            extra={"tree": tree, **self.result_extra()},
        )

    def finish(self, pending: _Pending, generation: Generation) -> None:
        self.calls.extend(generation.calls)
        level = pending.level
        kind = "chunk" if level == 0 else "merge"
        node = SummaryNode(
            id=f"L{level}.{pending.index}",
            kind=kind,
            level=level,
            index=pending.index,
            children=pending.children,
            chunk_span=pending.chunk_span,
            text=generation.text,
            tokens=generation.tokens,
            budget_tokens=pending.budget,
            words_asked=generation.attempts[-1].words_asked,
            prompt_tokens=pending.prompt_tokens,
            context_node=pending.context_node,
            context_tokens=pending.context_tokens,
            retries=generation.retries,
            truncated=generation.truncated,
            attempts=generation.attempts,
        )
        state = self.levels[level]
        state.nodes[pending.index] = node
        self.done_nodes += 1
        self.done_leaves += level == 0
        leaves = len(self.job.chunks)  # "chunks" counts the book's chunks (inspect's count), "merges" the others
        merges = self.done_nodes - self.done_leaves
        done, total = (self.done_leaves, leaves) if level == 0 else (merges, max(self.total_nodes - leaves, merges))
        notify(self.on_progress, "chunks" if level == 0 else "merges", done, total, node.id)
        if level == 0:
            state.complete = len(state.nodes) == len(self.job.chunks)
            if len(self.job.chunks) == 1:
                self.root = node
        else:
            state.in_flight = False
            below = self.levels[level - 1]
            state.complete = below.complete and state.next_start == len(below.nodes)
            if state.complete and state.count == 1:
                self.root = node

    def schedule(self) -> None:
        """Start every merge group whose inputs, boundary and prior context are ready."""
        if self.root is not None:
            return
        level = 1
        while level <= len(self.levels):
            below = self.levels[level - 1]
            if level == len(self.levels):
                if not below.nodes or (below.complete and len(below.nodes) == 1):
                    break
                self.levels.append(_Level())
            state = self.levels[level]
            if not state.in_flight and not state.complete:
                self.try_group(level, state, below)
            level += 1

    def try_group(self, level: int, state: _Level, below: _Level) -> None:
        """Close the next group of ``level`` when its boundary is known, and start it.

        Item sizes are the summaries' own token counts plus the header's, plus one token for
        the boundary (BPE never needs more), so packing costs no re-tokenization.
        """
        room = self.room(level)
        start = state.next_start
        used = 0
        end = start
        while end in below.nodes:
            tokens = below.nodes[end].tokens + self.item_overhead + 1 + self.item_extra(below.nodes[end])
            if used + tokens > room.inputs_tokens and end > start:
                break  # the next summary overflows: the group is [start, end)
            used += tokens
            end += 1
        else:
            # ran out of ready summaries: the group is closed only when the level below is done
            below_total = len(below.nodes)
            if not (below.complete and end == below_total and end > start):
                if below.complete and start == below_total:
                    state.complete = True
                return
        self.start_group(level, state, below, start, end, used)

    def start_group(
        self, level: int, state: _Level, below: _Level, start: int, end: int, used: int
    ) -> None:
        index = state.count
        merged = [below.nodes[i] for i in range(start, end)]
        summaries = format_group([node.text for node in merged])
        covers_all = index == 0 and below.complete and start == 0 and end == len(below.nodes)
        budget = self.plan.budget(level)
        context_text, context_node, context_tokens = "", None, 0
        if index == 0:
            template = self.prompts[self.first_template]
            overhead = self.plain_overhead
            if covers_all and overhead + used + PROMPT_MARGIN_TOKENS + self.G <= self.window:
                budget = self.G  # the root: the final summary gets the full budget G
        else:
            template = self.prompts[self.later_template]
            overhead = self.merge_overhead
            previous = state.nodes[index - 1]
            room = self.room(level)
            context_node = previous.id
            if previous.tokens <= room.context_tokens:
                context_text, context_tokens = previous.text, previous.tokens
            else:  # App. J.2 context, bounded: keep its beginning up to a sentence end
                context_text = truncate_at_sentence_end(
                    previous.text,
                    max_tokens=room.context_tokens,
                    count_tokens=self.count,
                    lang=self.cfg.lang,
                )
                context_tokens = self.count(context_text) if context_text else 0

        fields = self.group_fields(f"L{level}.{index}", merged)

        def render(words: int) -> str:
            if index == 0:
                return template.render(summaries=summaries, word_limit=words, **fields)
            return template.render(context=context_text, summaries=summaries, word_limit=words, **fields)

        regen = self._regenerator(render, budget, purpose="merge", node=f"L{level}.{index}")
        request = regen.request()
        prompt_tokens = overhead + context_tokens + 1 + used  # an upper bound, see try_group
        check_fits(
            prompt_tokens=prompt_tokens + PROMPT_MARGIN_TOKENS,
            max_tokens=budget,
            context_window=self.window,
            what=f"merge L{level}.{index}",
            fix="lower --max-summary-len or --chunk-size",
        )
        state.groups.append((start, end))
        state.next_start = end
        state.in_flight = True
        span = (below.nodes[start].chunk_span[0], below.nodes[end - 1].chunk_span[1])
        self.submit(_Pending(regen, request, level, index, tuple(range(start, end)), span, budget,
                             prompt_tokens, context_node, context_tokens))


__all__ = ["Hierarchical", "format_group"]
