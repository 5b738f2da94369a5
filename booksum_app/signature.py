"""Signature strings: every score and artifact says exactly how it was made (sacrebleu style).

``booookscore|judge:gpt-4o|prompt:j4-3f2a9c|mode:sentence|split:punkt-en|splitv:1a2b3c|temp:0|v:0.3.0``
Two numbers are comparable only when their signatures match.

The parts of booksum whose rules move numbers carry a rules version (:func:`rules_version`): a
short hash of the source of the modules that compute the number and of every module of
``booksum_app`` they import, transitively (found from their imports, :func:`rule_modules`: no
hand list to forget), the data files of an imported package (the built-in prompt templates),
and the versions of the libraries they run (NLTK's Punkt, jieba's dictionary). So a signature
changes whenever the sentence splitter, the word segmentation, the detectors, the chunker, the
answer cut-off rule (``compression/validity.py``), a template or the ROUGE arithmetic change,
even between releases. A plugin signs its package's code the same way (:func:`code_hash`), so
a plugin changed without a version bump signs apart. The package version (``v:``) is the
running code's ``booksum_app.__version__``, not the installed distribution's metadata.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import threading
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from booksum_app._version import __version__

# part -> (the modules that compute its numbers, distributions whose version changes its output);
# every booksum_app module they import, transitively, is signed with them (rule_modules)
RULE_PARTS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "split": (("booksum_app.chunking.sentences",), ("nltk",)),  # sentence splitter (Punkt, Chinese rules)
    # n-gram words: English is split into Punkt sentences before NLTK's word tokenizer
    "words": (("booksum_app.scoring.words",), ("nltk", "jieba")),
    "rouge": (("booksum_app.scoring.rouge",), ("jieba",)),
    # every scoring/detector*.py (detectors.py, detector_rules.py and any rule module added beside them)
    "detect": (("booksum_app.scoring.detector*",), ("nltk", "jieba")),
    # where a summary's text is cut: chunk ends, head/tail truncation, an answer's cut-off (validity)
    "chunk": (("booksum_app.chunking.chunker", "booksum_app.compression.validity"), ("nltk",)),
}
PACKAGE = "booksum_app"
# imported by the rules, but holding none: the version (signed as v:), this module, error messages
NOT_RULES = frozenset({"booksum_app._version", "booksum_app.signature", "booksum_app.errors"})
_PARSE_LOCK = threading.Lock()


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


@functools.lru_cache(maxsize=1024)
def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def module_imports(name: str) -> set[str]:
    """The ``booksum_app`` modules ``name`` imports when it runs (at the top or in a function; not
    under ``if TYPE_CHECKING:``), read from its source: ``from pkg import mod`` counts ``pkg.mod``."""
    return set(_imports_in(name, _module_source(name)))


@functools.lru_cache(maxsize=512)
def _imports_in(name: str, source: bytes) -> frozenset[str]:
    """:func:`module_imports` of this source (parsed once per source)."""
    if not source:
        return frozenset()
    with _PARSE_LOCK:  # CPython 3.11's parser is not thread-safe (compare signs books on many threads)
        tree = ast.parse(source)
    for node in ast.walk(tree):  # type-only imports run nothing
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    spec = importlib.util.find_spec(name)
    package = name if spec is not None and spec.submodule_search_locations is not None else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[:len(parts) - node.level + 1], *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return frozenset(m for m in found if (m == PACKAGE or m.startswith(PACKAGE + ".")) and _is_module(m))


def rule_modules(roots: tuple[str, ...]) -> list[str]:
    """The modules ``roots`` (``pkg.prefix*`` patterns allowed) run, with every ``booksum_app``
    module they import, transitively, less :data:`NOT_RULES`; sorted."""
    seen: set[str] = set()
    todo = [m for pattern in roots for m in _expand(pattern)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(module_imports(name) - seen)
    return sorted(seen - NOT_RULES)


def _package_data(name: str) -> list[tuple[str, bytes]]:
    """The data files (``.txt``, ``.json``) a package below ``booksum_app`` ships, e.g. a prompt set's
    templates, by relative path; a subpackage's own files are its own."""
    spec = importlib.util.find_spec(name)
    if name == PACKAGE or spec is None or spec.submodule_search_locations is None:
        return []
    files = []
    for folder in spec.submodule_search_locations:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not Path(root, d, "__init__.py").is_file())
            files += [(Path(root, f).relative_to(folder).as_posix(), Path(root, f).read_bytes())
                      for f in sorted(names) if Path(f).suffix in (".txt", ".json")]
    return files


@functools.cache
def rules_version(part: str) -> str:
    """A short hash of ``part``'s rules: the source of the modules that compute it and of every
    module they import (:func:`rule_modules`), the imported packages' data files, and its
    libraries' versions (see RULE_PARTS).

    Raises:
        KeyError: an unknown part.
    """
    roots, dists = RULE_PARTS[part]
    digest = hashlib.sha256()
    for name in rule_modules(roots):
        digest.update(name.encode() + b"\0" + _module_source(name) + b"\0")
        for path, data in _package_data(name):
            digest.update(f"{name}/{path}".encode() + b"\0" + data + b"\0")
    for dist in dists:
        digest.update(f"{dist}={_distribution(dist)}".encode() + b"\0")
    return digest.hexdigest()[:6]


MAX_CODE_FILES = 2000  # a plugin package is a few modules; past this the hash reads no more


def code_hash(module: str) -> str:
    """A short hash of the code of the package ``module`` belongs to: every ``.py`` file under its
    top-level package (or the module's own file), so a plugin whose code changed signs apart even
    when its version did not. ``"nosource"`` when the code cannot be read."""
    top = module.partition(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return "nosource"
    if spec.submodule_search_locations is not None:
        files = sorted((p.relative_to(folder).as_posix(), p) for folder in spec.submodule_search_locations
                       for p in Path(folder).rglob("*.py"))[:MAX_CODE_FILES]
    elif spec.origin is not None and spec.origin.endswith(".py"):
        files = [(Path(spec.origin).name, Path(spec.origin))]
    else:
        return "nosource"
    return _files_hash(tuple((rel, str(path), *_stamp(path)) for rel, path in files))


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _files_hash(files: tuple[tuple[str, str, int, int], ...]) -> str:
    """The hash of these files' names and bytes (cached by path, mtime and size: edited files hash anew)."""
    digest = hashlib.sha256()
    for rel, path, _, _ in files:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = b""
        digest.update(rel.encode() + b"\0" + data + b"\0")
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
