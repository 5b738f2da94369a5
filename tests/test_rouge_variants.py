"""ROUGE-L variants: CLongEval's and CNNSum's metric (rouge 1.0.1 on jieba words) and rouge-score's.

The golden test scores CLongEval's released LStSum model outputs (tests/data/clongeval/README.md)
and must give the five figures its paper prints; the package test checks booksum's
reimplementation against the PyPI ``rouge`` 1.0.1 package itself, float for float.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from booksum_app.errors import InputError
from booksum_app.scoring.rouge import (
    ROUGE_VARIANTS,
    failed_call,
    jieba_joined,
    package_rouge_l,
    rouge_l,
    rouge_signature,
)
from booksum_app.signature import rules_version

DATA = Path(__file__).parent / "data" / "clongeval"
# CLongEval (Qiu et al. 2024), LStSum: ROUGE-L F x100 by context size, as published
PUBLISHED = {
    ("moonshot-v1", "small"): 21.56,
    ("moonshot-v1", "medium"): 18.81,
    ("moonshot-v1", "large"): 16.38,
    ("gpt4-turbo-128k", "small"): 21.96,
    ("gpt4-turbo-128k", "medium"): 17.38,
}
SIZES = {"small": 300, "medium": 400, "large": 300}
FAILED_ROWS = {("gpt4-turbo-128k", "medium"): 10}  # HTTP_ERROR rows of the release


def released_rows(model: str, size: str) -> list[dict[str, str]]:
    """Every row of a released file, failed API calls included (the product leaves them out)."""
    with gzip.open(DATA / f"{model}-{size}.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def released(model: str, size: str) -> list[tuple[str, str]]:
    """(prediction, reference) pairs that the clongeval variant scores (failed calls: the product's rule)."""
    pairs = [(row[f"response_{model}"], row["answer"]) for row in released_rows(model, size)]
    return [(p, a) for p, a in pairs if not failed_call(p, "clongeval")]


def score_cli(tmp_path: Path, model: str, size: str, variant: str = "clongeval") -> tuple[dict[str, Any], str]:
    """``booksum score PREDICTIONS --references ANSWERS --rouge-variant VARIANT --json FILE``: the system and
    what the terminal shows (the table on stdout, notes on stderr)."""
    from click.testing import CliRunner

    from booksum_app.cli import cli

    rows = released_rows(model, size)
    predictions, references = tmp_path / f"{model}-{size}.json", tmp_path / f"answers-{size}.json"
    predictions.write_text(json.dumps({r["id"]: r[f"response_{model}"] for r in rows}, ensure_ascii=False),
                           encoding="utf-8")
    references.write_text(json.dumps({r["id"]: r["answer"] for r in rows}, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / f"{model}-{size}-{variant}.scores.json"
    result = CliRunner().invoke(cli, ["score", str(predictions), "--references", str(references), "--no-judge",
                                      "--rouge-variant", variant, "--json", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (system,) = json.loads(out.read_text(encoding="utf-8"))["systems"]
    return system, result.stdout + result.stderr


@pytest.mark.parametrize(("model", "size"), sorted(PUBLISHED))
def test_score_cli_prints_the_published_lstsum_figures(tmp_path: Path, model: str, size: str) -> None:
    # the five figures CLongEval's paper prints come out of `booksum score` on its released outputs,
    # failed API calls (HTTP_ERROR) left out by the product as CLongEval's eval.py leaves them out
    system, shown = score_cli(tmp_path, model, size)
    assert round(100 * system["rouge_l"]["f"], 2) == PUBLISHED[(model, size)]
    assert f"{PUBLISHED[(model, size)]:.2f} / " in shown, "the table prints the published figure"
    n_failed = FAILED_ROWS.get((model, size), 0)
    assert system["rouge_l"]["n_failed_calls"] == n_failed
    assert system["rouge_l"]["n_with_reference"] == SIZES[size] - n_failed
    failed_lines = [line for line in shown.splitlines() if "failed API calls" in line]
    assert len(failed_lines) == (1 if n_failed else 0)
    if n_failed:
        assert f"{n_failed} of {SIZES[size]} predictions" in " ".join(failed_lines[0].split())


def test_failed_calls_count_under_the_clongeval_variant_only() -> None:
    assert failed_call("HTTP_ERROR: 500", "clongeval") and failed_call("x UNKNOW_ERROR", "clongeval")
    assert not failed_call("HTTP_ERROR", "cnnsum") and not failed_call("HTTP_ERROR", "rouge-score")
    assert not failed_call("一个正常的摘要。", "clongeval")


def test_the_released_files_are_whole() -> None:
    # 300/400/300 samples; gpt4-turbo-128k's medium file has 10 failed calls that eval.py skips
    sizes = {key: len(released(*key)) for key in PUBLISHED}
    assert sizes == {("moonshot-v1", "small"): 300, ("moonshot-v1", "medium"): 400, ("moonshot-v1", "large"): 300,
                     ("gpt4-turbo-128k", "small"): 300, ("gpt4-turbo-128k", "medium"): 390}
    assert {key: len(released_rows(*key)) for key in PUBLISHED} == {key: SIZES[key[1]] for key in PUBLISHED}


def test_rouge_score_variant_scores_the_same_outputs_higher() -> None:
    # booksum's own variant (punctuation dropped, tokens with multiplicity) is not the benchmark's
    pairs = released("moonshot-v1", "small")[:60]
    ours = statistics.fmean(rouge_l(p, a, variant="rouge-score").fmeasure for p, a in pairs)
    theirs = statistics.fmean(rouge_l(p, a, variant="clongeval").fmeasure for p, a in pairs)
    assert ours > theirs + 0.005


EDGE_PAIRS = [
    ("He ran. She ran . . x", "he ran. she walked"),
    ("a a a b", "a b b a"),
    ("  ", "x y"),
    ("3.5 万元。他说...好", "3.5万元 他说 好"),
    ("the cat sat on the mat", "the mat sat on the cat"),
    ("A B C", "a b c"),
    ("x y z x y z", "z y x"),
]


def test_reimplementation_equals_the_rouge_package_float_for_float() -> None:
    rouge = pytest.importorskip("rouge", reason="the dev extra installs rouge==1.0.1 (the benchmarks' package)")
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # as CLongEval and CNNSum do for the package
    pairs = [(jieba_joined(p), jieba_joined(a)) for key in PUBLISHED for p, a in released(*key)[:8]]
    for hyp, ref in [*pairs, *EDGE_PAIRS]:
        theirs = rouge.Rouge().get_scores(hyp, ref)[0]["rouge-l"]
        ours = package_rouge_l(hyp, ref)
        assert (ours.precision, ours.recall, ours.fmeasure) == (theirs["p"], theirs["r"], theirs["f"]), (hyp, ref)


def test_package_counts_distinct_words_and_splits_sentences_at_dots() -> None:
    # distinct words: "a a a b" has 2, the LCS "a b" (or "a a") pools to {a, b}: P = R = 1
    assert package_rouge_l("a a a b", "a b").fmeasure == pytest.approx(1.0, abs=1e-7)
    # sentences at ".": "x y . z" against "z x y" pools LCS {x, y} and {z}
    assert package_rouge_l("x y . z", "z x y").recall == pytest.approx(1.0)
    assert package_rouge_l("x y z", "z x y").recall == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="at least 1 sentence"):
        package_rouge_l("...", "a b")


def test_benchmark_variants_keep_punctuation_and_case() -> None:
    # the benchmarks join jieba words, punctuation included: "，" and "。" are words that match
    plain = rouge_l("宋江上山", "宋江，上山。", variant="clongeval")
    assert 0 < plain.fmeasure < 1
    assert rouge_l("宋江，上山。", "宋江，上山。", variant="clongeval").fmeasure == pytest.approx(1.0, abs=1e-7)
    assert rouge_l("Song Jiang", "song jiang", variant="cnnsum").fmeasure == 0.0
    assert rouge_l("Song Jiang", "song jiang", variant="rouge-score").fmeasure == 1.0


def test_empty_and_dot_only_candidates_score_zero() -> None:
    for variant in ("clongeval", "cnnsum"):
        assert rouge_l("", "宋江上山。", variant=variant).fmeasure == 0.0
        assert rouge_l("...", "宋江上山。", variant=variant).fmeasure == 0.0  # clongeval's own script raises here
    assert rouge_l("..", "宋江上山。", variant="cnnsum").recall == 0.0


def test_a_reference_without_words_is_refused() -> None:
    with pytest.raises(InputError, match="no words"):
        rouge_l("宋江上山。", "...", variant="clongeval")


def test_unknown_variant_is_refused() -> None:
    with pytest.raises(InputError, match="rouge-score, clongeval, cnnsum"):
        rouge_l("a", "a", variant="rouge")


def test_signatures_name_the_variant() -> None:
    rules = f"|rules:{rules_version('rouge')}"
    signatures = {v: rouge_signature("zh", v).rsplit("|v:", 1)[0] for v in ROUGE_VARIANTS}
    assert signatures == {
        "rouge-score": "rougeL|variant:rouge-score|tok:jieba|stem:no|lang:zh" + rules,
        "clongeval": "rougeL|variant:clongeval|impl:rouge-1.0.1|tok:jieba-joined|punct:kept|lcs:distinct-words|lang:zh"
                     + rules,
        "cnnsum": "rougeL|variant:cnnsum|impl:rouge-1.0.1|tok:jieba-joined|punct:kept|lcs:distinct-words|lang:zh"
                  + rules,
    }
    assert rouge_signature("en").startswith("rougeL|variant:rouge-score|tok:rouge-score-default|")


def test_score_cli_scores_anyones_outputs_in_the_chosen_variant(tmp_path: Path) -> None:
    # the same released outputs under booksum's own variant score higher; an unknown variant is refused
    from click.testing import CliRunner

    from booksum_app.cli import cli

    clongeval, _ = score_cli(tmp_path, "moonshot-v1", "small")
    own, _ = score_cli(tmp_path, "moonshot-v1", "small", "rouge-score")
    assert round(100 * clongeval["rouge_l"]["f"], 2) == 21.56
    assert clongeval["rouge_l"]["signature"].startswith("rougeL|variant:clongeval|impl:rouge-1.0.1|tok:jieba-joined|")
    assert own["rouge_l"]["signature"].startswith("rougeL|variant:rouge-score|tok:jieba|")
    assert round(100 * own["rouge_l"]["f"], 2) == 23.11, "booksum's own variant: 1.55 points higher"
    bad = CliRunner().invoke(cli, ["score", str(tmp_path / "moonshot-v1-small.json"), "--references",
                                   str(tmp_path / "answers-small.json"), "--no-judge", "--rouge-variant", "rouge-2"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
