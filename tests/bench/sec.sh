#!/usr/bin/env bash
# tests/bench/sec.sh - the cost of security, for `make bench` (step "sec"):
# W1 (streaming write+fsync and reads) and W3 (4 KiB random reads, IOPS, p50,
# p99) against two clusters of the same layout started in this run, one
# secure (the cluster key: every connection authenticated; the OSTs check the
# MDS's capability on every object request) and one run --insecure (no
# handshake check, no capabilities), in alternating rounds (secure, insecure,
# secure, ...); prints each figure for both, their ratio and the cost in
# percent, and writes BUILD/bench/results-sec.json.
#
# Environment: BUILD, QUICK=1, RUNS (rounds; default 3, QUICK: 1), OSS,
# OST_PER_OSS, STRIPE_COUNT, STRIPE_SIZE, SERVER_ARGS (as tests/bench/run.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # repository root; BUILD, OUT
runs=${RUNS:-3}
[ -z "${RUNS:-}" ] && [ "${QUICK:-0}" = 1 ] && runs=1
layout=(--oss "${OSS:-2}" --ost-per-oss "${OST_PER_OSS:-2}")
read -r -a extra <<<"${SERVER_ARGS:-}"
layout+=("${extra[@]}")
quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)
D_ON=$OUT/sec-cluster-secure
D_OFF=$OUT/sec-cluster-insecure
LOCAL=$OUT/sec-local
cleanup() {
	deploy/weir-local down --dir "$D_ON" >/dev/null 2>&1 || true
	deploy/weir-local down --dir "$D_OFF" >/dev/null 2>&1 || true
	rm -rf "$D_ON" "$D_OFF" "$LOCAL"
}
trap cleanup EXIT
cleanup

echo "sec: W1 and W3 against a secure cluster (cluster key + OST capabilities) and an"
echo "     --insecure one, same layout, $runs alternating round(s)"
for ((k = 0; k < runs; k++)); do
	for mode in secure insecure; do
		d=$D_ON
		args=()
		if [ $mode = insecure ]; then
			d=$D_OFF
			args=(--insecure)
		fi
		rm -rf "$d"
		(
			unset WEIR_KEY_FILE WEIR_INSECURE
			eval "$(deploy/weir-local up --dir "$d" "${layout[@]}" ${args[@]+"${args[@]}"} 2>/dev/null)"
			"$BUILD/bin/weir" mkdir -p /bench
			"$BUILD/bin/weir" setstripe -c "${STRIPE_COUNT:-4}" -S "${STRIPE_SIZE:-1M}" /bench
			mkdir -p "$LOCAL"
			"$BUILD/bin/weir-bench" --mds "$WEIR_MDS" --local "$LOCAL" --only w1,w3 --runs 1 \
				${quick[@]+"${quick[@]}"} --json "$OUT/sec-$mode-$k.json" >"$OUT/sec-$mode-$k.log"
			deploy/weir-local down --dir "$d" >/dev/null 2>&1
		) || { echo "sec: the $mode round $k failed (see $OUT/sec-$mode-$k.log)"; exit 1; }
		rm -rf "$d" "$LOCAL"
	done
done

python3 - "$OUT" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def load(mode):
    vals = {}
    for k in range(runs):
        for r in json.load(open(f"{out}/sec-{mode}-{k}.json"))["results"]:
            if r["name"].startswith(("W1 ", "W3 ")) and "(local" not in r["name"]:
                vals.setdefault(r["name"], (r["unit"], []))[1].append(r["value"])
    return vals
on, off = load("secure"), load("insecure")
rows = []
print(f"  {'figure':<40} {'secure':>12} {'insecure':>12} {'unit':<6} {'ratio':>6} {'cost':>7}")
for name, (unit, v) in on.items():
    if name not in off:
        continue
    a, b = statistics.median(v), statistics.median(off[name][1])
    lower_is_better = unit == "us"
    ratio = a / b if b else 0.0
    cost = ((a / b - 1) if lower_is_better else (1 - a / b)) * 100 if b else 0.0
    rows.append({"name": name, "unit": unit, "secure": a, "insecure": b, "ratio": ratio,
                 "cost_percent": cost, "runs": len(v)})
    print(f"  {name:<40} {a:12.1f} {b:12.1f} {unit:<6} {ratio:6.3f} {cost:6.1f}%")
print("  cost: throughput lost, or latency added, with security on (negative: faster);"
      " medians of the rounds")
json.dump({"runs": runs, "results": rows}, open(f"{out}/results-sec.json", "w"), indent=1)
PY
echo "results: $OUT/results-sec.json"
