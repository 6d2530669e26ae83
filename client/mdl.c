/*
 * client/mdl.c - what this mount caches of the namespace under the MDS's
 * metadata leases (docs/leases.md, mds/mdlease.h): attributes by FID, and
 * names (a directory's name -> FID, or "no such name") under the
 * directory's LOOKUP lease; the callback thread that drops what the MDS
 * calls back and acknowledges it.
 *
 * DESIGN.
 *  - An entry per FID: the lease bits the MDS granted (LOOKUP, ATTR,
 *    LAYOUT), the attributes when ATTR was granted, and, for a directory
 *    with LOOKUP, the names cached in it (each on the directory's list, so
 *    a callback of the directory drops them with it). At most mdl_max
 *    entries (the MDS's cap, ConnectRep.mdl_max): the least recently used
 *    goes first (the MDS still counts it until it calls it back; the
 *    callback then finds nothing to drop).
 *  - Stamps: every event that makes cached state wrong (a callback, a
 *    change this mount makes) takes the next value of a clock and writes
 *    it in the bucket of the FID it concerns (a change by path, whose FIDs
 *    are not known here, writes the global stamp). A request takes the
 *    clock before it is sent (wc_mdl_stamp()); what its reply brings is
 *    cached only when no event touched its bucket (nor the global stamp)
 *    since: a reply that crossed a callback or this mount's own change is
 *    not trusted.
 *  - Trust in time: the MDS evicts a client it has not heard from for a
 *    lease, and then goes on with the changes that waited for that
 *    client's callbacks; so the cache is used only until three quarters of
 *    a lease after the send time of the last MDS_LEASE_POLL that was
 *    answered (a poll is answered at the latest a quarter lease after it
 *    was sent). Past that, and at any new session (an eviction, an MDS
 *    restart: the leases went with the old session), everything is dropped.
 *  - The callback thread ("weir-mdl") keeps one MDS_LEASE_POLL at the MDS;
 *    for each callback it drops the FID's entry (and its names), calls the
 *    mount's invalidation hook (weir_md_inval_set(): weir-fuse tells the
 *    kernel), and acknowledges it in its next poll.
 * Locks: c_lock guards the tables; a leaf (the hook runs without it).
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

#define MDL_BUCKETS	  4096	/* stamp buckets */
#define MDL_MAX_ACKS	  256	/* cookies carried by one poll */
#define MDL_XOK		  4	/* credentials kept per directory as allowed to search it */

struct mdl_name;

struct mdl_ent {
	struct weir_fid e_fid;
	uint32_t e_bits;
	struct wc_attr e_attr;	     /* with MDL_ATTR */
	struct weir_layout *e_lo;    /* with MDL_ATTR, when the reply had it: its first
				      * offsetof(lo_osts) + 4 x lo_stripe_count bytes */
	struct mdl_name *e_names;    /* with MDL_LOOKUP: names cached in this directory */
	uint64_t e_lookup_since;     /* the clock when LOOKUP was cached: names read by
				      * requests sent before are not cached under it */
	uint64_t e_xok[MDL_XOK];     /* with MDL_ATTR, of a directory: credentials (wc_mdl_walk
				      * keys) the MDS let search it; 0: none */
	uint8_t e_xok_next;	     /* the slot the next one takes */
	bool e_complete;	     /* with MDL_LOOKUP: every name of the directory is in
				      * e_names (one this mount made empty, or listed
				      * whole), so a name not there does not exist;
				      * cleared when one is dropped */
	uint64_t e_stamp;	     /* the last event about this FID (stamp()); at its
				      * making, its bucket's: stamp_ok() asks it, not the
				      * bucket, which other FIDs share */
	uint32_t e_name_drops;	     /* names of this directory dropped or not kept without
				      * a stamp (the cap): a listing that saw it change
				      * does not make the directory complete */
	struct mdl_ent *e_hnext;     /* hash chain */
	struct mdl_ent *e_lprev, *e_lnext; /* LRU, most recent at the tail */
};

struct mdl_name {
	struct mdl_ent *n_dir;
	struct weir_fid n_fid; /* 0:0: "no such name" */
	uint8_t n_type;	       /* DT_* of a positive name; 0 (DT_UNKNOWN): not known */
	struct mdl_name *n_hnext;  /* name hash chain */
	struct mdl_name *n_dnext;  /* the directory's list */
	struct mdl_name *n_dprev;
	size_t n_len;
	char n_name[];
};

struct wc_mdl {
	struct weir_fs *c_fs;
	pthread_mutex_t c_lock;
	uint32_t c_max;		/* entries at most */
	bool c_names;		/* names may be served (the caller checks search permission) */
	uint64_t c_session;	/* the session the entries belong to */
	uint64_t c_trust_until_ns; /* monotonic; 0: nothing is trusted */
	uint64_t c_clock;
	uint64_t c_global;	/* stamp of the last event that concerned everything */
	uint64_t c_stamps[MDL_BUCKETS];
	struct mdl_ent **c_ents;
	size_t c_nr_ents, c_nr_buckets;
	struct mdl_name **c_nhash;
	size_t c_nr_names;
	struct mdl_ent *c_lru_head, *c_lru_tail;
	/* the callback thread */
	pthread_t c_thread;
	bool c_running;
	atomic_bool c_stop;
	atomic_bool c_dead;	/* the thread ended (the MDS grants no leases): ask for none */
	pthread_mutex_t c_hook_lock; /* held while the hook runs; guards the two below */
	weir_md_inval_fn c_hook;
	void *c_hook_arg;
	/* counters */
	atomic_uint_fast64_t c_hits, c_misses, c_callbacks, c_polls, c_listings;
};

static uint64_t fid_hash(const struct weir_fid *f)
{
	return weir_mix64(f->fid_seq * 31 + f->fid_oid);
}

static bool fid_eq(const struct weir_fid *a, const struct weir_fid *b)
{
	return a->fid_seq == b->fid_seq && a->fid_oid == b->fid_oid;
}

static uint64_t name_hash(const struct weir_fid *dir, const char *name, size_t len)
{
	uint64_t h = fid_hash(dir) ^ 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ULL;
	return weir_mix64(h);
}

/* ------------------------------------------------------------ tables (c_lock held) */

static struct mdl_ent *ent_find(struct wc_mdl *c, const struct weir_fid *fid)
{
	for (struct mdl_ent *e = c->c_ents[fid_hash(fid) % c->c_nr_buckets]; e; e = e->e_hnext)
		if (fid_eq(&e->e_fid, fid))
			return e;
	return NULL;
}

static void lru_del(struct wc_mdl *c, struct mdl_ent *e)
{
	if (e->e_lprev)
		e->e_lprev->e_lnext = e->e_lnext;
	else
		c->c_lru_head = e->e_lnext;
	if (e->e_lnext)
		e->e_lnext->e_lprev = e->e_lprev;
	else
		c->c_lru_tail = e->e_lprev;
	e->e_lprev = e->e_lnext = NULL;
}

static void lru_add(struct wc_mdl *c, struct mdl_ent *e)
{
	e->e_lprev = c->c_lru_tail;
	e->e_lnext = NULL;
	if (c->c_lru_tail)
		c->c_lru_tail->e_lnext = e;
	else
		c->c_lru_head = e;
	c->c_lru_tail = e;
}

static void name_free(struct wc_mdl *c, struct mdl_name *n)
{
	n->n_dir->e_complete = false; /* a name no longer known */
	n->n_dir->e_name_drops++;
	struct mdl_name **pp = &c->c_nhash[name_hash(&n->n_dir->e_fid, n->n_name, n->n_len) %
					   c->c_nr_buckets];
	for (; *pp; pp = &(*pp)->n_hnext) {
		if (*pp == n) {
			*pp = n->n_hnext;
			break;
		}
	}
	if (n->n_dprev)
		n->n_dprev->n_dnext = n->n_dnext;
	else
		n->n_dir->e_names = n->n_dnext;
	if (n->n_dnext)
		n->n_dnext->n_dprev = n->n_dprev;
	c->c_nr_names--;
	free(n);
}

static void ent_free(struct wc_mdl *c, struct mdl_ent *e)
{
	while (e->e_names)
		name_free(c, e->e_names);
	for (struct mdl_ent **pp = &c->c_ents[fid_hash(&e->e_fid) % c->c_nr_buckets]; *pp;
	     pp = &(*pp)->e_hnext) {
		if (*pp == e) {
			*pp = e->e_hnext;
			break;
		}
	}
	lru_del(c, e);
	c->c_nr_ents--;
	free(e->e_lo);
	free(e);
}

static void drop_all(struct wc_mdl *c)
{
	while (c->c_lru_head)
		ent_free(c, c->c_lru_head);
}

/* An event about \a fid (NULL: everything): what was read before it is not cached. */
static void stamp(struct wc_mdl *c, const struct weir_fid *fid)
{
	uint64_t t = ++c->c_clock;
	if (fid) {
		c->c_stamps[fid_hash(fid) % MDL_BUCKETS] = t;
		struct mdl_ent *e = ent_find(c, fid);
		if (e)
			e->e_stamp = t;
	} else {
		c->c_global = t;
	}
}

/*
 * Did no event touch \a fid (nor everything) since \a t0? Asked of the
 * FID's entry when it has one (every event since it was made stamped it,
 * and it started from its bucket's), else of its bucket, which other FIDs
 * share: a create in a directory while another file's close stamps the
 * same bucket must not look like a change of the directory.
 */
static bool stamp_ok(struct wc_mdl *c, uint64_t t0, const struct weir_fid *fid)
{
	if (!t0 || c->c_global > t0)
		return false;
	const struct mdl_ent *e = ent_find(c, fid);
	return (e ? e->e_stamp : c->c_stamps[fid_hash(fid) % MDL_BUCKETS]) <= t0;
}

/* Are the entries usable now? Drops them when the session changed or trust ran out. */
static bool trusted(struct wc_mdl *c)
{
	uint64_t s = __atomic_load_n(&c->c_fs->fs_session, __ATOMIC_RELAXED);
	if (s != c->c_session) {
		drop_all(c);
		stamp(c, NULL);
		c->c_session = s;
		c->c_trust_until_ns = 0;
		return false;
	}
	if (!c->c_trust_until_ns || weir_now_ns() >= c->c_trust_until_ns) {
		if (c->c_nr_ents)
			drop_all(c);
		return false;
	}
	return true;
}

/* The entry of \a fid, made (evicting the least recently used over the cap) when \a make. */
static struct mdl_ent *ent_get(struct wc_mdl *c, const struct weir_fid *fid, bool make)
{
	struct mdl_ent *e = ent_find(c, fid);
	if (e) {
		lru_del(c, e);
		lru_add(c, e);
		return e;
	}
	if (!make)
		return NULL;
	if (c->c_nr_ents >= c->c_max && c->c_lru_head)
		ent_free(c, c->c_lru_head);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->e_fid = *fid;
	e->e_stamp = c->c_stamps[fid_hash(fid) % MDL_BUCKETS]; /* (the events before it) */
	size_t b = fid_hash(fid) % c->c_nr_buckets;
	e->e_hnext = c->c_ents[b];
	c->c_ents[b] = e;
	lru_add(c, e);
	c->c_nr_ents++;
	return e;
}

/* ------------------------------------------------------------ what libweir calls */

void wc_mdl_closed(struct weir_fs *fs, const struct weir_fid *fid)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return;
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *e = ent_find(c, fid);
	/* unlinked: this close may have been the last, and destroyed it (the
	 * MDS does not call back the closer) */
	if (e && (e->e_bits & WEIR__MDL_BITS__MDL_ATTR) && e->e_attr.a_nlink == 0) {
		ent_free(c, e);
		stamp(c, fid);
	}
	pthread_mutex_unlock(&c->c_lock);
}

bool wc_mdl_names(struct weir_fs *fs)
{
	struct wc_mdl *c = fs->fs_mdl;
	return c && c->c_names && !atomic_load(&c->c_dead);
}

uint64_t wc_mdl_stamp(struct weir_fs *fs)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return 0;
	pthread_mutex_lock(&c->c_lock);
	uint64_t t = ++c->c_clock; /* never 0 */
	pthread_mutex_unlock(&c->c_lock);
	return t;
}

uint32_t wc_mdl_want(struct weir_fs *fs, uint64_t *session)
{
	struct wc_mdl *c = fs->fs_mdl;
	*session = 0;
	if (!c || atomic_load(&c->c_dead))
		return 0;
	*session = wc_session_get(fs, NULL);
	return *session ? WEIR__MDL_BITS__MDL_LOOKUP | WEIR__MDL_BITS__MDL_ATTR : 0;
}

static size_t lo_bytes(const struct weir_layout *lo)
{
	return offsetof(struct weir_layout, lo_osts) +
	       WEIR_MIN(lo->lo_stripe_count, (uint32_t)WEIR_LAYOUT_MAX_STRIPES) * sizeof(uint32_t);
}

bool wc_mdl_attr_get(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
		     struct weir_layout *lo)
{
	struct wc_mdl *c = fs->fs_mdl;
	bool hit = false;
	if (!c)
		return false;
	pthread_mutex_lock(&c->c_lock);
	if (trusted(c)) {
		struct mdl_ent *e = ent_get(c, fid, false);
		if (e && (e->e_bits & WEIR__MDL_BITS__MDL_ATTR) && (!lo || e->e_lo)) {
			*a = e->e_attr;
			if (lo) {
				memset(lo, 0, sizeof(*lo));
				memcpy(lo, e->e_lo, lo_bytes(e->e_lo));
			}
			hit = true;
		}
	}
	pthread_mutex_unlock(&c->c_lock);
	atomic_fetch_add(hit ? &c->c_hits : &c->c_misses, 1);
	return hit;
}

/* Cache \a bits leased on \a a's FID, with \a a (and \a lo) under ATTR; c_lock held. */
static void attr_put_locked(struct wc_mdl *c, uint32_t bits, const struct wc_attr *a,
			    const struct weir_layout *lo)
{
	struct mdl_ent *e = ent_get(c, &a->a_fid, true);
	if (!e || !bits)
		return;
	if ((bits & WEIR__MDL_BITS__MDL_LOOKUP) && !(e->e_bits & WEIR__MDL_BITS__MDL_LOOKUP))
		e->e_lookup_since = ++c->c_clock;
	e->e_bits |= bits;
	if (bits & WEIR__MDL_BITS__MDL_ATTR) {
		e->e_attr = *a;
		if (lo) {
			struct weir_layout *copy = malloc(lo_bytes(lo));
			if (copy)
				memcpy(copy, lo, lo_bytes(lo));
			free(e->e_lo);
			e->e_lo = copy;
		}
	}
}

void wc_mdl_attr_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint32_t bits,
		     const struct wc_attr *a, const struct weir_layout *lo)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !bits)
		return;
	pthread_mutex_lock(&c->c_lock);
	if (trusted(c) && session != c->c_session)
		bits = 0; /* granted to a session this mount no longer has */
	bool ok = trusted(c) && stamp_ok(c, t0, &a->a_fid);
	if (!ok)
		WEIR_LOG_DEBUG("fid=" WEIR_FID_F " t0=%llu: not cached (a callback or a change of"
			       " this mount since the request, or no answered lease poll lately)",
			       WEIR_FID_P(&a->a_fid), (unsigned long long)t0);
	if (ok)
		attr_put_locked(c, bits, a, lo);
	pthread_mutex_unlock(&c->c_lock);
}

/* The cached \a name (\a len bytes) of directory \a d, or NULL; c_lock held. */
static struct mdl_name *name_find(struct wc_mdl *c, const struct mdl_ent *d, const char *name,
				  size_t len)
{
	struct mdl_name *n = c->c_nhash[name_hash(&d->e_fid, name, len) % c->c_nr_buckets];
	while (n && (n->n_dir != d || n->n_len != len || memcmp(n->n_name, name, len)))
		n = n->n_hnext;
	return n;
}

/*
 * \a name (\a len bytes) of directory \a d is \a fid (NULL: absent); c_lock
 * held. A name that cannot be kept (the cap, no memory) ends \a d's
 * completeness.
 */
static void name_set_locked(struct wc_mdl *c, struct mdl_ent *d, const char *name, size_t len,
			    const struct weir_fid *fid, uint8_t type)
{
	size_t b = name_hash(&d->e_fid, name, len) % c->c_nr_buckets;
	struct mdl_name *n = name_find(c, d, name, len);
	if (!n && c->c_nr_names < (size_t)c->c_max * 4 && (n = calloc(1, sizeof(*n) + len + 1))) {
		n->n_dir = d;
		n->n_len = len;
		memcpy(n->n_name, name, len);
		n->n_hnext = c->c_nhash[b];
		c->c_nhash[b] = n;
		n->n_dnext = d->e_names;
		if (d->e_names)
			d->e_names->n_dprev = n;
		d->e_names = n;
		c->c_nr_names++;
	}
	if (n) {
		/* (the same object with no type given: the one known stays) */
		bool same = fid && fid_eq(&n->n_fid, fid);
		n->n_type = !fid ? 0 : type ? type : same ? n->n_type : 0;
		n->n_fid = fid ? *fid : (struct weir_fid){ 0, 0 };
	} else {
		d->e_complete = false;
		d->e_name_drops++;
	}
}

void wc_mdl_dir_made(struct weir_fs *fs, uint64_t t0, const struct weir_fid *dir)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !c->c_names)
		return;
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *d = trusted(c) && stamp_ok(c, t0, dir) ? ent_find(c, dir) : NULL;
	if (d && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) && !d->e_names)
		d->e_complete = true;
	pthread_mutex_unlock(&c->c_lock);
}

int wc_mdl_name_get(struct weir_fs *fs, const struct weir_fid *dir, const char *name,
		    struct weir_fid *fid)
{
	struct wc_mdl *c = fs->fs_mdl;
	int rc = -EAGAIN;
	if (!c || !c->c_names)
		return -EAGAIN;
	size_t len = strlen(name);
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *d = trusted(c) ? ent_get(c, dir, false) : NULL;
	if (d && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP)) {
		struct mdl_name *n = name_find(c, d, name, len);
		if (n && (n->n_fid.fid_seq || n->n_fid.fid_oid)) {
			*fid = n->n_fid;
			rc = 0;
		} else if (n || d->e_complete) {
			rc = -ENOENT; /* cached absent, or not in a complete directory */
		}
	}
	pthread_mutex_unlock(&c->c_lock);
	atomic_fetch_add(rc != -EAGAIN ? &c->c_hits : &c->c_misses, 1);
	return rc;
}

void wc_mdl_name_put(struct weir_fs *fs, uint64_t t0, const struct weir_fid *dir,
		     const char *name, const struct weir_fid *fid, uint8_t type)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !c->c_names)
		return;
	size_t len = strlen(name);
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *d = trusted(c) && stamp_ok(c, t0, dir) ? ent_get(c, dir, false) : NULL;
	/* the directory's lease must predate the request: a name read before
	 * the MDS granted it may have changed without a callback to this mount */
	if (d && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) && d->e_lookup_since < t0)
		name_set_locked(c, d, name, len, fid, type);
	pthread_mutex_unlock(&c->c_lock);
}

/* ------------------------------------------------------------ listings */

uint32_t wc_mdl_dir_drops(struct weir_fs *fs, const struct weir_fid *dir)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !c->c_names)
		return 0;
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *d = ent_find(c, dir);
	uint32_t drops = d ? d->e_name_drops : 0;
	pthread_mutex_unlock(&c->c_lock);
	return drops;
}

void wc_mdl_dir_listed(struct weir_fs *fs, const struct weir_fid *dir, uint64_t t0,
		       uint32_t drops)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !c->c_names)
		return;
	pthread_mutex_lock(&c->c_lock);
	/*
	 * Every name the listing returned was cached as it came (under the
	 * LOOKUP lease held since before its first page), none was dropped
	 * since (e_name_drops), and nothing touched the directory since the
	 * first page went (its stamp): the names cached are all it has. A name
	 * cached but not listed cannot be: it would have been called back.
	 */
	struct mdl_ent *d = trusted(c) && stamp_ok(c, t0, dir) ? ent_find(c, dir) : NULL;
	if (d && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) && d->e_lookup_since < t0 &&
	    d->e_name_drops == drops)
		d->e_complete = true;
	pthread_mutex_unlock(&c->c_lock);
}

/* "." or ".." (a walk caches ".." as a name: not an entry of a listing) */
static bool name_is_dots(const struct mdl_name *n)
{
	return n->n_name[0] == '.' && (n->n_len == 1 || (n->n_len == 2 && n->n_name[1] == '.'));
}

static int dsnap_cmp(const void *a, const void *b)
{
	const struct wc_dsnap_ent *x = a, *y = b;
	if (x->se_cookie != y->se_cookie)
		return x->se_cookie < y->se_cookie ? -1 : 1;
	return strcmp(x->se_name, y->se_name);
}

int wc_mdl_dir_snap(struct weir_fs *fs, const struct weir_fid *dir, uint64_t after, bool plus,
		    struct wc_dsnap *snap)
{
	struct wc_mdl *c = fs->fs_mdl;
	memset(snap, 0, sizeof(*snap));
	if (!c || !c->c_names)
		return -EAGAIN;
	int rc = -EAGAIN;
	size_t nr = 0, bytes = 0;
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *d = trusted(c) ? ent_get(c, dir, false) : NULL; /* (used: LRU) */
	if (!d || !(d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) || !d->e_complete)
		goto out;
	/*
	 * The type of each name, and for readdirplus the attributes the caller
	 * will ask for next: a name without them is better listed by the MDS
	 * (one READDIR per 1,024 entries, not a GETATTR each). Checked before
	 * anything is allocated.
	 */
	for (const struct mdl_name *n = d->e_names; n; n = n->n_dnext) {
		if (weir_fid_is_zero(&n->n_fid) || name_is_dots(n))
			continue;
		const struct mdl_ent *e = n->n_type && !plus ? NULL : ent_find(c, &n->n_fid);
		bool attr = e && (e->e_bits & WEIR__MDL_BITS__MDL_ATTR);
		if ((!n->n_type && !attr) || (plus && !attr))
			goto out;
		nr++;
		bytes += n->n_len + 1;
	}
	snap->s_ents = malloc((nr ? nr : 1) * sizeof(*snap->s_ents));
	snap->s_names = malloc(bytes ? bytes : 1);
	if (!snap->s_ents || !snap->s_names)
		goto out;
	size_t k = 0;
	char *p = snap->s_names;
	for (const struct mdl_name *n = d->e_names; n; n = n->n_dnext) {
		if (weir_fid_is_zero(&n->n_fid) || name_is_dots(n))
			continue;
		uint64_t cookie = weir_name_cookie(n->n_name, n->n_len);
		if (cookie <= after)
			continue;
		uint8_t type = n->n_type;
		if (!type) /* (attributes cached: checked above) */
			type = (uint8_t)IFTODT(ent_find(c, &n->n_fid)->e_attr.a_mode);
		struct wc_dsnap_ent *se = &snap->s_ents[k++];
		se->se_cookie = cookie;
		se->se_fid = n->n_fid;
		se->se_type = type;
		se->se_name = p;
		memcpy(p, n->n_name, n->n_len);
		p[n->n_len] = '\0';
		p += n->n_len + 1;
	}
	snap->s_nr = k;
	snap->s_t0 = ++c->c_clock; /* what the snapshot saw; wc_mdl_dir_snap_ok() */
	rc = 0;
out:
	pthread_mutex_unlock(&c->c_lock);
	if (rc) {
		wc_mdl_dir_snap_free(snap);
		return rc;
	}
	qsort(snap->s_ents, snap->s_nr, sizeof(*snap->s_ents), dsnap_cmp);
	atomic_fetch_add(&c->c_listings, 1);
	return 0;
}

bool wc_mdl_dir_snap_ok(struct weir_fs *fs, const struct weir_fid *dir, const struct wc_dsnap *snap)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return false;
	pthread_mutex_lock(&c->c_lock);
	/* no callback, no change by this mount, no name dropped (completeness
	 * kept), and the leases still trusted */
	const struct mdl_ent *d = trusted(c) && stamp_ok(c, snap->s_t0, dir) ? ent_find(c, dir) : NULL;
	bool ok = d && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) && d->e_complete;
	pthread_mutex_unlock(&c->c_lock);
	return ok;
}

void wc_mdl_dir_snap_free(struct wc_dsnap *snap)
{
	free(snap->s_ents);
	free(snap->s_names);
	memset(snap, 0, sizeof(*snap));
}

void wc_mdl_changed(struct weir_fs *fs, const struct weir_fid *fid)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return;
	pthread_mutex_lock(&c->c_lock);
	stamp(c, fid);
	if (!fid) {
		drop_all(c);
	} else {
		struct mdl_ent *e = ent_find(c, fid);
		if (e)
			ent_free(c, e);
	}
	pthread_mutex_unlock(&c->c_lock);
}

void wc_mdl_changed_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint32_t bits,
			const struct wc_attr *a, const struct weir_layout *lo)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return;
	pthread_mutex_lock(&c->c_lock);
	/* checked before this change's own stamp, as wc_mdl_attr_put() would */
	bool fresh = trusted(c) && session == c->c_session && stamp_ok(c, t0, &a->a_fid);
	struct mdl_ent *e = ent_find(c, &a->a_fid);
	if (e)
		ent_free(c, e);
	stamp(c, &a->a_fid); /* a reply in flight from before is not cached */
	if (fresh)
		attr_put_locked(c, bits, a, lo);
	pthread_mutex_unlock(&c->c_lock);
}

void wc_mdl_changed_name(struct weir_fs *fs, const struct weir_fid *dir, const char *name,
			 bool child, uint64_t t0, const struct weir_fid *now,
			 const struct wc_attr *parent, const struct weir_fid *victim)
{
	struct wc_mdl *c = fs->fs_mdl;
	bool child_known = false;
	if (!c)
		return;
	size_t len = strlen(name);
	pthread_mutex_lock(&c->c_lock);
	/* what the name is now may be cached when nothing touched the
	 * directory since the request went (no callback, no other change of
	 * this mount), checked before this change's own stamp */
	bool fresh = t0 && trusted(c) && stamp_ok(c, t0, dir);
	bool keep = fresh && now;
	stamp(c, dir);
	struct mdl_ent *d = ent_find(c, dir);
	/* this mount's change of a name of a directory it knows completely:
	 * complete again once the result is cached below */
	bool was_complete = d && d->e_complete && fresh;
	if (d && fresh && parent && weir_fid_eq(&parent->a_fid, dir) &&
	    (d->e_bits & WEIR__MDL_BITS__MDL_ATTR)) {
		/*
		 * Its attributes after the change, from the reply, under the
		 * ATTR lease it held before the request went: the MDS does not
		 * call back the changer, so the lease stands (another client's
		 * change calls it back, and one since the request stamped it).
		 * Its default layout does not change with a name.
		 */
		d->e_attr = *parent;
	} else if (d) {
		d->e_bits &= ~(uint32_t)WEIR__MDL_BITS__MDL_ATTR; /* its times; its other names stay */
		memset(d->e_xok, 0, sizeof(d->e_xok)); /* (kept only with ATTR) */
		free(d->e_lo); /* (kept only with ATTR) */
		d->e_lo = NULL;
	}
	if (d) {
		d->e_complete = false; /* the name's result may not be cached below */
		for (struct mdl_name *n = c->c_nhash[name_hash(dir, name, len) % c->c_nr_buckets];
		     n; n = n->n_hnext) {
			if (n->n_dir != d || n->n_len != len || memcmp(n->n_name, name, len))
				continue;
			if (n->n_fid.fid_seq || n->n_fid.fid_oid) {
				struct weir_fid f = n->n_fid;
				stamp(c, &f);
				struct mdl_ent *e = ent_find(c, &f);
				if (e && e != d)
					ent_free(c, e);
				/* (the reply's object, when it says another: the name
				 * changed meanwhile, its callback still on the way) */
				child_known = !victim || weir_fid_is_zero(victim) ||
					      weir_fid_eq(victim, &f);
			}
			name_free(c, n);
			break;
		}
	}
	if (child && !child_known && victim && !weir_fid_is_zero(victim) &&
	    !weir_fid_eq(victim, dir)) {
		/* the name was not cached (or led elsewhere), and the reply names
		 * its object: its attributes, cached by FID, go (its other names
		 * still lead to it) */
		stamp(c, victim);
		struct mdl_ent *e = ent_find(c, victim);
		if (e)
			ent_free(c, e);
	} else if (child && !child_known) {
		/* the object's attributes may be cached under its FID, unknown here */
		stamp(c, NULL);
		drop_all(c);
		keep = false;
	}
	/*
	 * The change's result, under the directory's LOOKUP lease (granted
	 * before the request: names read earlier are not trusted under it).
	 * The MDS does not call back the changer, so the lease stands; a
	 * later change of the name by another client calls it back.
	 */
	if (keep && (d = ent_find(c, dir)) && (d->e_bits & WEIR__MDL_BITS__MDL_LOOKUP) &&
	    d->e_lookup_since < t0) {
		d->e_complete = was_complete;
		name_set_locked(c, d, name, len, weir_fid_is_zero(now) ? NULL : now, 0);
	}
	pthread_mutex_unlock(&c->c_lock);
}

#define MDL_DIR_BITS (WEIR__MDL_BITS__MDL_LOOKUP | WEIR__MDL_BITS__MDL_ATTR)

void wc_mdl_walk_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint64_t cred_key,
		     const struct wc_walk_step *steps, size_t nr)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !nr || !cred_key)
		return;
	pthread_mutex_lock(&c->c_lock);
	bool ok = trusted(c) && session == c->c_session;
	for (size_t i = 0; ok && i < nr; i++) {
		const struct wc_walk_step *st = &steps[i];
		/* the name and the search right need both leases, granted in the
		 * same reply that read them (the MDS's generation check) */
		if ((st->ws_bits & MDL_DIR_BITS) != MDL_DIR_BITS || !S_ISDIR(st->ws_dir.a_mode) ||
		    !stamp_ok(c, t0, &st->ws_dir.a_fid))
			break;
		attr_put_locked(c, st->ws_bits, &st->ws_dir, NULL);
		struct mdl_ent *d = ent_find(c, &st->ws_dir.a_fid);
		if (!d)
			break;
		bool known = false;
		for (int k = 0; k < MDL_XOK; k++)
			known |= d->e_xok[k] == cred_key;
		if (!known) {
			d->e_xok[d->e_xok_next] = cred_key;
			d->e_xok_next = (uint8_t)((d->e_xok_next + 1) % MDL_XOK);
		}
		bool to_dir = i + 1 < nr && fid_eq(&steps[i + 1].ws_dir.a_fid, &st->ws_child);
		name_set_locked(c, d, st->ws_name, strlen(st->ws_name), &st->ws_child,
				st->ws_child_type ? st->ws_child_type : to_dir ? DT_DIR : 0);
	}
	pthread_mutex_unlock(&c->c_lock);
}

int wc_mdl_walk(struct weir_fs *fs, uint64_t cred_key, const struct weir_fid *at,
		const char *path, bool nofollow, bool count, bool remote_dir, struct wc_attr *a,
		struct weir_layout *lo)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !cred_key || !path || !*path || atomic_load(&c->c_dead))
		return -EAGAIN;
	size_t plen = strlen(path);
	if (path[plen - 1] == '/')
		return -EAGAIN; /* a trailing slash: the MDS's rules */
	struct weir_fid cur = (path[0] == '/' || !at) ? fs->fs_root : *at;
	int rc = -EAGAIN;
	pthread_mutex_lock(&c->c_lock);
	if (!trusted(c))
		goto out;
	const char *p = path;
	for (;;) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			goto out;
		struct mdl_ent *d = ent_find(c, &cur);
		if (!d || (d->e_bits & MDL_DIR_BITS) != MDL_DIR_BITS || !S_ISDIR(d->e_attr.a_mode))
			goto out;
		bool xok = false;
		for (int k = 0; k < MDL_XOK; k++)
			xok |= d->e_xok[k] == cred_key;
		if (!xok)
			goto out;
		struct mdl_name *n = name_find(c, d, p, len);
		if (n && weir_fid_is_zero(&n->n_fid)) {
			rc = -ENOENT; /* known absent, the directory searchable */
			goto out;
		}
		if (!n) {
			if (d->e_complete)
				rc = -ENOENT;
			goto out;
		}
		struct mdl_ent *o = ent_find(c, &n->n_fid);
		if (!e && remote_dir && !lo && n->n_type == DT_DIR && weir_fid_mdt(&n->n_fid) != 0 &&
		    (!o || !(o->e_bits & WEIR__MDL_BITS__MDL_ATTR))) {
			/* a directory of MDT k (no leases there): its FID alone,
			 * under the name's lease; MDT k checks the rest */
			memset(a, 0, sizeof(*a));
			a->a_fid = n->n_fid;
			a->a_mode = S_IFDIR;
			rc = 0;
			goto out;
		}
		if (!o || !(o->e_bits & WEIR__MDL_BITS__MDL_ATTR))
			goto out;
		if (S_ISLNK(o->e_attr.a_mode) && (e || !nofollow))
			goto out; /* a symlink to follow: the MDS does */
		if (!e) { /* the last name */
			if (lo && !o->e_lo)
				goto out;
			*a = o->e_attr;
			if (lo) {
				memset(lo, 0, sizeof(*lo));
				memcpy(lo, o->e_lo, lo_bytes(o->e_lo));
			}
			lru_del(c, o);
			lru_add(c, o);
			rc = 0;
			goto out;
		}
		cur = n->n_fid;
		p = e;
		while (*p == '/')
			p++;
		if (!*p)
			goto out; /* (a trailing slash, seen above) */
	}
out:
	pthread_mutex_unlock(&c->c_lock);
	if (count)
		atomic_fetch_add(rc != -EAGAIN ? &c->c_hits : &c->c_misses, 1);
	return rc;
}

uint32_t wc_mdl_held(struct weir_fs *fs, const struct weir_fid *fid, uint32_t *valid_ms)
{
	struct wc_mdl *c = fs->fs_mdl;
	uint32_t bits = 0;
	if (valid_ms)
		*valid_ms = 0;
	if (!c)
		return 0;
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *e = trusted(c) ? ent_find(c, fid) : NULL;
	if (e) {
		bits = e->e_bits;
		uint64_t now = weir_now_ns();
		if (valid_ms && c->c_trust_until_ns > now)
			*valid_ms = (uint32_t)WEIR_MIN((c->c_trust_until_ns - now) / 1000000ULL,
						       (uint64_t)UINT32_MAX);
	}
	pthread_mutex_unlock(&c->c_lock);
	return bits;
}

/* ------------------------------------------------------------ the callback thread */

static void mdl_sleep_ms(struct wc_mdl *c, uint32_t ms)
{
	for (uint32_t left = ms; left && !atomic_load(&c->c_stop);) {
		uint32_t step = WEIR_MIN(left, 50U);
		struct timespec ts = { 0, (long)step * 1000000L };
		nanosleep(&ts, NULL);
		left -= step;
	}
}

static void *mdl_main(void *arg)
{
	struct wc_mdl *c = arg;
	struct weir_fs *fs = c->c_fs;
	uint64_t acks[MDL_MAX_ACKS];
	size_t nr_acks = 0;
	uint32_t backoff = 0;

	weir_thread_name("weir-mdl");
	while (!atomic_load(&c->c_stop)) {
		Weir__LeasePollReq req = WEIR__LEASE_POLL_REQ__INIT;
		Weir__LeasePollRep *rep = NULL;
		uint32_t lease_ms = fs->fs_lease_ms ? fs->fs_lease_ms : 30000;
		uint64_t session = wc_session_get(fs, NULL);
		req.session = session;
		req.acks = nr_acks ? acks : NULL;
		req.n_acks = nr_acks;
		/* nothing trusted yet (a mount, a new session, after a failure): an
		 * answer at once starts the trust; then a long poll */
		pthread_mutex_lock(&c->c_lock);
		bool trusting = c->c_trust_until_ns != 0;
		pthread_mutex_unlock(&c->c_lock);
		req.wait_ms = trusting ? WEIR_MAX(lease_ms / 4, 50U) : 0;
		uint64_t sent = weir_now_ns();
		/* bounded, so that umount waits for a server that is away no longer than this */
		uint32_t tmo = req.wait_ms + WEIR_MIN(fs->fs_rpc_timeout_ms, 5000U);
		int rc = session ? wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_LEASE_POLL, &req.base,
						   &weir__lease_poll_rep__descriptor, (void **)&rep,
						   tmo)
				 : -ESTALE;
		if (atomic_load(&c->c_stop)) {
			if (rep)
				protobuf_c_message_free_unpacked(&rep->base, NULL);
			break;
		}
		if (rc) {
			WEIR_LOG_DEBUG("mds=%s session=%#llx rc=%d: lease poll failed", fs->fs_mds_addr,
				       (unsigned long long)session, rc);
			/* nothing is trusted until a poll is answered again */
			pthread_mutex_lock(&c->c_lock);
			c->c_trust_until_ns = 0;
			drop_all(c);
			stamp(c, NULL);
			pthread_mutex_unlock(&c->c_lock);
			nr_acks = 0; /* a new session: the old one's callbacks are gone with it */
			if (rc == -ESTALE && session)
				wc_session_lost(fs, session);
			if (rc == -EOPNOTSUPP) {
				WEIR_LOG_INFO("mds=%s: no metadata leases; caching nothing",
					      fs->fs_mds_addr);
				atomic_store(&c->c_dead, true);
				break;
			}
			backoff = WEIR_MIN(backoff ? backoff * 2 : 50U, 2000U);
			mdl_sleep_ms(c, backoff);
			continue;
		}
		backoff = 0;
		atomic_fetch_add(&c->c_polls, 1);
		nr_acks = 0;
		pthread_mutex_lock(&c->c_lock);
		if (c->c_session != session) { /* the entries are another session's */
			drop_all(c);
			stamp(c, NULL);
			c->c_session = session;
		}
		for (size_t i = 0; i < rep->n_callbacks; i++) {
			const Weir__LeaseCallback *cb = rep->callbacks[i];
			struct weir_fid fid;
			wc_fid_from_pb(cb->fid, &fid);
			stamp(c, &fid);
			struct mdl_ent *e = ent_find(c, &fid);
			if (e)
				ent_free(c, e);
		}
		c->c_trust_until_ns = sent + (uint64_t)lease_ms * 750000ULL; /* 3/4 lease */
		pthread_mutex_unlock(&c->c_lock);
		pthread_mutex_lock(&c->c_hook_lock);
		weir_md_inval_fn hook = c->c_hook;
		void *hook_arg = c->c_hook_arg;
		for (size_t i = 0; i < rep->n_callbacks; i++) {
			const Weir__LeaseCallback *cb = rep->callbacks[i];
			struct weir_fid fid;
			wc_fid_from_pb(cb->fid, &fid);
			weir_fid_t api = { .seq = fid.fid_seq, .oid = fid.fid_oid };
			if (hook)
				hook(hook_arg, &api, cb->bits); /* before the ack: the kernel forgets first */
			if (nr_acks < MDL_MAX_ACKS)
				acks[nr_acks++] = cb->cookie;
			atomic_fetch_add(&c->c_callbacks, 1);
		}
		pthread_mutex_unlock(&c->c_hook_lock);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	return NULL;
}

/* ------------------------------------------------------------ start, stop, API */

int wc_mdl_start(struct weir_fs *fs, uint32_t mdl_max, bool names)
{
	const char *env = getenv("WEIR_MD_CACHE");
	if (!mdl_max || !fs->fs_session || (env && !strcmp(env, "0")))
		return 0; /* the MDS grants none, or caching is off: every call asks it */
	struct wc_mdl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->c_fs = fs;
	c->c_max = mdl_max;
	c->c_names = names;
	c->c_session = fs->fs_session;
	c->c_nr_buckets = WEIR_MAX((size_t)mdl_max / 2, 1024UL);
	c->c_ents = calloc(c->c_nr_buckets, sizeof(*c->c_ents));
	c->c_nhash = calloc(c->c_nr_buckets, sizeof(*c->c_nhash));
	if (!c->c_ents || !c->c_nhash) {
		free(c->c_ents);
		free(c->c_nhash);
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->c_lock, NULL);
	pthread_mutex_init(&c->c_hook_lock, NULL);
	fs->fs_mdl = c;
	int rc = -pthread_create(&c->c_thread, NULL, mdl_main, c);
	if (rc) {
		fs->fs_mdl = NULL;
		pthread_mutex_destroy(&c->c_lock);
		pthread_mutex_destroy(&c->c_hook_lock);
		free(c->c_ents);
		free(c->c_nhash);
		free(c);
		return rc;
	}
	c->c_running = true;
	return 0;
}

void wc_mdl_stopping(struct weir_fs *fs)
{
	if (fs->fs_mdl)
		atomic_store(&fs->fs_mdl->c_stop, true);
}

void wc_mdl_stop(struct weir_fs *fs)
{
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return;
	atomic_store(&c->c_stop, true);
	/* its poll ends when the session does (umount's MDS_DISCONNECT) or at its wait */
	if (c->c_running)
		pthread_join(c->c_thread, NULL);
	fs->fs_mdl = NULL;
	drop_all(c);
	pthread_mutex_destroy(&c->c_lock);
	pthread_mutex_destroy(&c->c_hook_lock);
	free(c->c_ents);
	free(c->c_nhash);
	free(c);
}

int weir_md_inval_set(weir_fs_t *fs, weir_md_inval_fn fn, void *arg)
{
	if (!fs)
		return -EINVAL;
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&c->c_hook_lock);
	c->c_hook = fn;
	c->c_hook_arg = arg;
	pthread_mutex_unlock(&c->c_hook_lock);
	return 0;
}

unsigned weir_md_leased(weir_fs_t *fs, const weir_fid_t *fid, uint32_t *valid_ms)
{
	if (valid_ms)
		*valid_ms = 0;
	if (!fs || !fid)
		return 0;
	struct weir_fid f = { fid->seq, fid->oid };
	return wc_mdl_held(fs, &f, valid_ms);
}

int weir_md_name_leased(weir_fs_t *fs, const weir_fid_t *dir, const char *name, weir_fid_t *fid,
			uint32_t *valid_ms)
{
	if (valid_ms)
		*valid_ms = 0;
	if (!fs || !dir || !name || !fid)
		return 0;
	struct wc_mdl *c = fs->fs_mdl;
	if (!c || !c->c_names)
		return 0;
	struct weir_fid d = { dir->seq, dir->oid };
	size_t len = strlen(name);
	int rc = 0;
	if (len == 0 || len > WC_NAME_MAX || strchr(name, '/'))
		return 0; /* not a name: the MDS's lookup says why (ENAMETOOLONG...) */
	pthread_mutex_lock(&c->c_lock);
	struct mdl_ent *e = trusted(c) ? ent_find(c, &d) : NULL;
	if (e && (e->e_bits & WEIR__MDL_BITS__MDL_LOOKUP)) {
		struct mdl_name *n = name_find(c, e, name, len);
		if (n || e->e_complete) {
			fid->seq = n ? n->n_fid.fid_seq : 0;
			fid->oid = n ? n->n_fid.fid_oid : 0;
			rc = 1;
			uint64_t now = weir_now_ns();
			if (valid_ms && c->c_trust_until_ns > now)
				*valid_ms = (uint32_t)WEIR_MIN((c->c_trust_until_ns - now) / 1000000ULL,
							       (uint64_t)UINT32_MAX);
		}
	}
	pthread_mutex_unlock(&c->c_lock);
	return rc;
}

int weir_md_stats(weir_fs_t *fs, struct weir_md_stats *st)
{
	if (!fs || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	struct wc_mdl *c = fs->fs_mdl;
	if (!c)
		return 0;
	st->wms_enabled = 1;
	st->wms_hits = atomic_load(&c->c_hits);
	st->wms_misses = atomic_load(&c->c_misses);
	st->wms_callbacks = atomic_load(&c->c_callbacks);
	st->wms_polls = atomic_load(&c->c_polls);
	st->wms_listings = atomic_load(&c->c_listings);
	pthread_mutex_lock(&c->c_lock);
	st->wms_entries = c->c_nr_ents;
	st->wms_names = c->c_nr_names;
	pthread_mutex_unlock(&c->c_lock);
	return 0;
}
