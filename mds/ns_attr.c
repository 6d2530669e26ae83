/*
 * mds/ns_attr.c - setattr: chmod, chown, utimensat, truncate and the
 * privilege drop of a write, with the kernel's permission rules
 * (fs/attr.c: setattr_prepare, chown_ok, chgrp_ok, setattr_copy;
 * fs/open.c: chown_common; fs/utimes.c: vfs_utimes; fs/inode.c:
 * should_remove_suid). A lone SA_KILL_SUID (a writer's file_remove_privs,
 * from libweir's first write or the kernel's SETATTR through weir-fuse) is
 * allowed to the owner, to a caller with write permission, and while the
 * file is open for writing (a handle keeps writing after a chmod, as on
 * Linux). One RocksDB batch under ns_lock held for reading and the inode's
 * lock (mds/ns_lock.c), which a truncate's epoch bump and the writers' count
 * are read under.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "hsm.h"

#define SA_TIMES (MDS_SA_ATIME | MDS_SA_MTIME | MDS_SA_ATIME_NOW | MDS_SA_MTIME_NOW)

/* setattr_prepare(): may \a cr make the change \a sa to \a in? */
static int setattr_check(const struct mds_cred *cr, const struct mds_inode *in,
			 const struct mds_setattr *sa, uint32_t writers)
{
	uint32_t v = sa->sa_valid;
	bool root = mds_cred_is_root(cr);

	if ((v & MDS_SA_UID) && !root &&
	    !(cr->cr_uid == in->in_uid && sa->sa_uid == in->in_uid))
		return -EPERM;
	if ((v & MDS_SA_GID) && !root &&
	    !(cr->cr_uid == in->in_uid &&
	      (sa->sa_gid == in->in_gid || mds_cred_in_group(cr, sa->sa_gid))))
		return -EPERM;
	if ((v & MDS_SA_MODE) && !mds_perm_owner(cr, in))
		return -EPERM;
	if ((v & MDS_SA_KILL_SUID) && !mds_perm_owner(cr, in) &&
	    mds_perm_check(cr, in, MDS_MAY_WRITE) && !writers)
		return -EPERM; /* only a writer's drop: write permission, or the file open for it */
	if (v & SA_TIMES) {
		bool touch = (v & SA_TIMES) == (MDS_SA_ATIME_NOW | MDS_SA_MTIME_NOW);
		if (!mds_perm_owner(cr, in)) {
			/* explicit times (ATTR_TIMES_SET): the owner only; "now" for
			 * both: write permission suffices */
			if (!touch)
				return -EPERM;
			int rc = mds_perm_check(cr, in, MDS_MAY_WRITE);
			if (rc)
				return rc;
		}
	}
	if ((v & MDS_SA_SIZE) && S_ISDIR(in->in_mode))
		return -EISDIR;
	if ((v & MDS_SA_SIZE) && sa->sa_size > (uint64_t)WEIR_MAX_FILE_OFF)
		return -EFBIG;
	return 0;
}

/* Apply \a sa to \a in. \return true when something changed. */
static bool setattr_apply(struct mds_ns *ns, const struct mds_cred *cr, struct mds_inode *in,
			  const struct mds_setattr *sa)
{
	uint32_t v = sa->sa_valid;
	int64_t now = ns_now_ns();
	bool root = mds_cred_is_root(cr);

	if (v == MDS_SA_KILL_SUID) {
		/* file_remove_privs() of a write: only when there is something to drop */
		uint32_t kill = mds_perm_write_kill_bits(cr, in);
		if (!kill)
			return false;
		in->in_mode &= ~kill;
		in->in_ctime_ns = now;
		return true;
	}
	/* chown_common: for every caller, on the group before the change */
	if ((v & (MDS_SA_UID | MDS_SA_GID | MDS_SA_CHOWN)) && !S_ISDIR(in->in_mode))
		in->in_mode &= ~mds_perm_kill_bits(cr, in);
	if (v & MDS_SA_UID)
		in->in_uid = sa->sa_uid;
	if (v & MDS_SA_GID)
		in->in_gid = sa->sa_gid;
	if (v & MDS_SA_MODE) {
		uint32_t mode = sa->sa_mode & 07777;
		if (!root && !mds_cred_in_group(cr, in->in_gid))
			mode &= ~(uint32_t)S_ISGID;
		in->in_mode = (in->in_mode & S_IFMT) | mode;
	}
	if (v & MDS_SA_SIZE) {
		in->in_size = sa->sa_size;
		in->in_mtime_ns = now;
		in->in_mode &= ~mds_perm_write_kill_bits(cr, in);
	}
	if (v & MDS_SA_KILL_SUID)
		in->in_mode &= ~mds_perm_write_kill_bits(cr, in);
	if (v & MDS_SA_ATIME)
		in->in_atime_ns = sa->sa_atime_ns;
	else if (v & MDS_SA_ATIME_NOW)
		in->in_atime_ns = now;
	if (v & MDS_SA_MTIME)
		in->in_mtime_ns = sa->sa_mtime_ns;
	else if (v & MDS_SA_MTIME_NOW)
		in->in_mtime_ns = now;
	if (v & (MDS_SA_MTIME | MDS_SA_MTIME_NOW | MDS_SA_ATIME | MDS_SA_ATIME_NOW))
		ns_open_times_set(ns, &in->in_fid, now);
	in->in_ctime_ns = now;
	return true;
}

int mds_ns_setattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, uint32_t flags, const struct mds_setattr *sa,
		   struct mds_inode *out)
{
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_change_lock(ns);
	int rc = ns_resolve_obj_locked(ns, cr, at, path, flags, out, &ls);
	if (rc)
		goto out_unlock;
	uint32_t openers = 0, writers = 0;
	if (sa->sa_valid & MDS_SA_KILL_SUID)
		ns_open_counts(ns, &out->in_fid, &openers, &writers);
	rc = setattr_check(cr, out, sa, writers);
	if (rc)
		goto out_unlock;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	if ((sa->sa_valid & MDS_SA_SIZE) && S_ISREG(out->in_mode) &&
	    (out->in_flags & MDS_INODE_F_HSM) && sa->sa_size != out->in_size) {
		/* HSM: data_version, dirty; a released file is emptied or -EAGAIN (mds/hsm.c) */
		rc = mds_hsm_on_modify(ns, b, out, true, sa->sa_size);
		if (rc) {
			kv_batch_free(b);
			goto out_unlock;
		}
		if (!sa->sa_size)
			out->in_blocks = 0;
	}
	bool trunc = (sa->sa_valid & MDS_SA_SIZE) && S_ISREG(out->in_mode);
	if (!setattr_apply(ns, cr, out, sa)) {
		kv_batch_free(b);
		goto out_epoch;
	}
	ns_inode_put(b, out);
	rc = ns_batch_commit(ns, b);
out_epoch:
	/*
	 * Earlier glimpses are outdated: the epoch moves after the commit,
	 * still under the inode lock. getattr reads the epoch and then the
	 * inode without that lock (op_getattr); had the epoch moved first, a
	 * getattr in between would pair the size from before this truncate
	 * with the epoch after it, and a writer's close reporting that old
	 * size would be taken. (A failed commit moves it too: safe.)
	 */
	if (trunc)
		ns_size_epoch_bump(ns, &out->in_fid);
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}
