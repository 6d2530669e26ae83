/*
 * client/ns_posix.c - the POSIX namespace calls of libweir beyond the
 * basics of meta.c: lstat and access; chmod, chown, utimens and their f*
 * variants; link, symlink, readlink, mknod; extended attributes; renameat2
 * flags; and the *at calls relative to a directory handle.
 *
 * Each call is one MDS RPC (client/mdc.c) carrying the mount's credentials;
 * the MDS resolves the path (following symlinks as the call says), checks
 * POSIX permissions and returns Linux's errno. What Linux checks before
 * looking at the path (flags, name and value lengths, utimens' nanoseconds)
 * is checked here first, in Linux's order, so errors match a local call.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/util.h"

/* The wire's PathFlag bits. */
#define NP_NOFOLLOW WEIR__PATH_FLAG__PF_NOFOLLOW
#define NP_FOLLOW WEIR__PATH_FLAG__PF_FOLLOW

/*
 * The directory a relative \a path starts from: \a dir's FID (a directory
 * handle), or NULL (the root) for no handle or an absolute path, in \a *at.
 */
static int np_at(weir_file_t *dir, const char *path, const struct weir_fid **at)
{
	*at = NULL;
	if (!dir || (path && path[0] == '/'))
		return 0;
	if (!dir->f_is_dir)
		return -ENOTDIR;
	*at = &dir->f_fid;
	return 0;
}

/* The mount of an *at call: \a fs, else the directory handle's. */
static struct weir_fs *np_fs(weir_fs_t *fs, weir_file_t *dir)
{
	if (fs)
		return fs;
	return dir ? dir->f_fs : NULL;
}

/*
 * The target of a call on an open handle or a path: \a fh's FID, else
 * \a path (\a pflags) on \a *fs; \a *fs becomes the handle's mount.
 */
static int np_target(struct weir_fs **fs, weir_file_t *fh, const char *path, uint32_t pflags,
		     struct wc_mdc_target *t)
{
	memset(t, 0, sizeof(*t));
	if (fh) {
		if (wc_file_stale(fh))
			return -EIO;
		*fs = fh->f_fs;
		t->mt_fid = &fh->f_fid;
		return 0;
	}
	if (!*fs)
		return -EINVAL;
	t->mt_name = path;
	t->mt_pflags = pflags;
	return wc_path_check(path);
}

/* ------------------------------------------------------------ stat, access */

static int np_stat(struct weir_fs *fs, weir_file_t *dir, const char *path, uint32_t pflags,
		   struct stat *st)
{
	const struct weir_fid *at;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !st)
		return -EINVAL;
	rc = np_at(dir, path, &at);
	if (rc)
		return rc;
	rc = wc_mdc_lookup(fs, WC_MDC_PATH(at, path, pflags), &a, &lo);
	return rc ? rc : wc_attr_stat(fs, &a, &lo, st);
}

int weir_lstat(weir_fs_t *fs, const char *path, struct stat *st)
{
	int rc = wc_path_check(path);
	return rc ? rc : np_stat(fs, NULL, path, NP_NOFOLLOW, st);
}

int weir_fstatat(weir_fs_t *fs, weir_file_t *dir, const char *path, struct stat *st, int flags)
{
	fs = np_fs(fs, dir);
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT))
		return -EINVAL;
	if (!path)
		return -EINVAL;
	if (!path[0]) {
		if (!(flags & AT_EMPTY_PATH))
			return -ENOENT;
		if (dir)
			return weir_fstat(dir, st);
	}
	int rc = wc_path_check(path[0] ? path : "/");
	if (rc)
		return rc;
	return np_stat(fs, dir, path[0] ? path : "/",
		       (flags & AT_SYMLINK_NOFOLLOW) ? NP_NOFOLLOW : 0, st);
}

int weir_access(weir_fs_t *fs, const char *path, int mode)
{
	int rc;

	if (!fs)
		return -EINVAL;
	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	return wc_mdc_access(fs, WC_MDC_PATH(NULL, path, 0), mode);
}

/* ------------------------------------------------------------ setattr */

/* SETATTR of \a path (with \a pflags) or, when \a fh is set, of its FID. */
static int np_setattr(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
		      const struct wc_mdc_sattr *sa)
{
	struct wc_mdc_target t;
	struct wc_attr a;
	struct weir_layout lo;
	int rc = np_target(&fs, fh, path, pflags, &t);
	return rc ? rc : wc_mdc_setattr(fs, &t, sa, &a, &lo);
}

static int np_chmod(struct weir_fs *fs, weir_file_t *fh, const char *path, mode_t mode)
{
	struct wc_mdc_sattr sa = { .sa_valid = WEIR__SETATTR_VALID__SA_MODE,
				   .sa_mode = (uint32_t)(mode & 07777) };
	return np_setattr(fs, fh, path, 0, &sa);
}

int weir_chmod(weir_fs_t *fs, const char *path, mode_t mode)
{
	return np_chmod(fs, NULL, path, mode);
}

int weir_fchmod(weir_file_t *fh, mode_t mode)
{
	return fh ? np_chmod(NULL, fh, NULL, mode) : -EINVAL;
}

static int np_chown(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
		    uid_t uid, gid_t gid)
{
	struct wc_mdc_sattr sa = { .sa_valid = WEIR__SETATTR_VALID__SA_CHOWN };
	if (uid != (uid_t)-1) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_UID;
		sa.sa_uid = (uint32_t)uid;
	}
	if (gid != (gid_t)-1) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_GID;
		sa.sa_gid = (uint32_t)gid;
	}
	return np_setattr(fs, fh, path, pflags, &sa);
}

int weir_chown(weir_fs_t *fs, const char *path, uid_t uid, gid_t gid)
{
	return np_chown(fs, NULL, path, 0, uid, gid);
}

int weir_lchown(weir_fs_t *fs, const char *path, uid_t uid, gid_t gid)
{
	return np_chown(fs, NULL, path, NP_NOFOLLOW, uid, gid);
}

int weir_fchown(weir_file_t *fh, uid_t uid, gid_t gid)
{
	return fh ? np_chown(NULL, fh, NULL, 0, uid, gid) : -EINVAL;
}

/* One time of utimensat: \return 0 (and sets the bits / value) or -EINVAL. */
static int np_time(const struct timespec *ts, uint32_t set_bit, uint32_t now_bit,
		   uint32_t *valid, int64_t *ns)
{
	if (ts->tv_nsec == UTIME_OMIT)
		return 0;
	if (ts->tv_nsec == UTIME_NOW) {
		*valid |= now_bit;
		return 0;
	}
	if (ts->tv_nsec < 0 || ts->tv_nsec > 999999999)
		return -EINVAL;
	int64_t v;
	if (__builtin_mul_overflow((int64_t)ts->tv_sec, 1000000000LL, &v) ||
	    __builtin_add_overflow(v, (int64_t)ts->tv_nsec, &v))
		v = ts->tv_sec < 0 ? INT64_MIN : INT64_MAX; /* beyond 2262: saturate */
	*valid |= set_bit;
	*ns = v;
	return 0;
}

static int np_utimens(struct weir_fs *fs, weir_file_t *fh, const char *path,
		      const struct timespec ts[2])
{
	struct wc_mdc_sattr sa = { 0 };
	int rc;

	if (!ts) {
		sa.sa_valid = WEIR__SETATTR_VALID__SA_ATIME_NOW | WEIR__SETATTR_VALID__SA_MTIME_NOW;
	} else {
		/* nothing to do, not even the path is looked at (utimensat(2)) */
		if (ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT)
			return 0;
		rc = np_time(&ts[0], WEIR__SETATTR_VALID__SA_ATIME,
			     WEIR__SETATTR_VALID__SA_ATIME_NOW, &sa.sa_valid, &sa.sa_atime_ns);
		if (!rc)
			rc = np_time(&ts[1], WEIR__SETATTR_VALID__SA_MTIME,
				     WEIR__SETATTR_VALID__SA_MTIME_NOW, &sa.sa_valid,
				     &sa.sa_mtime_ns);
		if (rc)
			return rc;
	}
	return np_setattr(fs, fh, path, 0, &sa);
}

int weir_utimens(weir_fs_t *fs, const char *path, const struct timespec ts[2])
{
	return np_utimens(fs, NULL, path, ts);
}

int weir_futimens(weir_file_t *fh, const struct timespec ts[2])
{
	return fh ? np_utimens(NULL, fh, NULL, ts) : -EINVAL;
}

/* ------------------------------------------------------------ links, nodes */

static int np_link(struct weir_fs *fs, weir_file_t *olddir, const char *oldpath,
		   weir_file_t *newdir, const char *newpath, int flags)
{
	const struct weir_fid *sat, *dat;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs)
		return -EINVAL;
	if (flags & ~AT_SYMLINK_FOLLOW)
		return -EINVAL;
	rc = wc_path_check(oldpath);
	if (!rc)
		rc = wc_path_check(newpath);
	if (!rc)
		rc = np_at(olddir, oldpath, &sat);
	if (!rc)
		rc = np_at(newdir, newpath, &dat);
	if (rc)
		return rc;
	return wc_mdc_link(fs, WC_MDC_PATH(sat, oldpath, (flags & AT_SYMLINK_FOLLOW) ? NP_FOLLOW : 0),
			   WC_MDC_PATH(dat, newpath, 0), &a, &lo);
}

int weir_link(weir_fs_t *fs, const char *oldpath, const char *newpath)
{
	return np_link(fs, NULL, oldpath, NULL, newpath, 0);
}

int weir_linkat(weir_fs_t *fs, weir_file_t *olddir, const char *oldpath, weir_file_t *newdir,
		const char *newpath, int flags)
{
	return np_link(np_fs(fs, olddir ? olddir : newdir), olddir, oldpath, newdir, newpath,
		       flags);
}

int weir_symlink(weir_fs_t *fs, const char *target, const char *linkpath)
{
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !target)
		return -EINVAL;
	size_t tlen = strnlen(target, WC_PATH_MAX + 1);
	if (tlen == 0)
		return -ENOENT;
	if (tlen > WC_PATH_MAX)
		return -ENAMETOOLONG;
	rc = wc_path_check(linkpath);
	if (rc)
		return rc;
	return wc_mdc_symlink(fs, WC_MDC_PATH(NULL, linkpath, 0), target, &a, &lo);
}

ssize_t weir_readlink(weir_fs_t *fs, const char *path, char *buf, size_t len)
{
	int rc;

	if (!fs || !buf)
		return -EINVAL;
	if (len == 0 || len > (size_t)SSIZE_MAX)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	return wc_mdc_readlink(fs, WC_MDC_PATH(NULL, path, NP_NOFOLLOW), buf, len);
}

int weir_mknod(weir_fs_t *fs, const char *path, mode_t mode, dev_t dev)
{
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	return wc_mdc_mknod(fs, WC_MDC_PATH(NULL, path, 0), mode, dev, &a, &lo);
}

/* ------------------------------------------------------------ rename */

static int np_rename(struct weir_fs *fs, weir_file_t *olddir, const char *oldpath,
		     weir_file_t *newdir, const char *newpath, unsigned int flags)
{
	const struct weir_fid *sat, *dat;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(oldpath);
	if (!rc)
		rc = wc_path_check(newpath);
	if (!rc)
		rc = np_at(olddir, oldpath, &sat);
	if (!rc)
		rc = np_at(newdir, newpath, &dat);
	if (rc)
		return rc;
	return wc_mdc_rename(fs, WC_MDC_PATH(sat, oldpath, 0), WC_MDC_PATH(dat, newpath, 0), flags);
}

int weir_rename2(weir_fs_t *fs, const char *oldpath, const char *newpath, unsigned int flags)
{
	return np_rename(fs, NULL, oldpath, NULL, newpath, flags);
}

int weir_renameat(weir_fs_t *fs, weir_file_t *olddir, const char *oldpath, weir_file_t *newdir,
		  const char *newpath, unsigned int flags)
{
	return np_rename(np_fs(fs, olddir ? olddir : newdir), olddir, oldpath, newdir, newpath,
			 flags);
}

/* ------------------------------------------------------------ *at calls */

int weir_openat(weir_fs_t *fs, weir_file_t *dir, const char *path, int flags, mode_t mode,
		weir_file_t **fh)
{
	const struct weir_fid *at;

	fs = np_fs(fs, dir);
	if (!fs || !fh)
		return -EINVAL;
	*fh = NULL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &at);
	if (rc)
		return rc;
	return wc_file_open_at(fs, at, path, flags, mode, fh);
}

int weir_mkdirat(weir_fs_t *fs, weir_file_t *dir, const char *path, mode_t mode)
{
	const struct weir_fid *at;
	struct wc_attr a;
	struct weir_layout lo;

	fs = np_fs(fs, dir);
	if (!fs)
		return -EINVAL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &at);
	if (rc)
		return rc;
	return wc_mdc_mkdir(fs, WC_MDC_PATH(at, path, 0), mode, -1, &a, &lo);
}

int weir_mkdir_mdt(weir_fs_t *fs, const char *path, mode_t mode, int mdt)
{
	struct wc_attr a;
	struct weir_layout lo;
	if (!fs || mdt < -1 || mdt >= WEIR_MDT_MAX)
		return -EINVAL;
	int rc = wc_path_check(path);
	if (rc)
		return rc;
	return wc_mdc_mkdir(fs, WC_MDC_PATH(NULL, path, 0), mode, mdt, &a, &lo);
}

int weir_unlinkat(weir_fs_t *fs, weir_file_t *dir, const char *path, int flags)
{
	const struct weir_fid *at;

	fs = np_fs(fs, dir);
	if (!fs)
		return -EINVAL;
	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &at);
	if (rc)
		return rc;
	return wc_mdc_unlink(fs, WC_MDC_PATH(at, path, 0), (flags & AT_REMOVEDIR) != 0, NULL);
}

/* ------------------------------------------------------------ xattrs */

/* What setxattr(2)/getxattr(2) check before the path: flags, name length. */
static int np_xattr_name(const char *name)
{
	if (!name)
		return -EINVAL;
	size_t nl = strnlen(name, XATTR_NAME_MAX + 1);
	return (nl == 0 || nl > XATTR_NAME_MAX) ? -ERANGE : 0;
}

static int np_setxattr(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
		       const char *name, const void *value, size_t size, int flags)
{
	struct wc_mdc_target t;

	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	int rc = np_xattr_name(name);
	if (rc)
		return rc;
	if (size > XATTR_SIZE_MAX)
		return -E2BIG;
	if (size && !value)
		return -EINVAL;
	rc = np_target(&fs, fh, path, pflags, &t);
	return rc ? rc : wc_mdc_setxattr(fs, &t, name, value, size, (uint32_t)flags);
}

/* GETXATTR or LISTXATTR: the reply's bytes into \a buf, as getxattr(2) sizes it. */
static ssize_t np_getxattr(struct weir_fs *fs, weir_file_t *fh, const char *path,
			   uint32_t pflags, uint16_t op, const char *name, void *buf, size_t size)
{
	struct wc_mdc_target t;
	int rc;

	if (op == WEIR__WIRE_OP__MDS_GETXATTR) {
		rc = np_xattr_name(name);
		if (rc)
			return rc;
	}
	if (size && !buf)
		return -EINVAL;
	rc = np_target(&fs, fh, path, pflags, &t);
	if (rc)
		return rc;
	if (op == WEIR__WIRE_OP__MDS_GETXATTR)
		return wc_mdc_getxattr(fs, &t, name, buf, size);
	return wc_mdc_listxattr(fs, &t, buf, size);
}

static int np_removexattr(struct weir_fs *fs, weir_file_t *fh, const char *path,
			  uint32_t pflags, const char *name)
{
	struct wc_mdc_target t;
	int rc = np_xattr_name(name);
	if (!rc)
		rc = np_target(&fs, fh, path, pflags, &t);
	return rc ? rc : wc_mdc_removexattr(fs, &t, name);
}

int weir_setxattr(weir_fs_t *fs, const char *path, const char *name, const void *value,
		  size_t size, int flags)
{
	return np_setxattr(fs, NULL, path, 0, name, value, size, flags);
}

int weir_lsetxattr(weir_fs_t *fs, const char *path, const char *name, const void *value,
		   size_t size, int flags)
{
	return np_setxattr(fs, NULL, path, NP_NOFOLLOW, name, value, size, flags);
}

int weir_fsetxattr(weir_file_t *fh, const char *name, const void *value, size_t size,
		   int flags)
{
	return fh ? np_setxattr(NULL, fh, NULL, 0, name, value, size, flags) : -EINVAL;
}

ssize_t weir_getxattr(weir_fs_t *fs, const char *path, const char *name, void *value,
		      size_t size)
{
	return np_getxattr(fs, NULL, path, 0, WEIR__WIRE_OP__MDS_GETXATTR, name, value, size);
}

ssize_t weir_lgetxattr(weir_fs_t *fs, const char *path, const char *name, void *value,
		       size_t size)
{
	return np_getxattr(fs, NULL, path, NP_NOFOLLOW, WEIR__WIRE_OP__MDS_GETXATTR, name, value,
			   size);
}

ssize_t weir_fgetxattr(weir_file_t *fh, const char *name, void *value, size_t size)
{
	return fh ? np_getxattr(NULL, fh, NULL, 0, WEIR__WIRE_OP__MDS_GETXATTR, name, value, size)
		  : -EINVAL;
}

ssize_t weir_listxattr(weir_fs_t *fs, const char *path, char *list, size_t size)
{
	return np_getxattr(fs, NULL, path, 0, WEIR__WIRE_OP__MDS_LISTXATTR, NULL, list, size);
}

ssize_t weir_llistxattr(weir_fs_t *fs, const char *path, char *list, size_t size)
{
	return np_getxattr(fs, NULL, path, NP_NOFOLLOW, WEIR__WIRE_OP__MDS_LISTXATTR, NULL, list,
			   size);
}

ssize_t weir_flistxattr(weir_file_t *fh, char *list, size_t size)
{
	return fh ? np_getxattr(NULL, fh, NULL, 0, WEIR__WIRE_OP__MDS_LISTXATTR, NULL, list, size)
		  : -EINVAL;
}

int weir_removexattr(weir_fs_t *fs, const char *path, const char *name)
{
	return np_removexattr(fs, NULL, path, 0, name);
}

int weir_lremovexattr(weir_fs_t *fs, const char *path, const char *name)
{
	return np_removexattr(fs, NULL, path, NP_NOFOLLOW, name);
}

int weir_fremovexattr(weir_file_t *fh, const char *name)
{
	return fh ? np_removexattr(NULL, fh, NULL, 0, name) : -EINVAL;
}
