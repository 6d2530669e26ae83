#!/usr/bin/env bash
# tests/bench/run.sh - `make bench`: start a local cluster, run weir-bench
# against it and against a plain local directory on the same disk, print the
# table and write BUILD/bench/results.json, stop the cluster.
#
# Environment: BUILD (default build), QUICK=1 (reduced sizes, ~2 minutes),
# OSS (2), OST_PER_OSS (2), STRIPE_COUNT (4), STRIPE_SIZE (1M), ONLY (comma
# list of ref,w1,w2,w3,w4,w5,mem,w6,hsm), RUNS (each workload this many times,
# figures are medians; default 3, QUICK=1: 1). Cold reads drop the page cache:
# run as root. mem measures weir-mds's RSS after 1,000 and 1,000,000 (QUICK:
# 100,000) files and the client's RSS streaming a small and a large file.
# W6 runs W1 and W4 again through a FUSE mount and through the LD_PRELOAD
# shim (weir-bench --posix-dir), next to libweir's figures from this run.
# hsm is the S3 tier benchmark, tests/bench/hsm.sh (its own cluster and
# s3rver; restore and archive throughput against curl's), run last.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
only=${ONLY:-}
# ONLY without hsm for weir-bench; "hsm" alone skips weir-bench and its cluster
wb_only=$(echo ",$only," | sed -e 's/,hsm,/,/g' -e 's/^,*//' -e 's/,*$//')
want_hsm=0
{ [ -z "$only" ] || [[ ",$only," == *,hsm,* ]]; } && want_hsm=1
if [ -n "$only" ] && [ -z "$wb_only" ]; then
	FRESH=1 BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/hsm.sh
	exit
fi
only=$wb_only
DIR=$OUT/cluster
LOCAL=$OUT/local
deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR" "$LOCAL"
MNT=$OUT/mnt
trap 'fusermount3 -u "$MNT" 2>/dev/null || true; deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$LOCAL"' EXIT
eval "$(deploy/weir-local up --dir "$DIR" --oss "${OSS:-2}" --ost-per-oss "${OST_PER_OSS:-2}" 2>/dev/null)"
"$BUILD/bin/weir" mkdir -p /bench
"$BUILD/bin/weir" setstripe -c "${STRIPE_COUNT:-4}" -S "${STRIPE_SIZE:-1M}" /bench
echo "cluster: 1 MDS, ${OSS:-2} OSS x ${OST_PER_OSS:-2} OST, stripe count ${STRIPE_COUNT:-4}," \
	"stripe size ${STRIPE_SIZE:-1M}; reference directory $LOCAL"
args=(--mds "$WEIR_MDS" --local "$LOCAL" --json "$OUT/results.json" --cluster-dir "$DIR")
[ -n "${RUNS:-}" ] && args+=(--runs "$RUNS")
[ "${QUICK:-0}" = 1 ] && args+=(--quick)
[ -n "$only" ] && args+=(--only "$only")
"$BUILD/bin/weir-bench" "${args[@]}"
echo "results: $OUT/results.json"

# ---- W6: the ways in (needs W1/W4 figures above for the ratios)
if [ -z "$only" ] || [[ ",$only," == *,w6,* ]]; then
	w6=(--ref-json "$OUT/results.json")
	[ "${QUICK:-0}" = 1 ] && w6+=(--quick)
	[ -n "${RUNS:-}" ] && w6+=(--runs "$RUNS")
	mkdir -p "$MNT"
	if "$BUILD/bin/weir-fuse" "$MNT" -o "mds=$WEIR_MDS" 2>"$OUT/fuse.err"; then
		"$BUILD/bin/weir-bench" --posix-dir "$MNT/w6-fuse" --label fuse \
			--json "$OUT/results-fuse.json" "${w6[@]}" || echo "W6 fuse: failed"
		fusermount3 -u "$MNT" || true
	else
		echo "W6 fuse: skipped (cannot mount: $(cat "$OUT/fuse.err"))"
	fi
	LD_PRELOAD=$BUILD/lib/libweir-preload.so WEIR_MOUNT=/weirbench \
		"$BUILD/bin/weir-bench" --posix-dir /weirbench/w6-shim --label shim \
		--json "$OUT/results-shim.json" "${w6[@]}" || echo "W6 shim: failed"
fi

# ---- the S3 tier (its own cluster: stop this one first)
if [ "$want_hsm" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/hsm.sh || echo "hsm: failed"
fi
