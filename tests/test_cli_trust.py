"""Issue 9 at the command line: no silent default, no double count, no judge nobody chose."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.runners.score import load_summaries
from booksum_app.testing.fake_server import FakeServer

SUMMARY = "Mara inherits a bakery in Lisk. Her cousin Teo wants to sell it. The bakery stays in the family."


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 40, encoding="utf-8")
    return book


def _run_dir(tmp_path: Path, *, md_text: str = SUMMARY + "\n") -> Path:
    """What ``summarize -o out/lisk`` leaves: the record and the Markdown summary."""
    out = tmp_path / "out"
    out.mkdir()
    record = {"summary": SUMMARY, "book": {"source_path": "/books/lisk.epub", "title": "Lisk"}}
    (out / "lisk.json").write_text(json.dumps(record), encoding="utf-8")
    (out / "lisk.md").write_text(md_text, encoding="utf-8")
    return out


# ---- item 15: an empty model string is not "the default" ---------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("summarize", "{book}", "--model", ""),
        ("inspect", "{book}", "--model", ""),
        ("score", "{summary}", "--judge", ""),
        ("compare", "{book}", "--models", "", "--plan-only"),
        ("compare", "{book}", "--models", " , ", "--plan-only"),
        ("compare", "{book}", "--strategies", "", "--plan-only"),
    ],
)
def test_an_empty_model_or_list_is_refused_not_read_as_the_default(tmp_path: Path, args: tuple[str, ...]) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    filled = [a.format(book=_book(tmp_path), summary=summary) for a in args]
    code, _, stderr = invoke(*filled)
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and "error:" in stderr
    assert "Traceback" not in stderr


# ---- item 2: one book, one summary, whatever files represent it ---------------------------


def test_a_run_directory_with_md_and_json_is_one_summary(tmp_path: Path) -> None:
    out = _run_dir(tmp_path)
    assert load_summaries(out) == {"lisk.epub": SUMMARY}
    code, _, stderr = invoke("score", str(out), "--no-judge", "--json", str(tmp_path / "s.json"))
    assert code == 0, stderr
    assert json.loads((tmp_path / "s.json").read_text())["systems"][0]["n_summaries"] == 1


def test_two_different_summaries_of_one_book_are_refused(tmp_path: Path) -> None:
    out = _run_dir(tmp_path, md_text="A different summary entirely.\n")
    code, _, stderr = invoke("score", str(out), "--no-judge")
    assert code == 2
    assert "lisk.json and lisk.md" in stderr and "two different summaries" in stderr


def test_two_records_of_one_book_under_different_stems_are_refused(tmp_path: Path) -> None:
    out = _run_dir(tmp_path)
    (out / "lisk-again.json").write_text(
        json.dumps({"summary": "Other.", "book": {"source_path": "/books/lisk.epub"}}), encoding="utf-8"
    )
    code, _, stderr = invoke("score", str(out), "--no-judge")
    assert code == 2 and "two summaries of 'lisk.epub'" in stderr


# ---- item 7: a judge is chosen on purpose -------------------------------------------------


def test_score_without_a_judge_computes_the_rest_and_says_how_to_add_one(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    code, _, stderr = invoke("score", str(summary), "--json", str(tmp_path / "s.json"))
    assert code == 0, stderr
    assert "--judge" in stderr and "BOOKSUM_JUDGE" in stderr
    system = json.loads((tmp_path / "s.json").read_text())["systems"][0]
    assert "booookscore" not in system and system["calls"]["calls"] == 0
    assert system["ngrams"]["avg_tokens"] > 0


def test_judge_from_the_environment_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_JUDGE", "openai:gpt-4o-mini")
    with FakeServer() as server:
        code, stdout, stderr = invoke("score", str(summary), "--base-url", server.openai_base_url)
        assert server.call_count > 0
    assert code == 0, stderr
    assert "judge:openai:gpt-4o-mini" in stdout


def test_judge_from_the_config_file_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text('judge_model = "openai:gpt-4o-mini"\n', encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
    with FakeServer() as server:
        code, stdout, stderr = invoke("score", str(summary), "--base-url", server.openai_base_url)
    assert code == 0, stderr
    assert "judge:openai:gpt-4o-mini" in stdout


def test_compare_with_the_default_model_judges_nothing_and_says_so(tmp_path: Path) -> None:
    from booksum_app.runners.compare_plan import judge_string, needs_judge
    from booksum_app.runners.experiment import Experiment

    exp = Experiment(books=(_book(tmp_path),))
    assert judge_string(exp) is None and not needs_judge(exp)
    # issue 28: not even a named model of the grid becomes its judge ("booksum never picks one")
    named = Experiment(books=(_book(tmp_path),), models=("openai:gpt-4o-mini",))
    assert judge_string(named) is None and not needs_judge(named)
    chosen = Experiment(books=(_book(tmp_path),), models=("openai:gpt-4o-mini",), judge="openai:gpt-4o")
    assert judge_string(chosen) == "openai:gpt-4o" and needs_judge(chosen)


def test_only_the_bundled_model_counts_as_the_demo_judge() -> None:
    from booksum_app.llm.registry import is_demo_model

    assert is_demo_model("local")
    assert not is_demo_model("local:/models/qwen2.5-7b.gguf")
    assert not is_demo_model("openai:gpt-4o")


# ---- issue 13: precedence and typos --------------------------------------------------------


def test_a_typo_in_a_model_name_is_noted_with_the_likely_name(tmp_path: Path) -> None:
    code, _, stderr = invoke("inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o-mni")
    assert code == 0
    assert "unknown OpenAI model" in stderr and "did you mean 'openai:gpt-4o-mini'?" in stderr


def test_the_environment_beats_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from booksum_app.llm.registry import choose_judge

    config = tmp_path / "config.toml"
    config.write_text('judge_model = "openai:gpt-4o"\n', encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
    assert choose_judge() == "openai:gpt-4o"
    monkeypatch.setenv("BOOKSUM_JUDGE", "openai:gpt-4o-mini")
    assert choose_judge() == "openai:gpt-4o-mini"
    assert choose_judge("anthropic:claude-sonnet-4-5") == "anthropic:claude-sonnet-4-5"


# ---- issue 13: one CLI -----------------------------------------------------------------------


def test_json_dash_writes_scores_to_stdout_instead_of_tables(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    code, stdout, stderr = invoke("score", str(summary), "--no-judge", "--json", "-")
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["kind"] == "booksum.scores" and data["systems"][0]["n_summaries"] == 1
    assert not (tmp_path / "-").exists()


def test_quiet_keeps_errors_and_results_only(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    code, stdout, stderr = invoke("-q", "score", str(summary))
    assert code == 0 and stderr == "" and "booksum scores" in stdout  # the no-judge note is silenced
    code, _, stderr = invoke("-q", "score", str(tmp_path / "missing.json"))
    assert code == 2 and stderr.startswith("error:")
    code, _, stderr = invoke("score", str(summary))
    assert "BOOKSUM_JUDGE" in stderr, "the next invocation is not quiet"


def test_verbose_prints_one_line_per_call_without_prompts(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    with FakeServer() as server:
        code, _, stderr = invoke("-v", "score", str(summary), "--judge", "openai:gpt-4o-mini",
                                 "--base-url", server.openai_base_url)
        calls = server.call_count
    assert code == 0, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("call ")]
    assert len(lines) == calls > 0 and "tokens" in lines[0]
    assert SUMMARY not in stderr


def test_tables_to_a_pipe_are_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    summary = tmp_path / ("a-rather-long-system-name-" * 3 + ".txt")
    summary.write_text(SUMMARY, encoding="utf-8")
    code, stdout, _ = invoke("score", str(summary), "--no-judge")
    assert code == 0
    assert max(len(line) for line in stdout.splitlines()) > 80


def test_help_lists_the_exit_codes() -> None:
    code, stdout, _ = invoke("--help")
    text = " ".join(stdout.split())  # click wraps the epilog at the terminal's width
    assert code == 0 and "Exit codes:" in text and "5 --max-cost" in text and "6 you answered no" in text


# ---- issue 13: score plans the judge's cost before paying ------------------------------------


def test_score_plans_the_judge_and_refuses_an_expensive_run_unasked(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    with FakeServer() as server:
        args = ("score", str(summary), "--judge", "openai:gpt-4o", "--base-url", server.openai_base_url)
        code, _, stderr = invoke(*args, "--max-plan-cost", "0")
        assert code == 2 and "--yes" in stderr and server.call_count == 0
        assert "judge plan (openai:gpt-4o, upper bound): 3 calls" in stderr  # one per sentence
        code, _, stderr = invoke(*args, "--max-plan-cost", "0", "--yes")
        assert code == 0, stderr
        assert server.call_count == 3, "the plan counted the calls the run made"


def test_no_plan_when_no_judge_runs(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    code, _, stderr = invoke("score", str(summary), "--max-plan-cost", "0")
    assert code == 0 and "judge plan" not in stderr


# ---- issue 13: booksum models ----------------------------------------------------------------


def test_models_lists_table_and_config_models_with_their_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[models."openai:my-finetune"]\ncontext_window = 32000\ninput_usd_per_mtok = 1.0\n'
                      'output_usd_per_mtok = 2.0\ntokenizer = "o200k_base"\n'
                      '[models."openai:gpt-4o"]\ninput_usd_per_mtok = 2.0\n', encoding="utf-8")
    monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
    code, stdout, stderr = invoke("models", "--json")
    assert code == 0, stderr
    data = json.loads(stdout)
    rows = {m["name"]: m for m in data["models"]}
    assert rows["openai:my-finetune"]["source"] == "config" and rows["openai:my-finetune"]["context_window"] == 32000
    assert rows["openai:gpt-4o"]["source"] == "shipped+config" and rows["openai:gpt-4o"]["input_usd_per_mtok"] == 2.0
    assert rows["openai:gpt-4o-mini"]["source"] == "shipped"
    assert data["backends"]["openai"] is True and set(data["strategies"]) >= {"hier", "inc", "direct"}
    assert data["judge"] is None
    code, stdout, _ = invoke("models")
    assert code == 0 and "openai:my-finetune" in stdout and "Backends:" in stdout


# ---- issue 13: booksum cache ----------------------------------------------------------------


def test_cache_command_shows_and_clears_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text(SUMMARY, encoding="utf-8")
    with FakeServer() as server:
        code, _, stderr = invoke("score", str(summary), "--judge", "openai:gpt-4o-mini", "--base-url",
                                 server.openai_base_url, "--cache-dir", str(tmp_path / "c"))
    assert code == 0, stderr
    code, stdout, _ = invoke("cache", "--cache-dir", str(tmp_path / "c"), "--json")
    stats = json.loads(stdout)
    # issue 28: objects, ISO dates, and models named as `booksum logs` names them
    assert code == 0 and stats["answers"] == 3 and stats["models"][0]["model"] == "openai:gpt-4o-mini"
    assert stats["models"][0]["answers"] == 3 and stats["models"][0]["cost_usd"] > 0
    assert datetime.fromisoformat(stats["oldest"]).tzinfo is not None
    code, _, stderr = invoke("cache", "--cache-dir", str(tmp_path / "c"), "--clear", "--older-than", "1")
    assert code == 0 and "removed 0" in stderr
    code, _, stderr = invoke("cache", "--cache-dir", str(tmp_path / "c"), "--clear")  # not a terminal: no
    assert code == 2 and "3 stored answers ($" in stderr and "--yes" in stderr
    code, _, stderr = invoke("cache", "--cache-dir", str(tmp_path / "c"), "--clear", "--yes")
    assert code == 0 and "removed 3" in stderr
    code, _, stderr = invoke("cache", "--older-than", "3")
    assert code == 2 and "--clear" in stderr
