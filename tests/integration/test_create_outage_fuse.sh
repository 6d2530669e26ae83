#!/usr/bin/env bash
# tests/integration/test_create_outage_fuse.sh - creates through weir-fuse
# while one OSS is down (kill -9) and the MDS still counts its OST up (issue
# 14): every one-stripe file written by the shell is there with its bytes
# (none is left empty on the dead OST, answering EIO), and a two-stripe
# create either works (on the OST that serves) or fails leaving no file.
# Then a signal to a caller waiting for the MDS ends its wait (FUSE_INTERRUPT):
# with the MDS dying inside the call (its fault hook), rename, symlink, link
# and mknod; with it killed before, statfs, opendir, readdir, rmdir, setattr,
# readlink, the four xattr calls, fsync, fsyncdir, fallocate and lseek each
# come back within seconds, not when the MDS does; after its restart the
# mount works.
#
# Installed by the Makefile as BUILD/tests/integration/test_create_outage_fuse
# (see test_fuse.sh). Exit 0 = pass, 1 = fail, 77 = skipped (no usable /dev/fuse).
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
. "$SRCDIR/tests/lib/fuse.sh"

skip() {
	echo "SKIP: $*"
	exit 77
}
[ -x "$BIN/weir-fuse" ] || { echo "test_create_outage_fuse: no $BIN/weir-fuse (build first)"; exit 1; }
[ -c /dev/fuse ] || skip "no /dev/fuse"
{ exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened by uid $(id -u)"
exec 9>&-
grep -qw fuse /proc/filesystems || skip "the kernel has no fuse filesystem"
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
	skip "not root and no fusermount3"
fi

TMP=$(mktemp -d /tmp/weir-outage-fuse-XXXXXX)
CL=$TMP/cluster
MNT=$TMP/mnt
M2=$TMP/mnt2
mkdir -p "$MNT" "$M2"
FUSE_PID=""
FUSE2_PID=""
export WEIR_LOG=$TMP/fuse.log WEIR_LOG_LEVEL=${WEIR_LOG_LEVEL:-notice}
FAULT=$TMP/mds.fault
export WEIR_MDS_FAULT_FILE=$FAULT # the MDS inherits it; inert until the file is written
fails=0

cleanup() {
	local rc=$?
	cd /
	for m in "$MNT" "$M2"; do
		if grep -q " $m " /proc/mounts 2>/dev/null; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for p in $FUSE_PID $FUSE2_PID; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null
			sleep 0.5
			kill -KILL "$p" 2>/dev/null
		fi
	done
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 20 "$TMP"/fuse*.log "$TMP"/fuse*.err "$CL"/*.log 2>/dev/null
	fi
	if [ "${TH_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT

out=$("$SRCDIR/deploy/weir-local" up --dir "$CL" --oss 2 --ost-per-oss 1 --bin "$BIN" \
	2>"$TMP/up.log") ||
	{ cat "$TMP/up.log"; echo "test_create_outage_fuse: cluster did not start"; exit 1; }
eval "$out"
[ -n "${WEIR_MDS:-}" ] || { echo "test_create_outage_fuse: no WEIR_MDS from weir-local"; exit 1; }

fuse_mount "$MNT" "$TMP/fuse.err" "mds=$WEIR_MDS"
rc=$?
FUSE_PID=$FUSE_MOUNT_PID
[ "$rc" -eq 0 ] || { echo "test_create_outage_fuse: not mounted"; exit 1; }
mkdir "$MNT/s" && "$BIN/weir" --mds "$WEIR_MDS" setstripe -c 2 "$MNT/s" >/dev/null 2>&1 ||
	"$BIN/weir" --mds "$WEIR_MDS" setstripe -c 2 /s >/dev/null 2>&1 || true
echo before >"$MNT/before" || fails=$((fails + 1))

# kill -9 one OSS: the MDS counts its OST up for --ost-timeout (15 s)
pid=$(cat "$CL/oss1.pid" 2>/dev/null)
[ -n "$pid" ] && kill -KILL "$pid" || { echo "test_create_outage_fuse: no oss1 pid"; exit 1; }
sleep 0.2

ok=0
for i in 0 1 2 3 4 5 6 7 8 9; do
	f=$MNT/outage$i
	if ! echo "hello$i" >"$f" 2>>"$TMP/sh.err"; then
		echo "  $f: the write failed: $(tail -n 1 "$TMP/sh.err")"
		fails=$((fails + 1))
		continue
	fi
	got=$(cat "$f" 2>&1)
	if [ "$got" != "hello$i" ]; then
		echo "  $f: read back '$got'"
		fails=$((fails + 1))
		continue
	fi
	ok=$((ok + 1))
done
echo "  10 one-stripe files through the mount with an OSS down: $ok fine"

t0=$(date +%s)
if echo two >"$MNT/s/two" 2>>"$TMP/sh.err"; then
	got=$(cat "$MNT/s/two" 2>&1)
	[ "$got" = two ] || { echo "  s/two: read back '$got'"; fails=$((fails + 1)); }
	echo "  a two-stripe file with an OSS down: written after $(($(date +%s) - t0)) s"
else
	if [ -e "$MNT/s/two" ]; then
		echo "  s/two: the create failed and left a file"
		fails=$((fails + 1))
	fi
	echo "  a two-stripe file with an OSS down: failed cleanly after $(($(date +%s) - t0)) s"
fi

# ---- the MDS killed: a signal ends the wait of each operation
echo "== MDS killed: a signal to the caller ends each operation's wait"
"$SRCDIR/deploy/weir-local" restart --dir "$CL" --bin "$BIN" oss1 >"$TMP/restart.log" 2>&1 ||
	{ cat "$TMP/restart.log"; echo "test_create_outage_fuse: oss1 did not restart"; exit 1; }
# A mount that trusts names, "no such name" and attributes for 10 min: the
# calls below reach weir-fuse as the operation named, not as the LOOKUP or
# GETATTR before it (interruptible already).
WEIR_LOG=$TMP/fuse2.log fuse_mount "$M2" "$TMP/fuse2.err" \
	"mds=$WEIR_MDS,entry_timeout=600,attr_timeout=600,negative_timeout=600"
rc=$?
FUSE2_PID=$FUSE_MOUNT_PID
[ "$rc" -eq 0 ] || { echo "test_create_outage_fuse: $M2 not mounted"; exit 1; }
I=$M2/i
mkdir "$I" "$I/e" "$I/d" && echo data >"$I/f" && echo g >"$I/g" && echo r >"$I/r" &&
	ln -s f "$I/l" &&
	for w in w1 w2 w3; do echo "$w" >"$I/$w" || exit 1; done ||
	{ echo "test_create_outage_fuse: setting up $I failed"; exit 1; }
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.a", b"1")' "$I/f" 2>/dev/null

# Is process $1 gone (exited, or a zombie)?
gone() {
	local st
	st=$(sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}
# intr_pid NAME SIG PID: PID waits in a call for the MDS; 1 s on, SIG must end
# it within 3 s (FUSE_INTERRUPT), not at the MDS's return.
stuck=()
intr_pid() {
	local name=$1 sig=$2 pid=$3 i
	sleep 1
	if gone "$pid"; then
		wait "$pid" 2>/dev/null
		echo "  $name: ended without a signal (exit $?) while the MDS was down"
		fails=$((fails + 1))
		return
	fi
	kill -"$sig" "$pid" 2>/dev/null
	for ((i = 0; i < 30; i++)); do
		gone "$pid" && break
		sleep 0.1
	done
	if gone "$pid"; then
		wait "$pid" 2>/dev/null
		printf '  %-44s SIG%s: gone in %s s\n' "$name" "$sig" "$(awk -v i="$i" 'BEGIN { print i / 10 }')"
	else
		echo "  $name: still waiting 3 s after SIG$sig (the MDS is down)"
		stuck+=("$pid")
		fails=$((fails + 1))
	fi
}
# intr NAME SIG CMD...: CMD in the background, then intr_pid.
intr() {
	local name=$1 sig=$2
	shift 2
	"$@" >/dev/null 2>&1 &
	intr_pid "$name" "$sig" $! 2>/dev/null # (no "Killed" line from bash)
}
restart_mds() {
	"$SRCDIR/deploy/weir-local" restart --dir "$CL" --bin "$BIN" mds >"$TMP/restart.log" 2>&1 ||
		{ cat "$TMP/restart.log"; echo "test_create_outage_fuse: the MDS did not restart"; exit 1; }
}
# The kernel sends a LOOKUP of the new name before a rename, symlink, link or
# mknod (it always revalidates it), which is where a call waits when the MDS
# is gone already. To reach the operation's own wait, the MDS dies inside it,
# after its commit and before its reply (its fault hook): the operation is
# done, but the caller does not know; a signal ends its wait.
# in_op NAME WIRE_OP SIG CMD...: CMD with the MDS dying in WIRE_OP, then intr_pid.
in_op() {
	local name=$1 op=$2 sig=$3 mds i
	shift 3
	mds=$(cat "$CL/mds.pid" 2>/dev/null)
	echo "$op" >"$FAULT"
	"$@" >/dev/null 2>&1 &
	local pid=$!
	for ((i = 0; i < 300; i++)); do # (after a restart: the MDS's recovery window)
		gone "$mds" && break
		sleep 0.1
	done
	if ! gone "$mds"; then
		echo "  $name: the MDS's fault hook did not fire in 30 s"
		fails=$((fails + 1))
		rm -f "$FAULT"
		wait "$pid"
		return
	fi
	intr_pid "$name, the MDS died in it after $(awk -v i="$i" 'BEGIN { print i / 10 }') s" \
		"$sig" "$pid" 2>/dev/null
	restart_mds
}
in_op "rename (mv)" 12 TERM mv "$I/r" "$I/r2"
in_op "symlink (ln -s)" 17 KILL ln -s x "$I/s1"
in_op "link (ln)" 16 TERM ln "$I/f" "$I/h1"
in_op "mknod (mkfifo)" 19 KILL mkfifo "$I/p1"

# With the MDS killed before the call: into the kernel's caches every name,
# and the names to be made.
stat "$I" "$I"/* >/dev/null && ls -la "$I" >/dev/null
stat "$I/b" "$I/b2" "$I/s" "$I/h" "$I/p" >/dev/null 2>&1

# Callers that hold a descriptor open from before the outage: each opens
# ARG2, writes a byte to a file, says ready (GO.ready) and waits for GO.
HOLD='import os, sys, time
op, path, go = sys.argv[1:4]
if op in ("readdir", "fsyncdir"):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
else:
    fd = os.open(path, os.O_RDWR)
    os.pwrite(fd, b"x", 0)
open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.02)
if op == "fsync":
    os.fsync(fd)
elif op == "fallocate":
    os.posix_fallocate(fd, 0, 1 << 20)
elif op == "lseek":
    os.lseek(fd, 0, os.SEEK_DATA)
elif op == "readdir":
    os.listdir(fd)
elif op == "fsyncdir":
    os.fsync(fd)'
declare -A hold
for h in "fsync $I/w1" "fallocate $I/w2" "lseek $I/w3" "readdir $I/d" "fsyncdir $I/d"; do
	set -- $h
	python3 -c "$HOLD" "$1" "$2" "$TMP/go.$1" 2>/dev/null &
	hold[$1]=$!
done
for ((i = 0; i < 100; i++)); do
	[ "$(ls "$TMP"/go.*.ready 2>/dev/null | wc -l)" -eq 5 ] && break
	sleep 0.1
done

mds_pid=$(cat "$CL/mds.pid" 2>/dev/null)
[ -n "$mds_pid" ] && kill -KILL "$mds_pid" || { echo "test_create_outage_fuse: no mds pid"; exit 1; }
sleep 0.2

PYOP='import os, sys; getattr(os, sys.argv[1])(*sys.argv[2:])'
intr "mv (the LOOKUP before RENAME)" TERM mv "$I/g" "$I/b"
intr "statfs (stat -f)" TERM stat -f "$I"
intr "opendir (ls)" TERM ls "$I"
intr "ln -s (the LOOKUP before SYMLINK)" KILL ln -s x "$I/s"
intr "ln (the LOOKUP before LINK)" KILL ln "$I/f" "$I/h"
intr "mkfifo (the LOOKUP before MKNOD)" TERM mkfifo "$I/p"
intr "rmdir" KILL rmdir "$I/e"
intr "setattr (chmod)" TERM chmod 600 "$I/f"
intr "readlink" KILL readlink "$I/l"
intr "getxattr" KILL python3 -c "$PYOP" getxattr "$I/f" user.a
intr "listxattr" TERM python3 -c "$PYOP" listxattr "$I/f"
intr "setxattr" KILL python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.b", b"2")' "$I/f"
intr "removexattr" TERM python3 -c "$PYOP" removexattr "$I/f" user.a
for op in fsync fallocate lseek readdir fsyncdir; do
	: >"$TMP/go.$op"
	intr_pid "$op (open before)" KILL "${hold[$op]}" 2>/dev/null
done
# a handled signal: the call returns EINTR and the program goes on
python3 -c 'import os, signal, sys
def alarm(sig, frame):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
signal.alarm(1)
try:
    os.rename(sys.argv[1], sys.argv[2])
except TimeoutError:
    sys.exit(3)' "$I/g" "$I/b2" 2>/dev/null &
pid=$!
for ((i = 0; i < 40; i++)); do
	gone "$pid" && break
	sleep 0.1
done
if gone "$pid"; then
	wait "$pid"
	rc=$?
	if [ "$rc" -eq 3 ]; then
		echo "  mv under SIGALRM with a handler: EINTR after $(awk -v i="$i" 'BEGIN { print i / 10 }') s, program went on"
	else
		echo "  mv under SIGALRM with a handler: exit $rc, not the handler's 3"
		fails=$((fails + 1))
	fi
else
	echo "  mv under SIGALRM with a handler: still waiting after 4 s (the MDS is down)"
	stuck+=("$pid")
	fails=$((fails + 1))
fi

restart_mds
for pid in "${stuck[@]}"; do
	for ((i = 0; i < 600; i++)); do
		gone "$pid" && break
		sleep 0.1
	done
	gone "$pid" && wait "$pid" 2>/dev/null
done
# the daemon is there, its workers free: the same calls work now
kill -0 "$FUSE2_PID" 2>/dev/null || { echo "  weir-fuse ($M2) is gone"; fails=$((fails + 1)); }
t0=$(date +%s)
after=$(timeout 60 sh -c 'stat -f "$1" >/dev/null && mv "$1/g" "$1/b" && ln -s x "$1/s" &&
	ln "$1/f" "$1/h" && rmdir "$1/e" && chmod 600 "$1/f" && readlink "$1/l" && cat "$1/f" &&
	ls "$1"' sh "$I" 2>&1 | tr '\n' ' ')
if [ "$after" = "f data b d f h h1 l p1 r2 s s1 w1 w2 w3 " ]; then
	echo "  after the MDS's restart: mv, ln -s, ln, rmdir, chmod, readlink, cat, ls work ($(($(date +%s) - t0)) s)"
else
	echo "  after the MDS's restart: got '$after'"
	fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
	echo "test_create_outage_fuse: FAILED"
	exit 1
fi
echo "test_create_outage_fuse: OK"
