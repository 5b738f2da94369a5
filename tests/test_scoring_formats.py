"""Release annotation formats beyond per-sentence and v2: span lists (llama2) and human annotations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from booksum_app.errors import InputError
from booksum_app.runners.score import ScoreSettings, load_summaries, run_score
from booksum_app.scoring.aggregate import aggregate
from booksum_app.scoring.release import detect_format, judgements_from_release

SUMMARY = "Mara inherits a bakery. Teo wants to sell it. They argue all winter. The bakery stays."
SPANS = {
    "a.epub": [
        {"span": "Teo wants to sell it.", "questions": "Who is Teo?", "types": ["entity omission"]},
        {"span": "Teo wants to sell it.", "questions": "Why?", "types": ["causal omission"]},
    ],
    "b.epub": None,
}
HUMAN = {
    "a.epub": {
        "summary": SUMMARY,
        "singles": [{"id": "x", "span": "Teo wants", "questions": "Who is Teo?", "labels": ["entity omission"]}],
        "relations": [
            {
                "id_a": "y",
                "id_b": "z",
                "span_a": "inherits a bakery",
                "span_b": "The bakery stays.",
                "shared_questions": "Was it sold?",
                "same": True,
                "shared_labels": ["discontinuity"],
            }
        ],
    }
}


def test_span_lists_count_every_entry_over_the_split_sentences() -> None:
    summaries = {"a.epub": SUMMARY, "b.epub": "One sentence."}
    assert detect_format(SPANS) == "spans"
    judgements = judgements_from_release(SPANS, summaries=summaries)
    assert [j.n_confusing for j in judgements] == [2, 0]
    assert aggregate(judgements).score == pytest.approx(((1 - 2 / 4) + 1) / 2)


def test_span_lists_need_their_summaries_and_must_match_them() -> None:
    with pytest.raises(InputError, match="summaries are needed"):
        judgements_from_release(SPANS)
    with pytest.raises(InputError, match="2 of 2 annotated sentences do not occur"):
        judgements_from_release(SPANS, summaries={"a.epub": "Something else. Entirely.", "b.epub": "x."})
    with pytest.raises(InputError, match="'span' string"):
        judgements_from_release({"a.epub": [{"questions": "Q?"}]}, summaries={"a.epub": SUMMARY})


def test_human_annotations_count_singles_plus_relations_from_the_file_alone() -> None:
    assert detect_format(HUMAN) == "human"
    (judgement,) = judgements_from_release(HUMAN)
    assert judgement.n_sentences == 4 and judgement.n_confusing == 2
    assert judgement.score == pytest.approx(0.5)
    assert sorted(j.index for j in judgement.sentences) == [0, 1]  # placed where the span starts
    assert judgement.type_counts()["discontinuity"] == 1


def test_human_annotations_refuse_other_summaries() -> None:
    with pytest.raises(InputError, match="1 summary\\(ies\\) differ"):
        judgements_from_release(HUMAN, summaries={"a.epub": "Another summary."})
    assert judgements_from_release(HUMAN, summaries={"a.epub": SUMMARY})[0].n_confusing == 2


def test_runner_scores_a_human_file_alone_or_as_its_own_annotations(tmp_path: Path) -> None:
    path = tmp_path / "summary-x.json"
    path.write_text(json.dumps(HUMAN), encoding="utf-8")
    assert load_summaries(path) == {"a.epub": SUMMARY}
    for settings in (ScoreSettings(), ScoreSettings(annotations=(path,))):
        result = run_score([path], settings).systems[0].booookscore
        assert result is not None and result.system.score == pytest.approx(0.5)
        assert result.system.n_confusing == 2
