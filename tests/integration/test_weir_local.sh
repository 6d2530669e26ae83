#!/usr/bin/env bash
# tests/integration/test_weir_local.sh - deploy/weir-local as a new user runs
# it, and `weir hsm release` of a file whose archive is pending.
#
# Cases (each checks exact output and exit status):
#  - status of an empty directory and of a missing one: no table, "no
#    cluster in DIR", exit 1, the missing directory not made;
#  - up (2 OSS x 1 OST), a file put; kill -9 of oss0: status says dead;
#    restart (no name) brings it back: status says alive, the file reads back
#    the same; restart of a live named server (oss1) gives it a new pid;
#    kill -9 of the MDS, restart: same port, the file reads back;
#  - with a local s3rver (deploy/s3-local): up --s3 five times in a row, each
#    up and never "died during start-up" (weir-hsmd was waited for before it
#    was started), then down;
#  - an auto-export association, the copytool killed (-9), a file written:
#    its archive is pending, and `weir hsm release` says so (not "never
#    archived"); restart hsmd; `weir hsm archive` waits for it; release works.
#
# The Makefile installs this script as BUILD/tests/integration/test_weir_local
# with @SRCDIR@ replaced by the repository, so tests/run.sh runs it like the C
# tests. Exit 0 = pass, 1 = fail, 77 = skipped (node or s3rver missing: only
# the S3 cases are skipped, reported as a note). Servers are always stopped.
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
WL=$SRCDIR/deploy/weir-local
S3L=$SRCDIR/deploy/s3-local
T0=$(date +%s)

fails=0
say() { printf '  %3ss %-46s %s\n' "$(($(date +%s) - T0))" "$1" "$2"; }
ok() { say "$1" "ok${2:+ ($2)}"; }
bad() {
	say "$1" "FAILED: $2"
	fails=$((fails + 1))
}

for b in weir weir-mds weir-oss weir-hsmd; do
	[ -x "$BIN/$b" ] || { echo "test_weir_local: no $BIN/$b (build first)"; exit 1; }
done

TMP=$(mktemp -d /tmp/weir-local-test-XXXXXX)
CL=$TMP/cluster
S3D=$TMP/s3
cleanup() {
	local rc=$?
	"$WL" down --dir "$CL" >/dev/null 2>&1
	"$WL" down --dir "$CL-s3" >/dev/null 2>&1
	"$S3L" down --dir "$S3D" >/dev/null 2>&1
	if [ $rc -eq 0 ] && [ -z "${TH_KEEP:-}" ]; then
		rm -rf "$TMP"
	else
		echo "  (kept $TMP)"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The STATE column of server $2 in `weir-local status --dir $1`.
state_of() {
	"$WL" status --dir "$1" --bin "$BIN" 2>/dev/null | awk -v s="$2" '$1 == s { print $3; exit }'
}
pid_of() { cat "$1/$2.pid" 2>/dev/null; }

# ---- status where there is no cluster
mkdir -p "$TMP/empty"
for d in "$TMP/empty" "$TMP/missing"; do
	out=$("$WL" status --dir "$d" 2>"$TMP/err")
	rc=$?
	want="weir-local: no cluster in $d (start one with: $WL up --dir $d)"
	if [ $rc -eq 1 ] && [ -z "$out" ] && [ "$(cat "$TMP/err")" = "$want" ]; then
		ok "status ${d##*/} dir: no cluster, exit 1"
	else
		bad "status ${d##*/} dir" "rc=$rc stdout='$out' stderr='$(cat "$TMP/err")'"
	fi
done
[ ! -e "$TMP/missing" ] && ok "status makes no directory" ||
	bad "status makes no directory" "$TMP/missing was made"

# ---- up, kill -9 an OSS, restart it
if ! eval "$("$WL" up --dir "$CL" --bin "$BIN" --oss 2 --ost-per-oss 1 2>"$TMP/up.err")"; then
	cat "$TMP/up.err"
	bad "up" "failed"
	exit 1
fi
W=("$BIN/weir" --mds "$WEIR_MDS")
head -c 3000000 /dev/urandom >"$TMP/f.bin"
# both OSSs hold a part
if "${W[@]}" mkdir /d && "${W[@]}" setstripe -c 2 /d && "${W[@]}" put "$TMP/f.bin" /d/f.bin >/dev/null
then ok "up; a file put"; else bad "put" "failed"; fi

oss0=$(pid_of "$CL" oss0)
kill -9 "$oss0"
while kill -0 "$oss0" 2>/dev/null; do sleep 0.05; done
st=$(state_of "$CL" oss0)
[ "$st" = dead ] && ok "kill -9 oss0: status says dead" || bad "status after kill -9" "oss0 is '$st'"

if "$WL" restart --dir "$CL" 2>"$TMP/restart.err"; then
	st=$(state_of "$CL" oss0)
	if [ "$st" = alive ] && [ "$(pid_of "$CL" oss0)" != "$oss0" ] &&
		grep -q "^weir-local: oss0 (dead) restarted: pid [0-9]*$" "$TMP/restart.err"; then
		ok "restart (no name): oss0 alive again"
	else
		bad "restart (no name)" "oss0 is '$st'; $(cat "$TMP/restart.err")"
	fi
else
	bad "restart (no name)" "exit $?: $(cat "$TMP/restart.err")"
fi
rm -f "$TMP/back"
if "${W[@]}" get /d/f.bin "$TMP/back" >/dev/null 2>&1 && cmp -s "$TMP/f.bin" "$TMP/back"; then
	ok "the file reads back after the restart"
else
	bad "read after restart" "$(cmp "$TMP/f.bin" "$TMP/back" 2>&1)"
fi

out=$("$WL" restart --dir "$CL" 2>&1)
[ $? -eq 0 ] && [ "$out" = "weir-local: no dead server in $CL (status: $WL status --dir $CL)" ] &&
	ok "restart with nothing dead: says so" || bad "restart with nothing dead" "$out"
out=$("$WL" restart --dir "$CL" oss7 2>&1)
[ $? -eq 1 ] && [[ "$out" == "weir-local: no server 'oss7' in $CL (servers: mds oss0 oss1)" ]] &&
	ok "restart of an unknown server: exit 1" || bad "restart oss7" "$out"

oss1=$(pid_of "$CL" oss1)
if "$WL" restart --dir "$CL" oss1 2>"$TMP/restart.err" && [ "$(state_of "$CL" oss1)" = alive ] &&
	[ "$(pid_of "$CL" oss1)" != "$oss1" ] && ! kill -0 "$oss1" 2>/dev/null; then
	ok "restart oss1 (alive): a new process"
else
	bad "restart oss1 (alive)" "$(cat "$TMP/restart.err")"
fi

mds=$(pid_of "$CL" mds)
port=$(cat "$CL/mds.port")
kill -9 "$mds"
while kill -0 "$mds" 2>/dev/null; do sleep 0.05; done
st=$(state_of "$CL" mds)
if [ "$st" = dead ] && "$WL" restart --dir "$CL" 2>"$TMP/restart.err" &&
	[ "$(state_of "$CL" mds)" = alive ] && [ "$(cat "$CL/mds.port")" = "$port" ]; then
	rm -f "$TMP/back"
	if "${W[@]}" get /d/f.bin "$TMP/back" >/dev/null 2>&1 && cmp -s "$TMP/f.bin" "$TMP/back"; then
		ok "kill -9 mds, restart: same port, file reads"
	else
		bad "read after mds restart" "$(cmp "$TMP/f.bin" "$TMP/back" 2>&1)"
	fi
else
	bad "mds restart" "state '$st'; $(cat "$TMP/restart.err")"
fi
"$WL" down --dir "$CL" >/dev/null 2>&1

# ---- the S3 cases
if ! command -v node >/dev/null || [ ! -f "$SRCDIR/.deps/node_modules/s3rver/bin/s3rver.js" ]; then
	echo "  (S3 cases skipped: node or s3rver not installed; deploy/deps.sh installs them)"
	[ $fails -eq 0 ] || exit 1
	exit 77
fi
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}
if ! eval "$("$S3L" up --dir "$S3D" --port "$(free_port)" --bucket wl-bucket 2>"$TMP/s3.err")"; then
	bad "s3-local up" "$(cat "$TMP/s3.err")"
	exit 1
fi

# OSTs slow to register: in a bin directory of its own, a weir whose first
# `df` of each up fails (as when not every OST is up yet), so that up waits
# in its loop at least once (where it looked for weir-hsmd before starting it)
SLOW=$TMP/slowbin
mkdir -p "$SLOW"
for b in weir-mds weir-oss weir-hsmd; do ln -s "$BIN/$b" "$SLOW/$b"; done
cat >"$SLOW/weir" <<EOF
#!/usr/bin/env bash
if [[ " \$* " == *" df "* ]] && [ ! -e "$TMP/df-failed" ]; then
	touch "$TMP/df-failed"
	exit 1
fi
exec "$BIN/weir" "\$@"
EOF
chmod +x "$SLOW/weir"
ups=0
for i in 1 2 3 4 5; do
	rm -f "$TMP/df-failed"
	if out=$("$WL" up --dir "$CL-s3" --bin "$SLOW" --oss 1 --ost-per-oss 1 \
		--s3 "$AWS_ENDPOINT_URL" 2>"$TMP/up.err") && ! grep -q died "$TMP/up.err" &&
		[ -e "$TMP/df-failed" ] && [ "$(state_of "$CL-s3" hsmd)" = alive ]; then
		ups=$((ups + 1))
		[ $i -eq 5 ] || "$WL" down --dir "$CL-s3" >/dev/null 2>&1
	else
		bad "up --s3 #$i" "$(grep -m3 'died\|did not' "$TMP/up.err")"
		break
	fi
done
[ $ups -eq 5 ] && ok "up --s3 five times, OSTs slow: no false 'died'"
eval "$out"
W=("$BIN/weir" --mds "$WEIR_MDS")

# ---- release of a file whose auto-export archive is pending
"${W[@]}" mkdir /ae && "${W[@]}" dra create /ae s3://wl-bucket/ae --auto-export >/dev/null ||
	bad "dra create --auto-export" "failed"
hsmd=$(pid_of "$CL-s3" hsmd)
kill -9 "$hsmd"
while kill -0 "$hsmd" 2>/dev/null; do sleep 0.05; done
head -c 100000 /dev/urandom >"$TMP/a.bin"
"${W[@]}" put "$TMP/a.bin" /ae/a.bin >/dev/null || bad "put /ae/a.bin" "failed"
id=$("${W[@]}" hsm state /ae/a.bin | sed -n 's/^ *action: *[a-z]* #\([0-9]*\) .*/\1/p')
out=$("${W[@]}" hsm release /ae/a.bin 2>&1)
rc=$?
want="weir hsm release: /ae/a.bin: no verified archive copy yet: its archive (action ${id:-?}) is"
want+=" pending; wait for it with 'weir hsm archive /ae/a.bin' (it waits for the pending one),"
want+=" then release (-ENODATA)"
if [ $rc -eq 1 ] && grep -qxF "$want" <<<"$out"; then
	ok "release while the archive is pending: says so"
else
	bad "release while pending" "rc=$rc: $out"
fi
if "$WL" restart --dir "$CL-s3" hsmd 2>"$TMP/restart.err" && [ "$(state_of "$CL-s3" hsmd)" = alive ]
then
	ok "restart hsmd (dead, named)"
else
	bad "restart hsmd" "$(cat "$TMP/restart.err")"
fi
if timeout 60 "${W[@]}" hsm archive /ae/a.bin >/dev/null 2>&1 &&
	"${W[@]}" hsm release /ae/a.bin >/dev/null 2>&1; then
	ok "archive waits for it; release then works"
else
	bad "archive, release" "$("${W[@]}" hsm release /ae/a.bin 2>&1)"
fi

echo "  $(($(date +%s) - T0)) s"
[ $fails -eq 0 ] || { echo "test_weir_local: $fails failed"; exit 1; }
exit 0
