"""Each model its own server: a judge on another server than the summarizer, in one compare (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_compare import write_book

from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.registry import LLMSettings, choose_model
from booksum_app.runners.servers import judge_server
from booksum_app.testing.fake_server import FakeServer


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    folder = tmp_path / "books"
    folder.mkdir()
    return write_book(folder / "book-1.txt", seed=1, chapters=2)


def compare(book: Path, tmp_path: Path, summarizer: FakeServer, *extra: str) -> list[str]:
    return ["compare", str(book), "--strategies", "direct", "-m", "openai:gpt-4o-mini", "--max-summary-len", "120",
            "--base-url", summarizer.openai_base_url, "--cache-dir", str(tmp_path / "cache"),
            "--out", str(tmp_path / "out"), "--no-plots", "--yes", *extra]


def models_seen(server: FakeServer) -> set[str]:
    return {str(r.payload.get("model")) for r in server.requests}


def test_a_judge_with_its_own_base_url_goes_there(book: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as local, FakeServer() as hosted:
        result = CliRunner().invoke(cli, compare(book, tmp_path, local, "--judge", "openai:gpt-4o",
                                                 "--judge-base-url", hosted.openai_base_url))
        assert result.exit_code == 0, result.output
        assert models_seen(local) == {"gpt-4o-mini"} and models_seen(hosted) == {"gpt-4o"}
        assert hosted.call_count > 1, "every judge call went to the judge's server"
    assert "booookscore|judge:openai:gpt-4o|" in result.output


def test_a_config_entry_carries_its_models_server(book: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeServer() as local, FakeServer() as judge_host:
        config = tmp_path / "config.toml"
        config.write_text(f'[models."openai:gpt-4o"]\nbase_url = "{judge_host.openai_base_url}"\n', encoding="utf-8")
        monkeypatch.setenv("BOOKSUM_CONFIG", str(config))
        result = CliRunner().invoke(cli, compare(book, tmp_path, local, "--judge", "openai:gpt-4o"))
        assert result.exit_code == 0, result.output
        assert models_seen(local) == {"gpt-4o-mini"} and models_seen(judge_host) == {"gpt-4o"}
    spec = choose_model("openai:gpt-4o", settings=LLMSettings(base_url="http://elsewhere/v1", config_path=config))
    assert spec.base_url == judge_host.openai_base_url and spec.info.input_usd_per_mtok == 2.5, "still priced"


def test_an_anthropic_judge_is_not_sent_to_the_summarizers_server(
    book: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    with FakeServer() as local, FakeServer() as anthropic:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.anthropic_base_url)
        result = CliRunner().invoke(cli, compare(book, tmp_path, local, "--judge", "anthropic:claude-haiku-4-5"))
        assert result.exit_code == 0, result.output
        assert models_seen(local) == {"gpt-4o-mini"} and {r.api for r in local.requests} == {"openai"}
        assert anthropic.call_count > 0 and {r.api for r in anthropic.requests} == {"anthropic"}


def test_judge_server_refusals_and_the_provider_api_word() -> None:
    base = LLMSettings(base_url="http://local:8000/v1")
    with pytest.raises(ConfigError, match="no judge is chosen"):
        judge_server(base, None, "http://x/v1")
    with pytest.raises(ConfigError, match="also summarizes"):
        judge_server(base, "openai:gpt-4o", "http://x/v1", summarizers=("openai:gpt-4o",))
    api = judge_server(base, "openai:gpt-4o", "api")
    assert api.servers == (("openai:gpt-4o", ""),)
    spec = choose_model("gpt-4o", settings=api, env={})
    assert spec.base_url is None, "an alias finds the judge's entry by its full name: the provider's API"
    assert choose_model("openai:gpt-4o-mini", settings=api, env={}).base_url == "http://local:8000/v1"
    assert judge_server(base, "openai:gpt-4o", None) is base, "an OpenAI-compatible judge keeps --base-url"


def test_score_sends_the_judge_to_its_own_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = tmp_path / "small.json"
    summaries.write_text('{"a.epub": "Mara keeps the bakery. Teo wants to sell it. They agree at last."}',
                         encoding="utf-8")
    with FakeServer() as other, FakeServer() as judge_host:
        result = CliRunner().invoke(cli, ["score", str(summaries), "--judge", "openai:gpt-4o-mini",
                                          "--base-url", other.openai_base_url, "--judge-base-url",
                                          judge_host.openai_base_url, "--cache-dir", str(tmp_path / "cache")])
        assert result.exit_code == 0, result.output
        assert other.call_count == 0 and judge_host.call_count > 0
