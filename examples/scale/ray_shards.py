"""compare shards as Ray tasks, from a driver on the cluster: ``python examples/scale/ray_shards.py``.

Each task runs one shard (``compare --shard I/N``) and exports its answers beside its records,
with the options every shard and the merge share (the variables of ``common.sh``: BOOKS, RUN,
SHARDS, MODEL, BASE_URL, JUDGE, JUDGE_BASE_URL, CACHE_ROOT, BOOKSUM, EXTRA_OPTIONS); then run
``merge.sh`` with the same variables. ``RAY_ADDRESS`` picks the cluster (unset: a local Ray).
"""

from __future__ import annotations

import os
import shlex
import subprocess

import ray

DEFAULTS = {
    "BOOKS": "/shared/books", "RUN": "/shared/run", "SHARDS": "8", "STRATEGIES": "hier,inc",
    "MODEL": "openai:qwen-7b", "BASE_URL": "http://gpu-head:8000/v1", "JUDGE": "openai:gpt-4o",
    "JUDGE_BASE_URL": "api", "CACHE_ROOT": "/tmp", "BOOKSUM": "booksum", "EXTRA_OPTIONS": "",
}


def setting(name: str) -> str:
    return os.environ.get(name) or DEFAULTS[name]


def common() -> list[str]:
    """The compare options of common.sh's COMMON."""
    return [setting("BOOKS"), "--strategies", setting("STRATEGIES"), "-m", setting("MODEL"),
            "--base-url", setting("BASE_URL"), "--judge", setting("JUDGE"),
            "--judge-base-url", setting("JUDGE_BASE_URL"), "--yes", "--no-plots",
            *shlex.split(setting("EXTRA_OPTIONS"))]


@ray.remote(num_cpus=1)
def shard(index: int, shards: int, options: list[str], booksum: list[str], run: str, cache_root: str) -> str:
    out, cache = f"{run}/shard-{index}", f"{cache_root}/booksum-shard-{index}"
    subprocess.run([*booksum, "compare", *options, "--shard", f"{index}/{shards}", "--out", out,
                    "--cache-dir", cache], check=True)
    subprocess.run([*booksum, "cache", "--cache-dir", cache, "--export", f"{out}/answers.jsonl"], check=True)
    return out


def main() -> None:
    shards = int(setting("SHARDS"))
    booksum = shlex.split(setting("BOOKSUM"))
    address = os.environ.get("RAY_ADDRESS") or None
    # a local Ray (no address) starts without its dashboard; RAY_NUM_CPUS sizes it
    ray.init(address=address, num_cpus=int(os.environ.get("RAY_NUM_CPUS") or 0) or None,
             include_dashboard=False if address is None else None)
    tasks = [shard.remote(i, shards, common(), booksum, setting("RUN"), setting("CACHE_ROOT")) for i in range(shards)]
    for out in ray.get(tasks):  # a failed shard raises here: rerun it, it resumes from its records
        print(out)
    ray.shutdown()


if __name__ == "__main__":
    main()
