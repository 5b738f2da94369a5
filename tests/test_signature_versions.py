"""Signatures change whenever the computation changes: rules versions, word tokenizers, annotation content.

Two numbers with one signature must be comparable (sacrebleu's rule). The splitter, the word
segmentation, the detectors, the chunker and the ROUGE arithmetic each sign a rules version
(a hash of their modules' source and their libraries' versions); annotation scores sign the
annotations' content; failure-mode counts carry a signature; the version is the code's own.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, release_file
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app import signature
from booksum_app.cli import cli
from booksum_app.llm.base import ModelInfo
from booksum_app.runners.run_config import RunConfig
from booksum_app.scoring.ngrams import ngram_stats, summarize_ngrams
from booksum_app.scoring.results import annotations_signature, score_annotations
from booksum_app.scoring.rouge import rouge_signature
from booksum_app.strategies.base import PromptBundle

EN = "Ada walked to the harbour. She spoke about the storm. The mill stood still that winter."
ZH = "宋江来到梁山泊，说起了那年的大雪。林冲去了东京，见了高太尉。武松在景阳冈打死了一只老虎。"
INFO = ModelInfo(name="fake-model", context_window=16_384, tokenizer="cl100k_base")


@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    signature.rules_version.cache_clear()
    yield
    signature.rules_version.cache_clear()


def run_signature() -> str:
    run = RunConfig(strategy="hier", lang="en")
    bundle = run.prompt_bundle()
    assert isinstance(bundle, PromptBundle)
    return run.signature(INFO, bundle)


# every signature that reports a number, by what it signs
SIGNATURES: dict[str, Callable[[], str]] = {
    "annotations": lambda: annotations_signature("a.json", fmt="sentence", splitters=["punkt-en"], content={}),
    "ngrams-en": lambda: summarize_ngrams([ngram_stats(EN)]).signature,
    "ngrams-zh": lambda: summarize_ngrams([ngram_stats(ZH)]).signature,
    "rouge-zh": lambda: rouge_signature("zh"),
    "rouge-clongeval": lambda: rouge_signature("zh", "clongeval"),
    "failures": signature.detector_signature,
    "summary": run_signature,
}
# which signatures a change of each module must move (and no other)
MOVES = {
    "booksum_app.chunking.sentences": {"annotations", "ngrams-en", "ngrams-zh", "failures", "summary"},
    "booksum_app.scoring.words": {"ngrams-en", "ngrams-zh", "rouge-zh", "rouge-clongeval", "failures"},
    "booksum_app.scoring.detector_rules": {"failures"},
    "booksum_app.scoring.detectors": {"failures"},
    "booksum_app.scoring.rouge": {"rouge-zh", "rouge-clongeval"},
    "booksum_app.chunking.chunker": {"summary"},
}


def all_signatures() -> dict[str, str]:
    signature.rules_version.cache_clear()
    return {name: make() for name, make in SIGNATURES.items()}


@pytest.mark.parametrize("module", sorted(MOVES))
def test_a_rule_change_moves_exactly_the_signatures_it_changes(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = all_signatures()
    original = signature._module_source
    monkeypatch.setattr(signature, "_module_source",
                        lambda name: original(name) + (b"\n# one rule changed\n" if name == module else b""))
    after = all_signatures()
    moved = {name for name in SIGNATURES if before[name] != after[name]}
    assert moved == MOVES[module]


@pytest.mark.parametrize(("dist", "moves"), [
    ("jieba", {"ngrams-en", "ngrams-zh", "rouge-zh", "rouge-clongeval", "failures"}),
    ("nltk", {"annotations", "ngrams-en", "ngrams-zh", "failures", "summary"}),
])
def test_a_new_segmenter_or_splitter_library_moves_the_signatures(dist: str, moves: set[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = all_signatures()
    original = signature._distribution
    monkeypatch.setattr(signature, "_distribution", lambda name: "99.0" if name == dist else original(name))
    after = all_signatures()
    assert {name for name in SIGNATURES if before[name] != after[name]} == moves


def test_a_new_detector_rule_module_is_part_of_the_detectors_rules(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # a rule module added beside detectors.py (detector_zh.py, ...) moves the failure signature too
    assert {"booksum_app.scoring.detectors", "booksum_app.scoring.detector_rules"} <= set(
        signature._expand("booksum_app.scoring.detector*"))
    before = signature.detector_signature()
    original = signature._expand
    monkeypatch.setattr(signature, "_expand", lambda pattern: [*original(pattern), "booksum_app.scoring.rouge"]
                        if pattern == "booksum_app.scoring.detector*" else original(pattern))
    signature.rules_version.cache_clear()
    assert signature.detector_signature() != before


def test_ngrams_sign_the_word_tokenizer_they_counted_in() -> None:
    assert "|words:nltk-lower|" in summarize_ngrams([ngram_stats(EN)]).signature
    assert "|words:jieba|" in summarize_ngrams([ngram_stats(ZH)]).signature
    assert "|words:jieba+nltk-lower|" in summarize_ngrams([ngram_stats(EN), ngram_stats(ZH)]).signature


annotation = st.dictionaries(st.sampled_from(["a.epub", "b.epub", "c.epub"]), st.one_of(st.none(), st.dictionaries(
    st.text(min_size=1, max_size=20), st.fixed_dictionaries({"questions": st.text(max_size=10),
                                                              "types": st.lists(st.sampled_from(["entity", "event"]))}),
    max_size=3)), max_size=3)


@settings(max_examples=60, deadline=None)
@given(first=annotation, second=annotation)
def test_annotation_scores_sign_their_content(first: dict[str, object], second: dict[str, object]) -> None:
    sign = lambda content: annotations_signature("same-name.json", fmt="sentence", splitters=[],
                                                 content=json.loads(json.dumps(content)))
    assert (sign(first) == sign(second)) == (first == second)
    reordered = dict(reversed(list(first.items())))
    assert sign(reordered) == sign(first), "the content, not the key order or the file's spacing"


def test_a_subset_of_the_release_file_signs_apart_from_the_whole(tmp_path: Path) -> None:
    summaries_path = release_file("summaries/gpt4-2048-hier-cleaned.json")
    data = json.loads(release_file("annotations/gpt4-2048-hier.json").read_text(encoding="utf-8"))
    summaries = json.loads(summaries_path.read_text(encoding="utf-8"))
    whole, subset = tmp_path / "whole" / "ann.json", tmp_path / "subset" / "ann.json"
    for path, content in ((whole, data), (subset, dict(list(data.items())[5:]))):
        path.parent.mkdir()
        path.write_text(json.dumps(content), encoding="utf-8")
    a = score_annotations(whole, summaries=summaries)
    b = score_annotations(subset, summaries=summaries, allow_partial=True)
    assert a.signature != b.signature and "|file:ann.json|" in a.signature and "|file:ann.json|" in b.signature
    fewer = {k: v for k, v in summaries.items() if k != "the-ferryman.epub"}
    assert score_annotations(whole, summaries=fewer).signature != a.signature, "the summaries' books move the score"


def test_failure_counts_carry_a_signature(tmp_path: Path) -> None:
    summaries = tmp_path / "s.json"
    summaries.write_text(json.dumps({"a.epub": EN, "b.epub": "I think this is a wonderful and moving book."}),
                         encoding="utf-8")
    result = CliRunner().invoke(cli, ["score", str(summaries), "--no-judge", "--json", "-"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (system,) = json.loads(result.stdout)["systems"]
    assert system["failures"]["signature"] == signature.detector_signature()
    assert system["failures"]["signature"].startswith("failures|rules:")


def test_the_signed_version_is_the_codes_and_the_changelog_names_it() -> None:
    from booksum_app import __version__

    assert signature.package_version() == __version__
    assert signature.make_signature("x").endswith(f"|v:{__version__}")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "booksum_app._version.__version__"}
    assert f"## {__version__}" in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
