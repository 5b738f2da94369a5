"""What identifies a request (its cache key), what the logs keep of it, and what it weighs.

Many requests share one long ``shared_prefix`` (the judge sends every sentence of a summary
after the whole summary). Keying or counting ``shared_prefix + prompt`` copied the prefix once
per call before the call was even made, and a pool of 128 workers doing it at once held 128
copies and 128 token lists of a 180K-character summary. So the parts of the key and of the
count that depend only on the prefix are computed once per prefix (:class:`OnceMemo`), and
the per-call part costs only the prompt. The log's :func:`request_json` still writes the
whole request, as sent, once per call answered (docs/logs.md).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

from booksum_app.llm.base import Request

KEY_TAG = "call-v1"

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class OnceMemo(Generic[K, V]):
    """The last few values of an expensive function, each computed once.

    Threads that ask for a key while it is being computed wait for that value instead of
    computing their own: a burst of workers on one prefix does the work (and holds its
    transient memory) once. One lock for all keys: a computation here is milliseconds.
    """

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            value = compute(key)
            self._values[key] = value
            if len(self._values) > self._size:
                self._values.popitem(last=False)
            return value


def request_json(request: Request, *, backend: Mapping[str, str | None] | None = None) -> str:
    """The request as the model saw it: chat messages plus sampling options, as compact JSON.

    With ``backend`` (what :func:`request_key` is given), that too: the text then holds all that
    its key is made of, and :func:`stored_request_key` recomputes the key from it alone.
    """
    messages = [{"role": "system", "content": request.system}] if request.system is not None else []
    messages.append({"role": "user", "content": request.user_text})
    sent: dict[str, Any] = {
        "messages": messages, "max_tokens": request.max_tokens, "temperature": request.temperature,
        "top_p": request.top_p, "stop": list(request.stop), "sample_index": request.sample_index,
        "seed": request_seed(request),  # sent to servers, Ollama and vLLM (Anthropic's API takes none)
    }
    if request.stop_at_loop:
        sent["stop_at_loop"] = request.stop_at_loop
    if backend is not None:
        sent["backend"] = dict(backend)
    return json.dumps(sent, ensure_ascii=False, separators=(",", ":"))


def stored_request_key(text: object) -> str | None:
    """The :func:`request_key` of a request as :func:`request_json` wrote it with its backend, or
    None when ``text`` is not such a request (not JSON, a field missing or of another type)."""
    from booksum_app.jsonin import parse_json_or_none

    data = parse_json_or_none(text) if isinstance(text, str) else None
    if not isinstance(data, dict) or set(data) - _STORED_FIELDS:
        return None
    messages, backend = data.get("messages"), data.get("backend")
    if not (isinstance(backend, dict) and all(isinstance(k, str) and (v is None or isinstance(v, str))
                                              for k, v in backend.items())):
        return None
    if not (isinstance(messages, list) and 1 <= len(messages) <= 2
            and all(isinstance(m, dict) and set(m) == {"role", "content"} and isinstance(m["content"], str)
                    for m in messages)
            and [m["role"] for m in messages] in (["user"], ["system", "user"])):
        return None
    options = {name: data.get(name) for name in ("max_tokens", "temperature", "top_p", "sample_index")}
    stop, stop_at_loop = data.get("stop"), data.get("stop_at_loop", "")
    if not (all(isinstance(v, int | float) and not isinstance(v, bool) for v in options.values())
            and isinstance(options["max_tokens"], int) and isinstance(options["sample_index"], int)
            and isinstance(stop, list) and all(isinstance(x, str) for x in stop)
            and isinstance(stop_at_loop, str)):
        return None
    request = Request(prompt=messages[-1]["content"], system=messages[0]["content"] if len(messages) == 2 else None,
                      stop=tuple(stop), stop_at_loop=stop_at_loop, **options)  # type: ignore[arg-type]
    return request_key(request, backend=backend)


_STORED_FIELDS = frozenset({"messages", "max_tokens", "temperature", "top_p", "stop", "sample_index", "seed",
                            "stop_at_loop", "backend"})


_PREFIX_HASHES: OnceMemo[tuple[str, str], Any] = OnceMemo()


def request_key(request: Request, *, backend: Mapping[str, str | None]) -> str:
    """The cache key of ``request`` sent to ``backend`` (kind, model, base_url).

    The sha256 of the canonical JSON (sorted keys, compact, UTF-8) of everything that
    determines the answer. ``user`` sorts last and JSON escapes character by character, so the
    hash is fed the head, the escaped prefix (hashed once per prefix) and the escaped prompt:
    the same bytes as ``json.dumps`` of the whole, without building the whole.
    """
    head: dict[str, Any] = {
        "backend": dict(sorted(backend.items())),
        "system": request.system,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "stop": list(request.stop),
        "sample_index": request.sample_index,
    }
    if request.stop_at_loop:  # absent otherwise: the keys of every other request stay as they were
        head["stop_at_loop"] = request.stop_at_loop
    parts = (_canonical(head)[:-1] + ',"user":"', request.shared_prefix)
    state = _PREFIX_HASHES.get(parts, _hash_opening).copy() if parts[1] else _hash_opening(parts)
    state.update(_escaped(request.prompt).encode("utf-8") + b'"}')
    return f"{KEY_TAG}:{state.hexdigest()}"


SEED_BITS = 31  # llama.cpp reads the seed as a 32-bit int; OpenAI, vLLM and Ollama take any int


def request_seed(request: Request) -> int:
    """A sampling seed derived from the request: the same request samples the same answer from a
    server that honours seeds, and a deliberate resample (``sample_index``) samples another."""
    state = hashlib.sha256()
    head = _canonical([request.system, request.max_tokens, request.temperature, request.top_p,
                       list(request.stop), request.sample_index, len(request.shared_prefix)])
    for part in (head, request.shared_prefix, request.prompt):
        state.update(part.encode("utf-8", "surrogatepass"))
        state.update(b"\x00")
    return int.from_bytes(state.digest()[:8], "big") % (1 << SEED_BITS)


def _hash_opening(parts: tuple[str, str]) -> Any:
    """sha256 fed the canonical JSON up to the end of the shared prefix."""
    opening, prefix = parts
    state = hashlib.sha256(opening.encode("utf-8"))
    state.update(_escaped(prefix).encode("utf-8"))
    return state


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _escaped(text: str) -> str:
    """``text`` as it appears inside a canonical JSON string, without the quotes."""
    return _canonical(text)[1:-1]


def prompt_tokens(request: Request, count: Callable[[str], int], prefixes: OnceMemo[str, int]) -> int:
    """Input tokens of ``request`` counted by parts, the prefix's once per ``prefixes`` memo.

    A sum of parts, for the cost ceiling's worst case: BPE merges across the two joins can
    move it a token or two from a count of the whole, a margin that ``max_tokens`` dwarfs.
    """
    tokens = count(request.system) if request.system else 0
    if request.shared_prefix:
        tokens += prefixes.get(request.shared_prefix, count)
    return tokens + count(request.prompt)


__all__ = ["KEY_TAG", "SEED_BITS", "OnceMemo", "prompt_tokens", "request_json", "request_key", "request_seed",
           "stored_request_key"]
