/*
 * tests/unit/mds/test_xattr.c - extended attributes of the MDT (mds/xattr.c)
 * on a real RocksDB: set/get/list/remove, XATTR_CREATE/REPLACE, name and
 * size limits, the user./trusted./security. rules, symlinks (l* calls),
 * sticky directories, removal with the inode (also an open-unlinked one)
 * in the same batch, and persistence. Errnos as Linux (ext4) gives them.
 */
#define _GNU_SOURCE
#include "ns_fixture.h"

#include "mds/mds_int.h"

static char vbuf[MDS_XATTR_SIZE_MAX + 1];

static int xset(const struct mds_cred *cr, const char *path, const char *name, const char *v,
		int flags)
{
	return mds_ns_setxattr(ns, cr, NULL, path, 0, name, v, v ? strlen(v) : 0, flags);
}

static int xget(const struct mds_cred *cr, const char *path, uint32_t at_flags,
		const char *name, size_t *len)
{
	size_t l = 0;
	int rc = mds_ns_getxattr(ns, cr, NULL, path, at_flags, name, vbuf, MDS_XATTR_SIZE_MAX, &l);
	if (len)
		*len = l;
	if (!rc)
		vbuf[l] = 0;
	return rc;
}

static int xlist(const struct mds_cred *cr, const char *path, char *buf, size_t cap,
		 size_t *len)
{
	return mds_ns_listxattr(ns, cr, NULL, path, 0, buf, cap, len);
}

/* Keys of \a fid in the xattrs column family (xattrs and the symlink target). */
static int nr_keys(const struct weir_fid *fid)
{
	uint8_t pfx[WEIR_FID_BYTES];
	int n = 0;
	weir_fid_pack_be(fid, pfx);
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_XATTRS);
	for (kv_iter_seek(it, pfx, sizeof(pfx)); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < sizeof(pfx) || memcmp(k, pfx, sizeof(pfx)))
			break;
		n++;
	}
	kv_iter_free(it);
	return n;
}

static void test_xattr_set_get_list_remove(void)
{
	struct mds_inode a, b;
	size_t len;
	char list[512];

	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xa", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xa/f", 0644, &a), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.a", NULL), -ENODATA);
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "user.a", "abc", MDS_XATTR_REPLACE), -ENODATA);
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "user.a", "abc", MDS_XATTR_CREATE), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "user.a", "xyz", MDS_XATTR_CREATE), -EEXIST);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.a", &len), 0);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_STRING_EQUAL(vbuf, "abc");
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "user.a", "longer value", MDS_XATTR_REPLACE), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.a", &len), 0);
	CU_ASSERT_STRING_EQUAL(vbuf, "longer value");
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "user.empty", "", 0), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.empty", &len), 0);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "trusted.t", "1", 0), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xa/f", "security.s", "2", 0), 0);
	CU_ASSERT_EQUAL(xlist(NULL, "/xa/f", list, sizeof(list), &len), 0);
	const char want[] = "security.s\0trusted.t\0user.a\0user.empty";
	CU_ASSERT_EQUAL(len, sizeof(want));
	CU_ASSERT(!memcmp(list, want, sizeof(want)));
	CU_ASSERT_EQUAL(xlist(NULL, "/xa/f", list, 10, &len), -E2BIG);
	/* ctime moves */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/xa/f", &b), 0);
	CU_ASSERT(b.in_ctime_ns > a.in_ctime_ns);
	/* remove */
	CU_ASSERT_EQUAL(mds_ns_removexattr(ns, NULL, NULL, "/xa/f", 0, "user.a"), 0);
	CU_ASSERT_EQUAL(mds_ns_removexattr(ns, NULL, NULL, "/xa/f", 0, "user.a"), -ENODATA);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.a", NULL), -ENODATA);
	/* on a directory, and by FID (fgetxattr) */
	CU_ASSERT_EQUAL(xset(NULL, "/xa", "user.dir", "d", 0), 0);
	struct mds_inode d;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/xa", &d), 0);
	CU_ASSERT_EQUAL(mds_ns_getxattr(ns, NULL, &d.in_fid, NULL, 0, "user.dir", vbuf,
					MDS_XATTR_SIZE_MAX, &len),
			0);
	CU_ASSERT_EQUAL(len, 1);
	/* persistence */
	fx_reopen();
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "user.empty", &len), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xa/f", 0, "trusted.t", &len), 0);
	CU_ASSERT_STRING_EQUAL(vbuf, "1");
}

static void test_xattr_names_sizes_flags(void)
{
	char name[300];
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xn", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xn/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "", "v", 0), -ERANGE);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "user.", "v", 0), -EINVAL);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "foo.bar", "v", 0), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "system.posix_acl_access", "v", 0), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(xget(NULL, "/xn/f", 0, "nonamespace", NULL), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "user.x", "v", 3), -ENODATA); /* both flags */
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", "user.x", "v", 4), -EINVAL);
	/* flags and names are checked before the path */
	CU_ASSERT_EQUAL(xset(NULL, "/xn/missing", "", "v", 0), -ERANGE);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/missing", "user.x", "v", 4), -EINVAL);
	CU_ASSERT_EQUAL(xset(NULL, "/xn/missing", "user.x", "v", 0), -ENOENT);
	memset(name, 'b', sizeof(name));
	memcpy(name, "user.", 5);
	name[255] = 0;
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", name, "v", 0), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xn/f", 0, name, NULL), 0);
	name[255] = 'b';
	name[256] = 0;
	CU_ASSERT_EQUAL(xset(NULL, "/xn/f", name, "v", 0), -ERANGE);
	CU_ASSERT_EQUAL(xget(NULL, "/xn/f", 0, name, NULL), -ERANGE);
	/* values up to 64 KiB */
	static char big[MDS_XATTR_SIZE_MAX + 1];
	memset(big, 'v', sizeof(big));
	size_t len;
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, NULL, "/xn/f", 0, "user.big", big,
					MDS_XATTR_SIZE_MAX, 0),
			0);
	CU_ASSERT_EQUAL(xget(NULL, "/xn/f", 0, "user.big", &len), 0);
	CU_ASSERT_EQUAL(len, MDS_XATTR_SIZE_MAX);
	CU_ASSERT(!memcmp(vbuf, big, len));
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, NULL, "/xn/f", 0, "user.big2", big,
					MDS_XATTR_SIZE_MAX + 1, 0),
			-E2BIG);
	/* a small buffer */
	CU_ASSERT_EQUAL(mds_ns_getxattr(ns, NULL, NULL, "/xn/f", 0, "user.big", vbuf, 100, &len),
			-ERANGE);
}

static void test_xattr_namespace_permissions(void)
{
	char list[512];
	size_t len;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xp", 0777), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/xp/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(xset(&U1, "/xp/f", "user.mine", "1", 0), 0);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/f", 0, "user.mine", NULL), 0); /* r for others */
	CU_ASSERT_EQUAL(xset(&U2, "/xp/f", "user.theirs", "1", 0), -EACCES);
	CU_ASSERT_EQUAL(mds_ns_removexattr(ns, &U2, NULL, "/xp/f", 0, "user.mine"), -EACCES);
	CU_ASSERT_EQUAL(fx_chmod(&U1, "/xp/f", 0600), 0);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/f", 0, "user.mine", NULL), -EACCES);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/f", 0, "user.missing", NULL), -EACCES);
	/* trusted: root only; others do not even see the names */
	CU_ASSERT_EQUAL(xset(&U1, "/xp/f", "trusted.t", "1", 0), -EPERM);
	CU_ASSERT_EQUAL(xset(&ROOT, "/xp/f", "trusted.t", "1", 0), 0);
	CU_ASSERT_EQUAL(xget(&U1, "/xp/f", 0, "trusted.t", NULL), -ENODATA);
	CU_ASSERT_EQUAL(xget(&ROOT, "/xp/f", 0, "trusted.t", NULL), 0);
	CU_ASSERT_EQUAL(mds_ns_removexattr(ns, &U1, NULL, "/xp/f", 0, "trusted.t"), -EPERM);
	/* security: anyone reads, root writes */
	CU_ASSERT_EQUAL(xset(&U1, "/xp/f", "security.s", "1", 0), -EPERM);
	CU_ASSERT_EQUAL(xset(&ROOT, "/xp/f", "security.s", "1", 0), 0);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/f", 0, "security.s", NULL), 0);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/f", 0, "security.none", NULL), -ENODATA);
	CU_ASSERT_EQUAL(xlist(&U2, "/xp/f", list, sizeof(list), &len), 0);
	CU_ASSERT_EQUAL(len, sizeof("security.s\0user.mine"));
	CU_ASSERT(!memcmp(list, "security.s\0user.mine", len));
	CU_ASSERT_EQUAL(xlist(&ROOT, "/xp/f", list, sizeof(list), &len), 0);
	CU_ASSERT_EQUAL(len, sizeof("security.s\0trusted.t\0user.mine"));
	/* search permission on the path applies as always */
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/xp/priv", 0700), 0);
	CU_ASSERT_EQUAL(fx_creat(&U1, "/xp/priv/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(xlist(&U2, "/xp/priv/f", list, sizeof(list), &len), -EACCES);
	/* sticky directory: user.* on it only by its owner or root */
	CU_ASSERT_EQUAL(fx_mkdir(&U1, "/xp/sticky", 01777), 0);
	CU_ASSERT_EQUAL(xset(&U2, "/xp/sticky", "user.x", "1", 0), -EPERM);
	CU_ASSERT_EQUAL(xset(&U1, "/xp/sticky", "user.x", "1", 0), 0);
	CU_ASSERT_EQUAL(xget(&U2, "/xp/sticky", 0, "user.x", NULL), 0);
}

static void test_xattr_on_symlinks_and_special_files(void)
{
	struct mds_inode in;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xs", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xs/f", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_symlink(NULL, "f", "/xs/l"), 0);
	/* through the link: the target's */
	CU_ASSERT_EQUAL(xset(NULL, "/xs/l", "user.via", "1", 0), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xs/f", 0, "user.via", NULL), 0);
	/* on the link itself: no user.*, as Linux */
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, NULL, "/xs/l", MDS_AT_NOFOLLOW, "user.x", "1", 1,
					0),
			-EPERM);
	CU_ASSERT_EQUAL(xget(NULL, "/xs/l", MDS_AT_NOFOLLOW, "user.via", NULL), -ENODATA);
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, NULL, "/xs/l", MDS_AT_NOFOLLOW, "trusted.x", "1",
					1, 0),
			0);
	CU_ASSERT_EQUAL(xget(NULL, "/xs/l", MDS_AT_NOFOLLOW, "trusted.x", NULL), 0);
	CU_ASSERT_EQUAL(xget(NULL, "/xs/l", 0, "trusted.x", NULL), -ENODATA);
	/* the link's own record (its target) is not an attribute */
	char list[128];
	size_t len;
	CU_ASSERT_EQUAL(mds_ns_listxattr(ns, NULL, NULL, "/xs/l", MDS_AT_NOFOLLOW, list,
					 sizeof(list), &len),
			0);
	CU_ASSERT_EQUAL(len, sizeof("trusted.x"));
	CU_ASSERT_EQUAL(mds_ns_mknod(ns, NULL, NULL, "/xs/fifo", S_IFIFO | 0666, 0, fx_choose,
				     NULL, &in),
			0);
	CU_ASSERT_EQUAL(xset(NULL, "/xs/fifo", "user.x", "1", 0), -EPERM);
	/* a symlink and its xattrs go with it */
	CU_ASSERT_EQUAL(fx_lstat(NULL, "/xs/l", &in), 0);
	CU_ASSERT_EQUAL(nr_keys(&in.in_fid), 2);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/xs/l"), 0);
	CU_ASSERT_EQUAL(nr_keys(&in.in_fid), 0);
}

static void test_xattr_removed_with_the_inode(void)
{
	struct mds_inode f, d, o;
	bool created;
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xr", 0755), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xr/f", 0644, &f), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xr/f", "user.a", "1", 0), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xr/f", "user.b", "2", 0), 0);
	CU_ASSERT_EQUAL(fx_link(NULL, "/xr/f", "/xr/g"), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/xr/f"), 0);
	CU_ASSERT_EQUAL(nr_keys(&f.in_fid), 2); /* another name keeps them */
	CU_ASSERT_EQUAL(xget(NULL, "/xr/g", 0, "user.b", NULL), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/xr/g"), 0);
	CU_ASSERT_EQUAL(nr_keys(&f.in_fid), 0);
	/* a directory */
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/xr/d", 0755), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/xr/d", &d), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xr/d", "user.a", "1", 0), 0);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/xr/d"), 0);
	CU_ASSERT_EQUAL(nr_keys(&d.in_fid), 0);
	/* replaced by a rename */
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xr/r1", 0644, &f), 0);
	CU_ASSERT_EQUAL(xset(NULL, "/xr/r1", "user.a", "1", 0), 0);
	CU_ASSERT_EQUAL(fx_creat(NULL, "/xr/r2", 0644, NULL), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/xr/r2", "/xr/r1", 0), 0);
	CU_ASSERT_EQUAL(nr_keys(&f.in_fid), 0);
	/* open-unlinked: readable by FID until the last close */
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/xr/open", MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, fx_choose, NULL, &o, &created),
			0);
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, &o.in_fid, NULL, 0, "user.o", "x", 1, 0), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/xr/open"), 0);
	size_t len;
	CU_ASSERT_EQUAL(mds_ns_getxattr(ns, NULL, &o.in_fid, NULL, 0, "user.o", vbuf,
					MDS_XATTR_SIZE_MAX, &len),
			0);
	CU_ASSERT_EQUAL(mds_ns_close_file(ns, &o.in_fid, true, NULL), 0);
	CU_ASSERT_EQUAL(nr_keys(&o.in_fid), 0);
	CU_ASSERT_EQUAL(mds_ns_getxattr(ns, NULL, &o.in_fid, NULL, 0, "user.o", vbuf,
					MDS_XATTR_SIZE_MAX, &len),
			-ENOENT);
	/* an orphan of a previous run: at the next start */
	CU_ASSERT_EQUAL(mds_ns_open_file(ns, NULL, NULL, "/xr/open2", MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, fx_choose, NULL, &o, &created),
			0);
	CU_ASSERT_EQUAL(mds_ns_setxattr(ns, NULL, &o.in_fid, NULL, 0, "user.o", "x", 1, 0), 0);
	CU_ASSERT_EQUAL(fx_unlink(NULL, "/xr/open2"), 0);
	fx_reopen();
	CU_ASSERT_EQUAL(nr_keys(&o.in_fid), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_xattr_set_get_list_remove),
		TH_TEST(test_xattr_names_sizes_flags),
		TH_TEST(test_xattr_namespace_permissions),
		TH_TEST(test_xattr_on_symlinks_and_special_files),
		TH_TEST(test_xattr_removed_with_the_inode),
		TH_TEST_END,
	};
	return th_cunit_run("mds_xattr", fx_init, fx_fini, tests);
}
