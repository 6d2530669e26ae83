/*
 * client/preload/pl_ns.c - the namespace: mkdir(at), rmdir, unlink(at),
 * remove, rename(at)(2), link(at), symlink(at), readlink(at), mknod(at),
 * mkfifo(at), and the extended attribute calls.
 *
 * Two names on different sides (one Weir, one local) of rename or link are
 * EXDEV, as between two filesystems; mv and cp then copy.
 *
 * Absolute symlink targets: Weir resolves them from its own root, while the
 * application names Weir files with the prefix. So a target under the
 * prefix is stored without it ("/weir/a/b" is stored as "/a/b", which Weir
 * resolves itself) and read back with it; a target outside the prefix
 * ("/usr/bin/python3") is stored with one more leading slash ("//usr/...",
 * the same path to the kernel) and read back exactly as it was given. So
 * readlink() returns what symlink() was given, and links into Weir work.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev);
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev);

/*
 * Resolve \a path for a namespace call. \return PL_WEIR (\a wpath set),
 * PL_LOCAL, PL_LOCAL_ABS (\a wpath = absolute local path) or -errno.
 */
static int pl_ns_resolve(int dirfd, const char *path, char *wpath)
{
	if (!pl_active())
		return PL_LOCAL;
	return pl_resolve(dirfd, path, false, wpath);
}

static int pl_fs(weir_fs_t **fs)
{
	return pl_fs_get(fs);
}

/* ------------------------------------------------------------ mkdir, rmdir, unlink */

int pl_mkdir_weir(const char *wpath, mode_t mode)
{
	weir_fs_t *fs;
	int rc = pl_fs(&fs);

	return rc ? rc : PL_W(weir_mkdir(fs, wpath, mode & ~pl_umask_get() & 07777));
}

/* A call through directory \a dir's handle (mkdirat, unlinkat): \return 0 or -errno. */
static int pl_ns_at(struct pl_file *dir, const char *rel, int op, mode_t mode, int flags)
{
	weir_file_t *dh;
	int rc = pl_file_handle(dir, &dh);

	if (rc)
		return rc;
	if (op == 0)
		rc = PL_W(weir_mkdirat(NULL, dh, rel, mode & ~pl_umask_get() & 07777));
	else
		rc = PL_W(weir_unlinkat(NULL, dh, rel, flags));
	pl_file_unhandle(dir);
	return rc;
}

PL_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	struct pl_file *dir = pl_at_dir(dirfd, path, wpath);

	if (dir) {
		int rc = pl_ns_at(dir, path, 0, mode, 0);
		pl_file_put(dir);
		return pl_ret(rc, saved);
	}
	int w = pl_ns_resolve(dirfd, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(mkdirat)(dirfd, path, mode);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(mkdir)(wpath, mode);
	return pl_ret(w < 0 ? w : pl_mkdir_weir(wpath, mode), saved);
}

PL_EXPORT int mkdir(const char *path, mode_t mode)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w = pl_ns_resolve(AT_FDCWD, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(mkdir)(path, mode);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(mkdir)(wpath, mode);
	return pl_ret(w < 0 ? w : pl_mkdir_weir(wpath, mode), saved);
}

/* unlink (\a flags 0) or rmdir (AT_REMOVEDIR) of Weir path \a wpath. */
static int pl_unlink_weir(const char *wpath, int flags)
{
	weir_fs_t *fs;
	int rc = pl_fs(&fs);

	if (rc)
		return rc;
	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	return flags ? PL_W(weir_rmdir(fs, wpath)) : PL_W(weir_unlink(fs, wpath));
}

PL_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	struct pl_file *dir = pl_at_dir(dirfd, path, wpath);

	if (dir) {
		int rc = pl_ns_at(dir, path, 1, 0, flags);
		pl_file_put(dir);
		return pl_ret(rc, saved);
	}
	int w = pl_ns_resolve(dirfd, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(unlinkat)(dirfd, path, flags);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(unlinkat)(AT_FDCWD, wpath, flags);
	return pl_ret(w < 0 ? w : pl_unlink_weir(wpath, flags), saved);
}

PL_EXPORT int unlink(const char *path)
{
	return unlinkat(AT_FDCWD, path, 0);
}

PL_EXPORT int rmdir(const char *path)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w = pl_ns_resolve(AT_FDCWD, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(rmdir)(path);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(rmdir)(wpath);
	return pl_ret(w < 0 ? w : pl_unlink_weir(wpath, AT_REMOVEDIR), saved);
}

PL_EXPORT int remove(const char *path)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w = pl_ns_resolve(AT_FDCWD, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(remove)(path);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(remove)(wpath);
	if (w < 0)
		return pl_ret(w, saved);
	int rc = pl_unlink_weir(wpath, 0);
	if (rc == -EISDIR)
		rc = pl_unlink_weir(wpath, AT_REMOVEDIR);
	return pl_ret(rc, saved);
}

/* ------------------------------------------------------------ rename, link */

/*
 * Resolve both names of a two-path call. \return PL_WEIR (both Weir's),
 * PL_LOCAL (both local: use libc; when either needed rewriting, both
 * absolute paths are in \a wold / \a wnew and \a abs is set), -EXDEV (one of
 * each) or -errno.
 */
static int pl_ns_resolve2(int olddir, const char *oldpath, int newdir, const char *newpath,
			  char *wold, char *wnew, bool *abs)
{
	*abs = false;
	if (!pl_active())
		return PL_LOCAL;
	if (!oldpath[0] || !newpath[0])
		return -ENOENT; /* as the kernel, before looking at either side */
	int a = pl_ns_resolve(olddir, oldpath, wold);
	int b = a < 0 ? a : pl_ns_resolve(newdir, newpath, wnew);

	if (a < 0)
		return a;
	if (b < 0)
		return b;
	if (a == PL_WEIR && b == PL_WEIR)
		return PL_WEIR;
	if (a == PL_WEIR || b == PL_WEIR)
		return -EXDEV;
	if (a == PL_LOCAL_ABS || b == PL_LOCAL_ABS) {
		/* a relative name from a Weir working directory that leads out of Weir */
		if (a == PL_LOCAL && oldpath[0] != '/')
			return -EXDEV; /* cannot name it absolutely here: treat as another fs */
		if (b == PL_LOCAL && newpath[0] != '/')
			return -EXDEV;
		if (a == PL_LOCAL)
			snprintf(wold, PL_PATH_MAX, "%s", oldpath);
		if (b == PL_LOCAL)
			snprintf(wnew, PL_PATH_MAX, "%s", newpath);
		*abs = true;
	}
	return PL_LOCAL;
}

/*
 * renameat2 (\a link false) or linkat through the directory handles of
 * \a od / \a nd (either may be NULL: that name is a Weir path by itself).
 * \return 0, -EXDEV (the other name is local) or -errno.
 */
static int pl_ns2_at(struct pl_file *od, int olddir, const char *oldpath, struct pl_file *nd,
		     int newdir, const char *newpath, char *wold, char *wnew, bool link,
		     unsigned flags)
{
	weir_file_t *oh = NULL, *nh = NULL;
	weir_fs_t *fs;
	int rc = pl_fs(&fs);

	if (!rc && !od) {
		int w = pl_ns_resolve(olddir, oldpath, wold);
		rc = w < 0 ? w : w != PL_WEIR ? -EXDEV : 0;
	}
	if (!rc && !nd) {
		int w = pl_ns_resolve(newdir, newpath, wnew);
		rc = w < 0 ? w : w != PL_WEIR ? -EXDEV : 0;
	}
	if (!rc && od)
		rc = pl_file_handle(od, &oh);
	if (!rc && nd) {
		rc = pl_file_handle(nd, &nh);
		if (rc && od)
			pl_file_unhandle(od);
	}
	if (rc)
		return rc;
	const char *op = od ? oldpath : wold, *np = nd ? newpath : wnew;
	if (link)
		rc = PL_W(weir_linkat(fs, oh, op, nh, np, (int)flags));
	else
		rc = PL_W(weir_renameat(fs, oh, op, nh, np, flags));
	if (od)
		pl_file_unhandle(od);
	if (nd)
		pl_file_unhandle(nd);
	return rc;
}

PL_EXPORT int renameat2(int olddir, const char *oldpath, int newdir, const char *newpath,
			unsigned flags)
{
	char wold[PL_PATH_MAX], wnew[PL_PATH_MAX];
	int saved = errno;
	weir_fs_t *fs;
	bool abs;
	struct pl_file *od = pl_at_dir(olddir, oldpath, wold);
	struct pl_file *nd = pl_at_dir(newdir, newpath, wnew);

	if (od || nd) {
		int rc =
		    pl_ns2_at(od, olddir, oldpath, nd, newdir, newpath, wold, wnew, false, flags);
		pl_file_put(od);
		pl_file_put(nd);
		return pl_ret(rc, saved);
	}
	int w = pl_ns_resolve2(olddir, oldpath, newdir, newpath, wold, wnew, &abs);

	if (w == PL_LOCAL)
		return abs ? PL_REAL(renameat2)(AT_FDCWD, wold, AT_FDCWD, wnew, flags)
			   : PL_REAL(renameat2)(olddir, oldpath, newdir, newpath, flags);
	if (w < 0)
		return pl_ret(w, saved);
	int rc = pl_fs(&fs);
	if (!rc)
		rc = PL_W(weir_rename2(fs, wold, wnew, flags));
	return pl_ret(rc, saved);
}

PL_EXPORT int renameat(int olddir, const char *oldpath, int newdir, const char *newpath)
{
	return renameat2(olddir, oldpath, newdir, newpath, 0);
}

PL_EXPORT int rename(const char *oldpath, const char *newpath)
{
	char wold[PL_PATH_MAX], wnew[PL_PATH_MAX];
	int saved = errno;
	bool abs;
	int w = pl_ns_resolve2(AT_FDCWD, oldpath, AT_FDCWD, newpath, wold, wnew, &abs);

	if (w == PL_LOCAL)
		return abs ? PL_REAL(rename)(wold, wnew) : PL_REAL(rename)(oldpath, newpath);
	if (w < 0)
		return pl_ret(w, saved);
	weir_fs_t *fs;
	int rc = pl_fs(&fs);
	if (!rc)
		rc = PL_W(weir_rename2(fs, wold, wnew, 0));
	return pl_ret(rc, saved);
}

/* linkat(AT_EMPTY_PATH) of an open Weir file: a new name for its FID. */
static int pl_link_fd(int fd, int newdir, const char *newpath)
{
	char wnew[PL_PATH_MAX], parent[PL_PATH_MAX];
	struct pl_file *f;
	weir_fs_t *fs;
	weir_fid_t dir;
	int w, rc;

	w = pl_ns_resolve(newdir, newpath, wnew);
	if (w < 0)
		return w;
	if (w != PL_WEIR)
		return -EXDEV;
	f = pl_fd_get(fd);
	if (!f)
		return -EBADF;
	rc = pl_fs(&fs);
	const char *name = pl_path_split(wnew, parent);
	if (!rc)
		rc = PL_W(weir_path2fid(fs, parent, &dir));
	if (!rc)
		rc = PL_W(weir_fid_link(fs, &f->pf_fid, &dir, name, NULL));
	pl_file_put(f);
	return rc;
}

PL_EXPORT int linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags)
{
	char wold[PL_PATH_MAX], wnew[PL_PATH_MAX];
	int saved = errno;
	weir_fs_t *fs;
	bool abs;

	if (pl_active() && (flags & AT_EMPTY_PATH) && !*oldpath && pl_fd_is_weir(olddir))
		return pl_ret(pl_link_fd(olddir, newdir, newpath), saved);
	if ((flags & AT_EMPTY_PATH) && !*oldpath) /* an open local file */
		return PL_REAL(linkat)(olddir, oldpath, newdir, newpath, flags);
	struct pl_file *od = pl_at_dir(olddir, oldpath, wold);
	struct pl_file *nd = pl_at_dir(newdir, newpath, wnew);
	if (od || nd) {
		int rc = (flags & ~AT_SYMLINK_FOLLOW)
			     ? -EINVAL
			     : pl_ns2_at(od, olddir, oldpath, nd, newdir, newpath, wold, wnew, true,
					 (unsigned)flags);
		pl_file_put(od);
		pl_file_put(nd);
		return pl_ret(rc, saved);
	}
	int w = pl_ns_resolve2(olddir, oldpath, newdir, newpath, wold, wnew, &abs);
	if (w == PL_LOCAL)
		return abs ? PL_REAL(linkat)(AT_FDCWD, wold, AT_FDCWD, wnew, flags)
			   : PL_REAL(linkat)(olddir, oldpath, newdir, newpath, flags);
	if (w < 0)
		return pl_ret(w, saved);
	if (flags & ~AT_SYMLINK_FOLLOW)
		return pl_ret(-EINVAL, saved);
	int rc = pl_fs(&fs);
	if (!rc)
		rc = PL_W(weir_linkat(fs, NULL, wold, NULL, wnew, flags));
	return pl_ret(rc, saved);
}

PL_EXPORT int link(const char *oldpath, const char *newpath)
{
	return linkat(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

/* ------------------------------------------------------------ symlinks */

PL_EXPORT int symlinkat(const char *target, int newdir, const char *linkpath)
{
	char wpath[PL_PATH_MAX], stored[PL_PATH_MAX];
	int saved = errno;
	weir_fs_t *fs;
	int w = pl_ns_resolve(newdir, linkpath, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(symlinkat)(target, newdir, linkpath);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(symlink)(target, wpath);
	if (w < 0)
		return pl_ret(w, saved);
	const char *t = target;
	if (target[0] == '/') {
		if (pl_resolve(AT_FDCWD, target, false, stored) != PL_WEIR &&
		    snprintf(stored, sizeof(stored), "/%s", target) >= (int)sizeof(stored))
			return pl_ret(-ENAMETOOLONG, saved);
		t = stored; /* a Weir path as Weir resolves it, or "//local/path" */
	}
	int rc = pl_fs(&fs);
	if (!rc)
		rc = PL_W(weir_symlink(fs, t, wpath));
	return pl_ret(rc, saved);
}

PL_EXPORT int symlink(const char *target, const char *linkpath)
{
	return symlinkat(target, AT_FDCWD, linkpath);
}

ssize_t pl_readlink_weir(const char *wpath, char *buf, size_t len)
{
	char raw[PL_PATH_MAX], full[2 * PL_PATH_MAX];
	weir_fs_t *fs;
	ssize_t n;
	int rc = pl_fs(&fs);

	if (rc)
		return rc;
	if (!len)
		return -EINVAL;
	n = PL_W(weir_readlink(fs, wpath, raw, sizeof(raw) - 1));
	if (n < 0)
		return n;
	raw[n] = '\0';
	if (raw[0] == '/' && raw[1] == '/')
		snprintf(full, sizeof(full), "%s", raw + 1); /* a local target, as given */
	else if (raw[0] == '/')
		snprintf(full, sizeof(full), "%s%s", pl_conf.pc_prefix,
			 strcmp(raw, "/") ? raw : "");
	else
		snprintf(full, sizeof(full), "%s", raw);
	n = (ssize_t)strlen(full);
	if ((size_t)n > len)
		n = (ssize_t)len;
	memcpy(buf, full, (size_t)n);
	return n;
}

PL_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w;

	if (!pl_active())
		return PL_REAL(readlinkat)(dirfd, path, buf, len);
	w = pl_resolve(dirfd, path, true, wpath);
	if (w == PL_LOCAL)
		return PL_REAL(readlinkat)(dirfd, path, buf, len);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(readlink)(wpath, buf, len);
	if (w < 0)
		return pl_ret_ssize(w, saved);
	return pl_ret_ssize(pl_readlink_weir(wpath, buf, len), saved);
}

PL_EXPORT ssize_t readlink(const char *path, char *buf, size_t len)
{
	return readlinkat(AT_FDCWD, path, buf, len);
}

PL_EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return readlinkat(AT_FDCWD, path, buf, len);
}

PL_EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len,
				   size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return readlinkat(dirfd, path, buf, len);
}

/* ------------------------------------------------------------ special files */

PL_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	weir_fs_t *fs;
	int w = pl_ns_resolve(dirfd, path, wpath);

	if (w == PL_LOCAL)
		return PL_REAL(mknodat)(dirfd, path, mode, dev);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(mknod)(wpath, mode, dev);
	if (w < 0)
		return pl_ret(w, saved);
	int rc = pl_fs(&fs);
	if (!rc)
		rc = PL_W(
		    weir_mknod(fs, wpath, (mode & S_IFMT) | (mode & ~pl_umask_get() & 07777), dev));
	return pl_ret(rc, saved);
}

PL_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
	return mknodat(AT_FDCWD, path, mode, dev);
}

PL_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	return mknodat(dirfd, path, S_IFIFO | (mode & 07777), 0);
}

PL_EXPORT int mkfifo(const char *path, mode_t mode)
{
	return mknodat(AT_FDCWD, path, S_IFIFO | (mode & 07777), 0);
}

PL_EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev)
{
	(void)ver;
	return mknodat(AT_FDCWD, path, mode, dev ? *dev : 0);
}

PL_EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev)
{
	(void)ver;
	return mknodat(dirfd, path, mode, dev ? *dev : 0);
}

/* ------------------------------------------------------------ extended attributes */

enum pl_xop { PL_X_GET, PL_X_SET, PL_X_LIST, PL_X_REMOVE };

struct pl_xattr {
	enum pl_xop px_op;
	const char *px_name;
	void *px_buf; /* get: value out; set: value in; list: names out */
	size_t px_size;
	int px_flags; /* set */
};

static ssize_t pl_xattr_fid(const weir_fid_t *fid, const struct pl_xattr *x)
{
	weir_fs_t *fs;
	int rc = pl_fs(&fs);

	if (rc)
		return rc;
	switch (x->px_op) {
	case PL_X_GET:
		return PL_W(weir_fid_getxattr(fs, fid, x->px_name, x->px_buf, x->px_size));
	case PL_X_SET:
		return PL_W(
		    weir_fid_setxattr(fs, fid, x->px_name, x->px_buf, x->px_size, x->px_flags));
	case PL_X_LIST:
		return PL_W(weir_fid_listxattr(fs, fid, x->px_buf, x->px_size));
	default:
		return PL_W(weir_fid_removexattr(fs, fid, x->px_name));
	}
}

static ssize_t pl_xattr_path(const char *wpath, bool nofollow, const struct pl_xattr *x)
{
	weir_fs_t *fs;
	int rc = pl_fs(&fs);

	if (rc)
		return rc;
	switch (x->px_op) {
	case PL_X_GET:
		return nofollow ? PL_W(weir_lgetxattr(fs, wpath, x->px_name, x->px_buf, x->px_size))
				: PL_W(weir_getxattr(fs, wpath, x->px_name, x->px_buf, x->px_size));
	case PL_X_SET:
		return nofollow ? PL_W(weir_lsetxattr(fs, wpath, x->px_name, x->px_buf, x->px_size,
						      x->px_flags))
				: PL_W(weir_setxattr(fs, wpath, x->px_name, x->px_buf, x->px_size,
						     x->px_flags));
	case PL_X_LIST:
		return nofollow ? PL_W(weir_llistxattr(fs, wpath, x->px_buf, x->px_size))
				: PL_W(weir_listxattr(fs, wpath, x->px_buf, x->px_size));
	default:
		return nofollow ? PL_W(weir_lremovexattr(fs, wpath, x->px_name))
				: PL_W(weir_removexattr(fs, wpath, x->px_name));
	}
}

/*
 * A path xattr call: \return where it goes (PL_LOCAL / PL_LOCAL_ABS: libc,
 * with \a wpath for the latter), and for PL_WEIR (or an error) the result in \a n.
 */
static int pl_xattr_at(const char *path, bool nofollow, const struct pl_xattr *x, char *wpath,
		       ssize_t *n)
{
	int w = pl_ns_resolve(AT_FDCWD, path, wpath);

	*n = w < 0 ? w : 0;
	if (w == PL_WEIR)
		*n = pl_xattr_path(wpath, nofollow, x);
	return w < 0 ? PL_WEIR : w;
}

PL_EXPORT ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_GET, .px_name = name, .px_buf = value, .px_size = size};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, false, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(getxattr)(path, name, value, size);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(getxattr)(wpath, name, value, size);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_GET, .px_name = name, .px_buf = value, .px_size = size};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, true, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(lgetxattr)(path, name, value, size);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(lgetxattr)(wpath, name, value, size);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT int setxattr(const char *path, const char *name, const void *value, size_t size,
		       int flags)
{
	struct pl_xattr x = {.px_op = PL_X_SET,
			     .px_name = name,
			     .px_buf = (void *)value,
			     .px_size = size,
			     .px_flags = flags};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, false, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(setxattr)(path, name, value, size, flags);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(setxattr)(wpath, name, value, size, flags);
	return pl_ret((int)n, saved);
}

PL_EXPORT int lsetxattr(const char *path, const char *name, const void *value, size_t size,
			int flags)
{
	struct pl_xattr x = {.px_op = PL_X_SET,
			     .px_name = name,
			     .px_buf = (void *)value,
			     .px_size = size,
			     .px_flags = flags};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, true, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(lsetxattr)(path, name, value, size, flags);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(lsetxattr)(wpath, name, value, size, flags);
	return pl_ret((int)n, saved);
}

PL_EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_LIST, .px_buf = list, .px_size = size};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, false, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(listxattr)(path, list, size);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(listxattr)(wpath, list, size);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT ssize_t llistxattr(const char *path, char *list, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_LIST, .px_buf = list, .px_size = size};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, true, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(llistxattr)(path, list, size);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(llistxattr)(wpath, list, size);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT int removexattr(const char *path, const char *name)
{
	struct pl_xattr x = {.px_op = PL_X_REMOVE, .px_name = name};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, false, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(removexattr)(path, name);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(removexattr)(wpath, name);
	return pl_ret((int)n, saved);
}

PL_EXPORT int lremovexattr(const char *path, const char *name)
{
	struct pl_xattr x = {.px_op = PL_X_REMOVE, .px_name = name};
	char wpath[PL_PATH_MAX];
	int saved = errno;
	ssize_t n;
	int w = pl_xattr_at(path, true, &x, wpath, &n);

	if (w == PL_LOCAL)
		return PL_REAL(lremovexattr)(path, name);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(lremovexattr)(wpath, name);
	return pl_ret((int)n, saved);
}

/* The f* calls: by the descriptor's FID (any kind of Weir descriptor). */
static ssize_t pl_fxattr(int fd, const struct pl_xattr *x, bool *weir)
{
	struct pl_file *f = pl_fd_get(fd);
	ssize_t n;

	*weir = f != NULL;
	if (!f)
		return 0;
	n = pl_xattr_fid(&f->pf_fid, x);
	pl_file_put(f);
	return n;
}

PL_EXPORT ssize_t fgetxattr(int fd, const char *name, void *value, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_GET, .px_name = name, .px_buf = value, .px_size = size};
	int saved = errno;
	bool weir;
	ssize_t n = pl_fxattr(fd, &x, &weir);

	return weir ? pl_ret_ssize(n, saved) : PL_REAL(fgetxattr)(fd, name, value, size);
}

PL_EXPORT int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
	struct pl_xattr x = {.px_op = PL_X_SET,
			     .px_name = name,
			     .px_buf = (void *)value,
			     .px_size = size,
			     .px_flags = flags};
	int saved = errno;
	bool weir;
	ssize_t n = pl_fxattr(fd, &x, &weir);

	return weir ? pl_ret((int)n, saved) : PL_REAL(fsetxattr)(fd, name, value, size, flags);
}

PL_EXPORT ssize_t flistxattr(int fd, char *list, size_t size)
{
	struct pl_xattr x = {.px_op = PL_X_LIST, .px_buf = list, .px_size = size};
	int saved = errno;
	bool weir;
	ssize_t n = pl_fxattr(fd, &x, &weir);

	return weir ? pl_ret_ssize(n, saved) : PL_REAL(flistxattr)(fd, list, size);
}

PL_EXPORT int fremovexattr(int fd, const char *name)
{
	struct pl_xattr x = {.px_op = PL_X_REMOVE, .px_name = name};
	int saved = errno;
	bool weir;
	ssize_t n = pl_fxattr(fd, &x, &weir);

	return weir ? pl_ret((int)n, saved) : PL_REAL(fremovexattr)(fd, name);
}
