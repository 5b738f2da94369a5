"""``cache --import`` refuses a hostile line whole, and ``cache`` / ``logs`` survive any stored row.

Every field of an exported answer, generated out of range, of the wrong type, NaN or infinite,
huge, nested deep or given twice: the import stores nothing, says the line (and the field, when
the line parses), exits 2, and the cache keeps working. Rows another writer left in the
database are left out with one line. A large export imports in flat memory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cache_answers import keyed
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booksum_app.cli import cli
from booksum_app.errors import InputError
from booksum_app.llm.base import Request
from booksum_app.llm.cache import CACHE_FILENAME, CallCache
from booksum_app.llm.cache_export import EXPORT_KIND, export_answers, import_answers
from booksum_app.llm.cache_rows import INTS, MAX_TOKENS, NAMES, OPTIONAL_NAMES, OPTIONAL_TEXTS, TEXTS, TIMES
from booksum_app.llm.call_log import read_log
from booksum_app.llm.calls import Client
from booksum_app.llm.request_key import request_json, request_key
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO, FakeBackend

REPO = Path(__file__).resolve().parents[1]
NOW = 1_750_000_000.0
PARSE_LEVEL = ("nested too deeply", "number too long", "twice in one object", "not valid JSON")


def _row(n: int, **changes: Any) -> dict[str, Any]:
    key, request = keyed(n)
    row = {"kind": EXPORT_KIND, "key": key, "text": f"Answer {n}.", "finish_reason": "stop",
           "model": "gpt-4o-mini", "purpose": "judge", "input_tokens": 100 + n, "output_tokens": 20,
           "cached_input_tokens": 64, "cache_write_input_tokens": 0, "created": NOW + n, "latency_s": 0.5,
           "request": request, "model_string": "openai:gpt-4o-mini", "run": "r1", "book": "b.txt"}
    row.update(changes)
    return row


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False)  # NaN and Infinity as Python writes them


HUGE = st.one_of(st.integers(min_value=2**63 - 1, max_value=2**200),
                 st.integers(min_value=-(2**200), max_value=-(2**63)))
NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
WRONG_TYPE = st.one_of(st.none(), st.booleans(), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def _hostile_value(field: str) -> st.SearchStrategy[Any]:
    if field in INTS:
        return st.one_of(HUGE, NOT_FINITE, WRONG_TYPE, st.text(max_size=5), st.floats(allow_nan=False),
                         st.integers(min_value=MAX_TOKENS + 1), st.integers(max_value=-1))
    if field in TIMES:
        return st.one_of(HUGE, NOT_FINITE, WRONG_TYPE, st.text(max_size=5), st.floats(max_value=-1e-9),
                         st.floats(min_value=1e11, allow_infinity=False), st.integers(max_value=-1))
    if field in OPTIONAL_NAMES + OPTIONAL_TEXTS:
        return st.one_of(st.booleans(), st.integers(), NOT_FINITE, st.lists(st.text(max_size=2), max_size=2))
    return st.one_of(WRONG_TYPE, st.integers(), NOT_FINITE)  # names and text: never a number or a list


FIELDS = (*NAMES, *TEXTS, *INTS, *TIMES, *OPTIONAL_NAMES, *OPTIONAL_TEXTS)


@st.composite
def hostile_lines(draw: st.DrawFn) -> tuple[str, str]:
    """(a line no cache may store, the field it names or a parse-level word)."""
    how = draw(st.sampled_from(["field", "field", "field", "deep", "duplicate", "digits", "unknown", "missing"]))
    field = draw(st.sampled_from(FIELDS))
    row = _row(99)
    if how == "field":
        row[field] = draw(_hostile_value(field))
        return _line(row), field
    if how == "deep":
        depth = draw(st.integers(min_value=5_000, max_value=100_000))
        return _line(row)[:-1] + f', "{field}": ' + "[" * depth + "]" * depth + "}", "nested too deeply"
    if how == "duplicate":
        value = json.dumps(row[field])
        return _line(row)[:-1] + f', "{field}": {value}' + "}", "twice in one object"
    if how == "digits":
        return _line(row)[:-1].replace(f'"{field}": {json.dumps(row[field])}', f'"{field}": 1{"0" * 5000}') + "}", (
            "number too long")
    if how == "unknown":
        row["surprise"] = draw(st.integers())
        return _line(row), "surprise"
    del row[field]
    return _line(row), field


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=hostile_lines(), before=st.integers(0, 4), after=st.integers(0, 2))
def test_a_hostile_line_stores_nothing_and_names_itself(tmp_path: Path, bad: tuple[str, str], before: int,
                                                        after: int) -> None:
    line, named = bad
    path = tmp_path / "answers.jsonl"
    good = [_line(_row(n)) for n in range(before + after)]
    path.write_text("\n".join([*good[:before], line, *good[before:]]) + "\n", encoding="utf-8")
    cache = CallCache(tmp_path / "c")
    try:
        stored = len(cache)
        with pytest.raises(InputError) as refused:
            import_answers(cache, path)
        message = str(refused.value)
        assert f"line {before + 1}" in message and named in message and "\n" not in message
        assert len(cache) == stored, "nothing of the file is stored"
        assert cache.stats().out_of_range == 0
    finally:
        cache.close()
    log = read_log(tmp_path / "c")
    assert log is None or log.out_of_range == 0


def test_every_generated_field_value_in_range_imports(tmp_path: Path) -> None:
    """The other side of the rule: the edges themselves are answers."""
    rows = [_row(1, input_tokens=MAX_TOKENS, cached_input_tokens=MAX_TOKENS - 1, cache_write_input_tokens=1),
            _row(2, created=0, latency_s=0, model_string=None, run=None, book=None),
            _row(3, output_tokens=0, cached_input_tokens=0, text="好。")]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(_line(r) for r in rows) + "\n", encoding="utf-8")
    cache = CallCache(tmp_path / "c")
    try:
        assert import_answers(cache, path) == (3, 3) and len(cache) == 3
    finally:
        cache.close()


ISSUE_LINES = {  # the report's cases, each after a good line
    "created 1e308": _line(_row(7, created=1e308)),
    "created -1e18": _line(_row(7, created=-1e18)),
    "tokens 2^63": _line(_row(7, output_tokens=2**63)),
    "NaN": _line(_row(7, created=math.nan)),
    "deep": '{"kind": "' + EXPORT_KIND + '", "text": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "duplicate key": _line(_row(7))[:-1] + ', "created": 1e308}',
}


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("case", list(ISSUE_LINES))
def test_the_cli_refuses_with_one_line_and_cache_and_logs_keep_working(tmp_path: Path, case: str) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(_line(_row(1)) + "\n" + ISSUE_LINES[case] + "\n", encoding="utf-8")
    cache_dir = str(tmp_path / "c")
    refused = _cli("cache", "--cache-dir", cache_dir, "--import", str(path))
    assert refused.exit_code == 2, refused.output
    assert "Traceback" not in refused.output and len(refused.stderr.strip().splitlines()) == 1
    assert "line 2" in refused.stderr
    for command in (["cache"], ["cache", "--json", "-"], ["logs"], ["logs", "--json", "-"]):
        after = _cli(*command, "--cache-dir", cache_dir)
        assert after.exit_code == 0 and "Traceback" not in after.output, (command, after.output)
    shown = json.loads(_cli("cache", "--cache-dir", cache_dir, "--json", "-").stdout)
    assert shown["answers"] == 0, "the good line before the bad one was not stored either"


def _store_raw(cache_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rows written past booksum (another tool, an older import): straight into SQLite."""
    CallCache(cache_dir).close()
    db = sqlite3.connect(cache_dir / CACHE_FILENAME)
    columns = [c for c in rows[0] if c != "kind"]
    with db:
        db.executemany(f"INSERT INTO calls ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       [tuple(r[c] for c in columns) for r in rows])
    db.close()


def test_rows_out_of_range_already_stored_are_left_out_with_one_line(tmp_path: Path) -> None:
    cache_dir = tmp_path / "c"
    _store_raw(cache_dir, [_row(1), _row(2, created=1e308), _row(3, created=-1e18), _row(4, output_tokens=2**62),
                           _row(5, output_tokens=2**62), _row(6, latency_s="slow"), _row(7, input_tokens=-5)])
    for command in (["cache"], ["logs"], ["logs", "-n", "0", "--json", "-"]):
        shown = _cli(*command, "--cache-dir", str(cache_dir))
        assert shown.exit_code == 0 and "Traceback" not in shown.output, (command, shown.output)
        assert "warning: 6 stored rows hold a field out of range" in " ".join(shown.stderr.split())
    stats = json.loads(_cli("cache", "--cache-dir", str(cache_dir), "--json", "-").stdout)
    assert stats["answers"] == 1 and stats["out_of_range_rows"] == 6
    assert stats["models"][0]["output_tokens"] == 20, "the good row's tokens, no overflowed sum"
    cache = CallCache(cache_dir)
    try:
        assert cache.get(_row(2)["key"]) is None, "never replayed"
        assert cache.get(_row(1)["key"]) is not None
    finally:
        cache.close()
    cleared = _cli("cache", "--cache-dir", str(cache_dir), "--clear", "--older-than", "36500", "--yes")
    assert cleared.exit_code == 0 and "removed 6 stored answers" in cleared.stderr
    assert json.loads(_cli("cache", "--cache-dir", str(cache_dir), "--json", "-").stdout)["answers"] == 1


_MEASURE = """
import resource, sys
from pathlib import Path
from booksum_app.llm.cache import CallCache
from booksum_app.llm.cache_export import import_answers
cache = CallCache(Path(sys.argv[1]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(import_answers(cache, Path(sys.argv[2])), base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
cache.close()
"""


@pytest.mark.slow
def test_a_large_export_imports_in_flat_memory(tmp_path: Path) -> None:
    """200 MB of answers: the import's peak memory grows by far less than the file (it read it whole)."""
    path, lines, size = tmp_path / "big.jsonl", 0, 0
    body = "The heir returns to the bakery and refuses to sell it. " * 360  # ~20 KB an answer
    with path.open("w", encoding="utf-8") as out:
        while size < 200 * 2**20:
            text = _line(_row(lines, text=f"{lines}: {body}")) + "\n"
            out.write(text)
            size += len(text)
            lines += 1
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(tmp_path / "c"), str(path)], env=env, check=True,
                          capture_output=True, text=True, timeout=240)
    counts, base_kib, peak_kib = done.stdout.rsplit(" ", 2)
    assert counts == f"({lines}, {lines})"
    growth_mib = (int(peak_kib) - int(base_kib)) / 1024
    assert growth_mib < 64, f"peak memory grew {growth_mib:.0f} MiB importing {size / 2**20:.0f} MiB"


def test_a_stored_request_that_is_not_json_reads_as_not_stored(tmp_path: Path) -> None:
    """call_log reads stored requests through jsonin: deep nesting or a huge number is one request
    shown as not stored, never a traceback of ``logs``."""
    cache_dir = tmp_path / "c"
    _store_raw(cache_dir, [_row(1, request="[" * 100_000 + "]" * 100_000), _row(2, request="1" + "0" * 5000),
                           _row(3), _row(4, request=7, run=5, book=b"\xff", model_string=3.5)])
    for command in (["logs"], ["logs", "--prompts", "--responses"]):
        table = _cli(*command, "-n", "0", "--cache-dir", str(cache_dir))
        assert table.exit_code == 0 and "Traceback" not in table.output, table.output
    shown = _cli("logs", "-n", "0", "--json", "-", "--prompts", "--responses", "--cache-dir", str(cache_dir))
    assert shown.exit_code == 0, shown.output
    requests = {call["response"]: call["prompt"] for call in json.loads(shown.stdout)}
    assert requests["Answer 1."] is None and requests["Answer 2."] is None
    assert requests["Answer 3."] == json.loads(_row(3)["request"])


# ---- a line's key must be the key of its own request ----------------------------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
BACKENDS = st.fixed_dictionaries({"kind": st.sampled_from(["openai", "anthropic", "ollama", "fake"]),
                                  "model": st.text(max_size=12),
                                  "base_url": st.none() | st.sampled_from(["server", "server:a100", "https://h/v1"])},
                                 optional={"reasoning_effort": st.sampled_from(["low", "high"])})
REQUESTS = st.builds(Request, prompt=TEXT, max_tokens=st.integers(1, 10**6), temperature=st.floats(0, 2),
                     top_p=st.floats(0, 1), system=st.none() | TEXT, shared_prefix=TEXT,
                     stop=st.lists(TEXT, max_size=2).map(tuple), sample_index=st.integers(0, 9),
                     stop_at_loop=st.sampled_from(["", "en", "zh"]))


@st.composite
def mismatched(draw: st.DrawFn) -> dict[str, Any]:
    """A line whose key is not its request's: another key, or the request changed under the key."""
    request, backend = draw(REQUESTS), draw(BACKENDS)
    row = _row(50, key=request_key(request, backend=backend), request=request_json(request, backend=backend))
    how = draw(st.sampled_from(["key", "other request", "backend", "option", "text"]))
    if how == "key":
        row["key"] = draw(st.sampled_from(["call-v1:", "", "x"])) + draw(st.text("0123456789abcdef", min_size=1,
                                                                              max_size=64))
    elif how == "other request":
        other = draw(REQUESTS.filter(lambda r: request_key(r, backend=backend) != row["key"]))
        row["request"] = request_json(other, backend=backend)
    elif how == "backend":
        other_backend = draw(BACKENDS.filter(lambda b: request_key(request, backend=b) != row["key"]))
        row["request"] = request_json(request, backend=other_backend)
    else:
        data = json.loads(row["request"])
        if how == "option":
            data["max_tokens"] += draw(st.integers(1, 100))
        else:
            data["messages"][-1]["content"] += draw(st.text(min_size=1, max_size=5))
        row["request"] = json.dumps(data, ensure_ascii=False)
    return row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=mismatched(), before=st.integers(0, 3))
def test_a_line_whose_key_is_not_its_requests_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                         bad: dict[str, Any], before: int) -> None:
    folder = tmp_path_factory.mktemp("keys")
    path = folder / "answers.jsonl"
    path.write_text("\n".join([*(_line(_row(n)) for n in range(before)), _line(bad), _line(_row(9))]) + "\n",
                    encoding="utf-8")
    cache = CallCache(folder / "c")
    try:
        with pytest.raises(InputError) as refused:
            import_answers(cache, path)
        message = str(refused.value)
        assert f"line {before + 1}:" in message and ("key" in message) and "\n" not in message
        assert len(cache) == 0, "nothing of the file is stored"
    finally:
        cache.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=st.lists(st.tuples(REQUESTS, BACKENDS), min_size=1, max_size=4))
def test_what_the_client_stores_exports_and_imports_whole(tmp_path_factory: pytest.TempPathFactory,
                                                          requests: list[tuple[Request, dict[str, Any]]]) -> None:
    """Answers stored by the call layer (its own key and request text) round-trip: every one exported,
    every one imported, each replayed under its own key."""
    folder = tmp_path_factory.mktemp("round")
    source = CallCache(folder / "a")
    keys = {}
    try:
        for n, (request, backend) in enumerate(requests):
            fake = FakeBackend(dataclasses.replace(FAKE_MODEL_INFO, name=backend["model"] or "m"),
                               reply=lambda r, n=n: f"answer {n}")
            fake.kind, fake.base_url = backend["kind"], backend["base_url"]  # what the key is made of
            fake.reasoning_effort = backend.get("reasoning_effort")
            with Client(fake, cache=source) as client:
                keys[client._key(request)] = client.complete(request).text
        written, left_out = export_answers(source, folder / "x.jsonl")
        assert (written, left_out) == (len(source), 0)
    finally:
        source.close()
    target = CallCache(folder / "b")
    try:
        assert import_answers(target, folder / "x.jsonl") == (written, written)
        for key, text in keys.items():
            got = target.get(key)
            assert got is not None and got.text == text
    finally:
        target.close()


def test_an_answer_stored_without_its_backend_is_left_out_of_an_export(tmp_path: Path) -> None:
    """An older booksum kept the request without the backend: the key cannot be checked, so the
    export leaves it out and says how many; the import of such a line is refused."""
    cache_dir = tmp_path / "c"
    _store_raw(cache_dir, [_row(1), _row(2, request='{"messages": []}'), _row(3, request=None)])
    exported = _cli("cache", "--cache-dir", str(cache_dir), "--export", str(tmp_path / "x.jsonl"))
    assert exported.exit_code == 0 and "exported 1 answers" in exported.stderr and "2 left out" in exported.stderr
    path = tmp_path / "old.jsonl"
    path.write_text(_line(_row(1)) + "\n" + _line(_row(3, request=None)) + "\n", encoding="utf-8")
    refused = _cli("cache", "--cache-dir", str(tmp_path / "d"), "--import", str(path))
    assert refused.exit_code == 2 and "line 2: request: missing" in " ".join(refused.stderr.split())


def test_the_reported_poisoned_line_is_refused(tmp_path: Path) -> None:
    """A line carrying one request's key with another answer's request: refused, the owner's key never poisoned."""
    victim_key, _ = keyed(1)
    _, other_request = keyed(2)
    path = tmp_path / "poison.jsonl"
    path.write_text(_line(_row(1, key=victim_key, request=other_request, text="POISONED ANSWER")) + "\n", "utf-8")
    refused = _cli("cache", "--cache-dir", str(tmp_path / "c"), "--import", str(path))
    assert refused.exit_code == 2 and "line 1: key: not the key of this line's request" in " ".join(
        refused.stderr.split())
    cache = CallCache(tmp_path / "c")
    try:
        assert cache.get(victim_key) is None
    finally:
        cache.close()
