/*
 * tests/integration/test_fidops.c - libweir's FID-based calls (weir_fid_*,
 * client/fidops.c) on a real cluster: lookups and attributes against the
 * path calls, create/open by FID, setattr of every field, the namespace by
 * (directory FID, name) including renames across directories, listings,
 * symlinks, hard links, special files, xattrs, per-thread credentials, and
 * the exact errno of each documented failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

static struct th_cluster *cl;
static weir_fs_t *fs;
static weir_fid_t root;

static int suite_init(void)
{
	struct th_cluster_opts o = {.tco_nr_oss = 1, .tco_ost_per_oss = 2};

	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	return weir_fid_getroot(fs, &root) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static bool fid_eq(const weir_fid_t *a, const weir_fid_t *b)
{
	return a->seq == b->seq && a->oid == b->oid;
}

/* mkdir \a name in the root by FID; \return its FID (fails the test otherwise). */
static weir_fid_t mkdir_root(const char *name)
{
	weir_fid_t fid = {0, 0};
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(fs, &root, name, 0755, &fid, NULL), 0);
	return fid;
}

/* Create \a name in \a dir holding \a len bytes of \a data; \return its FID. */
static weir_fid_t put(const weir_fid_t *dir, const char *name, const void *data, size_t len)
{
	weir_file_t *fh = NULL;
	weir_fid_t fid = {0, 0};
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(fs, dir, name, O_WRONLY | O_TRUNC, 0644, &fh, NULL),
			      0);
	if (len)
		CU_ASSERT_EQUAL(weir_pwrite(fh, data, len, 0), (ssize_t)len);
	weir_file_fid(fh, &fid);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	return fid;
}

/* ------------------------------------------------------------ lookup, getattr */

static void test_fid_lookup_getattr_match_the_path_calls(void)
{
	weir_fid_t d = mkdir_root("lk"), f, got;
	struct stat st, pst;
	char longname[300];

	f = put(&d, "file", "hello", 5);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &root, "lk", &got, &st), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &d));
	CU_ASSERT_TRUE(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "file", &got, &st), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &f));
	CU_ASSERT_EQUAL(weir_stat(fs, "/lk/file", &pst), 0);
	CU_ASSERT_EQUAL(st.st_ino, pst.st_ino);
	CU_ASSERT_EQUAL(st.st_size, 5);
	CU_ASSERT_EQUAL(st.st_mode, pst.st_mode);
	CU_ASSERT_EQUAL(st.st_mtim.tv_sec, pst.st_mtim.tv_sec);
	memset(&st, 0, sizeof(st));
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_ino, pst.st_ino);
	CU_ASSERT_EQUAL(st.st_size, 5);
	/* optional outputs */
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "file", NULL, NULL), 0);
	/* ".." of a directory, and of the root */
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "..", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &root));
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &root, "..", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &root));
	/* errors */
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "missing", &got, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "", &got, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &root, "lk/file", &got, &st), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, NULL, &got, &st), -EINVAL);
	memset(longname, 'n', 256);
	longname[256] = '\0';
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, longname, &got, &st), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &f, "x", &got, &st), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &f, NULL), -EINVAL);
}

/* ------------------------------------------------------------ create, open */

static void test_fid_create_open_read_write_truncate(void)
{
	weir_fid_t d = mkdir_root("cr"), fid, zero = {0, 0};
	weir_file_t *fh = NULL;
	struct stat st;
	char buf[64];

	CU_ASSERT_EQUAL_FATAL(weir_fid_create(fs, &d, "new", O_RDWR | O_EXCL, 0640, &fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 0640);
	CU_ASSERT_EQUAL(st.st_size, 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "0123456789", 10, 0), 10);
	weir_file_fid(fh, &fid);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fid_create(fs, &d, "new", O_RDWR | O_EXCL, 0640, &fh, &st), -EEXIST);
	CU_ASSERT_PTR_NULL(fh);
	/* without O_EXCL an existing file is opened, its attributes returned */
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(fs, &d, "new", O_RDONLY, 0600, &fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 10);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 0640);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	CU_ASSERT_EQUAL_FATAL(weir_fid_open(fs, &fid, O_RDONLY, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 0), 10);
	CU_ASSERT_EQUAL(memcmp(buf, "0123456789", 10), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "x", 1, 0), -EBADF);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* O_CREAT is ignored, O_TRUNC truncates */
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(fs, &fid, O_WRONLY | O_TRUNC | O_CREAT, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &fid, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	/* a directory: readable, not writable */
	CU_ASSERT_EQUAL(weir_fid_open(fs, &d, O_RDONLY | O_DIRECTORY, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fid_open(fs, &d, O_RDWR, &fh), -EISDIR);
	CU_ASSERT_EQUAL(weir_fid_open(fs, &fid, O_RDONLY | O_DIRECTORY, &fh), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_fid_open(fs, &zero, O_RDONLY, &fh), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_create(fs, &d, ".", O_RDWR, 0644, &fh, NULL), -EEXIST);
	CU_ASSERT_EQUAL(weir_fid_create(fs, &fid, "x", O_RDWR, 0644, &fh, NULL), -ENOTDIR);
	/* removed: ENOENT by FID */
	CU_ASSERT_EQUAL(weir_fid_unlink(fs, &d, "new"), 0);
	CU_ASSERT_EQUAL(weir_fid_open(fs, &fid, O_RDONLY, &fh), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &fid, &st), -ENOENT);
}

/* ------------------------------------------------------------ setattr */

static void test_fid_setattr_mode_owner_size_times(void)
{
	weir_fid_t d = mkdir_root("sa"), f;
	struct stat in, st;
	weir_file_t *fh = NULL;
	char buf[16];

	f = put(&d, "f", "abcdefgh", 8);
	memset(&in, 0, sizeof(in));
	in.st_mode = S_IFDIR | 04600; /* the type bits are ignored */
	in.st_uid = 1234;
	in.st_gid = 5678;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in,
					 WEIR_SETATTR_MODE | WEIR_SETATTR_UID | WEIR_SETATTR_GID,
					 &st),
			0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 04600);
	CU_ASSERT_EQUAL(st.st_uid, 1234);
	CU_ASSERT_EQUAL(st.st_gid, 5678);
	/* shrink, then grow: the bytes past 3 read as zeros */
	in.st_size = 3;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_SIZE, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 3);
	in.st_size = 100000;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_SIZE, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 100000);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(fs, &f, O_RDONLY, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 8, 0), 8);
	CU_ASSERT_EQUAL(memcmp(buf, "abc\0\0\0\0\0", 8), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 16, 99995), 5);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* explicit times, then mtime now */
	in.st_atim.tv_sec = 1000000000;
	in.st_atim.tv_nsec = 123456789;
	in.st_mtim.tv_sec = 1100000000;
	in.st_mtim.tv_nsec = 987654321;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_ATIME | WEIR_SETATTR_MTIME, &st),
			0);
	CU_ASSERT_EQUAL(st.st_atim.tv_sec, 1000000000);
	CU_ASSERT_EQUAL(st.st_atim.tv_nsec, 123456789);
	CU_ASSERT_EQUAL(st.st_mtim.tv_sec, 1100000000);
	CU_ASSERT_EQUAL(st.st_mtim.tv_nsec, 987654321);
	time_t before = time(NULL);
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, NULL, WEIR_SETATTR_MTIME_NOW, &st), 0);
	CU_ASSERT_TRUE(st.st_mtim.tv_sec >= before - 2 && st.st_mtim.tv_sec <= time(NULL) + 2);
	CU_ASSERT_EQUAL(st.st_atim.tv_sec, 1000000000);
	/* errors */
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &d, &in, WEIR_SETATTR_SIZE, NULL), -EISDIR);
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_ALL + 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, NULL, WEIR_SETATTR_MODE, NULL), -EINVAL);
	in.st_size = -1;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_SIZE, NULL), -EINVAL);
}

/* ------------------------------------------------------------ namespace */

static void test_fid_rename_unlink_rmdir_across_directories(void)
{
	weir_fid_t a = mkdir_root("rna"), b = mkdir_root("rnb"), f, sub, got;
	struct stat st;

	f = put(&a, "f", "data", 4);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &a, "sub", 0700, &sub, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFDIR | 0700);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &a, "sub", 0700, NULL, NULL), -EEXIST);
	/* within a directory, then across */
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "f", &a, "g", 0), 0);
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "g", &b, "h", 0), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &b, "h", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &f));
	CU_ASSERT_EQUAL(weir_stat(fs, "/rnb/h", &st), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &a, "g", NULL, NULL), -ENOENT);
	/* a directory across directories keeps its FID; its ".." follows */
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "sub", &b, "sub2", 0), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &sub, "..", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &b));
	/* flags */
	put(&a, "other", "x", 1);
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "other", &b, "h", RENAME_NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "other", &b, "h", RENAME_EXCHANGE), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &a, "other", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &f));
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "missing", &b, "x", 0), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &b, "sub2", &sub, "inside", 0), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_rename(fs, &a, "a/b", &b, "x", 0), -EINVAL);
	/* unlink and rmdir errors */
	CU_ASSERT_EQUAL(weir_fid_unlink(fs, &b, "sub2"), -EISDIR);
	CU_ASSERT_EQUAL(weir_fid_rmdir(fs, &b, "h"), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_fid_rmdir(fs, &root, "rnb"), -ENOTEMPTY);
	CU_ASSERT_EQUAL(weir_fid_rmdir(fs, &b, "."), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_unlink(fs, &b, "missing"), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_rmdir(fs, &b, "sub2"), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &sub, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_unlink(fs, &b, "h"), 0);
	CU_ASSERT_EQUAL(weir_fid_rmdir(fs, &root, "rnb"), 0);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &b, "x", 0755, NULL, NULL), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, &a), 0);
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
}

static void test_fid_opendir_lists_every_entry_once(void)
{
	weir_fid_t d = mkdir_root("ls"), kids[300];
	char name[32];
	int seen[300] = {0}, dots = 0, other = 0;
	weir_dir_t *dh = NULL;
	struct weir_dirent de;
	int rc;

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		kids[i] = put(&d, name, NULL, 0);
	}
	CU_ASSERT_EQUAL_FATAL(weir_fid_opendir(fs, &d, &dh), 0);
	while ((rc = weir_readdir(dh, &de)) == 1) {
		if (!strcmp(de.d_name, ".")) {
			CU_ASSERT_TRUE(fid_eq(&de.d_fid, &d));
			dots++;
		} else if (!strcmp(de.d_name, "..")) {
			CU_ASSERT_TRUE(fid_eq(&de.d_fid, &root));
			dots++;
		} else if (de.d_name[0] == 'e' && atoi(de.d_name + 1) < 300) {
			int i = atoi(de.d_name + 1);
			seen[i]++;
			CU_ASSERT_TRUE(fid_eq(&de.d_fid, &kids[i]));
			CU_ASSERT_EQUAL(de.d_type, DT_REG);
		} else {
			other++;
		}
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(dots, 2);
	CU_ASSERT_EQUAL(other, 0);
	for (int i = 0; i < 300; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	CU_ASSERT_EQUAL(weir_closedir(dh), 0);
	CU_ASSERT_EQUAL(weir_fid_opendir(fs, &kids[0], &dh), -ENOTDIR);
}

/* ------------------------------------------------------------ links, nodes, xattrs */

static void test_fid_symlink_link_mknod(void)
{
	weir_fid_t d = mkdir_root("ln"), f, l, n, got;
	struct stat st;
	char buf[64];

	f = put(&d, "f", "abc", 3);
	CU_ASSERT_EQUAL_FATAL(weir_fid_symlink(fs, &d, "sym", "../ln/f", &l, &st), 0);
	CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
	CU_ASSERT_EQUAL(st.st_size, 7);
	/* the final name is not followed */
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &d, "sym", &got, &st), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &l));
	CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
	CU_ASSERT_EQUAL(weir_fid_readlink(fs, &l, buf, sizeof(buf)), 7);
	CU_ASSERT_EQUAL(memcmp(buf, "../ln/f", 7), 0);
	CU_ASSERT_EQUAL(weir_fid_readlink(fs, &l, buf, 3), 3); /* truncated, as readlink(2) */
	CU_ASSERT_EQUAL(memcmp(buf, "../", 3), 0);
	CU_ASSERT_EQUAL(weir_fid_readlink(fs, &f, buf, sizeof(buf)), -EINVAL);
	CU_ASSERT_EQUAL(weir_fid_symlink(fs, &d, "sym", "x", NULL, NULL), -EEXIST);
	CU_ASSERT_EQUAL(weir_fid_symlink(fs, &d, "empty", "", NULL, NULL), -ENOENT);
	/* hard link: one inode, two names */
	CU_ASSERT_EQUAL(weir_fid_link(fs, &f, &root, "ln-hard", &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 2);
	CU_ASSERT_EQUAL(weir_fid_lookup(fs, &root, "ln-hard", &got, NULL), 0);
	CU_ASSERT_TRUE(fid_eq(&got, &f));
	CU_ASSERT_EQUAL(weir_fid_link(fs, &d, &root, "dirlink", NULL), -EPERM);
	CU_ASSERT_EQUAL(weir_fid_link(fs, &f, &d, "f", NULL), -EEXIST);
	CU_ASSERT_EQUAL(weir_fid_unlink(fs, &root, "ln-hard"), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 1);
	/* special files */
	CU_ASSERT_EQUAL(weir_fid_mknod(fs, &d, "fifo", S_IFIFO | 0600, 0, &n, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFIFO | 0600);
	CU_ASSERT_EQUAL(weir_fid_mknod(fs, &d, "chr", S_IFCHR | 0600, makedev(1, 3), NULL, &st), 0);
	CU_ASSERT_TRUE(S_ISCHR(st.st_mode));
	CU_ASSERT_EQUAL(st.st_rdev, makedev(1, 3));
	CU_ASSERT_EQUAL(weir_fid_getattr(fs, &n, &st), 0);
	CU_ASSERT_TRUE(S_ISFIFO(st.st_mode));
}

static void test_fid_xattrs(void)
{
	weir_fid_t d = mkdir_root("xa"), f;
	char buf[256];

	f = put(&d, "f", NULL, 0);
	CU_ASSERT_EQUAL(weir_fid_setxattr(fs, &f, "user.a", "12345", 5, 0), 0);
	CU_ASSERT_EQUAL(weir_fid_setxattr(fs, &f, "user.b", "", 0, XATTR_CREATE), 0);
	CU_ASSERT_EQUAL(weir_fid_setxattr(fs, &f, "user.a", "1", 1, XATTR_CREATE), -EEXIST);
	CU_ASSERT_EQUAL(weir_fid_setxattr(fs, &f, "user.c", "1", 1, XATTR_REPLACE), -ENODATA);
	CU_ASSERT_EQUAL(weir_fid_getxattr(fs, &f, "user.a", NULL, 0), 5); /* size only */
	CU_ASSERT_EQUAL(weir_fid_getxattr(fs, &f, "user.a", buf, sizeof(buf)), 5);
	CU_ASSERT_EQUAL(memcmp(buf, "12345", 5), 0);
	CU_ASSERT_EQUAL(weir_fid_getxattr(fs, &f, "user.a", buf, 2), -ERANGE);
	CU_ASSERT_EQUAL(weir_fid_getxattr(fs, &f, "user.b", buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(weir_fid_getxattr(fs, &f, "user.none", buf, sizeof(buf)), -ENODATA);
	ssize_t n = weir_fid_listxattr(fs, &f, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 14); /* "user.a\0user.b\0" */
	CU_ASSERT_EQUAL(weir_fid_listxattr(fs, &f, NULL, 0), 14);
	CU_ASSERT_EQUAL(weir_fid_listxattr(fs, &f, buf, 3), -ERANGE);
	CU_ASSERT_EQUAL(weir_fid_removexattr(fs, &f, "user.a"), 0);
	CU_ASSERT_EQUAL(weir_fid_removexattr(fs, &f, "user.a"), -ENODATA);
	CU_ASSERT_EQUAL(weir_fid_listxattr(fs, &f, buf, sizeof(buf)), 7);
	CU_ASSERT_EQUAL(weir_fid_setxattr(fs, &f, "user.a", "x", 1, 4), -EINVAL);
}

/* ------------------------------------------------------------ credentials */

static void *other_thread(void *arg)
{
	weir_fid_t *d = arg;
	struct stat st;
	weir_file_t *fh = NULL;

	/* this thread never set credentials: the mount's (root) */
	if (weir_fid_create(fs, d, "by-root", O_WRONLY, 0644, &fh, &st) == 0) {
		weir_close(fh);
		return (void *)(uintptr_t)(st.st_uid == 0 ? 1 : 2);
	}
	return NULL;
}

static void test_fid_cred_set_applies_to_this_thread_only(void)
{
	weir_fid_t d = mkdir_root("cred");
	struct weir_cred c;
	struct stat in, st;
	weir_file_t *fh = NULL;
	pthread_t t;
	void *res = NULL;

	memset(&in, 0, sizeof(in));
	in.st_mode = 0777;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &d, &in, WEIR_SETATTR_MODE, NULL), 0);
	memset(&c, 0, sizeof(c));
	c.cr_uid = 1000;
	c.cr_gid = 1001;
	c.cr_nr_groups = 1;
	c.cr_groups[0] = 1002;
	CU_ASSERT_EQUAL(weir_fid_cred_set(&c), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(fs, &d, "mine", O_WRONLY, 0600, &fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 1000);
	CU_ASSERT_EQUAL(st.st_gid, 1001);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &d, "mydir", 0755, NULL, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 1000);
	/* and the path calls of this thread too */
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/cred/bypath", 0755), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/cred/bypath", &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 1000);
	/* not the owner: chown refused; not root: the root's own directory refused */
	in.st_uid = 0;
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &root, &in, WEIR_SETATTR_UID, NULL), -EPERM);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &root, "not-mine", 0755, NULL, NULL), -EACCES);
	CU_ASSERT_EQUAL(pthread_create(&t, NULL, other_thread, &d), 0);
	pthread_join(t, &res);
	CU_ASSERT_EQUAL((uintptr_t)res, 1);
	/* back to the mount's */
	CU_ASSERT_EQUAL(weir_fid_cred_set(NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_mkdir(fs, &d, "rootdir", 0755, NULL, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 0);
	c.cr_nr_groups = WEIR_CRED_MAX_GROUPS + 1;
	CU_ASSERT_EQUAL(weir_fid_cred_set(&c), -EINVAL);
}

int main(void)
{
	static const struct th_test tests[] = {
	    TH_TEST(test_fid_lookup_getattr_match_the_path_calls),
	    TH_TEST(test_fid_create_open_read_write_truncate),
	    TH_TEST(test_fid_setattr_mode_owner_size_times),
	    TH_TEST(test_fid_rename_unlink_rmdir_across_directories),
	    TH_TEST(test_fid_opendir_lists_every_entry_once),
	    TH_TEST(test_fid_symlink_link_mknod),
	    TH_TEST(test_fid_xattrs),
	    TH_TEST(test_fid_cred_set_applies_to_this_thread_only),
	    TH_TEST_END,
	};
	return th_cunit_run("fidops", suite_init, suite_clean, tests);
}
