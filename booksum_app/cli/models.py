"""``booksum models``: known models with context, tokenizer and prices, installed backends and strategies."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from booksum_app.cli.base import console, emit_json, esc, handle_errors, json_file, json_option
from booksum_app.money import usd

if TYPE_CHECKING:
    from booksum_app.llm.registry import ModelEntry


def _price(value: float | None) -> str:
    return "–" if value is None else usd(value)


@click.command("models")
@json_option("everything")
@handle_errors
def models_command(json_out: Path | None) -> None:
    """List known models (shipped table + your config file), installed backends and strategies."""
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
    _render_models(rows)
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


# which columns a narrow terminal keeps first: the model string (what -m takes), its context and prices
MODEL_COLUMNS = (("model", 0), ("aliases", 6), ("context", 1), ("tokenizer", 5), ("input", 2), ("cached input", 4),
                 ("output", 3), ("from", 7))


def _render_models(rows: Sequence[ModelEntry]) -> None:
    """The model table, whole columns in MODEL_COLUMNS' priority (every column: --json)."""
    from booksum_app.cli.consoles import plain_console
    from booksum_app.cli.tables import WIDE_TABLE, Col, print_fitted

    columns = [Col(h, p, "right" if h in ("context", "input", "cached input", "output") else "left",
                   max_width=24 if h == "aliases" else None, wrap=h == "aliases") for h, p in MODEL_COLUMNS]
    cells = [[esc(r.name), esc(", ".join(r.aliases)), f"{r.context_window:,}", esc(r.tokenizer),
              _price(r.input_usd_per_mtok), _price(r.cached_input_usd_per_mtok), _price(r.output_usd_per_mtok),
              esc(r.source)] for r in rows]
    print_fitted(console if console.is_terminal else plain_console(width=WIDE_TABLE),
                 "Known models (USD per million tokens)", columns, cells, where="booksum models --json")

