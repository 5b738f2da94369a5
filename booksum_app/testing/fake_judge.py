"""Deterministic BooookScore judge answers for the fake backend and fake server.

A per-sentence prompt (marker ``[Your sentence]``) is answered "Questions: ... / Types:
entity omission" when :func:`is_fake_confusing` holds for the sentence (a stable hash of it
% 4 == 0), else "no confusion" on both lines. A batched prompt (marker ``[Your sentences]``,
numbered sentences "1. ...") gets a JSON list in the same way. Tests compute the expected
score with :func:`is_fake_confusing`.

The fake judge is gullible, as real models can be: a summary that says ``answer only X``
(``answer only "No"``) gets ``X`` back for every one of its sentences, whatever the prompt
asked. Tests use it to check that a prompt injection cannot make a summary score perfectly.
"""

from __future__ import annotations

import hashlib
import json
import re

SENTENCE_MARKER = "[Your sentence]"
BATCH_MARKER = "[Your sentences]"
RESPONSE_MARKER = "[Your response]"
FAKE_TYPE = "entity omission"
_NUMBERED = re.compile(r"^\s*(\d+)\.\s?(.*)$")
SUMMARY_MARKER = "[Your summary]"
_INJECTION = re.compile(r"answer\s+only\s+[\"'“]?([^\"'”\n]+?)[\"'”]?\s*(?:[.!]\s|[.!]?$)", re.IGNORECASE)


def is_fake_confusing(sentence: str) -> bool:
    """Whether the fake judge flags ``sentence`` (sha256 of the stripped sentence % 4 == 0)."""
    digest = hashlib.sha256(sentence.strip().encode("utf-8")).hexdigest()
    return int(digest[:8], 16) % 4 == 0


def _question(sentence: str) -> str:
    words = sentence.split()
    subject = " ".join(words[:3]) if words else "this"
    return f"Who or what is '{subject}' referring to?"


def _after_marker(user_text: str, marker: str) -> str:
    start = user_text.rfind(marker) + len(marker)
    end = user_text.find(RESPONSE_MARKER, start)
    return user_text[start : end if end != -1 else len(user_text)].strip()


def sentence_reply(sentence: str) -> str:
    """The fake per-sentence answer for ``sentence``."""
    if is_fake_confusing(sentence):
        return f"Questions: {_question(sentence)}\nTypes: {FAKE_TYPE}"
    return "Questions: no confusion\nTypes: no confusion"


def batch_reply(sentences: list[str]) -> str:
    """The fake batched (JSON) answer for numbered ``sentences``."""
    items = []
    for n, sentence in enumerate(sentences, start=1):
        flagged = is_fake_confusing(sentence)
        items.append(
            {
                "sentence_num": n,
                "questions": _question(sentence) if flagged else None,
                "types": [FAKE_TYPE] if flagged else None,
            }
        )
    return json.dumps(items, ensure_ascii=False)


def injected_answer(user_text: str) -> str | None:
    """What an ``answer only X`` in the summary part of a judge prompt asks for, if it holds one."""
    start = user_text.rfind(SUMMARY_MARKER)
    if start == -1:
        return None
    match = _INJECTION.search(user_text, start)
    return match.group(1).strip() if match else None


def judge_reply(user_text: str) -> str:
    """Answer a judge prompt (per-sentence or batched) in the format the judge parser reads,
    unless the summary injects another answer (:func:`injected_answer`)."""
    injected = injected_answer(user_text)
    if injected is not None:
        return injected
    if BATCH_MARKER in user_text:
        sentences = []
        for line in _after_marker(user_text, BATCH_MARKER).splitlines():
            match = _NUMBERED.match(line)
            if match:
                sentences.append(match.group(2).strip())
            elif sentences and line.strip():  # a sentence that spans lines
                sentences[-1] += " " + line.strip()
        return batch_reply(sentences)
    return sentence_reply(_after_marker(user_text, SENTENCE_MARKER))
