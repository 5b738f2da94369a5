"""Prompt templates as package data: load, validate, render, and sign them.

Templates live in ``booksum_app/prompts/<set>/<lang>/<name>.txt`` and are read with
:mod:`importlib.resources`. Leading lines that start with ``#`` are a header (source,
fields, deviations) and are stripped; the rest is the template, ``str.format`` style with
named fields only (``{text}``, ``{word_limit}``, ...; literal braces doubled).

Sets (see ``README.md`` in this directory):

- ``paper``: BooookScore App. J wording (J.1 incremental updating, J.2 hierarchical
  merging, J.3 artifact removal), English and Chinese (our translation); the J.2 merge
  prompts with source evidence and a refine step for ``hier-evidence`` (Ou & Lapata 2025).
- ``simple``: App. J.2.1 LLaMA-2 wording for the three hierarchical prompts; the paper
  has no simple inc/compress/clean prompts, so those fall back to ``paper``.
- ``direct``: CNNSum App. F.1 Prompt-IB (``ib``) and Prompt-IE (``ie``), English and Chinese.
- ``benchmark``: the benchmarks' own ``direct`` prompts, verbatim (CNNSum's ``prompts.json``,
  whose Prompt-IB is CLongEval's LStSum prompt), without booksum's length sentence; it holds
  no other template, so only ``direct`` runs with it (``compare --dataset`` presets use it).

A user directory overrides any template by file name: ``<dir>/<lang>/<name>.txt`` first,
then ``<dir>/<name>.txt``. A template's ``version`` is the short hash of its text, and a
set of templates signs as ``<set>-<hash>`` (part of every summary's signature).
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from booksum_app.config import LANGUAGES
from booksum_app.errors import PromptError
from booksum_app.signature import short_hash

PROMPT_SETS = ("paper", "simple", "benchmark")  # built-in summarization sets; anything else is a directory
FALLBACK_SET = {"simple": "paper"}  # the paper's J.2.1 set only covers hierarchical merging
DIRECT_TEMPLATES = ("ib", "ie")

# name -> (required fields, optional fields). Templates outside this table are not checked.
TEMPLATE_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "summarize_chunk": (frozenset({"text", "word_limit"}), frozenset()),
    "merge": (frozenset({"summaries", "word_limit"}), frozenset()),
    "merge_with_context": (frozenset({"context", "summaries", "word_limit"}), frozenset()),
    "merge_evidence": (frozenset({"summaries", "evidence", "word_limit"}), frozenset()),
    "merge_with_context_evidence": (
        frozenset({"context", "summaries", "evidence", "word_limit"}),
        frozenset(),
    ),
    "inc_init": (frozenset({"text", "word_limit"}), frozenset()),
    "inc_update": (frozenset({"text", "summary", "word_limit"}), frozenset()),
    "compress": (frozenset({"summary", "word_limit"}), frozenset({"current_words"})),
    "clean": (frozenset({"summary"}), frozenset()),
    "ib": (frozenset({"text"}), frozenset({"word_limit"})),
    "ie": (frozenset({"text"}), frozenset({"word_limit"})),
}


@dataclass(frozen=True)
class Template:
    """One prompt template: its name, text (header stripped), content hash and origin."""

    name: str
    text: str
    version: str
    source: str = ""

    @property
    def fields(self) -> frozenset[str]:
        """The named fields the template uses."""
        return _fields(self.text, name=self.name)

    def render(self, **values: object) -> str:
        """Fill the template; every field must be given and no other.

        Raises:
            PromptError: a field is missing or unknown.
        """
        fields = self.fields
        missing = sorted(fields - values.keys())
        unknown = sorted(values.keys() - fields)
        if missing or unknown:
            raise PromptError(
                f"template {self.name!r} ({self.source}) needs fields {sorted(fields)}; "
                f"missing {missing}, unknown {unknown}: fix the call or the template file"
            )
        return self.text.format(**values)

    def skeleton(self) -> str:
        """The template rendered with every field empty (what the instructions alone cost)."""
        return self.text.format(**{f: "" for f in self.fields})


def _fields(text: str, *, name: str) -> frozenset[str]:
    found: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptError(
            f"template {name!r} is not a valid format string ({exc}); double literal braces as {{{{ }}}}"
        ) from exc
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise PromptError(
                f"template {name!r} has field {{{field}}}; use plain named fields like {{text}}"
            )
        found.add(field)
    return frozenset(found)


def parse_template(name: str, raw: str, *, source: str = "") -> Template:
    """Build a :class:`Template` from file content: strip the ``#`` header, check its fields.

    Raises:
        PromptError: the text is empty, malformed, or its fields do not match ``name``.
    """
    lines = raw.replace("\r\n", "\n").split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        raise PromptError(f"template {name!r} at {source or '?'} is empty; write the prompt text")
    fields = _fields(text, name=name)
    if name in TEMPLATE_FIELDS:
        required, optional = TEMPLATE_FIELDS[name]
        missing = sorted(required - fields)
        unknown = sorted(fields - required - optional)
        if missing or unknown:
            raise PromptError(
                f"template {name!r} at {source or '?'} must use fields {sorted(required)} "
                f"(optional {sorted(optional)}); missing {missing}, unknown {unknown}"
            )
    return Template(name=name, text=text, version=short_hash(text), source=source)


def _packaged(prompt_set: str, lang: str, name: str) -> tuple[str, str] | None:
    node = resources.files(__name__).joinpath(prompt_set, lang, f"{name}.txt")
    if node.is_file():
        return node.read_text(encoding="utf-8"), f"{prompt_set}/{lang}/{name}.txt"
    return None


def load_template(
    name: str,
    *,
    prompt_set: str = "paper",
    lang: str = "en",
    override_dir: Path | None = None,
) -> Template:
    """Load template ``name`` of ``prompt_set`` in ``lang``, a user file in ``override_dir`` first.

    Raises:
        PromptError: no such template, or it is malformed.
    """
    if override_dir is not None:
        override_dir = Path(override_dir)
        if not override_dir.is_dir():
            raise PromptError(
                f"prompt directory {override_dir} does not exist; pass an existing directory"
            )
        for candidate in (override_dir / lang / f"{name}.txt", override_dir / f"{name}.txt"):
            if candidate.is_file() and not candidate.resolve().is_relative_to(override_dir.resolve()):
                raise PromptError(
                    f"{candidate} is a link out of prompt directory {override_dir}; links are not "
                    "followed out of it: copy the template in"
                )
            if candidate.is_file():
                return parse_template(
                    name, candidate.read_text(encoding="utf-8"), source=str(candidate)
                )
    sets = [prompt_set]
    while sets[-1] in FALLBACK_SET:
        sets.append(FALLBACK_SET[sets[-1]])
    for candidate_set in sets:
        found = _packaged(candidate_set, lang, name)
        if found is not None:
            raw, source = found
            return parse_template(name, raw, source=source)
    raise PromptError(
        f"no prompt template {name!r} in set {prompt_set!r} for language {lang!r}; "
        f"built-in sets are {', '.join(PROMPT_SETS)} (languages {', '.join(LANGUAGES)}), "
        "or add the file to your --prompts directory"
    )


def prompt_files(directory: Path) -> list[Path]:
    """The template files of a ``--prompts`` directory and its language folders, sorted; a link
    out of the directory is refused as :func:`load_template` refuses it.

    Raises:
        PromptError: a file of the directory is a link out of it.
    """
    root = Path(directory).resolve()
    found = []
    for path in sorted(Path(directory).rglob("*")):
        if not path.is_file():
            continue
        if not path.resolve().is_relative_to(root):
            raise PromptError(f"{path} is a link out of prompt directory {directory}; links are not "
                              "followed out of it: copy the template in")
        found.append(path)
    return found


def templates_signature(label: str, templates: Iterable[Template]) -> str:
    """``<label>-<hash>`` over the templates' names and versions (order-independent)."""
    parts = sorted(f"{t.name}={t.version}" for t in templates)
    return f"{label}-{short_hash(';'.join(parts))}"


__all__ = [
    "DIRECT_TEMPLATES",
    "LANGUAGES",
    "PROMPT_SETS",
    "TEMPLATE_FIELDS",
    "Template",
    "load_template",
    "parse_template",
    "prompt_files",
    "templates_signature",
]
