/*
 * tests/integration/test_preload.c - libweir-preload.so driven by real,
 * unmodified programs on a real cluster.
 *
 * One cluster (1 MDS, 2 OSS x 2 OSTs) for the suite. Each case runs a bash
 * script with LD_PRELOAD=BUILD/lib/libweir-preload.so, WEIR_MOUNT=/weir and
 * WEIR_MDS set, and checks what the programs produced (trees compared with
 * diff -r, checksums, sizes, link counts, file contents), not only exit
 * codes; several results are read back through libweir in this process (a
 * second client, without the shim). The shared-mmap case runs this binary
 * itself under the shim ("--mmap-child PATH").
 *
 * Programs: cp -a, diff -r, tar, rsync -a, find | xargs sha256sum, ls -la, du -sb,
 * mv, ln, ln -s, readlink, realpath, dd conv=fsync, bash redirects (dup2
 * onto 1 and 2, >>, <, an exec'd child writing to an inherited descriptor),
 * python3 (os.walk, open, shutil.copytree, json, os.fork), sqlite3 in
 * rollback-journal mode, git, gcc (the compiler reads and writes Weir, the
 * binary runs from Weir through the shim's memfd exec), and the POSIX
 * conformance suite (tests/posix) with the shim as its subject.
 *
 * Skipped (77) in sanitizer builds: an ASan-built shim cannot be preloaded
 * into uninstrumented programs. Needs bash, coreutils, tar, python3,
 * sqlite3, git and gcc (deploy/deps.sh installs them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define MIB	  (1024ULL * 1024ULL)
#define MMAP_LEN  (3 * MIB + 12345) /* over several stripes, not page aligned */
#define MMAP_SEED 77

extern char **environ;

static struct th_cluster *cl;
static weir_fs_t *fs;		 /* this process's own client, no shim */
static char so_path[PATH_MAX];	 /* the shim */
static char self_path[PATH_MAX]; /* this binary (the mmap child) */
static char tmp_dir[PATH_MAX];	 /* local scratch: SRC copies, HOME */
static char **sh_env;		 /* environment of every script */
static bool weir_existed;	 /* was there a local /weir before? */

/* ------------------------------------------------------------ scripts */

/* Append \a kv ("NAME=VALUE", copied) to env array \a e (\a n entries used). */
static void env_push(char ***e, size_t *n, const char *kv)
{
	*e = realloc(*e, (*n + 2) * sizeof(**e));
	if (!*e || !((*e)[*n] = strdup(kv)))
		abort();
	(*n)++;
	(*e)[*n] = NULL;
}

static void env_add(char ***e, size_t *n, const char *name, const char *value)
{
	char *kv;

	if (asprintf(&kv, "%s=%s", name, value) < 0)
		abort();
	env_push(e, n, kv);
	free(kv);
}

static void env_build(void)
{
	static const char *drop[] = {
	    "LD_PRELOAD=", "WEIR_", "GIT_", "HOME=", "PY=", "SRC=", "L=", "SELF=", "LC_ALL=", NULL};
	char path[PATH_MAX];
	size_t n = 0;

	for (char **e = environ; *e; e++) {
		bool skip = false;
		for (int i = 0; drop[i]; i++)
			skip |= !strncmp(*e, drop[i], strlen(drop[i]));
		if (!skip)
			env_push(&sh_env, &n, *e);
	}
	env_add(&sh_env, &n, "LD_PRELOAD", so_path);
	env_add(&sh_env, &n, "WEIR_MDS", th_cluster_mds_addr(cl));
	env_add(&sh_env, &n, "WEIR_MOUNT", "/weir");
	env_add(&sh_env, &n, "WEIR_KEY_FILE", th_cluster_key_file(cl));
	snprintf(path, sizeof(path), "%s/preload.log", th_cluster_dir(cl));
	env_add(&sh_env, &n, "WEIR_LOG", path);
	env_add(&sh_env, &n, "WEIR_LOG_LEVEL", "info");
	env_add(&sh_env, &n, "HOME", tmp_dir);
	env_add(&sh_env, &n, "GIT_AUTHOR_NAME", "weir test");
	env_add(&sh_env, &n, "GIT_AUTHOR_EMAIL", "test@weir");
	env_add(&sh_env, &n, "GIT_COMMITTER_NAME", "weir test");
	env_add(&sh_env, &n, "GIT_COMMITTER_EMAIL", "test@weir");
	env_add(&sh_env, &n, "GIT_CONFIG_NOSYSTEM", "1");
	env_add(&sh_env, &n, "PY",
		access("/usr/bin/python3", X_OK) ? "python3" : "/usr/bin/python3");
	env_add(&sh_env, &n, "SRC", "/usr/include/linux");
	env_add(&sh_env, &n, "L", tmp_dir);
	env_add(&sh_env, &n, "SELF", self_path);
	env_add(&sh_env, &n, "LC_ALL", "C");
}

/*
 * Run \a script with bash under the shim (set -euo pipefail, and a check
 * that the shim is active, first), its
 * stdout captured into \a out (\a cap bytes, NUL-terminated; may be NULL),
 * stderr passed through. \return the exit status (-1: did not run).
 */
static int sh_run(const char *script, char *out, size_t cap)
{
	char *full;
	int pfd[2];
	pid_t pid;
	int st;

	/* first make sure the shim is there: statfs of the prefix says "WEIR" */
	if (asprintf(&full,
		     "set -euo pipefail\n"
		     "[ \"$(stat -f -c %%t /weir)\" = 57454952 ] || "
		     "{ echo 'test_preload: the shim is not active' >&2; exit 99; }\n%s",
		     script) < 0 ||
	    pipe(pfd))
		return -1;
	char *argv[] = {"bash", "-c", full, NULL};
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execve("/bin/bash", argv, sh_env);
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	char sink[4096];
	for (;;) {
		char *dst = out && n + 1 < cap ? out + n : sink;
		size_t room = out && n + 1 < cap ? cap - 1 - n : sizeof(sink);
		ssize_t r = read(pfd[0], dst, room);
		if (r <= 0)
			break;
		if (dst != sink)
			n += (size_t)r;
	}
	close(pfd[0]);
	if (out)
		out[n] = '\0';
	free(full);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (rc) {
		fprintf(stderr, "\n  script failed (status %d):\n%s\n", rc, script);
		if (out && *out)
			fprintf(stderr, "  its output:\n%s\n", out);
	}
	return rc;
}

/* The Weir file \a path's bytes equal \a want (\a len)? Read through libweir. */
static bool weir_equals(const char *path, const void *want, size_t len)
{
	char *buf = malloc(len + 1);
	ssize_t n = buf ? th_get(fs, path, buf, len + 1) : -ENOMEM;
	bool same = n == (ssize_t)len && !memcmp(buf, want, len);

	if (!same)
		fprintf(stderr, "\n  %s: %zd bytes read through libweir, %zu expected%s\n", path, n,
			len, n == (ssize_t)len ? " (content differs)" : "");
	free(buf);
	return same;
}

/* ------------------------------------------------------------ cases */

/* cp -a into Weir and back out, diff -r both ways; ls -la and du -sb agree. */
static void test_preload_cp_diff_ls_du(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(
	    sh_run("mkdir -p /weir/t\n"
		   "cp -a \"$SRC\" /weir/t/cp\n"
		   "diff -r \"$SRC\" /weir/t/cp\n"
		   "cp -a /weir/t/cp \"$L/back\"\n"
		   "diff -r \"$SRC\" \"$L/back\"\n"
		   "# ls -la: modes, sizes, mtimes and names of the files\n"
		   "cmp <(cd \"$SRC\" && ls -la --time-style=+%s | grep '^-' | "
		   "awk '{print $1, $5, $6, $7}') "
		   "<(ls -la --time-style=+%s /weir/t/cp | grep '^-' | "
		   "awk '{print $1, $5, $6, $7}')\n"
		   "# du -sb: the files' bytes plus 4096 per Weir directory\n"
		   "f=$(find \"$SRC\" -type f -printf '%s\\n' | awk '{s+=$1} END {print s}')\n"
		   "d=$(find \"$SRC\" -type d | wc -l)\n"
		   "echo \"du=$(du -sb /weir/t/cp | cut -f1) want=$((f + 4096 * d))\"\n"
		   "find /weir/t/cp -type f | wc -l\n",
		   out, sizeof(out)),
	    0);
	unsigned long long du = 0, want = 1, nfiles = 0;
	CU_ASSERT_EQUAL(sscanf(out, "du=%llu want=%llu\n%llu", &du, &want, &nfiles), 3);
	CU_ASSERT_EQUAL(du, want);
	CU_ASSERT(nfiles > 300);
	/* a file as another client sees it */
	struct stat a, b;
	CU_ASSERT_EQUAL(stat("/usr/include/linux/kernel.h", &a), 0);
	CU_ASSERT_EQUAL(th_rc("weir_stat", weir_stat(fs, "/t/cp/kernel.h", &b)), 0);
	CU_ASSERT_EQUAL(a.st_size, b.st_size);
	CU_ASSERT_EQUAL(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
	CU_ASSERT_EQUAL(a.st_mode, b.st_mode);
}

/* tar cf / xf and rsync -a through Weir both ways; find | xargs sha256sum against the source. */
static void test_preload_tar_sha256(void)
{
	CU_ASSERT_EQUAL(
	    sh_run("mkdir -p /weir/t/x \"$L/x2\"\n"
		   "tar cf /weir/t/a.tar -C \"$(dirname \"$SRC\")\" \"$(basename \"$SRC\")\"\n"
		   "tar xf /weir/t/a.tar -C /weir/t/x\n"
		   "diff -r \"$SRC\" /weir/t/x/\"$(basename \"$SRC\")\"\n"
		   "tar cf - -C /weir/t/x . | tar xf - -C \"$L/x2\"\n"
		   "diff -r \"$SRC\" \"$L/x2/$(basename \"$SRC\")\"\n"
		   "cmp <(cd \"$SRC\" && find . -type f | sort | xargs sha256sum) "
		   "<(cd /weir/t/x/\"$(basename \"$SRC\")\" && find . -type f | sort | "
		   "xargs sha256sum)\n"
		   "# rsync -a in and out; a second run finds nothing to do\n"
		   "rsync -a \"$SRC/\" /weir/t/rs/\n"
		   "diff -r \"$SRC\" /weir/t/rs\n"
		   "test -z \"$(rsync -ai \"$SRC/\" /weir/t/rs/)\"\n"
		   "rsync -a /weir/t/rs/ \"$L/rs/\"\n"
		   "diff -r \"$SRC\" \"$L/rs\"\n",
		   NULL, 0),
	    0);
}

/* mv inside Weir and out of it, hard and symbolic links. */
static void test_preload_mv_ln(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(
	    sh_run("mkdir -p /weir/t/m\n"
		   "cp \"$SRC/kernel.h\" /weir/t/m/a\n"
		   "mv /weir/t/m/a /weir/t/m/b\n"
		   "test ! -e /weir/t/m/a\n"
		   "cmp \"$SRC/kernel.h\" /weir/t/m/b\n"
		   "mkdir /weir/t/m/d && mv /weir/t/m/d /weir/t/m/e && test -d /weir/t/m/e\n"
		   "cp /weir/t/m/b /weir/t/m/out\n"
		   "mv /weir/t/m/out \"$L/moved-out\"   # across: copied, then removed\n"
		   "cmp \"$SRC/kernel.h\" \"$L/moved-out\" && test ! -e /weir/t/m/out\n"
		   "ln /weir/t/m/b /weir/t/m/hard\n"
		   "echo \"nlink=$(stat -c %h /weir/t/m/b)\"\n"
		   "test \"$(stat -c %i /weir/t/m/b)\" = \"$(stat -c %i /weir/t/m/hard)\"\n"
		   "ln -s b /weir/t/m/rel\n"
		   "ln -s /weir/t/m/b /weir/t/m/abs\n"
		   "echo \"rel=$(readlink /weir/t/m/rel) abs=$(readlink /weir/t/m/abs)\"\n"
		   "cmp \"$SRC/kernel.h\" /weir/t/m/rel\n"
		   "cmp \"$SRC/kernel.h\" /weir/t/m/abs\n"
		   "test -L /weir/t/m/rel\n"
		   "echo \"real=$(realpath /weir/t/m/rel)\"\n"
		   "# a link to a local file reads back as given and leads there\n"
		   "ln -s /etc/hostname /weir/t/m/loc\n"
		   "echo \"loc=$(readlink /weir/t/m/loc) $(stat -L -c %s /weir/t/m/loc)\"\n"
		   "cmp /etc/hostname /weir/t/m/loc\n"
		   "test \"$(realpath /weir/t/m/loc)\" = /etc/hostname\n",
		   out, sizeof(out)),
	    0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "nlink=2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "rel=b abs=/weir/t/m/b\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "real=/weir/t/m/b\n"));
	char want[128];
	struct stat hs;
	CU_ASSERT_EQUAL(stat("/etc/hostname", &hs), 0);
	snprintf(want, sizeof(want), "loc=/etc/hostname %lld\n", (long long)hs.st_size);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	struct stat st;
	CU_ASSERT_EQUAL(weir_lstat(fs, "/t/m/abs", &st), 0);
	CU_ASSERT(S_ISLNK(st.st_mode));
	CU_ASSERT_EQUAL(weir_stat(fs, "/t/m/abs", &st), 0); /* Weir resolves it itself */
	CU_ASSERT(S_ISREG(st.st_mode));
}

/* dd bs=1M count=64 conv=fsync into Weir; the bytes as dd, cmp and libweir see them. */
static void test_preload_dd(void)
{
	size_t len = 64 * MIB;
	char *buf = malloc(len), path[PATH_MAX + 16], script[4 * PATH_MAX];

	CU_ASSERT_FATAL(buf != NULL);
	th_fill_pattern(buf, len, 64);
	snprintf(path, sizeof(path), "%s/dd.src", tmp_dir);
	FILE *f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(fwrite(buf, 1, len, f), len);
	fclose(f);
	snprintf(script, sizeof(script),
		 "dd if=%s of=/weir/t/dd.bin bs=1M count=64 conv=fsync status=none\n"
		 "cmp %s /weir/t/dd.bin\n"
		 "dd if=/weir/t/dd.bin of=\"$L/dd.back\" bs=1M status=none\n"
		 "cmp %s \"$L/dd.back\"\n",
		 path, path, path);
	CU_ASSERT_EQUAL(sh_run(script, NULL, 0), 0);
	CU_ASSERT(weir_equals("/t/dd.bin", buf, len));
	free(buf);
}

/* Shell redirects: dup2 onto 1 and 2, >>, <, and exec'd children sharing the offset. */
static void test_preload_redirect(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(sh_run("bash -c 'echo x > /weir/t/r1'\n"
			       "{ printf 'one\\n'; /bin/echo two; cat /weir/t/r1; echo three; } "
			       "> /weir/t/r2\n"
			       "echo four >> /weir/t/r2\n"
			       "ls /nonexistent-path 2> /weir/t/r3 || true\n"
			       "echo \"lines=$(wc -l < /weir/t/r2)\"\n"
			       "sort < /weir/t/r2 | head -1\n",
			       out, sizeof(out)),
			0);
	CU_ASSERT(weir_equals("/t/r1", "x\n", 2));
	static const char r2[] = "one\ntwo\nx\nthree\nfour\n";
	CU_ASSERT(weir_equals("/t/r2", r2, sizeof(r2) - 1));
	CU_ASSERT(th_size(fs, "/t/r3") > 10); /* ls's error message went to Weir */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "lines=5\nfour\n"));
}

/* python3: os.walk, open, shutil.copytree (sendfile, utime, chmod, xattrs), json, fork. */
static void test_preload_python(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(
	    sh_run("\"$PY\" - <<'EOF'\n"
		   "import os, json, shutil, hashlib\n"
		   "src = os.environ['SRC']\n"
		   "n = sum(len(f) for _, _, f in os.walk('/weir/t/cp'))\n"
		   "print('walk', n == sum(len(f) for _, _, f in os.walk(src)))\n"
		   "shutil.copytree(src, '/weir/t/py')\n"
		   "def digest(top):\n"
		   "    d = {}\n"
		   "    for root, _, files in os.walk(top):\n"
		   "        for f in files:\n"
		   "            p = os.path.join(root, f)\n"
		   "            with open(p, 'rb') as fh:\n"
		   "                d[os.path.relpath(p, top)] = "
		   "hashlib.sha256(fh.read()).hexdigest()\n"
		   "    return d\n"
		   "print('copytree', digest(src) == digest('/weir/t/py'))\n"
		   "with open('/weir/t/j.json', 'w') as f:\n"
		   "    json.dump({'k': list(range(1000)), 's': 'x' * 5000}, f)\n"
		   "with open('/weir/t/j.json') as f:\n"
		   "    d = json.load(f)\n"
		   "print('json', d['k'][999] == 999 and len(d['s']) == 5000)\n"
		   "# fork: the child writes to the inherited descriptor, one shared offset\n"
		   "fd = os.open('/weir/t/forked', os.O_CREAT | os.O_WRONLY | os.O_TRUNC)\n"
		   "os.write(fd, b'A' * 10)\n"
		   "pid = os.fork()\n"
		   "if pid == 0:\n"
		   "    os.write(fd, b'B' * 10)\n"
		   "    os._exit(0)\n"
		   "os.waitpid(pid, 0)\n"
		   "os.write(fd, b'C' * 10)\n"
		   "os.close(fd)\n"
		   "os.chdir('/weir/t/py')\n"
		   "print('cwd', os.getcwd() == '/weir/t/py' and os.path.isfile('kernel.h'))\n"
		   "EOF\n",
		   out, sizeof(out)),
	    0);
	CU_ASSERT_STRING_EQUAL(out, "walk True\ncopytree True\njson True\ncwd True\n");
	CU_ASSERT(weir_equals("/t/forked", "AAAAAAAAAABBBBBBBBBBCCCCCCCCCC", 30));
}

/* sqlite3, rollback journal: a table, 10,000 rows in 10 transactions, read back. */
static void test_preload_sqlite(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(sh_run("{ echo 'PRAGMA journal_mode=DELETE;'\n"
			       "  echo 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);'\n"
			       "  for i in 0 1 2 3 4 5 6 7 8 9; do\n"
			       "    echo 'BEGIN;'\n"
			       "    for j in $(seq 1 1000); do "
			       "echo \"INSERT INTO t(v) VALUES('r$i-$j');\"; done\n"
			       "    echo 'COMMIT;'\n"
			       "  done; } | sqlite3 /weir/t/db.sqlite\n"
			       "test ! -e /weir/t/db.sqlite-journal\n"
			       "sqlite3 /weir/t/db.sqlite 'PRAGMA integrity_check; "
			       "SELECT count(*), sum(length(v)), max(id) FROM t; "
			       "SELECT v FROM t WHERE id = 5000;'\n",
			       out, sizeof(out)),
			0);
	/* 10 x (9 x 4 + 90 x 5 + 900 x 6 + "1000" 7 bytes) = 58930 */
	CU_ASSERT_STRING_EQUAL(out, "delete\nok\n10000|58930|10000\nr4-1000\n");
}

/* git init, add, commit, log, fsck in a repository stored in Weir. */
static void test_preload_git(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(sh_run("mkdir /weir/t/repo && cd /weir/t/repo\n"
			       "git init -q .\n"
			       "cp \"$SRC/kernel.h\" \"$SRC/types.h\" .\n"
			       "mkdir sub && echo hello > sub/a.txt\n"
			       "git add . && git commit -q -m first\n"
			       "echo more >> sub/a.txt && git commit -q -am second\n"
			       "git log --format=%s | cat\n"
			       "git status --porcelain\n"
			       "git fsck --no-progress 2>&1\n"
			       "git show HEAD~1:sub/a.txt\n"
			       "git cat-file -p HEAD:kernel.h | cmp - \"$SRC/kernel.h\"\n",
			       out, sizeof(out)),
			0);
	CU_ASSERT_STRING_EQUAL(out, "second\nfirst\nhello\n");
}

/* gcc reads a source in Weir and writes the binary there; it runs from Weir (memfd exec). */
static void test_preload_gcc_exec(void)
{
	char out[4096];

	CU_ASSERT_EQUAL(
	    sh_run("mkdir -p /weir/t/src && cd /weir/t/src\n"
		   "printf '#include <stdio.h>\\nint main(void) { puts(\"built in weir\"); "
		   "return 0; }\\n' > hello.c\n"
		   "gcc -O1 -o hello hello.c\n"
		   "./hello\n"
		   "/weir/t/src/hello > /weir/t/src/out.txt && cat out.txt\n"
		   "printf '#!/bin/sh\\necho script $1\\n' > s.sh && chmod +x s.sh\n"
		   "./s.sh ran\n"
		   "PATH=/weir/t/src:$PATH hello\n",
		   out, sizeof(out)),
	    0);
	CU_ASSERT_STRING_EQUAL(out, "built in weir\nbuilt in weir\nscript ran\nbuilt in weir\n");
}

/* The mmap child, run under the shim: shared writable mapping + msync, private read mapping. */
static int mmap_child(const char *path)
{
	size_t len = MMAP_LEN;
	char *want = malloc(len);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (!want || fd < 0 || ftruncate(fd, (off_t)len)) {
		perror("mmap child: open/ftruncate");
		return 1;
	}
	th_fill_pattern(want, len, MMAP_SEED);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap child: mmap");
		return 1;
	}
	memcpy(p, want, len);
	if (msync(p, len, MS_SYNC)) {
		perror("mmap child: msync");
		return 1;
	}
	/* a private read-only mapping at 1 MiB sees what msync wrote */
	char *q = mmap(NULL, MIB, PROT_READ, MAP_PRIVATE, fd, (off_t)MIB);
	if (q == MAP_FAILED || memcmp(q, want + MIB, MIB)) {
		fprintf(stderr, "mmap child: private mapping differs\n");
		return 1;
	}
	munmap(q, MIB);
	close(fd); /* the mapping outlives the descriptor */
	memcpy(p + 2 * MIB, "written back by munmap", 22);
	if (munmap(p, len)) {
		perror("mmap child: munmap");
		return 1;
	}
	return 0;
}

static void test_preload_mmap_shared(void)
{
	size_t len = MMAP_LEN;
	char *want = malloc(len);

	CU_ASSERT_FATAL(want != NULL);
	CU_ASSERT_EQUAL(sh_run("\"$SELF\" --mmap-child /weir/t/mm.bin\n", NULL, 0), 0);
	th_fill_pattern(want, len, MMAP_SEED);
	memcpy(want + 2 * MIB, "written back by munmap", 22);
	CU_ASSERT(weir_equals("/t/mm.bin", want, len)); /* another client reads the bytes */
	free(want);
}

/* What the shim cannot do fails with a clear errno and a log line, never on the local path. */
static void test_preload_unsupported_and_quiet(void)
{
	char out[4096], log[PATH_MAX + 16], script[3 * PATH_MAX];

	snprintf(log, sizeof(log), "%s/preload.log", th_cluster_dir(cl));
	snprintf(script, sizeof(script),
		 "\"$PY\" -c \"import os, errno\n"
		 "try:\n"
		 "    os.open('/weir/t', os.O_TMPFILE | os.O_RDWR)\n"
		 "except OSError as e:\n"
		 "    print('tmpfile', e.errno == errno.EOPNOTSUPP)\"\n"
		 "grep -c 'O_TMPFILE is not supported' %s\n"
		 "# asked to log to stderr at debug level, the shim still says nothing there\n"
		 "WEIR_LOG=stderr WEIR_LOG_LEVEL=debug cat /weir/t/r1 2> \"$L/err\"\n"
		 "test ! -s \"$L/err\"\n"
		 "# without WEIR_MDS: EDESTADDRREQ under the prefix, one log line, local files"
		 " untouched\n"
		 "( unset WEIR_MDS; ls /weir 2>&1 || true; ls /weir/t 2>&1 || true;"
		 " cat /etc/hostname > /dev/null )\n"
		 "grep -c 'WEIR_MDS is not set: set it to the MDS.s HOST:PORT; until then calls"
		 " under /weir fail with EDESTADDRREQ (Destination address required)' %s\n",
		 log, log);
	CU_ASSERT_EQUAL(sh_run(script, out, sizeof(out)), 0);
	if (!strstr(out, "tmpfile True\n1\nx\n"))
		fprintf(stderr, "\n  output:\n%s\n", out);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "tmpfile True\n1\nx\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "ls: cannot access '/weir': Destination address"
					  " required\nls: cannot access '/weir/t': Destination"
					  " address required\n2\n")); /* a line per process */
	if (!weir_existed) {
		struct stat st;
		CU_ASSERT_EQUAL(lstat("/weir", &st),
				-1); /* nothing was made in the kernel's namespace */
	}
}

/*
 * The POSIX conformance suite (tests/posix) with the shim as its subject:
 * each test_px_* binary runs its local backend under the shim on
 * /weir/px (prefix mode) and compares every record with Linux's.
 */
static void test_preload_posix_suite(void)
{
	char dir[PATH_MAX + 32], script[4 * PATH_MAX], out[4096];
	char *b = getenv("BUILD");

	snprintf(dir, sizeof(dir), "%s/tests/posix", b ? b : "build");
	if (access(dir, X_OK)) {
		fprintf(stderr, "\n  %s: no POSIX suite built; case not run\n", dir);
		return;
	}
	CU_ASSERT_EQUAL(th_rc("weir_mkdir", weir_mkdir(fs, "/px", 0755)), 0);
	snprintf(script, sizeof(script),
		 "fails=0 ok=0\n"
		 "for t in %s/test_px_*; do\n"
		 "  case $t in *.d) continue ;; esac\n"
		 "  if ! PX_SUBJECT_ROOT=/weir/px PX_SUBJECT_CHROOT=0 timeout 120 \"$t\" "
		 "> \"$L/px.out\" 2>&1; then\n"
		 "    echo \"$(basename \"$t\") failed under the shim:\" >&2\n"
		 "    grep -E '^case .*(DIFF|crash|hang)' \"$L/px.out\" >&2 || tail -20 "
		 "\"$L/px.out\" >&2\n"
		 "    fails=$((fails + 1))\n"
		 "  fi\n"
		 "  ok=$((ok + $(grep -c '^case .*: ok$' \"$L/px.out\" || true)))\n"
		 "done\n"
		 "echo \"ok=$ok\"\n"
		 "exit $fails\n",
		 dir);
	CU_ASSERT_EQUAL(sh_run(script, out, sizeof(out)), 0);
	int ok = 0;
	CU_ASSERT_EQUAL(sscanf(out, "ok=%d", &ok), 1);
	CU_ASSERT(ok >= 50); /* every case but those needing a chroot or libweir itself */
	fprintf(stderr, "(%d POSIX cases ok under the shim) ", ok);
}

/* ------------------------------------------------------------ suite */

static int suite_init(void)
{
	struct stat st;
	char *b = getenv("BUILD");

	weir_existed = lstat("/weir", &st) == 0;
	if (b)
		snprintf(so_path, sizeof(so_path), "%s/lib/libweir-preload.so", b);
	if (!b || access(so_path, R_OK)) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		/* BUILD/tests/integration/test_preload -> BUILD/lib */
		snprintf(so_path, sizeof(so_path), "%s/../../lib/libweir-preload.so", dirname(exe));
	}
	char abs[PATH_MAX];
	if (access(so_path, R_OK) || !realpath(so_path, abs)) {
		fprintf(stderr, "test_preload: %s is missing (make builds it)\n", so_path);
		return -1;
	}
	snprintf(so_path, sizeof(so_path), "%s", abs); /* scripts change directory */
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/weir-preload-test-XXXXXX");
	if (!mkdtemp(tmp_dir))
		return -1;
	if (th_cluster_mount(NULL, &cl, &fs))
		return -1;
	env_build();
	return 0;
}

static int suite_clean(void)
{
	weir_umount(fs);
	th_rm_rf(tmp_dir);
	return th_cluster_stop(cl) ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--mmap-child"))
		return mmap_child(argv[2]);
#if defined(__SANITIZE_ADDRESS__)
	fprintf(stderr, "SKIP: test_preload: a sanitizer build's shim cannot be preloaded into "
			"uninstrumented programs\n");
	return 77;
#endif
	for (const char *const *p = (const char *const[]){"bash", "tar", "rsync", "sqlite3", "git",
							  "gcc", "python3", "sha256sum", NULL};
	     *p; p++) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "command -v %s > /dev/null", *p);
		if (system(cmd)) {
			fprintf(stderr,
				"test_preload: %s is missing (deploy/deps.sh installs it)\n", *p);
			return 1;
		}
	}
	if (access("/usr/include/linux/kernel.h", R_OK)) {
		fprintf(stderr, "SKIP: test_preload: no /usr/include/linux to copy\n");
		return 77;
	}
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	self_path[n > 0 ? n : 0] = '\0';
	static const struct th_test tests[] = {
	    TH_TEST(test_preload_cp_diff_ls_du),
	    TH_TEST(test_preload_tar_sha256),
	    TH_TEST(test_preload_mv_ln),
	    TH_TEST(test_preload_dd),
	    TH_TEST(test_preload_redirect),
	    TH_TEST(test_preload_python),
	    TH_TEST(test_preload_sqlite),
	    TH_TEST(test_preload_git),
	    TH_TEST(test_preload_gcc_exec),
	    TH_TEST(test_preload_mmap_shared),
	    TH_TEST(test_preload_unsupported_and_quiet),
	    TH_TEST(test_preload_posix_suite),
	    TH_TEST_END,
	};
	return th_cunit_run("preload", suite_init, suite_clean, tests);
}
