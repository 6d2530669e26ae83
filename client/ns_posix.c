/*
 * client/ns_posix.c - the POSIX namespace calls of libweir beyond the
 * basics of meta.c: lstat and access; chmod, chown, utimens and their f*
 * variants; link, symlink, readlink, mknod; extended attributes; renameat2
 * flags; and the *at calls relative to a directory handle.
 *
 * Each call is one MDS RPC carrying the mount's credentials; the MDS
 * resolves the path (following symlinks as the call says), checks POSIX
 * permissions and returns Linux's errno. What Linux checks before looking
 * at the path (flags, name and value lengths, utimens' nanoseconds) is
 * checked here first, in Linux's order, so errors match a local call.
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
 * handle), or NULL (the root) for no handle or an absolute path. Fills
 * \a pf and returns it in \a *at.
 */
static int np_at(weir_file_t *dir, const char *path, Weir__Fid *pf, Weir__Fid **at)
{
	*at = NULL;
	if (!dir || (path && path[0] == '/'))
		return 0;
	if (!dir->f_is_dir)
		return -ENOTDIR;
	wc_fid_to_pb(&dir->f_fid, pf);
	*at = pf;
	return 0;
}

/* The mount of an *at call: \a fs, else the directory handle's. */
static struct weir_fs *np_fs(weir_fs_t *fs, weir_file_t *dir)
{
	if (fs)
		return fs;
	return dir ? dir->f_fs : NULL;
}

/* An AttrRep reply into a struct stat (glimpsing a stale size); frees \a rep. */
static int np_rep_stat(struct weir_fs *fs, Weir__AttrRep *rep, struct stat *st)
{
	struct wc_attr a;
	struct weir_layout lo;
	uint64_t size, blocks;

	memset(&a, 0, sizeof(a));
	int rc = wc_attr_decode(rep->attr, rep->layout, &a, &lo);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	if (rc || !st)
		return rc;
	rc = wc_attr_size(fs, &a, &lo, false, &size, &blocks);
	if (!rc)
		wc_attr_to_stat(&a, &lo, size, blocks, st);
	return rc;
}

/* One MDS call whose AttrRep reply is only checked. */
static int np_call_attr(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req)
{
	Weir__AttrRep *rep;
	int rc = wc_mds_call(fs, op, req, &weir__attr_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	return np_rep_stat(fs, rep, NULL);
}

/* ------------------------------------------------------------ stat, access */

static int np_stat(struct weir_fs *fs, weir_file_t *dir, const char *path, uint32_t pflags,
		   struct stat *st)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep;
	int rc;

	if (!fs || !st)
		return -EINVAL;
	rc = np_at(dir, path, &pat, &req.at);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.flags = pflags;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_LOOKUP, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	return np_rep_stat(fs, rep, st);
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
	Weir__AccessReq req = WEIR__ACCESS_REQ__INIT;
	Weir__Cred cred;
	int rc;

	if (!fs)
		return -EINVAL;
	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.mode = (uint32_t)mode;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_ACCESS, &req.base, NULL, NULL);
}

/* ------------------------------------------------------------ setattr */

/* SETATTR of \a path (with \a pflags) or, when \a fh is set, of its FID. */
static int np_setattr(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
		      Weir__SetattrReq *req)
{
	Weir__Cred cred;
	Weir__Fid pf;
	int rc;

	if (fh) {
		if (wc_file_stale(fh))
			return -EIO;
		fs = fh->f_fs;
		wc_fid_to_pb(&fh->f_fid, &pf);
		req->fid = &pf;
	} else {
		if (!fs)
			return -EINVAL;
		rc = wc_path_check(path);
		if (rc)
			return rc;
		req->path = (char *)path;
		req->flags = pflags;
	}
	wc_cred_init(fs, &cred);
	req->cred = &cred;
	return np_call_attr(fs, WEIR__WIRE_OP__MDS_SETATTR, &req->base);
}

static int np_chmod(struct weir_fs *fs, weir_file_t *fh, const char *path, mode_t mode)
{
	Weir__SetattrReq req = WEIR__SETATTR_REQ__INIT;
	req.valid = WEIR__SETATTR_VALID__SA_MODE;
	req.mode = (uint32_t)(mode & 07777);
	return np_setattr(fs, fh, path, 0, &req);
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
	Weir__SetattrReq req = WEIR__SETATTR_REQ__INIT;
	req.valid = WEIR__SETATTR_VALID__SA_CHOWN;
	if (uid != (uid_t)-1) {
		req.valid |= WEIR__SETATTR_VALID__SA_UID;
		req.uid = (uint32_t)uid;
	}
	if (gid != (gid_t)-1) {
		req.valid |= WEIR__SETATTR_VALID__SA_GID;
		req.gid = (uint32_t)gid;
	}
	return np_setattr(fs, fh, path, pflags, &req);
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
	Weir__SetattrReq req = WEIR__SETATTR_REQ__INIT;
	int rc;

	if (!ts) {
		req.valid = WEIR__SETATTR_VALID__SA_ATIME_NOW | WEIR__SETATTR_VALID__SA_MTIME_NOW;
	} else {
		/* nothing to do, not even the path is looked at (utimensat(2)) */
		if (ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT)
			return 0;
		rc = np_time(&ts[0], WEIR__SETATTR_VALID__SA_ATIME,
			     WEIR__SETATTR_VALID__SA_ATIME_NOW, &req.valid, &req.atime_ns);
		if (!rc)
			rc = np_time(&ts[1], WEIR__SETATTR_VALID__SA_MTIME,
				     WEIR__SETATTR_VALID__SA_MTIME_NOW, &req.valid, &req.mtime_ns);
		if (rc)
			return rc;
	}
	return np_setattr(fs, fh, path, 0, &req);
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
	Weir__LinkReq req = WEIR__LINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid psrc, pdst;
	int rc;

	if (!fs)
		return -EINVAL;
	if (flags & ~AT_SYMLINK_FOLLOW)
		return -EINVAL;
	rc = wc_path_check(oldpath);
	if (!rc)
		rc = wc_path_check(newpath);
	if (!rc)
		rc = np_at(olddir, oldpath, &psrc, &req.src_at);
	if (!rc)
		rc = np_at(newdir, newpath, &pdst, &req.dst_at);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.src = (char *)oldpath;
	req.dst = (char *)newpath;
	req.flags = (flags & AT_SYMLINK_FOLLOW) ? NP_FOLLOW : 0;
	return np_call_attr(fs, WEIR__WIRE_OP__MDS_LINK, &req.base);
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
	Weir__SymlinkReq req = WEIR__SYMLINK_REQ__INIT;
	Weir__Cred cred;
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
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)linkpath;
	req.target = (char *)target;
	return np_call_attr(fs, WEIR__WIRE_OP__MDS_SYMLINK, &req.base);
}

ssize_t weir_readlink(weir_fs_t *fs, const char *path, char *buf, size_t len)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__ReadlinkRep *rep;
	int rc;

	if (!fs || !buf)
		return -EINVAL;
	if (len == 0 || len > (size_t)SSIZE_MAX)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.flags = NP_NOFOLLOW;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_READLINK, &req.base,
			 &weir__readlink_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	size_t tl = rep->target ? strlen(rep->target) : 0;
	if (tl == 0 || tl > WC_PATH_MAX) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return -EPROTO;
	}
	size_t n = WEIR_MIN(tl, len); /* truncated silently, no NUL: readlink(2) */
	memcpy(buf, rep->target, n);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return (ssize_t)n;
}

int weir_mknod(weir_fs_t *fs, const char *path, mode_t mode, dev_t dev)
{
	Weir__MknodReq req = WEIR__MKNOD_REQ__INIT;
	Weir__Cred cred;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.mode = (uint32_t)mode;
	req.rdev = (uint64_t)dev;
	return np_call_attr(fs, WEIR__WIRE_OP__MDS_MKNOD, &req.base);
}

/* ------------------------------------------------------------ rename */

static int np_rename(struct weir_fs *fs, weir_file_t *olddir, const char *oldpath,
		     weir_file_t *newdir, const char *newpath, unsigned int flags)
{
	Weir__RenameReq req = WEIR__RENAME_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid psrc, pdst;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(oldpath);
	if (!rc)
		rc = wc_path_check(newpath);
	if (!rc)
		rc = np_at(olddir, oldpath, &psrc, &req.at);
	if (!rc)
		rc = np_at(newdir, newpath, &pdst, &req.dst_at);
	if (rc)
		return rc;
	if (!req.dst_at && req.at) {
		/* the destination is from the root: say so, unset means "as at" */
		weir__fid__init(&pdst);
		pdst.seq = fs->fs_root.fid_seq;
		pdst.oid = fs->fs_root.fid_oid;
		req.dst_at = &pdst;
	}
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.src = (char *)oldpath;
	req.dst = (char *)newpath;
	req.flags = flags;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_RENAME, &req.base, NULL, NULL);
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
	Weir__Fid pat, *at;
	struct weir_fid f;

	fs = np_fs(fs, dir);
	if (!fs || !fh)
		return -EINVAL;
	*fh = NULL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &pat, &at);
	if (rc)
		return rc;
	if (at)
		wc_fid_from_pb(at, &f);
	return wc_file_open_at(fs, at ? &f : NULL, path, flags, mode, fh);
}

int weir_mkdirat(weir_fs_t *fs, weir_file_t *dir, const char *path, mode_t mode)
{
	Weir__MkdirReq req = WEIR__MKDIR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	fs = np_fs(fs, dir);
	if (!fs)
		return -EINVAL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &pat, &req.at);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.mode = (uint32_t)(mode & 07777);
	return np_call_attr(fs, WEIR__WIRE_OP__MDS_MKDIR, &req.base);
}

int weir_unlinkat(weir_fs_t *fs, weir_file_t *dir, const char *path, int flags)
{
	Weir__UnlinkReq req = WEIR__UNLINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	fs = np_fs(fs, dir);
	if (!fs)
		return -EINVAL;
	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	int rc = wc_path_check(path);
	if (!rc)
		rc = np_at(dir, path, &pat, &req.at);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.is_dir = (flags & AT_REMOVEDIR) != 0;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_UNLINK, &req.base, NULL, NULL);
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

/* One xattr RPC on \a path (\a pflags) or \a fh; \a rep may be NULL. */
static int np_xattr_call(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
			 uint16_t op, Weir__XattrReq *req, Weir__XattrRep **rep)
{
	Weir__Cred cred;
	Weir__Fid pf;
	int rc;

	if (fh) {
		if (wc_file_stale(fh))
			return -EIO;
		fs = fh->f_fs;
		wc_fid_to_pb(&fh->f_fid, &pf);
		req->fid = &pf;
	} else {
		if (!fs)
			return -EINVAL;
		rc = wc_path_check(path);
		if (rc)
			return rc;
		req->path = (char *)path;
		req->flags = pflags;
	}
	wc_cred_init(fs, &cred);
	req->cred = &cred;
	return wc_mds_call(fs, op, &req->base, rep ? &weir__xattr_rep__descriptor : NULL,
			   (void **)rep);
}

static int np_setxattr(struct weir_fs *fs, weir_file_t *fh, const char *path, uint32_t pflags,
		       const char *name, const void *value, size_t size, int flags)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;

	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	int rc = np_xattr_name(name);
	if (rc)
		return rc;
	if (size > XATTR_SIZE_MAX)
		return -E2BIG;
	if (size && !value)
		return -EINVAL;
	req.name = (char *)name;
	req.value.data = (uint8_t *)value;
	req.value.len = size;
	req.xflags = (uint32_t)flags;
	return np_xattr_call(fs, fh, path, pflags, WEIR__WIRE_OP__MDS_SETXATTR, &req, NULL);
}

/* GETXATTR or LISTXATTR: the reply's bytes into \a buf, as getxattr(2) sizes it. */
static ssize_t np_getxattr(struct weir_fs *fs, weir_file_t *fh, const char *path,
			   uint32_t pflags, uint16_t op, const char *name, void *buf, size_t size)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__XattrRep *rep;

	if (op == WEIR__WIRE_OP__MDS_GETXATTR) {
		int rc = np_xattr_name(name);
		if (rc)
			return rc;
		req.name = (char *)name;
	}
	if (size && !buf)
		return -EINVAL;
	int rc = np_xattr_call(fs, fh, path, pflags, op, &req, &rep);
	if (rc)
		return rc;
	size_t n = rep->value.len;
	ssize_t ret = (ssize_t)n;
	if (size && n > size)
		ret = -ERANGE; /* size 0 asks for the size only */
	else if (size && n)
		memcpy(buf, rep->value.data, n);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return ret;
}

static int np_removexattr(struct weir_fs *fs, weir_file_t *fh, const char *path,
			  uint32_t pflags, const char *name)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	int rc = np_xattr_name(name);
	if (rc)
		return rc;
	req.name = (char *)name;
	return np_xattr_call(fs, fh, path, pflags, WEIR__WIRE_OP__MDS_REMOVEXATTR, &req, NULL);
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
