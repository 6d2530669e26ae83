/*
 * mds/lock.c - the MDS lock manager (interface and semantics: mds/lock.h).
 *
 * DESIGN. One mutex, lm_lock, guards everything here; it is a leaf lock
 * (docs/lock-ordering.md) and no callback runs under it: answers to parked
 * requests are collected on a local "done" list and delivered after the
 * mutex is released, by the thread whose call completed them (a loop thread
 * unlocking, the lease thread evicting or expiring polls).
 *
 * Data. A resource per file with locks (lm_res, hashed by FID, freed when
 * empty) holds, per space (POSIX+OFD, FLOCK, APPEND), an unordered list of
 * held locks and a FIFO of queued requests. Every queued request is also on
 * one global list, which the deadlock search and the tick walk. Held locks
 * of one owner never overlap, and two of one owner and type are never
 * adjacent (set merges them). A queued request carries the two lock nodes
 * its grant may need, allocated when it was queued, so a grant cannot fail.
 * Per session, a ring of the last LK_RING answered tokens makes retried
 * requests idempotent.
 *
 * Recovery: mds_lock_replay() applies one owner's lock as lk_apply() does
 * for a grant, with no conflict check: the MDS re-grants what a client held
 * before a restart (mds/recovery.c), and libweir keeps its own copy of what
 * its mount holds with it (client/lock.c), so it knows what to replay.
 */
#define _GNU_SOURCE
#include "lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define LK_RES_BUCKETS	1024
#define LK_SESS_BUCKETS 256
#define LK_RING		128 /* answered tokens remembered per session */
#define LK_SPACES	3
#define LK_DEADLOCK_MAX 256	   /* owners visited looking for a cycle */
#define LK_MAX_LOCKS	(1u << 20) /* held locks, all files: beyond, -ENOLCK */
#define LK_MAX_WAITERS	(1u << 16) /* queued requests, all files: beyond, -ENOLCK */

struct lk_owner {
	uint64_t o_session;
	uint64_t o_id; /* pid or handle id */
	uint8_t o_class;
};

struct lk_lock {
	struct lk_owner l_owner;
	uint8_t l_type;
	int32_t l_pid;
	uint64_t l_start; /* first byte */
	uint64_t l_end;	  /* last byte, inclusive */
	struct lk_lock *l_next;
};

/* A parked request to answer. */
struct lk_att {
	mds_lock_cb_t a_cb;
	void *a_arg;
	int a_rc;
	struct lk_att *a_next;
};

struct lk_res;

struct lk_waiter {
	struct mds_lock_req w_rq;
	struct lk_owner w_owner;
	struct lk_res *w_res;
	unsigned w_space;
	struct lk_att *w_att;		     /* NULL while nobody waits for the answer */
	uint64_t w_att_ns;		     /* when w_att was last attached or detached */
	struct lk_lock *w_nodes[2];	     /* for the grant */
	struct lk_waiter *w_qnext, *w_qprev; /* the resource's queue */
	struct lk_waiter *w_gnext, *w_gprev; /* lm_waiters */
};

struct lk_res {
	struct weir_fid r_fid;
	struct lk_lock *r_locks[LK_SPACES];
	struct lk_waiter *r_qhead[LK_SPACES];
	struct lk_waiter *r_qtail[LK_SPACES];
	struct lk_res *r_next;
};

struct lk_sess {
	uint64_t s_id;
	uint64_t s_tok[LK_RING];
	int s_rc[LK_RING];
	unsigned s_pos;
	struct lk_sess *s_next;
};

struct mds_lockmgr {
	pthread_mutex_t lm_lock;
	struct lk_res *lm_res[LK_RES_BUCKETS];
	struct lk_sess *lm_sess[LK_SESS_BUCKETS];
	struct lk_waiter *lm_waiters;
	size_t lm_nr_waiters;
	size_t lm_nr_locks;
};

/* ------------------------------------------------------------ helpers */

static unsigned lk_space(uint8_t cls)
{
	return cls == MDS_LC_FLOCK ? 1 : cls == MDS_LC_APPEND ? 2 : 0;
}

static bool owner_eq(const struct lk_owner *a, const struct lk_owner *b)
{
	return a->o_session == b->o_session && a->o_id == b->o_id && a->o_class == b->o_class;
}

static bool overlap(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2)
{
	return s1 <= e2 && s2 <= e1;
}

static struct lk_res **res_slot(struct mds_lockmgr *lm, const struct weir_fid *fid)
{
	return &lm->lm_res[weir_mix64(fid->fid_seq * 31 + fid->fid_oid) % LK_RES_BUCKETS];
}

static struct lk_res *res_find(struct mds_lockmgr *lm, const struct weir_fid *fid, bool create)
{
	struct lk_res **slot = res_slot(lm, fid);
	for (struct lk_res *r = *slot; r; r = r->r_next)
		if (weir_fid_eq(&r->r_fid, fid))
			return r;
	if (!create)
		return NULL;
	struct lk_res *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->r_fid = *fid;
	r->r_next = *slot;
	*slot = r;
	return r;
}

/* Free \a r if it holds nothing and queues nothing. */
static void res_maybe_free(struct mds_lockmgr *lm, struct lk_res *r)
{
	if (!r)
		return;
	for (unsigned sp = 0; sp < LK_SPACES; sp++)
		if (r->r_locks[sp] || r->r_qhead[sp])
			return;
	for (struct lk_res **pp = res_slot(lm, &r->r_fid); *pp; pp = &(*pp)->r_next) {
		if (*pp == r) {
			*pp = r->r_next;
			free(r);
			return;
		}
	}
}

static struct lk_sess **sess_slot(struct mds_lockmgr *lm, uint64_t id)
{
	return &lm->lm_sess[weir_mix64(id) % LK_SESS_BUCKETS];
}

static struct lk_sess *sess_find(struct mds_lockmgr *lm, uint64_t id)
{
	for (struct lk_sess *s = *sess_slot(lm, id); s; s = s->s_next)
		if (s->s_id == id)
			return s;
	return NULL;
}

static void sess_record(struct lk_sess *s, uint64_t token, int rc)
{
	if (!s || !token)
		return;
	s->s_tok[s->s_pos] = token;
	s->s_rc[s->s_pos] = rc;
	s->s_pos = (s->s_pos + 1) % LK_RING;
}

static bool sess_answered(const struct lk_sess *s, uint64_t token, int *rc)
{
	for (unsigned i = 0; i < LK_RING; i++) {
		if (s->s_tok[i] == token) {
			*rc = s->s_rc[i];
			return true;
		}
	}
	return false;
}

/* Queue \a a for delivery after the mutex is released. */
static void done_add(struct lk_att **done, struct lk_att *a, int rc)
{
	if (!a)
		return;
	a->a_rc = rc;
	a->a_next = *done;
	*done = a;
}

static void done_run(struct lk_att *done)
{
	/* reverse to deliver in completion order */
	struct lk_att *rev = NULL;
	while (done) {
		struct lk_att *a = done;
		done = a->a_next;
		a->a_next = rev;
		rev = a;
	}
	while (rev) {
		struct lk_att *a = rev;
		rev = a->a_next;
		a->a_cb(a->a_arg, a->a_rc);
		free(a);
	}
}

/* ------------------------------------------------------------ locks */

/* The first lock of another owner in space \a sp of \a r conflicting with the request. */
static struct lk_lock *lk_conflict(struct lk_res *r, unsigned sp, const struct lk_owner *o,
				   uint8_t type, uint64_t s, uint64_t e)
{
	for (struct lk_lock *l = r->r_locks[sp]; l; l = l->l_next) {
		if (owner_eq(&l->l_owner, o) || !overlap(l->l_start, l->l_end, s, e))
			continue;
		if (type == MDS_LT_WRLCK || l->l_type == MDS_LT_WRLCK)
			return l;
	}
	return NULL;
}

/*
 * Make owner \a o hold \a type on [s, e] in space \a sp (MDS_LT_UNLCK: hold
 * nothing there): its locks overlapping the range are trimmed, split or
 * removed; those of the same type overlapping or adjacent are merged into
 * the new one. Consumes n[0] (the new lock) and n[1] (a split); unused nodes
 * are freed.
 */
static void lk_apply(struct mds_lockmgr *lm, struct lk_res *r, unsigned sp,
		     const struct lk_owner *o, uint8_t type, int32_t pid, uint64_t s, uint64_t e,
		     struct lk_lock *n[2])
{
	uint64_t ns = s, ne = e;
	struct lk_lock **pp = &r->r_locks[sp];

	while (*pp) {
		struct lk_lock *l = *pp;
		if (!owner_eq(&l->l_owner, o)) {
			pp = &l->l_next;
			continue;
		}
		bool ov = overlap(l->l_start, l->l_end, s, e);
		bool adj = (l->l_end != MDS_LOCK_EOF && l->l_end + 1 == s) ||
			   (e != MDS_LOCK_EOF && e + 1 == l->l_start);
		if (type != MDS_LT_UNLCK && l->l_type == type && (ov || adj)) {
			ns = WEIR_MIN(ns, l->l_start);
			ne = WEIR_MAX(ne, l->l_end);
			*pp = l->l_next;
			free(l);
			lm->lm_nr_locks--;
			continue;
		}
		if (!ov) {
			pp = &l->l_next;
			continue;
		}
		if (l->l_start < s && l->l_end > e) {
			/* the range is inside it: split in two (only one lock can contain it) */
			struct lk_lock *t = n[1];
			WEIR_ASSERT(t);
			n[1] = NULL;
			*t = *l;
			t->l_start = e + 1;
			l->l_end = s - 1;
			l->l_next = t;
			pp = &t->l_next;
			lm->lm_nr_locks++;
		} else if (l->l_start < s) {
			l->l_end = s - 1;
			pp = &l->l_next;
		} else if (l->l_end > e) {
			l->l_start = e + 1;
			pp = &l->l_next;
		} else {
			*pp = l->l_next;
			free(l);
			lm->lm_nr_locks--;
		}
	}
	if (type != MDS_LT_UNLCK) {
		struct lk_lock *t = n[0];
		WEIR_ASSERT(t);
		n[0] = NULL;
		t->l_owner = *o;
		t->l_type = type;
		t->l_pid = pid;
		t->l_start = ns;
		t->l_end = ne;
		t->l_next = r->r_locks[sp];
		r->r_locks[sp] = t;
		lm->lm_nr_locks++;
	}
	free(n[0]);
	free(n[1]);
	n[0] = n[1] = NULL;
}

/* Remove every lock of \a sp in \a r matching \a match(arg). \return how many. */
static size_t lk_remove_if(struct mds_lockmgr *lm, struct lk_res *r, unsigned sp,
			   bool (*match)(const struct lk_lock *l, const void *arg), const void *arg)
{
	size_t n = 0;
	for (struct lk_lock **pp = &r->r_locks[sp]; *pp;) {
		struct lk_lock *l = *pp;
		if (match(l, arg)) {
			*pp = l->l_next;
			free(l);
			lm->lm_nr_locks--;
			n++;
		} else {
			pp = &l->l_next;
		}
	}
	return n;
}

/* ------------------------------------------------------------ waiters */

/* Take \a w off every list, record its answer, queue its attachment, free it. */
static void waiter_finish(struct mds_lockmgr *lm, struct lk_waiter *w, int rc, bool record,
			  struct lk_att **done)
{
	struct lk_res *r = w->w_res;
	unsigned sp = w->w_space;
	if (w->w_qprev)
		w->w_qprev->w_qnext = w->w_qnext;
	else
		r->r_qhead[sp] = w->w_qnext;
	if (w->w_qnext)
		w->w_qnext->w_qprev = w->w_qprev;
	else
		r->r_qtail[sp] = w->w_qprev;
	if (w->w_gprev)
		w->w_gprev->w_gnext = w->w_gnext;
	else
		lm->lm_waiters = w->w_gnext;
	if (w->w_gnext)
		w->w_gnext->w_gprev = w->w_gprev;
	lm->lm_nr_waiters--;
	if (record)
		sess_record(sess_find(lm, w->w_rq.lq_session), w->w_rq.lq_token, rc);
	done_add(done, w->w_att, rc);
	free(w->w_nodes[0]);
	free(w->w_nodes[1]);
	free(w);
}

/*
 * Grant, in queue order, every queued request of space \a sp of \a r that
 * no held lock blocks. A granted read lock may have downgraded its owner's
 * write lock, which can unblock earlier requests: the scan then restarts.
 */
static void lk_grant(struct mds_lockmgr *lm, struct lk_res *r, unsigned sp, struct lk_att **done)
{
	struct lk_waiter *w = r->r_qhead[sp];
	while (w) {
		struct lk_waiter *next = w->w_qnext;
		const struct mds_lock_req *q = &w->w_rq;
		if (lk_conflict(r, sp, &w->w_owner, q->lq_type, q->lq_start, q->lq_end)) {
			w = next;
			continue;
		}
		bool restart = q->lq_type == MDS_LT_RDLCK;
		lk_apply(lm, r, sp, &w->w_owner, q->lq_type, q->lq_pid, q->lq_start, q->lq_end,
			 w->w_nodes);
		waiter_finish(lm, w, 0, true, done);
		w = restart ? r->r_qhead[sp] : next;
	}
}

/* Add the POSIX owners of locks blocking the request to todo[] (no repeats). */
static void add_blockers(struct lk_res *r, unsigned sp, const struct lk_owner *o, uint8_t type,
			 uint64_t s, uint64_t e, struct lk_owner *todo, size_t *n)
{
	for (struct lk_lock *l = r->r_locks[sp]; l; l = l->l_next) {
		if (l->l_owner.o_class != MDS_LC_POSIX || owner_eq(&l->l_owner, o) ||
		    !overlap(l->l_start, l->l_end, s, e) ||
		    (type != MDS_LT_WRLCK && l->l_type != MDS_LT_WRLCK))
			continue;
		size_t i;
		for (i = 0; i < *n; i++)
			if (owner_eq(&todo[i], &l->l_owner))
				break;
		if (i == *n && *n < LK_DEADLOCK_MAX)
			todo[(*n)++] = l->l_owner;
	}
}

/*
 * Would owner \a me, waiting for this request, close a cycle? Breadth-first
 * over "waits for a lock held by", across files, POSIX owners only, at most
 * LK_DEADLOCK_MAX owners (beyond that: assume none, as Linux bounds its
 * search too).
 */
static bool lk_deadlock(struct mds_lockmgr *lm, struct lk_res *r, const struct lk_owner *me,
			uint8_t type, uint64_t s, uint64_t e)
{
	struct lk_owner *todo = malloc(LK_DEADLOCK_MAX * sizeof(*todo));
	size_t n = 0, head = 0;
	bool found = false;

	if (!todo)
		return false;
	add_blockers(r, 0, me, type, s, e, todo, &n);
	while (head < n && !found) {
		struct lk_owner x = todo[head++];
		if (owner_eq(&x, me)) {
			found = true;
			break;
		}
		for (struct lk_waiter *w = lm->lm_waiters; w; w = w->w_gnext) {
			if (!owner_eq(&w->w_owner, &x))
				continue;
			add_blockers(w->w_res, w->w_space, &w->w_owner, w->w_rq.lq_type,
				     w->w_rq.lq_start, w->w_rq.lq_end, todo, &n);
		}
	}
	free(todo);
	return found;
}

static struct lk_waiter *waiter_by_token(struct mds_lockmgr *lm, uint64_t session, uint64_t token)
{
	for (struct lk_waiter *w = lm->lm_waiters; w; w = w->w_gnext)
		if (w->w_rq.lq_session == session && w->w_rq.lq_token == token)
			return w;
	return NULL;
}

/* ------------------------------------------------------------ interface */

int mds_lockmgr_new(struct mds_lockmgr **out)
{
	struct mds_lockmgr *lm = calloc(1, sizeof(*lm));
	if (!lm)
		return -ENOMEM;
	pthread_mutex_init(&lm->lm_lock, NULL);
	*out = lm;
	return 0;
}

void mds_lockmgr_free(struct mds_lockmgr *lm)
{
	struct lk_att *done = NULL;
	if (!lm)
		return;
	pthread_mutex_lock(&lm->lm_lock);
	while (lm->lm_waiters)
		waiter_finish(lm, lm->lm_waiters, -ESHUTDOWN, false, &done);
	for (unsigned b = 0; b < LK_RES_BUCKETS; b++) {
		while (lm->lm_res[b]) {
			struct lk_res *r = lm->lm_res[b];
			lm->lm_res[b] = r->r_next;
			for (unsigned sp = 0; sp < LK_SPACES; sp++)
				while (r->r_locks[sp]) {
					struct lk_lock *l = r->r_locks[sp];
					r->r_locks[sp] = l->l_next;
					free(l);
				}
			free(r);
		}
	}
	for (unsigned b = 0; b < LK_SESS_BUCKETS; b++) {
		while (lm->lm_sess[b]) {
			struct lk_sess *s = lm->lm_sess[b];
			lm->lm_sess[b] = s->s_next;
			free(s);
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
	pthread_mutex_destroy(&lm->lm_lock);
	free(lm);
}

int mds_lock_session_open(struct mds_lockmgr *lm, uint64_t session)
{
	if (!session)
		return -EINVAL;
	struct lk_sess *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->s_id = session;
	pthread_mutex_lock(&lm->lm_lock);
	if (sess_find(lm, session)) {
		pthread_mutex_unlock(&lm->lm_lock);
		free(s);
		return -EEXIST;
	}
	struct lk_sess **slot = sess_slot(lm, session);
	s->s_next = *slot;
	*slot = s;
	pthread_mutex_unlock(&lm->lm_lock);
	return 0;
}

static bool match_session(const struct lk_lock *l, const void *arg)
{
	return l->l_owner.o_session == *(const uint64_t *)arg;
}

size_t mds_lock_session_drop(struct mds_lockmgr *lm, uint64_t session, int rc)
{
	struct lk_att *done = NULL;
	size_t n = 0;

	pthread_mutex_lock(&lm->lm_lock);
	for (struct lk_sess **pp = sess_slot(lm, session); *pp; pp = &(*pp)->s_next) {
		if ((*pp)->s_id == session) {
			struct lk_sess *s = *pp;
			*pp = s->s_next;
			free(s);
			break;
		}
	}
	for (struct lk_waiter *w = lm->lm_waiters, *next; w; w = next) {
		next = w->w_gnext;
		if (w->w_rq.lq_session == session) {
			waiter_finish(lm, w, rc, false, &done);
			n++;
		}
	}
	for (unsigned b = 0; b < LK_RES_BUCKETS; b++) {
		struct lk_res *r = lm->lm_res[b];
		while (r) {
			struct lk_res *next = r->r_next;
			for (unsigned sp = 0; sp < LK_SPACES; sp++) {
				size_t k = lk_remove_if(lm, r, sp, match_session, &session);
				n += k;
				if (k || r->r_qhead[sp])
					lk_grant(lm, r, sp, &done);
			}
			res_maybe_free(lm, r);
			r = next;
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
	return n;
}

static int req_check(const struct mds_lock_req *rq, struct mds_lock_req *q)
{
	*q = *rq;
	if (q->lq_class >= MDS_LC_NR || q->lq_type > MDS_LT_WRLCK || !q->lq_session)
		return -EINVAL;
	if (q->lq_class == MDS_LC_FLOCK || q->lq_class == MDS_LC_APPEND) {
		q->lq_start = 0;
		q->lq_end = MDS_LOCK_EOF;
	}
	if (q->lq_class == MDS_LC_APPEND && q->lq_type == MDS_LT_RDLCK)
		return -EINVAL;
	if (q->lq_start > q->lq_end)
		return -EINVAL;
	if (q->lq_class != MDS_LC_POSIX)
		q->lq_pid = -1;
	return 0;
}

int mds_lock_set(struct mds_lockmgr *lm, const struct mds_lock_req *rq, mds_lock_cb_t cb, void *arg)
{
	struct mds_lock_req q;
	struct lk_lock *nodes[2] = { NULL, NULL };
	struct lk_att *att = NULL, *done = NULL;
	struct lk_res *r = NULL;
	struct lk_sess *s;
	int rc = req_check(rq, &q);
	if (rc)
		return rc;
	struct lk_owner me = { q.lq_session, q.lq_owner, q.lq_class };
	unsigned sp = lk_space(q.lq_class);

	nodes[0] = malloc(sizeof(struct lk_lock));
	nodes[1] = malloc(sizeof(struct lk_lock));
	if (q.lq_wait && cb)
		att = calloc(1, sizeof(*att));
	if (!nodes[0] || !nodes[1] || (q.lq_wait && cb && !att)) {
		rc = -ENOLCK;
		goto out_free;
	}
	if (att) {
		att->a_cb = cb;
		att->a_arg = arg;
	}

	pthread_mutex_lock(&lm->lm_lock);
	s = sess_find(lm, q.lq_session);
	if (!s) {
		rc = -ESTALE;
		goto out_unlock;
	}
	if (q.lq_token && sess_answered(s, q.lq_token, &rc))
		goto out_unlock; /* a repeat: the same answer */
	if (q.lq_token) {
		struct lk_waiter *w = waiter_by_token(lm, q.lq_session, q.lq_token);
		if (w && !att) {
			/* a repeat that does not wait: the queued one keeps the
			 * wait; this one learns it is still queued */
			rc = -EAGAIN;
			goto out_unlock;
		}
		if (w) {
			/* a repeat of a queued request: it takes over the wait */
			done_add(&done, w->w_att, -EAGAIN);
			w->w_att = att;
			w->w_att_ns = weir_now_ns();
			att = NULL;
			rc = -EINPROGRESS;
			goto out_unlock;
		}
	}
	r = res_find(lm, &q.lq_fid, q.lq_type != MDS_LT_UNLCK);
	if (!r) {
		rc = q.lq_type == MDS_LT_UNLCK ? 0 : -ENOLCK;
		goto out_record;
	}
	if (q.lq_class == MDS_LC_FLOCK) {
		struct lk_lock *held = NULL;
		for (struct lk_lock *l = r->r_locks[sp]; l && !held; l = l->l_next)
			if (owner_eq(&l->l_owner, &me))
				held = l;
		if (held && held->l_type == q.lq_type) {
			rc = 0;
			goto out_record;
		}
		if (held) {
			/* conversion: drop the old lock first, as Linux does */
			struct lk_lock *none[2] = { NULL, NULL };
			lk_apply(lm, r, sp, &me, MDS_LT_UNLCK, -1, 0, MDS_LOCK_EOF, none);
			lk_grant(lm, r, sp, &done);
		}
	}
	if (q.lq_type != MDS_LT_UNLCK && lm->lm_nr_locks >= LK_MAX_LOCKS) {
		WEIR_LOG_WARN("session=%#llx: %zu locks held on the MDT; lock refused",
			      (unsigned long long)q.lq_session, lm->lm_nr_locks);
		rc = -ENOLCK;
		goto out_unlock;
	}
	if (q.lq_type == MDS_LT_UNLCK ||
	    !lk_conflict(r, sp, &me, q.lq_type, q.lq_start, q.lq_end)) {
		lk_apply(lm, r, sp, &me, q.lq_type, q.lq_pid, q.lq_start, q.lq_end, nodes);
		lk_grant(lm, r, sp, &done); /* an unlock or a downgrade may free others */
		rc = 0;
		goto out_record;
	}
	if (!q.lq_wait) {
		rc = -EAGAIN;
		goto out_record;
	}
	if (q.lq_class == MDS_LC_POSIX &&
	    lk_deadlock(lm, r, &me, q.lq_type, q.lq_start, q.lq_end)) {
		rc = -EDEADLK;
		goto out_record;
	}
	struct lk_waiter *w = NULL;
	if (lm->lm_nr_waiters < LK_MAX_WAITERS)
		w = calloc(1, sizeof(*w));
	if (!w) {
		rc = -ENOLCK;
		goto out_unlock;
	}
	w->w_rq = q;
	w->w_owner = me;
	w->w_res = r;
	w->w_space = sp;
	w->w_att = att;
	w->w_att_ns = weir_now_ns();
	w->w_nodes[0] = nodes[0];
	w->w_nodes[1] = nodes[1];
	nodes[0] = nodes[1] = NULL;
	att = NULL;
	w->w_qprev = r->r_qtail[sp];
	if (r->r_qtail[sp])
		r->r_qtail[sp]->w_qnext = w;
	else
		r->r_qhead[sp] = w;
	r->r_qtail[sp] = w;
	w->w_gnext = lm->lm_waiters;
	if (lm->lm_waiters)
		lm->lm_waiters->w_gprev = w;
	lm->lm_waiters = w;
	lm->lm_nr_waiters++;
	rc = -EINPROGRESS;
	goto out_unlock;

out_record:
	sess_record(s, q.lq_token, rc);
out_unlock:
	res_maybe_free(lm, r);
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
out_free:
	free(nodes[0]);
	free(nodes[1]);
	free(att);
	return rc;
}

int mds_lock_cancel(struct mds_lockmgr *lm, uint64_t session, uint64_t token)
{
	struct lk_att *done = NULL;
	int rc = 0, old;

	if (!session || !token)
		return -EINVAL;
	pthread_mutex_lock(&lm->lm_lock);
	struct lk_sess *s = sess_find(lm, session);
	if (!s) {
		rc = -ESTALE;
	} else if (!sess_answered(s, token, &old)) {
		struct lk_waiter *w = waiter_by_token(lm, session, token);
		if (w) {
			struct lk_res *r = w->w_res;
			waiter_finish(lm, w, -ECANCELED, true, &done);
			res_maybe_free(lm, r);
		} else {
			/* not arrived yet: when it does, it finds this answer */
			sess_record(s, token, -ECANCELED);
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
	return rc;
}

int mds_lock_test(struct mds_lockmgr *lm, const struct mds_lock_req *rq, bool *found,
		  struct mds_lock_desc *out)
{
	struct mds_lock_req q;
	int rc = req_check(rq, &q);
	*found = false;
	if (rc)
		return rc;
	if (q.lq_type == MDS_LT_UNLCK)
		return -EINVAL;
	struct lk_owner me = { q.lq_session, q.lq_owner, q.lq_class };
	pthread_mutex_lock(&lm->lm_lock);
	if (!sess_find(lm, q.lq_session)) {
		rc = -ESTALE;
	} else {
		struct lk_res *r = res_find(lm, &q.lq_fid, false);
		struct lk_lock *l =
		    r ? lk_conflict(r, lk_space(q.lq_class), &me, q.lq_type, q.lq_start, q.lq_end)
		      : NULL;
		if (l) {
			*found = true;
			out->ld_class = l->l_owner.o_class;
			out->ld_type = l->l_type;
			out->ld_session = l->l_owner.o_session;
			out->ld_owner = l->l_owner.o_id;
			out->ld_pid = l->l_owner.o_class == MDS_LC_POSIX ? l->l_pid : -1;
			out->ld_start = l->l_start;
			out->ld_end = l->l_end;
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	return rc;
}

int mds_lock_replay(struct mds_lockmgr *lm, const struct mds_lock_req *rq)
{
	struct mds_lock_req q;
	struct lk_lock *nodes[2] = { NULL, NULL };
	struct lk_att *done = NULL;
	int rc = req_check(rq, &q);
	if (rc)
		return rc;
	struct lk_owner me = { q.lq_session, q.lq_owner, q.lq_class };
	unsigned sp = lk_space(q.lq_class);

	nodes[0] = malloc(sizeof(struct lk_lock));
	nodes[1] = malloc(sizeof(struct lk_lock));
	if (!nodes[0] || !nodes[1]) {
		free(nodes[0]);
		free(nodes[1]);
		return -ENOLCK;
	}
	pthread_mutex_lock(&lm->lm_lock);
	struct lk_res *r = NULL;
	if (!sess_find(lm, q.lq_session)) {
		rc = -ESTALE;
	} else if (q.lq_type != MDS_LT_UNLCK && lm->lm_nr_locks >= LK_MAX_LOCKS) {
		rc = -ENOLCK;
	} else {
		r = res_find(lm, &q.lq_fid, q.lq_type != MDS_LT_UNLCK);
		if (!r && q.lq_type != MDS_LT_UNLCK)
			rc = -ENOLCK;
	}
	if (!rc && r) {
		lk_apply(lm, r, sp, &me, q.lq_type, q.lq_pid, q.lq_start, q.lq_end, nodes);
		if (r->r_qhead[sp])
			lk_grant(lm, r, sp, &done);
		res_maybe_free(lm, r);
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
	free(nodes[0]);
	free(nodes[1]);
	return rc;
}

size_t mds_lock_session_locks(struct mds_lockmgr *lm, uint64_t session,
			      struct mds_lock_held *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&lm->lm_lock);
	for (unsigned b = 0; b < LK_RES_BUCKETS; b++) {
		for (struct lk_res *r = lm->lm_res[b]; r; r = r->r_next) {
			for (unsigned sp = 0; sp < LK_SPACES; sp++) {
				for (struct lk_lock *l = r->r_locks[sp]; l; l = l->l_next) {
					if (l->l_owner.o_session != session)
						continue;
					if (n < max) {
						struct mds_lock_desc *d = &out[n].lh_desc;
						out[n].lh_fid = r->r_fid;
						d->ld_class = l->l_owner.o_class;
						d->ld_type = l->l_type;
						d->ld_session = session;
						d->ld_owner = l->l_owner.o_id;
						d->ld_pid = l->l_pid;
						d->ld_start = l->l_start;
						d->ld_end = l->l_end;
					}
					n++;
				}
			}
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	return n;
}

struct close_match {
	uint64_t cm_session;
	int32_t cm_pid;
	uint64_t cm_handle;
};

static bool match_close(const struct lk_lock *l, const void *arg)
{
	const struct close_match *cm = arg;
	if (l->l_owner.o_session != cm->cm_session)
		return false;
	if (l->l_owner.o_class == MDS_LC_POSIX)
		return l->l_owner.o_id == (uint64_t)(uint32_t)cm->cm_pid;
	return l->l_owner.o_id == cm->cm_handle;
}

size_t mds_lock_close(struct mds_lockmgr *lm, const struct weir_fid *fid, uint64_t session,
		      int32_t pid, uint64_t handle)
{
	struct close_match cm = { session, pid, handle };
	struct lk_att *done = NULL;
	size_t n = 0;

	pthread_mutex_lock(&lm->lm_lock);
	struct lk_res *r = res_find(lm, fid, false);
	if (r) {
		for (unsigned sp = 0; sp < LK_SPACES; sp++) {
			for (struct lk_waiter *w = r->r_qhead[sp], *next; w; w = next) {
				next = w->w_qnext;
				if (w->w_rq.lq_session == session &&
				    w->w_rq.lq_class != MDS_LC_POSIX && w->w_rq.lq_owner == handle)
					waiter_finish(lm, w, -EBADF, true, &done);
			}
			size_t k = lk_remove_if(lm, r, sp, match_close, &cm);
			n += k;
			if (k)
				lk_grant(lm, r, sp, &done);
		}
		res_maybe_free(lm, r);
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
	return n;
}

void mds_lock_tick(struct mds_lockmgr *lm, uint64_t now_ns, uint64_t poll_ns, uint64_t orphan_ns)
{
	struct lk_att *done = NULL;

	pthread_mutex_lock(&lm->lm_lock);
	for (struct lk_waiter *w = lm->lm_waiters, *next; w; w = next) {
		next = w->w_gnext;
		if (now_ns < w->w_att_ns)
			continue;
		uint64_t age = now_ns - w->w_att_ns;
		if (w->w_att && age >= poll_ns) {
			done_add(&done, w->w_att, -EAGAIN);
			w->w_att = NULL;
			w->w_att_ns = now_ns;
		} else if (!w->w_att && age >= orphan_ns) {
			struct lk_res *r = w->w_res;
			WEIR_LOG_INFO("session=%#llx token=%llu fid=" WEIR_FID_F
				      ": queued lock request abandoned; removed",
				      (unsigned long long)w->w_rq.lq_session,
				      (unsigned long long)w->w_rq.lq_token, WEIR_FID_P(&r->r_fid));
			waiter_finish(lm, w, -ETIMEDOUT, false, &done);
			res_maybe_free(lm, r);
		}
	}
	pthread_mutex_unlock(&lm->lm_lock);
	done_run(done);
}

static int desc_cmp(const void *a, const void *b)
{
	const struct mds_lock_desc *x = a, *y = b;
	if (x->ld_start != y->ld_start)
		return x->ld_start < y->ld_start ? -1 : 1;
	if (x->ld_session != y->ld_session)
		return x->ld_session < y->ld_session ? -1 : 1;
	if (x->ld_owner != y->ld_owner)
		return x->ld_owner < y->ld_owner ? -1 : 1;
	return (int)x->ld_class - (int)y->ld_class;
}

size_t mds_lock_list(struct mds_lockmgr *lm, const struct weir_fid *fid, uint8_t cls,
		     struct mds_lock_desc *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&lm->lm_lock);
	struct lk_res *r = res_find(lm, fid, false);
	unsigned sp = lk_space(cls);
	for (struct lk_lock *l = r ? r->r_locks[sp] : NULL; l; l = l->l_next, n++) {
		if (n >= max)
			continue;
		out[n].ld_class = l->l_owner.o_class;
		out[n].ld_type = l->l_type;
		out[n].ld_session = l->l_owner.o_session;
		out[n].ld_owner = l->l_owner.o_id;
		out[n].ld_pid = l->l_owner.o_class == MDS_LC_POSIX ? l->l_pid : -1;
		out[n].ld_start = l->l_start;
		out[n].ld_end = l->l_end;
	}
	pthread_mutex_unlock(&lm->lm_lock);
	if (out && max)
		qsort(out, WEIR_MIN(n, max), sizeof(*out), desc_cmp);
	return n;
}

bool mds_lock_owner_holds(struct mds_lockmgr *lm, const struct weir_fid *fid, uint64_t session,
			  uint8_t cls, uint64_t owner)
{
	struct lk_owner me = { session, owner, cls };
	bool held = false;

	pthread_mutex_lock(&lm->lm_lock);
	struct lk_res *r = res_find(lm, fid, false);
	for (struct lk_lock *l = r ? r->r_locks[lk_space(cls)] : NULL; l && !held; l = l->l_next)
		held = owner_eq(&l->l_owner, &me);
	pthread_mutex_unlock(&lm->lm_lock);
	return held;
}

size_t mds_lock_nr_waiters(struct mds_lockmgr *lm)
{
	pthread_mutex_lock(&lm->lm_lock);
	size_t n = lm->lm_nr_waiters;
	pthread_mutex_unlock(&lm->lm_lock);
	return n;
}

size_t mds_lock_nr_locks(struct mds_lockmgr *lm)
{
	pthread_mutex_lock(&lm->lm_lock);
	size_t n = lm->lm_nr_locks;
	pthread_mutex_unlock(&lm->lm_lock);
	return n;
}
