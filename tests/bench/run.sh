#!/usr/bin/env bash
# tests/bench/run.sh - `make bench`: start a local cluster, run weir-bench
# against it and against a plain local directory on the same disk, print the
# table and write BUILD/bench/results.json, stop the cluster.
#
# Environment: BUILD (default build), QUICK=1 (reduced sizes, ~2 minutes),
# OSS (2), OST_PER_OSS (2), STRIPE_COUNT (4), STRIPE_SIZE (1M), ONLY (comma
# list of ref,w1,w2,w3,w4,w5). Cold reads drop the page cache: run as root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DIR=$OUT/cluster
LOCAL=$OUT/local
deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR" "$LOCAL"
trap 'deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$LOCAL"' EXIT
eval "$(deploy/weir-local up --dir "$DIR" --oss "${OSS:-2}" --ost-per-oss "${OST_PER_OSS:-2}" 2>/dev/null)"
"$BUILD/bin/weir" mkdir -p /bench
"$BUILD/bin/weir" setstripe -c "${STRIPE_COUNT:-4}" -S "${STRIPE_SIZE:-1M}" /bench
echo "cluster: 1 MDS, ${OSS:-2} OSS x ${OST_PER_OSS:-2} OST, stripe count ${STRIPE_COUNT:-4}," \
	"stripe size ${STRIPE_SIZE:-1M}; reference directory $LOCAL"
args=(--mds "$WEIR_MDS" --local "$LOCAL" --json "$OUT/results.json")
[ "${QUICK:-0}" = 1 ] && args+=(--quick)
[ -n "${ONLY:-}" ] && args+=(--only "$ONLY")
"$BUILD/bin/weir-bench" "${args[@]}"
echo "results: $OUT/results.json"
