"""The top-level library API: pinned names, lazily imported, mirroring the CLI."""

from __future__ import annotations

import subprocess
import sys

import booksum_app
from booksum_app.testing.fake_backend import FakeBackend

PUBLIC = {
    "Book", "Chapter", "LLMSettings", "STRATEGIES", "SummaryRecord", "__version__", "chunk_book",
    "get_model", "get_tokenizer", "inspect", "open_book", "read_record", "score", "RunConfig", "run_summary",
    "score_annotations", "score_summaries", "score_summary", "split_sentences", "summarize",
}


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert set(booksum_app.__all__) == PUBLIC == set(booksum_app._EXPORTS) | {"__version__"}
    for name in booksum_app.__all__:
        assert getattr(booksum_app, name) is not None


def test_importing_the_package_does_not_import_the_heavy_layers() -> None:
    code = ("import sys, booksum_app.errors; print(sorted(m for m in sys.modules "
            "if m.startswith(('openai', 'anthropic', 'nltk', 'booksum_app.runners'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_summarize_then_score_through_the_library(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from booksum_app.llm.calls import Client

    text = tmp_path / "story.txt"
    text.write_text(
        "Chapter 1\n\n" + " ".join(f"Anna walked to the mill on day {i}. She met Tom there." for i in range(60))
        + "\n\nChapter 2\n\n" + " ".join(f"Tom sold the mill in year {i}. Anna left town." for i in range(60)),
        encoding="utf-8",
    )
    with Client(FakeBackend()) as model:
        record = booksum_app.summarize(text, strategy="hier", model=model, chunk_size=256)
        assert record.summary.strip() and record.raw_summary.strip()
        result = booksum_app.score({"story": record.summary}, judge=model, sources=text)
        judge_only = booksum_app.score_summaries({"story": record.summary}, judge=model)
    assert result.booookscore is not None and 0.0 <= result.booookscore.system.score <= 1.0
    assert result.booookscore.system.score == judge_only.system.score
    assert "booookscore|" in result.booookscore.signature
    assert result.ngrams.novel_pct is not None, "the source was matched by file stem"
    assert result.failures is not None and result.failures.n_with_source == 1
    assert result.rows[0].book == "story" and result.rows[0].failures is not None


def test_library_score_takes_the_cli_settings_and_gives_the_cli_numbers(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json
    import warnings

    from click.testing import CliRunner

    from booksum_app.cli import cli
    from booksum_app.testing.fake_server import FakeServer

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    summaries = {"a.epub": "Anna walks to the mill. She meets Tom. Tom sells the mill.",
                 "b.epub": "Tom leaves the town. Anna runs the mill alone, and the story explores her grief."}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summaries), encoding="utf-8")
    references = {"a.epub": "Anna meets Tom at the mill, which he sells."}
    (tmp_path / "refs.json").write_text(json.dumps(references), encoding="utf-8")
    with FakeServer() as server:
        settings = booksum_app.LLMSettings(base_url=server.openai_base_url, concurrency=2, cache_dir=tmp_path / "c",
                                           timeout_s=30, max_cost_usd=1.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib = booksum_app.score(summaries, judge="openai:gpt-4o-mini", references=references, llm_settings=settings)
        cli_run = CliRunner().invoke(cli, ["score", str(path), "--judge", "openai:gpt-4o-mini", "--base-url",
                                           server.openai_base_url, "--cache-dir", str(tmp_path / "c"),
                                           "--references", str(tmp_path / "refs.json"), "--json", "-"])
    assert cli_run.exit_code == 0, cli_run.output
    system = json.loads(cli_run.stdout)["systems"][0]
    assert lib.booookscore is not None
    assert round(100 * lib.booookscore.system.score, 4) == round(system["booookscore"]["score"], 4)
    assert lib.ngrams.avg_tokens == system["ngrams"]["avg_tokens"]
    assert lib.rouge_l is not None and lib.n_with_reference == 1
    assert lib.failures is not None and lib.failures.counts["subjective"] == 1
    assert lib.totals.calls > 0, "the judge's calls are counted"
    assert not caught, [str(w.message) for w in caught]
    without = booksum_app.score(summaries)  # no judge named: everything but BooookScore, no model chosen
    assert without.booookscore is None and without.totals.calls == 0


PLUGIN_THINKING = {"Split", "ThinkWatch", "split_thinking"}


def test_the_plugin_surface_exports_the_think_split_and_a_thinking_plugin_gets_the_rules() -> None:
    """A backend written from ``booksum_app.plugin`` alone: its reasoning is removed, counted, and a reply
    that only reasoned ends the call with one line instead of being resent."""
    import pytest

    from booksum_app import plugin
    from booksum_app.llm.calls import Client
    from booksum_app.llm.retry_policy import ReasoningOnly

    assert PLUGIN_THINKING <= set(plugin.__all__)

    class Thinker(plugin.BackendBase):
        replies = ("<think>plan the answer</think>The keeper lit the lamps.", "<think>still planning")

        def __init__(self) -> None:
            super().__init__(plugin.ModelInfo(name="thinker:q", context_window=8192, tokenizer="estimate"))
            self.watch, self.sent = plugin.ThinkWatch("q"), 0

        def complete(self, request: plugin.Request) -> plugin.Completion:
            text = self.replies[min(self.sent, 1)]
            self.sent += 1
            split = self.watch.split(text, cut=self.sent > 1)
            return plugin.Completion(split.visible, "length" if self.sent > 1 else "stop", plugin.Usage(10, 20),
                                     think_chars_removed=split.removed_chars, reasoning_chars=len(split.reasoning))

    backend = Thinker()
    with Client(backend, max_attempts=6) as client:
        answer = client.complete(plugin.Request(prompt="Summarize.", max_tokens=50))
        assert answer.text == "The keeper lit the lamps."
        assert answer.think_chars_removed == len("<think>plan the answer</think>")
        with pytest.raises(ReasoningOnly, match="only reasoned"):
            client.complete(plugin.Request(prompt="Again.", max_tokens=50))
    assert backend.sent == 2 and backend.watch.seen
    assert plugin.split_thinking("He quoted </think> here.") == plugin.Split("He quoted </think> here.", "")
