"""Deterministic BooookScore judge answers for the fake server (owned by the scoring work)."""

from __future__ import annotations


def judge_reply(user_text: str) -> str:
    """Answer a judge prompt (per-sentence or batched) in the format the judge parser reads."""
    return "Questions: no confusion\nTypes: no confusion"
