"""vLLM's offline engine: the calls made at the same moment sent as one batch (the only module importing vllm).

``vllm`` is imported lazily in the constructor, so booksum installs and runs without it.
The engine is built with prefix caching on (judge prompts share long prefixes), unless an
engine argument says ``enable_prefix_caching=false``. ``LLM.chat`` takes a list of
conversations with one ``SamplingParams`` each and schedules them together (continuous
batching), but each call is a barrier and the engine serves one call at a time, so
:meth:`VLLMBackend.complete` is thread-safe and gathers (``llm/providers/batcher.py``): the calls that
reach it together, from any thread (a hierarchical level's leaves, the regenerations an
answer triggers, the judge's questions through :meth:`complete_batch`), go out as one
``LLM.chat``. Token counts come from the engine's own tokenizer, and the context window from
its ``max_model_len``.

``data_parallel_size`` is refused: vLLM does not support it in a single-process ``LLM`` (it
raises since vllm-project/vllm#27282, and hung before); data-parallel replicas are served with
``vllm serve --data-parallel-size N`` and reached with ``openai:MODEL --base-url``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from booksum_app.errors import (
    ConfigError,
    ContextTooLong,
    ModelError,
    ModelUnavailable,
    server_message,
)
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.llm.providers.batcher import Gatherer

DATA_PARALLEL_REFUSED = (
    "vllm:{model}: data_parallel_size={size} does not work in vLLM's single-process offline "
    "engine (vLLM refuses it, vllm-project/vllm#27282); serve the replicas with "
    "`vllm serve {model} --data-parallel-size {size}` and pass --model openai:{model} "
    "--base-url http://HOST:8000/v1 (docs/models.md)"
)


class _RequestRejected(ModelError):
    """The engine refused the batch for a reason that may be one request's (a ValueError)."""


class VLLMBackend(BackendBase):
    """A gathering backend over ``vllm.LLM``: thread-safe ``complete``, whole batches underneath."""

    kind = "vllm"
    # enough callers that a level's leaves (and a grid's books) reach the engine together
    default_concurrency = 256

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
        data_parallel = engine_kwargs.get("data_parallel_size", 1)
        if not isinstance(data_parallel, int) or isinstance(data_parallel, bool) or data_parallel != 1:
            raise ConfigError(DATA_PARALLEL_REFUSED.format(model=model_id, size=data_parallel))
        self._vllm = vllm
        self.model_id = model_id
        # prefix caching on unless the engine arguments say otherwise
        engine_kwargs = {"enable_prefix_caching": True, **engine_kwargs}
        try:
            self._llm = vllm.LLM(
                model=model_id,
                tensor_parallel_size=tensor_parallel_size,
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
        self._gatherer: Gatherer[Request, Completion] = Gatherer(
            self._send, split_on=(ContextTooLong, _RequestRejected), name="booksum-vllm"
        )

    @property
    def batch_sizes(self) -> list[int]:
        """The size of every ``LLM.chat`` call made so far, in order."""
        return list(self._gatherer.batch_sizes)

    def expect_callers(self, callers: Callable[[], int]) -> None:
        """How many callers may be on their way (the client's slots): a batch waits for them."""
        self._gatherer.expect(callers)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer (no special tokens)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def complete(self, request: Request) -> Completion:
        """One request, sent in the batch of every call made at the same moment (thread-safe)."""
        return self._gatherer.submit(request)

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion]:
        """Every request in the next ``LLM.chat`` call (with whatever else is waiting); in order."""
        return self._gatherer.submit_all(list(requests)) if requests else []

    def close(self) -> None:
        """Stop the gathering thread (the engine itself is freed with the process)."""
        self._gatherer.close()

    def _send(self, requests: list[Request]) -> list[Completion]:
        """One ``LLM.chat`` call; runs on the gathering thread only (the engine is not thread-safe)."""
        conversations = [_conversation(r) for r in requests]
        params = [self._sampling_params(r) for r in requests]
        start = time.perf_counter()
        try:
            outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False)
        except ValueError as exc:
            message = str(exc)
            if "longer than the maximum model length" in message or "max_model_len" in message:
                raise ContextTooLong(
                    f"{self.info.name}: prompt too long for the context window: {server_message(message)}"
                ) from exc
            raise _RequestRejected(f"{self.info.name}: generation failed: {server_message(message)}") from exc
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
