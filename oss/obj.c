/*
 * oss/obj.c - the OST directory format, object naming and segments, and the
 * plain syscalls on objects (open, stat, ftruncate, unlink, lseek, statvfs).
 * Data I/O (read, write, fsync, fallocate) never happens here: it goes
 * through oss/uring.c. These metadata syscalls are made directly on the loop
 * thread; they are short on a local filesystem and io_uring offers no gain
 * for them here.
 *
 * Disk format, version 2 (an OST is a directory DIR on a local filesystem):
 *   DIR/ost.uuid    32 lowercase hex digits + "\n": 128 random bits from
 *                   getrandom(2), written once at first start.
 *   DIR/ost.index   decimal OST index + "\n", as assigned by the MDS;
 *                   absent until the first registration.
 *   DIR/ost.secret  64 lowercase hex digits + "\n" (mode 0600): 32 random
 *                   bytes (OpenSSL RAND_bytes) made with the uuid (or at the
 *                   first start of this version); sent with every
 *                   registration, so the MDS knows this directory is the OST
 *                   it bound to the uuid (a copy of ost.uuid is not enough).
 *   DIR/ost.lock    the pid of the weir-oss serving the directory; it holds
 *                   flock(LOCK_EX) on the file while it runs, so a second
 *                   weir-oss on the same directory refuses to start.
 *   DIR/O/00..ff    256 hash subdirectories.
 *   DIR/O/<hh>/<seq>-<oid>-<stripe>
 *                   segment 0 of an object: its bytes [0, 2^40). seq and oid
 *                   in lowercase hex without 0x, stripe in decimal; hh = two
 *                   hex digits of (oid ^ seq ^ stripe * 0x9e3779b9) & 0xff
 *                   (64-bit unsigned arithmetic). The object exists iff this
 *                   file does.
 *   DIR/O/<hh>/<seq>-<oid>-<stripe>.d/<k>
 *                   segment k >= 1 (k in decimal, no leading zeros): object
 *                   bytes [k * 2^40, (k + 1) * 2^40) at file offsets
 *                   [0, 2^40). The ".d" directory exists only once the object
 *                   had a byte at or past 1 TiB (and is removed again by a
 *                   truncate below 1 TiB).
 * Segments keep every file under ext4's 16 TiB limit while objects reach
 * 2^63-1 bytes. A missing segment, and the bytes of a segment past its file's
 * end, are holes (read as zeros). The object's size is k * 2^40 + the length
 * of the highest segment k whose file is not empty (0 when all are empty), so
 * a truncate to a multiple of 2^40 leaves segment k-1 exactly 2^40 long, and
 * an empty segment (fallocate with KEEP_SIZE past the end) does not count.
 * Finding it costs one failed open of "<name>.d" for objects below 1 TiB, a
 * listing of that small per-object directory otherwise. Version 1 (one file
 * per object, no ".d") is version 2 with no object past 1 TiB: v1 OSTs are
 * read unchanged.
 * Small files are replaced atomically (tmp + fsync + rename).
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/key.h"
#include "common/log.h"
#include "common/util.h"

#define OSS_HASH_DIRS 256

static unsigned obj_hash(const struct weir_fid *fid, uint32_t stripe)
{
	return (unsigned)((fid->fid_oid ^ fid->fid_seq ^ (uint64_t)stripe * 0x9e3779b9ULL) & 0xff);
}

void oss_obj_name(const struct weir_fid *fid, uint32_t stripe, char *buf)
{
	snprintf(buf, OSS_OBJ_NAME_MAX, "O/%02x/%llx-%llx-%u", obj_hash(fid, stripe),
		 (unsigned long long)fid->fid_seq, (unsigned long long)fid->fid_oid, stripe);
}

void oss_obj_seg_name(const struct oss_obj *ob, uint64_t seg, char *buf)
{
	oss_obj_name(&ob->ob_fid, ob->ob_stripe, buf);
	if (seg) {
		size_t n = strlen(buf);
		snprintf(buf + n, OSS_OBJ_NAME_MAX - n, ".d/%llu", (unsigned long long)seg);
	}
}

/* "<segment 0 path>.d": the directory of segments 1.. */
static void obj_seg_dir_name(const struct oss_obj *ob, char *buf)
{
	oss_obj_name(&ob->ob_fid, ob->ob_stripe, buf);
	size_t n = strlen(buf);
	snprintf(buf + n, OSS_OBJ_NAME_MAX - n, ".d");
}

static int64_t obj_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* The hash subdirectory of \a ob went missing: recreate it (and O/). */
static int obj_hash_dir_fix(const struct oss_obj *ob)
{
	const struct oss_ost *ot = ob->ob_ost;
	char sub[8];

	snprintf(sub, sizeof(sub), "O/%02x", obj_hash(&ob->ob_fid, ob->ob_stripe));
	WEIR_LOG_WARN("ost=%d dir=%s sub=%s: hash directory missing; recreating",
		      atomic_load(&ot->ot_index), ot->ot_dir, sub);
	if (mkdirat(ot->ot_dirfd, "O", 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mkdirat(ot->ot_dirfd, sub, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int oss_obj_seg_open(const struct oss_obj *ob, uint64_t seg, int flags, int *fd)
{
	const struct oss_ost *ot = ob->ob_ost;
	char name[OSS_OBJ_NAME_MAX];
	int rc;

	if (seg > OSS_SEG_MAX)
		return -EFBIG;
	oss_obj_seg_name(ob, seg, name);
	int f = openat(ot->ot_dirfd, name, flags | O_CLOEXEC, 0644);
	if (f < 0 && errno == ENOENT && (flags & O_CREAT)) {
		if (seg == 0) {
			rc = obj_hash_dir_fix(ob);
		} else {
			/* segment 0 first (the object exists iff it does), then the directory */
			char dir[OSS_OBJ_NAME_MAX];
			int f0;
			rc = oss_obj_seg_open(ob, 0, O_WRONLY | O_CREAT, &f0);
			if (!rc) {
				close(f0);
				obj_seg_dir_name(ob, dir);
				if (mkdirat(ot->ot_dirfd, dir, 0755) < 0 && errno != EEXIST)
					rc = -errno;
			}
		}
		if (rc)
			return rc;
		f = openat(ot->ot_dirfd, name, flags | O_CLOEXEC, 0644);
	}
	if (f < 0)
		return -errno;
	*fd = f;
	return 0;
}

int oss_obj_seg_dir_open(const struct oss_obj *ob, int *fd)
{
	char dir[OSS_OBJ_NAME_MAX];

	obj_seg_dir_name(ob, dir);
	int f = openat(ob->ob_ost->ot_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	*fd = f;
	return 0;
}

/* A segment file name: decimal 1..OSS_SEG_MAX without leading zeros. */
static bool obj_seg_parse(const char *name, uint64_t *seg)
{
	uint64_t v = 0;

	if (name[0] < '1' || name[0] > '9')
		return false;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > OSS_SEG_MAX)
			return false;
	}
	*seg = v;
	return true;
}

static int obj_seg_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int oss_obj_segs_list(const struct oss_obj *ob, uint64_t **segs, size_t *nr)
{
	const struct oss_ost *ot = ob->ob_ost;
	char dir[OSS_OBJ_NAME_MAX];
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;

	*segs = NULL;
	*nr = 0;
	obj_seg_dir_name(ob, dir);
	int dfd = openat(ot->ot_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	for (;;) {
		uint64_t seg;
		errno = 0;
		de = readdir(d);
		if (!de) {
			rc = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!obj_seg_parse(de->d_name, &seg)) {
			WEIR_LOG_WARN("ost=%d dir=%s obj=%s name=%.64s: not a segment; ignored",
				      atomic_load(&ot->ot_index), ot->ot_dir, dir, de->d_name);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			uint64_t *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = seg;
	}
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), obj_seg_cmp);
	*segs = v;
	*nr = n;
	return 0;
}

/* Add segment \a seg's stat to \a oa. \return 0, or -EIO for a segment over 2^40 bytes. */
static int obj_attr_add(const struct oss_obj *ob, uint64_t seg, const struct stat *st,
			struct oss_obj_attr *oa)
{
	if (st->st_size < 0 || (uint64_t)st->st_size > OSS_SEG_SIZE) {
		char name[OSS_OBJ_NAME_MAX];
		oss_obj_seg_name(ob, seg, name);
		WEIR_LOG_ERROR("ost=%d dir=%s obj=%s size=%lld: segment longer than 2^40 bytes "
			       "(corrupt, or a v1 object past 1 TiB)",
			       atomic_load(&ob->ob_ost->ot_index), ob->ob_ost->ot_dir, name,
			       (long long)st->st_size);
		return -EIO;
	}
	if (st->st_size > 0)
		oa->oa_size = WEIR_MAX(oa->oa_size, (seg << OSS_SEG_SHIFT) + (uint64_t)st->st_size);
	oa->oa_blocks += (uint64_t)st->st_blocks;
	oa->oa_mtime_ns = WEIR_MAX(oa->oa_mtime_ns, obj_mtime_ns(st));
	return 0;
}

/* Attributes, and (when \a segs is not NULL) the list of segments >= 1. */
static int obj_getattr_segs(const struct oss_obj *ob, struct oss_obj_attr *oa, uint64_t **segs,
			    size_t *nr)
{
	const struct oss_ost *ot = ob->ob_ost;
	char name[OSS_OBJ_NAME_MAX];
	uint64_t *v;
	size_t n;
	struct stat st;
	int rc;

	memset(oa, 0, sizeof(*oa));
	if (segs) {
		*segs = NULL;
		*nr = 0;
	}
	oss_obj_seg_name(ob, 0, name);
	if (fstatat(ot->ot_dirfd, name, &st, 0) < 0)
		return errno == ENOENT ? 0 : -errno;
	oa->oa_exists = true;
	rc = obj_attr_add(ob, 0, &st, oa);
	if (rc)
		return rc;
	rc = oss_obj_segs_list(ob, &v, &n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		oss_obj_seg_name(ob, v[i], name);
		if (fstatat(ot->ot_dirfd, name, &st, 0) < 0)
			rc = errno == ENOENT ? 0 : -errno; /* gone meanwhile (truncate) */
		else
			rc = obj_attr_add(ob, v[i], &st, oa);
	}
	if (rc || !segs) {
		free(v);
		return rc;
	}
	*segs = v;
	*nr = n;
	return 0;
}

int oss_obj_getattr(const struct oss_obj *ob, struct oss_obj_attr *oa)
{
	return obj_getattr_segs(ob, oa, NULL, NULL);
}

int oss_obj_truncate(const struct oss_obj *ob, uint64_t size)
{
	const struct oss_ost *ot = ob->ob_ost;
	char name[OSS_OBJ_NAME_MAX];
	struct oss_obj_attr oa;
	uint64_t *segs;
	size_t nr;
	int fd, rc;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	uint64_t last = size ? oss_seg_of(size - 1) : 0;
	rc = obj_getattr_segs(ob, &oa, &segs, &nr);
	if (rc)
		return rc;
	/* Shrinking frees everything past the new end, preallocated blocks too
	 * (as ext4 does); growing keeps them. Highest segments first, so a crash
	 * leaves an object of some size in between. */
	if (size < oa.oa_size) {
		/* no cached fd may outlive a segment file it names (oss/fdcache.c) */
		oss_fdc_inval_begin(ot->ot_fdc, ob);
		for (size_t i = nr; i-- > 0 && segs[i] > last;) {
			oss_obj_seg_name(ob, segs[i], name);
			if (unlinkat(ot->ot_dirfd, name, 0) < 0 && errno != ENOENT) {
				rc = -errno;
				break;
			}
		}
		if (!rc && last == 0 && nr) {
			obj_seg_dir_name(ob, name);
			if (unlinkat(ot->ot_dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
			    errno != ENOTEMPTY)
				WEIR_LOG_WARN("ost=%d obj=%s: cannot remove the segment "
					      "directory: %s", atomic_load(&ot->ot_index), name,
					      strerror(errno));
		}
		oss_fdc_inval_end(ot->ot_fdc, ob);
		if (rc)
			goto out_free;
	}
	rc = oss_obj_seg_open(ob, last, O_WRONLY | O_CREAT, &fd);
	if (rc)
		goto out_free;
	if (ftruncate(fd, (off_t)(size - (last << OSS_SEG_SHIFT))) < 0)
		rc = -errno;
	close(fd);
out_free:
	free(segs);
	return rc;
}

/* oss_obj_destroy() without the cache invalidation. */
static int obj_destroy_files(const struct oss_obj *ob)
{
	const struct oss_ost *ot = ob->ob_ost;
	char name[OSS_OBJ_NAME_MAX];
	struct dirent *de;
	int rc = 0;

	/* everything in the segment directory (it is the object's alone), then it */
	obj_seg_dir_name(ob, name);
	int dfd = openat(ot->ot_dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		return -errno;
	if (dfd >= 0) {
		DIR *d = fdopendir(dfd);
		if (!d) {
			rc = -errno;
			close(dfd);
			return rc;
		}
		while (!rc) {
			errno = 0;
			de = readdir(d);
			if (!de) {
				rc = -errno;
				break;
			}
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
				rc = -errno;
		}
		closedir(d);
		if (rc)
			return rc;
		if (unlinkat(ot->ot_dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return -errno;
	}
	/* segment 0 last: the object exists until everything else is gone */
	oss_obj_seg_name(ob, 0, name);
	if (unlinkat(ot->ot_dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int oss_obj_destroy(const struct oss_obj *ob)
{
	/* drop the object's cached fds, and keep racing opens out of the cache,
	 * before the first unlink and until the last (oss/fdcache.c) */
	oss_fdc_inval_begin(ob->ob_ost->ot_fdc, ob);
	int rc = obj_destroy_files(ob);
	oss_fdc_inval_end(ob->ob_ost->ot_fdc, ob);
	return rc;
}

/*
 * SEEK_DATA (\a hole false) or SEEK_HOLE from \a from in segment \a seg, with a
 * local file's block granularity: the bytes from the segment file's end to
 * the end of its last block count as data when that block holds data (in a
 * file of the whole object they would: it goes on past that block). So a hole
 * found at the segment file's end is moved to that block's end.
 * \param[out] res  Segment offset found; for SEEK_HOLE, OSS_SEG_SIZE when the
 *                  segment has no hole after \a from.
 * \return 0, -ENXIO (SEEK_DATA: no data after \a from here), -ENOENT (no such
 *         segment), or -errno.
 */
static int obj_seg_seek(const struct oss_obj *ob, uint64_t seg, uint64_t from, bool hole,
			uint64_t *res)
{
	struct stat st;
	int fd;

	int rc = oss_obj_seg_open(ob, seg, O_RDONLY, &fd);
	if (rc)
		return rc;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	uint64_t size = (uint64_t)st.st_size;
	uint64_t bs = st.st_blksize > 0 ? (uint64_t)st.st_blksize : 4096;
	uint64_t tail = size - size % bs; /* start of the partial last block, or size */
	uint64_t eof = size;              /* end of the data, rounded as a local file's */
	if (tail < size) {
		off_t d = lseek(fd, (off_t)tail, SEEK_DATA);
		if (d < 0 && errno != ENXIO) {
			rc = -errno;
			goto out_close;
		}
		if (d >= 0 && (uint64_t)d < size)
			eof = WEIR_MIN(tail + bs, OSS_SEG_SIZE);
	}
	if (from >= eof) {
		/* past the data: no data here, and a hole right at from */
		rc = hole ? 0 : -ENXIO;
		*res = from;
		goto out_close;
	}
	if (from >= size) {
		/* in the data block past the file's end */
		*res = hole ? eof : from;
		goto out_close;
	}
	off_t r = lseek(fd, (off_t)from, hole ? SEEK_HOLE : SEEK_DATA);
	if (r < 0) {
		rc = -errno;
		goto out_close;
	}
	*res = hole && (uint64_t)r == size ? eof : (uint64_t)r;
out_close:
	close(fd);
	return rc;
}

static bool obj_seg_in(const uint64_t *segs, size_t nr, uint64_t seg)
{
	return bsearch(&seg, segs, nr, sizeof(*segs), obj_seg_cmp) != NULL;
}

int oss_obj_seek(const struct oss_obj *ob, uint64_t off, bool hole, uint64_t *res,
		 struct oss_obj_attr *oa)
{
	uint64_t *segs, r;
	size_t nr;

	int rc = obj_getattr_segs(ob, oa, &segs, &nr);
	if (rc)
		return rc;
	if (!oa->oa_exists) {
		rc = -ENXIO;
		goto out_free;
	}
	if (!hole) {
		/* the first data of segment 0, then of each later segment */
		for (size_t i = 0; i <= nr; i++) {
			uint64_t seg = i ? segs[i - 1] : 0;
			if (seg < oss_seg_of(off))
				continue;
			uint64_t from = seg == oss_seg_of(off) ? oss_seg_off(off) : 0;
			rc = obj_seg_seek(ob, seg, from, false, &r);
			if (rc == -ENXIO || rc == -ENOENT)
				continue;
			if (!rc)
				*res = (seg << OSS_SEG_SHIFT) + r;
			goto out_free;
		}
		rc = -ENXIO;
		goto out_free;
	}
	/* SEEK_HOLE: walk the segments from off until one has a hole (or is missing) */
	uint64_t pos = off;
	rc = 0;
	for (;;) {
		uint64_t seg = oss_seg_of(pos);
		if (seg && !obj_seg_in(segs, nr, seg))
			break; /* a missing segment is a hole */
		rc = obj_seg_seek(ob, seg, oss_seg_off(pos), true, &r);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc)
			goto out_free;
		if (r < OSS_SEG_SIZE) {
			pos = (seg << OSS_SEG_SHIFT) + r;
			break;
		}
		pos = (seg + 1) << OSS_SEG_SHIFT; /* no hole in this one: go on in the next */
		if (seg == OSS_SEG_MAX)
			break;
	}
	*res = WEIR_MIN(pos, (uint64_t)INT64_MAX);
out_free:
	free(segs);
	return rc;
}

int oss_ost_statfs(const struct oss_ost *ot, struct oss_statfs *sf)
{
	struct statvfs vs;

	if (fstatvfs(ot->ot_dirfd, &vs) < 0)
		return -errno;
	sf->sf_total_bytes = (uint64_t)vs.f_blocks * vs.f_frsize;
	sf->sf_free_bytes = (uint64_t)vs.f_bfree * vs.f_frsize;
	sf->sf_avail_bytes = (uint64_t)vs.f_bavail * vs.f_frsize;
	sf->sf_files = vs.f_files;
	sf->sf_files_free = vs.f_ffree;
	struct stat st;
	sf->sf_fs_id = fstat(ot->ot_dirfd, &st) == 0 ? (uint64_t)st.st_dev + 1 : 0;
	return 0;
}

/* Path of a file inside the OST directory. */
static int ost_path(const struct oss_ost *ot, const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", ot->ot_dir, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Strip trailing white space in place; \return the new length. */
static size_t str_chomp(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return n;
}

static int ost_uuid_load(struct oss_ost *ot)
{
	char path[PATH_MAX];
	char buf[128];
	uint8_t raw[16];
	int rc = ost_path(ot, "ost.uuid", path, sizeof(path));
	if (rc)
		return rc;

	ssize_t n = weir_file_read_small(path, buf, sizeof(buf));
	if (n >= 0) {
		size_t len = str_chomp(buf);
		bool ok = len == OSS_UUID_HEX;
		for (size_t i = 0; ok && i < len; i++)
			ok = isxdigit((unsigned char)buf[i]) && !isupper((unsigned char)buf[i]);
		if (!ok) {
			WEIR_LOG_ERROR("dir=%s file=%s: corrupt OST UUID (want %d lowercase hex "
				       "digits)", ot->ot_dir, path, OSS_UUID_HEX);
			return -EIO;
		}
		memcpy(ot->ot_uuid, buf, OSS_UUID_HEX + 1);
		return 0;
	}
	if (n != -ENOENT) {
		char rcs[96];
		WEIR_LOG_ERROR("dir=%s file=%s rc=%s: cannot read OST UUID", ot->ot_dir, path,
			       weir_rc_str((int)n, rcs, sizeof(rcs)));
		return (int)n;
	}
	/* first start: a new OST */
	for (size_t got = 0; got < sizeof(raw);) {
		ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(ot->ot_uuid + 2 * i, 3, "%02x", raw[i]);
	snprintf(buf, sizeof(buf), "%s\n", ot->ot_uuid);
	rc = weir_file_write_atomic(path, buf, strlen(buf));
	if (rc) {
		char rcs[96];
		WEIR_LOG_ERROR("dir=%s file=%s rc=%s: cannot write OST UUID", ot->ot_dir, path,
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		return rc;
	}
	WEIR_LOG_NOTICE("dir=%s uuid=%s: new OST formatted", ot->ot_dir, ot->ot_uuid);
	return 0;
}

/* Load DIR/ost.secret, making it when missing (a new OST, or one formatted before secrets). */
static int ost_secret_load(struct oss_ost *ot)
{
	char path[PATH_MAX], buf[160];
	int rc = ost_path(ot, "ost.secret", path, sizeof(path));
	if (rc)
		return rc;
	ssize_t n = weir_file_read_small(path, buf, sizeof(buf));
	if (n >= 0) {
		size_t len = str_chomp(buf);
		bool ok = len == 2 * OSS_SECRET_LEN;
		for (size_t i = 0; ok && i < OSS_SECRET_LEN; i++) {
			unsigned v = 0;
			ok = isxdigit((unsigned char)buf[2 * i]) &&
			     isxdigit((unsigned char)buf[2 * i + 1]) &&
			     sscanf(buf + 2 * i, "%2x", &v) == 1;
			ot->ot_secret[i] = (uint8_t)v;
		}
		explicit_bzero(buf, sizeof(buf));
		if (!ok) {
			WEIR_LOG_ERROR("dir=%s file=%s: corrupt OST secret (want %d hex digits)",
				       ot->ot_dir, path, 2 * OSS_SECRET_LEN);
			return -EIO;
		}
		struct stat st;
		if (fstatat(ot->ot_dirfd, "ost.secret", &st, 0) == 0 && (st.st_mode & 077))
			WEIR_LOG_WARN("dir=%s file=%s mode=%04o: the OST secret is readable by "
				      "others; whoever reads it can register as this OST when it "
				      "is down (chmod 600)", ot->ot_dir, path,
				      (unsigned)(st.st_mode & 07777));
		return 0;
	}
	if (n != -ENOENT) {
		char rcs[96];
		WEIR_LOG_ERROR("dir=%s file=%s rc=%s: cannot read the OST secret", ot->ot_dir, path,
			       weir_rc_str((int)n, rcs, sizeof(rcs)));
		return (int)n;
	}
	if (weir_random_bytes(ot->ot_secret, OSS_SECRET_LEN))
		return -EIO;
	for (int i = 0; i < OSS_SECRET_LEN; i++)
		snprintf(buf + 2 * i, 3, "%02x", ot->ot_secret[i]);
	buf[2 * OSS_SECRET_LEN] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
	} else {
		if (write(fd, buf, 2 * OSS_SECRET_LEN + 1) != 2 * OSS_SECRET_LEN + 1 || fsync(fd))
			rc = -EIO;
		close(fd);
		if (!rc && fsync(ot->ot_dirfd))
			rc = -errno;
	}
	explicit_bzero(buf, sizeof(buf));
	if (rc) {
		char rcs[96];
		WEIR_LOG_ERROR("dir=%s file=%s rc=%s: cannot write the OST secret", ot->ot_dir, path,
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		unlink(path);
		return rc;
	}
	WEIR_LOG_NOTICE("dir=%s uuid=%s: OST secret made (the MDS binds the OST to it at its next"
			" registration)", ot->ot_dir, ot->ot_uuid);
	return 0;
}

/* Lock DIR/ost.lock for this process's life: one weir-oss per OST directory. */
static int ost_lock(struct oss_ost *ot)
{
	char path[PATH_MAX], buf[32];
	int rc = ost_path(ot, "ost.lock", path, sizeof(path));
	if (rc)
		return rc;
	ot->ot_lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (ot->ot_lockfd < 0) {
		rc = -errno;
		WEIR_LOG_ERROR("dir=%s file=%s: cannot open the lock file: %s", ot->ot_dir, path,
			       strerror(errno));
		return rc;
	}
	if (flock(ot->ot_lockfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		ssize_t n = pread(ot->ot_lockfd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		str_chomp(buf);
		char self[16];
		snprintf(self, sizeof(self), "%d", (int)getpid());
		if (rc == -EBUSY && !strcmp(buf, self)) {
			/* this process locked it: the same directory named twice */
			WEIR_LOG_ERROR("dir=%s: this OST directory is given twice (--ost); one "
				       "--ost per OST (-EEXIST)", ot->ot_dir);
			rc = -EEXIST;
		} else if (rc == -EBUSY)
			WEIR_LOG_ERROR("dir=%s: another weir-oss (pid %s) serves this OST directory;"
				       " one process per OST (-EBUSY)",
				       ot->ot_dir, buf[0] ? buf : "?");
		else
			WEIR_LOG_ERROR("dir=%s file=%s: cannot lock: %s", ot->ot_dir, path,
				       strerror(-rc));
		return rc;
	}
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(ot->ot_lockfd, 0) || pwrite(ot->ot_lockfd, buf, (size_t)n, 0) != n)
		WEIR_LOG_WARN("dir=%s: cannot write the pid into ost.lock (the lock holds)",
			      ot->ot_dir);
	return 0;
}

static int ost_index_load(struct oss_ost *ot)
{
	char path[PATH_MAX];
	char buf[64];
	int rc = ost_path(ot, "ost.index", path, sizeof(path));
	if (rc)
		return rc;

	atomic_store(&ot->ot_index, -1);
	ssize_t n = weir_file_read_small(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return 0;
	if (n < 0) {
		char rcs[96];
		WEIR_LOG_ERROR("dir=%s file=%s rc=%s: cannot read OST index", ot->ot_dir, path,
			       weir_rc_str((int)n, rcs, sizeof(rcs)));
		return (int)n;
	}
	str_chomp(buf);
	char *end;
	errno = 0;
	unsigned long v = strtoul(buf, &end, 10);
	if (!buf[0] || *end || errno || !isdigit((unsigned char)buf[0]) ||
	    v > OSS_OST_INDEX_MAX) {
		WEIR_LOG_ERROR("dir=%s file=%s: corrupt OST index \"%.20s\"", ot->ot_dir, path,
			       buf);
		return -EIO;
	}
	atomic_store(&ot->ot_index, (int32_t)v);
	return 0;
}

int oss_ost_index_store(struct oss_ost *ot, uint32_t index)
{
	char path[PATH_MAX];
	char buf[32];
	int rc = ost_path(ot, "ost.index", path, sizeof(path));
	if (rc)
		return rc;
	snprintf(buf, sizeof(buf), "%u\n", index);
	return weir_file_write_atomic(path, buf, strlen(buf));
}

static int ost_hash_dirs_create(struct oss_ost *ot)
{
	char sub[8];

	if (mkdirat(ot->ot_dirfd, "O", 0755) < 0 && errno != EEXIST)
		return -errno;
	for (unsigned i = 0; i < OSS_HASH_DIRS; i++) {
		snprintf(sub, sizeof(sub), "O/%02x", i);
		if (mkdirat(ot->ot_dirfd, sub, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int oss_ost_init(struct oss_ost *ot, const char *dir)
{
	struct stat st;
	char rcs[96];
	int rc;

	memset(ot, 0, sizeof(*ot));
	ot->ot_dirfd = -1;
	ot->ot_lockfd = -1;
	atomic_init(&ot->ot_index, -1);
	ot->ot_dir = strdup(dir);
	if (!ot->ot_dir)
		return -ENOMEM;

	if (stat(dir, &st) < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			rc = weir_mkdir_p(dir, 0755);
		if (!rc && stat(dir, &st) < 0)
			rc = -errno;
		if (rc) {
			WEIR_LOG_ERROR("dir=%s rc=%s: cannot create the OST directory", dir,
				       weir_rc_str(rc, rcs, sizeof(rcs)));
			return rc;
		}
	}
	if (!S_ISDIR(st.st_mode)) {
		WEIR_LOG_ERROR("dir=%s: OST path is not a directory", dir);
		return -ENOTDIR;
	}
	if (access(dir, W_OK | X_OK) < 0) {
		int err = errno;
		WEIR_LOG_ERROR("dir=%s rc=%s: OST directory is not writable", dir,
			       weir_rc_str(-err, rcs, sizeof(rcs)));
		return err == EROFS ? -EROFS : -EACCES;
	}
	ot->ot_dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ot->ot_dirfd < 0) {
		rc = -errno;
		WEIR_LOG_ERROR("dir=%s rc=%s: cannot open the OST directory", dir,
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		return rc;
	}
	rc = ost_lock(ot);
	if (rc)
		return rc;
	rc = ost_uuid_load(ot);
	if (!rc)
		rc = ost_secret_load(ot);
	if (rc)
		return rc;
	rc = ost_hash_dirs_create(ot);
	if (rc) {
		WEIR_LOG_ERROR("dir=%s rc=%s: cannot create the object directories O/00..ff", dir,
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		return rc;
	}
	return ost_index_load(ot);
}

void oss_ost_fini(struct oss_ost *ot)
{
	if (ot->ot_dirfd >= 0)
		close(ot->ot_dirfd);
	ot->ot_dirfd = -1;
	if (ot->ot_lockfd >= 0)
		close(ot->ot_lockfd); /* and the lock goes with it */
	ot->ot_lockfd = -1;
	explicit_bzero(ot->ot_secret, sizeof(ot->ot_secret));
	free(ot->ot_dir);
	ot->ot_dir = NULL;
}

struct oss_ost *oss_ost_find(struct oss *oss, uint32_t index)
{
	if (index > OSS_OST_INDEX_MAX)
		return NULL;
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		if (atomic_load(&oss->o_osts[i].ot_index) == (int32_t)index)
			return &oss->o_osts[i];
	return NULL;
}
