#!/usr/bin/env bash
# tests/integration/test_mds_pause.sh - an MDS stopped (SIGSTOP) for longer
# than the lease time must not evict its clients when it continues: they
# could not renew while it was stopped. Two libweir application processes
# (tests/fault/weir_faultload.c: files written, fsynced, renamed, read back,
# a counter incremented under an fcntl lock) run against a cluster with
# --lease-time 2s --ost-timeout 4 (the OSS beats every 3 s) while the MDS is stopped for 5 s: no call
# of theirs fails, the MDS logs the stop and evicts nobody, and the counter
# adds up. Creates sent during the stop (the workers' and a few `weir put`
# of this script) succeed: the MDS that continues may run them before it
# has read the OSS's next heartbeat, and must not take the OST for dead for
# the silence of its own stop (it answered ENOSPC, "no OST is up", in CI's
# fault test). To make that order certain, the OSS is stopped too, from
# just before the MDS to 1 s after it continues. The MDS runs with
# WEIR_MDS_TEST_STALL_NOTICE_MS=500 (mds/lease.c): its lease thread notices
# the stop 0.5 s after the others run again, as it may under load.
#
# Installed by the Makefile as BUILD/tests/integration/test_mds_pause.
# Exit 0 = pass, 1 = fail.
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
LOAD=$BUILD/tests/fault/weir-faultload
[ -x "$LOAD" ] || { echo "test_mds_pause: no $LOAD (build first)"; exit 1; }

TMP=$(mktemp -d /tmp/weir-mds-pause-XXXXXX)
CL=$TMP/cluster
fails=0
PIDS=()
cleanup() {
	touch "$TMP/stop"
	[ -f "$CL/mds.pid" ] && kill -CONT "$(cat "$CL/mds.pid")" 2>/dev/null
	[ -f "$CL/oss0.pid" ] && kill -CONT "$(cat "$CL/oss0.pid")" 2>/dev/null
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null; done
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 20 "$TMP"/w*.log "$CL"/mds.log 2>/dev/null
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

out=$(WEIR_MDS_TEST_STALL_NOTICE_MS=500 "$SRCDIR/deploy/weir-local" up --dir "$CL" --oss 1 --ost-per-oss 1 --bin "$BIN" \
	--mds-arg --lease-time --mds-arg 2s --mds-arg --ost-timeout --mds-arg 4 \
	2>"$TMP/up.log") || { cat "$TMP/up.log"; exit 1; }
eval "$out"
export WEIR_MDS WEIR_KEY_FILE
"$BIN/weir" mkdir -p /p || exit 1
head -c 8 /dev/zero >"$TMP/zero"
"$BIN/weir" put "$TMP/zero" /p/counter >/dev/null || exit 1

for i in 0 1; do
	"$LOAD" --api "$WEIR_MDS" --dir /p --id $i --stop "$TMP/stop" --lockfile /p/counter \
		--lock-hold-ms 5 >"$TMP/w$i.json" 2>"$TMP/w$i.log" &
	PIDS+=($!)
done
sleep 2
echo "== SIGSTOP weir-oss for 6 s, weir-mds for 5 s (lease 2 s, OST timeout 4 s)"
# the OSS first: so no heartbeat of it waits in the MDS's socket, and the
# creates below are the first thing the MDS runs when it continues
kill -STOP "$(cat "$CL/oss0.pid")"
kill -STOP "$(cat "$CL/mds.pid")"
sleep 4
TOUCH=()
for i in 0 1 2 3 4 5; do
	"$BIN/weir" put "$TMP/zero" "/p/during-stop-$i" >/dev/null 2>"$TMP/touch$i.log" &
	TOUCH+=($!)
done
sleep 1
kill -CONT "$(cat "$CL/mds.pid")"
sleep 1
kill -CONT "$(cat "$CL/oss0.pid")"
for i in 0 1 2 3 4 5; do
	wait "${TOUCH[$i]}" || fail "a create sent during the stop failed: $(cat "$TMP/touch$i.log")"
done
sleep 3
touch "$TMP/stop"
incs=0
for i in 0 1; do
	if ! wait "${PIDS[$i]}"; then
		fail "worker $i: some calls failed or read wrong bytes: $(grep -E 'FAILED|WRONG|EXCLUSIVE' "$TMP/w$i.log" | head -n 3)"
	fi
	n=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().split("\n")[-2])["lock_incs"])' "$TMP/w$i.json" 2>/dev/null || echo 0)
	incs=$((incs + n))
done
PIDS=()
grep -q "lease expired: evicted" "$CL/mds.log" &&
	fail "the MDS evicted clients after its own stop: $(grep 'lease expired' "$CL/mds.log" | head -n 2)"
grep -q "did not run for" "$CL/mds.log" || fail "the MDS did not log its stop"
"$BIN/weir" get /p/counter "$TMP/counter" >/dev/null || fail "cannot read the counter"
counter=$(od -An -t u8 -N 8 "$TMP/counter" | tr -d ' ')
echo "counter $counter, increments $incs"
[ "$incs" -gt 0 ] || fail "no locked increment at all"
[ "$counter" = "$incs" ] || fail "the counter ($counter) is not the sum of the increments ($incs)"
if [ $fails -eq 0 ]; then
	echo "PASS: test_mds_pause"
	exit 0
fi
exit 1
