"""The BooookScore judge end to end: both modes through the call layer, retries, unparseable answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from judge_fixtures import SUMMARIES

from booksum_app.chunking import split_sentences
from booksum_app.llm.base import Request
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import Client
from booksum_app.scoring import load_judge_prompt, score_summaries, score_summary
from booksum_app.scoring.booookscore import load_demonstrations
from booksum_app.signature import parse_signature
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_judge import is_fake_confusing, judge_reply


def expected_score(text: str) -> float:
    sentences = split_sentences(text)
    return 1 - sum(is_fake_confusing(s) for s in sentences) / len(sentences)


def fake_client(
    reply: Callable[[Request], str] | None = None, *, cache: CallCache | None = None
) -> tuple[Client, FakeBackend]:
    backend = FakeBackend(reply=reply) if reply else FakeBackend()
    return Client(backend, concurrency=4, cache=cache), backend


@pytest.mark.parametrize("mode", ["sentence", "batched"])
def test_judge_modes_agree_with_the_fake_judge(mode: str) -> None:
    client, backend = fake_client()
    result = score_summaries(SUMMARIES, judge=client, mode=mode, batch_size=3)  # type: ignore[arg-type]
    expected = [expected_score(t) for t in SUMMARIES.values()]
    assert [j.score for j in result.summaries] == pytest.approx(expected)
    assert result.score == pytest.approx(sum(expected) / 2)
    assert result.system.n_unparseable == 0
    n_sentences = sum(len(split_sentences(t)) for t in SUMMARIES.values())
    assert result.system.n_sentences == n_sentences
    flagged = [s for j in result.summaries for s in j.sentences if s.confusing]
    assert flagged and all(s.types == ("entity omission",) and s.questions for s in flagged)
    if mode == "sentence":
        assert backend.call_count == n_sentences
    else:
        assert backend.call_count == 3 + 2  # 7 sentences in batches of 3 -> 3 calls, 5 -> 2 calls
        assert backend.call_count < n_sentences


def test_sentence_mode_puts_summary_in_shared_prefix_and_sentence_last() -> None:
    client, backend = fake_client()
    score_summary(SUMMARIES["second.epub"], judge=client)
    prefixes = {r.shared_prefix for r in backend.calls}
    assert len(prefixes) == 1  # one cacheable prefix for every sentence of the summary
    prefix = prefixes.pop()
    assert SUMMARIES["second.epub"] in prefix and "[Your sentence]" not in prefix
    assert all(r.prompt.startswith("[Your sentence]") for r in backend.calls)
    assert all(r.temperature == 0.0 and r.purpose == "judge" for r in backend.calls)


def test_signature_states_judge_prompt_mode_split_and_temperature() -> None:
    client, _ = fake_client()
    result = score_summary("One sentence here. Another one there.", judge=client, mode="batched")
    fields = parse_signature(result.signature)
    assert fields["kind"] == "booookscore"
    assert fields["judge"] == "fake:model"
    assert fields["prompt"] == load_judge_prompt("batched").name
    assert fields["mode"] == "batched" and fields["batch"] == "10"
    assert fields["split"] == "punkt-en" and fields["temp"] == "0"
    assert load_judge_prompt("sentence").name != load_judge_prompt("batched").name


def test_bad_answer_is_retried_with_a_new_sample_index_then_parsed() -> None:
    def reply(request: Request) -> str:
        return "I think it is fine!" if request.sample_index == 0 else judge_reply(request.user_text)

    client, backend = fake_client(reply)
    result = score_summary("The cat sat. The dog ran.", judge=client)
    assert result.system.n_unparseable == 0
    assert sorted(r.sample_index for r in backend.calls) == [0, 0, 1, 1]


def test_never_parseable_sentences_are_counted_not_treated_as_no_confusion() -> None:
    def reply(request: Request) -> str:
        if "dog" in request.prompt:
            return "Questions: Why?\nTypes: plot hole"
        return "Questions: Who is the cat?\nTypes: entity omission"

    client, backend = fake_client(reply)
    result = score_summary("The cat sat. The dog ran. The bird sang.", judge=client, max_attempts=3)
    judgement = result.summaries[0]
    assert judgement.n_unparseable == 1
    bad = [s for s in judgement.sentences if s.unparseable]
    assert bad[0].sentence == "The dog ran." and "plot hole" in (bad[0].answer or "")
    assert not bad[0].confusing
    # two sentences judged, both confusing: the unparseable one is not in the denominator
    assert judgement.score == 0.0
    assert result.system.n_unparseable == 1
    assert sum(1 for r in backend.calls if "dog" in r.prompt) == 3


def test_batched_mode_retries_only_the_missing_sentences() -> None:
    def reply(request: Request) -> str:
        if request.sample_index == 0:
            return '[{"sentence_num": 1, "questions": null, "types": null}]'  # drops sentence 2
        return judge_reply(request.user_text)

    client, backend = fake_client(reply)
    result = score_summary("The cat sat. The dog ran.", judge=client, mode="batched")
    assert result.system.n_unparseable == 0
    assert len(backend.calls) == 2
    assert "1. The dog ran." in backend.calls[1].prompt and "The cat sat" not in backend.calls[1].prompt


def test_rerun_is_served_from_the_call_cache(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "cache")
    client, backend = fake_client(cache=cache)
    first = score_summaries(SUMMARIES, judge=client)
    calls = backend.call_count
    client2, backend2 = fake_client(cache=CallCache(tmp_path / "cache"))
    second = score_summaries(SUMMARIES, judge=client2)
    assert backend2.call_count == 0 and calls > 0
    assert second.score == first.score


def test_demonstrations_cover_every_type_and_split_back_into_their_sentences() -> None:
    from booksum_app.scoring.judgement import ERROR_TYPES

    demos = load_demonstrations()
    annotations = [a for d in demos for a in d.annotations]
    assert 35 <= len(annotations) <= 50
    assert {t for _, a in annotations for t in a.types} == set(ERROR_TYPES)
    assert sum(1 for _, a in annotations if not a.confusing) >= 20
    for demo in demos:
        assert split_sentences(demo.summary) == [s for s, _ in demo.annotations]


def test_unknown_mode_and_bad_batch_size_are_config_errors() -> None:
    from booksum_app.errors import ConfigError

    client, _ = fake_client()
    with pytest.raises(ConfigError, match="mode"):
        score_summary("A.", judge=client, mode="paragraph")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="batch-size"):
        score_summary("A.", judge=client, mode="batched", batch_size=0)


def test_annotations_must_be_sentences_of_the_summaries() -> None:
    from booksum_app.errors import InputError
    from booksum_app.scoring.release import judgements_from_release

    summaries = {"first.epub": "Mara bakes bread. Teo sells the shop. They argue."}
    ok = {"first.epub": {"Teo sells the shop.": {"questions": "Why?", "types": ["causal omission"]}}}
    assert judgements_from_release(ok, summaries=summaries)[0].n_confusing == 1
    wrong = {"first.epub": {"Teo buys a boat.": {"questions": "Why?", "types": ["causal omission"]}}}
    with pytest.raises(InputError, match="1 of 1 annotated sentences do not occur"):
        judgements_from_release(wrong, summaries=summaries)
    v2 = {"first.epub": {s: {"sentence_num": i, "questions": None, "types": None}  # v2 lists every sentence
                         for i, s in enumerate(("Mara bakes bread.", "Teo sells the shop.", "They argue."), 1)}}
    assert judgements_from_release(v2, summaries=summaries)[0].n_sentences == 3
    v2_wrong = {"first.epub": {"Teo buys a boat.": {"sentence_num": 1, "questions": None, "types": None}}}
    with pytest.raises(InputError, match="1 of 1|2 of 3 summary sentences .* have no entry"):
        judgements_from_release(v2_wrong, summaries=summaries)
