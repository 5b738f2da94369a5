"""Summarization strategies: hierarchical merging, incremental updating, the direct baseline.

``STRATEGIES`` maps names to the installed strategies: booksum's own and those of plugins
(the ``booksum.strategies`` entry point group, see :mod:`booksum_app.strategies.registry`).
"""

from __future__ import annotations

from booksum_app.strategies.base import (
    PlanInput,
    ProgressEvent,
    PromptBundle,
    Strategy,
    StrategyConfig,
    StrategyJob,
    StrategyPlan,
    StrategyResult,
    SummaryNode,
    load_prompts,
)
from booksum_app.strategies.record import (
    BookInfo,
    SummaryRecord,
    Totals,
    read_record,
    write_record,
)
from booksum_app.strategies.registry import STRATEGIES, get_strategy

__all__ = [
    "STRATEGIES",
    "BookInfo",
    "PlanInput",
    "ProgressEvent",
    "PromptBundle",
    "Strategy",
    "StrategyConfig",
    "StrategyJob",
    "StrategyPlan",
    "StrategyResult",
    "SummaryNode",
    "SummaryRecord",
    "Totals",
    "get_strategy",
    "load_prompts",
    "read_record",
    "write_record",
]
