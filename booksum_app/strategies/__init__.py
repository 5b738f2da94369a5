"""Summarization strategies: hierarchical merging, incremental updating, the direct baseline.

``STRATEGIES`` is the registry the CLI reads its choices from.
"""

from __future__ import annotations

from booksum_app.strategies.base import (
    ProgressEvent,
    PromptBundle,
    Strategy,
    StrategyConfig,
    StrategyJob,
    StrategyResult,
    SummaryNode,
    load_prompts,
)
from booksum_app.strategies.direct import Direct
from booksum_app.strategies.hierarchical import Hierarchical
from booksum_app.strategies.incremental import Incremental
from booksum_app.strategies.record import (
    BookInfo,
    SummaryRecord,
    Totals,
    read_record,
    write_record,
)

STRATEGIES: dict[str, Strategy] = {
    "hier": Hierarchical(),
    "inc": Incremental(),
    "direct": Direct(),
}

__all__ = [
    "STRATEGIES",
    "BookInfo",
    "ProgressEvent",
    "PromptBundle",
    "Strategy",
    "StrategyConfig",
    "StrategyJob",
    "StrategyResult",
    "SummaryNode",
    "SummaryRecord",
    "Totals",
    "load_prompts",
    "read_record",
    "write_record",
]
