/*
 * mds/kv.c - the only file that calls RocksDB (its C API, rocksdb/c.h).
 *
 * One database per MDT with the column families of enum kv_cf. Writes go
 * through write batches with sync=false and the WAL on: a batch is in the
 * WAL file (the OS page cache) when kv_batch_commit returns, so a kill -9
 * of the MDS loses nothing acknowledged; kv_sync() (FlushWAL(sync=true))
 * makes it survive power loss. Group commit is the caller's (mds/commit.c).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <rocksdb/c.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/*
 * RocksDB's memory, stated rather than left to its defaults: one LRU block
 * cache shared by every column family (RocksDB's own default size), and each
 * family's memtables (RocksDB's defaults: 2 of 64 MiB). Logged at open
 * ("RocksDB caches=") so `make bench` can set the MDS's RSS against them.
 */
#define KV_BLOCK_CACHE (8ULL << 20)
#define KV_WRITE_BUFFER (64ULL << 20)
#define KV_WRITE_BUFFERS 2

static const char *const cf_names[KV_CF_NR] = {
	"default", "inodes", "dentries", "xattrs", "destroy", "hsm", "changelog", "cluster",
};

struct kv {
	rocksdb_t *kv_db;
	rocksdb_options_t *kv_opts;
	rocksdb_block_based_table_options_t *kv_bbo;
	rocksdb_cache_t *kv_cache;
	rocksdb_writeoptions_t *kv_wopts;
	rocksdb_readoptions_t *kv_ropts;
	rocksdb_column_family_handle_t *kv_cf[KV_CF_NR];
};

struct kv_batch {
	rocksdb_writebatch_t *b;
	struct kv *kv;
};

struct kv_iter {
	rocksdb_iterator_t *it;
};

int kv_open(const char *path, struct kv **out)
{
	char *err = NULL;
	struct kv *kv = calloc(1, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	kv->kv_opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(kv->kv_opts, 1);
	rocksdb_options_set_create_missing_column_families(kv->kv_opts, 1);
	rocksdb_options_increase_parallelism(kv->kv_opts, 2);
	rocksdb_options_set_max_background_jobs(kv->kv_opts, 2);
	rocksdb_options_set_manual_wal_flush(kv->kv_opts, 0);
	rocksdb_options_set_write_buffer_size(kv->kv_opts, KV_WRITE_BUFFER);
	rocksdb_options_set_max_write_buffer_number(kv->kv_opts, KV_WRITE_BUFFERS);
	kv->kv_cache = rocksdb_cache_create_lru(KV_BLOCK_CACHE);
	kv->kv_bbo = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(kv->kv_bbo, kv->kv_cache);
	rocksdb_options_set_block_based_table_factory(kv->kv_opts, kv->kv_bbo);
	const rocksdb_options_t *cfo[KV_CF_NR];
	for (int i = 0; i < KV_CF_NR; i++)
		cfo[i] = kv->kv_opts;
	kv->kv_db = rocksdb_open_column_families(kv->kv_opts, path, KV_CF_NR, cf_names, cfo,
						 kv->kv_cf, &err);
	if (err) {
		WEIR_LOG_ERROR("mdt=%s: cannot open RocksDB: %s", path, err);
		free(err);
		rocksdb_options_destroy(kv->kv_opts);
		rocksdb_block_based_options_destroy(kv->kv_bbo);
		rocksdb_cache_destroy(kv->kv_cache);
		free(kv);
		return -EIO;
	}
	WEIR_LOG_NOTICE("mdt=%s: RocksDB caches=%lluMiB (block cache %llu MiB shared, memtables "
			"%d families x %d x %llu MiB)", path,
			(KV_BLOCK_CACHE + (unsigned long long)KV_CF_NR * KV_WRITE_BUFFERS *
						  KV_WRITE_BUFFER) >> 20,
			KV_BLOCK_CACHE >> 20, KV_CF_NR, KV_WRITE_BUFFERS, KV_WRITE_BUFFER >> 20);
	kv->kv_wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(kv->kv_wopts, 0);
	kv->kv_ropts = rocksdb_readoptions_create();
	*out = kv;
	return 0;
}

void kv_close(struct kv *kv)
{
	if (!kv)
		return;
	kv_sync(kv);
	for (int i = 0; i < KV_CF_NR; i++)
		rocksdb_column_family_handle_destroy(kv->kv_cf[i]);
	rocksdb_close(kv->kv_db);
	rocksdb_writeoptions_destroy(kv->kv_wopts);
	rocksdb_readoptions_destroy(kv->kv_ropts);
	rocksdb_options_destroy(kv->kv_opts);
	rocksdb_block_based_options_destroy(kv->kv_bbo);
	rocksdb_cache_destroy(kv->kv_cache);
	free(kv);
}

ssize_t kv_get(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, void *val, size_t cap)
{
	char *err = NULL;
	size_t vlen = 0;
	char *v = rocksdb_get_cf(kv->kv_db, kv->kv_ropts, kv->kv_cf[cf], key, klen, &vlen, &err);
	if (err) {
		WEIR_LOG_ERROR("cf=%s: RocksDB get failed: %s", cf_names[cf], err);
		free(err);
		return -EIO;
	}
	if (!v)
		return -ENOENT;
	memcpy(val, v, vlen < cap ? vlen : cap);
	rocksdb_free(v);
	return (ssize_t)vlen;
}

struct kv_batch *kv_batch_new(struct kv *kv)
{
	struct kv_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->kv = kv;
	b->b = rocksdb_writebatch_create();
	return b;
}

void kv_batch_put(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	rocksdb_writebatch_put_cf(b->b, b->kv->kv_cf[cf], key, klen, val, vlen);
}

void kv_batch_del(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen)
{
	rocksdb_writebatch_delete_cf(b->b, b->kv->kv_cf[cf], key, klen);
}

int kv_batch_commit(struct kv *kv, struct kv_batch *b)
{
	char *err = NULL;
	rocksdb_write(kv->kv_db, kv->kv_wopts, b->b, &err);
	if (err) {
		WEIR_LOG_ERROR("RocksDB write failed: %s", err);
		free(err);
		return -EIO;
	}
	return 0;
}

void kv_batch_free(struct kv_batch *b)
{
	if (!b)
		return;
	rocksdb_writebatch_destroy(b->b);
	free(b);
}

int kv_sync(struct kv *kv)
{
	char *err = NULL;
	rocksdb_flush_wal(kv->kv_db, 1, &err);
	if (err) {
		WEIR_LOG_ERROR("RocksDB WAL sync failed: %s", err);
		free(err);
		return -EIO;
	}
	return 0;
}

struct kv_iter *kv_iter_new(struct kv *kv, enum kv_cf cf)
{
	struct kv_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->it = rocksdb_create_iterator_cf(kv->kv_db, kv->kv_ropts, kv->kv_cf[cf]);
	return it;
}

void kv_iter_seek(struct kv_iter *it, const void *key, size_t klen)
{
	rocksdb_iter_seek(it->it, key, klen);
}

bool kv_iter_valid(struct kv_iter *it)
{
	return rocksdb_iter_valid(it->it);
}

const void *kv_iter_key(struct kv_iter *it, size_t *klen)
{
	return rocksdb_iter_key(it->it, klen);
}

const void *kv_iter_val(struct kv_iter *it, size_t *vlen)
{
	return rocksdb_iter_value(it->it, vlen);
}

void kv_iter_next(struct kv_iter *it)
{
	rocksdb_iter_next(it->it);
}

void kv_iter_free(struct kv_iter *it)
{
	if (!it)
		return;
	rocksdb_iter_destroy(it->it);
	free(it);
}

uint64_t kv_estimate_keys(struct kv *kv, enum kv_cf cf)
{
	char *v = rocksdb_property_value_cf(kv->kv_db, kv->kv_cf[cf], "rocksdb.estimate-num-keys");
	if (!v)
		return 0;
	uint64_t n = strtoull(v, NULL, 10);
	free(v);
	return n;
}

/* Sum of integer property \a prop over every column family. */
static uint64_t kv_property_sum(struct kv *kv, const char *prop)
{
	uint64_t sum = 0;
	for (int i = 0; i < KV_CF_NR; i++) {
		char *v = rocksdb_property_value_cf(kv->kv_db, kv->kv_cf[i], prop);
		if (v)
			sum += strtoull(v, NULL, 10);
		free(v);
	}
	return sum;
}

void kv_log_memory(struct kv *kv)
{
	uint64_t mt = kv_property_sum(kv, "rocksdb.size-all-mem-tables");
	uint64_t tr = kv_property_sum(kv, "rocksdb.estimate-table-readers-mem");
	uint64_t bc = rocksdb_cache_get_usage(kv->kv_cache);
	WEIR_LOG_NOTICE("RocksDB memory=%lluKiB (memtables %llu KiB, block cache %llu KiB, "
			"table readers %llu KiB)", (unsigned long long)(mt + tr + bc) >> 10,
			(unsigned long long)mt >> 10, (unsigned long long)bc >> 10,
			(unsigned long long)tr >> 10);
}

int kv_compact(struct kv *kv, enum kv_cf cf)
{
	rocksdb_compact_range_cf(kv->kv_db, kv->kv_cf[cf], NULL, 0, NULL, 0);
	return 0;
}
