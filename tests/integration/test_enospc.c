/*
 * tests/integration/test_enospc.c - a write that meets a full OST through
 * libweir: it reports how much it wrote (a short count, as write(2) on a
 * full disk) or fails having changed nothing, and the file's size is exactly
 * what the writes reported, on 1- and 2-stripe layouts (the full OST holding
 * the first or the second object), with many RPCs in flight, and inside the
 * file's old size (no shrinking).
 *
 * One OSS with two OSTs: OST "full" is a 64 MiB tmpfs mounted by this test
 * (so it needs root: exit 77 otherwise), the other an ordinary directory. A
 * filler file in the tmpfs (outside the OST's object tree) leaves an exact
 * number of bytes free before each case. The mount sends RPCs of 1 MiB, so
 * one call of several MiB has many in flight on one object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)
#define SS MIB /* stripe size of every file here */

static char top[64] = "/tmp/weir-enospc-XXXXXX";
static char full_dir[128];   /* the tmpfs: the full OST's directory */
static char filler[160];     /* top/full/filler: takes the space we do not leave */
static bool mounted;
static uint32_t full_ost, free_ost;
static struct th_cluster *cl;
static weir_fs_t *fs;
static uint8_t *wbuf, *rbuf;

/* Leave exactly \a bytes free on the tmpfs (a multiple of the page size). */
static int leave_free(uint64_t bytes)
{
	struct statvfs sv;
	struct stat st;
	int rc = 0;

	int fd = open(filler, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return -errno;
	if (fstatvfs(fd, &sv) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	uint64_t cur = (uint64_t)st.st_size;
	if (cur + avail < bytes) {
		rc = -ENOSPC;
		goto out_close;
	}
	uint64_t want = cur + avail - bytes;
	if (want < cur && ftruncate(fd, (off_t)want) < 0)
		rc = -errno;
	if (want > cur && fallocate(fd, 0, 0, (off_t)want) < 0)
		rc = -errno;
	if (!rc && fstatvfs(fd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize != bytes) {
		fprintf(stderr, "\n  leave_free: %llu free, wanted %llu\n",
			(unsigned long long)sv.f_bavail * sv.f_frsize, (unsigned long long)bytes);
		rc = -EAGAIN;
	}
out_close:
	close(fd);
	return rc;
}

/* Object \a i's share of file offset \a x (weir_layout_obj_lower_bound for 2 stripes). */
static uint64_t lb2(uint32_t i, uint64_t x)
{
	uint64_t rows = x / (2 * SS), rem = x % (2 * SS);
	uint64_t in = rem > i * SS ? rem - i * SS : 0;
	return rows * SS + (in < SS ? in : SS);
}

/* Sizes of \a path's objects (2 at most), in layout order. */
static void obj_sizes(const char *path, uint64_t *s0, uint64_t *s1)
{
	struct weir_layout_info li;
	memset(&li, 0, sizeof(li));
	CU_ASSERT_EQUAL_FATAL(weir_getstripe(fs, path, &li), 0);
	*s0 = li.wli_objs[0].woi_size;
	*s1 = li.wli_stripe_count > 1 ? li.wli_objs[1].woi_size : 0;
}

/* A directory whose files get \a count 1 MiB stripes, the first on OST \a first. */
static int stripe_dir(const char *path, uint32_t count, uint32_t first)
{
	struct weir_stripe_opts so;
	int rc = weir_mkdir(fs, path, 0755);
	if (rc)
		return (int)th_rc(path, rc);
	memset(&so, 0, sizeof(so));
	so.wso_size = sizeof(so);
	so.wso_stripe_count = count;
	so.wso_stripe_size = SS;
	so.wso_stripe_offset = (int32_t)first;
	return (int)th_rc("weir_setstripe", weir_setstripe(fs, path, &so));
}

/* The bytes [0, n) of \a path read back are wbuf's. */
static void check_data(const char *path, uint64_t n)
{
	memset(rbuf, 0xee, n);
	CU_ASSERT_EQUAL(th_get(fs, path, rbuf, n), (ssize_t)n);
	long at = th_diff_at(wbuf, rbuf, n);
	if (at >= 0)
		printf("\n  %s: first difference at byte %ld\n", path, at);
	CU_ASSERT_EQUAL(at, -1);
}

/*
 * Write wbuf[off, off+len) to \a fh at \a off until a write fails, as a
 * program does after a short count (the next write gets the error): each
 * call reports a positive count or fails, and the file's size is always
 * \a size0 or the end of what was reported written. The last error must be
 * -ENOSPC. \return the bytes written; *first: the first call's result.
 */
static uint64_t write_until_full(weir_file_t *fh, const char *path, uint64_t off, uint64_t len,
				 uint64_t size0, ssize_t *first)
{
	uint64_t total = 0;
	ssize_t n = -EINVAL;

	for (int k = 0; k < 64 && total < len; k++) {
		n = weir_pwrite(fh, wbuf + off + total, len - total, off + total);
		if (k == 0)
			*first = n;
		if (n <= 0)
			break;
		total += (uint64_t)n;
		uint64_t end = off + total;
		CU_ASSERT_EQUAL(th_size(fs, path), (long long)(end > size0 ? end : size0));
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	if (n != -ENOSPC)
		printf("\n  %s: last write: %zd, %llu bytes written\n", path, n,
		       (unsigned long long)total);
	return total;
}

static int suite_init(void)
{
	static const char *const mds_args[] = { NULL };
	const char *ost_dirs[2] = { NULL, NULL };
	struct th_cluster_opts o;
	char buf[32];

	snprintf(filler, sizeof(filler), "%s/filler", full_dir);
	ost_dirs[0] = full_dir;
	memset(&o, 0, sizeof(o));
	o.tco_nr_oss = 1;
	o.tco_ost_per_oss = 2;
	o.tco_mds_args = mds_args;
	o.tco_ost_dirs = ost_dirs;
	if (th_cluster_start(&o, &cl))
		return -1;
	struct weir_mount_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.wmo_size = sizeof(mo);
	mo.wmo_rpc_max_bytes = (uint32_t)MIB;
	if (th_rc("weir_mount_with", weir_mount_with(th_cluster_mds_addr(cl), &mo, &fs)))
		return -1;
	/* the full OST's index, as the MDS gave it */
	char p[192];
	snprintf(p, sizeof(p), "%s/ost.index", full_dir);
	FILE *f = fopen(p, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		fprintf(stderr, "no %s\n", p);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	full_ost = (uint32_t)strtoul(buf, NULL, 10);
	free_ost = full_ost ^ 1;
	wbuf = malloc(32 * MIB);
	rbuf = malloc(32 * MIB);
	if (!wbuf || !rbuf)
		return -1;
	th_fill_pattern(wbuf, 32 * MIB, 12);
	if (stripe_dir("/one", 1, full_ost) || stripe_dir("/two", 2, full_ost) ||
	    stripe_dir("/two_r", 2, free_ost))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	free(wbuf);
	free(rbuf);
	return th_cluster_umount_stop(cl, fs);
}

/* dd bs=1M: 1 MiB writes at the end until the OST is full. */
static void test_enospc_one_stripe_sequential_size_is_bytes_written(void)
{
	const char *path = "/one/seq";
	weir_file_t *fh = NULL;
	uint64_t total = 0, s0, s1;
	ssize_t n = 0;

	CU_ASSERT_EQUAL_FATAL(leave_free(5 * MIB + 300 * KIB), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh), 0);
	for (int k = 0; k < 20; k++) {
		n = weir_pwrite(fh, wbuf + total, MIB, total);
		if (n < 0)
			break;
		total += (uint64_t)n;
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	/* 5 whole writes, then the short count of the 6th: what was free */
	CU_ASSERT_EQUAL(total, 5 * MIB + 300 * KIB);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, path), (long long)total);
	obj_sizes(path, &s0, &s1);
	CU_ASSERT_EQUAL(s0, total);
	check_data(path, total);
}

/* One call of 16 MiB: 16 RPCs in flight on one object; the later ones may
 * run first and take the space, and must not be left past the count. */
static void test_enospc_one_stripe_parallel_rpcs_size_is_bytes_written(void)
{
	const char *path = "/one/par";
	weir_file_t *fh = NULL;
	uint64_t total, s0, s1;
	ssize_t first;

	CU_ASSERT_EQUAL_FATAL(leave_free(5 * MIB + 300 * KIB), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh), 0);
	total = write_until_full(fh, path, 0, 16 * MIB, 0, &first);
	CU_ASSERT(first > 0 && (uint64_t)first <= 5 * MIB + 300 * KIB);
	CU_ASSERT(total > 0 && total <= 5 * MIB + 300 * KIB);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, path), (long long)total);
	obj_sizes(path, &s0, &s1);
	CU_ASSERT_EQUAL(s0, total);
	check_data(path, total);
}

/*
 * A 2-stripe file, 16 MiB in one call, OST "full" with 3 MiB + 300 KiB free
 * holding object \a full_idx: the other object's RPCs all succeed, past the
 * first byte the full one could not write. The count is that byte's offset
 * (or less: RPCs of one object may run out of order) and both objects are
 * cut to it.
 */
static void two_stripes_one_full(const char *path, uint32_t full_idx)
{
	weir_file_t *fh = NULL;
	uint64_t s0, s1;
	ssize_t first;

	CU_ASSERT_EQUAL_FATAL(leave_free(3 * MIB + 300 * KIB), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh), 0);
	uint64_t n = write_until_full(fh, path, 0, 16 * MIB, 0, &first);
	/* object full_idx stops at object offset 3 MiB + 300 KiB at best */
	uint64_t best = 2 * (3 * MIB) + full_idx * SS + 300 * KIB;
	CU_ASSERT(first > 0 && (uint64_t)first <= best);
	CU_ASSERT(n > 0 && n <= best);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, path), (long long)n);
	obj_sizes(path, &s0, &s1);
	CU_ASSERT_EQUAL(s0, lb2(0, n));
	CU_ASSERT_EQUAL(s1, lb2(1, n));
	check_data(path, n);
}

static void test_enospc_two_stripes_first_full_size_is_bytes_written(void)
{
	two_stripes_one_full("/two/first", 0);
}

static void test_enospc_two_stripes_second_full_size_is_bytes_written(void)
{
	two_stripes_one_full("/two_r/second", 1);
}

/* An appending write over a 2-stripe file of 8 MiB: the objects keep what they
 * had, and grow only up to the count. */
static void test_enospc_two_stripes_append_keeps_old_data(void)
{
	const char *path = "/two/grow";
	weir_file_t *fh = NULL;
	uint64_t s0, s1;
	ssize_t first;

	CU_ASSERT_EQUAL_FATAL(leave_free(16 * MIB), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, path, wbuf, 8 * MIB), 0);
	/* object 0 (on the full OST) holds 4 MiB; 1 MiB + 300 KiB more fit */
	CU_ASSERT_EQUAL_FATAL(leave_free(MIB + 300 * KIB), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_WRONLY, 0, &fh), 0);
	uint64_t n = write_until_full(fh, path, 2 * MIB, 16 * MIB, 8 * MIB, &first);
	/* object 0 stops at object offset 5 MiB + 300 KiB at best, and gets
	 * past its old 4 MiB (its RPC within them needs no space) */
	uint64_t best = 2 * (5 * MIB) + 300 * KIB - 2 * MIB;
	CU_ASSERT(first >= (ssize_t)(6 * MIB) && (uint64_t)first <= best);
	CU_ASSERT(n >= 6 * MIB && n <= best);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	uint64_t size = 2 * MIB + n;
	CU_ASSERT_EQUAL(th_size(fs, path), (long long)size);
	obj_sizes(path, &s0, &s1);
	CU_ASSERT_EQUAL(s0, lb2(0, size));
	CU_ASSERT_EQUAL(s1, lb2(1, size));
	check_data(path, size);
}

/* A write that fails inside the file's old size (a sparse 24 MiB file): the
 * size stays 24 MiB (the other object's growth is within its old size). */
static void test_enospc_two_stripes_inside_old_size_keeps_size(void)
{
	const char *path = "/two/sparse";
	weir_file_t *fh = NULL;
	uint64_t s0, s1;

	CU_ASSERT_EQUAL_FATAL(leave_free(16 * MIB), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_pwrite(fh, wbuf, 1, 24 * MIB - 1), 1);
	CU_ASSERT_EQUAL_FATAL(leave_free(3 * MIB + 300 * KIB), 0);
	ssize_t first;
	uint64_t n = write_until_full(fh, path, 0, 16 * MIB, 24 * MIB, &first);
	CU_ASSERT(first > 0 && (uint64_t)first <= 6 * MIB + 300 * KIB);
	CU_ASSERT(n > 0 && n <= 6 * MIB + 300 * KIB);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, path), (long long)(24 * MIB));
	obj_sizes(path, &s0, &s1);
	CU_ASSERT_EQUAL(s0, lb2(0, n));
	CU_ASSERT_EQUAL(s1, 12 * MIB);
	check_data(path, n);
}

/* Mount the tmpfs for the full OST, or say why this test cannot run. */
static int mount_full(void)
{
	if (geteuid() != 0) {
		printf("SKIP: mounting a small tmpfs for a full OST needs root\n");
		return 77;
	}
	if (!mkdtemp(top)) {
		perror(top);
		return 1;
	}
	snprintf(full_dir, sizeof(full_dir), "%s/full", top);
	if (mkdir(full_dir, 0755) < 0) {
		perror(top);
		return 1;
	}
	if (mount("tmpfs", full_dir, "tmpfs", 0, "size=64m,mode=0755") < 0) {
		printf("SKIP: cannot mount a tmpfs on %s: %s\n", full_dir, strerror(errno));
		rmdir(full_dir);
		rmdir(top);
		return 77;
	}
	mounted = true;
	return 0;
}

static void umount_full(void)
{
	if (mounted && umount2(full_dir, MNT_DETACH) < 0)
		perror(full_dir);
	rmdir(full_dir);
	rmdir(top);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_enospc_one_stripe_sequential_size_is_bytes_written),
		TH_TEST(test_enospc_one_stripe_parallel_rpcs_size_is_bytes_written),
		TH_TEST(test_enospc_two_stripes_first_full_size_is_bytes_written),
		TH_TEST(test_enospc_two_stripes_second_full_size_is_bytes_written),
		TH_TEST(test_enospc_two_stripes_append_keeps_old_data),
		TH_TEST(test_enospc_two_stripes_inside_old_size_keeps_size),
		TH_TEST_END,
	};
	int rc = mount_full();
	if (rc)
		return rc;
	rc = th_cunit_run("enospc", suite_init, suite_clean, tests);
	umount_full();
	return rc;
}
