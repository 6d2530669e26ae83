/*
 * tests/integration/test_mdt_full.c - a full MDT: the MDS's RocksDB on a
 * 16 MiB tmpfs mounted by this test (so it needs root: exit 77 otherwise).
 * Creates with long names and setxattrs of 4 KiB values fill it until a
 * call fails: that call's error is ENOSPC (never EIO), the MDS stays up and
 * keeps serving stat, getxattr, readdir, reads of file data, truncates and
 * unlinks, also once another program took every free byte, and after a
 * kill -9 and restart on the full MDT; once a filler file the test put on the tmpfs is removed, creates
 * work again without restarting the MDS (mds/kv.c: "Full MDT").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define MIB (1024ULL * 1024ULL)
#define FILLER_BYTES (3 * MIB) /* removed to free space */
#define XATTR_BYTES 4000
#define MAX_FILES 20000

static char top[64] = "/tmp/weir-mdtfull-XXXXXX";
static char mnt_dir[128];  /* the tmpfs */
static char mdt_dir[160];  /* mnt_dir/mdt: the MDT */
static char filler[160];   /* mnt_dir/filler */
static char filler2[160];  /* mnt_dir/filler2: the rest, as another program would */
static bool mounted;
static struct th_cluster *cl;
static weir_fs_t *fs;
static uint8_t data[100000], rdata[100000];
static int nr_made;        /* files /d/NAME_i made, i < nr_made */

static void name_of(int i, char *p, size_t len)
{
	char pad[201];
	memset(pad, 'n', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = 0;
	snprintf(p, len, "/d/%s_%06d", pad, i);
}

static int make_filler(void)
{
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	int rc = fallocate(fd, 0, 0, (off_t)FILLER_BYTES) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static int suite_init(void)
{
	static const char *mds_args[4];
	struct th_cluster_opts o;

	mds_args[0] = "--mdt";
	mds_args[1] = mdt_dir;
	mds_args[2] = NULL;
	memset(&o, 0, sizeof(o));
	o.tco_nr_oss = 1;
	o.tco_ost_per_oss = 1;
	o.tco_mds_args = mds_args;
	if (th_rc("filler", make_filler()))
		return -1;
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	th_fill_pattern(data, sizeof(data), 77);
	if (th_rc("mkdir /d", weir_mkdir(fs, "/d", 0755)) ||
	    th_rc("put /data", th_put(fs, "/data", data, sizeof(data))))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

/* Make file i with its xattr. \return 0 or the first call's -errno. */
static int make_one(int i)
{
	char p[300];
	uint8_t val[XATTR_BYTES];
	weir_file_t *fh = NULL;

	name_of(i, p, sizeof(p));
	int rc = weir_open(fs, p, O_CREAT | O_WRONLY | O_EXCL, 0644, &fh);
	if (rc)
		return rc;
	rc = weir_close(fh);
	if (rc)
		return rc;
	memset(val, 'a' + i % 26, sizeof(val));
	return weir_setxattr(fs, p, "user.pad", val, sizeof(val), 0);
}

static void test_mdt_full_creates_get_enospc_and_mds_serves_on(void)
{
	int rc = 0, i;

	for (i = 0; i < MAX_FILES; i++) {
		rc = make_one(i);
		if (rc)
			break;
	}
	nr_made = i;
	printf("\n  %d files made, then %s (%d)\n", i, strerror(-rc), rc);
	CU_ASSERT_EQUAL_FATAL(rc, -ENOSPC);
	CU_ASSERT(nr_made > 10);
	/* smaller mkdirs may fit a little longer, then get ENOSPC too */
	char dp[64];
	for (i = 0; i < 1000; i++) {
		snprintf(dp, sizeof(dp), "/dir%d", i);
		rc = weir_mkdir(fs, dp, 0755);
		if (rc)
			break;
	}
	printf("  %d more mkdirs, then %s (%d)\n", i, strerror(-rc), rc);
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	/* a second try is refused the same way, and the MDS is up */
	CU_ASSERT_EQUAL(make_one(MAX_FILES + 1), -ENOSPC);
	CU_ASSERT_EQUAL(weir_mkdir(fs, dp, 0755), -ENOSPC);
	CU_ASSERT_FATAL(th_server_alive(cl, TH_MDS));

	/* reads go on */
	char p[300];
	struct stat st;
	uint8_t val[XATTR_BYTES];
	name_of(0, p, sizeof(p));
	CU_ASSERT_EQUAL(weir_stat(fs, p, &st), 0);
	CU_ASSERT_EQUAL(weir_getxattr(fs, p, "user.pad", val, sizeof(val)), XATTR_BYTES);
	CU_ASSERT_EQUAL(th_get(fs, "/data", rdata, sizeof(rdata)), (ssize_t)sizeof(rdata));
	CU_ASSERT_EQUAL(memcmp(data, rdata, sizeof(data)), 0);
	weir_dir_t *dh = NULL;
	struct weir_dirent de;
	int n = 0;
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/d", &dh), 0);
	while (weir_readdir(dh, &de) > 0)
		n++;
	weir_closedir(dh);
	CU_ASSERT(n >= nr_made);

	/* so do truncates and unlinks */
	CU_ASSERT_EQUAL(weir_truncate(fs, "/data", 1000), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/data"), 1000);
	for (i = 0; i < 5 && i < nr_made; i++) {
		name_of(i, p, sizeof(p));
		CU_ASSERT_EQUAL(weir_unlink(fs, p), 0);
	}
	CU_ASSERT_EQUAL(weir_stat(fs, p, &st), -ENOENT);
	CU_ASSERT(th_server_alive(cl, TH_MDS));
}

/* Another program takes every free byte: the MDS gives back its reserve, so
 * unlinks and truncates still work, and creates still get ENOSPC. */
static void test_mdt_full_filesystem_full_unlinks_use_the_reserve(void)
{
	char p[300];
	int fd = open(filler2, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	off_t len = 0;
	for (off_t step = 1 << 20; step >= 4096; step /= 2)
		while (fallocate(fd, 0, len, step) == 0)
			len += step;
	close(fd);
	printf("\n  filler2: %lld KiB\n", (long long)len >> 10);
	for (int i = 5; i < 10 && i < nr_made; i++) {
		name_of(i, p, sizeof(p));
		CU_ASSERT_EQUAL(weir_unlink(fs, p), 0);
	}
	CU_ASSERT_EQUAL(weir_truncate(fs, "/data", 10), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/data"), 10);
	CU_ASSERT_EQUAL(make_one(MAX_FILES + 3), -ENOSPC);
	CU_ASSERT(th_server_alive(cl, TH_MDS));
	CU_ASSERT_EQUAL(unlink(filler2), 0);
}

/* kill -9 and restart of the MDS on its full MDT: it comes up, serves, refuses creates. */
static void test_mdt_full_mds_restart_on_a_full_mdt(void)
{
	char p[300];
	struct stat st;

	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_remount(cl, &fs), 0);
	name_of(nr_made - 1, p, sizeof(p));
	CU_ASSERT_EQUAL(weir_stat(fs, p, &st), 0);
	/* RocksDB writes its log into (compressed) tables at open, which may
	 * give space back: a create works or gets ENOSPC, never EIO */
	int rc = make_one(MAX_FILES + 4);
	printf("\n  a create after the restart: %d\n", rc);
	CU_ASSERT(rc == 0 || rc == -ENOSPC);
	CU_ASSERT(th_server_alive(cl, TH_MDS));
}

static void test_mdt_full_creates_resume_once_space_is_freed(void)
{
	CU_ASSERT_EQUAL_FATAL(unlink(filler), 0);
	int rc = -1;
	uint64_t t0 = th_now_ms();
	/* the MDS notices within its check interval; no restart */
	while (th_now_ms() - t0 < 20000) {
		rc = make_one(MAX_FILES + 2);
		if (rc != -ENOSPC)
			break;
		th_sleep_ms(200);
	}
	printf("\n  creates again after %llu ms (rc %d)\n",
	       (unsigned long long)(th_now_ms() - t0), rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/d3", 0755), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/after", data, 5000), 0);
	CU_ASSERT_EQUAL(th_get(fs, "/after", rdata, 5000), 5000);
	CU_ASSERT_EQUAL(memcmp(data, rdata, 5000), 0);
	CU_ASSERT(th_server_alive(cl, TH_MDS));
}

static int mount_small(void)
{
	if (geteuid() != 0) {
		printf("SKIP: mounting a small tmpfs for a full MDT needs root\n");
		return 77;
	}
	if (!mkdtemp(top)) {
		perror(top);
		return 1;
	}
	snprintf(mnt_dir, sizeof(mnt_dir), "%s/small", top);
	snprintf(mdt_dir, sizeof(mdt_dir), "%s/mdt", mnt_dir);
	snprintf(filler, sizeof(filler), "%s/filler", mnt_dir);
	snprintf(filler2, sizeof(filler2), "%s/filler2", mnt_dir);
	if (mkdir(mnt_dir, 0755) < 0) {
		perror(mnt_dir);
		return 1;
	}
	if (mount("tmpfs", mnt_dir, "tmpfs", 0, "size=16m,mode=0755") < 0) {
		printf("SKIP: cannot mount a tmpfs on %s: %s\n", mnt_dir, strerror(errno));
		rmdir(mnt_dir);
		rmdir(top);
		return 77;
	}
	mounted = true;
	if (mkdir(mdt_dir, 0755) < 0) {
		perror(mdt_dir);
		return 1;
	}
	return 0;
}

static void umount_small(void)
{
	if (mounted && umount2(mnt_dir, MNT_DETACH) < 0)
		perror(mnt_dir);
	rmdir(mnt_dir);
	rmdir(top);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_mdt_full_creates_get_enospc_and_mds_serves_on),
		TH_TEST(test_mdt_full_filesystem_full_unlinks_use_the_reserve),
		TH_TEST(test_mdt_full_mds_restart_on_a_full_mdt),
		TH_TEST(test_mdt_full_creates_resume_once_space_is_freed),
		TH_TEST_END,
	};
	int rc = mount_small();
	if (rc) {
		if (rc != 77)
			umount_small();
		return rc;
	}
	rc = th_cunit_run("mdt_full", suite_init, suite_clean, tests);
	umount_small();
	return rc;
}
