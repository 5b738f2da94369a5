"""hier-evidence (Ou & Lapata 2025): BM25 passages from each merged summary's own span, within budget."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_strategies import SMALL, TOK, assert_fits, job, run

from booksum_app.chunking import Chunk, chunk_text
from booksum_app.cli import cli
from booksum_app.errors import ConfigError
from booksum_app.llm.base import Request
from booksum_app.llm.calls import Client
from booksum_app.runners.plan import plan_strategy
from booksum_app.runners.summarize import summarize_book
from booksum_app.signature import parse_signature
from booksum_app.strategies import STRATEGIES, StrategyConfig, StrategyJob
from booksum_app.strategies.evidence import PassageIndex, bm25_words
from booksum_app.strategies.hier_evidence import EVIDENCE_HEADER
from booksum_app.strategies.hierarchical import format_group
from booksum_app.strategies.record import read_record, write_record
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_replies import requested_word_limit


def echo(request: Request) -> str:
    """The first words of the prompt's first block (the chunk, or the summaries), tagged with the
    prompt's hash so that every summary is unique (and a merge prompt is found by its inputs)."""
    first = re.sub(r"Summary \d+:", " ", request.prompt.split("\n---\n")[1])
    limit = max(2, (requested_word_limit(request.prompt) or 50) // 2)
    tag = hashlib.sha256(request.prompt.encode()).hexdigest()[:8]
    if re.search("[\u4e00-\u9fff]", first):  # Chinese: the limit counts characters
        return "".join(first.split())[:limit].rstrip("。，") + f"。标记{tag}。"
    return " ".join(first.split()[:limit]).rstrip(".") + f". Tag {tag}."


def index_of(paragraphs: list[str], *, lang: str = "en") -> PassageIndex:
    """One chunk per paragraph (each under 100 tokens: one passage per chunk)."""
    chunks = [Chunk(i, text, TOK.count(text), ()) for i, text in enumerate(paragraphs)]
    return PassageIndex(chunks, count_tokens=TOK.count, lang=lang)


# ---- retrieval --------------------------------------------------------------------------------


RARE = [
    "Anna went to the market and spoke with Boris about the weather.",
    "Anna went to the market and spoke with Boris about the harvest.",
    "Anna went to the lighthouse and spoke with Boris about the zeppelin and the marmalade.",
    "Anna went to the market and spoke with Boris about the letters.",
]


def test_the_passage_sharing_the_rare_words_wins() -> None:
    index = index_of(RARE)
    assert [p.text for p in index.passages] == RARE
    query = "Anna and Boris talked at the market about a zeppelin."
    scores = index.scores(query)
    assert max(range(4), key=lambda i: scores[i]) == 2, "zeppelin is rare; anna, boris, market are not"
    one = index.passages[2].tokens + index.separator_tokens + 1
    chosen = index.select(query, (0, 3), one)  # room for exactly one passage
    assert [p.id for p in chosen.passages] == [2]
    assert chosen.text == index.passages[2].text and chosen.tokens == TOK.count(chosen.text) <= one


def test_candidates_are_only_the_passages_of_the_span() -> None:
    index = index_of(RARE)
    query = "the zeppelin and the marmalade"
    assert index.select(query, (0, 1), 500).passages == (), "no passage of chunks 0-1 shares a word"
    assert [p.chunk for p in index.select(query, (2, 3), 500).passages] == [2]
    everything = index.select("Anna Boris market", (1, 3), 500)
    assert {p.chunk for p in everything.passages} == {1, 2, 3}


def test_whole_passages_fill_the_budget_in_book_order() -> None:
    text = "\n\n".join(
        f"Paragraph {i}: the {'comet ' * (i + 1)}crossed the sky over village {i}. " * (4 if i % 2 else 1)
        for i in range(8)
    )
    index = PassageIndex(chunk_text(text, chunk_size=2000, tokenizer=TOK), count_tokens=TOK.count, lang="en")
    sizes = [p.tokens for p in index.passages]
    assert len(index.passages) >= 4 and max(sizes) <= 100
    for budget in (110, 200, 300, 400):
        chosen = index.select("comet sky village", (0, 0), budget)
        assert chosen.passages, budget
        cost = sum(p.tokens + index.separator_tokens + 1 for p in chosen.passages)
        assert chosen.tokens <= cost <= budget
        assert [p.id for p in chosen.passages] == sorted(p.id for p in chosen.passages)
        for p in chosen.passages:
            assert p.text in text and p.text in chosen.text
        left = budget - cost  # greedy: every passage left out was too big for what was left
        skipped = [p for p in index.passages if p not in chosen.passages]
        assert all(p.tokens + index.separator_tokens + 1 > left for p in skipped)


def test_chinese_is_segmented_and_retrieves_the_right_passage() -> None:
    text = [
        "宋江在郓城县做押司，平日仗义疏财，人称及时雨。",
        "武松在景阳冈上喝了十八碗酒，赤手空拳打死了一只吊睛白额大虫。",
        "林冲被高俅陷害，发配沧州，在山神庙中杀了陆谦。",
        "宋江与众头领在忠义堂上排定座次，共一百单八人。",
    ]
    words = bm25_words(text[1], lang="zh")
    assert "景阳冈" in words and "，" not in words and "。" not in words
    index = index_of(text, lang="zh")
    assert [p.text for p in index.passages] == text
    chosen = index.select("武松打虎的故事：他在景阳冈打死了大虫。", (0, 3), 80)
    assert [p.id for p in chosen.passages] == [1]
    assert index.select("林冲杀了陆谦", (0, 3), 80).passages[0].id == 2


# ---- the strategy -------------------------------------------------------------------------------


def evidence_run(**config: object):
    backend = FakeBackend(SMALL, reply=echo)
    the_job = job(300, max_summary_tokens=300, **config)
    return the_job, backend, run("hier-evidence", the_job, backend, concurrency=16)


@pytest.mark.parametrize("evidence_tokens", [None, 300])
def test_merge_prompts_carry_passages_of_their_own_span_within_budget(evidence_tokens: int | None) -> None:
    the_job, backend, result = evidence_run(options=(("evidence_tokens", evidence_tokens),))
    assert_fits(backend)
    index = PassageIndex(the_job.chunks, count_tokens=TOK.count, lang="en")
    nodes = {n.id: n for n in result.nodes}
    merges = result.extra["evidence"]["merges"]
    prompts = [r.prompt for r in backend.calls if r.purpose == "merge"]
    assert merges and len(merges) == len([n for n in result.nodes if n.level > 0])
    with_passages = 0
    for merge in merges:
        node = nodes[merge["node"]]
        children = [nodes[item["summary"]] for item in merge["items"]]
        assert [c.index for c in children] == list(node.children) and all(c.level == node.level - 1 for c in children)
        prompt = next(p for p in prompts if format_group([c.text for c in children]) in p)
        for k, (child, item) in enumerate(zip(children, merge["items"], strict=True), start=1):
            expected = evidence_tokens or max(result.level_budgets[child.level], 128)
            assert item["budget"] == expected and item["tokens"] <= expected
            first, last = child.chunk_span
            assert all(first <= c <= last for c in item["chunks"]), "only the summary's own span"
            assert node.chunk_span[0] <= first and last <= node.chunk_span[1]
            texts = [index.passages[i].text for i in item["passages"]]
            assert [index.passages[i].chunk for i in item["passages"]] == item["chunks"]
            assert TOK.count("\n\n".join(texts)) == item["tokens"] if texts else item["tokens"] == 0
            if texts:
                with_passages += 1
                assert EVIDENCE_HEADER.format(k=k) + "\n\n".join(texts) in prompt
        assert "Evidence for summary" in prompt and "check them against the quoted passages" in prompt
    assert with_passages > len(merges), "most merged summaries found evidence"


def test_evidence_takes_its_room_from_the_merge_inputs() -> None:
    plain = run("hier", job(300, max_summary_tokens=300), FakeBackend(SMALL, reply=echo), concurrency=16)
    _, _, result = evidence_run()

    def widest(nodes) -> int:
        return max(len(n.children) for n in nodes if n.level == 1)

    assert widest(result.nodes) < widest(plain.nodes), "evidence beside each summary: fewer per merge"


def test_plan_counts_the_evidence_tokens() -> None:
    the_job, _, result = evidence_run()
    tokens = [c.n_tokens for c in the_job.chunks]
    hier = plan_strategy("hier", chunk_tokens=tokens, info=SMALL, count_tokens=TOK.count, config=the_job.config,
                         clean=False)
    plan = plan_strategy("hier-evidence", chunk_tokens=tokens, info=SMALL, count_tokens=TOK.count,
                         config=the_job.config, clean=False)
    actual = sum(c.input_tokens for c in result.calls)
    assert hier.input_tokens < actual <= plan.input_tokens, "hier's plan would undercount; the evidence plan bounds it"
    assert len(result.calls) <= plan.calls


def test_hier_without_evidence_sends_the_same_requests_as_before() -> None:
    """Golden: the prompts of hier were hashed before hier-evidence existed (they must not move).

    Greedy groups (as many summaries as fit) send exactly the requests hashed then;
    hier-evidence's hooks still add nothing to plain hier.
    """
    golden = {
        (300, 512, 300): (104, "d63357f8ab7d674593341c9dd735b5888677c7e6d58729edc9731a44f0c938c1"),
        (40, 256, 200): (43, "9eaf9d1b99b8a44ce196cd9dc49621a7ade551bfee7308f6f2cb190bcc89c63f"),
    }
    for (paragraphs, size, g), (n, digest) in golden.items():
        backend = FakeBackend(SMALL)
        result = run("hier", job(paragraphs, chunk_size=size, max_summary_tokens=g), backend, concurrency=16)
        requests = sorted(json.dumps([r.purpose, r.prompt, r.max_tokens, r.temperature, r.top_p, r.sample_index,
                                      r.system]) for r in backend.calls)
        assert (len(requests), hashlib.sha256("\n".join(requests).encode()).hexdigest()) == (n, digest)
        assert set(result.extra) == {"tree"}


def test_a_chinese_book_gets_chinese_prompts_and_evidence_from_its_own_span() -> None:
    names = ["宋江", "武松", "林冲", "鲁智深", "李逵", "吴用", "花荣", "杨志"]
    places = ["梁山泊", "景阳冈", "沧州", "五台山", "江州", "东京", "清风寨", "大名府"]
    text = "\n\n".join(
        "".join(f"{names[(p + k) % 8]}在{places[(p * 3 + k) % 8]}遇见了{names[(p + 2 * k + 1) % 8]}，"
                f"两人谈起第{p}-{k}封书信。"
                for k in range(6))
        for p in range(120)
    )
    chunks = tuple(chunk_text(text, chunk_size=256, tokenizer=TOK, lang="zh"))
    the_job = StrategyJob(chunks, text, StrategyConfig(chunk_size=256, max_summary_tokens=300, lang="zh"))
    backend = FakeBackend(SMALL, reply=echo)
    result = run("hier-evidence", the_job, backend, concurrency=16)
    assert_fits(backend)
    merges = [r.prompt for r in backend.calls if r.purpose == "merge"]
    assert merges and all("请先根据摘录的原文核对它们" in p for p in merges)
    nodes = {n.id: n for n in result.nodes}
    items = [item for merge in result.extra["evidence"]["merges"] for item in merge["items"]]
    assert result.extra["evidence"]["words"] == "jieba"
    assert sum(1 for item in items if item["passages"]) > len(items) * 0.9
    index = PassageIndex(chunks, count_tokens=TOK.count, lang="zh")
    for item in items:
        first, last = nodes[item["summary"]].chunk_span
        assert all(first <= c <= last for c in item["chunks"]) and item["tokens"] <= item["budget"]
        if nodes[item["summary"]].level == 0:  # a leaf's summary is its chunk's opening: that passage wins
            assert index.first[first] in item["passages"]


def test_summaries_sharing_no_word_with_the_book_get_no_evidence_and_the_run_goes_on() -> None:
    """A model that answers off-topic ("Okay.") or with stopwords only ("It is."): nothing to retrieve."""
    def reply(request: Request) -> str:
        if request.purpose == "merge":
            return echo(request)
        return "It is." if "day 1" in request.prompt else "Okay, understood."

    backend = FakeBackend(SMALL, reply=reply)
    result = run("hier-evidence", job(120, max_summary_tokens=300), backend, concurrency=16)
    assert_fits(backend)
    leaf_items = [item for merge in result.extra["evidence"]["merges"] for item in merge["items"]
                  if item["summary"].startswith("L0.")]
    assert leaf_items and all(item["passages"] == [] and item["tokens"] == 0 for item in leaf_items)
    assert result.summary


def test_one_chunk_needs_no_index_and_no_merge() -> None:
    backend = FakeBackend(SMALL, reply=echo)
    result = run("hier-evidence", job(2, max_summary_tokens=300), backend)
    assert backend.call_count == 1 and result.extra["evidence"]["merges"] == []


def test_too_small_an_evidence_budget_is_a_config_error() -> None:
    from booksum_app.runners.run_config import RunConfig

    with pytest.raises(ConfigError, match="evidence_tokens=50: use at least 128"):
        RunConfig(strategy="hier-evidence", options={"evidence_tokens": 50})


# ---- record, signature, CLI -------------------------------------------------------------------------


@pytest.fixture
def book(tmp_path: Path) -> Path:
    from test_strategies import book_text

    path = tmp_path / "book.txt"
    path.write_text(book_text(120), encoding="utf-8")
    return path


def test_record_lists_the_evidence_and_signs_the_option(book: Path, tmp_path: Path) -> None:
    def summarize(strategy: str, **kwargs: object):
        return summarize_book(book, strategy=strategy, model=Client(FakeBackend(SMALL, reply=echo), concurrency=8),
                              chunk_size=512, max_summary_tokens=300, clean=False, **kwargs)  # type: ignore[arg-type]

    record = summarize("hier-evidence")
    evidence = record.extra["evidence"]
    assert evidence["method"] == "bm25" and evidence["passage_tokens"] == 100 and evidence["passages"] > 0
    assert evidence["tokens_per_summary"] == "auto" and evidence["merges"][0]["items"][0]["passages"]
    assert record.config["evidence"] == "bm25" and record.config["evidence_tokens"] is None
    assert parse_signature(record.signature)["evidence"] == "bm25-auto-p100"
    assert read_record(write_record(record, tmp_path / "r.json")) == record
    assert parse_signature(summarize("hier-evidence", evidence_tokens=200).signature)["evidence"] == "bm25-200-p100"
    plain = summarize("hier")
    assert "evidence" not in parse_signature(plain.signature) and "evidence" not in plain.config
    assert set(plain.extra) == {"tree"}
    with pytest.raises(ConfigError, match="--set evidence_tokens: not an option of strategy 'hier'"):
        summarize("hier", evidence_tokens=200)


def test_cli_rejects_evidence_tokens_without_the_strategy(book: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.md"
    args = ["summarize", str(book), "--strategy", "inc", "--evidence-tokens", "200", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0 and "--set evidence_tokens: not an option of strategy 'inc'" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_registered_like_the_others() -> None:
    assert "hier-evidence" in STRATEGIES
    strategy = STRATEGIES["hier-evidence"]
    assert strategy.template_names(StrategyConfig()) == ("summarize_chunk", "merge_evidence",
                                                         "merge_with_context_evidence")


def test_a_repeated_text_still_gives_each_summary_passages_of_its_own_chunks() -> None:
    """Every passage scores alike here: only the span restriction keeps chunk 0's out of later merges."""
    text = "\n\n".join(["Anna met Boris at the mill and they read the long letter together."] * 400)
    chunks = tuple(chunk_text(text, chunk_size=256, tokenizer=TOK))
    the_job = StrategyJob(chunks, text, StrategyConfig(chunk_size=256, max_summary_tokens=300))
    result = run("hier-evidence", the_job, FakeBackend(SMALL, reply=echo), concurrency=16)
    nodes = {n.id: n for n in result.nodes}
    items = [item for merge in result.extra["evidence"]["merges"] for item in merge["items"]]
    assert len(items) > 10 and all(item["passages"] for item in items)
    for item in items:
        first, last = nodes[item["summary"]].chunk_span
        assert all(first <= c <= last for c in item["chunks"]), item


def test_compare_runs_hier_and_hier_evidence_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_compare import write_book

    from booksum_app.testing.fake_server import FakeServer

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    book = write_book(tmp_path / "book.txt", seed=3, chapters=4)
    out = tmp_path / "out"
    with FakeServer() as server:
        args = ["compare", str(book), "--strategies", "hier,hier-evidence", "--models", "openai:gpt-4o-mini",
                "--chunk-sizes", "256", "--max-summary-len", "120", "--base-url", server.openai_base_url,
                "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--no-plots"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        calls = server.call_count
        again = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert again.exit_code == 0 and server.call_count == calls, "a rerun reuses both records"
    records = {p.parent.name: read_record(p) for p in (out / "records").glob("*/book.json")}
    plain = next(r for name, r in records.items() if name.endswith("-hier"))
    evidence = next(r for name, r in records.items() if name.endswith("-hier-evidence"))
    assert "evidence" not in plain.extra and evidence.extra["evidence"]["merges"]
    assert plain.extra["compare"]["job_key"] != evidence.extra["compare"]["job_key"]
    assert plain.signature.replace("hier|", "", 1) != evidence.signature.replace("hier-evidence|", "", 1)


# ---- the embedded model -------------------------------------------------------------------------


@pytest.mark.local_model
@pytest.mark.slow
def test_end_to_end_with_the_embedded_model(tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp: 4 chunks, one merge with evidence (2.5 minutes on 2 shared cores)."""
    from test_strategies import book_text

    from booksum_app.errors import ModelUnavailable
    from booksum_app.llm.registry import LLMSettings, get_model

    pytest.importorskip("llama_cpp", reason="the embedded model needs the 'local' extra (llama-cpp-python)")
    try:
        model = get_model("local", settings=LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "no.toml"))
    except ModelUnavailable as exc:
        pytest.skip(f"embedded model not available: {exc}")
    path = tmp_path / "story.txt"
    path.write_text(book_text(4), encoding="utf-8")
    try:
        record = summarize_book(path, strategy="hier-evidence", model=model, chunk_size=256,
                                max_summary_tokens=160, clean=False)
    finally:
        model.close()
    window = record.config["context_window"]
    assert record.book.n_chunks == 4 and record.raw_summary.strip()
    assert all(c.input_tokens + c.max_tokens <= window for c in record.calls)
    nodes = {n.id: n for n in record.nodes}
    merges = record.extra["evidence"]["merges"]
    assert merges and merges[-1]["node"] == record.nodes[-1].id
    for merge in merges:
        node = nodes[merge["node"]]
        assert node.prompt_tokens + node.budget_tokens <= window
        for item in merge["items"]:
            first, last = nodes[item["summary"]].chunk_span
            assert item["tokens"] <= item["budget"] and all(first <= c <= last for c in item["chunks"])
