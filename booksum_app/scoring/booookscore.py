"""BooookScore (Chang et al., ICLR 2024, §4.1, App. J.4): an LLM judge finds confusing sentences.

For each sentence s_i of a summary S (NLTK Punkt English sentences; Chinese punctuation
rules for Chinese summaries), the judge sees the instructions (the 8 confusion types and the
two conditions of App. J.4), few-shot demonstrations and the whole summary, and answers with
clarifying questions and confusion types, or "no confusion". The score of S is the fraction
of its sentences with no confusion; see :mod:`booksum_app.scoring.aggregate`.

Modes:

- ``sentence`` (the paper's method): one call per sentence.
- ``batched`` (the release's "v2"): up to ``batch_size`` numbered sentences per call, a JSON
  list as answer. Cheaper; not the paper's setup, and the signature says which was used.

Prompt order, for providers' prompt caches (docs/scoring.md, "The judge's bill"): what every
call shares comes first and is byte-identical (instructions, demonstrations, answer format:
:attr:`JudgePrompt.constant_prefix`), then the summary (shared by the calls on one summary),
then the sentence(s). Both shared parts travel in ``Request.shared_prefix`` with a cache
breakpoint between them (``Request.prefix_breaks``: Anthropic ``cache_control``); OpenAI
caches such prefixes by itself. The first call on each summary is answered alone before the
others are sent (:class:`~booksum_app.scoring.dispatch.WarmUp`), so they read its cache.

Deviations, all deliberate: our own demonstrations (two made-up stories, 42 annotated
sentences; the paper's are not reproduced); the answer instructions App. J.4 gives after the
sentence come before the summary (same words; see the template headers), so a call's
uncached part is only its sentence(s); temperature 0 (``config.JUDGE_TEMPERATURE``);
an answer that cannot be parsed is retried up to ``max_attempts`` times, then the sentence is
*unparseable*: left out of the denominator and reported (the original retries forever). A
retry is a different request, never a byte-identical resend (which at temperature 0 would
most likely buy the same unreadable answer again): its sentence part starts with a numbered
format reminder (:func:`retry_reminder`), and ``sample_index`` is incremented. The first
attempt is unchanged, so its cache keys and the plan's are the same as without retries. Every call goes through
the model's call layer (concurrency bound, call cache: an interrupted run resumes).

Memory: requests are built lazily, at most a few per concurrency slot at a time
(:func:`answer_in_order`), and every request on one summary shares one rendered prefix
string, so memory grows with the summary's size, never with sentences x summary length;
a cost ceiling (``CostLimitExceeded``) stops submission at the first call it refuses.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources

from booksum_app.chunking import SPLITTER_NAMES, detect_lang, split_sentences
from booksum_app.config import DEFAULT_BATCH_SIZE, JUDGE_MODES, JUDGE_TEMPERATURE, JudgeMode
from booksum_app.errors import ConfigError, InputError, JudgeParseError, PromptError
from booksum_app.jsonin import parse_json
from booksum_app.llm.base import ChatModel, Completion, Request
from booksum_app.llm.providers.catalog import plugin_fields
from booksum_app.llm.retry_policy import thinking_mode
from booksum_app.prompts import Template, parse_template
from booksum_app.scoring.answers import JudgeAnswer, parse_batch_answer, parse_sentence_answer
from booksum_app.scoring.dispatch import WarmUp, answer_in_order, request_window
from booksum_app.scoring.judgement import SentenceJudgement, SummaryJudgement
from booksum_app.signature import make_signature, rules_version, short_hash

DEFAULT_MAX_ATTEMPTS = 3
SENTENCE_MAX_TOKENS = 300
BATCH_MAX_TOKENS_PER_SENTENCE = 150
PROMPT_DIR = "booookscore"
SENTENCE_MARKER = "[Your sentence]"
BATCH_MARKER = "[Your sentences]"
# A judge that runs on past its answer starts the next template block; cut it there (small
# local models otherwise repeat "[Your response] ..." up to max_tokens).
STOP_SEQUENCES = ("\n[Your", "\n[Example")
_SUMMARY_SLOT = "\x00summary\x00"  # stands for the summary while the constant part is cut out


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
        data = parse_json(raw if raw is not None else _resource("demonstrations.json"), where="demonstrations")
        demos = []
        for demo in data["demonstrations"]:
            pairs = tuple(
                (str(a["sentence"]), JudgeAnswer(questions=a["questions"], types=tuple(a["types"])))
                for a in demo["annotations"]
            )
            demos.append(Demonstration(title=str(demo["title"]), annotations=pairs))
    except (KeyError, TypeError, ValueError, InputError) as exc:
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

    @cached_property
    def _around_summary(self) -> tuple[str, str]:
        rendered = self.prefix.render(definitions=self.definitions, examples=self.examples, summary=_SUMMARY_SLOT)
        head, _, tail = rendered.partition(_SUMMARY_SLOT)
        return head, tail + "\n\n"

    @property
    def constant_prefix(self) -> str:
        """Instructions, demonstrations and answer format: byte-identical for every call of the mode."""
        return self._around_summary[0]

    def shared_prefix(self, summary: str) -> str:
        """:attr:`constant_prefix` then the summary: identical for every call on one summary."""
        head, tail = self._around_summary
        return head + summary.strip() + tail

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
    order = [f for _, f, _, _ in string.Formatter().parse(prefix.text) if f is not None]
    if order[-1] != "summary" or order.count("summary") != 1:
        # providers cache prompt prefixes: what every call shares must come before the summary
        raise PromptError(f"{PROMPT_DIR}/{mode}_prefix.txt must end with its one {{summary}} field")
    definitions = parse_template("definitions", _resource("definitions.txt")).text
    return JudgePrompt(
        mode=mode,
        prefix=prefix,
        target=target,
        definitions=definitions,
        examples=_render_examples(mode, load_demonstrations()),
    )


RETRY_MARKER = "[Your answer format]"  # a prompt marker: a judge that echoes it is refused too


def retry_reminder(mode: JudgeMode, attempt: int) -> str:
    """The text put before the sentence part of retry ``attempt`` (1, 2, ...): the format again.

    Numbered, so that no two attempts on one sentence send the same bytes.
    """
    if mode == "sentence":
        shape = ('exactly two lines, "Questions: <your clarifying questions, or no confusion>" then '
                 '"Types: <the confusion types, or no confusion>"')
    else:
        shape = ('nothing but the JSON list, one object per sentence with its "sentence_num", '
                 '"questions" and "types" (null for both when there is no confusion)')
    return (f"{RETRY_MARKER} Retry {attempt}: the previous answer could not be read. "
            f"Answer in {shape}.\n\n")


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
        warm_up: bool = True,
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
        self.n_answers = 0  # answers read (every attempt), for the end-of-run line on cut answers
        self.n_cut = 0  # of which stopped at max_tokens (finish_reason "length")
        # the first call on each summary goes alone, so the others read the prefix it cached
        self._warm_up = WarmUp(key=lambda r: r.shared_prefix) if warm_up else None

    def signature(self, splitters: Sequence[str] | None = None) -> str:
        """``booookscore|judge:...|prompt:j4-...|mode:...|split:...|temp:0|v:...``."""
        names = sorted(set(splitters if splitters is not None else self._splitters)) or [
            SPLITTER_NAMES[self.lang or "en"]
        ]
        return make_signature(
            "booookscore",
            judge=self.model.info.name,
            **plugin_fields(self.model.info.name),  # a plugin judge: its package's version and code hash
            prompt=self.prompt.name,
            mode=self.mode,
            batch=self.batch_size if self.mode == "batched" else None,
            split="+".join(names),
            splitv=rules_version("split"),
            temp=_number(self.temperature),
            think=None if (mode := thinking_mode(self.model)) == "auto" else mode,  # --thinking sent to the judge
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

    def first_requests(self, summary: str) -> list[Request]:
        """The first-attempt requests of judging ``summary``, as :meth:`judge` sends them; calls nothing.

        A plan asks the call cache about these: a summary whose every one is cached is judged free.
        """
        sentences = split_summary(summary, lang=self.lang)[0]
        pending = [_Pending(0, i) for i in range(len(sentences))]
        units: Sequence[Sequence[_Pending]] = (
            [(p,) for p in pending] if self.mode == "sentence" else self._batches(pending))
        return list(self._requests(units, {"": summary}, [""], [sentences], 0))

    def _batches(self, pending: list[_Pending]) -> list[list[_Pending]]:
        """Consecutive sentences of one book, ``batch_size`` at most per request."""
        batches: list[list[_Pending]] = []
        for item in pending:
            if batches and batches[-1][0].book == item.book and len(batches[-1]) < self.batch_size:
                batches[-1].append(item)
            else:
                batches.append([item])
        return batches

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
        breaks = (len(self.prompt.constant_prefix),)  # a cache breakpoint after the demonstrations
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
            if attempt > 0:
                prompt = retry_reminder(self.mode, attempt) + prompt
            yield Request(
                prompt=prompt,
                shared_prefix=prefix,
                prefix_breaks=breaks if 0 < breaks[0] < len(prefix) else (),
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
        completions = answer_in_order(self.model, requests, window=request_window(self.model), warm_up=self._warm_up)
        for unit, completion in zip(units, completions, strict=True):
            self.n_answers += 1
            self.n_cut += int(completion.cut_off)
            yield unit, completion

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
            except JudgeParseError:
                item.last_answer = completion.text
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
        batches = self._batches(pending)
        still: list[_Pending] = []
        for batch, completion in self._answers(batches, summaries, books, split, attempt):
            try:
                answers, _ = parse_batch_answer(completion.text, len(batch))
            except JudgeParseError:
                answers = {}
            for n, item in enumerate(batch, start=1):
                if n in answers:
                    results[(item.book, item.index)] = _judged(item.index, split[item.book][item.index], answers[n])
                else:
                    item.last_answer = completion.text
                    still.append(item)
        return still


def _judged(index: int, sentence: str, answer: JudgeAnswer) -> SentenceJudgement:
    return SentenceJudgement(index=index, sentence=sentence, questions=answer.questions, types=answer.types)

