"""The prechecked word tokenizer gives NLTK's tokens exactly, and steps aside when NLTK changes."""

from __future__ import annotations

from typing import ClassVar

import pytest
from conftest import book_path
from nltk.tokenize import NLTKWordTokenizer

from booksum_app.books import open_book
from booksum_app.chunking import split_sentences
from booksum_app.chunking.sentences import trusted_class
from booksum_app.scoring.nltk_words import PrecheckedWordTokenizer, prechecked, written_for
from booksum_app.scoring.words import _nltk_word_tokenizer

EDGE_CASES = [
    '"Why?" asked Jane, twice.', "''Quoted'' and ``quoted'' and \"quoted\".", "He said: 'Tis true; 'twas so.",
    "I CANNOT go; you Gonna come? Gimme that, lemme see, wanna go, gotta run.", "More'n enough, d'ye hear?",
    "Good muffins cost $3.88 (roughly 3,36 euros) in New York.", "Wait... what -- no—yes–maybe―fine.",
    "It's Jane's; they'll, we're, I've, I'd, I'm, don't, WON'T.", "A [bracket] {brace} <angle> *star* @at #hash %.",
    "Ends with a colon:", "«Guillemets» and „low quotes“ and ‘single’ and ’tis.", "Mr. Darcy walked 3.5 miles.",
    "'Hello,' she said.", "Tabs\tand\u00a0spaces  and\u3000more.", "", "   ", "Trailing quote.'", "x'y 'z' ''",
]


def test_the_tokens_are_nltks_on_whole_books_and_awkward_sentences() -> None:
    reference, fast = NLTKWordTokenizer(), _nltk_word_tokenizer()
    assert isinstance(fast, PrecheckedWordTokenizer), "the installed NLTK is the one the checks were written for"
    sentences = list(EDGE_CASES)
    for name in ("time-machine", "pride"):
        text = open_book(book_path(name)).text()
        sentences += [s for i in range(0, len(text), 20_000) for s in split_sentences(text[i : i + 20_000])]
    assert len(sentences) > 7000
    for sentence in sentences:
        assert fast.tokenize(sentence) == reference.tokenize(sentence), sentence


def test_a_changed_nltk_pattern_list_gets_nltks_own_tokenizer() -> None:
    base = trusted_class(NLTKWordTokenizer)()
    assert written_for(base) and isinstance(prechecked(base), PrecheckedWordTokenizer)

    class Changed(NLTKWordTokenizer):
        PUNCTUATION: ClassVar = NLTKWordTokenizer.PUNCTUATION[:-1]  # a release that dropped a pattern

    changed = Changed()
    assert not written_for(changed) and prechecked(changed) is changed


@pytest.mark.parametrize("sentence", ["She cannot.", "'Twas brillig.", "Wanna\tgo?"])
def test_contractions_are_split_as_nltk_splits_them(sentence: str) -> None:
    assert _nltk_word_tokenizer().tokenize(sentence) == NLTKWordTokenizer().tokenize(sentence)
