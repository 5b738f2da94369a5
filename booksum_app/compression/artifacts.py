"""Artifact removal (BooookScore App. A.2 fn. 20, App. J.3, App. D, App. D.1).

Two passes, both optional, both recorded:

1. LLM pass (App. J.3): the model deletes traces of stepwise writing ("in this segment")
   and content from non-narrative sections. Its answer is rejected (the input kept) when
   it is empty, cut off, or under half the input's tokens: the prompt says "do not make
   any other changes", so a much shorter answer is a rewrite, not an edit (our guard).
2. Deterministic cleanup (App. D: "a standard string matching approach to get rid of
   sentences copied from the prompt"), applied to the LLM pass's output:

   - answer-cue echoes at the start: "Summary:", "Updated summary (300 words):",
     "Condensed summary (to be within 300 words):", "Here is the updated summary:", 摘要：...
   - stepwise phrases: "In this segment, ", ", in the current excerpt,", "In the updated
     summary, ", " in this part of the story." and the Chinese 在这一片段中，...
   - sentences copied from the prompt templates (numbers ignored when comparing);
   - lines that are only a merge prompt's input header ("Summary 22:"), which a small model
     copies from hier's merge prompt into its answer;
   - a trailing incomplete sentence (when at least one complete sentence precedes it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from booksum_app.chunking.sentences import sentence_spans
from booksum_app.compression.validity import (
    CallEntry,
    ends_sentence,
    truncate_at_sentence_end,
)
from booksum_app.config import DEFAULT_TOP_P
from booksum_app.llm.base import ChatModel, Request
from booksum_app.prompts import Template

ARTIFACT_TEMPERATURE = 0.0  # an edit should change as little as possible
MIN_KEPT_SHARE = 0.5  # an LLM "edit" shorter than this share of the input is rejected
MIN_ECHO_WORDS = 5  # a sentence must be this long to count as copied from a prompt

_CUE_LINE = re.compile(
    r"\A\s*(?:\*\*|#+\s*)?"
    r"(?:(?:here\s+is|here's|below\s+is)\b[^\n]*?:"  # "Here is the updated summary:"
    r"|(?:the\s+)?(?:updated|condensed|edited|merged|final|new|book|running|complete)?\s*summary"
    r"(?:\s*\([^)\n]*\))?(?:\s*:|[ \t]*(?=\n))"  # "Updated summary (300 words):", "Summary" alone
    r"|(?:更新后的|压缩后的|编辑后的|合并后的)?摘要(?:[（(][^）)\n]*[）)])?\s*[：:])"
    r"(?:\*\*)?[ \t]*\n?",
    re.IGNORECASE,
)
_PART = (
    r"(?:segment|section|excerpt|part(?:\s+of\s+the\s+(?:story|book|novel|text))?|portion|chunk|"
    r"passage|installment|summary)"
)
_WHICH = (
    r"(?:this|these|the\s+(?:current|previous|preceding|next|following|latest|updated|"
    r"final|last|first|given|provided|above|new)|the)"
)
_AFTER = r"(?:provided|above|given|below)"  # "In the excerpt provided, ..."
_LEADING_PHRASE = re.compile(
    rf"(?:^|(?<=[.!?。！？\"”’']))(\s*)(?:In|Within|Throughout)\s+{_WHICH}"
    rf"(?:\s+\w+)?\s+{_PART}(?:\s+{_AFTER})?,\s*(\w)",
    re.IGNORECASE | re.MULTILINE,
)
_INNER_PHRASE = re.compile(
    rf",\s*(?:in|within)\s+{_WHICH}\s+{_PART}(?:\s+{_AFTER})?\s*,", re.IGNORECASE
)
_TRAILING_PHRASE = re.compile(
    rf"\s+(?:in|within)\s+(?:this|the\s+(?:current|previous|latest|given|provided))\s+{_PART}"
    rf"(?=[.!?,;])",
    re.IGNORECASE,
)
_ZH_PHRASE = re.compile(
    r"(?:在|于)(?:这|本|此|当前|上述|更新后的)(?:一|个)?(?:片段|部分|节选|段落|段|摘要)(?:中|里)?[，,]"
)
_MULTI_BLANK = re.compile(r"\n{3,}")
# hier's ITEM_HEADER ("Summary {k}:") alone on a line, bold or not: prompt structure, never story
_ITEM_HEADER_LINE = re.compile(r"^[ \t]*(?:\*\*)?summary[ \t]+\d+[ \t]*:(?:\*\*)?[ \t]*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class CleanResult:
    """A summary before and after artifact removal, with what each pass did."""

    raw: str
    cleaned: str
    llm_text: str | None  # the LLM pass's answer (None when no LLM pass ran)
    llm_rejected: str | None  # why the LLM answer was not used, if it was not
    removed: tuple[str, ...]  # what the deterministic rules removed
    calls: tuple[CallEntry, ...]


def _norm(text: str) -> str:
    text = re.sub(r"\{\w+\}|\d[\d,]*", "#", text.lower())
    return " ".join(re.sub(r"[^\w#\u3400-\u9fff]+", " ", text).split())


def clean_deterministic(
    text: str, *, lang: str = "en", prompt_texts: Iterable[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """Remove answer-cue echoes, stepwise phrases, copied prompt sentences, a trailing fragment."""
    removed: list[str] = []
    text = text.strip()
    while True:
        match = _CUE_LINE.match(text)
        if not match or not match.group(0).strip():
            break
        removed.append(match.group(0).strip())
        text = text[match.end() :].lstrip()

    def leading(m: re.Match[str]) -> str:
        removed.append(m.group(0)[:-1].strip())
        return m.group(1) + m.group(2).upper()

    text = _LEADING_PHRASE.sub(leading, text)
    # ", in the current excerpt," goes with both commas: "Darcy proposes", not "Darcy, proposes"
    for pattern, repl in ((_INNER_PHRASE, ""), (_TRAILING_PHRASE, ""), (_ZH_PHRASE, "")):
        for m in pattern.finditer(text):
            removed.append(m.group(0).strip())
        text = pattern.sub(repl, text)

    for m in _ITEM_HEADER_LINE.finditer(text):
        removed.append(m.group(0).strip())
    text = _ITEM_HEADER_LINE.sub("", text)

    prompts = [_norm(p) for p in prompt_texts]
    if prompts:
        kept: list[str] = []
        cursor = 0
        for start, end in sentence_spans(text, lang=lang):
            sentence = text[start:end]
            normalized = _norm(sentence)
            if len(normalized.split()) >= MIN_ECHO_WORDS and any(normalized in p for p in prompts):
                removed.append(sentence)
                kept.append(text[cursor:start])
            else:
                kept.append(text[cursor:end])
            cursor = end
        kept.append(text[cursor:])
        text = "".join(kept)

    text = _MULTI_BLANK.sub("\n\n", text).strip()
    text = re.sub(r"[ \t]{2,}", " ", text)
    if text and not ends_sentence(text):
        cut = truncate_at_sentence_end(text, max_tokens=None, count_tokens=len, lang=lang)
        if cut and cut != text and ends_sentence(cut):
            removed.append(text[len(cut) :].strip())
            text = cut
    return text, tuple(r for r in removed if r)


def remove_artifacts(
    text: str,
    *,
    model: ChatModel | None = None,
    template: Template | None = None,
    lang: str = "en",
    prompt_texts: Iterable[str] = (),
    top_p: float = DEFAULT_TOP_P,
) -> CleanResult:
    """Run the LLM pass (when ``model`` and ``template`` are given) and the deterministic cleanup."""
    source = text
    llm_text: str | None = None
    rejected: str | None = None
    calls: tuple[CallEntry, ...] = ()
    if model is not None and template is not None and text.strip():
        input_tokens = model.count_tokens(text)
        max_tokens = input_tokens + input_tokens // 10 + 32
        request = Request(
            prompt=template.render(summary=text),
            max_tokens=max_tokens,
            temperature=ARTIFACT_TEMPERATURE,
            top_p=top_p,
            purpose="clean",
        )
        completion = model.complete(request)
        llm_text = completion.text.strip()
        calls = (CallEntry.of(request, completion, node="final"),)
        if not llm_text:
            rejected = "empty"
        elif completion.cut_off:
            rejected = "cut_off"
        elif model.count_tokens(llm_text) < MIN_KEPT_SHARE * input_tokens:
            rejected = "too_short"
        else:
            source = llm_text
    cleaned, removed = clean_deterministic(source, lang=lang, prompt_texts=prompt_texts)
    return CleanResult(text, cleaned, llm_text, rejected, removed, calls)


def prompt_texts_of(templates: Iterable[Template]) -> tuple[str, ...]:
    """The instruction text of templates, for echo detection."""
    return tuple(t.text for t in templates)


__all__ = ["CleanResult", "clean_deterministic", "prompt_texts_of", "remove_artifacts"]
