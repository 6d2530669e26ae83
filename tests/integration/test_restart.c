/*
 * tests/integration/test_restart.c - crash recovery: kill -9 the MDS and
 * restart it on the same MDT and port, kill -9 an OSS and restart it, kill
 * everything at once; acknowledged metadata and written (and fsync'd) data
 * must survive, an old mount may fail once but a new weir_mount must work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)
#define NR_SMALL 30
#define NR_LATE 20
#define BIG_SIZE (3 * MIB + 123)
#define AFTER_SIZE (2 * MIB + 77)

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

/* Run \a op on the old mount; a first failure after a restart is allowed. */
static int old_mount_stat(const char *path)
{
	struct stat st;
	int rc = weir_stat(fs, path, &st);
	if (rc) {
		printf("(old mount: first stat after restart: %s; retrying) ", strerror(-rc));
		rc = weir_stat(fs, path, &st);
		if (rc)
			printf("(old mount: second stat: %s) ", strerror(-rc));
	}
	return rc;
}

static size_t small_size(int i)
{
	return (size_t)i * 1000 + 1;
}

static int check_file(weir_fs_t *f, const char *path, size_t size, uint64_t seed)
{
	uint8_t *w = malloc(size + 1), *r = malloc(size + 100);
	int bad = 0;
	if (!w || !r) {
		free(w);
		free(r);
		return 1;
	}
	th_fill_pattern(w, size, seed);
	ssize_t got = th_get(f, path, r, size + 100);
	if (got != (ssize_t)size) {
		printf("\n  %s: read %zd bytes, want %zu\n", path, got, size);
		bad++;
	} else {
		long at = th_diff_at(w, r, size);
		if (at >= 0) {
			printf("\n  %s: differs at byte %ld\n", path, at);
			bad++;
		}
	}
	long long sz = th_size(f, path);
	if (sz != (long long)size) {
		printf("\n  %s: stat size %lld, want %zu\n", path, sz, size);
		bad++;
	}
	free(w);
	free(r);
	return bad;
}

static int write_file(const char *path, size_t size, uint64_t seed, bool do_fsync)
{
	uint8_t *w = malloc(size);
	if (!w)
		return -ENOMEM;
	th_fill_pattern(w, size, seed);
	weir_file_t *fh = NULL;
	int rc = weir_creat(fs, path, 0644, &fh);
	if (rc) {
		free(w);
		return (int)th_rc(path, rc);
	}
	ssize_t n = weir_pwrite(fh, w, size, 0);
	if (n != (ssize_t)size)
		rc = n < 0 ? (int)n : -EIO;
	if (!rc && do_fsync)
		rc = (int)th_rc("weir_fsync", weir_fsync(fh));
	int crc = weir_close(fh);
	free(w);
	return rc ? rc : crc;
}

/* The tree written before the first crash. \return problems found. */
static int verify_tree(weir_fs_t *f)
{
	int bad = 0;
	struct stat st;
	static const char *dirs[] = { "/t", "/t/a", "/t/a/b", "/t/a/b/c", "/t/big4" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (weir_stat(f, dirs[i], &st) || !S_ISDIR(st.st_mode)) {
			printf("\n  directory %s missing\n", dirs[i]);
			bad++;
		}
	char path[64];
	for (int i = 2; i < NR_SMALL; i++) {
		snprintf(path, sizeof(path), "/t/a/b/file%02d", i);
		bad += check_file(f, path, small_size(i), (uint64_t)i);
	}
	/* the last operations before the crash */
	bad += weir_stat(f, "/t/a/b/file00", &st) != -ENOENT;
	bad += check_file(f, "/t/a/renamed00", small_size(0), 0);
	bad += weir_stat(f, "/t/a/b/file01", &st) != -ENOENT;
	for (int i = 0; i < NR_LATE; i++) {
		snprintf(path, sizeof(path), "/t/late%02d", i);
		if (weir_stat(f, path, &st)) {
			printf("\n  %s (created just before the crash) missing\n", path);
			bad++;
		}
	}
	bad += check_file(f, "/t/big4/ckpt", BIG_SIZE, 4444);
	return bad;
}

static void test_restart_mds_kill9_namespace_and_data_intact(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/t", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/t/a", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/t/a/b", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/t/a/b/c", 0755), 0);
	char path[64];
	for (int i = 0; i < NR_SMALL; i++) {
		snprintf(path, sizeof(path), "/t/a/b/file%02d", i);
		CU_ASSERT_EQUAL(write_file(path, small_size(i), (uint64_t)i, false), 0);
	}
	CU_ASSERT_EQUAL_FATAL(th_stripe_dir(fs, "/t/big4", 4, 64 * KIB), 0);
	CU_ASSERT_EQUAL_FATAL(write_file("/t/big4/ckpt", BIG_SIZE, 4444, true), 0);
	/* acknowledged but never synced: must survive a kill -9 (the WAL) */
	CU_ASSERT_EQUAL(weir_rename(fs, "/t/a/b/file00", "/t/a/renamed00"), 0);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/t/a/b/file01"), 0);
	for (int i = 0; i < NR_LATE; i++) {
		weir_file_t *fh = NULL;
		snprintf(path, sizeof(path), "/t/late%02d", i);
		CU_ASSERT_EQUAL(weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh), 0);
		if (fh)
			weir_close(fh);
	}
	CU_ASSERT_EQUAL_FATAL(verify_tree(fs), 0);

	pid_t old = th_server_pid(cl, TH_MDS);
	uint16_t port = th_server_port(cl, TH_MDS);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_FALSE(th_server_alive(cl, TH_MDS));
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_NOT_EQUAL(th_server_pid(cl, TH_MDS), old);
	CU_ASSERT_EQUAL(th_server_port(cl, TH_MDS), port);

	old_mount_stat("/t");
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	CU_ASSERT_EQUAL(verify_tree(fs), 0);
	/* and the namespace is writable again */
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/t/after_mds_restart", 0755), 0);
	CU_ASSERT_EQUAL(write_file("/t/a/b/c/new", 1000, 5, false), 0);
	CU_ASSERT_EQUAL(check_file(fs, "/t/a/b/c/new", 1000, 5), 0);
}

static void test_restart_oss_kill9_acknowledged_data_intact(void)
{
	/* written and acknowledged, closed, never fsync'd */
	CU_ASSERT_EQUAL_FATAL(write_file("/t/big4/after", AFTER_SIZE, 5555, false), 0);
	for (int id = 0; id < th_cluster_nr_oss(cl); id++) {
		uint16_t port = th_server_port(cl, id);
		CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, id), 0);
		CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, id), 0);
		CU_ASSERT_EQUAL(th_server_port(cl, id), port);
		/* the existing mount reconnects to the restarted OSS */
		int bad = check_file(fs, "/t/big4/after", AFTER_SIZE, 5555);
		if (bad) {
			printf("(first read after OSS restart failed; retrying once) ");
			bad = check_file(fs, "/t/big4/after", AFTER_SIZE, 5555);
		}
		CU_ASSERT_EQUAL(bad, 0);
		CU_ASSERT_EQUAL(check_file(fs, "/t/big4/ckpt", BIG_SIZE, 4444), 0);
	}
	/* writes work again on every OST */
	CU_ASSERT_EQUAL(write_file("/t/big4/post", 1 * MIB, 6, false), 0);
	CU_ASSERT_EQUAL(check_file(fs, "/t/big4/post", 1 * MIB, 6), 0);
}

static void test_restart_kill9_everything_fsynced_survives(void)
{
	CU_ASSERT_EQUAL_FATAL(write_file("/t/big4/synced", 1 * MIB + 5, 7777, true), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/t/synced_dir", 0755), 0);
	for (int id = 0; id < th_cluster_nr_oss(cl); id++)
		CU_ASSERT_EQUAL(th_server_kill(cl, id), 0);
	CU_ASSERT_EQUAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, TH_MDS), 0);
	for (int id = 0; id < th_cluster_nr_oss(cl); id++)
		CU_ASSERT_EQUAL_FATAL(th_server_start(cl, id), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 30000), 0);
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	CU_ASSERT_EQUAL(check_file(fs, "/t/big4/synced", 1 * MIB + 5, 7777), 0);
	CU_ASSERT_EQUAL(check_file(fs, "/t/big4/after", AFTER_SIZE, 5555), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/t/synced_dir", &st), 0);
	CU_ASSERT_EQUAL(verify_tree(fs), 0);
}

static void test_restart_mds_sigterm_clean_exit_and_restart(void)
{
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/t/before_clean_stop", 0755), 0);
	/* SIGTERM: the MDS exits by itself with status 0 (or dies of the signal) */
	CU_ASSERT_EQUAL(th_server_stop(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/t/before_clean_stop", &st), 0);
	CU_ASSERT_EQUAL(verify_tree(fs), 0);
	/* and an OSS */
	CU_ASSERT_EQUAL(th_server_stop(cl, 0), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, 0), 0);
	CU_ASSERT_EQUAL(check_file(fs, "/t/big4/ckpt", BIG_SIZE, 4444), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_restart_mds_kill9_namespace_and_data_intact),
		TH_TEST(test_restart_oss_kill9_acknowledged_data_intact),
		TH_TEST(test_restart_kill9_everything_fsynced_survives),
		TH_TEST(test_restart_mds_sigterm_clean_exit_and_restart),
		TH_TEST_END,
	};
	return th_cunit_run("restart", suite_init, suite_clean, tests);
}
