"""One vocabulary of options: --judge-mode everywhere (--mode a hidden alias), score --model names
--judge, summarize --plan-only, inspect --strategy, --temperature on summarize and compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from booksum_app.cli import cli
from booksum_app.testing.fake_server import FakeServer


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. Teo sells it. " * 80, encoding="utf-8")
    return book


def _summary(tmp_path: Path) -> Path:
    summary = tmp_path / "s.txt"
    summary.write_text("Mara bakes bread. Teo sells it. The bakery stays.", encoding="utf-8")
    return summary


@pytest.mark.parametrize("command", ["score", "compare"])
def test_judge_mode_is_one_name_and_mode_a_hidden_alias(command: str) -> None:
    help_text = run(command, "--help").stdout
    assert "--judge-mode" in help_text
    assert "--mode " not in help_text.replace("--judge-mode", "")


@pytest.mark.parametrize("spelling", ["--judge-mode", "--mode"])
def test_score_takes_both_spellings_with_one_effect(tmp_path: Path, spelling: str) -> None:
    with FakeServer() as server:
        result = run("score", str(_summary(tmp_path)), "--judge", "openai:gpt-4o-mini", "--base-url",
                     server.openai_base_url, spelling, "batched", "--batch-size", "3", "--json", "-", "--yes")
    assert result.exit_code == 0, result.output
    assert "batched" in json.dumps(json.loads(result.stdout))


def test_contradicting_spellings_are_refused(tmp_path: Path) -> None:
    result = run("score", str(_summary(tmp_path)), "--judge", "openai:gpt-4o", "--judge-mode", "sentence",
                 "--mode", "batched")
    assert result.exit_code == 2 and "contradict" in result.stderr


@pytest.mark.parametrize("flag", ["--model", "-m"])
def test_score_model_names_the_judge_option(tmp_path: Path, flag: str) -> None:
    result = run("score", str(_summary(tmp_path)), flag, "openai:gpt-4o")
    assert result.exit_code == 2
    assert "--judge openai:gpt-4o" in result.output and "Traceback" not in result.output


def test_summarize_plan_only_prints_the_plan_and_calls_nothing(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = run("summarize", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
                     "--strategy", "hier", "--chunk-size", "256", "--plan-only", "-o", str(tmp_path / "out"))
        assert server.call_count == 0
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith("plan (openai:gpt-4o, hier, upper bound): ") and line.endswith(tuple("0123456789"))
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.json").exists()
    assert not Path("booksum-out").exists()


def test_summarize_plan_only_is_the_plan_the_run_asks_about(tmp_path: Path) -> None:
    book = _book(tmp_path)
    with FakeServer() as server:
        args = ["summarize", str(book), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
                "--strategy", "inc", "--chunk-size", "256"]
        planned = run(*args, "--plan-only").stdout.strip()
        asked = run(*args, "--max-plan-cost", "0", "-o", str(tmp_path / "o"))  # refused: not a terminal
    assert asked.exit_code == 2
    assert planned in asked.stderr


@pytest.mark.parametrize("temperature", ["0", "0.2", "1.5", "2"])
def test_summarize_temperature_is_recorded_and_signed(tmp_path: Path, temperature: str) -> None:
    with FakeServer() as server:
        result = run("summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                     "--strategy", "direct", "--temperature", temperature, "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert record["config"]["temperature"] == float(temperature)
    assert f"temp:{float(temperature):g}" in record["signature"]


@pytest.mark.parametrize("bad", ["-0.1", "2.5", "nan", "inf", "hot"])
@pytest.mark.parametrize("command", ["summarize", "compare"])
def test_a_temperature_out_of_range_is_refused(tmp_path: Path, command: str, bad: str) -> None:
    result = run(command, str(_book(tmp_path)), "--temperature", bad, "-m", "openai:gpt-4o")
    assert result.exit_code == 2 and "--temperature" in result.output


def test_compare_temperature_reaches_each_record(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = run("compare", str(_book(tmp_path)), "--strategies", "direct", "-m", "openai:fake", "--no-judge",
                     "--base-url", server.openai_base_url, "--temperature", "0", "--out", str(tmp_path / "g"),
                     "--no-plots", "--yes")
    assert result.exit_code == 0, result.output
    records = list((tmp_path / "g" / "records").glob("*/*.json"))
    assert records and all(json.loads(r.read_text(encoding="utf-8"))["config"]["temperature"] == 0.0
                           for r in records)


def test_inspect_strategy_plans_only_that_strategy(tmp_path: Path) -> None:
    result = run("inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--strategy", "inc", "--json", "-")
    assert result.exit_code == 0, result.output
    assert [p["strategy"] for p in json.loads(result.stdout)["plans"]] == ["inc"]
    both = run("inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--strategy", "inc", "--strategy", "direct",
               "--json", "-")
    assert [p["strategy"] for p in json.loads(both.stdout)["plans"]] == ["inc", "direct"]
    bad = run("inspect", str(_book(tmp_path)), "--strategy", "hierr")
    assert bad.exit_code == 2 and "hierr" in bad.stderr
