"""What an OpenAI-compatible server says about itself: the model's context window and how many calls it serves at once.

- vLLM (``vllm serve``) lists each served model at ``GET /v1/models`` with its ``max_model_len``
  (vllm/entrypoints/openai/protocol.py, ``ModelCard``).
- llama.cpp's ``llama-server`` answers ``GET /props`` (at the server's root) with
  ``default_generation_settings.n_ctx``, the context of one slot (``-c`` divided among the
  ``-np`` slots), and ``total_slots``; it serves that many requests at once and queues the rest
  without a 429, so more in flight only wait, and past the client's timeout are generated for
  nobody.
- llama-cpp-python's server (``python -m llama_cpp.server``, ``booksum serve-local``) lists its
  models at ``GET /v1/models`` as ``{"id": ALIAS, "object": "model", "owned_by": "me",
  "permissions": []}`` (llama_cpp/server/app.py, ``get_models``; the alias is the GGUF's path
  unless ``--model_alias`` renames it) and has no ``/props``. Its window (``--n_ctx``, 2,048 by
  default) is named only by its answer to a prompt longer than the window, a 400 whose message
  reads "This model's maximum context length is N tokens" (llama_cpp/server/errors.py): the
  server tokenizes the prompt and refuses it before evaluating anything. So booksum sends it
  one prompt of :data:`OVERLONG_PROBE_TOKENS` tokens (``max_tokens`` 1) and reads N; when even
  that fails, it plans for the server's default ``--n_ctx`` and says so.

Asked once per server and model for :data:`REMEMBER_S` (a command resolves its models several
times), with a short timeout. Any failure (no such route, not JSON, a refused connection, a
value that is not a positive integer) means the server said nothing: booksum plans as it does
for a server that does not describe itself, and never stops for it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from booksum_app.jsonin import parse_json

if TYPE_CHECKING:
    from booksum_app.llm.spec import ModelSpec

PROBE_TIMEOUT_S = 3.0
REMEMBER_S = 30.0
MAX_BODY_BYTES = 4 << 20  # a hosted list of every model is a few hundred KB
MAX_CONTEXT = 100_000_000
MAX_SLOTS = 65_536
LLAMA_CPP_PYTHON = "llama-cpp-python"
LLAMA_CPP_PYTHON_N_CTX = 2048  # its server's default --n_ctx (llama_cpp/server/settings.py)
# a probe prompt longer than any window a llama-cpp-python server holds: 2 MiB, tokenized and
# refused in 1.7 s by the bundled SmolLM2 on 2 cores; a server with a larger window would evaluate it
OVERLONG_PROBE_TOKENS = 1 << 20
OVERLONG_TIMEOUT_S = 30.0
_WINDOW_IN_ERROR = re.compile(r"maximum context length is (\d+) tokens")


@dataclass(frozen=True)
class ServerReport:
    """What the server reported; None where it said nothing."""

    context_window: int | None = None  # tokens one request may use, prompt + answer
    slots: int | None = None  # requests served at once (the rest queue)
    server: str | None = None  # the server recognised by what it lists, when it reports no context
    identity: str | None = None  # the weights it serves: vLLM's card ``root``, llama-server's ``model_path``


_remembered: dict[tuple[str, str], tuple[float, ServerReport | None]] = {}
_lock = threading.Lock()


def describe(
    base_url: str, model_id: str, *, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> ServerReport | None:
    """Ask the server(s) at ``base_url`` (comma-separated replicas) about ``model_id``; None if none says anything.

    Several replicas: the smallest window any reports, and the sum of their slots when every
    one reports its slots.
    """
    urls = [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]
    if not urls or not all(u.startswith(("http://", "https://")) for u in urls):
        return None
    reports = [_remembered_report(url, model_id, api_key, timeout_s) for url in urls]
    windows = [r.context_window for r in reports if r is not None and r.context_window is not None]
    slots = [r.slots for r in reports if r is not None and r.slots is not None]
    servers = {r.server for r in reports if r is not None and r.server is not None}
    # replicas serving different weights under one name: every identity, so none matches one alone
    identities = [r.identity for r in reports if r is not None and r.identity is not None]
    report = ServerReport(
        context_window=min(windows) if windows else None,
        slots=sum(slots) if slots and len(slots) == len(urls) else None,
        server=servers.pop() if len(servers) == 1 else None,
        identity=" | ".join(sorted(set(identities))) if identities and len(identities) == len(urls) else None,
    )
    return None if report == ServerReport() else report


def describe_spec(spec: ModelSpec, *, api_key: str | None, timeout_s: float) -> ModelSpec:
    """``spec`` planned for what its server reports: its window (unless the config file's is
    smaller), its slots, and a note saying where the window came from."""
    if spec.base_url is None:
        return spec
    report = describe(spec.base_url, spec.model_id, api_key=api_key, timeout_s=min(timeout_s, PROBE_TIMEOUT_S))
    if report is None:
        return spec
    spec = dataclasses.replace(spec, server_identity=report.identity)
    info = spec.info
    window = report.context_window
    if window is None and report.server == LLAMA_CPP_PYTHON:
        if spec.known:  # the config file's context_window: the user knows its --n_ctx
            return spec
        info = dataclasses.replace(info, context_window=LLAMA_CPP_PYTHON_N_CTX)
        note = (f"llama-cpp-python's server did not name its context: planning for its default --n_ctx of "
                f"{LLAMA_CPP_PYTHON_N_CTX:,} tokens; started with a larger --n_ctx, pass --context-window N "
                "(or set context_window for the model under [models] in config.toml)")
        return dataclasses.replace(spec, info=info, server_note=note, context_source="llama-cpp-python's default")
    parts = []
    source = spec.context_source
    if window is not None:
        if not spec.known or window < info.context_window:
            info, source = dataclasses.replace(info, context_window=window), "server"
            how = " (named in its answer to an over-long prompt)" if report.server == LLAMA_CPP_PYTHON else ""
            parts.append(f"context {window:,} tokens{how}")
        else:  # a smaller window set in the config file is kept
            parts.append(f"context {info.context_window:,} tokens from the config file ({window:,} on the server)")
    if report.slots is not None:
        parts.append(f"{report.slots} parallel slot{'s' if report.slots != 1 else ''}")
    note = " and ".join(parts) + ", reported by the server"
    return dataclasses.replace(spec, info=info, server_slots=report.slots, server_note=note, context_source=source)


def forget(base_url: str | None = None) -> None:
    """Drop remembered reports (of one server URL, or all): the server there changed."""
    with _lock:
        for key in [k for k in _remembered if base_url is None or k[0] == base_url.rstrip("/")]:
            del _remembered[key]


def _remembered_report(url: str, model_id: str, api_key: str | None, timeout_s: float) -> ServerReport | None:
    now = time.monotonic()
    with _lock:
        hit = _remembered.get((url, model_id))
    if hit is not None and now - hit[0] < REMEMBER_S:
        return hit[1]
    report = _probe(url, model_id, api_key, timeout_s)
    with _lock:
        _remembered[(url, model_id)] = (now, report)
    return report


def _probe(url: str, model_id: str, api_key: str | None, timeout_s: float) -> ServerReport | None:
    window = identity = None
    listing = _get_json(f"{url}/models", api_key, timeout_s)
    cards = [c for c in listing.get("data", ()) if isinstance(c, dict)] if isinstance(listing, dict) else []
    for card in cards:
        if card.get("id") == model_id:
            window = _positive(card.get("max_model_len"), MAX_CONTEXT)
            identity = _name(card.get("root"))  # vLLM: the weights' path or hub id behind the served name
    # llama-cpp-python serves any model name with its one model: recognised by its cards' shape
    server = LLAMA_CPP_PYTHON if cards and all(_llama_cpp_python_card(c) for c in cards) else None
    if server is not None:  # its window only in the error it answers an over-long prompt with
        window = _overlong_window(url, model_id, api_key, timeout_s)
        paths = [str(c.get("id")) for c in cards if str(c.get("id", "")).endswith(".gguf")]
        identity = _name(paths[0]) if len(paths) == 1 else None  # the alias is the GGUF's path by default
    root = url.removesuffix("/v1")
    props = _get_json(f"{root}/props", api_key, timeout_s)
    slots = None
    if isinstance(props, dict):
        slots = _positive(props.get("total_slots"), MAX_SLOTS)
        settings = props.get("default_generation_settings")
        if window is None and isinstance(settings, dict):
            window = _positive(settings.get("n_ctx"), MAX_CONTEXT)
        identity = identity or _name(props.get("model_path"))  # llama-server: the GGUF it loaded
    if window is None and slots is None and server is None and identity is None:
        return None
    return ServerReport(context_window=window, slots=slots, server=server, identity=identity)


def _overlong_window(url: str, model_id: str, api_key: str | None, timeout_s: float) -> int | None:
    """The window llama-cpp-python's server names when refusing a prompt longer than any window it can hold."""
    body = json.dumps({"model": model_id, "prompt": " a" * OVERLONG_PROBE_TOKENS, "max_tokens": 1}).encode()
    headers = {"User-Agent": "booksum", "Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        request = urllib.request.Request(f"{url}/completions", data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=max(timeout_s, OVERLONG_TIMEOUT_S)):
            return None  # answered: not the server it looked like
    except urllib.error.HTTPError as exc:
        text = exc.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - no answer: the window stays unknown
        return None
    match = _WINDOW_IN_ERROR.search(text)
    return _positive(int(match.group(1)), MAX_CONTEXT) if match and len(match.group(1)) < 10 else None


def _llama_cpp_python_card(card: dict[str, Any]) -> bool:
    return card.get("owned_by") == "me" and card.get("permissions") == [] and "max_model_len" not in card


def _name(value: Any) -> str | None:
    """A reported name (a path, a hub id, a digest) fit to key answers by, or None."""
    if isinstance(value, str) and 0 < len(value.strip()) <= 1024 and value.isprintable():
        return value.strip()
    return None


def _positive(value: Any, most: int) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= most:
        return value
    return None


def _get_json(url: str, api_key: str | None, timeout_s: float) -> Any:
    """The JSON body of a 200 to GET ``url``, or None on any failure."""
    headers = {"User-Agent": "booksum", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        request = urllib.request.Request(url, headers=headers, method="GET")
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            if response.status != 200:
                return None
            body = response.read(MAX_BODY_BYTES + 1)
        if len(body) > MAX_BODY_BYTES:
            return None
        return parse_json(body, where=url)
    except Exception:  # noqa: BLE001 - a server that cannot describe itself leaves the defaults
        return None


__all__ = ["LLAMA_CPP_PYTHON", "LLAMA_CPP_PYTHON_N_CTX", "PROBE_TIMEOUT_S", "ServerReport", "describe", "describe_spec",
           "forget"]
