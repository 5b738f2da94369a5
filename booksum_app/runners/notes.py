"""One-line notes a run prints at its end, shared by ``summarize`` and ``score``."""

from __future__ import annotations


def cut_answers_note(cut: int, total: int) -> str | None:
    """``"N of M answers were cut at the token limit"`` when any was (finish_reason ``length``).

    The record says it per call; this says it on the terminal, where a run built from cut
    answers would otherwise end like a good one.
    """
    if cut <= 0:
        return None
    return f"{cut} of {total} answers were cut at the token limit"
