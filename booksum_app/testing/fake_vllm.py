"""A stand-in for the ``vllm`` package with its public signatures and checks, and no GPU: it records batches.

``install()`` builds a module object to put in ``sys.modules["vllm"]``; engines built through
it are listed in ``module.engines`` and each records every ``LLM.chat`` call (``chats``) and
its size (``batch_sizes``). Signatures follow vLLM's ``vllm/entrypoints/llm.py``,
``sampling_params.py`` and ``outputs.py``: ``LLM(model, *, tokenizer=None, ...,
tensor_parallel_size=1, ..., **kwargs)`` (the rest go to ``EngineArgs``, which refuses names it
does not know with a ``TypeError``); ``LLM(data_parallel_size=k)`` with k > 1 raises the
``ValueError`` vLLM raises since vllm-project/vllm#27282; ``LLM.chat(messages,
sampling_params=None, use_tqdm=True, lora_request=None, chat_template=None,
chat_template_content_format="auto", add_generation_prompt=True, continue_final_message=False,
tools=None, chat_template_kwargs=None, mm_processor_kwargs=None)`` takes one conversation or a
list of them, and one ``SamplingParams`` or a list of the same length; a prompt that leaves no
room under ``max_model_len`` raises, for the whole call, the ``VLLMValidationError`` (a
``ValueError``) of vLLM's renderer (``vllm/renderers/params.py``, ``_token_len_check``: "You
passed N input tokens and requested M output tokens. However, the model's context length is
only ...", ``parameter="input_tokens"``), or with ``legacy_errors=True`` the input processor's
"The decoder prompt (length N) is longer than the maximum model length of M" of older
releases. Outputs are ``RequestOutput`` objects whose ``outputs[0]`` is a ``CompletionOutput``.

Engines: every ``LLM(...)`` is logged in ``module.engines``; :func:`cleanups` counts calls of
``vllm.distributed.parallel_state.cleanup_dist_env_and_memory`` (how an engine is given back),
and :func:`peak_held` the most engines alive at once (built less cleaned up).
``vllm.tokenizers.get_tokenizer(name, *, tokenizer_mode, trust_remote_code, revision,
download_dir, **kwargs)`` (``vllm.transformers_utils.tokenizer`` in older releases) loads the
tokenizer alone and is logged in ``module.tokenizers_loaded``. ``LLM.get_default_sampling_params()``
returns the model's ``generation_config`` values (``install(generation_config=...)``), as
vLLM's ``ModelConfig.get_diff_sampling_param`` reads them.

The tokenizer counts words (one token each). Answers come from ``reply(conversation, params)``
(default: :func:`booksum_app.testing.fake_replies.reply_text` on the last user message), cut
at ``max_tokens`` with ``finish_reason="length"``, or at a stop string.
"""

from __future__ import annotations

import itertools
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from booksum_app.testing.fake_replies import reply_text

Conversation = list[dict[str, str]]
ReplyFn = Callable[[Conversation, "SamplingParams"], str]

# EngineArgs fields the stand-in accepts beyond LLM's named parameters (a subset of vLLM's)
ENGINE_ARGS = frozenset({
    "max_model_len", "enable_prefix_caching", "data_parallel_size", "pipeline_parallel_size",
    "max_num_seqs", "max_num_batched_tokens", "kv_cache_dtype", "block_size", "load_format",
    "distributed_executor_backend", "enable_chunked_prefill", "disable_log_stats", "download_dir",
    "served_model_name", "config_format", "generation_config", "max_logprobs",
})
DEFAULT_MAX_MODEL_LEN = 32_768


class VLLMValidationError(ValueError):
    """vLLM's request validation error (``vllm/exceptions.py``): a ValueError with the parameter at fault."""

    def __init__(self, message: str, *, parameter: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.value = value

    def __str__(self) -> str:
        base = super().__str__()
        extras = [f"{k}={v}" for k, v in (("parameter", self.parameter), ("value", self.value)) if v is not None]
        return f"{base} ({', '.join(extras)})" if extras else base


@dataclass
class SamplingParams:
    """vLLM's sampling parameters (the fields booksum may set), with vLLM's defaults and checks."""

    n: int = 1
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    max_tokens: int | None = 16
    min_tokens: int = 0
    logprobs: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0.0:
            raise ValueError(f"temperature must be non-negative, got {self.temperature}.")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}.")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}.")
        if isinstance(self.stop, str):
            self.stop = [self.stop]


@dataclass
class CompletionOutput:
    """One generated sequence of a request."""

    index: int
    text: str
    token_ids: Sequence[int]
    cumulative_logprob: float | None
    logprobs: Any
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    lora_request: Any = None


@dataclass
class RequestOutput:
    """What ``LLM.chat`` returns per conversation, in input order."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: Any
    outputs: list[CompletionOutput]
    finished: bool
    metrics: Any = None
    lora_request: Any = None


class _Tokenizer:
    """Words as tokens; ``apply_chat_template`` renders role markers as a chat template would."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(range(len(text.split()) + (1 if add_special_tokens else 0)))

    def apply_chat_template(self, conversation: Conversation, *, tokenize: bool = False,
                            add_generation_prompt: bool = True, **kwargs: Any) -> str:
        text = "".join(f"<|{m['role']}|> {m['content']} <|end|> " for m in conversation)
        return text + ("<|assistant|>" if add_generation_prompt else "")


def default_reply(conversation: Conversation, params: SamplingParams) -> str:
    """An extractive summary or a judge answer for the last user message (fake_replies)."""
    user = next((m["content"] for m in reversed(conversation) if m["role"] == "user"), "")
    return reply_text(user, max_tokens=params.max_tokens or 16)


@dataclass
class LLM:
    """``vllm.LLM``: records every ``chat`` call; answers with ``reply``."""

    model: str
    engine_args: dict[str, Any]
    reply: ReplyFn = default_reply
    generation_config: dict[str, Any] = field(default_factory=dict)
    legacy_errors: bool = False
    chats: list[tuple[list[Conversation], list[SamplingParams]]] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    template_kwargs: list[dict[str, Any] | None] = field(default_factory=list)  # each chat's chat_template_kwargs
    concurrent_calls: int = 0  # chat calls that overlapped another (the real engine is not thread-safe)

    def __post_init__(self) -> None:
        max_len = int(self.engine_args.get("max_model_len") or DEFAULT_MAX_MODEL_LEN)
        self.llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=max_len))
        self._tokenizer = _Tokenizer()
        self._busy = threading.Lock()
        self._ids = itertools.count()

    def get_tokenizer(self, lora_request: Any = None) -> _Tokenizer:
        return self._tokenizer

    def get_default_sampling_params(self) -> SamplingParams:
        """The model's generation_config sampling values that differ from vLLM's own."""
        return SamplingParams(**self.generation_config) if self.generation_config else SamplingParams()

    def chat(
        self,
        messages: Conversation | list[Conversation],
        sampling_params: SamplingParams | list[SamplingParams] | None = None,
        use_tqdm: bool = True,
        lora_request: Any = None,
        chat_template: str | None = None,
        chat_template_content_format: str = "auto",
        add_generation_prompt: bool = True,
        continue_final_message: bool = False,
        tools: list[dict[str, Any]] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        mm_processor_kwargs: dict[str, Any] | None = None,
    ) -> list[RequestOutput]:
        if not self._busy.acquire(blocking=False):
            self.concurrent_calls += 1
            self._busy.acquire()
        try:
            self.template_kwargs.append(chat_template_kwargs)
            return self._chat(messages, sampling_params, add_generation_prompt)
        finally:
            self._busy.release()

    def _chat(
        self,
        messages: Conversation | list[Conversation],
        sampling_params: SamplingParams | list[SamplingParams] | None,
        add_generation_prompt: bool,
    ) -> list[RequestOutput]:
        conversations: list[Conversation] = (
            messages if messages and isinstance(messages[0], list) else [messages]  # type: ignore[list-item]
        )
        if sampling_params is None:
            params = [SamplingParams()] * len(conversations)
        elif isinstance(sampling_params, SamplingParams):
            params = [sampling_params] * len(conversations)
        else:
            params = list(sampling_params)
            if len(params) != len(conversations):
                raise ValueError("The lengths of prompts and sampling_params must be the same.")
        max_len = self.llm_engine.model_config.max_model_len
        prompts: list[tuple[str, list[int]]] = []
        for conversation in conversations:
            prompt = self._tokenizer.apply_chat_template(conversation, add_generation_prompt=add_generation_prompt)
            ids = self._tokenizer.encode(prompt, add_special_tokens=False)
            wanted = params[len(prompts)].max_tokens or 1
            # vLLM checks every prompt before generating any: the renderer refuses prompt + max_tokens
            # over the window, the older input processor a prompt that leaves no room for one token
            if len(ids) > (max_len - 1 if self.legacy_errors else max_len - wanted):
                raise self._too_long(len(ids), max_len, wanted)
            prompts.append((prompt, ids))
        self.chats.append((conversations, params))
        self.batch_sizes.append(len(conversations))
        return [
            self._answer(conversation, p, prompt, ids)
            for conversation, p, (prompt, ids) in zip(conversations, params, prompts, strict=True)
        ]

    def _too_long(self, prompt_len: int, max_len: int, wanted: int) -> ValueError:
        if self.legacy_errors:
            return ValueError(
                f"The decoder prompt (length {prompt_len}) is longer than the maximum model length "
                f"of {max_len}. Make sure that `max_model_len` is no smaller than the number of "
                "text tokens."
            )
        room = max(0, max_len - wanted)
        return VLLMValidationError(
            f"You passed {prompt_len} input tokens and requested {wanted} output tokens. However, the "
            f"model's context length is only {max_len} tokens, resulting in a maximum input length of "
            f"{room} tokens. Please reduce the length of the input prompt.",
            parameter="input_tokens", value=prompt_len,
        )

    def _answer(self, conversation: Conversation, params: SamplingParams, prompt: str,
                prompt_ids: list[int]) -> RequestOutput:
        text = self.reply(conversation, params)
        finish, stop_reason = "stop", None
        for stop in params.stop or ():
            if stop in text:
                text, stop_reason = text[: text.index(stop)], stop
        words = text.split()
        room = self.llm_engine.model_config.max_model_len - len(prompt_ids)
        limit = min(params.max_tokens if params.max_tokens is not None else room, room)
        if len(words) > limit:
            text, finish, stop_reason = " ".join(words[:limit]), "length", None
        piece = CompletionOutput(0, text, list(range(len(text.split()))), None, None, finish, stop_reason)
        return RequestOutput(str(next(self._ids)), prompt, prompt_ids, None, [piece], True)


def install(reply: ReplyFn = default_reply, *, generation_config: dict[str, Any] | None = None,
            legacy_errors: bool = False) -> types.ModuleType:
    """A ``vllm`` module object; engines built through it are appended to ``module.engines``."""
    module = types.ModuleType("vllm")
    engines: list[LLM] = []
    state = {"cleanups": 0, "peak": 0}
    tokenizers_loaded: list[str] = []

    def held() -> int:
        return len(engines) - state["cleanups"]

    def make_llm(
        model: str,
        *,
        tokenizer: str | None = None,
        tokenizer_mode: str = "auto",
        skip_tokenizer_init: bool = False,
        trust_remote_code: bool = False,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        quantization: str | None = None,
        revision: str | None = None,
        seed: int | None = None,
        gpu_memory_utilization: float = 0.9,
        swap_space: float = 4,
        cpu_offload_gb: float = 0,
        enforce_eager: bool = False,
        hf_token: bool | str | None = None,
        compilation_config: int | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LLM:
        unknown = sorted(set(kwargs) - ENGINE_ARGS)
        if unknown:
            raise TypeError(f"EngineArgs.__init__() got an unexpected keyword argument '{unknown[0]}'")
        dp_size = int(kwargs.get("data_parallel_size", 1))
        if dp_size > 1 and kwargs.get("distributed_executor_backend") != "external_launcher":
            raise ValueError(
                f"LLM(data_parallel_size={dp_size}) is not supported for single-process usage and "
                "may hang. Please use the explicit multi-process data-parallel example at "
                "'examples/offline_inference/data_parallel.py'."
            )
        named = {"tensor_parallel_size": tensor_parallel_size, "dtype": dtype, "quantization": quantization,
                 "gpu_memory_utilization": gpu_memory_utilization, "enforce_eager": enforce_eager, "seed": seed}
        engine = LLM(model, {**named, **kwargs}, reply=reply, generation_config=dict(generation_config or {}),
                     legacy_errors=legacy_errors)
        engines.append(engine)
        state["peak"] = max(state["peak"], held())
        return engine

    def get_tokenizer(tokenizer_name: str, *args: Any, tokenizer_mode: str = "auto", trust_remote_code: bool = False,
                      revision: str | None = None, download_dir: str | None = None, **kwargs: Any) -> _Tokenizer:
        tokenizers_loaded.append(str(tokenizer_name))
        return _Tokenizer()

    def cleanup_dist_env_and_memory(shutdown_ray: bool = False) -> None:
        state["cleanups"] += 1

    tokenizers = types.ModuleType("vllm.tokenizers")
    tokenizers.get_tokenizer = get_tokenizer  # type: ignore[attr-defined]
    parallel_state = types.ModuleType("vllm.distributed.parallel_state")
    parallel_state.cleanup_dist_env_and_memory = cleanup_dist_env_and_memory  # type: ignore[attr-defined]
    distributed = types.ModuleType("vllm.distributed")
    distributed.parallel_state = parallel_state  # type: ignore[attr-defined]
    exceptions = types.ModuleType("vllm.exceptions")
    exceptions.VLLMValidationError = VLLMValidationError  # type: ignore[attr-defined]
    module.tokenizers = tokenizers  # type: ignore[attr-defined]
    module.distributed = distributed  # type: ignore[attr-defined]
    module.exceptions = exceptions  # type: ignore[attr-defined]
    module.tokenizers_loaded = tokenizers_loaded  # type: ignore[attr-defined]
    module.__dict__["_state"] = state

    module.LLM = make_llm  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    module.RequestOutput = RequestOutput  # type: ignore[attr-defined]
    module.CompletionOutput = CompletionOutput  # type: ignore[attr-defined]
    module.engines = engines  # type: ignore[attr-defined]
    return module


def cleanups(module: types.ModuleType) -> int:
    """How many engines the stand-in module has been told to give back."""
    return int(module.__dict__["_state"]["cleanups"])


def peak_held(module: types.ModuleType) -> int:
    """The most engines the stand-in module had alive at once."""
    return int(module.__dict__["_state"]["peak"])


__all__ = ["LLM", "CompletionOutput", "RequestOutput", "SamplingParams", "VLLMValidationError", "cleanups",
           "default_reply", "install", "peak_held"]
