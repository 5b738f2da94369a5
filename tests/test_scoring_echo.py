"""A judge that parrots its prompt (demonstrations included) is never read as an answer (issue 9 item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from booksum_app.errors import JudgeParseError
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.runners.score import ScoreSettings, run_score
from booksum_app.scoring.answers import parse_batch_answer, parse_sentence_answer
from booksum_app.scoring.booookscore import load_judge_prompt
from booksum_app.testing.fake_server import FakeServer

SUMMARIES = {
    "lisk.epub": "Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it. The bakery stays in the family.",
    "north.epub": "An old pilot flies mail across the mountains. His engine fails one winter.",
}
N_SENTENCES = 5


@pytest.mark.parametrize("mode", ["sentence", "batched"])
def test_echoing_judge_over_http_scores_nothing(tmp_path: Path, mode: str) -> None:
    with FakeServer(fault_rate=1.0, fault_kinds=("echo",)) as server:
        llm = LLMSettings(base_url=server.openai_base_url, cache_dir=tmp_path / "cache", max_attempts=1)
        settings = ScoreSettings(
            judge="openai:gpt-4o-mini",
            mode=mode,  # type: ignore[arg-type]
            batch_size=2,
            max_attempts=2,
            llm=llm,
        )
        with get_model("openai:gpt-4o-mini", settings=llm) as model:  # the real client, closed after
            run = run_score([_write(tmp_path)], settings, model=model)
    result = run.systems[0].booookscore
    assert result is not None
    system = result.system
    assert system.n_sentences == N_SENTENCES
    assert system.n_unparseable == N_SENTENCES  # every sentence, none read as "no confusion"
    assert system.score is None or system.score < 1.0


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SUMMARIES), encoding="utf-8")
    return path


def test_echoed_sentence_prompt_is_rejected() -> None:
    prompt = load_judge_prompt("sentence")
    echoed = prompt.shared_prefix("Mara bakes. Teo sells.") + prompt.sentence_prompt("Teo sells.")
    with pytest.raises(JudgeParseError):
        parse_sentence_answer(echoed)
    with pytest.raises(JudgeParseError):  # the per-sentence part alone: placeholders, instructions
        parse_sentence_answer(prompt.sentence_prompt("Teo sells."))


def test_echoed_batched_prompt_is_rejected() -> None:
    prompt = load_judge_prompt("batched")
    echoed = prompt.shared_prefix("Mara bakes. Teo sells.") + prompt.batch_prompt(["Mara bakes.", "Teo sells."])
    with pytest.raises(JudgeParseError):
        parse_batch_answer(echoed, 2)


@pytest.mark.parametrize(
    "answer",
    [
        # an echoed demonstration: example markers
        "[Example sentence] Teo sells.\n[Example response] Questions: no confusion\nTypes: no confusion",
        "[Example response] Questions: no confusion\nTypes: no confusion",
        # two answers in one reply
        "Questions: no confusion\nTypes: no confusion\nQuestions: Who is Teo?\nTypes: entity omission",
        "Questions: Who is Teo?\nTypes: entity omission\n\nTypes: no confusion",
        # the instructions themselves
        ("Given a book summary and a sentence from that summary, determine if that sentence causes any "
        "confusion.\nQuestions: no confusion\nTypes: no confusion"),
        "[Your summary]\nMara bakes.\n[Your sentence]\nTeo sells.\nQuestions: no confusion\nTypes: no confusion",
        ("Questions: <your clarifying questions, or no confusion>\nTypes: <the confusion types, separated by "
        "commas, or no confusion>"),
    ],
)
def test_sentence_replies_that_are_not_one_answer_are_rejected(answer: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_sentence_answer(answer)


@pytest.mark.parametrize(
    "answer",
    [
        '[Example response] [{"sentence_num": 1, "questions": null, "types": null}]',
        ('```json\n[{"sentence_num": 1, "questions": null, "types": null}]\n```\n'
        '```json\n[{"sentence_num": 1, "questions": "Who?", "types": ["entity omission"]}]\n```'),
        '[Your sentences]\n1. Teo sells.\n[{"sentence_num": 1, "questions": null, "types": null}]',
    ],
)
def test_batched_replies_that_are_not_one_answer_are_rejected(answer: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_batch_answer(answer, 1)


def test_batched_sentence_answered_twice_is_not_read() -> None:
    text = (
        '[{"sentence_num": 1, "questions": null, "types": null},'
        ' {"sentence_num": 1, "questions": "Who?", "types": ["entity omission"]},'
        ' {"sentence_num": 2, "questions": null, "types": null}]'
    )
    answers, errors = parse_batch_answer(text, 2)
    assert set(answers) == {2} and set(errors) == {1}
