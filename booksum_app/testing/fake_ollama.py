"""A fake Ollama server on localhost: ``/api/show``, ``/api/chat`` (non-streaming) and ``/api/tags``.

It truncates like the real one: a request without ``options.num_ctx`` runs at the default
context (``default_num_ctx``, 2048 tokens), and a prompt longer than the context minus
``num_predict`` keeps only its *end* (the system message and the start of the user text are
what get lost). ``prompt_eval_count`` reports the tokens actually read, and every request is
logged with whether it was cut (:attr:`FakeOllama.requests`). Tokens are cl100k_base tokens.

Unknown models get 404 ``{"error": "model 'x' not found"}``. Faults for the next calls come
from a ``script``: ``500``, ``notjson`` (a 200 whose body is HTML), ``drop`` (close the
socket without a reply), ``drip`` (a normal reply, its body a byte every 0.2 s),
``deepjson`` (a body nested 100,000 deep), ``hugebody`` (300 MB) and ``nousage`` (a normal
reply without ``prompt_eval_count``/``eval_count``, as Ollama answers
when the prompt came from its KV cache). Replies come from :func:`booksum_app.testing.fake_replies.default_reply`
applied to the text the model would really have seen.

By hand: ``python -m booksum_app.testing.fake_ollama --port 11434 --model llama3.1:8b``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Self, cast

from booksum_app.chunking import ReversibleTokenizer, get_tokenizer
from booksum_app.jsonin import parse_json_or_none
from booksum_app.llm.base import Request
from booksum_app.testing.fake_replies import THINKING, default_reply, long_thinking, thinking_enabled, with_thinking
from booksum_app.testing.quiet_server import QuietServer

FAULTS = ("500", "notjson", "drop", "drip", "nousage", "deepjson", "hugebody")
DEEP_LEVELS = 100_000
HUGE_BODY_BYTES = 300 * 2**20  # far past the 64 MB reply cap
DRIP_S = 0.2
DEFAULT_NUM_CTX = 2048
ReplyFn = Callable[[Request], str]


@dataclass(frozen=True)
class OllamaCall:
    """One ``/api/chat`` request as the fake served it."""

    model: str
    num_ctx: int | None  # what the client asked for (None: the default was used)
    prompt_tokens: int  # the whole prompt
    kept_tokens: int  # what the model read (prompt_eval_count)
    truncated: bool
    fault: str | None
    payload: dict[str, Any]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake keeps its own log."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/api/tags":
            self._json(200, self.server.fake.tags())
        elif path in ("", "/"):
            self._raw(200, b"Ollama is running", "text/plain")
        else:
            self._json(404, {"error": "404 page not found"})

    def do_POST(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        payload = parse_json_or_none(body or b"{}")
        if payload is None:
            self._json(400, {"error": "invalid character in request body"})
            return
        if not isinstance(payload, dict):
            self._json(400, {"error": "request body must be an object"})
            return
        model = str(payload.get("model") or payload.get("name") or "")
        if path in ("/api/show", "/api/chat") and model not in fake.models:
            self._json(404, {"error": f"model '{model}' not found"})
            return
        if path == "/api/show":
            self._json(200, fake.show(model))
        elif path == "/api/chat":
            self._chat(fake, model, payload)
        else:
            self._json(404, {"error": "404 page not found"})

    def _chat(self, fake: FakeOllama, model: str, payload: dict[str, Any]) -> None:
        fault = fake.next_fault()
        if fault == "drop":
            fake.log_fault(model, payload, fault)
            self.close_connection = True
            self.connection.close()
            return
        if fault == "500":
            fake.log_fault(model, payload, fault)
            self._json(500, {"error": "llama runner process has terminated: exit status 2"})
            return
        if fault == "notjson":
            fake.log_fault(model, payload, fault)
            self._raw(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            return
        if fault in ("deepjson", "hugebody"):
            fake.log_fault(model, payload, fault)
            self._flood(DEEP_LEVELS if fault == "deepjson" else HUGE_BODY_BYTES)
            return
        if fault == "drip":  # logged by chat() below, as a normal reply
            self._drip(json.dumps(fake.chat(model, payload)).encode("utf-8"))
            return
        reply = fake.chat(model, payload)
        if fault == "nousage":
            reply = {k: v for k, v in reply.items() if k not in ("prompt_eval_count", "eval_count")}
        self._json(200, reply)

    def _flood(self, size: int) -> None:
        """A 200 of ``size`` bytes of ``[``: nested too deep to parse, or more than any reply may be."""
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(size))
            self.send_header("connection", "close")  # said, as real servers do when they hang up
            self.end_headers()
            block = b"[" * min(size, 2**20)
            for _ in range(size // len(block)):
                self.wfile.write(block)
        except OSError:
            pass  # the client stopped reading at its cap

    def _drip(self, data: bytes) -> None:
        """Headers at once, then the body a byte at a time: no single read ever times out."""
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                time.sleep(DRIP_S)
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
        except OSError:
            return  # the client gave up, as a bounded attempt does

    def _json(self, status: int, body: Mapping[str, Any]) -> None:
        self._raw(status, json.dumps(body).encode("utf-8"), "application/json; charset=utf-8")

    def _raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(QuietServer):
    fake: FakeOllama


class FakeOllama:
    """The fake Ollama server; use as a context manager and point ``OLLAMA_HOST`` at :attr:`url`."""

    def __init__(
        self,
        *,
        models: Mapping[str, int] | None = None,
        family: str = "llama",
        default_num_ctx: int = DEFAULT_NUM_CTX,
        script: Iterable[str | None] = (),
        reply: ReplyFn | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        thinking: str | None = None,
        digests: Mapping[str, str] | None = None,
    ) -> None:
        """Args:
        models: served model names and their context lengths (default ``llama3.1:8b``: 131072).
        family: the architecture reported by ``/api/show``.
        default_num_ctx: the context used when a request sets no ``num_ctx``.
        script: faults (``500``, ``notjson``, ``drop``, or None for a normal reply) for the
            next chat calls, in order.
        reply: answers a request (default: the shared deterministic fake replies).
        host: address to bind.
        port: port to bind (0: any free port).
        thinking: answer as a thinking model: ``"field"`` (``message.thinking``, as with
            ``think``), ``"tags"`` (``<think>`` in the content), ``"long"`` (a 600-800 token ``<think>``
            trace within ``num_predict``), None (no reasoning); ``think: false`` turns it off.
        digests: each model's digest as ``/api/tags`` lists it (none listed by default).
        """
        self.digests = dict(digests or {})
        self.thinking = thinking
        self.models = dict(models or {"llama3.1:8b": 131072})
        self.family = family
        self.default_num_ctx = default_num_ctx
        self.reply: ReplyFn = reply or default_reply
        self._script = list(script)
        for kind in self._script:
            if kind is not None and kind not in FAULTS:
                raise ValueError(f"unknown fault {kind!r}; use one of {FAULTS}")
        self._tok = cast(ReversibleTokenizer, get_tokenizer("cl100k_base"))
        self._lock = threading.Lock()
        self._calls: list[OllamaCall] = []
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        """Serve in a background thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """``http://host:port``, what ``OLLAMA_HOST`` should be."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[OllamaCall]:
        """Every chat request so far, in arrival order."""
        with self._lock:
            return list(self._calls)

    # ---- API -----------------------------------------------------------------------------

    def tags(self) -> dict[str, Any]:
        """The ``/api/tags`` reply: the served models."""
        return {
            "models": [
                {"name": m, "model": m, "details": {"family": self.family},
                 **({"digest": self.digests[m]} if m in self.digests else {})}
                for m in sorted(self.models)
            ]
        }

    def show(self, model: str) -> dict[str, Any]:
        """The ``/api/show`` reply of a served model."""
        return {
            "details": {"family": self.family, "format": "gguf", "parameter_size": "8.0B"},
            "model_info": {
                "general.architecture": self.family,
                f"{self.family}.context_length": self.models[model],
                f"{self.family}.embedding_length": 4096,
            },
            "capabilities": ["completion"],
        }

    def add_faults(self, *kinds: str | None) -> None:
        """Append faults (or None for a normal reply) to the script of the next chat calls."""
        for kind in kinds:
            if kind is not None and kind not in FAULTS:
                raise ValueError(f"unknown fault {kind!r}; use one of {FAULTS}")
        with self._lock:
            self._script.extend(kinds)

    def next_fault(self) -> str | None:
        """Pop the next scripted fault (None when the script is spent)."""
        with self._lock:
            return self._script.pop(0) if self._script else None

    def log_fault(self, model: str, payload: dict[str, Any], fault: str) -> None:
        """Log a chat request answered with a fault."""
        with self._lock:
            self._calls.append(OllamaCall(model, None, 0, 0, False, fault, payload))

    def chat(self, model: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Answer one chat request the way Ollama does, truncation included."""
        raw_options = payload.get("options")
        options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
        asked = options.get("num_ctx")
        num_ctx = int(asked) if isinstance(asked, int) and asked > 0 else self.default_num_ctx
        num_ctx = min(num_ctx, self.models[model])
        predict = options.get("num_predict")
        num_predict = int(predict) if isinstance(predict, int) and predict > 0 else 512
        raw_messages = payload.get("messages")
        messages: list[Any] = raw_messages if isinstance(raw_messages, list) else []
        text = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        ids = self._tok.encode(text)
        room = max(1, num_ctx - min(num_predict, num_ctx // 2))
        kept = ids[-room:] if len(ids) > room else ids
        seen = self._tok.decode(kept) if len(kept) < len(ids) else text
        start = time.perf_counter()
        answer = self.reply(Request(prompt=seen, max_tokens=num_predict))
        thinking = self.thinking if thinking_enabled(payload) else None  # "think": false turns it off
        if thinking in ("tags", "long"):
            answer = with_thinking(answer, "tags") if thinking == "tags" else long_thinking(answer, seen)
        hidden = len(self._tok.encode(THINKING)) if thinking == "field" else 0
        out_ids = self._tok.encode(answer)
        done_reason = "stop"
        if len(out_ids) > num_predict:
            answer, done_reason = self._tok.decode(out_ids[:num_predict]), "length"
        with self._lock:
            self._calls.append(
                OllamaCall(
                    model,
                    asked if isinstance(asked, int) else None,
                    len(ids),
                    len(kept),
                    len(kept) < len(ids),
                    None,
                    payload,
                )
            )
        message = {"role": "assistant", "content": answer}
        if thinking == "field":
            message["thinking"] = THINKING
        return {
            "model": model,
            "created_at": "2026-11-22T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": done_reason,
            "total_duration": int((time.perf_counter() - start) * 1e9),
            "prompt_eval_count": len(kept),
            "eval_count": min(len(out_ids), num_predict) + hidden,
        }


def main(argv: list[str] | None = None) -> None:
    """Serve a fake Ollama by hand until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--model", action="append", default=None, help="served model (repeat)")
    parser.add_argument("--context-length", type=int, default=131072)
    args = parser.parse_args(argv)
    models = {m: args.context_length for m in (args.model or ["llama3.1:8b"])}
    with FakeOllama(models=models, host=args.host, port=args.port) as fake:
        print(f"fake Ollama at {fake.url} serving {', '.join(models)}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
