"""vLLM's offline engine: whole batches of chat requests on a GPU box (the only module importing vllm).

``vllm`` is imported lazily in the constructor, so booksum installs and runs without it.
The engine is built with prefix caching on (judge prompts share long prefixes). A batch is
one ``LLM.chat(list_of_conversations, sampling_params=list_of_SamplingParams)`` call, which
vLLM schedules with continuous batching; single calls go through the same path. Token counts
come from the engine's own tokenizer, and the context window from its ``max_model_len``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from typing import Any

from booksum_app.errors import ConfigError, ContextTooLong, ModelError, ModelUnavailable
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage


class VLLMBackend(BackendBase):
    """A batch backend over ``vllm.LLM``."""

    kind = "vllm"
    default_concurrency = 1  # single calls are serialized; complete_many sends one batch

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_id: str,
        tensor_parallel_size: int = 1,
        known_context: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        try:
            import vllm  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ModelUnavailable(
                "vLLM is not installed: pip install 'booksum[vllm]' on a CUDA machine "
                "(or serve the model with 'vllm serve' and pass --base-url)"
            ) from exc
        self._vllm = vllm
        self.model_id = model_id
        self._lock = threading.Lock()
        try:
            self._llm = vllm.LLM(
                model=model_id,
                tensor_parallel_size=tensor_parallel_size,
                enable_prefix_caching=True,
                **engine_kwargs,
            )
        except TypeError as exc:  # an engine argument this vLLM does not know
            raise ConfigError(
                f"vllm:{model_id}: {exc}; check the --engine-arg / [vllm_engine] names against "
                "`vllm serve --help` (EngineArgs)"
            ) from exc
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelUnavailable(
                f"vllm:{model_id} could not be loaded ({exc}); check the model id/path and GPU memory"
            ) from exc
        self._tokenizer = self._llm.get_tokenizer()
        max_len = _engine_max_model_len(self._llm)
        if max_len is not None and (not known_context or max_len < info.context_window):
            info = dataclasses.replace(info, context_window=max_len)
        self.info = info

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer (no special tokens)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def complete(self, request: Request) -> Completion:
        """One request, as a batch of one."""
        return self.complete_batch([request])[0]

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion]:
        """Every request in one ``LLM.chat`` call; results in request order."""
        if not requests:
            return []
        conversations = [_conversation(r) for r in requests]
        params = [self._sampling_params(r) for r in requests]
        start = time.perf_counter()
        with self._lock:
            try:
                outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False)
            except ValueError as exc:
                message = str(exc)
                if "longer than the maximum model length" in message or "max_model_len" in message:
                    raise ContextTooLong(
                        f"{self.info.name}: prompt too long for the context window: {message[:300]}"
                    ) from exc
                raise ModelError(f"{self.info.name}: generation failed: {message[:300]}") from exc
        latency = (time.perf_counter() - start) / len(requests)
        if len(outputs) != len(requests):
            raise ModelError(
                f"{self.info.name}: vLLM returned {len(outputs)} outputs for {len(requests)} requests"
            )
        return [self._completion(output, latency) for output in outputs]

    def _sampling_params(self, request: Request) -> Any:
        return self._vllm.SamplingParams(
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=request.max_tokens,
            stop=list(request.stop) or None,
            seed=request.sample_index if request.temperature > 0 else None,
        )

    def _completion(self, output: Any, latency_s: float) -> Completion:
        best = output.outputs[0]
        finish = best.finish_reason or "stop"
        return Completion(
            text=best.text,
            finish_reason="length"
            if finish == "length"
            else "stop"
            if finish == "stop"
            else finish,
            usage=Usage(
                input_tokens=len(output.prompt_token_ids or ()),
                output_tokens=len(best.token_ids or ()),
            ),
            model=self.info.name,
            latency_s=latency_s,
        )


def _conversation(request: Request) -> list[dict[str, str]]:
    messages = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.user_text})
    return messages


def _engine_max_model_len(llm: Any) -> int | None:
    """The engine's context length, wherever this vLLM version keeps it."""
    engine = getattr(llm, "llm_engine", None)
    config = getattr(engine, "model_config", None)
    value = getattr(config, "max_model_len", None)
    return int(value) if isinstance(value, int) else None
