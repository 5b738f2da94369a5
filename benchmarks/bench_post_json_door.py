"""How often the door abandons a plugin attempt that post_json already bounds at the same deadline.

Run by hand: ``python benchmarks/bench_post_json_door.py [--attempts 30]``. A plugin that sends
with ``post_json`` (``bounds_own_attempts`` left False) against the fake server dripping its
reply a byte every 0.5 s, ``--timeout 1``, one attempt per call: prints how many attempts the
door gave up on (each leaves a thread behind, counted toward its limit of 16) rather than
letting post_json's own timeout end them. No network, no key.
"""

from __future__ import annotations

import argparse

from booksum_app.llm.calls import Client
from booksum_app.plugin import BackendBase, Completion, Request, Usage, post_json
from booksum_app.testing.fake_backend import FAKE_MODEL_INFO
from booksum_app.testing.fake_server import FakeServer


class _PostJsonPlugin(BackendBase):
    def __init__(self, url: str) -> None:
        super().__init__(FAKE_MODEL_INFO)
        self.url = url

    def complete(self, request: Request) -> Completion:
        reply = post_json(self.url, {"model": "fake", "messages": [{"role": "user", "content": request.prompt}],
                                     "max_tokens": request.max_tokens})
        return Completion(reply["choices"][0]["message"]["content"], "stop", Usage(1, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=30)
    n = parser.parse_args().attempts
    abandoned = 0
    with FakeServer(script=["drip"] * n, drip_s=0.5) as server:
        client = Client(_PostJsonPlugin(server.openai_base_url + "/chat/completions"), attempt_timeout_s=1,
                        max_attempts=1, sleep=lambda s: None)
        for i in range(n):
            try:
                client.complete(Request(prompt=f"Mara bakes bread {i}.", max_tokens=20))
            except Exception as exc:  # noqa: BLE001 -- every attempt times out; the message says who ended it
                abandoned += "abandoned" in str(exc)
        client.close()
    print(f"{abandoned} of {n} attempts abandoned by the door (post_json's own timeout ended the rest)")


if __name__ == "__main__":
    main()
