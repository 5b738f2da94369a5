"""Issue 9 item 9: text from outside (titles, paths, model strings, server text) is printed as data.

Rich reads ``[...]`` as markup: an unescaped ``[/x]`` raises MarkupError, other brackets vanish.
Every field the CLI prints is fed hostile strings here; each must come out verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from booksum_app.cli import cli, handle_errors
from booksum_app.errors import ModelUnavailable
from booksum_app.testing.fake_server import FakeServer
from tests.book_fixtures import chapter, epub_files, write_zip

NASTY = (
    "[/x]",
    "[bold]b[/bold]",
    "[/]",
    "pip install 'booksum[local]'",
    "a\\[b] c\\",
    "[link=http://example.com]l[/link]",
    "{0} %s {title}",
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _nasty_epub(tmp_path: Path, nasty: str) -> Path:
    body = "Mara bakes bread in the town every morning and sells it by noon. " * 30
    docs = [("c1.xhtml", chapter(_xml(nasty), body)), ("c2.xhtml", chapter("Two " + _xml(nasty), body))]
    return write_zip(tmp_path / "book.epub", epub_files(docs, title=_xml(nasty), author=_xml(nasty)))


@pytest.mark.parametrize("nasty", NASTY)
def test_inspect_prints_titles_and_authors_verbatim(tmp_path: Path, nasty: str) -> None:
    code, stdout, stderr = invoke("inspect", str(_nasty_epub(tmp_path, nasty)), "-m", "openai:gpt-4o")
    assert code == 0, stderr
    assert f"{nasty} by {nasty}" in stdout


@pytest.mark.parametrize("nasty", NASTY)
def test_an_error_naming_a_hostile_path_is_one_verbatim_line(tmp_path: Path, nasty: str) -> None:
    missing = tmp_path / nasty.replace("/", "_") / "book.epub"
    code, _, stderr = invoke("inspect", str(missing))
    assert code == 3  # BookFormatError: no such book
    assert str(missing) in stderr and stderr.count("\n") == 1


@pytest.mark.parametrize("nasty", NASTY)
def test_summarize_with_hostile_output_path_and_title(
    tmp_path: Path, nasty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = tmp_path / nasty.replace("/", "_") / "out"
    with FakeServer() as server:
        code, _, stderr = invoke(
            "summarize", str(_nasty_epub(tmp_path, nasty)), "--model", "openai:fake",
            "--base-url", server.openai_base_url, "--strategy", "direct", "-o", str(out),
        )
    assert code == 0, stderr
    assert f"summary: {out}.md" in stderr
    assert out.with_suffix(".json").is_file()


@pytest.mark.parametrize("nasty", NASTY)
def test_score_prints_hostile_system_names_and_paths(tmp_path: Path, nasty: str) -> None:
    name = nasty.replace("/", "_")
    summaries = tmp_path / f"{name}.json"
    summaries.write_text(json.dumps({"book.epub": "Mara bakes bread. She sells it by noon."}), encoding="utf-8")
    report = tmp_path / f"{name}.csv"
    code, stdout, stderr = invoke("score", str(summaries), "--no-judge", "--csv", str(report))
    assert code == 0, stderr
    assert f"{name}: ngrams" in stdout
    assert f"wrote {report}" in stderr


@pytest.mark.parametrize("nasty", NASTY)
def test_error_text_from_a_server_or_package_is_printed_verbatim(nasty: str) -> None:
    @click.command()
    @handle_errors
    def failing() -> None:
        raise ModelUnavailable(f"server said {nasty}")

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == ModelUnavailable.exit_code
    assert f"server said {nasty}" in result.stderr
