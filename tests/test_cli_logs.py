"""`booksum logs`: past calls from the call cache, written by real runs against the fake server."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.cli.logs import parse_since
from booksum_app.llm.base import Request
from booksum_app.llm.cache import MIGRATIONS, CallCache
from booksum_app.llm.context import call_context
from booksum_app.llm.registry import LLMSettings, get_model
from booksum_app.testing.fake_server import FakeServer

KEY = "sk-proj-ABCDEFGHIJKLMNOP1234567890"  # a key-looking string a prompt should never show
MARKUP = "[bold]loud[/bold] [/x] [link=http://example.com]l[/link]"


def write_book(path: Path, *, seed: int) -> Path:
    """A short two-chapter novel (.txt) whose sentences differ per seed."""
    chapters = [f"Chapter {c}\n\n" + " ".join(f"On day {seed}-{c}-{i}, Ada went to the mill and found a key there."
                                              for i in range(80)) for c in (1, 2)]
    path.write_text(f"Book {seed}\n\n" + "\n\n".join(chapters), encoding="utf-8")
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def logs_json(cache: Path, *args: str) -> list[dict[str, Any]]:
    code, stdout, stderr = invoke("logs", "--cache-dir", str(cache), "--json", "-", *args)
    assert code == 0, stderr
    data = json.loads(stdout)
    assert isinstance(data, list)
    return data


def summarize(book: Path, cache: Path, server: FakeServer) -> None:
    code, _, stderr = invoke(
        "summarize", str(book), "--model", "openai:gpt-4o-mini", "--base-url", server.openai_base_url,
        "--cache-dir", str(cache), "--chunk-size", "512", "-o", str(book.with_suffix("")),
    )
    assert code == 0, stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache holding two summarize runs (two books, hier) made through the CLI."""
    folder = tmp_path_factory.mktemp("logs")
    cache = folder / "cache"
    with pytest.MonkeyPatch.context() as mp, FakeServer() as server:
        mp.setenv("OPENAI_API_KEY", "dummy")
        mp.setenv("BOOKSUM_CONFIG", str(folder / "no-config.toml"))  # module scope: before conftest's isolation
        summarize(write_book(folder / "alpha.txt", seed=1), cache, server)
        time.sleep(0.01)  # the second run is strictly newer
        summarize(write_book(folder / "beta.txt", seed=2), cache, server)
    yield cache


def test_table_shows_each_call_with_purpose_model_tokens_cost_and_latency(runs: Path) -> None:
    code, stdout, stderr = invoke("logs", "--cache-dir", str(runs), "-n", "0")
    assert code == 0, stderr
    for word in ("summarize", "merge", "clean", "openai:gpt-4o-mini", "alpha.txt", "beta.txt", "$0.0"):
        assert word in stdout
    assert "went to the" not in stdout  # no prompt or answer text unless asked


def test_count_is_newest_first_and_zero_means_all(runs: Path) -> None:
    everything = logs_json(runs, "-n", "0")
    assert len(everything) == len(CallCache(runs)) > 4
    times = [c["time"] for c in everything]
    assert times == sorted(times, reverse=True)
    assert everything[0]["book"] == "beta.txt" and everything[-1]["book"] == "alpha.txt"
    assert logs_json(runs, "-n", "3") == everything[:3]
    assert len(logs_json(runs)) == min(20, len(everything))  # default 20
    code, _, stderr = invoke("logs", "--cache-dir", str(runs), "-n", "2")
    assert code == 0 and f"showing the newest 2 of {len(everything)} matching calls" in stderr


def test_json_rows_carry_figures_and_a_known_price(runs: Path) -> None:
    row = logs_json(runs, "-n", "1")[0]
    assert {"time", "run", "book", "purpose", "model", "input_tokens", "output_tokens", "cached_input_tokens",
            "cost_usd", "latency_s", "finish_reason"} <= set(row)
    assert row["model"] == "openai:gpt-4o-mini" and row["reported_model"] == "gpt-4o-mini"
    # priced from data/models.json: $0.15 in, $0.60 out per Mtok
    assert row["cost_usd"] == pytest.approx((row["input_tokens"] * 0.15 + row["output_tokens"] * 0.6) / 1e6)
    assert "prompt" not in row and "response" not in row


def test_filters_by_purpose_model_run_book_and_since(runs: Path) -> None:
    everything = logs_json(runs, "-n", "0")
    merges = logs_json(runs, "-n", "0", "--purpose", "merge")
    assert merges and {c["purpose"] for c in merges} == {"merge"}
    assert logs_json(runs, "-n", "0", "--model", "gpt-4o-mini") == everything  # bare name finds openai:...
    assert logs_json(runs, "-n", "0", "--model", "openai:gpt-4o-mini") == everything
    assert logs_json(runs, "-n", "0", "--model", "gpt-4o") == []  # not a prefix match
    runs_seen = {c["run"] for c in everything}
    assert len(runs_seen) == 2
    last = logs_json(runs, "-n", "0", "--run", "last")
    assert {c["book"] for c in last} == {"beta.txt"} and len({c["run"] for c in last}) == 1
    first = min(runs_seen)
    by_prefix = logs_json(runs, "-n", "0", "--run", first[:-2])
    assert {c["run"] for c in by_prefix} == {first}
    assert {c["book"] for c in logs_json(runs, "-n", "0", "--book", "ALPHA")} == {"alpha.txt"}
    assert logs_json(runs, "-n", "0", "--book", "gamma") == []
    assert logs_json(runs, "-n", "0", "--since", "1h") == everything
    assert logs_json(runs, "-n", "0", "--since", "2000-01-01") == everything
    assert logs_json(runs, "-n", "0", "--since", "2999-01-01T00:00") == []
    code, stdout, _ = invoke("logs", "--cache-dir", str(runs), "--purpose", "nothing")
    assert code == 0 and stdout.startswith("no calls match") and stdout.count("\n") == 1


def test_prompts_and_responses_only_on_request(runs: Path) -> None:
    code, stdout, _ = invoke("logs", "--cache-dir", str(runs), "-n", "1", "--purpose", "summarize", "--prompts")
    assert code == 0
    assert "### Prompt" in stdout and "**user:**" in stdout and "went to the" in stdout
    assert "### Response" not in stdout
    code, stdout, _ = invoke("logs", "--cache-dir", str(runs), "-n", "1", "-r")
    assert "### Response" in stdout and "### Prompt" not in stdout
    row = logs_json(runs, "-n", "1", "--purpose", "summarize", "--prompts", "--responses")[0]
    assert row["prompt"]["messages"][-1]["role"] == "user" and "went to the" in row["prompt"]["messages"][-1]["content"]
    assert row["prompt"]["max_tokens"] > 0 and row["response"].strip()


def test_json_to_a_file_and_flag_without_value(runs: Path, tmp_path: Path) -> None:
    target = tmp_path / "calls.json"
    code, stdout, stderr = invoke("logs", "--cache-dir", str(runs), "--json", str(target), "-n", "2")
    assert code == 0 and stdout == "" and "wrote" in stderr
    assert len(json.loads(target.read_text("utf-8"))) == 2
    code, stdout, _ = invoke("logs", "--cache-dir", str(runs), "-n", "2", "--json")  # bare --json: stdout
    assert code == 0 and len(json.loads(stdout)) == 2


def test_compare_labels_every_call_with_its_book_and_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    books = [write_book(tmp_path / f"book-{n}.txt", seed=n) for n in (1, 2)]
    cache = tmp_path / "cache"
    with FakeServer() as server:
        code, _, stderr = invoke(
            "compare", *map(str, books), "--strategies", "hier,direct", "--models", "openai:gpt-4o-mini",
            "--judge", "openai:gpt-4o-mini", "--judge-mode", "batched", "--chunk-sizes", "512", "--jobs", "2",
            "--base-url", server.openai_base_url, "--cache-dir", str(cache), "--out", str(tmp_path / "out"),
            "--no-plots", "--yes",
        )
    assert code == 0, stderr
    rows = logs_json(cache, "-n", "0")
    assert {r["book"] for r in rows} == {"book-1.txt", "book-2.txt"}  # book workers and judge calls alike
    assert len({r["run"] for r in rows}) == 1 and rows[0]["run"]
    judged = {r["book"] for r in rows if r["purpose"].startswith("judge")}
    assert judged == {"book-1.txt", "book-2.txt"}, {r["purpose"] for r in rows}


def _hostile_calls(cache: Path, model: str) -> None:
    """Client calls whose prompt holds a key and whose answer holds rich markup, labelled by hand."""
    with FakeServer(reply=lambda r: f"{MARKUP} echo {r.prompt}") as server:
        client = get_model(model, settings=LLMSettings(cache_dir=cache, base_url=server.openai_base_url),
                           env={"OPENAI_API_KEY": "dummy"})
        with client, call_context(run="run-[x]", book="[b]book[/b].epub"):
            client.complete_many([Request(prompt=f"my key is {KEY} part {i}", max_tokens=40, purpose="judge")
                                  for i in range(2)])


def test_keys_are_redacted_and_markup_is_printed_verbatim(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _hostile_calls(cache, "openai:gpt-4o-mini")
    for args in (("--prompts", "-r"), ("--json", "-", "--prompts", "-r"), ()):
        code, stdout, stderr = invoke("logs", "--cache-dir", str(cache), *args)
        assert code == 0, stderr
        assert KEY not in stdout and "sk-proj" not in stdout
        assert "[b]book[/b].epub" in stdout and "run-[x]" in stdout  # labels set through submit()
    code, stdout, _ = invoke("logs", "--cache-dir", str(cache), "-r", "--prompts")
    assert MARKUP in stdout and "my key is [redacted] part" in stdout


def test_a_model_without_a_price_has_a_blank_cost(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _hostile_calls(cache, "openai:some-model-nobody-priced")
    rows = logs_json(cache)
    assert rows and all(r["cost_usd"] is None for r in rows)
    code, stdout, _ = invoke("logs", "--cache-dir", str(cache))
    assert code == 0 and "$" not in stdout.split("\n", 3)[-1]  # no dollar figure in any row


def test_empty_or_missing_cache_is_one_friendly_line(tmp_path: Path) -> None:
    code, stdout, stderr = invoke("logs", "--cache-dir", str(tmp_path / "never"))
    assert code == 0 and stderr == "" and stdout.startswith("no calls logged yet") and stdout.count("\n") == 1
    assert not (tmp_path / "never").exists()  # looking does not create a cache
    CallCache(tmp_path / "empty").close()
    code, stdout, _ = invoke("logs", "--cache-dir", str(tmp_path / "empty"))
    assert code == 0 and stdout.startswith("no calls logged yet")
    assert logs_json(tmp_path / "empty") == []


def test_corrupt_cache_is_one_line_and_a_failure(tmp_path: Path) -> None:
    (tmp_path / "calls.sqlite3").write_bytes(b"this is not a database " * 100)
    code, stdout, stderr = invoke("logs", "--cache-dir", str(tmp_path))
    assert code == 2 and stdout == ""
    assert "cannot read the call cache" in stderr and stderr.count("\n") == 1


def test_bad_since_is_one_line() -> None:
    code, _, stderr = invoke("logs", "--since", "yesterday-ish")
    assert code == 2 and "--since" in stderr and stderr.count("\n") == 1
    assert parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert parse_since("1.5d", now=200_000.0) == 200_000.0 - 1.5 * 86400


def _old_cache(directory: Path, *, migrations: int) -> None:
    """A cache as an older booksum left it: only the first ``migrations`` applied, one answer."""
    directory.mkdir(parents=True)
    db = sqlite3.connect(directory / "calls.sqlite3", isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL)")
    for m in MIGRATIONS[:migrations]:
        m(db)
        db.execute("INSERT INTO _migrations VALUES (?, ?)", (m.__name__.lstrip("_"), time.time()))
    db.execute("INSERT INTO calls (key, text, finish_reason, input_tokens, output_tokens, cached_input_tokens, "
               "model, created, latency_s) "
               "VALUES ('k', 'An old [i]answer[/i].', 'stop', 1000, 100, 0, 'gpt-4o', ?, 2.5)",
               (time.time() - 3600,))
    db.close()


@pytest.mark.parametrize("migrations", [1, 3])
def test_a_cache_from_before_the_call_log_still_reads(tmp_path: Path, migrations: int) -> None:
    cache = tmp_path / "cache"
    _old_cache(cache, migrations=migrations)
    rows = logs_json(cache, "--prompts", "-r")
    assert len(rows) == 1
    row = rows[0]
    assert row["run"] is None and row["book"] is None and row["prompt"] is None
    assert row["model"] == "gpt-4o" and row["purpose"] == ""
    assert row["cost_usd"] == pytest.approx((1000 * 2.5 + 100 * 10.0) / 1e6)  # alias gpt-4o -> openai:gpt-4o
    code, stdout, _ = invoke("logs", "--cache-dir", str(cache), "--prompts", "-r")
    assert code == 0 and "(not stored" in stdout and "An old [i]answer[/i]." in stdout
    assert logs_json(cache, "--run", "last") == [] and logs_json(cache, "--book", "x") == []
    # the next run migrates it: the old row keeps its unknowns, new ones are labelled
    _hostile_calls(cache, "openai:gpt-4o-mini")
    rows = logs_json(cache, "-n", "0", "--prompts")
    assert [r["run"] for r in rows] == ["run-[x]", "run-[x]", None]
    assert rows[0]["prompt"] is not None and rows[-1]["prompt"] is None


def test_prompt_cache_writes_are_priced_as_the_run_priced_them(tmp_path: Path) -> None:
    from booksum_app.llm.base import Completion, Usage
    from booksum_app.llm.cache import CallMeta
    from booksum_app.llm.registry import choose_model

    usage = Usage(1000, 100, cached_input_tokens=200, cache_write_input_tokens=300)
    cache = CallCache(tmp_path)
    cache.put("k", Completion("An answer.", "stop", usage, model="claude-sonnet-4-5", latency_s=1.0),
              purpose="judge", meta=CallMeta(model_string="anthropic:claude-sonnet-4-5"))
    cache.close()
    row = logs_json(tmp_path)[0]
    assert row["cache_write_input_tokens"] == 300 and row["cached_input_tokens"] == 200
    info = choose_model("anthropic:claude-sonnet-4-5").info
    assert row["cost_usd"] == pytest.approx(info.cost_usd(usage))
    assert row["cost_usd"] == pytest.approx((500 * 3.0 + 200 * 0.3 + 300 * 3.75 + 100 * 15.0) / 1e6)
