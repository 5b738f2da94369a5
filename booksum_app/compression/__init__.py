"""Length budgets, compress-to-budget, validity/regeneration and artifact removal (BooookScore App. A, D, J)."""

from __future__ import annotations

from booksum_app.compression.artifacts import CleanResult, clean_deterministic, remove_artifacts
from booksum_app.compression.compress import CompressionResult, compress_to_budget
from booksum_app.compression.validity import (
    CallEntry,
    Generation,
    Regenerator,
    generate_valid,
    summary_problems,
    truncate_at_sentence_end,
)

__all__ = [
    "CallEntry",
    "CleanResult",
    "CompressionResult",
    "Generation",
    "Regenerator",
    "clean_deterministic",
    "compress_to_budget",
    "generate_valid",
    "remove_artifacts",
    "summary_problems",
    "truncate_at_sentence_end",
]
