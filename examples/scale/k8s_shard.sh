#!/bin/bash
# One pod of the Kubernetes Indexed Job (k8s-job.yaml): its shard is JOB_COMPLETION_INDEX.
set -euo pipefail
HERE="${BOOKSUM_SCALE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source=common.sh
source "$HERE/common.sh"
run_shard "${JOB_COMPLETION_INDEX:?this runs as a pod of an Indexed Job (completionMode: Indexed)}"
