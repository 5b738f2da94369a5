"""The two example plugins, installed as a third party installs them and driven through the CLI.

``examples/strategy-plugin`` (``lead``: no model call; ``map-only``: one option, one template of
its own) and ``examples/backend-plugin`` (``extract:``: an offline model with declared prices)
are installed with pip (offline, no build isolation) into one temporary target that a CLI
subprocess sees. Both import only ``booksum_app.plugin``, the published surface.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = (REPO / "examples" / "strategy-plugin", REPO / "examples" / "backend-plugin")


def _book(tmp_path: Path) -> Path:
    chapters = [
        f"Chapter {n}\n\nThe {n}th morning began in Lisk. Mara baked bread before dawn. "
        "Teo counted the coins twice. The baker's cat slept in the flour bin.\n"
        for n in range(1, 6)
    ]
    book = tmp_path / "lisk.txt"
    book.write_text("\n".join(chapters), encoding="utf-8")
    return book


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), *map(str, EXAMPLES)],
        check=True, capture_output=True, text=True,
    )
    return target


def _booksum(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
           "BOOKSUM_CACHE_DIR": str(cwd / "cache"), "BOOKSUM_CONFIG": str(cwd / "none.toml")}
    env.pop("BOOKSUM_MODEL", None)
    return subprocess.run(
        [sys.executable, "-c", "from booksum_app.cli import main; main()", *args],
        check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )


def test_the_examples_import_only_the_public_module() -> None:
    for example in EXAMPLES:
        for module in example.rglob("*.py"):
            tree = ast.parse(module.read_text(encoding="utf-8"))
            names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
            names |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
            ours = {n for n in names if n.split(".")[0] == "booksum_app"}
            assert ours == {"booksum_app.plugin"}, f"{module.relative_to(REPO)} imports {sorted(ours)}"


@pytest.mark.slow
def test_lead_runs_without_a_model_and_map_only_with_its_option_and_template(site: Path, tmp_path: Path) -> None:
    book = _book(tmp_path)
    # a GGUF that does not exist: building the model would fail, so the run proves none is built
    done = _booksum(site, "summarize", str(book), "--strategy", "lead", "--max-summary-len", "70",
                    "-m", "local:/no/such/weights.gguf", "-o", str(tmp_path / "out" / "lisk"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "lisk.md").read_text(encoding="utf-8")
    assert "The 1th morning began in Lisk." in summary and "The 5th morning began in Lisk." in summary
    assert "Teo counted" not in summary, "round-robin: every chapter's first sentence before any second"
    record = json.loads((tmp_path / "out" / "lisk.json").read_text(encoding="utf-8"))
    assert record["totals"]["calls"] == 0 and record["config"]["clean"] is False
    assert record["config"]["plugin"] == "booksum-lead-0.1.0" and "|plugin:booksum-lead-0.1.0|" in record["signature"]

    done = _booksum(site, "summarize", str(book), "--strategy", "map-only", "-m", "extract:demo", "--chunk-size", "64",
                    "--set", "per_chunk_tokens=24", "--no-clean", "-o", str(tmp_path / "map" / "lisk"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "map" / "lisk.json").read_text(encoding="utf-8"))
    assert record["config"]["options"] == {"per_chunk_tokens": 24} and record["config"]["per_chunk_tokens"] == 24
    assert record["config"]["templates"].keys() == {"map_chunk"}, "the template shipped in the plugin"
    assert record["config"]["backend"] == "booksum-extract-0.1.0" and record["model"] == "extract:demo"
    assert {"plugin:booksum-lead-0.1.0", "backend:booksum-extract-0.1.0", "per_chunk_tokens:24"} <= set(
        record["signature"].split("|"))
    assert record["totals"]["calls"] == len(record["nodes"]) > 1 and all(n["tokens"] <= 24 for n in record["nodes"])
    assert record["totals"]["cost_usd"] > 0, "priced with the plugin's declared prices"
    assert "Mara baked bread" in record["summary"]

    logged = _booksum(site, "logs", "--json", "-", cwd=tmp_path)
    assert logged.returncode == 0, logged.stderr
    calls = json.loads(logged.stdout)
    assert calls and all(c["model"] == "extract:demo" and c["cost_usd"] > 0 for c in calls)

    refused = _booksum(site, "summarize", str(book), "--strategy", "map-only", "-m", "extract:demo",
                       "--set", "per_chunk_tokens=4", cwd=tmp_path)
    assert refused.returncode == 2 and "per_chunk_tokens=4: use at least 16" in refused.stderr


@pytest.mark.slow
def test_plan_compare_and_models_see_both_plugins(site: Path, tmp_path: Path) -> None:
    book = _book(tmp_path)
    inspected = _booksum(site, "inspect", str(book), "--json", "-m", "extract:demo", "--chunk-size", "64", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    plans = {p["strategy"]: p for p in json.loads(inspected.stdout)["plans"]}
    assert plans["lead"]["calls"] == 0 and plans["map-only"]["calls"] > 1 and {"hier", "inc", "direct"} <= set(plans)

    models = _booksum(site, "models", "--json", cwd=tmp_path)
    assert models.returncode == 0, models.stderr
    assert "extract" in models.stdout and "map-only" in models.stdout

    out = tmp_path / "cmp"
    compared = _booksum(site, "compare", str(book), "--strategies", "lead,map-only", "-m", "extract:demo",
                        "--chunk-sizes", "64", "--set", "per_chunk_tokens=20,30", "--no-judge", "--yes",
                        "--no-plots", "--out", str(out), cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    files = sorted((out / "records").glob("*/lisk.json"))
    assert [p.parent.name for p in files] == ["extract-demo-64-map-only-20", "extract-demo-64-map-only-30",
                                              "extract-demo-lead"]
    first = {p: p.stat().st_mtime_ns for p in files}
    assert json.loads(files[0].read_text(encoding="utf-8"))["config"]["options"] == {"per_chunk_tokens": 20}
    again = _booksum(site, "compare", str(book), "--strategies", "lead,map-only", "-m", "extract:demo",
                     "--chunk-sizes", "64", "--set", "per_chunk_tokens=20,30", "--no-judge", "--yes",
                     "--no-plots", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert {p: p.stat().st_mtime_ns for p in files} == first, "reused, not written again"


def test_a_bad_model_string_leaves_no_output_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from booksum_app.cli import cli

    book = _book(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["summarize", str(book), "-m", "nobody:x"])
    assert result.exit_code == 2 and "unknown model 'nobody:x'" in result.stderr
    assert not (tmp_path / "booksum-out").exists()


@pytest.mark.slow
def test_the_chat_backend_talks_http_through_the_plugin_door(site: Path, tmp_path: Path) -> None:
    from booksum_app.testing.fake_server import FakeServer

    book = _book(tmp_path)
    key = "sk-chat" + "K1j2H3g4F5d6" * 2
    with FakeServer() as server:
        env_key = {"CHAT_API_KEY": key}
        os.environ.update(env_key)
        try:
            done = _booksum(site, "summarize", str(book), "--strategy", "direct", "-m", "chat:demo", "--no-clean",
                            "--base-url", server.openai_base_url, "-o", str(tmp_path / "out" / "lisk"), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            record = json.loads((tmp_path / "out" / "lisk.json").read_text(encoding="utf-8"))
            assert record["model"] == "chat:demo" and record["config"]["backend"] == "booksum-extract-0.1.0"
            assert record["totals"]["input_tokens"] == server.billed.input_tokens, "its reported usage, counted"
            server.add_faults("401")
            refused = _booksum(site, "summarize", str(book), "--strategy", "direct", "-m", "chat:other",
                               "--no-clean", "--base-url", server.openai_base_url, cwd=tmp_path)
        finally:
            for name in env_key:
                os.environ.pop(name, None)
    assert refused.returncode == 4, refused.stderr
    assert "the API key was rejected (401); check CHAT_API_KEY" in refused.stderr.splitlines()[-1]
    assert "K1j2H3" not in refused.stderr + refused.stdout and "Traceback" not in refused.stderr
