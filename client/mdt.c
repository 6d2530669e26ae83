/*
 * client/mdt.c - this mount's connections to the MDTs other than MDT0
 * (docs/dne.md, step 2: clients reach every MDT).
 *
 * DESIGN. MDT0 is the mount's MDS (fs_mds, its session, lease, replay list
 * and metadata-lease poll: client/mount.c, lease.c, replay.c, mdl.c). An MDT
 * k > 0 is reached the first time a call names one of its FIDs (a FID's MDT
 * is weir_fid_mdt(): no lookup) or a walk is redirected to it
 * (client/mdc.c): its address comes from the cluster map
 * (ClusterMap.mdts, kept by wc_map_refresh()), and the connection stays
 * until umount. A session on it (MDS_CONNECT, with this mount's client uuid)
 * is made the first time an open or a close needs one, and the lease
 * thread renews it with MDT0's (wc_mdt_renew_all()).
 *
 * What MDT k does not have yet (each a later part of step 2):
 *  - replay: a change MDT k acknowledged is in its WAL before the reply,
 *    so a kill -9 of its MDS loses nothing acknowledged, but this mount
 *    keeps no copy of those changes for a power loss of that host (MDT0's
 *    are kept: client/replay.c);
 *  - open handles across an MDT k restart or eviction: its session is
 *    made again and the handles opened on it before turn stale (-EIO, as
 *    after an eviction by MDT0: md_epoch); in MDT k's recovery window
 *    this mount replays nothing (an empty MDS_REPLAY ends its part);
 *  - metadata leases: calls to MDT k ask for none, so nothing of MDT k is
 *    cached (every call asks it);
 *  - fcntl and flock locks are MDT k's lock manager's (client/lock.c), and
 *    are not replayed after its restart (the handles are stale).
 *
 * Locks: fs_lock guards fs_mdt_addr[] and the making of fs_mdts[] entries
 * (once published, an entry lives until umount: wc_mdt_epoch() reads them
 * without the lock); md_sess_lock guards md_session and is held
 * across the MDS_CONNECT that makes one (never with fs_lock).
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

void wc_mdt_addr_set(struct weir_fs *fs, uint32_t index, const char *addr)
{
	if (index == 0 || index >= WEIR_MDT_MAX || !addr || !*addr ||
	    strlen(addr) >= sizeof(fs->fs_mdt_addr[0]))
		return;
	pthread_mutex_lock(&fs->fs_lock);
	if (strcmp(fs->fs_mdt_addr[index], addr)) {
		if (fs->fs_mdts[index])
			WEIR_LOG_WARN("MDT%04x: moved from %s to %s; this mount keeps its"
				      " connection to %s until it is mounted again (failover of"
				      " MDTs other than MDT0 is not followed yet)",
				      index, fs->fs_mdt_addr[index], addr,
				      fs->fs_mdts[index]->md_addr);
		snprintf(fs->fs_mdt_addr[index], sizeof(fs->fs_mdt_addr[index]), "%s", addr);
	}
	pthread_mutex_unlock(&fs->fs_lock);
	atomic_store(&fs->fs_multi_mdt, true);
}

/* The MDT \a index's entry, or NULL (fs_lock held). */
static struct wc_mdt *mdt_find_locked(struct weir_fs *fs, uint32_t index)
{
	return fs->fs_mdts[index];
}

int wc_mdt_get(struct weir_fs *fs, uint32_t index, struct wc_mdt **out)
{
	*out = NULL;
	if (index == 0 || index >= WEIR_MDT_MAX)
		return -EINVAL;
	pthread_mutex_lock(&fs->fs_lock);
	struct wc_mdt *md = mdt_find_locked(fs, index);
	bool known = fs->fs_mdt_addr[index][0] != '\0';
	pthread_mutex_unlock(&fs->fs_lock);
	if (md) {
		*out = md;
		return 0;
	}
	if (!known) {
		int rc = wc_map_refresh(fs); /* an MDT added since the mount */
		if (rc)
			return rc;
	}
	char addr[64];
	pthread_mutex_lock(&fs->fs_lock);
	snprintf(addr, sizeof(addr), "%s", fs->fs_mdt_addr[index]);
	pthread_mutex_unlock(&fs->fs_lock);
	if (!addr[0]) {
		WEIR_LOG_WARN_RL("MDT%04x: not in the cluster map; its files cannot be reached"
				 " (-EHOSTDOWN)", index);
		return -EHOSTDOWN;
	}
	md = calloc(1, sizeof(*md));
	if (!md)
		return -ENOMEM;
	md->md_index = index;
	snprintf(md->md_addr, sizeof(md->md_addr), "%s", addr);
	pthread_mutex_init(&md->md_sess_lock, NULL);
	wc_target_init(&md->md_tgt, "MDT", index, addr);
	int rc = net_conn_open_auth(addr, WEIR_MIN(fs->fs_rpc_timeout_ms, 10000U), fs->fs_auth,
				    &md->md_conn);
	if (rc) {
		WEIR_LOG_WARN_RL("MDT%04x mds=%s rc=%d: cannot connect", index, addr, rc);
		pthread_mutex_destroy(&md->md_sess_lock);
		free(md);
		return rc;
	}
	pthread_mutex_lock(&fs->fs_lock);
	struct wc_mdt *had = mdt_find_locked(fs, index);
	if (!had)
		__atomic_store_n(&fs->fs_mdts[index], md, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->fs_lock);
	if (had) { /* another thread made it meanwhile */
		net_conn_close(md->md_conn);
		pthread_mutex_destroy(&md->md_sess_lock);
		free(md);
		md = had;
	} else {
		WEIR_LOG_INFO("MDT%04x mds=%s: connected", index, addr);
	}
	*out = md;
	return 0;
}

int wc_mdt_get_wait(struct weir_fs *fs, uint32_t index, struct wc_mdt **out)
{
	struct wc_wait w = { 0 };
	int rc;
	while ((rc = wc_mdt_get(fs, index, out)) != 0) {
		if (rc == -EHOSTDOWN || !wc_recover_retryable(rc) || atomic_load(&fs->fs_umounting))
			return rc;
		char name[16];
		snprintf(name, sizeof(name), "MDT%04x", index);
		int wrc = wc_recover_backoff(fs, &w, name, rc, "cannot be reached");
		if (wrc)
			return wrc;
		if (w.w_delay_ms >= 1000)
			wc_map_refresh(fs); /* it may have failed over to another address */
	}
	return 0;
}

/*
 * A call for mdt_connect_locked(): as any MDS call (waits for an MDT that is
 * away, as the mount's recovery limit says) when \a tmo_ms is 0, else one
 * try within \a tmo_ms (the lease thread, which must not stall: MDT0's
 * renewal waits behind it).
 */
static int mdt_call(struct weir_fs *fs, struct wc_mdt *md, uint32_t tmo_ms, uint16_t op,
		    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rep_d,
		    void **rep)
{
	if (tmo_ms)
		return wc_mds_call_mdt_tmo(fs, md->md_index, op, req, rep_d, rep, tmo_ms);
	return wc_mds_call_mdt(fs, md->md_index, op, req, rep_d, rep);
}

/* MDS_CONNECT to \a md (md_sess_lock held; \a tmo_ms as mdt_call()); \return 0 and md_session set. */
static int mdt_connect_locked(struct weir_fs *fs, struct wc_mdt *md, uint64_t old, uint32_t tmo_ms)
{
	Weir__ConnectReq req = WEIR__CONNECT_REQ__INIT;
	Weir__ConnectRep *rep = NULL;
	req.version = WC_PROTO_VERSION;
	req.client_name = fs->fs_client_name;
	req.client_uuid.data = fs->fs_client_uuid;
	req.client_uuid.len = sizeof(fs->fs_client_uuid);
	int rc = mdt_call(fs, md, tmo_ms, WEIR__WIRE_OP__MDS_CONNECT, &req.base,
			  &weir__connect_rep__descriptor, (void **)&rep);
	if (rc) {
		WEIR_LOG_WARN_RL("MDT%04x mds=%s rc=%d: cannot make a session", md->md_index,
				 md->md_addr, rc);
		return rc;
	}
	uint64_t session = rep->session;
	bool recovering = rep->recovering;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	if (!session) {
		WEIR_LOG_WARN_RL("MDT%04x mds=%s: connect reply without a session", md->md_index,
				 md->md_addr);
		return -EPROTO;
	}
	if (recovering) {
		/* its recovery window waits for this mount: nothing to replay
		 * (see the top of the file), so end this mount's part at once */
		Weir__ReplayReq rr = WEIR__REPLAY_REQ__INIT;
		rr.session = session;
		rr.old_session = old;
		rr.done = true;
		int rrc = mdt_call(fs, md, tmo_ms, WEIR__WIRE_OP__MDS_REPLAY, &rr.base, NULL, NULL);
		if (rrc)
			WEIR_LOG_INFO("MDT%04x mds=%s rc=%d: empty replay refused", md->md_index,
				      md->md_addr, rrc);
	}
	if (old) {
		atomic_fetch_add(&md->md_epoch, 1);
		WEIR_LOG_NOTICE("MDT%04x mds=%s session=%#llx: session lost (evicted, or the MDS"
				" restarted); handles opened on this MDT before are stale (-EIO);"
				" new session %#llx",
				md->md_index, md->md_addr, (unsigned long long)old,
				(unsigned long long)session);
	}
	md->md_session = session;
	return 0;
}

int wc_mdt_session(struct weir_fs *fs, uint32_t index, uint64_t *session, unsigned *epoch)
{
	if (index == 0) {
		*session = wc_session_get(fs, epoch);
		return 0;
	}
	struct wc_mdt *md;
	int rc = wc_mdt_get(fs, index, &md);
	if (rc)
		return rc;
	pthread_mutex_lock(&md->md_sess_lock);
	if (!md->md_session)
		rc = mdt_connect_locked(fs, md, 0, 0);
	*session = md->md_session;
	if (epoch)
		*epoch = atomic_load(&md->md_epoch);
	pthread_mutex_unlock(&md->md_sess_lock);
	return rc;
}

int wc_mdt_session_lost(struct weir_fs *fs, uint32_t index, uint64_t session)
{
	if (index == 0)
		return wc_session_lost(fs, session);
	struct wc_mdt *md;
	int rc = wc_mdt_get(fs, index, &md);
	if (rc)
		return rc;
	pthread_mutex_lock(&md->md_sess_lock);
	if (md->md_session == session) /* else another thread made a new one already */
		rc = mdt_connect_locked(fs, md, session, 0);
	pthread_mutex_unlock(&md->md_sess_lock);
	return rc;
}

unsigned wc_mdt_epoch(struct weir_fs *fs, uint32_t index)
{
	if (index == 0)
		return atomic_load(&fs->fs_epoch);
	/* no lock: callers may hold fs_lock (wc_file_stale()); an entry, once
	 * published, lives until umount */
	struct wc_mdt *md =
	    index < WEIR_MDT_MAX ? __atomic_load_n(&fs->fs_mdts[index], __ATOMIC_ACQUIRE) : NULL;
	return md ? atomic_load(&md->md_epoch) : 0;
}

/* The sessions to renew or end: MDTs with one, into \a out (WEIR_MDT_MAX). */
static size_t mdt_with_sessions(struct weir_fs *fs, struct wc_mdt **out)
{
	size_t n = 0;
	pthread_mutex_lock(&fs->fs_lock);
	for (uint32_t i = 1; i < WEIR_MDT_MAX; i++)
		if (fs->fs_mdts[i])
			out[n++] = fs->fs_mdts[i];
	pthread_mutex_unlock(&fs->fs_lock);
	return n;
}

/*
 * MDS_LEASE_RENEW or MDS_DISCONNECT (\a end: forgotten here first) of
 * \a md's session, sent as *\a session. \return 0, -ENOENT (no session),
 * or the call's error.
 */
static int mdt_session_call(struct weir_fs *fs, struct wc_mdt *md, uint16_t op, bool end,
			    uint32_t timeout_ms, uint64_t *session)
{
	pthread_mutex_lock(&md->md_sess_lock);
	*session = md->md_session;
	if (end)
		md->md_session = 0;
	pthread_mutex_unlock(&md->md_sess_lock);
	if (!*session)
		return -ENOENT;
	Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
	req.session = *session;
	return wc_mds_call_mdt_tmo(fs, md->md_index, op, &req.base, NULL, NULL, timeout_ms);
}

void wc_mdt_renew_all(struct weir_fs *fs, uint32_t budget_ms)
{
	struct wc_mdt *mds[WEIR_MDT_MAX];
	size_t n = mdt_with_sessions(fs, mds);
	uint64_t end_ns = weir_now_ns() + (uint64_t)budget_ms * 1000000ULL;
	for (size_t i = 0; i < n; i++) {
		struct wc_mdt *md = mds[i];
		uint64_t now = weir_now_ns();
		if (now >= end_ns)
			break; /* the rest at the next pass: MDT0's renewal must not wait */
		uint32_t left_ms = (uint32_t)((end_ns - now) / 1000000ULL) + 1;
		/* a session being made by an opener (which may wait for that MDT
		 * as long as the mount's recovery limit): nothing to renew yet */
		if (pthread_mutex_trylock(&md->md_sess_lock))
			continue;
		uint64_t session = md->md_session;
		pthread_mutex_unlock(&md->md_sess_lock);
		if (!session)
			continue;
		Weir__LeaseReq req = WEIR__LEASE_REQ__INIT;
		req.session = session;
		int rc = wc_mds_call_mdt_tmo(fs, md->md_index, WEIR__WIRE_OP__MDS_LEASE_RENEW,
					     &req.base, NULL, NULL, left_ms);
		if (rc == -ESTALE && !pthread_mutex_trylock(&md->md_sess_lock)) {
			/* evicted, or the MDS restarted: a new session, one try */
			rc = md->md_session == session
				 ? mdt_connect_locked(fs, md, session, left_ms)
				 : 0;
			pthread_mutex_unlock(&md->md_sess_lock);
		}
		if (rc)
			WEIR_LOG_WARN_RL("MDT%04x mds=%s rc=%d: lease renewal failed; retrying",
					 md->md_index, md->md_addr, rc);
	}
}

void wc_mdt_disconnect_all(struct weir_fs *fs, uint32_t timeout_ms)
{
	struct wc_mdt *mds[WEIR_MDT_MAX];
	size_t n = mdt_with_sessions(fs, mds);
	for (size_t i = 0; i < n; i++) {
		uint64_t session;
		int rc = mdt_session_call(fs, mds[i], WEIR__WIRE_OP__MDS_DISCONNECT, true, timeout_ms,
					  &session);
		if (rc && rc != -ESTALE && rc != -ENOENT)
			WEIR_LOG_INFO("MDT%04x mds=%s rc=%d: disconnect failed; the MDS evicts the"
				      " session when its lease ends",
				      mds[i]->md_index, mds[i]->md_addr, rc);
	}
}

void wc_mdt_fini(struct weir_fs *fs)
{
	for (uint32_t i = 1; i < WEIR_MDT_MAX; i++) {
		struct wc_mdt *md = fs->fs_mdts[i];
		if (!md)
			continue;
		fs->fs_mdts[i] = NULL;
		net_conn_close(md->md_conn);
		pthread_mutex_destroy(&md->md_sess_lock);
		free(md);
	}
}
