#!/usr/bin/env bash
# tests/bench/dne.sh - metadata over several MDTs, for `make bench` (step
# "dne", docs/dne.md step 5): W4 create, stat and unlink from 1, 4 and 16
# processes against clusters of 1, 2 and 4 MDTs, in one run.
#
# For each round and each MDT count M it starts a cluster of its own
# (deploy/weir-local up --mds M, OSS x OST_PER_OSS OSTs as the main bench),
# and weir-bench --dne-run M takes one sample: directories /bench/w4/d0..d15,
# d<r> made on MDT r % M (a remote directory, weir mkdir -i), process r of
# each phase working in d<r> only (mdtest -u with DNE's round-robin
# placement). Then weir-bench --only dne prints the medians per MDT count
# and the ratio of each to 1 MDT, and writes BUILD/bench/results-dne.json.
#
# A process makes its calls one after the other, so one process gains
# nothing from more MDTs; the ratios with 4 and 16 processes are the
# figure. On a machine with few cores every MDS shares them: run it where
# there are cores to spare for the ratios to mean scaling (docs/performance.md).
#
# Environment: BUILD (default build), QUICK=1 (4,000 files per phase instead
# of 20,000, one round), RUNS (rounds; default 3, QUICK: 1), DNE_MDTS (the
# MDT counts, default "1 2 4"; 1 must be among them for the ratios), OSS (2),
# OST_PER_OSS (2), SERVER_ARGS (more weir-local words, as run.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # repository root; BUILD, OUT
BIN=$(cd "$BUILD/bin" && pwd)
runs=${RUNS:-3}
[ -z "${RUNS:-}" ] && [ "${QUICK:-0}" = 1 ] && runs=1
D=$OUT/dne-cluster
SAMPLES=$OUT/dne.samples
cleanup() {
	deploy/weir-local down --dir "$D" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
cleanup
rm -f "$SAMPLES"
quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)
read -r -a extra <<<"${SERVER_ARGS:-}"
read -r -a mdts <<<"${DNE_MDTS:-1 2 4}"
echo "dne: $runs round(s) of clusters with ${mdts[*]} MDT(s), ${OSS:-2} OSS x ${OST_PER_OSS:-2} OST"
for ((k = 0; k < runs; k++)); do
	for m in "${mdts[@]}"; do
		cleanup
		if ! out=$(deploy/weir-local up --dir "$D" --mds "$m" --oss "${OSS:-2}" \
			--ost-per-oss "${OST_PER_OSS:-2}" --bin "$BIN" ${extra[@]+"${extra[@]}"} 2>"$OUT/dne-up.log"); then
			echo "dne: a cluster of $m MDTs did not start: $(tail -n 3 "$OUT/dne-up.log")"
			exit 1
		fi
		eval "$out"
		"$BIN/weir-bench" --mds "$WEIR_MDS" --dne-run "$m" --dne-samples "$SAMPLES" \
			${quick[@]+"${quick[@]}"}
	done
done
cleanup
"$BIN/weir-bench" --only dne --dne-samples "$SAMPLES" --json "$OUT/results-dne.json" \
	${quick[@]+"${quick[@]}"} ${RUNS:+--runs "$RUNS"}
