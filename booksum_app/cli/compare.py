"""``booksum compare``: a grid of strategies x models x chunk sizes, planned, run, scored."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from booksum_app.cli.base import (
    LLM_OPTION_NAMES,
    confirm_plan,
    emit_json,
    err_console,
    esc,
    handle_errors,
    json_file,
    json_option,
    judge_mode,
    llm_options,
    llm_settings,
    plan_options,
)
from booksum_app.cli.book_input import print_book_warnings
from booksum_app.cli.compare_render import plan_dict, refuse_empty_summaries, render_compare, render_plan
from booksum_app.cli.live import Heartbeat, snapshot_line
from booksum_app.cli.model_notes import print_model_notes
from booksum_app.config import DEFAULT_CHUNK_SIZE, DEFAULT_MAX_SUMMARY_TOKENS, LANG_CHOICES
from booksum_app.prompts import DIRECT_TEMPLATES

if TYPE_CHECKING:
    from collections.abc import Callable

    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.compare_results import CompareResult
    from booksum_app.runners.experiment import Experiment
    from booksum_app.runners.progress import GridSnapshot


@click.command("compare")
@click.argument("books", nargs=-1, type=click.Path(path_type=Path))
@click.option("--experiment", "-e", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Experiment file (TOML); options given here override its values.")
@click.option("--strategies", default=None, help="Comma-separated, e.g. hier,inc,direct [default: hier,inc].")
@click.option("--models", default=None, help="Comma-separated model strings [default: configured or local].")
@click.option("--model", "-m", "model_opts", multiple=True,
              help="A model string, as on every other command; repeatable, or comma-separated; adds to --models.")
@click.option("--chunk-sizes", default=None,
              help=f"Comma-separated tokens per chunk, e.g. 2048,4096 [default: {DEFAULT_CHUNK_SIZE}].")
@click.option("--judge", default=None,
              help="BooookScore judge model [default: BOOKSUM_JUDGE, else config judge_model; none: no BooookScore, "
                   "n-gram statistics only; booksum never picks one].")
@click.option("--no-judge", is_flag=True, default=None, help="Skip BooookScore; n-gram statistics only.")
@click.option("--judge-base-url", default=None, metavar="URL|api",
              help="The judge's server when it is not --base-url's (api: its provider's own API) "
                   "[default: --base-url; an Anthropic judge: Anthropic].")
@click.option("--judge-mode", type=click.Choice(["sentence", "batched"]), default=None,
              help="sentence: one judge call per sentence (the paper) [default]; batched: several per call.")
@click.option("--mode", "mode_alias", type=click.Choice(["sentence", "batched"]), default=None, hidden=True,
              help="Another spelling of --judge-mode.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Sentences per judge call in batched mode.")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory [default: booksum-compare]; rerun with the same one to resume.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=None,
              help=f"G [default: {DEFAULT_MAX_SUMMARY_TOKENS}].")
@click.option("--prompts", default=None, help="Prompt set: paper, simple, or a directory [default: paper].")
@click.option("--temperature", type=float, default=None,  # checked in Experiment
              help="Sampling temperature of the summarizers, 0-2 (recorded in each record and signature) "
                   "[default: 0.5, the paper's; --dataset presets: their benchmark's, which a given value "
                   "replaces, signed overrides:temperature].")
@click.option("--lang", type=click.Choice(LANG_CHOICES), default=None,
              help="Language of the prompts and the sentence splitter; auto: each book's declared language, "
                   "else detected from its text [default: auto].")
@click.option("--set", "set_opts", multiple=True, metavar="NAME=VALUE[,VALUE...]",
              help="A strategy option for the strategies that declare it (repeatable); several values run "
                   "one configuration each.")
@click.option("--direct-template", type=click.Choice([*DIRECT_TEMPLATES, "both"]), default=None,
              help="direct: instruction before (ib) or after (ie) the text, or both side by side [default: ib]; "
                   "--set direct_template=ib,ie.")
@click.option("--no-clean", is_flag=True, default=None, help="Skip artifact removal.")
@click.option("--chapter-aware", is_flag=True, default=None, help="Never let a chunk straddle two chapters.")
@click.option("--include-front-matter", is_flag=True, default=None, help="Also summarize front/back matter.")
@click.option("--precomputed", multiple=True, metavar="NAME=SUMMARIES.json[:ANNOTATIONS.json]",
              help="A summary set made elsewhere to add to the table (repeatable).")
@click.option("--with-release", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Add the four BooookScore release configurations (with annotations) from this directory.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Books summarized at once [default: enough for the calls in flight: --concurrency / 4, "
                   "32 for a hosted API, else 4; at most 64].")
@click.option("--dataset", "datasets", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Benchmark JSONL (one sample a line), scored with ROUGE-L (repeatable).")
@click.option("--dataset-preset", type=click.Choice(["auto", "cnnsum", "clongeval", "custom"]), default="auto",
              show_default=True, help="--dataset format and protocol: cnnsum (context, summary), clongeval (context, "
                                      "answer, id), each run and scored as the benchmark does; "
                                      "custom: booksum's settings.")
@click.option("--context-field", default=None, help="--dataset field holding the text to summarize.")
@click.option("--reference-field", default=None, help="--dataset field holding the reference summary.")
@click.option("--id-field", default=None, help="--dataset field naming each sample ('' : the line number).")
@click.option("--bucket-field", default=None, help="--dataset field naming each sample's length bucket.")
@click.option("--bucket-max-tokens", default=None, metavar="BUCKET=N,...",
              help="G per length bucket of --dataset samples [default: the preset's: CNNSum L=400,XL=400,2XL=500,"
                   "3XL=500; CLongEval 400].")
@click.option("--regenerate", is_flag=True, default=None,
              help="Under a --dataset preset, regenerate invalid answers (booksum's rule, temperature 1.0) "
                   "instead of the benchmark's one greedy call; named in the signature (overrides:decoding).")
@click.option("--rouge-variant", type=click.Choice(["clongeval", "cnnsum", "rouge-score"]), default=None,
              help="ROUGE-L of --dataset samples [default: the preset's own (cnnsum, clongeval); "
                   "rouge-score for custom].")
@plan_options
@click.option("--plan-only", is_flag=True, help="Print the pre-flight plan on stdout and stop (without it the plan "
              "goes to stderr, before the run).")
@json_option("the results (as results.json; with --plan-only, the plan)")
@click.option("--no-plots", is_flag=True, help="Do not write the plots (no matplotlib needed).")
@click.option("--shard", default=None, metavar="I/N",
              help="Run only shard I of N (from 0) of BOOKS: the k-th book by file name goes to shard k mod N.")
@click.option("--merge", "merge_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A finished shard's output directory (repeatable, all N): reuse its records; the table is "
                   "the unsharded one.")
@llm_options
@handle_errors
def compare_command(books: tuple[Path, ...], experiment: Path | None, judge_base_url: str | None,
                    mode_alias: str | None, max_plan_cost: float, yes: bool, plan_only: bool,
                    json_out: Path | None, no_plots: bool, shard: str | None, merge_dirs: tuple[Path, ...],
                    **options: Any) -> None:
    """Run a grid (strategies x models x chunk sizes) over BOOKS and --dataset samples, score every summary,
    print the tables."""
    from booksum_app.chunking.memo import ChunkMemo
    from booksum_app.files import check_writable_dir
    from booksum_app.runners.compare import run_compare
    from booksum_app.runners.compare_plan import check_grid_ready, plan_grid

    exp, settings = _experiment(books, experiment, judge_base_url, mode_alias, options)
    if not plan_only:  # every model's and the judge's key and install: exit 2 before anything is written
        check_grid_ready(exp, settings)
    if shard is not None or merge_dirs:
        from booksum_app.runners.compare_options import shard_or_merge

        step = shard_or_merge(exp, settings, shard, merge_dirs)
        if step.message:
            err_console.print(step.message, highlight=False, markup=False)
        if step.exp is None:
            return
        exp = step.exp
    elif not plan_only:
        check_writable_dir(exp.out)  # before the first paid call
    json_file(json_out)  # a bad --json FILE fails before the plan
    chunk_memo = ChunkMemo()  # where the plan cuts each book, for the run to reuse
    plan = plan_grid(exp, settings, chunk_memo=chunk_memo)
    print_book_warnings(plan.book_warnings)
    if plan_only:  # a plan asked for is the output: stdout (compare --plan-only > plan.txt)
        if json_out is not None:
            emit_json(json_out, plan_dict(plan))
        if json_out is None or str(json_out) != "-":
            render_plan(plan, output=True)
        return
    render_plan(plan)
    unpriced = _unpriced(exp, settings)  # a paid API's model with no price: the plan's cost is unknown, never $0
    if unpriced:
        err_console.print(f"cost unknown: booksum has no price for {', '.join(unpriced)}", highlight=False,
                          markup=False, soft_wrap=True)
    confirm_plan(None if unpriced else plan.cost_usd, max_plan_cost=max_plan_cost, yes=yes, what="The plan")
    result = _run_compare_with_progress(exp, settings, functools.partial(run_compare, chunk_memo=chunk_memo),
                                        plots=not no_plots)
    _print_result(result, json_out)


def _experiment(books: tuple[Path, ...], experiment: Path | None, judge_base_url: str | None,
                mode_alias: str | None, options: dict[str, Any]) -> tuple[Experiment, LLMSettings]:
    """The grid the options describe, its models resolved (their notes printed), and the call settings."""
    from booksum_app.runners.compare_options import DatasetOptions, experiment_from_options, resolve_grid
    from booksum_app.runners.datasets import preset_override_note

    llm = {k: options.pop(k) for k in LLM_OPTION_NAMES}
    options["judge_mode"] = judge_mode(options.get("judge_mode"), mode_alias, "--judge-mode", "--mode")
    datasets = DatasetOptions(options.pop("datasets"), options.pop("dataset_preset"), options.pop("context_field"),
                              options.pop("reference_field"), options.pop("id_field"), options.pop("bucket_field"),
                              options.pop("bucket_max_tokens"), options.pop("rouge_variant"))
    exp, auto_jobs = experiment_from_options(experiment, {**options, "books": books}, datasets)
    for note in exp.notes:  # files of a books folder that are not books (README.md, LICENSE, records)
        err_console.print(f"[yellow]note:[/] {esc(note)}", highlight=False)
    override = preset_override_note(exp)  # the user's --temperature wins over a preset's: said once
    if override:
        err_console.print(f"[yellow]note:[/] {esc(override)}", highlight=False)
    grid = resolve_grid(exp, llm_settings(**llm), judge_base_url=judge_base_url, auto_jobs=auto_jobs)
    for spec in grid.specs:  # typos and unknown prices
        print_model_notes(spec)
    return grid.exp, grid.settings


def _unpriced(exp: Experiment, settings: LLMSettings) -> list[str]:
    """The grid's models on a paid API that booksum has no price for."""
    from booksum_app.llm.registry import choose_model

    names = dict.fromkeys(m for m in (*exp.models, exp.judge) if m)
    return [m for m in names if not choose_model(m, settings=settings).info.price_known]


def _print_result(result: CompareResult, json_out: Path | None) -> None:
    """The tables on stdout, or the results as JSON (results.json is already written under --out)."""
    if json_out is not None:
        from booksum_app.runners.compare_results import result_to_dict

        emit_json(json_out, result_to_dict(result))
    if json_out is None or str(json_out) != "-":
        render_compare(result)
    elif result.judge_notice:  # the tables are replaced by the JSON, the note is not
        err_console.print(f"[yellow]note:[/] {esc(result.judge_notice)}", highlight=False)
    refuse_empty_summaries(result)


def _run_compare_with_progress(
    exp: Experiment, settings: LLMSettings, run: Callable[..., CompareResult], *, plots: bool
) -> CompareResult:
    from booksum_app.cli.tables import GridDisplay
    from booksum_app.runners.progress import GridProgress

    tracker = GridProgress()
    display = GridDisplay(err_console)  # one line per row, cut to the terminal's width
    tracker.listeners.append(display.draw)
    with display, Heartbeat(lambda: _heartbeat_line(tracker.snapshot())):
        return run(exp, settings, progress=tracker, plots=plots)


def _heartbeat_line(snap: GridSnapshot) -> str:
    """The whole grid's line, then the configurations still running (three at most, then a count)."""
    open_configs = [f"{name} {done}/{total}" for name, done, total in snap.configs if done < total]
    more = f" (+{len(open_configs) - 3})" if len(open_configs) > 3 else ""
    return snapshot_line(snap) + (f" · {', '.join(open_configs[:3])}{more}" if open_configs else "")


