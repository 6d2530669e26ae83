/*
 * oss/fdcache.c - the OSS's cache of open segment files, so that the reads
 * and writes of a hot object do not open, and close, its segment file on
 * every request.
 *
 * Keys: (OST, FID, stripe, segment, mode), mode being read (O_RDONLY) or
 * write (O_WRONLY | O_CREAT): a read-only fd never serves a write, and a
 * write's miss still creates the object. Entries are refcounted while an I/O
 * uses them; an entry that is evicted or invalidated while in use leaves the
 * table at once and its fd is closed by the last oss_fdc_put().
 *
 * Shards: the object part of the key (OST, FID, stripe) is hashed; the hash
 * picks a shard (its own mutex, hash table and LRU list), so every entry of
 * one object is in one shard, in one bucket. Each shard holds at most
 * c_shard_cap entries (the cache at most c_max).
 *
 * Invalidation (oss_obj_destroy, oss_obj_truncate): a cached fd of a file
 * that was unlinked would keep the old inode alive, and a write through it
 * after the object is recreated would be lost. So before the first unlink
 * the remover calls oss_fdc_inval_begin(): under the shard lock it drops
 * every entry of the object and marks the object's generation slot busy
 * (and bumps its generation); after the last unlink oss_fdc_inval_end()
 * unmarks it and bumps the generation again. A miss notes the slot's
 * generation before its open(2) and inserts the fd only when, under the
 * lock, the slot is not busy and its generation has not moved: an open that
 * raced with a removal (and may hold the removed inode) is used for its one
 * I/O and closed, never cached. A slot covers many objects (a hash), so a
 * removal may at worst keep another object's fd out of the cache once.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/** Generation slots per shard. */
#define FDC_GEN_SLOTS 64
/** Most shards (64-core ready); fewer for small caches (at least 4 entries a shard). */
#define FDC_SHARDS_MAX 64

struct oss_fdc_ent {
	/* key */
	const struct oss_ost *fe_ost;
	struct weir_fid fe_fid;
	uint32_t fe_stripe;
	uint64_t fe_seg;
	bool fe_write;
	/* value */
	int fe_fd;
	uint32_t fe_refs;             /* I/Os using it; under the shard lock */
	bool fe_dead;                 /* out of the table: close at the last put */
	uint64_t fe_hash;
	struct oss_fdc_ent *fe_next;      /* bucket chain */
	struct oss_fdc_ent *fe_lru_prev;  /* LRU list: head most recent */
	struct oss_fdc_ent *fe_lru_next;
};

struct fdc_gen {
	uint64_t fg_gen;
	uint32_t fg_busy;             /* removals in progress */
};

struct fdc_shard {
	pthread_mutex_t fs_lock;
	struct oss_fdc_ent **fs_buckets;
	uint32_t fs_nr_buckets;       /* power of 2 */
	uint32_t fs_nr;
	struct oss_fdc_ent *fs_lru_head;
	struct oss_fdc_ent *fs_lru_tail;
	struct fdc_gen fs_gens[FDC_GEN_SLOTS];
} __attribute__((aligned(64)));

struct oss_fdc {
	uint32_t c_max;
	uint32_t c_nr_shards;         /* power of 2 */
	uint32_t c_shard_cap;
	struct fdc_shard *c_shards;
};

static uint64_t fdc_hash(const struct oss_obj *ob)
{
	uint64_t h = weir_mix64((uint64_t)(uintptr_t)ob->ob_ost ^ ob->ob_fid.fid_seq);
	h = weir_mix64(h ^ ob->ob_fid.fid_oid);
	return weir_mix64(h ^ ob->ob_stripe);
}

static struct fdc_shard *fdc_shard(struct oss_fdc *c, uint64_t h)
{
	return &c->c_shards[h & (c->c_nr_shards - 1)];
}

static struct fdc_gen *fdc_gen(struct fdc_shard *s, uint64_t h)
{
	return &s->fs_gens[(h >> 32) % FDC_GEN_SLOTS];
}

static struct oss_fdc_ent **fdc_bucket(struct fdc_shard *s, uint64_t h)
{
	return &s->fs_buckets[(h >> 8) & (s->fs_nr_buckets - 1)];
}

static bool fdc_same_obj(const struct oss_fdc_ent *e, const struct oss_obj *ob)
{
	return e->fe_ost == ob->ob_ost && e->fe_fid.fid_seq == ob->ob_fid.fid_seq &&
	       e->fe_fid.fid_oid == ob->ob_fid.fid_oid && e->fe_stripe == ob->ob_stripe;
}

int oss_fdc_new(uint32_t max, struct oss_fdc **out)
{
	struct oss_fdc *c;
	uint32_t i;

	*out = NULL;
	if (!max)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->c_max = max;
	c->c_nr_shards = 1;
	while (c->c_nr_shards < FDC_SHARDS_MAX && c->c_nr_shards * 2 * 4 <= max)
		c->c_nr_shards *= 2;
	c->c_shard_cap = max / c->c_nr_shards;
	c->c_shards = aligned_alloc(64, c->c_nr_shards * sizeof(*c->c_shards));
	if (!c->c_shards) {
		free(c);
		return -ENOMEM;
	}
	memset(c->c_shards, 0, c->c_nr_shards * sizeof(*c->c_shards));
	for (i = 0; i < c->c_nr_shards; i++) {
		struct fdc_shard *s = &c->c_shards[i];
		s->fs_nr_buckets = 4;
		while (s->fs_nr_buckets < 2 * c->c_shard_cap)
			s->fs_nr_buckets *= 2;
		s->fs_buckets = calloc(s->fs_nr_buckets, sizeof(*s->fs_buckets));
		if (!s->fs_buckets)
			goto out_free;
		pthread_mutex_init(&s->fs_lock, NULL);
	}
	*out = c;
	return 0;

out_free:
	while (i-- > 0) {
		pthread_mutex_destroy(&c->c_shards[i].fs_lock);
		free(c->c_shards[i].fs_buckets);
	}
	free(c->c_shards);
	free(c);
	return -ENOMEM;
}

static void fdc_lru_unlink(struct fdc_shard *s, struct oss_fdc_ent *e)
{
	if (e->fe_lru_prev)
		e->fe_lru_prev->fe_lru_next = e->fe_lru_next;
	else
		s->fs_lru_head = e->fe_lru_next;
	if (e->fe_lru_next)
		e->fe_lru_next->fe_lru_prev = e->fe_lru_prev;
	else
		s->fs_lru_tail = e->fe_lru_prev;
	e->fe_lru_prev = e->fe_lru_next = NULL;
}

static void fdc_lru_push(struct fdc_shard *s, struct oss_fdc_ent *e)
{
	e->fe_lru_prev = NULL;
	e->fe_lru_next = s->fs_lru_head;
	if (s->fs_lru_head)
		s->fs_lru_head->fe_lru_prev = e;
	else
		s->fs_lru_tail = e;
	s->fs_lru_head = e;
}

/*
 * Take \a e out of the table (shard lock held). \return true when the
 * caller must close its fd and free it (nobody uses it); else the last
 * oss_fdc_put() does.
 */
static bool fdc_detach(struct fdc_shard *s, struct oss_fdc_ent *e)
{
	struct oss_fdc_ent **pp = fdc_bucket(s, e->fe_hash);

	while (*pp != e)
		pp = &(*pp)->fe_next;
	*pp = e->fe_next;
	e->fe_next = NULL;
	fdc_lru_unlink(s, e);
	s->fs_nr--;
	e->fe_dead = true;
	return e->fe_refs == 0;
}

static void fdc_ent_free(struct oss_fdc_ent *e)
{
	close(e->fe_fd);
	free(e);
}

void oss_fdc_free(struct oss_fdc *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->c_nr_shards; i++) {
		struct fdc_shard *s = &c->c_shards[i];
		while (s->fs_lru_head) {
			struct oss_fdc_ent *e = s->fs_lru_head;
			if (fdc_detach(s, e))
				fdc_ent_free(e);
			else
				WEIR_LOG_ERROR("fd=%d refs=%u: cached fd still in use at exit",
					       e->fe_fd, e->fe_refs);
		}
		pthread_mutex_destroy(&s->fs_lock);
		free(s->fs_buckets);
	}
	free(c->c_shards);
	free(c);
}

static struct oss_fdc_ent *fdc_lookup(struct fdc_shard *s, uint64_t h, const struct oss_obj *ob,
				  uint64_t seg, bool write)
{
	for (struct oss_fdc_ent *e = *fdc_bucket(s, h); e; e = e->fe_next)
		if (e->fe_hash == h && e->fe_seg == seg && e->fe_write == write &&
		    fdc_same_obj(e, ob))
			return e;
	return NULL;
}

int oss_fdc_get(struct oss_fdc *c, const struct oss_obj *ob, uint64_t seg, bool write,
		struct oss_fdc_ent **ent, int *fd)
{
	int flags = write ? O_WRONLY | O_CREAT : O_RDONLY;
	struct oss_fdc_ent *e, *victim = NULL;
	uint64_t gen;
	int f, rc;

	*ent = NULL;
	if (!c)
		return oss_obj_seg_open(ob, seg, flags, fd);
	uint64_t h = fdc_hash(ob);
	struct fdc_shard *s = fdc_shard(c, h);
	struct fdc_gen *g = fdc_gen(s, h);

	pthread_mutex_lock(&s->fs_lock);
	e = fdc_lookup(s, h, ob, seg, write);
	if (e) {
		e->fe_refs++;
		fdc_lru_unlink(s, e);
		fdc_lru_push(s, e);
		pthread_mutex_unlock(&s->fs_lock);
		*ent = e;
		*fd = e->fe_fd;
		return 0;
	}
	bool busy = g->fg_busy != 0;
	gen = g->fg_gen;
	pthread_mutex_unlock(&s->fs_lock);

	rc = oss_obj_seg_open(ob, seg, flags, &f);
	if (rc)
		return rc;
	*fd = f;
	if (busy)
		return 0; /* a removal is in progress: this fd is for this I/O only */
	e = calloc(1, sizeof(*e));
	if (!e)
		return 0;
	e->fe_ost = ob->ob_ost;
	e->fe_fid = ob->ob_fid;
	e->fe_stripe = ob->ob_stripe;
	e->fe_seg = seg;
	e->fe_write = write;
	e->fe_fd = f;
	e->fe_refs = 1;
	e->fe_hash = h;

	pthread_mutex_lock(&s->fs_lock);
	if (g->fg_busy || g->fg_gen != gen) {
		/* a destroy or truncate ran meanwhile: f may be of an unlinked file */
		pthread_mutex_unlock(&s->fs_lock);
		free(e);
		return 0;
	}
	struct oss_fdc_ent *other = fdc_lookup(s, h, ob, seg, write);
	if (other) {
		/* another loop cached it meanwhile: use that one */
		other->fe_refs++;
		pthread_mutex_unlock(&s->fs_lock);
		free(e);
		close(f);
		*ent = other;
		*fd = other->fe_fd;
		return 0;
	}
	if (s->fs_nr >= c->c_shard_cap && s->fs_lru_tail) {
		struct oss_fdc_ent *t = s->fs_lru_tail;
		if (fdc_detach(s, t))
			victim = t;
	}
	struct oss_fdc_ent **b = fdc_bucket(s, h);
	e->fe_next = *b;
	*b = e;
	fdc_lru_push(s, e);
	s->fs_nr++;
	pthread_mutex_unlock(&s->fs_lock);
	if (victim)
		fdc_ent_free(victim);
	*ent = e;
	return 0;
}

void oss_fdc_hold(struct oss_fdc *c, struct oss_fdc_ent *ent)
{
	struct fdc_shard *s = fdc_shard(c, ent->fe_hash);

	pthread_mutex_lock(&s->fs_lock);
	ent->fe_refs++;
	pthread_mutex_unlock(&s->fs_lock);
}

void oss_fdc_put(struct oss_fdc *c, struct oss_fdc_ent *ent, int fd)
{
	struct oss_fdc_ent *e = ent;

	if (!e) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct fdc_shard *s = fdc_shard(c, e->fe_hash);
	pthread_mutex_lock(&s->fs_lock);
	WEIR_ASSERT(e->fe_refs > 0);
	bool last = --e->fe_refs == 0 && e->fe_dead;
	pthread_mutex_unlock(&s->fs_lock);
	if (last)
		fdc_ent_free(e);
}

/* Drop every cached fd of \a ob and move its slot's generation; \a delta: busy change. */
static void fdc_inval(struct oss_fdc *c, const struct oss_obj *ob, int delta)
{
	struct oss_fdc_ent *freed = NULL;
	uint64_t h = fdc_hash(ob);
	struct fdc_shard *s = fdc_shard(c, h);
	struct fdc_gen *g = fdc_gen(s, h);

	pthread_mutex_lock(&s->fs_lock);
	g->fg_gen++;
	if (delta > 0)
		g->fg_busy++;
	else if (delta < 0 && g->fg_busy)
		g->fg_busy--;
	struct oss_fdc_ent *e = *fdc_bucket(s, h);
	while (e) {
		struct oss_fdc_ent *next = e->fe_next;
		if (e->fe_hash == h && fdc_same_obj(e, ob) && fdc_detach(s, e)) {
			e->fe_next = freed;
			freed = e;
		}
		e = next;
	}
	pthread_mutex_unlock(&s->fs_lock);
	while (freed) {
		e = freed;
		freed = e->fe_next;
		fdc_ent_free(e);
	}
}

void oss_fdc_inval_begin(struct oss_fdc *c, const struct oss_obj *ob)
{
	if (c)
		fdc_inval(c, ob, 1);
}

void oss_fdc_inval_end(struct oss_fdc *c, const struct oss_obj *ob)
{
	if (c)
		fdc_inval(c, ob, -1);
}

uint32_t oss_fdc_capacity(const struct oss_fdc *c)
{
	return c->c_max;
}

uint32_t oss_fdc_count(struct oss_fdc *c)
{
	uint32_t n = 0;

	if (!c)
		return 0;
	for (uint32_t i = 0; i < c->c_nr_shards; i++) {
		struct fdc_shard *s = &c->c_shards[i];
		pthread_mutex_lock(&s->fs_lock);
		n += s->fs_nr;
		pthread_mutex_unlock(&s->fs_lock);
	}
	return n;
}
