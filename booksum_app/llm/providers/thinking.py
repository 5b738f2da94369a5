"""A thinking model's answer split into what it shows and what it reasoned: one rule for every carrier.

Qwen3, QwQ, DeepSeek-R1 and its distills write ``<think> ... </think>`` before the answer.
How the reasoning reaches booksum depends on the carrier:

- vLLM offline (``LLM.chat``) and an OpenAI-compatible server started without a reasoning
  parser: in the text itself, from ``<think>`` (or from the start: some chat templates open
  the block in the prompt, so the answer begins inside it and only ``</think>`` appears);
- a server with a reasoning parser (``vllm serve --reasoning-parser``, llama-server's
  ``--reasoning-format``): in ``message.reasoning_content`` (or ``reasoning``), the content
  without it; :func:`reasoning_field` reads it;
- Ollama's ``/api/chat`` with ``think``: in ``message.thinking``.

:func:`split_thinking` takes the visible answer: the text after the last ``</think>`` that
closes a block; an unclosed ``<think>`` (the model ran out of ``max_tokens`` while reasoning)
leaves no visible answer at all, so the call layer sees an empty answer cut at its limit and
never mistakes reasoning for a summary. Tags match in any case and with spaces inside the
brackets (``< THINK >``); a nested ``<think>`` is part of the reasoning. Text without a tag
is returned whole. The reasoning's tokens are hidden tokens (``Completion.reasoning_tokens``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_OPEN = re.compile(r"<\s*think\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Split:
    """The answer as shown, and the reasoning before it ("" when there was none)."""

    visible: str
    reasoning: str


def split_thinking(text: str) -> Split:
    """``text`` cut into its visible answer and its reasoning block(s) (see the module doc)."""
    opened = _OPEN.search(text)
    closes = list(_CLOSE.finditer(text))
    if closes:
        last = closes[-1]
        # text before a close is reasoning only when the block starts at the answer's start
        # (a "<think>" first, or the template opened it): a "</think>" quoted mid-answer is kept
        head = text[: last.start()]
        before_open = head[: opened.start()] if opened is not None else head
        if opened is None or not before_open.strip():
            reasoning = _tags_removed(head)
            return Split(visible=text[last.end():].lstrip(), reasoning=reasoning)
    if opened is not None and not text[: opened.start()].strip():
        return Split(visible="", reasoning=_tags_removed(text[opened.end():]))  # cut while thinking
    return Split(visible=text, reasoning="")


def _tags_removed(text: str) -> str:
    return _CLOSE.sub("", _OPEN.sub("", text)).strip()


def hidden_share(output_tokens: int, *, reasoning: str, visible: str) -> int:
    """Of ``output_tokens``, the reasoning's share, by characters (a reply that reports no reasoning count)."""
    total = len(reasoning) + len(visible)
    if output_tokens <= 0 or total == 0:
        return 0
    return min(output_tokens, round(output_tokens * len(reasoning) / total))


def reasoning_field(message: Any) -> str:
    """The reasoning a server's parser moved out of the content (``reasoning_content`` or ``reasoning``)."""
    if not isinstance(message, dict):
        return ""
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


__all__ = ["Split", "hidden_share", "reasoning_field", "split_thinking"]
