"""``booksum models``: known models with context, tokenizer and prices, installed backends and strategies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from booksum_app.cli.base import console, emit_json, esc, handle_errors, json_file, json_option
from booksum_app.money import usd


def _price(value: float | None) -> str:
    return "–" if value is None else usd(value)


@click.command("models")
@json_option("everything")
@handle_errors
def models_command(json_out: Path | None) -> None:
    """List known models (shipped table + your config file), installed backends and strategies."""
    from rich.table import Table

    from booksum_app.llm.registry import choose_judge, choose_model, installed_backends, list_models
    from booksum_app.strategies import STRATEGIES
    from booksum_app.strategies.registry import BUILTIN

    json_file(json_out)
    rows = list_models()
    backends = installed_backends()
    default = choose_model()
    judge = choose_judge()
    strategies = {name: {"description": STRATEGIES[name].description,
                         "source": "built-in" if name in BUILTIN else "plugin",
                         "options": {o.name: {"default": o.default, "help": o.help} for o in STRATEGIES[name].options}}
                  for name in STRATEGIES}
    broken = dict(STRATEGIES.broken)
    if json_out is not None:
        emit_json(json_out, {
            "models": [dataclasses.asdict(r) for r in rows],
            "backends": backends,
            "default_model": {"name": default.info.name, "source": default.source},
            "judge": judge,
            "strategies": strategies,
            "broken_strategies": broken,
        })
        return
    table = Table(title="Known models (USD per million tokens)", title_justify="left")
    for column in ("model", "aliases", "context", "tokenizer", "input", "cached input", "output", "from"):
        table.add_column(column,
                         justify="right" if column in ("context", "input", "cached input", "output") else "left")
    for r in rows:
        table.add_row(esc(r.name), esc(", ".join(r.aliases)), f"{r.context_window:,}", esc(r.tokenizer),
                      _price(r.input_usd_per_mtok), _price(r.cached_input_usd_per_mtok), _price(r.output_usd_per_mtok),
                      r.source)
    console.print(table)
    console.print("Backends: " + ", ".join(f"{p} ({'installed' if ok else 'not installed'})"
                                           for p, ok in backends.items()), markup=False, highlight=False)
    console.print(f"Default model: {default.info.name} (from {default.source}); judge: "
                  f"{judge or 'none chosen (--judge, BOOKSUM_JUDGE or judge_model in the config file)'}",
                  markup=False, highlight=False, soft_wrap=True)
    console.print("Strategies (--set NAME=VALUE sets an option):", markup=False, highlight=False)
    for name, v in strategies.items():
        options = "".join(f"; --set {o.name}={'auto' if o.default is None else str(o.default).lower()}: {o.help}"
                          for o in STRATEGIES[name].options)
        console.print(f"  {name} ({v['source']}): {v['description']}{options}", markup=False, highlight=False,
                      soft_wrap=True)
    for name, reason in broken.items():
        console.print(f"Strategy {name} could not be loaded: {reason}", markup=False, highlight=False, soft_wrap=True)
    console.print("Any model on an OpenAI-compatible server: --model openai:NAME --base-url URL (docs/models.md).",
                  markup=False, highlight=False)
