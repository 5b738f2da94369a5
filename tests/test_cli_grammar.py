"""Issue 28: one grammar for every command, a plan and a question before every paid run, config typos."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from booksum_app.cli import base, cli
from booksum_app.testing.fake_ollama import FakeOllama
from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("inspect", "summarize", "score", "compare", "models", "cache", "logs")


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "lisk.txt"
    book.write_text("Chapter 1\n\n" + "Mara bakes bread in Lisk every morning. " * 60, encoding="utf-8")
    return book


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")


# ---- the same options everywhere -------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_lists_the_exit_codes(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())  # click wraps the epilog at the terminal's width
    assert "Exit codes: 0 success" in text and "130 interrupted" in text and "6 you answered no" in text


def test_lang_has_help_text() -> None:
    for command in ("summarize", "compare"):
        text = " ".join(run(command, "--help").stdout.split())
        assert "--lang [auto|en|zh] Language of the prompts" in text


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_works_before_and_after_the_command_name(tmp_path: Path, where: str) -> None:
    with FakeServer() as server:
        args = ["summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                "--strategy", "direct", "-o", str(tmp_path / "out")]
        result = run(*(["-q", *args] if where == "before" else [*args, "-q"]))
    assert result.exit_code == 0, result.output
    assert "summary:" not in result.stderr and "record:" not in result.stderr  # notes silenced


def test_verbose_after_the_command_name_prints_each_call(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = run("summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                     "--strategy", "direct", "-o", str(tmp_path / "out"), "-v")
    assert result.exit_code == 0, result.output
    assert "call direct " in result.stderr and "1 attempt(s)" in result.stderr


@pytest.mark.parametrize("command", ["inspect", "models", "cache"])
def test_json_dash_and_json_file_on_every_command(tmp_path: Path, command: str) -> None:
    extra = [str(_book(tmp_path)), "-m", "openai:gpt-4o"] if command == "inspect" else []
    for spelling in (["--json", "-"], ["--json"]):
        result = run(command, *extra, *spelling)
        assert result.exit_code == 0, result.output
        assert isinstance(json.loads(result.stdout), dict)
    target = tmp_path / "out.json"
    result = run(command, *extra, "--json", str(target))
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(target.read_text("utf-8")), dict) and f"wrote {target}" in result.stderr


def test_compare_plan_only_goes_to_stdout_and_as_json(tmp_path: Path) -> None:
    book = _book(tmp_path)
    result = run("compare", str(book), "--models", "openai:gpt-4o", "--plan-only", "--no-plots")
    assert result.exit_code == 0, result.output
    assert "Pre-flight plan" in result.stdout and "Pre-flight plan" not in result.stderr
    result = run("compare", str(book), "--models", "openai:gpt-4o", "--plan-only", "--json", "-")
    plan = json.loads(result.stdout)
    assert plan["judge"] is None and plan["lines"][0]["calls"] > 0 and plan["cost_usd"] > 0


def test_compare_json_refuses_to_overwrite_a_book(tmp_path: Path) -> None:
    book = _book(tmp_path)
    other = tmp_path / "north.txt"
    other.write_text(book.read_text("utf-8"), encoding="utf-8")
    before = book.read_bytes()
    result = run("compare", "--json", str(book), str(other), "--plan-only")
    assert result.exit_code == 2 and "would overwrite a book" in result.stderr
    assert book.read_bytes() == before


def test_compare_judge_is_never_the_first_model(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = run("compare", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                     "--strategies", "direct", "--out", str(tmp_path / "grid"), "--no-plots", "--json", "-")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all(row["booookscore"] is None for row in data["rows"])
    assert "BooookScore left out" in result.stderr


def test_score_accepts_compares_summaries_directory(tmp_path: Path) -> None:
    folder = tmp_path / "grid" / "summaries"
    folder.mkdir(parents=True)
    for name in ("fake-direct-2048", "fake-hier-2048"):
        (folder / f"{name}.json").write_text(json.dumps({"lisk.txt": "Mara bakes. Teo sells.",
                                                         "north.txt": "A pilot flies. Mail arrives."}), "utf-8")
    result = run("score", str(folder), "--no-judge", "--json", "-")
    assert result.exit_code == 0, result.output
    systems = json.loads(result.stdout)["systems"]
    assert [s["name"] for s in systems] == ["fake-direct-2048", "fake-hier-2048"]


# ---- summarize -o - and stdin ------------------------------------------------------------------


def test_stdin_book_cut_mid_character_is_read(tmp_path: Path) -> None:
    text = ("第一回\n\n" + "孙悟空大闹天宫，众神皆惊。" * 200).encode("utf-8")
    cut = text[:-1]  # head -c N: the last character loses a byte
    with FakeServer() as server:
        result = run("summarize", "-", "-m", "openai:fake", "--base-url", server.openai_base_url,
                     "--strategy", "direct", "-o", str(tmp_path / "out"), input=cut)  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "out.json").read_text("utf-8"))
    assert record["book"]["source_path"] == "stdin.txt"


def test_undecodable_stdin_names_no_file_to_iconv(tmp_path: Path) -> None:
    from booksum_app.books.encoding import decode_text
    from booksum_app.errors import BookFormatError

    junk = bytes(range(0x80, 0x100)) * 40
    with pytest.raises(BookFormatError) as info:
        decode_text(junk, name="stdin.txt")
    assert "stdin.txt >" not in str(info.value) and "pipe it through iconv" in str(info.value)


# ---- every paid command plans and asks the same way ---------------------------------------------


def _priced_summarize(server: FakeServer, tmp_path: Path, *extra: str, input: str | None = None) -> Result:
    # openai:gpt-4o is priced by the table; the fake server answers for it
    return run("summarize", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
               "--strategy", "direct", "-o", str(tmp_path / "out"), *extra, input=input)


def test_summarize_above_the_threshold_is_refused_off_a_terminal(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = _priced_summarize(server, tmp_path, "--max-plan-cost", "0")
        assert server.call_count == 0
    assert result.exit_code == 2 and "above --max-plan-cost $0.00; pass --yes" in result.stderr
    assert "plan (openai:gpt-4o, direct, upper bound): 2 calls" in result.stderr
    assert not (tmp_path / "out.md").exists()
    with FakeServer() as server:
        result = _priced_summarize(server, tmp_path, "--max-plan-cost", "0", "--yes")
        assert server.call_count > 0
    assert result.exit_code == 0, result.output


def test_summarize_asks_in_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "stdin_is_terminal", lambda: True)
    with FakeServer() as server:
        result = _priced_summarize(server, tmp_path, "--max-plan-cost", "0", input="n\n")
        assert server.call_count == 0
    assert result.exit_code == 6 and "This summary could cost up to $" in result.stderr
    assert "Aborted" not in result.output and "declined: nothing was spent" in result.stderr
    with FakeServer() as server:
        result = _priced_summarize(server, tmp_path, "--max-plan-cost", "0", input="y\n")
    assert result.exit_code == 0, result.output
    with FakeServer() as server:  # under the threshold: no question
        result = _priced_summarize(server, tmp_path, input="")
    assert result.exit_code == 0 and "could cost" not in result.stderr


def test_score_and_compare_refuse_the_same_way(tmp_path: Path) -> None:
    summary = tmp_path / "s.txt"
    summary.write_text("Mara bakes bread. Teo sells it. The bakery stays.", encoding="utf-8")
    with FakeServer() as server:
        scored = run("score", str(summary), "--judge", "openai:gpt-4o", "--base-url", server.openai_base_url,
                     "--max-plan-cost", "0")
        compared = run("compare", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--base-url",
                       server.openai_base_url, "--max-plan-cost", "0", "--out", str(tmp_path / "g"), "--no-plots")
        assert server.call_count == 0
    for result in (scored, compared):
        assert result.exit_code == 2 and "above --max-plan-cost $0.00; pass --yes" in result.stderr


@pytest.mark.parametrize("answer", ["n\n", "\n", ""])  # no, the default (no), end of input
def test_a_declined_plan_is_one_line_and_exit_6_on_every_command_that_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    monkeypatch.setattr(base, "stdin_is_terminal", lambda: True)
    summary = tmp_path / "s.txt"
    summary.write_text("Mara bakes bread. Teo sells it. The bakery stays.", encoding="utf-8")
    with FakeServer() as server:
        url = server.openai_base_url
        results = {
            "summarize": _priced_summarize(server, tmp_path, "--max-plan-cost", "0", input=answer),
            "score": run("score", str(summary), "--judge", "openai:gpt-4o", "--base-url", url,
                         "--max-plan-cost", "0", input=answer),
            "compare": run("compare", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--base-url", url,
                           "--max-plan-cost", "0", "--out", str(tmp_path / "g"), "--no-plots", input=answer),
        }
        assert server.call_count == 0
    for command, result in results.items():
        assert result.exit_code == 6, (command, result.output)
        assert "Aborted" not in result.output, command
        assert result.stderr.rstrip("\n").splitlines()[-1] == "declined: nothing was spent", command


def test_cache_clear_asks_in_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as server:
        assert run("summarize", str(_book(tmp_path)), "-m", "openai:gpt-4o", "--base-url", server.openai_base_url,
                   "--strategy", "direct", "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")
                   ).exit_code == 0
    monkeypatch.setattr(base, "stdin_is_terminal", lambda: True)
    result = run("cache", "--cache-dir", str(tmp_path / "c"), "--clear", input="n\n")
    assert result.exit_code == 6 and "Delete 2 stored answers ($" in result.stderr
    assert "Aborted" not in result.output and "declined: nothing was deleted" in result.stderr
    assert json.loads(run("cache", "--cache-dir", str(tmp_path / "c"), "--json").stdout)["answers"] == 2
    result = run("cache", "--cache-dir", str(tmp_path / "c"), "--clear", input="y\n")
    assert result.exit_code == 0 and "removed 2" in result.stderr


# ---- models and config --------------------------------------------------------------------------


def test_empty_booksum_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKSUM_MODEL", "")
    result = run("inspect", str(_book(tmp_path)))
    assert result.exit_code == 2 and "BOOKSUM_MODEL is set but empty" in result.stderr


def test_empty_default_model_is_refused_and_a_typo_key_is_named(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
    config.write_text('default_model = ""\n', encoding="utf-8")
    result = run("inspect", str(_book(tmp_path)))
    assert result.exit_code == 2 and "default_model must be a model string" in result.stderr
    config.write_text('default_modle = "openai:gpt-4o"\n', encoding="utf-8")
    result = run("inspect", str(_book(tmp_path)), "-m", "openai:gpt-4o")
    assert result.exit_code == 0, result.output
    assert "unknown key 'default_modle' is ignored; did you mean 'default_model'?" in result.stderr


@pytest.mark.parametrize(("typo", "meant"), [("gtp-4o", "gpt-4o"), ("sonet", "sonnet")])
def test_a_bare_typo_gets_a_suggestion(tmp_path: Path, typo: str, meant: str) -> None:
    result = run("inspect", str(_book(tmp_path)), "-m", typo)
    assert result.exit_code == 2 and f"did you mean {meant!r}?" in result.stderr


def test_an_unknown_model_on_a_server_gets_the_context_note(tmp_path: Path) -> None:
    result = run("inspect", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 0, result.output
    assert "assuming an 8192-token context" in result.stderr


def test_a_missing_api_key_is_a_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = run("summarize", str(_book(tmp_path)), "-m", "openai:gpt-4o-mini", "-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "OPENAI_API_KEY" in result.stderr


def test_openai_prefix_on_an_ollama_server_warns(tmp_path: Path) -> None:
    with FakeOllama(models={"qwen2.5:7b": 32768}) as ollama:
        result = run("summarize", str(_book(tmp_path)), "-m", "openai:qwen2.5:7b", "--base-url",
                     f"{ollama.url}/v1", "--strategy", "direct", "-o", str(tmp_path / "o"))
    assert "is an Ollama server" in result.stderr and "ollama:qwen2.5:7b" in result.stderr


def test_no_ollama_warning_for_another_server(tmp_path: Path) -> None:
    with FakeServer() as server:
        result = run("summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                     "--strategy", "direct", "-o", str(tmp_path / "o"))
    assert result.exit_code == 0 and "Ollama" not in result.stderr


# ---- the library ---------------------------------------------------------------------------------


def test_library_summarize_takes_base_url_and_max_summary_len(tmp_path: Path) -> None:
    import booksum_app
    from booksum_app.errors import ConfigError

    with FakeServer() as server:
        record = booksum_app.summarize(_book(tmp_path), strategy="direct", model="openai:fake",
                                       base_url=server.openai_base_url, max_summary_len=300)
        assert record.config["max_summary_tokens"] == 300 and record.summary
        old = booksum_app.summarize(_book(tmp_path), strategy="direct", model="openai:fake",
                                    base_url=server.openai_base_url, max_summary_tokens=300)
        assert old.summary == record.summary
    with pytest.raises(ConfigError, match="name the same budget"):
        booksum_app.summarize(_book(tmp_path), max_summary_len=300, max_summary_tokens=400)


def test_missing_key_message_speaks_to_library_users_too() -> None:
    from booksum_app.errors import MissingAPIKey
    from booksum_app.llm.registry import LLMSettings, get_model

    with pytest.raises(MissingAPIKey) as info:
        get_model("openai:gpt-4o", settings=LLMSettings(), env={})
    assert "base_url=" in str(info.value) and info.value.exit_code == 2


# ---- a closed stdout loses no file -------------------------------------------------------------


def test_score_into_head_writes_its_files(tmp_path: Path) -> None:
    summaries = tmp_path / "sums.json"
    summaries.write_text(json.dumps({f"book{i}.epub": "Mara bakes. Teo sells. " * 5 for i in range(40)}), "utf-8")
    csv_out, report = tmp_path / "s.csv", tmp_path / "r.html"
    command = (f"{sys.executable} -m booksum_app score {summaries} --no-judge --csv {csv_out} --report {report} "
               "| head -c 1")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], check=False, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert csv_out.is_file() and report.is_file()
    assert "Traceback" not in done.stderr and "error" not in done.stderr.lower()
    assert done.returncode in (0, 141)


def test_logs_query_searches_prompts_and_answers(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    with FakeServer() as server:
        assert run("summarize", str(_book(tmp_path)), "-m", "openai:fake", "--base-url", server.openai_base_url,
                   "--strategy", "direct", "-o", str(tmp_path / "out"), "--cache-dir", str(cache)).exit_code == 0
    every = json.loads(run("logs", "--cache-dir", str(cache), "-n", "0", "--json", "-").stdout)
    found = run("logs", "--cache-dir", str(cache), "-n", "0", "-q", "mara BAKES", "--prompts", "--json", "-")
    assert found.exit_code == 0, found.output
    calls = json.loads(found.stdout)
    assert calls and len(calls) <= len(every)
    assert all("mara bakes" in json.dumps(c, ensure_ascii=False).lower() for c in calls)
    none = run("logs", "--cache-dir", str(cache), "-q", "no such words anywhere 100%_", "--json", "-")
    assert json.loads(none.stdout) == [] and "no calls match" in none.stderr
    quiet = run("logs", "--cache-dir", str(cache), "--quiet", "-q", "no such words anywhere")
    assert quiet.exit_code == 0 and quiet.stderr == ""
