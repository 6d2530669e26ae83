/*
 * client/fidops.c - the FID-based calls (weir_fid_*): namespace operations
 * named by (directory FID, name) instead of by path, for the FUSE daemon and
 * other servers that keep their own table of inodes.
 *
 * Every call is one MDS RPC, made through client/mdc.c (plus a glimpse of
 * the OSTs for the exact size of a file open for writing somewhere): a
 * struct wc_mdc_target names the directory FID and the single name (the
 * wire's `at` and `path`), or the empty string to name `at` itself (MDS_OPEN
 * of an existing file by FID). Names are single components: no '/' and no
 * symlink following of the final name.
 *
 * Credentials: by default the mount's (weir_mount_with). A server that acts
 * for many users sets the caller's credentials per thread with
 * weir_fid_cred_set() before each call; they live in thread-local storage
 * and wc_cred_init() (mount.c) sends them with every request of the thread.
 *
 * Two-directory calls (rename, link) send both directory FIDs (RenameReq
 * at + dst_at, LinkReq src_at + dst_at): no path is ever rebuilt. An object
 * named by FID alone (open, readlink, link source) is `at` with the empty
 * path (the MDS's AT_EMPTY_PATH); xattr calls name it by XattrReq.fid.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "common/log.h"
#include "common/util.h"

/* Longest xattr name (bytes) and value (bytes), as Linux's XATTR_NAME_MAX / XATTR_SIZE_MAX. */
#define FO_XATTR_NAME_MAX 255
#define FO_XATTR_SIZE_MAX 65536

/* The calling thread's credentials, when weir_fid_cred_set() set them. */
static _Thread_local bool fo_cred_set;
static _Thread_local struct weir_cred fo_cred;

int weir_fid_cred_set(const struct weir_cred *cred)
{
	if (!cred) {
		fo_cred_set = false;
		return 0;
	}
	if (cred->cr_nr_groups > WEIR_CRED_MAX_GROUPS)
		return -EINVAL;
	fo_cred = *cred;
	fo_cred_set = true;
	return 0;
}

bool wc_cred_thread(Weir__Cred *c)
{
	if (!fo_cred_set)
		return false;
	weir__cred__init(c);
	c->uid = fo_cred.cr_uid;
	c->gid = fo_cred.cr_gid;
	c->n_groups = fo_cred.cr_nr_groups;
	c->groups = fo_cred.cr_nr_groups ? fo_cred.cr_groups : NULL;
	return true;
}

static void fo_fid_in(const weir_fid_t *in, struct weir_fid *out)
{
	out->fid_seq = in->seq;
	out->fid_oid = in->oid;
}

static void fo_fid_out(const struct weir_fid *in, weir_fid_t *out)
{
	out->seq = in->fid_seq;
	out->oid = in->fid_oid;
}

/* A single name: \return 0, -EINVAL (NULL, or a '/'), -ENOENT (empty), -ENAMETOOLONG. */
static int fo_name_check(const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, WC_NAME_MAX + 1);
	if (len == 0)
		return -ENOENT;
	if (len > WC_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len))
		return -EINVAL;
	return 0;
}

/* The name of an entry to create: as fo_name_check(), and -EEXIST for "." and "..". */
static int fo_new_name_check(const char *name)
{
	int rc = fo_name_check(name);
	if (!rc && (!strcmp(name, ".") || !strcmp(name, "..")))
		rc = -EEXIST;
	return rc;
}

/* Attributes \a a (\a lo) of a reply into \a st (glimpsing a stale size), then \a fid
 * (either may be NULL). */
static int fo_attr_out(struct weir_fs *fs, const struct wc_attr *a, const struct weir_layout *lo,
		       weir_fid_t *fid, struct stat *st)
{
	int rc = st ? wc_attr_stat(fs, a, lo, st) : 0;
	if (!rc && fid)
		fo_fid_out(&a->a_fid, fid);
	return rc;
}

int weir_fid_getroot(weir_fs_t *fs, weir_fid_t *root)
{
	if (!fs || !root)
		return -EINVAL;
	fo_fid_out(&fs->fs_root, root);
	return 0;
}

int weir_fid_lookup(weir_fs_t *fs, const weir_fid_t *dir, const char *name, weir_fid_t *out,
		    struct stat *st)
{
	struct weir_fid at;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	/* PF_NOFOLLOW: lstat, the name itself */
	rc = wc_mdc_lookup(fs, WC_MDC_PATH(&at, name, WEIR__PATH_FLAG__PF_NOFOLLOW), &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, out, st);
}

int weir_fid_getattr(weir_fs_t *fs, const weir_fid_t *fid, struct stat *st)
{
	struct wc_attr a;
	struct weir_layout lo;
	struct weir_fid f;
	int rc;

	if (!fs || !fid || !st)
		return -EINVAL;
	fo_fid_in(fid, &f);
	rc = wc_mdc_getattr(fs, &f, &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, NULL, st);
}

static int64_t fo_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int weir_fid_setattr(weir_fs_t *fs, const weir_fid_t *fid, const struct stat *attr, unsigned valid,
		     struct stat *st)
{
	struct wc_mdc_sattr sa = { 0 };
	struct wc_attr ra;
	struct weir_layout rlo;
	struct weir_fid f;
	struct weir_layout trunc_lo; /* HSM: objects to truncate after the MDS */
	bool trunc_after = false;
	int rc;

	if (!fs || !fid ||
	    (!attr && (valid & ~(WEIR_SETATTR_ATIME_NOW | WEIR_SETATTR_MTIME_NOW |
				 WEIR_SETATTR_KILL_PRIV))))
		return -EINVAL;
	if (valid & ~WEIR_SETATTR_ALL)
		return -EINVAL;
	fo_fid_in(fid, &f);
	if (valid & WEIR_SETATTR_SIZE) {
		struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
		struct weir_layout lo;
		struct wc_attr a;
		uint64_t size;

		if (attr->st_size < 0)
			return -EINVAL;
		size = (uint64_t)attr->st_size;
		rc = wc_getattr(fs, &f, &a, &lo);
		if (rc)
			return rc;
		if (S_ISDIR(a.a_mode))
			return -EISDIR;
		if (!S_ISREG(a.a_mode))
			return -EINVAL;
		if (wc_attr_released(&a) && size == 0) {
			/* HSM released, to 0 (client/hsm.c): the MDS first (it may
			 * answer -EAGAIN while the objects are being destroyed),
			 * then what a partial restore left in the objects */
			trunc_lo = lo;
			trunc_after = true;
		} else if (wc_attr_released(&a)) {
			/* a truncate keeping data: restore the whole file first */
			bool released;

			rc = wc_hsm_wait_range(fs, &f, 0, 0, true, &released);
			if (rc)
				return rc;
		}
		/* the objects first (as weir_ftruncate): the MDS size follows */
		memset(ops, 0, sizeof(ops));
		for (uint32_t i = 0; i < lo.lo_stripe_count && !trunc_after; i++)
			ops[i].oo_size = weir_layout_obj_lower_bound(&lo, i, size);
		rc = trunc_after ? 0 : wc_obj_run(fs, &f, &lo, WEIR__WIRE_OP__OST_TRUNCATE, ops);
		if (!trunc_after)
			wc_mdl_changed(fs, &f); /* the objects' size: even if the MDS's fails */
		if (rc)
			return rc;
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_SIZE;
		sa.sa_size = size;
	}
	if (valid & WEIR_SETATTR_MODE) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_MODE;
		sa.sa_mode = (uint32_t)(attr->st_mode & 07777);
	}
	if (valid & WEIR_SETATTR_UID) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_UID | WEIR__SETATTR_VALID__SA_CHOWN;
		sa.sa_uid = (uint32_t)attr->st_uid;
	}
	if (valid & WEIR_SETATTR_GID) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_GID | WEIR__SETATTR_VALID__SA_CHOWN;
		sa.sa_gid = (uint32_t)attr->st_gid;
	}
	if (valid & WEIR_SETATTR_KILL_PRIV)
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_KILL_SUID; /* the MDS picks the bits */
	/* *_NOW: the MDS's clock (and its rule: write permission is enough) */
	if (valid & WEIR_SETATTR_ATIME_NOW) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_ATIME_NOW;
	} else if (valid & WEIR_SETATTR_ATIME) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_ATIME;
		sa.sa_atime_ns = fo_ts_ns(&attr->st_atim);
	}
	if (valid & WEIR_SETATTR_MTIME_NOW) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_MTIME_NOW;
	} else if (valid & WEIR_SETATTR_MTIME) {
		sa.sa_valid |= WEIR__SETATTR_VALID__SA_MTIME;
		sa.sa_mtime_ns = fo_ts_ns(&attr->st_mtim);
	}
	uint64_t start = weir_now_ns();
	uint32_t delay_ms = 0;
	do {
		rc = wc_mdc_setattr(fs, WC_MDC_FID(&f), &sa, &ra, &rlo);
	} while (rc == -EAGAIN && trunc_after && wc_hsm_again(start, &delay_ms));
	if (rc)
		return rc;
	if (trunc_after) {
		struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];

		memset(ops, 0, sizeof(ops));
		rc = wc_obj_run(fs, &f, &trunc_lo, WEIR__WIRE_OP__OST_TRUNCATE, ops);
		if (rc)
			return rc;
	}
	return fo_attr_out(fs, &ra, &rlo, NULL, st);
}

/* ------------------------------------------------------------ open / create */

/*
 * Open (\a at, \a path) with wc_file_open_at() (file.c: the one open of
 * libweir, sessions and all; it sends this thread's credentials through
 * wc_cred_init()); \a st (may be NULL) gets the file's attributes.
 */
static int fo_open(struct weir_fs *fs, const struct weir_fid *at, const char *path, int flags,
		   mode_t mode, weir_file_t **fhp, struct stat *st)
{
	int rc;

	rc = wc_file_open_at(fs, at, path, flags, mode, fhp);
	if (rc || !st)
		return rc;
	struct weir_file *fh = *fhp;
	if (fh->f_created && !fh->f_is_dir) {
		/* a new file: the open reply's attributes are its state at the
		 * create (empty, no object written), no GETATTR needed */
		wc_attr_to_stat(&fh->f_open_attr, &fh->f_layout, fh->f_open_attr.a_size,
				fh->f_open_attr.a_blocks, st);
		return 0;
	}
	rc = weir_fstat(*fhp, st);
	if (rc) {
		weir_close(*fhp);
		*fhp = NULL;
	}
	return rc;
}

int weir_fid_open(weir_fs_t *fs, const weir_fid_t *fid, int flags, weir_file_t **fh)
{
	struct weir_fid f;

	if (!fs || !fid || !fh)
		return -EINVAL;
	*fh = NULL;
	if (fid->seq == 0 && fid->oid == 0)
		return -EINVAL;
	fo_fid_in(fid, &f);
	/* the file exists: an empty path names `at` itself */
	return fo_open(fs, &f, "", flags & ~(O_CREAT | O_EXCL), 0, fh, NULL);
}

int weir_fid_create(weir_fs_t *fs, const weir_fid_t *dir, const char *name, int flags, mode_t mode,
		    weir_file_t **fh, struct stat *st)
{
	struct weir_fid at;
	int rc;

	if (!fs || !dir || !fh)
		return -EINVAL;
	*fh = NULL;
	rc = fo_new_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	return fo_open(fs, &at, name, flags | O_CREAT, mode, fh, st);
}

/* ------------------------------------------------------------ namespace */

int weir_fid_mkdir(weir_fs_t *fs, const weir_fid_t *dir, const char *name, mode_t mode,
		   weir_fid_t *out, struct stat *st)
{
	struct weir_fid at;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_new_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	rc = wc_mdc_mkdir(fs, WC_MDC_PATH(&at, name, 0), mode, -1, &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, out, st);
}

static int fo_unlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name, bool is_dir)
{
	struct weir_fid at;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_name_check(name);
	if (rc)
		return rc;
	if (!strcmp(name, "."))
		return -EINVAL;
	if (!strcmp(name, ".."))
		return is_dir ? -ENOTEMPTY : -EISDIR;
	fo_fid_in(dir, &at);
	return wc_mdc_unlink(fs, WC_MDC_PATH(&at, name, 0), is_dir, NULL);
}

int weir_fid_unlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name)
{
	return fo_unlink(fs, dir, name, false);
}

int weir_fid_rmdir(weir_fs_t *fs, const weir_fid_t *dir, const char *name)
{
	return fo_unlink(fs, dir, name, true);
}

int weir_fid_rename(weir_fs_t *fs, const weir_fid_t *olddir, const char *oldname,
		    const weir_fid_t *newdir, const char *newname, unsigned flags)
{
	struct weir_fid at, dst_at;
	int rc;

	if (!fs || !olddir || !newdir)
		return -EINVAL;
	rc = fo_name_check(oldname);
	if (!rc)
		rc = fo_name_check(newname);
	if (rc)
		return rc;
	fo_fid_in(olddir, &at);
	fo_fid_in(newdir, &dst_at);
	return wc_mdc_rename(fs, WC_MDC_PATH(&at, oldname, 0), WC_MDC_PATH(&dst_at, newname, 0),
			     flags);
}

int weir_fid_fsync(weir_fs_t *fs, const weir_fid_t *fid)
{
	struct weir_fid f;

	if (!fs)
		return -EINVAL;
	if (fid)
		fo_fid_in(fid, &f);
	return wc_mdc_sync(fs, fid ? &f : NULL, NULL);
}

/* ------------------------------------------------------------ directories */

/*
 * A stream on directory \a f; \a read_ok: the MDS already let the caller
 * read it; \a parent: its ".." as that open's reply told (NULL or zero:
 * looked up here).
 */
static int fo_opendir(struct weir_fs *fs, const struct weir_fid *fid, bool read_ok,
		      const struct weir_fid *parent, weir_dir_t **dhp)
{
	struct weir_dir *dh;
	struct wc_attr a;
	struct weir_fid f = *fid;
	int rc = 0;

	*dhp = NULL;
	memset(&a, 0, sizeof(a));
	/* ".." of the directory: its parent (and proof that it is a directory) */
	if (parent && !weir_fid_is_zero(parent))
		a.a_fid = *parent; /* an open of it said so: no LOOKUP */
	else
		rc = wc_mdc_lookup(fs, WC_MDC_PATH(&f, "..", WEIR__PATH_FLAG__PF_NOFOLLOW), &a,
				   NULL);
	if (rc == -EACCES) {
		/* readable but not searchable (r without x): list it all the same,
		 * with ".." naming the directory itself */
		rc = wc_getattr(fs, &f, &a, NULL);
		if (!rc && !S_ISDIR(a.a_mode))
			rc = -ENOTDIR;
		if (rc)
			return rc;
	} else if (rc) {
		return rc;
	}
	dh = calloc(1, sizeof(*dh));
	if (!dh)
		return -ENOMEM;
	dh->d_fs = fs;
	dh->d_fid = f;
	dh->d_parent = a.a_fid;
	dh->d_read_ok = read_ok;
	pthread_mutex_lock(&fs->fs_lock);
	dh->d_next = fs->fs_dirs;
	if (fs->fs_dirs)
		fs->fs_dirs->d_prev = dh;
	fs->fs_dirs = dh;
	pthread_mutex_unlock(&fs->fs_lock);
	*dhp = dh;
	return 0;
}

int weir_fid_opendir(weir_fs_t *fs, const weir_fid_t *fid, weir_dir_t **dhp)
{
	struct weir_fid f;

	if (!fs || !fid || !dhp)
		return -EINVAL;
	fo_fid_in(fid, &f);
	return fo_opendir(fs, &f, false, NULL, dhp);
}

int weir_fdopendir(weir_file_t *fh, weir_dir_t **dhp)
{
	if (!fh || !dhp)
		return -EINVAL;
	*dhp = NULL;
	if (!fh->f_is_dir)
		return -ENOTDIR;
	if (!fh->f_read)
		return -EBADF; /* as fdopendir(3) of a descriptor not open for reading */
	return fo_opendir(fh->f_fs, &fh->f_fid, true, &fh->f_dir_parent, dhp);
}

/* ------------------------------------------------------------ links, nodes */

int weir_fid_symlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name, const char *target,
		     weir_fid_t *out, struct stat *st)
{
	struct weir_fid at;
	struct wc_attr a;
	struct weir_layout lo;
	size_t tlen;
	int rc;

	if (!fs || !dir || !target)
		return -EINVAL;
	rc = fo_name_check(name);
	if (rc)
		return rc;
	tlen = strnlen(target, WC_PATH_MAX + 1);
	if (tlen == 0)
		return -ENOENT;
	if (tlen > WC_PATH_MAX)
		return -ENAMETOOLONG;
	fo_fid_in(dir, &at);
	rc = wc_mdc_symlink(fs, WC_MDC_PATH(&at, name, 0), target, &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, out, st);
}

ssize_t weir_fid_readlink(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len)
{
	struct weir_fid f;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	fo_fid_in(fid, &f);
	/* the link itself: the empty path from it */
	return wc_mdc_readlink(fs, WC_MDC_PATH(&f, "", WEIR__PATH_FLAG__PF_NOFOLLOW), buf, len);
}

int weir_fid_link(weir_fs_t *fs, const weir_fid_t *fid, const weir_fid_t *newdir,
		  const char *newname, struct stat *st)
{
	struct weir_fid src, dst;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !fid || !newdir)
		return -EINVAL;
	rc = fo_name_check(newname);
	if (rc)
		return rc;
	if (!strcmp(newname, ".") || !strcmp(newname, ".."))
		return -EEXIST;
	fo_fid_in(fid, &src);
	fo_fid_in(newdir, &dst);
	/* the object itself (linkat AT_EMPTY_PATH) */
	rc = wc_mdc_link(fs, WC_MDC_PATH(&src, "", 0), WC_MDC_PATH(&dst, newname, 0), &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, NULL, st);
}

int weir_fid_mknod(weir_fs_t *fs, const weir_fid_t *dir, const char *name, mode_t mode, dev_t rdev,
		   weir_fid_t *out, struct stat *st)
{
	struct weir_fid at;
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_new_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	rc = wc_mdc_mknod(fs, WC_MDC_PATH(&at, name, 0), mode, rdev, &a, &lo);
	return rc ? rc : fo_attr_out(fs, &a, &lo, out, st);
}

/* ------------------------------------------------------------ xattrs */

static int fo_xattr_name_check(const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, FO_XATTR_NAME_MAX + 1);
	if (len == 0)
		return -EINVAL;
	return len > FO_XATTR_NAME_MAX ? -ERANGE : 0;
}

ssize_t weir_fid_getxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, void *buf,
			  size_t len)
{
	struct weir_fid f;
	int rc;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	rc = fo_xattr_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(fid, &f);
	return wc_mdc_getxattr(fs, WC_MDC_FID(&f), name, buf, len);
}

ssize_t weir_fid_listxattr(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len)
{
	struct weir_fid f;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	fo_fid_in(fid, &f);
	return wc_mdc_listxattr(fs, WC_MDC_FID(&f), buf, len);
}

int weir_fid_setxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, const void *value,
		      size_t len, int flags)
{
	struct weir_fid f;
	int rc;

	if (!fs || !fid || (!value && len))
		return -EINVAL;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	rc = fo_xattr_name_check(name);
	if (rc)
		return rc;
	if (len > FO_XATTR_SIZE_MAX)
		return -E2BIG;
	fo_fid_in(fid, &f);
	return wc_mdc_setxattr(fs, WC_MDC_FID(&f), name, value, len, (uint32_t)flags);
}

int weir_fid_removexattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name)
{
	struct weir_fid f;
	int rc;

	if (!fs || !fid)
		return -EINVAL;
	rc = fo_xattr_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(fid, &f);
	return wc_mdc_removexattr(fs, WC_MDC_FID(&f), name);
}
