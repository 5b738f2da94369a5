"""What starting booksum costs: the CLI and a plain-http summarize never import the openai SDK,
and the CLI loads no heavy library that a command needs only later, if at all.

The SDK takes about a second to import; a plain ``http://`` URL is served by the lean client
(``providers/http_json.py``), so loading it there is time before the first call for nothing.
Each check runs in a fresh interpreter, so what an earlier test imported does not count.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO, book_path

SUMMARIZE_PLAIN_HTTP = """
import sys
from booksum_app.testing.fake_server import FakeServer
from booksum_app.runners.summarize import summarize_book
with FakeServer() as server:
    record = summarize_book(sys.argv[1], strategy="hier", model="openai:fake", base_url=server.openai_base_url)
print(len(record.calls), "openai" in sys.modules)
"""


def run_python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "dummy"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[-2]


def test_importing_the_cli_does_not_import_the_openai_sdk() -> None:
    assert run_python("import sys, booksum_app.cli; print('openai' in sys.modules)") == "False"


# Libraries no command needs to parse its options: each is imported where it is used (a PDF's
# reader, the judge's planner, the detectors, the progress display, a provider's SDK).
HEAVY_FOR_THE_CLI = ("rich.progress", "jieba", "numpy", "bm25s", "nltk", "tiktoken", "markdown_it", "pypdf",
                     "fontTools", "PIL", "httpx", "anthropic", "openai", "booksum_app.scoring",
                     "booksum_app.runners.judge_plan")
# What summarize loads before its first call (options, book reader, output check, plan gate):
# the scoring side (detectors, n-grams, Punkt, the judge's planner) comes after the last answer.
SUMMARIZE_BEFORE_THE_FIRST_CALL = ("booksum_app.cli", "booksum_app.cli.book_input", "booksum_app.books",
                                   "booksum_app.runners.summarize", "booksum_app.runners.summarize_outputs",
                                   "booksum_app.runners.plan_gate")
AFTER_THE_LAST_ANSWER = ("booksum_app.scoring", "booksum_app.runners.judge_plan", "booksum_app.runners.quality",
                         "nltk", "jieba", "pypdf")


def loaded_of(imports: tuple[str, ...], watched: tuple[str, ...]) -> list[str]:
    code = (f"import importlib, sys\nfor name in {imports!r}: importlib.import_module(name)\n"
            f"print(','.join(m for m in {watched!r} if m in sys.modules) or '-')")
    return [m for m in run_python(code).split(",") if m != "-"]


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert loaded_of(("booksum_app.cli",), HEAVY_FOR_THE_CLI) == [], "budget: the CLI imports a heavy library"


def test_summarize_before_its_first_call_loads_nothing_of_the_scoring_side() -> None:
    loaded = loaded_of(SUMMARIZE_BEFORE_THE_FIRST_CALL, AFTER_THE_LAST_ANSWER)
    assert loaded == [], "budget: summarize loads the scoring side before its first call"


def test_a_plain_http_summarize_does_not_import_the_openai_sdk() -> None:
    calls, imported = run_python(SUMMARIZE_PLAIN_HTTP, str(book_path("time-machine"))).split()
    assert int(calls) > 0 and imported == "False", "budget: a plain http:// run loads the openai SDK"


def test_an_https_url_still_gets_the_sdk() -> None:
    code = ("import sys\nfrom booksum_app.llm.registry import LLMSettings, get_model\n"
            "get_model('openai:gpt-4o', settings=LLMSettings(base_url='https://example.invalid/v1'))\n"
            "print('openai' in sys.modules)")
    assert run_python(code) == "True"


# Loaded when the stand-in answers the first request of a whole summarize run (a fresh
# interpreter, the reply hook runs in the same process): the book read, chunked and planned.
FIRST_REQUEST_LOADS = """
import os, sys, threading
from booksum_app.testing.fake_replies import default_reply
from booksum_app.testing.fake_server import FakeServer
from booksum_app.runners.summarize import summarize_book
first = threading.Lock()  # the leaves arrive at once: only the first request answers, then the process ends
def reply(request):
    with first:
        print(",".join(m for m in sys.argv[2].split(",") if m in sys.modules) or "-", flush=True)
        os._exit(0)
with FakeServer(reply=reply) as server:
    summarize_book(sys.argv[1], strategy="hier", model="openai:fake", base_url=server.openai_base_url)
"""


def test_the_first_request_of_a_run_finds_the_scoring_side_unloaded() -> None:
    """Punkt (nltk) splits a paragraph only when it is over the chunk budget, which no sample
    book's is at 2048; the judge, detectors and n-grams come after the last answer."""
    loaded = run_python(FIRST_REQUEST_LOADS, str(book_path("time-machine")), ",".join(AFTER_THE_LAST_ANSWER))
    assert loaded == "-", f"budget: loaded before the first request: {loaded}"
