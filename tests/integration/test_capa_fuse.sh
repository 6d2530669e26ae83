#!/usr/bin/env bash
# tests/integration/test_capa_fuse.sh - OST capabilities renewed unseen under
# weir-fuse: a cluster whose MDS signs capabilities for 2 s
# (--capa-timeout 2s), mounted with -o direct_io (every read and write goes to
# the OSTs), and a program (python3) that keeps one file open for 7 s,
# writing, reading back and fsyncing it every 100 ms, then truncates it
# through the same descriptor, reopens it read-only and reads it all: every
# call must succeed and every byte must match. A second file, written
# through the mount and then only read for 5 s through a read-only
# descriptor, the same.
#
# Installed by the Makefile as BUILD/tests/integration/test_capa_fuse (see
# test_fuse.sh). Exit 0 = pass, 1 = fail, 77 = skipped (no usable /dev/fuse).
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
[ -x "$BIN/weir-fuse" ] || { echo "test_capa_fuse: no $BIN/weir-fuse (build first)"; exit 1; }
[ -c /dev/fuse ] || skip "no /dev/fuse"
{ exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened by uid $(id -u)"
exec 9>&-
grep -qw fuse /proc/filesystems || skip "the kernel has no fuse filesystem"
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
	skip "not root and no fusermount3"
fi
command -v python3 >/dev/null || { echo "test_capa_fuse: python3 is missing"; exit 1; }

TMP=$(mktemp -d /tmp/weir-capa-fuse-XXXXXX)
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
	--mds-arg --capa-timeout --mds-arg 2s 2>"$TMP/up.log") ||
	{ cat "$TMP/up.log"; echo "test_capa_fuse: cluster did not start"; exit 1; }
eval "$out"
[ -n "${WEIR_MDS:-}" ] || { echo "test_capa_fuse: no WEIR_MDS from weir-local"; exit 1; }

fuse_mount "$MNT" "$TMP/fuse.err" "mds=$WEIR_MDS,direct_io"
rc=$?
FUSE_PID=$FUSE_MOUNT_PID
[ "$rc" -eq 0 ] || { echo "test_capa_fuse: not mounted"; exit 1; }

# stripe over both OSTs so every capability is used on two OSSs
"$BIN/weir" --mds "$WEIR_MDS" setstripe -c 2 -S 64K /held >/dev/null 2>&1 || true

python3 - "$MNT" <<'PY' || fails=$((fails + 1))
import os, sys, time
mnt = sys.argv[1]
def pattern(n, size):
    b = bytes((n * 131 + i * 7) & 0xff for i in range(256))
    return (b * (size // 256 + 1))[:size]
size = 96 * 1024
p = os.path.join(mnt, "held")
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
t0 = time.monotonic()
n = bad = 0
while time.monotonic() - t0 < 7.0:
    d = pattern(n, size)
    if os.pwrite(fd, d, n * size) != size:
        bad += 1
    if os.pread(fd, size, n * size) != d:
        bad += 1
    os.fsync(fd)
    n += 1
    time.sleep(0.1)
os.ftruncate(fd, size * n - 1000)
os.close(fd)
fd = os.open(p, os.O_RDONLY)
for k in range(n):
    want = pattern(k, size)
    if k == n - 1:
        want = want[: size - 1000]
    if os.pread(fd, size, k * size) != want:
        bad += 1
os.close(fd)
# read only, for longer than two lifetimes
fd = os.open(p, os.O_RDONLY)
t0 = time.monotonic()
reads = 0
while time.monotonic() - t0 < 5.0:
    k = reads % n
    want = pattern(k, size)[: size - 1000 if k == n - 1 else size]
    if os.pread(fd, size, k * size) != want:
        bad += 1
    reads += 1
    time.sleep(0.1)
os.close(fd)
print(f"  {n} write/read/fsync rounds over 7 s, {reads} reads over 5 s, {bad} bad")
sys.exit(1 if bad or n < 30 else 0)
PY

if grep -q "no capability from the MDS\|rc=-13" "$TMP"/fuse*.log 2>/dev/null; then
	echo "  the client log shows refused capabilities:"
	grep "no capability from the MDS\|rc=-13" "$TMP"/fuse*.log | head -5
	fails=$((fails + 1))
fi
if [ "$fails" -ne 0 ]; then
	echo "test_capa_fuse: FAILED"
	exit 1
fi
echo "test_capa_fuse: OK"
