#!/usr/bin/env bash
# deploy/demo.sh - `make demo`: start a local Weir cluster and push real data
# through it.
#
#   1. deploy/weir-local up --dir run/demo (a previous demo cluster and its
#      data are removed first)
#   2. weir put -r a real tree (DEMO_TREE, default /usr/include: thousands of
#      files and some symlinks, copied as symlinks)
#   3. weir put a checkpoint-like file of DEMO_BIG_MB MiB (default 1024) of
#      /dev/urandom into a directory set up with `weir setstripe -c 4 -S 1M`
#   4. weir get -r both back; compare the SHA-256 of every file; check that
#      `weir getstripe` shows 4 objects on 4 distinct OSTs whose sizes add up
#      to the file size
#   5. print MB/s of each phase, and leave the cluster running
# Exits non-zero on any mismatch. Scratch space: run/demo-work (removed at the
# end; at most the tree plus one copy of the big file at a time).
# Environment: BUILD (build directory, default build), DEMO_TREE, DEMO_BIG_MB.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO"

case "${1:-}" in
-h | --help)
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
esac

BUILD=${BUILD:-build}
DEMO_TREE=${DEMO_TREE:-/usr/include}
DEMO_BIG_MB=${DEMO_BIG_MB:-1024}
DIR=run/demo
WORK=$REPO/run/demo-work
[ -x "$BUILD/bin/weir" ] || { echo "demo: $BUILD/bin/weir missing: run make first" >&2; exit 1; }
BIN=$(cd "$BUILD/bin" && pwd)
WEIR=$BIN/weir
LOCAL=$SCRIPT_DIR/weir-local

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

now() { date +%s.%N; }
# rate BYTES T0 T1 -> "123.4 MB/s (1.23 s)"
rate() {
	awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN {
		d = t1 - t0; if (d <= 0) d = 0.000001
		printf "%.1f MB/s (%.2f s)", b / d / 1e6, d }'
}

step() { echo; echo "=== $*"; }

cleanup_work() { rm -rf "$WORK"; }
trap cleanup_work EXIT

# ------------------------------------------------------------ 1. cluster
step "starting a local cluster in $DIR"
"$LOCAL" down --dir "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR" "$WORK"
mkdir -p "$WORK"
# weir-local up prints its report on stderr and "export WEIR_MDS=..." on stdout
up_out=$("$LOCAL" up --dir "$DIR" --bin "$BIN") || {
	echo "$up_out"
	echo "demo: the cluster did not start" >&2
	exit 1
}
WEIR_MDS=$(sed -n 's/^export WEIR_MDS=//p' <<<"$up_out" | head -1)
[ -n "$WEIR_MDS" ] || { echo "demo: no WEIR_MDS in weir-local's output" >&2; exit 1; }
export WEIR_MDS
echo "WEIR_MDS=$WEIR_MDS"

# ------------------------------------------------------------ 2. put a tree
step "put -r $DEMO_TREE"
[ -d "$DEMO_TREE" ] || { echo "demo: $DEMO_TREE is not a directory" >&2; exit 1; }
tree_name=$(basename "$DEMO_TREE")
src=$WORK/src/$tree_name
mkdir -p "$src"
# regular files, directories and symlinks (other special files left out)
(cd "$DEMO_TREE" && find . \( -type d -o -type f -o -type l \) -print0 |
	tar --null --no-recursion -T - -cf -) | tar -xf - -C "$src"
nlinks=$(find "$src" -type l | wc -l)
nfiles=$(find "$src" -type f | wc -l)
ndirs=$(find "$src" -type d | wc -l)
tree_bytes=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "tree: $nfiles files, $ndirs directories, $nlinks symlinks, $tree_bytes bytes"
t0=$(now)
"$WEIR" put -r "$src" "/$tree_name" || fail "weir put -r $src /$tree_name"
t1=$(now)
put_tree_rate=$(rate "$tree_bytes" "$t0" "$t1")
echo "put tree: $put_tree_rate, $(awk -v n="$nfiles" -v a="$t0" -v b="$t1" \
	'BEGIN { printf "%.0f files/s", n / (b - a) }')"

# ------------------------------------------------------------ 3. put a big file
step "put a ${DEMO_BIG_MB} MiB checkpoint into /ckpt (setstripe -c 4 -S 1M)"
"$WEIR" mkdir /ckpt
"$WEIR" setstripe -c 4 -S 1M /ckpt
"$WEIR" getstripe /ckpt
big=$WORK/ckpt-0001.bin
big_bytes=$((DEMO_BIG_MB * 1024 * 1024))
# generated once, hashed on the way to disk
big_sum=$(head -c "$big_bytes" /dev/urandom | tee "$big" | sha256sum | cut -d' ' -f1)
t0=$(now)
"$WEIR" put "$big" /ckpt || fail "weir put $big /ckpt"
t1=$(now)
put_big_rate=$(rate "$big_bytes" "$t0" "$t1")
echo "put big: $put_big_rate"
rm -f "$big" # the copy in Weir is the only one now

# ------------------------------------------------------------ 4. get both back
step "get -r /$tree_name"
out=$WORK/out
mkdir -p "$out"
t0=$(now)
"$WEIR" get -r "/$tree_name" "$out/$tree_name" || fail "weir get -r /$tree_name"
t1=$(now)
get_tree_rate=$(rate "$tree_bytes" "$t0" "$t1")
echo "get tree: $get_tree_rate"

step "get -r /ckpt"
t0=$(now)
"$WEIR" get -r /ckpt "$out/ckpt" || fail "weir get -r /ckpt"
t1=$(now)
get_big_rate=$(rate "$big_bytes" "$t0" "$t1")
echo "get big: $get_big_rate"

step "compare SHA-256 of every file"
(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$WORK/src.sha256"
if [ -d "$out/$tree_name" ]; then
	(cd "$out/$tree_name" && find . -type f -print0 | sort -z | xargs -0 sha256sum) \
		>"$WORK/out.sha256"
else
	: >"$WORK/out.sha256"
fi
# symlinks: the same targets
(cd "$src" && find . -type l -printf '%p -> %l\n' | sort) >>"$WORK/src.sha256"
[ -d "$out/$tree_name" ] &&
	(cd "$out/$tree_name" && find . -type l -printf '%p -> %l\n' | sort) >>"$WORK/out.sha256"
if diff -q "$WORK/src.sha256" "$WORK/out.sha256" >/dev/null; then
	echo "OK   tree: $nfiles files identical, $nlinks symlinks with the same targets"
else
	fail "tree: $(diff "$WORK/src.sha256" "$WORK/out.sha256" | grep -c '^[<>]') lines differ:"
	diff "$WORK/src.sha256" "$WORK/out.sha256" | head -20
fi
got_sum=$(sha256sum "$out/ckpt/ckpt-0001.bin" 2>/dev/null | cut -d' ' -f1 || true)
if [ "$got_sum" = "$big_sum" ]; then
	echo "OK   big file: sha256 $big_sum"
else
	fail "big file: sha256 ${got_sum:-missing}, want $big_sum"
fi
rm -rf "$out/ckpt"

step "weir getstripe /ckpt/ckpt-0001.bin"
gs=$("$WEIR" getstripe /ckpt/ckpt-0001.bin) || fail "weir getstripe"
echo "$gs"
# object lines: obdidx objid size stripe
read -r nobj ndistinct osize_sum < <(awk '
	/obdidx/ { objs = 1; next }
	objs && NF >= 4 && $1 ~ /^[0-9]+$/ { n++; sum += $3; if (!seen[$1]++) d++ }
	END { printf "%d %d %.0f\n", n, d, sum }' <<<"$gs")
file_size=$("$WEIR" stat /ckpt/ckpt-0001.bin 2>/dev/null |
	awk '/[Ss]ize/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; exit } }')
if [ "$nobj" -eq 4 ] && [ "$ndistinct" -eq 4 ] && [ "$osize_sum" = "$big_bytes" ]; then
	echo "OK   4 objects on 4 distinct OSTs; object sizes sum to $osize_sum = the file size"
else
	fail "getstripe: $nobj objects on $ndistinct distinct OSTs, sizes sum to $osize_sum, want 4, 4, $big_bytes"
fi
if [ -n "$file_size" ] && [ "$file_size" != "$big_bytes" ]; then
	fail "weir stat size $file_size, want $big_bytes"
fi

# ------------------------------------------------------------ 5. summary
step "summary"
printf '  %-10s %s\n' "put tree" "$put_tree_rate" "put big" "$put_big_rate" \
	"get tree" "$get_tree_rate" "get big" "$get_big_rate"
echo
"$WEIR" df -h || true
echo
if [ "$failures" -eq 0 ]; then
	echo "demo: OK - every file came back identical"
else
	echo "demo: FAIL - $failures check(s) failed"
fi
echo
echo "The demo cluster is still running. Use it:"
echo "  export WEIR_MDS=$WEIR_MDS"
echo "  $BUILD/bin/weir ls /"
echo "  $BUILD/bin/weir ls -l /ckpt"
echo "Stop it:"
echo "  deploy/weir-local down --dir $DIR"
[ "$failures" -eq 0 ]
