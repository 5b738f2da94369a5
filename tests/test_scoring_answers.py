"""The judge answer parser: a table of answer variants, garbage included."""

from __future__ import annotations

import pytest

from booksum_app.errors import JudgeParseError
from booksum_app.scoring.answers import JudgeAnswer, parse_batch_answer, parse_sentence_answer
from booksum_app.scoring.judgement import ERROR_TYPES, normalise_type

NO = JudgeAnswer()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Questions: no confusion\nTypes: no confusion", NO),
        ("Questions: no confusion Types: no confusion", NO),
        ("questions: No confusion.\ntypes: No Confusion.", NO),
        ("**Questions:** no confusion\n**Types:** no confusion", NO),
        ("[Your response] Questions: no confusion\nTypes: none", NO),
        ("Questions: None.\nTypes: N/A", NO),
        ("Sure.\nQuestions: no confusion\nTypes: no confusion", NO),
        (
            "Questions: Who is Anna?\nTypes: entity omission",
            JudgeAnswer("Who is Anna?", ("entity omission",)),
        ),
        (
            "Questions: Why? What happened?\nTypes: Event Omission, causal-omission",
            JudgeAnswer("Why? What happened?", ("event omission", "causal omission")),
        ),
        (
            "Questions: Who is he?\nTypes: omission of entity; Inconsistencies",
            JudgeAnswer("Who is he?", ("entity omission", "inconsistency")),
        ),
        (
            "Questions: Why repeat this?\nTypes: duplications and discontinuity",
            JudgeAnswer("Why repeat this?", ("duplication", "discontinuity")),
        ),
        (
            "Questions: What?\nTypes: [salience, language]\nThe sentence is fine otherwise.",
            JudgeAnswer("What?", ("salience", "language")),
        ),
        (
            "Questions: Who is X?\nTypes: entity omission, entity omission",
            JudgeAnswer("Who is X?", ("entity omission",)),
        ),
    ],
)
def test_sentence_answers_that_parse(answer: str, expected: JudgeAnswer) -> None:
    assert parse_sentence_answer(answer) == expected


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "The sentence is clear.",
        "Questions: Who is Anna?",  # no types
        "Questions: Who is Anna?\nTypes: confusing",  # unknown type
        "Questions: Who is Anna?\nTypes: plot hole",  # unknown type
        "Questions: Who is Anna?\nTypes: no confusion",  # contradiction
        "Questions: no confusion\nTypes: entity omission",  # contradiction
        "Questions:\nTypes:\n",  # empty fields are not "no confusion"
        "Questions: Who?\nTypes: ",
        "\u00ff\u0000 garbage ]]][[[",
        # bare words are not the format: a judge talked into "No" must not score a sentence clean
        "No",
        "No.",
        "no",
        "none",
        "None.",
        "nothing",
        "null",
        "N/A",
        "No confusion.",  # the release's parser too wants both labels
        "Types: N/A",  # no Questions label
        "Types: entity omission",
        "Questions: no\nTypes: no",
        "Questions: nothing\nTypes: null",
        "Types: no confusion\nQuestions: no confusion",  # labels in the wrong order
    ],
)
def test_sentence_answers_that_are_rejected(answer: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_sentence_answer(answer)


def test_unknown_type_message_names_the_type() -> None:
    with pytest.raises(JudgeParseError, match="plot hole"):
        parse_sentence_answer("Questions: Why?\nTypes: plot hole")


@pytest.mark.parametrize("kind", ERROR_TYPES)
def test_every_canonical_type_normalises_to_itself(kind: str) -> None:
    assert normalise_type(kind) == kind
    assert normalise_type(kind.upper() + "s") == kind
    assert normalise_type(kind.replace(" ", "-")) == kind


def test_batch_answer_with_mixed_items() -> None:
    text = (
        "Here you go:\n```json\n"
        '[{"sentence_num": 1, "questions": null, "types": null},'
        ' {"sentence_num": 2, "questions": "Who is Bo?", "types": ["Entity omission"]},'
        ' {"sentence_num": 3, "questions": "Why?", "types": ["vibes"]},'
        ' {"sentence_num": 4, "questions": "no confusion", "types": "no confusion"}]\n```'
    )
    answers, errors = parse_batch_answer(text, 5)
    assert answers == {1: NO, 2: JudgeAnswer("Who is Bo?", ("entity omission",)), 4: NO}
    assert set(errors) == {3}  # unknown type; 5 is missing from the answer altogether
    assert 5 not in answers


def test_batch_answer_positions_when_numbers_missing() -> None:
    answers, errors = parse_batch_answer(
        '[{"questions": null, "types": null}, {"questions": "Q?", "types": "salience"}]', 2
    )
    assert answers == {1: NO, 2: JudgeAnswer("Q?", ("salience",))}
    assert not errors


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2", '{"a": 1}'])
def test_batch_answer_without_a_json_list_is_rejected(text: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_batch_answer(text, 2)


@pytest.mark.parametrize("text", ["No", "none", "null", "N/A", "No.", "nothing"])
def test_batch_answer_that_is_a_bare_word_is_rejected(text: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_batch_answer(text, 2)


def test_batch_items_without_both_keys_are_not_no_confusion() -> None:
    answers, errors = parse_batch_answer(
        '[{}, {"sentence_num": 2}, {"sentence_num": 3, "types": null}, {"sentence_num": 4, "questions": "no"'
        ', "types": null}, {"sentence_num": 5, "questions": null, "types": "null"}]', 5)
    assert answers == {}
    assert set(errors) == {1, 2, 3, 4, 5}
