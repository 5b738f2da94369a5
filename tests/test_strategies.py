"""Strategies against the fake backend: App. A structure, budgets, context-window safety, validity."""

from __future__ import annotations

import threading
import time

import pytest

from booksum_app.chunking import chunk_text, get_tokenizer
from booksum_app.compression.budget import inc_target_tokens, merge_room, words_for_tokens
from booksum_app.errors import ContextTooLong
from booksum_app.llm.base import Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.strategies import STRATEGIES, StrategyConfig, StrategyJob, load_prompts
from booksum_app.strategies.hierarchical import ITEM_HEADER, ITEM_SEPARATOR
from booksum_app.testing.fake_backend import FakeBackend
from booksum_app.testing.fake_replies import default_reply

TOK = get_tokenizer("cl100k_base")
SMALL = ModelInfo(name="fake:small", context_window=4096, tokenizer="cl100k_base")
NAMES = ["Anna", "Boris", "Clara", "Dmitri", "Elena", "Fyodor", "Galina", "Ivan"]
PLACES = ["the mill", "Moscow", "the river", "the estate", "a ball", "the station"]


def book_text(n_paragraphs: int) -> str:
    """Deterministic prose: paragraphs of distinct sentences."""
    paragraphs = []
    for p in range(n_paragraphs):
        sentences = [
            f"{NAMES[(p + s) % 8]} went to {PLACES[(p * 3 + s) % 6]} on day {p * 10 + s} and spoke with "
            f"{NAMES[(p + 2 * s + 1) % 8]} about the letter number {p}-{s}."
            for s in range(6)
        ]
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def job(n_paragraphs: int, *, chunk_size: int = 512, **config: object) -> StrategyJob:
    text = book_text(n_paragraphs)
    cfg = StrategyConfig(chunk_size=chunk_size, **config)  # type: ignore[arg-type]
    return StrategyJob(tuple(chunk_text(text, chunk_size=chunk_size, tokenizer=TOK)), text, cfg)


def run(name: str, the_job: StrategyJob, backend: FakeBackend, **client: object):
    strategy = STRATEGIES[name]
    cfg = the_job.config
    prompts = load_prompts(cfg.prompts, lang=cfg.lang, names=strategy.template_names(cfg),
                           base_set=strategy.base_prompt_set(cfg))
    return strategy.run(the_job, model=Client(backend, **client), prompts=prompts)  # type: ignore[arg-type]


def assert_fits(backend: FakeBackend) -> None:
    for request in backend.calls:
        assert TOK.count(request.user_text) + request.max_tokens <= backend.info.context_window


# ---- hier ---------------------------------------------------------------------------------


def test_hier_tree_follows_app_a_packing_and_budgets() -> None:
    backend = FakeBackend(SMALL)
    the_job = job(300, max_summary_tokens=300)
    result = run("hier", the_job, backend, concurrency=16)
    assert_fits(backend)
    levels: dict[int, list] = {}
    for node in result.nodes:
        levels.setdefault(node.level, []).append(node)
    top = max(levels)
    assert top >= 2, "the small window should force at least two merge levels"
    assert top == len(result.level_budgets) - 1, "the tree built is the tree planned"
    assert len(levels[0]) == len(the_job.chunks)
    assert [n.text for n in levels[top]] == [result.summary]
    assert levels[top][0].budget_tokens == 300
    assert result.level_budgets[-1] == 300 and list(result.level_budgets) == sorted(result.level_budgets)
    overhead = TOK.count(
        load_prompts("paper", lang="en", names=("merge_with_context",))["merge_with_context"].skeleton()
    )
    for level in range(1, top + 1):
        below, nodes = levels[level - 1], levels[level]
        covered = [i for n in nodes for i in n.children]
        assert covered == list(range(len(below))), "groups are consecutive and cover the level once"
        room = merge_room(context_window=SMALL.context_window, overhead_tokens=overhead,
                          budget_tokens=result.level_budgets[min(level, len(result.level_budgets) - 1)])
        # the planned shape: the level's summaries split evenly over its groups, a group closing
        # early only when the next summary would not have fit
        most, least = -(-len(below) // len(nodes)), len(below) // len(nodes)
        for node in nodes[:-1]:
            assert len(node.children) <= most
            if len(node.children) >= least:
                continue
            nxt = node.children[-1] + 1
            items = [below[i].text for i in (*node.children, nxt)]
            size = sum(TOK.count(ITEM_HEADER.format(k=k) + t) + TOK.count(ITEM_SEPARATOR)
                       for k, t in enumerate(items, start=1))
            assert size > room.inputs_tokens
        for node in nodes:
            assert node.tokens <= node.budget_tokens
            if node is not levels[top][0]:
                assert node.budget_tokens == result.level_budgets[level]
    for node in levels[0]:
        assert node.budget_tokens == result.level_budgets[0]
        assert f"within {words_for_tokens(result.level_budgets[0])} words" in backend.calls[0].prompt


def test_hier_merges_with_prior_context_from_the_second_group_of_each_level() -> None:
    backend = FakeBackend(SMALL)
    result = run("hier", job(300, max_summary_tokens=300), backend, concurrency=16)
    merges = [r for r in backend.calls if r.purpose == "merge"]
    with_context = [r for r in merges if r.prompt.startswith("Below is a summary of the context preceding")]
    merge_nodes = [n for n in result.nodes if n.level > 0]
    assert len(with_context) == sum(1 for n in merge_nodes if n.index > 0) > 0
    for node in merge_nodes:
        if node.index == 0:
            assert node.context_node is None
        else:
            assert node.context_node == f"L{node.level}.{node.index - 1}"
            previous = next(n for n in merge_nodes if n.id == node.context_node)
            assert 0 < node.context_tokens <= previous.tokens


def test_hier_single_chunk_is_summarized_once_within_g() -> None:
    backend = FakeBackend(SMALL)
    result = run("hier", job(2, max_summary_tokens=300), backend)
    assert backend.call_count == 1 and backend.calls[0].max_tokens == 300
    assert len(result.nodes) == 1 and result.summary == result.nodes[0].text


def test_hier_starts_merging_before_the_last_chunk_summary_is_done() -> None:
    slow_done: list[float] = []
    first_merge: list[float] = []
    lock = threading.Lock()

    def reply(request: Request) -> str:
        if request.purpose == "merge":
            with lock:
                first_merge.append(time.perf_counter())
        elif "letter number 299-" in request.prompt:  # the last chunk is slow
            time.sleep(0.4)
            slow_done.append(time.perf_counter())
        return default_reply(request)

    run("hier", job(300, max_summary_tokens=300), FakeBackend(SMALL, reply=reply), concurrency=64)
    assert first_merge and slow_done and min(first_merge) < slow_done[0]


def test_hier_regenerates_a_cut_off_leaf_with_a_new_sample() -> None:
    seen: set[str] = set()

    def reply(request: Request) -> str | Completion:
        text = default_reply(request)
        if request.purpose == "summarize" and "letter number 0-0" in request.prompt and request.sample_index == 0:
            return Completion(text=text[: len(text) // 2], finish_reason="length", usage=Usage(10, 10))
        seen.add(request.purpose)
        return text

    backend = FakeBackend(SMALL, reply=reply)
    result = run("hier", job(20, max_summary_tokens=300), backend)
    leaf = result.nodes[0]
    assert leaf.id == "L0.0" and leaf.retries == 1 and not leaf.truncated
    assert leaf.attempts[0].problems[0] == "cut_off"
    assert sum(1 for c in result.calls if c.node == "L0.0") == 2


def test_chunk_too_big_for_the_window_says_which_option_to_lower() -> None:
    with pytest.raises(ContextTooLong, match="--chunk-size"):
        run("hier", job(40, chunk_size=3900, max_summary_tokens=300), FakeBackend(SMALL))


# ---- inc ----------------------------------------------------------------------------------


def test_inc_compresses_exactly_when_the_running_summary_exceeds_g() -> None:
    G = 200
    long_summary = " ".join(f"Event {i} changed everything for the family." for i in range(60))  # > G tokens

    def reply(request: Request) -> str:
        if request.purpose == "inc_update" and "letter number 30-" in request.prompt:
            return long_summary
        return default_reply(request)

    backend = FakeBackend(SMALL, reply=reply)
    the_job = job(60, max_summary_tokens=G)
    result = run("inc", the_job, backend)
    assert_fits(backend)
    compressed = [n for n in result.nodes if n.compression is not None]
    assert len(compressed) == 1
    node = compressed[0]
    assert node.compression.input_tokens > G
    assert node.tokens <= node.compression.target_tokens == inc_target_tokens(
        node.index, len(the_job.chunks), max_summary_tokens=G)
    assert [c.purpose for c in result.calls].count("compress") >= 1
    assert all(c.temperature == 1.0 for c in result.calls if c.purpose == "compress")
    assert all(n.tokens <= G for n in result.nodes)
    # the next update is given the compressed summary
    after = backend.calls[[r.purpose for r in backend.calls].index("compress") + 1]
    assert node.text in after.prompt


def test_inc_prompts_ask_for_a_length_that_grows_with_progress() -> None:
    backend = FakeBackend(SMALL)
    the_job = job(60, max_summary_tokens=300)
    result = run("inc", the_job, backend)
    asked = [n.words_asked for n in result.nodes]
    assert asked == sorted(asked) and asked[-1] == words_for_tokens(300)
    assert backend.calls[0].purpose == "inc_init" and all(r.purpose == "inc_update" for r in backend.calls[1:])
    assert len(result.nodes) == len(the_job.chunks)


# ---- direct -------------------------------------------------------------------------------


def test_direct_cuts_the_middle_of_a_long_book_and_records_it() -> None:
    backend = FakeBackend(SMALL)
    the_job = job(60, max_summary_tokens=300)
    result = run("direct", the_job, backend)
    assert_fits(backend)
    cut = result.truncation
    assert cut is not None and cut.book_tokens == TOK.count(the_job.text.strip())
    assert cut.cut_tokens == cut.book_tokens - cut.head_tokens - cut.tail_tokens > 0
    assert abs(cut.head_tokens - cut.tail_tokens) < 100
    prompt = backend.calls[0].prompt
    assert "letter number 0-0." in prompt and "letter number 59-5." in prompt and "letter number 30-0." not in prompt
    assert "[...]" in prompt


@pytest.mark.parametrize("template", ["ib", "ie"])
def test_direct_fits_a_short_book_whole_with_either_template(template: str) -> None:
    backend = FakeBackend(SMALL)
    the_job = job(8, max_summary_tokens=300, options=(("direct_template", template),))
    result = run("direct", the_job, backend)
    assert result.truncation is None
    prompt = backend.calls[0].prompt
    instruction_first = prompt.index("write the corresponding summary") < prompt.index("letter number 0-0")
    assert instruction_first is (template == "ib")


def test_direct_chinese_template_is_used_for_chinese() -> None:
    backend = FakeBackend(SMALL)
    text = "阳旭来到了古坟场。他找到了宝物。" * 50
    cfg = StrategyConfig(lang="zh", max_summary_tokens=200)
    result = run("direct", StrategyJob((), text, cfg), backend)
    assert backend.calls[0].prompt.startswith("下面是一个小说节选") and "130字" in backend.calls[0].prompt
    assert result.summary
