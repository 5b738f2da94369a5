"""docs/scale.md's recipes, run as written (examples/scale/) against the fake server.

The Slurm array script and the Kubernetes pod script run with the variables those systems set
(``SLURM_ARRAY_TASK_ID``, ``JOB_COMPLETION_INDEX``), the Ray driver on a local Ray
(``num_cpus=2``), and ``merge.sh`` after each: every merge is the table an unsharded run
makes, and makes no model call. A failed ``compare`` fails its Slurm task (``set -euo pipefail``),
so ``afterok`` never starts the merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_compare import write_book
from test_compare_shards import stable

from booksum_app.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[1]
SCALE = REPO / "examples" / "scale"
SHARDS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Three books, the fake server, the recipes' variables, and the unsharded table."""
    root = tmp_path_factory.mktemp("scale")
    books = root / "books"
    books.mkdir()
    for n in (1, 2, 3):
        write_book(books / f"book-{n}.txt", seed=n, chapters=2)
    with FakeServer() as server:
        env = {
            **os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "dummy", "BOOKS": str(books),
            "SHARDS": str(SHARDS), "STRATEGIES": "hier,direct", "MODEL": "openai:gpt-4o-mini",
            "BASE_URL": server.openai_base_url, "JUDGE": "openai:gpt-4o",
            "JUDGE_BASE_URL": server.openai_base_url, "BOOKSUM": f"{sys.executable} -m booksum_app",
            "EXTRA_OPTIONS": "--chunk-sizes 256 --max-summary-len 120",
        }
        env.pop("BOOKSUM_SCALE_DIR", None)
        whole = subprocess.run(
            [sys.executable, "-m", "booksum_app", "compare", str(books), "--strategies", "hier,direct", "-m",
             "openai:gpt-4o-mini", "--base-url", server.openai_base_url, "--judge", "openai:gpt-4o",
             "--judge-base-url", server.openai_base_url, "--yes", "--no-plots", "--chunk-sizes", "256",
             "--max-summary-len", "120", "--out", str(root / "whole"), "--cache-dir", str(root / "cache-whole")],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert whole.returncode == 0, whole.stderr
        table = json.loads((root / "whole" / "results.json").read_text(encoding="utf-8"))["rows"]
        yield {"root": root, "env": env, "server": server, "table": table}


def run(script: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def merged_equals_unsharded(cluster: Any, env: dict[str, str]) -> None:
    server = cluster["server"]
    calls = server.call_count
    merge = run(["bash", str(SCALE / "merge.sh")], env)
    assert merge.returncode == 0, merge.stderr
    assert server.call_count == calls, "the merge made no call"
    rows = json.loads((Path(env["RUN"]) / "merged" / "results.json").read_text(encoding="utf-8"))["rows"]
    merged, whole = rounded(stable(rows)), rounded(stable(cluster["table"]))
    assert merged == whole, differences(merged, whole)
    assert all(r["n_books"] == 3 for r in rows) and rows[0]["booookscore"]["score"] is not None


def rounded(value: Any) -> Any:
    """Floats to 5 decimals: a sum of dollars taken in another order may differ in its last printed digit
    (0.308708 and 0.308707), which is not a different table."""
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return round(value, 5) if isinstance(value, float) else value


def differences(one: Any, other: Any, path: str = "") -> list[str]:
    """Where two tables differ, as paths: what a failure should show."""
    if isinstance(one, dict) and isinstance(other, dict):
        return [d for k in sorted(set(one) | set(other)) for d in differences(one.get(k), other.get(k), f"{path}.{k}")]
    if isinstance(one, list) and isinstance(other, list) and len(one) == len(other):
        return [d for i, (a, b) in enumerate(zip(one, other, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if one == other else [f"{path}: {one!r} != {other!r}"]


def recipe_env(cluster: Any, name: str) -> dict[str, str]:
    root: Path = cluster["root"]
    return {**cluster["env"], "RUN": str(root / name / "run"), "CACHE_ROOT": str(root / name / "caches")}


def test_the_slurm_array_script_shards_and_merge_sh_merges(cluster: Any) -> None:
    env = recipe_env(cluster, "slurm")
    for task in range(SHARDS):
        done = run(["bash", str(SCALE / "slurm.sh")], {**env, "SLURM_ARRAY_TASK_ID": str(task),
                                                        "SLURM_ARRAY_JOB_ID": "77", "SLURM_JOB_ID": str(78 + task)})
        assert done.returncode == 0, done.stderr
        assert (Path(env["RUN"]) / f"shard-{task}" / "answers.jsonl").stat().st_size > 0
    merged_equals_unsharded(cluster, env)


def test_a_failed_compare_fails_the_slurm_task(cluster: Any) -> None:
    env = recipe_env(cluster, "slurm-fails")
    failed = run(["bash", str(SCALE / "slurm.sh")], {**env, "SLURM_ARRAY_TASK_ID": "0", "MODEL": "nosuch:model"})
    assert failed.returncode != 0, "afterok would start the merge"
    assert not (Path(env["RUN"]) / "shard-0" / "answers.jsonl").exists(), "nothing after the failure ran"
    outside = run(["bash", str(SCALE / "slurm.sh")], env)  # not an array task: says so, runs nothing
    assert outside.returncode != 0 and "SLURM_ARRAY_TASK_ID" in outside.stderr


def test_the_kubernetes_indexed_job_shards_and_merge_sh_merges(cluster: Any) -> None:
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load((SCALE / "k8s-job.yaml").read_text(encoding="utf-8"))
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == 8
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"][-1].endswith("/k8s_shard.sh")
    names = {e["name"] for e in container["env"]}
    common = (SCALE / "common.sh").read_text(encoding="utf-8")
    assert all(f"${{{n}" in common for n in names - {"OPENAI_API_KEY"}), "every variable set is one common.sh reads"
    assert {e["value"] for e in container["env"] if e["name"] == "SHARDS"} == {str(spec["completions"])}
    env = recipe_env(cluster, "k8s")
    for index in range(SHARDS):
        done = run(["bash", str(SCALE / "k8s_shard.sh")], {**env, "JOB_COMPLETION_INDEX": str(index)})
        assert done.returncode == 0, done.stderr
    merged_equals_unsharded(cluster, env)


@pytest.mark.slow
def test_the_ray_driver_shards_on_a_local_ray_and_merge_sh_merges(cluster: Any) -> None:
    pytest.importorskip("ray")
    env = {**recipe_env(cluster, "ray"), "RAY_NUM_CPUS": "2"}
    env.pop("RAY_ADDRESS", None)
    done = run([sys.executable, str(SCALE / "ray_shards.py")], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if "/shard-" in line] == [
        f"{env['RUN']}/shard-{i}" for i in range(SHARDS)]
    merged_equals_unsharded(cluster, env)
