"""What starting booksum costs: the CLI and a plain-http summarize never import the openai SDK.

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


def test_a_plain_http_summarize_does_not_import_the_openai_sdk() -> None:
    calls, imported = run_python(SUMMARIZE_PLAIN_HTTP, str(book_path("time-machine"))).split()
    assert int(calls) > 0 and imported == "False", "budget: a plain http:// run loads the openai SDK"


def test_an_https_url_still_gets_the_sdk() -> None:
    code = ("import sys\nfrom booksum_app.llm.registry import LLMSettings, get_model\n"
            "get_model('openai:gpt-4o', settings=LLMSettings(base_url='https://example.invalid/v1'))\n"
            "print('openai' in sys.modules)")
    assert run_python(code) == "True"
