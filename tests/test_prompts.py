"""Prompt templates: packaged sets load, fields are checked, user files override by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.errors import PromptError
from booksum_app.prompts import TEMPLATE_FIELDS, load_template, parse_template, templates_signature

SUMMARIZATION = ("summarize_chunk", "merge", "merge_with_context", "inc_init", "inc_update", "compress", "clean")


@pytest.mark.parametrize("prompt_set", ["paper", "simple"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", SUMMARIZATION)
def test_every_summarization_template_loads_with_its_fields(prompt_set: str, lang: str, name: str) -> None:
    template = load_template(name, prompt_set=prompt_set, lang=lang)
    required, optional = TEMPLATE_FIELDS[name]
    assert required <= template.fields <= required | optional
    assert not template.text.startswith("#")
    assert len(template.version) == 6


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["ib", "ie"])
def test_direct_templates_put_the_instruction_where_cnnsum_does(lang: str, name: str) -> None:
    template = load_template(name, prompt_set="direct", lang=lang)
    body = template.render(text="BOOKTEXT", word_limit=100)
    instruction = "summary" if lang == "en" else "摘要"
    before, after = body.split("BOOKTEXT")
    if name == "ib":
        assert instruction in before.lower()
    else:
        assert "read the above" in after.lower() or "以上" in after


def test_paper_wording_is_app_j() -> None:
    text = load_template("merge_with_context").render(context="C", summaries="S", word_limit=585)
    assert text.startswith("Below is a summary of the context preceding some parts of a story:")
    assert "The summary must be within 585 words" in text
    assert load_template("compress").render(summary="x", current_words=10, word_limit=5).count("5 words") == 2


def test_simple_set_uses_llama2_wording_and_falls_back_to_paper_for_inc() -> None:
    simple = load_template("summarize_chunk", prompt_set="simple")
    assert simple.text != load_template("summarize_chunk").text
    assert "Write a coherent and chronological summary" in simple.text
    assert load_template("inc_update", prompt_set="simple") == load_template("inc_update")


def test_render_rejects_missing_and_unknown_fields() -> None:
    template = load_template("merge")
    with pytest.raises(PromptError, match="missing"):
        template.render(summaries="x")
    with pytest.raises(PromptError, match="unknown"):
        template.render(summaries="x", word_limit=3, text="y")


def test_override_directory_replaces_a_template_by_file_name(tmp_path: Path) -> None:
    (tmp_path / "merge.txt").write_text("# mine\nMerge these:\n{summaries}\nIn {word_limit} words.\n", encoding="utf-8")
    template = load_template("merge", override_dir=tmp_path)
    assert template.text == "Merge these:\n{summaries}\nIn {word_limit} words."
    assert template.version != load_template("merge").version
    assert load_template("clean", override_dir=tmp_path) == load_template("clean")  # not overridden


def test_override_with_wrong_fields_fails_at_load_time(tmp_path: Path) -> None:
    (tmp_path / "merge.txt").write_text("Merge {summaris} within {word_limit} words.", encoding="utf-8")
    with pytest.raises(PromptError, match="summaries"):
        load_template("merge", override_dir=tmp_path)


@pytest.mark.parametrize("raw", ["", "# only a header\n", "Bad {0} field", "Bad {text!r}", "Unclosed {text"])
def test_malformed_templates_raise_prompt_error(raw: str) -> None:
    with pytest.raises(PromptError):
        parse_template("custom", raw)


def test_unknown_template_or_language_says_how_to_fix() -> None:
    with pytest.raises(PromptError, match="built-in sets"):
        load_template("nope")
    with pytest.raises(PromptError):
        load_template("merge", lang="fr")


def test_signature_changes_with_any_template_text() -> None:
    a = [load_template(n) for n in ("merge", "summarize_chunk")]
    b = [load_template("merge"), parse_template("summarize_chunk", "Sum {text} in {word_limit} words")]
    assert templates_signature("paper", a) == templates_signature("paper", list(reversed(a)))
    assert templates_signature("paper", a) != templates_signature("paper", b)
    assert templates_signature("paper", a).startswith("paper-")
