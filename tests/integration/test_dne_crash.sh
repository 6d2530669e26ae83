#!/usr/bin/env bash
# tests/integration/test_dne_crash.sh - two-MDT changes survive a kill of
# either MDS at every step (issue 16; mds/dtx.c; docs/dne.md step 3).
#
# A cluster of two MDTs (deploy/weir-local up --mds 2). For each change (a
# remote directory's mkdir, `weir mkdir -i 1`, and its rmdir) and each fault
# point of mds/dtx.c (p_prepared, p_sent, p_committed, p_resolved on MDT0,
# the coordinator; k_prepared, k_replied, k_resolved, k_answered on MDT1, the
# participant: before and after each of its answers; rmdir at p_sent,
# p_committed, k_prepared and k_resolved), the MDS of that side is
# armed with that point (WEIR_MDS_TEST_DTX_CRASH_FILE). It _exits at that
# step, losing what it had not synced (as a power loss would:
# WEIR_MDS_TEST_LOSE_UNSYNCED=1, mds/kv.c), while the `weir` command runs the
# change. The dead MDS is started again and the command finishes (it resends
# to a restarted MDT0; it may fail when MDT1 died under it). Then:
#  - the crash happened where it was armed (the log says so);
#  - the outcome is whole: what the command answered is what the namespace
#    holds (success: made or removed; failure: as before);
#  - MDT0's sweep finishes what is left within 10 s;
#  - at the end, with the cluster stopped, mdt_check (tests/integration/
#    mdt_check.c) reads both MDTs and finds no dangling, orphan or doubly
#    named entry, no wrong link count, and no transaction record left.
# Before the rounds, the checker itself is shown to fail on what a crash
# leaves before the restart finishes it. After them, `mkdir -p` of existing
# remote directories succeeds.
#
# Installed by the Makefile as BUILD/tests/integration/test_dne_crash.
# Exit 0 = pass, 1 = fail.
set -u
# WEIR_DNE_CRASH_OPS: the changes to run, "mkdir rmdir" by default; "none"
# skips the test (.ci/run's sanitizer step, for its time budget: test_dne
# runs a remote mkdir and rmdir under the sanitizers there)
if [ "${WEIR_DNE_CRASH_OPS:-}" = none ]; then
	echo "test_dne_crash: skipped (WEIR_DNE_CRASH_OPS=none)"
	exit 77
fi

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
CHECK=$BUILD/tests/integration/mdt_check
[ -x "$CHECK" ] || { echo "test_dne_crash: no $CHECK (build first)"; exit 1; }
TMP=$(mktemp -d /tmp/weir-dnecrash-XXXXXX)
CL=$TMP/cluster
WL=$SRCDIR/deploy/weir-local
fails=0
cleanup() {
	"$WL" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 12 "$CL"/mds*.log 2>/dev/null
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
# Every MDS runs with the fault file (armed by writing a point into it) and
# loses what it did not sync at a kill; a short recovery window: a command
# killed at a fault point is a client the restarted MDT0 would otherwise
# wait for (twice the lease time); --ost-timeout 3: MDT1 and the OSS beat
# each second, so restarts are short
FAULT=$TMP/fault
export WEIR_MDS_TEST_DTX_CRASH_FILE=$FAULT WEIR_MDS_TEST_LOSE_UNSYNCED=1
UPARGS=(--mds 2 --oss 1 --ost-per-oss 1 --bin "$BIN" --mds-arg --recovery-window --mds-arg 2s
	--mds-arg --ost-timeout --mds-arg 3 --oss-arg --heartbeat --oss-arg 1s)
up() {
	local out
	out=$("$WL" up --dir "$CL" "${UPARGS[@]}" 2>"$TMP/up.log") ||
		{ cat "$TMP/up.log"; exit 1; }
	eval "$out"
	export WEIR_MDS WEIR_KEY_FILE
}
check() { # $1: what; the cluster must be down
	if ! "$CHECK" "$CL/mdt0" "$CL/mdt1" >"$TMP/check.out" 2>/dev/null; then
		fail "$1: mdt_check: $(grep -v '^20..-' "$TMP/check.out" | head -5)"
	fi
}
W() { "$BIN/weir" "$@"; }
# until no transaction is left: MDT0's sweep said "to finish" since its last
# start and not yet "every ... finished" (mds/dtx.c); at most 10 s
settle() {
	local deadline=$((SECONDS + 10))
	while [ $SECONDS -lt $deadline ] &&
		tac "$CL/mds.log" | sed '/==== weir-local: .* start:/q' |
		grep -m1 -E "dtx: (.* to finish|every two-MDT transaction finished)" |
		grep -q "to finish"; do
		sleep 0.3
	done
	[ $SECONDS -lt $deadline ] || fail "MDT0's sweep did not finish within 10 s"
}
# wait up to 10 s for pid $1 to end
gone() {
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

up
# the checker fails on what a crash leaves: a mkdir whose coordinator died
# after the participant prepared (p_sent), checked before any restart
echo p_sent >"$FAULT"
pid=$(cat "$CL/mds.pid")
WEIR_RECOVERY_TIMEOUT=1 timeout 20 "$BIN/weir" mkdir -i 1 /planted >/dev/null 2>&1
gone "$pid" || fail "MDT0 did not die at p_sent"
rm -f "$FAULT"
"$WL" down --dir "$CL" >/dev/null 2>&1
if "$CHECK" "$CL/mdt0" "$CL/mdt1" >"$TMP/check.out" 2>/dev/null; then
	fail "mdt_check passed a namespace with a transaction left half done"
else
	grep -q "dtx: MDT1 holds the record" "$TMP/check.out" &&
		grep -q "orphan: MDT1 directory" "$TMP/check.out" ||
		fail "mdt_check did not name the record and the orphan: $(cat "$TMP/check.out")"
fi
up # the restart finishes it (an abort): the final check covers it
settle

n=0
for op in ${WEIR_DNE_CRASH_OPS:-mkdir rmdir}; do
	points="p_prepared p_sent p_committed p_resolved k_prepared k_replied k_resolved k_answered"
	# rmdir: the steps where its own work differs from mkdir's (the hold
	# dropped by an abort, the inode destroyed by a commit), for CI's budget
	[ $op = rmdir ] && points="p_sent p_committed k_prepared k_resolved"
	for point in $points; do
		n=$((n + 1))
		d=/d$n
		side=mds
		[ "${point#k_}" != "$point" ] && side=mds1
		if [ $op = rmdir ]; then
			W mkdir -i 1 "$d" || { fail "$op $point: setup mkdir -i 1 $d"; continue; }
		fi
		pid=$(cat "$CL/$side.pid")
		echo "$point" >"$FAULT" # armed: the side dies at that step
		if [ $op = mkdir ]; then
			timeout 60 "$BIN/weir" mkdir -i 1 "$d" >"$TMP/op.out" 2>&1 &
		else
			timeout 60 "$BIN/weir" rmdir "$d" >"$TMP/op.out" 2>&1 &
		fi
		cmd=$!
		if ! gone "$pid"; then
			fail "$op $point: $side did not die at the fault point"
		elif ! grep -q "test fault point $point" "$CL/$side.log"; then
			fail "$op $point: $side died, but not at the fault point"
		fi
		rm -f "$FAULT"
		"$WL" restart --dir "$CL" "$side" 2>"$TMP/r.log" ||
			{ fail "$op $point: restart $side: $(cat "$TMP/r.log")"; continue; }
		wait "$cmd"
		rc=$?
		# what the command said is what the namespace holds
		# (there: the name leads to a directory of MDT1, sequence 0x300000400)
		if W path2fid "$d" 2>&1 | grep -q '\[0x300000400:'; then there=1; else there=0; fi
		want=$([ $op = mkdir ] && echo 1 || echo 0)
		[ $rc -ne 0 ] && want=$((1 - want))
		[ $there -eq $want ] ||
			fail "$op $point: command exit $rc ($(tr '\n' ' ' <"$TMP/op.out")), but $d is $([ $there -eq 1 ] && echo there || echo absent)"
		echo "  [$SECONDS s] $op $point: exit $rc, $d $([ $there -eq 1 ] && echo there || echo absent)"
		settle # the sweep finishes what is left, before the next fault
	done
done
# mkdir -p of a remote directory that exists: no error
W mkdir -i 1 /rp && W mkdir -p /rp || fail "mkdir -p of an existing remote directory"
W mkdir -p -i 1 /pp/a/b && W mkdir -p /pp/a/b || fail "mkdir -p -i 1 /pp/a/b, then again"
W rmdir /rp /pp/a/b || fail "rmdir of the remote directories of mkdir -p"
"$WL" down --dir "$CL" >/dev/null 2>&1
check "after the $n crash points"

if [ "$fails" -ne 0 ]; then
	echo "test_dne_crash: $fails failure(s)"
	exit 1
fi
echo "test_dne_crash: ok ($n crash points)"
exit 0
