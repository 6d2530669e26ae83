/*
 * tests/integration/test_mds_close.c - the MDS's clean close (mds/ns_clean.c)
 * against real servers: a file closed clean and then opened for writing by
 * another client is glimpsed again (every client sees the size of every
 * completed write); kill -9 of the MDS after many closes loses no size; the
 * flag clears held in memory reach the disk at a clean stop, so after a
 * restart a stat of those files needs no OST (the OSSs are stopped to show
 * it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define NR_EMPTY 150 /* more than a group of flag clears (NS_CLEAN_BATCH) */
#define NR_DATA 8

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	return th_cluster_mount(NULL, &cl, &fs) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static int create_empty(weir_fs_t *f, const char *path)
{
	weir_file_t *fh;
	int rc = weir_open(f, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &fh);
	if (rc)
		return (int)th_rc(path, rc);
	return (int)th_rc("weir_close", weir_close(fh));
}

static size_t data_size(int i)
{
	return (size_t)i * 3001 + 17;
}

static void test_clean_close_then_other_writer_is_glimpsed(void)
{
	weir_fs_t *b = NULL;
	weir_file_t *fh = NULL;
	char buf[5000];
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/cw", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(create_empty(fs, "/cw/f"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/cw/f"), 0);
	/* another client writes without closing: this one must see the bytes */
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &b), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(b, "/cw/f", O_WRONLY, 0, &fh), 0);
	th_fill_pattern(buf, sizeof(buf), 99);
	CU_ASSERT_EQUAL(weir_pwrite(fh, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(th_size(fs, "/cw/f"), (long long)sizeof(buf));
	CU_ASSERT_EQUAL(weir_pwrite(fh, buf, 100, sizeof(buf)), 100);
	CU_ASSERT_EQUAL(th_size(fs, "/cw/f"), (long long)sizeof(buf) + 100);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/cw/f"), (long long)sizeof(buf) + 100);
	/* and an empty writer's close after that keeps the size */
	CU_ASSERT_EQUAL_FATAL(weir_open(b, "/cw/f", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/cw/f"), (long long)sizeof(buf) + 100);
	CU_ASSERT_EQUAL(weir_umount(b), 0);
}

static int check_tree(weir_fs_t *f, const char *dir)
{
	char p[128];
	int bad = 0;
	for (int i = 0; i < NR_EMPTY; i++) {
		snprintf(p, sizeof(p), "%s/e%d", dir, i);
		long long sz = th_size(f, p);
		if (sz != 0) {
			printf("\n  %s: size %lld, want 0\n", p, sz);
			bad++;
		}
	}
	for (int i = 0; i < NR_DATA; i++) {
		snprintf(p, sizeof(p), "%s/d%d", dir, i);
		long long sz = th_size(f, p);
		if (sz != (long long)data_size(i)) {
			printf("\n  %s: size %lld, want %zu\n", p, sz, data_size(i));
			bad++;
		}
	}
	return bad;
}

static int make_tree(const char *dir)
{
	char p[128];
	int rc = weir_mkdir(fs, dir, 0755);
	for (int i = 0; !rc && i < NR_EMPTY; i++) {
		snprintf(p, sizeof(p), "%s/e%d", dir, i);
		rc = create_empty(fs, p);
	}
	for (int i = 0; !rc && i < NR_DATA; i++) {
		size_t n = data_size(i);
		char *buf = malloc(n);
		if (!buf)
			return -ENOMEM;
		th_fill_pattern(buf, n, (uint64_t)i);
		snprintf(p, sizeof(p), "%s/d%d", dir, i);
		rc = th_put(fs, p, buf, n);
		free(buf);
	}
	return rc;
}

static void test_kill9_after_clean_closes_loses_no_size(void)
{
	CU_ASSERT_EQUAL_FATAL(make_tree("/k9"), 0);
	CU_ASSERT_EQUAL(check_tree(fs, "/k9"), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	CU_ASSERT_EQUAL(check_tree(fs, "/k9"), 0);
	/* a writer after the restart: its size, then an empty writer's close */
	weir_file_t *fh;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/k9/e0", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "0123456789", 10, 0), 10);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/k9/e0"), 10);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/k9/e0", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/k9/e0"), 10);
}

static void test_clean_stop_writes_the_flag_clears(void)
{
	char p[64];
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/st", 0755), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "/st/f%d", i);
		CU_ASSERT_EQUAL_FATAL(create_empty(fs, p), 0);
	}
	/* the closes are one-way: a call answered after them (the MDS handles a
	 * connection's requests in order) says they were handled before the
	 * stop; under a sanitizer a stop right after them once dropped the
	 * last, and the stat below then waited for the stopped OSSs */
	struct statvfs sv;
	CU_ASSERT_EQUAL_FATAL(weir_statfs(fs, &sv), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_stop(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	/* with every OSS stopped, only a file not marked stale can be stat'ed */
	for (int o = 0; o < th_cluster_nr_oss(cl); o++)
		CU_ASSERT_EQUAL_FATAL(th_server_stop(cl, o), 0);
	for (int i = 0; i < 5; i++) {
		struct stat st;
		snprintf(p, sizeof(p), "/st/f%d", i);
		CU_ASSERT_EQUAL(weir_stat(fs, p, &st), 0);
		CU_ASSERT_EQUAL(st.st_size, 0);
	}
	for (int o = 0; o < th_cluster_nr_oss(cl); o++)
		CU_ASSERT_EQUAL(th_server_start(cl, o), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/st/f0"), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_clean_close_then_other_writer_is_glimpsed),
		TH_TEST(test_kill9_after_clean_closes_loses_no_size),
		TH_TEST(test_clean_stop_writes_the_flag_clears),
		TH_TEST_END,
	};
	return th_cunit_run("mds_close", suite_init, suite_clean, tests);
}
