/*
 * client/preload/pl_stat.c - reading attributes: the stat family (stat,
 * lstat, fstat, fstatat and their 64 variants, glibc's __xstat family,
 * statx), access/faccessat/eaccess, statfs/statvfs (and f*, 64),
 * pathconf/fpathconf. (Changing them is pl_attr.c.)
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

/* Not declared by glibc 2.33+ headers; still exported for older binaries. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "x86_64: stat64 is stat");

/* A symlink's st_size is the length readlink() returns (see pl_ns.c on targets). */
static void pl_lnk_size(const char *wpath, struct stat *st)
{
	char buf[PL_PATH_MAX + 64];

	if (!S_ISLNK(st->st_mode))
		return;
	ssize_t n = pl_readlink_weir(wpath, buf, sizeof(buf));
	if (n > 0)
		st->st_size = n;
}

int pl_stat_weir(const char *wpath, bool nofollow, struct stat *st)
{
	char local[PL_PATH_MAX];
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	if (nofollow) {
		rc = PL_W(weir_lstat(fs, wpath, st));
		if (!rc)
			pl_lnk_size(wpath, st);
		return rc;
	}
	rc = PL_W(weir_stat(fs, wpath, st));
	if (rc == -ENOENT && pl_weir_escape(wpath, local))
		rc = PL_REAL(stat)(local, st) ? -errno : 0; /* a symlink to a local file */
	return rc;
}

int pl_access_weir(const char *wpath, int mode, bool eff)
{
	char local[PL_PATH_MAX];
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	rc = PL_W(weir_access(fs, wpath, mode));
	if (rc == -ENOENT && pl_weir_escape(wpath, local))
		rc = (eff ? PL_REAL(eaccess)(local, mode) : PL_REAL(access)(local, mode)) ? -errno
											  : 0;
	return rc;
}

/*
 * fstatat for every variant. \return 1 when the call is not Weir's (the
 * caller uses libc), 0 with \a st filled, or -errno.
 */
static int pl_statat(int dirfd, const char *path, struct stat *st, int flags)
{
	char wpath[PL_PATH_MAX];
	struct pl_file *f;
	int w, rc;

	if (!pl_active())
		return 1;
	if ((flags & AT_EMPTY_PATH) && path && !*path && (f = pl_fd_get(dirfd))) {
		rc = pl_file_stat(f, st);
		pl_file_put(f);
		return rc;
	}
	if ((f = pl_at_dir(dirfd, path, wpath))) {
		/* through the directory's handle: right even if it was renamed */
		weir_file_t *dh;
		rc = flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT)
			 ? -EINVAL
			 : pl_file_handle(f, &dh);
		if (!rc) {
			rc = PL_W(weir_fstatat(NULL, dh, path, st, flags & AT_SYMLINK_NOFOLLOW));
			pl_file_unhandle(f);
			if (!rc)
				pl_lnk_size(wpath, st);
			else if (rc == -ENOENT && !(flags & AT_SYMLINK_NOFOLLOW))
				rc = pl_stat_weir(wpath, false, st); /* a symlink out of Weir? */
		}
		pl_file_put(f);
		return rc;
	}
	w = pl_resolve(dirfd, path, (flags & AT_EMPTY_PATH) != 0, wpath);
	if (w == PL_LOCAL)
		return 1;
	if (w == PL_LOCAL_ABS)
		return PL_REAL(fstatat)(AT_FDCWD, wpath, st, flags & ~AT_EMPTY_PATH) ? -errno : 0;
	if (w < 0)
		return w;
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT))
		return -EINVAL;
	return pl_stat_weir(wpath, (flags & AT_SYMLINK_NOFOLLOW) != 0, st);
}

/* fstat for every variant: 1 = not Weir's. */
static int pl_fstat_fd(int fd, struct stat *st)
{
	struct pl_file *f = pl_fd_get(fd);
	int rc;

	if (!f)
		return 1;
	rc = pl_file_stat(f, st);
	pl_file_put(f);
	return rc;
}

PL_EXPORT int stat(const char *path, struct stat *st)
{
	int saved = errno;
	int rc = pl_statat(AT_FDCWD, path, st, 0);

	return rc == 1 ? PL_REAL(stat)(path, st) : pl_ret(rc, saved);
}

PL_EXPORT int stat64(const char *path, struct stat64 *st)
{
	int saved = errno;
	int rc = pl_statat(AT_FDCWD, path, (struct stat *)st, 0);

	return rc == 1 ? PL_REAL(stat64)(path, st) : pl_ret(rc, saved);
}

PL_EXPORT int lstat(const char *path, struct stat *st)
{
	int saved = errno;
	int rc = pl_statat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);

	return rc == 1 ? PL_REAL(lstat)(path, st) : pl_ret(rc, saved);
}

PL_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	int saved = errno;
	int rc = pl_statat(AT_FDCWD, path, (struct stat *)st, AT_SYMLINK_NOFOLLOW);

	return rc == 1 ? PL_REAL(lstat64)(path, st) : pl_ret(rc, saved);
}

PL_EXPORT int fstat(int fd, struct stat *st)
{
	int saved = errno;
	int rc = pl_fstat_fd(fd, st);

	return rc == 1 ? PL_REAL(fstat)(fd, st) : pl_ret(rc, saved);
}

PL_EXPORT int fstat64(int fd, struct stat64 *st)
{
	int saved = errno;
	int rc = pl_fstat_fd(fd, (struct stat *)st);

	return rc == 1 ? PL_REAL(fstat64)(fd, st) : pl_ret(rc, saved);
}

PL_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	int saved = errno;
	int rc = pl_statat(dirfd, path, st, flags);

	return rc == 1 ? PL_REAL(fstatat)(dirfd, path, st, flags) : pl_ret(rc, saved);
}

PL_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	int saved = errno;
	int rc = pl_statat(dirfd, path, (struct stat *)st, flags);

	return rc == 1 ? PL_REAL(fstatat64)(dirfd, path, st, flags) : pl_ret(rc, saved);
}

/* glibc < 2.33 binaries: ver is _STAT_VER_LINUX (1) on x86_64, struct stat as above. */
PL_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return stat(path, st);
}

PL_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return stat64(path, st);
}

PL_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return lstat(path, st);
}

PL_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return lstat64(path, st);
}

PL_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat(fd, st);
}

PL_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	(void)ver;
	return fstat64(fd, st);
}

PL_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	(void)ver;
	return fstatat(dirfd, path, st, flags);
}

PL_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	(void)ver;
	return fstatat64(dirfd, path, st, flags);
}

static void pl_statx_fill(const struct stat *st, unsigned mask, struct statx *sx)
{
	memset(sx, 0, sizeof(*sx));
	(void)mask; /* everything basic is known; btime is not kept */
	sx->stx_mask = STATX_BASIC_STATS;
	sx->stx_blksize = (uint32_t)st->st_blksize;
	sx->stx_nlink = (uint32_t)st->st_nlink;
	sx->stx_uid = st->st_uid;
	sx->stx_gid = st->st_gid;
	sx->stx_mode = (uint16_t)st->st_mode;
	sx->stx_ino = st->st_ino;
	sx->stx_size = (uint64_t)st->st_size;
	sx->stx_blocks = (uint64_t)st->st_blocks;
	sx->stx_atime.tv_sec = st->st_atim.tv_sec;
	sx->stx_atime.tv_nsec = (uint32_t)st->st_atim.tv_nsec;
	sx->stx_mtime.tv_sec = st->st_mtim.tv_sec;
	sx->stx_mtime.tv_nsec = (uint32_t)st->st_mtim.tv_nsec;
	sx->stx_ctime.tv_sec = st->st_ctim.tv_sec;
	sx->stx_ctime.tv_nsec = (uint32_t)st->st_ctim.tv_nsec;
	sx->stx_rdev_major = major(st->st_rdev);
	sx->stx_rdev_minor = minor(st->st_rdev);
	sx->stx_dev_major = major(st->st_dev);
	sx->stx_dev_minor = minor(st->st_dev);
}

PL_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	int saved = errno;
	struct stat st;
	int rc;

	rc = pl_statat(dirfd, path, &st,
		       flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT));
	if (rc == 1)
		return PL_REAL(statx)(dirfd, path, flags, mask, sx);
	if (!rc)
		pl_statx_fill(&st, mask, sx);
	return pl_ret(rc, saved);
}

/* ------------------------------------------------------------ access */

/* 1 = not Weir's. */
static int pl_accessat(int dirfd, const char *path, int mode, int flags)
{
	char wpath[PL_PATH_MAX];
	int w;

	if (!pl_active())
		return 1;
	w = pl_resolve(dirfd, path, (flags & AT_EMPTY_PATH) != 0, wpath);
	if (w == PL_LOCAL)
		return 1;
	if (w == PL_LOCAL_ABS)
		return PL_REAL(faccessat)(AT_FDCWD, wpath, mode, flags & ~AT_EMPTY_PATH) ? -errno
											 : 0;
	if (w < 0)
		return w;
	if (flags & AT_SYMLINK_NOFOLLOW) {
		/* the link itself: it exists; its own bits are 0777 */
		struct stat st;
		int rc = pl_stat_weir(wpath, true, &st);
		if (rc || S_ISLNK(st.st_mode))
			return rc;
	}
	return pl_access_weir(wpath, mode, (flags & AT_EACCESS) != 0);
}

PL_EXPORT int access(const char *path, int mode)
{
	int saved = errno;
	int rc = pl_accessat(AT_FDCWD, path, mode, 0);

	return rc == 1 ? PL_REAL(access)(path, mode) : pl_ret(rc, saved);
}

PL_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	int saved = errno;
	int rc = pl_accessat(dirfd, path, mode, flags);

	return rc == 1 ? PL_REAL(faccessat)(dirfd, path, mode, flags) : pl_ret(rc, saved);
}

PL_EXPORT int eaccess(const char *path, int mode)
{
	int saved = errno;
	int rc = pl_accessat(AT_FDCWD, path, mode, AT_EACCESS);

	return rc == 1 ? PL_REAL(eaccess)(path, mode) : pl_ret(rc, saved);
}

PL_EXPORT int euidaccess(const char *path, int mode)
{
	int saved = errno;
	int rc = pl_accessat(AT_FDCWD, path, mode, AT_EACCESS);

	return rc == 1 ? PL_REAL(euidaccess)(path, mode) : pl_ret(rc, saved);
}

/* ------------------------------------------------------------ statfs, statvfs, pathconf */

#define ST_VALID_FLAG 0x0020 /* ST_VALID: statfs's f_flags is filled */

static int pl_statvfs_weir(struct statvfs *sv)
{
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	rc = PL_W(weir_statfs(fs, sv));
	if (!rc) {
		sv->f_fsid = PL_ST_DEV;
		sv->f_namemax = NAME_MAX;
	}
	return rc;
}

static int pl_statfs_weir(struct statfs *sf)
{
	struct statvfs sv;
	int rc = pl_statvfs_weir(&sv);

	if (rc)
		return rc;
	memset(sf, 0, sizeof(*sf));
	sf->f_type = PL_STATFS_MAGIC;
	sf->f_bsize = (long)sv.f_bsize;
	sf->f_frsize = (long)sv.f_frsize;
	sf->f_blocks = sv.f_blocks;
	sf->f_bfree = sv.f_bfree;
	sf->f_bavail = sv.f_bavail;
	sf->f_files = sv.f_files;
	sf->f_ffree = sv.f_ffree;
	sf->f_fsid.__val[0] = PL_ST_DEV;
	sf->f_namelen = NAME_MAX;
	sf->f_flags = ST_VALID_FLAG;
	return 0;
}

/* Where a path-only call (statfs, pathconf) goes: PL_LOCAL, PL_LOCAL_ABS, PL_WEIR, -errno. */
static int pl_where_path(const char *path, char *wpath)
{
	if (!pl_active())
		return PL_LOCAL;
	return pl_resolve_path(path, wpath);
}

PL_EXPORT int statfs(const char *path, struct statfs *sf)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w = pl_where_path(path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(statfs)(path, sf);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(statfs)(wpath, sf);
	if (w < 0)
		return pl_ret(w, saved);
	struct stat st;
	int rc = pl_stat_weir(wpath, false, &st);
	return pl_ret(rc ? rc : pl_statfs_weir(sf), saved);
}

PL_EXPORT int statfs64(const char *path, struct statfs64 *sf)
{
	return statfs(path, (struct statfs *)sf);
}

PL_EXPORT int fstatfs(int fd, struct statfs *sf)
{
	int saved = errno;

	if (!pl_fd_is_weir(fd))
		return PL_REAL(fstatfs)(fd, sf);
	return pl_ret(pl_statfs_weir(sf), saved);
}

PL_EXPORT int fstatfs64(int fd, struct statfs64 *sf)
{
	return fstatfs(fd, (struct statfs *)sf);
}

PL_EXPORT int statvfs(const char *path, struct statvfs *sv)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w = pl_where_path(path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(statvfs)(path, sv);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(statvfs)(wpath, sv);
	if (w < 0)
		return pl_ret(w, saved);
	struct stat st;
	int rc = pl_stat_weir(wpath, false, &st);
	return pl_ret(rc ? rc : pl_statvfs_weir(sv), saved);
}

PL_EXPORT int statvfs64(const char *path, struct statvfs64 *sv)
{
	return statvfs(path, (struct statvfs *)sv);
}

PL_EXPORT int fstatvfs(int fd, struct statvfs *sv)
{
	int saved = errno;

	if (!pl_fd_is_weir(fd))
		return PL_REAL(fstatvfs)(fd, sv);
	return pl_ret(pl_statvfs_weir(sv), saved);
}

PL_EXPORT int fstatvfs64(int fd, struct statvfs64 *sv)
{
	return fstatvfs(fd, (struct statvfs *)sv);
}

/* Weir's limits; -2 = not a Weir answer (ask libc about "/"). */
static long pl_pathconf_weir(int name)
{
	switch (name) {
	case _PC_LINK_MAX:
		return 65000;
	case _PC_NAME_MAX:
		return NAME_MAX;
	case _PC_PATH_MAX:
		return PL_PATH_MAX;
	case _PC_FILESIZEBITS:
		return 64;
	case _PC_CHOWN_RESTRICTED:
	case _PC_NO_TRUNC:
	case _PC_2_SYMLINKS:
		return 1;
	case _PC_SYMLINK_MAX:
		return PL_PATH_MAX - 1;
	case _PC_ALLOC_SIZE_MIN:
	case _PC_REC_MIN_XFER_SIZE:
	case _PC_REC_XFER_ALIGN:
		return 4096;
	case _PC_REC_INCR_XFER_SIZE:
	case _PC_REC_MAX_XFER_SIZE:
		return 1 << 20;
	default:
		return -2;
	}
}

PL_EXPORT long pathconf(const char *path, int name)
{
	char wpath[PL_PATH_MAX];
	int w = pl_where_path(path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(pathconf)(path, name);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(pathconf)(wpath, name);
	if (w < 0) {
		errno = -w;
		return -1;
	}
	struct stat st;
	int rc = pl_stat_weir(wpath, false, &st);
	if (rc) {
		errno = -rc;
		return -1;
	}
	long v = pl_pathconf_weir(name);
	return v == -2 ? PL_REAL(pathconf)("/", name) : v;
}

PL_EXPORT long fpathconf(int fd, int name)
{
	if (!pl_fd_is_weir(fd))
		return PL_REAL(fpathconf)(fd, name);
	long v = pl_pathconf_weir(name);
	return v == -2 ? PL_REAL(pathconf)("/", name) : v;
}
