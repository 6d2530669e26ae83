/*
 * mds/mdlease.c - the metadata lease manager (mds/mdlease.h has the model).
 *
 * DESIGN. Resources are FIDs in a hash table (mdl_res); each has its leases
 * (one per session holding something there) and, per bit, the number of
 * changes in progress that target it (grants of that bit wait for zero).
 * A lease is on two lists: its resource's, and its session's: the LRU of
 * held leases (oldest first, the one a grant over the cap calls back) or
 * the list of revoking ones (in the order they were called back, so the
 * oldest unanswered callback is the first: mdl_late_sessions()). A revoking
 * lease is also in the cookie hash (for mdl_ack()) and, until the RPC side
 * takes it, in its session's callback queue.
 *
 * A change waits on resources, not on leases: it is linked (c_links, no
 * allocation) to each target resource where some other session's lease
 * meeting the target's bits is revoking. Whenever a lease of a resource
 * goes (ack, session drop), the changes linked there look again; a change
 * that finds no such lease there unlinks, and the last unlink completes
 * it. While the change is in progress nobody is granted its bits on its
 * resources, so no new lease can make it wait longer.
 *
 * Locks: m_lock, a leaf. Change callbacks and notifications are collected
 * under it and run after it is released.
 */
#define _GNU_SOURCE
#include "mdlease.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

#define MDL_RES_BUCKETS	   65536
#define MDL_SESS_BUCKETS   1024
#define MDL_COOKIE_BUCKETS 4096
#define MDL_MAX_TARGETS	   16
#define MDL_DEFAULT_MAX	   65536
#define MDL_NR_BITS	   3
#define MDL_NOTIFY_STACK   32

struct mdl_res;
struct mdl_sess;

struct mdl_lease {
	struct mdl_res *l_res;
	struct mdl_sess *l_sess;
	uint32_t l_bits;
	bool l_revoking;
	bool l_queued;	    /* in the session's callback queue */
	uint64_t l_cookie;  /* revoking: the callback's */
	uint64_t l_sent_ns; /* revoking: when it was called back */
	struct mdl_lease *l_rnext, *l_rprev; /* the resource's leases */
	struct mdl_lease *l_snext, *l_sprev; /* the session's LRU or revoking list */
	struct mdl_lease *l_cnext;	     /* cookie hash chain */
	struct mdl_lease *l_qnext;	     /* the session's callback queue */
};

struct mdl_change;

/* A change's link to one resource it waits on. */
struct mdl_clink {
	struct mdl_change *k_change;
	struct mdl_res *k_res;
	uint32_t k_bits; /* the target's bits there */
	bool k_linked;
	struct mdl_clink *k_next, *k_prev;
};

struct mdl_res {
	struct weir_fid r_fid;
	struct mdl_lease *r_leases;
	uint32_t r_changing[MDL_NR_BITS]; /* changes in progress, per bit */
	struct mdl_clink *r_waiters;	  /* changes waiting here */
	struct mdl_res *r_next;
};

struct mdl_sess {
	uint64_t s_id;
	size_t s_nr; /* leases, held and revoking */
	struct mdl_lease *s_lru_head, *s_lru_tail; /* held, least recently granted first */
	struct mdl_lease *s_rev_head, *s_rev_tail; /* revoking, oldest first */
	struct mdl_lease *s_q_head, *s_q_tail;	   /* callbacks not yet taken */
	bool s_late_reported;
	struct mdl_sess *s_next;
};

struct mdl_change {
	uint64_t c_session;
	struct mdl_target c_t[MDL_MAX_TARGETS];
	struct mdl_clink c_links[MDL_MAX_TARGETS];
	size_t c_nr;
	size_t c_waiting; /* links still linked */
	mdl_change_cb_t c_cb;
	void *c_arg;
	bool c_in_done; /* completed, its callback not yet called (an after list has it) */
	bool c_ended;	/* mdl_change_end() came meanwhile: after_run() frees it */
	struct mdl_change *c_next, *c_prev; /* the manager's live changes */
	struct mdl_change *c_done_next;
};

struct mds_mdl {
	pthread_mutex_t m_lock;
	struct mdl_conf m_conf;
	struct mdl_res **m_res;
	struct mdl_sess *m_sess[MDL_SESS_BUCKETS];
	struct mdl_lease *m_cookies[MDL_COOKIE_BUCKETS];
	struct mdl_change *m_changes;
	uint64_t m_next_cookie;
	uint64_t m_gen;		/* changes begun */
	uint64_t *m_bucket_gen; /* per resource bucket: m_gen of the last change there */
	struct mdl_stats m_st;
};

/* What a call collects under the lock and does after it. */
struct mdl_after {
	struct mdl_change *a_done; /* changes to call back (or free when ended) */
	uint64_t a_stack[MDL_NOTIFY_STACK];
	uint64_t *a_notify;
	size_t a_nr_notify, a_max_notify;
};

/* ------------------------------------------------------------ helpers */

uint64_t mdl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool fid_eq(const struct weir_fid *a, const struct weir_fid *b)
{
	return a->fid_seq == b->fid_seq && a->fid_oid == b->fid_oid;
}

static size_t res_bucket(const struct weir_fid *fid)
{
	return weir_mix64(fid->fid_seq * 31 + fid->fid_oid) % MDL_RES_BUCKETS;
}

static struct mdl_res **res_slot(struct mds_mdl *m, const struct weir_fid *fid)
{
	return &m->m_res[res_bucket(fid)];
}

static struct mdl_res *res_find(struct mds_mdl *m, const struct weir_fid *fid, bool create)
{
	struct mdl_res **slot = res_slot(m, fid);
	for (struct mdl_res *r = *slot; r; r = r->r_next)
		if (fid_eq(&r->r_fid, fid))
			return r;
	if (!create)
		return NULL;
	struct mdl_res *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->r_fid = *fid;
	r->r_next = *slot;
	*slot = r;
	return r;
}

static void res_maybe_free(struct mds_mdl *m, struct mdl_res *r)
{
	if (r->r_leases || r->r_waiters)
		return;
	for (unsigned i = 0; i < MDL_NR_BITS; i++)
		if (r->r_changing[i])
			return;
	for (struct mdl_res **p = res_slot(m, &r->r_fid); *p; p = &(*p)->r_next) {
		if (*p == r) {
			*p = r->r_next;
			free(r);
			return;
		}
	}
}

static bool res_blocked(const struct mdl_res *r, uint32_t bits)
{
	for (unsigned i = 0; i < MDL_NR_BITS; i++)
		if ((bits & (1u << i)) && r->r_changing[i])
			return true;
	return false;
}

static struct mdl_sess **sess_slot(struct mds_mdl *m, uint64_t id)
{
	return &m->m_sess[weir_mix64(id) % MDL_SESS_BUCKETS];
}

static struct mdl_sess *sess_find(struct mds_mdl *m, uint64_t id)
{
	for (struct mdl_sess *s = *sess_slot(m, id); s; s = s->s_next)
		if (s->s_id == id)
			return s;
	return NULL;
}

static struct mdl_lease **cookie_slot(struct mds_mdl *m, uint64_t cookie)
{
	return &m->m_cookies[weir_mix64(cookie) % MDL_COOKIE_BUCKETS];
}

static void after_notify(struct mdl_after *a, uint64_t session)
{
	for (size_t i = 0; i < a->a_nr_notify; i++)
		if (a->a_notify[i] == session)
			return;
	if (a->a_nr_notify == a->a_max_notify) {
		size_t max = a->a_max_notify * 2;
		uint64_t *n = malloc(max * sizeof(*n));
		if (!n) {
			/* the session still finds its callbacks at its next poll */
			WEIR_LOG_WARN("session=%#llx: out of memory; callback notification skipped",
				      (unsigned long long)session);
			return;
		}
		memcpy(n, a->a_notify, a->a_nr_notify * sizeof(*n));
		if (a->a_notify != a->a_stack)
			free(a->a_notify);
		a->a_notify = n;
		a->a_max_notify = max;
	}
	a->a_notify[a->a_nr_notify++] = session;
}

static void after_init(struct mdl_after *a)
{
	a->a_done = NULL;
	a->a_notify = a->a_stack;
	a->a_nr_notify = 0;
	a->a_max_notify = MDL_NOTIFY_STACK;
}

/* After m_lock is released: notify, call back the completed changes. */
static void after_run(struct mds_mdl *m, struct mdl_after *a)
{
	if (m->m_conf.mc_notify)
		for (size_t i = 0; i < a->a_nr_notify; i++)
			m->m_conf.mc_notify(m->m_conf.mc_notify_arg, a->a_notify[i]);
	if (a->a_notify != a->a_stack)
		free(a->a_notify);
	for (struct mdl_change *c = a->a_done, *next; c; c = next) {
		next = c->c_done_next;
		pthread_mutex_lock(&m->m_lock);
		bool ended = c->c_ended;
		mdl_change_cb_t cb = c->c_cb; /* c may be freed once c_in_done is clear */
		void *arg = c->c_arg;
		c->c_in_done = false;
		pthread_mutex_unlock(&m->m_lock);
		if (ended)
			free(c); /* given up before its callback: not called */
		else
			cb(arg, 0);
	}
}

/* ------------------------------------------------------------ lists */

static void sess_list_add(struct mdl_lease **head, struct mdl_lease **tail, struct mdl_lease *l)
{
	l->l_snext = NULL;
	l->l_sprev = *tail;
	if (*tail)
		(*tail)->l_snext = l;
	else
		*head = l;
	*tail = l;
}

static void sess_list_del(struct mdl_lease **head, struct mdl_lease **tail, struct mdl_lease *l)
{
	if (l->l_sprev)
		l->l_sprev->l_snext = l->l_snext;
	else
		*head = l->l_snext;
	if (l->l_snext)
		l->l_snext->l_sprev = l->l_sprev;
	else
		*tail = l->l_sprev;
	l->l_snext = l->l_sprev = NULL;
}

static void clink_del(struct mdl_clink *k)
{
	if (k->k_prev)
		k->k_prev->k_next = k->k_next;
	else
		k->k_res->r_waiters = k->k_next;
	if (k->k_next)
		k->k_next->k_prev = k->k_prev;
	k->k_next = k->k_prev = NULL;
	k->k_linked = false;
}

/* Does any lease of another session than \a k's change, revoking and meeting its bits, remain? */
static bool clink_must_wait(const struct mdl_clink *k)
{
	for (const struct mdl_lease *l = k->k_res->r_leases; l; l = l->l_rnext)
		if (l->l_revoking && (l->l_bits & k->k_bits) &&
		    l->l_sess->s_id != k->k_change->c_session)
			return true;
	return false;
}

/* A lease of \a r went: the changes waiting there look again. */
static void res_waiters_check(struct mdl_res *r, struct mdl_after *a)
{
	for (struct mdl_clink *k = r->r_waiters, *next; k; k = next) {
		next = k->k_next;
		if (clink_must_wait(k))
			continue;
		clink_del(k);
		struct mdl_change *c = k->k_change;
		if (--c->c_waiting == 0) {
			c->c_in_done = true;
			c->c_done_next = a->a_done;
			a->a_done = c;
		}
	}
}

/* ------------------------------------------------------------ leases */

static struct mdl_lease *lease_find(struct mdl_res *r, const struct mdl_sess *s)
{
	for (struct mdl_lease *l = r->r_leases; l; l = l->l_rnext)
		if (l->l_sess == s)
			return l;
	return NULL;
}

/* Call \a l back: REVOKING, a cookie, queued for its session. */
static void lease_revoke(struct mds_mdl *m, struct mdl_lease *l, struct mdl_after *a)
{
	struct mdl_sess *s = l->l_sess;

	sess_list_del(&s->s_lru_head, &s->s_lru_tail, l);
	sess_list_add(&s->s_rev_head, &s->s_rev_tail, l);
	l->l_revoking = true;
	l->l_cookie = ++m->m_next_cookie;
	l->l_sent_ns = mdl_now_ns();
	struct mdl_lease **cs = cookie_slot(m, l->l_cookie);
	l->l_cnext = *cs;
	*cs = l;
	l->l_queued = true;
	l->l_qnext = NULL;
	if (s->s_q_tail)
		s->s_q_tail->l_qnext = l;
	else
		s->s_q_head = l;
	s->s_q_tail = l;
	m->m_st.ms_callbacks++;
	m->m_st.ms_revoking++;
	after_notify(a, s->s_id);
}

/* Unlink \a l from everything and free it (the session's queue is the caller's when \a dequeue is false). */
static void lease_free(struct mds_mdl *m, struct mdl_lease *l, bool dequeue, struct mdl_after *a)
{
	struct mdl_sess *s = l->l_sess;
	struct mdl_res *r = l->l_res;

	if (l->l_rprev)
		l->l_rprev->l_rnext = l->l_rnext;
	else
		r->r_leases = l->l_rnext;
	if (l->l_rnext)
		l->l_rnext->l_rprev = l->l_rprev;
	if (l->l_revoking) {
		sess_list_del(&s->s_rev_head, &s->s_rev_tail, l);
		for (struct mdl_lease **p = cookie_slot(m, l->l_cookie); *p; p = &(*p)->l_cnext) {
			if (*p == l) {
				*p = l->l_cnext;
				break;
			}
		}
		if (l->l_queued && dequeue) {
			struct mdl_lease *prev = NULL;
			for (struct mdl_lease *q = s->s_q_head; q; prev = q, q = q->l_qnext) {
				if (q != l)
					continue;
				if (prev)
					prev->l_qnext = q->l_qnext;
				else
					s->s_q_head = q->l_qnext;
				if (s->s_q_tail == q)
					s->s_q_tail = prev;
				break;
			}
		}
		m->m_st.ms_revoking--;
	} else {
		sess_list_del(&s->s_lru_head, &s->s_lru_tail, l);
	}
	s->s_nr--;
	m->m_st.ms_leases--;
	free(l);
	res_waiters_check(r, a);
	res_maybe_free(m, r);
}

/* ------------------------------------------------------------ API */

int mdl_new(const struct mdl_conf *conf, struct mds_mdl **out)
{
	if (!conf || !out)
		return -EINVAL;
	struct mds_mdl *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->m_res = calloc(MDL_RES_BUCKETS, sizeof(*m->m_res));
	m->m_bucket_gen = calloc(MDL_RES_BUCKETS, sizeof(*m->m_bucket_gen));
	if (!m->m_res || !m->m_bucket_gen) {
		free(m->m_res);
		free(m->m_bucket_gen);
		free(m);
		return -ENOMEM;
	}
	m->m_conf = *conf;
	if (!m->m_conf.mc_max_per_session)
		m->m_conf.mc_max_per_session = MDL_DEFAULT_MAX;
	pthread_mutex_init(&m->m_lock, NULL);
	*out = m;
	return 0;
}

void mdl_free(struct mds_mdl *m)
{
	if (!m)
		return;
	/* waiting changes first: told -ESHUTDOWN; every change is freed here */
	for (struct mdl_change *c = m->m_changes, *next; c; c = next) {
		next = c->c_next;
		if (c->c_waiting && !c->c_ended && c->c_cb)
			c->c_cb(c->c_arg, -ESHUTDOWN);
		free(c);
	}
	for (size_t b = 0; b < MDL_SESS_BUCKETS; b++) {
		for (struct mdl_sess *s = m->m_sess[b], *next; s; s = next) {
			next = s->s_next;
			free(s);
		}
	}
	for (size_t b = 0; b < MDL_RES_BUCKETS; b++) {
		for (struct mdl_res *r = m->m_res[b], *next; r; r = next) {
			next = r->r_next;
			for (struct mdl_lease *l = r->r_leases, *ln; l; l = ln) {
				ln = l->l_rnext;
				free(l);
			}
			free(r);
		}
	}
	free(m->m_res);
	free(m->m_bucket_gen);
	pthread_mutex_destroy(&m->m_lock);
	free(m);
}

int mdl_session_open(struct mds_mdl *m, uint64_t session)
{
	int rc = 0;
	pthread_mutex_lock(&m->m_lock);
	if (sess_find(m, session)) {
		rc = -EEXIST;
	} else {
		struct mdl_sess *s = calloc(1, sizeof(*s));
		if (!s) {
			rc = -ENOMEM;
		} else {
			s->s_id = session;
			struct mdl_sess **slot = sess_slot(m, session);
			s->s_next = *slot;
			*slot = s;
		}
	}
	pthread_mutex_unlock(&m->m_lock);
	return rc;
}

size_t mdl_session_drop(struct mds_mdl *m, uint64_t session)
{
	struct mdl_after a;
	size_t n = 0;

	after_init(&a);
	pthread_mutex_lock(&m->m_lock);
	for (struct mdl_sess **p = sess_slot(m, session); *p; p = &(*p)->s_next) {
		struct mdl_sess *s = *p;
		if (s->s_id != session)
			continue;
		s->s_q_head = s->s_q_tail = NULL; /* its callbacks go with it */
		while (s->s_lru_head) {
			lease_free(m, s->s_lru_head, false, &a);
			n++;
		}
		while (s->s_rev_head) {
			lease_free(m, s->s_rev_head, false, &a);
			n++;
		}
		*p = s->s_next;
		free(s);
		break;
	}
	pthread_mutex_unlock(&m->m_lock);
	after_run(m, &a);
	return n;
}

uint64_t mdl_gen(struct mds_mdl *m)
{
	pthread_mutex_lock(&m->m_lock);
	uint64_t g = m->m_gen;
	pthread_mutex_unlock(&m->m_lock);
	return g;
}

uint32_t mdl_grant(struct mds_mdl *m, uint64_t session, const struct weir_fid *fid,
		   uint32_t bits, uint64_t read_gen)
{
	struct mdl_after a;
	uint32_t granted = 0;

	bits &= MDL_ALL;
	if (!bits || !fid)
		return 0;
	after_init(&a);
	pthread_mutex_lock(&m->m_lock);
	struct mdl_sess *s = sess_find(m, session);
	struct mdl_res *r = s ? res_find(m, fid, true) : NULL;
	if (!r)
		goto out;
	if (res_blocked(r, bits) || m->m_bucket_gen[res_bucket(fid)] > read_gen) {
		WEIR_LOG_DEBUG("fid=" WEIR_FID_F " bits=%#x: refused: blocked %d gen %llu > %llu",
			       WEIR_FID_P(fid), bits, res_blocked(r, bits),
			       (unsigned long long)m->m_bucket_gen[res_bucket(fid)],
			       (unsigned long long)read_gen);
		/* a change is in progress, or began after the caller read what
		 * it would cache: that may be the state the change replaced */
		m->m_st.ms_refused++;
		goto out_res;
	}
	struct mdl_lease *l = lease_find(r, s);
	if (l && l->l_revoking) {
		WEIR_LOG_DEBUG("fid=" WEIR_FID_F ": refused: revoking (cookie %llu)", WEIR_FID_P(fid),
			       (unsigned long long)l->l_cookie);
		goto out_res;
	}
	if (l) {
		sess_list_del(&s->s_lru_head, &s->s_lru_tail, l);
		sess_list_add(&s->s_lru_head, &s->s_lru_tail, l);
	} else {
		if (s->s_nr >= m->m_conf.mc_max_per_session) {
			/* at the cap: call back the least recently granted; with
			 * none held (all being called back) nothing more is granted */
			if (!s->s_lru_head)
				goto out_res;
			lease_revoke(m, s->s_lru_head, &a);
			m->m_st.ms_lru_revokes++;
		}
		l = calloc(1, sizeof(*l));
		if (!l)
			goto out_res;
		l->l_res = r;
		l->l_sess = s;
		l->l_rnext = r->r_leases;
		if (r->r_leases)
			r->r_leases->l_rprev = l;
		r->r_leases = l;
		sess_list_add(&s->s_lru_head, &s->s_lru_tail, l);
		s->s_nr++;
		m->m_st.ms_leases++;
	}
	l->l_bits |= bits;
	granted = bits;
	m->m_st.ms_granted++;
out_res:
	res_maybe_free(m, r);
out:
	pthread_mutex_unlock(&m->m_lock);
	after_run(m, &a);
	return granted;
}

int mdl_change_begin(struct mds_mdl *m, uint64_t session, const struct mdl_target *targets,
		     size_t nr, mdl_change_cb_t cb, void *arg, struct mdl_change **out)
{
	struct mdl_after a;
	size_t i;
	int rc = 0;

	if (!targets || !nr || nr > MDL_MAX_TARGETS || !cb || !out)
		return -EINVAL;
	struct mdl_change *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->c_session = session;
	c->c_nr = nr;
	c->c_cb = cb;
	c->c_arg = arg;
	memcpy(c->c_t, targets, nr * sizeof(*targets));
	after_init(&a);
	pthread_mutex_lock(&m->m_lock);
	m->m_gen++;
	for (i = 0; i < nr; i++)
		m->m_bucket_gen[res_bucket(&c->c_t[i].t_fid)] = m->m_gen;
	for (i = 0; i < nr; i++) {
		struct mdl_res *r = res_find(m, &c->c_t[i].t_fid, true);
		if (!r)
			break;
		c->c_links[i].k_res = r;
		c->c_links[i].k_change = c;
		c->c_links[i].k_bits = c->c_t[i].t_bits & MDL_ALL;
		for (unsigned b = 0; b < MDL_NR_BITS; b++)
			if (c->c_links[i].k_bits & (1u << b))
				r->r_changing[b]++;
	}
	if (i < nr) {
		/* out of memory: undo the blocks taken */
		while (i-- > 0) {
			struct mdl_res *r = c->c_links[i].k_res;
			for (unsigned b = 0; b < MDL_NR_BITS; b++)
				if (c->c_links[i].k_bits & (1u << b))
					r->r_changing[b]--;
			res_maybe_free(m, r);
		}
		pthread_mutex_unlock(&m->m_lock);
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		struct mdl_clink *k = &c->c_links[i];
		for (struct mdl_lease *l = k->k_res->r_leases; l; l = l->l_rnext)
			if (!l->l_revoking && (l->l_bits & k->k_bits) && l->l_sess->s_id != session)
				lease_revoke(m, l, &a);
		/* two targets on one FID: one link waits for both */
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			if (c->c_links[j].k_res == k->k_res && c->c_links[j].k_linked) {
				c->c_links[j].k_bits |= k->k_bits;
				dup = true;
			}
		if (dup || !clink_must_wait(k))
			continue;
		k->k_linked = true;
		k->k_prev = NULL;
		k->k_next = k->k_res->r_waiters;
		if (k->k_next)
			k->k_next->k_prev = k;
		k->k_res->r_waiters = k;
		c->c_waiting++;
	}
	c->c_next = m->m_changes;
	if (c->c_next)
		c->c_next->c_prev = c;
	m->m_changes = c;
	if (c->c_waiting) {
		m->m_st.ms_changes_waited++;
		rc = -EINPROGRESS;
	}
	/* before the lock goes: another thread may complete the change (and
	 * its callback end it through *out) as soon as it is released */
	*out = c;
	pthread_mutex_unlock(&m->m_lock);
	after_run(m, &a);
	return rc;
}

void mdl_change_end(struct mds_mdl *m, struct mdl_change *c)
{
	bool keep;

	if (!c)
		return;
	pthread_mutex_lock(&m->m_lock);
	for (size_t i = 0; i < c->c_nr; i++) {
		struct mdl_res *r = c->c_links[i].k_res;
		uint32_t bits = c->c_t[i].t_bits & MDL_ALL;
		for (unsigned b = 0; b < MDL_NR_BITS; b++)
			if (bits & (1u << b))
				r->r_changing[b]--;
	}
	if (c->c_prev)
		c->c_prev->c_next = c->c_next;
	else
		m->m_changes = c->c_next;
	if (c->c_next)
		c->c_next->c_prev = c->c_prev;
	/* given up while waiting: it waits no more */
	for (size_t i = 0; i < c->c_nr; i++)
		if (c->c_links[i].k_linked)
			clink_del(&c->c_links[i]);
	c->c_waiting = 0;
	for (size_t i = 0; i < c->c_nr; i++)
		res_maybe_free(m, c->c_links[i].k_res);
	/* completed by another thread that has not called its callback yet: that thread frees it */
	keep = c->c_in_done;
	c->c_ended = true;
	pthread_mutex_unlock(&m->m_lock);
	if (!keep)
		free(c);
}

static void mdl_nop(void *arg, int rc)
{
	(void)arg;
	(void)rc;
}

int mdl_invalidate(struct mds_mdl *m, uint64_t session, const struct mdl_target *targets,
		   size_t nr)
{
	struct mdl_change *c = NULL;
	int rc = mdl_change_begin(m, session, targets, nr, mdl_nop, NULL, &c);
	if (rc == -EINPROGRESS)
		rc = 0;
	if (!rc)
		mdl_change_end(m, c);
	return rc;
}

size_t mdl_session_callbacks(struct mds_mdl *m, uint64_t session, struct mdl_callback *out,
			     size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&m->m_lock);
	struct mdl_sess *s = sess_find(m, session);
	/* the new ones are now delivered: the queue empties */
	while (s && s->s_q_head) {
		struct mdl_lease *l = s->s_q_head;
		s->s_q_head = l->l_qnext;
		l->l_queued = false;
		l->l_qnext = NULL;
	}
	if (s)
		s->s_q_tail = NULL;
	/* every callback not yet acknowledged, oldest first: one whose answer
	 * was lost with a connection is delivered again */
	for (struct mdl_lease *l = s ? s->s_rev_head : NULL; l && n < max; l = l->l_snext) {
		out[n].cb_fid = l->l_res->r_fid;
		out[n].cb_bits = l->l_bits;
		out[n].cb_cookie = l->l_cookie;
		n++;
	}
	pthread_mutex_unlock(&m->m_lock);
	return n;
}

int mdl_ack(struct mds_mdl *m, uint64_t session, uint64_t cookie)
{
	struct mdl_after a;
	int rc = -ENOENT;

	after_init(&a);
	pthread_mutex_lock(&m->m_lock);
	for (struct mdl_lease *l = *cookie_slot(m, cookie); l; l = l->l_cnext) {
		if (l->l_cookie != cookie || l->l_sess->s_id != session)
			continue;
		m->m_st.ms_acks++;
		lease_free(m, l, true, &a);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&m->m_lock);
	after_run(m, &a);
	return rc;
}

size_t mdl_late_sessions(struct mds_mdl *m, uint64_t now_ns, uint64_t timeout_ns, uint64_t *out,
			 size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&m->m_lock);
	for (size_t b = 0; b < MDL_SESS_BUCKETS; b++) {
		for (struct mdl_sess *s = m->m_sess[b]; s; s = s->s_next) {
			const struct mdl_lease *l = s->s_rev_head;
			if (!l || now_ns < l->l_sent_ns || now_ns - l->l_sent_ns < timeout_ns)
				continue;
			if (n < max)
				out[n] = s->s_id;
			n++;
		}
	}
	pthread_mutex_unlock(&m->m_lock);
	return n;
}

bool mdl_session_has_callbacks(struct mds_mdl *m, uint64_t session)
{
	pthread_mutex_lock(&m->m_lock);
	struct mdl_sess *s = sess_find(m, session);
	bool has = s && (s->s_q_head || s->s_rev_head);
	pthread_mutex_unlock(&m->m_lock);
	return has;
}

uint32_t mdl_held(struct mds_mdl *m, uint64_t session, const struct weir_fid *fid)
{
	uint32_t bits = 0;
	pthread_mutex_lock(&m->m_lock);
	struct mdl_sess *s = sess_find(m, session);
	struct mdl_res *r = s ? res_find(m, fid, false) : NULL;
	struct mdl_lease *l = r ? lease_find(r, s) : NULL;
	if (l && !l->l_revoking)
		bits = l->l_bits;
	pthread_mutex_unlock(&m->m_lock);
	return bits;
}

void mdl_stats(struct mds_mdl *m, struct mdl_stats *out)
{
	pthread_mutex_lock(&m->m_lock);
	*out = m->m_st;
	pthread_mutex_unlock(&m->m_lock);
}
