/*
 * tests/unit/oss/test_fdcache.c - the OSS's open segment cache
 * (oss/fdcache.c) on a real OST directory: a destroy or a truncate that
 * removes segment files drops their cached fds, so writes after a recreate
 * land in the new files; opens during a removal are not cached; read-only
 * fds never serve writes; eviction with a tiny cache (also of an fd in use);
 * two threads reading through one cache while a third destroys and
 * recreates other objects; a held reference (oss_fdc_hold) keeping a
 * dropped fd open. (tests/unit/oss/test_svc.c drives the same cache
 * through OST_WRITE/OST_READ on io_uring.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

	snprintf(dir, sizeof(dir), "/tmp/weir-oss-fdc-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(log, sizeof(log), "%s/oss.log", dir);
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

static struct oss_obj obj_new(void)
{
	struct oss_obj ob = { .ob_ost = &ost, .ob_stripe = 2 };
	ob.ob_fid.fid_seq = 0x200000401ULL;
	ob.ob_fid.fid_oid = next_oid++;
	return ob;
}

/* A cache of \a max fds for the OST (the test's own; an OSS shares one over its OSTs). */
static struct oss_fdc *cache_on(uint32_t max)
{
	struct oss_fdc *c = NULL;
	CU_ASSERT_EQUAL_FATAL(oss_fdc_new(max, &c), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	ost.ot_fdc = c;
	return c;
}

static void cache_off(struct oss_fdc *c)
{
	ost.ot_fdc = NULL;
	oss_fdc_free(c);
}

/* pwrite \a len bytes of \a byte at \a off of segment \a seg through the cache. */
static int cwrite(struct oss_fdc *c, const struct oss_obj *ob, uint64_t seg, uint64_t off,
		  size_t len, int byte)
{
	struct oss_fdc_ent *e;
	char buf[4096];
	int fd;

	memset(buf, byte, sizeof(buf));
	int rc = oss_fdc_get(c, ob, seg, true, &e, &fd);
	if (rc)
		return rc;
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	oss_fdc_put(c, e, fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* pread through the cache: \return bytes read (all \a byte) or -errno (-EILSEQ: other bytes). */
static long cread(struct oss_fdc *c, const struct oss_obj *ob, uint64_t seg, uint64_t off,
		  size_t len, int byte)
{
	struct oss_fdc_ent *e;
	char buf[4096];
	int fd;

	int rc = oss_fdc_get(c, ob, seg, false, &e, &fd);
	if (rc)
		return rc;
	ssize_t n = pread(fd, buf, len, (off_t)off);
	oss_fdc_put(c, e, fd);
	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != byte)
			return -EILSEQ;
	return (long)n;
}

static void test_fdc_destroy_recreate_write_reads_new_bytes(void)
{
	struct oss_fdc *c = cache_on(16);
	struct oss_obj ob = obj_new();
	struct oss_obj_attr oa;
	struct stat st;
	int old;

	CU_ASSERT_EQUAL(cwrite(c, &ob, 0, 0, 4096, 'A'), 0);
	CU_ASSERT_EQUAL(cread(c, &ob, 0, 0, 4096, 'A'), 4096);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 2); /* one read, one write fd */
	CU_ASSERT_EQUAL_FATAL(oss_obj_seg_open(&ob, 0, O_RDONLY, &old), 0); /* the old inode */

	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 0);
	CU_ASSERT_EQUAL(cread(c, &ob, 0, 0, 10, 'A'), -ENOENT); /* gone, not served from the cache */
	CU_ASSERT_EQUAL(cwrite(c, &ob, 0, 0, 100, 'B'), 0);    /* recreates */
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_TRUE(oa.oa_exists);
	CU_ASSERT_EQUAL(oa.oa_size, 100);
	CU_ASSERT_EQUAL(cread(c, &ob, 0, 0, 4096, 'B'), 100);  /* the new bytes only */
	/* the old inode kept its bytes and is unlinked: nothing new went there */
	CU_ASSERT_EQUAL(fstat(old, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 0);
	CU_ASSERT_EQUAL(st.st_size, 4096);
	close(old);
	cache_off(c);
}

/* oss_fdc_hold(): a second user (the OSS's writeback after a write) keeps
 * the fd open past a destroy that drops the entry; the last put closes it. */
static void test_fdc_hold_keeps_a_dropped_fd_until_the_last_put(void)
{
	struct oss_fdc *c = cache_on(16);
	struct oss_obj ob = obj_new();
	struct oss_fdc_ent *e;
	struct stat st;
	int fd;

	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, true, &e, &fd), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	oss_fdc_hold(c, e);
	oss_fdc_put(c, e, fd); /* the write's reference */
	CU_ASSERT_EQUAL(oss_fdc_count(c), 1);
	CU_ASSERT_EQUAL(oss_obj_destroy(&ob), 0);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 0);
	CU_ASSERT_EQUAL(fstat(fd, &st), 0); /* still open for the holder */
	CU_ASSERT_EQUAL(st.st_nlink, 0);
	CU_ASSERT_EQUAL(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE), 0);
	oss_fdc_put(c, e, fd);
	CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1); /* closed by the last put */
	CU_ASSERT_EQUAL(errno, EBADF);
	/* a held live entry stays cached and is the same fd for the next user */
	int fd1, fd2;
	struct oss_fdc_ent *e1, *e2;
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, true, &e1, &fd1), 0);
	oss_fdc_hold(c, e1);
	oss_fdc_put(c, e1, fd1);
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, true, &e2, &fd2), 0);
	CU_ASSERT_PTR_EQUAL(e1, e2);
	CU_ASSERT_EQUAL(fd1, fd2);
	oss_fdc_put(c, e2, fd2);
	oss_fdc_put(c, e1, fd1);
	CU_ASSERT_EQUAL(fcntl(fd1, F_GETFD) >= 0, 1); /* cached, still open */
	cache_off(c);
}

static void test_fdc_truncate_removing_segments_then_write_past_them(void)
{
	struct oss_fdc *c = cache_on(16);
	struct oss_obj ob = obj_new();
	struct oss_obj_attr oa;

	CU_ASSERT_EQUAL(cwrite(c, &ob, 0, 0, 10, 'a'), 0);
	CU_ASSERT_EQUAL(cwrite(c, &ob, 2, 0, 4096, 'X'), 0); /* segment 2: object byte 2 TiB */
	CU_ASSERT_EQUAL(cread(c, &ob, 2, 0, 4096, 'X'), 4096);
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 2 * TIB + 4096);

	CU_ASSERT_EQUAL(oss_obj_truncate(&ob, 5), 0); /* removes segment 2 and the .d directory */
	CU_ASSERT_EQUAL(cread(c, &ob, 2, 0, 10, 'X'), -ENOENT);
	CU_ASSERT_EQUAL(cwrite(c, &ob, 2, 4096, 50, 'Y'), 0); /* past it: recreated */
	CU_ASSERT_EQUAL(oss_obj_getattr(&ob, &oa), 0);
	CU_ASSERT_EQUAL(oa.oa_size, 2 * TIB + 4096 + 50);
	CU_ASSERT_EQUAL(cread(c, &ob, 2, 0, 4096, 0), 4096); /* the old X bytes are gone: a hole */
	CU_ASSERT_EQUAL(cread(c, &ob, 2, 4096, 4096, 'Y'), 50);
	CU_ASSERT_EQUAL(cread(c, &ob, 0, 0, 4096, 'a'), 5);
	cache_off(c);
}

static void test_fdc_open_during_removal_not_cached(void)
{
	struct oss_fdc *c = cache_on(16);
	struct oss_obj ob = obj_new();
	struct oss_fdc_ent *e;
	int fd;

	CU_ASSERT_EQUAL(cwrite(c, &ob, 0, 0, 10, 'q'), 0);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 1);
	oss_fdc_inval_begin(c, &ob);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 0);
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, false, &e, &fd), 0);
	CU_ASSERT_PTR_NULL(e); /* used once, then closed */
	CU_ASSERT_EQUAL(oss_fdc_count(c), 0);
	oss_fdc_put(c, e, fd);
	CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1); /* closed by the put */
	oss_fdc_inval_end(c, &ob);
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, false, &e, &fd), 0);
	CU_ASSERT_PTR_NOT_NULL(e);
	oss_fdc_put(c, e, fd);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 1);
	cache_off(c);
}

static void test_fdc_read_only_fd_never_serves_a_write(void)
{
	struct oss_fdc *c = cache_on(16);
	struct oss_obj ob = obj_new();
	struct oss_fdc_ent *er, *ew;
	int fr, fw;

	CU_ASSERT_EQUAL(oss_fdc_get(c, &ob, 0, false, &er, &fr), -ENOENT); /* no O_CREAT on read */
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, true, &ew, &fw), 0); /* a write creates */
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &ob, 0, false, &er, &fr), 0);
	CU_ASSERT_NOT_EQUAL(fr, fw);
	CU_ASSERT_EQUAL(fcntl(fr, F_GETFL) & O_ACCMODE, O_RDONLY);
	CU_ASSERT_EQUAL(fcntl(fw, F_GETFL) & O_ACCMODE, O_WRONLY);
	oss_fdc_put(c, er, fr);
	oss_fdc_put(c, ew, fw);
	CU_ASSERT_EQUAL(oss_fdc_count(c), 2);
	cache_off(c);
}

static void test_fdc_eviction_tiny_cache(void)
{
	struct oss_fdc *c = cache_on(2);
	struct oss_obj obs[6];
	struct oss_fdc_ent *e0, *e;
	int fd0, fd;

	for (int i = 0; i < 6; i++) {
		obs[i] = obj_new();
		CU_ASSERT_EQUAL(cwrite(c, &obs[i], 0, 0, 64, 'a' + i), 0);
		CU_ASSERT_TRUE(oss_fdc_count(c) <= 2);
	}
	/* an fd in use when evicted stays open until its put */
	CU_ASSERT_EQUAL_FATAL(oss_fdc_get(c, &obs[0], 0, false, &e0, &fd0), 0);
	for (int i = 1; i < 6; i++) {
		CU_ASSERT_EQUAL(cread(c, &obs[i], 0, 0, 4096, 'a' + i), 64);
		CU_ASSERT_TRUE(oss_fdc_count(c) <= 2);
	}
	char b[64];
	CU_ASSERT_EQUAL(pread(fd0, b, sizeof(b), 0), 64);
	CU_ASSERT_EQUAL(b[0], 'a');
	oss_fdc_put(c, e0, fd0);
	/* and a destroy of an evicted object still finds no stale fd */
	CU_ASSERT_EQUAL(oss_obj_destroy(&obs[5]), 0);
	CU_ASSERT_EQUAL(oss_fdc_get(c, &obs[5], 0, false, &e, &fd), -ENOENT);
	CU_ASSERT_TRUE(oss_fdc_count(c) <= 2);
	cache_off(c);
}

/* ------------------------------------------------------- two reader threads */

#define NR_HOT 8
#define NR_CHURN 4

struct rd_arg {
	struct oss_fdc *ra_c;
	struct oss_obj *ra_obs;
	unsigned ra_seed;
	int ra_bad;
};

static void *reader(void *p)
{
	struct rd_arg *a = p;

	for (int i = 0; i < 3000; i++) {
		int k = (int)(rand_r(&a->ra_seed) % NR_HOT);
		if (cread(a->ra_c, &a->ra_obs[k], 0, 0, 4096, 'A' + k) != 512)
			a->ra_bad++;
	}
	return NULL;
}

static void test_fdc_two_threads_read_while_others_destroyed(void)
{
	struct oss_fdc *c = cache_on(4); /* smaller than the hot set: eviction under load */
	struct oss_obj hot[NR_HOT], churn[NR_CHURN];
	pthread_t th[2];
	struct rd_arg args[2];

	for (int k = 0; k < NR_HOT; k++) {
		hot[k] = obj_new();
		CU_ASSERT_EQUAL_FATAL(cwrite(c, &hot[k], 0, 0, 512, 'A' + k), 0);
	}
	for (int k = 0; k < NR_CHURN; k++)
		churn[k] = obj_new();
	for (int t = 0; t < 2; t++) {
		args[t] = (struct rd_arg){ .ra_c = c, .ra_obs = hot, .ra_seed = 7u + (unsigned)t };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL, reader, &args[t]), 0);
	}
	/* meanwhile: write, destroy, recreate with other bytes; each must read its own */
	int bad = 0;
	for (int i = 0; i < 300; i++) {
		struct oss_obj *ob = &churn[i % NR_CHURN];
		int byte = 'a' + i % 26;
		if (cwrite(c, ob, 0, 0, 300, byte) || cread(c, ob, 0, 0, 4096, byte) != 300)
			bad++;
		if (oss_obj_destroy(ob))
			bad++;
	}
	for (int t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		CU_ASSERT_EQUAL(args[t].ra_bad, 0);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_TRUE(oss_fdc_count(c) <= 4);
	cache_off(c);
}

static void test_fdc_none_opens_per_call(void)
{
	struct oss_obj ob = obj_new();
	struct oss_fdc *c = NULL;

	CU_ASSERT_EQUAL(oss_fdc_new(0, &c), 0);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_EQUAL(cwrite(NULL, &ob, 0, 0, 20, 'z'), 0);
	CU_ASSERT_EQUAL(cread(NULL, &ob, 0, 0, 4096, 'z'), 20);
	CU_ASSERT_EQUAL(oss_fdc_count(NULL), 0);
	oss_fdc_free(NULL);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_fdc_destroy_recreate_write_reads_new_bytes),
		TH_TEST(test_fdc_truncate_removing_segments_then_write_past_them),
		TH_TEST(test_fdc_hold_keeps_a_dropped_fd_until_the_last_put),
		TH_TEST(test_fdc_open_during_removal_not_cached),
		TH_TEST(test_fdc_read_only_fd_never_serves_a_write),
		TH_TEST(test_fdc_eviction_tiny_cache),
		TH_TEST(test_fdc_two_threads_read_while_others_destroyed),
		TH_TEST(test_fdc_none_opens_per_call),
		TH_TEST_END,
	};
	return th_cunit_run("oss/fdcache", suite_init, suite_clean, tests);
}
