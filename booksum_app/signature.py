"""Signature strings: every score and artifact says exactly how it was made (sacrebleu style).

``booookscore|judge:gpt-4o|prompt:j4-3f2a9c|mode:sentence|split:punkt-en|temp:0|v:0.1.0``
Two numbers are comparable only when their signatures match.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    """Installed version of booksum, or the source tree's when not installed."""
    try:
        return version("booksum")
    except PackageNotFoundError:
        return "0.1.0"


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


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of :func:`make_signature`: ``{"kind": ..., key: value, ...}``."""
    kind, *rest = signature.split("|")
    fields = {"kind": kind}
    for part in rest:
        key, _, value = part.partition(":")
        fields[key] = value
    return fields
