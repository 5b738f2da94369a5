"""``booksum compare``'s options made into an :class:`Experiment`, its models resolved, and the
``--shard`` / ``--merge`` step: what the command decides before its plan, with no printing."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from booksum_app.errors import ConfigError
from booksum_app.llm.registry import LLMSettings, ModelSpec, choose_model
from booksum_app.runners.experiment import (
    DatasetSpec,
    Experiment,
    build_experiment,
    direct_template_option,
    jobs_for,
    load_experiment,
    parse_precomputed,
    release_sets,
    set_options,
)
from booksum_app.runners.run_config import parse_set


def csv_list(value: str | None, option: str = "--models") -> tuple[str, ...] | None:
    """A comma-separated option as its items; None when not given; an empty list is refused."""
    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if not items:  # an empty list given on purpose must not silently mean "the default"
        raise ConfigError(f"{option} {value!r} names nothing; give a comma-separated list or leave it out")
    return items


def model_list(models: str | None, model_opts: tuple[str, ...]) -> tuple[str, ...] | None:
    """``--models a,b`` and ``-m c -m d,e`` together, in order, each model once."""
    named = [*(csv_list(models, "--models") or ()), *(m for opt in model_opts for m in csv_list(opt, "-m") or ())]
    return tuple(dict.fromkeys(named)) or None


def csv_ints(value: str | None) -> tuple[int, ...] | None:
    items = csv_list(value, "--chunk-sizes")
    try:
        return None if items is None else tuple(int(v) for v in items)
    except ValueError as exc:
        raise ConfigError(f"--chunk-sizes {value!r}: give integers separated by commas, e.g. 2048,4096") from exc


def bucket_limits(value: str | None) -> tuple[tuple[str, int], ...] | None:
    items = csv_list(value, "--bucket-max-tokens")
    if items is None:
        return None
    out = []
    for item in items:
        name, _, number = item.partition("=")
        if not name.strip() or not number.strip().isdigit():
            raise ConfigError(f"--bucket-max-tokens {value!r}: give BUCKET=N pairs, e.g. L=400,XL=400,2XL=500")
        out.append((name.strip(), int(number)))
    return tuple(out)


@dataclass(frozen=True)
class DatasetOptions:
    """compare's ``--dataset*`` options, as given."""

    paths: tuple[Path, ...] = ()
    preset: str = "auto"
    context_field: str | None = None
    reference_field: str | None = None
    id_field: str | None = None
    bucket_field: str | None = None
    bucket_max_tokens: str | None = None
    rouge_variant: str | None = None

    def specs(self) -> tuple[DatasetSpec, ...]:
        return tuple(DatasetSpec(d, self.preset, self.context_field, self.reference_field, self.id_field,
                                 self.bucket_field, rouge_variant=self.rouge_variant) for d in self.paths)


def experiment_from_options(experiment: Path | None, options: Mapping[str, Any], datasets: DatasetOptions,
                            ) -> tuple[Experiment, bool]:
    """The experiment the command line and ``--experiment FILE`` describe (the line wins), and
    whether ``--jobs`` is left to :func:`~booksum_app.runners.experiment.jobs_for`.

    ``options`` holds compare's option values by parameter name (None: not given).

    Raises:
        ConfigError: a bad value, or nothing to compare.
    """
    file_values = load_experiment(experiment) if experiment else {}
    auto_jobs = options.get("jobs") is None and "jobs" not in file_values
    extra_sets = tuple(parse_precomputed(p) for p in options.get("precomputed", ()))
    if options.get("with_release") is not None:
        extra_sets += release_sets(options["with_release"])
    direct = options.get("direct_template")
    exp = build_experiment(file_values, {
        "books": options.get("books") or None, "strategies": csv_list(options.get("strategies"), "--strategies"),
        "models": model_list(options.get("models"), options.get("model_opts", ())),
        "chunk_sizes": csv_ints(options.get("chunk_sizes")), "judge": options.get("judge"),
        "use_judge": False if options.get("no_judge") else None, "judge_mode": options.get("judge_mode"),
        "batch_size": options.get("batch_size"), "out": options.get("out"),
        "max_summary_tokens": options.get("max_summary_len"), "prompts": options.get("prompts"),
        "lang": options.get("lang"), "temperature": options.get("temperature"),
        "options": (direct_template_option(direct) if direct else ()) + set_options(
            parse_set(options.get("set_opts", ()))),
        "clean": False if options.get("no_clean") else None,
        "chapter_aware": True if options.get("chapter_aware") else None,
        "include_front_matter": True if options.get("include_front_matter") else None,
        "precomputed": extra_sets, "jobs": options.get("jobs"), "datasets": datasets.specs(),
        "bucket_max_tokens": bucket_limits(datasets.bucket_max_tokens),
        "regenerate": True if options.get("regenerate") else None,
    })
    if not exp.books and not exp.precomputed and not exp.datasets:
        raise ConfigError("nothing to compare: give BOOKS (files or directories), --dataset, --experiment, "
                          "or --precomputed")
    return exp, auto_jobs


@dataclass(frozen=True)
class ResolvedGrid:
    """The experiment with its jobs decided, the settings (the judge's server included) and every
    model of the grid resolved once, summarizers and judge, in order."""

    exp: Experiment
    settings: LLMSettings
    specs: tuple[ModelSpec, ...]


def resolve_grid(exp: Experiment, settings: LLMSettings, *, judge_base_url: str | None,
                 auto_jobs: bool) -> ResolvedGrid:
    """Resolve every model of the grid (a typo or an unknown price fails here, before any output)."""
    if exp.use_judge:  # the judge's own server (runners/servers.py)
        from booksum_app.runners.compare_plan import judge_string
        from booksum_app.runners.servers import judge_server

        settings = judge_server(settings, judge_string(exp, settings), judge_base_url, summarizers=exp.models)
    hosted = False
    specs = []
    for model in dict.fromkeys((*exp.models, *((exp.judge,) if exp.judge else ()))):  # None: the default model
        spec = choose_model(model, settings=settings)
        hosted = hosted or (model in exp.models and spec.hosted)
        specs.append(spec)
    if auto_jobs:  # enough books at once to fill the calls in flight
        exp = dataclasses.replace(exp, jobs=jobs_for(settings.concurrency, hosted=hosted))
    return ResolvedGrid(exp, settings, tuple(specs))


@dataclass(frozen=True)
class ShardStep:
    """What ``--shard`` / ``--merge`` leaves to run (None: this shard has no book) and what to say."""

    exp: Experiment | None
    message: str | None


def shard_or_merge(exp: Experiment, settings: LLMSettings, shard_text: str | None,
                   merge_dirs: tuple[Path, ...]) -> ShardStep:
    """``--shard``: keep this shard's books and write its manifest; ``--merge``: take the shards' records."""
    from booksum_app.files import check_writable_dir
    from booksum_app.runners.compare_plan import judge_string
    from booksum_app.runners.shard import grid_fingerprint, merge_shards, parse_shard, shard_books, write_manifest

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
        return ShardStep(exp, f"merged {report.records} records of {report.shards} shards into {exp.out}/records/")
    assert shard_text is not None
    shard = parse_shard(shard_text)
    mine = dataclasses.replace(exp, books=shard_books(exp.books, shard))
    write_manifest(exp.out, shard, mine, exp.books, fingerprint)
    if not mine.books:
        return ShardStep(None, f"shard {shard} has no book ({len(exp.books)} books, {shard.count} shards); "
                               "nothing to run")
    return ShardStep(mine, None)


__all__ = ["DatasetOptions", "ResolvedGrid", "ShardStep", "bucket_limits", "csv_ints", "csv_list",
           "experiment_from_options", "model_list", "resolve_grid", "shard_or_merge"]
