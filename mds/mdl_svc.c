/*
 * mds/mdl_svc.c - metadata leases on the wire: grants in LOOKUP and
 * GETATTR replies, MDS_LEASE_POLL (the callback channel), and changes
 * whose replies wait for the callbacks (docs/leases.md). The bookkeeping
 * is mds/mdlease.c's.
 *
 * DESIGN.
 *  - Grants: a LOOKUP or GETATTR that carries lease_session and lease_want
 *    gets, in AttrRep.lease_bits, what mdl_grant() gave on the inode found:
 *    ATTR (not while the file is open for writing: SIZE_STALE, its size is
 *    the OSTs'), LAYOUT for regular files, LOOKUP for directories. The
 *    generation is read before the namespace is (mds_mdl_gen()), so a
 *    change that committed meanwhile makes the grant fail instead of
 *    leasing what it replaced.
 *  - Changes: every committed batch reports the FIDs it wrote
 *    (kv_batch_note, mds_ns_on_change_set). On a request's thread
 *    (mds_svc_cur_rq()) they are gathered for its reply, and the reply is
 *    held (net_req.rq_rep_hold) until mdl_change_begin()'s callbacks are
 *    acknowledged or their sessions evicted: when a client's call that
 *    changed something returns, no other client still caches what it
 *    changed. The changer's own session (known by the client uuid of the
 *    request's replay prefix) is not called back: its client drops its own
 *    cache for what it changes. Changes with no request (eviction, destroy,
 *    HSM, a re-run in the recovery window) call back without waiting
 *    (mdl_invalidate()).
 *  - Callbacks: each client keeps one MDS_LEASE_POLL parked here (a long
 *    poll, on its existing connection); mc_notify answers it when its
 *    session has callbacks, the lease thread when it has waited its time
 *    (empty), and the next poll carries the acknowledgements. A session
 *    that leaves a callback unanswered for a lease is evicted
 *    (mds_mdl_late()), as Lustre evicts a client that does not cancel a
 *    lock it was asked to.
 *
 * Locks: ms_lock (parked polls, the uuid map) is taken before mdl's lock,
 * never the other way (mdl calls mc_notify after dropping its own); both
 * are leaves otherwise. m_sess_lock may be held around mds_mdl_late().
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define MDL_SVC_BUCKETS	  256
#define MDL_POLL_MAX_CB	  256	/* callbacks in one LeasePollRep */
#define MDL_MAX_TARGETS_RQ 16	/* what one request's reply waits for (more: not waited) */
#define MDL_DEFAULT_MAX	  65536 /* leases per session */

struct mdl_poll {
	uint64_t p_session;
	struct net_req *p_rq;
	uint64_t p_deadline_ns;
	struct mdl_poll *p_next;
};

struct mdl_uuid {
	uint8_t u_uuid[16];
	uint64_t u_session;
	struct mdl_uuid *u_next;
};

struct mdl_svc {
	struct mds *ms_m;
	struct mds_mdl *ms_mgr;
	pthread_mutex_t ms_lock;
	struct mdl_poll *ms_polls[MDL_SVC_BUCKETS];
	struct mdl_uuid *ms_uuids[MDL_SVC_BUCKETS];
};

static unsigned mdl_bucket(uint64_t x)
{
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return (unsigned)(x % MDL_SVC_BUCKETS);
}

static unsigned uuid_bucket(const uint8_t *u)
{
	uint64_t x;
	memcpy(&x, u, sizeof(x));
	return mdl_bucket(x);
}

/* ------------------------------------------------------------ polls */

static void poll_reply(struct mds_mdl *mgr, uint64_t session, struct net_req *rq, int rc)
{
	struct mdl_callback cbs[64];
	Weir__LeasePollRep rep = WEIR__LEASE_POLL_REP__INIT;
	Weir__LeaseCallback msgs[64], *ptrs[64];
	Weir__Fid fids[64];
	size_t n = rc ? 0 : mdl_session_callbacks(mgr, session, cbs, 64);

	for (size_t i = 0; i < n; i++) {
		weir__lease_callback__init(&msgs[i]);
		weir__fid__init(&fids[i]);
		fids[i].seq = cbs[i].cb_fid.fid_seq;
		fids[i].oid = cbs[i].cb_fid.fid_oid;
		msgs[i].fid = &fids[i];
		msgs[i].bits = cbs[i].cb_bits;
		msgs[i].cookie = cbs[i].cb_cookie;
		ptrs[i] = &msgs[i];
	}
	rep.n_callbacks = n;
	rep.callbacks = n ? ptrs : NULL;
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
}

/* Take \a session's parked poll, if any. Called with ms_lock held. */
static struct net_req *poll_take_locked(struct mdl_svc *ms, uint64_t session)
{
	for (struct mdl_poll **pp = &ms->ms_polls[mdl_bucket(session)]; *pp; pp = &(*pp)->p_next) {
		struct mdl_poll *p = *pp;
		if (p->p_session != session)
			continue;
		struct net_req *rq = p->p_rq;
		*pp = p->p_next;
		free(p);
		return rq;
	}
	return NULL;
}

/* mc_notify: \a session has callbacks; answer its parked poll with them. */
static void mdl_notify(void *arg, uint64_t session)
{
	struct mdl_svc *ms = arg;
	pthread_mutex_lock(&ms->ms_lock);
	struct net_req *rq = poll_take_locked(ms, session);
	pthread_mutex_unlock(&ms->ms_lock);
	if (rq)
		poll_reply(ms->ms_mgr, session, rq, 0);
}

void mds_mdl_handle_poll(struct mds *m, struct net_req *rq)
{
	struct mdl_svc *ms = m->m_mdl;
	Weir__LeasePollReq *req = net_req_unpack(rq, &weir__lease_poll_req__descriptor);
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	uint64_t session = req->session;
	int rc = ms ? mds_session_touch(m, session) : -EOPNOTSUPP;
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	for (size_t i = 0; i < req->n_acks; i++)
		mdl_ack(ms->ms_mgr, session, req->acks[i]); /* -ENOENT: already gone (eviction) */
	uint64_t wait_ms = WEIR_MIN((uint64_t)req->wait_ms, (uint64_t)m->m_conf.mc_lease_ms / 2);
	protobuf_c_message_free_unpacked(&req->base, NULL);

	struct net_req *old;
	bool park = false;
	pthread_mutex_lock(&ms->ms_lock);
	old = poll_take_locked(ms, session); /* a client has one poll parked: the newest */
	/* parked before looking, under ms_lock: a callback queued after the
	 * look notifies, and mdl_notify then finds this poll */
	if (wait_ms && !mdl_session_has_callbacks(ms->ms_mgr, session)) {
		struct mdl_poll *p = calloc(1, sizeof(*p));
		if (p) {
			p->p_session = session;
			p->p_rq = rq;
			p->p_deadline_ns = weir_now_ns() + wait_ms * 1000000ULL;
			struct mdl_poll **slot = &ms->ms_polls[mdl_bucket(session)];
			p->p_next = *slot;
			*slot = p;
			park = true;
		}
	}
	pthread_mutex_unlock(&ms->ms_lock);
	if (old) { /* superseded (its client gave up on it): answered empty */
		Weir__LeasePollRep empty = WEIR__LEASE_POLL_REP__INIT;
		net_req_reply(old, 0, &empty.base, NULL, 0);
	}
	if (!park)
		poll_reply(ms->ms_mgr, session, rq, 0);
}

void mds_mdl_tick(struct mds *m)
{
	struct mdl_svc *ms = m->m_mdl;
	struct mdl_poll *due = NULL;
	uint64_t now = weir_now_ns();

	if (!ms)
		return;
	pthread_mutex_lock(&ms->ms_lock);
	for (unsigned b = 0; b < MDL_SVC_BUCKETS; b++) {
		for (struct mdl_poll **pp = &ms->ms_polls[b]; *pp;) {
			struct mdl_poll *p = *pp;
			if (p->p_deadline_ns > now) {
				pp = &p->p_next;
				continue;
			}
			*pp = p->p_next;
			p->p_next = due;
			due = p;
		}
	}
	pthread_mutex_unlock(&ms->ms_lock);
	while (due) {
		struct mdl_poll *p = due;
		due = p->p_next;
		poll_reply(ms->ms_mgr, p->p_session, p->p_rq, 0);
		free(p);
	}
}

size_t mds_mdl_late(struct mds *m, uint64_t *out, size_t max)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms)
		return 0;
	size_t n = mdl_late_sessions(ms->ms_mgr, mdl_now_ns(),
				     (uint64_t)m->m_conf.mc_lease_ms * 1000000ULL, out, max);
	for (size_t i = 0; i < WEIR_MIN(n, max); i++)
		WEIR_LOG_WARN("session=%#llx: metadata lease callback not acknowledged within the"
			      " lease (%u ms): evicting", (unsigned long long)out[i],
			      m->m_conf.mc_lease_ms);
	return WEIR_MIN(n, max);
}

/* ------------------------------------------------------------ sessions */

void mds_mdl_session_new(struct mds *m, uint64_t session, const uint8_t *uuid, size_t uuid_len)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms)
		return;
	int rc = mdl_session_open(ms->ms_mgr, session);
	if (rc)
		WEIR_LOG_WARN("session=%#llx rc=%d: no metadata leases for this session",
			      (unsigned long long)session, rc);
	if (uuid_len != 16)
		return;
	pthread_mutex_lock(&ms->ms_lock);
	struct mdl_uuid **slot = &ms->ms_uuids[uuid_bucket(uuid)], *u;
	for (u = *slot; u; u = u->u_next)
		if (!memcmp(u->u_uuid, uuid, 16))
			break;
	if (!u && (u = calloc(1, sizeof(*u)))) {
		memcpy(u->u_uuid, uuid, 16);
		u->u_next = *slot;
		*slot = u;
	}
	if (u)
		u->u_session = session; /* the mount's newest session */
	pthread_mutex_unlock(&ms->ms_lock);
}

void mds_mdl_session_end(struct mds *m, uint64_t session)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms)
		return;
	pthread_mutex_lock(&ms->ms_lock);
	struct net_req *rq = poll_take_locked(ms, session);
	for (unsigned b = 0; b < MDL_SVC_BUCKETS; b++) {
		for (struct mdl_uuid **pp = &ms->ms_uuids[b]; *pp;) {
			struct mdl_uuid *u = *pp;
			if (u->u_session != session) {
				pp = &u->u_next;
				continue;
			}
			*pp = u->u_next;
			free(u);
		}
	}
	pthread_mutex_unlock(&ms->ms_lock);
	if (rq)
		net_req_reply(rq, -ESTALE, NULL, NULL, 0);
	size_t n = mdl_session_drop(ms->ms_mgr, session);
	if (n)
		WEIR_LOG_DEBUG("session=%#llx: %zu metadata leases dropped",
			       (unsigned long long)session, n);
}

/* The session of the mount whose uuid is \a uuid (0: unknown). */
static uint64_t session_of_uuid(struct mdl_svc *ms, const uint8_t *uuid)
{
	uint64_t s = 0;
	pthread_mutex_lock(&ms->ms_lock);
	for (struct mdl_uuid *u = ms->ms_uuids[uuid_bucket(uuid)]; u; u = u->u_next) {
		if (!memcmp(u->u_uuid, uuid, 16)) {
			s = u->u_session;
			break;
		}
	}
	pthread_mutex_unlock(&ms->ms_lock);
	return s;
}

/* ------------------------------------------------------------ grants */

static void mdl_on_change(void *arg, const struct weir_fid *fids, const uint32_t *bits, size_t nr,
			  bool lost);


uint64_t mds_mdl_gen(struct mds *m)
{
	return m->m_mdl ? mdl_gen(m->m_mdl->ms_mgr) : 0;
}

/*
 * \a creator: \a in was just made by an open for writing of \a session,
 * and is open nowhere else: its size (0) is exact while nobody else opens it
 * for writing (op_open notes such an open as a change of ATTR, which calls
 * this lease back first) and the holder's own writes drop what it cached.
 */
static uint32_t mdl_grant_in(struct mds *m, uint64_t session, uint32_t want, uint64_t gen,
			     const struct mds_inode *in, bool creator)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms || !session || !want)
		return 0;
	uint32_t bits = want & MDL_ALL;
	if (!S_ISDIR(in->in_mode))
		bits &= ~(uint32_t)MDL_LOOKUP;
	if (!S_ISREG(in->in_mode))
		bits &= ~(uint32_t)MDL_LAYOUT;
	/* open for writing (or its size unknown): the size is the OSTs' */
	if ((in->in_flags & MDS_INODE_F_SIZE_STALE) && !creator)
		bits &= ~(uint32_t)(MDL_ATTR | MDL_LAYOUT);
	/* HSM state moves without the client (archive, release, restore) */
	if (S_ISREG(in->in_mode) && (in->in_flags & MDS_INODE_F_RELEASED))
		bits &= ~(uint32_t)(MDL_ATTR | MDL_LAYOUT);
	if (!bits)
		return 0;
	uint32_t got = mdl_grant(ms->ms_mgr, session, &in->in_fid, bits, gen);
	if (got != bits)
		WEIR_LOG_DEBUG("session=%#llx fid=" WEIR_FID_F " want=%#x: lease refused (a change"
			       " in progress or since the read, or the session's cap)",
			       (unsigned long long)session, WEIR_FID_P(&in->in_fid), bits);
	return got;
}

uint32_t mds_mdl_grant(struct mds *m, uint64_t session, uint32_t want, uint64_t gen,
		       const struct mds_inode *in)
{
	return mdl_grant_in(m, session, want, gen, in, false);
}

uint32_t mds_mdl_grant_creator(struct mds *m, uint64_t session, uint32_t want, uint64_t gen,
			       const struct mds_inode *in)
{
	return mdl_grant_in(m, session, want, gen, in, true);
}

void mds_mdl_note(struct mds *m, const struct weir_fid *fid, uint32_t bits)
{
	if (m->m_mdl)
		mdl_on_change(m->m_mdl, fid, &bits, 1, false);
}

/* ------------------------------------------------------------ changes */

/*
 * A request that may change the namespace, from its handler's start to its
 * reply (mds_mdl_pending_begin): what its commits changed. Two references:
 * the handler's thread (mds_mdl_pending_end) and the reply (mdl_hold), so a
 * commit on the handler's thread after the reply went, or a reply from
 * another thread, finds it alive. Fields under ms_lock.
 */
struct mdl_pending {
	struct mdl_svc *mp_ms;
	uint64_t mp_session;
	struct net_req *mp_rq;
	struct mdl_change *mp_change;
	struct mdl_target mp_t[MDL_MAX_TARGETS_RQ];
	size_t mp_nr;
	bool mp_replied; /* its reply was decided: later changes are not waited for */
	int mp_refs;
};

static __thread struct mdl_pending *mdl_cur; /* the handler running on this thread */

static void pending_put(struct mdl_pending *p)
{
	struct mdl_svc *ms = p->mp_ms;
	pthread_mutex_lock(&ms->ms_lock);
	bool last = --p->mp_refs == 0;
	pthread_mutex_unlock(&ms->ms_lock);
	if (last)
		free(p);
}

static void mdl_hold_done(void *arg, int rc)
{
	struct mdl_pending *p = arg;
	WEIR_LOG_DEBUG("op=%u reqid=%llu rc=%d: held reply sent", p->mp_rq->rq_hdr.fh_opcode,
		       (unsigned long long)p->mp_rq->rq_hdr.fh_reqid, rc);
	/* -ESHUTDOWN: the MDS stops (mdl_free frees the change); the reply goes all the same */
	if (rc != -ESHUTDOWN)
		mdl_change_end(p->mp_ms->ms_mgr, p->mp_change);
	net_req_reply_held(p->mp_rq);
	pending_put(p);
}

/* net_req.rq_rep_hold: call back what the request changed; hold its reply meanwhile. */
static bool mdl_hold(struct net_req *rq, bool can_hold)
{
	struct mdl_pending *p = rq->rq_hold_arg;
	struct mdl_svc *ms = p->mp_ms;
	struct mdl_target t[MDL_MAX_TARGETS_RQ];
	size_t nr;

	rq->rq_hold_arg = NULL;
	pthread_mutex_lock(&ms->ms_lock);
	p->mp_replied = true;
	nr = p->mp_nr;
	memcpy(t, p->mp_t, nr * sizeof(t[0]));
	pthread_mutex_unlock(&ms->ms_lock);
	if (!nr) { /* it changed nothing a client may cache */
		pending_put(p);
		return false;
	}
	if (!can_hold) {
		mdl_invalidate(ms->ms_mgr, p->mp_session, t, nr);
		pending_put(p);
		return false;
	}
	p->mp_rq = rq;
	int rc = mdl_change_begin(ms->ms_mgr, p->mp_session, t, nr, mdl_hold_done, p,
				  &p->mp_change);
	if (rc == -EINPROGRESS) {
		WEIR_LOG_DEBUG("op=%u reqid=%llu targets=%zu first=" WEIR_FID_F ": reply held for callbacks",
			       rq->rq_hdr.fh_opcode, (unsigned long long)rq->rq_hdr.fh_reqid, nr,
			       WEIR_FID_P(&t[0].t_fid));
		return true; /* mdl_hold_done() sends it */
	}
	if (!rc) {
		mdl_change_end(ms->ms_mgr, p->mp_change);
	} else {
		WEIR_LOG_WARN_RL("rc=%d: cannot call back metadata leases for a change; calling"
				 " them back without waiting", rc);
		mdl_invalidate(ms->ms_mgr, p->mp_session, t, nr);
	}
	pending_put(p);
	return false;
}

void *mds_mdl_pending_begin(struct mds *m, struct net_req *rq, const struct mds_xid *x)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms)
		return NULL;
	if (rq->rq_rep_hold == mdl_hold) {
		/* a parked request run again (mds_cmap_park, the recovery gate): the same one */
		struct mdl_pending *p = rq->rq_hold_arg;
		pthread_mutex_lock(&ms->ms_lock);
		p->mp_refs++;
		pthread_mutex_unlock(&ms->ms_lock);
		mdl_cur = p;
		return p;
	}
	if (rq->rq_rep_hold)
		return NULL;
	struct mdl_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL; /* its changes are then called back without waiting */
	p->mp_ms = ms;
	p->mp_session = x && x->x_has ? session_of_uuid(ms, x->x_hdr.xh_uuid) : 0;
	p->mp_refs = 2;
	rq->rq_hold_arg = p;
	rq->rq_rep_hold = mdl_hold;
	mdl_cur = p;
	return p;
}

void mds_mdl_pending_end(void *pending)
{
	if (!pending)
		return;
	mdl_cur = NULL;
	pending_put(pending);
}

/* mds_ns_on_change_set(): a batch committed these changes. */
static void mdl_on_change(void *arg, const struct weir_fid *fids, const uint32_t *bits, size_t nr,
			  bool lost)
{
	struct mdl_svc *ms = arg;
	struct mdl_target t[MDL_MAX_TARGETS_RQ];
	struct mdl_pending *p = mdl_cur;

	if (lost)
		WEIR_LOG_ERROR_RL("out of memory: a change could not record what it changed;"
				  " clients may cache it until their leases are called back");
	if (p && p->mp_ms == ms) {
		pthread_mutex_lock(&ms->ms_lock);
		size_t i = 0;
		for (; !p->mp_replied && i < nr && p->mp_nr < MDL_MAX_TARGETS_RQ; i++) {
			size_t j = 0;
			while (j < p->mp_nr && (p->mp_t[j].t_fid.fid_seq != fids[i].fid_seq ||
						p->mp_t[j].t_fid.fid_oid != fids[i].fid_oid))
				j++;
			if (j == p->mp_nr) {
				p->mp_t[j].t_fid = fids[i];
				p->mp_t[j].t_bits = 0;
				p->mp_nr++;
			}
			p->mp_t[j].t_bits |= bits[i];
		}
		pthread_mutex_unlock(&ms->ms_lock);
		fids += i;
		bits += i;
		nr -= i;
	}
	/* no request to hold (the MDS's own change), its reply gone, or too much: not waited */
	while (nr) {
		size_t k = WEIR_MIN(nr, (size_t)MDL_MAX_TARGETS_RQ);
		for (size_t i = 0; i < k; i++) {
			t[i].t_fid = fids[i];
			t[i].t_bits = bits[i];
		}
		/* after the reply the changer may have read and leased the old
		 * state again: its session is called back too */
		mdl_invalidate(ms->ms_mgr, p && !p->mp_replied ? p->mp_session : 0, t, k);
		fids += k;
		bits += k;
		nr -= k;
	}
}

/* ------------------------------------------------------------ start, stop, stats */

int mds_mdl_start(struct mds *m)
{
	struct mdl_svc *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	struct mdl_conf c = {
		.mc_max_per_session = m->m_conf.mc_mdl_max ? m->m_conf.mc_mdl_max : MDL_DEFAULT_MAX,
		.mc_notify = mdl_notify,
		.mc_notify_arg = ms,
	};
	int rc = mdl_new(&c, &ms->ms_mgr);
	if (rc) {
		free(ms);
		return rc;
	}
	ms->ms_m = m;
	pthread_mutex_init(&ms->ms_lock, NULL);
	m->m_mdl = ms;
	mds_ns_on_change_set(m->m_ns, mdl_on_change, ms);
	return 0;
}

void mds_mdl_stop(struct mds *m)
{
	struct mdl_svc *ms = m->m_mdl;
	if (!ms)
		return;
	mds_ns_on_change_set(m->m_ns, NULL, NULL);
	for (unsigned b = 0; b < MDL_SVC_BUCKETS; b++) {
		while (ms->ms_polls[b]) {
			struct mdl_poll *p = ms->ms_polls[b];
			ms->ms_polls[b] = p->p_next;
			net_req_reply(p->p_rq, -ESHUTDOWN, NULL, NULL, 0);
			free(p);
		}
		while (ms->ms_uuids[b]) {
			struct mdl_uuid *u = ms->ms_uuids[b];
			ms->ms_uuids[b] = u->u_next;
			free(u);
		}
	}
	mdl_free(ms->ms_mgr); /* held replies go out (-ESHUTDOWN to their waits) */
	pthread_mutex_destroy(&ms->ms_lock);
	m->m_mdl = NULL;
	free(ms);
}

uint32_t mds_mdl_max(const struct mds *m)
{
	if (!m->m_mdl)
		return 0;
	return m->m_conf.mc_mdl_max ? m->m_conf.mc_mdl_max : MDL_DEFAULT_MAX;
}

void mds_mdl_stats(struct mds *m, struct mdl_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (m->m_mdl)
		mdl_stats(m->m_mdl->ms_mgr, out);
}
