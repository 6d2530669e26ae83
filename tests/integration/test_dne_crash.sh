#!/usr/bin/env bash
# tests/integration/test_dne_crash.sh - two-MDT changes survive a kill of
# either MDS at every step (issue 16; mds/dtx.c; docs/dne.md step 3).
#
# A cluster of two MDTs (deploy/weir-local up --mds 2). For each change (a
# remote directory's mkdir, `weir mkdir -i 1`, and its rmdir; a hard link in
# / of an MDT1 file, `weir ln`, the removal of such a link, a rename of
# an MDT1 file into /, and a rename of an MDT0 file over such a link) and
# each fault point of mds/dtx.c (p_prepared,
# p_sent, p_committed, p_resolved on MDT0, the coordinator; k_prepared,
# k_replied, k_resolved, k_answered on MDT1, the participant: before and
# after each of its answers; the others at the points where their work
# differs from mkdir's), the MDS of that side is
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
# leaves before the restart finishes it, and the participant's holds are
# shown to keep a directory being removed and a name being moved from
# changes in the window between PREPARE and the commit. After the rounds,
# `mkdir -p` of existing remote directories succeeds.
#
# Installed by the Makefile as BUILD/tests/integration/test_dne_crash.
# Exit 0 = pass, 1 = fail.
set -u
# WEIR_DNE_CRASH_OPS: the changes to run, "mkdir rmdir link unlink rename"
# by default; "none"
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
# tombstones (an abort that overtook its PREPARE: mkdir at p_prepared makes
# one on MDT1) trimmed after 2 s instead of an hour
export WEIR_MDS_TEST_DTX_TOMB_TTL_S=2
# (--threads 16: a coordinator paused in a window below holds one event
# loop; another client's calls are served by the next ones)
UPARGS=(--mds 2 --oss 1 --ost-per-oss 1 --bin "$BIN" --mds-arg --recovery-window --mds-arg 2s
	--mds-arg --ost-timeout --mds-arg 3 --oss-arg --heartbeat --oss-arg 1s
	--mds-arg --threads --mds-arg 16)
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

# The participant's holds (mds/ns.c), with the coordinator paused between
# PREPARE and its commit ("p_sent sleep 2" in the fault file):
#  - a directory whose rmdir is prepared takes no new name (ENOENT): without
#    the hold, a file made there then is left in a removed directory;
#  - a name being renamed to another MDT is not removed meanwhile (EBUSY):
#    without the hold, the rename names a destroyed inode.
# Each call must come while the change is still running (it is paused).
printf 'x\n' >"$TMP/g"
paused() { # wait up to 10 s for MDT0's log to show the pause
	for _ in $(seq 100); do
		[ "$(grep -c 'test fault point p_sent: pausing' "$CL/mds.log")" -gt "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
W mkdir -i 1 /hd && W mkdir -i 1 /rs || fail "mkdir -i 1 /hd /rs"
np=$(grep -c 'test fault point p_sent: pausing' "$CL/mds.log")
echo "p_sent sleep 2" >"$FAULT"
timeout 60 "$BIN/weir" rmdir /hd >"$TMP/hold.out" 2>&1 &
cmd=$!
paused "$np" || fail "hold: the rmdir of /hd did not pause at p_sent"
out=$(W put "$TMP/g" /hd/x 2>&1) && fail "hold: a file made in /hd while its rmdir is prepared"
grep -q ENOENT <<<"$out" || fail "hold: put into /hd while its rmdir is prepared: $out, want ENOENT"
kill -0 "$cmd" 2>/dev/null || fail "hold: the rmdir of /hd ended before the put (the window was missed)"
wait "$cmd" || fail "hold: rmdir /hd: $(cat "$TMP/hold.out")"
W put "$TMP/g" /rs/h || fail "put /rs/h"
np=$(grep -c 'test fault point p_sent: pausing' "$CL/mds.log")
timeout 60 "$BIN/weir" mv /rs/h /hmoved >"$TMP/hold.out" 2>&1 &
cmd=$!
paused "$np" || fail "hold: the rename of /rs/h did not pause at p_sent"
out=$(W rm /rs/h 2>&1) && fail "hold: /rs/h removed while it is being renamed to MDT0"
grep -q EBUSY <<<"$out" || fail "hold: rm /rs/h while it is being renamed: $out, want EBUSY"
kill -0 "$cmd" 2>/dev/null || fail "hold: the rename of /rs/h ended before the rm (the window was missed)"
wait "$cmd" || fail "hold: mv /rs/h /hmoved: $(cat "$TMP/hold.out")"
rm -f "$FAULT"
W cat /hmoved 2>&1 | cmp -s - "$TMP/g" && ! W path2fid /rs/h >/dev/null 2>&1 ||
	fail "hold: after mv /rs/h /hmoved: /hmoved $(W cat /hmoved 2>&1), /rs/h $(W path2fid /rs/h 2>&1)"
W rm /hmoved || fail "rm /hmoved"

# a file put on MDT1: after a restart of MDT0, MDT1 learns the OST is up
# again within a heartbeat (until then: ENOSPC, no OST to place it on)
sput() {
	for _ in $(seq 50); do
		W put "$TMP/g" "$1" 2>"$TMP/setup.err" && return 0
		grep -q ENOSPC "$TMP/setup.err" || return 1
		sleep 0.2
	done
	return 1
}
n=0
for op in ${WEIR_DNE_CRASH_OPS:-mkdir rmdir link unlink rename replace}; do
	points="p_prepared p_sent p_committed p_resolved k_prepared k_replied k_resolved k_answered"
	# the others: the steps where their own work differs from mkdir's (a
	# hold dropped by an abort, also one a restart found; an inode destroyed,
	# a link or a name dropped by a commit; a link taken back by an abort),
	# for CI's budget
	case $op in
	rmdir) points="p_sent p_committed k_prepared k_resolved" ;;
	link) points="p_sent k_resolved" ;;
	unlink) points="k_resolved" ;;
	replace) points="p_committed" ;;
	rename) points="p_sent p_committed k_prepared k_resolved" ;;
	esac
	for point in $points; do
		n=$((n + 1))
		d=/d$n
		side=mds
		[ "${point#k_}" != "$point" ] && side=mds1
		# link, unlink, rename: an MDT1 file, named in / (MDT0 coordinates)
		case $op in
		rmdir) W mkdir -i 1 "$d" || { fail "$op $point: setup mkdir -i 1 $d"; continue; } ;;
		link | rename) sput /rs/f$n || { fail "$op $point: setup put /rs/f$n: $(cat "$TMP/setup.err")"; continue; } ;;
		unlink | replace)
			sput /rs/f$n && W ln /rs/f$n "$d" ||
				{ fail "$op $point: setup put /rs/f$n, ln to $d"; continue; }
			;;&
		replace) sput /s$n || { fail "$op $point: setup put /s$n"; continue; } ;;
		esac
		pid=$(cat "$CL/$side.pid")
		echo "$point" >"$FAULT" # armed: the side dies at that step
		case $op in
		mkdir) timeout 60 "$BIN/weir" mkdir -i 1 "$d" >"$TMP/op.out" 2>&1 & ;;
		rmdir) timeout 60 "$BIN/weir" rmdir "$d" >"$TMP/op.out" 2>&1 & ;;
		link) timeout 60 "$BIN/weir" ln /rs/f$n "$d" >"$TMP/op.out" 2>&1 & ;;
		unlink) timeout 60 "$BIN/weir" rm "$d" >"$TMP/op.out" 2>&1 & ;;
		rename) timeout 60 "$BIN/weir" mv /rs/f$n "$d" >"$TMP/op.out" 2>&1 & ;;
		replace) timeout 60 "$BIN/weir" mv /s$n "$d" >"$TMP/op.out" 2>&1 & ;;
		esac
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
		want=$(case $op in mkdir | link | rename) echo 1 ;; *) echo 0 ;; esac)
		[ $rc -ne 0 ] && want=$((1 - want))
		[ $there -eq $want ] ||
			fail "$op $point: command exit $rc ($(tr '\n' ' ' <"$TMP/op.out")), but $d is $([ $there -eq 1 ] && echo there || echo absent)"
		# a replace's source is there exactly when the old name is
		if [ $op = replace ] && W path2fid /s$n >/dev/null 2>&1 && [ $there -eq 0 ]; then
			fail "$op $point: /s$n is there and $d no longer names MDT1's file"
		fi
		# a rename's source name is there exactly when its target is not
		if [ $op = rename ] && W path2fid /rs/f$n >/dev/null 2>&1 && [ $there -eq 1 ]; then
			fail "$op $point: both /rs/f$n and $d are there"
		elif [ $op = rename ] && ! W path2fid /rs/f$n >/dev/null 2>&1 && [ $there -eq 0 ]; then
			fail "$op $point: neither /rs/f$n nor $d is there"
		fi
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
# the tombstone that the abort at mkdir's p_prepared left on MDT1 was made,
# then trimmed once 2 s old
case " ${WEIR_DNE_CRASH_OPS:-mkdir} " in *" mkdir "*) mk=1 ;; *) mk=0 ;; esac
if [ $mk -eq 1 ]; then
	grep -q "a tombstone refuses it" "$CL/mds1.log" ||
		fail "no tombstone on MDT1 after mkdir's abort at p_prepared"
	grep -q "tombstones\? older than 2 s trimmed" "$CL/mds1.log" ||
		fail "MDT1 did not trim its tombstones"
	grep -q "(tombstones 0)" "$TMP/check.out" ||
		fail "tombstones left: $(grep '^mdt_check:' "$TMP/check.out")"
fi

if [ "$fails" -ne 0 ]; then
	echo "test_dne_crash: $fails failure(s)"
	exit 1
fi
echo "test_dne_crash: ok ($n crash points)"
exit 0
