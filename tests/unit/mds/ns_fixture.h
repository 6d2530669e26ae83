/*
 * tests/unit/mds/ns_fixture.h - shared set-up of the namespace unit tests
 * (test_perm.c, test_links.c, test_xattr.c, test_rename2.c): an MDT on a
 * real RocksDB in a temporary directory, an OST chooser, credentials, and
 * small wrappers returning the exact -errno of each call.
 * Header-only: each test binary includes it once.
 */
#ifndef WEIR_TESTS_NS_FIXTURE_H
#define WEIR_TESTS_NS_FIXTURE_H

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "mds/mds.h"

static char fx_dir[256];
static struct mds_ns *ns;

/* OST placement: 4 OSTs, round-robin from the offset. */
static inline int fx_choose(void *arg, struct weir_layout *lo, int32_t off)
{
	(void)arg;
	if (lo->lo_stripe_count == UINT32_MAX)
		lo->lo_stripe_count = 4;
	if (lo->lo_stripe_count > 4)
		return -EINVAL;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++)
		lo->lo_osts[i] = ((off >= 0 ? (uint32_t)off : 0) + i) % 4;
	return 0;
}

static inline int fx_init(void)
{
	snprintf(fx_dir, sizeof(fx_dir), "/tmp/weir-test-mds-XXXXXX");
	if (!mkdtemp(fx_dir))
		return -1;
	struct mds_ns_conf c = { .nc_path = fx_dir };
	return mds_ns_open(&c, &ns);
}

static inline int fx_fini(void)
{
	char cmd[300];
	mds_ns_close(ns);
	ns = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fx_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static inline void fx_reopen(void)
{
	mds_ns_close(ns);
	struct mds_ns_conf c = { .nc_path = fx_dir };
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
}

/* Credentials: root is NULL (the MDS itself) or ROOT (uid 0 from a client). */
static const struct mds_cred ROOT = { 0, 0, 0, { 0 } };
static const struct mds_cred U1 = { 1000, 1000, 0, { 0 } };
static const struct mds_cred U2 = { 1001, 1001, 0, { 0 } };
/* U3 is in group 1000 (U1's) as a supplementary group */
static const struct mds_cred U3 = { 1002, 1002, 1, { 1000 } };

/* Create (O_CREAT, write) \a path as \a cr with \a mode, closing it again. */
static inline int fx_creat(const struct mds_cred *cr, const char *path, uint32_t mode,
		    struct mds_inode *out)
{
	struct mds_inode tmp;
	bool created;
	struct mds_inode *in = out ? out : &tmp;
	int rc = mds_ns_open_file(ns, cr, NULL, path, MDS_OF_CREAT | MDS_OF_WRITE, mode, NULL,
				  fx_choose, NULL, in, &created);
	if (!rc)
		mds_ns_close_file(ns, &in->in_fid, true, NULL);
	return rc;
}

/* Open \a path with MDS_OF_* \a flags as \a cr and close it at once. */
static inline int fx_open(const struct mds_cred *cr, const char *path, uint32_t flags,
		   struct mds_inode *out)
{
	struct mds_inode tmp;
	bool created;
	struct mds_inode *in = out ? out : &tmp;
	int rc = mds_ns_open_file(ns, cr, NULL, path, flags, 0644, NULL, fx_choose, NULL, in,
				  &created);
	if (!rc)
		mds_ns_close_file(ns, &in->in_fid, flags & MDS_OF_WRITE, NULL);
	return rc;
}

static inline int fx_mkdir(const struct mds_cred *cr, const char *path, uint32_t mode)
{
	struct mds_inode in;
	return mds_ns_mkdir(ns, cr, NULL, path, mode, &in);
}

static inline int fx_stat(const struct mds_cred *cr, const char *path, struct mds_inode *out)
{
	struct mds_inode tmp;
	return mds_ns_lookup(ns, cr, NULL, path, 0, out ? out : &tmp);
}

static inline int fx_lstat(const struct mds_cred *cr, const char *path, struct mds_inode *out)
{
	struct mds_inode tmp;
	return mds_ns_lookup(ns, cr, NULL, path, MDS_AT_NOFOLLOW, out ? out : &tmp);
}

static inline int fx_setattr(const struct mds_cred *cr, const char *path, uint32_t valid,
		      uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct mds_inode in;
	struct mds_setattr sa = { .sa_valid = valid, .sa_mode = mode, .sa_uid = uid,
				  .sa_gid = gid };
	return mds_ns_setattr(ns, cr, NULL, path, 0, &sa, &in);
}

static inline int fx_chmod(const struct mds_cred *cr, const char *path, uint32_t mode)
{
	return fx_setattr(cr, path, MDS_SA_MODE, mode, 0, 0);
}

static inline int fx_chown(const struct mds_cred *cr, const char *path, uint32_t uid, uint32_t gid)
{
	return fx_setattr(cr, path, MDS_SA_UID | MDS_SA_GID | MDS_SA_CHOWN, 0, uid, gid);
}

static inline uint32_t fx_mode(const char *path)
{
	struct mds_inode in;
	if (mds_ns_lookup(ns, NULL, NULL, path, MDS_AT_NOFOLLOW, &in))
		return 0;
	return in.in_mode;
}

static inline int fx_unlink(const struct mds_cred *cr, const char *path)
{
	return mds_ns_unlink(ns, cr, NULL, path, false);
}

static inline int fx_rmdir(const struct mds_cred *cr, const char *path)
{
	return mds_ns_unlink(ns, cr, NULL, path, true);
}

static inline int fx_rename(const struct mds_cred *cr, const char *a, const char *b, uint32_t flags)
{
	return mds_ns_rename(ns, cr, NULL, a, NULL, b, flags);
}

static inline int fx_symlink(const struct mds_cred *cr, const char *target, const char *path)
{
	struct mds_inode in;
	return mds_ns_symlink(ns, cr, NULL, path, target, &in);
}

static inline int fx_link(const struct mds_cred *cr, const char *a, const char *b)
{
	struct mds_inode in;
	return mds_ns_link(ns, cr, NULL, a, NULL, b, 0, &in);
}

#endif /* WEIR_TESTS_NS_FIXTURE_H */
