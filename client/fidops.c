/*
 * client/fidops.c - the FID-based calls (weir_fid_*): namespace operations
 * named by (directory FID, name) instead of by path, for the FUSE daemon and
 * other servers that keep their own table of inodes.
 *
 * Every call is one MDS RPC (plus a glimpse of the OSTs for the exact size
 * of a file open for writing somewhere): the wire's `at` field carries the
 * directory FID and `path` the single name, or the empty string to name
 * `at` itself (MDS_OPEN of an existing file by FID). Names are single
 * components: no '/' and no symlink following of the final name.
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

/* Decode an AttrRep into a stat (glimpsing a stale size); frees \a rep. */
static int fo_attr_rep_stat(struct weir_fs *fs, Weir__AttrRep *rep, struct weir_fid *fid,
			    struct stat *st)
{
	struct wc_attr a;
	struct weir_layout lo;
	uint64_t size, blocks, rdev;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = wc_attr_decode(rep->attr, rep->layout, &a, &lo);
	rdev = rep->attr ? rep->attr->rdev : 0;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	if (rc)
		return rc;
	if (fid)
		*fid = a.a_fid;
	if (!st)
		return 0;
	rc = wc_attr_size(fs, &a, &lo, false, &size, &blocks);
	if (rc)
		return rc;
	wc_attr_to_stat(&a, &lo, size, blocks, st);
	if (S_ISCHR(a.a_mode) || S_ISBLK(a.a_mode))
		st->st_rdev = (dev_t)rdev;
	return 0;
}

/* MDS_LOOKUP of \a path relative to \a at. */
static int fo_lookup(struct weir_fs *fs, const struct weir_fid *at, const char *path,
		     Weir__AttrRep **rep)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	wc_cred_init(fs, &cred);
	wc_fid_to_pb(at, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)path;
	req.flags = WEIR__PATH_FLAG__PF_NOFOLLOW; /* lstat: the name itself */
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_LOOKUP, &req.base, &weir__attr_rep__descriptor,
			   (void **)rep);
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
	struct weir_fid at, fid;
	Weir__AttrRep *rep;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	rc = fo_lookup(fs, &at, name, &rep);
	if (rc)
		return rc;
	rc = fo_attr_rep_stat(fs, rep, &fid, st);
	if (!rc && out)
		fo_fid_out(&fid, out);
	return rc;
}

int weir_fid_getattr(weir_fs_t *fs, const weir_fid_t *fid, struct stat *st)
{
	Weir__FidReq req = WEIR__FID_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	Weir__AttrRep *rep;
	struct weir_fid f;
	int rc;

	if (!fs || !fid || !st)
		return -EINVAL;
	fo_fid_in(fid, &f);
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&f, &pf);
	req.cred = &cred;
	req.fid = &pf;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_GETATTR, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	return fo_attr_rep_stat(fs, rep, NULL, st);
}

static int64_t fo_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int weir_fid_setattr(weir_fs_t *fs, const weir_fid_t *fid, const struct stat *attr, unsigned valid,
		     struct stat *st)
{
	Weir__SetattrReq req = WEIR__SETATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	Weir__AttrRep *rep;
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
		if (rc)
			return rc;
		req.valid |= WEIR__SETATTR_VALID__SA_SIZE;
		req.size = size;
	}
	if (valid & WEIR_SETATTR_MODE) {
		req.valid |= WEIR__SETATTR_VALID__SA_MODE;
		req.mode = (uint32_t)(attr->st_mode & 07777);
	}
	if (valid & WEIR_SETATTR_UID) {
		req.valid |= WEIR__SETATTR_VALID__SA_UID | WEIR__SETATTR_VALID__SA_CHOWN;
		req.uid = (uint32_t)attr->st_uid;
	}
	if (valid & WEIR_SETATTR_GID) {
		req.valid |= WEIR__SETATTR_VALID__SA_GID | WEIR__SETATTR_VALID__SA_CHOWN;
		req.gid = (uint32_t)attr->st_gid;
	}
	if (valid & WEIR_SETATTR_KILL_PRIV)
		req.valid |= WEIR__SETATTR_VALID__SA_KILL_SUID; /* the MDS picks the bits */
	/* *_NOW: the MDS's clock (and its rule: write permission is enough) */
	if (valid & WEIR_SETATTR_ATIME_NOW) {
		req.valid |= WEIR__SETATTR_VALID__SA_ATIME_NOW;
	} else if (valid & WEIR_SETATTR_ATIME) {
		req.valid |= WEIR__SETATTR_VALID__SA_ATIME;
		req.atime_ns = fo_ts_ns(&attr->st_atim);
	}
	if (valid & WEIR_SETATTR_MTIME_NOW) {
		req.valid |= WEIR__SETATTR_VALID__SA_MTIME_NOW;
	} else if (valid & WEIR_SETATTR_MTIME) {
		req.valid |= WEIR__SETATTR_VALID__SA_MTIME;
		req.mtime_ns = fo_ts_ns(&attr->st_mtim);
	}
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&f, &pf);
	req.cred = &cred;
	req.fid = &pf;
	uint64_t start = weir_now_ns();
	uint32_t delay_ms = 0;
	do {
		rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_SETATTR, &req.base,
				 &weir__attr_rep__descriptor, (void **)&rep);
	} while (rc == -EAGAIN && trunc_after && wc_hsm_again(start, &delay_ms));
	if (rc)
		return rc;
	if (trunc_after) {
		struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];

		memset(ops, 0, sizeof(ops));
		rc = wc_obj_run(fs, &f, &trunc_lo, WEIR__WIRE_OP__OST_TRUNCATE, ops);
		if (rc) {
			protobuf_c_message_free_unpacked(&rep->base, NULL);
			return rc;
		}
	}
	return fo_attr_rep_stat(fs, rep, NULL, st);
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
	Weir__MkdirReq req = WEIR__MKDIR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep;
	struct weir_fid at, fid;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_new_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&at, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)name;
	req.mode = (uint32_t)(mode & 07777);
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_MKDIR, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	rc = fo_attr_rep_stat(fs, rep, &fid, st);
	if (!rc && out)
		fo_fid_out(&fid, out);
	return rc;
}

static int fo_unlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name, bool is_dir)
{
	Weir__UnlinkReq req = WEIR__UNLINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
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
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&at, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)name;
	req.is_dir = is_dir;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_UNLINK, &req.base, NULL, NULL);
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
	Weir__RenameReq req = WEIR__RENAME_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat, pdst;
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
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&at, &pat);
	wc_fid_to_pb(&dst_at, &pdst);
	req.cred = &cred;
	req.at = &pat;
	req.src = (char *)oldname;
	req.dst_at = &pdst;
	req.dst = (char *)newname;
	req.flags = flags;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_RENAME, &req.base, NULL, NULL);
}

int weir_fid_fsync(weir_fs_t *fs, const weir_fid_t *fid)
{
	Weir__SyncReq req = WEIR__SYNC_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	struct weir_fid f;

	if (!fs)
		return -EINVAL;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	if (fid) {
		fo_fid_in(fid, &f);
		wc_fid_to_pb(&f, &pf);
		req.fid = &pf;
	}
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_SYNC, &req.base, NULL, NULL);
}

/* ------------------------------------------------------------ directories */

int weir_fid_opendir(weir_fs_t *fs, const weir_fid_t *fid, weir_dir_t **dhp)
{
	struct weir_dir *dh;
	struct wc_attr a;
	Weir__AttrRep *rep;
	struct weir_fid f;
	int rc;

	if (!fs || !fid || !dhp)
		return -EINVAL;
	*dhp = NULL;
	fo_fid_in(fid, &f);
	/* ".." of the directory: its parent (and proof that it is a directory) */
	rc = fo_lookup(fs, &f, "..", &rep);
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
	} else {
		rc = wc_attr_decode(rep->attr, NULL, &a, NULL);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		if (rc)
			return rc;
	}
	dh = calloc(1, sizeof(*dh));
	if (!dh)
		return -ENOMEM;
	dh->d_fs = fs;
	dh->d_fid = f;
	dh->d_parent = a.a_fid;
	pthread_mutex_lock(&fs->fs_lock);
	dh->d_next = fs->fs_dirs;
	if (fs->fs_dirs)
		fs->fs_dirs->d_prev = dh;
	fs->fs_dirs = dh;
	pthread_mutex_unlock(&fs->fs_lock);
	*dhp = dh;
	return 0;
}

/* ------------------------------------------------------------ links, nodes */

int weir_fid_symlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name, const char *target,
		     weir_fid_t *out, struct stat *st)
{
	Weir__SymlinkReq req = WEIR__SYMLINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep;
	struct weir_fid at, fid;
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
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&at, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)name;
	req.target = (char *)target;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_SYMLINK, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	rc = fo_attr_rep_stat(fs, rep, &fid, st);
	if (!rc && out)
		fo_fid_out(&fid, out);
	return rc;
}

ssize_t weir_fid_readlink(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__ReadlinkRep *rep;
	struct weir_fid f;
	size_t tlen;
	int rc;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	fo_fid_in(fid, &f);
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&f, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)""; /* the link itself */
	req.flags = WEIR__PATH_FLAG__PF_NOFOLLOW;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_READLINK, &req.base,
			 &weir__readlink_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	tlen = rep->target ? strlen(rep->target) : 0;
	if (tlen == 0 || tlen > WC_PATH_MAX) {
		WEIR_LOG_ERROR("fid=" WEIR_FID_F " len=%zu: bad symlink target in reply",
			       WEIR_FID_P(&f), tlen);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return -EPROTO;
	}
	if (tlen > len)
		tlen = len; /* truncated, as readlink(2) */
	if (tlen)
		memcpy(buf, rep->target, tlen);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return (ssize_t)tlen;
}

int weir_fid_link(weir_fs_t *fs, const weir_fid_t *fid, const weir_fid_t *newdir,
		  const char *newname, struct stat *st)
{
	Weir__LinkReq req = WEIR__LINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid psrc, pdst;
	Weir__AttrRep *rep;
	struct weir_fid src, dst;
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
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&src, &psrc);
	wc_fid_to_pb(&dst, &pdst);
	req.cred = &cred;
	req.src_at = &psrc;
	req.src = (char *)""; /* the object itself (linkat AT_EMPTY_PATH) */
	req.dst_at = &pdst;
	req.dst = (char *)newname;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_LINK, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	return fo_attr_rep_stat(fs, rep, NULL, st);
}

int weir_fid_mknod(weir_fs_t *fs, const weir_fid_t *dir, const char *name, mode_t mode, dev_t rdev,
		   weir_fid_t *out, struct stat *st)
{
	Weir__MknodReq req = WEIR__MKNOD_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep;
	struct weir_fid at, fid;
	int rc;

	if (!fs || !dir)
		return -EINVAL;
	rc = fo_new_name_check(name);
	if (rc)
		return rc;
	fo_fid_in(dir, &at);
	wc_cred_init(fs, &cred);
	wc_fid_to_pb(&at, &pat);
	req.cred = &cred;
	req.at = &pat;
	req.path = (char *)name;
	req.mode = (uint32_t)mode;
	req.rdev = (uint64_t)rdev;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_MKNOD, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	rc = fo_attr_rep_stat(fs, rep, &fid, st);
	if (!rc && out)
		fo_fid_out(&fid, out);
	return rc;
}

/* ------------------------------------------------------------ xattrs */

/* An XattrReq naming \a fid; \a pf and \a cred are the caller's storage. */
static void fo_xattr_req(struct weir_fs *fs, const weir_fid_t *fid, Weir__XattrReq *req,
			 Weir__Fid *pf, Weir__Cred *cred)
{
	struct weir_fid f;

	fo_fid_in(fid, &f);
	wc_cred_init(fs, cred);
	wc_fid_to_pb(&f, pf);
	req->cred = cred;
	req->fid = pf;
}

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

/* Copy a GETXATTR/LISTXATTR value out as getxattr(2) does; frees \a rep. */
static ssize_t fo_xattr_value(Weir__XattrRep *rep, void *buf, size_t len)
{
	size_t vlen = rep->value.len;
	ssize_t rc = (ssize_t)vlen;

	if (len && vlen > len)
		rc = -ERANGE;
	else if (len && vlen)
		memcpy(buf, rep->value.data, vlen);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

ssize_t weir_fid_getxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, void *buf,
			  size_t len)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	Weir__XattrRep *rep;
	int rc;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	rc = fo_xattr_name_check(name);
	if (rc)
		return rc;
	fo_xattr_req(fs, fid, &req, &pf, &cred);
	req.name = (char *)name;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_GETXATTR, &req.base, &weir__xattr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	return fo_xattr_value(rep, buf, len);
}

ssize_t weir_fid_listxattr(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	Weir__XattrRep *rep;
	int rc;

	if (!fs || !fid || (!buf && len))
		return -EINVAL;
	fo_xattr_req(fs, fid, &req, &pf, &cred);
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_LISTXATTR, &req.base, &weir__xattr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	return fo_xattr_value(rep, buf, len);
}

int weir_fid_setxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, const void *value,
		      size_t len, int flags)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
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
	fo_xattr_req(fs, fid, &req, &pf, &cred);
	req.name = (char *)name;
	req.value.data = (uint8_t *)value;
	req.value.len = len;
	req.xflags = (uint32_t)flags;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_SETXATTR, &req.base, NULL, NULL);
}

int weir_fid_removexattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	int rc;

	if (!fs || !fid)
		return -EINVAL;
	rc = fo_xattr_name_check(name);
	if (rc)
		return rc;
	fo_xattr_req(fs, fid, &req, &pf, &cred);
	req.name = (char *)name;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_REMOVEXATTR, &req.base, NULL, NULL);
}
