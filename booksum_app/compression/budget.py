"""Length budgets (pure functions): words from tokens, the hierarchical G_l schedule, the inc policy.

BooookScore budgets in tokens (chunk size, G = 900) but asks the model for *words* (App. J:
"within N words"). Following the reference implementation (lilakk/BooookScore, ``summ.py``,
``word_ratio=0.65``) a budget of T tokens is asked for as ``floor(0.65 * T)`` words: English
prose runs ~0.75 words per cl100k token, and models overshoot word limits, so 0.65 leaves
room. For Chinese the same ratio gives characters (字); cl100k spends 1-1.5 tokens per Han
character, so it is conservative there too.

Hierarchical merging (App. A.1): level l's summaries have budget G_l; the top level has G.
The schedule is the reference implementation's, ``G_l = G * 0.65 ** (L - 1 - l)`` for a tree
of L levels, floored at ``min(G, 128)`` tokens so deep trees keep useful leaves (the floor is
ours). L is the smallest depth for which packing worst-case summaries (every summary exactly
its budget) into merge calls reaches one summary within L levels; when that schedule reaches
one summary a level early, the budgets are re-derived for the shallower tree (a smaller ratio,
see :func:`plan_hier`), so leaves get the budget of the depth worst-case lengths need. The run
packs real lengths greedily (as many as fit, in book order), which are never larger, so the
tree built is never deeper than planned and often shallower: the plan is an upper bound on
depth and calls, and the run's record keeps both shapes. Each summary gets its level's G_l
and the root G.
Packing rule (App. A.1, §2): ``prompt + context + inputs + G_l + margin <= W`` where the
context (the previous merged summary of the same level, App. J.2) is capped at 20 % of what
is left after the prompt and G_l (the reference code's ``0.2 * num_tokens``) and at G_l.
A strategy that sends more with every merged summary (``hier-evidence``: source passages)
passes ``item_extra_tokens``, the worst case it adds per summary of a given budget.

Incremental updating (App. A.2): the running summary's hard cap is G; it is compressed
whenever it exceeds G. The length the prompts ask for grows with progress through the book,
as in the reference implementation: at chunk i of n the target is ``G * (i + 1) / n`` tokens
(floored at ``min(G, 128)``, ours), and a compression brings the summary to that target.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from booksum_app.errors import ContextTooLong

WORDS_PER_TOKEN = 0.65  # words asked for per budget token (reference code's word_ratio)
LEVEL_RATIO = 0.65  # G_{l-1} = LEVEL_RATIO * G_l below the top level (reference code)
MIN_BUDGET_TOKENS = 128  # floor for leaf budgets and early inc targets (ours)
CONTEXT_SHARE = 0.2  # share of a merge call's free room given to the prior-context summary
PROMPT_MARGIN_TOKENS = 20  # chat formatting overhead, the reference code's "+ 20"
INC_OVERFLOW_RATIO = 1.5  # inc update calls may write up to 1.5 G so an overflow is complete
MAX_LEVELS = 16


def words_for_tokens(tokens: int) -> int:
    """Words (or 字) to ask for when a summary has ``tokens`` tokens of budget."""
    return max(1, math.floor(tokens * WORDS_PER_TOKEN))


_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def count_words(text: str) -> int:
    """Words as a word limit counts them: whitespace-separated words plus one per Han character."""
    n_cjk = len(_CJK.findall(text))
    return n_cjk + len(_CJK.sub(" ", text).split())


def level_budgets(
    levels: int, *, max_summary_tokens: int, ratio: float = LEVEL_RATIO
) -> tuple[int, ...]:
    """G_0..G_{L-1} for a tree of ``levels`` levels: geometric (``ratio``), reaching G at the top."""
    if levels < 1:
        raise ValueError("a tree has at least one level")
    floor_tokens = min(max_summary_tokens, MIN_BUDGET_TOKENS)
    return tuple(
        max(floor_tokens, math.floor(max_summary_tokens * ratio ** (levels - 1 - level)))
        for level in range(levels)
    )


@dataclass(frozen=True)
class MergeRoom:
    """Token room of one merge call at one level."""

    budget_tokens: int  # G_l: the merged summary's budget (the call's max_tokens)
    context_tokens: int  # cap on the prior-context summary
    inputs_tokens: int  # room for the numbered summaries being merged


def merge_room(*, context_window: int, overhead_tokens: int, budget_tokens: int) -> MergeRoom:
    """Split a context window between instructions, G_l, the prior context and the inputs."""
    free = context_window - overhead_tokens - PROMPT_MARGIN_TOKENS - budget_tokens
    context = max(0, min(budget_tokens, math.floor(CONTEXT_SHARE * free)))
    return MergeRoom(budget_tokens, context, free - context)


@dataclass(frozen=True)
class HierPlan:
    """The planned tree: budgets per level and the worst-case number of nodes per level."""

    budgets: tuple[int, ...]  # G_l, l = 0 .. L-1
    nodes_per_level: tuple[int, ...]  # summaries per level at worst, the last 1 (the run: at most this)

    @property
    def levels(self) -> int:
        return len(self.budgets)

    def budget(self, level: int) -> int:
        """G_l; levels past the plan (never reached when sizes are honest) get the top budget."""
        return self.budgets[min(level, len(self.budgets) - 1)]


def _worst_case_counts(
    budgets: tuple[int, ...],
    *,
    n_leaves: int,
    context_window: int,
    merge_overhead_tokens: int,
    item_overhead_tokens: int,
    item_extra_tokens: Callable[[int], int] | None,
) -> list[int]:
    """Summaries per level when every summary is exactly its budget, stopping at one.

    Raises:
        ContextTooLong: a merge call cannot hold two summaries of the level below.
    """
    counts = [n_leaves]
    for level in range(1, len(budgets)):
        room = merge_room(
            context_window=context_window,
            overhead_tokens=merge_overhead_tokens,
            budget_tokens=budgets[level],
        )
        extra = item_extra_tokens(budgets[level - 1]) if item_extra_tokens else 0
        per_group = room.inputs_tokens // (budgets[level - 1] + item_overhead_tokens + extra)
        if per_group < 2:
            with_extra = f" with {extra} tokens of evidence each" if extra else ""
            lower = "--evidence-tokens or --max-summary-len" if extra else "--max-summary-len"
            raise ContextTooLong(
                f"a {context_window}-token context cannot merge two {budgets[level - 1]}-token "
                f"summaries{with_extra} into a {budgets[level]}-token one; lower {lower} or use "
                "a model with a larger context window"
            )
        counts.append(math.ceil(counts[-1] / per_group))
        if counts[-1] == 1:
            break
    return counts


def plan_hier(
    *,
    n_leaves: int,
    context_window: int,
    max_summary_tokens: int,
    merge_overhead_tokens: int,
    item_overhead_tokens: int,
    item_extra_tokens: Callable[[int], int] | None = None,
) -> HierPlan:
    """The shallowest tree whose worst-case packing ends in one summary (see module docstring).

    The depth L is the smallest for which the schedule ``G * 0.65 ** (L - 1 - l)`` packs into
    one summary within L levels. That schedule can finish a level early (its small leaves pack
    densely): the tree then has L' < L levels, and the budgets are re-derived for L' levels with
    the largest ratio (at most 0.65, in steps of 0.01) whose packing ends at exactly L' levels,
    so every level's budget is the one of the tree that is built, and the leaves get the
    largest budget such a tree allows. ``nodes_per_level`` then has exactly one entry per
    budget, the last one 1.

    ``item_extra_tokens(G_l)``: tokens sent beside each merged summary of budget G_l (none when
    None).

    Raises:
        ContextTooLong: a merge call cannot hold two summaries of the level below.
    """
    if n_leaves < 1:
        raise ValueError("nothing to summarize: no chunks")
    if n_leaves == 1:
        return HierPlan((max_summary_tokens,), (1,))
    pack = functools.partial(
        _worst_case_counts,
        n_leaves=n_leaves,
        context_window=context_window,
        merge_overhead_tokens=merge_overhead_tokens,
        item_overhead_tokens=item_overhead_tokens,
        item_extra_tokens=item_extra_tokens,
    )
    for levels in range(2, MAX_LEVELS + 1):
        budgets = level_budgets(levels, max_summary_tokens=max_summary_tokens)
        counts = pack(budgets)
        if counts[-1] != 1:
            continue
        if len(counts) == levels:
            return HierPlan(budgets, tuple(counts))
        refit = _refit(len(counts), max_summary_tokens, pack)
        if refit is not None:
            return refit
    raise ContextTooLong(
        f"{n_leaves} chunks need more than {MAX_LEVELS} merge levels in a {context_window}-token "
        "context; raise --chunk-size or use a model with a larger context window"
    )


def _refit(
    levels: int, max_summary_tokens: int, pack: Callable[[tuple[int, ...]], list[int]]
) -> HierPlan | None:
    """The ``levels``-level geometric schedule with the largest ratio below 0.65 that packs."""
    for step in range(1, round(LEVEL_RATIO * 100)):
        budgets = level_budgets(
            levels, max_summary_tokens=max_summary_tokens, ratio=LEVEL_RATIO - step / 100
        )
        try:
            counts = pack(budgets)
        except ContextTooLong:
            continue
        if len(counts) == levels and counts[-1] == 1:
            return HierPlan(budgets, tuple(counts))
    return None


def inc_target_tokens(index: int, n_chunks: int, *, max_summary_tokens: int) -> int:
    """Target length of the running summary after chunk ``index`` (0-based) of ``n_chunks``."""
    floor_tokens = min(max_summary_tokens, MIN_BUDGET_TOKENS)
    grown = math.ceil(max_summary_tokens * (index + 1) / max(1, n_chunks))
    return max(floor_tokens, min(max_summary_tokens, grown))


def inc_update_max_tokens(*, max_summary_tokens: int) -> int:
    """max_tokens of inc init/update calls: room to overflow G so the overflow can be compressed."""
    return math.ceil(max_summary_tokens * INC_OVERFLOW_RATIO)


def direct_text_budget(
    *, context_window: int, overhead_tokens: int, max_summary_tokens: int
) -> int:
    """Tokens of book text a direct (one-call) prompt can hold."""
    return context_window - overhead_tokens - PROMPT_MARGIN_TOKENS - max_summary_tokens


def check_fits(
    *, prompt_tokens: int, max_tokens: int, context_window: int, what: str, fix: str
) -> None:
    """Raise ContextTooLong unless prompt + completion budget fit the context window."""
    if prompt_tokens + max_tokens > context_window:
        raise ContextTooLong(
            f"{what}: {prompt_tokens} prompt tokens + {max_tokens} for the answer exceed the "
            f"model's {context_window}-token context window; {fix}"
        )


__all__ = [
    "CONTEXT_SHARE",
    "LEVEL_RATIO",
    "MIN_BUDGET_TOKENS",
    "PROMPT_MARGIN_TOKENS",
    "WORDS_PER_TOKEN",
    "HierPlan",
    "MergeRoom",
    "check_fits",
    "count_words",
    "direct_text_budget",
    "inc_target_tokens",
    "inc_update_max_tokens",
    "level_budgets",
    "merge_room",
    "plan_hier",
    "words_for_tokens",
]
