#!/usr/bin/env bash
# tests/bench/recovery.sh - recovery after a kill -9, for `make bench` (step
# "recovery"): for the MDS and for an OSS, how long from the kill -9 until
# the restarted server serves a client's request again, and the longest
# time one application call was held up (or the calls that failed).
#
# For each round and each server (mds, then oss0) it starts a cluster of
# its own (deploy/weir-local, 2 OSS x 1 OST), a probe client (tests/fault/
# weir_faultload.c --probe: a stat for the MDS, a 4 KiB read of a file whose
# one object is on OST0000 for the OSS, call after call) and two
# application processes (weir-faultload through libweir: write, fsync,
# rename, read back), kill -9s the server and restarts it at once
# (weir-local restart), and 3 s after it is back stops them. Figures, in ms
# from the kill:
#   port open             the restarted process accepts TCP (the reference:
#                         what any restart costs before Weir's own recovery)
#   first served request  the probe's first successful call that ended after
#                         the port opened (so its reply came from the new
#                         process); and that time less the port's, which is
#                         what Weir's own recovery adds (reconnection,
#                         registration, the recovery window)
#   longest stall         the longest single call of the applications
# and the application calls that failed (they should be 0). Medians over
# RUNS rounds (default 3; QUICK=1: 1). Writes BUILD/bench/results-recovery.json.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # repository root; BUILD, OUT
BIN=$(cd "$BUILD/bin" && pwd)
LOAD=$(cd "$BUILD/tests/fault" && pwd)/weir-faultload
runs=${RUNS:-3}
[ -z "${RUNS:-}" ] && [ "${QUICK:-0}" = 1 ] && runs=1
D=$OUT/recovery-cluster
W=$OUT/recovery-work
PIDS=()
cleanup() {
	touch "$W/stop" 2>/dev/null || true
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
	deploy/weir-local down --dir "$D" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
cleanup
rm -rf "$W"
mkdir -p "$W"
now_ns() { date +%s%N; }

# port_open_ms PORT T0_NS: ms from T0 until PORT on 127.0.0.1 accepts (-1 after 60 s)
port_open_ms() {
	python3 - "$1" "$2" <<'EOF'
import socket, sys, time
port, t0 = int(sys.argv[1]), int(sys.argv[2])
end = time.time() + 60
while time.time() < end:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        print("%.1f" % ((time.time_ns() - t0) / 1e6))
        sys.exit(0)
    except OSError:
        time.sleep(0.002)
    finally:
        s.close()
print(-1)
EOF
}

echo "recovery: kill -9 of the MDS and of an OSS under load, $runs round(s); ms from the kill"
for ((k = 0; k < runs; k++)); do
	for srv in mds oss0; do
		deploy/weir-local down --dir "$D" >/dev/null 2>&1 || true
		rm -rf "$D" "$W"
		mkdir -p "$W"
		PIDS=()
		eval "$(deploy/weir-local up --dir "$D" --bin "$BIN" --oss 2 --ost-per-oss 1 2>/dev/null)"
		export WEIR_MDS WEIR_KEY_FILE
		"$BIN/weir" mkdir -p /rec/app
		"$BIN/weir" setstripe -c 1 -i 0 /rec/probe
		head -c 4096 /dev/urandom >"$W/probe.data"
		"$BIN/weir" put "$W/probe.data" /rec/probe >/dev/null
		if [ $srv = mds ]; then
			"$LOAD" --api "$WEIR_MDS" --probe stat --probe-log "$W/probe.log" --stop "$W/stop" \
				/rec/probe 2>"$W/probe.err" &
		else
			"$LOAD" --api "$WEIR_MDS" --probe read --probe-log "$W/probe.log" --stop "$W/stop" \
				/rec/probe 2>"$W/probe.err" &
		fi
		PIDS+=($!)
		for i in 0 1; do
			"$LOAD" --api "$WEIR_MDS" --dir /rec/app --id $i --stop "$W/stop" \
				>"$W/app$i.json" 2>"$W/app$i.log" &
			PIDS+=($!)
		done
		sleep 2
		port=$(cat "$D/$srv.port")
		pid=$(cat "$D/$srv.pid")
		t_kill=$(now_ns)
		kill -9 "$pid"
		port_open_ms "$port" "$t_kill" >"$W/port.ms" &
		pp=$!
		deploy/weir-local restart --dir "$D" --bin "$BIN" "$srv" >"$W/restart.log" 2>&1 ||
			{ cat "$W/restart.log"; echo "recovery: $srv did not come back"; exit 1; }
		wait $pp
		sleep 3
		touch "$W/stop"
		for p in "${PIDS[@]}"; do wait "$p" || true; done
		PIDS=()
		python3 - "$srv" "$k" "$t_kill" "$(cat "$W/port.ms")" "$W" "$OUT/recovery-$srv-$k.json" <<'EOF'
import json, sys
srv, k, t_kill, port_ms, w, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
first = None
probe_failed = 0
for line in open(w + "/probe.log"):
    a, b, rc = (int(x) for x in line.split())
    if rc:
        probe_failed += 1
        continue
    # a reply after the new process listened came from it (the old one was long dead)
    if b > t_kill + port_ms * 1e6 and first is None:
        first = (b - t_kill) / 1e6
stall, failed = 0.0, 0
for i in (0, 1):
    d = json.loads(open("%s/app%d.json" % (w, i)).read().strip().splitlines()[-1])
    stall = max(stall, d["max_stall_ms"])
    failed += d["failed"] + d["wrong"]
r = {"server": srv, "round": k, "port_open_ms": port_ms,
     "first_served_ms": first if first is not None else -1,
     "weir_recovery_ms": first - port_ms if first is not None else -1,
     "longest_stall_ms": stall, "failed_app_calls": failed, "failed_probe_calls": probe_failed}
json.dump(r, open(out, "w"))
EOF
		deploy/weir-local down --dir "$D" >/dev/null 2>&1 || true
	done
done

python3 - "$OUT" "$runs" <<'EOF'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows, res = [], []
print("  %-44s %10s %10s" % ("figure (ms from the kill -9)", "MDS", "OSS"))
figs = [("port open (reference)", "port_open_ms"),
        ("first served request", "first_served_ms"),
        ("  of which after the port opened", "weir_recovery_ms"),
        ("longest application stall", "longest_stall_ms"),
        ("failed application calls (count)", "failed_app_calls"),
        ("failed probe calls (count)", "failed_probe_calls")]
for name, key in figs:
    vals = {}
    for srv in ("mds", "oss0"):
        v = [json.load(open("%s/recovery-%s-%d.json" % (out, srv, k)))[key] for k in range(runs)]
        vals[srv] = statistics.median(v)
        res.append({"name": "recovery %s: %s" % ("MDS" if srv == "mds" else "OSS", name),
                    "unit": "count" if "count" in name else "ms", "value": vals[srv],
                    "min": min(v), "max": max(v), "runs": runs})
    print("  %-44s %10.1f %10.1f" % (name, vals["mds"], vals["oss0"]))
print("  medians of %d round(s); a failed call is an application error the restart caused" % runs)
json.dump({"runs": runs, "results": res}, open(out + "/results-recovery.json", "w"), indent=1)
print("results: %s/results-recovery.json" % out)
EOF
