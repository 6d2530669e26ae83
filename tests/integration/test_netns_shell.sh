#!/usr/bin/env bash
# tests/integration/test_netns_shell.sh - the shell twin of the several-hosts
# harness (tests/lib/netns.sh): weir-mds on host mds and a weir-oss on each of
# oss0 and oss1 (one OST each), started through it; `weir put` of a striped
# file on client0, `weir get` on client1, byte-exact (all with the cluster key
# that `weir key gen` made); the outsider reaches the MDS port but, without the
# key or with another one, is refused with the exact error; a weir-fuse mount made on client1 is seen by the test, its file
# byte-exact (when /dev/fuse is usable); then nothing is left.
#
# Installed by the Makefile as BUILD/tests/integration/test_netns_shell with
# @SRCDIR@ replaced by the repository. Exit 0 = pass, 1 = fail, 77 = skipped
# (no network namespaces here).
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
export PATH="$BIN:$PATH"

. "$SRCDIR/tests/lib/netns.sh"
netns_require
for p in weir weir-mds weir-oss; do
	[ -x "$BIN/$p" ] || { echo "test_netns_shell: no $BIN/$p (build first)"; exit 1; }
done

fails=0
# check WHAT CMD...: run CMD (in this shell: what it sets stays set); print WHAT
# and ok, or FAILED and the end of its output
check() {
	local what=$1
	shift
	if "$@" >"$TMP/check.out" 2>&1; then
		printf '  %-48s ok\n' "$what"
		return 0
	fi
	printf '  %-48s FAILED: %s\n' "$what" "$(tail -n 3 "$TMP/check.out")"
	fails=$((fails + 1))
	return 1
}

TMP=$(mktemp -d /tmp/weir-netns-sh-XXXXXX)
MNT=$TMP/mnt
cleanup() {
	mountpoint -q "$MNT" 2>/dev/null && { fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"; }
	netns_down >/dev/null 2>&1
	if [ "$fails" -ne 0 ]; then
		for l in "$TMP"/*.log; do
			echo "---------- tail of $l"
			tail -n 30 "$l"
		done
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# wait_file FILE: up to 30 s for FILE to hold a port line
wait_file() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# the steps, each a function for check()
mds_up() {
	local i
	netns_spawn mds "$TMP/mds.log" weir-mds --key-file "$KEY" --mdt "$TMP/mdt0" --listen "$(netns_ip mds):0" \
		--port-file "$TMP/mds.port" --threads 2 --log stderr
	wait_file "$TMP/mds.port" || return 1
	MDS="$(netns_ip mds):$(sed 's/.*://' "$TMP/mds.port")"
	for i in 0 1; do
		netns_spawn "oss$i" "$TMP/oss$i.log" weir-oss --key-file "$KEY" --mds "$MDS" --ost "$TMP/oss$i/ost0" \
			--listen "$(netns_ip "oss$i"):0" --port-file "$TMP/oss$i.port" --threads 2 \
			--heartbeat 1 --log stderr
	done
}
osts_up() {
	local i n=0
	for i in $(seq 300); do
		n=$(netns_exec client0 weir --mds "$MDS" df 2>/dev/null | grep -c 'OST[0-9a-f]*_UUID')
		[ "$n" -ge 2 ] && return 0
		sleep 0.1
	done
	echo "$n OSTs after 30 s"
	return 1
}
serves_at() { grep "advertise=$(netns_ip "$1"):" "$TMP/$1.log" || tail -n 3 "$TMP/$1.log"; }
put_on_client0() {
	local w=(netns_exec client0 weir --mds "$MDS")
	"${w[@]}" mkdir /d && "${w[@]}" setstripe -c 2 -S 65536 /d && "${w[@]}" put "$TMP/src" /d/f
}
get_on_client1() {
	netns_exec client1 weir --mds "$MDS" get /d/f "$TMP/got" && cmp "$TMP/src" "$TMP/got"
}
reach() { netns_exec "$1" bash -c "exec 3<>/dev/tcp/$(netns_ip "$2")/${MDS##*:}"; }
fuse_on_client1() {
	netns_spawn client1 "$TMP/fuse.log" weir-fuse "$MNT" -f -o "mds=$MDS"
	for i in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
	mountpoint -q "$MNT" && cmp "$TMP/src" "$MNT/d/f"
	local rc=$?
	fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT"
	[ $rc -eq 0 ] || tail -n 3 "$TMP/fuse.log"
	return $rc
}
# refused WHY...: `weir df` on the outsider (with the environment WHY...) fails
# with the client's authentication error naming the MDS
refused() {
	local out
	out=$(netns_exec outsider env -u WEIR_KEY_FILE "$@" weir --mds "$MDS" df 2>&1) && {
		echo "weir df succeeded: $out"
		return 1
	}
	echo "$out"
	grep -F "weir: $MDS: authentication failed" <<<"$out" >/dev/null
}
nothing_left() {
	local tag=$NETNS_TAG
	netns_down || return 1
	! "$NETNS_IP" netns list | grep "^$tag-"
}

echo "== network"
check "netns_up: 6 hosts" netns_up || exit 1
echo "== cluster across hosts"
KEY=$TMP/cluster.key
weir key gen "$KEY" >/dev/null || { echo "test_netns_shell: weir key gen failed"; exit 1; }
export WEIR_KEY_FILE=$KEY
mkdir -p "$TMP/mdt0" "$TMP/oss0/ost0" "$TMP/oss1/ost0" "$MNT"
check "weir-mds on mds, weir-oss on oss0 and oss1" mds_up || exit 1
check "2 OSTs registered over the bridge" osts_up || exit 1
check "oss0 serves at its host's address" serves_at oss0
check "oss1 serves at its host's address" serves_at oss1
echo "== clients"
head -c 3000000 /dev/urandom >"$TMP/src"
check "weir put of a striped file on client0" put_on_client0
check "weir get on client1: byte-exact" get_on_client1
check "the outsider reaches the MDS port" reach outsider mds
check "outsider without a key (WEIR_INSECURE=1): refused" refused WEIR_INSECURE=1
weir key gen "$TMP/other.key" >/dev/null
check "outsider with another key: refused" refused WEIR_KEY_FILE="$TMP/other.key"
check "nothing listens on client0" eval '! reach outsider client0'
echo "== weir-fuse on client1"
if [ -x "$BIN/weir-fuse" ] && [ -c /dev/fuse ] && grep -qw fuse /proc/filesystems; then
	check "its mount is seen here; the file byte-exact" fuse_on_client1
else
	echo "  (no usable /dev/fuse: weir-fuse not tried)"
fi
echo "== teardown"
check "netns_down: no namespace left" nothing_left

echo
if [ "$fails" -eq 0 ]; then echo "test_netns_shell: OK"; exit 0; fi
echo "test_netns_shell: $fails FAILED"
exit 1
