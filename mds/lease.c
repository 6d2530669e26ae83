/*
 * mds/lease.c - client sessions, their leases, eviction, and the lock RPCs
 * (MDS_LEASE_RENEW, MDS_DISCONNECT, MDS_LOCK, MDS_LOCK_TEST, MDS_LOCK_CANCEL) in
 * front of the lock manager (mds/lock.c).
 *
 * DESIGN. Every MDS_CONNECT makes a session: a random-based 64-bit id the
 * client sends with its opens, locks and lease renewals. Any request that
 * carries a live session renews its lease (mc_lease_ms); the client also
 * renews every lease/3 from a thread. One thread, "mds-lease", wakes every
 * lease/4 (50 ms to 1 s) and evicts the sessions whose lease ended (and
 * those that sent MDS_DISCONNECT): it drops all their locks in the manager
 * (granting what then can be, answering their queued requests -ESTALE),
 * closes their open handles in the namespace (a writer's handle after a
 * glimpse of the file's objects, so the size is right once SIZE_STALE
 * clears; if the OSTs cannot be asked, the handle is closed as a reader and
 * the file stays marked stale) and kicks the destroy thread for
 * open-unlinked files. An evicted session's later requests get -ESTALE; the
 * client reconnects for a new one. The same thread expires long polls:
 * a blocking lock request parked for mc_lease_ms is answered -EAGAIN and
 * stays queued; the client sends it again (same token) to keep waiting.
 *
 * Locks: m_sess_lock guards the session table and the thread's wake-up; it
 * is a leaf, like the manager's own lock. Eviction runs without it. Parked
 * lock requests are answered from whichever thread granted them (see
 * mds/lock.c), with net_req_reply(), which is thread-safe. Sessions live in
 * memory only; the clients that had one are kept on the MDT (mds/
 * recovery.c), so after a restart they reconnect with new sessions and
 * replay their opens and locks in the recovery window, which this thread
 * ends (mds_recovery_tick()); an ended session forgets its client there.
 */
#define _GNU_SOURCE
#include "mds_int.h"
#include "hsm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define LEASE_MAX_CONNS		 64
#define LEASE_GLIMPSE_TIMEOUT_MS 3000

static uint64_t lease_ns(const struct mds *m)
{
	return (uint64_t)m->m_conf.mc_lease_ms * 1000000ULL;
}

static struct mds_session **sess_slot(struct mds *m, uint64_t id)
{
	return &m->m_sessions[(id ^ (id >> 17)) % MDS_SESSION_BUCKETS];
}

/* Called with m_sess_lock held. */
static struct mds_session *sess_find_locked(struct mds *m, uint64_t id)
{
	for (struct mds_session *se = *sess_slot(m, id); se; se = se->se_next)
		if (se->se_id == id)
			return se;
	return NULL;
}

int mds_session_new(struct mds *m, const char *peer, const char *name, uint64_t *id)
{
	struct mds_session *se = calloc(1, sizeof(*se));
	if (!se)
		return -ENOMEM;
	snprintf(se->se_peer, sizeof(se->se_peer), "%s", peer ? peer : "?");
	snprintf(se->se_name, sizeof(se->se_name), "%s", name ? name : "?");
	pthread_mutex_lock(&m->m_sess_lock);
	do {
		se->se_id = m->m_sess_base + ++m->m_sess_next;
	} while (!se->se_id || sess_find_locked(m, se->se_id));
	pthread_mutex_unlock(&m->m_sess_lock);
	/* the manager first: once the session is in the table it may be used */
	int rc = mds_lock_session_open(m->m_locks, se->se_id);
	if (rc) {
		free(se);
		return rc == -EEXIST ? -EIO : rc;
	}
	pthread_mutex_lock(&m->m_sess_lock);
	se->se_expire_ns = weir_now_ns() + lease_ns(m);
	struct mds_session **slot = sess_slot(m, se->se_id);
	se->se_next = *slot;
	*slot = se;
	pthread_mutex_unlock(&m->m_sess_lock);
	*id = se->se_id;
	WEIR_LOG_INFO("session=%#llx peer=%s client=%s: new session", (unsigned long long)se->se_id,
		      se->se_peer, se->se_name);
	return 0;
}

/*
 * Is \a se's lease still good at \a now? Also when it ran out while the
 * MDS itself was stopped: while mds-lease oversleeps (it has not woken to
 * renew every lease, lease_stall_check()), a request that finds its lease
 * over is the server's fault, not the client's. Called with m_sess_lock held.
 */
static bool sess_alive_locked(const struct mds *m, const struct mds_session *se, uint64_t now)
{
	if (se->se_expire_ns > now)
		return true;
	return se->se_expire_ns > 1 && mds_stalled_since(m, now);
}

uint64_t mds_stalled_since(const struct mds *m, uint64_t now)
{
	uint64_t since = __atomic_load_n(&m->m_lease_seen_ns, __ATOMIC_ACQUIRE);
	/* \a now may be older than m_lease_seen_ns: read before */
	if (since && now > since && now - since > m->m_lease_late_ns)
		return since;
	return 0;
}

int mds_session_touch(struct mds *m, uint64_t id)
{
	int rc = -ESTALE;
	uint64_t now = weir_now_ns();
	pthread_mutex_lock(&m->m_sess_lock);
	struct mds_session *se = id ? sess_find_locked(m, id) : NULL;
	if (se && sess_alive_locked(m, se, now)) {
		se->se_expire_ns = now + lease_ns(m);
		rc = 0;
	}
	pthread_mutex_unlock(&m->m_sess_lock);
	return rc;
}

bool mds_session_alive(struct mds *m, uint64_t id)
{
	uint64_t now = weir_now_ns();
	pthread_mutex_lock(&m->m_sess_lock);
	struct mds_session *se = id ? sess_find_locked(m, id) : NULL;
	bool alive = se && sess_alive_locked(m, se, now);
	pthread_mutex_unlock(&m->m_sess_lock);
	return alive;
}

/* ------------------------------------------------------------ eviction */

struct oss_conn {
	char oc_addr[MDS_ADDR_MAX];
	struct net_conn *oc_conn;
};

struct lease_ctx {
	struct oss_conn lc_conns[LEASE_MAX_CONNS];
	int lc_nr;
};

static struct net_conn *conn_for(struct lease_ctx *lc, const char *addr)
{
	for (int i = 0; i < lc->lc_nr; i++)
		if (!strcmp(lc->lc_conns[i].oc_addr, addr))
			return lc->lc_conns[i].oc_conn;
	struct net_conn *c;
	if (net_conn_open(addr, LEASE_GLIMPSE_TIMEOUT_MS, &c))
		return NULL;
	if (lc->lc_nr == LEASE_MAX_CONNS) {
		net_conn_close(lc->lc_conns[0].oc_conn);
		memmove(lc->lc_conns, lc->lc_conns + 1,
			sizeof(lc->lc_conns[0]) * (LEASE_MAX_CONNS - 1));
		lc->lc_nr--;
	}
	snprintf(lc->lc_conns[lc->lc_nr].oc_addr, sizeof(lc->lc_conns[0].oc_addr), "%s", addr);
	lc->lc_conns[lc->lc_nr].oc_conn = c;
	lc->lc_nr++;
	return c;
}

/* The exact size of \a fid from its objects (OST_GETATTR each), as libweir's glimpse. */
static int evict_glimpse(struct mds *m, struct lease_ctx *lc, const struct weir_fid *fid,
			 uint64_t *size, uint64_t *blocks)
{
	struct mds_inode in;
	int rc = mds_ns_getattr(m->m_ns, fid, &in);
	if (rc)
		return rc;
	*size = in.in_size;
	*blocks = in.in_blocks;
	if (!in.in_has_layout)
		return 0;
	const struct weir_layout *lo = &in.in_layout;
	uint64_t sz = in.in_size, blk = 0;
	for (uint32_t i = 0; i < lo->lo_stripe_count && i < WEIR_LAYOUT_MAX_STRIPES; i++) {
		char addr[MDS_ADDR_MAX];
		rc = mds_cmap_ost_addr(m, lo->lo_osts[i], addr, sizeof(addr));
		if (rc)
			return rc;
		struct net_conn *c = conn_for(lc, addr);
		if (!c)
			return -EHOSTDOWN;
		Weir__Fid pf = WEIR__FID__INIT;
		pf.seq = fid->fid_seq;
		pf.oid = fid->fid_oid;
		Weir__ObjReq req = WEIR__OBJ_REQ__INIT;
		req.ost = lo->lo_osts[i];
		req.fid = &pf;
		req.stripe = i;
		struct mds_capa_msg cm;
		if (mds_capa_sign(m, fid, WEIR_CAPA_GETATTR, &cm))
			req.capa = &cm.cm_capa;
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__OST_GETATTR, &req.base);
		call.nc_timeout_ms = LEASE_GLIMPSE_TIMEOUT_MS;
		rc = net_call_run(c, &call);
		if (rc == -ENOENT) {
			net_call_fini(&call);
			continue;
		}
		Weir__ObjAttrRep *rep =
		    rc ? NULL : net_call_unpack(&call, &weir__obj_attr_rep__descriptor);
		net_call_fini(&call);
		if (!rc && !rep)
			rc = -EPROTO;
		if (rc)
			return rc;
		if (rep->exists) {
			sz = WEIR_MAX(sz, weir_layout_file_size(lo, i, rep->size));
			blk += rep->blocks;
		}
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	*size = sz;
	*blocks = blk;
	return 0;
}

static void session_evict(struct mds *m, struct lease_ctx *lc, struct mds_session *se,
			  const char *why)
{
	mds_mdl_session_end(m, se->se_id); /* first: changes waiting on its leases go on */
	size_t nr_locks = mds_lock_session_drop(m->m_locks, se->se_id, -ESTALE);
	mds_hsm_evicted(m, se->se_id); /* an agent's running HSM actions go back to waiting */
	struct mds_handle *list = mds_svc_handles_take(m, se->se_id);
	size_t nr_handles = 0;
	while (list) {
		struct mds_handle *h = list;
		list = h->h_next;
		uint64_t size = 0, blocks = 0;
		bool writer = h->h_writer;
		/* read before the glimpse: a truncate meanwhile outdates it */
		uint64_t epoch = writer ? mds_ns_size_epoch(m->m_ns, &h->h_fid) : 0;
		int rc = writer ? evict_glimpse(m, lc, &h->h_fid, &size, &blocks) : 0;
		if (rc) {
			char b[96];
			WEIR_LOG_WARN("session=%#llx fid=" WEIR_FID_F " rc=%s: cannot glimpse the"
				      " size of an evicted writer; the file stays marked stale",
				      (unsigned long long)se->se_id, WEIR_FID_P(&h->h_fid),
				      weir_rc_str(rc, b, sizeof(b)));
			mds_ns_size_unknown(m->m_ns, &h->h_fid);
			writer = false;
		}
		struct mds_write_report wr = { .wr_has_size = writer, .wr_size = size,
						.wr_blocks = blocks, .wr_size_epoch = epoch };
		rc = mds_ns_close_file(m->m_ns, &h->h_fid, writer, &wr);
		if (rc && rc != -ENOENT)
			WEIR_LOG_WARN("session=%#llx fid=" WEIR_FID_F " rc=%d: close on eviction",
				      (unsigned long long)se->se_id, WEIR_FID_P(&h->h_fid), rc);
		nr_handles++;
		free(h);
	}
	if (nr_handles)
		mds_destroy_kick(m);
	mds_recovery_session_end(m, se->se_id); /* its client is no longer known */
	if (se->se_expire_ns || nr_locks || nr_handles)
		WEIR_LOG_NOTICE("session=%#llx peer=%s client=%s: %s; dropped %zu locks and queued"
				" lock requests, closed %zu open handles",
				(unsigned long long)se->se_id, se->se_peer, se->se_name, why,
				nr_locks, nr_handles);
	else
		WEIR_LOG_INFO("session=%#llx peer=%s client=%s: %s", (unsigned long long)se->se_id,
			      se->se_peer, se->se_name, why);
}

static void lease_wait(struct mds *m, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000ULL;
	ts.tv_sec += (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pthread_cond_timedwait(&m->m_lease_cond, &m->m_sess_lock, &ts);
}

/*
 * The MDS itself did not run for a while (SIGSTOP, a VM paused, the host
 * thrashing): no client could renew meanwhile, so evicting them now would
 * punish them for the server's stop. When this thread's sleep, begun at
 * \a slept_from, lasted longer than m_lease_late_ns (the sleep it asked for
 * and a quarter lease), every live session gets a whole lease from now, and
 * the stop is logged. Only the sleep is measured: a pass slowed by its
 * evictions or a slow fsync is no stop (and a stop during a pass is not
 * seen). Called with m_sess_lock held.
 */
static bool lease_stall_check(struct mds *m, uint64_t slept_from, uint64_t now)
{
	uint64_t slept = now - slept_from;
	if (slept <= m->m_lease_late_ns)
		return false;
	unsigned n = 0;
	for (int b = 0; b < MDS_SESSION_BUCKETS; b++) {
		for (struct mds_session *se = m->m_sessions[b]; se; se = se->se_next) {
			/* 0: disconnected, 1: to be evicted (mds_session_evict_now) */
			if (se->se_expire_ns > 1 && se->se_expire_ns < now + lease_ns(m)) {
				se->se_expire_ns = now + lease_ns(m);
				n++;
			}
		}
	}
	WEIR_LOG_NOTICE("the MDS did not run for %.1f s (stopped, paused or starved): %u client "
			"leases renewed from now instead of evicting them",
			(double)slept / 1e9, n);
	return true;
}

static void *lease_main(void *arg)
{
	struct mds *m = arg;
	struct lease_ctx *lc = calloc(1, sizeof(*lc));
	uint64_t tick_ms = WEIR_MIN(WEIR_MAX(m->m_conf.mc_lease_ms / 4, 50U), 1000U);
	weir_thread_name("mds-lease");
	if (!lc) {
		WEIR_LOG_ERROR("out of memory: the lease thread cannot run");
		return NULL;
	}
	/* tests only: after a stop, wait this long before noticing it */
	const char *tw = getenv("WEIR_MDS_TEST_STALL_NOTICE_MS");
	uint32_t test_wake_ms = tw ? (uint32_t)strtoul(tw, NULL, 10) : 0;
	if (test_wake_ms)
		WEIR_LOG_WARN("WEIR_MDS_TEST_STALL_NOTICE_MS=%u: a test mode; stops of the MDS are"
			      " noticed late", test_wake_ms);
	pthread_mutex_lock(&m->m_sess_lock);
	m->m_lease_late_ns = tick_ms * 1000000ULL + lease_ns(m) / 4;
	while (!atomic_load(&m->m_stop)) {
		uint64_t slept_from = weir_now_ns();
		bool slept = !m->m_lease_kick;
		if (slept) {
			__atomic_store_n(&m->m_lease_seen_ns, slept_from, __ATOMIC_RELEASE);
			lease_wait(m, tick_ms);
			uint64_t woke = weir_now_ns();
			if (test_wake_ms && woke - slept_from > m->m_lease_late_ns) {
				/* tests: the other threads run first after a stop */
				pthread_mutex_unlock(&m->m_sess_lock);
				struct timespec ts = { .tv_sec = test_wake_ms / 1000,
						       .tv_nsec = (long)(test_wake_ms % 1000) * 1000000L };
				nanosleep(&ts, NULL);
				pthread_mutex_lock(&m->m_sess_lock);
				woke = weir_now_ns();
			}
			/* nor could the OSTs' heartbeats be heard: done before the mark
			 * goes, so a create never sees neither (mds_cmap_choose) */
			if (woke - slept_from > m->m_lease_late_ns)
				mds_cmap_stalled(m, slept_from, woke);
			/* awake: the pass's own time is no stop */
			__atomic_store_n(&m->m_lease_seen_ns, 0, __ATOMIC_RELEASE);
		}
		m->m_lease_kick = false;
		if (atomic_load(&m->m_stop))
			break;
		uint64_t now = weir_now_ns();
		if (slept)
			lease_stall_check(m, slept_from, now);
		/* a session that does not answer its metadata lease callbacks
		 * holds changes up: evicted as if its lease had ended */
		uint64_t late[16];
		size_t nr_late = mds_mdl_late(m, late, 16);
		for (size_t i = 0; i < nr_late; i++) {
			struct mds_session *se = sess_find_locked(m, late[i]);
			if (se && se->se_expire_ns > now)
				se->se_expire_ns = 1;
		}
		struct mds_session *gone = NULL;
		for (int b = 0; b < MDS_SESSION_BUCKETS; b++) {
			for (struct mds_session **pp = &m->m_sessions[b]; *pp;) {
				struct mds_session *se = *pp;
				if (se->se_expire_ns > now) {
					pp = &se->se_next;
					continue;
				}
				*pp = se->se_next;
				se->se_next = gone;
				gone = se;
			}
		}
		pthread_mutex_unlock(&m->m_sess_lock);
		while (gone) {
			struct mds_session *se = gone;
			gone = se->se_next;
			session_evict(m, lc, se,
				      se->se_expire_ns ? "lease expired: evicted" : "disconnected");
			free(se);
		}
		mds_lock_tick(m->m_locks, weir_now_ns(), lease_ns(m), 3 * lease_ns(m));
		mds_mdl_tick(m); /* lease polls that waited their time: answered empty */
		mds_recovery_tick(m); /* ends the recovery window when due */
		pthread_mutex_lock(&m->m_sess_lock);
	}
	pthread_mutex_unlock(&m->m_sess_lock);
	for (int i = 0; i < lc->lc_nr; i++)
		net_conn_close(lc->lc_conns[i].oc_conn);
	free(lc);
	return NULL;
}

int mds_lease_start(struct mds *m)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = weir_wall_ns() * 0x9e3779b97f4a7c15ULL;
	if (!m->m_conf.mc_lease_ms)
		m->m_conf.mc_lease_ms = 30000;
	/* session ids, and open handle ids, differ from those of an earlier boot */
	m->m_sess_base = r & ~0xffffffffULL;
	m->m_next_handle = (r & 0xffffffffULL) << 20;
	int rc = mds_lockmgr_new(&m->m_locks);
	if (rc)
		return rc;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->m_lease_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->m_sess_lock, NULL);
	rc = -pthread_create(&m->m_lease_thread, NULL, lease_main, m);
	if (rc) {
		pthread_cond_destroy(&m->m_lease_cond);
		pthread_mutex_destroy(&m->m_sess_lock);
		mds_lockmgr_free(m->m_locks);
		m->m_locks = NULL;
		return rc;
	}
	m->m_lease_running = true;
	return 0;
}

/* Wake the lease thread for a pass now. Called with m_sess_lock held. */
static void lease_kick_locked(struct mds *m)
{
	m->m_lease_kick = true;
	pthread_cond_signal(&m->m_lease_cond);
}

void mds_lease_kick(struct mds *m)
{
	if (!m->m_lease_running)
		return;
	pthread_mutex_lock(&m->m_sess_lock);
	lease_kick_locked(m);
	pthread_mutex_unlock(&m->m_sess_lock);
}

void mds_session_expire(struct mds *m, uint64_t id)
{
	pthread_mutex_lock(&m->m_sess_lock);
	struct mds_session *se = id ? sess_find_locked(m, id) : NULL;
	if (se && se->se_expire_ns > 1) {
		se->se_expire_ns = 1; /* evicted as expired at the thread's next pass */
		lease_kick_locked(m);
	}
	pthread_mutex_unlock(&m->m_sess_lock);
}

void mds_lease_stop(struct mds *m)
{
	if (!m->m_lease_running)
		return;
	mds_lease_kick(m); /* it sees m_stop */
	pthread_join(m->m_lease_thread, NULL);
	m->m_lease_running = false;
}

void mds_lease_fini(struct mds *m)
{
	if (!m->m_locks)
		return;
	mds_lockmgr_free(m->m_locks); /* parked requests: -ESHUTDOWN (dropped replies) */
	m->m_locks = NULL;
	for (int b = 0; b < MDS_SESSION_BUCKETS; b++)
		while (m->m_sessions[b]) {
			struct mds_session *se = m->m_sessions[b];
			m->m_sessions[b] = se->se_next;
			free(se);
		}
	pthread_cond_destroy(&m->m_lease_cond);
	pthread_mutex_destroy(&m->m_sess_lock);
}

/* ------------------------------------------------------------ RPC handlers */

/* Unpack a request body; on a malformed one, reply -EPROTO and return NULL. */
static void *unpack_or_reply(struct net_req *rq, const ProtobufCMessageDescriptor *d)
{
	void *req = net_req_unpack(rq, d);
	if (!req)
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
	return req;
}

void mds_lease_handle_renew(struct mds *m, struct net_req *rq)
{
	Weir__LeaseReq *req = unpack_or_reply(rq, &weir__lease_req__descriptor);
	if (!req)
		return;
	Weir__LeaseRep rep = WEIR__LEASE_REP__INIT;
	rep.lease_ms = m->m_conf.mc_lease_ms;
	int rc = mds_session_touch(m, req->session);
	if (rc)
		WEIR_LOG_INFO("peer=%s session=%#llx: renewal of an unknown or evicted session",
			      rq->rq_peer, (unsigned long long)req->session);
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_lease_handle_disconnect(struct mds *m, struct net_req *rq)
{
	Weir__LeaseReq *req = unpack_or_reply(rq, &weir__lease_req__descriptor);
	if (!req)
		return;
	int rc = -ESTALE;
	pthread_mutex_lock(&m->m_sess_lock);
	struct mds_session *se = req->session ? sess_find_locked(m, req->session) : NULL;
	if (se) {
		/* the lease thread evicts it at once ("disconnected") */
		se->se_expire_ns = 0;
		lease_kick_locked(m);
		rc = 0;
	}
	pthread_mutex_unlock(&m->m_sess_lock);
	/* its locks go now, so waiters elsewhere need not wait for the thread */
	if (!rc)
		mds_lock_session_drop(m->m_locks, req->session, -ESTALE);
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_lease_on_close(struct mds *m, const struct weir_fid *fid, uint64_t session, int32_t pid,
			uint64_t handle)
{
	if (!session)
		return;
	size_t n = mds_lock_close(m->m_locks, fid, session, pid, handle);
	if (n)
		WEIR_LOG_DEBUG("fid=" WEIR_FID_F " session=%#llx pid=%d handle=%llu: close dropped"
			       " %zu locks",
			       WEIR_FID_P(fid), (unsigned long long)session, pid,
			       (unsigned long long)handle, n);
}

/* A parked MDS_LOCK, answered by lock_parked_done(). */
struct lock_park {
	struct mds *pk_m;
	struct net_req *pk_rq;
	struct weir_fid pk_fid;
	uint8_t pk_class;
};

static void lock_reply(struct mds *m, struct net_req *rq, int rc, uint8_t cls,
		       const struct weir_fid *fid)
{
	Weir__LockRep rep = WEIR__LOCK_REP__INIT;
	if (!rc && cls == MDS_LC_APPEND) {
		/* the glimpse base for the appender: saves it an MDS_GETATTR */
		struct mds_inode in;
		if (!mds_ns_getattr(m->m_ns, fid, &in))
			rep.size = in.in_size;
	}
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
}

static void lock_parked_done(void *arg, int rc)
{
	struct lock_park *pk = arg;
	lock_reply(pk->pk_m, pk->pk_rq, rc, pk->pk_class, &pk->pk_fid);
	free(pk);
}

/* Check and convert a LockReq; renews the session. \return 0 or -errno to reply. */
static int lock_req_decode(struct mds *m, const Weir__LockReq *req, struct mds_lock_req *q)
{
	memset(q, 0, sizeof(*q));
	if (!req->fid || req->lock_class >= MDS_LC_NR || req->type > MDS_LT_WRLCK)
		return -EINVAL;
	q->lq_fid.fid_seq = req->fid->seq;
	q->lq_fid.fid_oid = req->fid->oid;
	q->lq_session = req->session;
	q->lq_class = (uint8_t)req->lock_class;
	q->lq_type = (uint8_t)req->type;
	q->lq_pid = req->pid;
	q->lq_owner = mds_lock_owner_of(req->lock_class, req->pid, req->owner, req->handle);
	q->lq_start = req->start;
	if (req->len == 0)
		q->lq_end = MDS_LOCK_EOF;
	else if (__builtin_add_overflow(req->start, req->len - 1, &q->lq_end))
		return -EINVAL;
	q->lq_wait = req->wait;
	q->lq_token = req->token;
	int rc = mds_session_touch(m, req->session);
	if (rc)
		return rc;
	if (!mds_svc_handle_usable(m, req->handle, req->session, &q->lq_fid))
		return -EBADF;
	return 0;
}

void mds_lock_handle_set(struct mds *m, struct net_req *rq)
{
	Weir__LockReq *req = unpack_or_reply(rq, &weir__lock_req__descriptor);
	if (!req)
		return;
	struct mds_lock_req q;
	struct lock_park *pk = NULL;
	int rc = lock_req_decode(m, req, &q);
	if (!rc && q.lq_wait) {
		pk = calloc(1, sizeof(*pk));
		if (!pk)
			rc = -ENOLCK;
	}
	if (rc)
		goto out_reply;
	if (pk) {
		pk->pk_m = m;
		pk->pk_rq = rq;
		pk->pk_fid = q.lq_fid;
		pk->pk_class = q.lq_class;
	}
	rc = mds_lock_set(m->m_locks, &q, pk ? lock_parked_done : NULL, pk);
	if (rc == -EINPROGRESS && !pk) {
		/* never leave a request unanswered: nothing was parked for it */
		WEIR_LOG_ERROR("fid=" WEIR_FID_F " token=%llu: lock queued without a waiter;"
			       " answering EAGAIN", WEIR_FID_P(&q.lq_fid),
			       (unsigned long long)q.lq_token);
		rc = -EAGAIN;
	}
	if (rc == -EINPROGRESS) {
		/* parked: lock_parked_done() answers it and frees pk; rq may be gone already */
		WEIR_LOG_DEBUG("fid=" WEIR_FID_F " class=%u token=%llu: lock request queued",
			       WEIR_FID_P(&q.lq_fid), q.lq_class, (unsigned long long)q.lq_token);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	free(pk);
out_reply:
	lock_reply(m, rq, rc, q.lq_class, &q.lq_fid);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_lock_handle_cancel(struct mds *m, struct net_req *rq)
{
	Weir__LockReq *req = unpack_or_reply(rq, &weir__lock_req__descriptor);
	if (!req)
		return;
	int rc = mds_session_touch(m, req->session);
	if (!rc)
		rc = mds_lock_cancel(m->m_locks, req->session, req->token);
	WEIR_LOG_DEBUG("session=%#llx token=%llu rc=%d: lock request cancelled",
		       (unsigned long long)req->session, (unsigned long long)req->token, rc);
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_lock_handle_test(struct mds *m, struct net_req *rq)
{
	Weir__LockReq *req = unpack_or_reply(rq, &weir__lock_req__descriptor);
	if (!req)
		return;
	struct mds_lock_req q;
	struct mds_lock_desc d;
	bool found = false;
	Weir__LockRep rep = WEIR__LOCK_REP__INIT;
	int rc = lock_req_decode(m, req, &q);
	if (!rc)
		rc = mds_lock_test(m->m_locks, &q, &found, &d);
	if (!rc && found) {
		rep.conflict = true;
		rep.type = d.ld_type;
		rep.start = d.ld_start;
		rep.len = d.ld_end == MDS_LOCK_EOF ? 0 : d.ld_end - d.ld_start + 1;
		rep.pid = d.ld_pid;
	}
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}
