#!/usr/bin/env bash
# tests/integration/test_create_outage_fuse.sh - creates through weir-fuse
# while one OSS is down (kill -9) and the MDS still counts its OST up (issue
# 14): every one-stripe file written by the shell is there with its bytes
# (none is left empty on the dead OST, answering EIO), and a two-stripe
# create either works (on the OST that serves) or fails leaving no file.
#
# Installed by the Makefile as BUILD/tests/integration/test_create_outage_fuse
# (see test_fuse.sh). Exit 0 = pass, 1 = fail, 77 = skipped (no usable /dev/fuse).
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin

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
mkdir -p "$MNT"
FUSE_PID=""
export WEIR_LOG=$TMP/fuse.log WEIR_LOG_LEVEL=${WEIR_LOG_LEVEL:-notice}
fails=0

cleanup() {
	local rc=$?
	cd /
	if grep -q " $MNT " /proc/mounts 2>/dev/null; then
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$FUSE_PID" ] && kill -0 "$FUSE_PID" 2>/dev/null; then
		kill -TERM "$FUSE_PID" 2>/dev/null
		sleep 0.5
		kill -KILL "$FUSE_PID" 2>/dev/null
	fi
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 20 "$TMP"/fuse*.log "$TMP"/fuse.err "$CL"/*.log 2>/dev/null
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

"$BIN/weir-fuse" "$MNT" -f -o "mds=$WEIR_MDS" 2>"$TMP/fuse.err" &
FUSE_PID=$!
for ((i = 0; i < 100; i++)); do
	grep -q " $MNT fuse.weir " /proc/mounts && break
	sleep 0.1
done
grep -q " $MNT fuse.weir " /proc/mounts || { echo "test_create_outage_fuse: not mounted"; exit 1; }
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

if [ "$fails" -ne 0 ]; then
	echo "test_create_outage_fuse: FAILED"
	exit 1
fi
echo "test_create_outage_fuse: OK"
