/*
 * client/fuse/knames.c - the names weir-fuse lets the kernel keep: every
 * name (or "no such name") given to the kernel with an entry timeout, so
 * that a callback of the directory's LOOKUP lease can make the kernel
 * forget each of them (docs/leases.md, "FUSE").
 *
 * DESIGN.
 *  - The kernel keeps a name only as long as this mount holds the MDS's
 *    lease on the directory's names and libweir's cache holds the same
 *    answer (weir_md_name_leased): the timeout is at most how long libweir
 *    trusts its leases. Each name so given is recorded here first (its
 *    directory, the name, when its timeout ends), then the reply goes.
 *  - A callback of a directory's names (bit 1) takes the directory's
 *    records and has the kernel drop each name
 *    (fuse_lowlevel_notify_inval_entry). The kernel takes the directory's
 *    lock for that: it waits for a lookup or a create in the directory that
 *    is in progress (so an answer on its way is dropped after it lands).
 *    Two mounts that both create in one directory could wait on each other
 *    (each create holds its kernel's lock while its MDS change waits for
 *    the other mount's acknowledgement, which waits for that lock), so the
 *    kernel calls run on a thread of their own, and the callback thread
 *    waits for them at most WF_KINVAL_WAIT_MS before it acknowledges: in
 *    that case only, the kernel may show the old name until the mount's own
 *    change in that directory returns.
 *  - Bounded: at most WF_KNAMES_MAX records; expired ones are dropped
 *    oldest first; when full, the kernel gets no timeout.
 *  - Renames made through this mount move their record (the kernel moves
 *    the name with its timeout).
 * Locks: kn_lock guards the tables (a leaf); kq_lock the queue.
 */
#define _GNU_SOURCE
#include "wf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

#define WF_KNAMES_MAX	   (256 * 1024)
#define WF_KNAMES_BUCKETS  65536
#define WF_KINVAL_WAIT_MS  200
/* records outlive their timeout this long: the kernel's copy of an answer
 * lasts a little past what was computed (reply time, jiffy rounding) */
#define WF_KNAMES_SLACK_NS (1000ULL * 1000000ULL)

struct wf_kname {
	struct wf_kname *k_hnext;	 /* by (directory, name) */
	struct wf_kname *k_dnext;	 /* by directory */
	struct wf_kname *k_fprev, *k_fnext; /* oldest first */
	weir_fid_t k_dir;
	uint64_t k_expire_ns;		 /* CLOCK_MONOTONIC */
	uint64_t k_gen;			 /* which record this is (an address may be reused) */
	size_t k_len;
	char k_name[];
};

/* A batch of kernel invalidations: the callback thread and the worker each hold a reference. */
struct wf_kjob {
	struct wf_kjob *j_next;
	fuse_ino_t j_parent;
	size_t j_nr;
	char **j_names;
	bool j_done;
	int j_refs;
};

struct wf_knames {
	pthread_mutex_t kn_lock;
	struct wf_kname **kn_hash, **kn_dhash;
	struct wf_kname *kn_old, *kn_new; /* the list by expiry */
	size_t kn_nr;
	uint64_t kn_gen;
	/* the worker */
	pthread_mutex_t kq_lock;
	pthread_cond_t kq_cond, kq_done;
	struct wf_kjob *kq_head, *kq_tail;
	bool kq_stop, kq_running;
	bool kq_stuck; /* a wait timed out and the worker has not emptied the queue since:
			* callbacks are acknowledged without waiting meanwhile */
	pthread_t kq_thread;
	uint64_t kq_late; /* batches the callback thread stopped waiting for */
};

static uint64_t kn_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t kn_dbucket(const weir_fid_t *d)
{
	uint64_t h = d->seq * 0x9e3779b97f4a7c15ULL ^ d->oid * 0xc2b2ae3d27d4eb4fULL;
	return (size_t)((h ^ (h >> 31)) % WF_KNAMES_BUCKETS);
}

static size_t kn_bucket(const weir_fid_t *d, const char *name, size_t len)
{
	uint64_t h = d->seq * 0x9e3779b97f4a7c15ULL ^ d->oid * 0xc2b2ae3d27d4eb4fULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ULL;
	return (size_t)((h ^ (h >> 29)) % WF_KNAMES_BUCKETS);
}

static bool kn_fid_eq(const weir_fid_t *a, const weir_fid_t *b)
{
	return a->seq == b->seq && a->oid == b->oid;
}

static struct wf_kname **kn_find(struct wf_knames *kn, const weir_fid_t *dir, const char *name,
				 size_t len)
{
	struct wf_kname **pp = &kn->kn_hash[kn_bucket(dir, name, len)];
	for (; *pp; pp = &(*pp)->k_hnext)
		if ((*pp)->k_len == len && kn_fid_eq(&(*pp)->k_dir, dir) &&
		    !memcmp((*pp)->k_name, name, len))
			break;
	return pp;
}

/* Take \a k off the expiry FIFO, if it is on it (not while wf_kname_tmo checks it). */
static void kn_fifo_del(struct wf_knames *kn, struct wf_kname *k)
{
	if (!k->k_fprev && kn->kn_old != k)
		return; /* not queued: its neighbours are not its */
	if (k->k_fprev)
		k->k_fprev->k_fnext = k->k_fnext;
	else
		kn->kn_old = k->k_fnext;
	if (k->k_fnext)
		k->k_fnext->k_fprev = k->k_fprev;
	else
		kn->kn_new = k->k_fprev;
	k->k_fprev = k->k_fnext = NULL;
}

/* Queue \a k as the newest on the expiry FIFO (moved there if queued already). */
static void kn_fifo_add(struct wf_knames *kn, struct wf_kname *k)
{
	kn_fifo_del(kn, k);
	k->k_fprev = kn->kn_new;
	k->k_fnext = NULL;
	if (kn->kn_new)
		kn->kn_new->k_fnext = k;
	else
		kn->kn_old = k;
	kn->kn_new = k;
}

/* Unlink \a k from every table and free it; kn_lock held. */
static void kn_free(struct wf_knames *kn, struct wf_kname *k)
{
	struct wf_kname **pp = kn_find(kn, &k->k_dir, k->k_name, k->k_len);
	if (*pp == k)
		*pp = k->k_hnext;
	for (pp = &kn->kn_dhash[kn_dbucket(&k->k_dir)]; *pp; pp = &(*pp)->k_dnext)
		if (*pp == k) {
			*pp = k->k_dnext;
			break;
		}
	kn_fifo_del(kn, k);
	kn->kn_nr--;
	free(k);
}

/* The worker: runs the kernel invalidations of each batch, in order. */
/* Drop a reference to \a j (kq_lock held); the last frees it. */
static void kjob_put(struct wf_kjob *j)
{
	if (--j->j_refs)
		return;
	for (size_t i = 0; i < j->j_nr; i++)
		free(j->j_names[i]);
	free(j->j_names);
	free(j);
}

/* Hand \a j to the worker (kq_lock held). */
static void kjob_queue(struct wf_knames *kn, struct wf_kjob *j)
{
	if (kn->kq_tail)
		kn->kq_tail->j_next = j;
	else
		kn->kq_head = j;
	kn->kq_tail = j;
	pthread_cond_signal(&kn->kq_cond);
}

static void *kn_worker(void *arg)
{
	struct wf *wf = arg;
	struct wf_knames *kn = wf->wf_kn;

	pthread_mutex_lock(&kn->kq_lock);
	for (;;) {
		while (!kn->kq_head && !kn->kq_stop)
			pthread_cond_wait(&kn->kq_cond, &kn->kq_lock);
		struct wf_kjob *j = kn->kq_head;
		if (!j)
			break;
		kn->kq_head = j->j_next;
		if (!kn->kq_head)
			kn->kq_tail = NULL;
		pthread_mutex_unlock(&kn->kq_lock);
		struct fuse_session *se = atomic_load(&wf->wf_se);
		for (size_t i = 0; se && i < j->j_nr; i++) {
			int rc = fuse_lowlevel_notify_inval_entry(se, j->j_parent, j->j_names[i],
								  strlen(j->j_names[i]));
			if (rc && rc != -ENOENT)
				WEIR_LOG_DEBUG("parent=%#llx name=%s rc=%d: kernel name invalidation",
					       (unsigned long long)j->j_parent, j->j_names[i], rc);
		}
		pthread_mutex_lock(&kn->kq_lock);
		j->j_done = true;
		if (!kn->kq_head)
			kn->kq_stuck = false; /* caught up */
		pthread_cond_broadcast(&kn->kq_done);
		kjob_put(j);
	}
	pthread_mutex_unlock(&kn->kq_lock);
	return NULL;
}

int wf_knames_init(struct wf *wf)
{
	struct wf_knames *kn = calloc(1, sizeof(*kn));
	if (!kn)
		return -ENOMEM;
	kn->kn_hash = calloc(WF_KNAMES_BUCKETS, sizeof(*kn->kn_hash));
	kn->kn_dhash = calloc(WF_KNAMES_BUCKETS, sizeof(*kn->kn_dhash));
	if (!kn->kn_hash || !kn->kn_dhash) {
		free(kn->kn_hash);
		free(kn->kn_dhash);
		free(kn);
		return -ENOMEM;
	}
	pthread_mutex_init(&kn->kn_lock, NULL);
	pthread_mutex_init(&kn->kq_lock, NULL);
	pthread_cond_init(&kn->kq_cond, NULL);
	pthread_cond_init(&kn->kq_done, NULL);
	wf->wf_kn = kn;
	int rc = -pthread_create(&kn->kq_thread, NULL, kn_worker, wf);
	if (rc) {
		wf->wf_kn = NULL;
		free(kn->kn_hash);
		free(kn->kn_dhash);
		free(kn);
		return rc;
	}
	kn->kq_running = true;
	return 0;
}

void wf_knames_fini(struct wf *wf)
{
	struct wf_knames *kn = wf->wf_kn;
	if (!kn)
		return;
	pthread_mutex_lock(&kn->kq_lock);
	kn->kq_stop = true;
	pthread_cond_broadcast(&kn->kq_cond);
	pthread_mutex_unlock(&kn->kq_lock);
	if (kn->kq_running)
		pthread_join(kn->kq_thread, NULL); /* (it runs what is queued first) */
	for (size_t b = 0; b < WF_KNAMES_BUCKETS; b++) /* queued or not */
		while (kn->kn_hash[b])
			kn_free(kn, kn->kn_hash[b]);
	free(kn->kn_hash);
	free(kn->kn_dhash);
	pthread_mutex_destroy(&kn->kn_lock);
	pthread_mutex_destroy(&kn->kq_lock);
	pthread_cond_destroy(&kn->kq_cond);
	pthread_cond_destroy(&kn->kq_done);
	free(kn);
	wf->wf_kn = NULL;
}

double wf_kname_tmo(struct wf *wf, const weir_fid_t *dir, const char *name, const weir_fid_t *fid)
{
	struct wf_knames *kn = wf->wf_kn;
	weir_fid_t got;
	uint32_t ms = 0;

	if (!kn || wf->wf_conf.co_entry_timeout > 0 || !wf->wf_conf.co_kperm)
		return 0; /* -o entry_timeout given (the user's choice), or the MDS checks */
	size_t len = strlen(name);
	struct wf_kname *k = NULL;
	pthread_mutex_lock(&kn->kn_lock);
	uint64_t now = kn_now();
	while (kn->kn_old && kn->kn_old->k_expire_ns + WF_KNAMES_SLACK_NS <= now)
		kn_free(kn, kn->kn_old);
	struct wf_kname **pp = kn_find(kn, dir, name, len);
	if (*pp) {
		k = *pp;
		kn_fifo_del(kn, k);
	} else if (kn->kn_nr < WF_KNAMES_MAX && (k = calloc(1, sizeof(*k) + len + 1))) {
		k->k_gen = ++kn->kn_gen;
		k->k_dir = *dir;
		k->k_len = len;
		memcpy(k->k_name, name, len);
		k->k_hnext = NULL;
		*pp = k;
		size_t db = kn_dbucket(dir);
		k->k_dnext = kn->kn_dhash[db];
		kn->kn_dhash[db] = k;
		kn->kn_nr++;
	}
	if (!k) {
		pthread_mutex_unlock(&kn->kn_lock);
		return 0; /* full */
	}
	/*
	 * Recorded first, then checked: a callback from here on finds the
	 * record (and the kernel's invalidation waits for this reply to land,
	 * the directory's lock); one before dropped libweir's answer, so the
	 * check fails. The record's end never goes back (the kernel may hold
	 * an earlier answer with a later end).
	 */
	uint64_t gen = k->k_gen;
	pthread_mutex_unlock(&kn->kn_lock);
	bool ok = weir_md_name_leased(wf->wf_fs, dir, name, &got, &ms) == 1 && ms > 0 &&
		  (fid ? kn_fid_eq(&got, fid) : (!got.seq && !got.oid));
	pthread_mutex_lock(&kn->kn_lock);
	pp = kn_find(kn, dir, name, len);
	if (*pp == k && k->k_gen == gen) { /* (a callback may have taken it meanwhile) */
		uint64_t end = now + (ok ? (uint64_t)ms * 1000000ULL : 0);
		if (end > k->k_expire_ns)
			k->k_expire_ns = end;
		if (!k->k_expire_ns)
			kn_free(kn, k); /* never given a timeout */
		else
			kn_fifo_add(kn, k); /* swept WF_KNAMES_SLACK_NS after its end */
	} else {
		ok = false;
	}
	pthread_mutex_unlock(&kn->kn_lock);
	return ok ? ms / 1000.0 : 0;
}

/* Have the worker invalidate \a name in \a parent (nodeid) soon; no wait. */
static void kn_forget_later(struct wf_knames *kn, fuse_ino_t parent, const char *name)
{
	struct wf_kjob *j = calloc(1, sizeof(*j));
	char **names = calloc(1, sizeof(*names));
	char *s = strdup(name);
	if (!j || !names || !s || !parent) {
		free(j);
		free(names);
		free(s);
		if (parent)
			WEIR_LOG_RL(WEIR_LOG_LVL_ERROR, "name=%s: out of memory; the kernel keeps it until"
				       " its timeout", name);
		return;
	}
	names[0] = s;
	j->j_names = names;
	j->j_nr = 1;
	j->j_parent = parent;
	j->j_refs = 1; /* the worker's alone */
	pthread_mutex_lock(&kn->kq_lock);
	kjob_queue(kn, j);
	pthread_mutex_unlock(&kn->kq_lock);
}

void wf_kname_moved(struct wf *wf, const weir_fid_t *from_dir, fuse_ino_t from_parent,
		    const char *from, const weir_fid_t *to_dir, fuse_ino_t to_parent,
		    const char *to, bool exchange)
{
	struct wf_knames *kn = wf->wf_kn;
	if (!kn)
		return;
	/*
	 * The kernel moved the dentry with its timeout: the record follows it
	 * (both ways for an exchange), keeping the later end so a callback of
	 * either directory finds it.
	 */
	pthread_mutex_lock(&kn->kn_lock);
	uint64_t end = 0;
	struct wf_kname **pp = kn_find(kn, from_dir, from, strlen(from));
	if (*pp)
		end = (*pp)->k_expire_ns;
	pp = kn_find(kn, to_dir, to, strlen(to));
	if (*pp && (*pp)->k_expire_ns > end)
		end = (*pp)->k_expire_ns;
	pthread_mutex_unlock(&kn->kn_lock);
	if (!end)
		return;
	const weir_fid_t *dirs[2] = { to_dir, from_dir };
	const fuse_ino_t inos[2] = { to_parent, from_parent };
	const char *names[2] = { to, from };
	for (int i = 0; i < (exchange ? 2 : 1); i++) {
		size_t len = strlen(names[i]);
		/* no LOOKUP lease on the directory it went to: no callback would
		 * reach it there; the kernel forgets it once the rename is replied */
		if (!(weir_md_leased(wf->wf_fs, dirs[i], NULL) & 1)) {
			kn_forget_later(kn, inos[i], names[i]);
			continue;
		}
		pthread_mutex_lock(&kn->kn_lock);
		pp = kn_find(kn, dirs[i], names[i], len);
		struct wf_kname *k = *pp;
		if (!k && kn->kn_nr < WF_KNAMES_MAX && (k = calloc(1, sizeof(*k) + len + 1))) {
			k->k_gen = ++kn->kn_gen;
			k->k_dir = *dirs[i];
			k->k_len = len;
			memcpy(k->k_name, names[i], len);
			*pp = k;
			size_t db = kn_dbucket(dirs[i]);
			k->k_dnext = kn->kn_dhash[db];
			kn->kn_dhash[db] = k;
			kn->kn_nr++;
		} else if (k) {
			kn_fifo_del(kn, k);
		}
		if (k) {
			if (end > k->k_expire_ns)
				k->k_expire_ns = end;
			kn_fifo_add(kn, k);
		} else {
			WEIR_LOG_RL(WEIR_LOG_LVL_WARN, "name=%s: no room to record a renamed kernel name; the kernel"
				      " may keep it until its timeout", names[i]);
		}
		pthread_mutex_unlock(&kn->kn_lock);
	}
}

void wf_knames_inval(struct wf *wf, const weir_fid_t *dir, fuse_ino_t parent)
{
	struct wf_knames *kn = wf->wf_kn;
	if (!kn)
		return;
	struct wf_kjob *j = calloc(1, sizeof(*j));
	size_t cap = 0;
	pthread_mutex_lock(&kn->kn_lock);
	struct wf_kname **pp = &kn->kn_dhash[kn_dbucket(dir)];
	while (*pp) {
		struct wf_kname *k = *pp;
		if (!kn_fid_eq(&k->k_dir, dir)) {
			pp = &k->k_dnext;
			continue;
		}
		if (j && parent) { /* expired too: the kernel's copy may outlast it a little */
			if (j->j_nr == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				char **nn = realloc(j->j_names, ncap * sizeof(*nn));
				if (nn) {
					j->j_names = nn;
					cap = ncap;
				}
			}
			char *s = j->j_nr < cap ? strndup(k->k_name, k->k_len) : NULL;
			if (s)
				j->j_names[j->j_nr++] = s;
			else
				WEIR_LOG_RL(WEIR_LOG_LVL_ERROR, "name=%s: out of memory; the kernel keeps it until its"
					       " timeout", k->k_name);
		}
		kn_free(kn, k); /* (unlinks it from *pp) */
	}
	pthread_mutex_unlock(&kn->kn_lock);
	if (!j)
		return;
	if (!j->j_nr) {
		free(j->j_names);
		free(j);
		return;
	}
	j->j_parent = parent;
	j->j_refs = 2;
	pthread_mutex_lock(&kn->kq_lock);
	kjob_queue(kn, j);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)WF_KINVAL_WAIT_MS * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	/* one wait at a time: once the worker is stuck on a directory the kernel
	 * holds locked, later callbacks are acknowledged at once (each waiting
	 * its own 200 ms would add up past a lease) */
	while (!j->j_done && !kn->kq_stuck)
		if (pthread_cond_timedwait(&kn->kq_done, &kn->kq_lock, &ts) == ETIMEDOUT)
			break;
	if (!j->j_done) {
		kn->kq_stuck = true;
		kn->kq_late++;
		WEIR_LOG_RL(WEIR_LOG_LVL_WARN, "dir=[%#llx:%#llx] names=%zu: the kernel has not dropped them after"
			      " %d ms (a change of this mount in that directory is waiting for"
			      " the MDS); acknowledging the callback, the kernel drops them when"
			      " it can", (unsigned long long)dir->seq, (unsigned long long)dir->oid,
			      j->j_nr, WF_KINVAL_WAIT_MS);
	}
	kjob_put(j);
	pthread_mutex_unlock(&kn->kq_lock);
}
