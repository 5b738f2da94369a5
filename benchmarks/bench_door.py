"""The door's costs: a reply past the byte cap on every carrier, and a guarded plugin attempt.

Run by hand: ``python benchmarks/bench_door.py [--calls 2000]``. Prints, for each carrier (the
lean client, the openai SDK, the anthropic SDK, Ollama's client), the time to refuse a 100 MB
reply (300 MB for Ollama) and the process's peak RSS after it; then the call layer's time per
call for a plugin backend that answers at once, called directly and on the door's worker
thread (``attempt_timeout_s`` set). No network, no key.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from booksum_app.llm.base import BackendBase, Completion, ModelInfo, Request, Usage
from booksum_app.llm.calls import Client
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO

REQ = Request(prompt="Summarize: the cat sat on the mat. It was warm.", max_tokens=200)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def refuse_huge(path: str) -> str:
    from test_conformance import backend_for

    from booksum_app.testing.fake_server import FakeServer

    started = time.monotonic()
    if path == "ollama":
        from booksum_app.llm.providers.ollama import OllamaBackend
        from booksum_app.testing.fake_ollama import FakeOllama

        info = ModelInfo(name="ollama:llama3.1:8b", context_window=8192, tokenizer="estimate")
        with FakeOllama(script=["hugebody"]) as fake:
            client = Client(OllamaBackend(info, model_id="llama3.1:8b", host=fake.url, timeout_s=300.0),
                            max_attempts=1)
            started = time.monotonic()
            outcome = _try(client)
    else:
        with FakeServer(fault_rate=1.0, fault_kinds=("hugebody",)) as server:
            client = Client(backend_for(path, server, timeout_s=300.0), max_attempts=1)
            started = time.monotonic()
            outcome = _try(client)
    return f"{path}: {time.monotonic() - started:.2f} s, peak RSS {_peak_mb():.0f} MB ({outcome})"


def _try(client: Client) -> str:
    try:
        client.complete(REQ)
        return "answered"
    except Exception as exc:  # noqa: BLE001 -- printed
        return "refused" if "larger than" in str(exc) else f"other: {str(exc)[:60]}"
    finally:
        client.close()


class Instant(BackendBase):
    def complete(self, request: Request) -> Completion:
        return Completion("Done.", "stop", Usage(10, 2))


def per_call_us(calls: int, guarded: bool) -> float:
    client = Client(Instant(FAKE_MODEL_INFO), attempt_timeout_s=60.0 if guarded else None)
    requests = [Request(prompt=f"call {i}", max_tokens=20) for i in range(calls)]
    started = time.perf_counter()
    for request in requests:
        client.complete(request)
    client.close()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    for path in ("direct", "sdk", "anthropic", "ollama"):
        print(refuse_huge(path))
    direct = min(per_call_us(args.calls, guarded=False) for _ in range(3))
    guarded = min(per_call_us(args.calls, guarded=True) for _ in range(3))
    print(f"plugin call, called directly: {direct:.0f} us/call; on the door's worker: {guarded:.0f} us/call")


if __name__ == "__main__":
    main()
