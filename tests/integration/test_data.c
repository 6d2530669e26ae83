/*
 * tests/integration/test_data.c - data semantics through libweir on a real
 * cluster (1 MDS + 2 OSS x 2 OSTs): offsets up to 2^63-1 (objects stored in
 * 1 TiB segments on the OSTs), files past 4 GiB, fallocate and hole
 * punching with st_blocks, SEEK_DATA/SEEK_HOLE compared with a local file
 * given the same writes, fsync/fdatasync, EBADF by open mode, coherence
 * between two mounts, mtime on write, and the segment files left on the
 * OSTs after unlink.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/layout.h"
#include "harness.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)
#define MAXOFF ((uint64_t)INT64_MAX) /* largest file size; last byte at MAXOFF - 1 */

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	if (th_cluster_mount(NULL, &cl, &fs))
		return -1;
	if (th_stripe_dir(fs, "/one", 1, MIB) || th_stripe_dir(fs, "/s64k", 4, 64 * KIB) ||
	    th_stripe_dir(fs, "/s1m", 4, MIB))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static long long nonzero_bytes(const uint8_t *p, size_t len)
{
	long long n = 0;
	for (size_t i = 0; i < len; i++)
		n += p[i] != 0;
	return n;
}

/* Segment files of file \a path left on the OSTs: entries named
 * "<seq>-<oid>-*" in any OST's O/<hh>/ or inside such a ".d" directory. */
static int ost_files_of(const weir_fid_t *fid)
{
	char prefix[64], path[1024];
	int n = 0;

	snprintf(prefix, sizeof(prefix), "%llx-%llx-", (unsigned long long)fid->seq,
		 (unsigned long long)fid->oid);
	for (int o = 0; o < th_cluster_nr_oss(cl); o++) {
		for (int t = 0; t < th_cluster_nr_osts(cl) / th_cluster_nr_oss(cl); t++) {
			for (int h = 0; h < 256; h++) {
				snprintf(path, sizeof(path), "%s/oss%d/ost%d/O/%02x",
					 th_cluster_dir(cl), o, t, h);
				DIR *d = opendir(path);
				if (!d)
					continue;
				struct dirent *de;
				while ((de = readdir(d)))
					n += !strncmp(de->d_name, prefix, strlen(prefix));
				closedir(d);
			}
		}
	}
	return n;
}

/* ------------------------------------------------------------ huge offsets */

static void huge_offset_one(const char *path)
{
	const uint64_t last = MAXOFF - 1; /* 2^63 - 2 */
	uint8_t b = 0xa5, r[16];
	weir_file_t *fh = NULL;
	struct stat st;
	weir_fid_t fid;

	CU_ASSERT_EQUAL_FATAL(th_rc(path, weir_open(fs, path, O_CREAT | O_RDWR | O_TRUNC, 0644,
						    &fh)), 0);
	CU_ASSERT_EQUAL(weir_file_fid(fh, &fid), 0);
	/* the last byte a file can hold */
	CU_ASSERT_EQUAL(th_rc("pwrite 2^63-2", weir_pwrite(fh, &b, 1, last)), 1);
	/* one more is too far: EFBIG before any RPC */
	CU_ASSERT_EQUAL(weir_pwrite(fh, &b, 1, MAXOFF), -EFBIG);
	CU_ASSERT_EQUAL(weir_pwrite(fh, r, 2, last), -EFBIG);
	CU_ASSERT_EQUAL(weir_pwrite(fh, r, 1, UINT64_MAX), -EFBIG);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, MAXOFF + 1), -EFBIG);
	/* read it back, with the zeros before it */
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(weir_pread(fh, r, 1, last), 1);
	CU_ASSERT_EQUAL(r[0], 0xa5);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(weir_pread(fh, r, 8, last - 7), 8);
	CU_ASSERT_EQUAL(nonzero_bytes(r, 7), 0);
	CU_ASSERT_EQUAL(r[7], 0xa5);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 1, MAXOFF), -EINVAL); /* as Linux: pos + len overflows */
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL((uint64_t)st.st_size, MAXOFF);
	CU_ASSERT(st.st_blocks > 0 && st.st_blocks <= 64); /* one block, not 2^63 bytes */
	CU_ASSERT_EQUAL(weir_lseek(fh, 0, SEEK_END), (int64_t)MAXOFF);
	CU_ASSERT_EQUAL(weir_lseek(fh, 0, SEEK_DATA), (int64_t)(last & ~4095ULL));
	CU_ASSERT_EQUAL(weir_lseek(fh, (int64_t)last, SEEK_HOLE), (int64_t)MAXOFF);
	CU_ASSERT_EQUAL(weir_lseek(fh, 12345, SEEK_HOLE), 12345);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	CU_ASSERT_EQUAL(th_size(fs, path), (long long)MAXOFF);
	memset(r, 0, sizeof(r));
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 1, last), 1);
	CU_ASSERT_EQUAL(r[0], 0xa5);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	/* shrink back: the far segments go, the size follows */
	CU_ASSERT_EQUAL(weir_truncate(fs, path, 10), 0);
	CU_ASSERT_EQUAL(th_size(fs, path), 10);
	CU_ASSERT_EQUAL(weir_stat(fs, path, &st), 0);
	CU_ASSERT_EQUAL(st.st_blocks, 0);
	/* and unlink destroys every segment file on the OSTs */
	CU_ASSERT_EQUAL(th_rc("pwrite", th_put(fs, path, &b, 1)), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, &b, 1, last), 1);
	CU_ASSERT_EQUAL(weir_pwrite(fh, &b, 1, 3 * TIB), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT(ost_files_of(&fid) > 0);
	CU_ASSERT_EQUAL(weir_unlink(fs, path), 0);
	uint64_t t0 = th_now_ms();
	while (ost_files_of(&fid) && th_now_ms() - t0 < 20000)
		th_sleep_ms(100);
	CU_ASSERT_EQUAL(ost_files_of(&fid), 0);
}

static void test_data_write_at_2p63_minus_2_one_stripe_roundtrip(void)
{
	huge_offset_one("/one/huge");
}

static void test_data_write_at_2p63_minus_2_four_stripes_roundtrip(void)
{
	huge_offset_one("/s64k/huge");
}

/* Writes and reads across the 1 TiB segment boundaries of an object. */
static void test_data_segment_boundaries_byte_exact(void)
{
	const size_t len = 3 * MIB + 4321;
	uint8_t *w = malloc(len), *r = malloc(len + MIB);
	weir_file_t *fh = NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, len, 77);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/one/seams", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh),
			      0);
	/* one stripe: object offsets are file offsets */
	const uint64_t at[] = { TIB - MIB - 17, 2 * TIB - 5, 7 * TIB - len / 2 };
	for (int k = 0; k < 3; k++)
		CU_ASSERT_EQUAL(weir_pwrite(fh, w, len, at[k]), (ssize_t)len);
	for (int k = 0; k < 3; k++) {
		memset(r, 0xee, len);
		CU_ASSERT_EQUAL(weir_pread(fh, r, len, at[k]), (ssize_t)len);
		CU_ASSERT_EQUAL(th_diff_at(w, r, len), -1);
	}
	/* a whole missing segment (4 TiB..5 TiB) and a short one read as zeros */
	memset(r, 0xee, MIB);
	CU_ASSERT_EQUAL(weir_pread(fh, r, MIB, 4 * TIB + 12345), (ssize_t)MIB);
	CU_ASSERT_EQUAL(nonzero_bytes(r, MIB), 0);
	memset(r, 0xee, 2 * MIB);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 2 * MIB, 2 * TIB - 5 + len - MIB), (ssize_t)(2 * MIB));
	CU_ASSERT_EQUAL(memcmp(r, w + len - MIB, MIB), 0);
	CU_ASSERT_EQUAL(nonzero_bytes(r + MIB, MIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/one/seams"), (long long)(at[2] + len));
	/* truncate to exactly a segment boundary, then read to the end */
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 2 * TIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/one/seams"), (long long)(2 * TIB));
	memset(r, 0xee, 16);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 16, 2 * TIB - 8), 8);
	CU_ASSERT_EQUAL(nonzero_bytes(r, 3), 0);
	CU_ASSERT_EQUAL(memcmp(r + 3, w, 5), 0); /* the 5 bytes of the second write before 2 TiB */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/one/seams"), (long long)(2 * TIB));
	free(w);
	free(r);
}

static void test_data_sparse_file_over_4gib(void)
{
	const size_t len = MIB + 1;
	uint8_t *w = malloc(len), *r = malloc(2 * len);
	weir_file_t *fh = NULL;
	struct stat st;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, len, 4);
	CU_ASSERT_EQUAL_FATAL(weir_creat(fs, "/s1m/big4g", 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, len, 4 * GIB - MIB / 2), (ssize_t)len); /* over 4 GiB */
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, len, 9 * GIB + 3), (ssize_t)len);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s1m/big4g"), (long long)(9 * GIB + 3 + len));
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s1m/big4g", O_RDONLY, 0, &fh), 0);
	memset(r, 0xee, 2 * len);
	CU_ASSERT_EQUAL(weir_pread(fh, r, len, 4 * GIB - MIB / 2), (ssize_t)len);
	CU_ASSERT_EQUAL(th_diff_at(w, r, len), -1);
	CU_ASSERT_EQUAL(weir_pread(fh, r, 2 * len, 9 * GIB + 3), (ssize_t)len); /* short at EOF */
	CU_ASSERT_EQUAL(th_diff_at(w, r, len), -1);
	memset(r, 0xee, len);
	CU_ASSERT_EQUAL(weir_pread(fh, r, len, 6 * GIB), (ssize_t)len);
	CU_ASSERT_EQUAL(nonzero_bytes(r, len), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL((uint64_t)st.st_size, 9 * GIB + 3 + len);
	CU_ASSERT(st.st_blocks >= (blkcnt_t)(2 * len / 512));
	CU_ASSERT(st.st_blocks < (blkcnt_t)(16 * MIB / 512)); /* sparse */
	CU_ASSERT_EQUAL(st.st_blksize, MIB);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(w);
	free(r);
}

/* ------------------------------------------------------------ fallocate */

static blkcnt_t blocks_of(weir_file_t *fh)
{
	struct stat st;
	int rc = weir_fstat(fh, &st);
	return rc ? rc : st.st_blocks;
}

static void test_data_fallocate_allocate_keep_size_punch(void)
{
	const size_t len = 2 * MIB;
	uint8_t *w = malloc(len), *r = malloc(len);
	weir_file_t *fh = NULL, *ro = NULL;
	struct stat st;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/falloc", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh),
			      0);
	/* mode 0: allocated, size grows, reads zeros */
	CU_ASSERT_EQUAL(th_rc("fallocate 0", weir_fallocate(fh, 0, 0, MIB)), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)MIB);
	CU_ASSERT(st.st_blocks >= (blkcnt_t)(MIB / 512));
	memset(r, 0xee, MIB);
	CU_ASSERT_EQUAL(weir_pread(fh, r, MIB, 0), (ssize_t)MIB);
	CU_ASSERT_EQUAL(nonzero_bytes(r, MIB), 0);
	/* a range that is not stripe-aligned, growing the file */
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, MIB - 100, 300 * KIB + 7), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/falloc"), (long long)(MIB - 100 + 300 * KIB + 7));
	/* KEEP_SIZE: allocated past the end, size unchanged */
	blkcnt_t b0 = blocks_of(fh);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_KEEP_SIZE, 2 * MIB, MIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/falloc"), (long long)(MIB - 100 + 300 * KIB + 7));
	CU_ASSERT(blocks_of(fh) >= b0 + (blkcnt_t)(MIB / 512));
	/* data, then punch a hole in it (not stripe-aligned, over 3 objects) */
	th_fill_pattern(w, len, 5);
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, len, 0), (ssize_t)len);
	blkcnt_t b1 = blocks_of(fh);
	const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	CU_ASSERT_EQUAL(th_rc("punch", weir_fallocate(fh, punch, 100 * KIB, 160 * KIB)), 0);
	/* the OSS starts writing large writes back at once (weir-oss --writeback-min),
	 * so the punch may split allocated extents: ext4 may add an extent block
	 * per object (4 objects here) */
	CU_ASSERT(blocks_of(fh) <= b1 - (blkcnt_t)(160 * KIB / 512) + 4 * 8);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/falloc"), (long long)len);
	memset(r, 0xee, len);
	CU_ASSERT_EQUAL(weir_pread(fh, r, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(r, w, 100 * KIB), 0);
	CU_ASSERT_EQUAL(nonzero_bytes(r + 100 * KIB, 160 * KIB), 0);
	CU_ASSERT_EQUAL(memcmp(r + 260 * KIB, w + 260 * KIB, len - 260 * KIB), 0);
	/* punching past the end changes nothing, and does not grow the file */
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10 * MIB,
				       MIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/falloc"), (long long)len);
	blkcnt_t open_blocks = blocks_of(fh);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* after the close the MDS's record is the count glimpsed at close (ext4
	 * may still add an extent index block per object at writeback) */
	CU_ASSERT_EQUAL(weir_stat(fs, "/s64k/falloc", &st), 0);
	CU_ASSERT(st.st_blocks >= open_blocks && st.st_blocks <= open_blocks + 4 * 8);
	CU_ASSERT_EQUAL(st.st_blksize, 64 * KIB);

	/* argument checks, in Linux's order */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/falloc", O_RDWR, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, MAXOFF + 1, 1), -EINVAL);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_PUNCH_HOLE, 0, 1), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_ZERO_RANGE, 0, 1), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_COLLAPSE_RANGE, 0, 64 * KIB), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_INSERT_RANGE, 0, 64 * KIB), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0x1000, 0, 1), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, MAXOFF - 1, 2), -EFBIG);
	CU_ASSERT_EQUAL(weir_fallocate(NULL, 0, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/falloc", O_RDONLY, 0, &ro), 0);
	CU_ASSERT_EQUAL(weir_fallocate(ro, 0, 0, 1), -EBADF);
	CU_ASSERT_EQUAL(weir_fallocate(ro, punch, 0, 1), -EBADF);
	CU_ASSERT_EQUAL(weir_close(ro), 0);
	free(w);
	free(r);
}

/* fallocate and punch across a 1 TiB segment boundary of an object */
static void test_data_fallocate_across_segments(void)
{
	weir_file_t *fh = NULL;
	uint8_t w[8192], r[8192];
	struct stat st;

	th_fill_pattern(w, sizeof(w), 8);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/one/fseg", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_KEEP_SIZE, TIB - 64 * KIB, 128 * KIB), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	CU_ASSERT(st.st_blocks >= (blkcnt_t)(128 * KIB / 512));
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, TIB - 64 * KIB, 128 * KIB), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/one/fseg"), (long long)(TIB + 64 * KIB));
	CU_ASSERT_EQUAL(weir_pwrite(fh, w, sizeof(w), TIB - 4096), (ssize_t)sizeof(w));
	blkcnt_t b = blocks_of(fh);
	CU_ASSERT_EQUAL(weir_fallocate(fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       TIB - 64 * KIB, 128 * KIB), 0);
	CU_ASSERT(blocks_of(fh) <= b - (blkcnt_t)(128 * KIB / 512));
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(weir_pread(fh, r, sizeof(r), TIB - 4096), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(nonzero_bytes(r, sizeof(r)), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/one/fseg"), (long long)(TIB + 64 * KIB));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

/* ------------------------------------------------------------ SEEK_DATA / SEEK_HOLE */

/* The same operation on a Weir file and on a local file. */
struct twin {
	weir_file_t *tw_fh;
	int tw_fd;
};

static void twin_write(struct twin *t, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	th_fill_pattern(b, len, seed);
	CU_ASSERT_EQUAL(weir_pwrite(t->tw_fh, b, len, off), (ssize_t)len);
	CU_ASSERT_EQUAL(pwrite(t->tw_fd, b, len, (off_t)off), (ssize_t)len);
	free(b);
}

static void twin_falloc(struct twin *t, int mode, uint64_t off, uint64_t len)
{
	CU_ASSERT_EQUAL(weir_fallocate(t->tw_fh, mode, off, len), 0);
	CU_ASSERT_EQUAL(fallocate(t->tw_fd, mode, (off_t)off, (off_t)len), 0);
}

/* Compare SEEK_DATA and SEEK_HOLE from many offsets; \return mismatches. */
static int twin_seek_compare(struct twin *t, const char *what)
{
	off_t size = lseek(t->tw_fd, 0, SEEK_END);
	int bad = 0;

	for (int pass = 0; pass < 2; pass++) {
		int whence = pass ? SEEK_HOLE : SEEK_DATA;
		/* from every 4 KiB block, at its start, middle or end in turn */
		for (off_t base = 0; base <= size + 8192; base += 4096) {
			off_t o = base + (base / 4096 % 3) * 2047;
			off_t want = lseek(t->tw_fd, o, whence);
			int64_t wantv = want < 0 ? -errno : want;
			int64_t got = weir_lseek(t->tw_fh, o, whence);
			if (got != wantv) {
				if (bad < 10)
					printf("\n  %s: %s from %lld: weir %lld, local %lld", what,
					       pass ? "SEEK_HOLE" : "SEEK_DATA", (long long)o,
					       (long long)got, (long long)wantv);
				bad++;
			}
		}
	}
	CU_ASSERT_EQUAL(weir_lseek(t->tw_fh, -1, SEEK_DATA), -ENXIO);
	CU_ASSERT_EQUAL(weir_lseek(t->tw_fh, -1, SEEK_HOLE), -ENXIO);
	return bad;
}

static void twin_open(struct twin *t, const char *wpath, const char *name)
{
	char lpath[512];
	snprintf(lpath, sizeof(lpath), "%s/%s", th_cluster_dir(cl), name);
	t->tw_fd = open(lpath, O_CREAT | O_RDWR | O_TRUNC, 0644);
	CU_ASSERT_FATAL(t->tw_fd >= 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, wpath, O_CREAT | O_RDWR | O_TRUNC, 0644, &t->tw_fh), 0);
}

static void twin_close(struct twin *t)
{
	CU_ASSERT_EQUAL(weir_close(t->tw_fh), 0);
	close(t->tw_fd);
}

static void test_data_seek_data_hole_match_local_file(void)
{
	struct twin t;
	twin_open(&t, "/s64k/seek", "seek.local");
	/* an empty file: nothing to find */
	CU_ASSERT_EQUAL(weir_lseek(t.tw_fh, 0, SEEK_DATA), -ENXIO);
	CU_ASSERT_EQUAL(weir_lseek(t.tw_fh, 0, SEEK_HOLE), -ENXIO);
	/* striped sparse data: inside stripes, across stripe edges, on block edges */
	twin_write(&t, 0, 100, 1);
	twin_write(&t, 200 * KIB, 10 * KIB, 2);
	twin_write(&t, 60 * KIB, 12 * KIB, 3);          /* across objects 0 and 1 */
	twin_write(&t, MIB + 3, 50 * KIB, 4);
	twin_write(&t, 3 * MIB, 4 * KIB, 5);
	twin_write(&t, 3 * MIB + 256 * KIB, 256 * KIB, 6); /* a full stripe row */
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "sparse writes"), 0);
	/* an implicit hole at the end (truncate up) */
	CU_ASSERT_EQUAL(weir_ftruncate(t.tw_fh, 5 * MIB), 0);
	CU_ASSERT_EQUAL(ftruncate(t.tw_fd, 5 * MIB), 0);
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "truncated up"), 0);
	/* punched holes; preallocated (unwritten) ranges are holes on ext4 */
	twin_falloc(&t, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * MIB + 300 * KIB, 100 * KIB);
	twin_falloc(&t, FALLOC_FL_KEEP_SIZE, 4 * MIB, 128 * KIB);
	twin_falloc(&t, 0, 4 * MIB + 512 * KIB, 64 * KIB);
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "punched and preallocated"), 0);
	/* data ending on a stripe edge at the end of the file */
	twin_write(&t, 5 * MIB - 64 * KIB, 64 * KIB, 7);
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "data at the end"), 0);
	/* the position moves */
	CU_ASSERT_EQUAL(weir_lseek(t.tw_fh, 99, SEEK_DATA), 99); /* inside data: stays */
	CU_ASSERT_EQUAL(weir_lseek(t.tw_fh, 4096, SEEK_DATA), 60 * KIB);
	CU_ASSERT_EQUAL(weir_lseek(t.tw_fh, 0, SEEK_CUR), 60 * KIB);
	twin_close(&t);

	/* objects whose data ends inside a block while the file goes on: the
	 * rest of that block is data, as in the local file */
	twin_open(&t, "/s64k/seek2", "seek2.local");
	twin_write(&t, 0, 100, 1);                 /* object 0 */
	twin_write(&t, 70 * KIB + 5, 3000, 2);     /* object 1, ends at 73 KiB + 3005 */
	twin_write(&t, 130 * KIB, 1, 3);           /* object 2, one byte */
	twin_write(&t, 200 * KIB + 17, 10, 4);     /* object 3: the end of file */
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "unaligned object ends"), 0);
	twin_write(&t, 900 * KIB, 5000, 5);        /* object 2 again, further on */
	CU_ASSERT_EQUAL(twin_seek_compare(&t, "unaligned object ends, longer file"), 0);
	twin_close(&t);
}

static void test_data_seek_across_segments_match_local_file(void)
{
	struct twin t;
	twin_open(&t, "/one/seekseg", "seekseg.local");
	twin_write(&t, TIB - 4096, 4096, 1);          /* up to the boundary */
	twin_write(&t, TIB + 8192, 100, 2);           /* a hole at its start in segment 1 */
	twin_write(&t, 2 * TIB, 4096, 3);             /* segment 2 from its first byte */
	twin_write(&t, 3 * TIB - 4096, 8192, 4);      /* across 3 TiB */
	static const uint64_t offs[] = { 0,	    TIB - 4097, TIB - 4096, TIB - 1, TIB,
					 TIB + 1,   TIB + 8192, TIB + 9000, 2 * TIB - 1,
					 2 * TIB,   2 * TIB + 4095, 2 * TIB + 4096,
					 3 * TIB - 4096, 3 * TIB, 3 * TIB + 4095, 3 * TIB + 4096 };
	int bad = 0;
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (int whence = SEEK_DATA; whence <= SEEK_HOLE; whence++) {
			off_t want = lseek(t.tw_fd, (off_t)offs[i], whence);
			int64_t wantv = want < 0 ? -errno : want;
			int64_t got = weir_lseek(t.tw_fh, (int64_t)offs[i], whence);
			if (got != wantv) {
				printf("\n  whence %d from %llu: weir %lld, local %lld",
				       whence, (unsigned long long)offs[i], (long long)got,
				       (long long)wantv);
				bad++;
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	twin_close(&t);
}

/* ------------------------------------------------------------ sync, modes, coherence */

static void test_data_fsync_fdatasync_record_size(void)
{
	uint8_t b[4096];
	weir_file_t *fh = NULL, *ro = NULL;
	weir_fs_t *fs2 = NULL;
	struct stat st;

	th_fill_pattern(b, sizeof(b), 6);
	CU_ASSERT_EQUAL_FATAL(weir_creat(fs, "/s64k/synced", 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 300 * KIB), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(th_rc("fdatasync", weir_fdatasync(fh)), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 700 * KIB), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(th_rc("fsync", weir_fsync(fh)), 0);
	/* another mount sees the size (glimpsed: the file is still open for writing) */
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs2), 0);
	CU_ASSERT_EQUAL(weir_stat(fs2, "/s64k/synced", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)(700 * KIB + sizeof(b)));
	/* a read-only handle may sync too */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs2, "/s64k/synced", O_RDONLY, 0, &ro), 0);
	CU_ASSERT_EQUAL(weir_fdatasync(ro), 0);
	CU_ASSERT_EQUAL(weir_fsync(ro), 0);
	CU_ASSERT_EQUAL(weir_close(ro), 0);
	CU_ASSERT_EQUAL(weir_fdatasync(NULL), -EINVAL);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_umount(fs2), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/synced"), (long long)(700 * KIB + sizeof(b)));
}

static void test_data_wrong_open_mode_ebadf(void)
{
	uint8_t b[64] = { 1 };
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_creat(fs, "/s64k/modes", 0644, &fh), 0); /* O_WRONLY */
	CU_ASSERT_EQUAL(weir_write(fh, b, sizeof(b)), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_pread(fh, b, sizeof(b), 0), -EBADF);
	CU_ASSERT_EQUAL(weir_read(fh, b, sizeof(b)), -EBADF);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/modes", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), -EBADF);
	CU_ASSERT_EQUAL(weir_write(fh, b, sizeof(b)), -EBADF);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 0), -EBADF);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, 0, 10), -EBADF);
	CU_ASSERT_EQUAL(weir_read(fh, b, sizeof(b)), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/s64k/modes"), (long long)sizeof(b));
}

/* No client cache: what A wrote or truncated, B's next call sees. */
static void test_data_two_mounts_see_writes_and_truncates_at_once(void)
{
	const size_t len = 300 * KIB;
	uint8_t *w = malloc(len), *r = malloc(len);
	weir_fs_t *fs_b = NULL;
	weir_file_t *a = NULL, *b = NULL;
	struct stat st;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs_b), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/coh", O_CREAT | O_RDWR | O_TRUNC, 0644, &a), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs_b, "/s64k/coh", O_RDONLY, 0, &b), 0);
	for (int round = 0; round < 5; round++) {
		th_fill_pattern(w, len, 100 + (uint64_t)round);
		uint64_t off = (uint64_t)round * 77 * KIB;
		CU_ASSERT_EQUAL(weir_pwrite(a, w, len, off), (ssize_t)len);
		/* B reads right after A's write returned */
		memset(r, 0xee, len);
		CU_ASSERT_EQUAL(weir_pread(b, r, len, off), (ssize_t)len);
		CU_ASSERT_EQUAL(th_diff_at(w, r, len), -1);
		CU_ASSERT_EQUAL(weir_fstat(b, &st), 0);
		CU_ASSERT_EQUAL((uint64_t)st.st_size, off + len);
		CU_ASSERT_EQUAL(weir_lseek(b, 0, SEEK_END), (int64_t)(off + len));
	}
	/* A truncates: B's next read is short, its stat shows the new size */
	CU_ASSERT_EQUAL(weir_ftruncate(a, 1000), 0);
	CU_ASSERT_EQUAL(weir_pread(b, r, len, 0), 1000);
	CU_ASSERT_EQUAL(weir_pread(b, r, 10, 5000), 0);
	CU_ASSERT_EQUAL(th_size(fs_b, "/s64k/coh"), 1000);
	/* A punches: B reads zeros */
	CU_ASSERT_EQUAL(weir_fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
	memset(r, 0xee, 1000);
	CU_ASSERT_EQUAL(weir_pread(b, r, 1000, 0), 1000);
	CU_ASSERT_EQUAL(nonzero_bytes(r, 1000), 0);
	/* A grows it with a write far away and closes: B sees it */
	CU_ASSERT_EQUAL(weir_pwrite(a, w, 10, 5 * MIB), 10);
	CU_ASSERT_EQUAL(weir_close(a), 0);
	CU_ASSERT_EQUAL(weir_fstat(b, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)(5 * MIB + 10));
	CU_ASSERT_EQUAL(weir_pread(b, r, 100, 5 * MIB), 10);
	CU_ASSERT_EQUAL(memcmp(r, w, 10), 0);
	CU_ASSERT_EQUAL(weir_close(b), 0);
	CU_ASSERT_EQUAL(weir_umount(fs_b), 0);
	free(w);
	free(r);
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static void test_data_write_changes_mtime_and_ctime(void)
{
	uint8_t b[100] = { 7 };
	weir_file_t *fh = NULL;
	struct stat st0, st1, st2;

	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/s64k/mtime", b, sizeof(b)), 0);
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/s64k/mtime", &st0), 0);
	th_sleep_ms(20);
	/* by close */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/mtime", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 10), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/s64k/mtime", &st1), 0);
	CU_ASSERT(ts_ns(&st1.st_mtim) > ts_ns(&st0.st_mtim));
	CU_ASSERT(ts_ns(&st1.st_ctim) >= ts_ns(&st1.st_mtim));
	th_sleep_ms(20);
	/* by fsync, while still open */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/mtime", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_fsync(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/s64k/mtime", &st2), 0);
	CU_ASSERT(ts_ns(&st2.st_mtim) > ts_ns(&st1.st_mtim));
	CU_ASSERT(ts_ns(&st2.st_ctim) >= ts_ns(&st2.st_mtim));
	/* a handle that only read does not change it */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/s64k/mtime", &st1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/s64k/mtime", O_RDWR, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/s64k/mtime", &st2), 0);
	CU_ASSERT_EQUAL(ts_ns(&st2.st_mtim), ts_ns(&st1.st_mtim));
}

/* A write by anyone but root drops setuid, and setgid with group exec. */
static void test_data_write_by_non_root_drops_setuid_setgid(void)
{
	struct weir_mount_opts mo;
	weir_fs_t *user = NULL;
	weir_file_t *fh = NULL;
	struct stat st;
	uint8_t b[10] = { 1 };

	memset(&mo, 0, sizeof(mo));
	mo.wmo_size = sizeof(mo);
	mo.wmo_uid = 1000;
	mo.wmo_gid = 1000;
	CU_ASSERT_EQUAL_FATAL(weir_mount_with(th_cluster_mds_addr(cl), &mo, &user), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/suid", 0777), 0);
	/* written by uid 1000: both bits go (S_ISGID because of g+x) */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/suid/a", O_CREAT | O_WRONLY, 06777, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/suid/a", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 06777);
	CU_ASSERT_EQUAL_FATAL(weir_open(user, "/suid/a", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0777);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* setgid without group exec: kept for a writer in the file's group, dropped
	 * for one outside it (Linux 6.2+, setattr_should_drop_sgid; ext4 on 6.18) */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/suid/b", O_CREAT | O_WRONLY, 06767, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_chown(fs, "/suid/b", 0, 1000), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/suid/b", 06767), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(user, "/suid/b", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, 0, 4096), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/suid/b", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 02767);
	CU_ASSERT_EQUAL(weir_chown(fs, "/suid/b", 0, 0), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/suid/b", 02767), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(user, "/suid/b", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/suid/b", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0767);
	/* root keeps them */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/suid/c", O_CREAT | O_WRONLY, 06755, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/suid/c", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 06755);
	CU_ASSERT_EQUAL(weir_umount(user), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_data_write_at_2p63_minus_2_one_stripe_roundtrip),
		TH_TEST(test_data_write_at_2p63_minus_2_four_stripes_roundtrip),
		TH_TEST(test_data_segment_boundaries_byte_exact),
		TH_TEST(test_data_sparse_file_over_4gib),
		TH_TEST(test_data_fallocate_allocate_keep_size_punch),
		TH_TEST(test_data_fallocate_across_segments),
		TH_TEST(test_data_seek_data_hole_match_local_file),
		TH_TEST(test_data_seek_across_segments_match_local_file),
		TH_TEST(test_data_wrong_open_mode_ebadf),
		TH_TEST(test_data_two_mounts_see_writes_and_truncates_at_once),
		TH_TEST(test_data_write_changes_mtime_and_ctime),
		TH_TEST(test_data_write_by_non_root_drops_setuid_setgid),
		TH_TEST(test_data_fsync_fdatasync_record_size),
		TH_TEST_END,
	};
	return th_cunit_run("data", suite_init, suite_clean, tests);
}
