"""A sample's id names its record file (issue 32): a 300-character id failed at the first record,
after the calls were paid, on every rerun. Every id now gives a file name that fits (cut, with a
hash of the whole id), distinct ids never share a record, and that holds before the first call."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare_datasets import en_context, write_jsonl

from booksum_app.cli import cli
from booksum_app.errors import InputError
from booksum_app.runners.datasets import MAX_NAME_BYTES, read_dataset
from booksum_app.runners.experiment import DatasetSpec
from booksum_app.testing.fake_server import FakeServer


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                                     min_size=1, max_size=400),
                    min_size=1, max_size=4, unique=True))
def test_every_id_gives_a_record_name_that_fits_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                            ids: list[str]) -> None:
    folder = tmp_path_factory.mktemp("d")
    path = write_jsonl(folder / "set.jsonl", [{"id": i, "context": en_context(n, 4), "summary": "S."}
                                              for n, i in enumerate(ids)])
    try:
        samples = read_dataset(DatasetSpec(path, "custom", id_field="id"))
    except InputError as exc:  # ids that differ only in what a file name cannot hold
        assert "name one record" in str(exc) and "\n" not in str(exc)
        return
    names = [s.path.stem for s in samples]
    assert len(set(names)) == len(names)
    for name in names:
        assert len(f"{name}.json".encode()) <= MAX_NAME_BYTES + 5
        (folder / f".{name}.json.12345.abcdefgh.tmp").write_text("x")  # the longest name a write makes


def test_a_300_character_id_runs_and_reruns_without_a_new_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    path = write_jsonl(tmp_path / "long.jsonl", [{"id": "x" * 300, "context": en_context(1, 8), "summary": "S."},
                                                 {"id": "x" * 299 + "y", "context": en_context(2, 8), "summary": "T."}])
    with FakeServer() as server:
        args = ["compare", "--dataset", str(path), "--id-field", "id", "--strategies", "direct", "--models",
                "openai:gpt-4o-mini", "--no-judge", "--base-url", server.openai_base_url, "--cache-dir",
                str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots", "--yes"]
        first = CliRunner().invoke(cli, args)
        assert first.exit_code == 0, first.output
        calls = server.call_count
        again = CliRunner().invoke(cli, args)
        assert again.exit_code == 0 and server.call_count == calls
    records = list((tmp_path / "out" / "records").rglob("*.json"))
    assert len(records) == 2
