"""``booksum serve-local``: the embedded model (or any GGUF) as a local OpenAI-compatible server.

Several booksum processes then share one model through ``--base-url`` instead of loading one
each. The server is llama-cpp-python's own (``llama_cpp.server``, its ``server`` extra),
started with booksum's two choices for the embedded model: the bundled weights' Q8_0 copy
(``local_weights.fast_weights``) and, where llama.cpp is built with AMX, no extra weight
buffers (``local_weights.plain_cpu_buffers``): ``python -m llama_cpp.server`` on such a CPU
dies with an illegal instruction or a segfault on its first completion, in the AMX kernel the
embedded backend avoids the same way. The served window is ``--n-ctx``; booksum reads it back
from the server (``server_info``), so a client plans with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from booksum_app.errors import ModelUnavailable
from booksum_app.llm.providers.local_weights import bundled_weights, fast_weights, plain_cpu_buffers

SERVER_HINT = "pip install 'booksum[server]' (llama-cpp-python's server: uvicorn, fastapi, sse-starlette, ...)"


@dataclass(frozen=True)
class LocalServer:
    """What ``serve-local`` serves, and where."""

    model_path: Path | None = None  # None: the bundled SmolLM2 (its Q8_0 copy in weights_dir)
    host: str = "127.0.0.1"
    port: int = 8000
    n_ctx: int = 8192
    n_threads: int | None = None  # None: llama.cpp's default
    # the name its /v1/models lists; None: the GGUF's path, which booksum keys the answers by
    # (any model name a client sends is answered by the one model)
    alias: str | None = None
    weights_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def weights(server: LocalServer) -> Path:
    """The GGUF file ``server`` loads."""
    if server.model_path is not None:
        if not server.model_path.is_file():
            raise ModelUnavailable(f"no GGUF file at {server.model_path}; pass --model PATH.gguf")
        return server.model_path
    source = bundled_weights()
    return fast_weights(source, server.weights_dir) if server.weights_dir is not None else source


def serve(server: LocalServer) -> None:
    """Load the model and answer on ``server.host:server.port`` until interrupted.

    Raises:
        ModelUnavailable: llama-cpp-python's server extra, or the weights, are missing.
    """
    try:
        import uvicorn
        from llama_cpp.server.app import create_app  # type: ignore[import-not-found,unused-ignore]
        from llama_cpp.server.settings import (  # type: ignore[import-not-found,unused-ignore]
            ModelSettings,
            ServerSettings,
        )
    except ImportError as exc:
        raise ModelUnavailable(f"llama-cpp-python's server is not installed ({exc.name}): {SERVER_HINT}") from exc
    path = weights(server)
    extra: dict[str, Any] = {"n_threads": server.n_threads} if server.n_threads else {}
    settings = ModelSettings(model=str(path), model_alias=server.alias, n_ctx=server.n_ctx, verbose=False, **extra)
    with plain_cpu_buffers(path.name):  # the whole life of the server: it may load the model again
        app = create_app(server_settings=ServerSettings(host=server.host, port=server.port),
                         model_settings=[settings])
        uvicorn.run(app, host=server.host, port=server.port, log_level="warning")


def server_installed() -> bool:
    """Whether llama-cpp-python's server and its web stack import."""
    try:
        import llama_cpp.server.app  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["SERVER_HINT", "LocalServer", "serve", "server_installed", "weights"]
