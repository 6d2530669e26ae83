/*
 * tests/unit/mds/test_ns_clean.c - the last writer's close that only clears
 * SIZE_STALE (mds/ns_clean.c) on a real RocksDB: no batch before the
 * return, the flag hidden at once, cleared on disk by a group, by the
 * flush, at close of the MDT; a writer's reopen marks the file again; a
 * crash (a child process that exits without closing the MDT) leaves the
 * flag set, never a clear flag on a file being written; a group never
 * writes back a record something else rewrote since the close. And the
 * truncate epoch: a size a writer glimpsed before a truncate is not taken
 * (by its close or its fsync), and O_TRUNC asks the opener to finish the
 * truncate only when the objects may hold data.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ns_fixture.h"

static bool stale(const struct weir_fid *fid)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(mds_ns_getattr(ns, fid, &in) == 0);
	return in.in_flags & MDS_INODE_F_SIZE_STALE;
}

static int open_w(const char *path, uint32_t extra, struct mds_inode *in)
{
	bool created;
	return mds_ns_open_file(ns, NULL, NULL, path, MDS_OF_WRITE | extra, 0644, NULL, fx_choose,
				NULL, in, &created);
}

static void test_clean_close_hides_flag_without_a_write(void)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(open_w("/c1", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT(stale(&in.in_fid));
	uint64_t seq = mds_ns_write_seq(ns);
	size_t pending = mds_ns_clean_pending(ns);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_write_seq(ns), seq); /* no batch before the return */
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), pending + 1);
	CU_ASSERT(!stale(&in.in_fid));
	struct mds_inode got;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/c1", 0, &got), 0);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
	/* the flush writes it: one batch, nothing left in memory */
	CU_ASSERT(mds_ns_clean_flush(ns) >= 1);
	CU_ASSERT(mds_ns_write_seq(ns) > seq);
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), 0);
	CU_ASSERT(!stale(&in.in_fid));
	fx_reopen();
	CU_ASSERT(!stale(&in.in_fid));
}

static void test_clean_close_is_on_disk_after_reopen(void)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(open_w("/c2", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT(mds_ns_clean_pending(ns) >= 1);
	fx_reopen(); /* mds_ns_close() writes what is pending */
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), 0);
	CU_ASSERT(!stale(&in.in_fid));
}

static void test_clean_close_then_writer_open_is_stale_again(void)
{
	struct mds_inode in, w2;
	CU_ASSERT_FATAL(open_w("/c3", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT(!stale(&in.in_fid));
	/* a writer opens it before the clear reached the disk */
	CU_ASSERT_FATAL(open_w("/c3", 0, &w2) == 0);
	CU_ASSERT(stale(&in.in_fid));
	/* a flush must not clear the flag of a file being written */
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT(stale(&in.in_fid));
	fx_reopen(); /* (the open count goes with it, as in an MDS restart) */
	CU_ASSERT(stale(&in.in_fid));
	/* a new writer's close that reports the size clears it again (one that
	 * reports nothing may not: test_inherited_stale_flag_...) */
	CU_ASSERT_FATAL(open_w("/c3", 0, &w2) == 0);
	struct mds_write_report wr = { .wr_has_size = true,
					.wr_size_epoch = mds_ns_size_epoch(ns, &w2.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &w2.in_fid, true, &wr), 0);
	CU_ASSERT(!stale(&in.in_fid));
}

static void test_clean_close_with_other_writer_keeps_flag(void)
{
	struct mds_inode a, b;
	CU_ASSERT_FATAL(open_w("/c4", MDS_OF_CREAT, &a) == 0);
	CU_ASSERT_FATAL(open_w("/c4", 0, &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, NULL), 0);
	CU_ASSERT(stale(&a.in_fid)); /* b still writes */
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT(!stale(&a.in_fid));
}

static void test_close_with_a_size_writes_before_return(void)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(open_w("/c5", MDS_OF_CREAT, &in) == 0);
	size_t pending = mds_ns_clean_pending(ns);
	uint64_t seq = mds_ns_write_seq(ns);
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = 4321, .wr_blocks = 16,
					.wr_size_epoch = mds_ns_size_epoch(ns, &in.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, &wr), 0);
	CU_ASSERT(mds_ns_write_seq(ns) > seq);
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), pending);
	struct mds_inode got;
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 4321);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
}

static void test_clean_closes_go_to_disk_in_groups(void)
{
	struct weir_fid fids[3 * 64 + 5];
	int n = (int)(sizeof(fids) / sizeof(fids[0]));
	CU_ASSERT_FATAL(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/g", 0755) == 0);
	for (int i = 0; i < n; i++) {
		char p[64];
		struct mds_inode in;
		snprintf(p, sizeof(p), "/g/f%d", i);
		CU_ASSERT_FATAL(open_w(p, MDS_OF_CREAT, &in) == 0);
		CU_ASSERT_FATAL(mds_ns_close_file(ns, &in.in_fid, true, NULL) == 0);
		fids[i] = in.in_fid;
		/* the close that fills a group writes it */
		CU_ASSERT(mds_ns_clean_pending(ns) < 64);
	}
	CU_ASSERT(mds_ns_clean_pending(ns) > 0);
	fx_reopen();
	for (int i = 0; i < n; i++)
		CU_ASSERT(!stale(&fids[i]));
}

static void test_clean_close_of_removed_file_is_skipped(void)
{
	struct mds_inode in, got;
	CU_ASSERT_FATAL(open_w("/c6", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/c6"), 0);
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), -ENOENT);
	/* a second name keeps the inode: the flush writes its record */
	CU_ASSERT_FATAL(open_w("/c7", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(fx_link(NULL, "/c7", "/c7b"), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/c7"), 0);
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	fx_reopen();
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 1);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
}

static void test_clean_close_then_chmod_keeps_the_chmod(void)
{
	struct mds_inode in, got;
	CU_ASSERT_FATAL(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT_FATAL(open_w("/c8", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), 1);
	/* another write of the record makes the close's copy stale: it must not be written */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/c8", 0600), 0);
	CU_ASSERT_EQUAL(mds_ns_clean_pending(ns), 0);
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	fx_reopen();
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mode & 07777, 0600);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE)); /* the chmod wrote it clear */
	/* a reader's open that updates atime, then a flush */
	CU_ASSERT_FATAL(open_w("/c9", MDS_OF_CREAT, &in) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(NULL, "/c9", MDS_OF_READ, &got), 0);
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
}

/* A crash: a child creates and closes files, then exits without closing the MDT. */
static void test_crash_before_flush_leaves_flag_set(void)
{
	CU_ASSERT_FATAL(mds_ns_clean_flush(ns) >= 0);
	mds_ns_close(ns);
	ns = NULL;
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct mds_ns_conf c = { .nc_path = fx_dir };
		struct mds_inode in;
		struct mds_write_report wr = { .wr_has_size = true, .wr_size = 777 };
		if (mds_ns_open(&c, &ns))
			_exit(2);
		if (open_w("/k1", MDS_OF_CREAT, &in) || mds_ns_close_file(ns, &in.in_fid, true, NULL))
			_exit(3);
		if (open_w("/k2", MDS_OF_CREAT, &in))
			_exit(4);
		wr.wr_size_epoch = mds_ns_size_epoch(ns, &in.in_fid);
		if (mds_ns_close_file(ns, &in.in_fid, true, &wr))
			_exit(4);
		_exit(mds_ns_clean_pending(ns) == 1 ? 0 : 5); /* no close, no flush */
	}
	int st = 0;
	CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
	CU_ASSERT_FATAL(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct mds_ns_conf c = { .nc_path = fx_dir };
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	struct mds_inode got;
	/* the clean close was not on disk: the flag stays (a stat glimpses the OSTs) */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/k1", &got), 0);
	CU_ASSERT(got.in_flags & MDS_INODE_F_SIZE_STALE);
	/* the close that reported a size was acknowledged durable */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/k2", &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 777);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
}


/*
 * A writer of an earlier run (before a restart) left SIZE_STALE set and
 * maybe bytes on the OSTs the MDS never heard of: a writer of this run that
 * wrote nothing and reports no size must not clear the flag (every stat
 * would then say the old size), only a close that reports a size may.
 */
static void test_inherited_stale_flag_kept_by_empty_writer_close(void)
{
	struct mds_inode a, b;
	CU_ASSERT_FATAL(open_w("/inh", MDS_OF_CREAT, &a) == 0); /* never closed */
	fx_reopen(); /* the MDS restarted; A's client is gone */
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT_FATAL(open_w("/inh", 0, &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	fx_reopen();
	CU_ASSERT(stale(&a.in_fid));
	/* O_TRUNC knows the size (0) */
	CU_ASSERT_FATAL(open_w("/inh", MDS_OF_TRUNC, &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT(!stale(&a.in_fid));
	/* set again by a writer that vanished; a writer reporting a size clears it */
	CU_ASSERT_FATAL(open_w("/inh", 0, &b) == 0);
	fx_reopen();
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT_FATAL(open_w("/inh", 0, &b) == 0);
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = 4096, .wr_blocks = 8,
					.wr_size_epoch = mds_ns_size_epoch(ns, &b.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, &wr), 0);
	CU_ASSERT(!stale(&a.in_fid));
	struct mds_inode got;
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 4096);
}

/*
 * A writer that changed the data but could not glimpse the size (an OST
 * down at its close: mtime, no size) leaves the flag set, and a later
 * writer's close that reports no size does not clear it either; the next
 * close that reports a size does.
 */
static void test_writer_close_without_size_keeps_flag(void)
{
	struct mds_inode a, b;
	CU_ASSERT_FATAL(open_w("/nosz", MDS_OF_CREAT, &a) == 0);
	struct mds_write_report wr = { .wr_mtime_ns = 1700000000000000000LL };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, &wr), 0);
	CU_ASSERT(stale(&a.in_fid));
	/* two writers: the one without a size closes first, then an empty one */
	CU_ASSERT_FATAL(open_w("/nosz", 0, &a) == 0);
	CU_ASSERT_FATAL(open_w("/nosz", 0, &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, &wr), 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT(mds_ns_clean_flush(ns) >= 0);
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT_FATAL(open_w("/nosz", 0, &b) == 0);
	struct mds_write_report sz = { .wr_has_size = true, .wr_size = 10, .wr_blocks = 8,
					.wr_size_epoch = mds_ns_size_epoch(ns, &b.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, &sz), 0);
	CU_ASSERT(!stale(&a.in_fid));
}

/*
 * Issue 12, item 1: writer A glimpses (epoch read), B truncates (objects,
 * then the MDS), A's close arrives with the size it glimpsed before: it is
 * not taken (the size stays the truncate's, not the old one), the file stays
 * stale (its size unknown to the MDS) until a close reports a size glimpsed
 * after the truncate, which is taken and clears the flag.
 */
static void test_size_report_glimpsed_before_truncate_not_taken(void)
{
	struct mds_inode a, b, got;
	CU_ASSERT_FATAL(open_w("/tr", MDS_OF_CREAT, &a) == 0);
	uint64_t e0 = mds_ns_size_epoch(ns, &a.in_fid);
	CU_ASSERT(e0 != 0);
	struct mds_setattr sa = { .sa_valid = MDS_SA_SIZE, .sa_size = 100 };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &a.in_fid, NULL, 0, &sa, &got), 0);
	CU_ASSERT(mds_ns_size_epoch(ns, &a.in_fid) != e0);
	struct mds_write_report old = { .wr_has_size = true, .wr_size = 5000, .wr_blocks = 16,
					 .wr_mtime_ns = 1700000000000000000LL, .wr_size_epoch = e0 };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, &old), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 100);
	CU_ASSERT(got.in_flags & MDS_INODE_F_SIZE_STALE);
	/* an empty writer's close does not clear it; a current report does */
	CU_ASSERT_FATAL(open_w("/tr", 0, &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT(stale(&a.in_fid));
	CU_ASSERT_FATAL(open_w("/tr", 0, &b) == 0);
	struct mds_write_report cur = { .wr_has_size = true, .wr_size = 100, .wr_blocks = 8,
					 .wr_size_epoch = mds_ns_size_epoch(ns, &b.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, &cur), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 100);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
}

/* The same race through fsync's report (mds_ns_update_size). */
static void test_fsync_report_glimpsed_before_truncate_not_taken(void)
{
	struct mds_inode a, got;
	CU_ASSERT_FATAL(open_w("/trs", MDS_OF_CREAT, &a) == 0);
	struct mds_write_report old = { .wr_has_size = true, .wr_size = 9000,
					 .wr_size_epoch = mds_ns_size_epoch(ns, &a.in_fid) };
	struct mds_setattr sa = { .sa_valid = MDS_SA_SIZE, .sa_size = 7 };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &a.in_fid, NULL, 0, &sa, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_update_size(ns, &a.in_fid, &old), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 7);
	/* a report under the current epoch is taken */
	old.wr_size_epoch = mds_ns_size_epoch(ns, &a.in_fid);
	CU_ASSERT_EQUAL(mds_ns_update_size(ns, &a.in_fid, &old), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 9000);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, NULL), 0);
}

/*
 * O_TRUNC tells the opener to truncate the objects and set the size again
 * (MDS_INODE_F_TRUNCATED) only when they may hold data: a size, or a stale
 * one; an empty clean file needs neither.
 */
static void test_open_trunc_flags_only_what_objects_may_hold(void)
{
	struct mds_inode a, b;
	CU_ASSERT_FATAL(open_w("/ot", MDS_OF_CREAT, &a) == 0);
	CU_ASSERT(!(a.in_flags & MDS_INODE_F_TRUNCATED));
	/* open for writing elsewhere: the size may be stale */
	CU_ASSERT_FATAL(open_w("/ot", MDS_OF_TRUNC, &b) == 0);
	CU_ASSERT(b.in_flags & MDS_INODE_F_TRUNCATED);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &a.in_fid, true, NULL), 0);
	/* closed clean with size 0: nothing to drop */
	CU_ASSERT_FATAL(open_w("/ot", MDS_OF_TRUNC, &b) == 0);
	CU_ASSERT(!(b.in_flags & MDS_INODE_F_TRUNCATED));
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = 50, .wr_blocks = 8,
				       .wr_mtime_ns = 1700000000000000000LL,
				       .wr_size_epoch = mds_ns_size_epoch(ns, &b.in_fid) };
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, &wr), 0);
	/* 50 bytes: O_TRUNC drops them */
	CU_ASSERT_FATAL(open_w("/ot", MDS_OF_TRUNC, &b) == 0);
	CU_ASSERT(b.in_flags & MDS_INODE_F_TRUNCATED);
	CU_ASSERT_EQUAL(b.in_size, 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, true, NULL), 0);
	/* the bit is the reply's only: never stored */
	struct mds_inode got;
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &b.in_fid, &got), 0);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_TRUNCATED));
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_clean_close_hides_flag_without_a_write),
		TH_TEST(test_inherited_stale_flag_kept_by_empty_writer_close),
		TH_TEST(test_writer_close_without_size_keeps_flag),
		TH_TEST(test_clean_close_is_on_disk_after_reopen),
		TH_TEST(test_clean_close_then_writer_open_is_stale_again),
		TH_TEST(test_clean_close_with_other_writer_keeps_flag),
		TH_TEST(test_close_with_a_size_writes_before_return),
		TH_TEST(test_clean_closes_go_to_disk_in_groups),
		TH_TEST(test_clean_close_of_removed_file_is_skipped),
		TH_TEST(test_clean_close_then_chmod_keeps_the_chmod),
		TH_TEST(test_crash_before_flush_leaves_flag_set),
		TH_TEST(test_size_report_glimpsed_before_truncate_not_taken),
		TH_TEST(test_fsync_report_glimpsed_before_truncate_not_taken),
		TH_TEST(test_open_trunc_flags_only_what_objects_may_hold),
		TH_TEST_END,
	};
	return th_cunit_run("mds_ns_clean", fx_init, fx_fini, tests);
}
