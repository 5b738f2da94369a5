"""JSON from outside is read one way (booksum_app.jsonin): generated deep nesting, duplicate keys,
numbers past a float and integers past Python's conversion limit end, through every reader, in
one line and exit 2 (issue 32); no other module calls ``json.loads`` (ruff's TID251)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import BooksumError, InputError
from booksum_app.jsonin import parse_json, parse_json_or_none, read_json

REPO = Path(__file__).resolve().parents[1]


def _wrap(inner: str, depth: int, as_object: bool) -> str:
    opener, closer = ('{"k": ', "}") if as_object else ("[", "]")
    return opener * depth + inner + closer * depth


@st.composite
def hostile_json(draw: st.DrawFn) -> tuple[str, str]:
    """(JSON text, the words the one-line refusal must hold)."""
    kind = draw(st.sampled_from(["deep", "duplicate", "huge float", "constant", "long int"]))
    depth = draw(st.integers(0, 50))
    as_object = draw(st.booleans())
    if kind == "deep":
        return _wrap("1", draw(st.integers(5_000, 120_000)), as_object), "nested too deeply"
    if kind == "duplicate":
        key = draw(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8))
        import json

        k = json.dumps(key)
        return _wrap(f'{{{k}: 1, "other": [2], {k}: 3}}', depth, as_object), "twice"
    if kind == "huge float":
        sign = draw(st.sampled_from(["", "-"]))
        exponent = draw(st.integers(309, 10_000))
        return _wrap(f"{sign}{draw(st.integers(1, 9))}.5e{exponent}", depth, as_object), "too large for a float"
    if kind == "constant":
        return _wrap(draw(st.sampled_from(["NaN", "Infinity", "-Infinity"])), depth, as_object), "not a JSON number"
    return _wrap("7" * draw(st.integers(4_301, 20_000)), depth, as_object), "too long"


def _one_line(message: str) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message


@settings(max_examples=120, deadline=None)
@given(hostile_json())
def test_parse_json_refuses_every_hostile_shape_in_one_line(case: tuple[str, str]) -> None:
    text, words = case
    with pytest.raises(InputError, match=words) as caught:
        parse_json(text, where="reply")
    _one_line(str(caught.value))
    assert parse_json_or_none(text) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=hostile_json())
def test_every_file_reader_refuses_with_one_line(tmp_path: Path, case: tuple[str, str]) -> None:
    from booksum_app.runners.datasets import _rows
    from booksum_app.runners.shard import MANIFEST, _read_manifest
    from booksum_app.scoring.release import read_summaries
    from booksum_app.strategies.record import read_record

    text, words = case
    path = tmp_path / "in.json"
    path.write_text(text, encoding="utf-8")
    lines = tmp_path / "set.jsonl"
    lines.write_text('{"context": "a", "summary": "b"}\n' + text + "\n", encoding="utf-8")
    shard = tmp_path / "shard"
    shard.mkdir(exist_ok=True)
    (shard / MANIFEST).write_text(text, encoding="utf-8")
    readers: list[Callable[[], Any]] = [
        lambda: read_json(path, what="summaries"), lambda: read_summaries(path), lambda: read_record(path),
        lambda: _rows(lines), lambda: _read_manifest(shard),
    ]
    for read in readers:
        with pytest.raises(BooksumError, match=words) as caught:
            read()
        assert caught.value.exit_code == 2
        _one_line(str(caught.value))


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"kind": "booksum.shard", "kind": "booksum.shard", "index": 0, "count": 1, "grid": "x", "books": []}',
    '{"kind": "booksum.shard", "index": 1e400, "count": 1, "grid": "x", "books": []}',
])
def test_compare_merge_of_a_hostile_manifest_is_one_line_and_exit_2(tmp_path: Path, text: str) -> None:
    from booksum_app.runners.shard import MANIFEST

    book = tmp_path / "book.txt"
    book.write_text("Chapter 1\n\nMara bakes bread. Teo sells it.\n", encoding="utf-8")
    shard = tmp_path / "shard"
    shard.mkdir()
    (shard / MANIFEST).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(book), "--strategies", "direct", "--models", "mock",
                                      "--no-judge", "--out", str(tmp_path / "out"), "--merge", str(shard),
                                      "--no-plots", "--yes"])
    assert result.exit_code == 2, result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, RecursionError)


@pytest.mark.parametrize("text, words", [
    ('{"a.epub": "Mara bakes.", "a.epub": "Teo sells."}', "twice"),
    ('{"a.epub": "Mara bakes.", "b.epub": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
])
def test_score_refuses_a_hostile_summaries_file_in_one_line(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["score", str(path), "--no-judge"])
    assert result.exit_code == 2 and words in " ".join(result.output.split()), result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1


def test_a_judge_answer_nested_too_deeply_is_unparseable_not_a_recursion_error() -> None:
    from booksum_app.errors import JudgeParseError
    from booksum_app.scoring.answers import parse_batch_answer

    with pytest.raises(JudgeParseError, match="no JSON list"):  # retried, then counted unparseable
        parse_batch_answer("[" * 100_000 + "]" * 100_000, 2)


def test_no_module_but_jsonin_calls_json_loads() -> None:
    """ruff's banned-API rule (TID251) is what keeps it so; a probe file proves the rule is on."""
    probe = REPO / "booksum_app" / "_json_probe_for_test.py"
    probe.write_text("import json\n\nVALUE = json.loads('1')\n", encoding="utf-8")
    try:
        found = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "TID251", "booksum_app"],
                               cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    finally:
        probe.unlink()
    assert "_json_probe_for_test.py" in found.stdout and "TID251" in found.stdout
    assert found.stdout.count("TID251") == 1, found.stdout
