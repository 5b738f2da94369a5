"""The fake server, describing itself as ``vllm serve`` and ``llama-server`` do, and counting wasted generations.

- ``max_model_len={"model": 32768}``: ``GET /v1/models`` lists those models with their
  ``max_model_len`` (vLLM's ``ModelCard``);
- ``props_n_ctx=N``: ``GET /props`` answers as llama-server does,
  ``default_generation_settings.n_ctx`` = N (the context of one slot) and ``total_slots``
  (``slots``, which the fake server serves at once, queueing the rest without a 429);
- ``root="/models/x"`` (with ``max_model_len``): each card's ``root``, the weights behind the
  served name (the model's own name by default, as ``vllm serve`` without ``--served-model-name``);
  ``model_path="x.gguf"``: ``/props``' ``model_path``;
- ``llama_cpp_python="ALIAS"``: ``GET /v1/models`` answers as llama-cpp-python's server does
  (``{"id": ALIAS, "object": "model", "owned_by": "me", "permissions": []}``, no context), and
  there is no ``/props``; with ``n_ctx=N`` its ``POST /v1/completions`` refuses a prompt of N
  tokens or more (a word counts as one) with the 400 llama-cpp-python sends, naming N;
- ``wasted_count``: generations finished for a client that had already hung up (its timeout
  passed while the request waited for a slot), which a server that queues without a bound
  still computes.

With neither ``max_model_len`` nor ``props_n_ctx`` it is a server that queues without
describing itself (an older llama-server build, a proxy in front of one): ``slots=N`` served at
once, the rest waiting in arrival order, ``/props`` and ``/v1/models`` answered 404.

Every other route is the fake server's (:mod:`booksum_app.testing.fake_server`).
"""

from __future__ import annotations

import select
import socket
from typing import Any, Self

from booksum_app.jsonin import parse_json_or_none
from booksum_app.llm.providers import server_info
from booksum_app.testing.fake_handler import _Handler
from booksum_app.testing.fake_server import FakeServer


class _DescribingHandler(_Handler):
    server: Any

    def do_GET(self) -> None:
        fake: DescribingServer = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models") and fake.llama_cpp_python is not None:
            card = {"id": fake.llama_cpp_python, "object": "model", "owned_by": "me", "permissions": []}
            self._send_json(200, {"object": "list", "data": [card]})
        elif path in ("/v1/models", "/models") and fake.max_model_len is not None:
            cards = [{"id": model, "object": "model", "owned_by": "vllm", "root": fake.root or model, "parent": None,
                      "max_model_len": length} for model, length in fake.max_model_len.items()]
            self._send_json(200, {"object": "list", "data": cards})
        elif path == "/props" and fake.props_n_ctx is not None:
            self._send_json(200, {
                "default_generation_settings": {"n_ctx": fake.props_n_ctx, "params": {"temperature": 0.8}},
                "total_slots": fake.total_slots, "model_path": fake.model_path, "chat_template": "",
            })
        else:
            self._send_json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def do_POST(self) -> None:
        fake: DescribingServer = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/completions", "/completions") or fake.llama_cpp_python is None:
            super().do_POST()
            return
        length = int(self.headers.get("content-length") or 0)
        payload = parse_json_or_none(self.rfile.read(length) if length else b"{}")
        prompt = payload.get("prompt", "") if isinstance(payload, dict) else ""
        tokens = len(str(prompt).split())
        with fake._lock:
            fake.completion_probes += 1
        if fake.n_ctx is not None and tokens >= fake.n_ctx:  # llama_cpp/server/errors.py, context_length_exceeded
            message = (f"This model's maximum context length is {fake.n_ctx} tokens, however you requested "
                       f"{tokens + 1} tokens ({tokens} in your prompt; 1 for the completion). Please reduce your "
                       "prompt; or completion length.")
            self._send_json(400, {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                            "code": "context_length_exceeded"}})
            return
        self._send_json(200, {"object": "text_completion", "choices": [{"text": "a", "index": 0,
                                                                         "finish_reason": "length"}]})

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        if status == 200 and self.command == "POST" and self._client_gone():
            self.server.fake.count_wasted()  # a generation nobody waits for
        super()._send_json(status, body, headers)

    def _client_gone(self) -> bool:
        """Whether the client hung up: its socket reads as closed (it sends nothing while it waits)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class DescribingServer(FakeServer):
    """A :class:`FakeServer` that reports its window and slots, and counts wasted generations."""

    def __init__(
        self, *, max_model_len: dict[str, int] | None = None, props_n_ctx: int | None = None,
        llama_cpp_python: str | None = None, root: str | None = None, model_path: str = "model.gguf",
        n_ctx: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._httpd.RequestHandlerClass = _DescribingHandler
        self.max_model_len = max_model_len
        self.props_n_ctx = props_n_ctx
        self.llama_cpp_python = llama_cpp_python
        self.root, self.model_path = root, model_path
        self.n_ctx = n_ctx  # llama-cpp-python's --n_ctx, named only when refusing a longer prompt
        self.completion_probes = 0
        self.total_slots = int(kwargs.get("slots") or 1)
        self.wasted_count = 0

    def count_wasted(self) -> None:
        with self._lock:
            self.wasted_count += 1

    def start(self) -> Self:
        server_info.forget(self.openai_base_url)  # a server earlier on this port said something else
        return super().start()

    def close(self) -> None:
        server_info.forget(self.openai_base_url)
        super().close()


__all__ = ["DescribingServer"]
