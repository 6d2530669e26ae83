/*
 * mds/perm.c - POSIX permission checks of the MDS, after the Linux VFS
 * (fs/namei.c: generic_permission, acl_permission_check, may_create,
 * may_delete, check_sticky; fs/attr.c: inode_owner_or_capable,
 * setattr_should_drop_sgid). No ACLs.
 *
 * A NULL cred is the MDS itself and passes as root. Root (uid 0) overrides
 * read and write bits everywhere, search on directories, and execute on a
 * non-directory only when some x bit is set (CAP_DAC_OVERRIDE's rule).
 * Requests carry the client's claimed uid/gid/groups (no authentication
 * yet; weir-mds --root-squash maps uid/gid 0 to 65534 before this).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <sys/stat.h>

bool mds_cred_is_root(const struct mds_cred *cr)
{
	return !cr || cr->cr_uid == 0;
}

uint32_t mds_cred_uid(const struct mds_cred *cr)
{
	return cr ? cr->cr_uid : 0;
}

uint32_t mds_cred_gid(const struct mds_cred *cr)
{
	return cr ? cr->cr_gid : 0;
}

bool mds_cred_in_group(const struct mds_cred *cr, uint32_t gid)
{
	if (!cr)
		return gid == 0;
	if (cr->cr_gid == gid)
		return true;
	uint32_t n = cr->cr_nr_groups < MDS_CRED_MAX_GROUPS ? cr->cr_nr_groups
							   : MDS_CRED_MAX_GROUPS;
	for (uint32_t i = 0; i < n; i++)
		if (cr->cr_groups[i] == gid)
			return true;
	return false;
}

int mds_perm_check(const struct mds_cred *cr, const struct mds_inode *in, int mask)
{
	uint32_t mode = in->in_mode;

	mask &= MDS_MAY_READ | MDS_MAY_WRITE | MDS_MAY_EXEC;
	if (mds_cred_is_root(cr)) {
		bool any_x = mode & (S_IXUSR | S_IXGRP | S_IXOTH);
		if (S_ISDIR(mode) || !(mask & MDS_MAY_EXEC) || any_x)
			return 0;
		return -EACCES;
	}
	if (cr->cr_uid == in->in_uid)
		mode >>= 6;
	else if (mds_cred_in_group(cr, in->in_gid))
		mode >>= 3;
	return ((uint32_t)mask & ~mode & 7) ? -EACCES : 0;
}

uint32_t mds_perm_kill_bits(const struct mds_cred *cr, const struct mds_inode *in)
{
	uint32_t mode = in->in_mode, kill = mode & S_ISUID;

	if ((mode & S_ISGID) && ((mode & S_IXGRP) || (!mds_cred_is_root(cr) &&
						      !mds_cred_in_group(cr, in->in_gid))))
		kill |= S_ISGID;
	return kill;
}

uint32_t mds_perm_write_kill_bits(const struct mds_cred *cr, const struct mds_inode *in)
{
	if (!S_ISREG(in->in_mode) || mds_cred_is_root(cr))
		return 0;
	return mds_perm_kill_bits(cr, in);
}

bool mds_perm_owner(const struct mds_cred *cr, const struct mds_inode *in)
{
	return mds_cred_is_root(cr) || cr->cr_uid == in->in_uid;
}

int mds_perm_may_create(const struct mds_cred *cr, const struct mds_inode *dir)
{
	return mds_perm_check(cr, dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
}

int mds_perm_may_delete(const struct mds_cred *cr, const struct mds_inode *dir,
			const struct mds_inode *victim, bool is_dir)
{
	int rc = mds_perm_check(cr, dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	/* check_sticky: the entry's owner, the directory's owner, or root */
	if ((dir->in_mode & S_ISVTX) && !mds_cred_is_root(cr) && cr->cr_uid != victim->in_uid &&
	    cr->cr_uid != dir->in_uid)
		return -EPERM;
	if (is_dir && !S_ISDIR(victim->in_mode))
		return -ENOTDIR;
	if (!is_dir && S_ISDIR(victim->in_mode))
		return -EISDIR;
	return 0;
}
