# The options every shard and the merge share, sourced by slurm.sh, k8s_shard.sh and merge.sh
# (ray_shards.py reads the same variables). One list: a merge given other options than its
# shards (a judge they did not have) is refused, so they come from one place.
# Every value can be set in the environment; the defaults are docs/scale.md's cluster.
: "${BOOKS:=/shared/books}"               # the book folder every shard and the merge are given
: "${RUN:=/shared/run}"                   # shard-I/ and merged/ are written here (shared storage)
: "${SHARDS:=8}"
: "${STRATEGIES:=hier,inc}"
: "${MODEL:=openai:qwen-7b}"
: "${BASE_URL:=http://gpu-head:8000/v1}"
: "${JUDGE:=openai:gpt-4o}"
: "${JUDGE_BASE_URL:=api}"                # api: the judge's provider's own API
: "${CACHE_ROOT:=/tmp}"                   # each shard's call cache: a local disk, never shared storage
read -r -a BOOKSUM_CMD <<< "${BOOKSUM:-booksum}"   # e.g. BOOKSUM="python -m booksum_app"
read -r -a EXTRA <<< "${EXTRA_OPTIONS:-}"          # more compare options, the same everywhere
COMMON=("$BOOKS" --strategies "$STRATEGIES" -m "$MODEL" --base-url "$BASE_URL"
        --judge "$JUDGE" --judge-base-url "$JUDGE_BASE_URL" --yes --no-plots ${EXTRA[@]+"${EXTRA[@]}"})

# run_shard I: compare part I of SHARDS into $RUN/shard-I, then export its answers beside it
run_shard() {
    local index=$1 out="$RUN/shard-$1" cache="$CACHE_ROOT/booksum-shard-$1"
    "${BOOKSUM_CMD[@]}" compare "${COMMON[@]}" --shard "$index/$SHARDS" --out "$out" --cache-dir "$cache"
    "${BOOKSUM_CMD[@]}" cache --cache-dir "$cache" --export "$out/answers.jsonl"
}
