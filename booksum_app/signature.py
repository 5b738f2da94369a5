"""Signature strings: every score and artifact says exactly how it was made (sacrebleu style).

``booookscore|judge:gpt-4o|prompt:j4-3f2a9c|mode:sentence|split:punkt-en|splitv:1a2b3c|temp:0|v:0.2.0``
Two numbers are comparable only when their signatures match.

The parts of booksum whose rules move numbers carry a rules version (:func:`rules_version`): a
short hash of the source of the modules that hold the rules and of the versions of the
libraries they run (NLTK's Punkt, jieba's dictionary), so a signature changes whenever the
sentence splitter, the word segmentation, the detectors, the chunker or the ROUGE arithmetic
change, even between releases. The package version (``v:``) is the running code's
``booksum_app.__version__``, not the installed distribution's metadata.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from booksum_app._version import __version__

# part -> (modules whose source holds its rules, distributions whose version changes its output)
RULE_PARTS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "split": (("booksum_app.chunking.sentences",), ("nltk",)),  # sentence splitter (Punkt, Chinese rules)
    # n-gram words: English is split into Punkt sentences before NLTK's word tokenizer
    "words": (("booksum_app.scoring.words", "booksum_app.scoring.nltk_words", "booksum_app.chunking.sentences"),
              ("nltk", "jieba")),
    "rouge": (("booksum_app.scoring.rouge", "booksum_app.scoring.words"), ("jieba",)),
    # every scoring/detector*.py (detectors.py, detector_rules.py and any rule module added beside them)
    "detect": (("booksum_app.scoring.detector*", "booksum_app.scoring.repeats", "booksum_app.chunking.sentences",
                "booksum_app.scoring.words"), ("nltk", "jieba")),
    "chunk": (("booksum_app.chunking.chunker", "booksum_app.chunking.sentences"), ("nltk",)),
}


def package_version() -> str:
    """The running code's version (``booksum_app.__version__``), not the installed metadata's."""
    return __version__


def _module_source(name: str) -> bytes:
    """The source of module ``name`` as shipped (not imported: no import order is implied)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return b""
    try:
        with open(spec.origin, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _expand(pattern: str) -> list[str]:
    """``pkg.prefix*``: the modules of ``pkg`` whose name starts with ``prefix``, sorted; else ``[pattern]``."""
    if not pattern.endswith("*"):
        return [pattern]
    package, _, prefix = pattern[:-1].rpartition(".")
    spec = importlib.util.find_spec(package)
    names: set[str] = set()
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        names |= {f"{package}.{p.stem}" for p in Path(folder).glob(f"{prefix}*.py")}
    return sorted(names)


def _distribution(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"


@functools.cache
def rules_version(part: str) -> str:
    """A short hash of ``part``'s rules: its modules' source and its libraries' versions (see RULE_PARTS).

    Raises:
        KeyError: an unknown part.
    """
    modules, dists = RULE_PARTS[part]
    digest = hashlib.sha256()
    for name in (m for pattern in modules for m in _expand(pattern)):
        digest.update(name.encode() + b"\0" + _module_source(name) + b"\0")
    for dist in dists:
        digest.update(f"{dist}={_distribution(dist)}".encode() + b"\0")
    return digest.hexdigest()[:6]


def short_hash(text: str, length: int = 6) -> str:
    """A stable short content hash, e.g. of a prompt template."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def make_signature(kind: str, **fields: object) -> str:
    """``kind|key:value|...|v:VERSION`` with fields in the order given (None fields left out)."""
    parts = [kind]
    for key, value in fields.items():
        if value is None:
            continue
        parts.append(f"{key}:{value}")
    parts.append(f"v:{package_version()}")
    return "|".join(parts)


def evidence_signature(fields: Mapping[str, object]) -> str | None:
    """``bm25-auto-p100`` from a strategy's record fields (None without evidence: no signature field).

    Retriever, evidence tokens per merged summary (``auto``: each summary's own budget) and
    passage size, so runs with other evidence never sign alike.
    """
    method = fields.get("evidence")
    if method is None:
        return None
    tokens = fields.get("evidence_tokens")
    return f"{method}-{tokens if tokens is not None else 'auto'}-p{fields.get('evidence_passage_tokens')}"


def wrap_signature(text: str, width: int) -> list[str]:
    """``text`` (a signature, or a line that holds one) as lines of at most ``width`` characters,
    broken only right after a ``|``: never inside a field, so the lines copied from a terminal and
    joined are the signature again. A field longer than ``width`` is a line of its own; the spaces
    after a ``|`` that ends a line (``a  |  b``) are dropped."""
    fields = text.split("|")
    tokens = [field + "|" for field in fields[:-1]] + [fields[-1]]
    lines: list[str] = []
    current = ""
    for token in tokens:
        if current and len(current) + len(token) > width:
            lines.append(current)
            current = token.lstrip(" ")
        else:
            current += token
    lines.append(current)
    return lines


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of :func:`make_signature`: ``{"kind": ..., key: value, ...}``."""
    kind, *rest = signature.split("|")
    fields = {"kind": kind}
    for part in rest:
        key, _, value = part.partition(":")
        fields[key] = value
    return fields


def detector_signature() -> str:
    """Signature of failure-mode counts: the detectors' rules (their modules, splitter, words) and version."""
    return make_signature("failures", rules=rules_version("detect"))
