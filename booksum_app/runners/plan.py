"""Pre-flight plans: how many calls, tokens and dollars a strategy will spend on a book.

Figures are upper bounds computed before any token is spent, from the real chunk token
counts, the prompt templates' own size and the budgets of :mod:`booksum_app.compression.budget`:

- ``hier``: one call per chunk, then per level the worst-case merge groups of
  :func:`plan_hier` (every summary exactly its budget G_l), each merge input as large as the
  level below's budgets and a prior-context summary from the second group on.
- ``inc``: one init/update call per chunk with the running summary at its target, plus at
  most one compression per update (the summary can only overflow G once per update).
- ``direct``: one call holding as much of the book as fits (head + tail when truncated).
- plus one artifact-removal call when cleaning is on.

Outputs are charged at their max_tokens, so the dollars are a ceiling, not a forecast, with
one exception: regenerations of invalid summaries (empty, over budget, cut off; at most
``max_tries - 1`` per summary, App. A.2.1) are not counted. Capable models rarely need them,
and counting the worst case would multiply every figure by ``max_tries``; the run's record
shows how many there were (``totals.retries``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from booksum_app.compression.budget import (
    direct_text_budget,
    inc_target_tokens,
    inc_update_max_tokens,
    merge_room,
    plan_hier,
)
from booksum_app.llm.base import ModelInfo, Usage
from booksum_app.strategies import STRATEGIES, StrategyConfig, load_prompts

ITEM_OVERHEAD_TOKENS = 8  # numbering and separators around each merged summary


@dataclass(frozen=True)
class CallPlan:
    """Upper bounds on one strategy's spend on one book."""

    strategy: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    levels: int | None = None  # hier only
    truncated_tokens: int = 0  # direct only: book tokens that do not fit the context


def _overheads(strategy: str, config: StrategyConfig, count: Callable[[str], int]) -> dict[str, int]:
    impl = STRATEGIES[strategy]
    names = impl.template_names(config)
    bundle = load_prompts(
        config.prompts, lang=config.lang, names=names, base_set=impl.base_prompt_set(config)
    )
    return {name: count(bundle[name].skeleton()) for name in names}


def plan_strategy(
    strategy: str,
    *,
    chunk_tokens: Sequence[int],
    info: ModelInfo,
    count_tokens: Callable[[str], int],
    config: StrategyConfig,
    clean: bool = True,
) -> CallPlan:
    """Upper bounds on calls, tokens and cost of ``strategy`` over chunks of these sizes."""
    overhead = _overheads(strategy, config, count_tokens)
    g = config.max_summary_tokens
    n = len(chunk_tokens)
    calls = input_tokens = output_tokens = 0
    levels: int | None = None
    truncated = 0
    if strategy == "hier":
        plan = plan_hier(
            n_leaves=n,
            context_window=info.context_window,
            max_summary_tokens=g,
            merge_overhead_tokens=max(overhead["merge"], overhead["merge_with_context"]),
            item_overhead_tokens=ITEM_OVERHEAD_TOKENS,
        )
        levels = plan.levels
        calls += n
        input_tokens += sum(chunk_tokens) + n * overhead["summarize_chunk"]
        output_tokens += n * plan.budget(0)
        for level in range(1, plan.levels):
            groups = plan.nodes_per_level[level] if level < len(plan.nodes_per_level) else 1
            below = plan.nodes_per_level[level - 1]
            room = merge_room(
                context_window=info.context_window,
                overhead_tokens=overhead["merge_with_context"],
                budget_tokens=plan.budget(level),
            )
            calls += groups
            input_tokens += groups * overhead["merge_with_context"]
            input_tokens += below * (plan.budget(level - 1) + ITEM_OVERHEAD_TOKENS)
            input_tokens += (groups - 1) * room.context_tokens
            output_tokens += groups * plan.budget(level)
    elif strategy == "inc":
        update_max = inc_update_max_tokens(max_summary_tokens=g)
        for i, tokens in enumerate(chunk_tokens):
            running = 0 if i == 0 else inc_target_tokens(i - 1, n, max_summary_tokens=g)
            calls += 1
            input_tokens += tokens + running + overhead["inc_update" if i else "inc_init"]
            output_tokens += update_max
            if i:  # at most one compression per update
                calls += 1
                input_tokens += update_max + overhead["compress"]
                output_tokens += inc_target_tokens(i, n, max_summary_tokens=g)
    elif strategy == "direct":
        template = config.direct_template
        text_room = direct_text_budget(
            context_window=info.context_window,
            overhead_tokens=overhead[template],
            max_summary_tokens=g,
        )
        book = sum(chunk_tokens)
        truncated = max(0, book - text_room)
        calls = 1
        input_tokens = min(book, text_room) + overhead[template]
        output_tokens = g
    else:
        raise KeyError(strategy)
    if clean:
        clean_overhead = count_tokens(
            load_prompts(config.prompts, lang=config.lang, names=("clean",))["clean"].skeleton()
        )
        calls += 1
        input_tokens += g + clean_overhead
        output_tokens += g
    cost = info.cost_usd(Usage(input_tokens=input_tokens, output_tokens=output_tokens))
    return CallPlan(strategy, calls, input_tokens, output_tokens, cost, levels, truncated)
