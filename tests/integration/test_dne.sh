#!/usr/bin/env bash
# tests/integration/test_dne.sh - several MDTs join one cluster (issue 16,
# docs/dne.md step 1): `weir-local up --mds 3` starts MDT0 and two more MDSs
# (weir-mds --mdt-index K --mgs MDT0), which register with MDT0 and serve
# with its OST map and capability key.
#
# Checks (each against what the servers report, not only their exit codes):
#  - `weir df` on MDT0 lists MDT0000..MDT0002 up, with their own space, and
#    the OST; `weir df` on MDT1 lists the OST it learnt from MDT0 as up;
#  - MDT1 signs with MDT0's capability key (its log says generation 1 of
#    MDT0's key; the cluster runs with a cluster key);
#  - a remote directory (`weir mkdir -i 2`, mds/dtx.c) counts in its parent's
#    links; clients reach it (docs/dne.md step 2): files made in it live on
#    MDT2, read back, list, stat through "..", rename inside MDT2 and are
#    removed; files are renamed out of it and back (the name moves to the
#    other MDT, the inode stays), a directory is not (EXDEV); hard links
#    and renames across MDTs keep link counts (section 1g); rmdir removes it
#    once empty; an
#    MDT index the map lacks is EINVAL (the kills at each step are
#    test_dne_crash's);
#  - a libweir client keeps a file of MDT2 open past the lease time (its
#    session there is renewed), and its handle turns stale (EIO) across a
#    kill -9 and restart of MDT2, after which a new open works;
#  - a client that walked to a remote directory sends its creates there
#    straight to its MDT (one works while MDT0 is stopped), and follows the
#    name when another client makes the directory again on another MDT;
#  - through weir-fuse, a remote directory on MDT1 takes a copy, a rename
#    inside it, a mv out of it and a hard link back, another client's new file,
#    flock(1) locks, and an fcntl lock dropped at its close;
#  - unmodified mv(1), ln(1) and os.replace() through the LD_PRELOAD shim
#    rename and link between MDTs (section 1h; skipped in a sanitizer build);
#  - fcntl locks on a file of MDT2 conflict across clients (EAGAIN, F_GETLK
#    names the holder, F_SETLKW waits for the holder's close);
#  - an MDT killed with SIGKILL shows "inactive" on MDT0 after --ost-timeout,
#    and is up again once restarted; a client's first call to it while it
#    is down waits and is answered after the restart;
#  - MDT0 restarted keeps its MDT list, and MDT1 and MDT2 register again;
#  - refusals that change nothing: an MDT opened under another index
#    (exit 1, "this is MDT0001"), a second MDT claiming index 1 (-EEXIST),
#    a copy of MDT1 (same uuid and secret) from another address while MDT1
#    lives (-EBUSY); the copy is accepted once MDT1 was silent for the
#    timeout (a failover), and df then shows MDT1 at the new address;
#  - an OSS sent to MDT1 is refused (OSSs register with MDT0);
#  - option errors: --mdt-index without --mgs, --mgs without --mdt-index
#    (exit 2).
#
# Installed by the Makefile as BUILD/tests/integration/test_dne.
# Exit 0 = pass, 1 = fail.
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
TMP=$(mktemp -d /tmp/weir-dne-XXXXXX)
CL=$TMP/cluster
TIMEOUT=2 # --ost-timeout: an MDT silent this long is down
fails=0
EXTRA=()
cleanup() {
	fusermount3 -u -z "$TMP/mnt" 2>/dev/null || umount -l "$TMP/mnt" 2>/dev/null
	for p in ${EXTRA[@]+"${EXTRA[@]}"}; do
		{ kill -9 "$p" && wait "$p"; } 2>/dev/null
	done
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 15 "$CL"/mds*.log "$TMP"/*.log 2>/dev/null
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

out=$("$SRCDIR/deploy/weir-local" up --dir "$CL" --mds 3 --oss 1 --ost-per-oss 1 --bin "$BIN" \
	--mds-arg --ost-timeout --mds-arg "$TIMEOUT" --mds-arg --lease-time --mds-arg 2s \
	--oss-arg --heartbeat --oss-arg 1s \
	2>"$TMP/up.log") || { cat "$TMP/up.log"; exit 1; }
eval "$out"
export WEIR_MDS WEIR_KEY_FILE
port() { cat "$CL/$1.port"; }
MDT1="127.0.0.1:$(port mds1)"

# df's row of target $1 (MDT0001, OST0000) as MDS $2 reports it
row() { "$BIN/weir" --mds "$2" df | grep "weir-$1_UUID"; }
# wait up to $3 s until row $1 on MDS $2 matches the regex $4
wait_row() {
	local deadline=$((SECONDS + $3))
	while [ $SECONDS -le $deadline ]; do
		row "$1" "$2" | grep -Eq "$4" && return 0
		sleep 0.2
	done
	return 1
}
UP='[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+%'

# 1. three MDTs up on MDT0, with their space; the OST
for t in MDT0000 MDT0001 MDT0002 OST0000; do
	row "$t" "$WEIR_MDS" | grep -Eq "$UP" || fail "$t not up on MDT0: $(row "$t" "$WEIR_MDS")"
done
# MDT1 learnt the OST (and MDT0) from MDT0's map
# (within a heartbeat of MDT1's: the OSS may have registered after MDT1 did)
wait_row OST0000 "$MDT1" 5 "$UP" || fail "MDT1 does not see OST0000 up: $(row OST0000 "$MDT1")"
row MDT0000 "$MDT1" | grep -Eq "$UP" || fail "MDT1 does not list MDT0"
grep -q "registered with MDT0" "$CL/mds1.log" || fail "mds1 did not log its registration"
grep -q "capabilities: on, lifetime .* MDT0's key generation 1" "$CL/mds1.log" ||
	fail "MDT1 does not sign with MDT0's key"
grep -q "mdt=2 uuid=[0-9a-f]\{32\} addr=127.0.0.1:$(port mds2): new MDT added" "$CL/mds.log" ||
	fail "MDT0 did not log MDT2's binding"

# 1b. a remote directory (mds/dtx.c): made on MDT2, named on MDT0. Clients
# reach it (docs/dne.md step 2: a walk that crosses to MDT2 is redirected
# there): a file put in it is made on MDT2 (its FID's sequence is MDT2's),
# reads back, lists, stats through ".." inside MDT2 and out to MDT0, follows
# an absolute symlink back to MDT0 and a relative one inside MDT2, renames
# inside MDT2, out to MDT0 and back (renames across MDTs: the name moves,
# the inode stays); a rename of the remote directory itself is EXDEV; it
# counts in its parent's links; an MDT index the map
# lacks is EINVAL; rmdir removes it once empty (the kills at each step are
# test_dne_crash's)
links() { "$BIN/weir" stat / | sed -n 's/.*Links: \([0-9]*\).*/\1/p'; }
size() { "$BIN/weir" stat "$1" | sed -n 's/.*Size: \([0-9]*\).*/\1/p'; }
l0=$(links)
"$BIN/weir" mkdir -i 2 /remote || fail "mkdir -i 2 /remote"
head -c 300000 /dev/urandom >"$TMP/data"
"$BIN/weir" put "$TMP/data" /remote/f 2>"$TMP/put.log" || fail "put into /remote: $(cat "$TMP/put.log")"
"$BIN/weir" cat /remote/f 2>&1 | cmp -s - "$TMP/data" || fail "/remote/f does not read back"
fid=$("$BIN/weir" path2fid /remote/f 2>&1)
# MDT2's FID sequence: 0x200000400 + 2 * 2^32 (common/fid.h)
grep -q '^\[0x400000400:' <<<"$fid" || fail "/remote/f: FID $fid, want one of MDT2's (0x400000400)"
"$BIN/weir" mkdir /remote/sub || fail "mkdir /remote/sub"
printf 'hello\n' >"$TMP/g"
"$BIN/weir" put "$TMP/g" /remote/sub/g || fail "put /remote/sub/g"
out=$("$BIN/weir" ls /remote 2>&1)
grep -qx f <<<"$out" && grep -qx sub <<<"$out" || fail "ls /remote: $out, want f and sub"
[ "$(size /remote/sub/../f)" = 300000 ] || fail "stat /remote/sub/../f: size $(size /remote/sub/../f)"
out=$("$BIN/weir" ls /remote/.. 2>&1)
grep -qx remote <<<"$out" || fail "ls /remote/.. (back on MDT0): $out, want remote"
# symlinks on MDT2 (weir put -r copies them as symlinks): an absolute one
# leads back to the root on MDT0, a relative one stays on MDT2
printf 'top\n' >"$TMP/top"
"$BIN/weir" put "$TMP/top" /top.txt || fail "put /top.txt"
mkdir "$TMP/tree" && ln -s /top.txt "$TMP/tree/abs" && ln -s ../f "$TMP/tree/rel"
"$BIN/weir" put -r "$TMP/tree" /remote/tree || fail "put -r of symlinks into /remote"
out=$("$BIN/weir" cat /remote/tree/abs 2>&1)
[ "$out" = top ] || fail "cat /remote/tree/abs (-> /top.txt on MDT0): $out, want top"
"$BIN/weir" cat /remote/tree/rel 2>&1 | cmp -s - "$TMP/data" || fail "cat /remote/tree/rel (-> ../f)"
# a rename whose source crosses back to MDT0 (/remote/z is MDT0's, made
# under MDT2's /remote) onto a symlink of MDT2 pointing at an MDT0 file: a
# rename across MDTs (MDT2 coordinates, mds/dtx.c); the target name is not
# followed, so the symlink is replaced and the file it points at is left
# alone
"$BIN/weir" mkdir -i 0 /remote/z || fail "mkdir -i 0 /remote/z (MDT2 coordinating)"
"$BIN/weir" put "$TMP/g" /remote/z/f || fail "put /remote/z/f"
zf=$("$BIN/weir" path2fid /remote/z/f 2>&1)
grep -q '^\[0x200000400:' <<<"$zf" || fail "/remote/z/f: FID $zf, want one of MDT0's"
"$BIN/weir" mv /remote/z/f /remote/tree/abs 2>"$TMP/mv.err" ||
	fail "rename onto a symlink across MDTs: $(cat "$TMP/mv.err")"
[ "$("$BIN/weir" path2fid /remote/tree/abs 2>&1)" = "$zf" ] ||
	fail "/remote/tree/abs after the rename: $("$BIN/weir" path2fid /remote/tree/abs 2>&1), want $zf"
[ "$("$BIN/weir" cat /remote/tree/abs 2>&1)" = hello ] ||
	fail "/remote/tree/abs (a name on MDT2 of an MDT0 file) does not read back"
out=$("$BIN/weir" cat /top.txt 2>&1)
[ "$out" = top ] || fail "/top.txt after a rename onto a symlink to it: $out, want top"
"$BIN/weir" rm -r /remote/tree /remote/z /top.txt || fail "rm /remote/tree /remote/z /top.txt"
"$BIN/weir" mv /remote/f /remote/f2 || fail "mv inside MDT2"
"$BIN/weir" cat /remote/f2 2>&1 | cmp -s - "$TMP/data" || fail "/remote/f2 does not read back"
# out to MDT0 and back: the inode stays on MDT2, the name moves
"$BIN/weir" mv /remote/f2 /top 2>"$TMP/mv.err" || fail "rename from MDT2 to MDT0: $(cat "$TMP/mv.err")"
[ "$("$BIN/weir" path2fid /top 2>&1)" = "$fid" ] ||
	fail "/top after a rename from MDT2: $("$BIN/weir" path2fid /top 2>&1), want $fid"
"$BIN/weir" cat /top 2>&1 | cmp -s - "$TMP/data" || fail "/top (MDT2's inode) does not read back"
"$BIN/weir" mv /top /remote/f2 2>"$TMP/mv.err" || fail "rename back to MDT2: $(cat "$TMP/mv.err")"
out=$("$BIN/weir" mv /remote /moved 2>&1) && fail "rename of a remote directory: $out"
grep -q EXDEV <<<"$out" || fail "rename of a remote directory: $out, want EXDEV"
[ "$(links)" = $((l0 + 1)) ] || fail "/ has $(links) links with a remote subdirectory, want $((l0 + 1))"
out=$("$BIN/weir" mkdir -i 7 /nomdt 2>&1) && fail "mkdir -i 7 (no such MDT) succeeded"
grep -q EINVAL <<<"$out" || fail "mkdir -i 7: $out, want EINVAL"
out=$("$BIN/weir" rmdir /remote 2>&1) && fail "rmdir of a non-empty remote directory: $out"
grep -q ENOTEMPTY <<<"$out" || fail "rmdir of a non-empty remote directory: $out, want ENOTEMPTY"
"$BIN/weir" rm -r /remote/sub /remote/f2 || fail "rm in /remote"
out=$("$BIN/weir" ls /remote 2>&1)
[ -z "$out" ] || fail "ls /remote after rm: $out, want nothing"
"$BIN/weir" rmdir /remote || fail "rmdir /remote"
[ "$(links)" = "$l0" ] || fail "/ has $(links) links after the rmdir, want $l0"

# 1c. a file of MDT2 held open by a libweir client (dne_hold, client/mdt.c):
# past the lease time (2 s here) its session on MDT2 is renewed, so the
# second write and the close work; across a kill -9 and restart of MDT2 the
# handle turns stale (-EIO: its session is gone), and a new open works
# (WEIR_DNE_HOLD=0 skips it: .ci/run's sanitizer step, for time)
HOLD=$BUILD/tests/integration/dne_hold
if [ "${WEIR_DNE_HOLD:-1}" != 0 ]; then
	"$BIN/weir" mkdir -i 2 /held || fail "mkdir -i 2 /held"
	n2=$(wc -l <"$CL/mds2.log")
	"$HOLD" "$WEIR_MDS" /held/f 3 >"$TMP/hold.out" 2>&1 || fail "dne_hold: $(cat "$TMP/hold.out")"
	tail -n +"$((n2 + 1))" "$CL/mds2.log" | grep -q 'lease expired: evicted' &&
		fail "MDT2 evicted a client that held a file open: its session was not renewed"
	grep -q '^opened \[0x400000400:' "$TMP/hold.out" || fail "dne_hold /held/f: not on MDT2: $(cat "$TMP/hold.out")"
	grep -qx 'write2=0 close=0' "$TMP/hold.out" || fail "held past the lease: $(cat "$TMP/hold.out")"
	grep -qx 'reopen=0 size=2' "$TMP/hold.out" || fail "held past the lease, reopened: $(cat "$TMP/hold.out")"
	"$HOLD" "$WEIR_MDS" /held/g 6 >"$TMP/hold2.out" 2>&1 &
	hold=$!
	for _ in $(seq 50); do grep -q '^opened' "$TMP/hold2.out" && break; sleep 0.2; done
	kill -9 "$(cat "$CL/mds2.pid")"
	"$SRCDIR/deploy/weir-local" restart --dir "$CL" mds2 2>"$TMP/restart2.log" ||
		fail "restart mds2 under dne_hold: $(cat "$TMP/restart2.log")"
	wait "$hold" || fail "dne_hold across MDT2's restart: $(cat "$TMP/hold2.out")"
	grep -q '^write2=-5 ' "$TMP/hold2.out" || fail "a handle across MDT2's restart: $(cat "$TMP/hold2.out"), want write2=-5 (EIO)"
	grep -qx 'reopen=0 size=1' "$TMP/hold2.out" || fail "reopened after MDT2's restart: $(cat "$TMP/hold2.out")"
	"$BIN/weir" rm -r /held || fail "rm -r /held"
fi

# 1d. routing from the name cache (client/mdc.c, mdc_route_init): once a
# client has walked to /routed (a remote directory on MDT2; MDT0 leases the
# name with the walk of its redirect), its creates in it go straight to
# MDT2: one works while MDT0 is stopped (SIGSTOP). When another client
# removes /routed and makes it again on MDT1, MDT0 calls the name back, and
# the next create lands in the new directory.
"$BIN/weir" mkdir -i 2 /routed || fail "mkdir -i 2 /routed"
mkfifo "$TMP/route.in"
"$HOLD" --route "$WEIR_MDS" /routed <"$TMP/route.in" >"$TMP/route.out" 2>&1 &
route=$!
EXTRA+=("$route")
exec 7>"$TMP/route.in"
for _ in $(seq 50); do grep -q '^ready' "$TMP/route.out" && break; sleep 0.1; done
grep -q '^a=0 \[0x400000400:' "$TMP/route.out" || fail "route: /routed/a: $(cat "$TMP/route.out")"
kill -STOP "$(cat "$CL/mds.pid")"
echo b >&7
for _ in $(seq 30); do grep -q '^b=' "$TMP/route.out" && break; sleep 0.1; done
b=$(grep '^b=' "$TMP/route.out") # read while MDT0 is still stopped
kill -CONT "$(cat "$CL/mds.pid")"
[[ "$b" == 'b=0 [0x400000400:'* ]] ||
	fail "a create in a remote directory the client walked to waited for MDT0: '$b'"
# a rename from the cached directory into one below it (on MDT2, not
# cached: placed by MDT0's redirect) is not taken for a rename across MDTs
"$BIN/weir" mkdir /routed/sub || fail "mkdir /routed/sub"
echo "rename b sub/b2" >&7
for _ in $(seq 30); do grep -q '^rename=' "$TMP/route.out" && break; sleep 0.1; done
grep -qx 'rename=0' "$TMP/route.out" || fail "rename /routed/b /routed/sub/b2: $(cat "$TMP/route.out")"
"$BIN/weir" stat /routed/sub/b2 >/dev/null || fail "/routed/sub/b2 missing after the rename"
"$BIN/weir" rm -r /routed && "$BIN/weir" mkdir -i 1 /routed || fail "/routed again on MDT1"
echo c >&7
exec 7>&-
wait "$route" || fail "dne_hold --route: $(cat "$TMP/route.out")"
grep -q '^c=0 \[0x300000400:' "$TMP/route.out" ||
	fail "a create after /routed was made again on MDT1: $(cat "$TMP/route.out")"
[ "$("$BIN/weir" ls /routed)" = "c" ] || fail "/routed holds '$("$BIN/weir" ls /routed)', want c"
"$BIN/weir" rm -r /routed || fail "rm -r /routed"

# 1e. fcntl locks on a file of MDT2 (MDT2's lock manager, with the clients'
# sessions there): a second client's F_SETLK meets the first's write lock
# (EAGAIN), F_GETLK names its holder, and F_SETLKW waits until the holder's
# close drops it (the holder stays mounted after its close, so only the
# close can have dropped it; the waiter gives up after 20 s)
"$BIN/weir" mkdir -i 2 /locked || fail "mkdir -i 2 /locked"
"$HOLD" --lock "$WEIR_MDS" /locked/f 3 30 >"$TMP/lock1.out" 2>&1 &
holder=$!
EXTRA+=("$holder")
for _ in $(seq 100); do grep -q '^held' "$TMP/lock1.out" && break; sleep 0.1; done
grep -qx 'setlk=0' "$TMP/lock1.out" || fail "a write lock on /locked/f: $(cat "$TMP/lock1.out")"
"$HOLD" --lock "$WEIR_MDS" /locked/f 0 >"$TMP/lock2.out" 2>&1 || fail "dne_hold --lock: $(cat "$TMP/lock2.out")"
grep -q '^closed=0' "$TMP/lock1.out" || fail "the lock holder did not close: $(cat "$TMP/lock1.out")"
{ kill "$holder" && wait "$holder"; } 2>/dev/null
grep -qx 'setlk=-11' "$TMP/lock2.out" || fail "a conflicting F_SETLK on MDT2: $(cat "$TMP/lock2.out"), want -11 (EAGAIN)"
grep -qx "getlk=0 type=w pid=$holder" "$TMP/lock2.out" ||
	fail "F_GETLK on MDT2: $(cat "$TMP/lock2.out"), want the write lock of pid $holder"
ms=$(sed -n 's/^setlkw=0 ms=//p' "$TMP/lock2.out")
[ -n "$ms" ] && [ "$ms" -ge 500 ] ||
	fail "F_SETLKW on MDT2: $(cat "$TMP/lock2.out"), want it granted after the holder's close (~1.5 s)"
"$BIN/weir" rm -r /locked || fail "rm -r /locked"

# 1f. the FUSE mount across MDTs (weir-fuse on libweir: calls by FID go to
# the FID's MDT): a copy into a remote directory on MDT1, a rename inside
# MDT1, a mv out of it (a rename across MDTs), ln back into it, a file made by another client
# read at once, flock(1) locks held on MDT1, an fcntl lock dropped at its
# close (skipped without /dev/fuse)
if [ -e /dev/fuse ] && { [ "$(id -u)" -eq 0 ] || command -v fusermount3 >/dev/null; }; then
	. "$SRCDIR/tests/lib/fuse.sh"
	MNT=$TMP/mnt
	mkdir -p "$MNT"
	"$BIN/weir" mkdir -i 1 /fz || fail "mkdir -i 1 /fz"
	if fuse_mount "$MNT" "$TMP/fuse.err" "mds=$WEIR_MDS"; then
		EXTRA+=("$FUSE_MOUNT_PID")
		head -c 200000 /dev/urandom >"$TMP/fz.src"
		cp "$TMP/fz.src" "$MNT/fz/a" && cmp -s "$TMP/fz.src" "$MNT/fz/a" ||
			fail "fuse: cp into /fz (MDT1)"
		case "$("$BIN/weir" path2fid /fz/a 2>&1)" in
		*0x300000400:*) ;;
		*) fail "fuse: /fz/a not on MDT1: $("$BIN/weir" path2fid /fz/a 2>&1)" ;;
		esac
		mkdir "$MNT/fz/sub" && mv "$MNT/fz/a" "$MNT/fz/sub/a" ||
			fail "fuse: mkdir and rename inside MDT1"
		mv "$MNT/fz/sub/a" "$MNT/fz-out.bin" 2>"$TMP/fuse-mv.err" ||
			fail "fuse: mv out of MDT1: $(cat "$TMP/fuse-mv.err")"
		cmp -s "$TMP/fz.src" "$MNT/fz-out.bin" && [ ! -e "$MNT/fz/sub/a" ] ||
			fail "fuse: mv out of MDT1 did not move the file"
		# a rename across MDTs (not a copy): the inode stays MDT1's
		case "$("$BIN/weir" path2fid /fz-out.bin 2>&1)" in
		*0x300000400:*) ;;
		*) fail "fuse: /fz-out.bin not MDT1's inode: $("$BIN/weir" path2fid /fz-out.bin 2>&1)" ;;
		esac
		# a hard link back into MDT1's directory: one inode, two names
		ln "$MNT/fz-out.bin" "$MNT/fz/hl" 2>"$TMP/fuse-ln.err" ||
			fail "fuse: ln across MDTs: $(cat "$TMP/fuse-ln.err")"
		[ "$(stat -c %h "$MNT/fz/hl" 2>&1)" = 2 ] && cmp -s "$TMP/fz.src" "$MNT/fz/hl" ||
			fail "fuse: the link across MDTs: $(stat -c %h "$MNT/fz/hl" 2>&1) links"
		rm "$MNT/fz/hl" || fail "fuse: rm of the link across MDTs"
		echo other >"$TMP/fz.other"
		"$BIN/weir" put "$TMP/fz.other" /fz/sub/other || fail "put /fz/sub/other"
		[ "$(cat "$MNT/fz/sub/other" 2>&1)" = other ] ||
			fail "fuse: a file another client made in /fz/sub: '$(cat "$MNT/fz/sub/other" 2>&1)'"
		touch "$MNT/fz/l"
		flock "$MNT/fz/l" sh -c "touch '$TMP/fl.ready'; sleep 2" &
		fl=$!
		for _ in $(seq 100); do [ -e "$TMP/fl.ready" ] && break; sleep 0.1; done
		flock -n "$MNT/fz/l" true && fail "fuse: a second flock on /fz/l (MDT1) was granted"
		wait "$fl" || fail "fuse: flock on /fz/l (MDT1) failed"
		flock -n "$MNT/fz/l" true || fail "fuse: flock on /fz/l after its holder ended"
		# an fcntl lock is dropped at its process's close (FUSE flush: the
		# lock owner's release), so another process takes it next
		lk='import fcntl, sys; f = open(sys.argv[1], "r+"); fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); f.close()'
		python3 -c "$lk" "$MNT/fz/l" && python3 -c "$lk" "$MNT/fz/l" 2>"$TMP/lockf.err" ||
			fail "fuse: an fcntl lock on /fz/l (MDT1) outlived its close: $(tail -n 1 "$TMP/lockf.err")"
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"
		wait "$FUSE_MOUNT_PID" 2>/dev/null
		"$BIN/weir" rm -r /fz /fz-out.bin || fail "rm -r /fz /fz-out.bin"
	else
		fail "weir-fuse did not mount: $(cat "$TMP/fuse.err")"
	fi
fi

# 1g. hard links and renames of files across MDTs (mds/dtx.c: DTX_LINK,
# DTX_UNLINK, DTX_RENAME; the name's MDT coordinates): a name on MDT1 and
# one on MDT0 for an MDT0 file (2 links, one FID), the first name removed
# (1 link, the data kept), the other moved from MDT1 to MDT2 (a third MDT:
# the inode stays on MDT0), renamed over an MDT0 file (replaced), a name
# of another MDT's file replaced by a rename inside its directory, and the
# limits: a directory is not moved (EXDEV), a rename across MDTs does not
# replace a remote entry (EXDEV), nor is a symlink linked across MDTs
# (EXDEV); and a remote directory inherits its parent's default layout
W() { "$BIN/weir" "$@"; }
nlinks() { W stat "$1" 2>&1 | sed -n 's/.*Links: \([0-9]*\).*/\1/p'; }
W mkdir /xa && W mkdir -i 1 /xb && W mkdir -i 2 /xc || fail "mkdir /xa, -i 1 /xb, -i 2 /xc"
W put "$TMP/data" /xa/f || fail "put /xa/f"
xf=$(W path2fid /xa/f 2>&1)
W ln /xa/f /xb/h 2>"$TMP/ln.err" || fail "ln /xa/f /xb/h (MDT0's file, MDT1's name): $(cat "$TMP/ln.err")"
[ "$(W path2fid /xb/h 2>&1)" = "$xf" ] || fail "/xb/h: $(W path2fid /xb/h 2>&1), want $xf"
[ "$(nlinks /xa/f)" = 2 ] && [ "$(nlinks /xb/h)" = 2 ] ||
	fail "links after ln across MDTs: /xa/f $(nlinks /xa/f), /xb/h $(nlinks /xb/h), want 2"
# a remote entry's type is its dentry's: "file/" is not a directory
out=$(W ln /xb/h/ /xa/g 2>&1) && fail "ln /xb/h/ (a file with a slash) succeeded: $out"
grep -q ENOTDIR <<<"$out" || fail "ln /xb/h/: $out, want ENOTDIR"
out=$(W stat /xb/h/ 2>&1) && fail "stat /xb/h/ (a file with a slash) succeeded"
grep -q ENOTDIR <<<"$out" || fail "stat /xb/h/: $out, want ENOTDIR"
W rm /xa/f || fail "rm /xa/f (its other name on MDT1)"
[ "$(nlinks /xb/h)" = 1 ] || fail "/xb/h has $(nlinks /xb/h) links after rm /xa/f, want 1"
W cat /xb/h 2>&1 | cmp -s - "$TMP/data" || fail "/xb/h does not read back after rm /xa/f"
W mv /xb/h /xc/m 2>"$TMP/mv.err" || fail "mv /xb/h /xc/m (MDT1 to MDT2, an MDT0 inode): $(cat "$TMP/mv.err")"
[ "$(W path2fid /xc/m 2>&1)" = "$xf" ] && ! W path2fid /xb/h >/dev/null 2>&1 ||
	fail "after mv /xb/h /xc/m: /xc/m $(W path2fid /xc/m 2>&1), /xb/h $(W path2fid /xb/h 2>&1)"
W put "$TMP/g" /xa/old || fail "put /xa/old"
W mv /xc/m /xa/old 2>"$TMP/mv.err" || fail "mv /xc/m over /xa/old: $(cat "$TMP/mv.err")"
[ "$(W path2fid /xa/old 2>&1)" = "$xf" ] && [ "$(nlinks /xa/old)" = 1 ] ||
	fail "/xa/old after the rename over it: $(W path2fid /xa/old 2>&1), $(nlinks /xa/old) links"
W cat /xa/old 2>&1 | cmp -s - "$TMP/data" || fail "/xa/old does not read back after the rename over it"
W mkdir /xb/d || fail "mkdir /xb/d"
out=$(W mv /xb/d /xa/d 2>&1) && fail "mv of a directory across MDTs: $out"
grep -q EXDEV <<<"$out" || fail "mv of a directory across MDTs: $out, want EXDEV"
# the atomic-save pattern over a name whose file is another MDT's: the name
# is replaced, the file's own MDT drops its link (DTX_UNLINK)
W ln /xa/old /xb/e && W put "$TMP/g" /xb/new || fail "ln /xa/old /xb/e, put /xb/new"
newfid=$(W path2fid /xb/new 2>&1)
W mv /xb/new /xb/e 2>"$TMP/mv.err" || fail "rename over a remote entry: $(cat "$TMP/mv.err")"
[ "$(W path2fid /xb/e 2>&1)" = "$newfid" ] && [ "$(nlinks /xa/old)" = 1 ] ||
	fail "after the rename over /xb/e: $(W path2fid /xb/e 2>&1) (want $newfid), /xa/old $(nlinks /xa/old) links (want 1)"
W put "$TMP/g" /xa/tmp && W ln /xa/tmp /xc/e2 || fail "put /xa/tmp, ln /xa/tmp /xc/e2"
out=$(W mv /xb/e /xc/e2 2>&1) && fail "rename across MDTs over a remote entry: $out"
grep -q EXDEV <<<"$out" || fail "rename across MDTs over a remote entry: $out, want EXDEV"
W ln -s /xa/old /xa/sym || fail "ln -s"
out=$(W ln /xa/sym /xb/sym 2>&1) && fail "ln of a symlink across MDTs: $out"
grep -q EXDEV <<<"$out" || fail "ln of a symlink across MDTs: $out, want EXDEV"
# a remote directory inherits its parent's default layout, as a local one
W setstripe -S 128K /xa && W mkdir -i 2 /xa/inh || fail "setstripe -S 128K /xa, mkdir -i 2 /xa/inh"
out=$(W getstripe /xa/inh 2>&1)
grep -q 'stripe_size: *131072' <<<"$out" || fail "getstripe /xa/inh (remote, MDT2): $out, want stripe_size 131072"
W put "$TMP/g" /xa/inh/f || fail "put /xa/inh/f"
out=$(W getstripe /xa/inh/f 2>&1)
grep -q 'lmm_stripe_size: *131072' <<<"$out" || fail "getstripe /xa/inh/f: $out, want 131072"
W rm -r /xa /xb /xc || fail "rm -r /xa /xb /xc"

# 1h. unmodified programs through the LD_PRELOAD shim across MDTs: mv(1)
# and ln(1) between directories of MDT0 and MDT1 (a rename and a link, not a
# copy: the FID stays), and python's os.replace() of a temporary file over a
# name whose file is MDT0's (the atomic-save pattern in a directory of MDT1)
SO=$BUILD/lib/libweir-preload.so
if [ -r "$SO" ] && ! ldd "$SO" 2>/dev/null | grep -q libasan; then
	P() { env LD_PRELOAD="$SO" WEIR_MOUNT=/weir WEIR_MDS="$WEIR_MDS" "$@"; }
	W mkdir /sa && W mkdir -i 1 /sb && W put "$TMP/g" /sa/f || fail "shim: setup /sa /sb /sa/f"
	sf=$(W path2fid /sa/f 2>&1)
	P mv /weir/sa/f /weir/sb/f 2>"$TMP/shim.err" || fail "shim: mv across MDTs: $(cat "$TMP/shim.err")"
	[ "$(W path2fid /sb/f 2>&1)" = "$sf" ] || fail "shim: mv across MDTs copied: $(W path2fid /sb/f 2>&1), want $sf"
	P ln /weir/sb/f /weir/sa/back 2>"$TMP/shim.err" || fail "shim: ln across MDTs: $(cat "$TMP/shim.err")"
	[ "$(nlinks /sa/back)" = 2 ] || fail "shim: /sa/back has $(nlinks /sa/back) links, want 2"
	P python3 -c 'import os; open("/weir/sb/.f.tmp", "w").write("new\n"); os.replace("/weir/sb/.f.tmp", "/weir/sb/f")' \
		2>"$TMP/shim.err" || fail "shim: os.replace over a remote entry: $(cat "$TMP/shim.err")"
	[ "$(W cat /sb/f 2>&1)" = new ] && [ "$(nlinks /sa/back)" = 1 ] ||
		fail "shim: after os.replace: /sb/f '$(W cat /sb/f 2>&1)', /sa/back $(nlinks /sa/back) links"
	W rm -r /sa /sb || fail "shim: rm -r /sa /sb"
fi

# 2. MDT2 killed: inactive after the timeout; restarted: up. A client whose
# first call to MDT2 comes while it is down waits for it, as for any server
# that is away, and is answered once it is back (client/mount.c)
"$BIN/weir" mkdir -i 2 /away || fail "mkdir -i 2 /away"
kill -9 "$(cat "$CL/mds2.pid")"
wait_row MDT0002 "$WEIR_MDS" $((TIMEOUT + 5)) inactive || fail "MDT2 not inactive after a kill"
WEIR_LOG=stderr WEIR_LOG_LEVEL=warn WEIR_RECOVERY_TIMEOUT=60 "$BIN/weir" stat /away >"$TMP/away.out" 2>&1 &
away=$!
EXTRA+=("$away")
# restarted once the stat has met MDT2 down (its log line)
for _ in $(seq 100); do grep -q 'cannot connect' "$TMP/away.out" && break; sleep 0.1; done
grep -q 'cannot connect' "$TMP/away.out" || fail "the stat of /away did not meet MDT2 down: $(cat "$TMP/away.out")"
"$SRCDIR/deploy/weir-local" restart --dir "$CL" mds2 2>"$TMP/restart.log" ||
	fail "restart mds2: $(cat "$TMP/restart.log")"
wait "$away" || fail "a first call to MDT2 while it was down: $(cat "$TMP/away.out")"
wait_row MDT0002 "$WEIR_MDS" 10 "$UP" || fail "MDT2 not up after its restart"
"$BIN/weir" rmdir /away || fail "rmdir /away"

# 3. MDT0 restarted: it remembers MDT1 and MDT2, which register again
"$SRCDIR/deploy/weir-local" restart --dir "$CL" mds 2>"$TMP/restart0.log" ||
	fail "restart mds: $(cat "$TMP/restart0.log")"
grep -q "cluster map: 2 MDTs besides MDT0 known" "$CL/mds.log" ||
	fail "MDT0 did not load its MDT list"
wait_row MDT0001 "$WEIR_MDS" 10 "$UP" || fail "MDT1 not up again after MDT0's restart"
wait_row MDT0002 "$WEIR_MDS" 10 "$UP" || fail "MDT2 not up again after MDT0's restart"

# 4. refusals
"$BIN/weir-mds" --mdt "$TMP/impostor" --mdt-index 1 --mgs "$WEIR_MDS" --listen 127.0.0.1:0 \
	--key-file "$WEIR_KEY_FILE" --log "$TMP/impostor.log" 2>/dev/null
rc=$?
[ $rc -eq 1 ] || fail "a second MDT1: exit $rc, want 1"
grep -q "EEXIST" "$TMP/impostor.log" || fail "a second MDT1: no -EEXIST in its log"
grep -q "the index belongs to another MDT" "$CL/mds.log" || fail "MDT0 did not say why"
row MDT0001 "$WEIR_MDS" | grep -Eq "$UP" || fail "MDT1 not up after the impostor"

# a copy of MDT1 (its uuid and secret) from another address
"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1 # consistent copy: all stopped
cp -a "$CL/mdt1" "$TMP/mdt1copy"
# (while it is not running) an MDT opened under another index
"$BIN/weir-mds" --mdt "$TMP/mdt1copy" --mdt-index 2 --mgs "$WEIR_MDS" --listen 127.0.0.1:0 \
	--key-file "$WEIR_KEY_FILE" --log "$TMP/wrongidx.log" 2>/dev/null
rc=$?
[ $rc -eq 1 ] || fail "an MDT opened under another index: exit $rc, want 1"
grep -q "this is MDT0001, not MDT0002" "$TMP/wrongidx.log" || fail "no wrong-index message"
"$SRCDIR/deploy/weir-local" up --dir "$CL" --mds 3 --oss 1 --ost-per-oss 1 --bin "$BIN" \
	--mds-arg --ost-timeout --mds-arg "$TIMEOUT" --mds-arg --lease-time --mds-arg 2s \
	--oss-arg --heartbeat --oss-arg 1s \
	>/dev/null 2>"$TMP/up2.log" ||
	{ fail "up again: $(cat "$TMP/up2.log")"; exit 1; }
wait_row MDT0001 "$WEIR_MDS" 10 "$UP" || fail "MDT1 not up after up again"
MDT1="127.0.0.1:$(port mds1)"
"$BIN/weir-mds" --mdt "$TMP/mdt1copy" --mdt-index 1 --mgs "$WEIR_MDS" --listen 127.0.0.1:0 \
	--ost-timeout "$TIMEOUT" --key-file "$WEIR_KEY_FILE" --log "$TMP/copy.log" 2>/dev/null
rc=$?
[ $rc -eq 1 ] || fail "a copy of MDT1 while MDT1 lives: exit $rc, want 1"
grep -q "EBUSY" "$TMP/copy.log" || fail "the copy: no -EBUSY in its log"
! grep -q "mdt=1 uuid=[0-9a-f]*: moved" "$CL/mds.log" || fail "MDT1 moved after a refused copy"
row MDT0001 "$WEIR_MDS" | grep -Eq "$UP" || fail "MDT1 not up after a refused copy"

# failover: MDT1 dies; once silent for the timeout, the copy takes over
kill -9 "$(cat "$CL/mds1.pid")"
sleep $((TIMEOUT + 1))
"$BIN/weir-mds" --mdt "$TMP/mdt1copy" --mdt-index 1 --mgs "$WEIR_MDS" --listen 127.0.0.1:0 \
	--port-file "$TMP/copy.port" --key-file "$WEIR_KEY_FILE" --log "$TMP/copy2.log" \
	2>/dev/null &
EXTRA+=($!)
for _ in $(seq 50); do [ -s "$TMP/copy.port" ] && break; sleep 0.2; done
newaddr="127.0.0.1:$(cat "$TMP/copy.port" 2>/dev/null)"
wait_row MDT0001 "$WEIR_MDS" 10 "$UP" || fail "MDT1 not up after the failover"
grep -q "mdt=1 uuid=[0-9a-f]*: moved from $MDT1 to $newaddr" "$CL/mds.log" ||
	fail "MDT0 did not log MDT1's move to $newaddr"
"$BIN/weir" --mds "$WEIR_MDS" df | grep -q "MDT0001" || fail "no MDT0001 after the failover"

# 5. an OSS sent to MDT1 (now the copy) is refused
mkdir -p "$TMP/ost"
"$BIN/weir-oss" --mds "$newaddr" --ost "$TMP/ost" --listen 127.0.0.1:0 \
	--key-file "$WEIR_KEY_FILE" --log "$TMP/oss.log" 2>/dev/null &
EXTRA+=($!)
ok=0
for _ in $(seq 50); do
	grep -q "OSS registration sent to MDT0001 refused" "$TMP/copy2.log" && { ok=1; break; }
	sleep 0.2
done
[ $ok -eq 1 ] || fail "MDT1 did not refuse an OSS"

# 6. option errors
"$BIN/weir-mds" --mdt "$TMP/x" --mdt-index 1 2>"$TMP/e1"
[ $? -eq 2 ] && grep -q "needs --mgs" "$TMP/e1" || fail "--mdt-index without --mgs: $(cat "$TMP/e1")"
"$BIN/weir-mds" --mdt "$TMP/x" --mgs 127.0.0.1:1 2>"$TMP/e2"
[ $? -eq 2 ] && grep -q "is for MDTs other than MDT0" "$TMP/e2" ||
	fail "--mgs without --mdt-index: $(cat "$TMP/e2")"
[ ! -e "$TMP/x" ] || fail "a refused start made an MDT directory"

if [ "$fails" -ne 0 ]; then
	echo "test_dne: $fails failure(s)"
	exit 1
fi
echo "test_dne: ok"
exit 0
