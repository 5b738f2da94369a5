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

:func:`split_thinking` removes text only on evidence that it is reasoning, so a book or a summary
that quotes the tags loses nothing:

- a block that opens the reply (after whitespace) with ``<think>`` ends at the ``</think>`` that
  closes it (nested pairs are part of it); the answer is what follows. Unclosed, it is all
  reasoning only when the reply was cut at its token limit or the model thinks: a model cut while
  reasoning has no answer, and the call layer says so;
- a ``</think>`` with no opener before it is the shape of a chat template that opened the block in
  the prompt: the text before it is reasoning only for a model that thinks (``thinks=True``: known
  by name, asked to, or seen thinking) and that has not been seen opening its blocks in its text;
- anything else (a tag quoted anywhere after the reply's first character) is the answer, whole.

Tags match in any case and with spaces inside the brackets (``< THINK >``). :class:`Split` says
how many characters of the text were removed (``removed_chars``, tags included), which every
carrier puts in :attr:`Completion.think_chars_removed`; the reasoning's tokens are hidden tokens
(``Completion.reasoning_tokens``). :class:`ThinkWatch` holds one backend's evidence: whether the
model thinks, the ``--thinking`` mode it was asked for, and the room its reasoning gets.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from booksum_app.config import THINKING_MODES

_OPEN = re.compile(r"<\s*think\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)
_TAG = re.compile(r"<\s*(/?)\s*think\s*>", re.IGNORECASE)

# tokens added to a thinking model's max_tokens for its reasoning, by --reasoning-effort (None: low);
# a summary's reasoning on Qwen3 and the R1 distills runs to a few hundred words
THINKING_ROOM = {"minimal": 1024, "low": 2048, "medium": 4096, "high": 8192}
DEFAULT_THINKING_EFFORT = "low"
ROOM_MARGIN_TOKENS = 64  # chat template, role markers: the room never fills the window to the last token
# model ids that think before answering unless asked not to (Qwen3 hybrids and *-Thinking, QwQ, the
# R1 family and distills, Magistral, EXAONE Deep, Phi-4-reasoning); Qwen3's 2507 Instruct and Coder
# releases do not think
_KNOWN_THINKERS = re.compile(r"qwen-?3|qwq|deepseek-r1|r1-distill|-r1\b|thinking|magistral|exaone-deep|"
                             r"phi-4-(mini-)?reasoning|reasoner", re.IGNORECASE)
_NOT_THINKERS = re.compile(r"instruct-2507|qwen-?3-coder|qwen-?3-?embed|qwen-?3-?rerank", re.IGNORECASE)


@dataclass(frozen=True)
class Split:
    """The answer as shown, the reasoning left out of it ("" when none), and the characters removed."""

    visible: str
    reasoning: str
    removed_chars: int = 0  # of the text, characters that are not in ``visible`` (tags and reasoning)
    opened: bool = False  # the reply opened its block with ``<think>`` in its own text


def split_thinking(text: str, *, thinks: bool = False, cut: bool = False) -> Split:
    """``text`` cut into its visible answer and its reasoning block (see the module doc).

    Args:
        text: the reply's text as the server sent it.
        thinks: the model is known (or seen, or asked) to think: a leading ``</think>`` without an
            opener closes a block the chat template opened, and an unclosed block is reasoning.
        cut: the reply stopped at its token limit: an unclosed leading block is reasoning.

    Returns:
        The split; ``visible == text`` and ``removed_chars == 0`` when nothing was reasoning.
    """
    body = text.lstrip()
    start = len(text) - len(body)
    head = _OPEN.match(body)
    if head is not None:
        end = _block_end(text, start + head.end())
        if end is None:  # never closed: cut while reasoning, or a quoted tag in a plain answer
            if not (cut or thinks):
                return Split(text, "")
            return Split("", _tags_removed(text[start + head.end():]), removed_chars=len(text), opened=True)
        return _after(text, end, reasoning_from=start + head.end(), opened=True)
    if thinks:
        end = _block_end(text, 0)
        if end is not None:
            return _after(text, end, reasoning_from=0, opened=False)
    return Split(text, "")


def _block_end(text: str, pos: int) -> tuple[int, int] | None:
    """The span of the ``</think>`` closing a block open at ``pos`` (nested pairs inside), else
    the last ``</think>`` (the reasoning quoted an opener), else None."""
    depth, last = 1, None
    for tag in _TAG.finditer(text, pos):
        if tag.group(1):
            depth, last = depth - 1, (tag.start(), tag.end())
            if depth == 0:
                return last
        else:
            depth += 1
    return last


def _after(text: str, close: tuple[int, int], *, reasoning_from: int, opened: bool) -> Split:
    visible = text[close[1]:].lstrip()
    return Split(visible, _tags_removed(text[reasoning_from:close[0]]), removed_chars=len(text) - len(visible),
                 opened=opened)


def _tags_removed(text: str) -> str:
    return _CLOSE.sub("", _OPEN.sub("", text)).strip()


def known_to_think(model_id: str) -> bool:
    """Whether ``model_id`` names a model that reasons in its text before answering (Qwen3, R1, QwQ...)."""
    return bool(_KNOWN_THINKERS.search(model_id)) and not _NOT_THINKERS.search(model_id)


def planned_room_tokens(model: str, *, thinking: str = "auto", effort: str | None = None) -> int:
    """The reasoning room a plan counts for each call of ``model`` (a model string or id): known or asked to think."""
    return ThinkWatch(model, mode=thinking, effort=effort).room_tokens


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


class ThinkWatch:
    """One backend's evidence that its model thinks, the ``--thinking`` mode, and its reasoning room.

    ``auto`` trusts the model's name (:func:`known_to_think`) until an answer shows reasoning (a
    leading ``<think>`` block, a reasoning field): from then on the model thinks, and each request
    gets :attr:`room_tokens` more ``max_tokens`` for its reasoning. ``on`` and ``off`` are asked of
    the server (``chat_template_kwargs``, Ollama's ``think``, ``LLM.chat``); a server that thinks
    anyway under ``off`` is seen, and its reasoning still gets room and is still removed.
    """

    def __init__(self, model_id: str, *, mode: str = "auto", effort: str | None = None) -> None:
        if mode not in THINKING_MODES:
            raise ValueError(f"unknown thinking mode {mode!r}; use one of {', '.join(THINKING_MODES)}")
        self.mode = mode
        self.known = mode == "on" or (mode == "auto" and known_to_think(model_id))
        self.room = THINKING_ROOM[effort or DEFAULT_THINKING_EFFORT]
        self._lock = threading.Lock()
        self._seen = False  # an answer showed reasoning
        self._opens = False  # the model opens its blocks in its own text: a bare </think> is quoted

    @property
    def thinks(self) -> bool:
        """Known, asked or seen to think."""
        return self.known or self._seen

    @property
    def seen(self) -> bool:
        """An answer of this backend showed reasoning."""
        return self._seen

    @property
    def room_tokens(self) -> int:
        """Tokens each request adds to ``max_tokens`` for the model's reasoning (0 for a model that does not think)."""
        return self.room if self.thinks else 0

    def fitted_room(self, *, prompt_tokens: int, max_tokens: int, context_window: int) -> int:
        """:attr:`room_tokens`, less what would not fit the context window beside the prompt and the answer."""
        return max(0, min(self.room_tokens, context_window - prompt_tokens - max_tokens - ROOM_MARGIN_TOKENS))

    def split(self, text: str, *, separated: str = "", cut: bool = False) -> Split:
        """``text`` split by :func:`split_thinking` with this model's evidence; what it shows is remembered."""
        split = split_thinking(text, thinks=self.thinks and not self._opens, cut=cut)
        if split.reasoning or separated:
            with self._lock:
                self._seen = True
                self._opens = self._opens or split.opened
        return split

    def chat_template_kwargs(self) -> dict[str, bool] | None:
        """What an OpenAI-compatible server (vLLM, SGLang, llama.cpp) or ``LLM.chat`` is told; None for auto."""
        return None if self.mode == "auto" else {"enable_thinking": self.mode == "on"}

    def advice(self, *, can_turn_off: bool = True) -> str:
        """What to do about a model that only reasoned: the options that apply to it."""
        bigger = [e for e, room in THINKING_ROOM.items() if room > self.room]
        more = (f"give its reasoning more room (--reasoning-effort {bigger[0]}: {THINKING_ROOM[bigger[0]]:,} tokens, "
                f"now {self.room:,})" if bigger else "raise the summary length")
        return f"{more}, or turn its thinking off (--thinking off)" if can_turn_off else more



class WatchedThinking:
    """A backend whose model's thinking a :class:`ThinkWatch` (``_think``) follows: its reasoning
    room and the advice a failure prints come from the watch. Mixed in before ``BackendBase``,
    whose plain defaults these properties replace."""

    _think: ThinkWatch
    thinking_can_turn_off = True  # False where the model's chat template cannot be told (llama.cpp embedded)

    @property  # a thinking model's room grows once it is seen thinking
    def extra_output_tokens(self) -> int:
        """Room added to each request's output budget for a thinking model's reasoning."""
        return self._think.room_tokens

    @property
    def reasoning_advice(self) -> str:
        """What to do when the model spent its room on reasoning."""
        return self._think.advice(can_turn_off=self.thinking_can_turn_off)

__all__ = [
    "DEFAULT_THINKING_EFFORT", "THINKING_MODES", "THINKING_ROOM", "Split", "ThinkWatch", "WatchedThinking",
    "hidden_share", "known_to_think", "planned_room_tokens", "reasoning_field", "split_thinking",
]
