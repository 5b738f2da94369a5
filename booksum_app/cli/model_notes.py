"""What the commands say about the model they were given before they use it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from booksum_app.cli.base import err_console, esc
from booksum_app.jsonin import parse_json_or_none

if TYPE_CHECKING:
    from booksum_app.llm.registry import ModelSpec

OLLAMA_PROBE_TIMEOUT_S = 1.0  # a probe of a local server; a slow or absent one is simply not Ollama


def is_ollama(base_url: str) -> bool:
    """Whether the server behind an OpenAI-compatible ``base_url`` is Ollama: its native API
    (``GET /api/version``, else ``/api/tags``) answers on the same host. False on any failure."""
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.split(",")[0].strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    for path, field in (("/api/version", "version"), ("/api/tags", "models")):
        try:
            with urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}{path}",  # http(s) only: checked above
                                        timeout=OLLAMA_PROBE_TIMEOUT_S) as reply:
                data = parse_json_or_none(reply.read(1 << 20))
        except (OSError, ValueError, urllib.error.URLError):
            continue
        if isinstance(data, dict) and field in data:
            return True
    return False


def print_model_notes(spec: ModelSpec) -> None:
    """The model's notice (demo fallback, unknown model, config typos) and, for ``openai:`` on a
    server that is Ollama, the advice to use ``ollama:`` (its /v1 API silently cuts prompts at
    Ollama's default context; the native API is given the context it needs)."""
    context = click.get_current_context(silent=True)  # the warnings said already in this command
    said: set[str] = context.find_root().meta.setdefault("config_warnings", set()) if context else set()
    for warning in spec.config_warnings:  # a config file's typos: one line each, once per command
        if warning not in said:
            said.add(warning)
            err_console.print(f"[yellow]note:[/] {esc(warning)}", highlight=False, soft_wrap=True)
    notice = dataclasses.replace(spec, config_warnings=()).notice
    if notice:
        err_console.print(f"[yellow]note:[/] {esc(notice)}", highlight=False, soft_wrap=True)
    if spec.provider == "openai" and spec.base_url and is_ollama(spec.base_url):
        err_console.print(
            f"[yellow]warning:[/] {esc(spec.base_url)} is an Ollama server: its OpenAI-compatible API cuts "
            f"prompts longer than Ollama's default context without an error; use --model "
            f"ollama:{esc(spec.model_id)} (docs/models.md)", highlight=False, soft_wrap=True)


__all__ = ["is_ollama", "print_model_notes"]
