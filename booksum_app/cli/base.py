"""What every command shares: the consoles, one-line errors, the heartbeat, shared options.

Nothing outside ``booksum_app.cli`` prints or exits; this module turns
:mod:`booksum_app.errors` into one-line messages and exit codes. Text from outside (titles,
paths, server messages) is escaped with ``esc`` or printed with ``markup=False``.
"""

from __future__ import annotations

import math
import sqlite3
import sys
import threading
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from booksum_app.config import (
    DEFAULT_MAX_PLAN_COST_USD,
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    REASONING_EFFORTS,
    THINKING_MODES,
)
from booksum_app.errors import BooksumError, redact, server_message
from booksum_app.jsonin import parse_json_or_none
from booksum_app.money import usd
from booksum_app.textsafe import (
    markup_safe as esc,  # outside text: never markup, no control sequences
)
from booksum_app.textsafe import printable

if TYPE_CHECKING:
    from rich.progress import Progress

    from booksum_app.llm.calls import CallRecord
    from booksum_app.llm.registry import LLMSettings
    from booksum_app.runners.progress import GridSnapshot, ProgressSnapshot

    Snapshot = ProgressSnapshot | GridSnapshot

F = TypeVar("F", bound=Callable[..., Any])

from booksum_app.cli.consoles import (
    _error_console,
    console,
    err_console,
    quiet_broken_pipe,
)

PIPE_WIDTH = 200  # tables written to a pipe or file are not wrapped at 80 columns


# "\b": click prints the block as written, so no code or option is broken at a hyphen ("--max-" / "cost")
EXIT_CODES = (
    "\b\nExit codes:\n"
    "  0 success; 1 other failure (disk, judge);\n"
    "  2 bad option, config (no API key set, a backend not installed), input or output path;\n"
    "  3 unreadable book (format, corruption, DRM);\n"
    "  4 model or server failed (a key rejected, or after retries);\n"
    "  5 --max-cost would be passed;\n"
    "  6 you answered no to a plan (nothing was spent);\n"
    "  130 interrupted (rerun to resume from the cache). See docs/guarantees.md."
)


class Verbosity:
    """What -q/-v asked for, set once per invocation by the group's callback."""

    level = 1  # 0: errors and results only; 1: notes and progress; 2: also one line per call

    @classmethod
    def apply(cls, *, quiet: bool, verbose: bool) -> None:
        cls.level = 0 if quiet else 2 if verbose else 1
        err_console.quiet = cls.level == 0
        for c in (console, err_console):
            c.width = PIPE_WIDTH if not c.is_terminal else c.size.width


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        Verbosity.apply(quiet=True, verbose=False)


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        Verbosity.apply(quiet=False, verbose=True)


def shared_options(command: click.Command) -> click.Command:
    """``-q``/``-v`` after the command name too (``booksum summarize BOOK -q``), and the exit codes
    in the command's own ``--help``. ``logs`` keeps ``-q`` for its text search (as ``llm logs -q``)
    and takes ``--quiet`` spelled out."""
    taken = {name for p in command.params for name in getattr(p, "opts", ())}
    quiet = [o for o in ("-q", "--quiet") if o not in taken]
    verbose = [o for o in ("-v", "--verbose") if o not in taken]
    if "--quiet" in quiet:
        command.params.append(click.Option(quiet, is_flag=True, expose_value=False, callback=_set_quiet,
                                           help="Print only results and errors (no notes, no progress)."))
    if "--verbose" in verbose:
        command.params.append(click.Option(verbose, is_flag=True, expose_value=False, callback=_set_verbose,
                                           help="Also print one line per model call (tokens, time, cost)."))
    command.epilog = EXIT_CODES
    return command


def call_printer() -> Callable[[CallRecord], None] | None:
    """With -v, a per-call hook printing one line per finished call (no prompt, no key)."""
    if Verbosity.level < 2:
        return None

    def show(record: CallRecord) -> None:
        source = "cache" if record.cache_hit else f"{record.latency_s:.1f}s, {usd(record.cost_usd, digits=4)}"
        u = record.usage  # prompt-cache reads / writes, when the provider reported any
        cached = f" ({u.cached_input_tokens:,} cached)" if u.cached_input_tokens else ""
        cached += f" ({u.cache_write_input_tokens:,} written to cache)" if u.cache_write_input_tokens else ""
        err_console.print(printable(  # the model name and finish reason come from the server
            f"call {record.purpose} {record.model}: {record.usage.input_tokens:,} in{cached} + "
            f"{record.usage.output_tokens:,} out tokens ({source}), finish {record.finish_reason}, "
            f"{record.attempts} attempt(s)"), markup=False, highlight=False, soft_wrap=True)

    return show


def _fail(message: str, exit_code: int, *, label: str = "[bold red]error:[/] ") -> None:
    # redacted here too: every error line, whatever raised it (an OSError's or sqlite's text)
    _error_console.print(f"{label}{esc(redact(message))}", highlight=False, soft_wrap=True)
    sys.exit(exit_code)


def thread_error_line(args: threading.ExceptHookArgs) -> None:
    """``threading.excepthook`` of the CLI: an exception that ends a thread a plugin started is one
    line on stderr, never a traceback; a plan replay's cache miss (the replay stops there) is none."""
    from booksum_app.llm.door import environment_secrets
    from booksum_app.runners.plan_replay import CacheMiss

    exc = args.exc_value
    if exc is None or isinstance(exc, CacheMiss | SystemExit):
        return
    if isinstance(exc, BooksumError):
        message = str(exc)
    else:
        detail = server_message(str(exc), *environment_secrets()) or "no message"
        message = f"a thread {getattr(args.thread, 'name', '')!r} ended with {type(exc).__name__}: {detail}"
    _error_console.print(f"[bold red]error:[/] {esc(message)}", highlight=False, soft_wrap=True)


def _spent_before(exc: BooksumError) -> str:
    """What a failed run had paid, when it paid anything: the line ends with it."""
    spent = getattr(exc.spent, "tally", exc.spent)  # a Meter, read now that its calls have ended
    if spent is None or not (spent.spent_usd or spent.input_tokens):
        return ""
    wasted = f", {spent.wasted_attempts} of them wasted replies" if spent.wasted_attempts else ""
    where = f"; recorded in {exc.spent_record}" if exc.spent_record is not None else ""
    return (f" (spent before failing: {usd(spent.spent_usd, digits=4)}, {spent.input_tokens:,}+{spent.output_tokens:,} "
            f"tokens{wasted}; answered calls are cached{where})")


def handle_errors(func: F) -> F:
    """Turn booksum errors into one line on stderr and the error's exit code."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from booksum_app.cli.interrupt import two_step_interrupt
        from booksum_app.errors import PlanDeclined
        from booksum_app.llm.door import attempts_in_flight

        def say(line: str) -> None:
            _error_console.print(esc(line), highlight=False, soft_wrap=True)

        try:
            with two_step_interrupt(attempts_in_flight, say):  # a second Ctrl-C quits from its handler
                return func(*args, **kwargs)
        except PlanDeclined as exc:  # an answer, not an error: the line says what happened, no "error:"
            _fail(str(exc), exc.exit_code, label="")
        except BooksumError as exc:
            _fail(str(exc) + _spent_before(exc), exc.exit_code)
        except KeyboardInterrupt as exc:  # summarize records what it had paid (spent_record)
            record = getattr(exc, "spent_record", None)
            where = f"; what it paid is recorded in {record}" if record is not None else ""
            _fail(f"interrupted; completed LLM calls are cached, rerun the same command to resume{where}", 130)
        except BrokenPipeError:  # an OSError too, but a closed stdout is no failure worth a message
            quiet_broken_pipe()
        except TimeoutError as exc:  # an OSError subclass, but not a disk problem: say what it is
            _fail(f"timed out: {exc}; completed LLM calls are cached, rerun to resume", 1)
        except OSError as exc:  # a full disk or a vanished directory met outside the checked paths
            where = f" {exc.filename}" if exc.filename else ""
            _fail(f"cannot read or write{where}: {exc.strerror or exc}; completed LLM calls are cached", 1)
        except sqlite3.Error as exc:  # the call cache's disk is full or its file is unusable
            _fail(f"call cache: {exc}; free space or pass --cache-dir elsewhere (or --no-cache)", 1)

    return wrapper  # type: ignore[return-value]



class FiniteFloat(click.FloatRange):
    """A float range that refuses nan and infinities (``FloatRange`` lets nan through: nan < 1 is False)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


CONTEXT_WINDOW_HELP = ("Context window of a model on an OpenAI-compatible server (--base-url), in tokens: over what "
                       "the server reports and the config file says (e.g. the --n_ctx a llama.cpp server was started "
                       "with).")
_LLM_OPTIONS = (
    click.option("--base-url", default=None,
                 help="OpenAI-compatible server URL (vllm serve, Ollama, a proxy) [default: OPENAI_BASE_URL]."),
    click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                 help="Call cache directory [default: BOOKSUM_CACHE_DIR, else the user cache dir]."),
    click.option("--no-cache", is_flag=True, help="Do not read or write the call cache."),
    click.option("--concurrency", type=click.IntRange(min=1), default=None,
                 help="Calls in flight at most, per model [default: per provider; hosted APIs and servers: "
                      "adaptive, from 128 up to 512 until one refuses]."),
    click.option("--timeout", "timeout_s", type=float, default=None,  # checked once, in LLMSettings
                 help="Seconds one attempt at an answer may take in all (connect, wait, read) before it is retried, "
                      f"at most {MAX_TIMEOUT_S:g} [default: {DEFAULT_TIMEOUT_S:g}]."),
    click.option("--max-cost", type=FiniteFloat(min=0), default=None,
                 help="Stop before spending more than this many USD (per model), retries and wasted replies included."),
    click.option("--reasoning-effort", type=click.Choice(REASONING_EFFORTS), default=None,
                 help="Reasoning models (o1, o3, o4, gpt-5): how much hidden reasoning to ask for; each level "
                      "reserves room for its hidden tokens, which are billed [default: low]. Models that think in "
                      "their text (Qwen3, R1): the room their reasoning gets (1,024/2,048/4,096/8,192 tokens)."),
    click.option("--thinking", type=click.Choice(THINKING_MODES), default="auto", show_default=True,
                 help="Models that think before answering (Qwen3, R1 distills): auto leaves it to the model; on/off "
                      "ask the server to think or not (chat_template_kwargs enable_thinking, Ollama's think). A "
                      "model known or seen to think gets room for its reasoning (sized by --reasoning-effort)."),
    click.option("--deployment", default=None, metavar="NAME",
                 help="Name the weights behind --base-url when two servers serve different weights under one "
                      "model name: the call cache keys answers by model and deployment, not by URL."),
    click.option("--context-window", type=click.IntRange(min=256), default=None, metavar="TOKENS",
                 help=CONTEXT_WINDOW_HELP),
    click.option("--engine-arg", "engine_args", multiple=True, metavar="KEY=VALUE",
                 help="vLLM engine argument for vllm: models, e.g. tensor_parallel_size=2 (repeatable)."),
)


# the parameters :data:`_LLM_OPTIONS` add, as :func:`llm_settings` takes them
LLM_OPTION_NAMES = ("base_url", "cache_dir", "no_cache", "concurrency", "timeout_s", "max_cost", "reasoning_effort",
                    "engine_args", "thinking", "deployment", "context_window")


def judge_mode(value: str | None, alias: str | None, name: str, alias_name: str) -> str | None:
    """The judge mode from its option and its hidden alias (score's ``--mode``, compare's ``--mode``):
    one name in the help, both accepted, a contradiction refused."""
    from booksum_app.errors import ConfigError

    if value is not None and alias is not None and value != alias:
        raise ConfigError(f"{name} {value} and {alias_name} {alias} contradict each other; give one of them")
    return value if value is not None else alias


def _engine_args(items: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    from booksum_app.errors import ConfigError

    parsed = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--engine-arg {item!r}: give KEY=VALUE, e.g. gpu_memory_utilization=0.85")
        value: Any = parse_json_or_none(raw)  # numbers, true/false, null, lists; anything else is a string
        if value is None and raw.strip() != "null":
            value = raw
        parsed.append((key.strip().replace("-", "_"), value))
    return tuple(parsed)


def plan_options(func: F) -> F:
    """``--max-plan-cost`` and ``-y/--yes``: ask before a run whose upper-bound cost is above a threshold."""
    func = click.option("--yes", "-y", is_flag=True, help="Run without asking, whatever the plan costs.")(func)
    return click.option(
        "--max-plan-cost", type=click.FloatRange(min=0), default=DEFAULT_MAX_PLAN_COST_USD, show_default=True,
        help="Ask before running a plan whose upper-bound cost is above this (USD).",
    )(func)




def json_option(what: str) -> Callable[[F], F]:
    """``--json [FILE]``, the same on every command: ``-`` or no value writes ``what`` to stdout
    instead of the tables; a FILE is written atomically (a FIFO or device as a stream)."""
    return click.option(
        "--json", "json_out", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), default=None,
        is_flag=False, flag_value="-",
        help=f"Write {what} as JSON: - or no value to stdout (instead of the tables), else to FILE.")


def json_file(json_out: Path | None) -> Path | None:
    """The file ``--json`` names (checked writable now, before any work), or None for stdout or none."""
    if json_out is None or str(json_out) == "-":
        return None
    # --json takes an optional FILE: "compare --json a.txt b.txt" must not write results over a book
    from booksum_app.books.folder import BOOK_SUFFIXES
    from booksum_app.errors import ConfigError
    from booksum_app.files import check_writable

    if json_out.suffix.lower() in BOOK_SUFFIXES and json_out.is_file():
        raise ConfigError(f"--json {json_out} would overwrite a book: --json takes the output file that follows "
                          "it; put --json last, or give it - (stdout) or a .json file")
    return check_writable(json_out)


def emit_json(json_out: Path, data: Any) -> None:
    """Write ``data`` where ``--json`` said: stdout for ``-``, else the file (and say so on stderr)."""
    from booksum_app.files import atomic_write_text, json_text

    text = json_text(data)
    if str(json_out) == "-":
        click.echo(text, nl=False)
        return
    atomic_write_text(json_out, text)
    err_console.print(f"wrote {json_out}", highlight=False, markup=False, soft_wrap=True)


def stdin_is_terminal() -> bool:
    """Whether someone can be asked (stdin is a terminal); one place, so tests can stand in for a TTY."""
    return sys.stdin.isatty()


def confirm_plan(cost_usd: float | None, *, max_plan_cost: float, yes: bool, what: str,
                 live: Progress | None = None) -> None:
    """The one rule of every paid command (summarize, score, compare): a plan whose upper-bound cost
    is above ``--max-plan-cost`` runs only with ``--yes``, or after a yes at the terminal; with
    nobody to ask (stdin is not a terminal) it is refused, exit 2. ``cost_usd`` None: a paid
    model with no known price, asked about like one above the threshold. ``live``: a progress
    display to pause while asking.

    Raises:
        ConfigError: above the threshold, no --yes, not a terminal.
        PlanDeclined: the user said no (exit 6).
    """
    from booksum_app.runners.plan_gate import check_cost

    if check_cost(cost_usd, max_cost_usd=max_plan_cost, confirmed=yes, interactive=stdin_is_terminal()):
        return
    from booksum_app.errors import PlanDeclined

    cost = (f"could cost up to {usd(cost_usd)} (above --max-plan-cost {usd(max_plan_cost)})" if cost_usd is not None
            else "has no known price (booksum's model table has none for its model)")
    try:  # a Ctrl-C anywhere in the question (the prompt, pausing the display) is a no: nothing was spent
        if live is not None:
            live.stop()
        ask_or_decline(f"{what} {cost}. Run it?", declined="declined: nothing was spent")
    except KeyboardInterrupt:
        click.echo(err=True)
        raise PlanDeclined("declined: nothing was spent") from None
    if live is not None:
        live.start()


def ask_or_decline(question: str, *, declined: str) -> None:
    """Ask a yes/no question on the terminal; a no (or end of input, or Ctrl-C at the prompt) is
    :class:`~booksum_app.errors.PlanDeclined`: one line, exit 6, never click's ``Aborted!``."""
    from booksum_app.cli.ask import confirm
    from booksum_app.errors import PlanDeclined

    try:
        agreed = confirm(question)
    except KeyboardInterrupt:
        click.echo(err=True)  # the prompt's line has no end of its own
        agreed = False
    if not agreed:
        raise PlanDeclined(declined)


def llm_options(func: F) -> F:
    """The options of every command that calls a model, spelled and defaulted the same everywhere."""
    for option in reversed(_LLM_OPTIONS):
        func = option(func)
    return func


def llm_settings(
    *, base_url: str | None, cache_dir: Path | None, no_cache: bool, concurrency: int | None,
    timeout_s: float | None, max_cost: float | None, engine_args: tuple[str, ...] = (),
    reasoning_effort: str | None = None, deployment: str | None = None, thinking: str = "auto",
    context_window: int | None = None,
) -> LLMSettings:
    """The library's call settings from the options of :func:`llm_options`, resolved and checked once,
    each given value's option kept as its source (``LLMSettings.source_of``)."""
    from booksum_app.llm.registry import LLMSettings

    given = {"timeout_s": timeout_s is not None, "concurrency": concurrency is not None,
             "max_cost_usd": max_cost is not None}
    options = {"timeout_s": "--timeout", "concurrency": "--concurrency", "max_cost_usd": "--max-cost"}
    return LLMSettings(cache_dir=cache_dir, use_cache=not no_cache, concurrency=concurrency,
                       max_cost_usd=max_cost, base_url=base_url,
                       timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
                       engine_args=_engine_args(engine_args), reasoning_effort=reasoning_effort,
                       deployment=deployment.strip() or None if deployment else None, thinking=thinking,
                       context_window=context_window,
                       sources=tuple((name, options[name]) for name, set_ in given.items() if set_))


__all__ = [
    "CONTEXT_WINDOW_HELP",
    "EXIT_CODES",
    "LLM_OPTION_NAMES",
    "Verbosity",
    "ask_or_decline",
    "call_printer",
    "confirm_plan",
    "console",
    "emit_json",
    "err_console",
    "esc",
    "handle_errors",
    "json_file",
    "json_option",
    "judge_mode",
    "llm_options",
    "llm_settings",
    "shared_options",
]
