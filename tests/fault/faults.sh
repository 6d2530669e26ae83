#!/usr/bin/env bash
# tests/fault/faults.sh - Weir's fault test: applications keep working while
# the servers under them are killed, restarted and paused.
#
# Usage: BUILD=build tests/fault/faults.sh [--rounds N] [--settle S]
#            [--api N] [--fuse N] [--shim N] [--no-pause] [--keep] [-h]
#
# Starts a cluster (deploy/weir-local: one MDS, two OSSs with one OST each,
# files striped over both, --lease-time 5s, --ost-timeout 5), mounts it with
# weir-fuse, and starts the application processes (tests/fault/
# weir_faultload.c): N through libweir (--api, default 3), N on the FUSE
# mount (--fuse, default 3), N through the LD_PRELOAD shim (--shim, default
# 2). Each writes, fsyncs, renames, reads back and checks its files, and
# increments a shared counter under an fcntl write lock. Then, --rounds
# times (default 1), it kill -9s and restarts the MDS, then each OSS, with
# --settle seconds (default 3) of load before each fault; then (unless
# --no-pause) it stops the MDS, then one OSS, with SIGSTOP for 7 s (past the
# lease and OST timeouts) and continues them. After a last settle it tells
# the workers to stop and checks:
#   - no application call failed (EINTR is reported apart and allowed);
#   - no byte read back was wrong;
#   - the shared counter equals the sum of every worker's locked increments
#     (the fcntl lock stayed exclusive between libweir, FUSE and shim
#     workers, across the restarts too);
# and reports the longest stall of one call and, for each fault, how long
# the restarted server took to serve again. Exit 0 if all holds, 1 if not,
# 77 (skip) when FUSE cannot be mounted here.
# `make faults` runs it with --rounds 3; `make test` runs the short form
# (tests/integration/test_faults.sh).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SRC=$(pwd)
BUILD=${BUILD:-build}
BUILD=$(cd "$BUILD" && pwd)
BIN=$BUILD/bin

rounds=1 settle=3 n_api=3 n_fuse=3 n_shim=2 pause=1 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--settle) settle=$2; shift ;;
	--api) n_api=$2; shift ;;
	--fuse) n_fuse=$2; shift ;;
	--shim) n_shim=$2; shift ;;
	--no-pause) pause=0 ;;
	--keep) keep=1 ;;
	-h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "faults.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

LOAD=$BUILD/tests/fault/weir-faultload
for f in "$LOAD" "$BIN/weir-mds" "$BIN/weir-oss" "$BIN/weir-fuse" "$BIN/weir" \
	"$BUILD/lib/libweir-preload.so"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "faults: $f is missing (build first: make)"; exit 1; }
done
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
	echo "faults: SKIP: not root and no fusermount3"
	exit 77
fi

T=$(mktemp -d /tmp/weir-faults-XXXXXX)
C=$T/cluster
MNT=$T/mnt
PIDS=()
cleanup() {
	touch "$T/stop"
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -CONT "$p" 2>/dev/null; done
	for f in "$C"/*.pid; do [ -f "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null; done
	sleep 0.5
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null; done
	if mountpoint -q "$MNT" 2>/dev/null; then
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	[ -n "${FUSE_PID:-}" ] && kill "$FUSE_PID" 2>/dev/null
	"$SRC/deploy/weir-local" down --dir "$C" >/dev/null 2>&1
	if [ $keep = 1 ]; then
		echo "faults: kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
stamp() { date -u +%H:%M:%S.%3N; }
say() { echo "faults: $(stamp) $*"; }

LEASE_S=5
OST_TIMEOUT_S=5
say "cluster in $C"
out=$("$SRC/deploy/weir-local" up --dir "$C" --bin "$BIN" --oss 2 --ost-per-oss 1 \
	--mds-arg --lease-time --mds-arg ${LEASE_S}s \
	--mds-arg --ost-timeout --mds-arg $OST_TIMEOUT_S 2>"$T/up.err") ||
	{ cat "$T/up.err"; echo "faults: FAIL: the cluster did not start"; exit 1; }
eval "$out"
export WEIR_MDS WEIR_KEY_FILE
"$BIN/weir" mkdir -p /faults || exit 1
"$BIN/weir" setstripe -c 2 -S 64K /faults || exit 1

mkdir -p "$MNT"
"$BIN/weir-fuse" "$MNT" -f -o "mds=$WEIR_MDS,key_file=$WEIR_KEY_FILE" 2>"$T/fuse.log" &
FUSE_PID=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
if ! mountpoint -q "$MNT"; then
	cat "$T/fuse.log"
	echo "faults: SKIP: weir-fuse did not mount"
	exit 77
fi
# One counter for every worker: fcntl locks are the MDS's through libweir,
# the shim and FUSE alike (weir-fuse passes the kernel's lock owner).
head -c 8 /dev/zero >"$MNT/faults/counter" || exit 1

# the workers
id=0
start_worker() { # MODE, then the command's environment and arguments
	local mode=$1
	shift
	"$@" --id $id --stop "$T/stop" >"$T/w$id.json" 2>"$T/w$id.log" &
	PIDS+=($!)
	echo "$mode" >"$T/w$id.mode"
	id=$((id + 1))
}
for ((i = 0; i < n_api; i++)); do
	start_worker api "$LOAD" --api "$WEIR_MDS" --dir /faults --lockfile /faults/counter
done
for ((i = 0; i < n_fuse; i++)); do
	start_worker fuse "$LOAD" --posix --dir "$MNT/faults" --lockfile "$MNT/faults/counter"
done
for ((i = 0; i < n_shim; i++)); do
	start_worker shim env LD_PRELOAD="$BUILD/lib/libweir-preload.so" WEIR_MOUNT=/weir \
		"$LOAD" --posix --dir /weir/faults --lockfile /weir/faults/counter
done
say "$id application processes: $n_api libweir, $n_fuse FUSE, $n_shim shim"

# serve_wait NAME: seconds until the restarted NAME serves again, measured
# from its kill (-1 if it did not within 60 s)
FAULTS=()
kill9_restart() {
	local srv=$1 pid t0 t1
	pid=$(cat "$C/$srv.pid")
	sleep "$settle"
	t0=$(now)
	kill -9 "$pid"
	say "kill -9 $srv (pid $pid)"
	sleep 0.5
	if ! "$SRC/deploy/weir-local" restart --dir "$C" --bin "$BIN" "$srv" >"$T/restart.log" 2>&1; then
		cat "$T/restart.log"
		say "FAIL: $srv did not come back"
		return 1
	fi
	t1=$(now)
	FAULTS+=("kill -9 $srv: back and serving (weir-local restart done) after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s")
	say "$srv restarted"
}
pause_server() {
	local srv=$1 secs=$2 pid
	pid=$(cat "$C/$srv.pid")
	sleep "$settle"
	say "SIGSTOP $srv for $secs s"
	kill -STOP "$pid"
	sleep "$secs"
	kill -CONT "$pid"
	say "SIGCONT $srv"
	FAULTS+=("SIGSTOP $srv for $secs s")
}

ok=1
for ((r = 1; r <= rounds; r++)); do
	say "round $r of $rounds"
	kill9_restart mds || ok=0
	kill9_restart oss0 || ok=0
	kill9_restart oss1 || ok=0
done
if [ $pause = 1 ]; then
	pause_server mds $((LEASE_S + 2))
	pause_server oss0 $((OST_TIMEOUT_S + 2))
fi
sleep "$settle"
say "stopping the workers"
touch "$T/stop"
deadline=$((SECONDS + 120))
for p in "${PIDS[@]}"; do
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	if kill -0 "$p" 2>/dev/null; then
		say "FAIL: worker pid $p still running 120 s after the stop; killed"
		kill -9 "$p"
		ok=0
	fi
	wait "$p" 2>/dev/null
done

# the results
failed=0 wrong=0 eintr=0 incs=0 calls=0 bytes=0 stall=0 stall_who=""
for ((i = 0; i < id; i++)); do
	line=$(tail -n 1 "$T/w$i.json")
	mode=$(cat "$T/w$i.mode")
	if [ -z "$line" ]; then
		say "FAIL: worker $i ($mode) reported nothing; its log:"
		tail -n 20 "$T/w$i.log"
		ok=0
		continue
	fi
	read -r f w e n c b s op < <(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["failed"], d["wrong"], d["eintr"], d["lock_incs"], d["calls"], d["bytes_verified"],
      d["max_stall_ms"], d["max_stall_op"])' "$line")
	printf 'faults: worker %d %-5s calls %6d failed %d wrong %d eintr %d lock increments %4d verified %5d MiB longest call %7.0f ms (%s)\n' \
		"$i" "$mode" "$c" "$f" "$w" "$e" "$n" $((b / 1048576)) "$s" "$op"
	if [ "$f" != 0 ] || [ "$w" != 0 ]; then
		grep -E "FAILED|WRONG|NOT EXCLUSIVE" "$T/w$i.log" | head -n 10 | sed 's/^/    /'
	fi
	failed=$((failed + f))
	wrong=$((wrong + w))
	eintr=$((eintr + e))
	incs=$((incs + n))
	calls=$((calls + c))
	bytes=$((bytes + b))
	if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$s" "$stall"; then
		stall=$s
		stall_who="worker $i ($mode), $op"
	fi
done
counter=$(od -An -t u8 -N 8 "$MNT/faults/counter" | tr -d ' ')
for f in ${FAULTS[@]+"${FAULTS[@]}"}; do echo "faults: $f"; done
echo "faults: $id processes, $calls calls, $((bytes / 1048576)) MiB read back and checked"
echo "faults: failed calls: $failed (EINTR apart: $eintr), wrong reads: $wrong"
echo "faults: lock counter (libweir + FUSE + shim) $counter, locked increments reported $incs"
echo "faults: longest stall of one call: $stall ms ($stall_who)"
[ "$failed" = 0 ] || ok=0
[ "$wrong" = 0 ] || ok=0
if [ "$counter" != "$incs" ]; then
	echo "faults: FAIL: the counter ($counter) is not the sum of the increments ($incs): the lock did not exclude"
	ok=0
fi
if [ "$incs" = 0 ]; then
	echo "faults: FAIL: no locked increment at all"
	ok=0
fi
if [ $ok = 1 ]; then
	echo "faults: PASS"
	exit 0
fi
keep=1
echo "faults: FAIL (logs kept in $T: w*.log, cluster/*.log, fuse.log)"
exit 1
