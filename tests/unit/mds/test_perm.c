/*
 * tests/unit/mds/test_perm.c - POSIX permissions of the MDT namespace
 * (mds/perm.c, mds/ns_attr.c and their use in ns.c, ns_link.c, ns_walk.c)
 * on a real RocksDB: search permission on every component, w+x on parents,
 * open access modes, root's overrides, sticky and setgid directories,
 * chmod/chown/utimensat rules, access(2), and the setuid/setgid drops.
 * Every expected errno was checked against Linux (ext4) with the same
 * sequence of calls.
 */
#define _GNU_SOURCE
#include "ns_fixture.h"

#define NOW2 (MDS_SA_ATIME_NOW | MDS_SA_MTIME_NOW)

static void test_perm_search_needed_on_every_component(void)
{
	struct mds_inode in;
	uint32_t nr;
	bool eof;
	struct mds_dirent ents[32];

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p1", 0700), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/p1/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1", &in), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/f", NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/missing", NULL), -EACCES); /* not -ENOENT */
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/.", NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/..", NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p1/f", MDS_OF_READ, NULL), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, &U1, &in.in_fid, 0, 8, ents, 32, &nr, &eof), -EACCES);
	/* x without r: names resolve, the directory cannot be listed */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p1", 0711), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/f", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/p1/missing", NULL), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, &U1, &in.in_fid, 0, 8, ents, 32, &nr, &eof), -EACCES);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p1", 0755), 0);
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, &U1, &in.in_fid, 0, 8, ents, 32, &nr, &eof), 0);
	CU_ASSERT_EQUAL(nr, 1);
	/* the group class: U3 is in group 1000 by a supplementary group */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p1/g", 0750), 0);
	CU_ASSERT_EQUAL(fx_chown(NULL, "/p1/g", 0, 1000), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/p1/g/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(&U3, "/p1/g/f", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(&U2, "/p1/g/f", NULL), -EACCES);
	/* root searches anything */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p1", 0), 0);
	CU_ASSERT_EQUAL(fx_stat(&ROOT, "/p1/f", NULL), 0);
}

static void test_perm_create_needs_write_and_search_on_parent(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p2", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/p2/exists", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/p2/x", 0644, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/p2/d", 0755), -EACCES);
	CU_ASSERT_EQUAL(fx_symlink(&U1, "t", "/p2/l"), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &U1, NULL, "/p2/fifo", S_IFIFO | 0644, 0, fx_choose, NULL,
				     &in),
			-EACCES);
	CU_ASSERT_EQUAL(fx_link(&U1, "/p2/exists", "/p2/hl"), -EACCES);
	/* an existing name: EEXIST comes before the permission check */
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/p2/exists", 0755), -EEXIST);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p2/exists", MDS_OF_CREAT | MDS_OF_EXCL | MDS_OF_READ, NULL),
			-EEXIST);
	/* O_CREAT of an existing file needs no write on the parent */
	CU_ASSERT_EQUAL(fx_open(&U1, "/p2/exists", MDS_OF_CREAT | MDS_OF_READ, NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p2", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/p2/x", 0640, &in), 0);
	CU_ASSERT_EQUAL(in.in_uid, 1000);
	CU_ASSERT_EQUAL(in.in_gid, 1000);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0640);
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/p2/d", 0750), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/p2/d", &in), 0);
	CU_ASSERT_EQUAL(in.in_uid, 1000);
	/* write without search is not enough */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p2", 0776), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/p2/y", 0644, NULL), -EACCES);
}

static void test_perm_open_checks_mode_bits_against_access_mode(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p3", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(&ROOT, "/p3/f", 0640, NULL), 0);
	CU_ASSERT_EQUAL(fx_chown(NULL, "/p3/f", 1000, 1000), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p3/f", MDS_OF_READ | MDS_OF_WRITE, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&U3, "/p3/f", MDS_OF_READ, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&U3, "/p3/f", MDS_OF_WRITE, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U3, "/p3/f", MDS_OF_READ | MDS_OF_TRUNC, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U2, "/p3/f", MDS_OF_READ, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U2, "/p3/f", 0, NULL), 0); /* O_PATH-like: no access asked */
	/* the owner class is exclusive: its bits apply even if others have more */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/p3/f", 0077), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p3/f", MDS_OF_READ, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U2, "/p3/f", MDS_OF_READ, NULL), 0);
	/* and the group class too */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/p3/f", 0707), 0);
	CU_ASSERT_EQUAL(fx_open(&U3, "/p3/f", MDS_OF_READ, NULL), -EACCES);
	/* a directory: EISDIR for writing comes before the permission check */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p3/d", 0700), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p3/d", MDS_OF_WRITE, NULL), -EISDIR);
	CU_ASSERT_EQUAL(fx_open(&U1, "/p3/d", MDS_OF_READ, NULL), -EACCES);
}

static void test_perm_root_overrides_except_exec_without_any_x(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p4", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/p4/f", 0600, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&ROOT, "/p4/f", MDS_OF_READ | MDS_OF_WRITE, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &ROOT, NULL, "/p4/f", R_OK | W_OK, 0), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &ROOT, NULL, "/p4/f", X_OK, 0), -EACCES);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/p4/f", 0601), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &ROOT, NULL, "/p4/f", X_OK, 0), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p4/f", X_OK, 0), -EACCES);
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/p4/d", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &ROOT, NULL, "/p4/d", R_OK | W_OK | X_OK, 0), 0);
	CU_ASSERT_EQUAL(fx_creat(&ROOT, "/p4/d/in-locked-dir", 0644, NULL), 0);
}

static void test_perm_access_modes_and_errors(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p5", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/p5/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", F_OK, 0), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", R_OK, 0), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", W_OK, 0), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", R_OK | X_OK, 0), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", 8, 0), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/missing", F_OK, 0), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f/x", F_OK, 0), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/p5", 0700), 0);
	CU_ASSERT_EQUAL(mds_ns_access(ns, &U1, NULL, "/p5/f", F_OK, 0), -EACCES);
}

static void test_perm_unlink_rmdir_rename_need_write_on_parent(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p6", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/p6/f", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/p6/d", 0777), 0);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/p6/f"), -EACCES);
	CU_ASSERT_EQUAL(fx_rmdir(&U1, "/p6/d"), -EACCES);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/p6/f", "/p6/d/f", 0), -EACCES);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/p6/missing"), -ENOENT); /* ENOENT first */
	/* into a writable directory: the source's directory is still read-only */
	CU_ASSERT_EQUAL(fx_creat(&U1, "/p6/d/g", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/p6/d/g", "/p6/g", 0), -EACCES);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/p6/d/g"), 0);
}

static void test_perm_sticky_dir_only_owners_remove_or_rename(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/st", 01777), 0);
	CU_ASSERT_EQUAL(fx_mode("/st"), S_IFDIR | 01777);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/st/a", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(&U2, "/st/b", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/st/c", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_unlink(&U2, "/st/a"), -EPERM);
	CU_ASSERT_EQUAL(fx_rename(&U2, "/st/a", "/st/z", 0), -EPERM);
	CU_ASSERT_EQUAL(fx_rename(&U2, "/st/b", "/st/a", 0), -EPERM); /* replacing U1's */
	CU_ASSERT_EQUAL(fx_unlink(&U2, "/st/b"), 0);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/st/a"), 0);
	/* the directory's owner may remove anything in it, and root */
	CU_ASSERT_EQUAL(fx_chown(NULL, "/st", 1001, 1001), 0);
	CU_ASSERT_EQUAL(fx_unlink(&U2, "/st/c"), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/st/d", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_unlink(&ROOT, "/st/d"), 0);
	/* write permission still comes first: -EACCES, not -EPERM */
	CU_ASSERT_EQUAL(fx_creat(&U1, "/st/e", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/st", 01755), 0);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/st/e"), -EACCES);
}

static void test_perm_setgid_dir_gives_its_gid_and_bit(void)
{
	struct mds_inode in;
	const struct mds_cred g50 = { 1005, 1005, 1, { 50 } };

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/sg", 0777), 0);
	CU_ASSERT_EQUAL(fx_chown(NULL, "/sg", 0, 50), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/sg", 02777), 0);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, &U1, NULL, "/sg/sub", 0755, &in), 0);
	CU_ASSERT_EQUAL(in.in_gid, 50);
	CU_ASSERT_EQUAL(in.in_mode, S_IFDIR | 02755);
	CU_ASSERT_EQUAL(in.in_uid, 1000);
	/* a non-member's setgid file loses S_ISGID; a member's keeps it */
	CU_ASSERT_EQUAL(fx_creat(&U1, "/sg/f", 02775, &in), 0);
	CU_ASSERT_EQUAL(in.in_gid, 50);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0775);
	CU_ASSERT_EQUAL(fx_creat(&g50, "/sg/g", 02775, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 02775);
	/* outside a setgid directory: the caller's gid; mkdir ignores S_ISGID/S_ISUID */
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, &ROOT, NULL, "/sg-no", 06777, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFDIR | 0777);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/sg-no/f", 0644, &in), 0);
	CU_ASSERT_EQUAL(in.in_gid, 1000);
	/* the grandchild of a setgid directory through its setgid child */
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, &U2, NULL, "/sg/sub/deeper", 0700, &in), -EACCES);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/sg/sub", 02777), 0);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, &U2, NULL, "/sg/sub/deeper", 0700, &in), 0);
	CU_ASSERT_EQUAL(in.in_gid, 50);
	CU_ASSERT_EQUAL(in.in_mode, S_IFDIR | 02700);
}

static void test_perm_chmod_only_owner_or_root(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/cm", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/cm/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(&U2, "/cm/f", 0777), -EPERM);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/cm/f", 0600), 0);
	CU_ASSERT_EQUAL(fx_mode("/cm/f"), S_IFREG | 0600);
	CU_ASSERT_EQUAL(fx_chmod(&ROOT, "/cm/f", 04755), 0);
	CU_ASSERT_EQUAL(fx_mode("/cm/f"), S_IFREG | 04755);
	/* S_ISGID needs the file's group among the caller's, unless root */
	CU_ASSERT_EQUAL(fx_chown(NULL, "/cm/f", 1000, 50), 0);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/cm/f", 02755), 0);
	CU_ASSERT_EQUAL(fx_mode("/cm/f"), S_IFREG | 0755);
	CU_ASSERT_EQUAL(fx_chmod(&ROOT, "/cm/f", 02755), 0);
	CU_ASSERT_EQUAL(fx_mode("/cm/f"), S_IFREG | 02755);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/cm/missing", 0600), -ENOENT);
	/* by FID (fchmod): the same rule */
	struct mds_inode in;
	struct mds_setattr sa = { .sa_valid = MDS_SA_MODE, .sa_mode = 0 };
	CU_ASSERT_EQUAL(fx_stat(NULL, "/cm/f", &in), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, &in.in_fid, NULL, 0, &sa, &in), -EPERM);
}

static void test_perm_chown_rules_and_suid_drop(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/co", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/co/f", 0644, NULL), 0);
	/* only root gives a file away */
	CU_ASSERT_EQUAL(fx_setattr(&U1, "/co/f", MDS_SA_UID | MDS_SA_CHOWN, 0, 1001, 0), -EPERM);
	CU_ASSERT_EQUAL(fx_setattr(&U1, "/co/f", MDS_SA_UID | MDS_SA_CHOWN, 0, 1000, 0), 0);
	/* the owner picks among its groups */
	CU_ASSERT_EQUAL(fx_setattr(&U1, "/co/f", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 50), -EPERM);
	CU_ASSERT_EQUAL(fx_setattr(&U1, "/co/f", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 1000), 0);
	CU_ASSERT_EQUAL(fx_creat(&U3, "/co/g", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U3, "/co/g", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 1000), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U2, "/co/g", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 1001), -EPERM);
	CU_ASSERT_EQUAL(fx_chown(&ROOT, "/co/g", 7, 8), 0);
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/co/g", &in), 0);
	CU_ASSERT_EQUAL(in.in_uid, 7);
	CU_ASSERT_EQUAL(in.in_gid, 8);
	/* every chown drops S_ISUID, and S_ISGID when group-exec, on non-directories,
	 * root's too, even with neither id given (Linux: chown(f, -1, -1)) */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/co/g", 06755), 0);
	CU_ASSERT_EQUAL(fx_chown(&ROOT, "/co/g", 0, 0), 0);
	CU_ASSERT_EQUAL(fx_mode("/co/g"), S_IFREG | 0755);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/co/g", 06745), 0); /* S_ISGID without g+x stays */
	CU_ASSERT_EQUAL(fx_setattr(&ROOT, "/co/g", MDS_SA_CHOWN, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(fx_mode("/co/g"), S_IFREG | 02745);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/co/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/co/d", 06755), 0);
	CU_ASSERT_EQUAL(fx_chown(&ROOT, "/co/d", 0, 0), 0);
	CU_ASSERT_EQUAL(fx_mode("/co/d"), S_IFDIR | 06755);
}

static void test_perm_utimens_owner_for_explicit_write_for_now(void)
{
	struct mds_inode in;
	struct mds_setattr sa;

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/ut", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/ut/pub", 0666, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/ut/priv", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U2, "/ut/pub", NOW2, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U2, "/ut/priv", NOW2, 0, 0, 0), -EACCES);
	CU_ASSERT_EQUAL(fx_setattr(&U2, "/ut/pub", MDS_SA_ATIME_NOW, 0, 0, 0), -EPERM);
	memset(&sa, 0, sizeof(sa));
	sa.sa_valid = MDS_SA_MTIME;
	sa.sa_mtime_ns = 1000000000LL * 1234567;
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, NULL, "/ut/pub", 0, &sa, &in), -EPERM);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U1, NULL, "/ut/priv", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_mtime_ns, 1000000000LL * 1234567);
	int64_t before = in.in_atime_ns;
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &ROOT, NULL, "/ut/priv", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_atime_ns, before); /* atime omitted */
	CU_ASSERT(in.in_ctime_ns > 1000000000LL * 1234567);
	/* both now: atime = mtime = ctime = the MDS's clock */
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2,
				       NULL, "/ut/pub", 0,
				       &(struct mds_setattr){ .sa_valid = NOW2 }, &in),
			0);
	CU_ASSERT_EQUAL(in.in_atime_ns, in.in_mtime_ns);
	CU_ASSERT_EQUAL(in.in_mtime_ns, in.in_ctime_ns);
}

static void test_perm_trunc_and_write_drop_suid_for_non_root(void)
{
	struct mds_inode in;
	struct mds_setattr sa = { .sa_valid = MDS_SA_KILL_SUID };

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/su", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/su/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/su/f", 06777), 0);
	/* root's O_TRUNC keeps them, a user's drops them */
	CU_ASSERT_EQUAL(fx_open(&ROOT, "/su/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), 0);
	CU_ASSERT_EQUAL(fx_mode("/su/f"), S_IFREG | 06777);
	CU_ASSERT_EQUAL(fx_open(&U2, "/su/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), 0);
	CU_ASSERT_EQUAL(fx_mode("/su/f"), S_IFREG | 0777);
	/* the data path's first write: SA_KILL_SUID */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/su/f", 04755), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &ROOT, NULL, "/su/f", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 04755);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U1, NULL, "/su/f", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0755);
	int64_t ctime = in.in_ctime_ns;
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U1, NULL, "/su/f", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_ctime_ns, ctime); /* nothing to drop: nothing written */
	/* a truncate by size (ftruncate) as well */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/su/f", 02755), 0);
	sa = (struct mds_setattr){ .sa_valid = MDS_SA_SIZE, .sa_size = 5 };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U1, NULL, "/su/f", 0, &sa, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0755);
	CU_ASSERT_EQUAL(in.in_size, 5);
}

static void test_perm_write_drop_by_writers_only_with_linux_sgid_rule(void)
{
	struct mds_setattr kill = { .sa_valid = MDS_SA_KILL_SUID };
	struct mds_inode in, h;
	bool created;

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/sw", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/sw/f", 0644, NULL), 0);
	/* a caller that may not write the file drops nothing: -EPERM */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/sw/f", 04755), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, NULL, "/sw/f", 0, &kill, &in), -EPERM);
	CU_ASSERT_EQUAL(fx_mode("/sw/f"), S_IFREG | 04755);
	/* write permission (pjdfstest chmod/12.t) */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/sw/f", 06777), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, NULL, "/sw/f", 0, &kill, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0777);
	/* or a handle open for writing, though the mode no longer allows it */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/sw/f", 04777), 0);
	CU_ASSERT_FATAL(mds_ns_open_file(ns, &U2, NULL, "/sw/f", MDS_OF_WRITE, 0, NULL, fx_choose,
					 NULL, &h, &created) == 0);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/sw/f", 04755), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, NULL, "/sw/f", 0, &kill, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0755);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &h.in_fid, true, NULL), 0);
	/* S_ISGID without group-exec: dropped for a writer outside the file's
	 * group (Linux 6.2+, setattr_should_drop_sgid), kept for a member */
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/sw/f", 02766), 0);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U3, NULL, "/sw/f", 0, &kill, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 02766);
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, &U2, NULL, "/sw/f", 0, &kill, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0766);
	/* and by a chown: the caller outside the group the file had */
	CU_ASSERT_EQUAL(fx_creat(&U3, "/sw/g", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_chown(&ROOT, "/sw/g", 1002, 7), 0);
	CU_ASSERT_EQUAL(fx_chmod(&ROOT, "/sw/g", 02745), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U3, "/sw/g", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 1002), 0);
	CU_ASSERT_EQUAL(fx_mode("/sw/g"), S_IFREG | 0745);
	CU_ASSERT_EQUAL(fx_chmod(&ROOT, "/sw/g", 02745), 0);
	CU_ASSERT_EQUAL(fx_setattr(&U3, "/sw/g", MDS_SA_GID | MDS_SA_CHOWN, 0, 0, 1000), 0);
	CU_ASSERT_EQUAL(fx_mode("/sw/g"), S_IFREG | 02745); /* it was in group 1002, U3's */
}

/* xfstests generic/126: execve's open needs execute permission, not read */
static void test_perm_exec_open_checks_execute_not_read(void)
{
	uint32_t xo = MDS_OF_READ | MDS_OF_EXEC;

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/ex", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/ex/p711", 0711, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex/p711", MDS_OF_READ, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex/p711", xo, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/ex/p001", 0001, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex/p001", xo, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/ex/p744", 0744, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex/p744", xo, NULL), -EACCES);
	/* the owner's class decides, whatever the others may do */
	CU_ASSERT_EQUAL(fx_chown(NULL, "/ex/p001", 1000, 1000), 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex/p001", xo, NULL), -EACCES);
	/* root: some x bit */
	CU_ASSERT_EQUAL(fx_open(&ROOT, "/ex/p001", xo, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/ex/p644", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_open(&ROOT, "/ex/p644", xo, NULL), -EACCES);
	/* a directory is no program; an exec open writes nothing */
	CU_ASSERT_EQUAL(fx_open(&U1, "/ex", xo, NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_open(&ROOT, "/ex/p711", MDS_OF_WRITE | MDS_OF_EXEC, NULL), -EINVAL);
}

static void test_perm_dir_moving_parent_needs_write_on_it(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/mv1", 0777), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/mv2", 0777), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/mv1/rootdir", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/mv1/mine", 0755), 0);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/mv1/rootdir", "/mv2/rootdir", 0), -EACCES);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/mv1/rootdir", "/mv1/renamed", 0), 0);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/mv1/mine", "/mv2/mine", 0), 0);
}

static void test_perm_set_layout_of_dir_by_owner_only(void)
{
	struct mds_inode in;
	struct mds_layout_req lr = { .lr_stripe_count = 2, .lr_stripe_size = 65536,
				     .lr_stripe_offset = -1 };
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/ly", 0777), 0);
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, &U1, NULL, "/ly", &lr, false, 0, fx_choose, NULL,
					  &in),
			-EPERM);
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, &U1, NULL, "/ly/new", &lr, true, 0600, fx_choose,
					  NULL, &in),
			0);
	CU_ASSERT_EQUAL(in.in_uid, 1000);
	CU_ASSERT_EQUAL(in.in_layout.lo_stripe_count, 2);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_perm_search_needed_on_every_component),
		TH_TEST(test_perm_create_needs_write_and_search_on_parent),
		TH_TEST(test_perm_open_checks_mode_bits_against_access_mode),
		TH_TEST(test_perm_root_overrides_except_exec_without_any_x),
		TH_TEST(test_perm_access_modes_and_errors),
		TH_TEST(test_perm_unlink_rmdir_rename_need_write_on_parent),
		TH_TEST(test_perm_sticky_dir_only_owners_remove_or_rename),
		TH_TEST(test_perm_setgid_dir_gives_its_gid_and_bit),
		TH_TEST(test_perm_chmod_only_owner_or_root),
		TH_TEST(test_perm_chown_rules_and_suid_drop),
		TH_TEST(test_perm_utimens_owner_for_explicit_write_for_now),
		TH_TEST(test_perm_trunc_and_write_drop_suid_for_non_root),
		TH_TEST(test_perm_write_drop_by_writers_only_with_linux_sgid_rule),
		TH_TEST(test_perm_exec_open_checks_execute_not_read),
		TH_TEST(test_perm_dir_moving_parent_needs_write_on_it),
		TH_TEST(test_perm_set_layout_of_dir_by_owner_only),
		TH_TEST_END,
	};
	return th_cunit_run("mds_perm", fx_init, fx_fini, tests);
}
