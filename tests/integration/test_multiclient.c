/*
 * tests/integration/test_multiclient.c - two client processes, each with its
 * own weir_mount, on one cluster: what A writes B reads; B's stat sees A's
 * size while A still has the file open for writing (the glimpse); B renames
 * and A sees the new name.
 *
 * The test process forks A and B (before any libweir thread exists) and
 * they step through a script in lockstep over two pipes. Each child checks
 * its own results, prints what failed, and exits with the number of
 * failed checks (or 100+ for a sync failure); CUnit runs only in the parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define MIB (1024ULL * 1024ULL)
#define STEP_TIMEOUT_MS 60000

static struct th_cluster *cl;

static int suite_init(void)
{
	return th_cluster_start(NULL, &cl) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_stop(cl) ? -1 : 0;
}

/* ------------------------------------------------------------ child side */

struct peer {
	const char *pe_name; /* "A" or "B" */
	int pe_rd;           /* the other side's signals */
	int pe_wr;           /* ours to the other side */
	int pe_fails;
	weir_fs_t *pe_fs;
};

#define CHECK(p, cond)                                                                         \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "  client %s: check failed at %s:%d: %s\n", (p)->pe_name, \
				__FILE__, __LINE__, #cond);                                    \
			(p)->pe_fails++;                                                       \
		}                                                                              \
	} while (0)

static void post(struct peer *p, char step)
{
	if (write(p->pe_wr, &step, 1) != 1) {
		fprintf(stderr, "  client %s: cannot signal step %c\n", p->pe_name, step);
		_exit(101);
	}
}

static void await(struct peer *p, char step)
{
	struct pollfd pfd = { .fd = p->pe_rd, .events = POLLIN };
	char got = 0;
	if (poll(&pfd, 1, STEP_TIMEOUT_MS) != 1 || read(p->pe_rd, &got, 1) != 1 || got != step) {
		fprintf(stderr, "  client %s: waiting for step %c, got '%c'\n", p->pe_name, step,
			got ? got : '?');
		_exit(102);
	}
}

static void child_mount(struct peer *p, const char *addr)
{
	struct weir_mount_opts o;
	memset(&o, 0, sizeof(o));
	o.wmo_size = sizeof(o);
	o.wmo_client_name = p->pe_name[0] == 'A' ? "client-A" : "client-B";
	int rc = weir_mount_with(addr, &o, &p->pe_fs);
	if (rc) {
		fprintf(stderr, "  client %s: weir_mount: %s\n", p->pe_name, strerror(-rc));
		_exit(103);
	}
}

static void client_a(struct peer *p, const char *addr)
{
	const size_t n1 = 1 * MIB + 333, n2 = 512 * 1024;
	uint8_t *d1 = malloc(n1), *d2 = malloc(n2), *r = malloc(n1 + n2 + 100);
	if (!d1 || !d2 || !r)
		_exit(104);
	th_fill_pattern(d1, n1, 1);
	th_fill_pattern(d2, n2, 2);
	child_mount(p, addr);
	weir_fs_t *fs = p->pe_fs;

	/* 1: write, keep the file open */
	CHECK(p, weir_mkdir(fs, "/mc", 0755) == 0);
	weir_file_t *fh = NULL;
	CHECK(p, weir_open(fs, "/mc/file", O_CREAT | O_RDWR, 0644, &fh) == 0);
	if (!fh)
		_exit(105);
	CHECK(p, weir_pwrite(fh, d1, n1, 0) == (ssize_t)n1);
	post(p, '1');
	await(p, '2'); /* B read it and saw the size */

	/* 3: append more, still open, no fsync, no close */
	CHECK(p, weir_pwrite(fh, d2, n2, n1) == (ssize_t)n2);
	post(p, '3');
	await(p, '4');

	/* 5: close */
	CHECK(p, weir_close(fh) == 0);
	post(p, '5');
	await(p, '6'); /* B renamed the file */

	/* 7: A sees the new name and not the old one */
	struct stat st;
	CHECK(p, weir_stat(fs, "/mc/file", &st) == -ENOENT);
	CHECK(p, weir_stat(fs, "/mc/renamed", &st) == 0);
	CHECK(p, st.st_size == (off_t)(n1 + n2));
	CHECK(p, th_get(fs, "/mc/renamed", r, n1 + n2 + 100) == (ssize_t)(n1 + n2));
	CHECK(p, memcmp(r, d1, n1) == 0 && memcmp(r + n1, d2, n2) == 0);
	weir_dir_t *dh = NULL;
	int names = 0, renamed = 0;
	CHECK(p, weir_opendir(fs, "/mc", &dh) == 0);
	if (dh) {
		struct weir_dirent de;
		while (weir_readdir(dh, &de) == 1) {
			if (!strcmp(de.d_name, ".") || !strcmp(de.d_name, ".."))
				continue;
			names++;
			renamed += !strcmp(de.d_name, "renamed");
		}
		weir_closedir(dh);
	}
	CHECK(p, names == 1 && renamed == 1);
	/* A writes through the new name; B will check */
	CHECK(p, weir_open(fs, "/mc/renamed", O_WRONLY, 0, &fh) == 0);
	if (fh) {
		CHECK(p, weir_pwrite(fh, "from A", 6, 0) == 6);
		CHECK(p, weir_close(fh) == 0);
	}
	post(p, '7');
	await(p, '8');
	CHECK(p, weir_umount(fs) == 0);
	free(d1);
	free(d2);
	free(r);
}

static void client_b(struct peer *p, const char *addr)
{
	const size_t n1 = 1 * MIB + 333, n2 = 512 * 1024;
	uint8_t *d1 = malloc(n1), *d2 = malloc(n2), *r = malloc(n1 + n2 + 100);
	if (!d1 || !d2 || !r)
		_exit(104);
	th_fill_pattern(d1, n1, 1);
	th_fill_pattern(d2, n2, 2);
	child_mount(p, addr);
	weir_fs_t *fs = p->pe_fs;
	struct stat st;

	await(p, '1');
	/* 2: read what A wrote; the size while A has it open */
	CHECK(p, weir_stat(fs, "/mc/file", &st) == 0);
	CHECK(p, st.st_size == (off_t)n1);
	memset(r, 0, n1 + 100);
	CHECK(p, th_get(fs, "/mc/file", r, n1 + 100) == (ssize_t)n1);
	CHECK(p, memcmp(r, d1, n1) == 0);
	post(p, '2');

	await(p, '3');
	/* 4: A grew the file and still has it open: the glimpse */
	CHECK(p, weir_stat(fs, "/mc/file", &st) == 0);
	if (st.st_size != (off_t)(n1 + n2))
		fprintf(stderr, "  client B: size %lld, want %llu\n", (long long)st.st_size,
			(unsigned long long)(n1 + n2));
	CHECK(p, st.st_size == (off_t)(n1 + n2));
	weir_file_t *fh = NULL;
	CHECK(p, weir_open(fs, "/mc/file", O_RDONLY, 0, &fh) == 0);
	if (fh) {
		struct stat fst;
		CHECK(p, weir_fstat(fh, &fst) == 0 && fst.st_size == (off_t)(n1 + n2));
		CHECK(p, weir_pread(fh, r, n2, n1) == (ssize_t)n2);
		CHECK(p, memcmp(r, d2, n2) == 0);
		CHECK(p, weir_lseek(fh, 0, SEEK_END) == (int64_t)(n1 + n2));
		weir_close(fh);
	}
	post(p, '4');

	await(p, '5');
	/* 6: after A's close, rename */
	CHECK(p, weir_stat(fs, "/mc/file", &st) == 0 && st.st_size == (off_t)(n1 + n2));
	CHECK(p, weir_rename(fs, "/mc/file", "/mc/renamed") == 0);
	post(p, '6');

	await(p, '7');
	/* 8: A's write through the new name */
	CHECK(p, th_get(fs, "/mc/renamed", r, 6) == 6);
	CHECK(p, memcmp(r, "from A", 6) == 0);
	CHECK(p, th_size(fs, "/mc/renamed") == (long long)(n1 + n2));
	post(p, '8');
	CHECK(p, weir_umount(fs) == 0);
	free(d1);
	free(d2);
	free(r);
}

/* ------------------------------------------------------------ parent side */

static pid_t spawn(const char *name, int rd, int wr, int close1, int close2,
		   void (*fn)(struct peer *, const char *))
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	close(close1);
	close(close2);
	struct peer p = { .pe_name = name, .pe_rd = rd, .pe_wr = wr };
	alarm(STEP_TIMEOUT_MS / 1000 * 3); /* never outlive a stuck parent */
	fn(&p, th_cluster_mds_addr(cl));
	fflush(NULL);
	_exit(p.pe_fails > 99 ? 99 : p.pe_fails);
}

static int wait_child(pid_t pid, const char *name)
{
	int st = 0;
	uint64_t deadline = th_now_ms() + 4 * STEP_TIMEOUT_MS;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (th_now_ms() > deadline) {
			fprintf(stderr, "\n  client %s stuck; killing it\n", name);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		th_sleep_ms(20);
	}
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "\n  client %s died of signal %d\n", name, WTERMSIG(st));
		return -1;
	}
	if (WEXITSTATUS(st))
		fprintf(stderr, "\n  client %s: exit status %d (failed checks, or 10x: sync)\n",
			name, WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

static void test_multiclient_write_read_glimpse_rename_seen(void)
{
	int a2b[2], b2a[2];
	CU_ASSERT_EQUAL_FATAL(pipe(a2b), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(b2a), 0);
	fflush(NULL);
	pid_t a = spawn("A", b2a[0], a2b[1], a2b[0], b2a[1], client_a);
	CU_ASSERT_FATAL(a > 0);
	pid_t b = spawn("B", a2b[0], b2a[1], b2a[0], a2b[1], client_b);
	CU_ASSERT_FATAL(b > 0);
	close(a2b[0]);
	close(a2b[1]);
	close(b2a[0]);
	close(b2a[1]);
	int ra = wait_child(a, "A");
	int rb = wait_child(b, "B");
	CU_ASSERT_EQUAL(ra, 0);
	CU_ASSERT_EQUAL(rb, 0);
}

static void test_multiclient_concurrent_writers_disjoint_ranges(void)
{
	/* two processes write interleaved 64 KiB blocks of one striped file at
	 * once; afterwards every block holds its writer's bytes */
	weir_fs_t *fs = NULL;
	pid_t kids[2] = { 0, 0 };
	const int blocks = 64;
	const size_t bs = 64 * 1024;
	/* the parent mounts only after the forks, so children inherit no threads */
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		CU_ASSERT_FATAL(kids[k] >= 0);
		if (kids[k] == 0) {
			alarm(120);
			weir_fs_t *cfs = NULL;
			int fails = 0;
			if (weir_mount(th_cluster_mds_addr(cl), &cfs))
				_exit(103);
			/* both may create: one wins, the other opens the same file */
			int rc = weir_mkdir(cfs, "/cw", 0755);
			if (rc && rc != -EEXIST)
				fails++;
			weir_file_t *fh = NULL;
			if (weir_open(cfs, "/cw/shared", O_CREAT | O_WRONLY, 0644, &fh))
				_exit(105);
			uint8_t *buf = malloc(bs);
			for (int i = k; i < blocks; i += 2) {
				th_fill_pattern(buf, bs, (uint64_t)i);
				if (weir_pwrite(fh, buf, bs, (uint64_t)i * bs) != (ssize_t)bs)
					fails++;
			}
			if (weir_close(fh))
				fails++;
			if (weir_umount(cfs))
				fails++;
			free(buf);
			_exit(fails);
		}
	}
	CU_ASSERT_EQUAL(wait_child(kids[0], "W0"), 0);
	CU_ASSERT_EQUAL(wait_child(kids[1], "W1"), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/cw/shared"), (long long)(blocks * bs));
	uint8_t *r = malloc(blocks * bs), *w = malloc(bs);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_EQUAL(th_get(fs, "/cw/shared", r, blocks * bs), (ssize_t)(blocks * bs));
	int bad = 0;
	for (int i = 0; i < blocks; i++) {
		th_fill_pattern(w, bs, (uint64_t)i);
		bad += memcmp(r + (size_t)i * bs, w, bs) != 0;
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(r);
	free(w);
	CU_ASSERT_EQUAL(weir_umount(fs), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_multiclient_write_read_glimpse_rename_seen),
		TH_TEST(test_multiclient_concurrent_writers_disjoint_ranges),
		TH_TEST_END,
	};
	return th_cunit_run("multiclient", suite_init, suite_clean, tests);
}
