/*
 * tests/posix/px_ops_libweir.c - the libweir backend of the POSIX suite.
 *
 * Descriptors are indexes into a table of weir_file_t / weir_dir_t handles.
 * The mount is made at the first call in each process (so a case can fork
 * client processes first: each then mounts on its own, as a separate
 * client), one mount per credential (po_set_cred mounts with wmo_uid /
 * wmo_gid, which sends no supplementary groups).
 *
 * Calls that libweir may not have yet: px_have.h (generated from weir.h by
 * px_have.sh) says which weir_* functions the header declares; each is bound
 * only if declared, and only if its type is the one this file calls it with
 * (a _Generic selection gives NULL otherwise, so a signature that differs
 * makes the case skip instead of breaking the build; px_weir_mismatched()
 * names those). An unbound call leaves its vtable entry NULL and the cases
 * that need it report "skipped (needs weir_xxx)".
 */
#define _GNU_SOURCE
#include "px_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <weir/weir.h>

#include "px_have.h"
#include "tests/lib/harness.h"

#define LW_MAX_FILES 1024
#define LW_MAX_DIRS 256
#define LW_MAX_CREDS 8
#define LW_MAX_REMEMBER 16

/* ---- functions that may not exist yet, with the types this file calls them with */
typedef int (*lw_lstat_t)(weir_fs_t *, const char *, struct stat *);
typedef int (*lw_link_t)(weir_fs_t *, const char *, const char *);
typedef int (*lw_symlink_t)(weir_fs_t *, const char *, const char *);
typedef ssize_t (*lw_readlink_t)(weir_fs_t *, const char *, char *, size_t);
typedef int (*lw_mknod_t)(weir_fs_t *, const char *, mode_t, dev_t);
typedef int (*lw_chmod_t)(weir_fs_t *, const char *, mode_t);
typedef int (*lw_chown_t)(weir_fs_t *, const char *, uid_t, gid_t);
typedef int (*lw_utimens_t)(weir_fs_t *, const char *, const struct timespec *);
typedef int (*lw_access_t)(weir_fs_t *, const char *, int);
typedef ssize_t (*lw_getxattr_t)(weir_fs_t *, const char *, const char *, void *, size_t);
typedef int (*lw_setxattr_t)(weir_fs_t *, const char *, const char *, const void *, size_t, int);
typedef ssize_t (*lw_listxattr_t)(weir_fs_t *, const char *, char *, size_t);
typedef int (*lw_removexattr_t)(weir_fs_t *, const char *, const char *);
typedef int (*lw_rename2_t)(weir_fs_t *, const char *, const char *, unsigned int);
typedef int (*lw_openat_t)(weir_fs_t *, weir_file_t *, const char *, int, mode_t, weir_file_t **);
typedef int64_t (*lw_telldir_t)(weir_dir_t *);
typedef void (*lw_seekdir_t)(weir_dir_t *, int64_t);
typedef int (*lw_fallocate_t)(weir_file_t *, int, uint64_t, uint64_t);
typedef int (*lw_fdatasync_t)(weir_file_t *);
typedef int (*lw_fcntl_lock_t)(weir_file_t *, int, struct flock *);
typedef int (*lw_flock_t)(weir_file_t *, int);

/* &name when it has type T, else a NULL T */
#define LW_FN(name, T) _Generic(&(name), T: &(name), default: (T)NULL)

struct lw_fns {
	lw_lstat_t lstat;
	lw_link_t link;
	lw_symlink_t symlink;
	lw_readlink_t readlink;
	lw_mknod_t mknod;
	lw_chmod_t chmod;
	lw_chown_t chown;
	lw_utimens_t utimens;
	lw_access_t access;
	lw_getxattr_t getxattr;
	lw_setxattr_t setxattr;
	lw_listxattr_t listxattr;
	lw_removexattr_t removexattr;
	lw_rename2_t rename2;
	lw_openat_t openat;
	lw_telldir_t telldir;
	lw_seekdir_t seekdir;
	lw_fallocate_t fallocate;
	lw_fdatasync_t fdatasync;
	lw_fcntl_lock_t fcntl_lock;
	lw_flock_t flock;
};

struct lw_mount {
	uid_t lm_uid;
	gid_t lm_gid;
	weir_fs_t *lm_fs;
};

struct lw_remembered {
	bool lr_used;
	weir_fid_t lr_fid;
	uint32_t lr_count;
	uint32_t lr_osts[WEIR_MAX_STRIPES];
};

struct lw_be {
	struct px_weir_env lw_env;
	struct lw_fns lw_fn;
	char lw_mismatched[512];
	struct lw_mount lw_mounts[LW_MAX_CREDS];
	int lw_cur;                            /* index into lw_mounts */
	int lw_mount_rc;                       /* error of the last failed mount */
	weir_file_t *lw_files[LW_MAX_FILES];
	weir_dir_t *lw_dirs[LW_MAX_DIRS];
	struct lw_remembered lw_rem[LW_MAX_REMEMBER];
};

static struct lw_be lw;

/* The mount of the current credentials, made on first use; NULL with lw_mount_rc set. */
static weir_fs_t *lw_fs(void)
{
	struct lw_mount *m = &lw.lw_mounts[lw.lw_cur];
	if (!m->lm_fs) {
		struct weir_mount_opts mo;
		memset(&mo, 0, sizeof(mo));
		mo.wmo_size = sizeof(mo);
		mo.wmo_uid = m->lm_uid;
		mo.wmo_gid = m->lm_gid;
		mo.wmo_client_name = "px";
		lw.lw_mount_rc = weir_mount_with(lw.lw_env.pwe_mds_addr, &mo, &m->lm_fs);
		if (lw.lw_mount_rc)
			return NULL;
	}
	return m->lm_fs;
}

static weir_file_t *lw_file(int fd)
{
	return fd >= 0 && fd < LW_MAX_FILES ? lw.lw_files[fd] : NULL;
}

static int lw_fd_new(weir_file_t *fh)
{
	for (int fd = 0; fd < LW_MAX_FILES; fd++) {
		if (!lw.lw_files[fd]) {
			lw.lw_files[fd] = fh;
			return fd;
		}
	}
	weir_close(fh);
	return -EMFILE;
}

/* ------------------------------------------------------------ files */

static int w_open(const struct px_ops *o, const char *path, int flags, mode_t mode)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, flags, mode, &fh);
	return rc ? rc : lw_fd_new(fh);
}

static int w_close(const struct px_ops *o, int fd)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	lw.lw_files[fd] = NULL;
	return weir_close(fh);
}

static ssize_t w_read(const struct px_ops *o, int fd, void *buf, size_t len)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? weir_read(fh, buf, len) : -EBADF;
}

static ssize_t w_write(const struct px_ops *o, int fd, const void *buf, size_t len)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? weir_write(fh, buf, len) : -EBADF;
}

static ssize_t w_pread(const struct px_ops *o, int fd, void *buf, size_t len, int64_t off)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	if (off < 0)
		return -EINVAL; /* weir_pread takes an unsigned offset */
	return weir_pread(fh, buf, len, (uint64_t)off);
}

static ssize_t w_pwrite(const struct px_ops *o, int fd, const void *buf, size_t len, int64_t off)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	return weir_pwrite(fh, buf, len, (uint64_t)off);
}

static int64_t w_lseek(const struct px_ops *o, int fd, int64_t off, int whence)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? weir_lseek(fh, off, whence) : -EBADF;
}

static int w_fsync(const struct px_ops *o, int fd)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? weir_fsync(fh) : -EBADF;
}

static int w_fdatasync(const struct px_ops *o, int fd)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? lw.lw_fn.fdatasync(fh) : -EBADF;
}

static int w_ftruncate(const struct px_ops *o, int fd, int64_t size)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	if (size < 0)
		return -EINVAL;
	return weir_ftruncate(fh, (uint64_t)size);
}

static int w_truncate(const struct px_ops *o, const char *path, int64_t size)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	if (size < 0)
		return -EINVAL;
	return weir_truncate(fs, path, (uint64_t)size);
}

static int w_fstat(const struct px_ops *o, int fd, struct stat *st)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	return fh ? weir_fstat(fh, st) : -EBADF;
}

static int w_fallocate(const struct px_ops *o, int fd, int mode, int64_t off, int64_t len)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	if (off < 0 || len <= 0)
		return -EINVAL;
	return lw.lw_fn.fallocate(fh, mode, (uint64_t)off, (uint64_t)len);
}

static int w_openat(const struct px_ops *o, int dirfd, const char *path, int flags, mode_t mode)
{
	(void)o;
	weir_file_t *dir = lw_file(dirfd), *fh = NULL;
	if (!dir && path[0] != '/')
		return -EBADF;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	int rc = lw.lw_fn.openat(fs, dir, path, flags, mode, &fh);
	return rc ? rc : lw_fd_new(fh);
}

/* ------------------------------------------------------------ namespace */

static int w_stat(const struct px_ops *o, const char *path, struct stat *st)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_stat(fs, path, st);
}

static int w_lstat(const struct px_ops *o, const char *path, struct stat *st)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.lstat(fs, path, st);
}

static int w_mkdir(const struct px_ops *o, const char *path, mode_t mode)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_mkdir(fs, path, mode);
}

static int w_rmdir(const struct px_ops *o, const char *path)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_rmdir(fs, path);
}

static int w_unlink(const struct px_ops *o, const char *path)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_unlink(fs, path);
}

static int w_rename(const struct px_ops *o, const char *oldpath, const char *newpath)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_rename(fs, oldpath, newpath);
}

static int w_rename2(const struct px_ops *o, const char *oldpath, const char *newpath,
		     unsigned flags)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.rename2(fs, oldpath, newpath, flags);
}

static int w_link(const struct px_ops *o, const char *oldpath, const char *newpath)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.link(fs, oldpath, newpath);
}

static int w_symlink(const struct px_ops *o, const char *target, const char *linkpath)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.symlink(fs, target, linkpath);
}

static ssize_t w_readlink(const struct px_ops *o, const char *path, char *buf, size_t len)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.readlink(fs, path, buf, len);
}

static int w_mknod(const struct px_ops *o, const char *path, mode_t mode, dev_t dev)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.mknod(fs, path, mode, dev);
}

/* ------------------------------------------------------------ attributes */

static int w_chmod(const struct px_ops *o, const char *path, mode_t mode)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.chmod(fs, path, mode);
}

static int w_chown(const struct px_ops *o, const char *path, uid_t uid, gid_t gid)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.chown(fs, path, uid, gid);
}

static int w_utimens(const struct px_ops *o, const char *path, const struct timespec ts[2])
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.utimens(fs, path, ts);
}

static int w_access(const struct px_ops *o, const char *path, int mode)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.access(fs, path, mode);
}

static ssize_t w_getxattr(const struct px_ops *o, const char *path, const char *name, void *buf,
			  size_t len)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.getxattr(fs, path, name, buf, len);
}

static int w_setxattr(const struct px_ops *o, const char *path, const char *name, const void *val,
		      size_t len, int flags)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.setxattr(fs, path, name, val, len, flags);
}

static ssize_t w_listxattr(const struct px_ops *o, const char *path, char *buf, size_t len)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.listxattr(fs, path, buf, len);
}

static int w_removexattr(const struct px_ops *o, const char *path, const char *name)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return lw.lw_fn.removexattr(fs, path, name);
}

/* ------------------------------------------------------------ directories */

static weir_dir_t *lw_dir(int dh)
{
	return dh >= 0 && dh < LW_MAX_DIRS ? lw.lw_dirs[dh] : NULL;
}

static int w_opendir(const struct px_ops *o, const char *path)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	int dh;
	for (dh = 0; dh < LW_MAX_DIRS && lw.lw_dirs[dh]; dh++)
		;
	if (dh == LW_MAX_DIRS)
		return -EMFILE;
	int rc = weir_opendir(fs, path, &lw.lw_dirs[dh]);
	if (rc) {
		lw.lw_dirs[dh] = NULL;
		return rc;
	}
	return dh;
}

static int w_readdir(const struct px_ops *o, int dh, struct px_dirent *ent)
{
	(void)o;
	weir_dir_t *d = lw_dir(dh);
	if (!d)
		return -EBADF;
	struct weir_dirent de;
	int rc = weir_readdir(d, &de);
	if (rc != 1)
		return rc;
	snprintf(ent->pd_name, sizeof(ent->pd_name), "%s", de.d_name);
	ent->pd_type = de.d_type;
	return 1;
}

static int w_closedir(const struct px_ops *o, int dh)
{
	(void)o;
	weir_dir_t *d = lw_dir(dh);
	if (!d)
		return -EBADF;
	lw.lw_dirs[dh] = NULL;
	return weir_closedir(d);
}

static int64_t w_telldir(const struct px_ops *o, int dh)
{
	(void)o;
	weir_dir_t *d = lw_dir(dh);
	return d ? lw.lw_fn.telldir(d) : -EBADF;
}

static int w_seekdir(const struct px_ops *o, int dh, int64_t pos)
{
	(void)o;
	weir_dir_t *d = lw_dir(dh);
	if (!d)
		return -EBADF;
	lw.lw_fn.seekdir(d, pos);
	return 0;
}

/* ------------------------------------------------------------ locks */

static int w_lock(const struct px_ops *o, int fd, enum px_lock_kind kind, int cmd,
		  struct flock *fl)
{
	(void)o;
	weir_file_t *fh = lw_file(fd);
	if (!fh)
		return -EBADF;
	switch (kind) {
	case PX_LK_POSIX:
		return lw.lw_fn.fcntl_lock(fh, cmd, fl);
	case PX_LK_OFD:
		cmd = cmd == F_SETLK ? F_OFD_SETLK : cmd == F_SETLKW ? F_OFD_SETLKW : F_OFD_GETLK;
		fl->l_pid = 0;
		return lw.lw_fn.fcntl_lock(fh, cmd, fl);
	case PX_LK_FLOCK: {
		if (cmd == F_GETLK)
			return -EINVAL;
		int op = fl->l_type == F_RDLCK ? LOCK_SH : fl->l_type == F_WRLCK ? LOCK_EX : LOCK_UN;
		if (cmd == F_SETLK)
			op |= LOCK_NB;
		int rc = lw.lw_fn.flock(fh, op);
		return rc == -EWOULDBLOCK ? -EAGAIN : rc;
	}
	}
	return -EINVAL;
}

/* ------------------------------------------------------------ filesystem */

static int w_statfs(const struct px_ops *o, const char *path, struct statvfs *sv)
{
	(void)o;
	(void)path;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	return weir_statfs(fs, sv);
}

static int w_set_cred(const struct px_ops *o, uid_t uid, gid_t gid)
{
	(void)o;
	int free_slot = -1;
	for (int i = 0; i < LW_MAX_CREDS; i++) {
		struct lw_mount *m = &lw.lw_mounts[i];
		if (i == 0 || m->lm_fs || m->lm_uid || m->lm_gid) {
			if (m->lm_uid == uid && m->lm_gid == gid) {
				lw.lw_cur = i;
				return 0;
			}
		} else if (free_slot < 0) {
			free_slot = i;
		}
	}
	if (free_slot < 0)
		return -ENOSPC;
	lw.lw_mounts[free_slot].lm_uid = uid;
	lw.lw_mounts[free_slot].lm_gid = gid;
	lw.lw_cur = free_slot;
	return 0;
}

static int w_stripe_dir(const struct px_ops *o, const char *path, uint32_t count, uint64_t size)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	struct weir_stripe_opts so;
	memset(&so, 0, sizeof(so));
	so.wso_size = sizeof(so);
	so.wso_stripe_count = count;
	so.wso_stripe_size = size;
	so.wso_stripe_offset = -1;
	return weir_setstripe(fs, path, &so);
}

static void w_detach(const struct px_ops *o)
{
	(void)o;
	/* weir_umount closes whatever is still open */
	memset(lw.lw_files, 0, sizeof(lw.lw_files));
	memset(lw.lw_dirs, 0, sizeof(lw.lw_dirs));
	for (int i = 0; i < LW_MAX_CREDS; i++) {
		weir_umount(lw.lw_mounts[i].lm_fs);
		lw.lw_mounts[i].lm_fs = NULL;
	}
}

/* ------------------------------------------------------------ objects on the OSTs */

int px_weir_objects_remember(const struct px_ops *o, const char *path, int *nr_objs)
{
	(void)o;
	weir_fs_t *fs = lw_fs();
	if (!fs)
		return lw.lw_mount_rc;
	int id;
	for (id = 0; id < LW_MAX_REMEMBER && lw.lw_rem[id].lr_used; id++)
		;
	if (id == LW_MAX_REMEMBER)
		return -ENOSPC;
	struct lw_remembered *r = &lw.lw_rem[id];
	static struct weir_layout_info li;
	int rc = weir_getstripe(fs, path, &li);
	if (rc)
		return rc;
	rc = weir_path2fid(fs, path, &r->lr_fid);
	if (rc)
		return rc;
	r->lr_count = li.wli_stripe_count;
	for (uint32_t i = 0; i < li.wli_stripe_count && i < WEIR_MAX_STRIPES; i++)
		r->lr_osts[i] = li.wli_objs[i].woi_ost;
	r->lr_used = true;
	*nr_objs = (int)r->lr_count;
	return id;
}

int px_weir_objects_existing(const struct px_ops *o, int id)
{
	(void)o;
	if (id < 0 || id >= LW_MAX_REMEMBER || !lw.lw_rem[id].lr_used)
		return -EINVAL;
	const struct lw_remembered *r = &lw.lw_rem[id];
	int n = 0;
	for (uint32_t i = 0; i < r->lr_count; i++) {
		bool exists = false;
		/*
		 * Called in the forked process that runs the case: this harness
		 * call only reads the MDS address from the cluster and opens its
		 * own connections, none of the start/stop state the fork rule of
		 * harness.h protects.
		 */
		int rc = th_ost_obj_getattr(lw.lw_env.pwe_cluster, r->lr_osts[i], r->lr_fid.seq,
					    r->lr_fid.oid, i, &exists, NULL);
		if (rc)
			return rc;
		n += exists;
	}
	return n;
}

int px_weir_objects_gone(const struct px_ops *o, int id, unsigned timeout_ms)
{
	uint64_t deadline = th_now_ms() + timeout_ms;
	int n;
	while ((n = px_weir_objects_existing(o, id)) > 0 && th_now_ms() < deadline)
		th_sleep_ms(100);
	return n;
}

/* ------------------------------------------------------------ the vtable */

static struct px_ops weir_ops = {
	.po_name = "libweir",
	.po_flags = PX_BE_ROOTED | PX_BE_WEIR | PX_BE_CREDS,
	.po_priv = &lw,
	.po_open = w_open,
	.po_close = w_close,
	.po_read = w_read,
	.po_write = w_write,
	.po_pread = w_pread,
	.po_pwrite = w_pwrite,
	.po_lseek = w_lseek,
	.po_fsync = w_fsync,
	.po_ftruncate = w_ftruncate,
	.po_truncate = w_truncate,
	.po_fstat = w_fstat,
	.po_stat = w_stat,
	.po_mkdir = w_mkdir,
	.po_rmdir = w_rmdir,
	.po_unlink = w_unlink,
	.po_rename = w_rename,
	.po_opendir = w_opendir,
	.po_readdir = w_readdir,
	.po_closedir = w_closedir,
	.po_statfs = w_statfs,
	.po_set_cred = w_set_cred,
	.po_stripe_dir = w_stripe_dir,
	.po_detach = w_detach,
};

static __attribute__((unused)) void lw_mismatch(const char *name)
{
	size_t used = strlen(lw.lw_mismatched);
	snprintf(lw.lw_mismatched + used, sizeof(lw.lw_mismatched) - used, "%s%s",
		 used ? " " : "", name);
}

/* Bind lw_fn.FIELD to weir_FIELD when weir.h declares it with type lw_FIELD_t. */
#define LW_BIND(field)                                                          \
	do {                                                                    \
		lw.lw_fn.field = LW_FN(weir_##field, lw_##field##_t);           \
		if (!lw.lw_fn.field)                                            \
			lw_mismatch("weir_" #field);                            \
	} while (0)

static void lw_bind_all(void)
{
#ifdef PX_HAVE_weir_lstat
	LW_BIND(lstat);
#endif
#ifdef PX_HAVE_weir_link
	LW_BIND(link);
#endif
#ifdef PX_HAVE_weir_symlink
	LW_BIND(symlink);
#endif
#ifdef PX_HAVE_weir_readlink
	LW_BIND(readlink);
#endif
#ifdef PX_HAVE_weir_mknod
	LW_BIND(mknod);
#endif
#ifdef PX_HAVE_weir_chmod
	LW_BIND(chmod);
#endif
#ifdef PX_HAVE_weir_chown
	LW_BIND(chown);
#endif
#ifdef PX_HAVE_weir_utimens
	LW_BIND(utimens);
#endif
#ifdef PX_HAVE_weir_access
	LW_BIND(access);
#endif
#ifdef PX_HAVE_weir_getxattr
	LW_BIND(getxattr);
#endif
#ifdef PX_HAVE_weir_setxattr
	LW_BIND(setxattr);
#endif
#ifdef PX_HAVE_weir_listxattr
	LW_BIND(listxattr);
#endif
#ifdef PX_HAVE_weir_removexattr
	LW_BIND(removexattr);
#endif
#ifdef PX_HAVE_weir_rename2
	LW_BIND(rename2);
#endif
#ifdef PX_HAVE_weir_openat
	LW_BIND(openat);
#endif
#ifdef PX_HAVE_weir_telldir
	LW_BIND(telldir);
#endif
#ifdef PX_HAVE_weir_seekdir
	LW_BIND(seekdir);
#endif
#ifdef PX_HAVE_weir_fallocate
	LW_BIND(fallocate);
#endif
#ifdef PX_HAVE_weir_fdatasync
	LW_BIND(fdatasync);
#endif
#ifdef PX_HAVE_weir_fcntl_lock
	LW_BIND(fcntl_lock);
#endif
#ifdef PX_HAVE_weir_flock
	LW_BIND(flock);
#endif
}

bool px_weir_has_seek_data(void)
{
#ifdef PX_HAVE_SEEK_DATA
	return true;
#else
	return false;
#endif
}

const char *px_weir_mismatched(void)
{
	return lw.lw_mismatched;
}

const struct px_ops *px_ops_libweir(const struct px_weir_env *env)
{
	memset(&lw, 0, sizeof(lw));
	lw.lw_env = *env;
	lw_bind_all();
	const struct lw_fns *f = &lw.lw_fn;
	weir_ops.po_lstat = f->lstat ? w_lstat : NULL;
	weir_ops.po_link = f->link ? w_link : NULL;
	weir_ops.po_symlink = f->symlink ? w_symlink : NULL;
	weir_ops.po_readlink = f->readlink ? w_readlink : NULL;
	weir_ops.po_mknod = f->mknod ? w_mknod : NULL;
	weir_ops.po_chmod = f->chmod ? w_chmod : NULL;
	weir_ops.po_chown = f->chown ? w_chown : NULL;
	weir_ops.po_utimens = f->utimens ? w_utimens : NULL;
	weir_ops.po_access = f->access ? w_access : NULL;
	weir_ops.po_getxattr = f->getxattr ? w_getxattr : NULL;
	weir_ops.po_setxattr = f->setxattr ? w_setxattr : NULL;
	weir_ops.po_listxattr = f->listxattr ? w_listxattr : NULL;
	weir_ops.po_removexattr = f->removexattr ? w_removexattr : NULL;
	weir_ops.po_rename2 = f->rename2 ? w_rename2 : NULL;
	weir_ops.po_openat = f->openat ? w_openat : NULL;
	weir_ops.po_telldir = f->telldir && f->seekdir ? w_telldir : NULL;
	weir_ops.po_seekdir = f->telldir && f->seekdir ? w_seekdir : NULL;
	weir_ops.po_fallocate = f->fallocate ? w_fallocate : NULL;
	weir_ops.po_fdatasync = f->fdatasync ? w_fdatasync : NULL;
	weir_ops.po_lock = f->fcntl_lock && f->flock ? w_lock : NULL;
	return &weir_ops;
}
