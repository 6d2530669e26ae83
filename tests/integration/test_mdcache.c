/*
 * tests/integration/test_mdcache.c - metadata leases end to end (docs/
 * leases.md): two mounts of one cluster, one caching (weir_fid_getattr,
 * weir_fid_lookup with wmo_md_cache), the other changing what it cached
 * (chmod, truncate, create, unlink, rename over, rmdir and mkdir again);
 * every change is seen by the caching mount at its next call, and the
 * cache answers repeated calls without the MDS (weir_md_stats). Also: a
 * mount's own changes, a model run of 300 alternating changes and reads,
 * and a caching client that stops answering callbacks (SIGSTOP): the
 * change waits for its eviction, then completes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define LEASE_MS 2000

static struct th_cluster *cl;
static weir_fs_t *a; /* caches */
static weir_fs_t *b; /* changes */
static weir_fid_t root;

static weir_fs_t *mount_one(const char *name, bool names)
{
	struct weir_mount_opts o;
	weir_fs_t *fs = NULL;
	memset(&o, 0, sizeof(o));
	o.wmo_size = sizeof(o);
	o.wmo_client_name = name;
	o.wmo_md_cache = names;
	if (weir_mount_with(th_cluster_mds_addr(cl), &o, &fs))
		return NULL;
	return fs;
}

static int suite_init(void)
{
	static const char *const mds_args[] = { "--lease-time", "2s", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1 };
	o.tco_mds_args = mds_args;
	if (th_cluster_start(&o, &cl))
		return -1;
	a = mount_one("mdl-a", true);
	b = mount_one("mdl-b", true);
	if (!a || !b)
		return -1;
	return weir_fid_getroot(a, &root) ? -1 : 0;
}

static int suite_clean(void)
{
	weir_umount(a);
	weir_umount(b);
	return th_cluster_stop(cl) ? -1 : 0;
}

static bool fid_eq(const weir_fid_t *x, const weir_fid_t *y)
{
	return x->seq == y->seq && x->oid == y->oid;
}

static struct weir_md_stats stats(weir_fs_t *fs)
{
	struct weir_md_stats st;
	CU_ASSERT_EQUAL(weir_md_stats(fs, &st), 0);
	return st;
}

static weir_fid_t mkfile(weir_fs_t *fs, const weir_fid_t *dir, const char *name, size_t len)
{
	weir_file_t *fh = NULL;
	weir_fid_t fid = { 0, 0 };
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(fs, dir, name, O_RDWR | O_TRUNC, 0644, &fh, NULL), 0);
	if (len) {
		char *buf = calloc(1, len);
		CU_ASSERT_EQUAL(weir_pwrite(fh, buf, len, 0), (ssize_t)len);
		free(buf);
	}
	weir_file_fid(fh, &fid);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	return fid;
}

/* Wait until the MDS has answered a poll of \a fs (its leases are trusted from then on). */
static void poll_seen(weir_fs_t *fs)
{
	for (int i = 0; i < 200 && stats(fs).wms_polls == 0; i++)
		th_sleep_ms(10);
}

static void test_mdcache_attributes_cached_and_called_back(void)
{
	CU_ASSERT_FATAL(stats(a).wms_enabled == 1);
	poll_seen(a);
	weir_fid_t d, f;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "attrs", 0755, &d, NULL), 0);
	f = mkfile(b, &d, "f", 100);
	struct stat st;
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 100);
	CU_ASSERT(weir_md_leased(a, &f, NULL) & 2);
	/* repeated: from the cache */
	struct weir_md_stats s0 = stats(a);
	for (int i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	struct weir_md_stats s1 = stats(a);
	CU_ASSERT_EQUAL(s1.wms_hits - s0.wms_hits, 100);
	CU_ASSERT_EQUAL(s1.wms_misses, s0.wms_misses);

	/* chmod through b: seen by a's next call, through a callback */
	struct stat sa;
	memset(&sa, 0, sizeof(sa));
	sa.st_mode = 0600;
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_MODE, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT(stats(a).wms_callbacks > s1.wms_callbacks);

	/* truncate through b */
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0); /* cached again */
	sa.st_size = 7;
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_SIZE, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 7);

	/* a's own change: its cache drops what it changed */
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	sa.st_mode = 0640;
	CU_ASSERT_EQUAL(weir_fid_setattr(a, &f, &sa, WEIR_SETATTR_MODE, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);

	/* a file open for writing is not cached: its size is the OSTs' */
	weir_file_t *w = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(b, &f, O_WRONLY, &w), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(weir_md_leased(a, &f, NULL) & 2, 0);
	CU_ASSERT_EQUAL(weir_pwrite(w, "0123456789", 10, 100), 10);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 110);
	CU_ASSERT_EQUAL(weir_close(w), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 110);
}

/*
 * a walks to "names" as the kernel does before each name in it: the
 * directory's lookup renews its LOOKUP lease once a change called it back.
 */
static int lk(const weir_fid_t *d, const char *name, weir_fid_t *got, struct stat *st)
{
	weir_fid_t dd;
	struct stat rst;
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &root, &rst), 0); /* the kernel's GETATTR / */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "names", &dd, NULL), 0);
	CU_ASSERT(fid_eq(&dd, d));
	return weir_fid_lookup(a, d, name, got, st);
}

static void test_mdcache_names_cached_and_called_back(void)
{
	poll_seen(a);
	weir_fid_t d, got, x, y, sub, sub2;
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "names", 0755, &d, NULL), 0);
	/* a looks the directory up (its LOOKUP lease), then a name that is not there */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "names", &got, &st), 0);
	CU_ASSERT_EQUAL(lk(&d, "x", &got, &st), -ENOENT);
	struct weir_md_stats s0 = stats(a);
	CU_ASSERT_EQUAL(lk(&d, "x", &got, &st), -ENOENT); /* cached absence (and "names") */
	CU_ASSERT(stats(a).wms_hits - s0.wms_hits >= 3); /* /, "names", "x": no miss, no MDS call */
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);

	/* create through b: a sees it at once */
	x = mkfile(b, &d, "x", 3);
	CU_ASSERT_EQUAL(lk(&d, "x", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &x));
	CU_ASSERT_EQUAL(st.st_size, 3);
	s0 = stats(a);
	CU_ASSERT_EQUAL(lk(&d, "x", &got, &st), 0); /* cached name and attributes */
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);

	/* rename over: x onto y */
	y = mkfile(b, &d, "y", 5);
	CU_ASSERT_EQUAL(lk(&d, "y", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &y));
	CU_ASSERT_EQUAL(weir_fid_rename(b, &d, "x", &d, "y", 0), 0);
	CU_ASSERT_EQUAL(lk(&d, "y", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &x));
	CU_ASSERT_EQUAL(st.st_size, 3);
	CU_ASSERT_EQUAL(lk(&d, "x", &got, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &y, &st), -ENOENT); /* the victim is gone */

	/* unlink */
	CU_ASSERT_EQUAL(lk(&d, "y", &got, &st), 0);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, "y"), 0);
	CU_ASSERT_EQUAL(lk(&d, "y", &got, &st), -ENOENT);

	/* rmdir and mkdir again: a new FID under the same name */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &d, "sub", 0755, &sub, NULL), 0);
	CU_ASSERT_EQUAL(lk(&d, "sub", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &sub));
	CU_ASSERT_EQUAL(weir_fid_rmdir(b, &d, "sub"), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &d, "sub", 0700, &sub2, NULL), 0);
	CU_ASSERT_EQUAL(lk(&d, "sub", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &sub2));
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0700);

	/* a's own create and unlink */
	CU_ASSERT_EQUAL(lk(&d, "own", &got, &st), -ENOENT);
	weir_fid_t own = mkfile(a, &d, "own", 1);
	CU_ASSERT_EQUAL(lk(&d, "own", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &own));
	CU_ASSERT_EQUAL(weir_fid_unlink(a, &d, "own"), 0);
	CU_ASSERT_EQUAL(lk(&d, "own", &got, &st), -ENOENT);
}

/*
 * a's own changes under the LOOKUP lease it holds on the directory: the
 * name it created, made or removed is cached with its result (no MDS call
 * for the next lookup), and another mount's change of that name calls it
 * back.
 */
static void test_mdcache_own_changes_cached_under_lease(void)
{
	poll_seen(a);
	weir_fid_t d, got, f, m, s;
	struct stat st;
	uint32_t ms = 0;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "ownd", 0755, &d, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "ownd", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "e", &got, NULL), -ENOENT); /* LOOKUP lease on d */

	/* an exclusive create: the name is the new file's */
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &d, "e", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "e", &got, &ms), 1);
	CU_ASSERT(fid_eq(&got, &f));
	CU_ASSERT(ms > 0 && ms <= 2 * LEASE_MS);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "e", &got, NULL), 0);
	CU_ASSERT(fid_eq(&got, &f));

	/* another mount removes it: called back, then seen gone */
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, "e"), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "e", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "e", &got, NULL), -ENOENT);

	/* mkdir and symlink: the new FIDs; unlink: cached absent */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "ownd", &got, NULL), 0); /* d's lease again */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &d, "m", 0755, &m, NULL), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "m", &got, NULL), 1);
	CU_ASSERT(fid_eq(&got, &m));
	CU_ASSERT_EQUAL_FATAL(weir_fid_symlink(a, &d, "s", "m", &s, NULL), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "s", &got, NULL), 1);
	CU_ASSERT(fid_eq(&got, &s));
	CU_ASSERT_EQUAL(weir_fid_unlink(a, &d, "s"), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "s", &got, NULL), 1);
	CU_ASSERT(got.seq == 0 && got.oid == 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "s", &got, &st), -ENOENT);

	/* another mount makes the name again: called back, the new FID seen */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &d, "s", 0700, &m, NULL), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "s", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "s", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &m));
	CU_ASSERT(S_ISDIR(st.st_mode));
}

/*
 * Readdirplus (weir_dir_plus): one listing leaves every entry's attributes
 * and name cached, so getattr and lookup of each ask no MDS; a change
 * through b calls back what it changed, seen at a's next call.
 */
static void test_mdcache_readdirplus_seeds_cache(void)
{
	poll_seen(a);
	enum { N = 40 };
	weir_fid_t d, got, f[N];
	char nm[32];
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "plus", 0755, &d, NULL), 0);
	for (int i = 0; i < N; i++) {
		snprintf(nm, sizeof(nm), "f%02d", i);
		f[i] = mkfile(b, &d, nm, (size_t)i);
	}
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "plus", &got, NULL), 0); /* d's LOOKUP lease */
	weir_dir_t *dh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_fid_opendir(a, &d, &dh), 0);
	CU_ASSERT_EQUAL(weir_dir_plus(dh, 1), 0);
	struct weir_dirent e;
	int n = 0, rc;
	while ((rc = weir_readdir(dh, &e)) == 1)
		n += e.d_name[0] == 'f';
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(n, N);
	weir_closedir(dh);
	struct weir_md_stats s0 = stats(a);
	for (int i = 0; i < N; i++) {
		snprintf(nm, sizeof(nm), "f%02d", i);
		CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, nm, &got, &st), 0);
		CU_ASSERT(fid_eq(&got, &f[i]));
		CU_ASSERT_EQUAL(st.st_size, i);
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f[i], &st), 0);
		CU_ASSERT_EQUAL(st.st_size, i);
	}
	struct weir_md_stats s1 = stats(a);
	CU_ASSERT_EQUAL(s1.wms_misses, s0.wms_misses); /* no MDS call */
	CU_ASSERT(s1.wms_hits - s0.wms_hits >= 2 * N);

	/* b changes one mode, removes one, replaces one */
	memset(&st, 0, sizeof(st));
	st.st_mode = 0600;
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f[1], &st, WEIR_SETATTR_MODE, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, "f02"), 0);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, "f03"), 0);
	weir_fid_t nf = mkfile(b, &d, "f03", 7);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f[1], &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "plus", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "f02", &got, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "f03", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &nf));
	CU_ASSERT_EQUAL(st.st_size, 7);

	/* without plus: the listing caches nothing */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "noplus", 0755, &d, NULL), 0);
	weir_fid_t g = mkfile(b, &d, "g", 1);
	CU_ASSERT_EQUAL_FATAL(weir_fid_opendir(a, &d, &dh), 0);
	while (weir_readdir(dh, &e) == 1)
		;
	weir_closedir(dh);
	s0 = stats(a);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &g, &st), 0);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses + 1);
}

/* a's and b's (fresh: b does not hold d's lease) views of d's attributes agree */
static void same_dir_attrs(const weir_fid_t *d, int line)
{
	struct stat sa, sb;
	CU_ASSERT_EQUAL(weir_fid_getattr(a, d, &sa), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(b, d, &sb), 0);
	if (sa.st_nlink != sb.st_nlink || sa.st_mtim.tv_sec != sb.st_mtim.tv_sec ||
	    sa.st_mtim.tv_nsec != sb.st_mtim.tv_nsec || sa.st_ctim.tv_nsec != sb.st_ctim.tv_nsec) {
		printf("\n    line %d: a sees nlink %lu mtime %ld.%09ld, b %lu %ld.%09ld\n", line,
		       (unsigned long)sa.st_nlink, (long)sa.st_mtim.tv_sec, sa.st_mtim.tv_nsec,
		       (unsigned long)sb.st_nlink, (long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
		CU_FAIL("the directory's cached attributes differ from the MDS's");
	}
}

/*
 * a's own changes in a directory whose attributes it caches: the reply
 * carries the directory's attributes after the change, which a keeps (no
 * GETATTR of the directory after a create, as the kernel sends); they match
 * the MDS's, and b's change of the directory still calls them back.
 */
static void test_mdcache_own_changes_keep_parent_attributes(void)
{
	poll_seen(a);
	weir_fid_t d, x;
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "par", 0755, &d, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0); /* a's ATTR lease on d */
	CU_ASSERT(weir_md_leased(a, &d, NULL) & 2);
	struct weir_md_stats s0 = stats(a);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &d, "f", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses); /* from the create's reply */
	same_dir_attrs(&d, __LINE__);
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &d, "sub", 0755, &x, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_symlink(a, &d, "l", "f", &x, NULL), 0);
	s0 = stats(a);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 3); /* ".", its name, sub's ".." */
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);
	same_dir_attrs(&d, __LINE__);
	CU_ASSERT_EQUAL(weir_fid_unlink(a, &d, "f"), 0);
	CU_ASSERT_EQUAL(weir_fid_rmdir(a, &d, "sub"), 0);
	s0 = stats(a);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 2);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);
	same_dir_attrs(&d, __LINE__);
	/* b's change of d: a's cached attributes called back */
	struct stat before = st;
	th_sleep_ms(2); /* a later mtime */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &d, "bsub", 0755, &x, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 3);
	CU_ASSERT(st.st_mtim.tv_sec != before.st_mtim.tv_sec ||
		  st.st_mtim.tv_nsec != before.st_mtim.tv_nsec);
	same_dir_attrs(&d, __LINE__);
}

/*
 * A directory a made itself is known empty (its mkdir leased it): names not
 * in it are absent without asking the MDS, names a makes there stay known,
 * one it creates without O_EXCL (its result not known) is asked for, and
 * b's create there calls the knowledge back.
 */
static void test_mdcache_own_mkdir_known_empty(void)
{
	poll_seen(a);
	weir_fid_t d, got, x;
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &root, "made", 0755, &d, NULL), 0);
	CU_ASSERT_EQUAL(weir_md_leased(a, &d, NULL) & 3, 3); /* LOOKUP and ATTR */
	struct weir_md_stats s0 = stats(a);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "nope", &got, &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &d, &st), 0);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "nope", &got, NULL), 1);
	CU_ASSERT(got.seq == 0 && got.oid == 0);

	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &d, "x", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	weir_file_fid(fh, &x);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "x", &got, NULL), 1);
	CU_ASSERT(fid_eq(&got, &x));
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "other", &got, NULL), 1); /* still complete */
	CU_ASSERT(got.seq == 0 && got.oid == 0);

	/* a create whose result is not known here (no O_EXCL: it could have
	 * followed a symlink) ends the completeness: "z" is asked for */
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(a, &d, "z", O_RDWR | O_CREAT, 0644, &fh, NULL), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "z", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "z", &got, &st), 0);

	/* b's create in it: called back, seen */
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &root, "made2", 0755, &d, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "y", &got, &st), -ENOENT);
	x = mkfile(b, &d, "y", 2);
	CU_ASSERT_EQUAL(weir_md_name_leased(a, &d, "y", &got, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &d, "y", &got, &st), 0);
	CU_ASSERT(fid_eq(&got, &x));
	CU_ASSERT_EQUAL(st.st_size, 2);
}

/* One entry of a listing, as weir_readdir() returned it. */
struct lent {
	char name[256];
	uint64_t cookie;
	weir_fid_t fid;
	unsigned char type;
};

/*
 * Every entry of \a d but "." and "..", listed by \a fs into \a out (at
 * most \a cap): with \a fd, a readdirplus stream of weir_fdopendir() on an
 * open of \a d (it may list from the cache), else weir_fid_opendir()
 * without plus (its first page is the MDS's: the whole of a directory of
 * fewer than 1,024 entries). \a stop_after > 0: return after that many
 * entries with the stream open in *\a keep. \return the count, or -errno.
 */
static int listing_open(weir_fs_t *fs, const weir_fid_t *d, bool fd, struct lent *out, int cap,
			int stop_after, weir_dir_t **keep, weir_file_t **keep_fh)
{
	weir_file_t *fh = NULL;
	weir_dir_t *dh = NULL;
	int n = 0, rc;
	if (fd) {
		rc = weir_fid_open(fs, d, O_RDONLY | O_DIRECTORY, &fh);
		if (rc)
			return rc;
		rc = weir_fdopendir(fh, &dh);
		if (!rc)
			weir_dir_plus(dh, 1);
	} else {
		rc = weir_fid_opendir(fs, d, &dh);
	}
	if (rc) {
		weir_close(fh);
		return rc;
	}
	struct weir_dirent e;
	while ((stop_after <= 0 || n < stop_after) && (rc = weir_readdir(dh, &e)) == 1) {
		if (!strcmp(e.d_name, ".") || !strcmp(e.d_name, ".."))
			continue;
		if (n < cap) {
			snprintf(out[n].name, sizeof(out[n].name), "%s", e.d_name);
			out[n].cookie = e.d_off;
			out[n].fid = e.d_fid;
			out[n].type = e.d_type;
		}
		n++;
	}
	if (stop_after > 0 && n == stop_after) {
		*keep = dh;
		*keep_fh = fh;
		return n;
	}
	weir_closedir(dh);
	if (fh)
		weir_close(fh);
	return rc < 0 ? rc : n;
}

static int listing(weir_fs_t *fs, const weir_fid_t *d, bool fd, struct lent *out, int cap)
{
	return listing_open(fs, d, fd, out, cap, 0, NULL, NULL);
}

/* The two listings are the same entries in the same order, with the same cookies. */
static bool same_listing(const struct lent *x, int nx, const struct lent *y, int ny)
{
	if (nx != ny) {
		printf("\n    listings of %d and %d entries\n", nx, ny);
		return false;
	}
	for (int i = 0; i < nx; i++) {
		if (strcmp(x[i].name, y[i].name) || x[i].cookie != y[i].cookie ||
		    !fid_eq(&x[i].fid, &y[i].fid) || x[i].type != y[i].type) {
			printf("\n    entry %d: %s %llu type %u against %s %llu type %u\n", i,
			       x[i].name, (unsigned long long)x[i].cookie, x[i].type, y[i].name,
			       (unsigned long long)y[i].cookie, y[i].type);
			return false;
		}
	}
	return true;
}

static int lent_find(const struct lent *l, int n, const char *name)
{
	int k = -1;
	for (int i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			k = k < 0 ? i : -2; /* -2: twice */
	return k;
}

/* The FIDs of "." and ".." of a weir_fdopendir() stream on \a path (-errno on failure). */
static int dots_of(weir_fs_t *fs, const char *path, weir_fid_t *dot, weir_fid_t *dotdot)
{
	weir_file_t *fh = NULL;
	weir_dir_t *dh = NULL;
	struct weir_dirent e;
	int rc = weir_open(fs, path, O_RDONLY | O_DIRECTORY, 0, &fh);
	if (rc)
		return rc;
	rc = weir_fdopendir(fh, &dh);
	int seen = 0;
	while (!rc && seen < 2 && weir_readdir(dh, &e) == 1) {
		if (!strcmp(e.d_name, "."))
			*dot = e.d_fid, seen++;
		else if (!strcmp(e.d_name, ".."))
			*dotdot = e.d_fid, seen++;
	}
	if (dh)
		weir_closedir(dh);
	weir_close(fh);
	return rc ? rc : seen == 2 ? 0 : -EIO;
}

/*
 * weir_fdopendir() names ".." from its open's reply (OpenRep.dir_parent), not
 * from a LOOKUP of "..": the same parent, no miss. A caller who may read
 * the directory but not search it gets no parent from the MDS (a LOOKUP of
 * ".." would be refused): ".." names the directory itself, as before. "/"
 * is its own parent.
 */
static void test_mdcache_fdopendir_dotdot_from_the_open(void)
{
	weir_fid_t top, sub, dot, dd;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "dd", 0755, &top, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &top, "sub", 0744, &sub, NULL), 0);
	struct weir_md_stats s0 = stats(a);
	CU_ASSERT_EQUAL(dots_of(a, "/dd/sub", &dot, &dd), 0);
	CU_ASSERT(fid_eq(&dot, &sub));
	CU_ASSERT(fid_eq(&dd, &top));
	CU_ASSERT_EQUAL(dots_of(a, "/dd/sub", &dot, &dd), 0);
	CU_ASSERT(fid_eq(&dd, &top));
	/* (misses: the path's own walk, at most; never a ".." per listing) */
	CU_ASSERT(stats(a).wms_misses <= s0.wms_misses + 2);
	s0 = stats(a);
	CU_ASSERT_EQUAL(dots_of(a, "/dd/sub", &dot, &dd), 0);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);
	CU_ASSERT_EQUAL(dots_of(a, "/", &dot, &dd), 0);
	CU_ASSERT(fid_eq(&dot, &root));
	CU_ASSERT(fid_eq(&dd, &root));
	/* r-- for others: readable, not searchable */
	struct weir_cred cr = { .cr_uid = 4242, .cr_gid = 4242 };
	CU_ASSERT_EQUAL(weir_fid_cred_set(&cr), 0);
	int rc = dots_of(a, "/dd/sub", &dot, &dd);
	CU_ASSERT_EQUAL(weir_fid_cred_set(NULL), 0);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(fid_eq(&dot, &sub));
	CU_ASSERT(fid_eq(&dd, &sub));
}

/*
 * A directory the cache knows completely (read whole by readdirplus under
 * its LOOKUP lease, or made by this mount) is listed from the cache: the
 * same entries, order and cookies as the MDS's listing, no MDS call; every
 * change by another mount (create, unlink, rename over, rmdir and mkdir
 * again) is in the next listing, also one that was half read when it
 * happened (the rest then comes from the MDS: no entry twice, none lost).
 */
static void test_mdcache_listing_from_cache(void)
{
	poll_seen(a);
	enum { N = 30, CAP = 64 };
	static struct lent l1[CAP], l2[CAP], ref[CAP];
	weir_fid_t d, got, f[N];
	char nm[32];
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "lst", 0755, &d, NULL), 0);
	for (int i = 0; i < N; i++) {
		snprintf(nm, sizeof(nm), "f%02d", i);
		f[i] = mkfile(b, &d, nm, 0);
	}
	weir_fid_t sub;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &d, "sub", 0755, &sub, NULL), 0);

	/* a's first listing is the MDS's; read whole, it makes d known */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "lst", &got, NULL), 0); /* d's LOOKUP lease */
	struct weir_md_stats s0 = stats(a);
	int n1 = listing(a, &d, true, l1, CAP);
	CU_ASSERT_EQUAL(n1, N + 1);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings);
	int nr = listing(b, &d, false, ref, CAP);
	CU_ASSERT(same_listing(l1, n1, ref, nr));
	int k = lent_find(l1, n1, "sub");
	CU_ASSERT(k >= 0 && l1[k].type == DT_DIR);
	k = lent_find(l1, n1, "f07");
	CU_ASSERT(k >= 0 && l1[k].type == DT_REG && fid_eq(&l1[k].fid, &f[7]));

	/* the second from the cache: the same, and no MDS call but the open
	 * (whose reply names ".." too: no lookup of it, no miss) */
	s0 = stats(a);
	int n2 = listing(a, &d, true, l2, CAP);
	struct weir_md_stats s1 = stats(a);
	CU_ASSERT_EQUAL(s1.wms_listings, s0.wms_listings + 1);
	CU_ASSERT_EQUAL(s1.wms_misses, s0.wms_misses);
	CU_ASSERT(same_listing(l2, n2, ref, nr));

	/* b creates: a's next listing has it */
	weir_fid_t nf = mkfile(b, &d, "new", 0);
	n2 = listing(a, &d, true, l2, CAP);
	nr = listing(b, &d, false, ref, CAP);
	CU_ASSERT_EQUAL(nr, N + 2);
	CU_ASSERT(same_listing(l2, n2, ref, nr));
	k = lent_find(l2, n2, "new");
	CU_ASSERT(k >= 0 && fid_eq(&l2[k].fid, &nf));

	/* known again (lease, whole listing), then b unlinks one and renames
	 * one over another */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "lst", &got, NULL), 0);
	CU_ASSERT_EQUAL(listing(a, &d, true, l1, CAP), N + 2);
	s0 = stats(a);
	CU_ASSERT_EQUAL(listing(a, &d, true, l1, CAP), N + 2);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, "f05"), 0);
	CU_ASSERT_EQUAL(weir_fid_rename(b, &d, "f06", &d, "f07", 0), 0);
	n2 = listing(a, &d, true, l2, CAP);
	nr = listing(b, &d, false, ref, CAP);
	CU_ASSERT_EQUAL(nr, N);
	CU_ASSERT(same_listing(l2, n2, ref, nr));
	CU_ASSERT_EQUAL(lent_find(l2, n2, "f05"), -1);
	CU_ASSERT_EQUAL(lent_find(l2, n2, "f06"), -1);
	k = lent_find(l2, n2, "f07");
	CU_ASSERT(k >= 0 && fid_eq(&l2[k].fid, &f[6]));

	/* a change while a listing from the cache is half read */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "lst", &got, NULL), 0);
	CU_ASSERT_EQUAL(listing(a, &d, true, l1, CAP), N);
	weir_dir_t *dh = NULL;
	weir_file_t *fh = NULL;
	s0 = stats(a);
	CU_ASSERT_EQUAL_FATAL(listing_open(a, &d, true, l1, CAP, 10, &dh, &fh), 10);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);
	/* one name already returned and one not yet: both go */
	char gone_before[256], gone_after[256];
	snprintf(gone_before, sizeof(gone_before), "%s", l1[3].name);
	snprintf(gone_after, sizeof(gone_after), "%s", ref[lent_find(ref, nr, l1[9].name) + 5].name);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, gone_before), 0);
	CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, gone_after), 0);
	mkfile(b, &d, "mid", 0);
	struct weir_dirent e;
	int n = 10, rc;
	while ((rc = weir_readdir(dh, &e)) == 1 && n < CAP) {
		snprintf(l1[n].name, sizeof(l1[n].name), "%s", e.d_name);
		l1[n].cookie = e.d_off;
		n++;
	}
	CU_ASSERT_EQUAL(rc, 0);
	weir_closedir(dh);
	weir_close(fh);
	/* every name there throughout, once; the removed one not after it went */
	for (int i = 0; i < nr; i++) {
		if (!strcmp(ref[i].name, gone_before) || !strcmp(ref[i].name, gone_after))
			continue;
		if (lent_find(l1, n, ref[i].name) < 0)
			printf("\n    %s: %d times\n", ref[i].name, lent_find(l1, n, ref[i].name));
		CU_ASSERT(lent_find(l1, n, ref[i].name) >= 0);
	}
	CU_ASSERT_EQUAL(lent_find(l1, n, gone_after), -1);
	for (int i = 1; i < n; i++)
		CU_ASSERT(l1[i].cookie > l1[i - 1].cookie); /* in cookie order */

	/* a position from a cached listing resumes an MDS listing at the same
	 * place, and a seek inside a cached listing resumes it there */
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "lst", &got, NULL), 0);
	nr = listing(b, &d, false, ref, CAP);
	CU_ASSERT_EQUAL(listing(a, &d, true, l1, CAP), nr);
	s0 = stats(a);
	CU_ASSERT_EQUAL_FATAL(listing_open(a, &d, true, l1, CAP, 7, &dh, &fh), 7);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);
	int64_t pos = weir_telldir(dh);
	CU_ASSERT_EQUAL(pos, (int64_t)l1[6].cookie);
	CU_ASSERT_EQUAL(weir_readdir(dh, &e), 1);
	CU_ASSERT_STRING_EQUAL(e.d_name, ref[7].name);
	weir_seekdir(dh, (int64_t)l1[2].cookie); /* back: after the third entry */
	CU_ASSERT_EQUAL(weir_readdir(dh, &e), 1);
	CU_ASSERT_STRING_EQUAL(e.d_name, ref[3].name);
	weir_rewinddir(dh);
	n = 0;
	while ((rc = weir_readdir(dh, &e)) == 1)
		n++;
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(n, nr + 2); /* with "." and ".." */
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 3); /* each from the cache */
	weir_closedir(dh);
	weir_close(fh);
	CU_ASSERT_EQUAL_FATAL(weir_fid_opendir(b, &d, &dh), 0);
	weir_seekdir(dh, pos);
	CU_ASSERT_EQUAL(weir_readdir(dh, &e), 1);
	CU_ASSERT_STRING_EQUAL(e.d_name, ref[7].name);
	weir_closedir(dh);

	/* rmdir and mkdir again: the old one is gone, the new one empty */
	for (int i = 0; i < nr; i++) {
		if (ref[i].type == DT_DIR) {
			CU_ASSERT_EQUAL(weir_fid_rmdir(b, &d, ref[i].name), 0);
		} else {
			CU_ASSERT_EQUAL(weir_fid_unlink(b, &d, ref[i].name), 0);
		}
	}
	CU_ASSERT_EQUAL(weir_fid_rmdir(b, &root, "lst"), 0);
	CU_ASSERT_EQUAL(listing(a, &d, true, l1, CAP), -ENOENT);
	weir_fid_t d2;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "lst", 0755, &d2, NULL), 0);
	mkfile(b, &d2, "again", 0);
	CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "lst", &got, NULL), 0); /* its lease */
	CU_ASSERT(fid_eq(&got, &d2));
	CU_ASSERT_EQUAL(listing(a, &d2, true, l1, CAP), 1);
	s0 = stats(a);
	CU_ASSERT_EQUAL(listing(a, &d2, true, l1, CAP), 1);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);
	CU_ASSERT_STRING_EQUAL(l1[0].name, "again");

	/* a directory a made, and filled: listed from the cache at once */
	weir_fid_t m;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &root, "lst-mine", 0755, &m, NULL), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(nm, sizeof(nm), "m%d", i);
		CU_ASSERT_EQUAL_FATAL(
			weir_fid_create(a, &m, nm, O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
		CU_ASSERT_EQUAL(weir_close(fh), 0);
	}
	s0 = stats(a);
	n2 = listing(a, &m, true, l2, CAP);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);
	nr = listing(b, &m, false, ref, CAP);
	CU_ASSERT_EQUAL(nr, 5);
	CU_ASSERT(same_listing(l2, n2, ref, nr));

	/* a path stream: its first page is the MDS's, the rest may be the cache's */
	enum { BIG = 1100 };
	weir_fid_t big;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &root, "lst-big", 0755, &big, NULL), 0);
	for (int i = 0; i < BIG; i++) {
		snprintf(nm, sizeof(nm), "b%04d", i);
		CU_ASSERT_EQUAL_FATAL(
			weir_fid_create(a, &big, nm, O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
		CU_ASSERT_EQUAL(weir_close(fh), 0);
	}
	s0 = stats(a);
	CU_ASSERT_EQUAL_FATAL(weir_opendir(a, "/lst-big", &dh), 0);
	uint64_t last = 0;
	bool ordered = true;
	n = 0;
	int dots = 0;
	while ((rc = weir_readdir(dh, &e)) == 1) {
		if (!strcmp(e.d_name, ".") || !strcmp(e.d_name, "..")) {
			dots++; /* (once each: ".." looked up by weir_opendir is no entry) */
			continue;
		}
		ordered = ordered && e.d_off > last && e.d_type == DT_REG;
		last = e.d_off;
		n++;
	}
	CU_ASSERT_EQUAL(rc, 0);
	weir_closedir(dh);
	CU_ASSERT_EQUAL(n, BIG);
	CU_ASSERT_EQUAL(dots, 2);
	CU_ASSERT(ordered);
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings + 1);

	/* weir_dir_plus() right after weir_opendir(): its first page, read at the
	 * open without attributes, is read again with them */
	weir_fid_t pd;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(b, &root, "lst-path", 0755, &pd, NULL), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(nm, sizeof(nm), "p%02d", i);
		mkfile(b, &pd, nm, (size_t)i);
	}
	CU_ASSERT_EQUAL_FATAL(weir_opendir(a, "/lst-path", &dh), 0);
	CU_ASSERT_EQUAL(weir_dir_plus(dh, 1), 0);
	n = 0;
	while ((rc = weir_readdir(dh, &e)) == 1) {
		if (e.d_name[0] != 'p')
			continue;
		l1[n].fid = e.d_fid;
		n++;
	}
	CU_ASSERT_EQUAL(rc, 0);
	weir_closedir(dh);
	CU_ASSERT_EQUAL(n, 20);
	s0 = stats(a);
	struct stat pst;
	for (int i = 0; i < n && i < CAP; i++)
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &l1[i].fid, &pst), 0);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses); /* every one cached */

	/* the cache lists nothing to a caller the MDS would refuse: a stream of
	 * weir_fid_opendir() asks the MDS for its first page */
	weir_fid_t priv;
	CU_ASSERT_EQUAL_FATAL(weir_fid_mkdir(a, &root, "lst-priv", 0700, &priv, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &priv, "p", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(listing(a, &priv, true, l1, CAP), 1); /* (from the cache) */
	struct weir_cred other = { .cr_uid = 4242, .cr_gid = 4242 };
	CU_ASSERT_EQUAL(weir_fid_cred_set(&other), 0);
	s0 = stats(a);
	CU_ASSERT_EQUAL(listing(a, &priv, false, l1, CAP), -EACCES);
	CU_ASSERT_EQUAL(listing(a, &priv, true, l1, CAP), -EACCES); /* (the open) */
	CU_ASSERT_EQUAL(stats(a).wms_listings, s0.wms_listings);
	CU_ASSERT_EQUAL(weir_fid_cred_set(NULL), 0);

	/* weir_fdopendir's arguments */
	CU_ASSERT_EQUAL(weir_fdopendir(NULL, &dh), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(a, &f[0], O_RDONLY, &fh), -ENOENT); /* (removed above) */
	CU_ASSERT_EQUAL_FATAL(weir_fid_create(a, &m, "file", O_RDWR | O_CREAT | O_EXCL, 0644, &fh,
					      NULL),
			      0);
	CU_ASSERT_EQUAL(weir_fdopendir(fh, &dh), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

/*
 * A writer's close on a mount that caches names asks for a lease on the
 * file after it: the stat that follows needs no MDS, and shows what was
 * written; not while another mount has the file open for writing (its
 * size is the OSTs'); another mount's write is called back.
 */
static void test_mdcache_close_leases_the_file(void)
{
	poll_seen(a);
	weir_fid_t f;
	struct stat st;
	weir_file_t *fh = NULL, *bh = NULL;
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "closed", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "hello", 5, 0), 5);
	CU_ASSERT_EQUAL(weir_md_leased(a, &f, NULL) & 2, 0); /* open for writing: none */
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT(weir_md_leased(a, &f, NULL) & 2);
	struct weir_md_stats s0 = stats(a);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 5);
	CU_ASSERT_EQUAL(stats(a).wms_misses, s0.wms_misses);
	/* a reader's close changes nothing: the lease and the entry stay (files
	 * and directories: a listing does not drop the directory's names) */
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(a, &f, O_RDONLY, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT(weir_md_leased(a, &f, NULL) & 2);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &root, &st), 0); /* root's lease, again */
	CU_ASSERT_EQUAL(weir_md_leased(a, &root, NULL) & 3, 3);
	weir_dir_t *dh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(a, &root, O_RDONLY | O_DIRECTORY, &fh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_opendir(a, &root, &dh), 0);
	weir_closedir(dh);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_md_leased(a, &root, NULL) & 3, 3);

	/* b writes and closes: called back, a sees 9 bytes */
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(b, &f, O_WRONLY, &bh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(bh, "more", 4, 5), 4);
	CU_ASSERT_EQUAL(weir_close(bh), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 9);

	/* b keeps it open for writing while a writes and closes: no lease */
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(b, &f, O_WRONLY, &bh), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(a, &f, O_WRONLY, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "x", 1, 20), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_md_leased(a, &f, NULL) & 2, 0);
	CU_ASSERT_EQUAL(weir_pwrite(bh, "y", 1, 30), 1);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 31); /* b's write, glimpsed */
	CU_ASSERT_EQUAL(weir_close(bh), 0);
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 31);
}

/* a's getattr of \a f from its cache (no MDS call): its size, or -1 on a miss or an error. */
static long long cached_size(const weir_fid_t *f)
{
	struct stat st;
	struct weir_md_stats s0 = stats(a);
	if (weir_fid_getattr(a, f, &st))
		return -1;
	return stats(a).wms_misses == s0.wms_misses ? (long long)st.st_size : -1;
}

static long long size_of(weir_fs_t *fs, const weir_fid_t *f)
{
	struct stat st;
	return weir_fid_getattr(fs, f, &st) ? -1 : (long long)st.st_size;
}

/*
 * The open that creates a file for writing leases its attributes to the
 * creator (its size, 0, is exact while it is the only opener): a stat
 * costs no MDS call. Another client's open for writing calls the lease back
 * before it returns (even though the file is already open for writing, so
 * the open commits nothing); the creator's own first write, through any of
 * its handles, and a truncate by FID, drop it.
 */
static void test_mdcache_creator_leases_new_file(void)
{
	poll_seen(a);
	weir_fid_t f;
	weir_file_t *fh = NULL, *bh = NULL, *fh2 = NULL;
	struct stat sa;
	memset(&sa, 0, sizeof(sa));

	/* closed unchanged: the creator's lease still covers it (the close
	 * is one-way and keeps the entry); another client's write is seen */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created0", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT(weir_md_leased(a, &f, NULL) & 2);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(b, &f, O_WRONLY, &bh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(bh, "ab", 2, 0), 2);
	CU_ASSERT_EQUAL(weir_close(bh), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 2);

	/* another client's open for writing while the creator holds it open */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created1", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT(weir_md_leased(a, &f, NULL) & 2);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(b, &f, O_WRONLY, &bh), 0);
	CU_ASSERT_EQUAL(weir_md_leased(a, &f, NULL) & 2, 0);
	CU_ASSERT_EQUAL(weir_pwrite(bh, "abc", 3, 0), 3);
	CU_ASSERT_EQUAL(size_of(a, &f), 3); /* glimpsed */
	CU_ASSERT_EQUAL(weir_close(bh), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 3);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 3);

	/* the creator's own write */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created2", O_RDWR | O_CREAT | O_EXCL, 0644, &fh, NULL), 0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "hello", 5, 0), 5);
	CU_ASSERT_EQUAL(weir_md_leased(a, &f, NULL) & 2, 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 5);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 2), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 2);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 2);

	/* another handle of the creator's mount (the same session: no
	 * callback) opens it for writing (which drops the entry), and writes */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created3", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL_FATAL(weir_fid_open(a, &f, O_WRONLY, &fh2), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh2, "xy", 2, 10), 2);
	CU_ASSERT_EQUAL(size_of(a, &f), 12);
	CU_ASSERT_EQUAL(weir_close(fh2), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 12);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 12);

	/* another client's truncate and chmod while the creator has it open */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created4", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	sa.st_size = 7;
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_SIZE, NULL), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 7);
	sa.st_mode = 0600;
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_MODE, NULL), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	/* the creator's own truncates while it holds the lease: by handle,
	 * then by FID */
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created5", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 9), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 9);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL_FATAL(
		weir_fid_create(a, &root, "created6", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh, NULL),
		0);
	weir_file_fid(fh, &f);
	CU_ASSERT_EQUAL(cached_size(&f), 0);
	sa.st_size = 5;
	CU_ASSERT_EQUAL(weir_fid_setattr(a, &f, &sa, WEIR_SETATTR_SIZE, NULL), 0);
	CU_ASSERT_EQUAL(size_of(a, &f), 5);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(size_of(b, &f), 5);
}

/*
 * b changes the mode 300 times, then the mode and the size 300 times; after
 * each change returns, a must read it (cached or not). Mode changes: a holds
 * the lease each time, so each is a callback.
 */
static void test_mdcache_model_every_change_seen_at_the_next_call(void)
{
	poll_seen(a);
	weir_fid_t f = mkfile(b, &root, "model", 0), got;
	struct stat st, sa;
	int wrong = 0;
	memset(&sa, 0, sizeof(sa));
	uint64_t cb0 = stats(a).wms_callbacks;
	for (int i = 0; i < 300; i++) {
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0); /* cache it */
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
		sa.st_mode = 0400 | (unsigned)(i % 64);
		CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_MODE, NULL), 0);
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
		if ((st.st_mode & 07777) != (0400 | (unsigned)(i % 64)))
			wrong++;
	}
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(stats(a).wms_callbacks - cb0 >= 290);
	for (int i = 0; i < 300; i++) {
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0); /* cache it */
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
		sa.st_mode = 0400 | (unsigned)(i % 64);
		sa.st_size = i;
		CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_MODE | WEIR_SETATTR_SIZE,
						 NULL),
				0);
		CU_ASSERT_EQUAL(weir_fid_getattr(a, &f, &st), 0);
		CU_ASSERT_EQUAL(weir_fid_lookup(a, &root, "model", &got, NULL), 0);
		if ((st.st_mode & 07777) != (0400 | (unsigned)(i % 64)) || st.st_size != i)
			wrong++;
	}
	CU_ASSERT_EQUAL(wrong, 0);
	struct weir_md_stats s = stats(a);
	printf("\n    a: %llu hits, %llu misses, %llu callbacks\n", (unsigned long long)s.wms_hits,
	       (unsigned long long)s.wms_misses, (unsigned long long)s.wms_callbacks);
}

/*
 * A caching client stopped with SIGSTOP cannot acknowledge: a change of
 * what it caches waits until the MDS evicts it (about a lease), then
 * completes; the client, continued, has lost its cache and sees the change.
 */
static void test_mdcache_silent_holder_evicted_then_change_completes(void)
{
	weir_fid_t f = mkfile(b, &root, "silent", 1);
	int p2c[2], c2p[2];
	CU_ASSERT_FATAL(pipe(p2c) == 0 && pipe(c2p) == 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		weir_fs_t *c = mount_one("mdl-silent", true);
		struct stat st;
		char ch = 'x';
		if (!c)
			_exit(2);
		poll_seen(c);
		if (weir_fid_getattr(c, &f, &st) || !(weir_md_leased(c, &f, NULL) & 2))
			_exit(3);
		if (write(c2p[1], "L", 1) != 1 || read(p2c[0], &ch, 1) != 1)
			_exit(4);
		/* continued after the change: evicted, cache dropped, the new mode */
		if (weir_fid_getattr(c, &f, &st))
			_exit(5);
		_exit((st.st_mode & 07777) == 0604 ? 0 : 6);
	}
	char ch = 0;
	CU_ASSERT_FATAL(read(c2p[0], &ch, 1) == 1 && ch == 'L');
	kill(pid, SIGSTOP);
	struct stat sa;
	memset(&sa, 0, sizeof(sa));
	sa.st_mode = 0604;
	uint64_t t0 = th_now_ms();
	CU_ASSERT_EQUAL(weir_fid_setattr(b, &f, &sa, WEIR_SETATTR_MODE, NULL), 0);
	uint64_t waited = th_now_ms() - t0;
	printf("\n    the change waited %llu ms for the silent holder's eviction\n",
	       (unsigned long long)waited);
	CU_ASSERT(waited >= LEASE_MS / 2);
	CU_ASSERT(waited < 4 * LEASE_MS + 2000);
	kill(pid, SIGCONT);
	CU_ASSERT(write(p2c[1], "G", 1) == 1);
	int status = 0;
	CU_ASSERT(waitpid(pid, &status, 0) == pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(p2c[0]);
	close(p2c[1]);
	close(c2p[0]);
	close(c2p[1]);
}

/* weir_stat() of \a path on \a fs: its size (-errno on failure), and the cache's hit/miss. */
static long long pstat(weir_fs_t *fs, const char *path, struct stat *st, int *hit)
{
	struct weir_md_stats s0 = stats(fs);
	int rc = weir_stat(fs, path, st);
	struct weir_md_stats s1 = stats(fs);
	*hit = s1.wms_hits > s0.wms_hits && s1.wms_misses == s0.wms_misses;
	return rc ? rc : (long long)st->st_size;
}

/* pstat() with the thread's credentials \a cr for that one call. */
static long long pstat_as(weir_fs_t *fs, const struct weir_cred *cr, const char *path, int *hit)
{
	struct stat st;
	CU_ASSERT_EQUAL(weir_fid_cred_set(cr), 0);
	long long r = pstat(fs, path, &st, hit);
	CU_ASSERT_EQUAL(weir_fid_cred_set(NULL), 0);
	return r;
}

/* Every one of \a names (under "/pc/") stats from the cache of \a fs with size \a sz each. */
static int all_hit(weir_fs_t *fs, const char *const *names, int nr)
{
	char p[64];
	struct stat st;
	int hits = 0, hit;
	for (int i = 0; i < nr; i++) {
		snprintf(p, sizeof(p), "/pc/%s", names[i]);
		if (pstat(fs, p, &st, &hit) >= 0 && hit)
			hits++;
	}
	return hits;
}

/*
 * A change by path whose directory part the cache resolves (weir_unlink,
 * weir_rename, weir_open with O_CREAT, weir_mkdir, weir_chmod...) goes to
 * the MDS as (that directory, the last name), and the cache forgets that
 * name only: the other cached paths still answer without the MDS, on a
 * mount with names cached and on a default one. Each change is seen.
 */
static void test_mdcache_path_changes_forget_their_name_only(void)
{
	weir_fs_t *c = mount_one("mdl-pc", false); /* libweir's defaults: no names */
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	poll_seen(c);
	poll_seen(a);
	static const char *const keep[] = { "k0", "k1", "k2", "k3" };
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(b, "/pc", 0755), 0);
	char p[64];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "/pc/%s", keep[i]);
		CU_ASSERT_EQUAL_FATAL(th_put(b, p, "abc", 3), 0);
	}
	CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/x", "12345", 5), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/y", "1234567", 7), 0);
	weir_fs_t *fss[2] = { a, c };
	for (int k = 0; k < 2; k++) {
		weir_fs_t *fs = fss[k];
		struct stat st;
		int hit;
		all_hit(fs, keep, 4); /* cached now */
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/x", &st, &hit), 5);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/x", &st, &hit), 5);
		CU_ASSERT_TRUE(hit);

		/* unlink by path: gone at once, the rest still cached */
		CU_ASSERT_EQUAL(weir_unlink(fs, "/pc/x"), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/x", &st), -ENOENT);
		CU_ASSERT_EQUAL(weir_stat(b, "/pc/x", &st), -ENOENT);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);

		/* rename by path (neither name cached: the reply names the objects) */
		CU_ASSERT_EQUAL(weir_rename(fs, "/pc/y", "/pc/z"), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/y", &st), -ENOENT);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/z", &st, &hit), 7);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);
		/* over a cached name: the victim's attributes go */
		CU_ASSERT_EQUAL(pstat(fs, "/pc/k3", &st, &hit), 3);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/z", &st, &hit), 7);
		CU_ASSERT_EQUAL(weir_rename(fs, "/pc/z", "/pc/k3"), 0);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/k3", &st, &hit), 7);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/z", &st), -ENOENT);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 3), 3);
		CU_ASSERT_EQUAL(weir_rename(b, "/pc/k3", "/pc/z"), 0);
		CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/k3", "abc", 3), 0);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/k3", &st, &hit), 3);
		all_hit(fs, keep, 4); /* (b's changes called back the directory: again) */

		/* create by path, mkdir, chmod */
		weir_file_t *fh = NULL;
		CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/pc/new", O_CREAT | O_EXCL | O_WRONLY, 0644, &fh),
				      0);
		CU_ASSERT_EQUAL(weir_pwrite(fh, "xy", 2, 0), 2);
		CU_ASSERT_EQUAL(weir_close(fh), 0);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/new", &st, &hit), 2);
		CU_ASSERT_EQUAL(pstat(b, "/pc/new", &st, &hit), 2);
		CU_ASSERT_EQUAL(weir_mkdir(fs, "/pc/sub", 0755), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/sub", &st), 0);
		CU_ASSERT(S_ISDIR(st.st_mode));
		CU_ASSERT_EQUAL(weir_chmod(fs, "/pc/k0", 0600), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/k0", &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
		CU_ASSERT_EQUAL(weir_stat(b, "/pc/k0", &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
		CU_ASSERT_EQUAL(all_hit(fs, keep + 1, 3), 3);

		/* a link through a symlink (AT_SYMLINK_FOLLOW) changes the object the
		 * symlink leads to: its link count is not served stale */
		CU_ASSERT_EQUAL(weir_symlink(fs, "k2", "/pc/lnk"), 0);
		CU_ASSERT_EQUAL(weir_lstat(fs, "/pc/lnk", &st), 0);
		weir_fid_t pcf, k2f;
		CU_ASSERT_EQUAL(weir_fid_lookup(fs, &root, "pc", &pcf, NULL), 0);
		CU_ASSERT_EQUAL(weir_fid_lookup(fs, &pcf, "k2", &k2f, &st), 0);
		CU_ASSERT_EQUAL(weir_fid_getattr(fs, &k2f, &st), 0); /* (cached by FID) */
		CU_ASSERT_EQUAL(st.st_nlink, 1);
		CU_ASSERT_EQUAL(
			weir_linkat(fs, NULL, "/pc/lnk", NULL, "/pc/sub/hard", AT_SYMLINK_FOLLOW), 0);
		CU_ASSERT_EQUAL(weir_fid_getattr(fs, &k2f, &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 2);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/k2", &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 2);
		CU_ASSERT_EQUAL(weir_lstat(fs, "/pc/sub/hard", &st), 0);
		CU_ASSERT(S_ISREG(st.st_mode));

		/* relative to a directory handle (weir_unlinkat) */
		weir_file_t *dh = NULL;
		CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/", O_RDONLY | O_DIRECTORY, 0, &dh), 0);
		CU_ASSERT_EQUAL(weir_unlinkat(fs, dh, "pc/sub/hard", 0), 0);
		CU_ASSERT_EQUAL(weir_close(dh), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/sub/hard", &st), -ENOENT);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/k2", &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 1);
		CU_ASSERT_EQUAL(weir_unlink(fs, "/pc/lnk"), 0);

		/* unlink of a name this mount never cached (another mount's link
		 * of k2): the reply names the object, whose attributes (its link
		 * count) go; the other cached paths stay */
		CU_ASSERT_EQUAL(weir_link(b, "/pc/k2", "/pc/hard2"), 0);
		all_hit(fs, keep, 4); /* (b's link called back the directory: again) */
		CU_ASSERT_EQUAL(weir_fid_getattr(fs, &k2f, &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 2);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);
		CU_ASSERT_EQUAL(weir_unlink(fs, "/pc/hard2"), 0);
		CU_ASSERT_EQUAL(weir_stat(b, "/pc/hard2", &st), -ENOENT);
		CU_ASSERT_EQUAL(weir_fid_getattr(fs, &k2f, &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 1);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 2), 2);
		CU_ASSERT_EQUAL(pstat(fs, "/pc/k3", &st, &hit), 3);
		CU_ASSERT_TRUE(hit);

		/* unlink and rmdir by a path the cache does not resolve (another
		 * mount's directory, never looked up here): the reply names the
		 * directory and the object; the rest stays cached */
		CU_ASSERT_EQUAL(weir_mkdir(b, "/pc/bdir", 0755), 0);
		CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/bdir/f", "z", 1), 0);
		CU_ASSERT_EQUAL(weir_mkdir(b, "/pc/bdir/sub", 0755), 0);
		all_hit(fs, keep, 4); /* (b's mkdir called back the directory: again) */
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);
		CU_ASSERT_EQUAL(weir_unlink(fs, "/pc/bdir/f"), 0);
		CU_ASSERT_EQUAL(weir_rmdir(fs, "/pc/bdir/sub/"), 0);
		CU_ASSERT_EQUAL(all_hit(fs, keep, 4), 4);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/bdir/f", &st), -ENOENT);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/bdir/sub", &st), -ENOENT);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/bdir", &st), 0);
		CU_ASSERT_EQUAL(st.st_nlink, 2); /* its subdirectory's ".." went */
		CU_ASSERT_EQUAL(weir_rmdir(fs, "/pc/bdir"), 0);

		/* and b's changes are seen by the caching mount */
		CU_ASSERT_EQUAL(weir_chmod(b, "/pc/k1", 0640), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, "/pc/k1", &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);

		/* back as they were, for the other mount */
		CU_ASSERT_EQUAL(weir_chmod(b, "/pc/k0", 0644), 0);
		CU_ASSERT_EQUAL(weir_chmod(b, "/pc/k1", 0644), 0);
		CU_ASSERT_EQUAL(weir_unlink(b, "/pc/new"), 0);
		CU_ASSERT_EQUAL(weir_rmdir(b, "/pc/sub"), 0);
		CU_ASSERT_EQUAL(weir_unlink(b, "/pc/z"), 0);
		CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/x", "12345", 5), 0);
		CU_ASSERT_EQUAL_FATAL(th_put(b, "/pc/y", "1234567", 7), 0);
	}
	weir_umount(c);
}

/*
 * The path calls of a plain libweir mount (no wmo_md_cache): weir_stat of
 * "/pw/sub/f" walks the MDS once, then the cache (each directory leased
 * and known searchable by the caller's credentials). Another caller's
 * credentials are not served what the first was allowed; a symlink is
 * followed by the MDS. Then b changes what the walk went through (chmod
 * of the directory, rename over the file, truncate, unlink, rename and
 * rmdir+mkdir of the directory): c's next call sees each.
 */
static void test_mdcache_path_walk_cached_per_credentials(void)
{
	weir_fs_t *c = mount_one("mdl-c", false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	poll_seen(c);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(b, "/pw", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(b, "/pw/sub", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(b, "/pw/sub/f", "12345", 5), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(b, "/pw/sub/g", "123456789", 9), 0);
	CU_ASSERT_EQUAL_FATAL(weir_symlink(b, "sub/f", "/pw/ln"), 0);
	struct stat st;
	int hit;

	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 5);
	CU_ASSERT_FALSE(hit); /* cold: one LOOKUP */
	struct weir_md_stats s0 = stats(c);
	for (int i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(weir_stat(c, "/pw/sub/f", &st), 0);
	CU_ASSERT_EQUAL(weir_lstat(c, "pw//sub/f", &st), 0);
	struct weir_md_stats s1 = stats(c);
	CU_ASSERT_EQUAL(s1.wms_hits - s0.wms_hits, 101);
	CU_ASSERT_EQUAL(s1.wms_misses, s0.wms_misses);
	/* a symlink on the way: the MDS follows it, every time */
	CU_ASSERT_EQUAL(pstat(c, "/pw/ln", &st, &hit), 5);
	CU_ASSERT_EQUAL(pstat(c, "/pw/ln", &st, &hit), 5);
	CU_ASSERT_FALSE(hit);
	CU_ASSERT_EQUAL(weir_lstat(c, "/pw/ln", &st), 0);
	CU_ASSERT(S_ISLNK(st.st_mode));

	/* another user: its own walk first, then cached for it too (the
	 * credentials apply to the thread's calls on every mount: b's calls
	 * below go as root again) */
	struct weir_cred u1 = { .cr_uid = 1000, .cr_gid = 1000 };
	struct weir_cred u2 = { .cr_uid = 2000, .cr_gid = 2000 };
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pw/sub/f", &hit), 5);
	CU_ASSERT_FALSE(hit);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pw/sub/f", &hit), 5);
	CU_ASSERT_TRUE(hit);
	CU_ASSERT_EQUAL(pstat_as(c, &u2, "/pw/sub/f", &hit), 5);
	CU_ASSERT_FALSE(hit);
	CU_ASSERT_EQUAL(pstat_as(c, &u2, "/pw/sub/f", &hit), 5);
	CU_ASSERT_TRUE(hit);

	/* chmod 0700 of the directory by b: the users may no longer search it, root still */
	CU_ASSERT_EQUAL(weir_chmod(b, "/pw/sub", 0700), 0);
	CU_ASSERT_EQUAL(pstat_as(c, &u2, "/pw/sub/f", &hit), -EACCES);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pw/sub/f", &hit), -EACCES);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 5);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 5);
	CU_ASSERT_TRUE(hit);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pw/sub/f", &hit), -EACCES); /* root's walk is not u1's */
	CU_ASSERT_EQUAL(weir_chmod(b, "/pw/sub", 0755), 0);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pw/sub/f", &hit), 5);

	/* rename over, truncate, unlink by b */
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 5);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 5);
	CU_ASSERT_TRUE(hit);
	ino_t ino_f = st.st_ino;
	CU_ASSERT_EQUAL(weir_rename(b, "/pw/sub/g", "/pw/sub/f"), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 9);
	CU_ASSERT(st.st_ino != ino_f);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 9);
	CU_ASSERT_EQUAL(weir_truncate(b, "/pw/sub/f", 3), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 3);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), 3);
	CU_ASSERT_EQUAL(weir_unlink(b, "/pw/sub/f"), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/f", &st, &hit), -ENOENT);

	/* the directory on the way renamed, then removed and made again */
	CU_ASSERT_EQUAL(th_put(b, "/pw/sub/h", "1", 1), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/h", &st, &hit), 1);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/h", &st, &hit), 1);
	CU_ASSERT_TRUE(hit);
	CU_ASSERT_EQUAL(weir_rename(b, "/pw/sub", "/pw/sub2"), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub/h", &st, &hit), -ENOENT);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub2/h", &st, &hit), 1);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub2/h", &st, &hit), 1);
	CU_ASSERT_EQUAL(weir_unlink(b, "/pw/sub2/h"), 0);
	CU_ASSERT_EQUAL(weir_rmdir(b, "/pw/sub2"), 0);
	CU_ASSERT_EQUAL(weir_mkdir(b, "/pw/sub2", 0755), 0);
	CU_ASSERT_EQUAL(th_put(b, "/pw/sub2/h", "1234", 4), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub2/h", &st, &hit), 4);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub2/h", &st, &hit), 4);
	CU_ASSERT_TRUE(hit);
	/* c's own change through a path */
	CU_ASSERT_EQUAL(weir_unlink(c, "/pw/sub2/h"), 0);
	CU_ASSERT_EQUAL(pstat(c, "/pw/sub2/h", &st, &hit), -ENOENT);

	/* c's own chmod of a directory through a symlink's name: the MDS
	 * does not call c back, c must forget the directory it changed */
	CU_ASSERT_EQUAL(weir_mkdir(b, "/pwd", 0755), 0);
	CU_ASSERT_EQUAL(th_put(b, "/pwd/f", "12", 2), 0);
	CU_ASSERT_EQUAL(weir_symlink(b, "pwd", "/pwlnk"), 0);
	CU_ASSERT_EQUAL(weir_lstat(c, "/pwlnk", &st), 0);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pwd/f", &hit), 2);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pwd/f", &hit), 2);
	CU_ASSERT_TRUE(hit);
	CU_ASSERT_EQUAL(weir_chmod(c, "pwlnk", 0700), 0);
	CU_ASSERT_EQUAL(pstat_as(c, &u1, "/pwd/f", &hit), -EACCES);
	CU_ASSERT_EQUAL(weir_stat(c, "/pwd", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0700);
	weir_umount(c);
}

static const struct th_test tests[] = {
	TH_TEST(test_mdcache_attributes_cached_and_called_back),
	TH_TEST(test_mdcache_names_cached_and_called_back),
	TH_TEST(test_mdcache_own_changes_cached_under_lease),
	TH_TEST(test_mdcache_readdirplus_seeds_cache),
	TH_TEST(test_mdcache_own_changes_keep_parent_attributes),
	TH_TEST(test_mdcache_own_mkdir_known_empty),
	TH_TEST(test_mdcache_listing_from_cache),
	TH_TEST(test_mdcache_fdopendir_dotdot_from_the_open),
	TH_TEST(test_mdcache_close_leases_the_file),
	TH_TEST(test_mdcache_creator_leases_new_file),
	TH_TEST(test_mdcache_model_every_change_seen_at_the_next_call),
	TH_TEST(test_mdcache_path_walk_cached_per_credentials),
	TH_TEST(test_mdcache_path_changes_forget_their_name_only),
	TH_TEST(test_mdcache_silent_holder_evicted_then_change_completes),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("mdcache", suite_init, suite_clean, tests);
}
