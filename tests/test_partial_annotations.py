"""Annotations that cover only part of the summaries are refused (or, when allowed, scored with a warning).

Absent books of a per-sentence (v1) file count as having no confusing sentence, so a file
covering half the books scores ~94-95 instead of 89.4; v2 files list every sentence, so a missing
entry is detectable sentence by sentence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import release_file
from hypothesis import given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import InputError
from booksum_app.scoring.aggregate import aggregate
from booksum_app.scoring.release import (
    PartialAnnotationsWarning,
    judgements_from_release,
    read_annotations,
    read_summaries,
)

NEVER_ANNOTATED = {"the-faraway-world.epub", "the-ferryman.epub"}


def _load(name: str) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(release_file(name).read_text(encoding="utf-8"))
    return data


def _summaries(config: str) -> dict[str, str]:
    return read_summaries(release_file(f"summaries/{config}-cleaned.json"))


def test_a_per_sentence_file_covering_half_the_books_is_refused_with_the_count() -> None:
    data = _load("annotations/gpt4-2048-hier.json")
    half = dict(list(data.items())[::2])  # 42 of the 84 annotated books: 58 of 100 absent
    with pytest.raises(InputError, match=r"58 of 100 books \(\d+ of \d+ summary sentences, [\d.]+%\) have no entry "
                                         r".*--allow-partial") as info:
        judgements_from_release(half, summaries=_summaries("gpt4-2048-hier"), source="half.json")
    assert "\n" not in str(info.value)
    with pytest.warns(PartialAnnotationsWarning, match=r"58 of 100 books \("):
        judged = judgements_from_release(half, summaries=_summaries("gpt4-2048-hier"), allow_partial=True)
    assert 94.0 < (aggregate(judged).percent() or 0) < 96.0, "absent books count as perfect"


@pytest.mark.parametrize(("config", "absent"), [("gpt4-2048-hier", 16), ("gpt4-2048-inc", 10),
                                               ("chatgpt-2048-hier", 10), ("chatgpt-2048-inc", 4)])
def test_the_released_per_sentence_files_are_accepted(config: str, absent: int) -> None:
    summaries = _summaries(config)
    data = _load(f"annotations/{config}.json")
    assert len(set(summaries) - set(data)) == absent and NEVER_ANNOTATED <= set(summaries) - set(data)
    judgements_from_release(data, summaries=summaries)  # no refusal, no warning


def test_without_the_two_never_annotated_books_the_printed_paper_values_come_back() -> None:
    # BooookScore Table 2 prints 89.1 / 82.5 / 84.2 / 67.0; all 100 summaries give 89.4 / 82.9 / 84.5 / 67.7
    printed = {"gpt4-2048-hier": (89.18, 89.1), "gpt4-2048-inc": (82.50, 82.5),
               "chatgpt-2048-hier": (84.18, 84.2), "chatgpt-2048-inc": (67.01, 67.0)}
    for config, (ours, _paper) in printed.items():
        summaries = {k: v for k, v in _summaries(config).items() if k not in NEVER_ANNOTATED}
        score = aggregate(judgements_from_release(_load(f"annotations/{config}.json"), summaries=summaries)).percent()
        assert score == pytest.approx(ours, abs=0.005), config


def test_dropping_the_most_annotated_books_is_refused_by_the_sentences_they_hold() -> None:
    # 9 books dropped leave 25 of 100 books absent (not over 25% of the books) but 25.1% of the
    # sentences: counted in books it passed and scored 92.57 for 89.40, without a note
    data = _load("annotations/gpt4-2048-hier.json")
    summaries = _summaries("gpt4-2048-hier")
    top = sorted(data, key=lambda book: -len(data[book] or {}))[:9]
    subset = {book: entries for book, entries in data.items() if book not in top}
    with pytest.raises(InputError, match=r"25 of 100 books \(\d+ of \d+ summary sentences, 25\.1%\)"):
        judgements_from_release(subset, summaries=summaries, source="subset.json")
    with pytest.warns(PartialAnnotationsWarning, match="25 of 100 books"):
        score = aggregate(judgements_from_release(subset, summaries=summaries, allow_partial=True)).percent()
    assert score == pytest.approx(92.57, abs=0.005)
    assert aggregate(judgements_from_release(data, summaries=summaries)).percent() == pytest.approx(89.40, abs=0.005)


@settings(max_examples=25, deadline=None)
@given(keep=st.lists(st.booleans(), min_size=84, max_size=84))
def test_generated_subsets_are_refused_exactly_when_their_absent_books_hold_over_a_quarter_of_the_sentences(
        keep: list[bool]) -> None:
    data = _load("annotations/gpt4-2048-hier.json")
    summaries = _summaries("gpt4-2048-hier")
    sentences = {j.book: j.n_sentences for j in judgements_from_release(data, summaries=summaries)}
    subset = {book: entries for (book, entries), kept in zip(sorted(data.items()), keep, strict=True) if kept}
    lost = sum(n for book, n in sentences.items() if book not in subset)
    refused = lost > 0.25 * sum(sentences.values())
    try:
        judgements_from_release(subset, summaries=summaries, source="subset.json")
    except InputError as exc:
        assert refused, str(exc)
        assert f"{lost} of {sum(sentences.values())} summary sentences" in str(exc)
    else:
        assert not refused


def test_a_v2_file_with_entries_missing_is_refused() -> None:
    data = _load("annotations/v2/gpt4-2048-hier-cleaned.json")
    halved = {book: dict(list(entries.items())[: (len(entries) + 1) // 2]) for book, entries in data.items()}
    total = sum(len(e) for e in data.values())
    missing = total - sum(len(e) for e in halved.values())
    with pytest.raises(InputError, match=rf"{missing} of {total} summary sentences in 100 book\(s\) have no entry"):
        judgements_from_release(halved, summaries=_summaries("gpt4-2048-hier"))
    assert judgements_from_release(halved), "without the summaries a v2 file cannot be checked (docs/scoring.md)"
    with pytest.warns(PartialAnnotationsWarning):
        score = aggregate(judgements_from_release(halved, summaries=_summaries("gpt4-2048-hier"),
                                                  allow_partial=True)).percent()
    assert score is not None and score != pytest.approx(90.84, abs=0.01)


def test_the_released_v2_files_are_complete() -> None:
    for config in ("gpt4-2048-hier", "chatgpt-2048-hier"):
        read_annotations(release_file(f"annotations/v2/{config}-cleaned.json"), summaries=_summaries(config))
        read_annotations(release_file(f"annotations/v2/{config}-cleaned.json"))


def test_score_cli_refuses_partial_annotations_and_allow_partial_warns(tmp_path: Path) -> None:
    data = _load("annotations/gpt4-2048-hier.json")
    partial = tmp_path / "half.json"
    partial.write_text(json.dumps(dict(list(data.items())[::2])), encoding="utf-8")
    summaries = str(release_file("summaries/gpt4-2048-hier-cleaned.json"))
    refused = CliRunner().invoke(cli, ["score", summaries, "--annotations", str(partial), "--json", "-"])
    assert refused.exit_code != 0 and "58 of 100 books (" in refused.output
    assert "Traceback" not in refused.output
    allowed = CliRunner().invoke(cli, ["score", summaries, "--annotations", str(partial), "--allow-partial",
                                       "--json", "-"])
    assert allowed.exit_code == 0, allowed.output
    assert "58 of 100 books (" in " ".join(allowed.stderr.split()) and "scored anyway" in allowed.stderr
    (system,) = json.loads(allowed.stdout)["systems"]
    assert 94.0 < system["booookscore"]["score"] < 96.0
