#!/usr/bin/env bash
# tests/integration/test_fuse.sh - weir-fuse driven by real programs.
#
# Starts a local cluster (deploy/weir-local, 2 OSS x 1 OST, in a directory
# under /tmp), mounts it with build/bin/weir-fuse, and runs unmodified
# programs on the mount, checking what they produced against the source
# (content, sizes, modes, mtimes), not just exit codes: cp -a, tar, rsync -a,
# find | xargs sha256sum, ls -la, du -sb, mv, ln, ln -s, dd conv=fsync, a
# shell redirect, python3 (os.walk, open, shutil.copytree, json), sqlite3 in
# WAL mode, git, gcc (a binary built in Weir runs from the mount), a shared
# writable mmap + msync read by other clients (the weir CLI and a second
# mount through deploy/mount.fuse.weir), the coherence promise between
# mounts, flock and fcntl locks across mounts (and sqlite3 writing one
# database through both); then runs the POSIX conformance suite (tests/posix) through the
# mount. Unmounts with SIGTERM and fusermount3 -u, and checks both ends.
#
# The Makefile installs this script as BUILD/tests/integration/test_fuse with
# @SRCDIR@ replaced by the repository, so tests/run.sh runs it like the C
# tests. Exit 0 = pass, 1 = fail, 77 = skipped (no usable /dev/fuse).
# Servers and mounts are always stopped, even on failure (trap).
set -u

SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
BIN=$BUILD/bin
T0=$(date +%s)

fails=0
notes=()
say() { printf '  %-40s %s\n' "$1" "$2"; }
ok() { say "$1" "ok${2:+ ($2)}"; }
bad() {
	say "$1" "FAILED: $2"
	fails=$((fails + 1))
}
note() { notes+=("$1"); }

skip() {
	echo "SKIP: $*"
	exit 77
}

# ---- can we mount at all?
[ -x "$BIN/weir-fuse" ] || { echo "test_fuse: no $BIN/weir-fuse (build first)"; exit 1; }
[ -c /dev/fuse ] || skip "no /dev/fuse"
{ exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened by uid $(id -u)"
exec 9>&-
grep -qw fuse /proc/filesystems || skip "the kernel has no fuse filesystem"
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
	skip "not root and no fusermount3"
fi
for p in rsync sqlite3 git gcc python3 tar; do
	command -v $p >/dev/null || { echo "test_fuse: $p is missing (deploy/deps.sh installs it)"; exit 1; }
done

TMP=$(mktemp -d /tmp/weir-fuse-test-XXXXXX)
chmod 755 "$TMP" # another user walks to the mount (the allow_other check)
CL=$TMP/cluster
MNT=$TMP/mnt
MNT2=$TMP/mnt2
SRC=$TMP/src
mkdir -p "$MNT" "$MNT2" "$SRC"
FUSE_PID=""
export WEIR_LOG=$TMP/fuse.log WEIR_LOG_LEVEL=${WEIR_LOG_LEVEL:-notice}
export HOME=$TMP/home
mkdir -p "$HOME"

cleanup() {
	local rc=$?
	cd /
	for m in "$TMP/mnt3" "$MNT2" "$MNT"; do
		if grep -q " $m " /proc/mounts 2>/dev/null; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	if [ -n "$FUSE_PID" ] && kill -0 "$FUSE_PID" 2>/dev/null; then
		kill -TERM "$FUSE_PID" 2>/dev/null
		sleep 0.5
		kill -KILL "$FUSE_PID" 2>/dev/null
	fi
	"$SRCDIR/deploy/weir-local" down --dir "$CL" >/dev/null 2>&1
	if [ "$fails" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "---- last lines of the logs"
		tail -n 15 "$TMP"/fuse*.log "$CL"/*.log 2>/dev/null
	fi
	if [ "${TH_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# Wait until $1 is (or, with $2 = gone, is no longer) a mount point: up to 10 s.
wait_mount() {
	local i
	for ((i = 0; i < 100; i++)); do
		if grep -q " $1 fuse.weir " /proc/mounts; then
			[ "${2:-}" = gone ] || return 0
		else
			[ "${2:-}" = gone ] && return 0
		fi
		sleep 0.1
	done
	return 1
}

# ---- cluster
echo "== cluster"
out=$("$SRCDIR/deploy/weir-local" up --dir "$CL" --oss 2 --ost-per-oss 1 --bin "$BIN" 2>"$TMP/up.log") ||
	{ cat "$TMP/up.log"; echo "test_fuse: cluster did not start"; exit 1; }
eval "$out"
[ -n "${WEIR_MDS:-}" ] || { echo "test_fuse: no WEIR_MDS from weir-local"; exit 1; }
echo "  MDS $WEIR_MDS"
WEIR="$BIN/weir --mds $WEIR_MDS"

# ---- source tree: ~400 real headers plus odd cases
echo "== source tree"
(cd /usr/include && find linux -type f -name '*.h' | sort | head -n 380 | xargs cp --parents -t "$SRC")
mkdir -p "$SRC/empty dir/nested" "$SRC/bin"
: >"$SRC/empty file"
printf 'with spaces\n' >"$SRC/a name with spaces.txt"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$SRC/bin/random.bin"
printf '#!/bin/sh\necho script\n' >"$SRC/bin/run.sh"
chmod 0755 "$SRC/bin/run.sh"
chmod 0600 "$SRC/a name with spaces.txt"
touch -d '2001-02-03 04:05:06.789' "$SRC/bin/random.bin"
nfiles=$(find "$SRC" -type f | wc -l)
echo "  $nfiles files, $(du -sh "$SRC" | cut -f1)"

# ---- mount (foreground daemon in the background, so we know its pid)
echo "== mount"
"$BIN/weir-fuse" "$MNT" -f -o "mds=$WEIR_MDS,allow_other" 2>"$TMP/fuse.err" &
FUSE_PID=$!
if ! wait_mount "$MNT"; then
	cat "$TMP/fuse.err"
	if grep -qiE "permission denied|operation not permitted|fuse: device not found" "$TMP/fuse.err"; then
		skip "the FUSE mount is refused here: $(head -n1 "$TMP/fuse.err")"
	fi
	echo "test_fuse: weir-fuse did not mount"
	exit 1
fi
grep " $MNT " /proc/mounts | sed 's/^/  /'

# Compare two trees: content (diff -r) and metadata (type, size, mode, mtime to the second).
meta() { (cd "$1" && find . -printf '%y %s %m %TY-%Tm-%Td %TT %p\n' | sed 's/\.[0-9]* \./ ./' |
	awk '$1 == "d" { $2 = "-" } { print }' | sort); }
same_tree() { # what src dst [nometa]
	local what=$1 a=$2 b=$3
	if ! diff -r "$a" "$b" >"$TMP/diff.out" 2>&1; then
		bad "$what" "diff -r: $(head -n 3 "$TMP/diff.out" | tr '\n' ' ')"
		return 1
	fi
	if [ -z "${4:-}" ] && ! diff <(meta "$a") <(meta "$b") >"$TMP/meta.out"; then
		bad "$what" "metadata differs: $(head -n 4 "$TMP/meta.out" | tr '\n' ' ')"
		return 1
	fi
	return 0
}

echo "== programs"
# cp -a
if cp -a "$SRC" "$MNT/cpa" 2>"$TMP/cp.err"; then
	same_tree "cp -a" "$SRC" "$MNT/cpa" && ok "cp -a" "$nfiles files; content, modes, mtimes"
else
	bad "cp -a" "$(head -n 3 "$TMP/cp.err" | tr '\n' ' ')"
fi

# tar in and out
if (cd "$SRC" && tar cf "$MNT/tree.tar" .) && mkdir "$MNT/tarx" && tar xf "$MNT/tree.tar" -C "$MNT/tarx" &&
	mkdir "$TMP/back" && tar cf - -C "$MNT/tarx" . | tar xf - -C "$TMP/back"; then
	same_tree "tar cf/xf (into Weir)" "$SRC" "$MNT/tarx" &&
		same_tree "tar cf/xf (out of Weir)" "$SRC" "$TMP/back" &&
		ok "tar cf + tar xf" "both ways, $(stat -c %s "$MNT/tree.tar") byte archive in Weir"
else
	bad "tar cf + tar xf" "a tar command failed"
fi

# rsync -a, then a second rsync must find nothing to do
if rsync -a "$SRC/" "$MNT/rs/" 2>"$TMP/rs.err"; then
	again=$(rsync -ai --dry-run "$SRC/" "$MNT/rs/" | grep -v '^\.d' | head -n 5)
	if same_tree "rsync -a" "$SRC" "$MNT/rs"; then
		if [ -n "$again" ]; then
			bad "rsync -a" "a second rsync wants changes: $again"
		else
			ok "rsync -a" "second run: nothing to transfer"
		fi
	fi
else
	bad "rsync -a" "$(head -n 3 "$TMP/rs.err" | tr '\n' ' ')"
fi

# find | xargs sha256sum
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$TMP/sum.src"
(cd "$MNT/cpa" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$TMP/sum.mnt"
if [ -s "$TMP/sum.mnt" ] && cmp -s "$TMP/sum.src" "$TMP/sum.mnt"; then
	ok "find | xargs sha256sum" "$(wc -l <"$TMP/sum.mnt") sums equal"
else
	bad "find | xargs sha256sum" "$(diff "$TMP/sum.src" "$TMP/sum.mnt" | head -n 3 | tr '\n' ' ')"
fi

# ls -la: names, types, modes, sizes (dates with --full-time), links of files
lsl() { ls -la --full-time "$1" | awk 'NR > 1 && $NF != "." && $NF != ".." {
	if (substr($1, 1, 1) == "d") print $1, $NF; else print $1, $2, $5, $6, substr($7, 1, 8), $NF }'; }
if diff <(lsl "$SRC/bin") <(lsl "$MNT/cpa/bin") >"$TMP/ls.out" &&
	diff <(lsl "$SRC") <(lsl "$MNT/cpa") >>"$TMP/ls.out"; then
	ok "ls -la" "modes, link counts, sizes, mtimes, names"
else
	bad "ls -la" "$(head -n 4 "$TMP/ls.out" | tr '\n' ' ')"
fi

# du -sb: every file byte is counted; directories are sized differently
# (Weir reports its own directory sizes, ext4 4096 per block), so compare
# du -sb minus the directories' own sizes on each side.
dirsz() { find "$1" -type d -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
du_src=$(($(du -sb "$SRC" | cut -f1) - $(dirsz "$SRC")))
du_mnt=$(($(du -sb "$MNT/cpa" | cut -f1) - $(dirsz "$MNT/cpa")))
blocks_mnt=$(du -s --block-size=1 "$MNT/cpa" | cut -f1)
if [ "$du_src" -eq "$du_mnt" ] && [ "$blocks_mnt" -ge $((du_src / 2)) ]; then
	ok "du -sb" "$du_mnt file bytes both sides; du (allocated) $blocks_mnt"
else
	bad "du -sb" "file bytes: source $du_src, Weir $du_mnt; allocated in Weir $blocks_mnt"
fi

# mv: a file within a directory, a file and a directory across directories
sum_before=$(sha256sum "$MNT/cpa/bin/random.bin" | cut -d' ' -f1)
if mv "$MNT/cpa/bin/random.bin" "$MNT/cpa/bin/random2.bin" &&
	mkdir "$MNT/moved" && mv "$MNT/cpa/bin/random2.bin" "$MNT/moved/" &&
	mv "$MNT/cpa/linux" "$MNT/moved/linux" &&
	[ "$(sha256sum "$MNT/moved/random2.bin" | cut -d' ' -f1)" = "$sum_before" ] &&
	[ ! -e "$MNT/cpa/bin/random.bin" ] && [ ! -e "$MNT/cpa/linux" ] &&
	diff -r "$SRC/linux" "$MNT/moved/linux" >/dev/null &&
	[ "$($WEIR stat /moved/random2.bin | grep -ci size)" -ge 1 ]; then
	ok "mv" "rename in place, file and tree across directories"
else
	bad "mv" "a move failed or left the wrong names"
fi

# ln (hard link) and ln -s, when the MDS has them
if ln "$MNT/moved/random2.bin" "$MNT/hard.bin" 2>"$TMP/ln.err"; then
	if [ "$(stat -c %h "$MNT/hard.bin")" = 2 ] &&
		[ "$(stat -c %i "$MNT/hard.bin")" = "$(stat -c %i "$MNT/moved/random2.bin")" ] &&
		printf 'HARD' | dd of="$MNT/hard.bin" conv=notrunc status=none &&
		[ "$(head -c 4 "$MNT/moved/random2.bin")" = HARD ]; then
		ok "ln" "link count 2, one inode, a write through one name read through the other"
	else
		bad "ln" "link count $(stat -c %h "$MNT/hard.bin"), or the names do not share data"
	fi
else
	if grep -qiE "not supported|not implemented|not permitted" "$TMP/ln.err"; then
		note "ln: $(cat "$TMP/ln.err") (the MDS has no hard links yet)"
		say "ln" "skipped: the MDS has no hard links yet"
	else
		bad "ln" "$(cat "$TMP/ln.err")"
	fi
fi
if ln -s ../moved/random2.bin "$MNT/cpa/sym" 2>"$TMP/lns.err"; then
	if [ "$(readlink "$MNT/cpa/sym")" = ../moved/random2.bin ] && [ -L "$MNT/cpa/sym" ] &&
		cmp -s "$MNT/cpa/sym" "$MNT/moved/random2.bin" &&
		ln -s /nowhere "$MNT/dangling" && [ -L "$MNT/dangling" ] && [ ! -e "$MNT/dangling" ]; then
		ok "ln -s" "readlink, followed reads, a dangling link"
	else
		bad "ln -s" "readlink gives '$(readlink "$MNT/cpa/sym")'"
	fi
else
	if grep -qiE "not supported|not implemented|not permitted" "$TMP/lns.err"; then
		note "ln -s: $(cat "$TMP/lns.err") (the MDS has no symlinks yet)"
		say "ln -s" "skipped: the MDS has no symlinks yet"
	else
		bad "ln -s" "$(cat "$TMP/lns.err")"
	fi
fi

# dd bs=1M count=64 conv=fsync, read back, and through another client (the CLI)
head -c $((64 * 1024 * 1024)) /dev/urandom >"$TMP/rand64"
t1=$(date +%s.%N)
if dd if="$TMP/rand64" of="$MNT/dd.bin" bs=1M count=64 conv=fsync status=none; then
	t2=$(date +%s.%N)
	if cmp -s "$TMP/rand64" "$MNT/dd.bin" &&
		dd if="$MNT/dd.bin" bs=1M status=none | cmp -s - "$TMP/rand64" &&
		$WEIR cat /dd.bin | cmp -s - "$TMP/rand64"; then
		ok "dd bs=1M count=64 conv=fsync" "$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f MB/s write", 67.108864 / (b - a) }'); read back by cat, dd and weir cat"
	else
		bad "dd bs=1M count=64 conv=fsync" "the bytes read back differ"
	fi
else
	bad "dd bs=1M count=64 conv=fsync" "dd failed"
fi

# shell redirects
if echo x >"$MNT/f" && [ "$(cat "$MNT/f")" = x ] && echo y >>"$MNT/f" &&
	[ "$(cat "$MNT/f")" = "$(printf 'x\ny')" ] && [ "$($WEIR cat /f)" = "$(printf 'x\ny')" ] &&
	echo z >"$MNT/f" && [ "$(cat "$MNT/f")" = z ]; then
	ok "echo x > MNT/f" "> creates, >> appends, > truncates"
else
	bad "echo x > MNT/f" "file holds '$(cat "$MNT/f" 2>&1)'"
fi

# python3: os.walk, open, shutil.copytree, json
cat >"$TMP/t.py" <<'EOF'
import filecmp, json, os, shutil, sys
src, mnt = sys.argv[1], sys.argv[2]
def walk(top):
    out = []
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        out += [(rel, d, 'd') for d in sorted(dirs)] + [(rel, f, 'f') for f in sorted(files)]
    return sorted(out)
assert walk(src) == walk(mnt + '/cpa2'), 'os.walk differs'
shutil.copytree(src, mnt + '/py')
def deep(c):
    assert not (c.left_only or c.right_only or c.diff_files or c.funny_files), c.report()
    for sub in c.subdirs.values():
        deep(sub)
deep(filecmp.dircmp(src, mnt + '/py'))  # names and types; bytes below
for root, _, files in os.walk(src):
    for f in files:
        a = os.path.join(root, f)
        b = os.path.join(mnt + '/py', os.path.relpath(a, src))
        with open(a, 'rb') as x, open(b, 'rb') as y:
            assert x.read() == y.read(), b
doc = {'name': 'weir', 'n': list(range(1000)), 'nested': {'a': [1.5, None, True, 'ü']}}
with open(mnt + '/doc.json', 'w') as f:
    json.dump(doc, f)
with open(mnt + '/doc.json') as f:
    assert json.load(f) == doc, 'json round trip'
with open(mnt + '/py/log.txt', 'a') as f:
    f.write('one\n')
with open(mnt + '/py/log.txt', 'a') as f:
    f.write('two\n')
assert open(mnt + '/py/log.txt').read() == 'one\ntwo\n'
print('ok')
EOF
if cp -a "$SRC" "$MNT/cpa2" && python3 "$TMP/t.py" "$SRC" "$MNT" >"$TMP/py.out" 2>&1 &&
	[ "$(cat "$TMP/py.out")" = ok ]; then
	ok "python3" "os.walk, shutil.copytree + filecmp, open/append, json dump/load"
else
	bad "python3" "$(tail -n 3 "$TMP/py.out" | tr '\n' ' ')"
fi

# sqlite3 in WAL mode: 10,000 rows in 10 transactions, read back
DB=$MNT/db/test.sqlite
mkdir -p "$MNT/db"
{
	echo "PRAGMA journal_mode=WAL;"
	echo "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
	for k in 0 1 2 3 4 5 6 7 8 9; do
		echo "BEGIN;"
		echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000)"
		echo "  INSERT INTO t (id, v, n) SELECT x + $k * 1000, 'row-' || (x + $k * 1000), x % 7 FROM c;"
		echo "COMMIT;"
	done
} | sqlite3 "$DB" >"$TMP/sql.out" 2>&1
res=$(sqlite3 "$DB" "PRAGMA journal_mode; SELECT count(*), sum(id), max(v) FROM t WHERE v = 'row-' || id; PRAGMA integrity_check;" 2>&1)
want=$(printf 'wal\n10000|50005000|row-9999\nok')
if [ "$res" = "$want" ] && grep -qx wal "$TMP/sql.out"; then
	ok "sqlite3 (WAL)" "10000 rows in 10 transactions, integrity ok"
else
	bad "sqlite3 (WAL)" "got '$(echo "$res" | tr '\n' ' ')' $(tr '\n' ' ' <"$TMP/sql.out")"
fi

# git init / add / commit / log
G="git -C $MNT/repo -c user.name=Weir -c user.email=weir@example.com -c init.defaultBranch=main"
if git init -q "$MNT/repo" && cp -a "$SRC/bin" "$SRC/a name with spaces.txt" "$MNT/repo/" &&
	$G add -A && $G commit -qm "first commit" && echo more >>"$MNT/repo/bin/run.sh" &&
	$G commit -qam "second commit" && [ "$($G log --format=%s | tr '\n' ,)" = "second commit,first commit," ] &&
	$G fsck --strict >/dev/null 2>&1 && [ -z "$($G status --porcelain)" ] &&
	[ "$($G show HEAD~1:bin/run.sh)" = "$(cat "$SRC/bin/run.sh")" ]; then
	ok "git init/add/commit/log" "2 commits, fsck clean, status clean"
else
	bad "git init/add/commit/log" "$($G log --oneline 2>&1 | head -n 2 | tr '\n' ' ')"
fi

# gcc: source in Weir, binary in Weir, run from the mount
mkdir -p "$MNT/cc"
cat >"$MNT/cc/hello.c" <<'EOF'
#include <stdio.h>
int main(int argc, char **argv)
{
	printf("hello from weir %d\n", 6 * 7 + argc - 1);
	return 0;
}
EOF
if gcc -O2 -Wall -o "$MNT/cc/hello" "$MNT/cc/hello.c" 2>"$TMP/gcc.err" &&
	[ "$("$MNT/cc/hello")" = "hello from weir 42" ] && [ -x "$MNT/cc/hello" ]; then
	ok "gcc" "compiled in Weir, ran from the mount"
else
	bad "gcc" "$(head -n 3 "$TMP/gcc.err" | tr '\n' ' ') output '$("$MNT/cc/hello" 2>&1)'"
fi

# a second mount, through the mount helper (daemon mode), for the other-client checks
if "$SRCDIR/deploy/mount.fuse.weir" "$WEIR_MDS" "$MNT2" -o rw,noauto,_netdev \
	2>"$TMP/mount2.err" && wait_mount "$MNT2"; then
	ok "mount.fuse.weir (second mount)" "daemon up"
else
	bad "mount.fuse.weir (second mount)" "$(head -n 2 "$TMP/mount2.err" | tr '\n' ' ')"
fi
# remount,ro and back through the helper, as mount(8) calls it for "mount -o remount,ro"
# (xfstests generic/294); it used to start a second weir-fuse that refused "remount"
if "$SRCDIR/deploy/mount.fuse.weir" "$WEIR_MDS" "$MNT2" -o remount,ro 2>"$TMP/remount.err" &&
	awk -v m="$MNT2" '$2 == m { split($4, o, ","); exit o[1] != "ro" }' /proc/mounts &&
	! touch "$MNT2/ro-test" 2>"$TMP/ro.err" && grep -q "Read-only file system" "$TMP/ro.err" &&
	"$SRCDIR/deploy/mount.fuse.weir" "$WEIR_MDS" "$MNT2" -o remount,rw 2>>"$TMP/remount.err" &&
	touch "$MNT2/ro-test" && [ "$(grep -c " $MNT2 " /proc/mounts)" -eq 1 ]; then
	ok "mount.fuse.weir remount" "ro (EROFS), then rw again, one mount"
else
	bad "mount.fuse.weir remount" "$(head -n 2 "$TMP/remount.err" | tr '\n' ' ') $(cat "$TMP/ro.err" 2>/dev/null)"
fi

# shared writable mmap + msync, read by other clients
cat >"$TMP/mmapw.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* mmapw FILE LEN: map FILE shared, write the pattern, msync, munmap; "gen LEN" prints it */
int main(int argc, char **argv)
{
	size_t len = (size_t)atol(argv[2]);
	if (!strcmp(argv[1], "gen")) {
		for (size_t i = 0; i < len; i++)
			putchar((int)((i * 7 + i / 4096 + 3) & 0xff));
		return 0;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)len)) { perror("open/ftruncate"); return 1; }
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) { perror("mmap"); return 1; }
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)((i * 7 + i / 4096 + 3) & 0xff);
	if (msync(p, len, MS_SYNC)) { perror("msync"); return 1; }
	/* read by the other clients while still mapped and open */
	printf("synced\n");
	fflush(stdout);
	char c;
	if (read(0, &c, 1) < 0) return 1;
	munmap(p, len);
	close(fd);
	return 0;
}
EOF
MMLEN=$((2 * 1024 * 1024 + 777))
if gcc -O2 -o "$TMP/mmapw" "$TMP/mmapw.c" && "$TMP/mmapw" gen $MMLEN >"$TMP/mm.want"; then
	coproc MM { "$TMP/mmapw" "$MNT/mm.bin" $MMLEN; }
	read -r line <&"${MM[0]}"
	if [ "$line" = synced ] && $WEIR cat /mm.bin | cmp -s - "$TMP/mm.want" &&
		cmp -s "$MNT2/mm.bin" "$TMP/mm.want"; then
		ok "mmap MAP_SHARED + msync" "$MMLEN bytes seen by weir cat and the second mount"
	else
		bad "mmap MAP_SHARED + msync" "'$line'; other clients see different bytes"
	fi
	echo >&"${MM[1]}"
	wait "$MM_PID"
else
	bad "mmap MAP_SHARED + msync" "cannot build the helper"
fi

# coherence between clients: a change by one is seen by the next call of the other
echo one >"$MNT/coh"
cat "$MNT2/coh" >/dev/null
echo "two two" >"$MNT/coh"
c2=$(cat "$MNT2/coh")
printf 'three\n' >"$TMP/three"
$WEIR put "$TMP/three" /coh2
mv "$MNT2/coh" "$MNT2/coh.renamed"
if [ "$c2" = "two two" ] && [ "$(cat "$MNT/coh2")" = three ] && [ ! -e "$MNT/coh" ] &&
	[ "$(cat "$MNT/coh.renamed")" = "two two" ]; then
	ok "coherence between mounts" "new data, new file, rename: seen at once"
else
	bad "coherence between mounts" "second mount read '$c2'"
fi

# metadata leases: the first mount caches attributes (the kernel keeps them
# while the MDS leases them, docs/leases.md); every change through the second
# is seen by the first at its next call, through a callback
mkdir -p "$MNT2/mdc/sub"
echo 12345 >"$MNT2/mdc/f"
echo other >"$MNT2/mdc/g"
mdc_ino_sub=$(stat -c %i "$MNT/mdc/sub")
stat "$MNT/mdc/f" "$MNT/mdc/g" "$MNT/mdc/sub" >/dev/null # cached now
mdc_errs=""
chmod 600 "$MNT2/mdc/f"
[ "$(stat -c %a "$MNT/mdc/f")" = 600 ] || mdc_errs+=" chmod:$(stat -c %a "$MNT/mdc/f")"
stat "$MNT/mdc/f" >/dev/null
truncate -s 3 "$MNT2/mdc/f"
[ "$(stat -c %s "$MNT/mdc/f")" = 3 ] || mdc_errs+=" truncate:$(stat -c %s "$MNT/mdc/f")"
touch -d 2001-02-03 "$MNT2/mdc/g"
[ "$(stat -c %Y "$MNT/mdc/g")" = "$(date -d 2001-02-03 +%s)" ] || mdc_errs+=" utimes"
mv "$MNT2/mdc/g" "$MNT2/mdc/f" # rename over
[ "$(cat "$MNT/mdc/f")" = other ] && [ ! -e "$MNT/mdc/g" ] || mdc_errs+=" rename"
rm "$MNT2/mdc/f"
[ ! -e "$MNT/mdc/f" ] || mdc_errs+=" unlink"
rmdir "$MNT2/mdc/sub" && mkdir -m 700 "$MNT2/mdc/sub"
[ "$(stat -c %a "$MNT/mdc/sub")" = 700 ] && [ "$(stat -c %i "$MNT/mdc/sub")" != "$mdc_ino_sub" ] ||
	mdc_errs+=" rmdir+mkdir"
# names the kernel keeps (entry timeouts under the directory's lease):
# absent ones, ones this mount made, removed and renamed, then changed by
# the other mount
[ ! -e "$MNT/mdc/neg" ] || mdc_errs+=" neg-setup"
echo made >"$MNT2/mdc/neg"
[ "$(cat "$MNT/mdc/neg" 2>/dev/null)" = made ] || mdc_errs+=" negative"
python3 -c 'import os,sys; os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY))' \
	"$MNT/mdc/excl" && stat "$MNT/mdc/excl" >/dev/null
rm "$MNT2/mdc/excl"
[ ! -e "$MNT/mdc/excl" ] || mdc_errs+=" own-create"
echo old >"$MNT/mdc/h" && stat "$MNT/mdc/h" >/dev/null && rm "$MNT/mdc/h"
echo new >"$MNT2/mdc/h"
[ "$(cat "$MNT/mdc/h" 2>/dev/null)" = new ] || mdc_errs+=" own-unlink"
echo r >"$MNT/mdc/r1" && stat "$MNT/mdc/r1" >/dev/null && mv "$MNT/mdc/r1" "$MNT/mdc/r2"
stat "$MNT/mdc/r2" >/dev/null
rm "$MNT2/mdc/r2"
[ ! -e "$MNT/mdc/r2" ] || mdc_errs+=" own-rename"
mkdir "$MNT/mdc/d1" && stat "$MNT/mdc/d1" >/dev/null
rmdir "$MNT2/mdc/d1" && echo file >"$MNT2/mdc/d1"
[ "$(cat "$MNT/mdc/d1" 2>/dev/null)" = file ] || mdc_errs+=" own-mkdir"
# ls -l (readdirplus: the kernel gets names and attributes under leases),
# then the other mount changes a mode, a size, removes and replaces names
mkdir "$MNT2/mdc/ls" && for i in 1 2 3 4; do echo "$i" >"$MNT2/mdc/ls/e$i"; done
ls -l "$MNT/mdc/ls" >/dev/null && ls -l "$MNT/mdc/ls" >/dev/null
chmod 640 "$MNT2/mdc/ls/e1"
echo longer-now >"$MNT2/mdc/ls/e2"
rm "$MNT2/mdc/ls/e3"
rm "$MNT2/mdc/ls/e4" && mkdir "$MNT2/mdc/ls/e4"
mdc_ls=$(cd "$MNT/mdc/ls" && stat -c '%n:%a:%s:%F' e1 e2 2>&1 && stat -c '%n:%a:%F' e4 2>&1)
mdc_ls=$(echo $mdc_ls)
[ "$mdc_ls" = "e1:640:2:regular file e2:644:11:regular file e4:755:directory" ] &&
	[ "$(ls "$MNT/mdc/ls" | tr '\n' ' ')" = "e1 e2 e4 " ] && [ ! -e "$MNT/mdc/ls/e3" ] ||
	mdc_errs+=" ls-l:$mdc_ls"
# a directory this mount made and filled (more than one MDS page): libweir
# lists it from its cache (docs/leases.md "Listings"); the other mount's
# create, unlink and rename over are in the next listing, then the listing
# is the MDS's until the directory is known whole again
# (the listings the first mount's libweir served from its cache so far:
# SIGUSR1 has weir-fuse log its cache counters)
cached_listings() {
	local n0 i
	n0=$(grep -c "mountpoint=$MNT: metadata cache" "$TMP/fuse.log")
	kill -USR1 "$FUSE_PID"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c "mountpoint=$MNT: metadata cache" "$TMP/fuse.log")" -gt "$n0" ] && break
		sleep 0.05
	done
	grep "mountpoint=$MNT: metadata cache" "$TMP/fuse.log" | tail -n 1 |
		grep -o '[0-9]* listings' | grep -o '^[0-9]*'
}
mkdir "$MNT/mdc/own" && for i in $(seq 1 1500); do : >"$MNT/mdc/own/o$i"; done
own_l0=$(cached_listings)
ls -f "$MNT/mdc/own" | sort >"$TMP/own1" && ls -f "$MNT2/mdc/own" | sort >"$TMP/own2"
own_l1=$(cached_listings)
[ "$(wc -l <"$TMP/own1")" = 1502 ] && cmp -s "$TMP/own1" "$TMP/own2" ||
	mdc_errs+=" own-dir:$(wc -l <"$TMP/own1")"
[ -n "$own_l0" ] && [ "${own_l1:-0}" -gt "$own_l0" ] || mdc_errs+=" own-dir-not-cached:$own_l0:$own_l1"
[ "$(ls -f "$MNT/mdc/own" | head -n 20 | tr '\n' ' ')" = "$(ls -f "$MNT2/mdc/own" | head -n 20 | tr '\n' ' ')" ] ||
	mdc_errs+=" own-dir-order"
: >"$MNT2/mdc/own/x" && rm "$MNT2/mdc/own/o7" && mv "$MNT2/mdc/own/o8" "$MNT2/mdc/own/o9"
ls -f "$MNT/mdc/own" | sort >"$TMP/own1" && ls -f "$MNT2/mdc/own" | sort >"$TMP/own2"
[ "$(wc -l <"$TMP/own1")" = 1501 ] && cmp -s "$TMP/own1" "$TMP/own2" && grep -qx x "$TMP/own1" &&
	! grep -qx o7 "$TMP/own1" && ! grep -qx o8 "$TMP/own1" ||
	mdc_errs+=" own-dir-changed:$(wc -l <"$TMP/own1")"
ls -l "$MNT/mdc/own" >/dev/null # read whole (the kernel then keeps the listing)
rm "$MNT2/mdc/own/o9" && : >"$MNT2/mdc/own/y"
ls -f "$MNT/mdc/own" | sort >"$TMP/own1" && ls -f "$MNT2/mdc/own" | sort >"$TMP/own2"
cmp -s "$TMP/own1" "$TMP/own2" && grep -qx y "$TMP/own1" && ! grep -qx o9 "$TMP/own1" ||
	mdc_errs+=" own-dir-relisted:$(wc -l <"$TMP/own1")"
rm -r "$MNT/mdc/own"
# a file this mount created and keeps open for writing: the kernel keeps its
# attributes (the creator's lease) until the other mount opens it for
# writing, or this mount writes it
exec 7>"$MNT/mdc/held"
[ "$(stat -c %s "$MNT/mdc/held")" = 0 ] && [ "$(stat -c %s "$MNT/mdc/held")" = 0 ] ||
	mdc_errs+=" held-setup"
exec 9>"$MNT/mdc/held2" # written by this mount only
stat "$MNT/mdc/held2" >/dev/null
printf 123 >&9
[ "$(stat -c %s "$MNT/mdc/held2")" = 3 ] || mdc_errs+=" held2-own-write:$(stat -c %s "$MNT/mdc/held2")"
exec 9>&-
exec 8>>"$MNT2/mdc/held" # (its close would report the size: kept open)
printf abcd >&8
[ "$(stat -c %s "$MNT/mdc/held")" = 4 ] || mdc_errs+=" held-other-write:$(stat -c %s "$MNT/mdc/held")"
exec 8>&-
printf 12345678 >&7
[ "$(stat -c %s "$MNT/mdc/held")" = 8 ] || mdc_errs+=" held-own-write:$(stat -c %s "$MNT/mdc/held")"
exec 7>&-
[ "$(stat -c %s "$MNT2/mdc/held")" = 8 ] && [ "$(cat "$MNT/mdc/held")" = 12345678 ] ||
	mdc_errs+=" held-close"
if [ -z "$mdc_errs" ]; then
	ok "metadata leases between mounts" "chmod, truncate, utimes, rename over, unlink, rmdir+mkdir, absent names, own create/unlink/rename/mkdir, ls -l then changes, listings of a directory this mount made, a file created and held open then written by each: seen at once"
else
	bad "metadata leases between mounts" "not seen:$mdc_errs"
fi

# flock(2) is cluster-wide: a lock taken through one mount blocks the other
touch "$MNT/lockf"
flock -n "$MNT/lockf" -c "sleep 3" &
lk=$!
sleep 0.5
flock -n "$MNT2/lockf" -c true
held=$?
wait "$lk"
# flock_free FILE: flock -n FILE, polled for up to 5 s (the kernel sends the
# unlock with the release, after close(2) returned); its last exit status
flock_free() {
	local i st
	for ((i = 0; i < 50; i++)); do
		flock -n "$1" -c true
		st=$?
		[ "$st" -eq 0 ] && break
		sleep 0.1
	done
	return "$st"
}
flock_free "$MNT2/lockf"
free=$?
if [ "$held" -eq 1 ] && [ "$free" -eq 0 ]; then
	ok "flock across mounts" "conflict seen by the second mount, free after release"
else
	bad "flock across mounts" "second mount got $held while held, $free after"
fi

# fcntl(2) locks are cluster-wide too (the MDS's, owned by the kernel's lock
# owner): conflicts, F_GETLK, POSIX's close rule, F_SETLKW woken by the unlock,
# OFD locks, a killed holder, a signal ending a wait (tests/integration/fcntl_locks.py)
if python3 "$SRCDIR/tests/integration/fcntl_locks.py" "$MNT/fcntlf" "$MNT2/fcntlf" \
	>"$TMP/fcntl.out" 2>&1; then
	ok "fcntl locks across mounts" "$(grep -c ' ok ' "$TMP/fcntl.out") checks"
else
	bad "fcntl locks across mounts" "$(grep -v ' ok ' "$TMP/fcntl.out" | tr -s ' \n' ' ')"
fi
# ... so SQLite (rollback journal) on one database through two mounts at once
# loses no row: 2 x 60 transactions racing, each waiting for the other's locks
mkdir "$MNT/sqlc"
sqlite3 "$MNT/sqlc/db" "PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, who TEXT, n INT);" >/dev/null
sql_ins() {
	{ echo ".timeout 30000"; for ((i = 1; i <= 60; i++)); do echo "INSERT INTO t(who, n) VALUES('$2', $i);"; done; } |
		sqlite3 "$1" >"$TMP/sqlc.$2" 2>&1
}
sql_ins "$MNT/sqlc/db" a &
sa=$!
sql_ins "$MNT2/sqlc/db" b &
sb=$!
wait "$sa"
ra=$?
wait "$sb"
rb=$?
res=$(sqlite3 "$MNT2/sqlc/db" "SELECT group_concat(who || ':' || c || ':' || s, ' ') FROM (SELECT who, count(*) c, sum(n) s FROM t GROUP BY who); PRAGMA integrity_check;" 2>&1 | tr '\n' ' ')
if [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] && [ "$res" = "a:60:1830 b:60:1830 ok " ]; then
	ok "sqlite3 from two mounts at once" "120 rows, integrity ok"
else
	bad "sqlite3 from two mounts at once" "exit $ra/$rb, got '$res' $(cat "$TMP/sqlc.a" "$TMP/sqlc.b" | tr '\n' ' ')"
fi

# the two-client model check (tests/integration/test_twoclient_model.c) through both mounts:
# writes, truncates, O_TRUNC opens and reads taking turns, with the kernel's asynchronous
# releases racing the other mount's next call; every size and byte must match the model.
# WEIR_MODEL_OPS=2000000 makes it the long run.
mkdir "$MNT/model" && $WEIR setstripe -c -1 -S 64K /model >/dev/null
if WEIR_MODEL_OPS=${WEIR_MODEL_OPS:-1500} "$BUILD/tests/integration/test_twoclient_model" \
	--paths "$MNT" "$MNT2" 2>"$TMP/model.err"; then
	ok "two-mount model check" "$(sed -n 's/.*model check (paths[^)]*): \([0-9]* operations in [0-9.]* s\).*/\1/p' "$TMP/model.err")"
else
	bad "two-mount model check" "$(grep -A 6 FAILED "$TMP/model.err" | tr -s ' \n' ' ')"
fi

# A lock wait ends at a signal (FUSE_INTERRUPT): flock -w 1 gives up after its
# alarm, waiters killed by SIGTERM and SIGINT exit, and no lock is left behind
# on the MDS for the descriptor the test shell keeps open (fd 8): after the
# holder's release a third flock -n gets the lock.
touch "$MNT/lockw"
flock "$MNT/lockw" -c "sleep 8" &
holder=$!
sleep 0.5
exec 8<"$MNT2/lockw"
t0=$(date +%s%N)
flock -w 1 8
w1=$?
ms=$((($(date +%s%N) - t0) / 1000000))
# (8<&-: the waiters must not share fd 8's description, whose lock they wait for)
flock "$MNT2/lockw" -c true 8<&- &
kterm=$!
env --default-signal=INT flock "$MNT2/lockw" -c true 8<&- &
kint=$!
sleep 0.5
kill -TERM "$kterm"
kill -INT "$kint"
for ((i = 0; i < 20; i++)); do
	kill -0 "$kterm" 2>/dev/null || kill -0 "$kint" 2>/dev/null || break
	sleep 0.1
done
gone=yes
kill -0 "$kterm" 2>/dev/null && gone="no (SIGTERM)"
kill -0 "$kint" 2>/dev/null && gone="$gone no (SIGINT)"
kill -0 "$holder" 2>/dev/null || gone="$gone (the holder was gone too early)"
wait "$holder"
flock_free "$MNT/lockw"
third=$?
exec 8<&- # (a lock left on fd 8 goes with it: the waiters then end, not hang the test)
wait "$kterm" "$kint"
if [ "$w1" -eq 1 ] && [ "$ms" -lt 3000 ] && [ "$gone" = yes ] && [ "$third" -eq 0 ]; then
	ok "flock wait interrupted" "-w 1 gave up in $ms ms; killed waiters exit; no lock left"
else
	bad "flock wait interrupted" "flock -w 1: exit $w1 after $ms ms; killed waiters gone: $gone; flock -n after release: $third"
fi

# xattrs, a FIFO, and the caller's credentials (allow_other: another user's files are its own)
if python3 -c "
import os, sys; p = sys.argv[1]
os.setxattr(p, 'user.weir', b'value')
assert os.getxattr(p, 'user.weir') == b'value' and 'user.weir' in os.listxattr(p)
os.removexattr(p, 'user.weir')
assert 'user.weir' not in os.listxattr(p)" "$MNT/lockf" 2>"$TMP/xattr.err"; then
	ok "xattrs" "set, get, list, remove"
elif grep -q "Operation not supported" "$TMP/xattr.err"; then
	note "xattrs: not supported by the MDS yet"
	say "xattrs" "skipped: the MDS has no xattrs yet"
else
	bad "xattrs" "$(tail -n 1 "$TMP/xattr.err")"
fi
if mkfifo "$MNT/fifo" 2>/dev/null && [ -p "$MNT/fifo" ]; then
	ok "mkfifo" "a FIFO node"
else
	note "mkfifo: not supported by the MDS yet"
	say "mkfifo" "skipped: no mknod yet"
fi
mkdir -m 1777 "$MNT/pub" && chmod 1777 "$MNT/pub"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo hi >'$MNT/pub/mine'; mkdir '$MNT/pub/d'" 2>"$TMP/cred.err"
	owner=$(stat -c '%u:%g' "$MNT/pub/mine" "$MNT/pub/d" 2>/dev/null | tr '\n' ' ')
	if [ "$owner" = "65534:65534 65534:65534 " ] &&
		! setpriv --reuid=65534 --regid=65534 --clear-groups touch "$MNT/notmine" 2>/dev/null; then
		ok "another user (allow_other)" "owns what it creates; refused elsewhere"
	else
		bad "another user (allow_other)" "owners '$owner' $(cat "$TMP/cred.err")"
	fi
fi

# Linux's rules that pjdfstest and xfstests found different through the mount (issue 12)
if command -v setpriv >/dev/null; then
	mkdir -m 0777 "$MNT/lx"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	# a write by another user drops setuid, and setgid (group-exec, or a writer
	# outside the group: Linux 6.2+), and succeeds (pjdfstest chmod/12.t)
	got=""
	for m in 4777 2777 6777 2766; do
		: >"$MNT/lx/s$m" && chmod "$m" "$MNT/lx/s$m"
		nobody sh -c "printf x >>'$MNT/lx/s$m'" 2>>"$TMP/lx.err"
		got="$got $?:$(stat -c '%a:%s' "$MNT/lx/s$m")"
	done
	# the owner's chgrp: a directory keeps them, a file loses them (pjdfstest chown/00.t)
	mkdir "$MNT/lx/cd" && : >"$MNT/lx/cf"
	for f in cd cf; do
		chown 65534:65533 "$MNT/lx/$f" && chmod 06555 "$MNT/lx/$f"
		setpriv --reuid=65534 --regid=65533 --groups=65533,65532 chgrp 65532 "$MNT/lx/$f" 2>>"$TMP/lx.err"
		got="$got $?:$(stat -c '%a:%g' "$MNT/lx/$f")"
	done
	want=" 0:777:1 0:777:1 0:777:1 0:766:1 0:6555:65532 0:555:65532"
	if [ "$got" = "$want" ]; then
		ok "setuid/setgid drops, as Linux" "writes by another user, chgrp"
	else
		bad "setuid/setgid drops, as Linux" "want '$want', got '$got' $(tail -n 1 "$TMP/lx.err" 2>/dev/null)"
	fi
	# an open directory replaced by rename, or removed: fstat gives st_nlink 0, nothing
	# can be made in it (xfstests generic/035)
	mkdir "$MNT/lx/a" "$MNT/lx/b" "$MNT/lx/c"
	got=$(cd "$MNT/lx" && python3 -c "
import errno, os
fb = os.open('b', os.O_RDONLY | os.O_DIRECTORY)
fc = os.open('c', os.O_RDONLY | os.O_DIRECTORY)
os.rename('a', 'b')
os.rmdir('c')
out = [os.fstat(fb).st_nlink, os.fstat(fc).st_nlink, os.path.isdir('b'), os.path.exists('c')]
try:
    os.mkdir('x', dir_fd=fc)
    out.append('made')
except OSError as e:
    out.append(errno.errorcode[e.errno])
os.close(fb)
os.close(fc)
print(*out)" 2>&1)
	if [ "$got" = "0 0 True False ENOENT" ]; then
		ok "open directory removed" "fstat: st_nlink 0 (rename over it, rmdir)"
	else
		bad "open directory removed" "want '0 0 True False ENOENT', got '$got'"
	fi
	# an execute-only program runs (xfstests generic/126): 0711, and 0001 for others
	cp /bin/true "$MNT/lx/x711" && chmod 0711 "$MNT/lx/x711"
	cp /bin/true "$MNT/lx/x001" && chmod 0001 "$MNT/lx/x001"
	got=""
	for f in x711 x001; do
		nobody sh -c "'$MNT/lx/$f'" 2>>"$TMP/lx.err"
		got="$got $?"
		nobody cat "$MNT/lx/$f" >/dev/null 2>&1
		got="$got $?"
	done
	if [ "$got" = " 0 1 0 1" ]; then
		ok "execute-only programs" "run by another user, not readable"
	else
		bad "execute-only programs" "want ' 0 1 0 1' (exec, cat), got '$got' $(tail -n 1 "$TMP/lx.err" 2>/dev/null)"
	fi
fi

# statfs
if df -P "$MNT" | awk 'NR == 2 { exit !($2 > 0) }'; then
	ok "df (statfs)" "$(df -h "$MNT" | awk 'NR == 2 { print $2 " total, " $4 " free" }')"
else
	bad "df (statfs)" "$(df -P "$MNT" 2>&1 | tail -n 1)"
fi

# ---- readahead and permissions=mds (a third mount; README "FUSE mount")
echo "== readahead, permissions=mds"
MNT3=$TMP/mnt3
mkdir -p "$MNT3"
# the kernel's readahead of a mount, from its backing device (root only can set it)
ra_kb() { cat "/sys/class/bdi/$(awk -v m="$1" '$5 == m { print $3 }' /proc/self/mountinfo)/read_ahead_kb" 2>/dev/null; }
# refused OPTIONS WHAT MESSAGE: weir-fuse must refuse to mount with OPTIONS
# and say MESSAGE on stderr
refused() {
	if "$BIN/weir-fuse" "$MNT3" -o "mds=$WEIR_MDS,$1" 2>"$TMP/fuse3.err"; then
		bad "$2" "mounted"
		fusermount3 -u "$MNT3"
	elif grep -q "$3" "$TMP/fuse3.err"; then
		ok "$2" "refused"
	else
		bad "$2" "$(cat "$TMP/fuse3.err")"
	fi
}
# --help: one default per option (libfuse's own help said max_threads 10)
mt=$("$BIN/weir-fuse" --help | grep -c max_threads)
if [ "$mt" = 1 ] && "$BIN/weir-fuse" --help | grep -q "max_threads=N  *worker threads (default 16)"; then
	ok "--help" "max_threads once, default 16"
else
	bad "--help" "max_threads on $mt lines: $("$BIN/weir-fuse" --help | grep max_threads | tr -s ' ')"
fi
# a cached attribute, name or missing name would skip the MDS's checks
for t in attr_timeout=1 entry_timeout=2 negative_timeout=30; do
	refused "permissions=mds,$t" "permissions=mds with $t" "permissions=mds needs"
done
refused "permissions=bogus" "permissions=bogus" "permissions=bogus: kernel or mds expected"
if "$BIN/weir-fuse" "$MNT3" -o "mds=$WEIR_MDS,permissions=mds,readahead=8M,allow_other" 2>"$TMP/fuse3.err" &&
	wait_mount "$MNT3"; then
	ls "$MNT3" >/dev/null # the first request sets the readahead
	if [ "$(id -u)" -ne 0 ]; then
		note "readahead: not root, the kernel's default stays"
	elif [ "$(ra_kb "$MNT")" = 4096 ] && [ "$(ra_kb "$MNT3")" = 8192 ]; then
		ok "readahead" "4096 KiB by default, 8192 KiB with readahead=8M"
	else
		bad "readahead" "read_ahead_kb $(ra_kb "$MNT") and $(ra_kb "$MNT3"), not 4096 and 8192"
	fi
	if grep " $MNT " /proc/mounts | grep -q default_permissions &&
		! grep " $MNT3 " /proc/mounts | grep -q default_permissions; then
		ok "permissions=mds" "mounted without default_permissions"
	else
		bad "permissions=mds" "$(grep -E " ($MNT|$MNT3) " /proc/mounts | tr '\n' ' ')"
	fi
	# The same checks as another user through both mounts: the kernel's (default) and
	# the MDS's with the daemon's own (access, chdir, exec, truncate(2), opendir).
	mkdir -m 0755 "$MNT/perm" "$MNT/perm/pub"
	mkdir -m 0700 "$MNT/perm/priv"
	mkdir -m 0744 "$MNT/perm/nosearch"
	cp /bin/true "$MNT/perm/prog"
	chmod 0744 "$MNT/perm/prog"
	echo secret >"$MNT/perm/priv/f"
	echo data >"$MNT/perm/nosearch/f"
	echo data >"$MNT/perm/ro"
	chmod 0644 "$MNT/perm/ro"
	chmod 1777 "$MNT/perm/pub"
	echo mine >"$MNT/perm/pub/rootfile"
	perm_checks() { # MOUNT: one word per check, 0 = allowed
		local d=$1/perm r=""
		as() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" >/dev/null 2>&1; r="$r $?"; }
		# (through sh: setpriv itself execs with root's capabilities still in effect)
		as sh -c "'$d/prog'"                # exec of 0744 root:root: refused
		as test -x "$d/prog"                # access(X_OK): refused
		as test -w "$d/ro"                  # access(W_OK): refused
		as test -r "$d/ro"                  # access(R_OK): allowed
		as sh -c "cd '$d/priv'"             # chdir into 0700: refused
		as ls "$d/priv"                     # opendir of 0700: refused
		as cat "$d/priv/f"                  # lookup in 0700: refused
		as ls "$d/nosearch"                 # 0744: listed
		as stat "$d/nosearch/f"             # no search: refused
		as /usr/bin/perl -e 'truncate($ARGV[0], 0) or exit 1' "$d/ro" # truncate(2): refused
		as sh -c "echo x >>'$d/ro'"         # open for writing: refused
		as mkdir "$d/newdir"                # create in 0755 root's: refused
		as rm -f "$d/pub/rootfile"          # sticky directory: refused
		as sh -c "echo x >'$d/pub/own' && rm '$d/pub/own'" # own file in 1777: allowed
		chmod 0755 "$d/prog"
		as sh -c "'$d/prog'"                # exec of 0755: allowed
		chmod 0744 "$d/prog"
		echo "$r"
	}
	want=" 126 1 1 0 2 2 1 0 1 1 2 1 1 0 0"
	got_k=$(perm_checks "$MNT")
	got_m=$(perm_checks "$MNT3")
	if [ "$got_k" = "$want" ] && [ "$got_m" = "$want" ] && [ "$(cat "$MNT/perm/ro")" = data ]; then
		ok "permission checks, both modes" "15 checks as another user"
	else
		bad "permission checks, both modes" "want '$want', kernel '$got_k', mds '$got_m'"
	fi
	# the POSIX suite's permission-heavy parts through the permissions=mds mount
	# (known: "dir/." and "dir/.." through a directory without search permission)
	for t in attr open ns; do
		b=$BUILD/tests/posix/test_px_$t
		[ -x "$b" ] || continue
		PX_SUBJECT_ROOT=$MNT3 timeout 120 "$b" >"$TMP/px3_$t.log" 2>&1
		unexpected=$(sed -n 's/^case \([a-z0-9_]*\): DIFF.*/\1/p' "$TMP/px3_$t.log" | sort -u |
			grep -vx 'locks_one_process\|permissions_read_only_dir' | tr '\n' ' ')
		if ! grep -qE "^posix_[a-z]+: [0-9]+ cases" "$TMP/px3_$t.log"; then
			bad "test_px_$t (permissions=mds)" "no summary: $(tail -n 2 "$TMP/px3_$t.log" | tr '\n' ' ')"
		elif [ -n "$unexpected" ]; then
			bad "test_px_$t (permissions=mds)" "differs from Linux in: $unexpected"
		else
			ok "test_px_$t (permissions=mds)" "$(grep -E "^posix_[a-z]+: [0-9]+ cases" "$TMP/px3_$t.log" | tail -n 1 | sed 's/^[^:]*: //')"
		fi
	done
	fusermount3 -u "$MNT3"
else
	bad "permissions=mds mount" "$(cat "$TMP/fuse3.err")"
fi

# ---- mount options: nodev,nosuid by default; dev, suid, fsname, subtype through
# the mount helper (allow_dev, allow_suid: mount(8) does not pass dev and suid
# on); a second mount on a mount point is refused unless -o overmount
echo "== mount options"
mknod "$MNT/nul" c 1 3
cp /usr/bin/id "$MNT/sid"
chmod 4755 "$MNT/sid"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" 2>&1; }
m1=$(grep " $MNT " /proc/mounts)
e1=$(sh -c "echo x >'$MNT/nul'" 2>&1)
u1=$(as_nobody "$MNT/sid" -u)
if [[ " $m1 " == *nosuid* && " $m1 " == *nodev* ]] && [[ "$e1" == *"Permission denied"* ]] &&
	[ "$u1" = 65534 ]; then
	ok "default nodev,nosuid" "a device node: EACCES; a setuid program: not honoured"
else
	bad "default nodev,nosuid" "mount '$m1', device node '$e1', setuid euid '$u1'"
fi
if "$SRCDIR/deploy/mount.fuse.weir" "$WEIR_MDS" "$MNT3" \
	-o allow_dev,allow_suid,allow_other,fsname=weirtest:one,subtype=wtest 2>"$TMP/fuse3.err"; then
	m3=$(grep " $MNT3 " /proc/mounts)
	e3=$(sh -c "echo x >'$MNT3/nul' && head -c 4 '$MNT3/nul' | wc -c" 2>&1)
	u3=$(as_nobody "$MNT3/sid" -u)
	if [[ "$m3" == "weirtest:one $MNT3 fuse.wtest "* && "$m3" != *nosuid* && "$m3" != *nodev* ]]; then
		ok "fsname, subtype, dev, suid" "$(cut -d' ' -f1,3,4 <<<"$m3")"
	else
		bad "fsname, subtype, dev, suid" "/proc/mounts: '$m3'"
	fi
	if [ "$e3" = 0 ] && [ "$u3" = 0 ]; then
		ok "dev and suid honoured" "the device node is /dev/null; the setuid program runs as root"
	else
		bad "dev and suid honoured" "device node '$e3', setuid euid '$u3'"
	fi
	fusermount3 -u "$MNT3"
else
	bad "mount options" "$(cat "$TMP/fuse3.err")"
fi
rm -f "$MNT/nul" "$MNT/sid"
if "$BIN/weir-fuse" "$MNT2" -o "mds=$WEIR_MDS" 2>"$TMP/fuse4.err"; then
	bad "second mount on a mount point" "mounted: $(grep -c " $MNT2 " /proc/mounts) mounts there"
	fusermount3 -u "$MNT2"
elif grep -qF "$MNT2 is a mount point already (weir:$WEIR_MDS, type fuse.weir): unmount it first, or give -o overmount" "$TMP/fuse4.err"; then
	ok "second mount on a mount point" "refused"
else
	bad "second mount on a mount point" "$(cat "$TMP/fuse4.err")"
fi
if "$BIN/weir-fuse" "$MNT3" -o "mds=$WEIR_MDS" 2>"$TMP/fuse4.err" &&
	"$BIN/weir-fuse" "$MNT3" -o "mds=$WEIR_MDS,overmount" 2>>"$TMP/fuse4.err" &&
	[ "$(grep -c " $MNT3 " /proc/mounts)" = 2 ] && fusermount3 -u "$MNT3" &&
	[ "$(grep -c " $MNT3 " /proc/mounts)" = 1 ]; then
	ok "-o overmount" "stacked, then unmounted"
else
	bad "-o overmount" "$(grep -c " $MNT3 " /proc/mounts) mounts; $(cat "$TMP/fuse4.err")"
fi
while grep -q " $MNT3 " /proc/mounts && fusermount3 -u "$MNT3"; do :; done

# ---- the POSIX conformance suite (tests/posix), its local backend chrooted into the mount
# and compared with Linux on a local directory. Known differences through FUSE (README):
#   locks_one_process  flock(2) after close(2) of another descriptor of the file: the
#                      kernel sends the unlock with the release, after close returned
echo "== POSIX suite through the mount"
KNOWN_DIFF=" locks_one_process "
px_n=0
for t in "$BUILD"/tests/posix/test_px_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *.d | *.o) continue ;; esac
	name=$(basename "$t")
	PX_SUBJECT_ROOT=$MNT timeout 120 "$t" >"$TMP/$name.log" 2>&1
	summary=$(grep -E "^posix_[a-z]+: [0-9]+ cases" "$TMP/$name.log" | tail -n 1)
	if [ -z "$summary" ]; then
		bad "$name" "no summary: $(tail -n 2 "$TMP/$name.log" | tr '\n' ' ')"
		continue
	fi
	px_n=$((px_n + 1))
	unexpected=""
	for c in $(sed -n 's/^case \([a-z0-9_]*\): DIFF.*/\1/p' "$TMP/$name.log" | sort -u); do
		case "$KNOWN_DIFF" in *" $c "*) note "$name: $c differs from Linux (known: see README)" ;;
		*) unexpected="$unexpected $c" ;;
		esac
	done
	if [ -n "$unexpected" ]; then
		bad "$name" "differs from Linux in:$unexpected ($(grep -m1 'DIFF' "$TMP/$name.log"))"
	else
		ok "$name" "${summary#*: }"
	fi
done
[ "$px_n" -gt 0 ] || note "no tests/posix binaries under $BUILD: the POSIX suite was not run"

# ---- unmount: fusermount3 -u of the daemon mount, SIGTERM of the foreground one
echo "== unmount"
pid2=$(pgrep -f "weir-fuse $MNT2" | head -n 1)
if fusermount3 -u "$MNT2" && wait_mount "$MNT2" gone; then
	for ((i = 0; i < 50; i++)); do
		[ -n "$pid2" ] && kill -0 "$pid2" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$pid2" ] && kill -0 "$pid2" 2>/dev/null; then
		bad "fusermount3 -u" "the daemon $pid2 is still running"
	else
		ok "fusermount3 -u" "unmounted, daemon exited"
	fi
else
	bad "fusermount3 -u" "still mounted"
fi
kill -TERM "$FUSE_PID"
for ((i = 0; i < 100; i++)); do
	kill -0 "$FUSE_PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$FUSE_PID" 2>/dev/null; then
	bad "SIGTERM" "weir-fuse still running"
else
	wait "$FUSE_PID"
	st=$?
	if [ "$st" -eq 0 ] && wait_mount "$MNT" gone; then
		ok "SIGTERM" "exit 0, unmounted"
	else
		bad "SIGTERM" "exit status $st, or still mounted"
	fi
	# the unmount logs the cache's counters
	# (two lines from the SIGUSR1s above, the third from the unmount)
	if [ "$(grep -c "mountpoint=$MNT: metadata cache: .* listings, .* names" "$TMP/fuse.log")" -ge 3 ]; then
		ok "cache counters at unmount" "$(grep "mountpoint=$MNT: metadata cache" "$TMP/fuse.log" | tail -n 1 | sed 's/.*metadata cache: //')"
	else
		bad "cache counters at unmount" "no line in $TMP/fuse.log"
	fi
	FUSE_PID=""
fi
# what was written through FUSE is in Weir for every client
if $WEIR cat /moved/random2.bin | tail -c +5 | cmp -s - <(tail -c +5 "$SRC/bin/random.bin"); then
	ok "data after unmount" "read back with the weir CLI"
else
	bad "data after unmount" "weir cat differs"
fi

echo
for n in "${notes[@]}"; do echo "  note: $n"; done
echo "test_fuse: $fails failed check(s) in $(($(date +%s) - T0)) s"
[ "$fails" -eq 0 ]
