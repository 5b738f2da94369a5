"""compare --shard I/N run as N processes, merged with --merge: the table an unsharded run makes (issue 27)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_compare import write_book

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.runners.experiment import Experiment
from booksum_app.runners.shard import Shard, grid_fingerprint, parse_shard, shard_books
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
VOLATILE = {"wall_s", "record", "reused", "cache_hits", "spent_usd"}  # time, paths, and what this run paid


def grid(books: list[Path], server: FakeServer, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["compare", *map(str, books), "--strategies", "hier,direct", "--models", "openai:gpt-4o-mini",
            "--judge", "openai:gpt-4o-mini",
            "--chunk-sizes", "256", "--max-summary-len", "120", "--base-url", server.openai_base_url,
            "--cache-dir", str(cache), "--out", str(out), "--no-plots", "--yes", *extra]


def stable(value: Any) -> Any:
    """results.json without what differs between two runs of one grid (time, record paths, cache hits)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def test_shard_parsing_and_assignment() -> None:
    assert parse_shard("2/8") == Shard(2, 8) and str(parse_shard(" 0 / 1 ")) == "0/1"
    for bad in ("8/8", "-1/2", "1", "a/b", "1/0"):
        with pytest.raises(ConfigError, match="0 <= I < N"):
            parse_shard(bad)
    books = [Path(f"d{i % 2}/book-{name}.txt") for i, name in enumerate("edcba")]
    parts = [shard_books(books, Shard(i, 2)) for i in range(2)]
    by_name = sorted(p.name for p in books)
    assert [p.name for p in parts[0]] == ["book-e.txt", "book-c.txt", "book-a.txt"], "grid order kept"
    assert sorted(p.name for part in parts for p in part) == by_name, "every book in exactly one shard"
    assert {p.name for p in parts[1]} == {by_name[1], by_name[3]}, "the k-th by file name goes to shard k mod N"
    assert shard_books(list(reversed(books)), Shard(1, 2)) == tuple(reversed(parts[1])), "listing order is irrelevant"


def test_the_fingerprint_changes_with_what_changes_a_score() -> None:
    base = Experiment(books=(Path("a.txt"),), models=("openai:gpt-4o-mini",))
    same = Experiment(books=(Path("b.txt"),), models=("openai:gpt-4o-mini",), out=Path("elsewhere"), jobs=9)
    assert grid_fingerprint(base, "openai:gpt-4o") == grid_fingerprint(same, "openai:gpt-4o")
    assert grid_fingerprint(base, "openai:gpt-4o") != grid_fingerprint(base, "openai:gpt-4o-mini")
    longer = Experiment(books=(Path("a.txt"),), models=("openai:gpt-4o-mini",), max_summary_tokens=300)
    assert grid_fingerprint(base, None) != grid_fingerprint(longer, None)


@pytest.mark.slow
def test_three_shard_processes_merged_equal_the_unsharded_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    folder = tmp_path / "books"
    folder.mkdir()
    books = [write_book(folder / f"book-{n}.txt", seed=n, chapters=2) for n in (1, 2, 3, 4, 5)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with FakeServer() as server:
        whole = CliRunner().invoke(cli, grid(books, server, tmp_path / "whole", tmp_path / "cache-whole"))
        assert whole.exit_code == 0, whole.output
        # three shards at once, each its own process and its own call cache (as on three machines)
        procs = [subprocess.Popen([sys.executable, "-m", "booksum_app", *grid(
            books, server, tmp_path / f"shard-{i}", tmp_path / f"cache-{i}", "--shard", f"{i}/3")],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(3)]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err.decode()
        manifests = [json.loads((tmp_path / f"shard-{i}" / "shard.json").read_text()) for i in range(3)]
        assert sorted(b for m in manifests for b in m["shard_books"]) == [b.name for b in books]
        assert [len(m["shard_books"]) for m in manifests] == [2, 2, 1]
        # the shards' answers move to the merging machine's cache
        for i in range(3):
            exported = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / f"cache-{i}"),
                                                "--export", str(tmp_path / f"answers-{i}.jsonl")])
            assert exported.exit_code == 0, exported.output
        imports = [a for i in range(3) for a in ("--import", str(tmp_path / f"answers-{i}.jsonl"))]
        imported = CliRunner().invoke(cli, ["cache", "--cache-dir", str(tmp_path / "cache-merge"), *imports])
        assert imported.exit_code == 0, imported.output
        calls = server.call_count
        merges = [a for i in (2, 0, 1) for a in ("--merge", str(tmp_path / f"shard-{i}"))]
        merged = CliRunner().invoke(cli, grid(books, server, tmp_path / "merged", tmp_path / "cache-merge", *merges))
        assert merged.exit_code == 0, merged.output
        assert server.call_count == calls, "the merge made no call: records reused, judge answers imported"
    assert "(10 from finished records)" in merged.output
    one = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    other = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert stable(other["rows"]) == stable(one["rows"])
    assert [r["n_books"] for r in other["rows"]] == [5, 5]
    assert other["rows"][0]["booookscore"]["score"] is not None


def test_merge_refuses_shards_of_other_settings_missing_ones_and_unfinished_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    folder = tmp_path / "books"
    folder.mkdir()
    books = [write_book(folder / f"book-{n}.txt", seed=n, chapters=1) for n in (1, 2)]
    with FakeServer() as server:
        for i in range(2):
            done = CliRunner().invoke(cli, grid(books, server, tmp_path / f"s{i}", tmp_path / "c", "--shard",
                                                f"{i}/2", "--no-judge"))
            assert done.exit_code == 0, done.output

        def merge(*extra: str, of: list[Path] = books) -> str:
            result = CliRunner().invoke(cli, grid(of, server, tmp_path / "m", tmp_path / "c", *extra))
            assert result.exit_code == 2, result.output
            return " ".join(result.output.split())

        assert "ran other settings" in merge("--merge", str(tmp_path / "s0"), "--merge", str(tmp_path / "s1"))
        both = ("--merge", str(tmp_path / "s0"), "--merge", str(tmp_path / "s1"), "--no-judge")
        assert "shards 1/2 are missing" in merge("--merge", str(tmp_path / "s0"), "--no-judge")
        assert "given twice" in merge(*both[:2], *both[:2], "--no-judge")
        assert "another book list" in merge(*both, of=books[:1])
        (tmp_path / "s1" / "results.json").unlink()
        assert "did not finish" in merge(*both)
        assert "not the output of compare --shard" in merge("--merge", str(folder), "--no-judge")
        assert "one or the other" in merge("--shard", "0/2", *both)


def test_more_shards_than_books_leaves_empty_shards_that_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    folder = tmp_path / "books"
    folder.mkdir()
    books = [write_book(folder / f"book-{n}.txt", seed=n, chapters=1) for n in (1, 2)]
    with FakeServer() as server:
        for i in range(3):
            done = CliRunner().invoke(cli, grid(books, server, tmp_path / f"s{i}", tmp_path / "c", "--shard",
                                                f"{i}/3", "--no-judge"))
            assert done.exit_code == 0, done.output
        assert "shard 2/3 has no book" in " ".join(done.output.split())
        calls = server.call_count
        merges = [a for i in range(3) for a in ("--merge", str(tmp_path / f"s{i}"))]
        merged = CliRunner().invoke(cli, grid(books, server, tmp_path / "m", tmp_path / "c", "--no-judge", *merges))
        assert merged.exit_code == 0, merged.output
        assert server.call_count == calls and "merged 4 records of 3 shards" in " ".join(merged.output.split())


def test_a_merge_reads_the_shards_scores_and_makes_no_call_with_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shards' scores (OUT/scores/) come with their records: no judge call, no cache needed."""
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    folder = tmp_path / "books"
    folder.mkdir()
    books = [write_book(folder / f"book-{n}.txt", seed=n, chapters=2) for n in (1, 2, 3)]
    with FakeServer() as server:
        whole = CliRunner().invoke(cli, grid(books, server, tmp_path / "whole", tmp_path / "cache-whole"))
        assert whole.exit_code == 0, whole.output
        for i in range(2):
            part = CliRunner().invoke(cli, grid(books, server, tmp_path / f"shard-{i}", tmp_path / f"cache-{i}",
                                                "--shard", f"{i}/2"))
            assert part.exit_code == 0, part.output
        calls = server.call_count
        merges = [a for i in range(2) for a in ("--merge", str(tmp_path / f"shard-{i}"))]
        merged = CliRunner().invoke(cli, grid(books, server, tmp_path / "merged", tmp_path / "cache-empty", *merges))
        assert merged.exit_code == 0, merged.output
        assert server.call_count == calls, "budget: a merge makes 0 calls (it reads the shards' scores)"
    one = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    other = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert stable(other["rows"]) == stable(one["rows"])
    assert other["rows"][0]["booookscore"]["score"] is not None
