#!/usr/bin/env bash
# tests/integration/test_enospc_dd.sh - dd onto a full OST through the
# weir-fuse mount and through the LD_PRELOAD shim: the file's size is exactly
# the byte count dd reports written (issue 12 item 7: the failed write used
# to store 1,016 KiB and grow the file), and those bytes read back.
#
# A local cluster (deploy/weir-local, 1 OSS x 2 OSTs) whose OST oss0/ost0 is a
# 64 MiB tmpfs this script mounts (so it needs root; exit 77 otherwise); a
# filler file in that tmpfs leaves an exact amount free before each dd
# (20 MiB + 300 KiB: a write of 1 MiB comes back short). Cases: a 1-stripe
# file on the full OST (dd bs=1M), and a 2-stripe file whose first object is
# on it (dd bs=4M: each write spans both OSTs), through FUSE; the 1-stripe
# case through the shim (skipped in sanitizer builds, as test_preload).
#
# The Makefile installs this script as BUILD/tests/integration/test_enospc_dd
# with @SRCDIR@ replaced by the repository. Exit 0 = pass, 1 = fail, 77 =
# skipped. Servers, mounts and the tmpfs are always removed (trap).
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
BIN=$BUILD/bin

fails=0
say() { printf '  %-44s %s\n' "$1" "$2"; }
ok() { say "$1" "ok${2:+ ($2)}"; }
bad() {
	say "$1" "FAILED: $2"
	fails=$((fails + 1))
}
skip() {
	echo "SKIP: $*"
	exit 77
}

[ -x "$BIN/weir-fuse" ] || { echo "test_enospc_dd: no $BIN/weir-fuse (build first)"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs for a full OST needs root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
grep -qw fuse /proc/filesystems || skip "the kernel has no fuse filesystem"

TMP=$(mktemp -d /tmp/weir-enospc-dd-XXXXXX)
CL=$TMP/cluster
FULL=$CL/oss0/ost0
MNT=$TMP/mnt
mkdir -p "$FULL" "$MNT"
FUSE_PID=""
export WEIR_LOG=$TMP/client.log WEIR_LOG_LEVEL=${WEIR_LOG_LEVEL:-notice}

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
		tail -n 15 "$TMP"/*.log "$CL"/*.log 2>/dev/null
	fi
	grep -q " $FULL " /proc/mounts 2>/dev/null && umount -l "$FULL"
	if [ "${TH_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT

mount -t tmpfs -o size=64m,mode=0755 tmpfs "$FULL" 2>"$TMP/mount.err" ||
	skip "cannot mount a tmpfs: $(head -n1 "$TMP/mount.err")"

# Leave exactly $1 bytes free on the tmpfs (grow or shrink the filler).
leave_free() {
	local avail cur
	avail=$(stat -f -c '%a * %S' "$FULL")
	avail=$((avail))
	cur=$(stat -c %s "$FULL/filler" 2>/dev/null || echo 0)
	truncate -s 0 "$FULL/filler" 2>/dev/null || : >"$FULL/filler"
	fallocate -l $((cur + avail - $1)) "$FULL/filler" || return 1
	[ "$(($(stat -f -c '%a * %S' "$FULL")))" -eq "$1" ]
}

echo "== cluster"
out=$("$SRCDIR/deploy/weir-local" up --dir "$CL" --oss 1 --ost-per-oss 2 --bin "$BIN" \
	2>"$TMP/up.log") || { cat "$TMP/up.log"; echo "test_enospc_dd: cluster did not start"; exit 1; }
eval "$out"
[ -n "${WEIR_MDS:-}" ] || { echo "test_enospc_dd: no WEIR_MDS from weir-local"; exit 1; }
WEIR="$BIN/weir --mds $WEIR_MDS"
IDX=$(cat "$FULL/ost.index") || { echo "test_enospc_dd: no $FULL/ost.index"; exit 1; }
echo "  MDS $WEIR_MDS; OST $IDX is a 64 MiB tmpfs"
$WEIR mkdir /one /two >/dev/null &&
	$WEIR setstripe -c 1 -S 1M -i "$IDX" /one >/dev/null &&
	$WEIR setstripe -c 2 -S 1M -i "$IDX" /two >/dev/null ||
	{ echo "test_enospc_dd: cannot make the striped directories"; exit 1; }

echo "== mount"
"$BIN/weir-fuse" "$MNT" -f -o "mds=$WEIR_MDS" 2>"$TMP/fuse.err" &
FUSE_PID=$!
for ((i = 0; i < 100; i++)); do
	grep -q " $MNT fuse.weir " /proc/mounts && break
	sleep 0.1
done
grep -q " $MNT fuse.weir " /proc/mounts || { cat "$TMP/fuse.err"; echo "test_enospc_dd: no mount"; exit 1; }

# dd_full NAME FILE(as dd sees it) WEIR-PATH BS [PREFIX...]: dd of zeros
# until the OST is full; dd must fail with ENOSPC, and the size through the
# mount and through the CLI (MDS + OSTs) must be the bytes dd reports.
dd_full() {
	local name=$1 file=$2 wpath=$3 bs=$4
	shift 4
	local err=$TMP/dd.err n size wsize
	if ! leave_free $((20 * 1024 * 1024 + 300 * 1024)); then
		bad "$name" "cannot leave 20 MiB + 300 KiB free on the tmpfs"
		return
	fi
	if "$@" dd if=/dev/zero of="$file" bs="$bs" count=100 2>"$err"; then
		bad "$name" "dd succeeded on a full OST: $(tail -n1 "$err")"
		return
	fi
	if ! grep -q "No space left on device" "$err"; then
		bad "$name" "dd failed otherwise: $(head -n1 "$err")"
		return
	fi
	n=$(sed -n 's/^\([0-9][0-9]*\) bytes.*copied.*/\1/p' "$err")
	[ -n "$n" ] || { bad "$name" "no byte count from dd: $(tail -n1 "$err")"; return; }
	size=$(stat -c %s "$MNT$wpath")
	wsize=$($WEIR stat "$wpath" | awk '$1 == "size:" || $1 == "Size:" { print $2; exit }')
	if [ "$size" != "$n" ]; then
		bad "$name" "dd wrote $n bytes, the file has $size"
	elif [ "$wsize" != "$n" ]; then
		bad "$name" "dd wrote $n bytes, weir stat says $wsize"
	elif ! cmp -s -n "$n" "$MNT$wpath" /dev/zero; then
		bad "$name" "the $n bytes do not read back as zeros"
	else
		ok "$name" "$n bytes: $(grep -o '^[0-9+]* records out' "$err")"
	fi
}

echo "== dd onto a full OST"
dd_full "FUSE: dd bs=1M, 1 stripe" "$MNT/one/f" /one/f 1M
dd_full "FUSE: dd bs=4M, 2 stripes, first full" "$MNT/two/f" /two/f 4M
SO=$BUILD/lib/libweir-preload.so
if [ ! -r "$SO" ]; then
	bad "shim: dd bs=1M, 1 stripe" "no $SO"
elif ldd "$SO" 2>/dev/null | grep -q libasan; then
	say "shim: dd bs=1M, 1 stripe" "skipped (sanitizer build: the shim cannot be preloaded)"
else
	dd_full "shim: dd bs=1M, 1 stripe" /weir/one/g /one/g 1M \
		env LD_PRELOAD="$SO" WEIR_MOUNT=/weir WEIR_MDS="$WEIR_MDS"
fi

echo "== $fails failed"
[ "$fails" -eq 0 ]
