/*
 * mds/ns_clean.c - the last writer's close that only clears
 * MDS_INODE_F_SIZE_STALE: in memory at once, on disk in groups.
 *
 * DESIGN. A file opened for writing is marked SIZE_STALE on disk (its size is
 * on the OSTs: a stat glimpses them); the last writer's close clears it. When
 * that close changes nothing else (the handle wrote nothing: no size or mtime
 * to record, e.g. the close after an empty create), clearing the flag is soft
 * state: if it is lost in a crash, the file merely stays marked and a stat
 * asks the OSTs, which give the right size (nothing acknowledged is lost).
 * So such a close does not write a batch before its reply: it puts the FID in
 * the "clean set" (a hash table under ns_clean_lock) and ns_inode_get() hides
 * the on-disk flag of a FID in the set, so a stat does not glimpse. The flags
 * are cleared on disk in groups of NS_CLEAN_BATCH: by the close that fills a
 * group (after it released its locks: ns_clean_flush_group), by
 * mds_ns_clean_flush() (the commit thread, every commit interval) and at
 * mds_ns_close().
 *
 * Each FID in the set keeps a copy of its record as the close left it (the
 * flag cleared), so a group is one batch of puts with no reads.
 *
 * Rules that keep this correct:
 *  - the copy stays valid only while nothing else writes the record: every
 *    commit that puts or deletes an inode takes its FID out of the set
 *    (kv.c's commit hook, ns_clean_on_commit; the hook matches by key hash,
 *    so a collision only drops an entry, which leaves the flag set: safe);
 *    an open for writing also takes it out explicitly (ns_clean_forget)
 *    before it marks the file stale again, under the file's inode lock (a
 *    close that adds it holds that lock too: mds/ns_lock.c);
 *  - a group is taken out of the set and written under ns_lock for writing,
 *    so no other batch of the namespace is between the two (every other
 *    writer of inode records holds ns_lock, for reading at least);
 *  - a close that changes anything else, or the last close of an
 *    open-unlinked file, writes its batch before its reply as before;
 *  - the set is bounded (NS_CLEAN_MAX): beyond it a close writes its batch.
 * Locks: ns_lock -> inode locks -> ns_clean_lock (a leaf; RocksDB is never
 * called with it).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define NS_CLEAN_BUCKETS 1024 /* power of two */

struct ns_clean_ent {
	uint64_t ce_hash;            /* kv_key_hash() of the inode key */
	struct weir_fid ce_fid;
	struct ns_clean_ent *ce_next;
	size_t ce_len;
	uint8_t ce_rec[];            /* the record to write: flag cleared */
};

static uint64_t clean_hash(const struct weir_fid *fid)
{
	uint8_t key[WEIR_FID_BYTES];
	weir_fid_pack_be(fid, key);
	return kv_key_hash(KV_CF_INODES, key, sizeof(key));
}

static struct ns_clean_ent **clean_bucket(struct mds_ns *ns, uint64_t h)
{
	return &ns->ns_clean_tab[(h ^ (h >> 20)) & (NS_CLEAN_BUCKETS - 1)];
}

/* Drop every entry of hash \a h (ns_clean_lock held). */
static void clean_drop_hash(struct mds_ns *ns, uint64_t h)
{
	for (struct ns_clean_ent **pp = clean_bucket(ns, h); *pp;) {
		struct ns_clean_ent *e = *pp;
		if (e->ce_hash != h) {
			pp = &e->ce_next;
			continue;
		}
		*pp = e->ce_next;
		free(e);
		atomic_fetch_sub(&ns->ns_clean_nr, 1);
	}
}

static void clean_drop_all(struct mds_ns *ns)
{
	for (size_t i = 0; i < NS_CLEAN_BUCKETS; i++)
		while (ns->ns_clean_tab[i]) {
			struct ns_clean_ent *e = ns->ns_clean_tab[i];
			ns->ns_clean_tab[i] = e->ce_next;
			free(e);
			atomic_fetch_sub(&ns->ns_clean_nr, 1);
		}
}

/* kv.c's commit hook: a committed write of an inode makes its copy stale. */
static void ns_clean_on_commit(void *arg, const uint64_t *hashes, size_t n, bool all)
{
	struct mds_ns *ns = arg;
	if (!atomic_load(&ns->ns_clean_nr))
		return;
	pthread_mutex_lock(&ns->ns_clean_lock);
	if (all)
		clean_drop_all(ns);
	for (size_t i = 0; !all && i < n; i++)
		clean_drop_hash(ns, hashes[i]);
	pthread_mutex_unlock(&ns->ns_clean_lock);
}

int ns_clean_init(struct mds_ns *ns)
{
	pthread_mutex_init(&ns->ns_clean_lock, NULL);
	ns->ns_clean_tab = calloc(NS_CLEAN_BUCKETS, sizeof(*ns->ns_clean_tab));
	if (!ns->ns_clean_tab)
		return -ENOMEM;
	kv_set_commit_hook(ns->ns_kv, ns_clean_on_commit, ns);
	return 0;
}

void ns_clean_fini(struct mds_ns *ns)
{
	if (!ns->ns_clean_tab)
		return;
	clean_drop_all(ns);
	free(ns->ns_clean_tab);
	ns->ns_clean_tab = NULL;
	pthread_mutex_destroy(&ns->ns_clean_lock);
}

bool ns_clean_is(struct mds_ns *ns, const struct weir_fid *fid)
{
	bool found = false;
	if (!ns->ns_clean_tab || !atomic_load(&ns->ns_clean_nr))
		return false;
	uint64_t h = clean_hash(fid);
	pthread_mutex_lock(&ns->ns_clean_lock);
	for (struct ns_clean_ent *e = *clean_bucket(ns, h); e; e = e->ce_next) {
		if (e->ce_hash == h && weir_fid_eq(&e->ce_fid, fid)) {
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ns->ns_clean_lock);
	return found;
}

int ns_clean_add(struct mds_ns *ns, const struct mds_inode *in)
{
	uint8_t rec[MDS_INODE_REC_MAX];
	if (!ns->ns_clean_tab || atomic_load(&ns->ns_clean_nr) >= NS_CLEAN_MAX)
		return -ENOSPC;
	size_t len = mds_inode_encode(in, rec);
	struct ns_clean_ent *e = malloc(sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->ce_hash = clean_hash(&in->in_fid);
	e->ce_fid = in->in_fid;
	e->ce_len = len;
	memcpy(e->ce_rec, rec, len);
	pthread_mutex_lock(&ns->ns_clean_lock);
	clean_drop_hash(ns, e->ce_hash); /* (a close of the same FID before it) */
	struct ns_clean_ent **b = clean_bucket(ns, e->ce_hash);
	e->ce_next = *b;
	*b = e;
	atomic_fetch_add(&ns->ns_clean_nr, 1);
	pthread_mutex_unlock(&ns->ns_clean_lock);
	return 0;
}

void ns_clean_forget(struct mds_ns *ns, const struct weir_fid *fid)
{
	if (!ns->ns_clean_tab || !atomic_load(&ns->ns_clean_nr))
		return;
	uint64_t h = clean_hash(fid);
	pthread_mutex_lock(&ns->ns_clean_lock);
	clean_drop_hash(ns, h);
	pthread_mutex_unlock(&ns->ns_clean_lock);
}

/* Take up to \a max entries out of the set into \a out. \return how many. */
static size_t clean_take(struct mds_ns *ns, struct ns_clean_ent **out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&ns->ns_clean_lock);
	for (size_t i = 0; i < NS_CLEAN_BUCKETS && n < max; i++) {
		size_t b = (ns->ns_clean_cursor + i) & (NS_CLEAN_BUCKETS - 1);
		while (ns->ns_clean_tab[b] && n < max) {
			struct ns_clean_ent *e = ns->ns_clean_tab[b];
			ns->ns_clean_tab[b] = e->ce_next;
			out[n++] = e;
			atomic_fetch_sub(&ns->ns_clean_nr, 1);
		}
		if (n == max)
			ns->ns_clean_cursor = b;
	}
	pthread_mutex_unlock(&ns->ns_clean_lock);
	return n;
}

int ns_clean_flush_locked(struct mds_ns *ns, size_t max)
{
	struct ns_clean_ent *ents[NS_CLEAN_BATCH];
	if (max > NS_CLEAN_BATCH)
		max = NS_CLEAN_BATCH;
	size_t n = clean_take(ns, ents, max);
	if (!n)
		return 0;
	int rc = 0;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM; /* the flags stay set on disk: stats glimpse those files */
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t key[WEIR_FID_BYTES];
		weir_fid_pack_be(&ents[i]->ce_fid, key);
		kv_batch_put(b, KV_CF_INODES, key, sizeof(key), ents[i]->ce_rec, ents[i]->ce_len);
	}
	rc = ns_batch_commit(ns, b);
	if (rc)
		WEIR_LOG_WARN("op=clean_flush files=%zu rc=%d: size flags stay set on disk", n, rc);
out_free:
	for (size_t i = 0; i < n; i++)
		free(ents[i]);
	return rc ? rc : (int)n;
}
void ns_clean_flush_group(struct mds_ns *ns)
{
	pthread_rwlock_wrlock(&ns->ns_lock);
	if (atomic_load(&ns->ns_clean_nr) >= NS_CLEAN_BATCH)
		ns_clean_flush_locked(ns, NS_CLEAN_BATCH);
	pthread_rwlock_unlock(&ns->ns_lock);
}

int mds_ns_clean_flush(struct mds_ns *ns)
{
	int total = 0;
	if (!ns->ns_clean_tab)
		return 0;
	/* what is there now, not what closes add meanwhile */
	size_t rounds = atomic_load(&ns->ns_clean_nr) / NS_CLEAN_BATCH + 1;
	while (rounds-- && atomic_load(&ns->ns_clean_nr)) {
		pthread_rwlock_wrlock(&ns->ns_lock);
		int rc = ns_clean_flush_locked(ns, NS_CLEAN_BATCH);
		pthread_rwlock_unlock(&ns->ns_lock);
		if (rc < 0)
			return rc;
		total += rc;
	}
	return total;
}

size_t mds_ns_clean_pending(struct mds_ns *ns)
{
	return ns->ns_clean_tab ? atomic_load(&ns->ns_clean_nr) : 0;
}
