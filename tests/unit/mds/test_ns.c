/*
 * tests/unit/mds/test_ns.c - the MDT namespace (mds/ns.c) on a real RocksDB
 * in a temporary directory: create/open, mkdir, unlink/rmdir, rename,
 * readdir paging, layouts, open-unlinked files, the destroy queue, and
 * persistence across close/reopen.
 */
#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mds/mds.h"

static char tmpdir[256];
static struct mds_ns *ns;
static int nr_osts = 4;

/* OST placement for the tests: OSTs 0..nr_osts-1, round-robin from the offset. */
static int choose(void *arg, struct weir_layout *lo, int32_t off)
{
	(void)arg;
	if (lo->lo_stripe_count == UINT32_MAX)
		lo->lo_stripe_count = (uint32_t)nr_osts;
	if (lo->lo_stripe_count > (uint32_t)nr_osts)
		return -EINVAL;
	uint32_t start = off >= 0 ? (uint32_t)off : 0;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++)
		lo->lo_osts[i] = (start + i) % (uint32_t)nr_osts;
	return 0;
}

static void ns_reopen(void)
{
	if (ns)
		mds_ns_close(ns);
	struct mds_ns_conf c = { .nc_path = tmpdir, .nc_def_stripe_count = 1,
				 .nc_def_stripe_size = 1 << 20 };
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
}

static int suite_init(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/weir-test-ns-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	struct mds_ns_conf c = { .nc_path = tmpdir };
	return mds_ns_open(&c, &ns);
}

static int suite_fini(void)
{
	mds_ns_close(ns);
	ns = NULL;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int close_writer(const struct weir_fid *fid, uint64_t size, uint64_t blocks)
{
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = size, .wr_blocks = blocks,
				       .wr_size_epoch = mds_ns_size_epoch(ns, fid) };
	return mds_ns_close_file(ns, fid, true, &wr);
}

static int create(const char *path, uint32_t flags, struct mds_inode *in)
{
	bool created;
	int rc = mds_ns_open_file(ns, NULL, NULL, path, MDS_OF_CREAT | MDS_OF_WRITE | flags, 0644, NULL,
				  choose, NULL, in, &created);
	if (!rc)
		close_writer(&in->in_fid, in->in_size, 0);
	return rc;
}

static void test_open_create_then_lookup_finds_it(void)
{
	struct mds_inode in, got;
	CU_ASSERT_EQUAL(create("/f1", 0, &in), 0);
	CU_ASSERT(S_ISREG(in.in_mode));
	CU_ASSERT_EQUAL(in.in_nlink, 1);
	CU_ASSERT(in.in_has_layout);
	CU_ASSERT_EQUAL(in.in_layout.lo_stripe_count, 1);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/f1", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &in.in_fid));
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mode, S_IFREG | 0644);
	/* "//f1/" style paths and "." resolve the same */
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "//./f1", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &in.in_fid));
}

static void test_open_excl_existing_returns_eexist(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(create("/excl", MDS_OF_EXCL, &in), 0);
	CU_ASSERT_EQUAL(create("/excl", MDS_OF_EXCL, &in), -EEXIST);
	CU_ASSERT_EQUAL(create("/excl", 0, &in), 0); /* without O_EXCL it opens */
}

static void test_lookup_errors_exact_errno(void)
{
	struct mds_inode in;
	bool created;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/missing", 0, &in), -ENOENT);
	CU_ASSERT_EQUAL(create("/plain", 0, &in), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/plain/x", 0, &in), -ENOTDIR);
	char name[300];
	memset(name, 'a', 257); /* "/" + a 256-byte name */
	name[0] = '/';
	name[257] = 0;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, name, 0, &in), -ENAMETOOLONG);
	char *longp = malloc(5000);
	memset(longp, 'b', 4999);
	longp[4999] = 0;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, longp, 0, &in), -ENAMETOOLONG);
	free(longp);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/nodir/x", MDS_OF_CREAT | MDS_OF_WRITE, 0644,
					 NULL, choose, NULL, &in, &created),
			-ENOENT);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/", MDS_OF_WRITE, 0, NULL, choose, NULL, &in,
					 &created),
			-EISDIR);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/plain", MDS_OF_READ | MDS_OF_DIRECTORY, 0,
					 NULL, choose, NULL, &in, &created),
			-ENOTDIR);
}

static void test_mkdir_rmdir_nlink_and_errors(void)
{
	struct mds_inode root0, root1, d, in;
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/", 0, &root0), 0);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/d1", 0755, &d), 0);
	CU_ASSERT(S_ISDIR(d.in_mode));
	CU_ASSERT_EQUAL(d.in_nlink, 2);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/", 0, &root1), 0);
	CU_ASSERT_EQUAL(root1.in_nlink, root0.in_nlink + 1);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/d1", 0755, &d), -EEXIST);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/d1/sub", 0755, &d), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/d1/sub/..", 0, &in), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/d1", 0, &d), 0);
	CU_ASSERT(weir_fid_eq(&in.in_fid, &d.in_fid));
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1", true), -ENOTEMPTY);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1", false), -EISDIR);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/", true), -EBUSY);
	CU_ASSERT_EQUAL(create("/d1/file", 0, &in), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1/file", true), -ENOTDIR);
	/* by name and FID (a create undone): another file under the name stays */
	struct mds_inode other;
	struct mds_unlink_res gone;
	memset(&gone, 0, sizeof(gone));
	CU_ASSERT_EQUAL(create("/d1/other", 0, &other), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink_fid(ns, NULL, NULL, "/d1/file", false, &other.in_fid, &gone),
			-ESTALE);
	CU_ASSERT(weir_fid_is_zero(&gone.ur_gone)); /* set on success only */
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/d1/file", 0, &d), 0);
	CU_ASSERT(weir_fid_eq(&d.in_fid, &in.in_fid));
	CU_ASSERT_EQUAL(mds_ns_unlink_fid(ns, NULL, NULL, "/d1/other", false, &other.in_fid, &gone),
			0);
	CU_ASSERT(weir_fid_eq(&gone.ur_gone, &other.in_fid)); /* the object the name led to */
	CU_ASSERT(S_ISDIR(gone.ur_dir.in_mode)); /* and the directory that held it, after */
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/d1", 0, &d), 0);
	CU_ASSERT(weir_fid_eq(&gone.ur_dir.in_fid, &d.in_fid));
	CU_ASSERT_EQUAL(gone.ur_dir.in_mtime_ns, d.in_mtime_ns);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1/file", false), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1/sub", true), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/d1", true), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/d1", 0, &d), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/", 0, &root1), 0);
	CU_ASSERT_EQUAL(root1.in_nlink, root0.in_nlink);
}

static int count_destroy(const struct weir_fid *fid)
{
	struct mds_destroy_rec recs[256];
	int n = mds_ns_destroy_peek(ns, recs, 256), hits = 0;
	for (int i = 0; i < n; i++)
		if (weir_fid_eq(&recs[i].dr_fid, fid))
			hits++;
	return hits;
}

static void test_rename_replaces_file_and_queues_old_objects(void)
{
	struct mds_inode a, b, got;
	CU_ASSERT_EQUAL(create("/ra", 0, &a), 0);
	CU_ASSERT_EQUAL(create("/rb", 0, &b), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/ra", NULL, "/rb", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/ra", 0, &got), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rb", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &a.in_fid));
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &b.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&b.in_fid), 1);
	CU_ASSERT_EQUAL(mds_ns_destroy_done(ns, &b.in_fid), 0);
	CU_ASSERT_EQUAL(count_destroy(&b.in_fid), 0);
	/* renaming onto itself does nothing */
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rb", NULL, "/rb", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rb", 0, &got), 0);
}

static void test_rename_directory_rules(void)
{
	struct mds_inode d, e, f, got, p1, p2;
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/rd", 0755, &d), 0);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/rd/child", 0755, &e), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rd", NULL, "/rd/child/x", 0), -EINVAL);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/re", 0755, &e), 0);
	CU_ASSERT_EQUAL(create("/re/file", 0, &f), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rd", NULL, "/re", 0), -ENOTEMPTY);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rd", NULL, "/re/file", 0), -ENOTDIR);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/re/file", NULL, "/rd", 0), -EISDIR);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/", NULL, "/x", 0), -EBUSY);
	/* move a directory to another parent: nlinks and ".." follow */
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rd", 0, &p1), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/re", 0, &p2), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rd/child", NULL, "/re/moved", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/re/moved/..", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &p2.in_fid));
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rd", 0, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, p1.in_nlink - 1);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/re", 0, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, p2.in_nlink + 1);
	/* an empty directory is replaced by a directory */
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/rf", 0755, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/rd", NULL, "/rf", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rf", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &d.in_fid));
}

static void test_readdir_pages_return_each_name_once(void)
{
	struct mds_inode d, in;
	enum { N = 2500 };
	CU_ASSERT_FATAL(mds_ns_mkdir(ns, NULL, NULL, "/big", 0755, &d) == 0);
	for (int i = 0; i < N; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/big/file-%05d", i);
		CU_ASSERT_FATAL(create(p, 0, &in) == 0);
	}
	static unsigned char seen[N];
	memset(seen, 0, sizeof(seen));
	struct mds_dirent *ents = calloc(200, sizeof(*ents));
	uint64_t cookie = 0, last = 0;
	int total = 0, pages = 0;
	bool eof = false;
	while (!eof) {
		uint32_t nr;
		CU_ASSERT_FATAL(mds_ns_readdir(ns, NULL, &d.in_fid, cookie, 100, ents, 200, &nr, &eof) == 0);
		pages++;
		for (uint32_t i = 0; i < nr; i++) {
			int k = atoi(ents[i].de_name + 5);
			CU_ASSERT(k >= 0 && k < N);
			if (k >= 0 && k < N)
				seen[k]++;
			CU_ASSERT(ents[i].de_cookie > last || (total == 0 && i == 0));
			CU_ASSERT(ents[i].de_cookie >= 3);
			CU_ASSERT_EQUAL(ents[i].de_type, DT_REG);
			last = ents[i].de_cookie;
			total++;
		}
		if (nr)
			cookie = ents[nr - 1].de_cookie;
		CU_ASSERT_FATAL(pages < 1000);
	}
	CU_ASSERT_EQUAL(total, N);
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	CU_ASSERT(pages >= N / 100);
	uint32_t nr;
	CU_ASSERT_EQUAL(mds_ns_readdir(ns, NULL, &in.in_fid, 0, 10, ents, 200, &nr, &eof), -ENOTDIR);
	free(ents);
}

static void test_dir_default_layout_is_inherited(void)
{
	struct mds_inode d, f;
	struct mds_layout_req lr = { .lr_stripe_count = 4, .lr_stripe_size = 64 * 1024,
				     .lr_stripe_offset = -1 };
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/striped", 0755, &d), 0);
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, NULL, NULL, "/striped", &lr, false, 0, choose, NULL, &d), 0);
	CU_ASSERT(d.in_has_layout);
	CU_ASSERT_EQUAL(create("/striped/f", 0, &f), 0);
	CU_ASSERT_EQUAL(f.in_layout.lo_stripe_count, 4);
	CU_ASSERT_EQUAL(f.in_layout.lo_stripe_size, 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_check(&f.in_layout), 0);
	/* subdirectories inherit the default, and so their files */
	struct mds_inode sub;
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/striped/sub", 0755, &sub), 0);
	CU_ASSERT(sub.in_has_layout);
	CU_ASSERT_EQUAL(create("/striped/sub/f", 0, &f), 0);
	CU_ASSERT_EQUAL(f.in_layout.lo_stripe_count, 4);
	/* setstripe on an existing file is refused; on a new path it creates */
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, NULL, NULL, "/striped/f", &lr, true, 0644, choose, NULL, &f),
			-EEXIST);
	lr.lr_stripe_count = 2;
	lr.lr_stripe_offset = 1;
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, NULL, NULL, "/striped/g", &lr, true, 0644, choose, NULL, &f),
			0);
	CU_ASSERT_EQUAL(f.in_layout.lo_stripe_count, 2);
	CU_ASSERT_EQUAL(f.in_layout.lo_osts[0], 1);
	lr.lr_stripe_size = 1000; /* not a multiple of 64 KiB */
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, NULL, NULL, "/striped/h", &lr, true, 0644, choose, NULL, &f),
			-EINVAL);
}

static void test_open_unlinked_file_lives_until_last_close(void)
{
	struct mds_inode in, got;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/ou", MDS_OF_CREAT | MDS_OF_WRITE, 0644, NULL,
					 choose, NULL, &in, &created) == 0);
	CU_ASSERT(created);
	CU_ASSERT(in.in_flags & MDS_INODE_F_SIZE_STALE);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/ou", false), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/ou", 0, &got), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 0);
	CU_ASSERT_EQUAL(count_destroy(&in.in_fid), 0);
	CU_ASSERT_EQUAL(close_writer(&in.in_fid, 123, 8), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&in.in_fid), 1);
}

/* Open a directory by path for reading (as opendir's open does). */
static int open_dir(const char *path, struct mds_inode *out)
{
	bool created;
	return mds_ns_open_file(ns, NULL, NULL, path, MDS_OF_READ | MDS_OF_DIRECTORY, 0, NULL,
				choose, NULL, out, &created);
}

/* xfstests generic/035: fstat of an open directory that rename replaced, or rmdir removed */
static void test_open_dir_removed_lives_until_last_close(void)
{
	struct mds_layout_req lr = { .lr_stripe_count = 2, .lr_stripe_size = 65536,
				     .lr_stripe_offset = -1 };
	struct mds_inode b, c, got;
	bool created;

	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/oda", 0755, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/odb", 0755, &got), 0);
	/* a default layout: no objects to destroy for a directory all the same */
	CU_ASSERT_EQUAL(mds_ns_set_layout(ns, NULL, NULL, "/odb", &lr, false, 0, choose, NULL, &got),
			0);
	CU_ASSERT_FATAL(open_dir("/odb", &b) == 0);
	CU_ASSERT_EQUAL(mds_ns_rename(ns, NULL, NULL, "/oda", NULL, "/odb", 0), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &b.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 0);
	CU_ASSERT(S_ISDIR(got.in_mode));
	/* nothing is made in it (IS_DEADDIR): -ENOENT */
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, &b.in_fid, "x", 0755, &got), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, &b.in_fid, "f", MDS_OF_CREAT | MDS_OF_WRITE, 0644,
					 NULL, choose, NULL, &got, &created),
			-ENOENT);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, &b.in_fid, "..", 0, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &b.in_fid, false, NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &b.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&b.in_fid), 0);
	/* rmdir of an open directory */
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/odc", 0755, &got), 0);
	CU_ASSERT_FATAL(open_dir("/odc", &c) == 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/odc", true), 0);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/odc", 0, &got), -ENOENT);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &c.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_nlink, 0);
	/* an open removed directory of the last run goes at the next start */
	ns_reopen();
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &c.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&c.in_fid), 0);
}

static void test_writer_close_records_size_and_clears_stale(void)
{
	struct mds_inode in, got;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/sz", MDS_OF_CREAT | MDS_OF_WRITE, 0644, NULL,
					 choose, NULL, &in, &created) == 0);
	struct mds_inode in2;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/sz", MDS_OF_WRITE, 0, NULL, choose, NULL,
					 &in2, &created) == 0);
	CU_ASSERT_EQUAL(close_writer(&in.in_fid, 4096, 8), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT(got.in_flags & MDS_INODE_F_SIZE_STALE); /* one writer left */
	CU_ASSERT_EQUAL(close_writer(&in.in_fid, 10000, 24), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT(!(got.in_flags & MDS_INODE_F_SIZE_STALE));
	CU_ASSERT_EQUAL(got.in_size, 10000);
	/* O_TRUNC zeroes the recorded size */
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/sz", MDS_OF_WRITE | MDS_OF_TRUNC, 0, NULL,
					 choose, NULL, &in2, &created) == 0);
	CU_ASSERT_EQUAL(in2.in_size, 0);
	CU_ASSERT_EQUAL(close_writer(&in.in_fid, 0, 0), 0);
}

/* Regression: writer A's older (smaller) glimpse arrives after writer B
 * grew the file and closed; the size must not go back. */
static void test_late_smaller_report_keeps_larger_size(void)
{
	struct mds_inode a, b, got;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/race", MDS_OF_CREAT | MDS_OF_WRITE, 0644,
					 NULL, choose, NULL, &a, &created) == 0);
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/race", MDS_OF_WRITE, 0, NULL, choose,
					 NULL, &b, &created) == 0);
	CU_ASSERT_EQUAL(close_writer(&b.in_fid, 1 << 20, 2048), 0); /* B wrote 1 MiB */
	CU_ASSERT_EQUAL(close_writer(&a.in_fid, 4096, 8), 0);       /* A glimpsed earlier */
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 1 << 20);
	/* a truncate still shrinks it */
	struct mds_setattr sa = { .sa_valid = MDS_SA_SIZE, .sa_size = 10 };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &a.in_fid, NULL, 0, &sa, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &a.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, 10);
}

/*
 * A truncate's size epoch (mds_ns_size_epoch) moves only once its size is
 * committed. A reader that takes the epoch and then the inode (op_getattr,
 * for the glimpse a writer reports at its close) and gets the epoch of the
 * k-th truncate must get that truncate's size or a later one's. The epoch
 * used to move before the commit: a getattr in between paired the size from
 * before the truncate with the epoch after it, the writer's close reported
 * that old size as current, and the MDS took it -- the truncate undone (the
 * two-client model check under the sanitizers, seeds 1, 3, 5-9).
 * Truncate k sets the size to k; every bump is this file's, so the k-th
 * truncate's epoch is the open's plus k.
 */
struct epoch_race {
	struct weir_fid er_fid;
	uint64_t er_e0;
	atomic_bool er_stop;
	unsigned long er_reads, er_bad;
	uint64_t er_bad_epoch, er_bad_size;
};

static void *epoch_reader(void *arg)
{
	struct epoch_race *r = arg;
	while (!atomic_load(&r->er_stop)) {
		uint64_t e = mds_ns_size_epoch(ns, &r->er_fid);
		struct mds_inode in;
		if (mds_ns_getattr(ns, &r->er_fid, &in))
			continue;
		r->er_reads++;
		if (e > r->er_e0 && in.in_size < e - r->er_e0 && !r->er_bad++) {
			r->er_bad_epoch = e - r->er_e0;
			r->er_bad_size = in.in_size;
		}
	}
	return NULL;
}

static void test_truncate_epoch_moves_after_its_size(void)
{
	struct mds_inode in, got;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/epoch", MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, choose, NULL, &in, &created) == 0);
	struct epoch_race r = { .er_fid = in.in_fid, .er_e0 = mds_ns_size_epoch(ns, &in.in_fid) };
	CU_ASSERT_FATAL(r.er_e0 != 0);
	pthread_t t;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, epoch_reader, &r) == 0);
	const uint64_t n = 3000;
	for (uint64_t k = 1; k <= n; k++) {
		struct mds_setattr sa = { .sa_valid = MDS_SA_SIZE, .sa_size = k };
		if (mds_ns_setattr(ns, NULL, &in.in_fid, NULL, 0, &sa, &got)) {
			CU_FAIL("setattr");
			break;
		}
	}
	atomic_store(&r.er_stop, true);
	pthread_join(t, NULL);
	if (r.er_bad)
		fprintf(stderr, "\n  %lu of %lu reads paired the epoch of truncate %llu with the size"
			" %llu (before it)\n", r.er_bad, r.er_reads,
			(unsigned long long)r.er_bad_epoch, (unsigned long long)r.er_bad_size);
	CU_ASSERT_EQUAL(r.er_bad, 0);
	CU_ASSERT(r.er_reads > 0);
	CU_ASSERT_EQUAL(mds_ns_size_epoch(ns, &in.in_fid), r.er_e0 + n);
	CU_ASSERT_EQUAL(close_writer(&in.in_fid, n, 0), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_size, n);
}

static void test_setattr_changes_mode_size_times(void)
{
	struct mds_inode in, got;
	CU_ASSERT_EQUAL(create("/sa", 0, &in), 0);
	struct mds_setattr sa = { .sa_valid = MDS_SA_MODE | MDS_SA_SIZE | MDS_SA_MTIME,
				  .sa_mode = 0600, .sa_size = 77, .sa_mtime_ns = 1234567890123LL };
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &in.in_fid, NULL, 0, &sa, &got), 0);
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), 0);
	CU_ASSERT_EQUAL(got.in_mode, S_IFREG | 0600);
	CU_ASSERT_EQUAL(got.in_size, 77);
	CU_ASSERT_EQUAL(got.in_mtime_ns, 1234567890123LL);
	sa.sa_size = (uint64_t)INT64_MAX + 1;
	CU_ASSERT_EQUAL(mds_ns_setattr(ns, NULL, &in.in_fid, NULL, 0, &sa, &got), -EFBIG);
}

static void test_reopen_keeps_namespace_and_never_reuses_fids(void)
{
	struct mds_inode a, b, got;
	CU_ASSERT_EQUAL(mds_ns_mkdir(ns, NULL, NULL, "/persist", 0755, &a), 0);
	CU_ASSERT_EQUAL(create("/persist/file", 0, &b), 0);
	ns_reopen();
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/persist/file", 0, &got), 0);
	CU_ASSERT(weir_fid_eq(&got.in_fid, &b.in_fid));
	CU_ASSERT_EQUAL(create("/persist/new", 0, &got), 0);
	CU_ASSERT(got.in_fid.fid_oid > b.in_fid.fid_oid);
	CU_ASSERT(got.in_fid.fid_oid > a.in_fid.fid_oid);
}

static void test_orphans_of_last_run_are_destroyed_at_open(void)
{
	struct mds_inode in, got;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, NULL, NULL, "/orph", MDS_OF_CREAT | MDS_OF_WRITE, 0644,
					 NULL, choose, NULL, &in, &created) == 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/orph", false), 0);
	CU_ASSERT_EQUAL(count_destroy(&in.in_fid), 0);
	ns_reopen(); /* the handle died with the "server" */
	CU_ASSERT_EQUAL(mds_ns_getattr(ns, &in.in_fid, &got), -ENOENT);
	CU_ASSERT_EQUAL(count_destroy(&in.in_fid), 1);
}

static void test_sync_covers_write_seq(void)
{
	struct mds_inode in;
	uint64_t before = mds_ns_write_seq(ns), synced = 0;
	CU_ASSERT_EQUAL(create("/syncme", 0, &in), 0);
	CU_ASSERT(mds_ns_write_seq(ns) > before);
	CU_ASSERT_EQUAL(mds_ns_sync(ns, &synced), 0);
	CU_ASSERT(synced >= mds_ns_write_seq(ns));
}

/*
 * Transnos go on across a reopen from the last batch's (persisted in it);
 * the recovery floor keeps the boot transno of the first run of a window
 * through a restart inside it, and goes when cleared.
 */
static void test_transno_persisted_and_recovery_floor(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(create("/tn1", 0, &in), 0);
	uint64_t t1 = mds_ns_write_seq(ns);
	ns_reopen(); /* (the close itself may write a batch or two) */
	uint64_t b1 = mds_ns_boot_transno(ns);
	CU_ASSERT(b1 >= t1);
	CU_ASSERT(mds_ns_write_seq(ns) >= b1);
	CU_ASSERT_EQUAL(mds_ns_recovery_floor(ns, true), 0); /* a window opens */
	CU_ASSERT_EQUAL(create("/tn2", 0, &in), 0);           /* a re-run, say */
	uint64_t t2 = mds_ns_write_seq(ns);
	CU_ASSERT(t2 > b1);
	ns_reopen(); /* restarted inside the window */
	CU_ASSERT(mds_ns_write_seq(ns) >= t2); /* numbering goes on */
	CU_ASSERT_EQUAL(mds_ns_boot_transno(ns), b1); /* survival is judged from the floor */
	CU_ASSERT_EQUAL(mds_ns_recovery_floor(ns, false), 0); /* the window closed */
	ns_reopen();
	CU_ASSERT(mds_ns_boot_transno(ns) > t2);
	CU_ASSERT(mds_ns_boot_transno(ns) <= mds_ns_write_seq(ns));
}

/*
 * A replayed create takes the FID its client names only when this MDT gave
 * it (its sequence, below the high-water mark) and no inode has it.
 */
static void test_replay_fid_checked(void)
{
	struct mds_inode a, b;
	CU_ASSERT_EQUAL(create("/rf1", 0, &a), 0);
	/* taken: -EEXIST, nothing made */
	mds_ns_replay_set(&a.in_fid, NULL);
	CU_ASSERT_EQUAL(create("/rf2", 0, &b), -EEXIST);
	mds_ns_replay_set(NULL, NULL);
	CU_ASSERT_EQUAL(mds_ns_lookup(ns, NULL, NULL, "/rf2", 0, &b), -ENOENT);
	/* never given (past the high-water mark) or another sequence: -EINVAL */
	struct weir_fid f = a.in_fid;
	f.fid_oid += 1ULL << 40;
	mds_ns_replay_set(&f, NULL);
	CU_ASSERT_EQUAL(create("/rf2", 0, &b), -EINVAL);
	f = a.in_fid;
	f.fid_seq += 1;
	f.fid_oid += 1;
	mds_ns_replay_set(&f, NULL);
	CU_ASSERT_EQUAL(create("/rf2", 0, &b), -EINVAL);
	/* a free one this MDT gave: taken */
	CU_ASSERT_EQUAL(create("/rf3", 0, &b), 0);
	CU_ASSERT_EQUAL(mds_ns_unlink(ns, NULL, NULL, "/rf3", false), 0);
	mds_ns_replay_set(&b.in_fid, NULL);
	struct mds_inode c;
	CU_ASSERT_EQUAL(create("/rf2", 0, &c), 0);
	mds_ns_replay_set(NULL, NULL);
	CU_ASSERT(weir_fid_eq(&c.in_fid, &b.in_fid));
}

int main(void)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	CU_pSuite s = CU_add_suite("mds_ns", suite_init, suite_fini);
	CU_add_test(s, "open_create_then_lookup_finds_it", test_open_create_then_lookup_finds_it);
	CU_add_test(s, "open_excl_existing_returns_eexist", test_open_excl_existing_returns_eexist);
	CU_add_test(s, "lookup_errors_exact_errno", test_lookup_errors_exact_errno);
	CU_add_test(s, "mkdir_rmdir_nlink_and_errors", test_mkdir_rmdir_nlink_and_errors);
	CU_add_test(s, "rename_replaces_file_and_queues_old_objects",
		    test_rename_replaces_file_and_queues_old_objects);
	CU_add_test(s, "rename_directory_rules", test_rename_directory_rules);
	CU_add_test(s, "readdir_pages_return_each_name_once",
		    test_readdir_pages_return_each_name_once);
	CU_add_test(s, "dir_default_layout_is_inherited", test_dir_default_layout_is_inherited);
	CU_add_test(s, "open_unlinked_file_lives_until_last_close",
		    test_open_unlinked_file_lives_until_last_close);
	CU_add_test(s, "open_dir_removed_lives_until_last_close",
		    test_open_dir_removed_lives_until_last_close);
	CU_add_test(s, "writer_close_records_size_and_clears_stale",
		    test_writer_close_records_size_and_clears_stale);
	CU_add_test(s, "late_smaller_report_keeps_larger_size",
		    test_late_smaller_report_keeps_larger_size);
	CU_add_test(s, "truncate_epoch_moves_after_its_size",
		    test_truncate_epoch_moves_after_its_size);
	CU_add_test(s, "setattr_changes_mode_size_times", test_setattr_changes_mode_size_times);
	CU_add_test(s, "reopen_keeps_namespace_and_never_reuses_fids",
		    test_reopen_keeps_namespace_and_never_reuses_fids);
	CU_add_test(s, "orphans_of_last_run_are_destroyed_at_open",
		    test_orphans_of_last_run_are_destroyed_at_open);
	CU_add_test(s, "sync_covers_write_seq", test_sync_covers_write_seq);
	CU_add_test(s, "transno_persisted_and_recovery_floor",
		    test_transno_persisted_and_recovery_floor);
	CU_add_test(s, "replay_fid_checked", test_replay_fid_checked);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
