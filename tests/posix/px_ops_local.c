/*
 * tests/posix/px_ops_local.c - the local backend of the POSIX suite: libc
 * calls on a directory of a local filesystem, -1/errno turned into -errno in
 * one place (LOCAL_RC).
 *
 * This is the reference (Linux defines the expected behaviour), and also how
 * the suite will test Weir's FUSE mount and LD_PRELOAD shim: pointed at a
 * path that the mount or the shim serves, the same calls reach Weir (see
 * README.md, PX_SUBJECT_ROOT). Rooted mode: the process has chroot()ed into
 * the root, paths are used as given. Prefix mode (not root, or a shim that
 * only intercepts paths under its prefix): the root is prefixed to each path,
 * so "/.." leaves the tree and PX_ROOTED cases are skipped.
 */
#define _GNU_SOURCE
#include "px_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define LOCAL_MAX_DIRS 256
#define LOCAL_MAX_GROUPS 64

struct local_be {
	char lb_root[4096]; /* "" when rooted */
	bool lb_rooted;
	DIR *lb_dirs[LOCAL_MAX_DIRS];
	gid_t lb_groups[LOCAL_MAX_GROUPS]; /* the process's groups, for po_set_cred(0, 0) */
	int lb_nr_groups;
};

static struct local_be lb;
/* prefixed paths of the two-path calls (apart from lb: the compiler checks overlaps) */
static char lb_path[2][4096 + 8192];

#define LOCAL_RC(expr) ((expr) < 0 ? -errno : 0)

/* The host path of \a path (slot 0 or 1 for two-path calls). */
static const char *lp(const char *path, int slot)
{
	if (lb.lb_rooted || !path[0])
		return path; /* "" stays "" (ENOENT), not the root */
	snprintf(lb_path[slot], sizeof(lb_path[slot]), "%s%s%s", lb.lb_root,
		 path[0] == '/' ? "" : "/", path);
	return lb_path[slot];
}

static int l_open(const struct px_ops *o, const char *path, int flags, mode_t mode)
{
	(void)o;
	int fd = open(lp(path, 0), flags | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

static int l_close(const struct px_ops *o, int fd)
{
	(void)o;
	return LOCAL_RC(close(fd));
}

static ssize_t l_read(const struct px_ops *o, int fd, void *buf, size_t len)
{
	(void)o;
	ssize_t n = read(fd, buf, len);
	return n < 0 ? -errno : n;
}

static ssize_t l_write(const struct px_ops *o, int fd, const void *buf, size_t len)
{
	(void)o;
	ssize_t n = write(fd, buf, len);
	return n < 0 ? -errno : n;
}

static ssize_t l_pread(const struct px_ops *o, int fd, void *buf, size_t len, int64_t off)
{
	(void)o;
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static ssize_t l_pwrite(const struct px_ops *o, int fd, const void *buf, size_t len, int64_t off)
{
	(void)o;
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static int64_t l_lseek(const struct px_ops *o, int fd, int64_t off, int whence)
{
	(void)o;
	off_t r = lseek(fd, (off_t)off, whence);
	return r < 0 ? -errno : (int64_t)r;
}

static int l_fsync(const struct px_ops *o, int fd)
{
	(void)o;
	return LOCAL_RC(fsync(fd));
}

static int l_fdatasync(const struct px_ops *o, int fd)
{
	(void)o;
	return LOCAL_RC(fdatasync(fd));
}

static int l_ftruncate(const struct px_ops *o, int fd, int64_t size)
{
	(void)o;
	return LOCAL_RC(ftruncate(fd, (off_t)size));
}

static int l_truncate(const struct px_ops *o, const char *path, int64_t size)
{
	(void)o;
	return LOCAL_RC(truncate(lp(path, 0), (off_t)size));
}

static int l_fstat(const struct px_ops *o, int fd, struct stat *st)
{
	(void)o;
	return LOCAL_RC(fstat(fd, st));
}

static int l_fallocate(const struct px_ops *o, int fd, int mode, int64_t off, int64_t len)
{
	(void)o;
	return LOCAL_RC(fallocate(fd, mode, (off_t)off, (off_t)len));
}

static int l_openat(const struct px_ops *o, int dirfd, const char *path, int flags, mode_t mode)
{
	(void)o;
	/* an absolute path would leave the tree in prefix mode: make it relative to the root */
	int fd = path[0] == '/' ? open(lp(path, 0), flags | O_CLOEXEC, mode)
				: openat(dirfd, path, flags | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

static int l_stat(const struct px_ops *o, const char *path, struct stat *st)
{
	(void)o;
	return LOCAL_RC(stat(lp(path, 0), st));
}

static int l_lstat(const struct px_ops *o, const char *path, struct stat *st)
{
	(void)o;
	return LOCAL_RC(lstat(lp(path, 0), st));
}

static int l_mkdir(const struct px_ops *o, const char *path, mode_t mode)
{
	(void)o;
	return LOCAL_RC(mkdir(lp(path, 0), mode));
}

static int l_rmdir(const struct px_ops *o, const char *path)
{
	(void)o;
	return LOCAL_RC(rmdir(lp(path, 0)));
}

static int l_unlink(const struct px_ops *o, const char *path)
{
	(void)o;
	return LOCAL_RC(unlink(lp(path, 0)));
}

static int l_rename(const struct px_ops *o, const char *oldpath, const char *newpath)
{
	(void)o;
	return LOCAL_RC(rename(lp(oldpath, 0), lp(newpath, 1)));
}

static int l_rename2(const struct px_ops *o, const char *oldpath, const char *newpath,
		     unsigned flags)
{
	(void)o;
	return LOCAL_RC(renameat2(AT_FDCWD, lp(oldpath, 0), AT_FDCWD, lp(newpath, 1), flags));
}

static int l_link(const struct px_ops *o, const char *oldpath, const char *newpath)
{
	(void)o;
	return LOCAL_RC(link(lp(oldpath, 0), lp(newpath, 1)));
}

static int l_symlink(const struct px_ops *o, const char *target, const char *linkpath)
{
	(void)o;
	return LOCAL_RC(symlink(target, lp(linkpath, 0)));
}

static ssize_t l_readlink(const struct px_ops *o, const char *path, char *buf, size_t len)
{
	(void)o;
	ssize_t n = readlink(lp(path, 0), buf, len);
	return n < 0 ? -errno : n;
}

static int l_mknod(const struct px_ops *o, const char *path, mode_t mode, dev_t dev)
{
	(void)o;
	return LOCAL_RC(mknod(lp(path, 0), mode, dev));
}

static int l_chmod(const struct px_ops *o, const char *path, mode_t mode)
{
	(void)o;
	return LOCAL_RC(chmod(lp(path, 0), mode));
}

static int l_chown(const struct px_ops *o, const char *path, uid_t uid, gid_t gid)
{
	(void)o;
	return LOCAL_RC(chown(lp(path, 0), uid, gid));
}

static int l_utimens(const struct px_ops *o, const char *path, const struct timespec ts[2])
{
	(void)o;
	return LOCAL_RC(utimensat(AT_FDCWD, lp(path, 0), ts, 0));
}

static int l_access(const struct px_ops *o, const char *path, int mode)
{
	(void)o;
	return LOCAL_RC(access(lp(path, 0), mode));
}

static ssize_t l_getxattr(const struct px_ops *o, const char *path, const char *name, void *buf,
			  size_t len)
{
	(void)o;
	ssize_t n = getxattr(lp(path, 0), name, buf, len);
	return n < 0 ? -errno : n;
}

static int l_setxattr(const struct px_ops *o, const char *path, const char *name, const void *val,
		      size_t len, int flags)
{
	(void)o;
	return LOCAL_RC(setxattr(lp(path, 0), name, val, len, flags));
}

static ssize_t l_listxattr(const struct px_ops *o, const char *path, char *buf, size_t len)
{
	(void)o;
	ssize_t n = listxattr(lp(path, 0), buf, len);
	return n < 0 ? -errno : n;
}

static int l_removexattr(const struct px_ops *o, const char *path, const char *name)
{
	(void)o;
	return LOCAL_RC(removexattr(lp(path, 0), name));
}

static int l_opendir(const struct px_ops *o, const char *path)
{
	(void)o;
	int dh;
	for (dh = 0; dh < LOCAL_MAX_DIRS && lb.lb_dirs[dh]; dh++)
		;
	if (dh == LOCAL_MAX_DIRS)
		return -EMFILE;
	DIR *d = opendir(lp(path, 0));
	if (!d)
		return -errno;
	lb.lb_dirs[dh] = d;
	return dh;
}

static DIR *l_dir(int dh)
{
	return dh >= 0 && dh < LOCAL_MAX_DIRS ? lb.lb_dirs[dh] : NULL;
}

static int l_readdir(const struct px_ops *o, int dh, struct px_dirent *ent)
{
	(void)o;
	DIR *d = l_dir(dh);
	if (!d)
		return -EBADF;
	errno = 0;
	struct dirent *de = readdir(d);
	if (!de)
		return errno ? -errno : 0;
	snprintf(ent->pd_name, sizeof(ent->pd_name), "%s", de->d_name);
	ent->pd_type = de->d_type;
	return 1;
}

static int l_closedir(const struct px_ops *o, int dh)
{
	(void)o;
	DIR *d = l_dir(dh);
	if (!d)
		return -EBADF;
	lb.lb_dirs[dh] = NULL;
	return LOCAL_RC(closedir(d));
}

static int64_t l_telldir(const struct px_ops *o, int dh)
{
	(void)o;
	DIR *d = l_dir(dh);
	if (!d)
		return -EBADF;
	long pos = telldir(d);
	return pos < 0 ? -errno : (int64_t)pos;
}

static int l_seekdir(const struct px_ops *o, int dh, int64_t pos)
{
	(void)o;
	DIR *d = l_dir(dh);
	if (!d)
		return -EBADF;
	seekdir(d, (long)pos);
	return 0;
}

static int l_lock(const struct px_ops *o, int fd, enum px_lock_kind kind, int cmd,
		  struct flock *fl)
{
	(void)o;
	switch (kind) {
	case PX_LK_POSIX:
		return LOCAL_RC(fcntl(fd, cmd, fl));
	case PX_LK_OFD:
		cmd = cmd == F_SETLK ? F_OFD_SETLK : cmd == F_SETLKW ? F_OFD_SETLKW : F_OFD_GETLK;
		fl->l_pid = 0;
		return LOCAL_RC(fcntl(fd, cmd, fl));
	case PX_LK_FLOCK: {
		if (cmd == F_GETLK)
			return -EINVAL;
		int op = fl->l_type == F_RDLCK ? LOCK_SH : fl->l_type == F_WRLCK ? LOCK_EX : LOCK_UN;
		if (cmd == F_SETLK)
			op |= LOCK_NB;
		int rc = flock(fd, op);
		if (rc < 0 && errno == EWOULDBLOCK)
			return -EAGAIN;
		return LOCAL_RC(rc);
	}
	}
	return -EINVAL;
}

static int l_statfs(const struct px_ops *o, const char *path, struct statvfs *sv)
{
	(void)o;
	return LOCAL_RC(statvfs(lp(path, 0), sv));
}

static int l_set_cred(const struct px_ops *o, uid_t uid, gid_t gid)
{
	(void)o;
	/* back to root first: the saved uid stayed 0, so this is allowed */
	if (setresuid(0, 0, 0) < 0)
		return -errno;
	if (setresgid(0, 0, 0) < 0)
		return -errno;
	if (uid == 0 && gid == 0)
		return LOCAL_RC(setgroups((size_t)lb.lb_nr_groups, lb.lb_groups));
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, 0) < 0)
		return -errno;
	/* real and effective uid (access(2) checks the real one), saved stays 0 */
	return LOCAL_RC(setresuid(uid, uid, 0));
}

static void l_detach(const struct px_ops *o)
{
	(void)o;
}

static struct px_ops local_ops = {
	.po_name = "local",
	.po_priv = &lb,
	.po_open = l_open,
	.po_close = l_close,
	.po_read = l_read,
	.po_write = l_write,
	.po_pread = l_pread,
	.po_pwrite = l_pwrite,
	.po_lseek = l_lseek,
	.po_fsync = l_fsync,
	.po_fdatasync = l_fdatasync,
	.po_ftruncate = l_ftruncate,
	.po_truncate = l_truncate,
	.po_fstat = l_fstat,
	.po_fallocate = l_fallocate,
	.po_openat = l_openat,
	.po_stat = l_stat,
	.po_lstat = l_lstat,
	.po_mkdir = l_mkdir,
	.po_rmdir = l_rmdir,
	.po_unlink = l_unlink,
	.po_rename = l_rename,
	.po_rename2 = l_rename2,
	.po_link = l_link,
	.po_symlink = l_symlink,
	.po_readlink = l_readlink,
	.po_mknod = l_mknod,
	.po_chmod = l_chmod,
	.po_chown = l_chown,
	.po_utimens = l_utimens,
	.po_access = l_access,
	.po_getxattr = l_getxattr,
	.po_setxattr = l_setxattr,
	.po_listxattr = l_listxattr,
	.po_removexattr = l_removexattr,
	.po_opendir = l_opendir,
	.po_readdir = l_readdir,
	.po_closedir = l_closedir,
	.po_telldir = l_telldir,
	.po_seekdir = l_seekdir,
	.po_lock = l_lock,
	.po_statfs = l_statfs,
	.po_set_cred = NULL,
	.po_stripe_dir = NULL,
	.po_detach = l_detach,
};

const struct px_ops *px_ops_local(const char *root, bool chrooted)
{
	memset(&lb, 0, sizeof(lb));
	lb.lb_rooted = chrooted;
	if (!chrooted)
		snprintf(lb.lb_root, sizeof(lb.lb_root), "%s", root);
	local_ops.po_flags = chrooted ? PX_BE_ROOTED : 0;
	if (geteuid() == 0) {
		int n = getgroups(LOCAL_MAX_GROUPS, lb.lb_groups);
		lb.lb_nr_groups = n < 0 ? 0 : n;
		local_ops.po_set_cred = l_set_cred;
		local_ops.po_flags |= PX_BE_CREDS;
	}
	return &local_ops;
}
