"""The judge with the embedded local model (SmolLM2-135M): the pipeline runs end to end.

The 135M model often answers garbage; the test asserts that every sentence ends up either
parsed or counted as unparseable, never silently dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.errors import ModelUnavailable
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.scoring import score_summary

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

SUMMARY = ("Nora finds a key in her late father's coat. She opens his old desk with it. "
           "Inside lies a letter to a brother she never knew.")


def test_local_judge_scores_a_short_summary(tmp_path: Path) -> None:
    pytest.importorskip(
        "llama_cpp", reason="the embedded model needs the 'local' extra (llama-cpp-python)"
    )
    try:
        model = get_model("local", settings=LLMSettings(cache_dir=tmp_path / "cache"))
    except ModelUnavailable as exc:
        pytest.skip(f"embedded model not available: {exc}")
    result = score_summary(SUMMARY, judge=model, mode="sentence", max_attempts=2)
    judgement = result.summaries[0]
    assert judgement.n_sentences == 3 and len(judgement.sentences) == 3
    for sentence in judgement.sentences:
        assert (
            sentence.unparseable
            or sentence.confusing
            or (not sentence.types and not sentence.questions)
        )
        if sentence.unparseable:
            assert sentence.answer is not None  # the raw answer is kept for the report
    assert judgement.n_unparseable + (judgement.n_judged) == 3
    assert "judge:local" in result.signature and "mode:sentence" in result.signature
