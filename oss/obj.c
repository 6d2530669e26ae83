/*
 * oss/obj.c - the OST directory format, object naming, and the plain
 * syscalls on objects (open, stat, ftruncate, unlink, statvfs). Data I/O
 * (read, write, fsync) never happens here: it goes through oss/uring.c.
 * These metadata syscalls are made directly on the loop thread; they are
 * short on a local filesystem and io_uring offers no gain for them here.
 *
 * Disk format, version 1 (an OST is a directory DIR on a local filesystem):
 *   DIR/ost.uuid    32 lowercase hex digits + "\n": 128 random bits from
 *                   getrandom(2), written once at first start.
 *   DIR/ost.index   decimal OST index + "\n", as assigned by the MDS;
 *                   absent until the first registration.
 *   DIR/O/00..ff    256 hash subdirectories.
 *   DIR/O/<hh>/<seq>-<oid>-<stripe>
 *                   one file per object: seq and oid in lowercase hex without
 *                   0x, stripe in decimal; hh = two hex digits of
 *                   (oid ^ seq ^ stripe * 0x9e3779b9) & 0xff (64-bit unsigned
 *                   arithmetic). The object's size is the file's size;
 *                   unwritten ranges are holes and read as zeros.
 * Small files are replaced atomically (tmp + fsync + rename).
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>

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

int oss_obj_open(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe, int flags,
		 int *fd)
{
	char name[OSS_OBJ_NAME_MAX];

	oss_obj_name(fid, stripe, name);
	int f = openat(ot->ot_dirfd, name, flags | O_CLOEXEC, 0644);
	if (f < 0 && errno == ENOENT && (flags & O_CREAT)) {
		/* the hash subdirectory went missing: recreate it once */
		char sub[8];
		snprintf(sub, sizeof(sub), "O/%02x", obj_hash(fid, stripe));
		WEIR_LOG_WARN("ost=%d dir=%s sub=%s: hash directory missing; recreating",
			      atomic_load(&ot->ot_index), ot->ot_dir, sub);
		if (mkdirat(ot->ot_dirfd, "O", 0755) < 0 && errno != EEXIST)
			return -errno;
		if (mkdirat(ot->ot_dirfd, sub, 0755) < 0 && errno != EEXIST)
			return -errno;
		f = openat(ot->ot_dirfd, name, flags | O_CLOEXEC, 0644);
	}
	if (f < 0)
		return -errno;
	*fd = f;
	return 0;
}

int oss_obj_stat(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe,
		 struct stat *st)
{
	char name[OSS_OBJ_NAME_MAX];

	oss_obj_name(fid, stripe, name);
	if (fstatat(ot->ot_dirfd, name, st, 0) < 0)
		return -errno;
	return 0;
}

int oss_obj_unlink(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe)
{
	char name[OSS_OBJ_NAME_MAX];

	oss_obj_name(fid, stripe, name);
	if (unlinkat(ot->ot_dirfd, name, 0) < 0)
		return -errno;
	return 0;
}

int oss_fd_stat(int fd, struct stat *st)
{
	return fstat(fd, st) < 0 ? -errno : 0;
}

int oss_fd_truncate(int fd, uint64_t size)
{
	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	return ftruncate(fd, (off_t)size) < 0 ? -errno : 0;
}

int64_t oss_stat_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
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
	rc = ost_uuid_load(ot);
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
