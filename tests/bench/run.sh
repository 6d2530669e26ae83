#!/usr/bin/env bash
# tests/bench/run.sh - `make bench`: start a local cluster, run weir-bench
# against it and against a plain local directory on the same disk, print the
# table and write BUILD/bench/results.json, stop the cluster.
#
# Environment: BUILD (default build), QUICK=1 (reduced sizes, ~2 minutes),
# OSS (2), OST_PER_OSS (2), STRIPE_COUNT (4), STRIPE_SIZE (1M), ONLY (comma
# list of ref,w1,w2,w3,w4,w5,mem,w6,scale,sec,recovery,mdt,dne,hsm), RUNS (each workload this many
# times, figures are medians; default 3, QUICK=1: 1). Cold reads drop the page
# cache: run as root. mem measures weir-mds's RSS after 1,000 and 1,000,000 (QUICK:
# 100,000) files and the client's RSS streaming a small and a large file.
# W6 runs W1 and W4 again through a FUSE mount and through the LD_PRELOAD
# shim (weir-bench --posix-dir), next to libweir's figures from this run.
# PEER=moosefs (optional) runs W6 on MooseFS too, first (tests/bench/peer-moosefs.sh:
# apt-get installs it when missing; master and 2 chunkservers in a network
# namespace, mfsmount from the root one; root only), and the fuse and shim
# lines print its figure and the ratio to it ("vs moosefs", results-moosefs.json);
# a failed install or mount prints "W6 moosefs: skipped (reason)" and goes on.
# scale runs first, on clusters of its own (same OSS/OST/stripe layout): for
# each of RUNS rounds, a fresh cluster whose servers run --threads 1, pinned
# with taskset to CPU 0, then a fresh one with --threads 2 on CPUs 0 and 1
# (SCALE_CPUS1, SCALE_CPUS2 override; no pinning without taskset or with fewer
# than 2 CPUs; SCALE_CLIENT_CPUS pins the clients, for machines with cores to
# spare); weir-bench --scale-run takes W4 stat (4 processes) and W3 against
# each, and the main weir-bench prints their table and ratio.
# SERVER_ARGS adds weir-local words to every cluster (e.g. server options
# through --mds-arg/--oss-arg); WEIR_POLL_US reaches the clients.
# dne is tests/bench/dne.sh: W4 create, stat and unlink from 1, 4 and 16
# processes, each in a directory of its own placed round-robin over the MDTs,
# against clusters of 1, 2 and 4 MDTs (clusters of its own), and the ratios.
# hsm is the S3 tier benchmark, tests/bench/hsm.sh (its own cluster and
# s3rver; restore and archive throughput against curl's), run last.
# sec is the cost of security, tests/bench/sec.sh: W1 and W3 against a cluster
# with a key and OST capabilities and one run --insecure (clusters of its own).
# recovery is tests/bench/recovery.sh: ms from a kill -9 of the MDS and of an
# OSS to the first request the restarted server serves, and the longest
# application stall (clusters of its own).
# mdt is weir-mdt-bench (tests/bench/mdt_bench.c): one MDT's create, lookup
# and unlink from 1, 2 and 4 threads in process (no RPC), with the MDS's
# parallel operations (pdirops) and with every change alone (--pdirops 0,
# the reference), files in one directory then in a directory per thread.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # repository root; BUILD, OUT
only=${ONLY:-}
# ONLY without hsm and sec for weir-bench; "hsm"/"sec" alone skip weir-bench and its cluster
wb_only=$(echo ",$only," | sed -e 's/,hsm,/,/g' -e 's/,sec,/,/g' -e 's/,recovery,/,/g' \
	-e 's/,mdt,/,/g' -e 's/,dne,/,/g' -e 's/^,*//' -e 's/,*$//')
want_hsm=0
{ [ -z "$only" ] || [[ ",$only," == *,hsm,* ]]; } && want_hsm=1
want_sec=0
{ [ -z "$only" ] || [[ ",$only," == *,sec,* ]]; } && want_sec=1
want_recovery=0
{ [ -z "$only" ] || [[ ",$only," == *,recovery,* ]]; } && want_recovery=1
want_mdt=0
{ [ -z "$only" ] || [[ ",$only," == *,mdt,* ]]; } && want_mdt=1
want_dne=0
{ [ -z "$only" ] || [[ ",$only," == *,dne,* ]]; } && want_dne=1
# weir-mdt-bench, both layouts (no cluster: an MDT in process)
mdt_bench() {
	local a=(--dir "$OUT/mdt" --threads 1,2,4)
	[ "${QUICK:-0}" = 1 ] && a+=(--quick)
	[ -n "${RUNS:-}" ] && a+=(--runs "$RUNS")
	"$BUILD/bin/weir-mdt-bench" "${a[@]}" || echo "mdt: failed"
	"$BUILD/bin/weir-mdt-bench" "${a[@]}" --private-dirs || echo "mdt: failed"
	rm -rf "$OUT/mdt"
}
if [ -n "$only" ] && [ -z "$wb_only" ]; then
	if [ "$want_sec" = 1 ]; then
		BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/sec.sh
	fi
	if [ "$want_recovery" = 1 ]; then
		BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/recovery.sh
	fi
	if [ "$want_mdt" = 1 ]; then
		mdt_bench
	fi
	if [ "$want_dne" = 1 ]; then
		BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/dne.sh
	fi
	if [ "$want_hsm" = 1 ]; then
		FRESH=1 BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/hsm.sh
	fi
	exit 0
fi
only=$wb_only
want_scale=0
{ [ -z "$only" ] || [[ ",$only," == *,scale,* ]]; } && want_scale=1
# does anything but scale need the main cluster?
main_only=$(echo ",$only," | sed -e 's/,scale,/,/g' -e 's/^,*//' -e 's/,*$//')
need_main=1
[ -n "$only" ] && [ -z "$main_only" ] && need_main=0
DIR=$OUT/cluster
SDIR=$OUT/scale-cluster
LOCAL=$OUT/local
deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
deploy/weir-local down --dir "$SDIR" >/dev/null 2>&1 || true
rm -rf "$DIR" "$SDIR" "$LOCAL"
MNT=$OUT/mnt
trap 'fusermount3 -u "$MNT" 2>/dev/null || true; deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true; deploy/weir-local down --dir "$SDIR" >/dev/null 2>&1 || true; rm -rf "$LOCAL"' EXIT
layout=(--oss "${OSS:-2}" --ost-per-oss "${OST_PER_OSS:-2}")
# SERVER_ARGS: more weir-local words for every cluster, e.g.
# SERVER_ARGS="--mds-arg --poll-us --mds-arg 0 --oss-arg --poll-us --oss-arg 0"
read -r -a extra <<<"${SERVER_ARGS:-}"
layout+=("${extra[@]}")

# Stripe /bench like every bench cluster.
bench_dir() {
	"$BUILD/bin/weir" mkdir -p /bench
	"$BUILD/bin/weir" setstripe -c "${STRIPE_COUNT:-4}" -S "${STRIPE_SIZE:-1M}" /bench
}

# ---- scale: servers on 1 core, then 2 (fresh clusters in SDIR)
SAMPLES=$OUT/scale.samples
rm -f "$SAMPLES"
pin_note="servers not pinned (threads only)"
pin=0
if [ "$want_scale" = 1 ]; then
	if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
		pin=1
		pin_note="every server thread pinned with taskset: 1 core = CPUs ${SCALE_CPUS1:-0},"
		pin_note+=" 2 cores = CPUs ${SCALE_CPUS2:-0,1}; clients not pinned"
	fi
	runs=${RUNS:-3}
	[ -z "${RUNS:-}" ] && [ "${QUICK:-0}" = 1 ] && runs=1
	squick=()
	[ "${QUICK:-0}" = 1 ] && squick=(--quick)
	cpin=()
	if [ -n "${SCALE_CLIENT_CPUS:-}" ]; then
		cpin=(taskset -c "$SCALE_CLIENT_CPUS")
		pin_note="${pin_note/clients not pinned/clients on CPUs $SCALE_CLIENT_CPUS}"
	fi
	echo "scale: $runs round(s) of a cluster with --threads 1 then --threads 2; $pin_note"
	for ((k = 0; k < runs; k++)); do
		for cores in 1 2; do
			deploy/weir-local down --dir "$SDIR" >/dev/null 2>&1 || true
			rm -rf "$SDIR"
			eval "$(deploy/weir-local up --dir "$SDIR" "${layout[@]}" \
				--mds-arg --threads --mds-arg "$cores" \
				--oss-arg --threads --oss-arg "$cores" 2>/dev/null)"
			if [ "$pin" = 1 ]; then
				cpus=${SCALE_CPUS1:-0}
				[ "$cores" = 2 ] && cpus=${SCALE_CPUS2:-0,1}
				for f in "$SDIR"/mds.pid "$SDIR"/oss*.pid; do
					for t in /proc/"$(cat "$f")"/task/*; do
						taskset -p -c "$cpus" "${t##*/}" >/dev/null 2>&1 || true
					done
				done
			fi
			bench_dir
			${cpin[@]+"${cpin[@]}"} "$BUILD/bin/weir-bench" --mds "$WEIR_MDS" \
				--scale-run "$cores" --scale-samples "$SAMPLES" ${squick[@]+"${squick[@]}"}
		done
	done
	deploy/weir-local down --dir "$SDIR" >/dev/null 2>&1 || true
	rm -rf "$SDIR"
fi

args=(--json "$OUT/results.json" --scale-samples "$SAMPLES" --scale-pin "$pin_note")
[ -n "${RUNS:-}" ] && args+=(--runs "$RUNS")
[ "${QUICK:-0}" = 1 ] && args+=(--quick)
[ -n "$only" ] && args+=(--only "$only")
if [ "$need_main" = 1 ]; then
	eval "$(deploy/weir-local up --dir "$DIR" "${layout[@]}" 2>/dev/null)"
	bench_dir
	echo "cluster: 1 MDS, ${OSS:-2} OSS x ${OST_PER_OSS:-2} OST, stripe count ${STRIPE_COUNT:-4}," \
		"stripe size ${STRIPE_SIZE:-1M}; reference directory $LOCAL"
	args+=(--mds "$WEIR_MDS" --local "$LOCAL" --cluster-dir "$DIR")
fi
"$BUILD/bin/weir-bench" "${args[@]}"
results=("$OUT/results.json")

# ---- W6: the ways in (needs W1/W4 figures above for the ratios)
if [ -z "$only" ] || [[ ",$only," == *,w6,* ]]; then
	w6=(--ref-json "$OUT/results.json")
	[ "${QUICK:-0}" = 1 ] && w6+=(--quick)
	[ -n "${RUNS:-}" ] && w6+=(--runs "$RUNS")
	# a peer filesystem's W6, same arguments, for the "vs PEER" column
	peer=()
	case "${PEER:-}" in
	"") ;;
	moosefs)
		BUILD=$BUILD tests/bench/peer-moosefs.sh "${w6[@]}" || echo "W6 moosefs: failed"
		if [ -f "$OUT/results-moosefs.json" ]; then
			peer=(--peer-json "$OUT/results-moosefs.json" --peer-label moosefs)
			results+=("$OUT/results-moosefs.json")
		fi
		;;
	*) echo "W6 $PEER: skipped (unknown PEER; known: moosefs)" ;;
	esac
	mkdir -p "$MNT"
	# under /bench, striped as libweir's W1 files are (a file elsewhere has the
	# filesystem's default layout, one stripe: not the same measurement)
	if "$BUILD/bin/weir-fuse" "$MNT" -o "mds=$WEIR_MDS" 2>"$OUT/fuse.err"; then
		"$BUILD/bin/weir-bench" --posix-dir "$MNT/bench/w6-fuse" --label fuse \
			--json "$OUT/results-fuse.json" "${w6[@]}" ${peer[@]+"${peer[@]}"} || echo "W6 fuse: failed"
		results+=("$OUT/results-fuse.json")
		fusermount3 -u "$MNT" || true
	else
		echo "W6 fuse: skipped (cannot mount: $(cat "$OUT/fuse.err"))"
	fi
	LD_PRELOAD=$BUILD/lib/libweir-preload.so WEIR_MOUNT=/weirbench \
		"$BUILD/bin/weir-bench" --posix-dir /weirbench/bench/w6-shim --label shim \
		--json "$OUT/results-shim.json" "${w6[@]}" ${peer[@]+"${peer[@]}"} || echo "W6 shim: failed"
	results+=("$OUT/results-shim.json")
fi

# ---- the cost of security (clusters of its own: stop this one first)
if [ "$want_sec" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/sec.sh || echo "sec: failed"
	results+=("$OUT/results-sec.json")
fi

# ---- recovery after a kill -9 (clusters of its own: stop this one first)
if [ "$want_recovery" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/recovery.sh || echo "recovery: failed"
	results+=("$OUT/results-recovery.json")
fi

# ---- one MDT in process: pdirops against the exclusive lock (stop the cluster first)
if [ "$want_mdt" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	mdt_bench
fi

# ---- several MDTs (clusters of its own: stop this one first)
if [ "$want_dne" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/dne.sh || echo "dne: failed"
	results+=("$OUT/results-dne.json")
fi

# ---- the S3 tier (its own cluster: stop this one first)
if [ "$want_hsm" = 1 ]; then
	fusermount3 -u "$MNT" 2>/dev/null || true
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
	BUILD=$BUILD QUICK=${QUICK:-0} tests/bench/hsm.sh || echo "hsm: failed"
fi
echo "results: ${results[*]}"
