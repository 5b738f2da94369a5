"""A comparison split over several drivers (``compare --shard I/N``) and put back together (``--merge``).

- Which books a shard runs: the grid's book files sorted by file name (names are unique in a
  grid, ``book_files`` refuses two of one stem), the k-th going to shard ``k mod N``. The same
  command line on every machine gives every shard the same list, whatever order the files
  were listed or found in, and the shards' sizes differ by one book at most.
- What a shard leaves: its records (``OUT/records/``, as any compare) and ``OUT/shard.json``,
  naming its place, every book of the grid, and the grid's fingerprint (every option that
  changes a record or a score; not the books, the output directory or ``--jobs``).
- Merging: a compare over the whole book list given ``--merge DIR`` for each shard copies the
  shards' records into its own output directory, after checking that the shards are the N
  parts of one grid with this compare's fingerprint, and the scores measured on each record
  (``OUT/scores/``, :mod:`booksum_app.runners.compare_scores`); it then reuses every record
  (their job keys match) and reads its scores instead of judging again, so it makes no call
  and its table is the one an unsharded run makes. A record without stored scores is judged
  from the call cache (answers move between machines with ``booksum cache --export`` /
  ``--import``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from booksum_app.errors import ConfigError, InputError
from booksum_app.files import files_in, write_json_atomic
from booksum_app.jsonin import read_json
from booksum_app.prompts import prompt_files
from booksum_app.runners.compare_scores import SCORES_DIR
from booksum_app.runners.experiment import Experiment

MANIFEST = "shard.json"
MANIFEST_KIND = "booksum.shard"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (0-based, as Slurm's array index and Kubernetes' JOB_COMPLETION_INDEX are) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/8"`` -> ``Shard(2, 8)``; anything else is refused with one line."""
    match = _SHARD.match(text)
    if match is None or not 0 <= int(match[1]) < int(match[2]):
        raise ConfigError(f"--shard {text!r}: give I/N with 0 <= I < N, e.g. 0/4 (shards are numbered from 0)")
    return Shard(int(match[1]), int(match[2]))


def shard_books(books: Sequence[Path], shard: Shard) -> tuple[Path, ...]:
    """The books of ``shard``, in the grid's order: the k-th by sorted file name goes to shard k mod N."""
    order = sorted(books, key=lambda p: (Path(p).name, str(p)))
    mine = {id(p) for k, p in enumerate(order) if k % shard.count == shard.index}
    return tuple(p for p in books if id(p) in mine)


def grid_fingerprint(exp: Experiment, judge: str | None) -> str:
    """A hash of every option that changes a record or a score: two shards with equal ones merge."""
    prompts: Any = exp.prompts
    if Path(exp.prompts).is_dir():  # a prompt directory: its files' bytes, not its path
        prompts = sorted((str(p.relative_to(exp.prompts)), hashlib.sha256(p.read_bytes()).hexdigest())
                         for p in prompt_files(Path(exp.prompts)))
    fields = {
        "strategies": list(exp.strategies), "models": list(exp.models), "chunk_sizes": list(exp.chunk_sizes),
        "G": exp.max_summary_tokens, "judge": judge if exp.use_judge else None, "judge_mode": exp.judge_mode,
        "batch_size": exp.batch_size, "prompts": prompts, "lang": exp.lang, "clean": exp.clean,
        "chapter_aware": exp.chapter_aware, "front_matter": exp.include_front_matter,
        "options": [[name, list(values)] for name, values in exp.options],
        "bucket_max_tokens": [list(b) for b in exp.bucket_max_tokens],
        **({} if exp.temperature is None else {"temperature": exp.temperature}),  # absent: older shards merge
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]


def write_manifest(out: Path, shard: Shard, exp: Experiment, all_books: Sequence[Path], fingerprint: str) -> Path:
    """``OUT/shard.json``: this shard's place, the whole grid's books and its fingerprint."""
    path = Path(out) / MANIFEST
    write_json_atomic(path, {
        "kind": MANIFEST_KIND, "index": shard.index, "count": shard.count, "grid": fingerprint,
        "books": sorted(Path(p).name for p in all_books), "shard_books": sorted(p.name for p in exp.books),
    })
    return path


@dataclass(frozen=True)
class MergeReport:
    shards: int
    records: int  # record files copied into the merging compare's output directory


def merge_shards(dirs: Sequence[Path], *, out: Path, books: Sequence[Path], fingerprint: str) -> MergeReport:
    """Check that ``dirs`` are the finished N shards of this grid, then copy their records into ``out``.

    Raises:
        ConfigError: a directory is not a finished shard, or the shards are not this grid's N parts.
    """
    manifests = [_read_manifest(Path(d)) for d in dirs]
    for directory, manifest in zip(dirs, manifests, strict=True):
        if manifest["grid"] != fingerprint:
            raise ConfigError(f"shard {directory} ran other settings (grid {manifest['grid']}) than this compare "
                              f"(grid {fingerprint}); merge only shards run with the same options")
        if manifest["books"] != sorted(Path(p).name for p in books):
            raise ConfigError(f"shard {directory} was cut from another book list than this compare's; give the "
                              "same BOOKS to every shard and to the merge")
        if manifest.get("shard_books") and not (Path(directory) / "results.json").is_file():
            raise ConfigError(f"shard {directory} did not finish (no results.json); rerun it (it resumes) first")
    counts = {m["count"] for m in manifests}
    if len(counts) != 1:
        raise ConfigError(f"the shards were cut {' and '.join(str(c) for c in sorted(counts))} ways; merge one split")
    count = counts.pop()
    seen = [m["index"] for m in manifests]
    missing = sorted(set(range(count)) - set(seen))
    twice = sorted({i for i in seen if seen.count(i) > 1})
    if twice:
        raise ConfigError(f"shard {twice[0]}/{count} is given twice; give each shard's directory once")
    if missing:
        raise ConfigError(f"shards {', '.join(f'{i}/{count}' for i in missing)} are missing; run them and "
                          "merge all N")
    copied = 0
    for directory in dirs:
        # the records, and what was measured on them (read back instead of judged again); no link out of a shard
        for kind in ("records", SCORES_DIR):
            base = Path(directory) / kind
            folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
            for folder in folders:
                if not folder.resolve().is_relative_to(base.resolve()):
                    raise ConfigError(f"{folder} is a link out of shard {directory}; links are not followed out of it")
            sources = [f for folder in folders for f in files_in(folder, suffixes=(".json",), what=f"shard {kind}")]
            for source in sources:
                done = _copy(source, Path(out) / kind / source.parent.name / source.name)
                copied += done if kind == "records" else 0
    return MergeReport(shards=len(dirs), records=copied)


def _copy(source: Path, target: Path) -> int:
    """Copy atomically (1), or nothing when ``target`` is ``source`` (0)."""
    if target.resolve() == source.resolve():
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    shutil.copyfile(source, partial)
    os.replace(partial, target)  # a reader never sees half a file
    return 1


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        raise ConfigError(f"{directory} holds no {MANIFEST}: not the output of compare --shard")
    try:
        data = read_json(path, what="shard manifest")
    except InputError as exc:  # deep nesting, a duplicate key, not JSON: one line, exit 2
        raise ConfigError(f"{exc}; rerun that shard") from None
    keys = ("index", "count", "grid", "books")
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND or any(k not in data for k in keys):
        raise ConfigError(f"{path} is not a booksum shard manifest")
    return data


__all__ = ["MANIFEST", "MergeReport", "Shard", "grid_fingerprint", "merge_shards", "parse_shard", "shard_books",
           "write_manifest"]
