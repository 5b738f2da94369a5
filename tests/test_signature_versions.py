"""Signatures change whenever the computation changes: rules versions, word tokenizers, annotation content.

Two numbers with one signature must be comparable (sacrebleu's rule). The splitter, the word
segmentation, the detectors, the chunker and the ROUGE arithmetic each sign a rules version
(a hash of their modules' source and their libraries' versions); annotation scores sign the
annotations' content; failure-mode counts carry a signature; the version is the code's own.
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
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
# the modules that compute each signed number; what they import is found below, not listed
COMPUTED_BY: dict[str, tuple[str, ...]] = {
    "annotations": ("booksum_app.chunking.sentences",),  # splitv: the sentence splitter
    "ngrams-en": ("booksum_app.scoring.words",),  # wordsv: the word segmentation
    "ngrams-zh": ("booksum_app.scoring.words",),
    "rouge-zh": ("booksum_app.scoring.rouge",),
    "rouge-clongeval": ("booksum_app.scoring.rouge",),
    "failures": ("booksum_app.scoring.detectors", "booksum_app.scoring.detector_rules"),
    # cut: where chunks end (chunker) and where an answer is cut off (the validity rule)
    "summary": ("booksum_app.chunking.chunker", "booksum_app.compression.validity"),
}
# imported by the rules but holding none: the version (signed as v:), the signer, error messages
NOT_RULES = {"booksum_app._version", "booksum_app.signature", "booksum_app.errors"}
PACKAGE_DIR = REPO / "booksum_app"


def _module_file(name: str) -> Path | None:
    path = REPO.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def imports_of(name: str) -> set[str]:
    """The booksum_app modules ``name`` imports at run time (the AST of its file; ``if TYPE_CHECKING:`` skipped)."""
    path = _module_file(name)
    assert path is not None, name
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(
        node.test) for child in node.body for n in ast.walk(child)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*parts, module] if module else parts)
            found |= {module, *(f"{module}.{a.name}" for a in node.names)}
    return {m for m in found if m.startswith("booksum_app") and _module_file(m) is not None}


def depends_on(roots: tuple[str, ...]) -> set[str]:
    """Every booksum_app module the roots run, transitively."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(imports_of(name) - seen)
    return seen - NOT_RULES


DEPENDS = {sig: depends_on(roots) for sig, roots in COMPUTED_BY.items()}
# every module some number depends on, and a few that none does (a change there moves nothing)
MODULES = sorted(set().union(*DEPENDS.values()) | {"booksum_app.cli.base", "booksum_app.llm.calls",
                                                    "booksum_app.runners.compare", "booksum_app.errors"})


def all_signatures() -> dict[str, str]:
    signature.rules_version.cache_clear()
    return {name: make() for name, make in SIGNATURES.items()}


def test_the_dependencies_are_found_not_listed() -> None:
    # the cut-off rule and the templates the echo detector reads are the detectors' too
    assert {"booksum_app.compression.validity", "booksum_app.prompts"} <= DEPENDS["failures"]
    assert "booksum_app.compression.validity" in DEPENDS["summary"]
    assert {"booksum_app.chunking.sentences", "booksum_app.scoring.words"} <= DEPENDS["failures"]


@pytest.mark.parametrize("module", MODULES)
def test_a_rule_change_moves_exactly_the_signatures_it_changes(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = all_signatures()
    original = signature._module_source
    monkeypatch.setattr(signature, "_module_source",
                        lambda name: original(name) + (b"\n# one rule changed\n" if name == module else b""))
    after = all_signatures()
    moved = {name for name in SIGNATURES if before[name] != after[name]}
    assert moved == {sig for sig, modules in DEPENDS.items() if module in modules}


def test_editing_a_built_in_template_moves_the_detectors_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    before = all_signatures()
    original = signature._package_data
    monkeypatch.setattr(signature, "_package_data", lambda name: [
        (path, data + b" edited" if name == "booksum_app.prompts" else data) for path, data in original(name)])
    files = [path for path, _ in original("booksum_app.prompts")]
    assert any(p.endswith(".txt") for p in files) and all(not p.endswith(".py") for p in files)
    after = all_signatures()
    assert before["failures"] != after["failures"], "the echo detector reads the built-in templates"
    assert before["rouge-zh"] == after["rouge-zh"], "ROUGE reads no template"


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


def _lead_plugin(site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/strategy-plugin's ``lead`` installed as pip leaves it (a dist-info on sys.path), version 0.1.0."""
    shutil.copytree(REPO / "examples" / "strategy-plugin" / "booksum_lead", site / "booksum_lead")
    dist = site / "booksum_lead-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: booksum-lead\nVersion: 0.1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[booksum.strategies]\nlead = booksum_lead:Lead\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "booksum_lead", raising=False)
    return site / "booksum_lead" / "__init__.py"


def _rediscovered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strategies found anew, as a new process finds them (restored after the test)."""
    from booksum_app.strategies import STRATEGIES

    for name, value in (("_strategies", None), ("_broken", {}), ("_dists", {}), ("_codes", {})):
        monkeypatch.setattr(STRATEGIES, name, value)


def test_a_plugins_code_change_without_a_version_bump_moves_its_signature(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    source = _lead_plugin(tmp_path, monkeypatch)
    signed = []
    for edit in ("", "\n# the first sentences, then the last ones\n"):
        source.write_text(source.read_text(encoding="utf-8") + edit, encoding="utf-8")
        _rediscovered(monkeypatch)
        run = RunConfig(strategy="lead", lang="en")
        signed.append((run.signature(INFO, run.prompt_bundle()), run.job_key(book_sha256="a" * 64, chunk_size=None)))
    (first, key1), (second, key2) = signed
    assert "|plugin:booksum-lead-0.1.0|" in first and "|plugin:booksum-lead-0.1.0|" in second, "the same version"
    assert signature.parse_signature(first)["plugincode"] != signature.parse_signature(second)["plugincode"]
    assert key1 != key2, "a record of the plugin's older code is not reused"
    assert "plugincode" not in signature.parse_signature(run_signature()), "booksum's own strategies: v: signs them"


def test_the_judges_signature_names_a_plugin_backend_and_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.llm.providers import catalog
    from booksum_app.scoring.booookscore import BooookScoreJudge
    from booksum_app.testing.fake_backend import FakeBackend

    class Registry(catalog.BackendRegistry):
        def _discover(self) -> dict[str, catalog.Provider]:
            return {"judgeplug": catalog.Provider("judgeplug", lambda *a: FakeBackend(), "x",
                                                  distribution=("booksum-judgeplug", "2.0"), code="c0de42")}

    monkeypatch.setattr(catalog, "BACKENDS", Registry())
    judge = BooookScoreJudge(FakeBackend(info=ModelInfo(name="judgeplug:big", context_window=8192,
                                                        tokenizer="cl100k_base")))  # type: ignore[arg-type]
    fields = signature.parse_signature(judge.signature())
    assert (fields["judge"], fields["backend"], fields["backendcode"]) == ("judgeplug:big", "booksum-judgeplug-2.0",
                                                                          "c0de42")
    builtin = BooookScoreJudge(FakeBackend(info=INFO))  # type: ignore[arg-type]
    assert "backend" not in signature.parse_signature(builtin.signature()), "a built-in provider: v: signs it"


def test_a_plugin_code_hash_follows_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _lead_plugin(tmp_path, monkeypatch)
    before = signature.code_hash("booksum_lead")
    assert before == signature.code_hash("booksum_lead.map_only"), "the whole package, from any of its modules"
    (source.parent / "map_only.py").write_text("# changed\n", encoding="utf-8")
    assert signature.code_hash("booksum_lead") != before
    assert signature.code_hash("booksum_no_such_package") == "nosource"
