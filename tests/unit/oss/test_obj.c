/*
 * tests/unit/oss/test_obj.c - oss/obj.c on a real OST directory (in /tmp,
 * ext4 here): object and segment naming, segments created on demand, the
 * object size and blocks from its segments, truncate across segments,
 * destroy, SEEK_DATA/SEEK_HOLE across segments, and corrupt segment
 * directories.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/log.h"
#include "harness.h"
#include "oss/oss_int.h"

#define TIB (1ULL << 40)

static char dir[64];
static struct oss_ost ost;
static uint64_t next_oid = 1;

static int suite_init(void)
{
	char log[128];

	snprintf(dir, sizeof(dir), "/tmp/weir-oss-obj-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(log, sizeof(log), "%s/oss.log", dir); /* an OST directory may hold other files */
	weir_log_set_level(WEIR_LOG_LVL_ERROR);
	if (weir_log_open(log))
		return -1;
	return oss_ost_init(&ost, dir) ? -1 : 0;
}

static int suite_clean(void)
{
	oss_ost_fini(&ost);
	return th_rm_rf(dir) ? -1 : 0;
}

/* A fresh object for each test. */
static struct oss_obj obj_new(uint32_t stripe)
{
	struct oss_obj ob = { .ob_ost = &ost, .ob_stripe = stripe };
	ob.ob_fid.fid_seq = 0x200000400ULL;
	ob.ob_fid.fid_oid = next_oid++;
	return ob;
}

/* Write \a len bytes of pattern \a seed at object offset \a off, segment by segment. */
static int obj_pwrite(const struct oss_obj *ob, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);
	size_t done = 0;
	int fd, rc = 0;

	if (!b)
		return -ENOMEM;
	th_fill_pattern(b, len, seed);
	while (!rc && done < len) {
		uint64_t pos = off + done;
		size_t n = len - done;
		if (n > OSS_SEG_SIZE - oss_seg_off(pos))
			n = (size_t)(OSS_SEG_SIZE - oss_seg_off(pos));
		rc = oss_obj_seg_open(ob, oss_seg_of(pos), O_WRONLY | O_CREAT, &fd);
		if (rc)
			break;
		if (pwrite(fd, b + done, n, (off_t)oss_seg_off(pos)) != (ssize_t)n)
			rc = -EIO;
		close(fd);
		done += n;
	}
	free(b);
	return rc;
}

static bool path_exists(const char *rel)
{
	struct stat st;
	return fstatat(ost.ot_dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_obj_names_segment_zero_v1_and_segments_in_d(void)
{
	struct oss_obj ob = { .ob_ost = &ost, .ob_stripe = 3 };
	char name[OSS_OBJ_NAME_MAX], exp[OSS_OBJ_NAME_MAX];

	ob.ob_fid.fid_seq = 0x200000400ULL;
	ob.ob_fid.fid_oid = 0x1234;
	unsigned hh = (unsigned)((0x1234ULL ^ 0x200000400ULL ^ 3ULL * 0x9e3779b9ULL) & 0xff);
	snprintf(exp, sizeof(exp), "O/%02x/200000400-1234-3", hh);
	oss_obj_name(&ob.ob_fid, 3, name);
	CU_ASSERT_STRING_EQUAL(name, exp);
	oss_obj_seg_name(&ob, 0, name);
	CU_ASSERT_STRING_EQUAL(name, exp);
	oss_obj_seg_name(&ob, 1, name);
	strcat(exp, ".d/1");
	CU_ASSERT_STRING_EQUAL(name, exp);
	/* the longest name fits */
	ob.ob_fid.fid_seq = UINT64_MAX;
	ob.ob_fid.fid_oid = UINT64_MAX;
	ob.ob_stripe = 127;
	oss_obj_seg_name(&ob, OSS_SEG_MAX, name);
	CU_ASSERT(strlen(name) < OSS_OBJ_NAME_MAX - 1);
	CU_ASSERT(strstr(name, ".d/8388607") != NULL);
	CU_ASSERT_EQUAL(OSS_SEG_MAX, 8388607);
	CU_ASSERT_EQUAL(oss_seg_of((uint64_t)INT64_MAX - 1), OSS_SEG_MAX);
	CU_ASSERT_EQUAL(oss_seg_off(TIB + 5), 5);
}

static void test_obj_missing_object_not_exists(void)
{
	struct oss_obj ob = obj_new(0);
	struct oss_obj_attr oa;
	uint64_t *segs = (uint64_t *)1;
	size_t nr = 99;
	int fd;

	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_FALSE(oa.oa_exists);
	CU_ASSERT_EQUAL(oa.oa_size, 0);
	CU_ASSERT_EQUAL(oss_obj_seg_open(&ob, 0, O_RDONLY, &fd), -ENOENT);
	CU_ASSERT_EQUAL(oss_obj_seg_open(&ob, 2, O_RDONLY, &fd), -ENOENT);
	CU_ASSERT_EQUAL(oss_obj_segs_list(&ob, &segs, &nr), 0);
	CU_ASSERT_PTR_NULL(segs);
	CU_ASSERT_EQUAL(nr, 0);
	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0); /* idempotent */
}

static void test_obj_segment_open_creates_segment_zero_first(void)
{
	struct oss_obj ob = obj_new(1);
	struct oss_obj_attr oa;
	char name[OSS_OBJ_NAME_MAX];
	int fd;

	CU_ASSERT_EQUAL_FATAL(oss_obj_seg_open(&ob, 5, O_WRONLY | O_CREAT, &fd), 0);
	close(fd);
	oss_obj_seg_name(&ob, 0, name);
	CU_ASSERT_TRUE(path_exists(name));
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_TRUE(oa.oa_exists);
	CU_ASSERT_EQUAL(oa.oa_size, 0); /* an empty segment adds nothing to the size */
	CU_ASSERT_EQUAL(oss_obj_seg_open(&ob, OSS_SEG_MAX + 1, O_WRONLY | O_CREAT, &fd), -EFBIG);
}

static void test_obj_size_and_blocks_from_highest_segment(void)
{
	struct oss_obj ob = obj_new(2);
	struct oss_obj_attr oa;
	uint64_t *segs;
	size_t nr;

	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 100, 4096, 1), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 4196);
	blkcnt_t b0 = (blkcnt_t)oa.oa_blocks;
	CU_ASSERT(b0 > 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 7 * TIB + 5, 10, 2), 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 3 * TIB - 1, 2, 3), 0); /* across 3 TiB */
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 7 * TIB + 15);
	CU_ASSERT((blkcnt_t)oa.oa_blocks >= b0 + 3 * 8); /* three more 4 KiB blocks */
	CU_ASSERT(oa.oa_mtime_ns > 0);
	CU_ASSERT_EQUAL(oss_obj_segs_list(&ob, &segs, &nr), 0);
	CU_ASSERT_EQUAL_FATAL(nr, 3);
	CU_ASSERT_EQUAL(segs[0], 2);
	CU_ASSERT_EQUAL(segs[1], 3);
	CU_ASSERT_EQUAL(segs[2], 7);
	free(segs);
	/* the last byte an object may hold */
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, (uint64_t)INT64_MAX - 1, 1, 4), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, (uint64_t)INT64_MAX);
}

static void test_obj_truncate_across_segments(void)
{
	struct oss_obj ob = obj_new(3);
	struct oss_obj_attr oa;
	char name[OSS_OBJ_NAME_MAX];
	uint64_t *segs;
	size_t nr;

	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 0, 100, 1), 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 2 * TIB - 10, 100, 2), 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 5 * TIB, 100, 3), 0);
	/* to exactly a segment boundary: segment 1 is then 2^40 long */
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 2 * TIB), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 2 * TIB);
	CU_ASSERT_EQUAL(oss_obj_segs_list(&ob, &segs, &nr), 0);
	CU_ASSERT_EQUAL(nr, 1);
	free(segs);
	/* grow into a segment that does not exist */
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 4 * TIB + 1), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 4 * TIB + 1);
	/* below 1 TiB: the segment directory goes */
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 50), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 50);
	oss_obj_name(&ob.ob_fid, ob.ob_stripe, name);
	strcat(name, ".d");
	CU_ASSERT_FALSE(path_exists(name));
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 0), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_TRUE(oa.oa_exists);
	CU_ASSERT_EQUAL(oa.oa_size, 0);
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, (uint64_t)INT64_MAX + 1), -EFBIG);
	/* truncate creates */
	struct oss_obj ob2 = obj_new(3);
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob2, 3 * TIB), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob2, &oa), 0);
	CU_ASSERT_TRUE(oa.oa_exists);
	CU_ASSERT_EQUAL(oa.oa_size, 3 * TIB);
	CU_ASSERT_EQUAL(oa.oa_blocks, 0);
}

static void test_obj_truncate_grow_keeps_preallocation_shrink_frees_it(void)
{
	struct oss_obj ob = obj_new(4);
	struct oss_obj_attr oa;
	int fd;

	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 0, 10, 1), 0);
	CU_ASSERT_EQUAL_FATAL(oss_obj_seg_open(&ob, 3, O_WRONLY | O_CREAT, &fd), 0);
	CU_ASSERT_EQUAL(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536), 0);
	close(fd);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 10);
	uint64_t b = oa.oa_blocks;
	CU_ASSERT(b >= 128);
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 1000), 0); /* grows: keeps segment 3 */
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_blocks, b);
	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 5), 0); /* shrinks: frees it */
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT(oa.oa_blocks < b);
	CU_ASSERT_EQUAL(oss_obj_seg_open(&ob, 3, O_RDONLY, &fd), -ENOENT);
}

static void test_obj_destroy_removes_every_segment(void)
{
	struct oss_obj ob = obj_new(5);
	struct oss_obj_attr oa;
	char name[OSS_OBJ_NAME_MAX];

	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 10, 10, 1), 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 9 * TIB, 10, 1), 0);
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, OSS_SEG_MAX * TIB, 10, 1), 0);
	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_FALSE(oa.oa_exists);
	oss_obj_name(&ob.ob_fid, ob.ob_stripe, name);
	CU_ASSERT_FALSE(path_exists(name));
	strcat(name, ".d");
	CU_ASSERT_FALSE(path_exists(name));
	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0);
}

static void test_obj_seek_data_hole_across_segments(void)
{
	struct oss_obj ob = obj_new(6);
	struct oss_obj_attr oa;
	uint64_t r = 0;

	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 0, false, &r, &oa), -ENXIO); /* no object */
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, TIB - 4096, 4096, 1), 0); /* full to the seam */
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, TIB, 4096, 2), 0);       /* and on */
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 3 * TIB + 8192, 10, 3), 0);
	/* data */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 0, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, TIB - 4096);
	CU_ASSERT_EQUAL(oa.oa_size, 3 * TIB + 8202);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, TIB + 4096, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 8192); /* segment 2 is missing, segment 3 starts with a hole */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 8200, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 8200);
	/* block granularity: the rest of the object's last block counts as data ... */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 8202, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 8202);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 12288, false, &r, &oa), -ENXIO);
	/* holes */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 0, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, TIB - 4096, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, TIB + 4096); /* data runs across the seam */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 2 * TIB + 5, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 2 * TIB + 5);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 8195, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 12288); /* ... so the hole after it is at the block's end */
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 4 * TIB, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 4 * TIB); /* past the data: a hole right there */
	/* a segment file's end inside the object, as the object's end */
	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 5 * TIB + 100, 10, 4), 0);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 9000, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 9000);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 12288, false, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 5 * TIB);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 8191, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 8191);
	CU_ASSERT_EQUAL(oss_obj_seek(&ob, 3 * TIB + 8192, true, &r, &oa), 0);
	CU_ASSERT_EQUAL(r, 3 * TIB + 12288);
}

static void test_obj_segment_dir_garbage_ignored_too_long_segment_eio(void)
{
	struct oss_obj ob = obj_new(7);
	struct oss_obj_attr oa;
	char name[OSS_OBJ_NAME_MAX], junk[OSS_OBJ_NAME_MAX + 16];
	uint64_t *segs;
	size_t nr;
	int fd;

	CU_ASSERT_EQUAL_FATAL(obj_pwrite(&ob, 2 * TIB, 10, 1), 0);
	oss_obj_name(&ob.ob_fid, ob.ob_stripe, name);
	const char *bad[] = { "junk", "01", "0", "8388608", "99999999999999999999999", "2x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(junk, sizeof(junk), "%s.d/%s", name, bad[i]);
		fd = openat(ost.ot_dirfd, junk, O_CREAT | O_WRONLY, 0644);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(pwrite(fd, "x", 1, 0), 1);
		close(fd);
	}
	CU_ASSERT_EQUAL(oss_obj_segs_list(&ob, &segs, &nr), 0);
	CU_ASSERT_EQUAL_FATAL(nr, 1);
	CU_ASSERT_EQUAL(segs[0], 2);
	free(segs);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 2 * TIB + 10);
	/* a segment file longer than 2^40 is corrupt: an error, not a wrong size */
	CU_ASSERT_EQUAL_FATAL(oss_obj_seg_open(&ob, 2, O_WRONLY, &fd), 0);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)TIB + 1), 0);
	close(fd);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), -EIO);
	/* destroy removes the whole directory, garbage too */
	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0);
	strcat(name, ".d");
	CU_ASSERT_FALSE(path_exists(name));
}

static void test_obj_hash_dir_missing_recreated_on_create(void)
{
	struct oss_obj ob = obj_new(8);
	char name[OSS_OBJ_NAME_MAX];
	int fd;

	oss_obj_name(&ob.ob_fid, ob.ob_stripe, name);
	*strrchr(name, '/') = 0; /* "O/<hh>" */
	char abs[512];
	snprintf(abs, sizeof(abs), "%s/%s", dir, name);
	CU_ASSERT_EQUAL_FATAL(th_rm_rf(abs), 0);
	CU_ASSERT_EQUAL(oss_obj_seg_open(&ob, 0, O_RDONLY, &fd), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(oss_obj_seg_open(&ob, 1, O_WRONLY | O_CREAT, &fd), 0);
	close(fd);
	CU_ASSERT_TRUE(path_exists(name));
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_obj_names_segment_zero_v1_and_segments_in_d),
		TH_TEST(test_obj_missing_object_not_exists),
		TH_TEST(test_obj_segment_open_creates_segment_zero_first),
		TH_TEST(test_obj_size_and_blocks_from_highest_segment),
		TH_TEST(test_obj_truncate_across_segments),
		TH_TEST(test_obj_truncate_grow_keeps_preallocation_shrink_frees_it),
		TH_TEST(test_obj_destroy_removes_every_segment),
		TH_TEST(test_obj_seek_data_hole_across_segments),
		TH_TEST(test_obj_segment_dir_garbage_ignored_too_long_segment_eio),
		TH_TEST(test_obj_hash_dir_missing_recreated_on_create),
		TH_TEST_END,
	};
	return th_cunit_run("oss/obj", suite_init, suite_clean, tests);
}
