#!/bin/bash
# A Slurm array of compare shards: sbatch --export=ALL,BOOKSUM_SCALE_DIR="$PWD/examples/scale" \
#   examples/scale/slurm.sh, then sbatch --dependency=afterok:JOBID examples/scale/merge.sh.
# sbatch runs a copy of this file, so it finds common.sh through BOOKSUM_SCALE_DIR.
#SBATCH --array=0-7
#SBATCH --cpus-per-task=4
set -euo pipefail   # a failed compare fails the task, so afterok never starts the merge
HERE="${BOOKSUM_SCALE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source=common.sh
source "$HERE/common.sh"
run_shard "${SLURM_ARRAY_TASK_ID:?this runs as a Slurm array task (sbatch --array)}"
