"""Deterministic replies for the fake backend and fake server: judge answers or extractive summaries.

A prompt is a BooookScore judge prompt when it contains ``[Your sentence`` (App. J.4);
those are answered by :func:`booksum_app.testing.fake_judge.judge_reply`. Every other
prompt gets an extractive pseudo-summary: the first sentences of the longest text block
in the prompt, up to the word limit the prompt asks for ("within 300 words", "300字",
the last such number wins) and never more than ``max_tokens`` could hold, always ending
at a sentence end. The same prompt always gives the same reply.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from booksum_app.llm.base import Request

JUDGE_MARKER = "[Your sentence"

# "within 300 words", "roughly contain 300 words", "less than 300 words", "300-word", "300字"
_WORD_LIMIT = re.compile(r"(\d[\d,]*)\s*(?:-\s*)?(?:words?\b|字)", re.IGNORECASE)
# A block separator: a line made only of dashes / em dashes / box-drawing rules, or a blank line.
_SEPARATOR = re.compile(r"\n[ \t]*(?:[-—–─=]{3,}|—+)?[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？…])[\"'”’」』)）]*\s*")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[^\s\u3400-\u9fff\uf900-\ufaff]+")

WORDS_PER_TOKEN = 0.75  # conservative: English averages ~0.75 words per token
TOKENS_PER_CJK_CHAR = 1.5  # conservative for cl100k / o200k on Chinese text


def default_reply(request: Request) -> str:
    """Answer ``request`` deterministically: a judge answer or an extractive summary."""
    return reply_text(request.user_text, max_tokens=request.max_tokens)


def reply_text(user_text: str, *, max_tokens: int) -> str:
    """Answer a user message (judge prompt or summarization prompt) within ``max_tokens``."""
    if JUDGE_MARKER in user_text:
        from booksum_app.testing.fake_judge import judge_reply

        return judge_reply(user_text)
    return extractive_summary(user_text, max_tokens=max_tokens)


def requested_word_limit(text: str) -> int | None:
    """The last word limit a prompt asks for ("within 300 words", "300字"), or None."""
    limits = [int(m.group(1).replace(",", "")) for m in _WORD_LIMIT.finditer(text)]
    limits = [n for n in limits if n > 0]
    return limits[-1] if limits else None


def count_words(text: str) -> int:
    """Words as the limit counts them: Latin words plus one per CJK character."""
    return len(_CJK.findall(text)) + len(_LATIN_WORD.findall(_CJK.sub(" ", text)))


def estimate_tokens(text: str) -> int:
    """A conservative token estimate (over-counts rather than under-counts)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN_WORD.findall(_CJK.sub(" ", text)))
    return math.ceil(latin / WORDS_PER_TOKEN + cjk * TOKENS_PER_CJK_CHAR)


def longest_block(text: str) -> str:
    """The longest block of the prompt, blocks separated by rule lines or blank lines."""
    blocks = [b.strip() for b in _SEPARATOR.split("\n" + text + "\n")]
    blocks = [b for b in blocks if b]
    if not blocks:
        return ""
    return max(blocks, key=len)  # first of the longest on ties: max keeps the first


def split_sentences(text: str) -> list[str]:
    """Rough sentence split after . ! ? 。！？… keeping closing quotes with their sentence."""
    parts = [p.strip() for p in _SENTENCE_END.split(" ".join(text.split()))]
    return [p for p in parts if p]


def extractive_summary(user_text: str, *, max_tokens: int) -> str:
    """The first whole sentences of the longest block within the word and token limits."""
    words_limit = requested_word_limit(user_text)
    block = longest_block(user_text)
    sentences = split_sentences(block) or ["Nothing to summarize."]
    chosen: list[str] = []
    words = tokens = 0
    for sentence in sentences:
        w, t = count_words(sentence), estimate_tokens(sentence) + 1
        if (words_limit is not None and words + w > words_limit) or tokens + t > max_tokens:
            break
        chosen.append(sentence)
        words, tokens = words + w, tokens + t
    if not chosen:
        chosen = [_shorten(sentences[0], words_limit=words_limit, max_tokens=max_tokens)]
    joiner = "" if _CJK.search(chosen[0]) else " "
    return joiner.join(chosen)


def _shorten(sentence: str, *, words_limit: int | None, max_tokens: int) -> str:
    """Cut one overlong sentence to the limits and close it with a full stop."""
    cjk = bool(_CJK.search(sentence))
    units = list(sentence) if cjk else sentence.split()
    budget = int(max(1, max_tokens - 1) / (TOKENS_PER_CJK_CHAR if cjk else 1 / WORDS_PER_TOKEN))
    if words_limit is not None:
        budget = min(budget, words_limit)
    budget = max(1, budget)
    head = ("" if cjk else " ").join(units[:budget]).rstrip(",;:，；：、 ")
    return head + ("。" if cjk else ".") if head and head[-1] not in ".!?。！？…" else head


# A thinking model's reasoning (Qwen3, DeepSeek-R1 distills), as the stand-ins send it. The
# marker appears in no book and no prompt: a test finds it in an output only if it leaked.
THINKING = "Okay, the user wants this handled. THINKING-MARKER: let me reason about it step by step first."
# how a carrier sends it: "tags" (<think>...</think> before the answer, no reasoning parser),
# "open" (the chat template opened the block: the answer starts inside it, only </think> shows),
# "parser" (a server's reasoning parser: message.reasoning_content), "field" (Ollama: message.thinking),
# "long" (Qwen3 or an R1 distill at its real length: a <think> trace of 600-800 tokens before every
# answer, paid out of the request's max_tokens like the answer, so a request without room for it is
# cut while the model still reasons)
THINK_MODES = ("tags", "open", "parser", "field", "long")
_TRACE_STEPS = (
    "Okay, the user wants this handled, so let me read the text again from the start.",
    "First I should work out who the main characters are and what each of them wants.",
    "Wait, I need to check whether the order of events in the passage is really the order I assumed.",
    "Let me list the events one by one and see which of them matter for the rest of the story.",
    "Hmm, the narrator might be unreliable here, so I should keep to what the text actually says.",
    "The instructions ask for a limited number of words, so I have to choose what to keep.",
    "Maybe the setting matters more than I thought; I will mention it once and move on.",
    "I should not invent anything that is not in the passage, and I should keep the names right.",
    "So the structure could be: who, where, what happens, and how it ends for now.",
    "Let me double-check the last part, because the ending of the passage changes the picture.",
)


def with_thinking(answer: str, mode: str) -> str:
    """``answer`` as a thinking model's text carries it (the in-text modes; others leave it as is)."""
    if mode == "tags":
        return f"<think>\n{THINKING}\n</think>\n\n{answer}"
    if mode == "open":
        return f"{THINKING}\n</think>\n\n{answer}"
    return answer


def long_trace(prompt: str) -> str:
    """A thinking model's reasoning about ``prompt``: 600-800 tokens (cl100k), the length fixed by the prompt."""
    from booksum_app.testing.fake_prompt_cache import count_tokens

    target = 600 + int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16) % 201
    steps = [f"{THINKING}"]
    while count_tokens(" ".join(steps)) < target:
        steps.append(_TRACE_STEPS[len(steps) % len(_TRACE_STEPS)])
    return " ".join(steps)


def long_thinking(answer: str, prompt: str) -> str:
    """``answer`` after a ``<think>`` trace of 600-800 tokens, as Qwen3 without a reasoning parser writes it."""
    return f"<think>\n{long_trace(prompt)}\n</think>\n\n{answer}"


def thinking_enabled(payload: dict[str, Any]) -> bool:
    """Whether a request leaves thinking on: ``chat_template_kwargs.enable_thinking`` false (vLLM, SGLang,
    llama.cpp's server) or Ollama's ``think: false`` turns it off, as Qwen3's chat template does."""
    kwargs = payload.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False:
        return False
    return payload.get("think") is not False
