/*
 * tests/unit/mds/test_pdirops.c - namespace operations from many threads at
 * once on one MDT (mds/ns_lock.c: name and inode locks instead of one
 * MDT-wide lock), on a real RocksDB.
 *
 * Threads race creates (O_EXCL and not), unlinks, mkdirs, rmdirs, creates
 * inside directories being removed, renames (NOREPLACE in one directory,
 * of files across directories, of directories across parents; over files;
 * of directories over directories in which files are being made;
 * exchanges),
 * links, chmods, xattrs, symlinks, readlinks and lookups over a few names
 * of shared directories. Each thread counts what
 * succeeded. Afterwards:
 *  - the names left in each directory are exactly the creates that
 *    succeeded minus the removals that succeeded (two creates of one name
 *    that both succeed, or a lost unlink, break the count);
 *  - a consistency check of the whole MDT read from RocksDB (ns_check):
 *    every dentry's directory and object exist and agree on the type, a
 *    file's link count is its number of names, a directory's is 2 + its
 *    subdirectories (a lost update of the parent's record breaks it), a
 *    directory has one name and its parent hint is that name's directory,
 *    no inode is left without a name, and no xattr, symlink target or
 *    object map outlives its inode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "mds/mds_int.h"
#include "ns_fixture.h"

#define NFILES 48   /* names /d/f0.. */
#define NSUBS 6     /* directories /d/s0.. */
#define NINNER 4    /* names /d/sK/g0.. */
#define NTHREADS 6
#define NEMPTY 4    /* directories /d/eN, replaced by renames while files come and go in them */

struct counts {
	atomic_long c_d;                /* entries of /d: files and directories */
	atomic_long c_d2;               /* directories moved to /d2 */
	atomic_long c_sub[NSUBS];       /* entries of /d/sK */
	atomic_long c_ops[20];          /* successes per kind, for the log */
	atomic_long c_unexpected;       /* an errno no race explains */
};
static struct counts cnt;
static char top_d[32], top_d2[32]; /* the race's directories */

static void unexpected(const char *what, const char *path, int rc)
{
	fprintf(stderr, "pdirops: %s %s: unexpected rc %d\n", what, path, rc);
	atomic_fetch_add(&cnt.c_unexpected, 1);
}

static int open_close(const char *path, uint32_t flags, bool *created)
{
	struct mds_inode in;
	int rc = mds_ns_open_file(ns, NULL, NULL, path, MDS_OF_WRITE | flags, 0644, NULL,
				  fx_choose, NULL, &in, created);
	if (!rc)
		rc = mds_ns_close_file(ns, &in.in_fid, true, NULL);
	return rc;
}

struct worker {
	pthread_t w_thread;
	unsigned w_seed;
	int w_ops;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char path[64], path2[64];
	for (int i = 0; i < w->w_ops; i++) {
		int op = rand_r(&w->w_seed) % 120;
		int e = rand_r(&w->w_seed) % NEMPTY, e2 = rand_r(&w->w_seed) % NEMPTY;
		int f = rand_r(&w->w_seed) % NFILES;
		int k = rand_r(&w->w_seed) % NSUBS;
		int g = rand_r(&w->w_seed) % NINNER;
		bool created = false;
		int rc;
		if (op < 22) { /* exclusive create */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = open_close(path, MDS_OF_CREAT | MDS_OF_EXCL, &created);
			if (!rc && created) {
				atomic_fetch_add(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[0], 1);
			} else if (rc != -EEXIST && rc != -EISDIR) {
				unexpected("create excl", path, rc);
			}
		} else if (op < 34) { /* create or open */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = open_close(path, MDS_OF_CREAT, &created);
			if (!rc && created) {
				atomic_fetch_add(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[1], 1);
			} else if (rc) {
				unexpected("create", path, rc);
			}
		} else if (op < 56) { /* unlink */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = fx_unlink(NULL, path);
			if (!rc) {
				atomic_fetch_sub(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[2], 1);
			} else if (rc != -ENOENT) {
				unexpected("unlink", path, rc);
			}
		} else if (op < 64) { /* mkdir */
			snprintf(path, sizeof(path), "%s/s%d", top_d, k);
			rc = fx_mkdir(NULL, path, 0755);
			if (!rc) {
				atomic_fetch_add(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[3], 1);
			} else if (rc != -EEXIST) {
				unexpected("mkdir", path, rc);
			}
		} else if (op < 70) { /* rmdir */
			snprintf(path, sizeof(path), "%s/s%d", top_d, k);
			rc = fx_rmdir(NULL, path);
			if (!rc) {
				atomic_fetch_sub(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[4], 1);
			} else if (rc != -ENOENT && rc != -ENOTEMPTY) {
				unexpected("rmdir", path, rc);
			}
		} else if (op < 80) { /* create inside a directory that comes and goes */
			snprintf(path, sizeof(path), "%s/s%d/g%d", top_d, k, g);
			rc = open_close(path, MDS_OF_CREAT | MDS_OF_EXCL, &created);
			if (!rc && created) {
				atomic_fetch_add(&cnt.c_sub[k], 1);
				atomic_fetch_add(&cnt.c_ops[5], 1);
			} else if (rc != -EEXIST && rc != -ENOENT) {
				unexpected("create inner", path, rc);
			}
		} else if (op < 88) { /* unlink inside */
			snprintf(path, sizeof(path), "%s/s%d/g%d", top_d, k, g);
			rc = fx_unlink(NULL, path);
			if (!rc) {
				atomic_fetch_sub(&cnt.c_sub[k], 1);
				atomic_fetch_add(&cnt.c_ops[6], 1);
			} else if (rc != -ENOENT) {
				unexpected("unlink inner", path, rc);
			}
		} else if (op < 92) { /* rename to a free name: the count stays */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			snprintf(path2, sizeof(path2), "%s/f%d", top_d, (f + 1 + g) % NFILES);
			rc = mds_ns_rename(ns, NULL, NULL, path, NULL, path2, MDS_RENAME_NOREPLACE);
			if (!rc)
				atomic_fetch_add(&cnt.c_ops[7], 1);
			else if (rc != -ENOENT && rc != -EEXIST)
				unexpected("rename", path, rc);
		} else if (op < 93) { /* chmod while it may be unlinked */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			struct mds_setattr sa = { .sa_valid = MDS_SA_MODE, .sa_mode = 0600 };
			struct mds_inode in;
			rc = mds_ns_setattr(ns, NULL, NULL, path, MDS_AT_NOFOLLOW, &sa, &in);
			if (rc && rc != -ENOENT)
				unexpected("chmod", path, rc);
		} else if (op < 95) { /* an xattr while it may be unlinked: none outlives it */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = mds_ns_setxattr(ns, NULL, NULL, path, MDS_AT_NOFOLLOW, "trusted.k", "v", 1,
					     0);
			if (!rc)
				atomic_fetch_add(&cnt.c_ops[9], 1);
			else if (rc != -ENOENT)
				unexpected("setxattr", path, rc);
		} else if (op < 96) { /* a symlink among the files */
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			struct mds_inode in;
			rc = mds_ns_symlink(ns, NULL, NULL, path, "target", &in);
			if (!rc) {
				atomic_fetch_add(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[8], 1);
			} else if (rc != -EEXIST) {
				unexpected("symlink", path, rc);
			}
		} else if (op < 98) { /* readlink while it may be unlinked */
			char buf[64];
			size_t len;
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = mds_ns_readlink(ns, NULL, NULL, path, buf, sizeof(buf), &len);
			if (rc && rc != -ENOENT && rc != -EINVAL)
				unexpected("readlink", path, rc);
			rc = mds_ns_getxattr(ns, NULL, NULL, path, MDS_AT_NOFOLLOW, "trusted.k", buf,
					     sizeof(buf), &len);
			if (rc && rc != -ENOENT && rc != -ENODATA)
				unexpected("getxattr", path, rc);
		} else if (op >= 100 && op < 104) { /* a file to another directory */
			int k2 = rand_r(&w->w_seed) % NSUBS, g2 = rand_r(&w->w_seed) % NINNER;
			snprintf(path, sizeof(path), "%s/s%d/g%d", top_d, k, g);
			snprintf(path2, sizeof(path2), "%s/s%d/g%d", top_d, k2, g2);
			rc = mds_ns_rename(ns, NULL, NULL, path, NULL, path2, MDS_RENAME_NOREPLACE);
			if (!rc) {
				atomic_fetch_sub(&cnt.c_sub[k], 1);
				atomic_fetch_add(&cnt.c_sub[k2], 1);
				atomic_fetch_add(&cnt.c_ops[10], 1);
			} else if (rc != -ENOENT && rc != -EEXIST) {
				unexpected("rename across", path, rc);
			}
		} else if (op >= 104 && op < 107) { /* a directory to /d2 and back (the rename lock) */
			bool out = g & 1;
			snprintf(path, sizeof(path), "%s/s%d", out ? top_d : top_d2, k);
			snprintf(path2, sizeof(path2), "%s/s%d", out ? top_d2 : top_d, k);
			rc = mds_ns_rename(ns, NULL, NULL, path, NULL, path2, MDS_RENAME_NOREPLACE);
			if (!rc) {
				atomic_fetch_add(&cnt.c_d, out ? -1 : 1);
				atomic_fetch_add(&cnt.c_d2, out ? 1 : -1);
				atomic_fetch_add(&cnt.c_ops[11], 1);
			} else if (rc != -ENOENT && rc != -EEXIST) {
				unexpected("rename dir", path, rc);
			}
		} else if (op >= 110 && op < 113) { /* rename over a file */
			struct weir_fid moved, victim;
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			snprintf(path2, sizeof(path2), "%s/f%d", top_d, (f + 1 + g) % NFILES);
			rc = mds_ns_rename_fids(ns, NULL, NULL, path, NULL, path2, 0, &moved, &victim);
			if (!rc) {
				if (victim.fid_oid)
					atomic_fetch_sub(&cnt.c_d, 1);
				atomic_fetch_add(&cnt.c_ops[13], 1);
			} else if (rc != -ENOENT) {
				unexpected("rename over", path, rc);
			}
		} else if (op >= 113 && op < 116) { /* directories: made, replaced, removed */
			snprintf(path, sizeof(path), "%s/e%d", top_d, e);
			snprintf(path2, sizeof(path2), "%s/e%d", top_d, e2);
			if (op == 113) {
				rc = fx_mkdir(NULL, path, 0755);
				if (!rc)
					atomic_fetch_add(&cnt.c_d, 1);
				else if (rc != -EEXIST)
					unexpected("mkdir e", path, rc);
			} else if (op == 114) {
				struct weir_fid moved, victim;
				rc = mds_ns_rename_fids(ns, NULL, NULL, path, NULL, path2, 0, &moved,
							&victim);
				if (!rc) {
					if (victim.fid_oid)
						atomic_fetch_sub(&cnt.c_d, 1);
					atomic_fetch_add(&cnt.c_ops[14], 1);
				} else if (rc != -ENOENT && rc != -ENOTEMPTY) {
					unexpected("rename dir over", path, rc);
				}
			} else {
				rc = fx_rmdir(NULL, path);
				if (!rc)
					atomic_fetch_sub(&cnt.c_d, 1);
				else if (rc != -ENOENT && rc != -ENOTEMPTY)
					unexpected("rmdir e", path, rc);
			}
		} else if (op >= 116 && op < 118) { /* files in them, while they are replaced */
			snprintf(path, sizeof(path), "%s/e%d/x%d", top_d, e, g);
			if (op == 116) {
				rc = open_close(path, MDS_OF_CREAT | MDS_OF_EXCL, &created);
				if (!rc)
					atomic_fetch_add(&cnt.c_ops[15], 1);
				else if (rc != -EEXIST && rc != -ENOENT)
					unexpected("create in e", path, rc);
			} else {
				rc = fx_unlink(NULL, path);
				if (rc && rc != -ENOENT)
					unexpected("unlink in e", path, rc);
			}
		} else if (op >= 118 && op < 120) { /* exchanges: files with files, dirs with dirs */
			if (op == 118) {
				snprintf(path, sizeof(path), "%s/f%d", top_d, f);
				snprintf(path2, sizeof(path2), "%s/f%d", top_d, (f + 1 + g) % NFILES);
			} else {
				snprintf(path, sizeof(path), "%s/e%d", top_d, e);
				snprintf(path2, sizeof(path2), "%s/e%d", top_d, e2);
			}
			rc = mds_ns_rename(ns, NULL, NULL, path, NULL, path2, MDS_RENAME_EXCHANGE);
			if (!rc)
				atomic_fetch_add(&cnt.c_ops[16], 1);
			else if (rc != -ENOENT)
				unexpected("exchange", path, rc);
		} else if (op >= 107 && op < 110) { /* a second name, in a directory that comes and goes */
			struct mds_inode in;
			snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			snprintf(path2, sizeof(path2), "%s/s%d/g%d", top_d, k, g);
			rc = mds_ns_link(ns, NULL, NULL, path, NULL, path2, 0, &in);
			if (!rc) {
				atomic_fetch_add(&cnt.c_sub[k], 1);
				atomic_fetch_add(&cnt.c_ops[12], 1);
			} else if (rc != -ENOENT && rc != -EEXIST) {
				unexpected("link", path, rc);
			}
		} else { /* lookups while names come and go */
			struct mds_inode in;
			if (op == 98)
				snprintf(path, sizeof(path), "%s/s%d/g%d", top_d, k, g);
			else
				snprintf(path, sizeof(path), "%s/f%d", top_d, f);
			rc = mds_ns_lookup(ns, NULL, NULL, path, 0, &in);
			if (rc && rc != -ENOENT)
				unexpected("lookup", path, rc);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ the checker */

struct ck_ino {
	struct weir_fid ci_fid;
	uint32_t ci_mode;
	uint32_t ci_nlink;
	struct weir_fid ci_parent;
	uint32_t ci_refs;     /* dentries naming it */
	uint32_t ci_subdirs;  /* dentries in it naming directories */
	struct weir_fid ci_named_in;
};

static int ck_cmp(const void *a, const void *b)
{
	const struct weir_fid *x = a, *y = b;
	if (x->fid_seq != y->fid_seq)
		return x->fid_seq < y->fid_seq ? -1 : 1;
	return (x->fid_oid > y->fid_oid) - (x->fid_oid < y->fid_oid);
}

/*
 * Check the whole MDT as it is in RocksDB. \return the number of
 * inconsistencies (each printed).
 */
static int ns_check(struct mds_ns *n)
{
	size_t nr = 0, cap = 1024;
	struct ck_ino *inos = calloc(cap, sizeof(*inos));
	int bad = 0;
	CU_ASSERT_FATAL(inos != NULL);
	struct kv_iter *it = kv_iter_new(n->ns_kv, KV_CF_INODES);
	CU_ASSERT_FATAL(it != NULL);
	for (kv_iter_seek(it, "", 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		const uint8_t *v = kv_iter_val(it, &vl);
		struct weir_fid fid;
		struct mds_inode in;
		CU_ASSERT_FATAL(kl == WEIR_FID_BYTES);
		weir_fid_unpack_be(k, &fid);
		CU_ASSERT_FATAL(mds_inode_decode(&fid, v, vl, &in) == 0);
		if (nr == cap) {
			cap *= 2;
			inos = realloc(inos, cap * sizeof(*inos));
			CU_ASSERT_FATAL(inos != NULL);
		}
		memset(&inos[nr], 0, sizeof(inos[nr]));
		inos[nr].ci_fid = fid;
		inos[nr].ci_mode = in.in_mode;
		inos[nr].ci_nlink = in.in_nlink;
		inos[nr].ci_parent = in.in_parent;
		nr++;
	}
	kv_iter_free(it);
	qsort(inos, nr, sizeof(*inos), ck_cmp); /* (already in key order: FIDs big-endian) */

	it = kv_iter_new(n->ns_kv, KV_CF_DENTRIES);
	CU_ASSERT_FATAL(it != NULL);
	for (kv_iter_seek(it, "", 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		const uint8_t *v = kv_iter_val(it, &vl);
		struct weir_fid parent, child;
		uint8_t type;
		CU_ASSERT_FATAL(kl > 24);
		weir_fid_unpack_be(k, &parent);
		CU_ASSERT_FATAL(mds_dentry_decode(v, vl, &child, &type) == 0);
		int nl = (int)(kl - 24);
		const char *name = (const char *)k + 24;
		struct ck_ino *p = bsearch(&parent, inos, nr, sizeof(*inos), ck_cmp);
		struct ck_ino *c = bsearch(&child, inos, nr, sizeof(*inos), ck_cmp);
		if (!p || !S_ISDIR(p->ci_mode)) {
			fprintf(stderr, "ns_check: dentry '%.*s' in a missing directory\n", nl, name);
			bad++;
		}
		if (!c) {
			fprintf(stderr, "ns_check: dentry '%.*s' names a missing inode\n", nl, name);
			bad++;
			continue;
		}
		if (type != ns_mode_to_dt(c->ci_mode)) {
			fprintf(stderr, "ns_check: dentry '%.*s' type %u, inode mode %o\n", nl, name,
				type, c->ci_mode);
			bad++;
		}
		c->ci_refs++;
		c->ci_named_in = parent;
		if (p && S_ISDIR(c->ci_mode))
			p->ci_subdirs++;
	}
	kv_iter_free(it);

	/* xattrs, symlink targets, object maps: keyed by their inode's FID */
	it = kv_iter_new(n->ns_kv, KV_CF_XATTRS);
	CU_ASSERT_FATAL(it != NULL);
	for (kv_iter_seek(it, "", 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		struct weir_fid owner;
		CU_ASSERT_FATAL(kl > WEIR_FID_BYTES);
		weir_fid_unpack_be(k, &owner);
		if (!bsearch(&owner, inos, nr, sizeof(*inos), ck_cmp)) {
			fprintf(stderr, "ns_check: a record of missing inode %#llx in the xattrs\n",
				(unsigned long long)owner.fid_oid);
			bad++;
		}
	}
	kv_iter_free(it);

	struct weir_fid root = weir_fid_root();
	for (size_t i = 0; i < nr; i++) {
		struct ck_ino *c = &inos[i];
		bool is_root = weir_fid_eq(&c->ci_fid, &root);
		if (S_ISDIR(c->ci_mode)) {
			if (c->ci_nlink != 2 + c->ci_subdirs) {
				fprintf(stderr, "ns_check: directory %#llx:%#llx nlink %u, %u subdirs\n",
					(unsigned long long)c->ci_fid.fid_seq,
					(unsigned long long)c->ci_fid.fid_oid, c->ci_nlink,
					c->ci_subdirs);
				bad++;
			}
			if (c->ci_refs != (is_root ? 0u : 1u)) {
				fprintf(stderr, "ns_check: directory %#llx named %u times\n",
					(unsigned long long)c->ci_fid.fid_oid, c->ci_refs);
				bad++;
			}
			if (!is_root && c->ci_refs &&
			    !weir_fid_eq(&c->ci_parent, &c->ci_named_in)) {
				fprintf(stderr, "ns_check: directory %#llx: parent hint is not the"
						" directory naming it\n",
					(unsigned long long)c->ci_fid.fid_oid);
				bad++;
			}
		} else if (c->ci_nlink != c->ci_refs || !c->ci_refs) {
			fprintf(stderr, "ns_check: inode %#llx mode %o nlink %u, %u names\n",
				(unsigned long long)c->ci_fid.fid_oid, c->ci_mode, c->ci_nlink,
				c->ci_refs);
			bad++;
		}
	}
	free(inos);
	return bad;
}

static long count_entries(const char *path)
{
	struct mds_inode d;
	if (mds_ns_lookup(ns, NULL, NULL, path, 0, &d))
		return -1;
	struct mds_dirent *ents = calloc(1024 + 16, sizeof(*ents));
	uint64_t cookie = 0;
	long total = 0;
	bool eof = false;
	while (!eof) {
		uint32_t got = 0;
		CU_ASSERT_FATAL(mds_ns_readdir(ns, NULL, &d.in_fid, cookie, 1024, ents, 1024 + 16,
					       &got, &eof) == 0);
		total += got;
		if (got)
			cookie = ents[got - 1].de_cookie;
	}
	free(ents);
	return total;
}

/* ------------------------------------------------------------ tests */

static void test_checker_finds_planted_damage(void)
{
	/* the checker must be able to fail: a dentry with no inode, a wrong
	 * link count, an inode without a name */
	CU_ASSERT_EQUAL_FATAL(fx_mkdir(NULL, "/ck", 0755), 0);
	CU_ASSERT_EQUAL(ns_check(ns), 0);
	struct mds_inode d, f;
	CU_ASSERT_EQUAL_FATAL(mds_ns_lookup(ns, NULL, NULL, "/ck", 0, &d), 0);
	CU_ASSERT_EQUAL_FATAL(fx_creat(NULL, "/ck/a", 0644, &f), 0);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	f.in_nlink = 2; /* one name */
	ns_inode_put(b, &f);
	CU_ASSERT_EQUAL_FATAL(kv_batch_commit(ns->ns_kv, b), 0);
	kv_batch_free(b);
	CU_ASSERT_EQUAL(ns_check(ns), 1);
	b = kv_batch_new(ns->ns_kv);
	ns_dentry_del(b, &d.in_fid, "a", 1); /* now no name at all */
	struct weir_fid ghost = { f.in_fid.fid_seq, f.in_fid.fid_oid + 100000 };
	ns_dentry_put(b, &d.in_fid, "ghost", 5, &ghost, DT_REG); /* and a dangling one */
	CU_ASSERT_EQUAL_FATAL(kv_batch_commit(ns->ns_kv, b), 0);
	kv_batch_free(b);
	CU_ASSERT_EQUAL(ns_check(ns), 2);
	/* repair by hand, for the next test */
	b = kv_batch_new(ns->ns_kv);
	ns_dentry_del(b, &d.in_fid, "ghost", 5);
	ns_inode_del(b, &f.in_fid);
	CU_ASSERT_EQUAL_FATAL(kv_batch_commit(ns->ns_kv, b), 0);
	kv_batch_free(b);
	ns_inode_uncache(ns, &d.in_fid);
	CU_ASSERT_EQUAL(ns_check(ns), 0);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/ck"), 0);
}

/* The race in \a top (a fresh directory), then the counts and the checker. */
static void race(const char *top)
{
	const char *d = top_d, *d2 = top_d2;
	snprintf(top_d, sizeof(top_d), "%s", top);
	snprintf(top_d2, sizeof(top_d2), "%s2", top);
	memset(&cnt, 0, sizeof(cnt));
	CU_ASSERT_EQUAL_FATAL(fx_mkdir(NULL, d, 0755), 0);
	CU_ASSERT_EQUAL_FATAL(fx_mkdir(NULL, d2, 0755), 0);
	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i].w_seed = 0x5eed + 7919 * (unsigned)i;
		w[i].w_ops = 4000;
		CU_ASSERT_FATAL(pthread_create(&w[i].w_thread, NULL, worker_main, &w[i]) == 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].w_thread, NULL);
	fprintf(stderr,
		"pdirops: %d threads: creates %ld+%ld unlinks %ld mkdirs %ld rmdirs %ld inner"
		" creates %ld unlinks %ld renames %ld symlinks %ld setxattrs %ld renames across %ld"
		" directory moves %ld links %ld renames over %ld dirs over %ld creates in them %ld"
		" exchanges %ld\n",
		NTHREADS, atomic_load(&cnt.c_ops[0]), atomic_load(&cnt.c_ops[1]),
		atomic_load(&cnt.c_ops[2]), atomic_load(&cnt.c_ops[3]), atomic_load(&cnt.c_ops[4]),
		atomic_load(&cnt.c_ops[5]), atomic_load(&cnt.c_ops[6]), atomic_load(&cnt.c_ops[7]),
		atomic_load(&cnt.c_ops[8]), atomic_load(&cnt.c_ops[9]), atomic_load(&cnt.c_ops[10]),
		atomic_load(&cnt.c_ops[11]), atomic_load(&cnt.c_ops[12]), atomic_load(&cnt.c_ops[13]),
		atomic_load(&cnt.c_ops[14]), atomic_load(&cnt.c_ops[15]), atomic_load(&cnt.c_ops[16]));
	CU_ASSERT_EQUAL(atomic_load(&cnt.c_unexpected), 0);
	/* the races happened: each kind succeeded many times */
	for (int i = 0; i < 17; i++)
		CU_ASSERT(atomic_load(&cnt.c_ops[i]) > (i < 11 ? 10 : 0)); /* each kind happened */
	CU_ASSERT_EQUAL(count_entries(d), atomic_load(&cnt.c_d));
	CU_ASSERT_EQUAL(count_entries(d2), atomic_load(&cnt.c_d2));
	for (int k = 0; k < NSUBS; k++) {
		/* what went in under /d/sK, wherever that directory is now: /d,
		 * /d2 (moved), both (one made since), or gone (removed empty) */
		char path[64];
		long total = 0;
		snprintf(path, sizeof(path), "%s/s%d", d, k);
		long n = count_entries(path);
		total += n > 0 ? n : 0;
		snprintf(path, sizeof(path), "%s/s%d", d2, k);
		n = count_entries(path);
		total += n > 0 ? n : 0;
		CU_ASSERT_EQUAL(total, atomic_load(&cnt.c_sub[k]));
	}
	CU_ASSERT_EQUAL(ns_check(ns), 0);
}

static void test_racing_threads_leave_a_consistent_namespace(void)
{
	race("/d");
	/* and the same after a restart of the MDT (what is on disk) */
	fx_reopen();
	CU_ASSERT_EQUAL(ns_check(ns), 0);
	CU_ASSERT_EQUAL(count_entries("/d"), atomic_load(&cnt.c_d));
}

/*
 * An open with O_CREAT of a name that is a symlink being removed: the walk
 * (no lock) read the symlink's name, then its target record was gone, and
 * the open answered ENOENT (test_pdirops's race, once in CI), which POSIX
 * does not allow an O_CREAT in an existing directory. The walk now reads the
 * name again: the open creates it, or follows a new symlink.
 */
static atomic_bool vs_stop;

static void *vanishing_symlinks(void *arg)
{
	(void)arg;
	struct mds_inode in;
	while (!atomic_load(&vs_stop)) {
		mds_ns_symlink(ns, NULL, NULL, "/vs/l", "target", &in);
		fx_unlink(NULL, "/vs/l");
		fx_unlink(NULL, "/vs/target");
	}
	return NULL;
}

static void test_create_over_a_vanishing_symlink(void)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(mds_ns_mkdir(ns, NULL, NULL, "/vs", 0755, &in) == 0);
	pthread_t t;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, vanishing_symlinks, NULL) == 0);
	long n = 0, enoent = 0, other = 0;
	for (; n < 60000; n++) {
		bool created;
		int rc = open_close("/vs/l", MDS_OF_CREAT, &created);
		if (rc == -ENOENT)
			enoent++;
		else if (rc && rc != -EEXIST) /* (a symlink made between the name and the create) */
			other++;
		if (!rc && created && n % 2)
			fx_unlink(NULL, "/vs/l");
	}
	atomic_store(&vs_stop, true);
	pthread_join(t, NULL);
	if (enoent || other)
		fprintf(stderr, "\n  %ld of %ld creates answered ENOENT, %ld another error\n", enoent,
			n, other);
	CU_ASSERT_EQUAL(enoent, 0);
	CU_ASSERT_EQUAL(other, 0);
}

static void test_pdirops_off_runs_every_change_alone(void)
{
	/* weir-mds --pdirops 0: the fallback, and the benchmark's reference */
	mds_ns_close(ns);
	struct mds_ns_conf c = { .nc_path = fx_dir, .nc_pdirops_off = true };
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	race("/x");
	fx_reopen();
	CU_ASSERT_EQUAL(ns_check(ns), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_checker_finds_planted_damage),
		TH_TEST(test_racing_threads_leave_a_consistent_namespace),
		TH_TEST(test_pdirops_off_runs_every_change_alone),
		TH_TEST(test_create_over_a_vanishing_symlink),
		TH_TEST_END,
	};
	return th_cunit_run("mds_pdirops", fx_init, fx_fini, tests);
}
