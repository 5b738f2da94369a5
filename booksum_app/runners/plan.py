"""Pre-flight plans: how many calls, tokens and dollars a strategy will spend on a book.

Each strategy computes its own upper bounds (``Strategy.plan``) from the real chunk token
counts and its templates' fixed size, measured here; this module adds the artifact-removal
call and prices the total. The built-in bounds:

- ``hier``: one call per chunk, then per level the worst-case merge groups of
  :func:`~booksum_app.compression.budget.plan_hier` (every summary exactly its budget G_l),
  each merge input as large as the level below's budgets and a prior-context summary from
  the second group on.
- ``inc``: one init/update call per chunk with the running summary at its target, plus at
  most one compression per update (the summary can only overflow G once per update).
- ``direct``: one call holding as much of the book as fits (head + tail when truncated).
- plus one artifact-removal call when cleaning is on and the strategy calls a model.
- ``--chapters`` (hier's ``chapters`` option): plus one merge call per chapter of several
  chunks (:func:`~booksum_app.runners.chapters.plan_chapter_merges`).

Outputs are charged at their max_tokens, so the dollars are a ceiling, not a forecast, with
one exception: regenerations of invalid summaries (empty, over budget, cut off; at most
``max_tries - 1`` per summary, App. A.2.1) are not counted. Capable models rarely need them,
and counting the worst case would multiply every figure by ``max_tries``; the run's record
shows how many there were (``totals.retries``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from booksum_app.chunking.base import Chunk, ChunkSpan
from booksum_app.config import MAX_COUNT, checked_count
from booksum_app.errors import BooksumError, ConfigError, environment_secrets, server_message
from booksum_app.llm.base import ModelInfo, Usage
from booksum_app.runners.chapters import plan_chapter_merges
from booksum_app.strategies import PlanInput, Strategy, StrategyConfig, StrategyPlan, get_strategy, load_prompts
from booksum_app.strategies.base import strategy_prompts


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
    replayed_calls: int | None = None  # summarize: every call is in the call cache (then nothing is spent)
    price_known: bool = True  # False: a paid API's model booksum has no price for; cost_usd is not a bound


def _overheads(impl: Strategy, config: StrategyConfig, count: Callable[[str], int]) -> dict[str, int]:
    names = impl.template_names(config)
    bundle = strategy_prompts(impl, config)
    return {name: count(bundle[name].skeleton()) for name in names}


def checked_plan(impl: Strategy, plan_input: PlanInput) -> StrategyPlan:
    """``impl.plan(plan_input)``, held to the rule every number passes (a plugin's plan is input too):
    whole numbers of calls and tokens, none negative, none past :data:`~booksum_app.config.MAX_COUNT`.

    Raises:
        ConfigError: the plan failed or is not a plan of whole, non-negative numbers (one line).
    """
    name = impl.name
    try:
        plan = impl.plan(plan_input)
    except (BooksumError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a plugin's bug is one line, before anything is spent
        detail = server_message(str(exc), *environment_secrets()) or "no message"
        raise ConfigError(f"strategy {name!r} could not plan ({type(exc).__name__}: {detail})") from exc
    if not isinstance(plan, StrategyPlan):
        raise ConfigError(f"strategy {name!r}'s plan() returned a {type(plan).__name__}, not a StrategyPlan")
    for field in ("calls", "input_tokens", "output_tokens", "truncated_tokens", "levels"):
        value = getattr(plan, field)
        if value is not None or field != "levels":
            checked_count(value, what=f"strategy {name!r}'s plan() {field}", maximum=MAX_COUNT)
    return plan


def plan_strategy(
    strategy: str,
    *,
    chunk_tokens: Sequence[int],
    info: ModelInfo,
    count_tokens: Callable[[str], int],
    config: StrategyConfig,
    clean: bool = True,
    chapter_chunks: Sequence[Chunk | ChunkSpan] | None = None,
    reasoning_room_tokens: int = 0,
) -> CallPlan:
    """Upper bounds on calls, tokens and cost of ``strategy`` over chunks of these sizes.

    ``chapter_chunks``: the (chapter-aware) chunks themselves when the run also summarizes each
    chapter (``--chapters``), whose extra merge calls are then planned too.
    ``reasoning_room_tokens`` is the room each request adds to ``max_tokens`` for a thinking
    model's reasoning (``llm/providers/thinking.py``): every call may spend it, so it is counted
    and priced as output.

    Raises:
        ConfigError: no such strategy installed.
    """
    impl = get_strategy(strategy)
    overheads = _overheads(impl, config, count_tokens)
    plan = checked_plan(impl, PlanInput(tuple(chunk_tokens), info.context_window, overheads, config))
    calls, input_tokens, output_tokens = plan.calls, plan.input_tokens, plan.output_tokens
    if chapter_chunks is not None:
        merge = overheads.get("merge")
        if merge is None:
            merge = count_tokens(strategy_prompts(impl, config)["merge"].skeleton())
        merges = plan_chapter_merges(chapter_chunks, level_budgets=plan.level_budgets,
                                     max_summary_tokens=config.max_summary_tokens, merge_overhead_tokens=merge)
        calls += merges.calls
        input_tokens += merges.input_tokens
        output_tokens += merges.output_tokens
    if clean and impl.calls_model:
        g = config.max_summary_tokens
        clean_overhead = count_tokens(
            load_prompts(config.prompts, lang=config.lang, names=("clean",))["clean"].skeleton()
        )
        calls += 1
        input_tokens += g + clean_overhead
        output_tokens += g
    output_tokens += calls * max(0, reasoning_room_tokens)
    cost = info.cost_usd(Usage(input_tokens=input_tokens, output_tokens=output_tokens))
    return CallPlan(strategy, calls, input_tokens, output_tokens, cost, plan.levels, plan.truncated_tokens,
                    price_known=info.price_known)
