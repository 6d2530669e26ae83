/*
 * tests/integration/test_ns_posix.c - the POSIX namespace through libweir
 * on a real cluster (wire, MDS handlers, client calls): hard links,
 * symlinks, mknod, xattrs, renameat2 flags, the *at calls, telldir and
 * seekdir, permissions between two mounts with different credentials,
 * names with any byte, --root-squash, the setuid/setgid drop of another
 * user's write, open directories removed, and execve's open. The MDT-side rules are covered
 * in detail by tests/unit/mds/test_{perm,links,xattr,rename2}.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

static struct th_cluster *cl;
static weir_fs_t *fs;   /* root */
static weir_fs_t *user; /* uid 1000, gid 1000 */

static int suite_init(void)
{
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1 };
	struct weir_mount_opts mo = { .wmo_size = sizeof(mo), .wmo_uid = 1000, .wmo_gid = 1000 };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	if (th_rc("weir_mount_with", weir_mount_with(th_cluster_mds_addr(cl), &mo, &user)))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	int rc = weir_umount(user);
	int rc2 = weir_umount(fs);
	return th_cluster_stop(cl) || rc || rc2 ? -1 : 0;
}

static void test_posix_hard_links_nlink_everywhere(void)
{
	struct stat a, b;
	weir_file_t *fh;
	char buf[16];
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/hl", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/hl/a", "hello", 5), 0);
	CU_ASSERT_EQUAL(weir_link(fs, "/hl/a", "/hl/b"), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hl/a", &a), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hl/b", &b), 0);
	CU_ASSERT_EQUAL(a.st_ino, b.st_ino);
	CU_ASSERT_EQUAL(a.st_nlink, 2);
	CU_ASSERT_EQUAL(b.st_nlink, 2);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hl/b", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &b), 0);
	CU_ASSERT_EQUAL(b.st_nlink, 2);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/hl/a"), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &b), 0);
	CU_ASSERT_EQUAL(b.st_nlink, 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_get(fs, "/hl/b", buf, sizeof(buf)), 5);
	CU_ASSERT_EQUAL(weir_link(fs, "/hl", "/hl2"), -EPERM);
	CU_ASSERT_EQUAL(weir_link(fs, "/hl/b", "/hl/b"), -EEXIST);
	CU_ASSERT_EQUAL(weir_link(fs, "/hl/missing", "/hl/c"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rename(fs, "/hl/b", "/hl/b"), 0);
}

static void test_posix_symlinks_readlink_lstat_nofollow(void)
{
	struct stat st;
	char buf[64];
	weir_file_t *fh;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/sl", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/sl/file", "data", 4), 0);
	CU_ASSERT_EQUAL(weir_symlink(fs, "file", "/sl/link"), 0);
	CU_ASSERT_EQUAL(weir_symlink(fs, "", "/sl/empty"), -ENOENT);
	CU_ASSERT_EQUAL(weir_readlink(fs, "/sl/link", buf, sizeof(buf)), 4);
	CU_ASSERT(!memcmp(buf, "file", 4));
	CU_ASSERT_EQUAL(weir_readlink(fs, "/sl/link", buf, 2), 2); /* truncated, no NUL */
	CU_ASSERT_EQUAL(weir_readlink(fs, "/sl/file", buf, sizeof(buf)), -EINVAL);
	CU_ASSERT_EQUAL(weir_readlink(fs, "/sl/link", buf, 0), -EINVAL);
	CU_ASSERT_EQUAL(weir_lstat(fs, "/sl/link", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFLNK | 0777);
	CU_ASSERT_EQUAL(st.st_size, 4);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sl/link", &st), 0);
	CU_ASSERT(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(st.st_size, 4);
	CU_ASSERT_EQUAL(th_get(fs, "/sl/link", buf, sizeof(buf)), 4);
	CU_ASSERT_EQUAL(weir_open(fs, "/sl/link", O_RDONLY | O_NOFOLLOW, 0, &fh), -ELOOP);
	CU_ASSERT_EQUAL(weir_symlink(fs, "/sl", "/sl/abs"), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sl/abs/abs/abs/file", &st), 0);
	CU_ASSERT_EQUAL(weir_symlink(fs, "loop", "/sl/loop"), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sl/loop", &st), -ELOOP);
	/* d_type */
	weir_dir_t *dh;
	struct weir_dirent de;
	int lnk = 0;
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/sl", &dh), 0);
	while (weir_readdir(dh, &de) == 1)
		if (!strcmp(de.d_name, "link"))
			lnk = de.d_type == DT_LNK;
	CU_ASSERT(lnk);
	weir_closedir(dh);
	/* opendir through a symlink */
	CU_ASSERT_EQUAL(weir_opendir(fs, "/sl/abs", &dh), 0);
	weir_closedir(dh);
}

static void test_posix_mknod_and_rdev(void)
{
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/nod", 0777), 0);
	CU_ASSERT_EQUAL(weir_mknod(user, "/nod/fifo", S_IFIFO | 0644, 0), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/nod/fifo", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFIFO | 0644);
	CU_ASSERT_EQUAL(st.st_uid, 1000);
	CU_ASSERT_EQUAL(weir_mknod(user, "/nod/chr", S_IFCHR | 0600, makedev(1, 3)), -EPERM);
	CU_ASSERT_EQUAL(weir_mknod(fs, "/nod/chr", S_IFCHR | 0600, makedev(1, 3)), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/nod/chr", &st), 0);
	CU_ASSERT(S_ISCHR(st.st_mode));
	CU_ASSERT_EQUAL(st.st_rdev, makedev(1, 3));
	CU_ASSERT_EQUAL(weir_mknod(fs, "/nod/sock", S_IFSOCK | 0600, 0), 0);
	CU_ASSERT_EQUAL(weir_mknod(fs, "/nod/d", S_IFDIR | 0700, 0), -EPERM);
}

static void test_posix_xattrs_through_libweir(void)
{
	char v[64], list[128];
	weir_file_t *fh;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/xa", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/xa/f", "x", 1), 0);
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "user.k", "value", 5, XATTR_CREATE), 0);
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "user.k", "v2", 2, XATTR_CREATE), -EEXIST);
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "user.n", "v2", 2, XATTR_REPLACE), -ENODATA);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "user.k", NULL, 0), 5);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "user.k", v, 4), -ERANGE);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "user.k", v, sizeof(v)), 5);
	CU_ASSERT(!memcmp(v, "value", 5));
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "user.none", v, sizeof(v)), -ENODATA);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "bad.ns", v, sizeof(v)), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "", "v", 1, 0), -ERANGE);
	static char big[65537];
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "user.big", big, 65536, 0), 0);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/f", "user.big", NULL, 0), 65536);
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "user.big", big, 65537, 0), -E2BIG);
	CU_ASSERT_EQUAL(weir_listxattr(fs, "/xa/f", NULL, 0), (ssize_t)sizeof("user.big\0user.k"));
	CU_ASSERT_EQUAL(weir_listxattr(fs, "/xa/f", list, 3), -ERANGE);
	CU_ASSERT_EQUAL(weir_listxattr(fs, "/xa/f", list, sizeof(list)),
			(ssize_t)sizeof("user.big\0user.k"));
	CU_ASSERT(!memcmp(list, "user.big\0user.k", sizeof("user.big\0user.k")));
	CU_ASSERT_EQUAL(weir_removexattr(fs, "/xa/f", "user.big"), 0);
	CU_ASSERT_EQUAL(weir_removexattr(fs, "/xa/f", "user.big"), -ENODATA);
	/* l* on a symlink, f* on a handle */
	CU_ASSERT_EQUAL(weir_symlink(fs, "f", "/xa/l"), 0);
	CU_ASSERT_EQUAL(weir_getxattr(fs, "/xa/l", "user.k", NULL, 0), 5);
	CU_ASSERT_EQUAL(weir_lgetxattr(fs, "/xa/l", "user.k", NULL, 0), -ENODATA);
	CU_ASSERT_EQUAL(weir_lsetxattr(fs, "/xa/l", "user.k", "1", 1, 0), -EPERM);
	CU_ASSERT_EQUAL(weir_lsetxattr(fs, "/xa/l", "trusted.k", "1", 1, 0), 0);
	CU_ASSERT_EQUAL(weir_llistxattr(fs, "/xa/l", list, sizeof(list)),
			(ssize_t)sizeof("trusted.k"));
	CU_ASSERT_EQUAL(weir_lremovexattr(fs, "/xa/l", "trusted.k"), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/xa/f", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_fsetxattr(fh, "user.f", "ff", 2, 0), 0);
	CU_ASSERT_EQUAL(weir_fgetxattr(fh, "user.f", v, sizeof(v)), 2);
	CU_ASSERT_EQUAL(weir_flistxattr(fh, list, sizeof(list)), (ssize_t)sizeof("user.f\0user.k"));
	CU_ASSERT_EQUAL(weir_fremovexattr(fh, "user.f"), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* trusted.* is invisible to users */
	CU_ASSERT_EQUAL(weir_setxattr(fs, "/xa/f", "trusted.t", "1", 1, 0), 0);
	CU_ASSERT_EQUAL(weir_getxattr(user, "/xa/f", "trusted.t", v, sizeof(v)), -ENODATA);
	CU_ASSERT_EQUAL(weir_listxattr(user, "/xa/f", NULL, 0), (ssize_t)sizeof("user.k"));
	CU_ASSERT_EQUAL(weir_setxattr(user, "/xa/f", "user.k", "1", 1, 0), -EACCES);
}

static void test_posix_rename2_flags(void)
{
	struct stat a, b, a2, b2;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rn/a", "a", 1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn/b", 0755), 0);
	CU_ASSERT_EQUAL(weir_rename2(fs, "/rn/a", "/rn/b", RENAME_NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/a", &a), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/b", &b), 0);
	CU_ASSERT_EQUAL(weir_rename2(fs, "/rn/a", "/rn/b", RENAME_EXCHANGE), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/a", &a2), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/b", &b2), 0);
	CU_ASSERT_EQUAL(a2.st_ino, b.st_ino);
	CU_ASSERT_EQUAL(b2.st_ino, a.st_ino);
	CU_ASSERT(S_ISDIR(a2.st_mode));
	CU_ASSERT_EQUAL(weir_rename2(fs, "/rn/a", "/rn/c", RENAME_EXCHANGE), -ENOENT);
	CU_ASSERT_EQUAL(weir_rename2(fs, "/rn/a", "/rn/c", RENAME_NOREPLACE), 0);
	CU_ASSERT_EQUAL(weir_rename2(fs, "/rn/b", "/rn/c", RENAME_WHITEOUT), -EINVAL);
}

static void test_posix_at_calls_relative_to_a_directory_handle(void)
{
	weir_file_t *d1, *d2, *fh, *f;
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/at", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/at/one", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/at/two", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/at/one", O_RDONLY | O_DIRECTORY, 0, &d1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/at/two", O_RDONLY | O_DIRECTORY, 0, &d2), 0);
	CU_ASSERT_EQUAL(weir_mkdirat(NULL, d1, "sub", 0750), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/at/one/sub", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFDIR | 0750);
	CU_ASSERT_EQUAL_FATAL(weir_openat(fs, d1, "sub/f", O_CREAT | O_WRONLY, 0600, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "abc", 3, 0), 3);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fstatat(fs, d1, "sub/f", &st, 0), 0);
	CU_ASSERT_EQUAL(st.st_size, 3);
	CU_ASSERT_EQUAL(weir_fstatat(fs, d2, "/at/one/sub/f", &st, 0), 0); /* absolute */
	CU_ASSERT_EQUAL(weir_fstatat(fs, d1, "", &st, 0), -ENOENT);
	CU_ASSERT_EQUAL(weir_fstatat(fs, d1, "", &st, AT_EMPTY_PATH), 0);
	CU_ASSERT(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(weir_fstatat(fs, d1, "x", &st, 0x4), -EINVAL);
	CU_ASSERT_EQUAL(weir_renameat(fs, d1, "sub/f", d2, "moved", 0), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/at/two/moved", &st), 0);
	CU_ASSERT_EQUAL(weir_renameat(fs, d2, "moved", NULL, "at/top", 0), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/at/top", &st), 0);
	CU_ASSERT_EQUAL(weir_linkat(fs, NULL, "/at/top", d2, "hard", 0), 0);
	CU_ASSERT_EQUAL(weir_fstatat(fs, d2, "hard", &st, AT_SYMLINK_NOFOLLOW), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 2);
	CU_ASSERT_EQUAL(weir_unlinkat(fs, d2, "hard", 0), 0);
	CU_ASSERT_EQUAL(weir_unlinkat(fs, d1, "sub", 0), -EISDIR);
	CU_ASSERT_EQUAL(weir_unlinkat(fs, d1, "sub", AT_REMOVEDIR), 0);
	CU_ASSERT_EQUAL(weir_unlinkat(fs, d1, "sub", 0x1000), -EINVAL);
	/* a file handle as a directory */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/at/top", O_RDONLY, 0, &f), 0);
	CU_ASSERT_EQUAL(weir_openat(fs, f, "x", O_RDONLY, 0, &fh), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_mkdirat(fs, f, "x", 0755), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_close(f), 0);
	/* a directory removed under its handle */
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/at/one"), 0);
	CU_ASSERT_EQUAL(weir_openat(fs, d1, "new", O_CREAT | O_WRONLY, 0644, &fh), -ENOENT);
	CU_ASSERT_EQUAL(weir_close(d1), 0);
	CU_ASSERT_EQUAL(weir_close(d2), 0);
}

static void test_posix_telldir_seekdir(void)
{
	enum { N = 2500 };
	char p[64];
	weir_dir_t *dh;
	struct weir_dirent de, again;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/td", 0755), 0);
	for (int i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "/td/e%04d", i);
		CU_ASSERT_EQUAL_FATAL(weir_mknod(fs, p, S_IFREG | 0644, 0), 0);
	}
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/td", &dh), 0);
	CU_ASSERT_EQUAL(weir_telldir(dh), 0);
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 1);
	CU_ASSERT_STRING_EQUAL(de.d_name, ".");
	CU_ASSERT_EQUAL(weir_telldir(dh), 1);
	CU_ASSERT_EQUAL(de.d_off, 1);
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 1);
	CU_ASSERT_STRING_EQUAL(de.d_name, "..");
	CU_ASSERT_EQUAL(weir_telldir(dh), 2);
	int64_t pos2 = 0, posk = 0;
	char after[256] = "";
	int n = 0;
	while (weir_readdir(dh, &de) == 1) {
		n++;
		if (n == 1500) { /* past the first page */
			posk = weir_telldir(dh);
			CU_ASSERT_EQUAL(posk, (int64_t)de.d_off);
		}
		if (n == 1501)
			snprintf(after, sizeof(after), "%s", de.d_name);
	}
	CU_ASSERT_EQUAL(n, N);
	CU_ASSERT(posk > 2);
	weir_seekdir(dh, posk);
	CU_ASSERT_EQUAL(weir_readdir(dh, &again), 1);
	CU_ASSERT_STRING_EQUAL(again.d_name, after);
	weir_seekdir(dh, 2);
	CU_ASSERT_EQUAL(weir_readdir(dh, &again), 1);
	CU_ASSERT(strcmp(again.d_name, ".") && strcmp(again.d_name, ".."));
	pos2 = 1;
	weir_seekdir(dh, pos2);
	CU_ASSERT_EQUAL(weir_readdir(dh, &again), 1);
	CU_ASSERT_STRING_EQUAL(again.d_name, "..");
	weir_rewinddir(dh);
	CU_ASSERT_EQUAL(weir_readdir(dh, &again), 1);
	CU_ASSERT_STRING_EQUAL(again.d_name, ".");
	weir_closedir(dh);
}

static void test_posix_permissions_between_two_mounts(void)
{
	struct stat st;
	weir_file_t *fh;
	weir_dir_t *dh;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/pm", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/pm/rootfile", "r", 1), 0);
	CU_ASSERT_EQUAL(weir_open(user, "/pm/new", O_CREAT | O_WRONLY, 0644, &fh), -EACCES);
	CU_ASSERT_EQUAL(weir_mkdir(user, "/pm/d", 0755), -EACCES);
	CU_ASSERT_EQUAL(weir_unlink(user, "/pm/rootfile"), -EACCES);
	CU_ASSERT_EQUAL(weir_open(user, "/pm/rootfile", O_WRONLY, 0, &fh), -EACCES);
	CU_ASSERT_EQUAL(weir_access(user, "/pm/rootfile", R_OK), 0);
	CU_ASSERT_EQUAL(weir_access(user, "/pm/rootfile", W_OK), -EACCES);
	CU_ASSERT_EQUAL(weir_access(user, "/pm/rootfile", 8), -EINVAL);
	CU_ASSERT_EQUAL(weir_chmod(user, "/pm/rootfile", 0777), -EPERM);
	CU_ASSERT_EQUAL(weir_chown(fs, "/pm", 1000, 1000), 0);
	CU_ASSERT_EQUAL(weir_open(user, "/pm/new", O_CREAT | O_WRONLY, 0640, &fh), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 1000);
	CU_ASSERT_EQUAL(st.st_gid, 1000);
	CU_ASSERT_EQUAL(weir_fchmod(fh, 0600), 0);
	CU_ASSERT_EQUAL(weir_fchown(fh, (uid_t)-1, 1000), 0);
	CU_ASSERT_EQUAL(weir_fchown(fh, 0, (gid_t)-1), -EPERM);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/pm/new", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 0600);
	CU_ASSERT_EQUAL(weir_lchown(fs, "/pm/new", 1001, (gid_t)-1), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/pm/new", &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 1001);
	/* utimens: explicit needs the owner; "now" needs write permission */
	struct timespec ts[2] = { { 100, 5 }, { 200, 7 } };
	CU_ASSERT_EQUAL(weir_utimens(user, "/pm/new", ts), -EPERM);
	CU_ASSERT_EQUAL(weir_utimens(user, "/pm/new", NULL), -EACCES);
	CU_ASSERT_EQUAL(weir_utimens(fs, "/pm/new", ts), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/pm/new", &st), 0);
	CU_ASSERT_EQUAL(st.st_atim.tv_sec, 100);
	CU_ASSERT_EQUAL(st.st_atim.tv_nsec, 5);
	CU_ASSERT_EQUAL(st.st_mtim.tv_sec, 200);
	CU_ASSERT_EQUAL(st.st_mtim.tv_nsec, 7);
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	CU_ASSERT_EQUAL(weir_utimens(user, "/pm/missing", omit), 0);
	struct timespec bad[2] = { { 0, 1000000000L }, { 0, UTIME_OMIT } };
	CU_ASSERT_EQUAL(weir_utimens(fs, "/pm/new", bad), -EINVAL);
	struct timespec now_mtime[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	CU_ASSERT_EQUAL(weir_utimens(fs, "/pm/new", now_mtime), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/pm/new", &st), 0);
	CU_ASSERT_EQUAL(st.st_atim.tv_sec, 100);
	CU_ASSERT(st.st_mtim.tv_sec > 200);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/pm/new", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_futimens(fh, ts), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* listing needs read permission */
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/pm-x", 0711), 0);
	CU_ASSERT_EQUAL(weir_opendir(user, "/pm-x", &dh), -EACCES);
	CU_ASSERT_EQUAL(weir_opendir(fs, "/pm-x", &dh), 0);
	weir_closedir(dh);
	/* read without search: listable (opendir(3) needs only r) */
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/pm-r", 0744), 0);
	CU_ASSERT_EQUAL(weir_opendir(user, "/pm-r", &dh), 0);
	weir_closedir(dh);
}

/* pjdfstest chmod/12.t: another user's write drops setuid/setgid, and succeeds */
static void test_posix_write_by_another_user_drops_setuid_setgid(void)
{
	static const struct {
		mode_t m_before, m_after;
	} cases[] = {
		{ 04777, 0777 }, { 02777, 0777 }, { 06777, 0777 },
		{ 02766, 0766 }, /* S_ISGID without g+x, the writer outside the group (Linux 6.2+) */
	};
	char path[64];
	struct stat st;
	weir_file_t *fh;

	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/sw", 0777), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "/sw/f%zu", i);
		CU_ASSERT_EQUAL_FATAL(th_put(fs, path, "", 0), 0);
		CU_ASSERT_EQUAL(weir_chmod(fs, path, cases[i].m_before), 0);
		CU_ASSERT_EQUAL_FATAL(weir_open(user, path, O_WRONLY, 0, &fh), 0);
		CU_ASSERT_EQUAL(weir_pwrite(fh, "x", 1, 0), 1);
		CU_ASSERT_EQUAL(weir_close(fh), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, path, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode, S_IFREG | cases[i].m_after);
		CU_ASSERT_EQUAL(st.st_size, 1);
	}
	/* root's writes keep them (CAP_FSETID) */
	CU_ASSERT_EQUAL(weir_chmod(fs, "/sw/f0", 06777), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/sw/f0", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "y", 1, 1), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sw/f0", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 06777);
	/* the drop alone (what weir-fuse sends for the kernel): writers only */
	weir_fid_t fid;
	CU_ASSERT_EQUAL(weir_chmod(fs, "/sw/f0", 04755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_path2fid(fs, "/sw/f0", &fid), 0);
	CU_ASSERT_EQUAL(weir_fid_setattr(user, &fid, NULL, WEIR_SETATTR_KILL_PRIV, NULL), -EPERM);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/sw/f0", 04757), 0);
	CU_ASSERT_EQUAL(weir_fid_setattr(user, &fid, NULL, WEIR_SETATTR_KILL_PRIV, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode, S_IFREG | 0757);
}

/* xfstests generic/035: an open directory that rename replaced, or rmdir removed */
static void test_posix_open_dir_removed_fstat_nlink_zero(void)
{
	weir_file_t *b, *c;
	struct stat st;

	for (const char *d = "abc"; *d; d++) {
		char path[8];
		snprintf(path, sizeof(path), "/od%c", *d);
		CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, path, 0755), 0);
	}
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/odb", O_RDONLY | O_DIRECTORY, 0, &b), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/odc", O_RDONLY | O_DIRECTORY, 0, &c), 0);
	CU_ASSERT_EQUAL(weir_rename(fs, "/oda", "/odb"), 0);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/odc"), 0);
	CU_ASSERT_EQUAL(weir_fstat(b, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 0);
	CU_ASSERT(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(weir_fstat(c, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 0);
	CU_ASSERT_EQUAL(weir_mkdirat(fs, c, "x", 0755), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/odb", &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 2); /* the one renamed there */
	CU_ASSERT_EQUAL(weir_close(b), 0);
	CU_ASSERT_EQUAL(weir_close(c), 0);
}

/* xfstests generic/126: execve's open (WEIR_O_EXEC) needs execute, not read */
static void test_posix_exec_open_needs_execute_not_read(void)
{
	weir_file_t *fh;
	char buf[8];

	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/ex", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/ex/prog", "\177ELF", 4), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/ex/prog", 0711), 0);
	CU_ASSERT_EQUAL(weir_open(user, "/ex/prog", O_RDONLY, 0, &fh), -EACCES);
	CU_ASSERT_EQUAL_FATAL(weir_open(user, "/ex/prog", O_RDONLY | WEIR_O_EXEC, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 0), 4);
	CU_ASSERT_EQUAL(memcmp(buf, "\177ELF", 4), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/ex/prog", 0744), 0);
	CU_ASSERT_EQUAL(weir_open(user, "/ex/prog", O_RDONLY | WEIR_O_EXEC, 0, &fh), -EACCES);
	CU_ASSERT_EQUAL(weir_open(fs, "/ex", O_RDONLY | WEIR_O_EXEC, 0, &fh), -EACCES);
	CU_ASSERT_EQUAL(weir_open(fs, "/ex/prog", O_RDWR | WEIR_O_EXEC, 0, &fh), -EINVAL);
}

static void test_posix_names_any_byte_and_lengths(void)
{
	char name[300], path[400];
	weir_dir_t *dh;
	struct weir_dirent de;
	struct stat st;
	const char odd[] = "/names/\x01\xff\xfe bytes\t\n*?";
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/names", 0755), 0);
	CU_ASSERT_EQUAL(th_put(fs, odd, "o", 1), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, odd, &st), 0);
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/names", &dh), 0);
	int found = 0;
	while (weir_readdir(dh, &de) == 1)
		found += !strcmp(de.d_name, odd + 7);
	weir_closedir(dh);
	CU_ASSERT_EQUAL(found, 1);
	memset(name, 'a', sizeof(name));
	name[255] = 0;
	snprintf(path, sizeof(path), "/names/%s", name);
	CU_ASSERT_EQUAL(weir_mkdir(fs, path, 0755), 0);
	name[255] = 'a';
	name[256] = 0;
	snprintf(path, sizeof(path), "/names/%s", name);
	CU_ASSERT_EQUAL(weir_mkdir(fs, path, 0755), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "/names/missing/%s", name);
	CU_ASSERT_EQUAL(weir_stat(fs, path, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/..", &st), 0);
	CU_ASSERT(S_ISDIR(st.st_mode));
}

static void test_posix_root_squash(void)
{
	static const char *const args[] = { "--root-squash", "1", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1, .tco_mds_args = args };
	struct th_cluster *sq = NULL;
	weir_fs_t *rfs = NULL;
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(th_cluster_start(&o, &sq), 0);
	CU_ASSERT_EQUAL(weir_mount(th_cluster_mds_addr(sq), &rfs), 0);
	if (rfs) {
		/* uid 0 is nobody now: "/" (root's, 0755) is not writable */
		CU_ASSERT_EQUAL(weir_mkdir(rfs, "/d", 0755), -EACCES);
		CU_ASSERT_EQUAL(weir_stat(rfs, "/", &st), 0);
		CU_ASSERT_EQUAL(weir_chmod(rfs, "/", 0777), -EPERM);
		weir_umount(rfs);
	}
	CU_ASSERT_EQUAL(th_cluster_stop(sq), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_posix_hard_links_nlink_everywhere),
		TH_TEST(test_posix_symlinks_readlink_lstat_nofollow),
		TH_TEST(test_posix_mknod_and_rdev),
		TH_TEST(test_posix_xattrs_through_libweir),
		TH_TEST(test_posix_rename2_flags),
		TH_TEST(test_posix_at_calls_relative_to_a_directory_handle),
		TH_TEST(test_posix_telldir_seekdir),
		TH_TEST(test_posix_permissions_between_two_mounts),
		TH_TEST(test_posix_write_by_another_user_drops_setuid_setgid),
		TH_TEST(test_posix_open_dir_removed_fstat_nlink_zero),
		TH_TEST(test_posix_exec_open_needs_execute_not_read),
		TH_TEST(test_posix_names_any_byte_and_lengths),
		TH_TEST(test_posix_root_squash),
		TH_TEST_END,
	};
	return th_cunit_run("ns_posix", suite_init, suite_clean, tests);
}
