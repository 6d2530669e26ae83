/*
 * tests/unit/mds/test_fid_durable.c - no FID is handed out twice, even when
 * the host crashes: the MDT on a real RocksDB whose unsynced log is lost on
 * a kill (WEIR_MDS_TEST_LOSE_UNSYNCED=1, mds/kv.c), as a power loss would
 * lose it. A child process makes files past a FID chunk (the high-water
 * mark moves), syncs only the first ones and dies; the namespace opened
 * again must not give the lost creates' FIDs to new files (their OST
 * objects may hold what the client wrote before the crash).
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mds/mds.h"
#include "mds/mds_int.h"

#define SYNCED (NS_FID_CHUNK - 10) /* made and synced */
#define LOST 20                     /* then made and lost: across the chunk's end */

static int choose(void *arg, struct weir_layout *lo, int32_t off)
{
	(void)arg;
	(void)off;
	if (lo->lo_stripe_count == UINT32_MAX)
		lo->lo_stripe_count = 1;
	lo->lo_osts[0] = 0;
	return 0;
}

static int create(struct mds_ns *ns, const char *name, struct weir_fid *fid)
{
	struct mds_inode in;
	bool created;
	char path[64];
	snprintf(path, sizeof(path), "/%s", name);
	int rc = mds_ns_open_file(ns, NULL, NULL, path, MDS_OF_CREAT | MDS_OF_WRITE, 0644, NULL,
				  choose, NULL, &in, &created);
	if (!rc) {
		*fid = in.in_fid;
		rc = mds_ns_close_file(ns, &in.in_fid, true, NULL);
	}
	return rc;
}

/* The child: SYNCED files synced, LOST more unsynced, their FIDs to \a fd, then a crash. */
static void child(const char *dir, int fd)
{
	struct mds_ns_conf c = { .nc_path = dir };
	struct mds_ns *ns;
	struct weir_fid fid;
	char name[32];
	if (mds_ns_open(&c, &ns))
		_exit(2);
	for (int i = 0; i < SYNCED + LOST; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		if (create(ns, name, &fid))
			_exit(3);
		if (i >= SYNCED && write(fd, &fid, sizeof(fid)) != sizeof(fid))
			_exit(4);
		if (i == SYNCED - 1 && mds_ns_sync(ns, NULL))
			_exit(5);
	}
	_exit(0); /* no close, no sync: the log's tail is lost */
}

static void test_fid_not_reused_after_lost_log_tail(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/weir-test-fid-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	int p[2];
	CU_ASSERT_FATAL(pipe(p) == 0);
	setenv("WEIR_MDS_TEST_LOSE_UNSYNCED", "1", 1);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		close(p[0]);
		child(dir, p[1]);
	}
	close(p[1]);
	struct weir_fid lost[LOST];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(lost) && (n = read(p[0], (char *)lost + got, sizeof(lost) - got)) > 0)
		got += (size_t)n;
	close(p[0]);
	int st = 0;
	CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
	CU_ASSERT_FATAL(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CU_ASSERT_FATAL(got == sizeof(lost));

	struct mds_ns_conf c = { .nc_path = dir };
	struct mds_ns *ns;
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	/* the test means something only if the tail was lost indeed */
	struct mds_inode in;
	char name[32];
	snprintf(name, sizeof(name), "/f%d", SYNCED - 1);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, name, 0, &in), 0);
	snprintf(name, sizeof(name), "/f%d", SYNCED + LOST - 1);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, name, 0, &in), -ENOENT);
	int reused = 0;
	for (int i = 0; i < 2 * LOST; i++) {
		struct weir_fid fid;
		snprintf(name, sizeof(name), "g%d", i);
		CU_ASSERT_EQUAL_FATAL(create(ns, name, &fid), 0);
		for (int j = 0; j < LOST; j++)
			reused += weir_fid_eq(&fid, &lost[j]);
	}
	CU_ASSERT_EQUAL(reused, 0);
	mds_ns_close(ns);
	unsetenv("WEIR_MDS_TEST_LOSE_UNSYNCED");
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
}

/*
 * An MDT other than MDT0 (issue 16): its FIDs are of its own sequence (so a
 * client routes them with weir_fid_mdt() alone), it holds no root, and the
 * index it was formatted with is kept: opened under another one it refuses
 * (-EINVAL), under its own it opens, and FIDs go on in its sequence. A walk
 * that starts at another MDT's directory (the root) is redirected there.
 */
static void test_mdt_index_kept_and_fids_route(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/weir-test-mdtidx-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	struct mds_ns_conf c = { .nc_path = dir, .nc_mdt_index = 3 };
	struct mds_ns *ns;
	struct mds_inode in;
	struct weir_fid f1, f2, root = weir_fid_root();
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	CU_ASSERT_EQUAL(ns_fid_alloc(ns, &f1), 0);
	CU_ASSERT_EQUAL(f1.fid_seq, weir_fid_mdt_seq(3));
	CU_ASSERT_EQUAL(weir_fid_mdt(&f1), 3);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &root, &in), -EREMOTE); /* the root is MDT0's */
	struct weir_fid mine = { weir_fid_mdt_seq(3), 999999 };
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &mine, &in), -ENOENT); /* its own: not there */
	/* a walk from the root, or from another MDT's directory, goes on there
	 * (docs/dne.md, step 2): -EREMOTE, and with PF_REDIRECT where and what
	 * is left of the path (leading slashes dropped) */
	struct weir_fid redir, other = { weir_fid_mdt_seq(5), 7 };
	char *rest = NULL;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/a/b", 0, &in), -EREMOTE);
	CU_ASSERT_EQUAL(mds_ns_lookup_redirect(ns, NULL, NULL, "//a//b/", 0, &in, &redir, &rest, NULL), 0);
	CU_ASSERT(weir_fid_eq(&redir, &root));
	CU_ASSERT_STRING_EQUAL(rest ? rest : "(null)", "a//b/");
	free(rest);
	CU_ASSERT_EQUAL(mds_ns_lookup_redirect(ns, NULL, &other, "x/y", 0, &in, &redir, &rest, NULL), 0);
	CU_ASSERT(weir_fid_eq(&redir, &other));
	CU_ASSERT_STRING_EQUAL(rest ? rest : "(null)", "x/y");
	free(rest);
	CU_ASSERT_EQUAL(mds_ns_lookup_redirect(ns, NULL, &other, "", 0, &in, &redir, &rest, NULL), 0);
	CU_ASSERT_STRING_EQUAL(rest ? rest : "(null)", ""); /* the directory itself */
	free(rest);
	/* its own FID that is not there: no redirect, the error */
	rest = NULL;
	CU_ASSERT_EQUAL(mds_ns_lookup_redirect(ns, NULL, &mine, "x", 0, &in, &redir, &rest, NULL),
			-ENOENT);
	CU_ASSERT_PTR_NULL(rest);
	mds_ns_close(ns);

	c.nc_mdt_index = 0;
	CU_ASSERT_EQUAL(mds_ns_open(&c, &ns), -EINVAL);
	c.nc_mdt_index = 4;
	CU_ASSERT_EQUAL(mds_ns_open(&c, &ns), -EINVAL);
	c.nc_mdt_index = 3;
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	CU_ASSERT_EQUAL(ns_fid_alloc(ns, &f2), 0);
	CU_ASSERT_EQUAL(weir_fid_mdt(&f2), 3);
	CU_ASSERT_TRUE(f2.fid_oid > f1.fid_oid);
	mds_ns_close(ns);
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);

	/* MDT0 holds the root, and its FIDs route to 0 */
	CU_ASSERT_FATAL(mkdtemp(strcpy(dir, "/tmp/weir-test-mdtidx-XXXXXX")) != NULL);
	c.nc_mdt_index = 0;
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &root, &in), 0);
	CU_ASSERT_EQUAL(ns_fid_alloc(ns, &f1), 0);
	CU_ASSERT_EQUAL(weir_fid_mdt(&f1), 0);
	mds_ns_close(ns);
	c.nc_mdt_index = 1;
	CU_ASSERT_EQUAL(mds_ns_open(&c, &ns), -EINVAL);
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_fid_not_reused_after_lost_log_tail),
		TH_TEST(test_mdt_index_kept_and_fids_route),
		TH_TEST_END,
	};
	return th_cunit_run("mds_fid_durable", NULL, NULL, tests);
}
