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

One engine per model per process: engines live in a process-wide table keyed by the model and
its engine arguments, shared by every backend built for them (a judge that is also a
summarizer), and freed (``del``, ``gc.collect()``, vLLM's ``cleanup_dist_env_and_memory``)
when the last backend using one is closed. Planning counts tokens with the model's tokenizer
alone (:func:`tokenizer_counter`), never with an engine: vLLM reserves most of the GPU's memory
for each engine, so a second one on the same GPU fails to start.

Sampling: booksum sets temperature, top_p, max_tokens, stop and seed on every request; the
other defaults the model's ``generation_config.json`` recommends (top_k, min_p,
repetition_penalty), which ``vllm serve`` applies to requests that leave them unset, are read
from ``LLM.get_default_sampling_params()`` and applied here too, so ``vllm:M`` and the served
``M`` sample alike.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from booksum_app.errors import (
    ConfigError,
    ContextTooLong,
    ModelError,
    ModelUnavailable,
    NotInstalled,
    server_message,
)
from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.llm.providers.batcher import Gatherer
from booksum_app.llm.providers.thinking import ThinkWatch, WatchedThinking
from booksum_app.llm.request_key import request_seed

DATA_PARALLEL_REFUSED = (
    "vllm:{model}: data_parallel_size={size} does not work in vLLM's single-process offline "
    "engine (vLLM refuses it, vllm-project/vllm#27282); serve the replicas with "
    "`vllm serve {model} --data-parallel-size {size}` and pass --model openai:{model} "
    "--base-url http://HOST:8000/v1 (docs/models.md)"
)


# generation_config fields vllm serve applies to a request that leaves them unset (booksum
# sets temperature and top_p itself): LLM.get_default_sampling_params() in vLLM's entrypoints/llm.py
MODEL_SAMPLING_DEFAULTS = ("top_k", "min_p", "repetition_penalty")
# what vLLM's prompt-length refusals say, across versions: the engine's input processor
# ("The decoder prompt (length N) is longer than the maximum model length of M") and the
# renderer's ("You passed N input tokens and requested M output tokens. However, the model's
# context length is only ...", VLLMValidationError with parameter="input_tokens")
_TOO_LONG_MARKERS = ("longer than the maximum model length", "context length is only",
                     "maximum context length", "max_model_len")


class _RequestRejected(ModelError):
    """The engine refused the batch for a reason that may be one request's (a ValueError)."""


@dataclasses.dataclass
class _Held:
    module: Any  # the vllm module that built it (a test's stand-in is a different one)
    llm: Any
    users: int = 0


_ENGINES: dict[tuple[str, str], _Held] = {}
_ENGINES_LOCK = threading.Lock()
_TOKENIZERS: dict[tuple[int, str, str], Any] = {}


def _engine_key(model_id: str, engine_args: dict[str, Any]) -> tuple[str, str]:
    return model_id, json.dumps(engine_args, sort_keys=True, default=repr)


def held_engines(vllm: Any = None) -> list[str]:
    """The models whose engine this process holds now (one entry per engine); of ``vllm``'s
    engines only, when a module is given."""
    with _ENGINES_LOCK:
        return [model for (model, _), held in _ENGINES.items() if vllm is None or held.module is vllm]


def _acquire(vllm: Any, key: tuple[str, str], build: Callable[[], Any]) -> Any:
    """The engine for ``key``, built on first use; each acquire is matched by one :func:`_release`."""
    with _ENGINES_LOCK:
        held = _ENGINES.get(key)
        if held is None or held.module is not vllm:
            held = _Held(vllm, build())  # built under the lock: two threads never build one model twice
            _ENGINES[key] = held
        held.users += 1
        return held.llm


def _release(key: tuple[str, str], llm: Any) -> None:
    """One user less; the last one frees the engine and vLLM's distributed state."""
    with _ENGINES_LOCK:
        held = _ENGINES.get(key)
        if held is None or held.llm is not llm:
            return
        held.users -= 1
        if held.users > 0:
            return
        del _ENGINES[key]
    module = held.module
    del held, llm
    gc.collect()
    cleanup = _vllm_function(module, "distributed.parallel_state", "cleanup_dist_env_and_memory")
    if cleanup is not None:
        cleanup()


def _vllm_function(module: Any, path: str, name: str) -> Any:
    """``module.<path>.<name>`` if this vLLM has it (an attribute, or a submodule to import), else None."""
    target: Any = module
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    if target is None:
        try:
            target = importlib.import_module(f"{module.__name__}.{path}")
        except ImportError:
            return None
    return getattr(target, name, None)


def tokenizer_counter(model_id: str, engine_args: dict[str, Any]) -> Callable[[str], int]:
    """Tokens of a text under ``model_id``'s own tokenizer, loaded alone (no engine, no GPU).

    vLLM's ``get_tokenizer`` (``vllm.tokenizers`` in current vLLM,
    ``vllm.transformers_utils.tokenizer`` before) with the engine arguments that choose the
    tokenizer; an engine already held for the model lends its own.
    """
    vllm = _import_vllm()
    key = _engine_key(model_id, engine_args)
    with _ENGINES_LOCK:
        held = _ENGINES.get(key)
        tokenizer = held.llm.get_tokenizer() if held is not None and held.module is vllm else None
        cached = (id(vllm), *key)
        tokenizer = tokenizer or _TOKENIZERS.get(cached)
    if tokenizer is None:
        get_tokenizer = (_vllm_function(vllm, "tokenizers", "get_tokenizer")
                         or _vllm_function(vllm, "transformers_utils.tokenizer", "get_tokenizer"))
        if get_tokenizer is None:
            raise ModelUnavailable(f"vllm:{model_id}: this vLLM has no get_tokenizer; upgrade vLLM")
        options = {k: engine_args[k] for k in ("tokenizer_mode", "trust_remote_code", "download_dir")
                   if k in engine_args}
        revision = engine_args.get("tokenizer_revision") or engine_args.get("revision")
        try:
            tokenizer = get_tokenizer(engine_args.get("tokenizer") or model_id, revision=revision, **options)
        except (OSError, ValueError) as exc:
            raise ModelUnavailable(f"vllm:{model_id}: its tokenizer could not be loaded ({exc})") from exc
        with _ENGINES_LOCK:
            _TOKENIZERS[cached] = tokenizer

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return count


def _import_vllm() -> Any:
    try:
        import vllm  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise NotInstalled(
            "vLLM is not installed: pip install 'booksum[vllm]' on a CUDA machine "
            "(or serve the model with 'vllm serve' and pass --base-url)"
        ) from exc
    return vllm


class VLLMBackend(WatchedThinking, BackendBase):  # type: ignore[override]  # properties over plain defaults
    """A gathering backend over ``vllm.LLM``: thread-safe ``complete``, whole batches underneath."""

    kind = "vllm"
    bounds_own_attempts = True  # an in-process model: no peer to wait for, max_tokens bounds it
    # enough callers that a level's leaves (and a grid's books) reach the engine together
    default_concurrency = 256

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_id: str,
        tensor_parallel_size: int = 1,
        known_context: bool = True,
        thinking: str = "auto",
        reasoning_effort: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        self.thinking = thinking
        self._think = ThinkWatch(model_id, mode=thinking, effort=reasoning_effort)  # Qwen3, R1: room and evidence
        vllm = _import_vllm()
        data_parallel = engine_kwargs.get("data_parallel_size", 1)
        if not isinstance(data_parallel, int) or isinstance(data_parallel, bool) or data_parallel != 1:
            raise ConfigError(DATA_PARALLEL_REFUSED.format(model=model_id, size=data_parallel))
        self._vllm = vllm
        self.model_id = model_id
        # prefix caching on unless the engine arguments say otherwise
        engine_kwargs = {"enable_prefix_caching": True, **engine_kwargs}
        self._key = _engine_key(model_id, {"tensor_parallel_size": tensor_parallel_size, **engine_kwargs})
        try:
            self._llm = _acquire(vllm, self._key, lambda: vllm.LLM(
                model=model_id,
                tensor_parallel_size=tensor_parallel_size,
                **engine_kwargs,
            ))
        except TypeError as exc:  # an engine argument this vLLM does not know
            raise ConfigError(
                f"vllm:{model_id}: {exc}; check the --engine-arg / [vllm_engine] names against "
                "`vllm serve --help` (EngineArgs)"
            ) from exc
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelUnavailable(
                f"vllm:{model_id} could not be loaded ({exc}); check the model id/path and GPU memory"
            ) from exc
        self._released = False
        self._tokenizer = self._llm.get_tokenizer()
        self.sampling_defaults = _model_sampling_defaults(vllm, self._llm)
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
        """Stop the gathering thread and let the engine go (freed when no other backend uses it)."""
        self._gatherer.close()
        if not self._released:
            self._released = True
            llm, self._llm = self._llm, None
            _release(self._key, llm)

    def _send(self, requests: list[Request]) -> list[Completion]:
        """One ``LLM.chat`` call; runs on the gathering thread only (the engine is not thread-safe)."""
        conversations = [_conversation(r) for r in requests]
        params = [self._sampling_params(r) for r in requests]
        start = time.perf_counter()
        try:
            template = self._think.chat_template_kwargs()  # --thinking on|off: enable_thinking for the template
            extra: dict[str, Any] = {"chat_template_kwargs": template} if template is not None else {}
            outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False, **extra)
        except ValueError as exc:
            message = str(exc)
            if self._too_long(exc, requests):
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

    def _too_long(self, exc: ValueError, requests: list[Request]) -> bool:
        """Whether vLLM refused a prompt for its length: by the error's parameter, its words, or
        (a single request) by measuring it, since the words change between vLLM versions."""
        if getattr(exc, "parameter", None) == "input_tokens":
            return True
        message = str(exc)
        if any(marker in message for marker in _TOO_LONG_MARKERS):
            return True
        if len(requests) != 1:
            return False  # halved until one request is left, then measured
        (request,) = requests
        try:
            prompt = self._tokenizer.apply_chat_template(_conversation(request), tokenize=False,
                                                         add_generation_prompt=True)
            prompt_tokens = len(self._tokenizer.encode(prompt, add_special_tokens=False))
        except Exception:  # noqa: BLE001 - a tokenizer without a chat template: not measured, not too long
            return False
        return prompt_tokens + request.max_tokens > self.info.context_window

    def _sampling_params(self, request: Request) -> Any:
        return self._vllm.SamplingParams(
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=request.max_tokens + self._room(request),
            stop=list(request.stop) or None,
            seed=request_seed(request) if request.temperature > 0 else None,
            **self.sampling_defaults,
        )

    def _room(self, request: Request) -> int:
        """A thinking model's reasoning room for ``request``, fitted to the context window."""
        if not self._think.room_tokens:
            return 0
        prompt_tokens = self.count_tokens((request.system or "") + request.user_text)
        return self._think.fitted_room(prompt_tokens=prompt_tokens, max_tokens=request.max_tokens,
                                       context_window=self.info.context_window)

    def _completion(self, output: Any, latency_s: float) -> Completion:
        best = output.outputs[0]
        finish = best.finish_reason or "stop"
        split = self._think.split(best.text or "", cut=finish == "length")
        output_tokens = len(best.token_ids or ())
        hidden = self.count_tokens(split.reasoning) if split.reasoning else 0
        return Completion(
            text=split.visible,
            finish_reason="length"
            if finish == "length"
            else "stop"
            if finish == "stop"
            else finish,
            usage=Usage(
                input_tokens=len(output.prompt_token_ids or ()),
                output_tokens=output_tokens,
            ),
            model=self.info.name,
            latency_s=latency_s,
            reasoning_tokens=min(hidden, output_tokens),
            think_chars_removed=split.removed_chars,
            reasoning_chars=len(split.reasoning),
        )


def _conversation(request: Request) -> list[dict[str, str]]:
    messages = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.user_text})
    return messages


def _model_sampling_defaults(vllm: Any, llm: Any) -> dict[str, Any]:
    """The model's recommended sampling values booksum does not set itself (those that differ from vLLM's)."""
    read = getattr(llm, "get_default_sampling_params", None)
    if read is None:  # a vLLM older than generation_config support applies none: neither does serve
        return {}
    recommended, plain = read(), vllm.SamplingParams()
    return {name: getattr(recommended, name) for name in MODEL_SAMPLING_DEFAULTS
            if hasattr(recommended, name) and getattr(recommended, name) != getattr(plain, name, None)}


def _engine_max_model_len(llm: Any) -> int | None:
    """The engine's context length, wherever this vLLM version keeps it."""
    engine = getattr(llm, "llm_engine", None)
    config = getattr(engine, "model_config", None)
    value = getattr(config, "max_model_len", None)
    return int(value) if isinstance(value, int) else None
