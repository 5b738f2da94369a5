"""`compare --dataset` presets: CNNSum's release files and the benchmarks' own protocol, verbatim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from booksum_app.prompts import load_template
from booksum_app.runners.datasets import read_dataset, sample_run
from booksum_app.runners.experiment import DEFAULT_BUCKET_MAX_TOKENS, DatasetSpec
from booksum_app.runners.run_config import RunConfig

CONTEXT = "第一天，宋江来到梁山泊，说起了那年的大雪。\n\n第二天，林冲去了东京。"

# CNNSum prompts.json (CxsGhost/CNNSum), as the benchmark formats it with str.format
CNNSUM_PROMPTS = {
    "ie": "下面是一个小说节选，内容如下：\n\n{}\n\n请你阅读以上内容后写出相应的摘要，不要输出其他任何内容。\n\n摘要：",
    "ib": "下面是一个小说节选，请你阅读后写出相应的摘要，不要输出其他任何内容。\n小说节选如下：\n\n{}\n\n摘要：",
}
# CLongEval config/dataset2prompt.json "long_story_summarization"
CLONGEVAL_PROMPT = ("下面是一个小说节选，请你阅读后写出相应的摘要，不要输出其他任何内容。\n"
                    "小说节选如下：\n\n{}\n\n摘要：")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("stem", "bucket", "G"), [
    ("cnnsum_L_16k", "L", 400), ("cnnsum_XL_32k", "XL", 400), ("cnnsum_XXL_64k", "2XL", 500),
    ("cnnsum_XXXL_128k", "3XL", 500), ("cnnsum_2XL_64k", "2XL", 500), ("cnnsum_3XL_128k", "3XL", 500),
])
def test_cnnsum_release_names_give_the_subset_and_its_G(tmp_path: Path, stem: str, bucket: str, G: int) -> None:
    path = write_jsonl(tmp_path / f"{stem}.jsonl", [{"context": CONTEXT, "summary": "宋江来到梁山泊。"}] * 2)
    samples = read_dataset(DatasetSpec(path), bucket_max_tokens=dict(DEFAULT_BUCKET_MAX_TOKENS))
    assert [(s.bucket, s.max_new_tokens, s.benchmark, s.rouge_variant, s.overrides) for s in samples] == \
        [(bucket, G, "cnnsum", "cnnsum", ())] * 2


def test_cnnsum_keeps_an_id_field_when_the_file_has_one(tmp_path: Path) -> None:
    with_id = write_jsonl(tmp_path / "cnnsum_L_16k.jsonl", [
        {"id": "n-17", "context": CONTEXT, "summary": "甲。"}, {"id": "n-4", "context": CONTEXT, "summary": "乙。"}])
    assert [(s.sample_id, s.key) for s in read_dataset(DatasetSpec(with_id))] == [
        ("n-17", "cnnsum_L_16k--n-17.txt"), ("n-4", "cnnsum_L_16k--n-4.txt")]
    without = write_jsonl(tmp_path / "cnnsum_XL_32k.jsonl", [{"context": CONTEXT, "summary": "甲。"}])
    assert [s.sample_id for s in read_dataset(DatasetSpec(without))] == ["1"], "the release has none: the line"


def test_clongeval_G_is_400_in_every_bucket_and_overrides_are_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "large.jsonl", [{"id": "a", "context": CONTEXT, "answer": "宋江。"}])
    (sample,) = read_dataset(DatasetSpec(path), bucket_max_tokens=dict(DEFAULT_BUCKET_MAX_TOKENS))
    assert (sample.bucket, sample.max_new_tokens, sample.benchmark, sample.overrides) == ("large", 400, "clongeval", ())
    (sample,) = read_dataset(DatasetSpec(path, rouge_variant="rouge-score"), bucket_max_tokens={"large": 900})
    assert (sample.max_new_tokens, sample.rouge_variant, sample.overrides) == (900, "rouge-score", ("rouge", "G"))
    custom = read_dataset(DatasetSpec(path, "custom", reference_field="answer", id_field="id"))
    assert (custom[0].benchmark, custom[0].rouge_variant, custom[0].max_new_tokens) == (None, "rouge-score", None)


def test_direct_runs_the_benchmarks_decoding_prompts_and_no_cleanup(tmp_path: Path) -> None:
    cnnsum = read_dataset(DatasetSpec(write_jsonl(tmp_path / "cnnsum_L_16k.jsonl",
                                                  [{"context": CONTEXT, "summary": "甲。"}])))[0]
    clongeval = read_dataset(DatasetSpec(write_jsonl(tmp_path / "small.jsonl",
                                                     [{"id": "a", "context": CONTEXT, "answer": "甲。"}])))[0]
    direct = RunConfig(strategy="direct", lang="zh", max_summary_tokens=400)
    run = sample_run(direct, cnnsum)
    assert (run.temperature, run.top_p, run.clean, run.prompts) == (0.0, 1.0, False, "benchmark")
    assert sample_run(direct, clongeval).temperature == 0.01
    assert sample_run(RunConfig(strategy="hier", lang="zh"), cnnsum) == RunConfig(strategy="hier", lang="zh")
    assert sample_run(RunConfig(strategy="direct", prompts="simple"), cnnsum).prompts == "simple", "--prompts wins"
    assert sample_run(direct, None) == direct
    assert run.job_key(book_sha256="x", chunk_size=None) != direct.job_key(book_sha256="x", chunk_size=None)
    bundle = run.prompt_bundle()
    assert bundle.signature.startswith("benchmark-")
    assert bundle["ib"].render(text=CONTEXT) == CNNSUM_PROMPTS["ib"].format(CONTEXT)
    ie_run = RunConfig(strategy="direct", lang="zh", options={"direct_template": "ie"})
    ie = sample_run(ie_run, cnnsum).prompt_bundle()["ie"]
    assert ie.render(text=CONTEXT) == CNNSUM_PROMPTS["ie"].format(CONTEXT)
    assert CNNSUM_PROMPTS["ib"] == CLONGEVAL_PROMPT, "one template serves both benchmarks"


def test_direct_keeps_the_papers_wording_and_benchmark_the_released_one() -> None:
    # CNNSum App. F.1 prints 节选如下 / 以上节选 for Prompt-IE; its released prompts.json says 内容如下 / 以上内容
    ie = load_template("ie", prompt_set="direct", lang="zh")
    assert "节选如下" in ie.text and "以上节选" in ie.text and "{word_limit}" in ie.text
    released = load_template("ie", prompt_set="benchmark", lang="zh")
    assert "内容如下" in released.text and "以上内容" in released.text
    for name in ("ib", "ie"):
        for lang in ("en", "zh"):
            assert "word_limit" not in load_template(name, prompt_set="benchmark", lang=lang).fields
