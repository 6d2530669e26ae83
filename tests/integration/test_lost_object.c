/*
 * tests/integration/test_lost_object.c - missing data is an error: a hole
 * and a lost object must not look alike. The MDS records which objects of a
 * file were written (reported at close and fsync, mds/xattr.c's object map);
 * a reader that finds such an object gone from its OST gets -EIO (and a log
 * line naming the FID, the stripe and the OST), never zeros; a stripe never
 * written still reads as a hole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/util.h"
#include "harness.h"
#include "th_weir.h"

#define SS (64 * 1024) /* stripe size */

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	struct th_cluster_opts o = { .tco_nr_oss = 2, .tco_ost_per_oss = 1 };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	return th_stripe_dir(fs, "/s", 2, SS);
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

/*
 * Remove the object of stripe \a i of \a path from its OST directory, and
 * restart the OSSs (their cache of open segment files would still serve the
 * removed file), as an OST that lost it would be.
 */
static int lose(const char *path, uint32_t i)
{
	struct weir_layout_info li;
	char p[4200];
	if (weir_getstripe(fs, path, &li))
		return -1;
	if (th_ost_obj_path(cl, li.wli_objs[i].woi_ost, li.wli_fid.seq, li.wli_fid.oid, i, p,
			    sizeof(p)))
		return -1;
	if (unlink(p))
		return -errno;
	for (int k = 0; k < th_cluster_nr_oss(cl); k++)
		if (th_server_restart(cl, k))
			return -1;
	return th_cluster_wait_up(cl, 20000);
}

static ssize_t read_all(const char *path, uint8_t *buf, size_t len)
{
	weir_file_t *fh;
	int rc = weir_open(fs, path, O_RDONLY, 0, &fh);
	if (rc)
		return rc;
	ssize_t n = weir_pread(fh, buf, len, 0);
	weir_close(fh);
	return n;
}

static void test_lost_object_written_then_gone_reads_eio(void)
{
	static uint8_t w[4 * SS], r[4 * SS];
	th_fill_pattern(w, sizeof(w), 1);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/s/full", w, sizeof(w)), 0);
	CU_ASSERT_EQUAL(read_all("/s/full", r, sizeof(r)), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(lose("/s/full", 1), 0);
	CU_ASSERT_EQUAL(read_all("/s/full", r, sizeof(r)), -EIO);
	/* the part on the surviving object still reads */
	CU_ASSERT_EQUAL(read_all("/s/full", r, SS), SS);
	CU_ASSERT_EQUAL(memcmp(r, w, SS), 0);
}

static void test_lost_object_never_written_is_a_hole(void)
{
	static uint8_t w[SS], r[2 * SS], z[SS];
	weir_file_t *fh;
	th_fill_pattern(w, sizeof(w), 2);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s/sparse", O_CREAT | O_RDWR, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, SS, 0), SS); /* stripe 0 only */
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 2 * SS), 0);  /* stripe 1: a hole */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(read_all("/s/sparse", r, sizeof(r)), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(memcmp(r, w, SS), 0);
	CU_ASSERT_EQUAL(memcmp(r + SS, z, SS), 0);
}

/* fsync reports the objects too: a writer that never closed (it crashed) loses nothing silently. */
static void test_lost_object_recorded_at_fsync(void)
{
	static uint8_t w[2 * SS], r[2 * SS];
	weir_file_t *fh;
	th_fill_pattern(w, sizeof(w), 3);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s/synced", O_CREAT | O_RDWR, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, sizeof(w), 0), (ssize_t)sizeof(w));
	CU_ASSERT_EQUAL(weir_fsync(fh), 0);
	CU_ASSERT_EQUAL(lose("/s/synced", 0), 0);
	CU_ASSERT_EQUAL(read_all("/s/synced", r, sizeof(r)), -EIO);
	/* the writer's own handle knows what it wrote, too */
	CU_ASSERT_EQUAL(weir_pread(fh, r, sizeof(r), 0), -EIO);
	weir_close(fh);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_lost_object_written_then_gone_reads_eio),
		TH_TEST(test_lost_object_never_written_is_a_hole),
		TH_TEST(test_lost_object_recorded_at_fsync),
		TH_TEST_END,
	};
	return th_cunit_run("lost_object", suite_init, suite_clean, tests);
}
