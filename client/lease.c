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
 *  - new MDS boot: the MDS restarted and forgot every session and lock;
 *    handles stay usable (as before sessions existed), locks are gone.
 * The thread waits on fs_lease_cond so umount stops it at once; umount
 * then ends the session with MDS_DISCONNECT so its locks go immediately.
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
	int rc;

	if (rep)
		*rep = NULL;
	struct weir_xid_hdr x; /* the mount's identity (MDS_DISCONNECT drops its reply cache) */
	wc_xid_new(fs, false, &x);
	net_call_init(&call, op, req);
	call.nc_timeout_ms = timeout_ms;
	call.nc_xid = &x;
	rc = net_call_run(fs->fs_mds, &call);
	if (rc == 0 && rep_d) {
		*rep = net_call_unpack(&call, rep_d);
		if (!*rep)
			rc = -EPROTO;
	}
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
	return fh->f_epoch != atomic_load(&fh->f_fs->fs_epoch);
}

int wc_session_lost(struct weir_fs *fs, uint64_t session)
{
	Weir__ConnectReq req = WEIR__CONNECT_REQ__INIT;
	Weir__ConnectRep *rep;
	int rc = 0;

	pthread_mutex_lock(&fs->fs_sess_lock);
	if (fs->fs_session != session)
		goto out_unlock; /* another thread reconnected already */
	req.version = WC_PROTO_VERSION;
	req.client_name = fs->fs_client_name;
	rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_CONNECT, &req.base,
			     &weir__connect_rep__descriptor, (void **)&rep, fs->fs_rpc_timeout_ms);
	if (rc) {
		WEIR_LOG_WARN("mds=%s rc=%d: session lost and cannot reconnect", fs->fs_mds_addr,
			      rc);
		goto out_unlock;
	}
	bool evicted = rep->boot_ns == fs->fs_boot_ns;
	fs->fs_session = rep->session;
	fs->fs_boot_ns = rep->boot_ns;
	if (rep->lease_ms)
		fs->fs_lease_ms = rep->lease_ms;
	fs->fs_capa_ttl_s = rep->capa_ttl_s;
	if (evicted) {
		atomic_fetch_add(&fs->fs_epoch, 1);
		WEIR_LOG_NOTICE("mds=%s session=%#llx: evicted by the MDS (lease expired); handles"
				" opened before are stale (-EIO); new session %#llx",
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
	return rc;
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
	if (fs->fs_session) {
		Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
		req.session = fs->fs_session;
		int rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_DISCONNECT, &req.base, NULL, NULL,
					 WEIR_MIN(fs->fs_rpc_timeout_ms, 5000U));
		if (rc && rc != -ESTALE)
			WEIR_LOG_INFO("mds=%s rc=%d: disconnect failed; the MDS evicts the session"
				      " when its lease ends",
				      fs->fs_mds_addr, rc);
	}
	pthread_cond_destroy(&fs->fs_lease_cond);
	pthread_mutex_destroy(&fs->fs_lease_lock);
}
