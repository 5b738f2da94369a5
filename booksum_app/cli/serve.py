"""``booksum serve-local``: the embedded model as a local OpenAI-compatible server that several runs share."""

from __future__ import annotations

from pathlib import Path

import click

from booksum_app.cli.base import err_console, handle_errors


@click.command("serve-local")
@click.option("--model", "-m", "model_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="GGUF file to serve [default: the bundled SmolLM2-135M, from its Q8_0 copy].")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port to listen on.")
@click.option("--n-ctx", type=click.IntRange(min=256), default=8192, show_default=True,
              help="Context window in tokens (clients read it back from the server).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="CPU threads [default: llama.cpp's].")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the bundled model's Q8_0 copy is kept (weights/ under it) [default: BOOKSUM_CACHE_DIR, "
                   "else the user cache dir].")
@handle_errors
def serve_local_command(model_path: Path | None, host: str, port: int, n_ctx: int, threads: int | None,
                        cache_dir: Path | None) -> None:
    """Serve the embedded model (or a GGUF) at an OpenAI-compatible URL, until Ctrl-C; several booksum
    runs then share one loaded model with --base-url."""
    import os

    from booksum_app.llm.model_table import default_cache_dir
    from booksum_app.llm.providers.serve_local import LocalServer, serve, weights

    server = LocalServer(model_path=model_path, host=host, port=port, n_ctx=n_ctx, n_threads=threads,
                         weights_dir=(cache_dir or default_cache_dir(os.environ)) / "weights")
    path = weights(server)
    err_console.print(f"serving {path.name} at {server.base_url} with a {n_ctx:,}-token context; run booksum with "
                      f"-m openai:smollm2 --base-url {server.base_url}", highlight=False, markup=False, soft_wrap=True)
    serve(LocalServer(model_path=path, host=host, port=port, n_ctx=n_ctx, n_threads=threads))


__all__ = ["serve_local_command"]
