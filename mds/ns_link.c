/*
 * mds/ns_link.c - the calls that add or remove names: mkdir, mknod,
 * symlink, link, unlink/rmdir, rename (renameat2: NOREPLACE, EXCHANGE),
 * and readlink. Each mutation is one RocksDB batch under ns_lock held for
 * reading and the name and inode locks of what it changes (mds/ns_lock.c),
 * but a rename that moves a directory to another parent, which holds
 * ns_lock for writing (mds/ns.c, DESIGN). Checks and their order follow Linux
 * (fs/namei.c: filename_create, may_create, may_delete, do_renameat2,
 * vfs_rename, vfs_link, may_linkat) so every failure has Linux's errno.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A resolution for each side of a two-path call, on the heap (each ~1.6 KiB). */
struct two_res {
	struct ns_res t_a;
	struct ns_res t_b;
};

/*
 * filename_create(): the last component of \a r must be a new name:
 * "/", ".", ".." and existing names are -EEXIST; a trailing slash on a
 * missing name is -ENOENT unless a directory is made (\a is_dir).
 */
static int new_name_check(const struct ns_res *r, bool is_dir)
{
	if (r->r_last != NS_LAST_NORM || r->r_exists)
		return -EEXIST;
	if (r->r_slash && !is_dir)
		return -ENOENT;
	return 0;
}

static int create_remote_locked(struct mds_ns *ns, const struct mds_cred *cr, struct ns_res *r,
				const struct ns_new *nn, struct ns_lockset *ls,
				struct mds_inode *out, struct ns_dtx *t, bool *prepared);

static int create_common(struct mds_ns *ns, const struct mds_cred *cr,
			 const struct weir_fid *at, const char *path, const struct ns_new *nn,
			 struct mds_inode *out)
{
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct ns_lockset ls;
	struct ns_dtx t;
	bool prepared = false;
	unsigned tries = 0;
	ns_ls_init(&ls);
	ns_change_lock(ns);
again:;
	int rc = ns_resolve(ns, cr, at, path, NS_RES_PARENT, r);
	if (!rc)
		rc = new_name_check(r, S_ISDIR(nn->nn_mode));
	if (!rc)
		rc = mds_perm_may_create(cr, &r->r_dir);
	if (!rc && (S_ISCHR(nn->nn_mode) || S_ISBLK(nn->nn_mode)) && !mds_cred_is_root(cr))
		rc = -EPERM; /* CAP_MKNOD */
	if (!rc) {
		rc = ns_name_lock(ns, &ls, r); /* still free? */
		if (rc == -EAGAIN && ns_retry(&tries, "create")) {
			ns_ls_release(ns, &ls);
			goto again; /* made meanwhile: -EEXIST */
		}
	}
	if (!rc && nn->nn_remote_mdt1) /* `weir mkdir -i` */
		rc = create_remote_locked(ns, cr, r, nn, &ls, out, &t, &prepared);
	else if (!rc)
		rc = ns_create_locked(ns, cr, &r->r_dir, r->r_name, r->r_nlen, nn, &ls, out);
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (prepared) /* the participant told, with no lock held (mds/dtx.c) */
		ns->ns_dtx->dx_finish(ns->ns_dtx_arg, &t, rc == 0);
	free(r);
	return rc;
}

int mds_ns_mkdir(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		 const char *path, uint32_t mode, struct mds_inode *out)
{
	struct ns_new nn = { .nn_mode = S_IFDIR | (mode & (0777 | S_ISVTX)) };
	return create_common(ns, cr, at, path, &nn, out);
}

int mds_ns_mknod(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		 const char *path, uint32_t mode, uint64_t rdev, mds_ost_chooser_t choose,
		 void *choose_arg, struct mds_inode *out)
{
	struct ns_new nn = { .nn_mode = mode & (S_IFMT | 07777), .nn_rdev = rdev };

	/* may_mknod(), before the path is looked at */
	switch (mode & S_IFMT) {
	case 0:
		nn.nn_mode |= S_IFREG;
		/* fall through */
	case S_IFREG:
		nn.nn_choose = choose;
		nn.nn_choose_arg = choose_arg;
		break;
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	if (!S_ISCHR(nn.nn_mode) && !S_ISBLK(nn.nn_mode))
		nn.nn_rdev = 0;
	return create_common(ns, cr, at, path, &nn, out);
}

int mds_ns_symlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, const char *target, struct mds_inode *out)
{
	if (!target)
		return -EINVAL;
	size_t tlen = strnlen(target, MDS_SYMLINK_MAX + 1);
	if (tlen == 0)
		return -ENOENT;
	if (tlen > MDS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	struct ns_new nn = { .nn_mode = S_IFLNK | 0777, .nn_target = target, .nn_tlen = tlen };
	return create_common(ns, cr, at, path, &nn, out);
}

int mds_ns_readlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, char *buf, size_t cap, size_t *len)
{
	struct mds_inode in;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_obj(ns, cr, at, path ? path : "", MDS_AT_NOFOLLOW, &in);
	if (!rc && !S_ISLNK(in.in_mode))
		rc = -EINVAL;
	if (!rc)
		rc = ns_symlink_get(ns, &in.in_fid, buf, cap, len);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* may_linkat() with fs.protected_hardlinks = 1 */
int ns_may_linkat(const struct mds_cred *cr, const struct mds_inode *in)
{
	if (mds_perm_owner(cr, in))
		return 0;
	if (!S_ISREG(in->in_mode) || (in->in_mode & S_ISUID) ||
	    (in->in_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ||
	    mds_perm_check(cr, in, MDS_MAY_READ | MDS_MAY_WRITE))
		return -EPERM;
	return 0;
}

/*
 * The coordinator's half of a two-MDT change that makes a name (a remote
 * mkdir, a link across MDTs): \a r's last name for \a t's inode, of \a type
 * (DT_DIR: one more link of the directory), the directory's times and the
 * commit record, in one batch. \return 0 or -errno.
 */
static int commit_new_name(struct mds_ns *ns, struct ns_res *r, const struct ns_dtx *t,
			   uint8_t type)
{
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	ns_dentry_put(b, &r->r_dir.in_fid, r->r_name, r->r_nlen, &t->t_fid, type);
	if (type == DT_DIR)
		r->r_dir.in_nlink++;
	r->r_dir.in_mtime_ns = r->r_dir.in_ctime_ns = ns_now_ns();
	ns_inode_put(b, &r->r_dir);
	ns->ns_dtx->dx_commit_rec(ns->ns_dtx_arg, b, t);
	return ns_batch_commit(ns, b);
}

/*
 * link() of \a fid, another MDT's inode, to the new name \a dst: a
 * distributed transaction (mds/dtx.c, DTX_LINK). Under the new name's and
 * its directory's locks, the participant checks the inode (not a directory
 * nor a symlink: -EPERM, -EXDEV; may_linkat()) and counts the link, durably;
 * then the name goes with the coordinator's commit record in one batch. A
 * new name that changed under the walk is walked again here. \return 0 or
 * -errno; *\a prepared when the caller must finish \a tp once its locks
 * are released.
 */
static int link_remote(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *fid,
		       struct ns_res *rd, const struct weir_fid *dst_at, const char *dst,
		       struct ns_lockset *ls, struct mds_inode *out, struct ns_dtx *tp,
		       bool *prepared)
{
	unsigned tries = 0;
	int rc;
again:
	rc = ns_resolve(ns, cr, dst_at, dst, NS_RES_PARENT, rd);
	if (!rc)
		rc = new_name_check(rd, false);
	if (!rc)
		rc = ns_name_lock(ns, ls, rd);
	if (rc == -EAGAIN && ns_retry(&tries, "link")) {
		ns_ls_release(ns, ls);
		goto again;
	}
	if (rc)
		return rc;
	struct weir_fid dfid = rd->r_dir.in_fid;
	ns_ls_add_inode(ls, &dfid);
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	rc = ns_inode_get(ns, &dfid, &rd->r_dir);
	if (!rc && ns_dir_dead(ns, &rd->r_dir))
		rc = -ENOENT; /* removed since the walk */
	if (!rc)
		rc = mds_perm_may_create(cr, &rd->r_dir);
	if (rc)
		return rc;
	struct ns_dtx t = { .t_op = NS_DTX_LINK, .t_mdt = (uint32_t)weir_fid_mdt(fid), .t_fid = *fid,
			    .t_parent = rd->r_dir.in_fid, .t_uid = mds_cred_uid(cr), .t_gid = mds_cred_gid(cr),
			    .t_cred = cr };
	rc = ns->ns_dtx->dx_prepare(ns->ns_dtx_arg, &t);
	if (rc)
		return rc;
	rc = commit_new_name(ns, rd, &t, ns_mode_to_dt(t.t_in.in_mode));
	*tp = t;
	*prepared = true;
	if (!rc)
		*out = t.t_in;
	return rc;
}

int mds_ns_link(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		const char *src, const struct weir_fid *dst_at, const char *dst, uint32_t flags,
		struct mds_inode *out)
{
	struct two_res *t = malloc(sizeof(*t));
	struct ns_res *rs, *rd;
	int rc;

	if (!t)
		return -ENOMEM;
	rs = &t->t_a;
	rd = &t->t_b;
	struct ns_lockset ls;
	struct ns_dtx tx;
	bool prepared = false;
	unsigned tries = 0;
	ns_ls_init(&ls);
	ns_change_lock(ns);
again:
	rc = ns_resolve(ns, cr, src_at, src,
			((flags & MDS_AT_FOLLOW) ? NS_RES_FOLLOW : 0) | NS_RES_REDIRECT, rs);
	bool src_remote = rc == -EREMOTE && rs->r_redir_rest && !rs->r_redir_rest[0];
	free(rs->r_redir_rest);
	rs->r_redir_rest = NULL;
	size_t sl = src ? strlen(src) : 0;
	if (src_remote && sl && src[sl - 1] == '/') {
		rc = -ENOTDIR; /* "file/": never a directory (only files are linked) */
		goto out_unlock;
	}
	if (src_remote && ns->ns_dtx) {
		/* the object is another MDT's inode: a link across MDTs */
		rc = link_remote(ns, cr, &rs->r_redir, rd, dst_at, dst, &ls, out, &tx, &prepared);
		goto out_unlock;
	}
	if (!rc && !rs->r_exists)
		rc = -ENOENT;
	if (rc)
		goto out_unlock;
	rc = ns_resolve(ns, cr, dst_at, dst, NS_RES_PARENT, rd);
	if (!rc)
		rc = new_name_check(rd, false);
	if (!rc) {
		/* the new name's lock (still free?), then the directory's and the
		 * object's inode locks and their records read again */
		rc = ns_name_lock(ns, &ls, rd);
		if (!rc) {
			struct weir_fid dfid = rd->r_dir.in_fid, sfid = rs->r_in.in_fid;
			ns_ls_add_inode(&ls, &dfid);
			ns_ls_add_inode(&ls, &sfid);
			ns_ls_lock(ns, &ls, NS_LOCK_INODE);
			rc = ns_inode_get(ns, &dfid, &rd->r_dir);
			if (!rc && ns_dir_dead(ns, &rd->r_dir))
				rc = -ENOENT; /* removed since the walk */
			if (!rc) {
				rc = ns_inode_get(ns, &sfid, &rs->r_in);
				if (rc == -ENOENT)
					rc = -EAGAIN; /* its last name went meanwhile: walk again */
			}
		}
		if (rc == -EAGAIN && ns_retry(&tries, "link")) {
			ns_ls_release(ns, &ls);
			goto again;
		}
	}
	if (!rc)
		rc = ns_may_linkat(cr, &rs->r_in);
	if (!rc)
		rc = mds_perm_may_create(cr, &rd->r_dir);
	if (!rc && S_ISDIR(rs->r_in.in_mode))
		rc = -EPERM;
	if (!rc && rs->r_in.in_nlink == 0)
		rc = -ENOENT;
	if (!rc && rs->r_in.in_nlink >= MDS_LINK_MAX)
		rc = -EMLINK;
	if (rc)
		goto out_unlock;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	int64_t now = ns_now_ns();
	*out = rs->r_in;
	out->in_nlink++;
	out->in_ctime_ns = now;
	ns_inode_put(b, out);
	ns_dentry_put(b, &rd->r_dir.in_fid, rd->r_name, rd->r_nlen, &out->in_fid,
		      ns_mode_to_dt(out->in_mode));
	if (weir_fid_eq(&rd->r_dir.in_fid, &out->in_fid))
		goto out_commit; /* never: a directory is refused above */
	rd->r_dir.in_mtime_ns = rd->r_dir.in_ctime_ns = now;
	ns_inode_put(b, &rd->r_dir);
out_commit:
	rc = ns_batch_commit(ns, b);
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (prepared) /* the participant told, with no lock held (mds/dtx.c) */
		ns->ns_dtx->dx_finish(ns->ns_dtx_arg, &tx, rc == 0);
	free(t);
	return rc;
}

/*
 * rmdir of a remote directory, or unlink of a remote entry (the inode on
 * another MDT): a distributed transaction (mds/dtx.c, DTX_RMDIR or
 * DTX_UNLINK). Under the name's and the parent's locks the participant
 * checks the directory empty and holds it (an entry's inode: it exists);
 * then the name goes, with the coordinator's commit record, in one batch;
 * the participant drops the inode's link at the commit. \return 0, -EAGAIN
 * (the name changed since the walk: walk again), or -errno.
 */
static int unlink_remote(struct mds_ns *ns, const struct mds_cred *cr, struct ns_res *r,
			 struct ns_lockset *ls, struct mds_unlink_res *res, struct ns_dtx *tp,
			 bool *prepared)
{
	if (!ns->ns_dtx)
		return -EREMOTE;
	/* may_delete()'s checks on the parent first: nobody without the right
	 * makes both MDTs write (the sticky-bit rule needs the victim: below) */
	int rc = mds_perm_check(cr, &r->r_dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	rc = ns_name_lock(ns, ls, r);
	if (rc)
		return rc;
	ns_ls_add_inode(ls, &r->r_dir.in_fid);
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	struct weir_fid dfid = r->r_dir.in_fid;
	rc = ns_inode_get(ns, &dfid, &r->r_dir);
	if (rc)
		return rc;
	bool dir = S_ISDIR(r->r_in.in_mode);
	struct ns_dtx t = { .t_op = dir ? NS_DTX_RMDIR : NS_DTX_UNLINK, .t_fid = r->r_in.in_fid,
			    .t_parent = r->r_dir.in_fid };
	t.t_mdt = (uint32_t)weir_fid_mdt(&r->r_in.in_fid);
	rc = ns->ns_dtx->dx_prepare(ns->ns_dtx_arg, &t);
	if (rc)
		return rc;
	/* the sticky-bit rules need the victim's owner: the participant's record */
	rc = mds_perm_may_delete(cr, &r->r_dir, &t.t_in, dir);
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		int64_t now = ns_now_ns();
		ns_dentry_del(b, &r->r_dir.in_fid, r->r_name, r->r_nlen);
		if (dir)
			r->r_dir.in_nlink--;
		r->r_dir.in_mtime_ns = r->r_dir.in_ctime_ns = now;
		ns_inode_put(b, &r->r_dir);
		ns->ns_dtx->dx_commit_rec(ns->ns_dtx_arg, b, &t);
		rc = ns_batch_commit(ns, b);
	}
	*tp = t; /* the caller finishes it once its locks are released */
	*prepared = true;
	if (!rc && res) {
		res->ur_gone = t.t_fid;
		res->ur_dir = r->r_dir;
	}
	return rc;
}

/*
 * The rest of a remote directory's mkdir, once create_common() holds the
 * name's lock: the parent's inode lock and record read again, then the
 * participant makes the inode (mds/dtx.c), then the dentry and the parent's
 * link count go with the coordinator's commit record in one batch.
 */
static int create_remote_locked(struct mds_ns *ns, const struct mds_cred *cr, struct ns_res *r,
				const struct ns_new *nn, struct ns_lockset *ls,
				struct mds_inode *out, struct ns_dtx *tp, bool *prepared)
{
	struct ns_dtx t = { .t_op = NS_DTX_MKDIR, .t_mdt = nn->nn_remote_mdt1 - 1 };
	ns_ls_add_inode(ls, &r->r_dir.in_fid);
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	struct weir_fid dfid = r->r_dir.in_fid;
	int rc = ns_inode_get(ns, &dfid, &r->r_dir);
	if (!rc && (!S_ISDIR(r->r_dir.in_mode) || ns_dir_dead(ns, &r->r_dir)))
		rc = -ENOENT; /* removed since the walk */
	if (!rc)
		rc = mds_perm_may_create(cr, &r->r_dir);
	if (rc)
		return rc;
	/* inode_init_owner(): a setgid parent gives its group, and setgid */
	t.t_mode = nn->nn_mode;
	t.t_gid = mds_cred_gid(cr);
	if (r->r_dir.in_mode & S_ISGID) {
		t.t_gid = r->r_dir.in_gid;
		t.t_mode |= S_ISGID;
	}
	t.t_uid = mds_cred_uid(cr);
	t.t_parent = r->r_dir.in_fid;
	t.t_pdir = &r->r_dir; /* its default layout, inherited (as ns_create_locked does) */
	rc = ns->ns_dtx->dx_prepare(ns->ns_dtx_arg, &t);
	if (rc)
		return rc;
	rc = commit_new_name(ns, r, &t, DT_DIR);
	*tp = t; /* the caller finishes it once its locks are released */
	*prepared = true;
	if (!rc)
		*out = t.t_in;
	return rc;
}

int mds_ns_mkdir_remote(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			const char *path, uint32_t mode, uint32_t mdt, struct mds_inode *out)
{
	if (mdt == ns->ns_conf.nc_mdt_index)
		return mds_ns_mkdir(ns, cr, at, path, mode, out);
	if (!ns->ns_dtx || mdt >= WEIR_MDT_MAX)
		return -EINVAL;
	struct ns_new nn = { .nn_mode = S_IFDIR | (mode & (0777 | S_ISVTX)), .nn_remote_mdt1 = mdt + 1 };
	return create_common(ns, cr, at, path, &nn, out);
}

int mds_ns_lookup_remote(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			 const char *path, struct mds_inode *out)
{
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve(ns, cr, at, path, NS_RES_PARENT, r);
	if (!rc && !r->r_remote)
		rc = r->r_exists ? -EINVAL : -ENOENT;
	if (!rc)
		*out = r->r_in;
	pthread_rwlock_unlock(&ns->ns_lock);
	free(r);
	return rc;
}

void mds_ns_dtx_set(struct mds_ns *ns, const struct ns_dtx_ops *ops, void *arg)
{
	ns->ns_dtx = ops;
	ns->ns_dtx_arg = arg;
}

int mds_ns_unlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, bool is_dir)
{
	return mds_ns_unlink_fid(ns, cr, at, path, is_dir, NULL, NULL);
}

int mds_ns_unlink_fid(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, bool is_dir, const struct weir_fid *expect,
		      struct mds_unlink_res *res)
{
	struct ns_res *r = malloc(sizeof(*r));
	struct ns_lockset ls;
	struct ns_dtx t;
	bool prepared = false;
	unsigned tries = 0;
	int rc;

	if (!r)
		return -ENOMEM;
	ns_ls_init(&ls);
	ns_change_lock(ns);
again:
	rc = ns_resolve(ns, cr, at, path, NS_RES_PARENT, r);
	if (rc)
		goto out_unlock;
	if (r->r_last != NS_LAST_NORM) {
		/* do_rmdir / do_unlinkat on "/", ".", ".." */
		if (!is_dir)
			rc = -EISDIR;
		else
			rc = r->r_last == NS_LAST_DOTDOT ? -ENOTEMPTY
			     : r->r_last == NS_LAST_DOT  ? -EINVAL
							 : -EBUSY;
		goto out_unlock;
	}
	if (!r->r_exists) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (!is_dir && r->r_slash) {
		rc = S_ISDIR(r->r_in.in_mode) ? -EISDIR : -ENOTDIR;
		goto out_unlock;
	}
	if (expect && !weir_fid_eq(expect, &r->r_in.in_fid)) {
		rc = -ESTALE;
		goto out_unlock;
	}
	if (r->r_remote) {
		bool rdir = S_ISDIR(r->r_in.in_mode);
		rc = is_dir != rdir ? (is_dir ? -ENOTDIR : -EISDIR)
				    : unlink_remote(ns, cr, r, &ls, res, &t, &prepared);
		if (rc == -EAGAIN && ns_retry(&tries, "rmdir_remote")) {
			ns_ls_release(ns, &ls);
			goto again;
		}
		goto out_unlock;
	}
	rc = mds_perm_may_delete(cr, &r->r_dir, &r->r_in, is_dir);
	if (rc)
		goto out_unlock;
	rc = ns_name_lock(ns, &ls, r); /* does it still name what the walk found? */
	if (rc == -EAGAIN && ns_retry(&tries, "unlink")) {
		ns_ls_release(ns, &ls);
		goto again;
	}
	if (rc)
		goto out_unlock;
	/* the directory's and the victim's records, read again under their locks
	 * (the name keeps the victim alive; other names of the directory change) */
	ns_ls_add_inode(&ls, &r->r_dir.in_fid);
	ns_ls_add_inode(&ls, &r->r_in.in_fid);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	struct weir_fid dfid = r->r_dir.in_fid, vfid = r->r_in.in_fid; /* (outputs cleared first) */
	rc = ns_inode_get(ns, &dfid, &r->r_dir);
	if (!rc)
		rc = ns_inode_get(ns, &vfid, &r->r_in);
	if (!rc) /* again: a chmod of the directory, a chown of either, came meanwhile */
		rc = mds_perm_may_delete(cr, &r->r_dir, &r->r_in, is_dir);
	if (rc)
		goto out_unlock;
	if (is_dir) {
		/* creates in it read it again under its lock, held here */
		bool empty;
		rc = ns_dir_is_empty(ns, &r->r_in.in_fid, &empty);
		if (!rc && !empty)
			rc = -ENOTEMPTY;
		if (rc)
			goto out_unlock;
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	int64_t now = ns_now_ns();
	ns_dentry_del(b, &r->r_dir.in_fid, r->r_name, r->r_nlen);
	if (is_dir) {
		rc = ns_dir_release(ns, b, &r->r_in, now);
		r->r_dir.in_nlink--;
	} else {
		rc = ns_inode_unlink(ns, b, &r->r_in, now);
	}
	r->r_dir.in_mtime_ns = r->r_dir.in_ctime_ns = now;
	ns_inode_put(b, &r->r_dir);
	if (rc)
		kv_batch_free(b);
	else
		rc = ns_batch_commit(ns, b);
	if (!rc && res) {
		res->ur_gone = r->r_in.in_fid;
		res->ur_dir = r->r_dir;
	}
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (prepared) /* the participant told, with no lock held (mds/dtx.c) */
		ns->ns_dtx->dx_finish(ns->ns_dtx_arg, &t, rc == 0);
	free(r);
	return rc;
}

/* ------------------------------------------------------------ rename */

/* Does the rename move a directory to another parent (either side, for an exchange)? */
static bool rename_moves_dir(const struct ns_res *ro, const struct ns_res *rn)
{
	if (weir_fid_eq(&ro->r_dir.in_fid, &rn->r_dir.in_fid))
		return false;
	return (ro->r_exists && S_ISDIR(ro->r_in.in_mode)) ||
	       (rn->r_exists && S_ISDIR(rn->r_in.in_mode));
}

/*
 * A rename that moves no directory to another parent, under ns_lock held for
 * reading: both names' locks, then (if the names are still what the walks
 * found) the inode locks of both directories and both objects, and their
 * records read again into \a ro and \a rn. \return 0, -EAGAIN (a name
 * changed: release \a ls and walk again), or a read error.
 */
static int rename_lock(struct mds_ns *ns, struct ns_res *ro, struct ns_res *rn,
		       struct ns_lockset *ls)
{
	ns_ls_add_name(ls, &ro->r_dir.in_fid, ro->r_name, ro->r_nlen);
	ns_ls_add_name(ls, &rn->r_dir.in_fid, rn->r_name, rn->r_nlen);
	ns_ls_lock(ns, ls, NS_LOCK_NAME);
	int rc = ns_name_recheck(ns, ro);
	if (!rc)
		rc = ns_name_recheck(ns, rn);
	if (rc)
		return rc;
	struct ns_res *sides[2] = { ro, rn };
	for (int i = 0; i < 2; i++) {
		ns_ls_add_inode(ls, &sides[i]->r_dir.in_fid);
		if (sides[i]->r_exists)
			ns_ls_add_inode(ls, &sides[i]->r_in.in_fid);
	}
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	for (int i = 0; i < 2 && !rc; i++) {
		struct weir_fid dfid = sides[i]->r_dir.in_fid, ofid = sides[i]->r_in.in_fid;
		rc = ns_inode_get(ns, &dfid, &sides[i]->r_dir);
		if (!rc && (!S_ISDIR(sides[i]->r_dir.in_mode) || ns_dir_dead(ns, &sides[i]->r_dir)))
			rc = -ENOENT; /* the target's directory removed since the walk */
		if (!rc && sides[i]->r_exists && !sides[i]->r_remote)
			rc = ns_inode_get(ns, &ofid, &sides[i]->r_in); /* its name keeps it */
	}
	return rc;
}

/* do_renameat2() and vfs_rename() checks, in Linux's order. */
static int rename_check(struct mds_ns *ns, const struct mds_cred *cr, struct ns_res *ro,
			struct ns_res *rn, uint32_t flags, bool *same)
{
	bool xchg = flags & MDS_RENAME_EXCHANGE;
	bool odir, ndir = false;
	bool within;
	int rc;

	*same = false;
	if (ro->r_last != NS_LAST_NORM || rn->r_last != NS_LAST_NORM)
		return -EBUSY;
	if (!ro->r_exists)
		return -ENOENT;
	if ((flags & MDS_RENAME_NOREPLACE) && rn->r_exists)
		return -EEXIST;
	if (xchg) {
		if (!rn->r_exists)
			return -ENOENT;
		if (!S_ISDIR(rn->r_in.in_mode) && rn->r_slash)
			return -ENOTDIR;
	}
	odir = S_ISDIR(ro->r_in.in_mode);
	if (rn->r_exists)
		ndir = S_ISDIR(rn->r_in.in_mode);
	if (!odir && (ro->r_slash || (!xchg && rn->r_slash)))
		return -ENOTDIR;
	/* the source must not be an ancestor of the target ... */
	if (odir) {
		rc = ns_is_within(ns, &rn->r_dir.in_fid, &ro->r_in.in_fid, &within);
		if (rc)
			return rc;
		if (within)
			return -EINVAL;
	}
	/* ... nor the target one of the source */
	if (rn->r_exists && ndir) {
		rc = ns_is_within(ns, &ro->r_dir.in_fid, &rn->r_in.in_fid, &within);
		if (rc)
			return rc;
		if (within)
			return xchg ? -EINVAL : -ENOTEMPTY;
	}
	if (rn->r_exists && weir_fid_eq(&ro->r_in.in_fid, &rn->r_in.in_fid)) {
		*same = true; /* two names of one inode: nothing to do */
		return 0;
	}
	rc = mds_perm_may_delete(cr, &ro->r_dir, &ro->r_in, odir);
	if (rc)
		return rc;
	if (!rn->r_exists)
		rc = mds_perm_may_create(cr, &rn->r_dir);
	else
		rc = mds_perm_may_delete(cr, &rn->r_dir, &rn->r_in, xchg ? ndir : odir);
	if (rc)
		return rc;
	if (!weir_fid_eq(&ro->r_dir.in_fid, &rn->r_dir.in_fid)) {
		/* ".." changes: write permission on the directory moved */
		if (odir) {
			rc = mds_perm_check(cr, &ro->r_in, MDS_MAY_WRITE);
			if (rc)
				return rc;
		}
		if (xchg && ndir) {
			rc = mds_perm_check(cr, &rn->r_in, MDS_MAY_WRITE);
			if (rc)
				return rc;
		}
	}
	if (!xchg && rn->r_exists && ndir) {
		bool empty;
		rc = ns_dir_is_empty(ns, &rn->r_in.in_fid, &empty);
		if (rc)
			return rc;
		if (!empty)
			return -ENOTEMPTY;
	}
	return 0;
}

/* Is \a p one name (not "", ".", "..", nor with a slash)? */
static bool one_name(const char *p)
{
	if (!p)
		return false;
	size_t l = strnlen(p, NS_NAME_MAX + 1);
	return l && l <= NS_NAME_MAX && !strchr(p, '/') && strcmp(p, ".") && strcmp(p, "..");
}

/*
 * rename() of name \a sname in \a sdir, another MDT's directory, to \a dst
 * here: a distributed transaction (mds/dtx.c, DTX_RENAME), this MDT the
 * coordinator. Under the new name's and its directory's locks (and the
 * replaced object's inode lock), the participant checks the source (it
 * exists, may be deleted; not a directory nor a symlink: -EXDEV) and holds
 * its name, durably; then the new name, the replaced object's lost link and
 * the commit record go in one batch; the participant removes the source
 * name at the commit. The moved object's inode does not change MDT: the new
 * name is a remote entry unless it is this MDT's. Replacing a remote entry
 * and RENAME_EXCHANGE answer -EXDEV. \return 0 or -errno; *\a prepared
 * when the caller must finish \a tp (with *\a committed) once its locks are
 * released.
 */
static int rename_cross(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *sdir,
			const char *sname, struct ns_res *rn, const struct weir_fid *dst_at,
			const char *dst, uint32_t flags, struct ns_lockset *ls, struct ns_dtx *tp,
			bool *prepared, bool *committed, struct weir_fid *moved,
			struct weir_fid *victim)
{
	unsigned tries = 0;
	int rc;
	if (flags & MDS_RENAME_EXCHANGE)
		return -EXDEV;
again:
	rc = ns_resolve(ns, cr, dst_at, dst, NS_RES_PARENT, rn);
	if (rc)
		return rc;
	if (rn->r_last != NS_LAST_NORM)
		return -EBUSY;
	if ((flags & MDS_RENAME_NOREPLACE) && rn->r_exists)
		return -EEXIST;
	if (rn->r_exists && rn->r_remote)
		return -EXDEV; /* its link count is on another MDT: not yet */
	rc = ns_name_lock(ns, ls, rn);
	if (rc == -EAGAIN && ns_retry(&tries, "rename")) {
		ns_ls_release(ns, ls);
		goto again;
	}
	if (rc)
		return rc;
	struct weir_fid dfid = rn->r_dir.in_fid, vfid = rn->r_in.in_fid;
	ns_ls_add_inode(ls, &dfid);
	if (rn->r_exists)
		ns_ls_add_inode(ls, &vfid);
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	rc = ns_inode_get(ns, &dfid, &rn->r_dir);
	if (!rc && (!S_ISDIR(rn->r_dir.in_mode) || ns_dir_dead(ns, &rn->r_dir)))
		rc = -ENOENT; /* removed since the walk */
	if (!rc && rn->r_exists)
		rc = ns_inode_get(ns, &vfid, &rn->r_in); /* its name keeps it */
	if (!rc)
		rc = rn->r_exists ? mds_perm_may_delete(cr, &rn->r_dir, &rn->r_in, false)
				  : mds_perm_may_create(cr, &rn->r_dir);
	if (rc)
		return rc;
	struct ns_dtx t = { .t_op = NS_DTX_RENAME, .t_mdt = (uint32_t)weir_fid_mdt(sdir),
			    .t_parent = *sdir, .t_uid = mds_cred_uid(cr), .t_gid = mds_cred_gid(cr),
			    .t_cred = cr, .t_name = sname, .t_nlen = strlen(sname) };
	rc = ns->ns_dtx->dx_prepare(ns->ns_dtx_arg, &t);
	if (rc)
		return rc;
	*tp = t;
	*prepared = true; /* from here the caller finishes it: aborted unless committed */
	if (rn->r_exists && weir_fid_eq(&rn->r_in.in_fid, &t.t_fid))
		return 0; /* two names of one inode: nothing to do (aborted) */
	if (rn->r_exists && S_ISDIR(rn->r_in.in_mode))
		return -EISDIR; /* a non-directory over a directory */
	if (rn->r_slash)
		return -ENOTDIR;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	int64_t now = ns_now_ns();
	ns_dentry_put(b, &rn->r_dir.in_fid, rn->r_name, rn->r_nlen, &t.t_fid, t.t_type);
	if (rn->r_exists)
		rc = ns_inode_unlink(ns, b, &rn->r_in, now);
	rn->r_dir.in_mtime_ns = rn->r_dir.in_ctime_ns = now;
	ns_inode_put(b, &rn->r_dir);
	ns->ns_dtx->dx_commit_rec(ns->ns_dtx_arg, b, &t);
	if (rc) {
		kv_batch_free(b);
		return rc;
	}
	rc = ns_batch_commit(ns, b);
	*committed = rc == 0;
	if (!rc && moved)
		*moved = t.t_fid;
	if (!rc && victim && rn->r_exists)
		*victim = rn->r_in.in_fid;
	return rc;
}

int mds_ns_rename(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		  const char *src, const struct weir_fid *dst_at, const char *dst, uint32_t flags)
{
	return mds_ns_rename_fids(ns, cr, src_at, src, dst_at, dst, flags, NULL, NULL);
}

int mds_ns_rename_fids(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		       const char *src, const struct weir_fid *dst_at, const char *dst,
		       uint32_t flags, struct weir_fid *moved, struct weir_fid *victim)
{
	if (moved)
		*moved = (struct weir_fid){ 0, 0 };
	if (victim)
		*victim = (struct weir_fid){ 0, 0 };
	bool xchg = flags & MDS_RENAME_EXCHANGE;
	struct two_res *t;
	struct ns_res *ro, *rn;
	bool same;
	int rc;

	if (flags & ~(MDS_RENAME_NOREPLACE | MDS_RENAME_EXCHANGE | MDS_RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & (MDS_RENAME_NOREPLACE | MDS_RENAME_WHITEOUT)) && xchg)
		return -EINVAL;
	if (flags & MDS_RENAME_WHITEOUT)
		return -EINVAL; /* no whiteouts: what a filesystem without them answers */
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	ro = &t->t_a;
	rn = &t->t_b;
	struct ns_lockset ls;
	struct ns_dtx tx;
	bool prepared = false, committed = false;
	unsigned tries = 0;
	bool excl = ns->ns_conf.nc_pdirops_off; /* ns_change_lock() took it for writing */
	ns_ls_init(&ls);
	ns_change_lock(ns);
again:
	rc = ns_resolve(ns, cr, src_at, src, NS_RES_PARENT | NS_RES_REDIRECT, ro);
	if (rc == -EREMOTE && ns->ns_dtx && one_name(ro->r_redir_rest)) {
		/* the source is a name in another MDT's directory (the client
		 * sends it as that directory and the name): across MDTs */
		char *sname = ro->r_redir_rest;
		struct weir_fid sdir = ro->r_redir;
		ro->r_redir_rest = NULL;
		rc = rename_cross(ns, cr, &sdir, sname, rn, dst_at, dst, flags, &ls, &tx, &prepared,
				  &committed, moved, victim);
		free(sname);
		goto out_unlock;
	}
	free(ro->r_redir_rest);
	ro->r_redir_rest = NULL;
	if (!rc)
		rc = ns_resolve(ns, cr, dst_at, dst, NS_RES_PARENT, rn);
	/* a remote entry is moved as a name (its inode stays where it is), and
	 * replaced as a name (its inode's MDT drops the link: DTX_UNLINK); a
	 * remote directory is neither (its '..' and emptiness are another
	 * MDT's), and nothing remote is exchanged */
	if (!rc && ((ro->r_remote && (S_ISDIR(ro->r_in.in_mode) || xchg)) ||
		    (rn->r_remote && rn->r_exists && (S_ISDIR(rn->r_in.in_mode) || xchg) &&
		     !(ro->r_exists && weir_fid_eq(&ro->r_in.in_fid, &rn->r_in.in_fid)))))
		rc = -EXDEV; /* not across MDTs yet (docs/dne.md) */
	if (!rc && !excl && rename_moves_dir(ro, rn)) {
		/* a directory changes parent: its loop check reads the target's
		 * ancestors, so it runs alone (Lustre's rename lock) */
		pthread_rwlock_unlock(&ns->ns_lock);
		pthread_rwlock_wrlock(&ns->ns_lock);
		excl = true;
		goto again;
	}
	if (!rc && !excl && ro->r_last == NS_LAST_NORM && rn->r_last == NS_LAST_NORM) {
		rc = rename_lock(ns, ro, rn, &ls);
		if (rc == -EAGAIN && ns_retry(&tries, "rename")) {
			ns_ls_release(ns, &ls);
			goto again;
		}
	}
	if (!rc && excl && ro->r_last == NS_LAST_NORM && rn->r_last == NS_LAST_NORM) {
		/* no name locks taken (ns_lock is held for writing): the holds
		 * of a two-MDT change in progress, as ns_name_recheck() does */
		if ((ro->r_exists && ns_held(ns, &ro->r_dir.in_fid, ro->r_name, ro->r_nlen)) ||
		    (rn->r_exists && ns_held(ns, &rn->r_dir.in_fid, rn->r_name, rn->r_nlen)))
			rc = -EBUSY;
		else if (ns_dir_dead(ns, &rn->r_dir))
			rc = -ENOENT;
	}
	if (!rc)
		rc = rename_check(ns, cr, ro, rn, flags, &same);
	if (rc || same)
		goto out_unlock;
	if (rn->r_exists && rn->r_remote) {
		/* a file of another MDT replaced: that MDT drops its link at the
		 * commit of this batch (mds/dtx.c) */
		tx = (struct ns_dtx){ .t_op = NS_DTX_UNLINK,
				      .t_mdt = (uint32_t)weir_fid_mdt(&rn->r_in.in_fid),
				      .t_fid = rn->r_in.in_fid, .t_parent = rn->r_dir.in_fid };
		rc = ns->ns_dtx ? ns->ns_dtx->dx_prepare(ns->ns_dtx_arg, &tx) : -EXDEV;
		if (rc)
			goto out_unlock;
		prepared = true;
	}

	bool same_parent = weir_fid_eq(&ro->r_dir.in_fid, &rn->r_dir.in_fid);
	struct mds_inode *po = &ro->r_dir, *pn = same_parent ? &ro->r_dir : &rn->r_dir;
	struct mds_inode *so = &ro->r_in, *sn = &rn->r_in;
	bool odir = S_ISDIR(so->in_mode), ndir = rn->r_exists && S_ISDIR(sn->in_mode);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	int64_t now = ns_now_ns();
	if (xchg) {
		ns_dentry_put(b, &po->in_fid, ro->r_name, ro->r_nlen, &sn->in_fid,
			      ns_mode_to_dt(sn->in_mode));
		ns_dentry_put(b, &pn->in_fid, rn->r_name, rn->r_nlen, &so->in_fid,
			      ns_mode_to_dt(so->in_mode));
		if (!same_parent) {
			if (odir)
				so->in_parent = pn->in_fid;
			if (ndir)
				sn->in_parent = po->in_fid;
			if (S_ISREG(so->in_mode))
				so->in_parent = pn->in_fid; /* HSM keys: a hint */
			if (S_ISREG(sn->in_mode))
				sn->in_parent = po->in_fid;
			po->in_nlink = po->in_nlink + (ndir ? 1 : 0) - (odir ? 1 : 0);
			pn->in_nlink = pn->in_nlink + (odir ? 1 : 0) - (ndir ? 1 : 0);
		}
		sn->in_ctime_ns = now;
		ns_inode_put(b, sn);
	} else {
		ns_dentry_del(b, &po->in_fid, ro->r_name, ro->r_nlen);
		ns_dentry_put(b, &pn->in_fid, rn->r_name, rn->r_nlen, &so->in_fid,
			      ns_mode_to_dt(so->in_mode));
		if (rn->r_exists) {
			if (ndir) {
				rc = ns_dir_release(ns, b, sn, now);
				pn->in_nlink--;
			} else if (rn->r_remote) {
				ns->ns_dtx->dx_commit_rec(ns->ns_dtx_arg, b, &tx);
			} else {
				rc = ns_inode_unlink(ns, b, sn, now);
			}
		}
		if (odir && !same_parent) {
			po->in_nlink--;
			pn->in_nlink++;
			so->in_parent = pn->in_fid;
		}
		if (S_ISREG(so->in_mode))
			so->in_parent = pn->in_fid; /* HSM keys: the file's directory (a hint) */
	}
	if (!ro->r_remote) { /* (a remote entry's inode is another MDT's) */
		so->in_ctime_ns = now;
		ns_inode_put(b, so);
	}
	po->in_mtime_ns = po->in_ctime_ns = now;
	pn->in_mtime_ns = pn->in_ctime_ns = now;
	ns_inode_put(b, po);
	if (!same_parent)
		ns_inode_put(b, pn);
	if (rc) {
		kv_batch_free(b);
	} else {
		rc = ns_batch_commit(ns, b);
		committed = rc == 0;
	}
	if (!rc && moved)
		*moved = so->in_fid;
	if (!rc && victim && rn->r_exists)
		*victim = sn->in_fid;
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (prepared) /* the participant told, with no lock held (mds/dtx.c) */
		ns->ns_dtx->dx_finish(ns->ns_dtx_arg, &tx, committed);
	free(t);
	return rc;
}
