"""BooookScore (Chang et al., ICLR 2024, §4.1, App. J.4): an LLM judge finds confusing sentences.

For each sentence s_i of a summary S (NLTK Punkt English sentences; Chinese punctuation
rules for Chinese summaries), the judge sees the instructions (the 8 confusion types and the
two conditions of App. J.4), few-shot demonstrations and the whole summary, and answers with
clarifying questions and confusion types, or "no confusion". The score of S is the fraction
of its sentences with no confusion; see :mod:`booksum_app.scoring.aggregate`.

Modes:

- ``sentence`` (the paper's method): one call per sentence. The instructions, demonstrations
  and summary go first, in ``Request.shared_prefix``, the target sentence last, so providers
  with prompt caching bill the shared part once per summary.
- ``batched`` (the release's "v2"): up to ``batch_size`` numbered sentences per call, a JSON
  list as answer. Cheaper; not the paper's setup, and the signature says which was used.

Deviations, all deliberate: our own demonstrations (two made-up stories, 42 annotated
sentences; the paper's are not reproduced); temperature 0 (``config.JUDGE_TEMPERATURE``);
an answer that cannot be parsed is retried (``sample_index`` incremented, so the call cache
does not replay it) up to ``max_attempts`` times, then the sentence is *unparseable*: left out
of the denominator and reported (the original retries forever). Every call goes through
the model's call layer (concurrency bound, call cache: an interrupted run resumes).

Memory: requests are built lazily, at most a few per concurrency slot at a time
(:func:`answer_in_order`), and every request on one summary shares one rendered prefix
string, so memory grows with the summary's size, never with sentences x summary length;
a cost ceiling (``CostLimitExceeded``) stops submission at the first call it refuses.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from importlib import resources
from itertools import islice
from typing import Literal

from booksum_app.chunking import SPLITTER_NAMES, detect_lang, split_sentences
from booksum_app.config import JUDGE_TEMPERATURE
from booksum_app.errors import ConfigError, JudgeParseError, PromptError
from booksum_app.llm.base import Backend, BatchBackend, ChatModel, Completion, Request
from booksum_app.prompts import Template, parse_template
from booksum_app.scoring.answers import JudgeAnswer, parse_batch_answer, parse_sentence_answer
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.signature import make_signature, short_hash

JudgeMode = Literal["sentence", "batched"]
JUDGE_MODES: tuple[JudgeMode, ...] = ("sentence", "batched")
DEFAULT_BATCH_SIZE = 10  # the release's v2 default
DEFAULT_MAX_ATTEMPTS = 3
SENTENCE_MAX_TOKENS = 300
BATCH_MAX_TOKENS_PER_SENTENCE = 150
PROMPT_DIR = "booookscore"
SENTENCE_MARKER = "[Your sentence]"
BATCH_MARKER = "[Your sentences]"
# A judge that runs on past its answer starts the next template block; cut it there (small
# local models otherwise repeat "[Your response] ..." up to max_tokens).
STOP_SEQUENCES = ("\n[Your", "\n[Example")
# Requests built and not yet answered, per slot of the model's concurrency: enough to keep
# every slot busy, small enough that memory does not grow with the number of sentences.
WINDOW_PER_SLOT = 4
DEFAULT_WINDOW_SLOTS = 8  # a model that does not say its concurrency
BATCH_WINDOW = 256  # requests per complete_many batch (vLLM wants whole batches; opaque wrappers)


def _resource(name: str) -> str:
    node = resources.files("booksum_app.prompts").joinpath(PROMPT_DIR, name)
    if not node.is_file():
        raise PromptError(f"judge prompt file {PROMPT_DIR}/{name} is missing; reinstall booksum")
    return node.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Demonstration:
    """One few-shot example: a summary's sentences with their annotations."""

    title: str
    annotations: tuple[tuple[str, JudgeAnswer], ...]

    @property
    def summary(self) -> str:
        """The example summary: its sentences joined by single spaces."""
        return " ".join(sentence for sentence, _ in self.annotations)


def load_demonstrations(raw: str | None = None) -> tuple[Demonstration, ...]:
    """Our few-shot demonstrations (``prompts/booookscore/demonstrations.json``).

    Raises:
        PromptError: the file is malformed.
    """
    try:
        data = json.loads(raw if raw is not None else _resource("demonstrations.json"))
        demos = []
        for demo in data["demonstrations"]:
            pairs = tuple(
                (str(a["sentence"]), JudgeAnswer(questions=a["questions"], types=tuple(a["types"])))
                for a in demo["annotations"]
            )
            demos.append(Demonstration(title=str(demo["title"]), annotations=pairs))
    except (KeyError, TypeError, ValueError) as exc:
        raise PromptError(f"judge demonstrations are malformed ({exc}); fix demonstrations.json") from exc
    return tuple(demos)


def format_sentence_answer(answer: JudgeAnswer) -> str:
    """An answer in the per-sentence format the parser reads."""
    if not answer.confusing:
        return "Questions: no confusion\nTypes: no confusion"
    return f"Questions: {answer.questions}\nTypes: {', '.join(answer.types)}"


def format_batch_answer(answers: Sequence[JudgeAnswer]) -> str:
    """An answer in the batched JSON format the parser reads."""
    items = [
        {
            "sentence_num": i,
            "questions": a.questions if a.confusing else None,
            "types": list(a.types) if a.confusing else None,
        }
        for i, a in enumerate(answers, start=1)
    ]
    return json.dumps(items, ensure_ascii=False)


def number_sentences(sentences: Sequence[str]) -> str:
    """``1. first\\n2. second ...`` as in the release's v2 prompt."""
    return "\n".join(f"{n}. {s}" for n, s in enumerate(sentences, start=1))


@dataclass(frozen=True)
class JudgePrompt:
    """The judge's templates for one mode, with demonstrations rendered; signs as ``j4-<hash>``."""

    mode: JudgeMode
    prefix: Template
    target: Template
    definitions: str
    examples: str

    @property
    def version(self) -> str:
        """Short hash of everything the judge is shown except the summary and sentences."""
        parts = [self.mode, self.prefix.text, self.target.text, self.definitions, self.examples]
        return short_hash("\n".join(parts))

    @property
    def name(self) -> str:
        """Prompt id for signatures: ``j4-<hash>`` (App. J.4, our demonstrations)."""
        return f"j4-{self.version}"

    def shared_prefix(self, summary: str) -> str:
        """Instructions, demonstrations and the summary: identical for every call on one summary."""
        text = self.prefix.render(definitions=self.definitions, examples=self.examples, summary=summary.strip())
        return text + "\n\n"

    def sentence_prompt(self, sentence: str) -> str:
        """The per-sentence part (per-sentence mode)."""
        return self.target.render(sentence=sentence)

    def batch_prompt(self, sentences: Sequence[str]) -> str:
        """The numbered sentences of one batch (batched mode)."""
        return self.target.render(sentences=number_sentences(sentences))


def _render_examples(mode: JudgeMode, demos: Sequence[Demonstration]) -> str:
    blocks = []
    for n, demo in enumerate(demos, start=1):
        lines = [f"[Example summary {n}]", demo.summary, ""]
        if mode == "sentence":
            for sentence, answer in demo.annotations:
                lines.append(f"[Example sentence] {sentence}")
                lines.append(f"[Example response] {format_sentence_answer(answer)}")
        else:
            lines.append("[Example sentences]")
            lines.append(number_sentences([s for s, _ in demo.annotations]))
            lines.append("")
            lines.append(f"[Example response] {format_batch_answer([a for _, a in demo.annotations])}")
        blocks.append("\n".join(lines))
    return "\n\n---\n\n".join(blocks)


def load_judge_prompt(mode: JudgeMode = "sentence") -> JudgePrompt:
    """The packaged judge prompt for ``mode``.

    Raises:
        ConfigError: unknown mode.
        PromptError: a template file is missing or malformed.
    """
    if mode not in JUDGE_MODES:
        raise ConfigError(f"unknown judge mode {mode!r}; use one of: {', '.join(JUDGE_MODES)}")
    prefix = parse_template(f"{mode}_prefix", _resource(f"{mode}_prefix.txt"), source=f"{PROMPT_DIR}/{mode}_prefix.txt")
    target = parse_template(f"{mode}_target", _resource(f"{mode}_target.txt"), source=f"{PROMPT_DIR}/{mode}_target.txt")
    expected = {"sentence": "sentence", "batched": "sentences"}[mode]
    if prefix.fields != {"definitions", "examples", "summary"} or target.fields != {expected}:
        raise PromptError(f"judge templates for mode {mode!r} have unexpected fields; fix {PROMPT_DIR}/*.txt")
    definitions = parse_template("definitions", _resource("definitions.txt")).text
    return JudgePrompt(
        mode=mode,
        prefix=prefix,
        target=target,
        definitions=definitions,
        examples=_render_examples(mode, load_demonstrations()),
    )


def _number(value: float) -> str:
    return f"{value:g}"


def split_summary(summary: str, *, lang: str | None = None) -> tuple[list[str], str]:
    """The sentences of a summary and the splitter used (``punkt-en`` / ``zh-punct``)."""
    lang = lang or detect_lang(summary)
    return split_sentences(summary, lang=lang), SPLITTER_NAMES[lang]


@dataclass
class _Pending:
    book: int
    index: int
    last_answer: str | None = None
    last_error: str | None = None


def _streams(model: ChatModel) -> bool:
    """Whether ``model`` is known to answer single submitted calls (not a batch engine).

    A model that shows its backend (``Client``) is; an opaque wrapper is given batches
    through ``complete_many``, which it routes as it likes.
    """
    backend = getattr(model, "backend", None)
    return isinstance(backend, Backend) and not isinstance(backend, BatchBackend)


def request_window(model: ChatModel) -> int:
    """How many requests :func:`answer_in_order` keeps built and unanswered for ``model``."""
    if not _streams(model):
        return BATCH_WINDOW
    slots = getattr(model, "concurrency", None)
    return WINDOW_PER_SLOT * (slots if isinstance(slots, int) and slots > 0 else DEFAULT_WINDOW_SLOTS)


def answer_in_order(model: ChatModel, requests: Iterable[Request], *, window: int) -> Iterator[Completion]:
    """Answer ``requests`` in order, pulling at most ``window`` of them ahead of the answers.

    Requests are taken from the iterable only as slots free up, so a lazy iterable is never
    materialised; batch backends and opaque wrappers get ``complete_many`` batches of
    ``window``. An error (``CostLimitExceeded``, a model failure) stops submission, cancels
    what has not started, and propagates.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    source = iter(requests)
    if not _streams(model):
        while chunk := list(islice(source, window)):
            yield from model.complete_many(chunk)
        return
    in_flight: deque[Future[Completion]] = deque()
    try:
        for request in source:
            in_flight.append(model.submit(request))
            if len(in_flight) >= window:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        for future in in_flight:
            future.cancel()


class BooookScoreJudge:
    """Runs the BooookScore judge over summaries with one :class:`ChatModel` (see module docstring)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        mode: JudgeMode = "sentence",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        lang: str | None = None,
        temperature: float = JUDGE_TEMPERATURE,
    ) -> None:
        if batch_size < 1:
            raise ConfigError("--batch-size must be at least 1")
        if max_attempts < 1:
            raise ConfigError("the judge needs at least one attempt per sentence")
        if lang is not None and lang not in SPLITTER_NAMES:
            raise ConfigError(f"no sentence splitter for language {lang!r}; use one of {sorted(SPLITTER_NAMES)}")
        self.model = model
        self.mode = mode
        self.prompt = load_judge_prompt(mode)
        self.batch_size = batch_size
        self.max_attempts = max_attempts
        self.lang = lang
        self.temperature = temperature
        self._splitters: set[str] = set()

    def signature(self, splitters: Sequence[str] | None = None) -> str:
        """``booookscore|judge:...|prompt:j4-...|mode:...|split:...|temp:0|v:...``."""
        names = sorted(set(splitters if splitters is not None else self._splitters)) or [
            SPLITTER_NAMES[self.lang or "en"]
        ]
        return make_signature(
            "booookscore",
            judge=self.model.info.name,
            prompt=self.prompt.name,
            mode=self.mode,
            batch=self.batch_size if self.mode == "batched" else None,
            split="+".join(names),
            temp=_number(self.temperature),
        )

    def judge(self, summaries: Mapping[str, str]) -> list[SummaryJudgement]:
        """Judge every sentence of every summary; one :class:`SummaryJudgement` per summary, in order.

        Raises:
            ModelError: the judge model failed (after the call layer's retries).
            CostLimitExceeded: the next call would pass the cost ceiling.
        """
        books = list(summaries)
        split = []
        for book in books:
            sentences, splitter = split_summary(summaries[book], lang=self.lang)
            self._splitters.add(splitter)
            split.append(sentences)
        results: dict[tuple[int, int], SentenceJudgement] = {}
        pending = [_Pending(b, i) for b, sentences in enumerate(split) for i in range(len(sentences))]
        for attempt in range(self.max_attempts):
            if not pending:
                break
            if self.mode == "sentence":
                pending = self._sentence_round(pending, summaries, books, split, results, attempt)
            else:
                pending = self._batch_round(pending, summaries, books, split, results, attempt)
        for item in pending:
            results[(item.book, item.index)] = SentenceJudgement(
                index=item.index,
                sentence=split[item.book][item.index],
                unparseable=True,
                answer=item.last_answer,
            )
        return [
            SummaryJudgement(
                book=book,
                n_sentences=len(split[b]),
                sentences=tuple(results[(b, i)] for i in range(len(split[b]))),
                summary=summaries[book],
            )
            for b, book in enumerate(books)
        ]

    def _requests(
        self,
        units: Sequence[Sequence[_Pending]],
        summaries: Mapping[str, str],
        books: list[str],
        split: list[list[str]],
        attempt: int,
    ) -> Iterator[Request]:
        """One request per unit (a sentence, or a batch of one book's sentences), built lazily.

        Every request on one book shares one prefix string (rendered once per book per round):
        a request costs its own sentences, not a copy of the summary.
        """
        book, prefix = -1, ""
        for unit in units:
            if unit[0].book != book:
                book = unit[0].book
                prefix = self.prompt.shared_prefix(summaries[books[book]])
            sentences = [split[p.book][p.index] for p in unit]
            if self.mode == "sentence":
                prompt, max_tokens = self.prompt.sentence_prompt(sentences[0]), SENTENCE_MAX_TOKENS
            else:
                prompt = self.prompt.batch_prompt(sentences)
                max_tokens = BATCH_MAX_TOKENS_PER_SENTENCE * len(unit) + 50
            yield Request(
                prompt=prompt,
                shared_prefix=prefix,
                max_tokens=max_tokens,
                temperature=self.temperature,
                sample_index=attempt,
                stop=STOP_SEQUENCES,
                purpose="judge",
            )

    def _answers(
        self,
        units: Sequence[Sequence[_Pending]],
        summaries: Mapping[str, str],
        books: list[str],
        split: list[list[str]],
        attempt: int,
    ) -> Iterator[tuple[Sequence[_Pending], Completion]]:
        requests = self._requests(units, summaries, books, split, attempt)
        completions = answer_in_order(self.model, requests, window=request_window(self.model))
        return zip(units, completions, strict=True)

    def _sentence_round(
        self,
        pending: list[_Pending],
        summaries: Mapping[str, str],
        books: list[str],
        split: list[list[str]],
        results: dict[tuple[int, int], SentenceJudgement],
        attempt: int,
    ) -> list[_Pending]:
        units = [(p,) for p in pending]
        still: list[_Pending] = []
        for (item,), completion in self._answers(units, summaries, books, split, attempt):
            try:
                answer = parse_sentence_answer(completion.text)
            except JudgeParseError as exc:
                item.last_answer, item.last_error = completion.text, str(exc)
                still.append(item)
                continue
            results[(item.book, item.index)] = _judged(item.index, split[item.book][item.index], answer)
        return still

    def _batch_round(
        self,
        pending: list[_Pending],
        summaries: Mapping[str, str],
        books: list[str],
        split: list[list[str]],
        results: dict[tuple[int, int], SentenceJudgement],
        attempt: int,
    ) -> list[_Pending]:
        batches: list[list[_Pending]] = []
        for item in pending:
            if batches and batches[-1][0].book == item.book and len(batches[-1]) < self.batch_size:
                batches[-1].append(item)
            else:
                batches.append([item])
        still: list[_Pending] = []
        for batch, completion in self._answers(batches, summaries, books, split, attempt):
            try:
                answers, errors = parse_batch_answer(completion.text, len(batch))
            except JudgeParseError as exc:
                answers, errors = {}, {n: str(exc) for n in range(1, len(batch) + 1)}
            for n, item in enumerate(batch, start=1):
                if n in answers:
                    results[(item.book, item.index)] = _judged(item.index, split[item.book][item.index], answers[n])
                else:
                    item.last_answer = completion.text
                    item.last_error = errors.get(n, "sentence missing from the answer")
                    still.append(item)
        return still


def _judged(index: int, sentence: str, answer: JudgeAnswer) -> SentenceJudgement:
    return SentenceJudgement(index=index, sentence=sentence, questions=answer.questions, types=answer.types)

