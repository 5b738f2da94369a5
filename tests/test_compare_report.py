"""compare writes the HTML report score --report writes, and its annotations rescore under the real judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_compare import write_book

from booksum_app.cli import cli
from booksum_app.testing.fake_server import FakeServer


def test_compare_report_and_rescored_annotations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = write_book(tmp_path / "book-1.txt", seed=1)
    out = tmp_path / "out"
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "compare", str(book), "--strategies", "hier,direct", "--models", "openai:gpt-4o-mini",
            "--chunk-sizes", "256", "--max-summary-len", "120", "--base-url", server.openai_base_url,
            "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--judge", "openai:gpt-4o-mini",
            "--no-plots", "--yes"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["rows"]
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "report.html" in result.stderr
    for row in rows:
        assert row["name"] in report and row["booookscore"]["signature"] in report
    name, signature = rows[0]["name"], rows[0]["booookscore"]["signature"]
    annotations = out / "annotations" / f"{name}.json"
    args = ["score", str(out / "summaries" / f"{name}.json"), "--annotations", str(annotations), "--json", "-"]
    rescored = json.loads(CliRunner().invoke(cli, args, catch_exceptions=False).stdout)["systems"][0]["booookscore"]
    assert rescored["signature"] == signature and "release-annotations" not in rescored["signature"]
    assert rescored["score"] == pytest.approx(rows[0]["booookscore"]["score"])
    data = json.loads(annotations.read_text(encoding="utf-8"))
    book_key = next(iter(data))
    data[book_key] = None  # edited by hand: no longer what the judge wrote
    annotations.write_text(json.dumps(data), encoding="utf-8")
    edited = json.loads(CliRunner().invoke(cli, args, catch_exceptions=False).stdout)["systems"][0]["booookscore"]
    assert "judge:release-annotations" in edited["signature"]
