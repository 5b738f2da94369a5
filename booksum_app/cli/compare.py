"""``booksum compare``: a grid of strategies x models x chunk sizes, planned, run, scored."""

from __future__ import annotations

import dataclasses
import functools
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from booksum_app.cli.base import (
    Heartbeat,
    confirm_plan,
    console,
    emit_json,
    err_console,
    esc,
    handle_errors,
    json_file,
    json_option,
    llm_options,
    llm_settings,
    plan_options,
    snapshot_line,
)
from booksum_app.cli.model_notes import print_model_notes
from booksum_app.config import DEFAULT_CHUNK_SIZE, DEFAULT_MAX_SUMMARY_TOKENS, LANG_CHOICES
from booksum_app.errors import BooksumError
from booksum_app.prompts import DIRECT_TEMPLATES
from booksum_app.signature import detector_signature

if TYPE_CHECKING:
    from collections.abc import Callable

    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.compare_plan import GridPlan
    from booksum_app.runners.compare_results import CompareResult
    from booksum_app.runners.experiment import Experiment
    from booksum_app.runners.progress import GridSnapshot


def _csv_list(value: str | None, option: str = "--models") -> tuple[str, ...] | None:
    from booksum_app.errors import ConfigError

    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if not items:  # an empty list given on purpose must not silently mean "the default"
        raise ConfigError(f"{option} {value!r} names nothing; give a comma-separated list or leave it out")
    return items


def _models(models: str | None, model_opts: tuple[str, ...]) -> tuple[str, ...] | None:
    """``--models a,b`` and ``-m c -m d,e`` together, in order, each model once."""
    named = [*(_csv_list(models, "--models") or ()), *(m for opt in model_opts for m in _csv_list(opt, "-m") or ())]
    return tuple(dict.fromkeys(named)) or None


def _csv_ints(value: str | None) -> tuple[int, ...] | None:
    from booksum_app.errors import ConfigError

    items = _csv_list(value, "--chunk-sizes")
    try:
        return None if items is None else tuple(int(v) for v in items)
    except ValueError as exc:
        raise ConfigError(f"--chunk-sizes {value!r}: give integers separated by commas, e.g. 2048,4096") from exc


def _bucket_limits(value: str | None) -> tuple[tuple[str, int], ...] | None:
    from booksum_app.errors import ConfigError

    items = _csv_list(value, "--bucket-max-tokens")
    if items is None:
        return None
    out = []
    for item in items:
        name, _, number = item.partition("=")
        if not name.strip() or not number.strip().isdigit():
            raise ConfigError(f"--bucket-max-tokens {value!r}: give BUCKET=N pairs, e.g. L=400,XL=400,2XL=500")
        out.append((name.strip(), int(number)))
    return tuple(out)


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
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Sentences per judge call in batched mode.")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory [default: booksum-compare]; rerun with the same one to resume.")
@click.option("--max-summary-len", type=click.IntRange(min=16), default=None,
              help=f"G [default: {DEFAULT_MAX_SUMMARY_TOKENS}].")
@click.option("--prompts", default=None, help="Prompt set: paper, simple, or a directory [default: paper].")
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
def compare_command(
    books: tuple[Path, ...], experiment: Path | None, strategies: str | None, models: str | None,
    model_opts: tuple[str, ...], chunk_sizes: str | None, judge: str | None, no_judge: bool | None,
    judge_base_url: str | None, judge_mode: str | None,
    batch_size: int | None, out: Path | None, max_summary_len: int | None, prompts: str | None,
    lang: str | None, set_opts: tuple[str, ...], direct_template: str | None, no_clean: bool | None,
    chapter_aware: bool | None,
    include_front_matter: bool | None, precomputed: tuple[str, ...], with_release: Path | None,
    jobs: int | None, datasets: tuple[Path, ...], dataset_preset: str, context_field: str | None,
    reference_field: str | None, id_field: str | None, bucket_field: str | None, bucket_max_tokens: str | None,
    regenerate: bool | None, rouge_variant: str | None, max_plan_cost: float, yes: bool, plan_only: bool,
    json_out: Path | None, no_plots: bool, shard: str | None, merge_dirs: tuple[Path, ...], **llm: Any,
) -> None:
    """Run a grid (strategies x models x chunk sizes) over BOOKS and --dataset samples, score every summary,
    print the tables."""
    from booksum_app.chunking.memo import ChunkMemo
    from booksum_app.errors import ConfigError
    from booksum_app.files import check_writable_dir
    from booksum_app.llm.registry import choose_model
    from booksum_app.runners.compare import run_compare
    from booksum_app.runners.compare_plan import plan_grid
    from booksum_app.runners.experiment import (
        DatasetSpec,
        build_experiment,
        direct_template_option,
        jobs_for,
        load_experiment,
        parse_precomputed,
        release_sets,
        set_options,
    )
    from booksum_app.runners.run_config import parse_set

    file_values = load_experiment(experiment) if experiment else {}
    auto_jobs = jobs is None and "jobs" not in file_values
    extra_sets = tuple(parse_precomputed(p) for p in precomputed)
    if with_release is not None:
        extra_sets += release_sets(with_release)
    exp = build_experiment(file_values, {
        "books": books or None, "strategies": _csv_list(strategies, "--strategies"),
        "models": _models(models, model_opts), "chunk_sizes": _csv_ints(chunk_sizes), "judge": judge,
        "use_judge": False if no_judge else None, "judge_mode": judge_mode, "batch_size": batch_size,
        "out": out, "max_summary_tokens": max_summary_len, "prompts": prompts, "lang": lang,
        "options": (direct_template_option(direct_template) if direct_template else ()) + set_options(
            parse_set(set_opts)), "clean": False if no_clean else None,
        "chapter_aware": True if chapter_aware else None,
        "include_front_matter": True if include_front_matter else None,
        "precomputed": extra_sets, "jobs": jobs,
        "datasets": tuple(DatasetSpec(d, dataset_preset, context_field, reference_field, id_field, bucket_field,
                                      rouge_variant=rouge_variant) for d in datasets),
        "bucket_max_tokens": _bucket_limits(bucket_max_tokens),
        "regenerate": True if regenerate else None,
    })
    if not exp.books and not exp.precomputed and not exp.datasets:
        raise ConfigError("nothing to compare: give BOOKS (files or directories), --dataset, --experiment, "
                          "or --precomputed")
    settings = llm_settings(**llm)
    if exp.use_judge:  # the judge's own server (runners/servers.py)
        from booksum_app.runners.compare_plan import judge_string
        from booksum_app.runners.servers import judge_server

        settings = judge_server(settings, judge_string(exp, settings), judge_base_url, summarizers=exp.models)
    hosted = False
    for model in dict.fromkeys(m for m in (*exp.models, exp.judge) if m):  # typos and unknown prices
        spec = choose_model(model, settings=settings)
        hosted = hosted or (model in exp.models and spec.hosted)
        print_model_notes(spec)
    if auto_jobs:  # enough books at once to fill the calls in flight
        exp = dataclasses.replace(exp, jobs=jobs_for(settings.concurrency, hosted=hosted))
    if shard is not None or merge_dirs:
        part = _shard_or_merge(exp, settings, shard, merge_dirs)
        if part is None:
            return
        exp = part
    elif not plan_only:
        check_writable_dir(exp.out)  # before the first paid call
    json_file(json_out)  # a bad --json FILE fails before the plan
    chunk_memo = ChunkMemo()  # where the plan cuts each book, for the run to reuse
    plan = plan_grid(exp, settings, chunk_memo=chunk_memo)
    if plan_only:  # a plan asked for is the output: stdout (compare --plan-only > plan.txt)
        if json_out is not None:
            emit_json(json_out, _plan_dict(plan))
            if str(json_out) == "-":
                return
        _render_plan(plan, output=True)
        return
    _render_plan(plan)
    confirm_plan(plan.cost_usd, max_plan_cost=max_plan_cost, yes=yes, what="The plan")
    result = _run_compare_with_progress(exp, settings, functools.partial(run_compare, chunk_memo=chunk_memo),
                                        plots=not no_plots)
    if json_out is not None:  # results.json is already written under --out: the same content here
        from booksum_app.runners.compare_results import result_to_dict

        emit_json(json_out, result_to_dict(result))
    if json_out is None or str(json_out) != "-":
        _render_compare(result)
    elif result.judge_notice:  # the tables are replaced by the JSON, the note is not
        err_console.print(f"[yellow]note:[/] {esc(result.judge_notice)}", highlight=False, soft_wrap=True)
    _refuse_empty_summaries(result)


def _shard_or_merge(exp: Experiment, settings: LLMSettings, shard_text: str | None,
                    merge_dirs: tuple[Path, ...]) -> Experiment | None:
    """``--shard``: keep this shard's books and write its manifest; ``--merge``: take the shards' records.

    None: this shard has no book (more shards than books); its manifest says so and it is done.
    """
    from booksum_app.errors import ConfigError
    from booksum_app.files import check_writable_dir
    from booksum_app.llm.registry import choose_model
    from booksum_app.runners.compare_plan import judge_string
    from booksum_app.runners.shard import (
        grid_fingerprint,
        merge_shards,
        parse_shard,
        shard_books,
        write_manifest,
    )

    if shard_text is not None and merge_dirs:
        raise ConfigError("--shard runs one part and --merge combines all of them; give one or the other")
    if exp.datasets or (shard_text is not None and exp.precomputed):
        raise ConfigError("--shard and --merge split book files only; leave out --dataset, and give --precomputed "
                          "to the merging compare")
    check_writable_dir(exp.out)
    # the models as resolved (a default from BOOKSUM_MODEL or the config file may differ by machine)
    resolved = dataclasses.replace(exp, models=tuple(choose_model(m, settings=settings).info.name for m in exp.models))
    fingerprint = grid_fingerprint(resolved, judge_string(exp, settings))
    if merge_dirs:
        report = merge_shards(merge_dirs, out=exp.out, books=exp.books, fingerprint=fingerprint)
        err_console.print(f"merged {report.records} records of {report.shards} shards into {exp.out}/records/",
                          highlight=False, markup=False, soft_wrap=True)
        return exp
    assert shard_text is not None
    shard = parse_shard(shard_text)
    mine = dataclasses.replace(exp, books=shard_books(exp.books, shard))
    write_manifest(exp.out, shard, mine, exp.books, fingerprint)
    if not mine.books:
        err_console.print(f"shard {shard} has no book ({len(exp.books)} books, {shard.count} shards); nothing to run",
                          highlight=False, markup=False, soft_wrap=True)
        return None
    return mine


def _refuse_empty_summaries(result: CompareResult) -> None:
    """A grid that produced empty summaries is not a success (as in summarize): say where, exit 1."""
    empty = [(row.name, b) for row in result.rows if row.kind == "run" for b in row.books if not b.summary.strip()]
    if empty:
        where = ", ".join(f"{name}: {b.book}" for name, b in empty[:3]) + (
            f" (+{len(empty) - 3})" if len(empty) > 3 else ""
        )
        raise BooksumError(
            f"{len(empty)} final summaries are empty (the model returned nothing usable after cleaning): {where}; "
            f"their records (raw summaries, every call) are under {result.out}/records/; their rows count them as "
            "length 0; try another model or --no-clean"
        )


def _plan_dict(plan: GridPlan) -> dict[str, Any]:
    """The plan as JSON: one object per line (configurations, then the judge), and the totals."""
    return {"judge": plan.judge, "lines": [dataclasses.asdict(line) for line in plan.lines], "calls": plan.calls,
            "input_tokens": plan.input_tokens, "output_tokens": plan.output_tokens,
            "cost_usd": round(plan.cost_usd, 6), "judge_replayed_calls": plan.judge_replayed_calls}


def _render_plan(plan: GridPlan, *, output: bool = False) -> None:
    """The plan table: on stderr before a run, on stdout when it is the output (``--plan-only``)."""
    from rich.table import Table

    table = Table(title="Pre-flight plan (upper bounds; the judge's prompt-cache reads predicted)",
                  title_justify="left")
    for column in ("configuration", "summaries", "calls", "input tokens (cached)", "output tokens", "cost"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for line in plan.lines:
        name = f"judge ({plan.judge})" if line.name == "judge" else line.name
        cached = f" ({line.cached_input_tokens:,})" if line.cached_input_tokens else ""
        table.add_row(esc(name), f"{line.remaining}", f"{line.calls:,}", f"{line.input_tokens:,}{cached}",
                      f"{line.output_tokens:,}", f"${line.cost_usd:.2f}")
    table.add_row("[bold]total[/]", "", f"{plan.calls:,}", f"{plan.input_tokens:,}", f"{plan.output_tokens:,}",
                  f"[bold]${plan.cost_usd:.2f}[/]")
    where = console if output else err_console
    (where if where.is_terminal else Console(stderr=not output, width=160)).print(table)
    if plan.judge_replayed_calls:
        where.print(f"{plan.judge_replayed_calls:,} judge calls are answered from the call cache (free) "
                          "and left out of the plan", highlight=False, markup=False, soft_wrap=True)


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


WIDE_TABLE = 260  # the comparison has 16 columns: on a pipe, wide enough that no header wraps


def _render_compare(result: CompareResult) -> None:
    from booksum_app.cli.tables import compare_columns, print_fitted

    if result.judge_notice:
        err_console.print(f"[yellow]note:[/] {esc(result.judge_notice)}", highlight=False, soft_wrap=True)
    show_failures = any(any(row.failures.counts.values()) for row in result.rows)
    columns = ("Model", "Strategy", "Chunk", "Books", "BooookScore (95% CI)", "Avg. len", "% novel 3-g",
               "% rep. 3-g", *(("Failure modes",) if show_failures else ()), "Calls (cached)", "In tok", "Out tok",
               "Cost", "Judge $", "Judge in/sent.", "Wall s")
    rows: list[list[str]] = []

    def f1(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    for row in result.rows:
        b = row.booookscore
        score = "–"
        if b is not None and b.score is not None:
            score = f"{100 * b.score:.1f} ({100 * (b.ci_low or 0):.1f}–{100 * (b.ci_high or 0):.1f})"
        usage, judge = row.usage, row.judge_usage
        per = row.judge_billed_input_per_sentence  # billed input-token equivalents (docs/scoring.md)
        judge_cells = [f"${judge.cost_usd:.4f}" if judge.calls or row.kind == "run" else "–", f1(per)]
        cost_cells = [f"{usage.calls} ({usage.cache_hits})", f"{usage.input_tokens:,}", f"{usage.output_tokens:,}",
                      f"${usage.cost_usd:.4f}", *judge_cells, f"{row.wall_s:.1f}"] \
            if row.kind == "run" else (["–"] * 4 + judge_cells + ["–"])
        strategy = f"{row.strategy or '–'}{' ' + row.template if row.template else ''}"
        name = row.model if row.kind == "run" else f"{row.model} (released)" if row.strategy else row.name
        # summaries showing each mode, e.g. "subjective 2, repetition 1" (definitions in docs/scoring.md)
        failures = ", ".join(f"{mode} {n}" for mode, n in row.failures.counts.items() if n) or "–"
        rows.append([esc(name), esc(strategy), str(row.chunk_size or "–"), str(len(row.books)), score,
                     f1(row.ngrams.avg_tokens), f1(row.ngrams.novel_pct), f1(row.ngrams.repeated_pct),
                     *((failures,) if show_failures else ()), *cost_cells])
    # the columns that fit the terminal, in COMPARE_PRIORITY order; the rest are in results.csv/json
    print_fitted(console if console.is_terminal else Console(width=WIDE_TABLE),
                 "BooookScore comparison (Table 2 shape)", compare_columns(columns), rows,
                 where=f"{result.out}/results.csv and results.json")
    signatures = dict.fromkeys(r.booookscore_signature for r in result.rows if r.booookscore_signature)
    for signature in signatures:
        console.print(f"BooookScore: {signature}", highlight=False, soft_wrap=True, markup=False)
    for signature in dict.fromkeys(r.ngrams.signature for r in result.rows):  # words differ by language
        console.print(f"n-grams: {signature}", highlight=False, soft_wrap=True, markup=False)
    if result.rows:
        console.print(f"Failure modes: {detector_signature()}", highlight=False, soft_wrap=True, markup=False)
    _render_datasets(result)
    for row in result.rows:
        for signature in row.summary_signatures:
            console.print(f"{row.name}: {signature}", highlight=False, soft_wrap=True, markup=False)
    err_console.print(
        f"{sum(len(r.books) for r in result.rows if r.kind == 'run')} summaries ({result.reused} from finished "
        f"records) in {result.wall_s:.1f}s; results in {result.out}/ (results.json, results.csv, records/, "
        f"summaries/, annotations/, plots/)", highlight=False, soft_wrap=True, markup=False)


def _render_datasets(result: CompareResult) -> None:
    """The benchmark-dataset table: ROUGE-L F (x100) overall and per length bucket, and IB/IE MSE."""
    from rich.table import Table

    from booksum_app.runners.compare_results import template_gaps
    from booksum_app.scoring.buckets import bucket_order
    from booksum_app.scoring.rouge import rouge_signature

    rows = [(row, d) for row in result.rows for d in row.datasets]
    if not rows:
        return
    buckets = bucket_order(b.bucket for _, d in rows for b in d.buckets)
    gaps = {(g.model, g.strategy, g.dataset): g.mse for g in template_gaps(result.rows)}
    table = Table(title="Benchmark datasets: ROUGE-L F x100 (bucket cells: mean sample length, cl100k tokens)",
                  title_justify="left")
    for column in ("Configuration", "Dataset", "Samples", "ROUGE-L", "Mean len", "Summary len", *buckets,
                   "MSE IB/IE"):
        table.add_column(column, justify="left" if column in ("Configuration", "Dataset") else "right")
    for row, d in rows:
        by_bucket = {b.bucket: b for b in d.buckets}
        cells = [f"{by_bucket[k].rouge_l:.1f} ({by_bucket[k].mean_length_tokens:,.0f})" if k in by_bucket else "–"
                 for k in buckets]
        mse = gaps.get((row.model, row.strategy or "", d.dataset))
        table.add_row(esc(row.name), esc(d.dataset), str(d.n), f"{d.rouge_l:.1f}", f"{d.mean_length_tokens:,.0f}",
                      f"{d.mean_summary_tokens:,.0f}", *cells, "–" if mse is None else f"{mse:.2f}")
    (console if console.is_terminal else Console(width=200)).print(table)
    signatures = dict.fromkeys(s.rouge_signature or rouge_signature(s.lang) for _, d in rows for s in d.samples)
    for signature in signatures:
        console.print(f"ROUGE-L: {signature}", highlight=False, soft_wrap=True, markup=False)
    for (model, strategy), values in _mean_mse(gaps).items():  # CNNSum Table 2: one file per subset, mean over them
        console.print(f"MSE IB/IE, {model} {strategy}: {statistics.fmean(values):.2f} (mean over {len(values)} "
                      f"datasets)", highlight=False, soft_wrap=True, markup=False)


def _mean_mse(gaps: dict[tuple[str, str, str], float | None]) -> dict[tuple[str, str], list[float]]:
    """Per (model, strategy), the IB/IE MSE of each dataset both scored, where there are several."""
    out: dict[tuple[str, str], list[float]] = {}
    for (model, strategy, _), mse in gaps.items():
        if mse is not None:
            out.setdefault((model, strategy), []).append(mse)
    return {k: v for k, v in out.items() if len(v) > 1}
