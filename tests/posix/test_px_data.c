/*
 * tests/posix/test_px_data.c - POSIX conformance: file data. Holes read as
 * zeros, truncate down then up reads zeros, writes past 4 GiB and 2^40,
 * reads at and past the end, sizes after every write, the file position,
 * zero-length I/O, fdatasync, fallocate and hole punching, SEEK_DATA and
 * SEEK_HOLE. Weir's files here are striped over every OST in 64 KiB stripes
 * (PX_STRIPED) so ranges cross stripe and object boundaries; the local
 * filesystem is the reference. Writes past 2^44 (ext4's limit) are checked
 * against Weir's documented limit of 2^63-1 directly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_run.h"

#define P(rel) px_p(c, (rel))
#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define GIB (1024LL * MIB)
#define PX_MIN_SZ(a, b) ((a) < (b) ? (a) : (b))

/* Bytes of a pattern that depends on the absolute offset (so shifts show). */
static void pattern(unsigned char *buf, size_t len, int64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t x = (uint64_t)(off + (int64_t)i) * 0x9e3779b97f4a7c15ULL + seed;
		buf[i] = (unsigned char)(x >> 56);
	}
}

static void rec_size(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path)
{
	struct stat st;
	int rc = o->po_stat(o, path, &st);
	if (rc)
		px_rc(c, label, rc);
	else
		px_rec(c, label, "%lld", (long long)st.st_size);
}

static void rec_fsize(const struct px_ops *o, struct px_ctx *c, const char *label, int fd)
{
	struct stat st;
	int rc = o->po_fstat(o, fd, &st);
	if (rc)
		px_rc(c, label, rc);
	else
		px_rec(c, label, "%lld", (long long)st.st_size);
}

/* pread \a len at \a off and record the bytes. */
static void rec_pread(const struct px_ops *o, struct px_ctx *c, const char *label, int fd,
		      size_t len, int64_t off)
{
	unsigned char *b = malloc(len ? len : 1);
	if (!b) {
		px_rc(c, label, -ENOMEM);
		return;
	}
	memset(b, 0xee, len);
	px_rec_data(c, label, o->po_pread(o, fd, b, len, off), b);
	free(b);
}

/* ------------------------------------------------------------ holes, truncate */

static int case_holes_read_zero(const struct px_ops *o, struct px_ctx *c)
{
	unsigned char a[5000], b[70000];
	pattern(a, sizeof(a), 0, 1);
	pattern(b, sizeof(b), 300 * KIB, 2);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	px_rc(c, "pwrite 5000 at 0", o->po_pwrite(o, fd, a, sizeof(a), 0));
	px_rc(c, "pwrite 70000 at 300K", o->po_pwrite(o, fd, b, sizeof(b), 300 * KIB));
	rec_fsize(o, c, "fstat size", fd);
	rec_pread(o, c, "hole 5000..300K", fd, 300 * KIB - 5000, 5000);
	rec_pread(o, c, "across hole end", fd, 8192, 300 * KIB - 4096);
	rec_pread(o, c, "whole file", fd, 400 * KIB, 0);
	/* a hole in the middle of one stripe and across several */
	px_rc(c, "pwrite 1 at 1M", o->po_pwrite(o, fd, "Z", 1, MIB));
	rec_pread(o, c, "hole to 1M", fd, MIB - 370000 + 1, 370000);
	px_rc(c, "close", o->po_close(o, fd));
	rec_size(o, c, "size", P("f"));
	/* a file that is only a hole */
	px_rc(c, "truncate new to 200K", px_touch(o, P("h")));
	px_rc(c, "truncate 200K", o->po_truncate(o, P("h"), 200 * KIB));
	fd = px_fd(c, "open h", o->po_open(o, P("h"), O_RDONLY, 0));
	if (fd >= 0) {
		rec_pread(o, c, "read all-hole file", fd, 256 * KIB, 0);
		o->po_close(o, fd);
	}
	return 0;
}

static int case_truncate_shrink_regrow(const struct px_ops *o, struct px_ctx *c)
{
	const size_t n = 200 * KIB + 11;
	unsigned char *d = malloc(n);
	if (!d)
		return 0;
	pattern(d, n, 0, 3);
	px_rc(c, "put 200K+11", px_put(o, P("f"), d, n));
	free(d);
	int fd = px_fd(c, "open rdwr", o->po_open(o, P("f"), O_RDWR, 0));
	if (fd < 0)
		return 0;
	px_rc(c, "ftruncate 100K+3", o->po_ftruncate(o, fd, 100 * KIB + 3));
	rec_fsize(o, c, "size after shrink", fd);
	rec_pread(o, c, "read past new end", fd, 4096, 100 * KIB + 3);
	px_rc(c, "ftruncate 300K", o->po_ftruncate(o, fd, 300 * KIB));
	rec_fsize(o, c, "size after regrow", fd);
	rec_pread(o, c, "all after regrow", fd, 320 * KIB, 0);
	/* shrink to a stripe boundary, to 1 byte, to 0, and regrow by writing */
	px_rc(c, "ftruncate 64K", o->po_ftruncate(o, fd, 64 * KIB));
	px_rc(c, "ftruncate 1", o->po_ftruncate(o, fd, 1));
	px_rc(c, "pwrite at 130K", o->po_pwrite(o, fd, "tail", 4, 130 * KIB));
	rec_pread(o, c, "after 1 + write", fd, 140 * KIB, 0);
	px_rc(c, "ftruncate 0", o->po_ftruncate(o, fd, 0));
	rec_fsize(o, c, "size 0", fd);
	rec_pread(o, c, "read empty", fd, 100, 0);
	px_rc(c, "close", o->po_close(o, fd));
	/* by path, growing a closed file */
	px_rc(c, "truncate path 70000", o->po_truncate(o, P("f"), 70000));
	rec_size(o, c, "size by path", P("f"));
	px_rc(c, "truncate missing", o->po_truncate(o, P("missing"), 10));
	px_rc(c, "truncate dir", o->po_truncate(o, P(""), 10));
	px_rc(c, "truncate under file", o->po_truncate(o, P("f/x"), 10));
	return 0;
}

/* ------------------------------------------------------------ large offsets */

static void big_offset_writes(const struct px_ops *o, struct px_ctx *c, const char *path,
			      int64_t at)
{
	unsigned char w[9000], r[9000];
	pattern(w, sizeof(w), at, 4);
	int fd = px_fd(c, "creat", o->po_open(o, path, O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return;
	/* straddling the boundary, then just after it */
	px_rc(c, "pwrite straddling", o->po_pwrite(o, fd, w, sizeof(w), at - 4500));
	rec_fsize(o, c, "size", fd);
	memset(r, 0, sizeof(r));
	ssize_t n = o->po_pread(o, fd, r, sizeof(r), at - 4500);
	px_rc(c, "pread straddling", n);
	px_bool(c, "bytes equal", n == (ssize_t)sizeof(r) && !memcmp(w, r, sizeof(r)));
	px_rc(c, "pwrite after", o->po_pwrite(o, fd, "end", 3, at + 100000));
	rec_fsize(o, c, "size 2", fd);
	rec_pread(o, c, "hole before", fd, 64, at - 4600);
	rec_pread(o, c, "between", fd, 200, at + 4400);
	rec_pread(o, c, "tail", fd, 16, at + 99998);
	px_rc(c, "lseek end", o->po_lseek(o, fd, 0, SEEK_END));
	px_rc(c, "close", o->po_close(o, fd));
	rec_size(o, c, "size by path", path);
	/* shrink back below the boundary */
	px_rc(c, "truncate below", o->po_truncate(o, path, at - 10));
	rec_size(o, c, "size after truncate", path);
	fd = px_fd(c, "reopen", o->po_open(o, path, O_RDONLY, 0));
	if (fd >= 0) {
		rec_pread(o, c, "last bytes", fd, 32, at - 20);
		o->po_close(o, fd);
	}
}

static int case_offsets_past_4g(const struct px_ops *o, struct px_ctx *c)
{
	big_offset_writes(o, c, P("f4g"), 4 * GIB);
	return 0;
}

static int case_offsets_past_2p40(const struct px_ops *o, struct px_ctx *c)
{
	/* striped, and a single-object file (so the object itself passes 2^40) */
	big_offset_writes(o, c, P("striped"), 1LL << 40);
	px_rc(c, "mkdir one", px_mkdir_striped(o, P("one"), 1, MIB));
	big_offset_writes(o, c, P("one/f"), 1LL << 40);
	big_offset_writes(o, c, P("one/g"), 3LL << 40);
	return 0;
}

/* Weir's own limit: offsets up to 2^63-1 (ext4 stops at 2^44, so no reference). */
static int case_offsets_weir_max(const struct px_ops *o, struct px_ctx *c)
{
	const int64_t max = INT64_MAX;
	int fd = o->po_open(o, P("huge"), O_CREAT | O_RDWR, 0644);
	if (!px_check(c, fd >= 0, "creat: %s", px_errname(fd)))
		return 0;
	ssize_t n = o->po_pwrite(o, fd, "far", 3, 1LL << 62);
	px_check(c, n == 3, "pwrite at 2^62: %zd (%s)", n, px_errname(n));
	struct stat st;
	int rc = o->po_fstat(o, fd, &st);
	px_check(c, rc == 0 && st.st_size == (1LL << 62) + 3, "size after 2^62 write: %lld",
		 (long long)st.st_size);
	char b[8] = { 0 };
	n = o->po_pread(o, fd, b, 8, (1LL << 62) - 2);
	px_check(c, n == 5 && !memcmp(b, "\0\0far", 5), "pread around 2^62: %zd", n);
	n = o->po_pwrite(o, fd, "x", 1, max - 1);
	px_check(c, n == 1, "pwrite of the last byte (2^63-2): %zd (%s)", n, px_errname(n));
	rc = o->po_fstat(o, fd, &st);
	px_check(c, rc == 0 && st.st_size == max, "size after last byte: %lld",
		 (long long)st.st_size);
	n = o->po_pwrite(o, fd, "xy", 2, max - 1);
	px_check(c, n == -EFBIG, "pwrite ending past 2^63-1: %zd (want -EFBIG)", n);
	n = o->po_pwrite(o, fd, "x", 1, max);
	px_check(c, n == -EFBIG, "pwrite at 2^63-1: %zd (want -EFBIG)", n);
	n = o->po_pread(o, fd, b, 1, max - 1);
	px_check(c, n == 1 && b[0] == 'x', "pread of the last byte: %zd", n);
	/* as Linux: a range whose end overflows a file offset is EINVAL */
	n = o->po_pread(o, fd, b, 8, max - 1);
	px_check(c, n == -EINVAL, "pread of 8 at 2^63-2: %zd (want -EINVAL)", n);
	int64_t pos = o->po_lseek(o, fd, 0, SEEK_END);
	px_check(c, pos == max, "lseek end: %lld", (long long)pos);
	rc = o->po_ftruncate(o, fd, 1LL << 50);
	px_check(c, rc == 0, "ftruncate 2^50: %s", px_errname(rc));
	n = o->po_pread(o, fd, b, 8, 1LL << 62);
	px_check(c, n == 0, "pread past the new end: %zd", n);
	rc = o->po_close(o, fd);
	px_check(c, rc == 0, "close: %s", px_errname(rc));
	return 0;
}

/* ------------------------------------------------------------ reads at the end, sizes */

static int case_pread_past_eof(const struct px_ops *o, struct px_ctx *c)
{
	unsigned char d[1000];
	pattern(d, sizeof(d), 0, 5);
	px_rc(c, "put 1000", px_put(o, P("f"), d, sizeof(d)));
	int fd = px_fd(c, "open", o->po_open(o, P("f"), O_RDONLY, 0));
	if (fd < 0)
		return 0;
	rec_pread(o, c, "at 1000", fd, 100, 1000);
	rec_pread(o, c, "at 5000", fd, 100, 5000);
	rec_pread(o, c, "at 1M", fd, 100, MIB);
	rec_pread(o, c, "at 2^40", fd, 100, 1LL << 40);
	rec_pread(o, c, "900..1100", fd, 200, 900);
	rec_pread(o, c, "999..", fd, 4096, 999);
	rec_pread(o, c, "zero length", fd, 0, 10);
	rec_pread(o, c, "zero length past end", fd, 0, 5000);
	char b[64];
	px_rc(c, "lseek 990", o->po_lseek(o, fd, 990, SEEK_SET));
	px_rec_data(c, "read 64 at 990", o->po_read(o, fd, b, sizeof(b)), b);
	px_rec_data(c, "read at eof", o->po_read(o, fd, b, sizeof(b)), b);
	px_rc(c, "position", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "lseek past end", o->po_lseek(o, fd, 4000, SEEK_SET));
	px_rec_data(c, "read past end", o->po_read(o, fd, b, sizeof(b)), b);
	px_rc(c, "position 2", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "close", o->po_close(o, fd));
	return 0;
}

static int case_sizes_after_writes(const struct px_ops *o, struct px_ctx *c)
{
	unsigned char d[200000];
	pattern(d, sizeof(d), 0, 6);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	static const struct {
		int64_t off;
		size_t len;
	} w[] = { { 0, 1 },	      { 1, 4095 },	   { 65535, 2 },   { 10, 10 },
		  { 131072, 65536 }, { 100000, 100000 }, { 50, 5 },	   { 500000, 1 },
		  { 0, 200000 },     { 499999, 2 } };
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char label[64];
		snprintf(label, sizeof(label), "pwrite %zu at %lld", w[i].len, (long long)w[i].off);
		px_rc(c, label, o->po_pwrite(o, fd, d, w[i].len, w[i].off));
		snprintf(label, sizeof(label), "fstat %zu", i);
		rec_fsize(o, c, label, fd);
		snprintf(label, sizeof(label), "stat %zu", i);
		rec_size(o, c, label, P("f"));
		snprintf(label, sizeof(label), "seek end %zu", i);
		px_rc(c, label, o->po_lseek(o, fd, 0, SEEK_END));
	}
	rec_pread(o, c, "content", fd, 600000, 0);
	px_rc(c, "fsync", o->po_fsync(o, fd));
	rec_size(o, c, "size after fsync", P("f"));
	px_rc(c, "close", o->po_close(o, fd));
	rec_size(o, c, "size after close", P("f"));
	/* a second open for writing that writes nothing leaves the size alone */
	fd = px_fd(c, "open wronly", o->po_open(o, P("f"), O_WRONLY, 0));
	if (fd >= 0)
		px_rc(c, "close 2", o->po_close(o, fd));
	rec_size(o, c, "size after idle writer", P("f"));
	return 0;
}

static int case_position(const struct px_ops *o, struct px_ctx *c)
{
	unsigned char d[100000];
	pattern(d, sizeof(d), 0, 7);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	px_rc(c, "write 70000", o->po_write(o, fd, d, 70000));
	px_rc(c, "write 30000", o->po_write(o, fd, d + 70000, 30000));
	px_rc(c, "cur", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "set 65530", o->po_lseek(o, fd, 65530, SEEK_SET));
	char b[16];
	px_rec_data(c, "read 12", o->po_read(o, fd, b, 12), b);
	px_rc(c, "cur 2", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "cur -100", o->po_lseek(o, fd, -100, SEEK_CUR));
	px_rc(c, "cur -1000000", o->po_lseek(o, fd, -1000000, SEEK_CUR));
	px_rc(c, "set -1", o->po_lseek(o, fd, -1, SEEK_SET));
	px_rc(c, "cur after errors", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "end -10", o->po_lseek(o, fd, -10, SEEK_END));
	px_rec_data(c, "read at end-10", o->po_read(o, fd, b, 16), b);
	px_rc(c, "end +5000", o->po_lseek(o, fd, 5000, SEEK_END));
	px_rc(c, "write past end", o->po_write(o, fd, "gap", 3));
	rec_fsize(o, c, "size", fd);
	rec_pread(o, c, "gap", fd, 5010, 99995);
	px_rc(c, "bad whence", o->po_lseek(o, fd, 0, 99));
	/* pread/pwrite leave the position alone */
	px_rc(c, "set 7", o->po_lseek(o, fd, 7, SEEK_SET));
	px_rc(c, "pwrite", o->po_pwrite(o, fd, "PP", 2, 0));
	px_rc(c, "pread", o->po_pread(o, fd, b, 4, 50));
	px_rc(c, "cur after p-calls", o->po_lseek(o, fd, 0, SEEK_CUR));
	/* two descriptors have their own positions */
	int fd2 = px_fd(c, "open 2", o->po_open(o, P("f"), O_RDONLY, 0));
	if (fd2 >= 0) {
		px_rec_data(c, "fd2 read 4", o->po_read(o, fd2, b, 4), b);
		px_rc(c, "fd2 cur", o->po_lseek(o, fd2, 0, SEEK_CUR));
		px_rc(c, "fd cur", o->po_lseek(o, fd, 0, SEEK_CUR));
		o->po_close(o, fd2);
	}
	px_rc(c, "close", o->po_close(o, fd));
	return 0;
}

static int case_zero_length_io(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "put", px_put(o, P("f"), "abc", 3));
	int fd = px_fd(c, "open", o->po_open(o, P("f"), O_RDWR, 0));
	if (fd < 0)
		return 0;
	char b[4];
	px_rc(c, "write 0", o->po_write(o, fd, b, 0));
	px_rc(c, "pwrite 0 at 1M", o->po_pwrite(o, fd, b, 0, MIB));
	rec_fsize(o, c, "size after empty writes", fd);
	px_rc(c, "read 0", o->po_read(o, fd, b, 0));
	px_rc(c, "cur", o->po_lseek(o, fd, 0, SEEK_CUR));
	px_rc(c, "close", o->po_close(o, fd));
	rec_size(o, c, "size", P("f"));
	return 0;
}

static int case_large_sequential(const struct px_ops *o, struct px_ctx *c)
{
	/* 3 MiB + 7 written in odd-sized write() calls, read back with read() in others */
	const size_t n = 3 * MIB + 7;
	unsigned char *d = malloc(n), *r = malloc(n);
	if (!d || !r) {
		free(d);
		free(r);
		return 0;
	}
	pattern(d, n, 0, 8);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_WRONLY | O_TRUNC, 0644));
	size_t done = 0, k = 0;
	static const size_t chunks[] = { 1, 4095, 65537, 300000, 12345, 1048576 };
	while (fd >= 0 && done < n) {
		size_t len = chunks[k++ % 6];
		if (len > n - done)
			len = n - done;
		ssize_t w = o->po_write(o, fd, d + done, len);
		if (w <= 0) {
			px_rc(c, "write", w);
			break;
		}
		done += (size_t)w;
	}
	px_rec(c, "written", "%zu", done);
	if (fd >= 0)
		px_rc(c, "close", o->po_close(o, fd));
	fd = px_fd(c, "open", o->po_open(o, P("f"), O_RDONLY, 0));
	done = 0;
	k = 0;
	while (fd >= 0 && done < n + 1) {
		ssize_t rd = o->po_read(o, fd, r + done, PX_MIN_SZ(chunks[(k++ + 3) % 6], n - done));
		if (rd <= 0)
			break;
		done += (size_t)rd;
	}
	px_rec(c, "read", "%zu", done);
	px_bool(c, "equal", done == n && !memcmp(d, r, n));
	if (fd >= 0)
		px_rc(c, "close 2", o->po_close(o, fd));
	free(d);
	free(r);
	return 0;
}

/* ------------------------------------------------------------ fdatasync, fallocate */

static int case_fdatasync(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_fdatasync != NULL, "weir_fdatasync"))
		return px_skip(c);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	px_rc(c, "pwrite", o->po_pwrite(o, fd, "data", 4, 100000));
	px_rc(c, "fdatasync", o->po_fdatasync(o, fd));
	rec_size(o, c, "size after fdatasync", P("f"));
	px_rc(c, "close", o->po_close(o, fd));
	fd = px_fd(c, "open rdonly", o->po_open(o, P("f"), O_RDONLY, 0));
	if (fd >= 0) {
		px_rc(c, "fdatasync rdonly", o->po_fdatasync(o, fd));
		o->po_close(o, fd);
	}
	return 0;
}

static int case_fallocate(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_fallocate != NULL, "weir_fallocate"))
		return px_skip(c);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	/* mode 0 extends the size; the new range reads as zeros */
	px_rc(c, "fallocate 0..300K", o->po_fallocate(o, fd, 0, 0, 300 * KIB));
	rec_fsize(o, c, "size", fd);
	rec_pread(o, c, "read allocated", fd, 310 * KIB, 0);
	/* KEEP_SIZE past the end leaves the size */
	px_rc(c, "fallocate keep 1M..2M",
	      o->po_fallocate(o, fd, FALLOC_FL_KEEP_SIZE, MIB, MIB));
	rec_fsize(o, c, "size keep", fd);
	/* inside the file: no change to size or data */
	unsigned char d[200000];
	pattern(d, sizeof(d), 0, 9);
	px_rc(c, "pwrite data", o->po_pwrite(o, fd, d, sizeof(d), 0));
	px_rc(c, "fallocate inside", o->po_fallocate(o, fd, 0, 1000, 5000));
	rec_pread(o, c, "data kept", fd, 8000, 0);
	/* punch: zeros, size kept; at a stripe boundary and across stripes */
	px_rc(c, "punch 1000+5000",
	      o->po_fallocate(o, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 5000));
	rec_pread(o, c, "after punch", fd, 8000, 0);
	px_rc(c, "punch 60K..140K",
	      o->po_fallocate(o, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 60 * KIB,
			      80 * KIB));
	rec_pread(o, c, "after punch 2", fd, 200000, 0);
	rec_fsize(o, c, "size after punches", fd);
	px_rc(c, "punch past end",
	      o->po_fallocate(o, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 290 * KIB,
			      100 * KIB));
	rec_fsize(o, c, "size after punch past end", fd);
	/* errors */
	px_rc(c, "punch without keep", o->po_fallocate(o, fd, FALLOC_FL_PUNCH_HOLE, 0, 10));
	px_rc(c, "length 0", o->po_fallocate(o, fd, 0, 0, 0));
	px_rc(c, "negative offset", o->po_fallocate(o, fd, 0, -1, 10));
	px_rc(c, "close", o->po_close(o, fd));
	fd = px_fd(c, "open rdonly", o->po_open(o, P("f"), O_RDONLY, 0));
	if (fd >= 0) {
		px_rc(c, "fallocate rdonly", o->po_fallocate(o, fd, 0, 0, 10));
		o->po_close(o, fd);
	}
	rec_size(o, c, "size final", P("f"));
	return 0;
}

/* ------------------------------------------------------------ SEEK_DATA, SEEK_HOLE */

/*
 * POSIX lets a filesystem report the whole file as data; Linux (ext4) and
 * Weir report real holes. The layout below only has holes of whole 1 MiB
 * stripes and data ends at 64 KiB multiples, so any block size agrees.
 */
static int case_seek_data_hole(const struct px_ops *o, struct px_ctx *c)
{
#ifndef SEEK_DATA
	if (px_need(c, false, "SEEK_DATA in the C library"))
		return px_skip(c);
#else
	if (px_need(c, !(o->po_flags & PX_BE_WEIR) || px_weir_has_seek_data(),
		    "SEEK_DATA/SEEK_HOLE in weir_lseek"))
		return px_skip(c);
	px_rc(c, "mkdir one", px_mkdir_striped(o, P("one"), 1, MIB));
	int fd = px_fd(c, "creat", o->po_open(o, P("one/f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		return 0;
	unsigned char *d = malloc(MIB);
	if (!d)
		return 0;
	pattern(d, MIB, 0, 10);
	/* data [0,1M) hole [1M,3M) data [3M,3M+64K) hole to 5M */
	px_rc(c, "pwrite 0..1M", o->po_pwrite(o, fd, d, MIB, 0));
	px_rc(c, "pwrite 3M..+64K", o->po_pwrite(o, fd, d, 64 * KIB, 3 * MIB));
	px_rc(c, "ftruncate 5M", o->po_ftruncate(o, fd, 5 * MIB));
	free(d);
	static const struct {
		int64_t off;
		int whence;
		const char *what;
	} q[] = {
		{ 0, SEEK_DATA, "data from 0" },	 { 0, SEEK_HOLE, "hole from 0" },
		{ 100, SEEK_HOLE, "hole from 100" },	 { MIB, SEEK_DATA, "data from 1M" },
		{ MIB, SEEK_HOLE, "hole from 1M" },	 { 2 * MIB, SEEK_DATA, "data from 2M" },
		{ 3 * MIB, SEEK_HOLE, "hole from 3M" }, { 4 * MIB, SEEK_DATA, "data from 4M" },
		{ 4 * MIB, SEEK_HOLE, "hole from 4M" }, { 5 * MIB, SEEK_DATA, "data at eof" },
		{ 5 * MIB, SEEK_HOLE, "hole at eof" },	 { 6 * MIB, SEEK_HOLE, "hole past eof" },
		{ -1, SEEK_DATA, "data from -1" },
	};
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		px_rc(c, q[i].what, o->po_lseek(o, fd, q[i].off, q[i].whence));
	px_rc(c, "close", o->po_close(o, fd));
	/* an empty file and an all-hole file */
	fd = px_fd(c, "creat e", o->po_open(o, P("one/e"), O_CREAT | O_RDWR, 0644));
	if (fd >= 0) {
		px_rc(c, "empty: data from 0", o->po_lseek(o, fd, 0, SEEK_DATA));
		px_rc(c, "empty: hole from 0", o->po_lseek(o, fd, 0, SEEK_HOLE));
		px_rc(c, "ftruncate 2M", o->po_ftruncate(o, fd, 2 * MIB));
		px_rc(c, "sparse: data from 0", o->po_lseek(o, fd, 0, SEEK_DATA));
		px_rc(c, "sparse: hole from 0", o->po_lseek(o, fd, 0, SEEK_HOLE));
		o->po_close(o, fd);
	}
#endif
	return 0;
}

/* ------------------------------------------------------------ Weir's own figures */

/*
 * st_blksize is the stripe size (4096 for directories), st_blocks counts
 * 512-byte blocks on the OSTs, statfs reports 4096-byte blocks summed over
 * the OSTs and files from the MDT (weir.h): no Linux reference, checked
 * directly.
 */
static int case_blksize_blocks_statfs(const struct px_ops *o, struct px_ctx *c)
{
	struct stat st;
	px_check(c, px_touch(o, P("f")) == 0, "touch f");
	int rc = o->po_stat(o, P("f"), &st);
	px_check(c, rc == 0 && st.st_blksize == 64 * KIB, "st_blksize of a 64 KiB-striped file: %ld",
		 (long)st.st_blksize);
	rc = o->po_stat(o, P(""), &st);
	px_check(c, rc == 0 && st.st_blksize == 4096, "st_blksize of a directory: %ld",
		 (long)st.st_blksize);
	px_check(c, px_mkdir_striped(o, P("one"), 1, MIB) == 0, "mkdir one");
	px_check(c, px_touch(o, P("one/f")) == 0, "touch one/f");
	rc = o->po_stat(o, P("one/f"), &st);
	px_check(c, rc == 0 && st.st_blksize == MIB, "st_blksize of a 1 MiB-striped file: %ld",
		 (long)st.st_blksize);
	unsigned char *d = malloc(MIB);
	if (!d)
		return 0;
	pattern(d, MIB, 0, 11);
	px_check(c, px_put(o, P("full"), d, MIB) == 0, "put 1 MiB");
	free(d);
	rc = o->po_stat(o, P("full"), &st);
	px_check(c, rc == 0 && st.st_blocks >= 2048, "st_blocks of 1 MiB written: %lld",
		 (long long)st.st_blocks);
	int fd = o->po_open(o, P("sparse"), O_CREAT | O_WRONLY, 0644);
	px_check(c, fd >= 0 && o->po_pwrite(o, fd, "x", 1, 100 * MIB) == 1, "sparse write");
	if (fd >= 0)
		o->po_close(o, fd);
	rc = o->po_stat(o, P("sparse"), &st);
	px_check(c, rc == 0 && st.st_size == 100 * MIB + 1 && st.st_blocks < 1024,
		 "sparse 100 MiB file: size %lld, st_blocks %lld", (long long)st.st_size,
		 (long long)st.st_blocks);

	struct statvfs a, b;
	rc = o->po_statfs(o, P(""), &a);
	px_check(c, rc == 0, "statfs: %s", px_errname(rc));
	px_check(c, a.f_bsize == 4096 && a.f_frsize == 4096, "f_bsize %lu f_frsize %lu",
		 (unsigned long)a.f_bsize, (unsigned long)a.f_frsize);
	px_check(c, a.f_blocks > 0 && a.f_bfree <= a.f_blocks && a.f_bavail <= a.f_bfree,
		 "blocks %llu free %llu avail %llu", (unsigned long long)a.f_blocks,
		 (unsigned long long)a.f_bfree, (unsigned long long)a.f_bavail);
	px_check(c, a.f_files > 0 && a.f_ffree <= a.f_files, "files %llu free %llu",
		 (unsigned long long)a.f_files, (unsigned long long)a.f_ffree);
	px_check(c, a.f_namemax == 255, "f_namemax %lu", (unsigned long)a.f_namemax);
	for (int i = 0; i < 100; i++)
		px_touch(o, px_pf(c, "n%03d", i));
	rc = o->po_statfs(o, P(""), &b);
	px_check(c, rc == 0 && (b.f_files - b.f_ffree) >= (a.f_files - a.f_ffree) + 100,
		 "inodes in use after 100 creates: %llu, before %llu",
		 (unsigned long long)(b.f_files - b.f_ffree),
		 (unsigned long long)(a.f_files - a.f_ffree));
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(holes_read_zero, PX_STRIPED),
		PX_CASE(truncate_shrink_regrow, PX_STRIPED),
		PX_CASE(offsets_past_4g, PX_STRIPED),
		PX_CASE(offsets_past_2p40, PX_STRIPED),
		PX_CASE(offsets_weir_max, PX_STRIPED | PX_DIRECT | PX_WEIR),
		PX_CASE(pread_past_eof, PX_STRIPED),
		PX_CASE(sizes_after_writes, PX_STRIPED),
		PX_CASE(position, PX_STRIPED),
		PX_CASE(zero_length_io, PX_STRIPED),
		PX_CASE(large_sequential, PX_STRIPED),
		PX_CASE(fdatasync, PX_STRIPED),
		PX_CASE(fallocate, PX_STRIPED),
		PX_CASE(seek_data_hole, 0),
		PX_CASE(blksize_blocks_statfs, PX_STRIPED | PX_DIRECT | PX_WEIR),
		PX_CASE_END,
	};
	return px_main("data", cases);
}
