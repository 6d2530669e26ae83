/*
 * tests/unit/mds/test_kv.c - mds/kv.c's read cache on a real RocksDB: a
 * commit drops the keys it wrote, a value read before a commit is not
 * cached after it, batches of many keys; and through the namespace, walks
 * see at once a directory's new mode, a rename, a rmdir and mkdir of the
 * same name (the cached records of directories and their dentries).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ns_fixture.h"
#include "mds/mds_int.h"

static void key_of(int i, uint8_t key[16])
{
	memset(key, 0, 16);
	key[0] = 0xee; /* far from the namespace's FIDs */
	key[15] = (uint8_t)i;
	key[14] = (uint8_t)(i >> 8);
}

static int put_one(int i, const char *val)
{
	uint8_t key[16];
	key_of(i, key);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	kv_batch_put(b, KV_CF_INODES, key, 16, val, strlen(val));
	int rc = kv_batch_commit(ns->ns_kv, b);
	kv_batch_free(b);
	return rc;
}

static void test_kv_cache_commit_drops_written_key(void)
{
	uint8_t key[16], v[64];
	uint64_t gen;
	key_of(1, key);
	CU_ASSERT_FATAL(put_one(1, "old") == 0);
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen), -ENOENT);
	kv_cache_put(ns->ns_kv, KV_CF_INODES, key, 16, "old", 3, gen);
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen), 3);
	CU_ASSERT_EQUAL(memcmp(v, "old", 3), 0);
	CU_ASSERT_FATAL(put_one(1, "newer") == 0);
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen), -ENOENT);
	CU_ASSERT_EQUAL(kv_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v)), 5);
	CU_ASSERT_EQUAL(memcmp(v, "newer", 5), 0);
}

static void test_kv_cache_put_after_a_commit_is_refused(void)
{
	uint8_t key[16], v[64];
	uint64_t gen;
	key_of(2, key);
	CU_ASSERT_FATAL(put_one(2, "v1") == 0);
	/* a reader takes the generation and reads v1 ... */
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen), -ENOENT);
	CU_ASSERT_EQUAL(kv_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v)), 2);
	/* ... a writer commits v2 ... */
	CU_ASSERT_FATAL(put_one(2, "v2") == 0);
	/* ... the reader's v1 must not be cached */
	kv_cache_put(ns->ns_kv, KV_CF_INODES, key, 16, v, 2, gen);
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen), -ENOENT);
}

static void test_kv_cache_batch_of_many_keys_drops_all(void)
{
	uint8_t key[16], v[64];
	uint64_t gen;
	for (int i = 100; i < 300; i++) {
		CU_ASSERT_FATAL(put_one(i, "a") == 0);
		key_of(i, key);
		kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen);
		kv_cache_put(ns->ns_kv, KV_CF_INODES, key, 16, "a", 1, gen);
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	CU_ASSERT_FATAL(b != NULL);
	for (int i = 100; i < 300; i++) {
		key_of(i, key);
		kv_batch_put(b, KV_CF_INODES, key, 16, "bb", 2);
	}
	CU_ASSERT_EQUAL(kv_batch_commit(ns->ns_kv, b), 0);
	kv_batch_free(b);
	for (int i = 100; i < 300; i++) {
		key_of(i, key);
		ssize_t n = kv_cache_get(ns->ns_kv, KV_CF_INODES, key, 16, v, sizeof(v), &gen);
		CU_ASSERT(n == -ENOENT || (n == 2 && !memcmp(v, "bb", 2)));
	}
	/* other column families are never cached */
	kv_cache_put(ns->ns_kv, KV_CF_DEFAULT, key, 16, "x", 1, gen);
	CU_ASSERT_EQUAL(kv_cache_get(ns->ns_kv, KV_CF_DEFAULT, key, 16, v, sizeof(v), &gen), -ENOENT);
}

static void test_walk_sees_directory_mode_change_at_once(void)
{
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/d", 0755) == 0);
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/d/e", 0755) == 0);
	CU_ASSERT_FATAL(fx_creat(NULL, "/d/e/f", 0644, NULL) == 0);
	for (int i = 0; i < 3; i++) /* walks that fill the cache */
		CU_ASSERT_EQUAL(fx_stat(&U1, "/d/e/f", NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/d", 0700), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/d/e/f", NULL), -EACCES);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/d", 0711), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/d/e/f", NULL), 0);
	CU_ASSERT_EQUAL(fx_chmod(NULL, "/d/e", 0700), 0);
	CU_ASSERT_EQUAL(fx_stat(&U1, "/d/e/f", NULL), -EACCES);
}

static void test_walk_sees_rename_and_recreated_directory(void)
{
	struct mds_inode a, b;
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/r", 0755) == 0);
	CU_ASSERT_FATAL(fx_mkdir(NULL, "/r/a", 0755) == 0);
	CU_ASSERT_FATAL(fx_creat(NULL, "/r/a/x", 0644, NULL) == 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a/x", NULL), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a", &a), 0);
	CU_ASSERT_EQUAL(fx_rename(NULL, "/r/a", "/r/b", 0), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a/x", NULL), -ENOENT);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/b/x", NULL), 0);
	/* ".." of the moved directory, and the old name made anew */
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/b/..", &b), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/r/a", 0700), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a", &b), 0);
	CU_ASSERT(!weir_fid_eq(&a.in_fid, &b.in_fid));
	CU_ASSERT_EQUAL(b.in_mode & 07777, 0700);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a/x", NULL), -ENOENT);
	CU_ASSERT_EQUAL(fx_rmdir(NULL, "/r/a"), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r/a", NULL), -ENOENT);
	/* a directory's nlink and times as a stat returns them follow its changes */
	struct mds_inode r0, r1;
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r", &r0), 0);
	CU_ASSERT_EQUAL(fx_mkdir(NULL, "/r/c", 0755), 0);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/r", &r1), 0);
	CU_ASSERT_EQUAL(r1.in_nlink, r0.in_nlink + 1);
	CU_ASSERT(r1.in_mtime_ns >= r0.in_mtime_ns);
}


/* The inode family (hashed memtable, prefix extractor) still scans whole:
 * in the memtable and after a reopen (SST files). */
static void test_kv_inode_family_scans_every_key(void)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 100; i++)
			CU_ASSERT_EQUAL(put_one(300 + i, "scan"), 0);
		struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_INODES);
		CU_ASSERT_PTR_NOT_NULL_FATAL(it);
		uint8_t from[16];
		key_of(300, from);
		int n = 0;
		for (kv_iter_seek(it, from, 16); kv_iter_valid(it); kv_iter_next(it)) {
			size_t kl;
			const uint8_t *k = kv_iter_key(it, &kl);
			if (kl == 16 && k[0] == 0xee)
				n++;
		}
		kv_iter_free(it);
		CU_ASSERT_EQUAL(n, 100);
		fx_reopen();
	}
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_kv_cache_commit_drops_written_key),
		TH_TEST(test_kv_cache_put_after_a_commit_is_refused),
		TH_TEST(test_kv_cache_batch_of_many_keys_drops_all),
		TH_TEST(test_walk_sees_directory_mode_change_at_once),
		TH_TEST(test_walk_sees_rename_and_recreated_directory),
		TH_TEST(test_kv_inode_family_scans_every_key),
		TH_TEST_END,
	};
	return th_cunit_run("mds_kv", fx_init, fx_fini, tests);
}
