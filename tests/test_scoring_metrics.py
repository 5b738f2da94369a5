"""Hand-checkable values: ROUGE-L, n-gram statistics, aggregation, bootstrap, release round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from booksum_app.errors import InputError
from booksum_app.scoring.aggregate import aggregate, bootstrap_ci, quantile
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.scoring.ngrams import ngram_stats
from booksum_app.scoring.release import judgements_from_release, read_annotations, to_release
from booksum_app.scoring.rouge import lcs_length, rouge_l


@pytest.mark.parametrize(
    ("candidate", "reference", "p", "r"),
    [
        # the cat sat on the mat / the cat was on a mat: LCS the-cat-on-mat = 4 of 6 and 6
        ("The cat sat on the mat.", "the cat was on a mat", 4 / 6, 4 / 6),
        ("A-B c!", "a b c d", 3 / 3, 3 / 4),  # punctuation becomes spaces, case folded
        ("x y z", "a b c", 0.0, 0.0),
        ("", "a b", 0.0, 0.0),
        # jieba: 小明/喜欢/吃/苹果 vs 小明/很/喜欢/吃/苹果/和/香蕉: LCS 4 of 4 and 7
        ("小明喜欢吃苹果。", "小明很喜欢吃苹果和香蕉。", 1.0, 4 / 7),
    ],
)
def test_rouge_l_hand_values(candidate: str, reference: str, p: float, r: float) -> None:
    score = rouge_l(candidate, reference)
    assert score.precision == pytest.approx(p) and score.recall == pytest.approx(r)
    f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    assert score.fmeasure == pytest.approx(f)


def test_lcs_length() -> None:
    assert lcs_length("ABCBDAB", "BDCABA") == 4
    assert lcs_length([], ["a"]) == 0


def test_ngram_stats_hand_values() -> None:
    # words: a b c a b c . -> 3-grams abc bca cab abc bc. : 5 occurrences, 4 distinct, 1 repeated
    stats = ngram_stats("A b c a b c.", source="A b c d. E f.")
    assert (stats.n_ngrams, stats.n_distinct, stats.n_repeated) == (5, 4, 1)
    assert stats.repeated_pct == pytest.approx(25.0)
    # source 3-grams: abc bcd cd. d.e .ef ef. -> only "a b c" is not novel
    assert stats.n_novel == 3 and stats.novel_pct == pytest.approx(75.0)
    assert ngram_stats("Too short").repeated_pct is None


def _summary(book: str, n: int, confusing: int, unparseable: int = 0) -> SummaryJudgement:
    sentences = [SentenceJudgement(i, f"s{i}.", questions="Q?", types=("salience",)) for i in range(confusing)]
    sentences += [SentenceJudgement(confusing + i, f"u{i}.", unparseable=True) for i in range(unparseable)]
    return SummaryJudgement(book=book, n_sentences=n, sentences=tuple(sentences))


def test_aggregate_mean_of_summary_scores_and_unparseable_exclusion() -> None:
    system = aggregate([_summary("a", 4, 1), _summary("b", 5, 2, unparseable=1), _summary("c", 1, 0, unparseable=1)])
    # a: 1 - 1/4 = .75; b: 1 - 2/4 = .5; c: no judged sentence -> unscored
    assert system.score == pytest.approx(0.625)
    assert (system.n_summaries, system.n_unscored, system.n_unparseable) == (2, 1, 2)
    assert dict(system.type_counts)["salience"] == 3 and system.type_distribution["salience"] == 1.0


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.5, 0.7, 0.9, 1.0, 0.8, 0.6]
    first = bootstrap_ci(values, seed=7)
    assert first == bootstrap_ci(values, seed=7)
    assert first != bootstrap_ci(values, seed=8)
    assert first is not None and first[0] < sum(values) / len(values) < first[1]
    assert quantile([1.0, 2.0, 3.0], 0.25) == 1.5
    assert bootstrap_ci([]) is None


def test_per_sentence_release_round_trip_keeps_unparseable() -> None:
    summaries = {"b.epub": "One. Two. Three."}
    judged = SummaryJudgement("b.epub", 3, (
        SentenceJudgement(0, "One."),
        SentenceJudgement(1, "Two.", questions="Why two?", types=("causal omission",)),
        SentenceJudgement(2, "Three.", unparseable=True, answer="??"),
    ))
    data = to_release([judged], fmt="sentence")
    assert data == {"b.epub": {"Two.": {"questions": "Why two?", "types": ["causal omission"]},
                               "Three.": {"questions": None, "types": None, "unparseable": True}}}
    back = judgements_from_release(data, summaries=summaries)[0]
    assert (back.n_sentences, back.n_confusing, back.n_unparseable, back.score) == (3, 1, 1, 0.5)


def test_batched_release_round_trip(tmp_path: Path) -> None:
    judged = SummaryJudgement("b.epub", 2, (
        SentenceJudgement(0, "One."),
        SentenceJudgement(1, "Two.", questions="Who?", types=("entity omission", "salience")),
    ))
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(to_release([judged], fmt="batched")))
    data = json.loads(path.read_text())
    assert data["b.epub"]["Two."] == {"sentence_num": 2, "sentence": "Two.", "questions": "Who?",
                                      "types": "entity omission, salience"}
    back = read_annotations(path)[0]
    assert back.sentences[1].types == ("entity omission", "salience") and back.score == 0.5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "JSON object"),
        ({"b.epub": ["x"]}, "'span' string"),  # a span list (llama2 format) of non-objects
        ({"b.epub": {"One.": "bad"}}, "questions"),
        ({"b.epub": {"One.": {"questions": "Q", "types": 3}}}, "types"),
    ],
)
def test_malformed_annotations_are_input_errors(data: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        judgements_from_release(data, summaries={"b.epub": "One."})


def test_per_sentence_annotations_need_the_summaries() -> None:
    with pytest.raises(InputError, match="summaries"):
        judgements_from_release({"b.epub": {"One.": {"questions": "Q?", "types": ["salience"]}}})


def test_source_ngrams_in_paragraph_pieces_equal_those_of_the_whole_text() -> None:
    """A book is tokenized in pieces (NLTK's regex time limit) without losing any 3-gram."""
    from booksum_app.scoring.keyset import KeySet, text_key
    from booksum_app.scoring.ngrams import gram_key, ngrams, source_ngrams
    from booksum_app.scoring.words import ngram_words

    paragraphs = [
        f"Paragraph {i}: Mr. Darcy walked {i} miles to Netherfield. \"Why?\" asked Jane, twice."
        for i in range(200)
    ]
    text = "\n\n".join(paragraphs)
    whole = KeySet(text_key(gram_key(g)) for g in ngrams(ngram_words(text, lang="en"), 3))
    assert source_ngrams(text, lang="en", piece_chars=300) == whole
    assert len(whole) > 1000


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "Tea\u00a0time at\u2009noon:\tthe  end.\u3000“Quoted,” said\u2028she. Mr.\u00a0Darcy's  hat; 3,000 men."),
    ("zh", "宋江\u3000道：「兄弟，\u00a0且住。」\t众人 大笑。ABC def"),
])
def test_gram_keys_are_unambiguous_because_no_word_holds_whitespace(lang: str, text: str) -> None:
    from booksum_app.scoring.keyset import KeySet, text_key
    from booksum_app.scoring.ngrams import GRAM_SEP, gram_key, ngram_stats, ngrams, source_ngrams
    from booksum_app.scoring.words import ngram_words

    words = ngram_words(text, lang=lang)
    assert words and not any(ch.isspace() for w in words for ch in w), words
    assert GRAM_SEP.isspace()
    assert source_ngrams(text, lang=lang) == KeySet(text_key(gram_key(g)) for g in ngrams(words))
    # % novel against the keys is % novel against the grams themselves
    summary = text[: len(text) // 2] + " Something else entirely, said nobody."
    grams = set(ngrams(ngram_words(summary, lang=lang)))
    stats = ngram_stats(summary, source=source_ngrams(text, lang=lang), lang=lang)
    assert stats.n_novel == len(grams - set(ngrams(words))) > 0


def test_source_ngrams_built_in_another_process_are_the_same_keys() -> None:
    # compare builds a book's 3-grams in a worker process and looks summaries up in the driver:
    # the keys must not depend on the process (Python's str hash does, per PYTHONHASHSEED)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from booksum_app.scoring.ngrams import ngram_stats, source_ngrams

    text = "\n\n".join(f"Mr. Darcy walked {i} miles to Netherfield. Jane laughed at him, twice." for i in range(50))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        there = pool.submit(source_ngrams, text, lang="en").result(timeout=60)
    assert there == source_ngrams(text, lang="en") and len(there) > 100
    summary = "Mr. Darcy walked 3 miles to Netherfield. Nobody cared at all."
    assert ngram_stats(summary, source=there).n_novel == ngram_stats(summary, source=text).n_novel > 0
