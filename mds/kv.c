/*
 * mds/kv.c - the only file that calls RocksDB (its C API, rocksdb/c.h).
 *
 * One database per MDT with the column families of enum kv_cf. Writes go
 * through write batches with sync=false and the WAL on: a batch is in the
 * WAL file (the OS page cache) when kv_batch_commit returns, so a kill -9
 * of the MDS loses nothing acknowledged; kv_sync() (FlushWAL(sync=true))
 * makes it survive power loss. Group commit is the caller's (mds/commit.c).
 *
 * Read cache. RocksDB's own get walks its memtable skip lists (and SST
 * files) on every call; a path walk repeats the same few records (every
 * directory from the root down) for every request. kv_cache_get() and
 * kv_cache_put() keep records the caller chooses (mds/ns.c: directory inodes,
 * dentries naming directories, inodes of open files) in a direct-mapped table of
 * KV_CACHE_SLOTS slots, keyed by (column family, key), of bounded key and
 * value size, allocated at open. Coherence: every kv_batch remembers a
 * hash of each key of KV_CF_INODES and KV_CF_DENTRIES it puts or deletes,
 * and kv_batch_commit(), before RocksDB takes the batch and again once it
 * has it (or failed to take it), bumps the cache generation and then
 * empties the slots of those keys. A reader takes the generation before its
 * RocksDB read and kv_cache_put() stores the value only if the generation
 * has not moved, so a value read before a commit is never stored after that
 * commit's invalidation. Readers run while batches commit (lookups take no
 * namespace lock but ns_lock for reading, mds/ns_lock.c): the first
 * invalidation keeps them from finding in the cache a value older than what
 * RocksDB already holds, except one stored in the window, which the second
 * empties (a walk that finds a name without its inode reads both again
 * without the cache: mds/ns_walk.c). A writer that holds the records' locks
 * since before the commit may also store what it has just committed
 * (kv_cache_gen() after the commit). Slots are guarded
 * by KV_CACHE_LOCKS striped mutexes (leaves: nothing is called with one
 * held). The same key hashes go to a commit hook (kv_set_commit_hook(),
 * mds/ns_clean.c) after every commit.
 *
 * Full MDT (kv_space_*). RocksDB must never meet ENOSPC itself: a failed
 * WAL append leaves its log writer in an error state, the next write trips
 * an assertion inside RocksDB and the MDS aborts, and RocksDB 7's C API has
 * no Resume(). So kv_batch_commit() admits a batch only while the MDT's
 * filesystem (statvfs, f_bavail) keeps a margin, scaled to its size
 * (kv_space_new: floor = total/128 within [256 KiB, 64 MiB]):
 *  - a batch that grows the namespace (it puts more dentries than it
 *    deletes, or puts an xattr) needs 4 x floor free, else -ENOSPC;
 *  - any other batch (unlink, rmdir, rename, truncate, setattr, close,
 *    removexattr, the HSM and destroy queues) needs only the floor, so that
 *    deleting files works on a full MDT;
 *  - a reserve file (MDT/weir-space-reserve, 2 x floor, made at open when
 *    there is room) is given back when a batch of the second kind finds less
 *    than the floor (something else filled the filesystem), and made again
 *    once there is room.
 * statvfs runs at most every KV_SPACE_CHECK_MS, or sooner when the bytes
 * committed since the last check (counted twice: WAL framing) eat into the
 * margin; so writes resume by themselves within KV_SPACE_CHECK_MS of space
 * being freed, without a restart. The admin sees one WARN line when the MDT
 * turns full and one NOTICE when writes resume. A write that fails anyway
 * with "No space" from RocksDB is -ENOSPC, never -EIO.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <fcntl.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

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
#define KV_MEMTABLE_BLOOM 0.01 /* of KV_WRITE_BUFFER, inodes and dentries only */
#define KV_INODE_BUCKETS 65536 /* hash buckets of an inode memtable (8 bytes each) */

#define KV_CACHE_SLOTS 1024   /* power of two; ~230 KiB */
#define KV_CACHE_LOCKS 64
#define KV_CACHE_KEY_MAX 88   /* a dentry key with a name of up to 64 bytes */
#define KV_CACHE_VAL_MAX 128  /* an inode record with up to 8 OSTs */
#define KV_TOUCH_INLINE 8
#define KV_NOTE_INLINE 8

struct kv_cache_slot {
	uint64_t cs_hash;   /* 0: empty */
	uint8_t cs_cf;
	uint8_t cs_klen;
	uint8_t cs_vlen;
	uint8_t cs_key[KV_CACHE_KEY_MAX];
	uint8_t cs_val[KV_CACHE_VAL_MAX];
};

#define KV_SPACE_CHECK_MS 100             /* statvfs of the MDT at most this often */
#define KV_SPACE_FLOOR_MIN (256ULL << 10) /* full-MDT margins: see the DESIGN above */
#define KV_SPACE_FLOOR_MAX (64ULL << 20)
#define KV_SPACE_RESERVE "weir-space-reserve"

struct kv_space {
	pthread_mutex_t ks_lock;   /* a leaf */
	char *ks_dir;              /* the MDT directory */
	char *ks_reserve;          /* ks_dir/KV_SPACE_RESERVE */
	uint64_t ks_floor;         /* bytes: below it only deletes, then nothing */
	uint64_t ks_soft;          /* bytes: below it no growth */
	uint64_t ks_avail;         /* bytes free at the last statvfs */
	uint64_t ks_since;         /* bytes admitted since */
	uint64_t ks_check_ns;      /* monotonic time of the last statvfs */
	bool ks_has_reserve;       /* the reserve file holds 2 x floor */
	bool ks_full;              /* growth refused (logged once per episode) */
};

static const char *const cf_names[KV_CF_NR] = {
	"default", "inodes", "dentries", "xattrs", "destroy", "hsm", "changelog", "cluster",
};

static struct kv_space *kv_space_new(const char *dir);
static void kv_space_free(struct kv_space *ks);

struct kv {
	rocksdb_t *kv_db;
	rocksdb_options_t *kv_opts;
	rocksdb_options_t *kv_opts_ns;  /* dentries: kv_opts + memtable bloom */
	rocksdb_options_t *kv_opts_ino; /* inodes: kv_opts_ns + hashed memtable */
	rocksdb_block_based_table_options_t *kv_bbo;
	rocksdb_cache_t *kv_cache;
	rocksdb_writeoptions_t *kv_wopts;
	rocksdb_readoptions_t *kv_ropts;
	rocksdb_column_family_handle_t *kv_cf[KV_CF_NR];
	struct kv_cache_slot *kv_cache_slots; /* KV_CACHE_SLOTS */
	pthread_mutex_t kv_cache_locks[KV_CACHE_LOCKS];
	atomic_uint_fast64_t kv_cache_gen;
	kv_commit_hook_t kv_hook;
	void *kv_hook_arg;
	struct kv_space *kv_space;      /* full-MDT guard; NULL: none (statvfs failed) */
};

struct kv_batch {
	rocksdb_writebatch_t *b;
	struct kv *kv;
	/* hashes of the cacheable keys this batch writes (kv_cache_*) */
	uint64_t b_touch_inline[KV_TOUCH_INLINE];
	uint64_t *b_touch;
	uint32_t b_nr_touch;
	uint32_t b_cap_touch;
	bool b_touch_all;   /* could not remember them all: invalidate the whole cache */
	/* what clients may have cached that this batch changes (kv_batch_note) */
	struct weir_fid b_note_fid_inline[KV_NOTE_INLINE];
	uint32_t b_note_bits_inline[KV_NOTE_INLINE];
	struct weir_fid *b_note_fid;
	uint32_t *b_note_bits;
	uint32_t b_nr_note, b_cap_note;
	bool b_note_lost;
	int32_t b_growth;   /* dentries put - deleted, + xattrs put (kv_space_admit) */
};

struct kv_iter {
	rocksdb_iterator_t *it;
	rocksdb_readoptions_t *ro; /* own read options (KV_CF_INODES), or NULL */
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
	/*
	 * A test hook: WEIR_MDS_TEST_LOSE_UNSYNCED=1 keeps the log in this
	 * process's memory until kv_sync(), so a kill -9 loses what was not
	 * synced, as a power loss of the host would (tests of what must be
	 * durable before it is used).
	 */
	const char *lose = getenv("WEIR_MDS_TEST_LOSE_UNSYNCED");
	bool buffered = lose && !strcmp(lose, "1");
	if (buffered)
		WEIR_LOG_WARN("mdt=%s: WEIR_MDS_TEST_LOSE_UNSYNCED=1: a test mode; a kill -9 loses"
			      " the changes not yet synced", path);
	rocksdb_options_set_manual_wal_flush(kv->kv_opts, buffered);
	rocksdb_options_set_write_buffer_size(kv->kv_opts, KV_WRITE_BUFFER);
	rocksdb_options_set_max_write_buffer_number(kv->kv_opts, KV_WRITE_BUFFERS);
	kv->kv_cache = rocksdb_cache_create_lru(KV_BLOCK_CACHE);
	kv->kv_bbo = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(kv->kv_bbo, kv->kv_cache);
	/*
	 * Point lookups dominate (a path walk, a create's check that the name is
	 * free): a whole-key bloom filter per SST file (10 bits a key, ~1% false
	 * positives) lets a get skip the files that do not hold its key, and a
	 * hash index inside each data block finds the key without a binary
	 * search. SST files written before keep working without them.
	 */
	rocksdb_block_based_options_set_filter_policy(kv->kv_bbo,
						      rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_block_based_options_set_data_block_index_type(
		kv->kv_bbo, rocksdb_block_based_table_data_block_index_type_binary_search_and_hash);
	rocksdb_block_based_options_set_data_block_hash_ratio(kv->kv_bbo, 0.75);
	rocksdb_options_set_block_based_table_factory(kv->kv_opts, kv->kv_bbo);
	/*
	 * Inodes and dentries: a whole-key bloom filter in each memtable too, so
	 * a get of a key the memtable does not hold (every create looks its new
	 * name up first) skips the skip-list search: 1% of the write buffer,
	 * about 12 bits per record.
	 */
	rocksdb_options_set_allow_concurrent_memtable_write(kv->kv_opts, 0); /* see kv_opts_ino */
	kv->kv_opts_ns = rocksdb_options_create_copy(kv->kv_opts);
	rocksdb_options_set_memtable_prefix_bloom_size_ratio(kv->kv_opts_ns, KV_MEMTABLE_BLOOM);
	rocksdb_options_set_memtable_whole_key_filtering(kv->kv_opts_ns, 1);
	/*
	 * Inodes are only ever read and written by key (no iterator walks the
	 * family): their memtable is a hash of small skip lists on the whole
	 * FID, so a put or get costs a hash and a few comparisons instead of a
	 * search of one skip list of every record (the memtable's insert was
	 * half of a create's CPU; docs/performance.md). Such a memtable cannot
	 * take concurrent inserts: the namespace lock serialises the writes
	 * anyway, so the database turns them off.
	 */
	kv->kv_opts_ino = rocksdb_options_create_copy(kv->kv_opts_ns);
	rocksdb_options_set_prefix_extractor(kv->kv_opts_ino,
					     rocksdb_slicetransform_create_fixed_prefix(WEIR_FID_BYTES));
	rocksdb_options_set_hash_skip_list_rep(kv->kv_opts_ino, KV_INODE_BUCKETS, 4, 4);
	const rocksdb_options_t *cfo[KV_CF_NR];
	for (int i = 0; i < KV_CF_NR; i++)
		cfo[i] = i == KV_CF_INODES ? kv->kv_opts_ino
		       : i == KV_CF_DENTRIES ? kv->kv_opts_ns : kv->kv_opts;
	kv->kv_db = rocksdb_open_column_families(kv->kv_opts, path, KV_CF_NR, cf_names, cfo,
						 kv->kv_cf, &err);
	if (err) {
		WEIR_LOG_ERROR("mdt=%s: cannot open RocksDB: %s", path, err);
		free(err);
		rocksdb_options_destroy(kv->kv_opts);
		rocksdb_options_destroy(kv->kv_opts_ns);
		rocksdb_options_destroy(kv->kv_opts_ino);
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
	kv->kv_space = kv_space_new(path);
	kv->kv_cache_slots = calloc(KV_CACHE_SLOTS, sizeof(*kv->kv_cache_slots));
	for (int i = 0; i < KV_CACHE_LOCKS; i++)
		pthread_mutex_init(&kv->kv_cache_locks[i], NULL);
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
	rocksdb_options_destroy(kv->kv_opts_ns);
	rocksdb_options_destroy(kv->kv_opts_ino);
	rocksdb_block_based_options_destroy(kv->kv_bbo);
	rocksdb_cache_destroy(kv->kv_cache);
	for (int i = 0; i < KV_CACHE_LOCKS; i++)
		pthread_mutex_destroy(&kv->kv_cache_locks[i]);
	free(kv->kv_cache_slots);
	kv_space_free(kv->kv_space);
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

/* ------------------------------------------------------------ read cache */

static bool kv_cacheable_cf(enum kv_cf cf)
{
	return cf == KV_CF_INODES || cf == KV_CF_DENTRIES;
}

uint64_t kv_key_hash(enum kv_cf cf, const void *key, size_t klen)
{
	const uint8_t *k = key;
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)cf << 56) ^ klen;
	size_t i = 0;
	for (; i + 8 <= klen; i += 8) {
		uint64_t w;
		memcpy(&w, k + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	for (; i < klen; i++)
		h = (h ^ k[i]) * 0x100000001b3ULL;
	/* MurmurHash3's fmix64 finaliser: every key bit reaches the low bits the
	 * slot index takes (FIDs differ only in their last bytes) */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h ? h : 1;
}

static struct kv_cache_slot *kv_cache_slot(struct kv *kv, uint64_t h, pthread_mutex_t **lock)
{
	size_t i = (size_t)(h & (KV_CACHE_SLOTS - 1));
	*lock = &kv->kv_cache_locks[i % KV_CACHE_LOCKS];
	return &kv->kv_cache_slots[i];
}

ssize_t kv_cache_get(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, void *val,
		     size_t cap, uint64_t *gen)
{
	*gen = atomic_load(&kv->kv_cache_gen);
	if (!kv->kv_cache_slots || !kv_cacheable_cf(cf) || klen > KV_CACHE_KEY_MAX)
		return -ENOENT;
	uint64_t h = kv_key_hash(cf, key, klen);
	pthread_mutex_t *lock;
	struct kv_cache_slot *s = kv_cache_slot(kv, h, &lock);
	ssize_t n = -ENOENT;
	pthread_mutex_lock(lock);
	if (s->cs_hash == h && s->cs_cf == cf && s->cs_klen == klen &&
	    !memcmp(s->cs_key, key, klen)) {
		memcpy(val, s->cs_val, s->cs_vlen < cap ? s->cs_vlen : cap);
		n = s->cs_vlen;
	}
	pthread_mutex_unlock(lock);
	return n;
}

uint64_t kv_cache_gen(struct kv *kv)
{
	return atomic_load(&kv->kv_cache_gen);
}

/* Empty the slot of hash \a h if it holds that hash. */
static void kv_cache_clear(struct kv *kv, uint64_t h)
{
	pthread_mutex_t *lock;
	struct kv_cache_slot *s = kv_cache_slot(kv, h, &lock);
	pthread_mutex_lock(lock);
	if (s->cs_hash == h)
		s->cs_hash = 0;
	pthread_mutex_unlock(lock);
}

void kv_cache_drop(struct kv *kv, enum kv_cf cf, const void *key, size_t klen)
{
	if (!kv->kv_cache_slots || !kv_cacheable_cf(cf) || klen > KV_CACHE_KEY_MAX)
		return;
	kv_cache_clear(kv, kv_key_hash(cf, key, klen));
}

void kv_cache_put(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, const void *val,
		  size_t vlen, uint64_t gen)
{
	if (!kv->kv_cache_slots || !kv_cacheable_cf(cf) || klen > KV_CACHE_KEY_MAX ||
	    vlen > KV_CACHE_VAL_MAX)
		return;
	uint64_t h = kv_key_hash(cf, key, klen);
	pthread_mutex_t *lock;
	struct kv_cache_slot *s = kv_cache_slot(kv, h, &lock);
	pthread_mutex_lock(lock);
	/* a commit since the caller's read may have changed the record: skip */
	if (atomic_load(&kv->kv_cache_gen) == gen) {
		s->cs_hash = h;
		s->cs_cf = (uint8_t)cf;
		s->cs_klen = (uint8_t)klen;
		s->cs_vlen = (uint8_t)vlen;
		memcpy(s->cs_key, key, klen);
		memcpy(s->cs_val, val, vlen);
	}
	pthread_mutex_unlock(lock);
}

/* After a commit: drop what \a b wrote (generation first, see the top of the file). */
static void kv_cache_invalidate(struct kv *kv, const struct kv_batch *b)
{
	if (!kv->kv_cache_slots || (!b->b_nr_touch && !b->b_touch_all))
		return;
	atomic_fetch_add(&kv->kv_cache_gen, 1);
	if (b->b_touch_all) {
		for (int l = 0; l < KV_CACHE_LOCKS; l++) {
			pthread_mutex_lock(&kv->kv_cache_locks[l]);
			for (size_t i = (size_t)l; i < KV_CACHE_SLOTS; i += KV_CACHE_LOCKS)
				kv->kv_cache_slots[i].cs_hash = 0;
			pthread_mutex_unlock(&kv->kv_cache_locks[l]);
		}
		return;
	}
	for (uint32_t i = 0; i < b->b_nr_touch; i++)
		kv_cache_clear(kv, b->b_touch[i]);
}

static void kv_batch_touch(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen)
{
	if (!kv_cacheable_cf(cf) || b->b_touch_all)
		return;
	if (b->b_nr_touch == b->b_cap_touch) {
		uint32_t cap = b->b_cap_touch * 2;
		uint64_t *t = b->b_touch == b->b_touch_inline ? malloc(cap * sizeof(*t))
							      : realloc(b->b_touch, cap * sizeof(*t));
		if (!t) {
			b->b_touch_all = true;
			return;
		}
		if (b->b_touch == b->b_touch_inline)
			memcpy(t, b->b_touch_inline, sizeof(b->b_touch_inline));
		b->b_touch = t;
		b->b_cap_touch = cap;
	}
	b->b_touch[b->b_nr_touch++] = kv_key_hash(cf, key, klen);
}

void kv_set_commit_hook(struct kv *kv, kv_commit_hook_t fn, void *arg)
{
	kv->kv_hook = fn;
	kv->kv_hook_arg = arg;
}

/* ------------------------------------------------------------ full MDT */

static int kv_space_statvfs(struct kv_space *ks)
{
	struct statvfs sv;
	if (statvfs(ks->ks_dir, &sv) < 0)
		return -errno;
	ks->ks_avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	ks->ks_since = 0;
	ks->ks_check_ns = weir_now_ns();
	return 0;
}

/* Make the reserve file when there is room for it and some. Under ks_lock. */
static void kv_space_reserve_make(struct kv_space *ks)
{
	uint64_t len = 2 * ks->ks_floor;
	if (ks->ks_has_reserve || ks->ks_avail < ks->ks_soft + 2 * len)
		return;
	int fd = open(ks->ks_reserve, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int rc = fallocate(fd, 0, 0, (off_t)len) < 0 ? -errno : 0;
	close(fd);
	if (rc) {
		unlink(ks->ks_reserve);
		return;
	}
	ks->ks_has_reserve = true;
	kv_space_statvfs(ks);
}

/* Give the reserve's space back to RocksDB. Under ks_lock. */
static void kv_space_reserve_release(struct kv_space *ks)
{
	if (!ks->ks_has_reserve)
		return;
	if (unlink(ks->ks_reserve) < 0 && errno != ENOENT)
		return;
	ks->ks_has_reserve = false;
	WEIR_LOG_WARN("mdt=%s: the MDT's filesystem is full: released the %llu KiB reserve"
		      " so that unlinks and truncates go on", ks->ks_dir,
		      (unsigned long long)(2 * ks->ks_floor) >> 10);
	kv_space_statvfs(ks);
}

static struct kv_space *kv_space_new(const char *dir)
{
	struct kv_space *ks = calloc(1, sizeof(*ks));
	struct statvfs sv;
	if (!ks)
		return NULL;
	ks->ks_dir = strdup(dir);
	if (ks->ks_dir && asprintf(&ks->ks_reserve, "%s/%s", dir, KV_SPACE_RESERVE) < 0)
		ks->ks_reserve = NULL;
	if (!ks->ks_dir || !ks->ks_reserve || statvfs(dir, &sv) < 0) {
		free(ks->ks_dir);
		free(ks->ks_reserve);
		free(ks);
		return NULL;
	}
	uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize;
	ks->ks_floor = WEIR_MIN(WEIR_MAX(total / 128, KV_SPACE_FLOOR_MIN), KV_SPACE_FLOOR_MAX);
	ks->ks_soft = 4 * ks->ks_floor;
	pthread_mutex_init(&ks->ks_lock, NULL);
	/* a reserve left by an earlier run counts as held */
	struct stat st;
	ks->ks_has_reserve = stat(ks->ks_reserve, &st) == 0;
	kv_space_statvfs(ks);
	kv_space_reserve_make(ks);
	WEIR_LOG_INFO("mdt=%s: full-MDT margins: creates stop below %llu KiB free, every write"
		      " below %llu KiB; reserve %s", dir, (unsigned long long)ks->ks_soft >> 10,
		      (unsigned long long)ks->ks_floor >> 10,
		      ks->ks_has_reserve ? "held" : "not made (no room)");
	return ks;
}

static void kv_space_free(struct kv_space *ks)
{
	if (!ks)
		return;
	pthread_mutex_destroy(&ks->ks_lock);
	free(ks->ks_dir);
	free(ks->ks_reserve);
	free(ks);
}

/* Count what a put or delete does to the namespace's size (kv_space_admit). */
static void kv_space_note(struct kv_batch *b, enum kv_cf cf, bool put)
{
	if (cf == KV_CF_DENTRIES)
		b->b_growth += put ? 1 : -1;
	else if (cf == KV_CF_XATTRS && put)
		b->b_growth++;
}

/*
 * May batch \a b be written? \return 0, or -ENOSPC when the MDT's filesystem
 * lacks the margin for it (see the DESIGN above).
 */
static int kv_space_admit(struct kv *kv, const struct kv_batch *b)
{
	struct kv_space *ks = kv->kv_space;
	if (!ks)
		return 0;
	size_t sz = 0;
	rocksdb_writebatch_data(b->b, &sz);
	uint64_t need = 2 * (uint64_t)sz + 4096;
	bool growth = b->b_growth > 0;
	int rc = 0;
	pthread_mutex_lock(&ks->ks_lock);
	uint64_t now = weir_now_ns();
	if (now - ks->ks_check_ns > KV_SPACE_CHECK_MS * 1000000ULL ||
	    ks->ks_since + need + ks->ks_soft >= ks->ks_avail)
		kv_space_statvfs(ks);
	uint64_t left = ks->ks_avail > ks->ks_since ? ks->ks_avail - ks->ks_since : 0;
	if (!growth && left < ks->ks_floor + need) {
		kv_space_reserve_release(ks);
		left = ks->ks_avail;
	}
	if (left < (growth ? ks->ks_soft : ks->ks_floor) + need) {
		rc = -ENOSPC;
		if (!ks->ks_full)
			WEIR_LOG_WARN("mdt=%s avail=%lluKiB: the MDT is full: creates, mkdirs, links"
				      " and setxattrs get ENOSPC until space is freed (unlinks,"
				      " truncates and reads go on)", ks->ks_dir,
				      (unsigned long long)left >> 10);
		ks->ks_full = true;
	} else {
		ks->ks_since += need;
		/* said once a growth fits with room to spare (no line per small mkdir) */
		if (ks->ks_full && growth && left >= ks->ks_soft + ks->ks_floor) {
			ks->ks_full = false;
			WEIR_LOG_NOTICE("mdt=%s avail=%lluKiB: the MDT has space again; writes"
					" resume", ks->ks_dir, (unsigned long long)left >> 10);
		}
		if (!ks->ks_has_reserve && !ks->ks_full)
			kv_space_reserve_make(ks);
	}
	pthread_mutex_unlock(&ks->ks_lock);
	return rc;
}

/* ------------------------------------------------------------ writes */

struct kv_batch *kv_batch_new(struct kv *kv)
{
	struct kv_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->kv = kv;
	b->b = rocksdb_writebatch_create();
	b->b_touch = b->b_touch_inline;
	b->b_cap_touch = KV_TOUCH_INLINE;
	b->b_note_fid = b->b_note_fid_inline;
	b->b_note_bits = b->b_note_bits_inline;
	b->b_cap_note = KV_NOTE_INLINE;
	return b;
}

void kv_batch_note(struct kv_batch *b, const struct weir_fid *fid, uint32_t bits)
{
	for (uint32_t i = 0; i < b->b_nr_note; i++) {
		if (b->b_note_fid[i].fid_seq == fid->fid_seq &&
		    b->b_note_fid[i].fid_oid == fid->fid_oid) {
			b->b_note_bits[i] |= bits;
			return;
		}
	}
	if (b->b_nr_note == b->b_cap_note) {
		uint32_t cap = b->b_cap_note * 2;
		struct weir_fid *f = malloc(cap * sizeof(*f));
		uint32_t *x = malloc(cap * sizeof(*x));
		if (!f || !x) {
			free(f);
			free(x);
			b->b_note_lost = true;
			return;
		}
		memcpy(f, b->b_note_fid, b->b_nr_note * sizeof(*f));
		memcpy(x, b->b_note_bits, b->b_nr_note * sizeof(*x));
		if (b->b_note_fid != b->b_note_fid_inline) {
			free(b->b_note_fid);
			free(b->b_note_bits);
		}
		b->b_note_fid = f;
		b->b_note_bits = x;
		b->b_cap_note = cap;
	}
	b->b_note_fid[b->b_nr_note] = *fid;
	b->b_note_bits[b->b_nr_note] = bits;
	b->b_nr_note++;
}

size_t kv_batch_notes(const struct kv_batch *b, const struct weir_fid **fids,
		      const uint32_t **bits, bool *lost)
{
	*fids = b->b_note_fid;
	*bits = b->b_note_bits;
	*lost = b->b_note_lost;
	return b->b_nr_note;
}

void kv_batch_put(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	rocksdb_writebatch_put_cf(b->b, b->kv->kv_cf[cf], key, klen, val, vlen);
	kv_batch_touch(b, cf, key, klen);
	kv_space_note(b, cf, true);
}

void kv_batch_del(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen)
{
	rocksdb_writebatch_delete_cf(b->b, b->kv->kv_cf[cf], key, klen);
	kv_batch_touch(b, cf, key, klen);
	kv_space_note(b, cf, false);
}

int kv_batch_commit(struct kv *kv, struct kv_batch *b)
{
	char *err = NULL;
	int rc = kv_space_admit(kv, b);
	if (rc)
		return rc; /* nothing written: the cache and the hook have nothing to forget */
	/* before the write too: a lock-free reader must not find an old value
	 * in the cache once RocksDB has the new one (it would pair it with the
	 * new records it reads from RocksDB); a value it reads meanwhile is
	 * stored under a generation the second invalidation moves on */
	kv_cache_invalidate(kv, b);
	rocksdb_write(kv->kv_db, kv->kv_wopts, b->b, &err);
	/* even a failed write may have reached the memtable: forget its keys either way */
	kv_cache_invalidate(kv, b);
	if (kv->kv_hook && (b->b_nr_touch || b->b_touch_all))
		kv->kv_hook(kv->kv_hook_arg, b->b_touch, b->b_nr_touch, b->b_touch_all);
	if (err) {
		WEIR_LOG_ERROR("RocksDB write failed: %s", err);
		rc = strstr(err, "No space") ? -ENOSPC : -EIO;
		free(err);
		return rc;
	}
	return 0;
}

void kv_batch_free(struct kv_batch *b)
{
	if (!b)
		return;
	rocksdb_writebatch_destroy(b->b);
	if (b->b_touch != b->b_touch_inline)
		free(b->b_touch);
	if (b->b_note_fid != b->b_note_fid_inline) {
		free(b->b_note_fid);
		free(b->b_note_bits);
	}
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
	if (cf == KV_CF_INODES) {
		/* the inode family has a prefix extractor and a hashed memtable:
		 * an iterator in prefix mode would see only its seek key's FID,
		 * so a whole scan (fsck, tests) asks for total order (slower: the
		 * hashed memtable is copied and sorted for it) */
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		if (!ro) {
			free(it);
			return NULL;
		}
		rocksdb_readoptions_set_total_order_seek(ro, 1);
		it->ro = ro;
		it->it = rocksdb_create_iterator_cf(kv->kv_db, ro, kv->kv_cf[cf]);
	} else {
		it->it = rocksdb_create_iterator_cf(kv->kv_db, kv->kv_ropts, kv->kv_cf[cf]);
	}
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
	if (it->ro)
		rocksdb_readoptions_destroy(it->ro);
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
