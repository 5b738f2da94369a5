"""Parse BooookScore judge answers: "Questions: ... / Types: ..." (per sentence) and JSON lists (batched).

The original parser (``validate_response`` in lilakk/BooookScore) requires a line holding
"Questions: " and one holding "Types: ", splits types on ", " and rejects any type outside the
8; "no confusion" is the only way to say there is none. We are more forgiving about form and
just as strict about content:

- labels in any case, bold markdown, both on one line or on two, a leading "[Your response]";
- types separated by commas, semicolons, slashes or "and"; spellings normalised by
  :func:`booksum_app.scoring.judgement.normalise_type` (case, hyphens, plurals, "omission of
  entity"); in a labelled field "no confusion", "none", "N/A" mean no confusion.

Rejected (:class:`JudgeParseError`, so the caller retries and finally counts the sentence as
unparseable, never as no confusion): a reply without both the "Questions:" and the "Types:"
label (a bare "No", "none", "null", even a bare "no confusion": a judge talked into one word
by the summary it reads must not make that summary perfect), an unknown type, questions
without types, and contradictions (questions asked but types "no confusion", or the reverse).
In batched mode an item must carry both keys, ``questions`` and ``types`` (null for none).

A reply is an answer only if it is *one* answer: a reply that carries the prompt's own
section markers (``[Example response]``, ``[Your summary]``, ... except one leading ``[Your
response]``), its instructions or answer placeholders, or a second Questions/Types block (a
judge echoing its prompt, demonstrations included, or answering twice) is rejected, never
read as the first verdict found in it. In batched mode the same holds for the markers, and a
reply with two JSON lists, or two verdicts for one sentence number, is not read either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from booksum_app.errors import JudgeParseError
from booksum_app.jsonin import parse_json_or_none
from booksum_app.scoring.judgement import is_no_confusion, normalise_type

_QUESTIONS = re.compile(r"questions?\s*:", re.IGNORECASE)
# "Confusion Types:" is a label too, but the "confusion" of a "no confusion" that ends the
# questions is not part of it
_TYPES = re.compile(r"(?:(?<!no\s)confusion\s+)?types?\s*:", re.IGNORECASE)
_TYPE_SPLIT = re.compile(r"\s*(?:[,;/|&+]|\band\b)\s*", re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_LEADING_RESPONSE = re.compile(r"^\s*\[your response\]\s*", re.IGNORECASE)
# Section markers of our judge prompts (and of the release's): never part of an answer.
_PROMPT_MARKER = re.compile(r"\[\s*(?:example|your)\b[^\]\n]{0,40}\]", re.IGNORECASE)
# Phrases of the instructions and answer placeholders (prompts/booookscore/*.txt).
_INSTRUCTION_PHRASES = (
    "given a book summary",
    "types of confusion include",
    "some examples are provided below",
    "determine if the sentence above involves confusion",  # the earlier wording, still refused
    "for each numbered sentence above",
    "determine if the sentence given after the summary",
    "for each numbered sentence given after the summary",
    "answer in exactly two lines",
    "<your clarifying questions",
    "<the confusion types",
    "<a list of confusion types",
)


@dataclass(frozen=True)
class JudgeAnswer:
    """A parsed verdict: no confusion (no questions, no types) or questions with their types."""

    questions: str | None = None
    types: tuple[str, ...] = ()

    @property
    def confusing(self) -> bool:
        """Whether the judge found a confusion."""
        return bool(self.types)


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def parse_types(text: str) -> tuple[str, ...]:
    """Canonical types of a "Types:" field; ``()`` for "no confusion".

    Raises:
        JudgeParseError: a type that is not one of the 8.
    """
    text = text.strip().strip("[]")
    if not text.strip(" .\"'`*"):
        raise JudgeParseError("empty 'Types:' field")
    if is_no_confusion(text):
        return ()
    kinds: list[str] = []
    for item in _TYPE_SPLIT.split(text):
        if not item.strip(" .\"'`*"):
            continue
        kind = normalise_type(item)
        if kind is None:
            raise JudgeParseError(f"unknown confusion type {_short(item, 40)!r}")
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)


def _verdict(questions: str | None, types_field: Any) -> JudgeAnswer:
    """Check questions against types and build the answer."""
    if types_field is None:
        types: tuple[str, ...] = ()
    elif isinstance(types_field, list):
        types = parse_types(", ".join(str(t) for t in types_field))
    elif isinstance(types_field, str):
        types = parse_types(types_field)
    else:
        raise JudgeParseError(f"types must be a list, a string or null, not {type(types_field).__name__}")
    asked = bool(questions and questions.strip()) and not is_no_confusion(questions or "")
    if types and not asked:
        if questions is not None:
            raise JudgeParseError("questions say no confusion but types list confusions")
        return JudgeAnswer(questions=None, types=types)
    if asked and not types:
        raise JudgeParseError("questions asked but no confusion type given")
    return JudgeAnswer(questions=questions.strip() if asked and questions else None, types=types)


def _reject_echo(text: str) -> str:
    """``text`` without a leading "[Your response]"; rejects prompt markers and instructions.

    Raises:
        JudgeParseError: the reply carries the prompt's markers or instructions (an echo).
    """
    body = _LEADING_RESPONSE.sub("", text, count=1)
    marker = _PROMPT_MARKER.search(body)
    if marker is not None:
        raise JudgeParseError(f"the reply repeats the prompt's {marker.group(0)!r} marker; not an answer")
    lowered = " ".join(body.lower().split())
    for phrase in _INSTRUCTION_PHRASES:
        if phrase in lowered:
            raise JudgeParseError(f"the reply repeats the prompt's instructions ({phrase!r}); not an answer")
    return body


def parse_sentence_answer(text: str) -> JudgeAnswer:
    """Parse a per-sentence answer ("Questions: ... Types: ...").

    Raises:
        JudgeParseError: the answer does not follow the format, names an unknown type, or is
            not one answer (an echoed prompt or demonstration, two Questions/Types blocks).
    """
    clean = _reject_echo(text.replace("**", "").replace("__", "").strip())
    n_questions, n_types = len(_QUESTIONS.findall(clean)), len(_TYPES.findall(clean))
    if n_questions > 1 or n_types > 1:
        raise JudgeParseError(
            f"the reply holds {max(n_questions, n_types)} Questions/Types blocks; expected one answer"
        )
    q_match = _QUESTIONS.search(clean)
    if q_match is None:
        raise JudgeParseError(f"no 'Questions:' in the answer {_short(text)!r}")
    t_match = _TYPES.search(clean, q_match.end())
    if t_match is None:
        raise JudgeParseError(f"no 'Types:' after 'Questions:' in the answer {_short(text)!r}")
    types_text = clean[t_match.end() :].strip().split("\n", 1)[0]
    questions = " ".join(clean[q_match.end() : t_match.start()].split())
    return _verdict(questions, types_text)


def _json_list(text: str) -> list[Any]:
    fenced = [m.group(1) for m in _FENCE.finditer(text)]
    lists = [value for value in map(_loads_list, fenced) if value is not None]
    if len(lists) > 1:
        raise JudgeParseError(f"the reply holds {len(lists)} JSON lists; expected one answer")
    for candidate in [*fenced, text]:
        start, end = candidate.find("["), candidate.rfind("]")
        if start == -1 or end <= start:
            continue
        value = parse_json_or_none(candidate[start : end + 1])
        if isinstance(value, list):
            return value
    raise JudgeParseError(f"no JSON list in the answer {_short(text)!r}")


def _loads_list(text: str) -> list[Any] | None:
    value = parse_json_or_none(text)
    return value if isinstance(value, list) else None


def parse_batch_answer(text: str, n_sentences: int) -> tuple[dict[int, JudgeAnswer], dict[int, str]]:
    """Parse a batched answer: ``({sentence_num: answer}, {sentence_num: why not parsed})``.

    Numbers run from 1 to ``n_sentences``; an item without ``sentence_num`` takes its position.
    Sentences missing from the answer are in neither dict.

    Raises:
        JudgeParseError: the answer holds no JSON list at all, or is not one answer (an echoed
            prompt or demonstration, two JSON lists).
    """
    items = _json_list(_reject_echo(text))
    answers: dict[int, JudgeAnswer] = {}
    errors: dict[int, str] = {}
    seen: set[int] = set()
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            errors.setdefault(position, "item is not an object")
            continue
        num = item.get("sentence_num", position)
        try:
            num = int(num)
        except (TypeError, ValueError):
            errors.setdefault(position, f"bad sentence_num {num!r}")
            continue
        if not 1 <= num <= n_sentences:
            continue
        if num in seen:  # two verdicts for one sentence: neither is the answer
            answers.pop(num, None)
            errors[num] = f"sentence {num} is answered twice"
            continue
        seen.add(num)
        if "questions" not in item or "types" not in item:  # {} is not "no confusion"
            errors[num] = "item lacks 'questions' or 'types' (use null for none)"
            continue
        questions = item.get("questions")
        if isinstance(questions, list):
            questions = " ".join(str(q) for q in questions)
        elif questions is not None and not isinstance(questions, str):
            questions = str(questions)
        try:
            answers[num] = _verdict(questions, item.get("types"))
            errors.pop(num, None)
        except JudgeParseError as exc:
            errors[num] = str(exc)
    return answers, errors
