"""`booksum compare --dataset`: benchmark JSONL read, ROUGE-L by length bucket, IB/IE MSE, end to end."""

from __future__ import annotations

import csv
import json
import re
import statistics
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import BOOKS_DIR

from booksum_app.cli import cli
from booksum_app.errors import ConfigError, InputError
from booksum_app.llm.calls import Client
from booksum_app.runners.compare import run_compare
from booksum_app.runners.compare_plan import plan_grid
from booksum_app.runners.datasets import read_dataset
from booksum_app.runners.experiment import DatasetSpec, Experiment, build_experiment
from booksum_app.scoring.buckets import (
    DatasetScores,
    SampleScore,
    bucket_mse,
    dataset_scores,
    moving_median,
    quartile_buckets,
)
from booksum_app.signature import rules_version
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_server import FakeServer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SHUIHU = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"

# ---- independent ROUGE-L (not booksum's code): plain LCS table, rouge-score tokens, jieba words ----


def lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[len(a)][len(b)]


def words(text: str, lang: str) -> list[str]:
    if lang == "zh":
        import jieba

        return [w for w in jieba.lcut(text.lower()) if w.strip() and not all(
            c.isspace() or unicodedata.category(c)[0] in "PS" for c in w)]
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def rouge_l_f(candidate: str, reference: str, lang: str) -> float:
    c, r = words(candidate, lang), words(reference, lang)
    n = lcs(c, r)
    if not c or not r or n == 0:
        return 0.0
    p, rec = n / len(c), n / len(r)
    return 2 * p * rec / (p + rec)


# ---- datasets built in the tests -------------------------------------------------------------

EN_PEOPLE = ("Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid")
EN_PLACES = ("harbour", "library", "orchard", "station", "market", "mill")
ZH_PEOPLE = ("宋江", "林冲", "武松", "鲁智深", "李逵", "吴用")
ZH_PLACES = ("梁山泊", "东京", "沧州", "景阳冈", "五台山", "郓城县")


def en_context(i: int, sentences: int) -> str:
    lines = []
    for s in range(sentences):
        who, where = EN_PEOPLE[(i + s) % 6], EN_PLACES[(2 * i + s) % 6]
        lines.append(f"On day {s}, {who} walked to the {where} and spoke about the storm of year {i}.")
    return "\n\n".join(" ".join(lines[k:k + 4]) for k in range(0, len(lines), 4))


def zh_context(i: int, sentences: int) -> str:
    lines = []
    for s in range(sentences):
        who, where = ZH_PEOPLE[(i + s) % 6], ZH_PLACES[(2 * i + s) % 6]
        lines.append(f"第{s + 1}天，{who}来到{where}，说起了那年的大雪和{i}匹好马。")
    return "\n\n".join("".join(lines[k:k + 4]) for k in range(0, len(lines), 4))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def en_dataset(tmp_path: Path) -> Path:
    """CLongEval-shaped English set (context, answer, id), eight samples of growing length."""
    rows = [{"id": f"story-{i}", "context": en_context(i, 8 + 4 * i),
             "answer": f"{EN_PEOPLE[i % 6]} walked to the {EN_PLACES[(2 * i) % 6]} and spoke about the storm."}
            for i in range(8)]
    return write_jsonl(tmp_path / "lstsum-en.jsonl", rows)


@pytest.fixture()
def zh_dataset(tmp_path: Path) -> Path:
    """CNNSum-shaped Chinese L subset (context, summary; the line is the id)."""
    rows = [{"context": zh_context(i, 8 + 3 * i),
             "summary": f"{ZH_PEOPLE[i % 6]}来到{ZH_PLACES[(2 * i) % 6]}，说起了大雪。"}
            for i in range(5)]
    return write_jsonl(tmp_path / "CNNSum_L.jsonl", rows)


# ---- reading ---------------------------------------------------------------------------------


def test_presets_detected_buckets_from_the_file_name_or_quartiles(en_dataset: Path, zh_dataset: Path) -> None:
    zh = read_dataset(DatasetSpec(zh_dataset), bucket_max_tokens={"L": 400, "XL": 400})
    assert [s.sample_id for s in zh] == ["1", "2", "3", "4", "5"], "CNNSum has no id: the line number"
    assert {s.bucket for s in zh} == {"L"} and {s.max_new_tokens for s in zh} == {400}
    assert {s.lang for s in zh} == {"zh"} and zh[0].reference.endswith("说起了大雪。")
    assert zh[0].key == "CNNSum_L--1.txt" and zh[0].book.chapters and all(c.narrative for c in zh[0].book.chapters)
    assert "".join(zh[0].book.text().split()) == "".join(zh_context(0, 8).split()), "the whole context, as a Book"
    en = read_dataset(DatasetSpec(en_dataset), bucket_max_tokens={"L": 400})
    assert [s.sample_id for s in en][:2] == ["story-0", "story-1"] and {s.lang for s in en} == {"en"}
    assert [s.bucket for s in en] == ["Q1", "Q1", "Q2", "Q2", "Q3", "Q3", "Q4", "Q4"], "no bucket named: quartiles"
    assert {s.max_new_tokens for s in en} == {400}, "the clongeval preset: CLongEval's G (dataset2maxlen.json)"
    assert {(s.benchmark, s.rouge_variant) for s in en} == {("clongeval", "clongeval")}
    assert {(s.benchmark, s.rouge_variant) for s in zh} == {("cnnsum", "cnnsum")}
    assert [s.length_tokens for s in en] == sorted(s.length_tokens for s in en)


@pytest.mark.parametrize(("stem", "bucket"), [
    ("CNNSum_2XL", "2XL"), ("3xl", "3XL"), ("cnnsum-XL", "XL"), ("lstsum_large", "large"), ("Medium", "medium"),
    ("novel", "Q1"), ("full", "Q1"), ("html", "Q1"),
])
def test_bucket_from_the_file_name(tmp_path: Path, stem: str, bucket: str) -> None:
    path = write_jsonl(tmp_path / f"{stem}.jsonl", [{"context": en_context(1, 4), "summary": "Ada walked."}])
    assert read_dataset(DatasetSpec(path))[0].bucket == bucket


def test_experiment_file_datasets_and_limits(tmp_path: Path, zh_dataset: Path) -> None:
    from booksum_app.runners.experiment import load_experiment

    path = tmp_path / "exp.toml"
    path.write_text('datasets = ["CNNSum_L.jsonl"]\nstrategies = ["direct"]\ndirect_template = "both"\n'
                    "bucket_max_tokens = {L = 300, 3XL = 600}\n", encoding="utf-8")
    exp = build_experiment(load_experiment(path), {})
    assert exp.datasets == (DatasetSpec(zh_dataset),) and exp.bucket_max_tokens == (("L", 300), ("3XL", 600))
    assert [c.slug for c in exp.grid()] == ["default-direct-ib", "default-direct-ie"]
    path.write_text("bucket_max_tokens = {L = 8}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="at least 16"):
        build_experiment(load_experiment(path), {})


def test_custom_fields_and_bucket_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [
        {"text": en_context(1, 6), "gold": ["First half.", "Second half."], "n": 7, "size": "XL"},
        {"text": en_context(2, 6), "gold": "Another.", "n": 8, "size": "2XL"},
    ])
    spec = DatasetSpec(path, "custom", context_field="text", reference_field="gold", id_field="n", bucket_field="size")
    samples = read_dataset(spec, bucket_max_tokens={"XL": 400, "2XL": 500})
    assert [(s.sample_id, s.bucket, s.max_new_tokens) for s in samples] == [("7", "XL", 400), ("8", "2XL", 500)]
    assert samples[0].reference == "First half.\nSecond half."


@pytest.mark.parametrize(("lines", "message"), [
    (['{"context": "a b c", "summary": "a"}', "{not json"], "line 2: not JSON"),
    (['["context", "summary"]'], "line 1: a JSON list, not an object"),
    (['{"context": "a b c", "summary": "a"}', "", '{"context": "x y"}'], "line 3: no reference field 'summary'"),
    (['{"context": "a b c", "summary": "  "}'], "line 1: the reference field 'summary' is empty"),
    (['{"context": 5, "summary": "a"}'], "line 1: the context field 'context' is not text"),
    (['{"id": 1, "context": "a", "answer": "b"}', '{"id": 1, "context": "c", "answer": "d"}'],
     "line 2: id '1' already used on line 1"),
    ([], "no samples"),
])
def test_a_bad_line_is_refused_with_its_number(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as info:
        read_dataset(DatasetSpec(path))
    assert "\n" not in str(info.value)


def test_missing_dataset_file_is_an_input_error(tmp_path: Path) -> None:
    exp = Experiment(datasets=(DatasetSpec(tmp_path / "nope.jsonl"),), models=("fake",), out=tmp_path / "o")
    with pytest.raises(InputError, match="nope.jsonl: cannot read"):
        run_compare(exp, models={"fake": Client(FakeBackend())}, plots=False)


# ---- pure aggregation ------------------------------------------------------------------------


def test_quartiles_moving_median_and_mse_by_hand() -> None:
    assert quartile_buckets([10, 20, 30, 40, 50, 60, 70, 80, 90]) == ["Q1"] * 3 + ["Q2"] * 2 + ["Q3"] * 2 + ["Q4"] * 2
    assert quartile_buckets([5]) == ["Q1"] and quartile_buckets([]) == []
    points = [("a", 1, 10.0), ("b", 2, 30.0), ("c", 3, 20.0), ("d", 4, 0.0)]
    assert moving_median(points, window=3) == (((2.0, 20.0), (3.0, 20.0)), 3)
    assert moving_median(points, window=15) == (((2.5, 15.0),), 4), "fewer samples than the window: one point"
    scores = [SampleScore("d", f"s{i}", 100 * i, "L" if i < 2 else "XL", r) for i, r in enumerate((0.1, 0.3, 0.5))]
    (d,) = dataset_scores(scores, window=2)
    assert d.rouge_l == pytest.approx(30.0) and d.mean_length_tokens == pytest.approx(100.0)
    assert [(b.bucket, b.n, round(b.rouge_l, 6)) for b in d.buckets] == [("L", 2, 20.0), ("XL", 1, 50.0)]
    other = DatasetScores("d", 3, 0.0, 0.0, (d.buckets[0].__class__("L", 2, 23.0, 0, 0, 0),
                                             d.buckets[1].__class__("XL", 1, 46.0, 0, 0, 0)), (), 0)
    assert bucket_mse(d, other) == pytest.approx((3.0 ** 2 + 4.0 ** 2) / 2)


# ---- end to end --------------------------------------------------------------------------------


def benchmark_rouge_l_f(candidate: str, reference: str, variant: str) -> float:
    """CLongEval's / CNNSum's metric with the PyPI rouge 1.0.1 package itself (the dev extra installs it;
    without it, booksum's reimplementation, which tests/test_rouge_variants.py checks against the package)."""
    import sys

    import jieba

    if candidate == "" or (variant == "cnnsum" and set(candidate) == {"."}):
        return 0.0
    hyp, ref = " ".join(jieba.cut(candidate, cut_all=False)), " ".join(jieba.cut(reference, cut_all=False))
    try:
        import rouge
    except ImportError:
        from booksum_app.scoring.rouge import package_rouge_l

        return package_rouge_l(hyp, ref).fmeasure
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # as both benchmarks do
    return float(rouge.Rouge().get_scores(hyp, ref)[0]["rouge-l"]["f"])


def _variant(signature: str) -> str:
    return dict(part.partition(":")[::2] for part in signature.split("|")[1:])["variant"]


def _check_row_against_independent_rouge(row: dict[str, Any], summaries: dict[str, str],
                                         references: dict[str, tuple[str, str]]) -> None:
    variants = {d["dataset"]: _variant(d["rouge_signatures"][0]) for d in row["datasets"]}
    for book in row["books"]:
        reference, lang = references[book["book"]]
        variant = variants[book["book"].split("--")[0]]
        if variant == "rouge-score":
            expected = 100 * rouge_l_f(summaries[book["book"]], reference, lang)
        else:
            expected = 100 * benchmark_rouge_l_f(summaries[book["book"]], reference, variant)
        assert book["rouge_l"] == pytest.approx(expected, abs=1e-3), book["book"]
        assert book["lang"] == lang
        assert book["summary_tokens"] == book["tokens"], "cl100k summary length, as the n-gram statistics count it"
    for d in row["datasets"]:
        mine = [b["rouge_l"] for b in row["books"] if b["book"].startswith(d["dataset"] + "--")]
        assert d["n_samples"] == len(mine) and d["rouge_l"] == pytest.approx(statistics.fmean(mine), abs=1e-3)
        lengths = [b["summary_tokens"] for b in row["books"] if b["book"].startswith(d["dataset"] + "--")]
        assert d["mean_summary_tokens"] == pytest.approx(statistics.fmean(lengths), abs=0.01)
        for bucket in d["buckets"]:
            part = [b["rouge_l"] for b in row["books"]
                    if b["book"].startswith(d["dataset"] + "--") and b["bucket"] == bucket["bucket"]]
            assert bucket["rouge_l"] == pytest.approx(statistics.fmean(part), abs=1e-3)


def _references(*paths: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for path in paths:
        for s in read_dataset(DatasetSpec(path)):
            out[s.key] = (s.reference, s.lang)
    return out


def test_hier_and_direct_ib_ie_on_chinese_and_english(en_dataset: Path, zh_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    exp = Experiment(datasets=(DatasetSpec(en_dataset), DatasetSpec(zh_dataset)), strategies=("hier", "direct"),
                     models=("fake",), chunk_sizes=(128,), max_summary_tokens=60,
                     options=(("direct_template", ("ib", "ie")),), out=out, use_judge=False)
    backend = FakeBackend()
    model = Client(backend, concurrency=4)
    result = run_compare(exp, models={"fake": model})
    assert [r.name for r in result.rows] == ["fake-model-128-hier", "fake-model-direct-ib", "fake-model-direct-ie"]
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    references = _references(en_dataset, zh_dataset)
    for row in data["rows"]:
        assert row["n_books"] == 13 and [d["dataset"] for d in row["datasets"]] == ["lstsum-en", "CNNSum_L"]
        summaries = json.loads((out / "summaries" / f"{row['name']}.json").read_text(encoding="utf-8"))
        assert sorted(summaries) == sorted(references)
        _check_row_against_independent_rouge(row, summaries, references)
        assert any(b["rouge_l"] > 0 for b in row["books"]), "extractive summaries share words with references"
        zh = row["datasets"][1]
        assert [b["bucket"] for b in zh["buckets"]] == ["L"] and zh["moving_median"]["window"] == 5
        assert [g.rsplit("|v:", 1)[0] for g in zh["rouge_signatures"]] == [
            ("rougeL|variant:cnnsum|impl:rouge-1.0.1|tok:jieba-joined|punct:kept|lcs:distinct-words|lang:zh"
             f"|rules:{rules_version('rouge')}|preset:cnnsum")]
        assert [b["id"] for b in row["books"]][-5:] == ["1", "2", "3", "4", "5"], "the dataset's id (here: line)"
        en = row["datasets"][0]
        assert [b["bucket"] for b in en["buckets"]] == ["Q1", "Q2", "Q3", "Q4"]
    # CNNSum's per-bucket limit: L -> 400, quartiles -> G
    for config in ("fake-model-direct-ib", "fake-model-direct-ie"):
        record = json.loads((out / "records" / config / "CNNSum_L--1.json").read_text(encoding="utf-8"))
        assert record["config"]["max_summary_tokens"] == 400
        assert record["config"]["direct_template"] == config[-2:]
        assert (record["config"]["temperature"], record["config"]["clean"]) == (0.0, False), "CNNSum: greedy, raw"
        assert record["config"]["prompt_signature"].startswith("benchmark-")
        record = json.loads((out / "records" / config / "lstsum-en--story-0.json").read_text(encoding="utf-8"))
        assert record["config"]["max_summary_tokens"] == 400, "CLongEval's G, not --max-summary-len"
        assert (record["config"]["temperature"], record["config"]["clean"]) == (0.01, False)
    hier = json.loads((out / "records" / "fake-model-128-hier" / "CNNSum_L--1.json").read_text(encoding="utf-8"))
    assert (hier["config"]["temperature"], hier["config"]["clean"]) == (0.5, True), "hier is not the benchmark's method"
    ib, ie = data["rows"][1], data["rows"][2]
    gaps = {g["dataset"]: g for g in data["template_gaps"]}
    for ib_d, ie_d in zip(ib["datasets"], ie["datasets"], strict=True):
        diffs = [(a["rouge_l"] - b["rouge_l"]) ** 2 for a, b in zip(ib_d["buckets"], ie_d["buckets"], strict=True)]
        assert gaps[ib_d["dataset"]]["mse"] == pytest.approx(statistics.fmean(diffs), abs=1e-3)
    rows = list(csv.DictReader((out / "results_datasets.csv").read_text(encoding="utf-8").splitlines()))
    assert len(rows) == 3 * (1 + 4 + 1 + 1), "per configuration: each dataset overall plus its buckets"
    first = rows[0]
    assert first["bucket"] == "all" and float(first["rouge_l"]) == pytest.approx(
        data["rows"][0]["datasets"][0]["rouge_l"]
    )
    png = out / "plots" / "rouge_vs_length.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png in result.files
    assert "CNNSum_L (window 5)" in (out / "plots" / "rouge_vs_length.svg").read_text(encoding="utf-8")
    calls = backend.call_count
    again = run_compare(exp, models={"fake": model}, plots=False)
    assert again.reused == 3 * 13 and backend.call_count == calls, "finished records are reused, no call made"


def test_plan_counts_samples_and_a_new_bucket_limit_reruns(zh_dataset: Path, tmp_path: Path) -> None:
    exp = Experiment(datasets=(DatasetSpec(zh_dataset),), strategies=("direct",), models=("openai:gpt-4o-mini",),
                     out=tmp_path / "o", use_judge=False)
    plan = plan_grid(exp)
    assert [(line.name, line.remaining) for line in plan.lines] == [("openai-gpt-4o-mini-direct", 5)]
    assert plan.output_tokens >= 5 * 400 and plan.cost_usd > 0
    model = Client(FakeBackend(), concurrency=2)
    local = Experiment(datasets=exp.datasets, strategies=("direct",), models=("fake",), out=tmp_path / "p",
                       use_judge=False)
    assert run_compare(local, models={"fake": model}, plots=False).reused == 0
    assert run_compare(local, models={"fake": model}, plots=False).reused == 5
    changed = Experiment(datasets=exp.datasets, strategies=("direct",), models=("fake",), out=tmp_path / "p",
                         use_judge=False, bucket_max_tokens=(("L", 300),))
    assert run_compare(changed, models={"fake": model}, plots=False).reused == 0, "G is part of the job key"


def test_samples_are_judged_like_books_when_a_judge_is_chosen(zh_dataset: Path, tmp_path: Path) -> None:
    exp = Experiment(datasets=(DatasetSpec(zh_dataset),), strategies=("direct",), models=("fake",),
                     out=tmp_path / "o", judge="fake")
    result = run_compare(exp, models={"fake": Client(FakeBackend())}, judge_model=Client(FakeBackend()), plots=False)
    (row,) = result.rows
    assert row.booookscore is not None and len(row.judgements()) == 5 and len(row.datasets[0].samples) == 5


def test_cli_dataset_run_against_the_fake_server(en_dataset: Path, zh_dataset: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = tmp_path / "out"
    with FakeServer() as server:
        args = ["compare", "--dataset", str(en_dataset), "--dataset", str(zh_dataset), "--strategies", "hier,direct",
                "--direct-template", "both", "--models", "openai:gpt-4o-mini", "--chunk-sizes", "256",
                "--bucket-max-tokens", "L=80,Q1=80,Q2=80,Q3=80,Q4=80", "--no-judge",
                "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--no-plots"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        calls = server.call_count
        assert calls > 0
        again = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert again.exit_code == 0 and server.call_count == calls, "a rerun makes no call"
    assert "Benchmark datasets" in result.output and "MSE IB/IE" in result.output
    assert "rougeL|variant:cnnsum|" in result.output and "rougeL|variant:clongeval|" in result.output
    assert "preset:cnnsum|overrides:G|" in result.output and "preset:clongeval|overrides:G|" in result.output
    assert "G:80|prompts:benchmark-" in result.output and "temp:0.0|decode:once|clean:off" in result.output
    assert "MSE IB/IE, openai:gpt-4o-mini direct: " in result.output and "(mean over 2 datasets)" in result.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    references = _references(en_dataset, zh_dataset)
    for row in data["rows"]:
        summaries = json.loads((out / "summaries" / f"{row['name']}.json").read_text(encoding="utf-8"))
        _check_row_against_independent_rouge(row, summaries, references)
    assert len(data["template_gaps"]) == 2


def test_cli_refuses_bad_options(tmp_path: Path, zh_dataset: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"context": "x"}])
    result = CliRunner().invoke(cli, ["compare", "--dataset", str(bad), "--models", "openai:gpt-4o-mini", "--no-plots",
                                      "--plan-only"])
    assert result.exit_code == 2 and "bad.jsonl line 1: no reference field 'summary'" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["compare", "--dataset", str(zh_dataset), "--bucket-max-tokens", "L:400",
                                      "--plan-only"])
    assert result.exit_code == 2 and "BUCKET=N" in result.output
    from booksum_app.runners.experiment import direct_template_option

    with pytest.raises(ConfigError, match="--set direct_template=middle: use one of ib, ie"):
        build_experiment({}, {"strategies": ("direct",), "options": direct_template_option("middle")})
    with pytest.raises(ConfigError, match="--set chapters: not an option of the grid's strategies"):
        build_experiment({}, {"strategies": ("inc", "direct"), "options": (("chapters", ("true",)),)})


# ---- a realistic Chinese set: 水浒传 chapter windows, each chapter's couplet title as reference ----


def shuihu_dataset(path: Path, *, chapters: int, per_window: int) -> Path:
    text = SHUIHU.read_text(encoding="utf-8").replace("\r\n", "\n")
    heads = list(re.finditer(r"^第[一二三四五六七八九十百零]+回[ \u3000]+(\S.*)$", text, re.MULTILINE))
    rows = []
    for start in range(0, chapters, per_window):
        window = heads[start:start + per_window + 1]
        if not window:
            break
        end = window[-1].start() if len(window) > per_window else len(text)
        titles = ["，".join(h.group(1).split()) for h in window[:per_window]]
        rows.append({"id": f"ch{start + 1}", "context": text[window[0].start():end],
                     "answer": "。".join(titles) + "。"})
    return write_jsonl(path, rows)


@pytest.mark.slow
@pytest.mark.skipif(not SHUIHU.is_file(), reason=f"needs {SHUIHU} (BOOKSUM_DATA_DIR)")
def test_shuihuzhuan_chapter_windows(tmp_path: Path) -> None:
    path = shuihu_dataset(tmp_path / "shuihu.jsonl", chapters=60, per_window=2)
    samples = read_dataset(DatasetSpec(path))
    assert len(samples) == 30 and {s.lang for s in samples} == {"zh"}
    assert [s.bucket for s in samples].count("Q1") == 8 and {s.bucket for s in samples} == {"Q1", "Q2", "Q3", "Q4"}
    assert samples[0].reference.startswith("王教头私走延安府，九纹龙大闹史家村。")
    exp = Experiment(datasets=(DatasetSpec(path),), strategies=("hier", "direct"), models=("fake",),
                     chunk_sizes=(2048,), options=(("direct_template", ("ib", "ie")),), out=tmp_path / "o",
                     use_judge=False)
    result = run_compare(exp, models={"fake": Client(FakeBackend(), concurrency=4)})
    data = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    references = {s.key: (s.reference, s.lang) for s in samples}
    for row in data["rows"]:
        summaries = json.loads((tmp_path / "o" / "summaries" / f"{row['name']}.json").read_text(encoding="utf-8"))
        _check_row_against_independent_rouge(row, summaries, references)
    assert [(d.window, len(d.moving_median)) for r in result.rows for d in r.datasets] == [(15, 16)] * 3
    assert data["template_gaps"][0]["mse"] is not None
