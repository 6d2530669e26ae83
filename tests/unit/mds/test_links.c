/*
 * tests/unit/mds/test_links.c - hard links, symlinks, special files and
 * path resolution of the MDT namespace (mds/ns_link.c, mds/ns_walk.c) on a
 * real RocksDB: nlink everywhere, EMLINK, symlink targets relative and
 * absolute, ELOOP at 41 hops, O_NOFOLLOW, O_CREAT through a dangling link,
 * trailing slashes, mknod, odd names, long paths, and resolution from a
 * directory FID (openat). Errnos as Linux gives them (checked on ext4).
 */
#define _GNU_SOURCE
#include "ns_fixture.h"

static int count_destroy(const struct weir_fid *fid)
{
	struct mds_destroy_rec recs[256];
	int n = mds_ns_destroy_peek(ns, recs, 256), hits = 0;
	for (int i = 0; i < n; i++)
		if (weir_fid_eq(&recs[i].dr_fid, fid))
			hits++;
	return hits;
}

static int readlink_s(const char *path, char *buf, size_t *len)
{
	return mds_ns_readlink(ns, NULL, NULL, path, buf, MDS_SYMLINK_MAX + 1, len);
}

static void test_link_counts_names_and_keeps_file_until_last(void)
{
	struct mds_inode a, b, got;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/h", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/h/a", 0644, &a), 0);
	CU_ASSERT_EQUAL(mds_ns_link(ns, NULL, NULL, "/h/a", NULL, "/h/b", 0, &b), 0);
	CU_ASSERT(weir_fid_eq(&a.in_fid, &b.in_fid));
	CU_ASSERT_EQUAL(b.in_nlink, 2);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/h/a", &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 2);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 2);
	CU_ASSERT(got.in_ctime_ns >= a.in_ctime_ns);
	/* rename of a name onto another name of the same inode: nothing happens */
	CU_ASSERT_EQUAL(fx_rename(NULL, "/h/a", "/h/b", 0), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/h/a", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/h/b", &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 2);
	/* one name goes, the file stays */
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/h/a"), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/h/b", &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 1);
	CU_ASSERT_EQUAL(count_destroy(&a.in_fid), 0);
	/* a third name through a renamed replacement: replacing one link keeps the file */
	CU_ASSERT_EQUAL(fx_link(NULL, "/h/b", "/h/c"), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/h/other", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/h/other", "/h/c", 0), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/h/b", &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 1);
	CU_ASSERT_EQUAL(count_destroy(&a.in_fid), 0);
	/* the last name: destroyed, objects queued */
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/h/b"), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&a.in_fid), 1);
	CU_ASSERT_EQUAL(mds_ns_destroy_done(ns, &a.in_fid), 0);
}

static void test_link_errors_exact_errno(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/he", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/he/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/he/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/d", "/he/dl"), -EPERM);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/f", "/he/d"), -EEXIST);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/f", "/he/."), -EEXIST);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/missing", "/he/x"), -ENOENT);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/f", "/he/nodir/x"), -ENOENT);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/f", "/he/f/x"), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/f", "/he/x/"), -ENOENT);
	/* protected hardlinks: another user's file that U1 cannot read and write */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/he", 0777), 0);
	CU_ASSERT_EQUAL(fx_link(&U1, "/he/f", "/he/u1link"), -EPERM);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/he/f", 0666), 0);
	CU_ASSERT_EQUAL(fx_link(&U1, "/he/f", "/he/u1link"), 0);
	/* a symlink is linked itself, unless asked to follow */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "f", "/he/sl"), 0);
	CU_ASSERT_EQUAL(fx_link(NULL, "/he/sl", "/he/sl2"), 0);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/he/sl2", &in), 0);
	CU_ASSERT(S_ISLNK(in.in_mode));
	CU_ASSERT_EQUAL(in.in_nlink, 2);
	CU_ASSERT_EQUAL(mds_ns_link(ns, NULL, NULL, "/he/sl", NULL, "/he/viafollow",
				    MDS_AT_FOLLOW, &in),
			0);
	CU_ASSERT(S_ISREG(in.in_mode));
	CU_ASSERT_EQUAL(in.in_nlink, 3);
}

static void test_link_emlink_beyond_65000(void)
{
	struct mds_inode in;
	char p[64];
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/many", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/many/f", 0644, NULL), 0);
	int failed = 0;
	for (int i = 1; i < MDS_LINK_MAX && !failed; i++) {
		snprintf(p, sizeof(p), "/many/l%d", i);
		failed = fx_link(NULL, "/many/f", p);
	}
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/many/f", &in), 0);
	CU_ASSERT_EQUAL(in.in_nlink, MDS_LINK_MAX);
	CU_ASSERT_EQUAL(fx_link(NULL, "/many/f", "/many/one-too-many"), -EMLINK);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/many/l1"), 0);
	CU_ASSERT_EQUAL(fx_link(NULL, "/many/f", "/many/one-too-many"), 0);
}

static void test_symlink_stat_lstat_readlink(void)
{
	struct mds_inode in, f;
	char buf[MDS_SYMLINK_MAX + 1];
	size_t len;

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/s", 0755), 0);
	CU_ASSERT_EQUAL(mds_ns_symlink(ns, &U1, NULL, "/s/l", "target", &in), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_symlink(ns, NULL, NULL, "/s/l", "target", &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFLNK | 0777);
	CU_ASSERT_EQUAL(in.in_size, 6);
	CU_ASSERT_EQUAL(in.in_nlink, 1);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/s/l", &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFLNK | 0777);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/s/l", NULL), -ENOENT); /* dangling */
	CU_ASSERT_EQUAL(readlink_s("/s/l", buf, &len), 0);
	CU_ASSERT_EQUAL(len, 6);
	CU_ASSERT_STRING_EQUAL(buf, "target");
	CU_ASSERT_EQUAL(fx_creat(NULL, "/s/target", 0600, &f), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/s/l", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(readlink_s("/s/target", buf, &len), -EINVAL);
	CU_ASSERT_EQUAL(readlink_s("/s", buf, &len), -EINVAL);
	CU_ASSERT_EQUAL(readlink_s("/s/l/", buf, &len), -ENOTDIR); /* "/" follows: a file */
	CU_ASSERT_EQUAL(readlink_s("/s/nope", buf, &len), -ENOENT);
	/* the listing says DT_LNK */
	struct mds_inode d;
	struct mds_dirent ents[16];
	uint32_t nr;
	bool eof;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/s", &d), 0);
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, NULL, &d.in_fid, 0, 8, ents, 16, &nr, &eof), 0);
	int lnk = 0;
	for (uint32_t i = 0; i < nr; i++)
		if (!strcmp(ents[i].de_name, "l"))
			lnk = ents[i].de_type == DT_LNK;
	CU_ASSERT(lnk);
	/* target lengths: empty, 4095, 4096 */
	memset(buf, 'x', sizeof(buf));
	buf[MDS_SYMLINK_MAX] = 0;
	CU_ASSERT_EQUAL(fx_symlink(NULL, "", "/s/empty"), -ENOENT);
	CU_ASSERT_EQUAL(fx_symlink(NULL, buf, "/s/long"), 0);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/s/long", &in), 0);
	CU_ASSERT_EQUAL(in.in_size, MDS_SYMLINK_MAX);
	char *big = malloc(MDS_SYMLINK_MAX + 2);
	memset(big, 'y', MDS_SYMLINK_MAX + 1);
	big[MDS_SYMLINK_MAX + 1] = 0;
	CU_ASSERT_EQUAL(fx_symlink(NULL, big, "/s/toolong"), -ENAMETOOLONG);
	free(big);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "x", "/s/l"), -EEXIST);
	/* unlink removes the link, not its target */
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/s/l"), 0);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/s/l", NULL), -ENOENT);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/s/target", NULL), 0);
	/* and survive a restart */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "../s/target", "/s/persist"), 0);
	fx_reopen();
	CU_ASSERT_EQUAL(readlink_s("/s/persist", buf, &len), 0);
	CU_ASSERT_STRING_EQUAL(buf, "../s/target");
	CU_ASSERT_EQUAL(fx_stat(NULL, "/s/persist", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
}

static void test_symlink_relative_absolute_and_intermediate(void)
{
	struct mds_inode f, in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/r", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/r/dir", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/r/dir/sub", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/r/f", 0644, &f), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "../f", "/r/dir/up"), 0);     /* from the link's dir */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "/r/f", "/r/dir/abs"), 0);    /* from the Weir root */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "dir", "/r/ldir"), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "/r/dir/", "/r/ldir2"), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "ldir/sub/../up", "/r/chain"), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "/", "/r/toroot"), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/dir/up", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/dir/abs", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/ldir/up", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/ldir2/sub", &in), 0);
	CU_ASSERT(S_ISDIR(in.in_mode));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/chain", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	/* ".." after a followed link is the target's parent (physical) */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/ldir/sub/..", &in), 0);
	struct mds_inode dir;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/dir", &dir), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &dir.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/toroot/r/f", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	/* a link to a file used as a directory */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/dir/up/x", NULL), -ENOTDIR);
	/* lstat follows intermediate links, not the last */
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/r/ldir/up", &in), 0);
	CU_ASSERT(S_ISLNK(in.in_mode));
	/* a trailing slash follows even for lstat, and wants a directory */
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/r/ldir/", &in), 0);
	CU_ASSERT(S_ISDIR(in.in_mode));
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/r/dir/up/", NULL), -ENOTDIR);
	/* search permission applies to the directories a target walks through */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/r/dir/sub", 0700), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "dir/sub/..", "/r/through"), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/r/through", NULL), -EACCES);
}

static void test_symlink_loops_are_eloop_after_40(void)
{
	char p[64], t[64];
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/lp", 0755), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "b", "/lp/a"), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "a", "/lp/b"), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/lp/a", NULL), -ELOOP);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/lp/a", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/lp/a/x", NULL), -ELOOP);
	CU_ASSERT_EQUAL(fx_open(NULL, "/lp/a", MDS_OF_READ, NULL), -ELOOP);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "self", "/lp/self"), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/lp/self", NULL), -ELOOP);
	/* a chain: c0 -> file, cN -> c(N-1); 40 links followed is fine, 41 is not */
	CU_ASSERT_EQUAL(fx_creat(NULL, "/lp/file", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "file", "/lp/c0"), 0);
	for (int i = 1; i <= 40; i++) {
		snprintf(p, sizeof(p), "/lp/c%d", i);
		snprintf(t, sizeof(t), "c%d", i - 1);
		CU_ASSERT_EQUAL(fx_symlink(NULL, t, p), 0);
	}
	CU_ASSERT_EQUAL(fx_stat(NULL, "/lp/c39", &in), 0);
	CU_ASSERT(S_ISREG(in.in_mode));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/lp/c40", NULL), -ELOOP);
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/lp/c40", NULL), 0);
}

static void test_open_nofollow_creat_through_link_and_slashes(void)
{
	struct mds_inode in, t;
	bool created;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/o", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/o/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "f", "/o/l"), 0);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/l", MDS_OF_READ | MDS_OF_NOFOLLOW, NULL), -ELOOP);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/l", MDS_OF_READ | MDS_OF_NOFOLLOW | MDS_OF_CREAT, NULL),
			-ELOOP);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/l", MDS_OF_READ | MDS_OF_NOFOLLOW | MDS_OF_DIRECTORY,
				NULL),
			-ENOTDIR);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/l", MDS_OF_READ, &in), 0);
	CU_ASSERT(S_ISREG(in.in_mode));
	/* O_CREAT through a dangling link makes its target; O_EXCL does not follow */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "made", "/o/dangling"), 0);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/dangling", MDS_OF_CREAT | MDS_OF_EXCL | MDS_OF_WRITE,
				NULL),
			-EEXIST);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/o/dangling", MDS_OF_CREAT | MDS_OF_WRITE,
					 0600, NULL, fx_choose, NULL, &in, &created),
			0);
	CU_ASSERT(created);
	mds_ns_close_file(ns, &in.in_fid, true, NULL);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/o/made", &t), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &t.in_fid));
	/* trailing slashes */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/o/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "d", "/o/ld"), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/o/f/"), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/o/d/"), -EISDIR);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/o/ld/"), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/o/ld/"), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/o/ld"), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/o/f/", NULL), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/new/", MDS_OF_CREAT | MDS_OF_WRITE, NULL), -EISDIR);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/d/", MDS_OF_CREAT | MDS_OF_READ, NULL), -EISDIR);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/d", MDS_OF_READ | MDS_OF_TRUNC, NULL), -EISDIR);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/d", MDS_OF_READ | MDS_OF_CREAT, NULL), -EISDIR);
	/* O_CREAT|O_DIRECTORY: EINVAL whatever the path (Linux 6.4 and later) */
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/d", MDS_OF_READ | MDS_OF_CREAT | MDS_OF_DIRECTORY, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(fx_open(NULL, "/o/nothere", MDS_OF_CREAT | MDS_OF_DIRECTORY, NULL), -EINVAL);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/o/nd/", 0755), 0);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/o/nd/"), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "t", "/o/newlink/"), -ENOENT);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/o/f/", "/o/g", 0), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/o/f", "/o/g/", 0), -ENOTDIR);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/o/d/", "/o/d2/", 0), 0);
	/* "." and ".." as last names */
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/o/d2/."), -EINVAL);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/o/d2/.."), -ENOTEMPTY);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/o/d2/."), -EISDIR);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/"), -EISDIR);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/"), -EBUSY);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/o/d2/..", 0755), -EEXIST);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/", 0755), -EEXIST);
}

static void test_mknod_fifo_socket_devices(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/n", 0777), 0);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &U1, NULL, "/n/fifo", S_IFIFO | 0640, 0, fx_choose, NULL,
				     &in),
			0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFIFO | 0640);
	CU_ASSERT(!in.in_has_layout);
	CU_ASSERT_EQUAL(in.in_uid, 1000);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &U1, NULL, "/n/sock", S_IFSOCK | 0600, 0, fx_choose, NULL,
				     &in),
			0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/n/sock", MDS_OF_READ, NULL), -ENXIO);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &U1, NULL, "/n/chr", S_IFCHR | 0600, 0x103, fx_choose,
				     NULL, &in),
			-EPERM);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &U1, NULL, "/n/fifo", S_IFCHR | 0600, 0x103, fx_choose,
				     NULL, &in),
			-EEXIST);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &ROOT, NULL, "/n/chr", S_IFCHR | 0600, 0x103, fx_choose,
				     NULL, &in),
			0);
	CU_ASSERT_EQUAL(in.in_rdev, 0x103);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &ROOT, NULL, "/n/blk", S_IFBLK | 0600, 0x801, fx_choose,
				     NULL, &in),
			0);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &ROOT, NULL, "/n/dir", S_IFDIR | 0700, 0, fx_choose, NULL,
				     &in),
			-EPERM);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &ROOT, NULL, "/n/bad", 0170000 | 0700, 0, fx_choose, NULL,
				     &in),
			-EINVAL);
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, &ROOT, NULL, "/n/reg", 0644, 0, fx_choose, NULL, &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0644);
	CU_ASSERT(in.in_has_layout);
	/* types in the listing, rdev kept across a restart */
	fx_reopen();
	CU_ASSERT_EQUAL(fx_stat(NULL, "/n/chr", &in), 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFCHR | 0600);
	CU_ASSERT_EQUAL(in.in_rdev, 0x103);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/n/blk", &in), 0);
	CU_ASSERT_EQUAL(in.in_rdev, 0x801);
	struct mds_dirent ents[16];
	uint32_t nr;
	bool eof;
	int seen = 0;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/n", &in), 0);
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, NULL, &in.in_fid, 0, 16, ents, 16, &nr, &eof), 0);
	for (uint32_t i = 0; i < nr; i++) {
		const char *n = ents[i].de_name;
		uint8_t t = ents[i].de_type;
		seen += (!strcmp(n, "fifo") && t == DT_FIFO) + (!strcmp(n, "sock") && t == DT_SOCK);
		seen += (!strcmp(n, "chr") && t == DT_CHR) + (!strcmp(n, "blk") && t == DT_BLK);
		seen += !strcmp(n, "reg") && t == DT_REG;
	}
	CU_ASSERT_EQUAL(seen, 5);
	/* a special file goes without a destroy record (no objects) */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/n/fifo", &in), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/n/fifo"), 0);
	CU_ASSERT_EQUAL(count_destroy(&in.in_fid), 0);
}

static void test_names_any_byte_but_slash_and_limits(void)
{
	struct mds_inode in, root, d;
	char name[300], path[5000];
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/nm", 0755), 0);
	const char odd[] = "/nm/\x01\x7f\xff\xfe sp\tace\n:*?\"<>|\\";
	CU_ASSERT_EQUAL(fx_creat(NULL, odd, 0644, &in), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, odd, NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/nm", &d), 0);
	struct mds_dirent ents[8];
	uint32_t nr;
	bool eof;
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, NULL, &d.in_fid, 0, 8, ents, 8, &nr, &eof), 0);
	CU_ASSERT_EQUAL(nr, 1);
	CU_ASSERT_STRING_EQUAL(ents[0].de_name, odd + 4);
	/* 255 bytes is a name, 256 is too long, even to create */
	memset(name, 'n', sizeof(name));
	memcpy(name, "/nm/", 4);
	name[4 + 255] = 0;
	CU_ASSERT_EQUAL(fx_creat(NULL, name, 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, name, NULL), 0);
	name[4 + 255] = 'n';
	name[4 + 256] = 0;
	CU_ASSERT_EQUAL(fx_creat(NULL, name, 0644, NULL), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, name, 0755), -ENAMETOOLONG);
	/* a too-long name after a missing directory: ENOENT, as Linux */
	snprintf(path, sizeof(path), "/nm/missing/%s", name + 4);
	CU_ASSERT_EQUAL(fx_stat(NULL, path, NULL), -ENOENT);
	/* "." and ".." everywhere, "/.." is "/" */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/", &root), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/..", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &root.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/../../nm/./../nm/.", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &d.in_fid));
	CU_ASSERT_EQUAL(fx_stat(NULL, "//nm//", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &d.in_fid));
	/* paths: 4095 bytes walk (and fail on the missing name), 4096 are too long */
	memset(path, 0, sizeof(path));
	strcpy(path, "/nm");
	while (strlen(path) < 4095 - 2)
		strcat(path, "/.");
	while (strlen(path) < 4095)
		strcat(path, "/");
	CU_ASSERT_EQUAL(strlen(path), 4095);
	CU_ASSERT_EQUAL(fx_stat(NULL, path, &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &d.in_fid));
	strcat(path, "x");
	CU_ASSERT_EQUAL(fx_stat(NULL, path, NULL), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(fx_stat(NULL, "", NULL), -ENOENT);
}

static void test_resolution_from_directory_fid(void)
{
	struct mds_inode d, f, in, sub;
	bool created;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/at", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/at/sub", 0755), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/at", &d), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/at/sub", &sub), 0);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, &d.in_fid, "sub/f", MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, fx_choose, NULL, &f, &created),
			0);
	mds_ns_close_file(ns, &f.in_fid, true, NULL);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/at/sub/f", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &sub.in_fid, "f", 0, &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &f.in_fid));
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &sub.in_fid, "../sub/./f", 0, &in), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &sub.in_fid, "/at", 0, &in), 0); /* absolute */
	CU_ASSERT(weir_fid_eq(&in.in_fid, &d.in_fid));
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &sub.in_fid, "", 0, &in), 0); /* itself */
	CU_ASSERT(weir_fid_eq(&in.in_fid, &sub.in_fid));
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &f.in_fid, "x", 0, &in), -ENOTDIR);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, &sub.in_fid, "d2", 0755, &in), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, &sub.in_fid, "d2", &d.in_fid, "d3", 0), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/at/d3", NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, &d.in_fid, "d3", true), 0);
	/* a removed directory: ENOENT, as for a deleted cwd */
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/at/sub/f"), 0);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/at/sub"), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &sub.in_fid, "f", 0, &in), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, &sub.in_fid, "x", 0755, &in), -ENOENT);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_link_counts_names_and_keeps_file_until_last),
		TH_TEST(test_link_errors_exact_errno),
		TH_TEST(test_link_emlink_beyond_65000),
		TH_TEST(test_symlink_stat_lstat_readlink),
		TH_TEST(test_symlink_relative_absolute_and_intermediate),
		TH_TEST(test_symlink_loops_are_eloop_after_40),
		TH_TEST(test_open_nofollow_creat_through_link_and_slashes),
		TH_TEST(test_mknod_fifo_socket_devices),
		TH_TEST(test_names_any_byte_but_slash_and_limits),
		TH_TEST(test_resolution_from_directory_fid),
		TH_TEST_END,
	};
	return th_cunit_run("mds_links", fx_init, fx_fini, tests);
}
