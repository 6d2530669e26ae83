/*
 * mds/recovery.c - the clients the MDT knows, and the recovery window after
 * a restart in which they replay their open handles and locks (MDS_REPLAY).
 *
 * DESIGN. Every MDS_CONNECT names its mount by client_uuid (16 random bytes
 * libweir makes at mount). The MDS keeps each client with a session in a
 * table here and in the MDT (ns_store.c: a record per client, written at
 * its first connect, removed when its session ends by disconnect or
 * eviction), so a kill -9 leaves the list of clients that held state.
 *
 * At start, with any client on that list, the window opens (one NOTICE
 * line: how many are expected, how long at most): requests other than
 * connects, lease renewals, disconnects, replays, statfs, ping, the cluster
 * map, OSS registrations, capability renewals and the HSM agents' calls
 * are answered -EINPROGRESS (libweir waits and sends them again: client/
 * mount.c) or, one-way requests (a posted close), parked and handled at
 * the end. A known client that connects again is told `recovering`; it
 * sends MDS_REPLAY with its open handles (re-created with the same ids,
 * counted as opens again: an orphan stays) and its granted locks
 * (re-granted as they were: nobody else can have taken them), the last
 * request with `done`. The window ends when every expected client is done,
 * or after mc_recovery_window_ms (default 2 x the lease time): the clients
 * still missing are evicted (a session they made is evicted at the lease
 * thread's next pass, their records go, and a later connect of theirs is
 * told `recovery_evicted`: their handles then fail -EIO, as after a lease
 * eviction), orphans no replayed open holds are destroyed, parked requests
 * are handled, and one NOTICE line says how many recovered, how many were
 * evicted and how long it took. weir df shows the window (TargetStat).
 * A replaying client names its session of the last run: a close it built
 * before the restart and sends again after carries that one, and is taken
 * as the new session's (mds_recovery_session_map()).
 *
 * Requests lost with the log (a crash of the MDS's host loses what was
 * acknowledged and not yet synced): every batch carries its transno, so the
 * MDT restarts at the transno of the last one that survived (ns_boot_transno,
 * mds/ns.c), and while the window is open every reply's last_committed stays
 * at it (mds_commit_synced_seq), so no client frees a request the crash may
 * have lost. Each client first sends the requests it kept (client/replay.c:
 * answered with a transno above the last_committed it was told), in
 * MDS_REPLAY's txns, the last with txns_last (also alone, when it has none).
 * Those are collected, and their senders wait, until every expected client
 * has sent its txns_last or half the window has passed; then a thread,
 * "mds-replay", re-runs them all in transno order, across clients, so a
 * create in a directory another client made comes after the mkdir: one at a
 * time through the usual handler (a request made in the server,
 * net_req.rq_local_done), with its replay prefix, so its reply-cache record
 * is written again. A request with transno <= the boot transno survived and
 * is skipped. A lost create is made again with the FID and the layout its
 * reply gave (mds_ns_replay_set), so the client's handles and the data on the
 * OSTs still match it; the handle a re-run open makes is kept until the
 * window ends (the client's own comes back through its replayed opens), so an
 * unlink replayed after it does not destroy the file. Then the log is synced
 * and the waiting clients are answered: they free what they kept, and replay
 * their opens and locks. A client that sends its txns_last later has its
 * requests run the same way, as soon as it does.
 *
 * Threads and locks: rv_lock guards everything here; it is a leaf (taken
 * alone: RocksDB writes, the lock manager, the namespace and the session
 * table are called without it). The window is ended by the lease thread
 * (mds_recovery_tick()); replays run on the loop threads. A replay and the
 * window's end exclude each other through rv_replay_lock: a replay holds it
 * shared from its check that the window is open until it has re-created
 * everything (replays of different clients run side by side), the end
 * holds it exclusive while it closes the window. So no lock is re-granted,
 * without a conflict check, after the window closed and other clients may
 * have taken a conflicting one, and no orphan is destroyed at the end while
 * a replay is about to open it again. It is taken before any other lock.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

struct rv_client {
	uint8_t c_uuid[MDS_CLIENT_UUID_LEN];
	char c_name[MDS_CLIENT_NAME_MAX + 1];
	uint64_t c_session; /* of its latest connect; 0: none in this run */
	uint64_t c_old_session; /* its session in the last run (ReplayReq.old_session) */
	bool c_expected;    /* known at start: the window waits for it */
	bool c_done;        /* replayed (or gone by disconnect) */
	bool c_txn_sent;    /* sent its kept requests (txns_last) */
	struct rv_client *c_next;
};

struct rv_parked {
	struct net_req *p_rq;
	struct mds_xid p_xid; /* its replay prefix */
	struct rv_parked *p_next;
};

/* A client's kept request, to re-run (MDS_REPLAY txns). */
struct rv_txn {
	uint64_t t_transno;
	uint16_t t_op;
	bool t_has_fid, t_has_lo;
	struct weir_xid_hdr t_xid;
	struct weir_fid t_fid;
	struct weir_layout t_lo;
	char t_client[MDS_CLIENT_NAME_MAX + 1];
	/* its sender's connection, for the node map and the logs */
	char t_peer[64];
	char t_key_name[32];
	struct sockaddr_storage t_peer_sa;
	uint32_t t_len;
	uint8_t *t_body; /* malloc'd */
};

/* A client waiting for the re-run (its txns_last request), or a handle it made. */
struct rv_wait {
	struct net_req *w_rq;
	struct rv_wait *w_next;
};
struct rv_handle {
	uint64_t hd_id;
	uint64_t hd_session;
	struct weir_fid hd_fid;
	struct rv_handle *hd_next;
};

struct mds_recovery {
	pthread_rwlock_t rv_replay_lock; /* replays shared, the window's end exclusive */
	pthread_mutex_t rv_lock;
	struct rv_client *rv_clients;  /* known: on the MDT too */
	struct rv_client *rv_evicted;  /* evicted at the end of the window (memory only) */
	atomic_bool rv_active;
	uint32_t rv_expected;
	uint32_t rv_done;
	uint64_t rv_start_ns;          /* monotonic */
	uint64_t rv_end_ns;            /* the window ends then at the latest */
	uint64_t rv_opens, rv_locks;   /* replayed */
	atomic_uint rv_nr_old;         /* clients with a c_old_session */
	struct rv_parked *rv_parked, **rv_parked_tail;
	/* kept requests (MDS_REPLAY txns), collected then re-run in transno order */
	struct rv_txn **rv_txns;
	size_t rv_nr_txns, rv_cap_txns;
	uint64_t rv_txn_bytes;
	struct rv_wait *rv_txn_waiters;  /* their txns_last requests, answered after the run */
	bool rv_txn_go;                  /* every expected client sent, or half the window */
	bool rv_txn_running;             /* an "mds-replay" thread is at work */
	uint64_t rv_txn_rerun, rv_txn_survived, rv_txn_failed;
	struct rv_handle *rv_txn_handles; /* made by re-run opens; closed at the end */
	pthread_mutex_t rv_txn_spawn_lock; /* the two below; taken alone */
	pthread_t rv_txn_thread;         /* the last "mds-replay" thread, joined by the next */
	bool rv_txn_thread_set;
};

static bool txn_due_locked(struct mds *m, struct mds_recovery *rv, uint64_t now);
static void txn_spawn(struct mds *m, struct mds_recovery *rv);
static int txn_collect(struct mds *m, struct mds_recovery *rv, struct net_req *rq,
		       const Weir__ReplayReq *req, uint64_t session, bool *start);
static void txn_free(struct rv_txn *t);

/* Most bytes of kept requests collected at once: a client's 64 MiB cap, times a few */
#define RV_TXN_MAX_BYTES (1ULL << 30)

void (*mds_recovery_replay_hook)(struct mds *m);

static struct rv_client *client_find(struct rv_client *l, const uint8_t *uuid)
{
	for (; l; l = l->c_next)
		if (!memcmp(l->c_uuid, uuid, MDS_CLIENT_UUID_LEN))
			return l;
	return NULL;
}

static void uuid_str(const uint8_t *u, char *buf)
{
	for (int i = 0; i < 8; i++)
		snprintf(buf + 2 * i, 3, "%02x", u[i]);
}

static void load_one(void *arg, const uint8_t *uuid, const char *name)
{
	struct mds_recovery *rv = arg;
	if (client_find(rv->rv_clients, uuid))
		return;
	struct rv_client *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	memcpy(c->c_uuid, uuid, MDS_CLIENT_UUID_LEN);
	snprintf(c->c_name, sizeof(c->c_name), "%s", name);
	c->c_expected = true;
	c->c_next = rv->rv_clients;
	rv->rv_clients = c;
	rv->rv_expected++;
}

int mds_recovery_start(struct mds *m)
{
	struct mds_recovery *rv = calloc(1, sizeof(*rv));
	if (!rv)
		return -ENOMEM;
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	/* a stream of replays must not hold off the window's end for ever */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rv->rv_replay_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&rv->rv_lock, NULL);
	pthread_mutex_init(&rv->rv_txn_spawn_lock, NULL);
	rv->rv_parked_tail = &rv->rv_parked;
	int n = mds_ns_client_list(m->m_ns, load_one, rv);
	if (n < 0) {
		pthread_mutex_destroy(&rv->rv_lock);
		pthread_rwlock_destroy(&rv->rv_replay_lock);
		pthread_mutex_destroy(&rv->rv_txn_spawn_lock);
		free(rv);
		return n;
	}
	if (!m->m_conf.mc_recovery_window_ms)
		m->m_conf.mc_recovery_window_ms = 2 * m->m_conf.mc_lease_ms;
	m->m_recov = rv;
	if (rv->rv_expected) {
		rv->rv_start_ns = weir_now_ns();
		rv->rv_end_ns = rv->rv_start_ns + m->m_conf.mc_recovery_window_ms * 1000000ULL;
		atomic_store(&rv->rv_active, true);
		int frc = mds_ns_recovery_floor(m->m_ns, true);
		if (frc)
			WEIR_LOG_WARN("recovery: rc=%d: cannot record the boot transno; a restart"
				      " within the window may skip requests it must re-run", frc);
		WEIR_LOG_NOTICE("recovery: window open for %u clients of the last run, at most"
				" %u ms; other requests wait until they have replayed",
				rv->rv_expected, m->m_conf.mc_recovery_window_ms);
	}
	return 0;
}

void mds_recovery_fini(struct mds *m)
{
	struct mds_recovery *rv = m->m_recov;
	if (!rv)
		return;
	if (rv->rv_txn_thread_set)
		pthread_join(rv->rv_txn_thread, NULL);
	pthread_mutex_destroy(&rv->rv_txn_spawn_lock);
	m->m_recov = NULL;
	for (size_t i = 0; i < rv->rv_nr_txns; i++)
		txn_free(rv->rv_txns[i]);
	free(rv->rv_txns);
	while (rv->rv_txn_waiters) {
		struct rv_wait *w = rv->rv_txn_waiters;
		rv->rv_txn_waiters = w->w_next;
		net_req_reply(w->w_rq, -ESHUTDOWN, NULL, NULL, 0);
		free(w);
	}
	while (rv->rv_txn_handles) {
		struct rv_handle *hd = rv->rv_txn_handles;
		rv->rv_txn_handles = hd->hd_next;
		free(hd);
	}
	while (rv->rv_parked) {
		struct rv_parked *p = rv->rv_parked;
		rv->rv_parked = p->p_next;
		net_req_reply(p->p_rq, -ESHUTDOWN, NULL, NULL, 0);
		free(p);
	}
	struct rv_client *lists[2] = { rv->rv_clients, rv->rv_evicted };
	for (int i = 0; i < 2; i++)
		while (lists[i]) {
			struct rv_client *c = lists[i];
			lists[i] = c->c_next;
			free(c);
		}
	pthread_mutex_destroy(&rv->rv_lock);
	pthread_rwlock_destroy(&rv->rv_replay_lock);
	free(rv);
}

/* Requests served during the window: they do not depend on what is being replayed. */
static bool op_allowed(uint16_t op)
{
	switch (op) {
	case WEIR__WIRE_OP__MDS_CONNECT:
	case WEIR__WIRE_OP__MDS_LEASE_RENEW:
	case WEIR__WIRE_OP__MDS_LEASE_POLL:
	case WEIR__WIRE_OP__MDS_DISCONNECT:
	case WEIR__WIRE_OP__MDS_REPLAY:
	case WEIR__WIRE_OP__MDS_STATFS:
	case WEIR__WIRE_OP__MDS_GET_CLUSTERMAP:
	case WEIR__WIRE_OP__MDS_OSS_REGISTER:
	case WEIR__WIRE_OP__MDS_MDT_REGISTER:
	case WEIR__WIRE_OP__MDS_DTX_PREPARE:
	case WEIR__WIRE_OP__MDS_DTX_RESOLVE:
	case WEIR__WIRE_OP__MDS_CAPA_RENEW:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_DONE:
	case WEIR__WIRE_OP__PING:
		return true;
	default:
		return false;
	}
}

bool mds_recovery_gate(struct mds *m, struct net_req *rq)
{
	struct mds_recovery *rv = m->m_recov;
	/* a kept request re-run by the window itself (rq_local_done) goes through */
	if (!rv || !atomic_load(&rv->rv_active) || op_allowed(rq->rq_hdr.fh_opcode) ||
	    rq->rq_local_done)
		return false;
	if (rq->rq_hdr.fh_flags & WEIR_FRAME_F_NOREPLY) {
		/* nobody waits for an answer: handle it once the window ends */
		struct rv_parked *p = malloc(sizeof(*p));
		pthread_mutex_lock(&rv->rv_lock);
		bool active = atomic_load(&rv->rv_active);
		if (p && active) {
			const struct mds_xid *x = mds_svc_cur_xid();
			p->p_rq = rq;
			p->p_xid = x ? *x : (struct mds_xid){ 0 };
			p->p_next = NULL;
			*rv->rv_parked_tail = p;
			rv->rv_parked_tail = &p->p_next;
		}
		pthread_mutex_unlock(&rv->rv_lock);
		if (p && active)
			return true;
		free(p);
		if (!active)
			return false; /* ended meanwhile: handle it now */
		net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		return true;
	}
	WEIR_LOG_DEBUG("peer=%s op=%u: in the recovery window; asked to wait (-EINPROGRESS)",
		       rq->rq_peer, rq->rq_hdr.fh_opcode);
	net_req_reply(rq, -EINPROGRESS, NULL, NULL, 0);
	return true;
}

void mds_recovery_connect(struct mds *m, const uint8_t *uuid, size_t uuid_len, const char *name,
			  uint64_t session, bool *recovering, bool *evicted)
{
	struct mds_recovery *rv = m->m_recov;
	bool put = false;
	*recovering = *evicted = false;
	if (!rv || uuid_len != MDS_CLIENT_UUID_LEN)
		return; /* a client without a uuid takes no part in recovery */
	pthread_mutex_lock(&rv->rv_lock);
	struct rv_client *c = client_find(rv->rv_clients, uuid);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (c) {
			memcpy(c->c_uuid, uuid, MDS_CLIENT_UUID_LEN);
			c->c_next = rv->rv_clients;
			rv->rv_clients = c;
			put = true;
		}
		/* a client evicted at the end of the window: it is told, once */
		for (struct rv_client **pp = &rv->rv_evicted; *pp; pp = &(*pp)->c_next) {
			if (!memcmp((*pp)->c_uuid, uuid, MDS_CLIENT_UUID_LEN)) {
				struct rv_client *e = *pp;
				*pp = e->c_next;
				free(e);
				*evicted = true;
				break;
			}
		}
	}
	if (c) {
		snprintf(c->c_name, sizeof(c->c_name), "%s", name ? name : "?");
		c->c_session = session;
		*recovering = atomic_load(&rv->rv_active) && c->c_expected && !c->c_done;
	}
	pthread_mutex_unlock(&rv->rv_lock);
	if (put) {
		int rc = mds_ns_client_put(m->m_ns, uuid, name);
		if (rc)
			WEIR_LOG_WARN("client=%s rc=%d: cannot record the client on the MDT; it will"
				      " not be waited for after a restart", name, rc);
	}
	if (*recovering)
		WEIR_LOG_INFO("client=%s session=%#llx: reconnected in the recovery window",
			      name, (unsigned long long)session);
}

uint64_t mds_recovery_session_map(struct mds *m, uint64_t session)
{
	struct mds_recovery *rv = m->m_recov;
	uint64_t out = session;
	if (!rv || !session || !atomic_load(&rv->rv_nr_old))
		return session;
	pthread_mutex_lock(&rv->rv_lock);
	for (struct rv_client *c = rv->rv_clients; c; c = c->c_next)
		if (c->c_old_session == session && c->c_session) {
			out = c->c_session;
			break;
		}
	pthread_mutex_unlock(&rv->rv_lock);
	return out;
}

void mds_recovery_session_end(struct mds *m, uint64_t session)
{
	struct mds_recovery *rv = m->m_recov;
	uint8_t uuid[MDS_CLIENT_UUID_LEN];
	bool del = false, all = false;
	if (!rv || !session)
		return;
	pthread_mutex_lock(&rv->rv_lock);
	for (struct rv_client **pp = &rv->rv_clients; *pp; pp = &(*pp)->c_next) {
		struct rv_client *c = *pp;
		if (c->c_session != session)
			continue;
		if (c->c_expected && !c->c_done && atomic_load(&rv->rv_active)) {
			/* it left in the middle of its replay: nothing to wait for */
			c->c_done = true;
			all = ++rv->rv_done == rv->rv_expected;
		}
		memcpy(uuid, c->c_uuid, sizeof(uuid));
		*pp = c->c_next;
		if (c->c_old_session)
			atomic_fetch_sub(&rv->rv_nr_old, 1);
		free(c);
		del = true;
		break;
	}
	pthread_mutex_unlock(&rv->rv_lock);
	if (del)
		mds_ns_client_del(m->m_ns, uuid);
	if (all)
		mds_lease_kick(m);
}

static void window_end(struct mds *m, struct mds_recovery *rv, uint64_t now)
{
	uint32_t evicted = 0;
	uint8_t (*gone)[MDS_CLIENT_UUID_LEN] = NULL;
	uint64_t *sess = NULL;

	/* waits for the replays under way; later ones find the window closed */
	pthread_rwlock_wrlock(&rv->rv_replay_lock);
	pthread_mutex_lock(&rv->rv_lock);
	now = WEIR_MAX(now, weir_now_ns());
	/* a re-run of kept requests (held off till now) may have moved the end */
	if (!atomic_load(&rv->rv_active) ||
	    (rv->rv_done < rv->rv_expected && now < rv->rv_end_ns)) {
		pthread_mutex_unlock(&rv->rv_lock);
		pthread_rwlock_unlock(&rv->rv_replay_lock);
		return;
	}
	atomic_store(&rv->rv_active, false);
	uint32_t missing = rv->rv_expected - rv->rv_done;
	if (missing) {
		gone = calloc(missing, sizeof(*gone));
		sess = calloc(missing, sizeof(*sess));
	}
	for (struct rv_client **pp = &rv->rv_clients; *pp;) {
		struct rv_client *c = *pp;
		if (!c->c_expected || c->c_done) {
			c->c_expected = false;
			pp = &c->c_next;
			continue;
		}
		char u[17];
		uuid_str(c->c_uuid, u);
		WEIR_LOG_NOTICE("recovery: client=%s uuid=%s did not %s in the window; evicted",
				c->c_name, u, c->c_session ? "finish its replay" : "come back");
		if (gone && evicted < missing) {
			memcpy(gone[evicted], c->c_uuid, MDS_CLIENT_UUID_LEN);
			sess[evicted] = c->c_session;
		}
		evicted++;
		*pp = c->c_next;
		c->c_next = rv->rv_evicted;
		c->c_session = 0;
		if (c->c_old_session)
			atomic_fetch_sub(&rv->rv_nr_old, 1);
		c->c_old_session = 0;
		rv->rv_evicted = c;
	}
	struct rv_parked *parked = rv->rv_parked;
	rv->rv_parked = NULL;
	rv->rv_parked_tail = &rv->rv_parked;
	/* kept requests never re-run (their clients are evicted now) */
	struct rv_wait *txn_waiters = rv->rv_txn_waiters;
	rv->rv_txn_waiters = NULL;
	for (size_t i = 0; i < rv->rv_nr_txns; i++)
		txn_free(rv->rv_txns[i]);
	size_t txn_dropped = rv->rv_nr_txns;
	rv->rv_nr_txns = 0;
	struct rv_handle *handles = rv->rv_txn_handles;
	rv->rv_txn_handles = NULL;
	uint64_t rerun = rv->rv_txn_rerun, txn_failed = rv->rv_txn_failed;
	uint32_t done = rv->rv_done, expected = rv->rv_expected;
	uint64_t opens = rv->rv_opens, locks = rv->rv_locks;
	pthread_mutex_unlock(&rv->rv_lock);
	pthread_rwlock_unlock(&rv->rv_replay_lock); /* no replay can start any more */

	for (uint32_t i = 0; gone && i < evicted && i < missing; i++) {
		mds_ns_client_del(m->m_ns, gone[i]);
		if (sess[i])
			mds_session_expire(m, sess[i]);
	}
	free(gone);
	free(sess);
	int frc = mds_ns_recovery_floor(m->m_ns, false);
	if (frc)
		WEIR_LOG_WARN("recovery: rc=%d: cannot remove the recovery floor", frc);
	if (txn_dropped)
		WEIR_LOG_WARN("recovery: %zu requests lost with the MDT's log were not re-run: the"
			      " window ended first", txn_dropped);
	while (txn_waiters) {
		struct rv_wait *w = txn_waiters;
		txn_waiters = w->w_next;
		net_req_reply(w->w_rq, -ESTALE, NULL, NULL, 0);
		free(w);
	}
	while (handles) { /* the re-run opens' handles (the clients replayed their own) */
		struct rv_handle *hd = handles;
		handles = hd->hd_next;
		mds_svc_handle_drop(m, hd->hd_id, &hd->hd_fid, hd->hd_session);
		free(hd);
	}
	int rc = mds_ns_orphans_release(m->m_ns);
	if (rc)
		WEIR_LOG_WARN("rc=%d: cannot release the orphans no replayed open holds", rc);
	mds_destroy_kick(m);
	uint64_t ms = (now - rv->rv_start_ns) / 1000000ULL;
	WEIR_LOG_NOTICE("recovery: window closed after %llu.%03llu s: %u of %u clients recovered"
			" (%llu opens, %llu locks replayed; %llu lost requests re-run, %llu"
			" failed), %u evicted",
			(unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000), done,
			expected, (unsigned long long)opens, (unsigned long long)locks,
			(unsigned long long)rerun, (unsigned long long)txn_failed, evicted);
	while (parked) {
		struct rv_parked *p = parked;
		parked = p->p_next;
		mds_svc_rerun(p->p_rq, &p->p_xid);
		free(p);
	}
}

void mds_recovery_tick(struct mds *m)
{
	struct mds_recovery *rv = m->m_recov;
	if (!rv || !atomic_load(&rv->rv_active))
		return;
	uint64_t now = weir_now_ns();
	pthread_mutex_lock(&rv->rv_lock);
	bool end = rv->rv_done >= rv->rv_expected || now >= rv->rv_end_ns;
	bool start = txn_due_locked(m, rv, now);
	pthread_mutex_unlock(&rv->rv_lock);
	if (start)
		txn_spawn(m, rv);
	if (end)
		window_end(m, rv, now);
}

bool mds_recovery_active(struct mds *m)
{
	return m->m_recov && atomic_load(&m->m_recov->rv_active);
}

void mds_recovery_statfs(struct mds *m, void *tsv)
{
	Weir__TargetStat *ts = tsv;
	struct mds_recovery *rv = m->m_recov;
	if (!rv || !atomic_load(&rv->rv_active))
		return;
	uint64_t now = weir_now_ns();
	pthread_mutex_lock(&rv->rv_lock);
	ts->recovering = atomic_load(&rv->rv_active);
	ts->recovery_clients = rv->rv_expected;
	ts->recovery_done = rv->rv_done;
	ts->recovery_left_s =
	    rv->rv_end_ns > now ? (uint32_t)((rv->rv_end_ns - now + 999999999ULL) / 1000000000ULL)
				: 0;
	pthread_mutex_unlock(&rv->rv_lock);
}

/* Replay one open handle. \return 0 or -errno (logged by the caller). */
static int replay_open(struct mds *m, uint64_t session, const Weir__ReplayOpen *o)
{
	if (!o->fid)
		return -EINVAL;
	struct weir_fid fid = { .fid_seq = o->fid->seq, .fid_oid = o->fid->oid };
	bool writer = (o->flags & MDS_OF_WRITE) && !(o->flags & MDS_OF_HSM);
	int rc = mds_ns_reopen(m->m_ns, &fid, writer);
	if (rc)
		return rc;
	rc = mds_svc_handle_restore(m, o->handle, &fid, writer, session,
				    mds_capa_rights_of_open(o->flags));
	if (rc)
		mds_ns_close_file(m->m_ns, &fid, writer, NULL);
	return rc;
}

static int replay_lock(struct mds *m, uint64_t session, const Weir__ReplayLock *l)
{
	struct mds_lock_req q;
	memset(&q, 0, sizeof(q));
	if (!l->fid || l->lock_class >= MDS_LC_NR || l->type == MDS_LT_UNLCK ||
	    l->type > MDS_LT_WRLCK)
		return -EINVAL;
	q.lq_fid.fid_seq = l->fid->seq;
	q.lq_fid.fid_oid = l->fid->oid;
	q.lq_session = session;
	q.lq_class = (uint8_t)l->lock_class;
	q.lq_type = (uint8_t)l->type;
	q.lq_pid = l->pid;
	q.lq_owner = mds_lock_owner_of(l->lock_class, l->pid, l->owner, l->handle);
	q.lq_start = l->start;
	if (l->len == 0)
		q.lq_end = MDS_LOCK_EOF;
	else if (__builtin_add_overflow(l->start, l->len - 1, &q.lq_end))
		return -EINVAL;
	return mds_lock_replay(m->m_locks, &q);
}

void mds_recovery_handle_replay(struct mds *m, struct net_req *rq)
{
	struct mds_recovery *rv = m->m_recov;
	Weir__ReplayReq *req = net_req_unpack(rq, &weir__replay_req__descriptor);
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	/* only a known client, reconnected in this window, with a live session */
	int rc = mds_session_touch(m, req->session);
	struct rv_client *c = NULL;
	char name[MDS_CLIENT_NAME_MAX + 1] = "?";
	bool held = !rc && rv, all = false;
	if (held)
		pthread_rwlock_rdlock(&rv->rv_replay_lock); /* the window stays as it is */
	if (held && atomic_load(&rv->rv_active)) {
		pthread_mutex_lock(&rv->rv_lock);
		for (c = rv->rv_clients; c; c = c->c_next)
			if (c->c_session == req->session)
				break;
		if (c && (!c->c_expected || c->c_done))
			c = NULL;
		if (c)
			snprintf(name, sizeof(name), "%s", c->c_name);
		pthread_mutex_unlock(&rv->rv_lock);
	}
	if (!rc && !c)
		rc = -ESTALE; /* not in the window (any more), or not expected */
	if (rc) {
		WEIR_LOG_INFO("peer=%s session=%#llx rc=%d: replay refused (no recovery window for"
			      " it)", rq->rq_peer, (unsigned long long)req->session, rc);
		goto out_unlock;
	}
	if (req->n_txns || req->txns_last) { /* kept requests: collected, re-run in order */
		bool start = false;
		if (req->n_opens || req->n_locks || req->done)
			rc = -EINVAL; /* they come first, alone */
		else
			rc = txn_collect(m, rv, rq, req, req->session, &start);
		if (rc < 0)
			WEIR_LOG_WARN("client=%s session=%#llx rc=%d: kept requests refused", name,
				      (unsigned long long)req->session, rc);
		pthread_rwlock_unlock(&rv->rv_replay_lock);
		if (start)
			txn_spawn(m, rv);
		if (rc != 1)
			net_req_reply(rq, rc, NULL, NULL, 0);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	if (mds_recovery_replay_hook)
		mds_recovery_replay_hook(m);
	size_t opens = 0, locks = 0;
	for (size_t i = 0; i < req->n_opens; i++) {
		int e = replay_open(m, req->session, req->opens[i]);
		if (e)
			WEIR_LOG_WARN("client=%s handle=%llu rc=%d: open not replayed; the handle"
				      " is lost", name, (unsigned long long)req->opens[i]->handle,
				      e);
		else
			opens++;
	}
	for (size_t i = 0; i < req->n_locks; i++) {
		int e = replay_lock(m, req->session, req->locks[i]);
		if (e)
			WEIR_LOG_WARN("client=%s rc=%d: lock not replayed; it is lost", name, e);
		else
			locks++;
	}
	pthread_mutex_lock(&rv->rv_lock);
	rv->rv_opens += opens;
	rv->rv_locks += locks;
	for (c = rv->rv_clients; c; c = c->c_next)
		if (c->c_session == req->session)
			break;
	if (c && req->old_session && !c->c_old_session) {
		c->c_old_session = req->old_session;
		atomic_fetch_add(&rv->rv_nr_old, 1);
	}
	if (req->done && c && c->c_expected && !c->c_done && atomic_load(&rv->rv_active)) {
		c->c_done = true;
		all = ++rv->rv_done == rv->rv_expected;
	}
	uint32_t done = rv->rv_done, expected = rv->rv_expected;
	pthread_mutex_unlock(&rv->rv_lock);
	WEIR_LOG_INFO("client=%s session=%#llx: replayed %zu opens, %zu locks%s (%u of %u"
		      " clients recovered)", name, (unsigned long long)req->session, opens, locks,
		      req->done ? "; done" : "", done, expected);
out_unlock:
	if (held)
		pthread_rwlock_unlock(&rv->rv_replay_lock);
	if (all)
		mds_lease_kick(m); /* everyone is back: the lease thread ends the window */
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------------ kept requests */

struct txn_done {
	pthread_mutex_t d_lock;
	pthread_cond_t d_cond;
	bool d_done;
	int d_rc;
	struct mds_recovery *d_rv;
	uint64_t d_session; /* of the open re-run (its handle is kept) */
};

/* net_req.rq_local_done of a re-run request: note its result, free it. */
static void txn_local_done(struct net_req *rq, int rc, const ProtobufCMessage *body)
{
	struct txn_done *d = rq->rq_local_arg;
	if (!rc && body && rq->rq_hdr.fh_opcode == WEIR__WIRE_OP__MDS_OPEN) {
		const Weir__OpenRep *o = (const Weir__OpenRep *)body;
		struct rv_handle *hd = o->handle && o->attr && o->attr->fid ?
					       calloc(1, sizeof(*hd)) : NULL;
		if (hd) { /* kept until the window ends (see DESIGN) */
			hd->hd_id = o->handle;
			hd->hd_fid.fid_seq = o->attr->fid->seq;
			hd->hd_fid.fid_oid = o->attr->fid->oid;
			Weir__OpenReq *req = (Weir__OpenReq *)protobuf_c_message_unpack(
				&weir__open_req__descriptor, NULL, rq->rq_hdr.fh_body_len, rq->rq_body);
			if (req) {
				/* op_open took it as the new session's */
				hd->hd_session = mds_recovery_session_map(rq->rq_srv_arg,
									  req->session);
				protobuf_c_message_free_unpacked(&req->base, NULL);
			}
			pthread_mutex_lock(&d->d_rv->rv_lock);
			hd->hd_next = d->d_rv->rv_txn_handles;
			d->d_rv->rv_txn_handles = hd;
			pthread_mutex_unlock(&d->d_rv->rv_lock);
		}
	}
	free((void *)rq->rq_body);
	free(rq);
	pthread_mutex_lock(&d->d_lock);
	d->d_rc = rc;
	d->d_done = true;
	pthread_cond_signal(&d->d_cond);
	pthread_mutex_unlock(&d->d_lock);
}

/* The requests a client keeps for replay: those that change the namespace. */
static bool txn_op_ok(uint32_t op)
{
	switch (op) {
	case WEIR__WIRE_OP__MDS_SETATTR:
	case WEIR__WIRE_OP__MDS_OPEN:
	case WEIR__WIRE_OP__MDS_CLOSE:
	case WEIR__WIRE_OP__MDS_MKDIR:
	case WEIR__WIRE_OP__MDS_UNLINK:
	case WEIR__WIRE_OP__MDS_RENAME:
	case WEIR__WIRE_OP__MDS_SET_LAYOUT:
	case WEIR__WIRE_OP__MDS_LINK:
	case WEIR__WIRE_OP__MDS_SYMLINK:
	case WEIR__WIRE_OP__MDS_MKNOD:
	case WEIR__WIRE_OP__MDS_SETXATTR:
	case WEIR__WIRE_OP__MDS_REMOVEXATTR:
		return true;
	default:
		return false;
	}
}

static int txn_cmp(const void *a, const void *b)
{
	const struct rv_txn *x = *(struct rv_txn *const *)a, *y = *(struct rv_txn *const *)b;
	return x->t_transno < y->t_transno ? -1 : x->t_transno > y->t_transno;
}

static void txn_free(struct rv_txn *t)
{
	if (t)
		free(t->t_body);
	free(t);
}

/*
 * Re-run one kept request through the usual handler and wait for its
 * answer. 
eturn what the handler answered (0 or -errno); 1: it survived
 * the crash (not run).
 */
static int txn_run_one(struct mds *m, struct mds_recovery *rv, struct rv_txn *t)
{
	if (t->t_transno <= mds_ns_boot_transno(m->m_ns))
		return 1;
	struct net_req *rq = calloc(1, sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	struct txn_done d = { .d_rv = rv };
	pthread_mutex_init(&d.d_lock, NULL);
	pthread_cond_init(&d.d_cond, NULL);
	rq->rq_hdr.fh_magic = WEIR_FRAME_MAGIC;
	rq->rq_hdr.fh_version = WEIR_FRAME_VERSION;
	rq->rq_hdr.fh_opcode = t->t_op;
	rq->rq_hdr.fh_body_len = t->t_len;
	rq->rq_body = t->t_body; /* rq owns it now */
	t->t_body = NULL;
	rq->rq_srv_arg = m;
	snprintf(rq->rq_peer, sizeof(rq->rq_peer), "%s", t->t_peer);
	memcpy(rq->rq_key_name, t->t_key_name, sizeof(rq->rq_key_name));
	rq->rq_peer_sa = t->t_peer_sa;
	rq->rq_local_done = txn_local_done;
	rq->rq_local_arg = &d;
	struct mds_xid x = { .x_has = true, .x_hdr = t->t_xid };
	mds_ns_replay_set(t->t_has_fid ? &t->t_fid : NULL, t->t_has_lo ? &t->t_lo : NULL);
	mds_svc_rerun(rq, &x); /* rq is freed by txn_local_done */
	mds_ns_replay_set(NULL, NULL);
	pthread_mutex_lock(&d.d_lock);
	while (!d.d_done)
		pthread_cond_wait(&d.d_cond, &d.d_lock);
	pthread_mutex_unlock(&d.d_lock);
	pthread_cond_destroy(&d.d_cond);
	pthread_mutex_destroy(&d.d_lock);
	return d.d_rc;
}

/* "mds-replay": re-run what was collected, in transno order, until none is left. */
static void *txn_main(void *arg)
{
	struct mds *m = arg;
	struct mds_recovery *rv = m->m_recov;
	weir_thread_name("mds-replay");
	/* the window does not end under it (as for MDS_REPLAY) */
	pthread_rwlock_rdlock(&rv->rv_replay_lock);
	for (;;) {
		pthread_mutex_lock(&rv->rv_lock);
		struct rv_txn **txns = rv->rv_txns;
		size_t nr = rv->rv_nr_txns;
		struct rv_wait *waiters = rv->rv_txn_waiters;
		rv->rv_txns = NULL;
		rv->rv_nr_txns = rv->rv_cap_txns = 0;
		rv->rv_txn_bytes = 0;
		rv->rv_txn_waiters = NULL;
		if (!nr && !waiters) {
			rv->rv_txn_running = false;
			pthread_mutex_unlock(&rv->rv_lock);
			break;
		}
		pthread_mutex_unlock(&rv->rv_lock);

		uint64_t t0 = weir_now_ns(), rerun = 0, survived = 0, failed = 0;
		if (nr)
			qsort(txns, nr, sizeof(*txns), txn_cmp);
		for (size_t i = 0; i < nr; i++) {
			struct rv_txn *t = txns[i];
			if (i && txns[i - 1]->t_transno == t->t_transno &&
			    !memcmp(&txns[i - 1]->t_xid, &t->t_xid, sizeof(t->t_xid))) {
				txn_free(t); /* sent twice (a client's timeout) */
				txns[i] = NULL;
				continue;
			}
			int rc = txn_run_one(m, rv, t);
			if (rc == 1) {
				survived++;
			} else if (rc) {
				failed++;
				WEIR_LOG_WARN("recovery: client=%s op=%u transno=%llu rc=%d: a request"
					      " lost with the MDT's log failed when re-run", t->t_client,
					      t->t_op, (unsigned long long)t->t_transno, rc);
			} else {
				rerun++;
			}
		}
		for (size_t i = 0; i < nr; i++)
			txn_free(txns[i]);
		free(txns);
		/* on disk before the clients free their copies */
		int rc = mds_ns_sync(m->m_ns, NULL);
		if (rc)
			WEIR_LOG_ERROR("recovery: rc=%d: cannot sync the re-run requests", rc);
		pthread_mutex_lock(&rv->rv_lock);
		rv->rv_txn_rerun += rerun;
		rv->rv_txn_survived += survived;
		rv->rv_txn_failed += failed;
		/* time for the clients to replay their opens and locks after it */
		uint64_t now = weir_now_ns(), half = m->m_conf.mc_recovery_window_ms * 500000ULL;
		uint64_t cap = rv->rv_start_ns + 4 * half; /* never past twice the window */
		if (rv->rv_end_ns < now + half)
			rv->rv_end_ns = WEIR_MIN(now + half, cap);
		pthread_mutex_unlock(&rv->rv_lock);
		uint64_t ms = (now - t0) / 1000000ULL;
		WEIR_LOG_NOTICE("recovery: re-ran %llu requests lost with the MDT's log in transno"
				" order (%llu had survived, %llu failed) in %llu ms; boot transno %llu",
				(unsigned long long)rerun, (unsigned long long)survived,
				(unsigned long long)failed, (unsigned long long)ms,
				(unsigned long long)mds_ns_boot_transno(m->m_ns));
		while (waiters) {
			struct rv_wait *w = waiters;
			waiters = w->w_next;
			net_req_reply(w->w_rq, rc ? -EIO : 0, NULL, NULL, 0);
			free(w);
		}
	}
	pthread_rwlock_unlock(&rv->rv_replay_lock);
	return NULL;
}

/*
 * Start the re-run when due: every expected client sent its kept requests
 * (or left, or finished), or half the window passed; later senders start it
 * again. Called with rv_lock held. 
eturn true when the caller must start
 * the thread (txn_spawn, without rv_lock).
 */
static bool txn_due_locked(struct mds *m, struct mds_recovery *rv, uint64_t now)
{
	if (!rv->rv_txn_go) {
		bool all = true;
		for (struct rv_client *c = rv->rv_clients; c && all; c = c->c_next)
			if (c->c_expected && !c->c_done && !c->c_txn_sent)
				all = false;
		uint64_t half = rv->rv_start_ns + m->m_conf.mc_recovery_window_ms * 500000ULL;
		if (!all && now < half)
			return false;
		rv->rv_txn_go = true;
	}
	if (rv->rv_txn_running || (!rv->rv_nr_txns && !rv->rv_txn_waiters))
		return false;
	rv->rv_txn_running = true;
	return true;
}

static void txn_spawn(struct mds *m, struct mds_recovery *rv)
{
	/* the one before has finished: it cleared rv_txn_running before it left
	 * (only the lease thread and MDS_REPLAY's senders spawn, never at once:
	 * rv_txn_running was set by the caller under rv_lock) */
	pthread_mutex_lock(&rv->rv_txn_spawn_lock);
	if (rv->rv_txn_thread_set)
		pthread_join(rv->rv_txn_thread, NULL);
	rv->rv_txn_thread_set = false;
	int rc = pthread_create(&rv->rv_txn_thread, NULL, txn_main, m);
	if (!rc)
		rv->rv_txn_thread_set = true;
	pthread_mutex_unlock(&rv->rv_txn_spawn_lock);
	if (rc) {
		WEIR_LOG_ERROR("recovery: rc=%d: cannot start the re-run of lost requests", -rc);
		pthread_mutex_lock(&rv->rv_lock);
		rv->rv_txn_running = false; /* the next tick tries again */
		pthread_mutex_unlock(&rv->rv_lock);
	}
}

/*
 * Keep the requests of one MDS_REPLAY (txns; the last, txns_last, waits for
 * the re-run). 
eturn 0 (answer now), 1 (rq parked), -errno. Called within
 * the window, under rv_replay_lock shared, for a client  c (by session).
 */
static int txn_collect(struct mds *m, struct mds_recovery *rv, struct net_req *rq,
		       const Weir__ReplayReq *req, uint64_t session, bool *start)
{
	struct rv_txn **add = req->n_txns ? calloc(req->n_txns, sizeof(*add)) : NULL;
	struct rv_wait *w = req->txns_last ? calloc(1, sizeof(*w)) : NULL;
	uint64_t bytes = 0;
	int rc = (req->n_txns && !add) || (req->txns_last && !w) ? -ENOMEM : 0;
	for (size_t i = 0; !rc && i < req->n_txns; i++) {
		const Weir__ReplayTxn *p = req->txns[i];
		struct weir_xid_hdr xh;
		if (p->xid.len != WEIR_XID_HDR_SIZE || weir_xid_decode(p->xid.data, &xh) ||
		    !p->transno || p->body.len > WEIR_FRAME_MAX_BODY ||
		    xh.xh_tag == WEIR_XID_NO_TAG) {
			rc = -EINVAL;
			break;
		}
		if (!txn_op_ok(p->op)) {
			/* only namespace changes are re-run (no replays, connects, HSM) */
			WEIR_LOG_WARN_RL("peer=%s op=%u: a kept request of this kind is not re-run",
					 rq->rq_peer, p->op);
			continue;
		}
		struct rv_txn *t = calloc(1, sizeof(*t));
		if (!t || !(t->t_body = malloc(p->body.len ? p->body.len : 1))) {
			free(t);
			rc = -ENOMEM;
			break;
		}
		add[i] = t;
		memcpy(t->t_body, p->body.data, p->body.len);
		t->t_len = (uint32_t)p->body.len;
		t->t_op = (uint16_t)p->op;
		t->t_xid = xh;
		t->t_transno = p->transno;
		if (p->fid) {
			t->t_has_fid = true;
			t->t_fid.fid_seq = p->fid->seq;
			t->t_fid.fid_oid = p->fid->oid;
		}
		if (p->layout && p->layout->n_osts == p->layout->stripe_count &&
		    p->layout->stripe_count <= WEIR_LAYOUT_MAX_STRIPES) {
			t->t_has_lo = true;
			t->t_lo.lo_pattern = p->layout->pattern;
			t->t_lo.lo_stripe_size = p->layout->stripe_size;
			t->t_lo.lo_stripe_count = p->layout->stripe_count;
			t->t_lo.lo_gen = p->layout->gen;
			for (size_t j = 0; j < p->layout->n_osts; j++)
				t->t_lo.lo_osts[j] = p->layout->osts[j];
			if (weir_layout_check(&t->t_lo))
				t->t_has_lo = false; /* the MDS chooses again */
		}
		snprintf(t->t_peer, sizeof(t->t_peer), "%s", rq->rq_peer);
		memcpy(t->t_key_name, rq->rq_key_name, sizeof(t->t_key_name));
		t->t_peer_sa = rq->rq_peer_sa;
		bytes += sizeof(*t) + t->t_len;
	}
	pthread_mutex_lock(&rv->rv_lock);
	struct rv_client *c = NULL;
	for (c = rv->rv_clients; c; c = c->c_next)
		if (c->c_session == session)
			break;
	if (!rc && !c)
		rc = -ESTALE;
	for (size_t i = 0; !rc && i < req->n_txns; i++)
		if (add[i] && memcmp(add[i]->t_xid.xh_uuid, c->c_uuid, MDS_CLIENT_UUID_LEN))
			rc = -EPERM; /* only its own requests: another's reply-cache slots are not its */
	if (!rc && req->old_session && !c->c_old_session) {
		/* its kept requests name that session: they are taken as this one's */
		c->c_old_session = req->old_session;
		atomic_fetch_add(&rv->rv_nr_old, 1);
	}
	if (!rc && rv->rv_txn_bytes + bytes > RV_TXN_MAX_BYTES)
		rc = -ENOSPC; /* logged by the caller; the client's requests stay unreplayed */
	if (!rc && rv->rv_nr_txns + req->n_txns > rv->rv_cap_txns) {
		size_t cap = WEIR_MAX(rv->rv_cap_txns * 2, rv->rv_nr_txns + req->n_txns);
		struct rv_txn **n = realloc(rv->rv_txns, cap * sizeof(*n));
		if (n) {
			rv->rv_txns = n;
			rv->rv_cap_txns = cap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc) {
		for (size_t i = 0; i < req->n_txns; i++) {
			if (!add[i])
				continue; /* not re-run (txn_op_ok) */
			snprintf(add[i]->t_client, sizeof(add[i]->t_client), "%s", c->c_name);
			rv->rv_txns[rv->rv_nr_txns++] = add[i];
			add[i] = NULL;
		}
		rv->rv_txn_bytes += bytes;
		if (w) {
			c->c_txn_sent = true;
			w->w_rq = rq;
			w->w_next = rv->rv_txn_waiters;
			rv->rv_txn_waiters = w;
			w = NULL;
			*start = txn_due_locked(m, rv, weir_now_ns());
			rc = 1;
		}
	}
	pthread_mutex_unlock(&rv->rv_lock);
	for (size_t i = 0; add && i < req->n_txns; i++)
		txn_free(add[i]);
	free(add);
	free(w);
	return rc;
}
