"""Benchmark datasets for ``booksum compare --dataset`` (CNNSum, CLongEval LStSum, any JSONL).

Each line of a ``.jsonl`` file is one sample: a JSON object whose context plays the part of a
book and whose reference summary scores the summaries with ROUGE-L. Field names come from a
preset or from ``--context-field`` / ``--reference-field`` / ``--id-field`` (which win):

- ``cnnsum`` (CNNSum release): ``context``, ``summary``, and ``id`` when the file has one
  (the release has none: the line number is the id).
- ``clongeval`` (CLongEval long-story summarization): ``context``, ``answer``, ``id``.
- ``auto`` (default): ``clongeval`` when the first sample has ``answer``, else ``cnnsum``.
- ``custom``: the field options only; booksum's own settings.

A preset runs the benchmark's own protocol (:data:`BENCHMARKS`), verbatim, unless an option
overrides a part of it: its ROUGE-L variant (``--rouge-variant``), its G per length bucket
(``--bucket-max-tokens``), and for the ``direct`` strategy its decoding (CNNSum: greedy,
temperature 0; CLongEval: temperature 0.01, top-p 1), its prompts (the ``benchmark`` prompt
set: CNNSum's ``prompts.json``, whose Prompt-IB is CLongEval's LStSum prompt; ``--prompts``
overrides) and no artifact removal. An option the user set wins over the preset (``--temperature``,
``--prompts``, ``--regenerate``); a value the user did not set is the preset's. What differs from
the benchmark is named in each sample's ROUGE-L signature (``overrides:...``) and, for
``--temperature``, on the terminal.

Length buckets: a ``--bucket-field`` value per line; else the file name: CNNSum's release names
(``cnnsum_L_16k``, ``cnnsum_XL_32k``, ``cnnsum_XXL_64k`` or ``cnnsum_2XL_64k``,
``cnnsum_XXXL_128k`` or ``cnnsum_3XL_128k``), a name ending in a CNNSum subset (``L``, ``XL``,
``2XL``, ``3XL``, e.g. ``CNNSum_2XL.jsonl``) or a CLongEval size (``small``, ``medium``,
``large``); else the quartiles of the file's sample lengths. Lengths are cl100k tokens of the
context (CNNSum measures its buckets in Yi tokens; cl100k is what booksum has offline, so
lengths near a boundary differ). A sample's generation limit G: ``--bucket-max-tokens`` for its
bucket, else the preset's (CNNSum: 400 for L/XL, 500 for 2XL/3XL; CLongEval: 400), else
``--max-summary-len``.

Each context becomes a :class:`~booksum_app.books.Book` through the plain-text reader
(:func:`~booksum_app.books.text.book_from_text`: paragraphs and chapter headings as for a
``.txt`` book) with every section kept as narrative: a benchmark sample is summarized whole.
The language is detected per sample (``--lang`` forces one). A line that cannot be used is
refused with one :class:`InputError` naming the file and the line.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from booksum_app.books import Book, Chapter
from booksum_app.books.language import detect_language
from booksum_app.chunking import get_tokenizer
from booksum_app.errors import InputError
from booksum_app.jsonin import parse_json
from booksum_app.runners.experiment import DatasetSpec, Experiment
from booksum_app.scoring.buckets import (
    CLONGEVAL_BUCKETS,
    SampleScore,
    quartile_buckets,
)
from booksum_app.scoring.rouge import (
    CLONGEVAL,
    CNNSUM,
    DEFAULT_ROUGE_VARIANT,
    check_variant,
    rouge_l,
    rouge_signature,
)

if TYPE_CHECKING:
    from booksum_app.runners.run_config import RunConfig


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's own protocol: what its preset runs unless an option overrides it."""

    name: str
    fields: tuple[str, str, str | None]  # context, reference, id (used when the first sample has it)
    rouge_variant: str
    bucket_max_tokens: Mapping[str, int]  # G per length bucket
    default_max_tokens: int | None  # G for any other bucket (None: --max-summary-len)
    temperature: float
    top_p: float
    prompts: str = "benchmark"  # the built-in prompt set holding its wording
    system: str | None = None  # the system message of its chat calls (None: a user message only)


# Each request is the benchmark's inference code's: its prompt template filled with the sample's
# context by str.format, nothing stripped or reflowed; one call, its answer scored as returned.
BENCHMARKS: Mapping[str, Benchmark] = {
    # CxsGhost/CNNSum Inference.py: vLLM LLM.generate(prompt.format(context)), a bare prompt (no
    # system message, no stop strings), SamplingParams(temperature=0.0, top_p=1.0, top_k=-1,
    # max_tokens=400/400/500/500 by subset, min_tokens=10), prompts.json's Prompt-IB and Prompt-IE,
    # the raw output scored. (min_tokens has no chat-API counterpart: not sent.)
    "cnnsum": Benchmark("cnnsum", ("context", "summary", "id"), CNNSUM,
                        {"L": 400, "XL": 400, "2XL": 500, "3XL": 500}, None, 0.0, 1.0),
    # zexuanqiu/CLongEval inference.py, get_pred_gpt4 (the chat-API models): messages = system
    # "你是一个人工智能助手。你会为用户提供有帮助，准确的回答。" + user task_prompt.format(context),
    # temperature 0.01, top_p 1., max_tokens from config/dataset2maxlen.json (400), no stop strings;
    # config/dataset2prompt.json "long_story_summarization" is the prompt (benchmark set's ib).
    "clongeval": Benchmark("clongeval", ("context", "answer", "id"), CLONGEVAL, {}, 400, 0.01, 1.0,
                           system="你是一个人工智能助手。你会为用户提供有帮助，准确的回答。"),
}
PRESETS: Mapping[str, tuple[str, str, str | None]] = {name: b.fields for name, b in BENCHMARKS.items()}
PRESET_CHOICES = ("auto", *PRESETS, "custom")
LENGTH_TOKENIZER = "cl100k_base"
_NAME_BUCKET = re.compile(r"(?:^|[^0-9a-z])(l|xl|2xl|3xl|small|medium|large)$", re.IGNORECASE)
# CNNSum's release files (cnnsum_XXL_64k) and the names its Inference.py expects (cnnsum_2XL_64k)
_CNNSUM_RELEASE = re.compile(r"(?:^|[^0-9a-z])(l|xl|xxl|2xl|xxxl|3xl)_(?:16|32|64|128)k$", re.IGNORECASE)
_CNNSUM_SUBSET = {"L": "L", "XL": "XL", "XXL": "2XL", "2XL": "2XL", "XXXL": "3XL", "3XL": "3XL"}
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Sample:
    """One benchmark sample: its context as a Book, its reference, length bucket and G."""

    dataset: str  # the file's stem
    sample_id: str
    line: int
    book: Book
    reference: str
    lang: str  # "en" or "zh", detected per sample unless forced
    length_tokens: int
    bucket: str
    max_new_tokens: int | None  # G for this sample; None: the experiment's
    sha256: str  # of the context text
    benchmark: str | None = None  # the preset whose protocol the sample runs under (None: custom)
    rouge_variant: str = DEFAULT_ROUGE_VARIANT
    overrides: tuple[str, ...] = ()  # parts of the benchmark's protocol an option replaced

    @property
    def path(self) -> Path:
        """A virtual file path naming the sample (records go under its stem)."""
        return _sample_path(self.dataset, self.sample_id, self.line)

    @property
    def key(self) -> str:
        """The name results use for the sample (``<dataset>--<id>.txt``)."""
        return self.path.name


# a sample's record is "<dataset>--<id>.json" (and its temporary files add ~30 bytes): file systems
# allow 255 bytes a name, and a longer one failed at the first record, after the calls were paid
MAX_NAME_BYTES = 200


def _sample_path(dataset: str, sample_id: str, line: int) -> Path:
    """``<dataset>/<dataset>--<id slug>.txt``; an id too long for a file name is cut and given a
    hash of the whole id, so each sample keeps a name of its own that reruns find again.

    Raises:
        InputError: the dataset's own file name leaves no room for sample names.
    """
    slug = _SLUG_BAD.sub("-", sample_id).strip("-") or str(line)
    name = f"{dataset}--{slug}"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        room = MAX_NAME_BYTES - len(f"{dataset}---".encode()) - 12
        if room < 8:
            raise InputError(f"dataset {dataset!r}: its file name is too long to name its samples' records "
                             f"(over {MAX_NAME_BYTES - 20} bytes); rename the file")
        name = f"{dataset}--{slug[:room]}-{hashlib.sha256(sample_id.encode('utf-8')).hexdigest()[:12]}"
    return Path(dataset) / f"{name}.txt"


def _preset(spec: DatasetSpec, first: Mapping[str, Any]) -> str:
    preset = spec.preset
    if preset not in PRESET_CHOICES:
        raise InputError(f"--dataset-preset {preset!r}: use one of {', '.join(PRESET_CHOICES)}")
    if preset == "auto":
        preset = "clongeval" if "answer" in first and "summary" not in first else "cnnsum"
    return preset


def _fields(spec: DatasetSpec, preset: str, first: Mapping[str, Any]) -> tuple[str, str, str | None]:
    context, reference, ident = PRESETS.get(preset, ("context", "summary", None))
    if ident is not None and ident not in first:
        ident = None  # the file has no id field (CNNSum's release): the line number is the id
    return (spec.context_field or context, spec.reference_field or reference,
            spec.id_field if spec.id_field is not None else ident)


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"dataset {path}: cannot read it ({exc.strerror or exc}); check the path") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"dataset {path}: not UTF-8 text (byte {exc.start}); convert it to UTF-8") from exc
    rows = []
    # JSON Lines ends a record at "\n" only: str.splitlines would also cut at U+2028, U+0085 or \x1c,
    # which a JSON string may hold raw (a context's own characters)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line, where=f"{path.name} line {number}")
        except InputError as exc:
            if isinstance(exc.__cause__, json.JSONDecodeError):
                raise InputError(f"{path.name} line {number}: not JSON ({exc.__cause__.msg}); "
                                 "each line must be one object") from exc.__cause__
            raise
        if not isinstance(value, dict):
            raise InputError(f"{path.name} line {number}: a JSON {type(value).__name__}, not an object")
        rows.append((number, value))
    if not rows:
        raise InputError(f"dataset {path}: no samples (expected one JSON object per line)")
    return rows


def _text(row: Mapping[str, Any], field: str, *, path: Path, line: int, what: str, verbatim: bool = False) -> str:
    """The field's text (stripped unless ``verbatim``: a context goes into the prompt byte for byte)."""
    if field not in row:
        keys = ", ".join(sorted(map(str, row))[:8])
        raise InputError(f"{path.name} line {line}: no {what} field {field!r} (fields: {keys}); "
                         f"pass --{what}-field NAME")
    value = row[field]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        value = "\n".join(value)  # some releases keep several references or paragraphs as a list
    if isinstance(value, int | float) and not isinstance(value, bool) and what == "id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{path.name} line {line}: the {what} field {field!r} is "
                         f"{'empty' if isinstance(value, str) else 'not text'}")
    return value if verbatim else value.strip()


def _name_bucket(path: Path) -> str | None:
    release = _CNNSUM_RELEASE.search(path.stem)
    if release is not None:
        return _CNNSUM_SUBSET[release.group(1).upper()]
    match = _NAME_BUCKET.search(path.stem)
    if match is None:
        return None
    word = match.group(1)
    return word.lower() if word.lower() in CLONGEVAL_BUCKETS else word.upper()


def _limit(bucket: str, bench: Benchmark | None, limits: Mapping[str, int]) -> tuple[int | None, bool]:
    """G of a bucket (None: --max-summary-len) and whether an option replaced the benchmark's."""
    own = None if bench is None else bench.bucket_max_tokens.get(bucket, bench.default_max_tokens)
    given = limits.get(bucket)
    if given is None:
        return own, False
    return given, own is not None and given != own


def _book(context: str, *, name: str, lang: str, path: Path, line: int) -> Book:
    """The context as a one-chapter, one-paragraph book: its text is the context, byte for byte.

    A sample's context is data for the prompt, not a book file: no heading becomes a title, no
    line break or indent is touched (CNNSum and CLongEval fill their templates with it as is).
    The chunker still cuts it at its blank lines for the chunked strategies.
    """
    stem = Path(name).stem
    chapter = Chapter(title=stem, paragraphs=(context,), narrative=True, source=f"line {line}")
    return Book(title=stem, authors=(), language=lang, chapters=(chapter,), source_path=f"{path}:{line}",
                format="jsonl")


def read_dataset(spec: DatasetSpec, *, lang: str = "auto",
                 bucket_max_tokens: Mapping[str, int] | None = None) -> tuple[Sample, ...]:
    """Read one JSONL dataset into samples (buckets assigned, G per bucket, the preset's protocol).

    ``bucket_max_tokens`` is the user's G per bucket (``--bucket-max-tokens``); a preset's own
    limits fill the buckets it does not name.

    Raises:
        InputError: unreadable file, a line that is not an object with the needed fields, or an
            unknown ROUGE variant.
    """
    path = Path(spec.path)
    rows = _rows(path)
    preset = _preset(spec, rows[0][1])
    bench = BENCHMARKS.get(preset)
    context_field, reference_field, id_field = _fields(spec, preset, rows[0][1])
    variant = check_variant(spec.rouge_variant or (bench.rouge_variant if bench else DEFAULT_ROUGE_VARIANT))
    variant_override = ("rouge",) if bench is not None and variant != bench.rouge_variant else ()
    by_name = _name_bucket(path)
    tokenizer = get_tokenizer(LENGTH_TOKENIZER)
    items: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        context = _text(row, context_field, path=path, line=line, what="context", verbatim=True)
        reference = _text(row, reference_field, path=path, line=line, what="reference")
        ident = _text(row, id_field, path=path, line=line, what="id") if id_field else str(line)
        if ident in seen:
            raise InputError(f"{path.name} line {line}: id {ident!r} already used on line {seen[ident]}; "
                             "ids must be unique (or pass --id-field '' to number samples by line)")
        seen[ident] = line
        bucket = _text(row, spec.bucket_field, path=path, line=line, what="bucket") if spec.bucket_field else by_name
        sample_lang = lang if lang in ("en", "zh") else detect_language(context)
        items.append({"line": line, "context": context, "reference": reference, "id": ident,
                      "bucket": bucket, "lang": sample_lang, "length": tokenizer.count(context)})
    if any(i["bucket"] is None for i in items):
        for item, quartile in zip(items, quartile_buckets([i["length"] for i in items]), strict=True):
            item["bucket"] = quartile
    limits = dict(bucket_max_tokens or {})
    out = []
    named: dict[str, int] = {}
    for i in items:
        name = _sample_path(path.stem, i["id"], i["line"]).name
        if name in named:  # "a b" and "a-b" slug alike: two samples must not share a record
            raise InputError(f"{path.name} lines {named[name]} and {i['line']}: ids {i['id']!r} and one before it "
                             f"name one record ({name}); make the ids differ in letters or digits")
        named[name] = i["line"]
        limit, replaced = _limit(i["bucket"], bench, limits)
        out.append(Sample(
            dataset=path.stem, sample_id=i["id"], line=i["line"],
            book=_book(i["context"], name=name, lang=i["lang"], path=path, line=i["line"]),
            reference=i["reference"], lang=i["lang"], length_tokens=i["length"], bucket=i["bucket"],
            max_new_tokens=limit, sha256=hashlib.sha256(i["context"].encode("utf-8")).hexdigest(),
            benchmark=bench.name if bench else None, rouge_variant=variant,
            overrides=(*variant_override, *(("G",) if replaced else ()))))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _cached(spec: DatasetSpec, stamp: tuple[int, int], lang: str,
            limits: tuple[tuple[str, int], ...]) -> tuple[Sample, ...]:
    return read_dataset(spec, lang=lang, bucket_max_tokens=dict(limits))


def load_samples(exp: Experiment) -> tuple[Sample, ...]:
    """Every sample of the experiment's datasets, in file then line order (read once per file version).

    Raises:
        InputError: a dataset cannot be read, two datasets share a file name, or a book a sample's name.
    """
    samples: list[Sample] = []
    stems: dict[str, Path] = {}
    for spec in exp.datasets:
        path = Path(spec.path)
        other = stems.setdefault(path.stem, path)
        if other != path:
            raise InputError(f"two datasets named {path.stem!r} ({other} and {path}); rename one")
        try:
            stat = path.stat()
        except OSError as exc:
            raise InputError(f"dataset {path}: cannot read it ({exc.strerror or exc}); check the path") from exc
        read = _cached(spec, (stat.st_mtime_ns, stat.st_size), exp.lang, exp.bucket_max_tokens)
        asked = (*(("prompts",) if exp.prompts != "paper" else ()),  # --prompts: another wording (direct)
                 *(("decoding",) if exp.regenerate else ()),  # --regenerate: booksum's validity rule
                 *(("temperature",) if exp.temperature is not None else ()))  # --temperature: the user's
        if asked:
            read = tuple(dataclasses.replace(s, overrides=(*s.overrides, *asked)) if s.benchmark else s
                         for s in read)
        samples.extend(read)
    books = {Path(p).name for p in exp.books}
    clash = next((s.key for s in samples if s.key in books), None)
    if clash is not None:
        raise InputError(f"book {clash!r} has the name of a dataset sample; rename the book file")
    return tuple(samples)


def sample_run(run: RunConfig, sample: Sample | None) -> RunConfig:
    """The run a (configuration, sample) gets: under a preset, ``direct`` runs the benchmark's protocol.

    Its decoding (temperature unless ``--temperature`` was given, top-p, one call whose answer is
    scored as returned; ``--regenerate`` keeps booksum's validity rule instead), its system message,
    its prompt set unless ``--prompts`` names another, and no artifact removal (the benchmarks score
    the raw answer). G is the sample's already. Other strategies are not the benchmark's method and
    keep booksum's settings. A value the user set wins and is signed (``overrides:temperature``).
    """
    if sample is None or sample.benchmark is None or run.strategy != "direct":
        return run
    bench = BENCHMARKS[sample.benchmark]
    prompts = bench.prompts if run.prompts == "paper" else run.prompts
    decoding = "validated" if "decoding" in sample.overrides else "once"
    own = "temperature" not in sample.overrides
    temperature, source = (bench.temperature, f"{bench.name} preset") if own else (run.temperature, "given")
    return dataclasses.replace(run, temperature=temperature, temperature_source=source, top_p=bench.top_p,
                               clean=False, prompts=prompts, decoding=decoding, system=bench.system)


def preset_override_note(exp: Experiment) -> str | None:
    """One line when an option the user set replaces a part of a dataset preset's protocol (``direct``)."""
    if exp.temperature is None or "direct" not in exp.strategies:
        return None
    if not any(d.preset != "custom" for d in exp.datasets):
        return None
    return (f"--temperature {exp.temperature:g} replaces the benchmark presets' decoding temperature for direct "
            "(signed overrides:temperature in each sample's ROUGE-L signature)")


def score_sample(sample: Sample, summary: str) -> SampleScore:
    """ROUGE-L F of a summary against the sample's reference, in the sample's variant."""
    score = rouge_l(summary, sample.reference, lang=sample.lang, variant=sample.rouge_variant)
    return SampleScore(dataset=sample.dataset, sample=sample.key, length_tokens=sample.length_tokens,
                       bucket=sample.bucket, rouge_l=score.fmeasure, lang=sample.lang,
                       summary_tokens=get_tokenizer(LENGTH_TOKENIZER).count(summary), sample_id=sample.sample_id,
                       rouge_signature=rouge_signature(sample.lang, sample.rouge_variant, preset=sample.benchmark,
                                                       overrides=sample.overrides))


__all__ = [
    "BENCHMARKS",
    "LENGTH_TOKENIZER",
    "PRESETS",
    "PRESET_CHOICES",
    "Benchmark",
    "Sample",
    "load_samples",
    "preset_override_note",
    "read_dataset",
    "sample_run",
    "score_sample",
]
