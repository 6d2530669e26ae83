/*
 * client/lease.c - the mount's MDS session and its lease.
 *
 * DESIGN. MDS_CONNECT (at mount) gives the mount a session id and the MDS's
 * lease time. The session id goes with every open, close and lock request;
 * a lease thread, "weir-lease", renews it every lease/3 (MDS_LEASE_RENEW).
 * A session the MDS no longer knows is answered -ESTALE, whoever sees it
 * first calls wc_session_lost(), which connects again (under fs_sess_lock,
 * once) for a new session:
 *  - same MDS boot (boot_ns unchanged): this mount was evicted (its lease
 *    ran out: a long stop, a partition). The MDS has dropped its locks and
 *    closed its handles, so fs_epoch is bumped and every handle opened
 *    before returns -EIO (wc_file_stale); new opens work.
 *  - new MDS boot, and the MDS says `recovering` (it knew this mount's
 *    client_uuid and is in its recovery window, mds/recovery.c): this
 *    mount first sends again the requests the MDS acknowledged and had not
 *    synced (client/replay.c), then replays its open handles (same ids)
 *    and the locks it holds
 *    (its record, client/lock.c) with MDS_REPLAY, after releasing
 *    fs_sess_lock; the MDS keeps every other request waiting meanwhile
 *    (-EINPROGRESS, which wc_mds_call and wc_mds_call_tmo wait on through
 *    wc_recovery_wait(), which first makes sure this mount has reconnected).
 *    Handles and locks then work as before the restart; a lock request
 *    that the restart interrupted is sent again in the new session.
 *  - new MDS boot, told `recovery_evicted` (it came back after the window):
 *    as an eviction.
 *  - new MDS boot without a window (an MDS that kept none): handles stay
 *    usable, locks are gone.
 * The thread waits on fs_lease_cond so umount stops it at once; umount
 * then ends the session with MDS_DISCONNECT so its locks go immediately
 * (and the MDS forgets the mount: after a restart it reconnects first, or
 * the MDS's recovery window would wait for it).
 * Locks (client_int.h order): fs_sess_lock is taken alone (it is held
 * across the connect RPC, never while taking fs_lock); fs_lease_lock only
 * guards the stop flag.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

int wc_mds_call_tmo(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep, uint32_t timeout_ms)
{
	struct net_call call;
	struct wc_wait w = { 0 };
	bool checked = false;
	int rc;

	if (rep)
		*rep = NULL;
	struct weir_xid_hdr x; /* the mount's identity (MDS_DISCONNECT drops its reply cache) */
	wc_xid_new(fs, false, &x);
	for (;;) {
		net_call_init(&call, op, req);
		call.nc_timeout_ms = timeout_ms;
		call.nc_xid = &x;
		/* parked at the MDS: the other calls' waiters read their own replies */
		call.nc_background = op == WEIR__WIRE_OP__MDS_LEASE_POLL;
		rc = net_call_run(fs->fs_mds, &call);
		if (rc != -EINPROGRESS)
			break;
		/* the MDS's recovery window: wait for it to end */
		net_call_fini(&call);
		rc = wc_recovery_wait(fs, &w, &checked);
		if (rc)
			return rc;
	}
	if (rc == 0 && rep_d) {
		*rep = net_call_unpack(&call, rep_d);
		if (!*rep)
			rc = -EPROTO;
	}
	/* untagged: changes nothing, but its last_committed drains the kept list */
	wc_replay_note(fs, &call, NULL, NULL, NULL);
	net_call_fini(&call);
	return rc;
}

uint64_t wc_session_get(struct weir_fs *fs, unsigned *epoch)
{
	pthread_mutex_lock(&fs->fs_sess_lock);
	uint64_t sid = fs->fs_session;
	if (epoch)
		*epoch = atomic_load(&fs->fs_epoch);
	pthread_mutex_unlock(&fs->fs_sess_lock);
	return sid;
}

bool wc_file_stale(const struct weir_file *fh)
{
	/* its MDT's sessions lost since the open (client/mdt.c for MDTs k > 0) */
	uint32_t mdt = (uint32_t)weir_fid_mdt(&fh->f_fid);
	if (mdt)
		return fh->f_epoch != wc_mdt_epoch(fh->f_fs, mdt);
	return fh->f_epoch != atomic_load(&fh->f_fs->fs_epoch);
}

bool wc_session_replayed(struct weir_fs *fs, uint64_t session)
{
	pthread_mutex_lock(&fs->fs_sess_lock);
	bool r = session && fs->fs_sess_replayed == session;
	pthread_mutex_unlock(&fs->fs_sess_lock);
	return r;
}

/* Most entries of one MDS_REPLAY request (a body well under 4 MiB). */
#define WC_REPLAY_CHUNK 4096

/*
 * Replay this mount's open handles and locks into \a session, in the MDS's
 * recovery window (mds/recovery.c): as many MDS_REPLAY requests as needed,
 * the last with done. \a old_session: this mount's session before.
 * \return 0, -ESTALE (the window is over: nothing was kept), or -errno.
 */
static int wc_replay(struct weir_fs *fs, uint64_t session, uint64_t old_session)
{
	Weir__ReplayOpen *opens = NULL, **open_ptrs = NULL;
	Weir__Fid *fids = NULL;
	Weir__ReplayLock **locks = NULL;
	struct wc_replay_locks *rl = NULL;
	size_t nr_opens = 0, nr_locks = 0, max = 0;
	int rc;

	/* the open handles (not those of an earlier eviction: they are stale) */
	pthread_mutex_lock(&fs->fs_lock);
	for (struct weir_file *fh = fs->fs_files; fh; fh = fh->f_next)
		max++;
	if (max) {
		opens = calloc(max, sizeof(*opens));
		open_ptrs = calloc(max, sizeof(*open_ptrs));
		fids = calloc(max, sizeof(*fids));
	}
	if (max && (!opens || !open_ptrs || !fids)) {
		pthread_mutex_unlock(&fs->fs_lock);
		rc = -ENOMEM;
		goto out_free;
	}
	for (struct weir_file *fh = fs->fs_files; fh; fh = fh->f_next) {
		if (weir_fid_mdt(&fh->f_fid) != 0 || wc_file_stale(fh) || !fh->f_handle)
			continue; /* (another MDT's handles: client/mdt.c) */
		Weir__ReplayOpen *o = &opens[nr_opens];
		weir__replay_open__init(o);
		wc_fid_to_pb(&fh->f_fid, &fids[nr_opens]);
		o->fid = &fids[nr_opens];
		o->handle = fh->f_handle;
		o->flags = (fh->f_read ? WEIR__OPEN_FLAG__OF_READ : 0) |
			   (fh->f_write ? WEIR__OPEN_FLAG__OF_WRITE : 0) |
			   (fh->f_hsm ? WEIR__OPEN_FLAG__OF_HSM : 0);
		open_ptrs[nr_opens++] = o;
	}
	pthread_mutex_unlock(&fs->fs_lock);
	rc = wc_lock_replay_fill(fs, &rl, &locks, &nr_locks);
	if (rc)
		goto out_free;
	/* first what the MDS acknowledged and its restart may have lost: the
	 * opens may name files those requests created (client/replay.c) */
	rc = wc_replay_resend(fs, session, old_session);
	if (rc == -ESTALE)
		goto out_free; /* the window is over: the opens would be refused too */

	size_t io = 0, il = 0;
	do {
		Weir__ReplayReq req = WEIR__REPLAY_REQ__INIT;
		req.session = session;
		req.old_session = old_session;
		req.n_opens = WEIR_MIN(nr_opens - io, (size_t)WC_REPLAY_CHUNK);
		req.opens = req.n_opens ? open_ptrs + io : NULL;
		req.n_locks = WEIR_MIN(nr_locks - il, (size_t)WC_REPLAY_CHUNK);
		req.locks = req.n_locks ? locks + il : NULL;
		io += req.n_opens;
		il += req.n_locks;
		req.done = io == nr_opens && il == nr_locks;
		rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_REPLAY, &req.base, NULL, NULL,
				     fs->fs_rpc_timeout_ms);
	} while (!rc && (io < nr_opens || il < nr_locks));
	if (!rc)
		WEIR_LOG_NOTICE("mds=%s session=%#llx: replayed %zu open handles and %zu locks in"
				" the MDS's recovery window",
				fs->fs_mds_addr, (unsigned long long)session, nr_opens, nr_locks);
out_free:
	wc_lock_replay_free(rl);
	free(opens);
	free(open_ptrs);
	free(fids);
	return rc;
}

void (*wc_session_lost_hook)(struct weir_fs *fs, uint64_t new_session);

int wc_session_lost(struct weir_fs *fs, uint64_t session)
{
	Weir__ConnectReq req = WEIR__CONNECT_REQ__INIT;
	Weir__ConnectRep *rep;
	bool replay = false;
	uint64_t new_session = 0;
	int rc = 0;

	pthread_mutex_lock(&fs->fs_sess_lock);
	if (fs->fs_sess_closed) {
		rc = -ESHUTDOWN; /* umount ended the session: a new one would be left behind */
		goto out_unlock;
	}
	if (fs->fs_session != session)
		goto out_unlock; /* another thread reconnected already */
	req.version = WC_PROTO_VERSION;
	req.client_name = fs->fs_client_name;
	req.client_uuid.data = fs->fs_client_uuid;
	req.client_uuid.len = sizeof(fs->fs_client_uuid);
	rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_CONNECT, &req.base,
			     &weir__connect_rep__descriptor, (void **)&rep, fs->fs_rpc_timeout_ms);
	if (rc) {
		WEIR_LOG_WARN("mds=%s rc=%d: session lost and cannot reconnect", fs->fs_mds_addr,
			      rc);
		goto out_unlock;
	}
	/* evicted: its lease ran out (same boot), or it missed a recovery window */
	bool evicted = rep->boot_ns == fs->fs_boot_ns || rep->recovery_evicted;
	replay = !evicted && rep->recovering;
	if (rep->boot_ns != fs->fs_boot_ns && !replay) /* a new MDS that takes no replay */
		wc_replay_forget(fs, rep->recovery_evicted ? "evicted: back after the MDS's"
							     " recovery window"
							   : "the MDS opened no recovery window");
	fs->fs_session = new_session = rep->session;
	fs->fs_boot_ns = rep->boot_ns;
	fs->fs_sess_replayed = replay ? rep->session : 0;
	if (rep->lease_ms)
		fs->fs_lease_ms = rep->lease_ms;
	fs->fs_capa_ttl_s = rep->capa_ttl_s;
	if (!replay)
		wc_lock_self_reset(fs); /* the MDS holds none of them any more */
	if (evicted) {
		atomic_fetch_add(&fs->fs_epoch, 1);
		WEIR_LOG_NOTICE("mds=%s session=%#llx: evicted by the MDS (%s); handles"
				" opened before are stale (-EIO); new session %#llx",
				fs->fs_mds_addr, (unsigned long long)session,
				rep->recovery_evicted ? "not back within its recovery window"
						      : "lease expired",
				(unsigned long long)fs->fs_session);
	} else if (replay) {
		WEIR_LOG_NOTICE("mds=%s session=%#llx: the MDS restarted and is recovering; new"
				" session %#llx, replaying open handles and locks",
				fs->fs_mds_addr, (unsigned long long)session,
				(unsigned long long)fs->fs_session);
	} else {
		WEIR_LOG_NOTICE("mds=%s session=%#llx: the MDS restarted; its locks are gone; new"
				" session %#llx",
				fs->fs_mds_addr, (unsigned long long)session,
				(unsigned long long)fs->fs_session);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
out_unlock:
	pthread_mutex_unlock(&fs->fs_sess_lock);
	if (replay && wc_session_lost_hook)
		wc_session_lost_hook(fs, new_session);
	if (replay) {
		/* outside fs_sess_lock (the file list needs fs_lock); until this is
		 * done the MDS keeps every other request of this mount waiting */
		int rrc = wc_replay(fs, new_session, session);
		if (rrc) {
			WEIR_LOG_WARN("mds=%s rc=%d: replay after the MDS restart failed; its locks"
				      " are gone", fs->fs_mds_addr, rrc);
			pthread_mutex_lock(&fs->fs_sess_lock);
			if (fs->fs_sess_replayed == new_session)
				fs->fs_sess_replayed = 0;
			wc_lock_self_reset(fs);
			pthread_mutex_unlock(&fs->fs_sess_lock);
		}
	}
	return rc;
}

int wc_recovery_wait(struct weir_fs *fs, struct wc_wait *w, bool *checked)
{
	if (atomic_load(&fs->fs_umounting))
		return -EINPROGRESS; /* umount does not wait for the window */
	if (!*checked) {
		/* this mount must be back first, or the window lasts to its end */
		*checked = true;
		Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
		req.session = wc_session_get(fs, NULL);
		if (req.session) {
			int rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_LEASE_RENEW, &req.base,
						 NULL, NULL, fs->fs_rpc_timeout_ms);
			if (rc == -ESTALE)
				wc_session_lost(fs, req.session);
		}
		WEIR_LOG_INFO("mds=%s: the MDS is in its recovery window; waiting",
			      fs->fs_mds_addr);
	}
	return wc_recover_backoff(fs, w, fs->fs_mdt.t_name, -EINPROGRESS,
				  "still in its recovery window");
}

/* Sleep up to \a ms or until stopped. \return true when stopped. */
static bool wc_lease_sleep(struct weir_fs *fs, uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000ULL;
	ts.tv_sec += (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pthread_mutex_lock(&fs->fs_lease_lock);
	if (!fs->fs_lease_stop)
		pthread_cond_timedwait(&fs->fs_lease_cond, &fs->fs_lease_lock, &ts);
	bool stop = fs->fs_lease_stop;
	pthread_mutex_unlock(&fs->fs_lease_lock);
	return stop;
}

static void *wc_lease_main(void *arg)
{
	struct weir_fs *fs = arg;
	weir_thread_name("weir-lease");
	uint32_t lease_ms = fs->fs_lease_ms;
	bool failing = false;

	/* after a failure, try again sooner (but never busy-loop) */
	while (!wc_lease_sleep(fs, WEIR_MAX((failing ? lease_ms / 6 : lease_ms / 3), 50U))) {
		Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
		Weir__LeaseRep *rep = NULL;
		req.session = wc_session_get(fs, NULL);
		int rc = wc_mds_call_tmo(
		    fs, WEIR__WIRE_OP__MDS_LEASE_RENEW, &req.base, &weir__lease_rep__descriptor,
		    (void **)&rep, WEIR_MIN(fs->fs_rpc_timeout_ms, WEIR_MAX(lease_ms, 1000U)));
		if (rc == -ESTALE)
			rc = wc_session_lost(fs, req.session);
		else if (!rc && rep->lease_ms && rep->lease_ms != lease_ms)
			lease_ms = rep->lease_ms;
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		/* the sessions on the other MDTs (client/mdt.c) */
		wc_mdt_renew_all(fs, WEIR_MAX(lease_ms / 6, 100U)); /* MDT0's next waits */
		if (rc && !failing)
			WEIR_LOG_WARN("mds=%s rc=%d: lease renewal failed; retrying",
				      fs->fs_mds_addr, rc);
		failing = rc != 0;
		pthread_mutex_lock(&fs->fs_sess_lock);
		lease_ms = fs->fs_lease_ms;
		pthread_mutex_unlock(&fs->fs_sess_lock);
	}
	return NULL;
}

int wc_lease_start(struct weir_fs *fs)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->fs_lease_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&fs->fs_lease_lock, NULL);
	if (!fs->fs_lease_ms)
		fs->fs_lease_ms = 30000;
	if (wc_lock_self_init(fs)) /* what to replay after an MDS restart (lock.c) */
		WEIR_LOG_WARN("mds=%s: out of memory: locks will not be replayed after an MDS"
			      " restart", fs->fs_mds_addr);
	if (!fs->fs_session) {
		/* an MDS without sessions: nothing to renew */
		WEIR_LOG_INFO("mds=%s: no session given; locks are unavailable", fs->fs_mds_addr);
		return 0;
	}
	int rc = -pthread_create(&fs->fs_lease_thread, NULL, wc_lease_main, fs);
	if (rc) {
		pthread_cond_destroy(&fs->fs_lease_cond);
		pthread_mutex_destroy(&fs->fs_lease_lock);
		return rc;
	}
	fs->fs_lease_running = true;
	return 0;
}

void wc_lease_stop(struct weir_fs *fs)
{
	if (fs->fs_lease_running) {
		pthread_mutex_lock(&fs->fs_lease_lock);
		fs->fs_lease_stop = true;
		pthread_cond_signal(&fs->fs_lease_cond);
		pthread_mutex_unlock(&fs->fs_lease_lock);
		pthread_join(fs->fs_lease_thread, NULL);
		fs->fs_lease_running = false;
	}
	wc_mdt_disconnect_all(fs, WEIR_MIN(fs->fs_rpc_timeout_ms, 5000U)); /* client/mdt.c */
	if (fs->fs_session) {
		Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
		req.session = wc_session_get(fs, NULL);
		int rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_DISCONNECT, &req.base, NULL, NULL,
					 WEIR_MIN(fs->fs_rpc_timeout_ms, 5000U));
		if (rc == -ESTALE && !wc_session_lost(fs, req.session) &&
		    wc_session_get(fs, NULL) != req.session) {
			/* the MDS restarted: it still knows this mount (by its uuid)
			 * and would wait for it in its recovery window; connect (and
			 * replay nothing) to say goodbye */
			req.session = wc_session_get(fs, NULL);
			rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_DISCONNECT, &req.base, NULL,
					     NULL, WEIR_MIN(fs->fs_rpc_timeout_ms, 5000U));
		}
		if (rc && rc != -ESTALE)
			WEIR_LOG_INFO("mds=%s rc=%d: disconnect failed; the MDS evicts the session"
				      " when its lease ends",
				      fs->fs_mds_addr, rc);
	}
	/* the lease poll thread (mdl.c) may still see its poll fail: it must
	 * not connect again (and replay) behind umount's back */
	pthread_mutex_lock(&fs->fs_sess_lock);
	fs->fs_sess_closed = true;
	pthread_mutex_unlock(&fs->fs_sess_lock);
}

void wc_lease_fini(struct weir_fs *fs)
{
	pthread_cond_destroy(&fs->fs_lease_cond);
	pthread_mutex_destroy(&fs->fs_lease_lock);
	wc_lock_self_fini(fs);
}
