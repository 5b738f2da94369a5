"""What a `compare --dataset` preset sends: each context verbatim, in the benchmark's request, once.

CNNSum (CxsGhost/CNNSum Inference.py) fills prompts.json's template with the sample's context by
``str.format`` and decodes once, greedily; CLongEval (zexuanqiu/CLongEval inference.py, API
models) sends its system message and the filled template at temperature 0.01, top-p 1, 400
tokens. Every request the fake received is checked against that, for generated contexts
(headings, indents, full-width indents, CRLF, blank lines, English and Chinese).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from booksum_app.llm.base import Completion, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.prompts import load_template
from booksum_app.runners.compare import run_compare
from booksum_app.runners.datasets import read_dataset
from booksum_app.runners.experiment import DatasetSpec, Experiment
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

# CxsGhost/CNNSum prompts.json, and CLongEval's system message (inference.py get_pred_gpt4)
CNNSUM_PROMPTS = {
    "ie": "下面是一个小说节选，内容如下：\n\n{}\n\n请你阅读以上内容后写出相应的摘要，不要输出其他任何内容。\n\n摘要：",
    "ib": "下面是一个小说节选，请你阅读后写出相应的摘要，不要输出其他任何内容。\n小说节选如下：\n\n{}\n\n摘要：",
}
CLONGEVAL_SYSTEM = "你是一个人工智能助手。你会为用户提供有帮助，准确的回答。"

HEADINGS = ("第一回　张天师祈禳瘟疫　洪太尉误走妖魔", "第二回 王教头私走延安府", "CHAPTER I", "Chapter 2. The Storm",
            "序", "Preface", "卷一", "PART ONE")
ZH_LINES = ("宋江来到梁山泊，说起了那年的大雪。", "林冲去了东京，见了高太尉。", "武松在景阳冈打死了一只老虎。",
            "“你从哪里来？”他问道。")
EN_LINES = ("Ada walked to the harbour and spoke about the storm.", "Bruno read in the library until dark.",
            '"Where are you going?" she asked.', "The mill stood still that winter.")
INDENTS = ("", "  ", "    ", "\u3000\u3000", "\t", " \u3000")
BREAKS = ("\n", "\r\n", "\n\n", "\r\n\r\n", "\n \n", "\n\u3000\n", "\n\n\n")


@st.composite
def contexts(draw: Any, lines: tuple[str, ...]) -> str:
    """A context as releases hold them: headings and text lines, any indent, any line break."""
    pieces = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        kind = draw(st.sampled_from(("heading", "line", "line", "free")))
        if kind == "heading":
            body = draw(st.sampled_from(HEADINGS))
        elif kind == "line":
            body = draw(st.sampled_from(lines))
        else:  # any printable text, the JSON line separators U+2028/U+0085 included
            body = draw(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                                min_size=1, max_size=30))
        pieces.append(draw(st.sampled_from(INDENTS)) + body + draw(st.sampled_from(BREAKS)))
    text = draw(st.sampled_from(("", " ", "\n", "\u3000"))) + "".join(pieces)
    if not text.strip():
        text += lines[0]
    return text


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def expected_prompt(template: str, context: str, lang: str) -> str:
    """The benchmark's own prompt: prompts.json's template (zh) or its English wording, str.format'ed."""
    if lang == "zh":
        return CNNSUM_PROMPTS[template].format(context)
    return load_template(template, prompt_set="benchmark", lang="en").text.replace("{text}", "{}").format(context)


def cut_off(request: Request) -> Completion:
    """Every answer stops at max_tokens without a sentence end: booksum's own rule would regenerate it."""
    return Completion(text="一个没有写完的摘要", finish_reason="length", usage=Usage(100, request.max_tokens),
                      model="fake-model")


def run_presets(root: Path, zh: list[str], en: list[str], *, regenerate: bool = False,
                reply: Any = cut_off) -> tuple[FakeBackend, Any, dict[str, tuple[str, str, str]]]:
    """CNNSum- and CLongEval-format files of these contexts, run with direct ib and ie; the fake, the result,
    and each sample key's (text, benchmark, language)."""
    cnnsum = write_jsonl(root / "cnnsum_L_16k.jsonl", [{"context": c, "summary": "宋江来到梁山泊。"} for c in zh + en])
    clongeval = write_jsonl(root / "small.jsonl", [{"id": f"s{i}", "context": c, "answer": "林冲去了东京。"}
                                                   for i, c in enumerate(en + zh)])
    samples = {s.key: (s, bench) for path, bench in ((cnnsum, "cnnsum"), (clongeval, "clongeval"))
               for s in read_dataset(DatasetSpec(path))}
    exp = Experiment(datasets=(DatasetSpec(cnnsum), DatasetSpec(clongeval)), strategies=("direct",),
                     models=("fake",), options=(("direct_template", ("ib", "ie")),), out=root / "out",
                     use_judge=False, regenerate=regenerate)
    backend = FakeBackend(reply=reply)
    result = run_compare(exp, models={"fake": Client(backend, concurrency=2)}, plots=False)
    return backend, result, {k: (s.book.text(), bench, s.lang) for k, (s, bench) in samples.items()}


# each example is a whole compare run: few examples, no shrinking (a failure prints its contexts)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=(Phase.explicit, Phase.reuse, Phase.generate))
@example(zh=["第一回\u3000张天师祈禳瘟疫\n"], en=["第一回\u3000张天师祈禳瘟疫\n"])  # one context in both files
@given(zh=st.lists(contexts(ZH_LINES), min_size=1, max_size=2), en=st.lists(contexts(EN_LINES), min_size=1, max_size=2))
def test_every_request_carries_its_context_verbatim_once_greedily(zh: list[str], en: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        backend, result, samples = run_presets(Path(tmp), zh, en)
    n_samples = 2 * (len(zh) + len(en))
    assert backend.call_count == 2 * n_samples, "one call per sample and template, cut-off answers not regenerated"
    for context, _, _ in samples.values():
        assert context in zh + en, "a sample's text is its context, byte for byte"
    # the benchmarks' requests: CNNSum Inference.py a bare prompt, greedy; CLongEval get_pred_gpt4 its
    # system message at 0.01; each (template, sample) once
    expected = []
    for row in result.rows:
        for book in row.books:
            context, bench, lang = samples[book.book]
            assert book.summary == "一个没有写完的摘要", "the raw answer is the summary scored"
            system, temperature = (None, 0.0) if bench == "cnnsum" else (CLONGEVAL_SYSTEM, 0.01)
            expected.append((expected_prompt(row.name[-2:], context, lang), system, temperature, 1.0, 400, "", ()))
    sent = [(r.prompt, r.system, r.temperature, r.top_p, r.max_tokens, r.shared_prefix, r.stop) for r in backend.calls]
    assert sorted(sent, key=repr) == sorted(expected, key=repr)


def test_one_call_per_sample_and_the_signature_says_so(tmp_path: Path) -> None:
    backend, result, samples = run_presets(tmp_path, [ZH_LINES[0] + "\r\n\u3000\u3000" + ZH_LINES[1]], [EN_LINES[0]])
    assert backend.call_count == 2 * len(samples)
    record = json.loads(next((tmp_path / "out" / "records").glob("*/cnnsum_L_16k--1.json")).read_text("utf-8"))
    assert len(record["calls"]) == 1 and record["calls"][0]["temperature"] == 0.0
    assert record["config"]["decoding"] == "once" and record["config"]["max_tries"] == 1
    assert "|temp:0.0|decode:once|" in record["signature"]
    clong = json.loads(next((tmp_path / "out" / "records").glob("*/small--s0.json")).read_text("utf-8"))
    assert "|temp:0.01|decode:once|system:" in clong["signature"], "CLongEval's system message is signed"
    for row in result.rows:
        assert all("overrides" not in sig for d in row.datasets for sig in (x.rouge_signature for x in d.samples))


def test_regenerate_is_asked_for_and_shows_in_the_signature(tmp_path: Path) -> None:
    backend, result, samples = run_presets(tmp_path, [ZH_LINES[0]], [EN_LINES[0]], regenerate=True)
    assert backend.call_count == 2 * len(samples) * 4, "booksum's rule: 1 try + 3 regenerations of a cut-off answer"
    assert {r.temperature for r in backend.calls} == {0.0, 0.01, 1.0}
    for row in result.rows:
        assert all("overrides:decoding" in sig for d in row.datasets for sig in (x.rouge_signature for x in d.samples))


def test_the_fake_server_receives_each_benchmarks_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    zh = "第一回　张天师祈禳瘟疫\r\n\r\n\u3000\u3000" + ZH_LINES[0] + "\n\n\n  " + ZH_LINES[1]
    cnnsum = write_jsonl(tmp_path / "cnnsum_XXL_64k.jsonl", [{"context": zh, "summary": "宋江。"}])
    clongeval = write_jsonl(tmp_path / "medium.jsonl", [{"id": "a", "context": zh, "answer": "宋江。"}])
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "compare", "--dataset", str(cnnsum), "--dataset", str(clongeval), "--strategies", "direct",
            "--models", "openai:gpt-4o-mini", "--no-judge", "--base-url", server.openai_base_url,
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots"],
            catch_exceptions=False)
        assert result.exit_code == 0, result.output
        payloads = [r.payload for r in server.requests]
    assert len(payloads) == 2
    prompt = CNNSUM_PROMPTS["ib"].format(zh)
    by_system = {len(p["messages"]): p for p in payloads}
    bare, chat = by_system[1], by_system[2]
    assert bare["messages"] == [{"role": "user", "content": prompt}]
    assert (bare["temperature"], bare["top_p"], limit(bare)) == (0.0, 1.0, 500), "CNNSum 2XL: 500"
    assert chat["messages"] == [{"role": "system", "content": CLONGEVAL_SYSTEM}, {"role": "user", "content": prompt}]
    assert (chat["temperature"], chat["top_p"], limit(chat)) == (0.01, 1.0, 400)
    assert "stop" not in bare and "stop" not in chat


def limit(payload: dict[str, Any]) -> int:
    return int(payload.get("max_tokens", payload.get("max_completion_tokens", 0)))


def test_a_context_holding_a_unicode_line_separator_is_one_sample(tmp_path: Path) -> None:
    # JSON Lines ends records at "\n" only; U+2028 and U+0085 inside a string are the context's
    context = "宋江来到梁山泊。\u2028林冲去了东京。\u0085武松打虎。"
    path = write_jsonl(tmp_path / "cnnsum_L_16k.jsonl", [{"context": context, "summary": "宋江。"}] * 2)
    samples = read_dataset(DatasetSpec(path))
    assert [s.book.text() for s in samples] == [context, context]


def test_six_formats_of_one_context_are_six_prompts(tmp_path: Path) -> None:
    # the book reader made one prompt of all six (headings to titles, breaks doubled, indents dropped)
    body = ZH_LINES[0] + "\n" + ZH_LINES[1]
    variants = [body, "第一回 张天师祈禳瘟疫\n" + body, "\u3000\u3000" + body.replace("\n", "\n\u3000\u3000"),
                body.replace("\n", "\r\n"), body.replace("\n", "\n\n"), "  " + body + "\n"]
    backend, _, _ = run_presets(tmp_path, variants, [])
    head = CNNSUM_PROMPTS["ib"].split("{}")[0]
    cnnsum_ib = {r.prompt for r in backend.calls if r.system is None and r.prompt.startswith(head)}
    assert cnnsum_ib == {CNNSUM_PROMPTS["ib"].format(v) for v in variants} and len(cnnsum_ib) == 6


def test_regenerate_in_an_experiment_file(tmp_path: Path) -> None:
    from booksum_app.errors import ConfigError
    from booksum_app.runners.experiment import build_experiment, load_experiment

    good = tmp_path / "exp.toml"
    good.write_text("regenerate = true\n", encoding="utf-8")
    assert build_experiment(load_experiment(good), {}).regenerate is True
    assert Experiment().regenerate is False, "the benchmark's one call unless asked"
    bad = tmp_path / "bad.toml"
    bad.write_text('regenerate = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="regenerate must be true or false"):
        load_experiment(bad)


@pytest.mark.parametrize("temperature", [None, 0.7, 0.0])  # 0.0: CNNSum's own value, set by the user: signed
def test_the_users_temperature_wins_over_the_preset_and_is_signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   temperature: float | None) -> None:
    """`compare --dataset cnnsum_L_16k.jsonl --temperature T` sends T, signs overrides:temperature and says so;
    without the option the preset's own temperature is sent and nothing is signed."""
    from click.testing import CliRunner

    from booksum_app.cli import cli

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    cnnsum = write_jsonl(tmp_path / "cnnsum_L_16k.jsonl", [{"context": ZH_LINES[0], "summary": "宋江。"}])
    clongeval = write_jsonl(tmp_path / "small.jsonl", [{"id": "a", "context": ZH_LINES[1], "answer": "林冲。"}])
    option = [] if temperature is None else ["--temperature", str(temperature)]
    with FakeServer() as server:
        result = CliRunner().invoke(cli, [
            "compare", "--dataset", str(cnnsum), "--dataset", str(clongeval), "--strategies", "direct",
            "--models", "openai:gpt-4o-mini", "--no-judge", "--base-url", server.openai_base_url,
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-plots", "--json", "-",
            *option], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        sent = sorted((len(r.payload["messages"]), r.payload["temperature"]) for r in server.requests)
    own = [(1, 0.0), (2, 0.01)]  # CNNSum: a bare prompt, greedy; CLongEval: its system message, 0.01
    assert sent == (own if temperature is None else [(1, temperature), (2, temperature)])
    results = json.loads(result.stdout)
    signatures = [s for row in results["rows"] for d in row["datasets"] for s in d["rouge_signatures"]]
    assert len(signatures) == 2
    said = "replaces the benchmark presets' decoding temperature" in result.stderr
    if temperature is None:
        assert not any("overrides" in s for s in signatures) and not said
    else:
        assert all("overrides:temperature" in s for s in signatures) and said
        records = [json.loads(p.read_text("utf-8")) for p in (tmp_path / "out" / "records").glob("*/*.json")]
        assert records and all(f"|temp:{temperature}|" in r["signature"] for r in records)


def test_a_custom_dataset_takes_the_users_temperature_without_an_override(tmp_path: Path) -> None:
    """Without a preset there is no protocol to override: --temperature is plain booksum's, nothing signed or said."""
    from booksum_app.runners.datasets import preset_override_note

    path = write_jsonl(tmp_path / "mine.jsonl", [{"context": EN_LINES[0], "summary": "Ada."}])
    custom = Experiment(datasets=(DatasetSpec(path, preset="custom"),), strategies=("direct",), temperature=0.7)
    assert preset_override_note(custom) is None
    preset = Experiment(datasets=(DatasetSpec(path),), strategies=("direct",), temperature=0.7)
    assert preset_override_note(preset) is not None
    assert preset_override_note(Experiment(datasets=(DatasetSpec(path),), strategies=("direct",))) is None
