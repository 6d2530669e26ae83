/*
 * tests/unit/mds/test_rename2.c - renameat2 flags (NOREPLACE, EXCHANGE) of
 * the MDT namespace, rename's EBUSY/ENOTEMPTY/EINVAL cases, and the times:
 * relatime atime on open, a writer's last-write time at close and fsync
 * (and explicit times winning over it), and readdir paging interleaved
 * with creates and unlinks (each entry present throughout is listed once).
 * A real RocksDB; errnos as Linux (ext4) gives them.
 */
#define _GNU_SOURCE
#include "ns_fixture.h"

#define NOREPLACE MDS_RENAME_NOREPLACE
#define EXCHANGE MDS_RENAME_EXCHANGE

static struct weir_fid fid_of(const char *path)
{
	struct mds_inode in;
	memset(&in, 0, sizeof(in));
	CU_ASSERT_EQUAL(fx_lstat(NULL, path, &in), 0);
	return in.in_fid;
}

static uint32_t nlink_of(const char *path)
{
	struct mds_inode in;
	memset(&in, 0, sizeof(in));
	CU_ASSERT_EQUAL(fx_lstat(NULL, path, &in), 0);
	return in.in_nlink;
}

static void test_rename_noreplace(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/nr", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/nr/a", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/nr/b", 0644, NULL), 0);
	struct weir_fid a = fid_of("/nr/a");
	CU_ASSERT_EQUAL(fx_rename(NULL, "/nr/a", "/nr/b", NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/nr/a", "/nr/a", NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/nr/a", "/nr/c", NOREPLACE), 0);
	struct weir_fid c = fid_of("/nr/c");
	CU_ASSERT(weir_fid_eq(&a, &c));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/nr/a", NULL), -ENOENT);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/nr/missing", "/nr/x", NOREPLACE), -ENOENT);
}

static void test_rename_exchange_files_same_dir(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/ex", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/ex/a", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "somewhere", "/ex/b"), 0);
	struct weir_fid a = fid_of("/ex/a"), b = fid_of("/ex/b");
	uint32_t dn = nlink_of("/ex");
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/b", EXCHANGE), 0);
	struct weir_fid a2 = fid_of("/ex/a"), b2 = fid_of("/ex/b");
	CU_ASSERT(weir_fid_eq(&a2, &b));
	CU_ASSERT(weir_fid_eq(&b2, &a));
	CU_ASSERT(S_ISLNK(fx_mode("/ex/a")));
	CU_ASSERT(S_ISREG(fx_mode("/ex/b")));
	CU_ASSERT_EQUAL(nlink_of("/ex"), dn);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/missing", EXCHANGE), -ENOENT);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/missing", "/ex/a", EXCHANGE), -ENOENT);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/b", EXCHANGE | NOREPLACE), -EINVAL);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/b", MDS_RENAME_WHITEOUT), -EINVAL);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/b", 8), -EINVAL);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/ex/a", "/ex/b/", EXCHANGE), -ENOTDIR);
}

static void test_rename_exchange_dir_and_file_across_parents(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/x1", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/x2", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/x1/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/x1/d/inside", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/x2/f", 0644, NULL), 0);
	struct weir_fid d = fid_of("/x1/d"), f = fid_of("/x2/f");
	struct weir_fid x1 = fid_of("/x1"), x2 = fid_of("/x2");
	uint32_t n1 = nlink_of("/x1"), n2 = nlink_of("/x2");
	CU_ASSERT_EQUAL(fx_rename(NULL, "/x1/d", "/x2/f", EXCHANGE), 0);
	struct weir_fid g1 = fid_of("/x1/d"), g2 = fid_of("/x2/f");
	CU_ASSERT(weir_fid_eq(&g1, &f));
	CU_ASSERT(weir_fid_eq(&g2, &d));
	CU_ASSERT_EQUAL(nlink_of("/x1"), n1 - 1);
	CU_ASSERT_EQUAL(nlink_of("/x2"), n2 + 1);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/x2/f/..", &in), 0); /* ".." follows */
	CU_ASSERT(weir_fid_eq(&in.in_fid, &x2));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/x2/f/inside", NULL), 0);
	/* two directories across parents: nlinks stay, ".." swap */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/x1/e", 0755), 0);
	n1 = nlink_of("/x1");
	n2 = nlink_of("/x2");
	CU_ASSERT_EQUAL(fx_rename(NULL, "/x1/e", "/x2/f", EXCHANGE), 0);
	CU_ASSERT_EQUAL(nlink_of("/x1"), n1);
	CU_ASSERT_EQUAL(nlink_of("/x2"), n2);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/x1/e/..", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &x1));
	CU_ASSERT_EQUAL(fx_stat(NULL, "/x1/e/inside", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/x2/f/..", &in), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &x2));
	/* a directory with one of its ancestors: EINVAL either way round */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/x1/e/deep", 0755), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/x1/e", "/x1/e/deep", EXCHANGE), -EINVAL);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/x1/e/deep", "/x1/e", EXCHANGE), -EINVAL);
	/* exchange needs write on a directory that changes parent */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/x1", 0777), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/x2", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/x1/mine", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_rename(&U1, "/x1/mine", "/x2/f", EXCHANGE), -EACCES);
}

static void test_rename_ebusy_enotempty_einval(void)
{
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/rb", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/rb/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/rb/d/e", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/rb/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/d/.", "/rb/x", 0), -EBUSY);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/d/..", "/rb/x", 0), -EBUSY);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/f", "/rb/d/.", 0), -EBUSY);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/", "/rb/x", 0), -EBUSY);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/f", "/", 0), -EBUSY);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/d/e", "/rb/d", 0), -ENOTEMPTY); /* onto an ancestor */
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/d", "/rb/d/e/x", 0), -EINVAL);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/d", "/rb/d", 0), 0);
	/* a symlink is renamed itself */
	CU_ASSERT_EQUAL(fx_symlink(NULL, "d", "/rb/l"), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/l", "/rb/l2", 0), 0);
	CU_ASSERT(S_ISLNK(fx_mode("/rb/l2")));
	CU_ASSERT(S_ISDIR(fx_mode("/rb/d")));
	/* a file replaces a symlink to a directory (the link is not followed) */
	CU_ASSERT_EQUAL(fx_rename(NULL, "/rb/f", "/rb/l2", 0), 0);
	CU_ASSERT(S_ISREG(fx_mode("/rb/l2")));
}

static void test_relatime_on_open_for_reading(void)
{
	struct mds_inode a, b, c;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/tm", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/tm/f", 0644, &a), 0);
	usleep(2000);
	/* atime == mtime after the create: the first read updates it */
	CU_ASSERT_EQUAL(fx_open(NULL, "/tm/f", MDS_OF_READ, &b), 0);
	CU_ASSERT(b.in_atime_ns > a.in_atime_ns);
	CU_ASSERT(b.in_atime_ns > b.in_mtime_ns);
	uint64_t seq = mds_ns_write_seq(ns);
	usleep(2000);
	/* atime after mtime and ctime, and recent: no write at all */
	CU_ASSERT_EQUAL(fx_open(NULL, "/tm/f", MDS_OF_READ, &c), 0);
	CU_ASSERT_EQUAL(c.in_atime_ns, b.in_atime_ns);
	CU_ASSERT_EQUAL(mds_ns_write_seq(ns), seq);
	/* a change (ctime) makes the next read update it again */
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/tm/f", 0600), 0);
	usleep(2000);
	CU_ASSERT_EQUAL(fx_open(NULL, "/tm/f", MDS_OF_READ, &c), 0);
	CU_ASSERT(c.in_atime_ns > b.in_atime_ns);
	/* a day old: updated even though after mtime */
	struct mds_setattr sa = { .sa_valid = MDS_SA_ATIME | MDS_SA_MTIME,
				  .sa_atime_ns = c.in_atime_ns - 25LL * 3600 * 1000000000LL,
				  .sa_mtime_ns = c.in_atime_ns - 26LL * 3600 * 1000000000LL };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, NULL, "/tm/f", 0, &sa, &b), 0);
	CU_ASSERT_EQUAL(fx_open(NULL, "/tm/f", MDS_OF_WRITE, &c), 0); /* writers don't */
	CU_ASSERT_EQUAL(c.in_atime_ns, sa.sa_atime_ns);
	/* ctime moved with the setattr; push it into the past with a restart-proof
	 * check: the open still updates atime because atime <= ctime */
	CU_ASSERT_EQUAL(fx_open(NULL, "/tm/f", MDS_OF_READ, &c), 0);
	CU_ASSERT(c.in_atime_ns > sa.sa_atime_ns);
}

static void test_writer_mtime_reported_at_close_and_fsync(void)
{
	struct mds_inode in, got;
	bool created;
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = 10 };

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/wm", 0755), 0);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/wm/f", MDS_OF_CREAT | MDS_OF_WRITE, 0644,
					 NULL, fx_choose, NULL, &in, &created),
			0);
	/* fsync reports a write time: mtime, and ctime when later */
	wr.wr_mtime_ns = in.in_ctime_ns + 5000000000LL;
	wr.wr_size_epoch = mds_ns_size_epoch(ns, &in.in_fid);
	CU_ASSERT_EQUAL(mds_ns_update_size(ns, &in.in_fid, &wr), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mtime_ns, wr.wr_mtime_ns);
	CU_ASSERT_EQUAL(got.in_ctime_ns, wr.wr_mtime_ns);
	CU_ASSERT_EQUAL(got.in_size, 10);
	/* the close's later write time */
	wr.wr_mtime_ns += 1000;
	wr.wr_size = 20;
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, &wr), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mtime_ns, wr.wr_mtime_ns);
	CU_ASSERT_EQUAL(got.in_size, 20);
	/* explicit times set after the last write (cp -p, tar) win over the close */
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/wm/f", MDS_OF_WRITE, 0, NULL, fx_choose,
					 NULL, &in, &created),
			0);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t write_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
	usleep(2000);
	struct mds_setattr sa = { .sa_valid = MDS_SA_ATIME | MDS_SA_MTIME, .sa_atime_ns = 42,
				  .sa_mtime_ns = 4242 };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &in.in_fid, NULL, 0, &sa, &got), 0);
	wr.wr_mtime_ns = write_ns;
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &in.in_fid, true, &wr), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mtime_ns, 4242);
	CU_ASSERT_EQUAL(got.in_atime_ns, 42);
	/* a reader's close reports nothing */
	CU_ASSERT_EQUAL(fx_open(NULL, "/wm/f", MDS_OF_READ, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mtime_ns, 4242);
	/* O_TRUNC sets mtime and ctime to now even on an empty file */
	CU_ASSERT_EQUAL(fx_open(NULL, "/wm/f", MDS_OF_WRITE | MDS_OF_TRUNC, &got), 0);
	CU_ASSERT(got.in_mtime_ns > 4242);
	CU_ASSERT_EQUAL(got.in_size, 0);
}

/* Readdir in pages of 50 while other names come and go between pages. */
static void test_readdir_pages_interleaved_with_creates_and_unlinks(void)
{
	enum { STABLE = 1500, CHURN = 1500 };
	char p[64];
	struct mds_inode d;
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/il", 0755) == 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/il", &d), 0);
	for (int i = 0; i < STABLE; i++) {
		snprintf(p, sizeof(p), "/il/stable-%d", i);
		CU_ASSERT_FATAL(fx_creat(NULL, p, 0644, NULL) == 0);
	}
	for (int i = 0; i < CHURN; i += 2) {
		snprintf(p, sizeof(p), "/il/churn-%d", i);
		CU_ASSERT_FATAL(fx_creat(NULL, p, 0644, NULL) == 0);
	}
	static unsigned char seen[STABLE];
	memset(seen, 0, sizeof(seen));
	struct mds_dirent *ents = calloc(200, sizeof(*ents));
	uint64_t cookie = 0;
	bool eof = false;
	int pages = 0, next = 1;
	while (!eof) {
		uint32_t nr;
		CU_ASSERT_FATAL(mds_ns_readdir(ns, NULL, &d.in_fid, cookie, 50, ents, 200, &nr,
					       &eof) == 0);
		for (uint32_t i = 0; i < nr; i++) {
			int k;
			if (sscanf(ents[i].de_name, "stable-%d", &k) == 1 && k >= 0 && k < STABLE)
				seen[k]++;
		}
		if (nr)
			cookie = ents[nr - 1].de_cookie;
		/* churn: create odd names, remove even ones, a few per page */
		for (int j = 0; j < 10 && next < CHURN; j++, next += 2) {
			snprintf(p, sizeof(p), "/il/churn-%d", next);
			CU_ASSERT_EQUAL(fx_creat(NULL, p, 0644, NULL), 0);
			snprintf(p, sizeof(p), "/il/churn-%d", next - 1);
			CU_ASSERT_EQUAL(fx_unlink(NULL, p), 0);
		}
		CU_ASSERT_FATAL(++pages < 10000);
	}
	int once = 0;
	for (int i = 0; i < STABLE; i++)
		once += seen[i] == 1;
	CU_ASSERT_EQUAL(once, STABLE);
	free(ents);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_rename_noreplace),
		TH_TEST(test_rename_exchange_files_same_dir),
		TH_TEST(test_rename_exchange_dir_and_file_across_parents),
		TH_TEST(test_rename_ebusy_enotempty_einval),
		TH_TEST(test_relatime_on_open_for_reading),
		TH_TEST(test_writer_mtime_reported_at_close_and_fsync),
		TH_TEST(test_readdir_pages_interleaved_with_creates_and_unlinks),
		TH_TEST_END,
	};
	return th_cunit_run("mds_rename2", fx_init, fx_fini, tests);
}
