"""Budgets, validity/regeneration, compression and artifact removal (BooookScore App. A, D, J)."""

from __future__ import annotations

import pytest

from booksum_app.chunking import get_tokenizer
from booksum_app.compression.artifacts import clean_deterministic, remove_artifacts
from booksum_app.compression.budget import (
    count_words,
    inc_target_tokens,
    level_budgets,
    merge_room,
    plan_hier,
    words_for_tokens,
)
from booksum_app.compression.compress import compress_to_budget
from booksum_app.compression.validity import (
    CUT_OFF,
    EMPTY,
    NO_SENTENCE_END,
    OVER_LIMIT,
    Regenerator,
    ends_sentence,
    generate_valid,
    summary_problems,
    truncate_at_sentence_end,
)
from booksum_app.errors import ContextTooLong, ModelError
from booksum_app.llm.base import Completion, Request
from booksum_app.llm.calls import Client
from booksum_app.prompts import load_template
from booksum_app.testing.fake_backend import FakeBackend

COUNT = get_tokenizer("cl100k_base").count


# ---- budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("levels", "expected"),
    [(1, (900,)), (2, (585, 900)), (3, (380, 585, 900)), (5, (160, 247, 380, 585, 900)),
     (7, (128, 128, 160, 247, 380, 585, 900))],
)
def test_level_budgets_grow_geometrically_to_g(levels: int, expected: tuple[int, ...]) -> None:
    assert level_budgets(levels, max_summary_tokens=900) == expected


def test_words_for_tokens_uses_the_reference_ratio() -> None:
    assert words_for_tokens(900) == 585
    assert words_for_tokens(1) == 1


def test_merge_room_reserves_budget_context_and_margin() -> None:
    room = merge_room(context_window=8192, overhead_tokens=300, budget_tokens=585)
    free = 8192 - 300 - 20 - 585
    assert room.context_tokens == 585  # min(G_l, 20 % of free)
    assert room.inputs_tokens == free - 585
    small = merge_room(context_window=2000, overhead_tokens=300, budget_tokens=585)
    assert small.context_tokens == int(0.2 * (2000 - 300 - 20 - 585))


def test_plan_hier_picks_the_shallowest_tree_that_fits() -> None:
    assert plan_hier(n_leaves=1, context_window=8192, max_summary_tokens=900, merge_overhead_tokens=300,
                     item_overhead_tokens=6).budgets == (900,)
    plan = plan_hier(n_leaves=80, context_window=8192, max_summary_tokens=900, merge_overhead_tokens=300,
                     item_overhead_tokens=6)
    assert plan.budgets[-1] == 900 and plan.nodes_per_level[0] == 80 and plan.nodes_per_level[-1] == 1
    assert list(plan.budgets) == sorted(plan.budgets)
    # big window: everything merges at once
    assert plan_hier(n_leaves=80, context_window=128_000, max_summary_tokens=900, merge_overhead_tokens=300,
                     item_overhead_tokens=6).levels == 2


def test_plan_hier_refuses_a_window_that_cannot_merge_two_summaries() -> None:
    with pytest.raises(ContextTooLong, match="max-summary-len"):
        plan_hier(n_leaves=10, context_window=2000, max_summary_tokens=900, merge_overhead_tokens=300,
                  item_overhead_tokens=6)


@pytest.mark.parametrize(("index", "expected"), [(0, 128), (9, 128), (49, 450), (99, 900)])
def test_inc_target_grows_with_progress(index: int, expected: int) -> None:
    assert inc_target_tokens(index, 100, max_summary_tokens=900) == expected


def test_count_words_counts_han_characters() -> None:
    assert count_words("Elizabeth meets Mr. Darcy.") == 4
    assert count_words("阳旭得到宝物 ok") == 7


# ---- validity -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("He left.", True), ("He left", False), ('"Go!"', True), ("他走了。", True), ("他说：“走！”", True),
     ("Wait…", True), ("and then", False), ("", False), ("(see above)", False)],
)
def test_ends_sentence(text: str, expected: bool) -> None:
    assert ends_sentence(text) is expected


def test_summary_problems() -> None:
    kwargs = {"max_tokens": 5, "count_tokens": COUNT}
    assert summary_problems("Fine.", finish_reason="stop", **kwargs) == ()
    assert summary_problems("  ", finish_reason="stop", **kwargs) == (EMPTY,)
    assert summary_problems("One two three four five six seven.", finish_reason="stop", **kwargs) == (OVER_LIMIT,)
    assert summary_problems("Cut", finish_reason="length", **kwargs) == (CUT_OFF, NO_SENTENCE_END)


def test_truncate_keeps_whole_sentences_within_budget() -> None:
    text = "Mr. Darcy arrived at Netherfield. Elizabeth laughed at him. Then she went"
    assert truncate_at_sentence_end(text, max_tokens=100, count_tokens=COUNT) == (
        "Mr. Darcy arrived at Netherfield. Elizabeth laughed at him."
    )
    first = "Mr. Darcy arrived at Netherfield."
    assert truncate_at_sentence_end(text, max_tokens=COUNT(first) + 2, count_tokens=COUNT) == first
    cut = truncate_at_sentence_end("one two three four five six seven eight", max_tokens=4, count_tokens=COUNT)
    assert cut.endswith(".") and COUNT(cut) <= 4
    assert (truncate_at_sentence_end("他来了。她走了。然后", max_tokens=None, count_tokens=COUNT, lang="zh")
            == "他来了。她走了。")


def _script(*replies: str | Completion):
    queue = list(replies)

    def reply(request: Request) -> str | Completion:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return reply


def _regen(max_tokens: int = 20, tries: int = 3) -> Regenerator:
    return Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=max_tokens,
                       temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT, max_tries=tries)


def test_invalid_summary_is_regenerated_with_fresh_samples_and_fewer_words() -> None:
    backend = FakeBackend(reply=_script("Cut off in the mid", "A fine summary."))
    generation = generate_valid(Client(backend), _regen())
    assert generation.text == "A fine summary." and not generation.truncated and generation.retries == 1
    assert [r.sample_index for r in backend.calls] == [0, 1]
    assert [r.temperature for r in backend.calls] == [0.5, 1.0]
    assert "within 100 words" in backend.calls[0].prompt and "within 90 words" in backend.calls[1].prompt
    assert generation.attempts[0].problems == (NO_SENTENCE_END,)


def test_still_invalid_after_all_tries_is_truncated_at_a_sentence_end() -> None:
    long = "First sentence here. " * 10 + "unfinished"
    backend = FakeBackend(reply=_script(long))
    two = "First sentence here. First sentence here."
    generation = generate_valid(Client(backend), _regen(max_tokens=COUNT(two) + 2, tries=3))
    assert backend.call_count == 3
    assert generation.truncated and generation.text == two
    assert generation.raw_text == long.strip()


def test_length_policy_truncate_cuts_at_once_and_still_regenerates_other_problems() -> None:
    long = "".join(f"Sentence number {n} here. " for n in range(10)) + "unfinished"
    two = "Sentence number 0 here. Sentence number 1 here."
    backend = FakeBackend(reply=_script(long))
    regen = Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=COUNT(two) + 2,
                        temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT, max_tries=3,
                        truncate_over_length=True)
    generation = generate_valid(Client(backend), regen)
    assert backend.call_count == 1, "no regeneration for an over-long answer"
    assert generation.truncated and generation.text == two and generation.raw_text == long.strip()
    assert generation.attempts[0].problems == (OVER_LIMIT, NO_SENTENCE_END)
    short = FakeBackend(reply=_script("Short but unfinished", "Short and done."))
    regen = Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=50,
                        temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT, max_tries=3,
                        truncate_over_length=True)
    assert generate_valid(Client(short), regen).text == "Short and done.", "within the limit: regenerated as before"


def test_truncation_stops_where_a_looping_model_started_repeating_itself() -> None:
    from booksum_app.compression.validity import cut_repetition_loop

    loop = "The traveller builds a machine. He visits the future. " + "The story is told from a new view. " * 30
    assert cut_repetition_loop(loop) == ("The traveller builds a machine. He visits the future. "
                                         "The story is told from a new view.")
    assert cut_repetition_loop("Yes. No. Yes. He left the house at dawn.") == "Yes. No. Yes. He left the house at dawn."
    assert cut_repetition_loop("他走进了那座古老的城堡大门。" * 3, lang="zh") == "他走进了那座古老的城堡大门。"
    backend = FakeBackend(reply=_script(loop), finish_reason="length")
    regen = Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=200,
                        temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT,
                        truncate_over_length=True)
    generation = generate_valid(Client(backend), regen)
    assert generation.text.endswith("He visits the future. The story is told from a new view.") and generation.truncated


def test_a_repeat_counts_once_the_next_sentence_has_begun() -> None:
    from booksum_app.chunking import repeated_sentence_start

    text = "He builds a machine in his lab. He visits the far future. He builds a machine in his lab."
    assert repeated_sentence_start(text) == text.rindex("He builds")
    assert repeated_sentence_start(text, settled=True) is None, "the repeat may yet run on"
    assert repeated_sentence_start(text + " The", settled=True) == text.rindex("He builds")
    assert repeated_sentence_start("Yes. No. Yes. He left.", settled=True) is None, "short sentences repeat in dialogue"
    assert repeated_sentence_start("他走进了那座古老的城堡大门。他走进了那座古老的城堡大门。然后",
                                   lang="zh", settled=True) == 14


def test_the_truncate_policy_cuts_a_repeat_even_when_the_model_stopped_by_itself() -> None:
    """Under truncate a loop is cut wherever it ends (max_tokens, the end-of-text token, or a
    backend that stopped it: finish_reason "loop"); the paper's rule keeps such an answer."""
    from booksum_app.compression.validity import CUT_OFF, REPEATS

    looped = "He builds a machine in his lab. He visits the far future. He builds a machine in his lab. He"
    for finish, text in (("stop", looped.removesuffix(" He")), ("loop", looped)):
        backend = FakeBackend(reply=_script(text), finish_reason=finish)
        regen = Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=200,
                            temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT,
                            truncate_over_length=True)
        assert regen.request().stop_at_loop == "en", "the backend may stop where the policy will cut"
        generation = generate_valid(Client(backend), regen)
        assert generation.text == "He builds a machine in his lab. He visits the far future." and generation.truncated
        assert REPEATS in generation.attempts[0].problems
        assert (CUT_OFF in generation.attempts[0].problems) == (finish == "loop")
        assert backend.call_count == 1
    paper = Regenerator(render=lambda w: f"Summarize within {w} words: text.", words=100, max_tokens=200,
                        temperature=0.5, purpose="summarize", node="L0.0", count_tokens=COUNT)
    assert paper.request().stop_at_loop == "", "the paper's rule gets whole answers"
    kept = generate_valid(Client(FakeBackend(reply=_script(looped.removesuffix(" He")))), paper)
    assert kept.text == looped.removesuffix(" He") and not kept.truncated


def test_empty_every_time_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="no usable text"):
        generate_valid(Client(FakeBackend(reply=_script(" ")), max_attempts=1), _regen(tries=2))


# ---- compression --------------------------------------------------------------------------


def test_compression_skips_text_that_already_fits() -> None:
    backend = FakeBackend()
    result = compress_to_budget("Short.", model=Client(backend), max_tokens=50, template=load_template("compress"))
    assert result.text == "Short." and not result.compressed and backend.call_count == 0


def test_compression_calls_at_temperature_one_and_meets_the_budget() -> None:
    text = " ".join(f"Sentence number {i} tells what happened next." for i in range(60))
    backend = FakeBackend()
    result = compress_to_budget(text, model=Client(backend), max_tokens=100, template=load_template("compress"))
    assert result.compressed and not result.truncated
    assert result.output_tokens <= 100 and result.input_tokens > 100
    assert all(r.temperature == 1.0 and r.purpose == "compress" for r in backend.calls)
    assert f"contains {count_words(text)} words" in backend.calls[0].prompt
    assert "less than 65 words" in backend.calls[0].prompt


def test_compression_that_keeps_failing_is_truncated() -> None:
    text = "A sentence that is long enough. " * 40
    backend = FakeBackend(reply=_script(text))  # never shorter
    result = compress_to_budget(text, model=Client(backend), max_tokens=30, template=load_template("compress"),
                                max_tries=2)
    assert backend.call_count == 2 and result.truncated and COUNT(result.text) <= 30
    assert len(result.attempts) == 2 and all(OVER_LIMIT in a.problems for a in result.attempts)


# ---- artifacts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("Summary:\nElizabeth meets Darcy.", "Elizabeth meets Darcy."),
        ("Summary\n\nElizabeth meets Darcy.", "Elizabeth meets Darcy."),
        ("Summary of the war follows. It ends.", "Summary of the war follows. It ends."),
        ("Updated summary (300 words):\n\nElizabeth meets Darcy.", "Elizabeth meets Darcy."),
        ("Condensed summary (to be within 120 words): Jane falls ill.", "Jane falls ill."),
        ("Here is the updated summary:\nJane falls ill.", "Jane falls ill."),
        ("In this segment, Elizabeth meets Darcy.", "Elizabeth meets Darcy."),
        ("Jane is ill. In the updated summary, Bingley leaves.", "Jane is ill. Bingley leaves."),
        ("In this part of the story, they marry.", "They marry."),
        ("Darcy, in the current excerpt, proposes.", "Darcy proposes."),
        ("In the excerpt provided, the Time Traveller returns.", "The Time Traveller returns."),
        ("Then, in the passage above, he leaves.", "Then he leaves."),
        ("Darcy proposes in this segment.", "Darcy proposes."),
        ("Darcy proposes. Then Elizabeth", "Darcy proposes."),
        ("In the next chapter, they talk.", "In the next chapter, they talk."),  # narrative, kept
        ("更新后的摘要（300字）：\n在这一片段中，阳旭得到了宝物。然后", "阳旭得到了宝物。"),
        ("He travels.\n\nSummary 22:\n\nHe returns.\n\n**Summary 23:**\nHe leaves.",
         "He travels.\n\nHe returns.\n\nHe leaves."),
        ("Summary 3: the third day dawns.", "Summary 3: the third day dawns."),  # text after the colon: kept
        ("She read the summary 3 times:\nonce, twice, thrice.", "She read the summary 3 times:\nonce, twice, thrice."),
    ],
)
def test_deterministic_cleanup(raw: str, cleaned: str) -> None:
    lang = "zh" if "阳" in raw else "en"
    assert clean_deterministic(raw, lang=lang)[0] == cleaned


def test_sentences_copied_from_the_prompt_are_removed() -> None:
    prompt = load_template("summarize_chunk").text
    raw = "Elizabeth laughs. The summary must be within 300 words and could include multiple paragraphs. Darcy writes."
    cleaned, removed = clean_deterministic(raw, prompt_texts=[prompt])
    assert cleaned == "Elizabeth laughs. Darcy writes."
    assert removed == ("The summary must be within 300 words and could include multiple paragraphs.",)


def test_llm_pass_is_used_then_cleaned_and_a_gutted_answer_is_rejected() -> None:
    summary = "In this segment, Elizabeth meets Darcy at a ball and refuses to dance. " * 3
    edited = FakeBackend(reply=lambda r: "Edited summary:\n" + summary.replace("In this segment, ", ""))
    result = remove_artifacts(summary, model=Client(edited), template=load_template("clean"))
    assert result.llm_rejected is None and result.raw == summary
    assert "segment" not in result.cleaned and not result.cleaned.startswith("Edited")
    assert edited.calls[0].temperature == 0.0 and edited.calls[0].purpose == "clean"
    gutted = FakeBackend(reply=lambda r: "Short.")
    result = remove_artifacts(summary, model=Client(gutted), template=load_template("clean"))
    assert result.llm_rejected == "too_short" and result.cleaned.startswith("Elizabeth meets Darcy")


def test_merge_input_headers_a_small_model_copied_are_recorded_as_removed() -> None:
    cleaned, removed = clean_deterministic("He travels.\n\nSummary 22:\n\nHe returns.")
    assert cleaned == "He travels.\n\nHe returns." and removed == ("Summary 22:",)
