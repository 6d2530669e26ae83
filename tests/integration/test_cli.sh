#!/usr/bin/env bash
# tests/integration/test_cli.sh - the weir command and weir-mds as a new user
# meets them, checked by their exact output and exit status.
#
# Starts a local cluster (deploy/weir-local, 2 OSS x 1 OST, in a directory
# under /tmp: both OSTs on one filesystem) and checks:
#   setstripe -i alone (the first OST, the default count) on a new file and
#   on a directory, and -i with an index no OST has (refused by the MDS,
#   with a message that says so);
#   --mds with a host name that does not resolve (getaddrinfo's message),
#   with an OSS's address (not an MDS), with a non-Weir peer;
#   weir-mds on a busy port (fails before it formats an MDT: no directory
#   left) and with an --mdt under a file or an unwritable directory (the
#   log names the path and the reason);
#   weir df: OSTs on one filesystem counted once in the summary, and said so.
#
# The Makefile installs this script as BUILD/tests/integration/test_cli with
# @SRCDIR@ replaced by the repository, so tests/run.sh runs it like the C
# tests. Exit 0 = pass, 1 = fail. Servers are always stopped (trap); their
# logs are printed only on failure.
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
T0=$(date +%s)

fails=0
say() { printf '  %-44s %s\n' "$1" "$2"; }
ok() { say "$1" "ok${2:+ ($2)}"; }
bad() {
	say "$1" "FAILED: $2"
	fails=$((fails + 1))
}

for p in weir weir-mds weir-oss; do
	[ -x "$BIN/$p" ] || { echo "test_cli: no $BIN/$p (build first)"; exit 1; }
done

TMP=$(mktemp -d /tmp/weir-cli-test-XXXXXX)
CL=$TMP/cluster
MDS_PID=""

cleanup() {
	local rc=$?
	cd /
	if [ -n "$MDS_PID" ] && kill -0 "$MDS_PID" 2>/dev/null; then
		kill -KILL "$MDS_PID" 2>/dev/null
	fi
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 15 "$CL"/*.log "$TMP"/*.log 2>/dev/null
	fi
	if [ "${TH_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# expect WHAT WANT_STATUS WANT_STDERR CMD...: CMD exits WANT_STATUS and its
# stderr is exactly WANT_STDERR.
expect() {
	local what=$1 want_st=$2 want_err=$3 st
	shift 3
	"$@" >"$TMP/out" 2>"$TMP/err"
	st=$?
	if [ "$st" -ne "$want_st" ]; then
		bad "$what" "exit status $st, want $want_st: $(head -c 300 "$TMP/err")"
	elif [ "$(cat "$TMP/err")" != "$want_err" ]; then
		bad "$what" "stderr '$(head -c 300 "$TMP/err")', want '$want_err'"
	else
		ok "$what"
	fi
}

echo "== cluster"
out=$("$SRCDIR/deploy/weir-local" up --dir "$CL" --oss 2 --ost-per-oss 1 --bin "$BIN" 2>"$TMP/up.log") ||
	{ cat "$TMP/up.log"; echo "test_cli: cluster did not start"; exit 1; }
eval "$out"
[ -n "${WEIR_MDS:-}" ] || { echo "test_cli: no WEIR_MDS from weir-local"; exit 1; }
echo "  MDS $WEIR_MDS"
W="$BIN/weir --mds $WEIR_MDS"

# ---- setstripe -i
echo "== setstripe -i"
# offset_of PATH: the lmm_stripe_offset (file) or stripe_offset (directory) getstripe prints
offset_of() { $W getstripe "$1" | sed -n 's/.*stripe_offset: *\(-\{0,1\}[0-9]*\).*/\1/p'; }
$W mkdir /s
for i in 0 1; do
	$W setstripe -i $i /s/f$i
	o=$(offset_of /s/f$i)
	c=$($W getstripe /s/f$i | sed -n 's/^lmm_stripe_count: *//p')
	if [ "$o" = "$i" ] && [ "$c" = 1 ]; then
		ok "setstripe -i $i FILE" "object 0 on OST $i, default count 1"
	else
		bad "setstripe -i $i FILE" "stripe_offset '$o' count '$c', want $i and 1"
	fi
done
$W mkdir /s/d
$W setstripe -i 1 /s/d
want="stripe_count:  0 stripe_size:   0 pattern:       raid0 stripe_offset: 1"
got=$($W getstripe /s/d | tail -n 1)
[ "$got" = "$want" ] && ok "setstripe -i 1 DIR" "kept" || bad "setstripe -i 1 DIR" "getstripe: '$got'"
ofs=""
for n in a b c; do
	$W setstripe /s/d/$n # a new file with the directory's default
	ofs="$ofs$(offset_of /s/d/$n)"
done
[ "$ofs" = 111 ] && ok "files in an -i 1 directory" "all start on OST 1" ||
	bad "files in an -i 1 directory" "first OSTs '$ofs', want 111"
msg="no OST has that index (this filesystem has 2 OSTs, indexes 0 to 1; see weir df) (-EINVAL)"
expect "setstripe -i 7 DIR" 1 "weir setstripe: /s/d: -i 7: $msg" $W setstripe -i 7 /s/d
[ "$(offset_of /s/d)" = 1 ] && ok "refused -i 7 leaves the directory" ||
	bad "refused -i 7 leaves the directory" "stripe_offset $(offset_of /s/d)"
expect "setstripe -i 2 FILE" 1 "weir setstripe: /s/g: -i 2: $msg" $W setstripe -i 2 /s/g
expect "setstripe -c 1 -i 9 FILE" 1 "weir setstripe: /s/h: -i 9: $msg" $W setstripe -c 1 -i 9 /s/h
expect "no file made by a refused setstripe" 1 \
	"weir stat: /s/g: No such file or directory (-ENOENT)" $W stat /s/g

# ---- --mds
echo "== --mds"
expect "--mds with a name that does not resolve" 1 \
	"weir ls: no-such-host.invalid:7400: cannot resolve the host name 'no-such-host.invalid': Name or service not known" \
	"$BIN/weir" --mds no-such-host.invalid:7400 ls /
OSS0=127.0.0.1:$(cat "$CL/oss0.port")
expect "--mds with an OSS's address" 1 \
	"weir ls: $OSS0: the peer at $OSS0 is not an MDS: it is a Weir server that serves no MDS requests (an OSS); give the MDS's address to --mds or WEIR_MDS (-EOPNOTSUPP)" \
	"$BIN/weir" --mds "$OSS0" ls /

# ---- weir-mds start-up errors
echo "== weir-mds"
# mds_fails WHAT WANT CMD...: CMD (a weir-mds start, its log on stderr) exits 1
# and logs the line WANT.
mds_fails() {
	local what=$1 want=$2 st
	shift 2
	"$@" >/dev/null 2>"$TMP/mds.err"
	st=$?
	if [ "$st" -eq 1 ] && grep -qxF "$want" <(cut -d' ' -f5- "$TMP/mds.err"); then
		ok "$what" "exit 1, the log says why"
	else
		bad "$what" "exit $st: $(grep -E 'ERROR' "$TMP/mds.err")"
	fi
}
mds_fails "weir-mds on a busy port" \
	"listen=$WEIR_MDS rc=-EADDRINUSE(-98) Address already in use: cannot listen; nothing was opened or formatted" \
	"$BIN/weir-mds" --insecure --mdt "$TMP/busy-mdt" --listen "$WEIR_MDS"
[ ! -e "$TMP/busy-mdt" ] && ok "no MDT made on a busy port" || bad "no MDT made on a busy port" "$TMP/busy-mdt exists"
: >"$TMP/afile"
mds_fails "weir-mds --mdt under a file" \
	"mdt=$TMP/afile/mdt rc=-ENOTDIR(-20) Not a directory: cannot make the MDT directory: $TMP/afile is not a directory (uid $(id -u))" \
	"$BIN/weir-mds" --insecure --mdt "$TMP/afile/mdt" --listen 127.0.0.1:0
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -p "$TMP/ro" && chmod 755 "$TMP/ro" && chmod 711 "$TMP"
	mds_fails "weir-mds --mdt in a read-only directory" \
		"mdt=$TMP/ro/new/mdt rc=-EACCES(-13) Permission denied: cannot make the MDT directory: $TMP/ro is a directory this user may not write to (uid $(id -u nobody))" \
		su nobody -s /bin/sh -c "'$BIN/weir-mds' --insecure --mdt '$TMP/ro/new/mdt' --listen 127.0.0.1:0"
	chmod 700 "$TMP"
fi

# ---- df
echo "== df"
$W df >"$TMP/df" 2>&1
sum=$(awk '$1 == "filesystem_summary:" { print $2 }' "$TMP/df")
ost0=$(awk '$1 == "weir-OST0000_UUID" { print $2 }' "$TMP/df")
ost1=$(awk '$1 == "weir-OST0001_UUID" { print $2 }' "$TMP/df")
note=$(grep '^OSTs on one filesystem' "$TMP/df")
if [ -n "$ost0" ] && [ "$ost0" = "$ost1" ] && [ "$sum" = "$ost0" ] &&
	[ "$note" = "OSTs on one filesystem are counted once in the summary: OST0000 OST0001" ]; then
	ok "df: two OSTs on one disk" "counted once, said so"
else
	bad "df: two OSTs on one disk" "summary $sum, OSTs $ost0 $ost1, note '$note'"
	cat "$TMP/df"
fi

# ---- the cluster key (weir key, --key-file, the errors a user sees)
echo "== keys"
# expect_out WHAT WANT CMD...: CMD fails (exit 1) and its stderr is exactly WANT
expect_err() {
	local what=$1 want=$2 st
	shift 2
	"$@" >/dev/null 2>"$TMP/key.err"
	st=$?
	if [ "$st" -eq 1 ] && [ "$(cat "$TMP/key.err")" = "$want" ]; then
		ok "$what"
	else
		bad "$what" "exit $st: $(cat "$TMP/key.err")"
	fi
}
K2=$TMP/other.key
$BIN/weir key gen --name other "$K2" >"$TMP/gen.out" 2>&1 &&
	[ "$(stat -c %a "$K2")" = 600 ] && grep -q "new cluster key 'other'" "$TMP/gen.out" &&
	ok "key gen: a 0600 file" || bad "key gen: a 0600 file" "$(cat "$TMP/gen.out")"
expect_err "key gen refuses to overwrite" \
	"weir key gen: $K2: exists; not overwriting a key file (use -f to replace it, or 'weir key rotate' to add a key) (-EEXIST)" \
	$BIN/weir key gen "$K2"
expect_err "another cluster's key: refused, said so" \
	"weir: $WEIR_MDS: authentication failed: the cluster key differs (-EACCES)" \
	env WEIR_KEY_FILE="$K2" $BIN/weir ls /
expect_err "--insecure client: refused, said so" \
	"weir: $WEIR_MDS: authentication failed: the server requires a cluster key and this client has none (--insecure) (-EACCES)" \
	$BIN/weir --insecure ls /
expect_err "no key file: says how to make one" \
	"weir: no usable cluster key: $TMP/none.key: No such file or directory (set WEIR_KEY_FILE, or WEIR_INSECURE=1 for a server running --insecure) (-ENOENT)" \
	$BIN/weir --key-file "$TMP/none.key" ls /
chmod 644 "$K2"
expect_err "a key file others can read: refused" \
	"weir: no usable cluster key: $K2: mode 0644 lets others read or the group change the cluster key; run chmod 600 $K2 (or 640, with a group of the users allowed to run Weir clients) (-EPERM)" \
	env WEIR_KEY_FILE="$K2" $BIN/weir ls /
chmod 600 "$K2"
"$BIN/weir-mds" --mdt "$TMP/nokey-mdt" --key-file "$TMP/none.key" --listen 127.0.0.1:0 \
	>/dev/null 2>"$TMP/nokey.err"
st=$?
if [ $st -eq 1 ] && grep -q "^weir-mds: no usable cluster key: $TMP/none.key: No such file" "$TMP/nokey.err" &&
	grep -q "make one with: weir key gen $TMP/none.key" "$TMP/nokey.err" &&
	grep -q -- "--insecure" "$TMP/nokey.err"; then
	ok "weir-mds without a key does not start" "says how to make one or --insecure"
else
	bad "weir-mds without a key does not start" "exit $st: $(cat "$TMP/nokey.err")"
fi
# rotation through the CLI: rotate puts a new key first and keeps the old one
cp "$WEIR_KEY_FILE" "$TMP/rot.key"
$BIN/weir key rotate --name next "$TMP/rot.key" >/dev/null 2>&1
$BIN/weir key show "$TMP/rot.key" >"$TMP/show.out" 2>&1
if [ "$(awk '{print $1, $4}' "$TMP/show.out")" = "next current
weir-local accepted" ]; then
	ok "key rotate: new key first, old kept"
else
	bad "key rotate: new key first, old kept" "$(cat "$TMP/show.out")"
fi
$BIN/weir key retire "$TMP/rot.key" >/dev/null 2>&1
[ "$($BIN/weir key show "$TMP/rot.key" | awk '{print $1}')" = next ] &&
	ok "key retire: only the new key left" || bad "key retire: only the new key left" "$($BIN/weir key show "$TMP/rot.key")"
# the old file (weir-local's key alone) still works with the running servers
$W ls / >/dev/null 2>&1 && ok "the cluster's key still works" || bad "the cluster's key still works"
if grep -q "authentication failed: the cluster key differs (-EACCES)" "$CL/mds.log" &&
	grep -q "authentication failed: the peer has no cluster key" "$CL/mds.log"; then
	ok "the MDS logs each refusal"
else
	bad "the MDS logs each refusal" "$(grep -c 'authentication failed' "$CL/mds.log") lines"
fi

echo
echo "test_cli: $fails failed check(s) in $(($(date +%s) - T0)) s"
[ "$fails" -eq 0 ]
