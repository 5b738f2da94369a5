#!/bin/bash
# The merge, once every shard has finished: their answers into one local cache, their records
# into $RUN/merged, with the same options (common.sh) as the shards. Makes no model call when
# every shard's judge answers came along.
set -euo pipefail
HERE="${BOOKSUM_SCALE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source=common.sh
source "$HERE/common.sh"
IMPORTS=() MERGES=()
for ((i = 0; i < SHARDS; i++)); do
    IMPORTS+=(--import "$RUN/shard-$i/answers.jsonl")
    MERGES+=(--merge "$RUN/shard-$i")
done
CACHE="$CACHE_ROOT/booksum-merge"
"${BOOKSUM_CMD[@]}" cache --cache-dir "$CACHE" "${IMPORTS[@]}"
"${BOOKSUM_CMD[@]}" compare "${COMMON[@]}" "${MERGES[@]}" --out "$RUN/merged" --cache-dir "$CACHE"
