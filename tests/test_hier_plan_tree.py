"""Plans and trees: the plan is the shallowest tree worst-case lengths allow, with its budgets;
the run builds the shallowest tree the real lengths allow (never deeper than planned).

With gpt-4's 8,192-token window, 180 leaves fit a 3-level tree although the 0.65 schedule
needs 4 levels at worst: the plan then re-derives 3-level budgets instead of asking leaves
for the 4-level leaf budget.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from booksum_app.books import open_book
from booksum_app.chunking import chunk_book, get_tokenizer
from booksum_app.compression.budget import level_budgets, merge_room, plan_hier, words_for_tokens
from booksum_app.llm.base import ModelInfo
from booksum_app.llm.calls import Client
from booksum_app.runners.plan import plan_strategy
from booksum_app.strategies import STRATEGIES, StrategyConfig, StrategyJob, load_prompts
from booksum_app.strategies.hierarchical import ITEM_HEADER, ITEM_SEPARATOR
from booksum_app.testing.fake_backend import FakeBackend
from tests.conftest import book_path

TOK = get_tokenizer("cl100k_base")


def gpt4() -> ModelInfo:
    table = json.loads(resources.files("booksum_app.data").joinpath("models.json").read_text())
    entry = table["models"]["openai:gpt-4"]
    return ModelInfo(name="openai:gpt-4", context_window=entry["context_window"],
                     tokenizer=entry["tokenizer"], max_output_tokens=entry.get("max_output_tokens"))


@pytest.mark.parametrize("n_leaves", [2, 17, 18, 170, 171, 180, 250, 400, 1000, 3000])
def test_plan_has_one_budget_per_level_it_builds(n_leaves: int) -> None:
    plan = plan_hier(n_leaves=n_leaves, context_window=8192, max_summary_tokens=900,
                     merge_overhead_tokens=260, item_overhead_tokens=8)
    assert len(plan.budgets) == len(plan.nodes_per_level) and plan.nodes_per_level[-1] == 1
    assert all(count > 1 for count in plan.nodes_per_level[:-1])
    assert plan.budgets[-1] == 900 and list(plan.budgets) == sorted(plan.budgets)


def test_a_tree_one_level_short_of_the_065_schedule_gets_its_own_budgets() -> None:
    # 180 leaves: the 3-level schedule (380, 585, 900) holds 17 x 10 = 170 leaves at worst; the
    # 4-level one packs them in 3 levels. The old plan said 4 levels and asked leaves for 247.
    plan = plan_hier(n_leaves=180, context_window=8192, max_summary_tokens=900,
                     merge_overhead_tokens=260, item_overhead_tokens=8)
    assert plan.levels == 3 and plan.budgets[0] > level_budgets(4, max_summary_tokens=900)[0]
    assert plan.budgets[0] < level_budgets(3, max_summary_tokens=900)[0]


def test_gpt4_window_book_builds_the_shallowest_tree_real_lengths_allow() -> None:
    """The plan packs worst-case lengths (an upper bound); the run packs real ones greedily.

    Every group but the last of its level closes because the next summary would not fit, so no
    tree with these summaries is shallower; budgets are the plan's per level (the root G), and
    the record says which tree was planned and which was built.
    """
    info = gpt4()
    assert info.context_window == 8192
    book = open_book(book_path("pride-and-prejudice"))
    config = StrategyConfig(chunk_size=512)
    chunks = chunk_book(book, chunk_size=512, tokenizer=TOK)
    preflight = plan_strategy("hier", chunk_tokens=[c.n_tokens for c in chunks], info=info,
                              count_tokens=TOK.count, config=config, clean=False)
    strategy = STRATEGIES["hier"]
    prompts = load_prompts(config.prompts, lang="en", names=strategy.template_names(config))
    backend = FakeBackend(info)
    result = strategy.run(StrategyJob(tuple(chunks), book.text(), config),
                          model=Client(backend, concurrency=16), prompts=prompts)

    built = max(node.level for node in result.nodes) + 1
    per_level = [sum(1 for n in result.nodes if n.level == level) for level in range(built)]
    assert result.extra["tree"] == {"planned_nodes_per_level": [len(chunks), 13, 1],
                                    "built_nodes_per_level": per_level}
    assert preflight.levels == len(result.level_budgets) == 3 >= built
    assert preflight.calls >= sum(per_level) == len(backend.calls) - sum(c.sample_index > 0 for c in backend.calls)
    assert per_level[0] == len(chunks) and per_level[-1] == 1
    ratios = [r / 100 for r in range(65, 0, -1)]
    assert any(level_budgets(3, max_summary_tokens=900, ratio=r) == result.level_budgets for r in ratios)
    for node in result.nodes:
        expected = config.max_summary_tokens if node.level == built - 1 else result.level_budgets[node.level]
        assert node.budget_tokens == expected, node.id
    leaf_prompts = [c for c in backend.calls if c.purpose == "summarize" and c.sample_index == 0]
    words = words_for_tokens(result.level_budgets[0])
    assert leaf_prompts and all(f"within {words} words" in c.prompt for c in leaf_prompts)
    # greedy: a group that is not its level's last could not take the next summary
    item = TOK.count(ITEM_HEADER.format(k=999) + ITEM_SEPARATOR) + 1
    overhead = TOK.count(prompts["merge_with_context"].skeleton())
    by_id = {node.id: node for node in result.nodes}
    for level in range(1, built):
        room = merge_room(context_window=8192, overhead_tokens=overhead, budget_tokens=result.level_budgets[level])
        groups = sorted((n for n in result.nodes if n.level == level), key=lambda n: n.index)
        for group in groups[:-1]:
            inputs = [by_id[f"L{level - 1}.{c}"] for c in (*group.children, group.children[-1] + 1)]
            assert sum(n.tokens + item for n in inputs) > room.inputs_tokens, group.id
