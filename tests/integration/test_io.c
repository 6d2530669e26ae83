/*
 * tests/integration/test_io.c - file data through libweir on a real cluster
 * (1 MDS + 2 OSS x 2 OSTs): striped writes and reads byte-exact at edge
 * sizes, random overwrites against a local reference file, sparse files,
 * sizes, and the layout objects on the OSTs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/layout.h"
#include "harness.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	if (th_cluster_mount(NULL, &cl, &fs))
		return -1;
	if (th_stripe_dir(fs, "/s64k", 4, 64 * KIB) || th_stripe_dir(fs, "/s1m", 4, MIB))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

/* Write then read back files of sizes around the stripe size of \a dir. */
static void edge_sizes(const char *dir, uint64_t ss)
{
	const uint64_t sizes[] = { 0,	   1,	   ss - 1,	ss,	     ss + 1,
				   2 * ss, 4 * ss - 1, 4 * ss, 4 * ss + 1, 9 * ss + 12345 };
	uint8_t *w = malloc(10 * ss + 12345), *r = malloc(10 * ss + 12345 + 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		char path[128];
		snprintf(path, sizeof(path), "%s/edge_%llu", dir, (unsigned long long)n);
		th_fill_pattern(w, n, n + 1);
		CU_ASSERT_EQUAL(th_put(fs, path, w, n), 0);
		memset(r, 0xee, n + 100);
		ssize_t got = th_get(fs, path, r, n + 100);
		CU_ASSERT_EQUAL(got, (ssize_t)n);
		long at = th_diff_at(w, r, n);
		if (at >= 0)
			printf("\n  %s: first difference at byte %ld\n", path, at);
		CU_ASSERT_EQUAL(at, -1);
		CU_ASSERT_EQUAL(th_size(fs, path), (long long)n);
	}
	free(w);
	free(r);
}

static void test_io_edge_sizes_64k_stripes_byte_exact(void)
{
	edge_sizes("/s64k", 64 * KIB);
}

static void test_io_edge_sizes_1m_stripes_byte_exact(void)
{
	edge_sizes("/s1m", MIB);
}

static void test_io_sequential_odd_chunks_roundtrip(void)
{
	const size_t total = 3 * MIB + 777;
	uint8_t *w = malloc(total), *r = malloc(total + 2 * MIB); /* reads ask up to 1 MiB more */
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, total, 4242);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(th_rc("open", weir_creat(fs, "/s64k/seq", 0644, &fh)), 0);
	size_t done = 0, step = 1;
	while (done < total) {
		size_t n = step < total - done ? step : total - done;
		ssize_t k = weir_write(fh, w + done, n);
		CU_ASSERT_EQUAL(k, (ssize_t)n);
		if (k != (ssize_t)n)
			break;
		done += n;
		step = step * 3 + 7; /* 1, 10, 37, ... crosses chunk edges at odd places */
		if (step > 300 * KIB)
			step = 13;
	}
	CU_ASSERT_EQUAL(weir_lseek(fh, 0, SEEK_CUR), (int64_t)total);
	CU_ASSERT_EQUAL(weir_lseek(fh, 0, SEEK_END), (int64_t)total);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/seq", O_RDONLY, 0, &fh), 0);
	done = 0;
	step = 5;
	for (;;) {
		ssize_t k = weir_read(fh, r + done, step);
		CU_ASSERT(k >= 0);
		if (k <= 0)
			break;
		done += (size_t)k;
		step = step * 2 + 1;
		if (step > 1 * MIB)
			step = 3;
		if (done > total)
			break;
	}
	CU_ASSERT_EQUAL(done, total);
	CU_ASSERT_EQUAL(th_diff_at(w, r, total), -1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(w);
	free(r);
}

static void test_io_random_writes_match_local_reference(void)
{
	const uint64_t span = 3 * MIB;
	const size_t maxlen = 300 * KIB;
	char ref_path[512];
	snprintf(ref_path, sizeof(ref_path), "%s/reference", th_cluster_dir(cl));
	int ref = open(ref_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(ref >= 0);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(
		th_rc("open", weir_open(fs, "/s64k/random", O_CREAT | O_RDWR, 0644, &fh)), 0);
	uint8_t *buf = malloc(maxlen), *a = malloc(span + maxlen), *b = malloc(span + maxlen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	uint64_t s = 2024;
	int bad_writes = 0, bad_reads = 0;
	for (int i = 0; i < 200; i++) {
		uint64_t off = th_rand64(&s) % span;
		size_t len = 1 + (size_t)(th_rand64(&s) % maxlen);
		if (i % 10 == 0)
			len = 1 + (size_t)(th_rand64(&s) % 64); /* some tiny writes */
		th_fill_pattern(buf, len, (uint64_t)i * 7919);
		if (weir_pwrite(fh, buf, len, off) != (ssize_t)len)
			bad_writes++;
		if (pwrite(ref, buf, len, (off_t)off) != (ssize_t)len)
			bad_writes++;
		if (i % 20 == 19) {
			/* spot-check a random range, through the same handle */
			uint64_t roff = th_rand64(&s) % span;
			size_t rlen = 1 + (size_t)(th_rand64(&s) % maxlen);
			ssize_t x = weir_pread(fh, a, rlen, roff);
			ssize_t y = pread(ref, b, rlen, (off_t)roff);
			if (x != y || (x > 0 && memcmp(a, b, (size_t)x)))
				bad_reads++;
		}
	}
	CU_ASSERT_EQUAL(bad_writes, 0);
	CU_ASSERT_EQUAL(bad_reads, 0);
	off_t ref_size = lseek(ref, 0, SEEK_END);
	struct stat st;
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, ref_size);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	/* full compare through a fresh handle */
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/random"), (long long)ref_size);
	ssize_t x = th_get(fs, "/s64k/random", a, span + maxlen);
	ssize_t y = pread(ref, b, span + maxlen, 0);
	CU_ASSERT_EQUAL(x, y);
	CU_ASSERT_EQUAL(x, (ssize_t)ref_size);
	if (x == y && x > 0) {
		long at = th_diff_at(a, b, (size_t)x);
		if (at >= 0)
			printf("\n  /s64k/random differs from the reference at byte %ld\n", at);
		CU_ASSERT_EQUAL(at, -1);
	}
	close(ref);
	unlink(ref_path);
	free(buf);
	free(a);
	free(b);
}

static void test_io_sparse_write_holes_read_zero(void)
{
	const uint64_t off = 10 * MIB;
	uint8_t data[4096], *r = malloc(off + 2 * sizeof(data));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(data, sizeof(data), 10);
	static const char *paths[] = { "/s1m/sparse", "/s64k/sparse" };
	for (int k = 0; k < 2; k++) {
		weir_file_t *fh = NULL;
		CU_ASSERT_EQUAL_FATAL(weir_creat(fs, paths[k], 0644, &fh), 0);
		CU_ASSERT_EQUAL(weir_pwrite(fh, data, sizeof(data), off), (ssize_t)sizeof(data));
		CU_ASSERT_EQUAL(weir_close(fh), 0);
		CU_ASSERT_EQUAL(th_size(fs, paths[k]), (long long)(off + sizeof(data)));
		memset(r, 0xee, off + 2 * sizeof(data));
		CU_ASSERT_EQUAL(th_get(fs, paths[k], r, off + 2 * sizeof(data)),
				(ssize_t)(off + sizeof(data)));
		size_t nonzero = 0;
		for (uint64_t i = 0; i < off; i++)
			nonzero += r[i] != 0;
		CU_ASSERT_EQUAL(nonzero, 0);
		CU_ASSERT_EQUAL(memcmp(r + off, data, sizeof(data)), 0);
		/* reads at and past the end return 0 */
		CU_ASSERT_EQUAL_FATAL(weir_open(fs, paths[k], O_RDONLY, 0, &fh), 0);
		CU_ASSERT_EQUAL(weir_pread(fh, r, 100, off + sizeof(data)), 0);
		CU_ASSERT_EQUAL(weir_pread(fh, r, 100, off + 100 * MIB), 0);
		CU_ASSERT_EQUAL(weir_pread(fh, r, 100, off + sizeof(data) - 10), 10);
		CU_ASSERT_EQUAL(weir_close(fh), 0);
	}
	/* a hole in the middle of written data */
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/hole", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, data, 100, 0), 100);
	CU_ASSERT_EQUAL(weir_pwrite(fh, data, 100, 5 * MIB + 3), 100);
	memset(r, 0xee, 6 * MIB);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 6 * MIB, 0), (ssize_t)(5 * MIB + 103));
	size_t nonzero = 0;
	for (uint64_t i = 100; i < 5 * MIB + 3; i++)
		nonzero += r[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0);
	CU_ASSERT_EQUAL(memcmp(r, data, 100), 0);
	CU_ASSERT_EQUAL(memcmp(r + 5 * MIB + 3, data, 100), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(r);
}

/*
 * A reader's handle whose reads start at or past the size it saw at open
 * (weir_pread asks the MDS first there): another client's writes made after
 * that open are read whole, holes in front of them read as zeros, and a
 * write still open (size stale, glimpsed) counts too.
 */
static void test_io_read_past_open_size_sees_later_writes(void)
{
	weir_fs_t *wfs = NULL; /* another client: its own session */
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &wfs), 0);
	uint8_t data[3000], r[8192];
	th_fill_pattern(data, sizeof(data), 77);
	weir_file_t *rh = NULL, *wh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_creat(fs, "/s1m/grows", 0644, &wh), 0);
	CU_ASSERT_EQUAL(weir_close(wh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s1m/grows", O_RDONLY, 0, &rh), 0);
	CU_ASSERT_EQUAL(weir_pread(rh, r, sizeof(r), 0), 0); /* empty */

	/* the other client writes into stripe 1 and closes */
	CU_ASSERT_EQUAL_FATAL(weir_open(wfs, "/s1m/grows", O_WRONLY, 0, &wh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(wh, data, sizeof(data), MIB + 5), (ssize_t)sizeof(data));
	CU_ASSERT_EQUAL(weir_close(wh), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(weir_pread(rh, r, 4096, 0), 4096); /* a hole now, not the end */
	size_t nonzero = 0;
	for (size_t i = 0; i < 4096; i++)
		nonzero += r[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0);
	CU_ASSERT_EQUAL(weir_pread(rh, r, sizeof(r), MIB + 5), (ssize_t)sizeof(data));
	CU_ASSERT_EQUAL(memcmp(r, data, sizeof(data)), 0);
	CU_ASSERT_EQUAL(weir_pread(rh, r, sizeof(r), MIB + 5 + sizeof(data)), 0);

	/* a write not closed yet (the MDS's size is stale: glimpsed) */
	CU_ASSERT_EQUAL_FATAL(weir_open(wfs, "/s1m/grows", O_WRONLY, 0, &wh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(wh, data, 100, MIB + 5 + sizeof(data)), 100);
	CU_ASSERT_EQUAL(weir_pread(rh, r, sizeof(r), MIB + 5 + sizeof(data)), 100);
	CU_ASSERT_EQUAL(memcmp(r, data, 100), 0);
	CU_ASSERT_EQUAL(weir_close(wh), 0);
	CU_ASSERT_EQUAL(weir_close(rh), 0);
	CU_ASSERT_EQUAL(weir_umount(wfs), 0);
}

static void test_io_stat_size_follows_writes_and_truncate(void)
{
	uint8_t data[8192];
	th_fill_pattern(data, sizeof(data), 99);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/sized", O_CREAT | O_RDWR, 0644, &fh), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(weir_pwrite(fh, data, 1000, 0), 1000);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 1000);
	CU_ASSERT_EQUAL(weir_pwrite(fh, data, 10, 300 * KIB), 10);
	/* by path while open for writing: glimpsed from the OSTs */
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), (long long)(300 * KIB + 10));
	/* overwriting inside the file keeps the size */
	CU_ASSERT_EQUAL(weir_pwrite(fh, data, 8192, 100), 8192);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), (long long)(300 * KIB + 10));
	/* shrink: the tail is gone, and reads as zeros if the file grows again */
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 100), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), 100);
	uint8_t r[8192];
	CU_ASSERT_EQUAL(weir_pread(fh, r, sizeof(r), 0), 100);
	CU_ASSERT_EQUAL(memcmp(r, data, 100), 0);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 1 * MIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), (long long)MIB);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(weir_pread(fh, r, sizeof(r), 0), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(memcmp(r, data, 100), 0);
	size_t nonzero = 0;
	for (size_t i = 100; i < sizeof(r); i++)
		nonzero += r[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 1000, 300 * KIB), 1000);
	nonzero = 0;
	for (size_t i = 0; i < 1000; i++)
		nonzero += r[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0); /* the old bytes at 300 KiB do not come back */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), (long long)MIB);
	CU_ASSERT_EQUAL(weir_truncate(fs, "/s64k/sized", 12345), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/sized"), 12345);
}

static void test_io_wrong_open_mode_ebadf(void)
{
	uint8_t b[16] = { 0 };
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_creat(fs, "/s64k/modes", 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_pread(fh, b, sizeof(b), 0), -EBADF); /* O_WRONLY */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/modes", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), -EBADF);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 0), -EBADF);
	CU_ASSERT_EQUAL(weir_pread(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_close(NULL), 0);
}

static void test_io_getstripe_four_osts_sizes_sum_to_file_size(void)
{
	const uint64_t size = 2 * 4 * MIB + 3 * MIB + 12345; /* ends inside object 3 */
	uint8_t *w = malloc(size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	th_fill_pattern(w, size, 31337);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/s1m/big", w, size), 0);
	free(w);

	struct weir_layout_info li;
	memset(&li, 0, sizeof(li));
	CU_ASSERT_EQUAL_FATAL(th_rc("getstripe", weir_getstripe(fs, "/s1m/big", &li)), 0);
	CU_ASSERT_EQUAL(li.wli_is_dir, 0);
	CU_ASSERT_EQUAL(li.wli_pattern, 1);
	CU_ASSERT_EQUAL(li.wli_stripe_size, MIB);
	CU_ASSERT_EQUAL_FATAL(li.wli_stripe_count, 4);
	struct weir_layout lo;
	memset(&lo, 0, sizeof(lo));
	lo.lo_pattern = WEIR_LAYOUT_PATTERN_RAID0;
	lo.lo_stripe_size = li.wli_stripe_size;
	lo.lo_stripe_count = li.wli_stripe_count;
	uint64_t sum = 0;
	int distinct = 1;
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT(li.wli_objs[i].woi_ost < (uint32_t)th_cluster_nr_osts(cl));
		for (uint32_t j = 0; j < i; j++)
			if (li.wli_objs[j].woi_ost == li.wli_objs[i].woi_ost)
				distinct = 0;
		/* each object holds exactly its share of the file */
		CU_ASSERT_EQUAL(li.wli_objs[i].woi_size, weir_layout_obj_lower_bound(&lo, i, size));
		sum += li.wli_objs[i].woi_size;
	}
	CU_ASSERT_TRUE(distinct);
	CU_ASSERT_EQUAL(sum, size);
	CU_ASSERT_EQUAL(th_size(fs, "/s1m/big"), (long long)size);
	CU_ASSERT_FALSE(li.wli_fid.seq == 0 && li.wli_fid.oid == 0);

	/* a directory reports its default layout */
	memset(&li, 0, sizeof(li));
	CU_ASSERT_EQUAL(weir_getstripe(fs, "/s64k", &li), 0);
	CU_ASSERT_EQUAL(li.wli_is_dir, 1);
	CU_ASSERT_EQUAL(li.wli_stripe_count, 4);
	CU_ASSERT_EQUAL(li.wli_stripe_size, 64 * KIB);
}

static void test_io_large_file_many_rpcs_byte_exact(void)
{
	/* 40 MiB: many 4 MiB RPCs per OST, 16 in flight */
	const size_t size = 40 * MIB + 4099;
	uint8_t *w = malloc(size), *r = malloc(size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, size, 40);
	uint64_t t0 = th_now_ms();
	CU_ASSERT_EQUAL(th_put(fs, "/s1m/large", w, size), 0);
	uint64_t t1 = th_now_ms();
	CU_ASSERT_EQUAL(th_get(fs, "/s1m/large", r, size), (ssize_t)size);
	uint64_t t2 = th_now_ms();
	CU_ASSERT_EQUAL(th_diff_at(w, r, size), -1);
	printf("(write %.0f MB/s, read %.0f MB/s) ", size / 1e3 / (double)(t1 - t0 + 1),
	       size / 1e3 / (double)(t2 - t1 + 1));
	free(w);
	free(r);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_io_edge_sizes_64k_stripes_byte_exact),
		TH_TEST(test_io_edge_sizes_1m_stripes_byte_exact),
		TH_TEST(test_io_sequential_odd_chunks_roundtrip),
		TH_TEST(test_io_random_writes_match_local_reference),
		TH_TEST(test_io_sparse_write_holes_read_zero),
		TH_TEST(test_io_read_past_open_size_sees_later_writes),
		TH_TEST(test_io_stat_size_follows_writes_and_truncate),
		TH_TEST(test_io_wrong_open_mode_ebadf),
		TH_TEST(test_io_getstripe_four_osts_sizes_sum_to_file_size),
		TH_TEST(test_io_large_file_many_rpcs_byte_exact),
		TH_TEST_END,
	};
	return th_cunit_run("io", suite_init, suite_clean, tests);
}
