/*
 * mds/server.c - start and stop the metadata server.
 *
 * DESIGN. Threads of weir-mds:
 *   main          parses the configuration, calls mds_start(), waits for
 *                 SIGTERM/SIGINT, calls mds_stop().
 *   mds-loopN     (mc_threads) net/server.c event loops: read requests and
 *                 run their handlers (mds/svc.c), which call the namespace
 *                 (mds/ns.c, RocksDB) and reply. Replies to MDS_SYNC are
 *                 parked with the commit thread instead.
 *   mds-commit    syncs the MDT log every mc_commit_interval_ms and for
 *                 parked MDS_SYNC requests, then answers them (commit.c).
 *   mds-destroy   sends OST_DESTROY for queued objects (destroy.c).
 *   mds-hsm       the HSM coordinator's dispatcher: answers parked agent
 *                 fetches with tasks, gives back actions of silent agents,
 *                 runs the watermark policy (hsm_svc.c, hsm_policy.c).
 *   mds-ostwait   only after a start, while OSTs of the cluster map have
 *                 not registered again: runs parked creates again once
 *                 they have, or mc_ost_timeout_s after the start (cmap.c).
 *   mds-lease     evicts client sessions whose lease expired (their locks
 *                 and open handles), and answers long-parked blocking lock
 *                 requests -EAGAIN so their clients re-poll (lease.c); ends
 *                 the recovery window after a restart (recovery.c).
 *                 Parked lock requests are answered by whichever thread
 *                 frees the lock (a loop thread, or mds-lease).
 *   RocksDB's own background threads (flush, compaction).
 * Start order: the listening socket (so a busy port fails the start before
 * an MDT is formatted) -> namespace -> cluster map -> commit -> destroy ->
 * lease -> recovery (the known clients: the window opens) -> network (the loops take the socket over); stop in reverse (the lease tables are freed only once the
 * network has stopped), ending with a final log sync.
 */
#define _GNU_SOURCE
#include "mds_int.h"
#include "hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

int mds_start(const struct mds_conf *conf, struct mds **out)
{
	int rc;
	struct mds *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->m_conf = *conf;
	if (!m->m_conf.mc_capa_timeout_s)
		m->m_conf.mc_capa_timeout_s = 3600;
	if (!m->m_conf.mc_threads)
		m->m_conf.mc_threads = weir_default_loops();
	if (!m->m_conf.mc_commit_interval_ms)
		m->m_conf.mc_commit_interval_ms = 1000;
	if (!m->m_conf.mc_ost_timeout_s)
		m->m_conf.mc_ost_timeout_s = 15;
	if (!m->m_conf.mc_fsname)
		m->m_conf.mc_fsname = "weir";
	m->m_boot_ns = (int64_t)weir_wall_ns();
	/* the port first: a busy port must fail the start before an MDT is formatted */
	int lfd = -1;
	if (conf->mc_mdt_index >= WEIR_MDT_MAX || (conf->mc_mdt_index && !conf->mc_mgs)) {
		WEIR_LOG_ERROR("mdt_index=%u: %s", conf->mc_mdt_index,
			       conf->mc_mdt_index >= WEIR_MDT_MAX
				       ? "out of range (0..255)"
				       : "an MDT other than MDT0 needs --mgs (MDT0's MDS, HOST:PORT)");
		free(m);
		return -EINVAL;
	}
	rc = net_listen(conf->mc_listen, &lfd, &m->m_port_bound);
	if (rc) {
		char b[96];
		WEIR_LOG_ERROR("listen=%s rc=%s: cannot listen; nothing was opened or formatted",
			       conf->mc_listen, weir_rc_str(rc, b, sizeof(b)));
		free(m);
		return rc;
	}
	pthread_mutex_init(&m->m_handle_lock, NULL);
	m->m_nodemap = calloc(1, sizeof(*m->m_nodemap));
	char nm_why[512] = "";
	rc = m->m_nodemap ? mds_nodemap_load(m->m_nodemap, conf->mc_nodemap, conf->mc_root_squash,
					     nm_why, sizeof(nm_why))
			  : -ENOMEM;
	if (rc) {
		WEIR_LOG_ERROR("nodemap: %s", nm_why[0] ? nm_why : "out of memory");
		free(m->m_nodemap);
		close(lfd);
		free(m);
		return rc;
	}
	mds_nodemap_log(m->m_nodemap);

	struct mds_ns_conf nc = {
		.nc_path = conf->mc_mdt_dir,
		.nc_def_stripe_count = conf->mc_def_stripe_count,
		.nc_def_stripe_size = conf->mc_def_stripe_size,
		.nc_root_owner_set = conf->mc_root_owner_set,
		.nc_root_uid = conf->mc_root_uid,
		.nc_root_gid = conf->mc_root_gid,
		.nc_root_mode = conf->mc_root_mode,
		.nc_pdirops_off = conf->mc_pdirops_off,
		.nc_mdt_index = conf->mc_mdt_index,
	};
	rc = mds_ns_open(&nc, &m->m_ns);
	if (rc)
		goto out_free;
	mds_reply_gc(m); /* a failure only leaves old records behind */
	rc = mds_cmap_init(m);
	if (rc)
		goto out_ns;
	rc = mds_mdt_init(m);
	if (rc)
		goto out_mdt;
	rc = mds_mgc_start(m); /* MDT k > 0: MDT0's map and key before anything serves */
	if (rc)
		goto out_mdt;
	rc = mds_capa_init(m);
	if (rc)
		goto out_mgc;
	rc = mds_commit_start(m);
	if (rc)
		goto out_mgc;
	rc = mds_dtx_start(m); /* finishes what a crash left of two-MDT changes */
	if (rc)
		goto out_commit;
	rc = mds_destroy_start(m);
	if (rc)
		goto out_dtx;
	rc = mds_lease_start(m);
	if (rc)
		goto out_destroy;
	rc = mds_recovery_start(m); /* before any request: the window may open */
	if (rc)
		goto out_lease;
	struct mds_hsm_conf hc = {
		.hc_high_pct = conf->mc_hsm_high_pct,
		.hc_low_pct = conf->mc_hsm_low_pct,
		.hc_min_age_s = conf->mc_hsm_min_age_s,
		.hc_min_age_set = conf->mc_hsm_min_age_set,
		.hc_policy_interval_ms = conf->mc_hsm_policy_interval_ms,
		.hc_action_timeout_ms = conf->mc_hsm_action_timeout_ms,
	};
	rc = mds_hsm_start(m, &hc);
	if (rc)
		goto out_lease;
	if (!conf->mc_mdl_off) {
		rc = mds_mdl_start(m); /* before requests: every commit reports to it */
		if (rc)
			goto out_hsm;
	}
	struct net_server_conf sc = {
		.sc_listen_fd = lfd, /* taken over, even on failure */
		.sc_name = "mds",
		.sc_nr_loops = m->m_conf.mc_threads,
		.sc_max_inflight = 128,
		.sc_poll_us = m->m_conf.mc_poll_us,
	};
	struct net_server_ops so = { .so_handle = mds_svc_handle, .so_arg = m };
	rc = net_server_start(&sc, &so, &m->m_srv);
	lfd = -1;
	if (rc) {
		char b[96];
		WEIR_LOG_ERROR("listen=%s rc=%s: cannot listen", conf->mc_listen,
			       weir_rc_str(rc, b, sizeof(b)));
		goto out_hsm;
	}
	rc = mds_mgc_run(m); /* MDT k > 0: the heartbeat, once everything it touches is up */
	if (rc) {
		net_server_stop(m->m_srv);
		goto out_hsm;
	}
	WEIR_LOG_NOTICE("mdt=%s port=%u threads=%u poll_us=%u: MDS serving MDT%04x",
			conf->mc_mdt_dir, net_server_port(m->m_srv), m->m_conf.mc_threads,
			m->m_conf.mc_poll_us, conf->mc_mdt_index);
	*out = m;
	return 0;

out_hsm:
	mds_mgc_stop(m);
	mds_mdl_stop(m);
	mds_hsm_stop(m);
out_lease:
	atomic_store(&m->m_stop, true);
	mds_lease_stop(m);
	mds_recovery_fini(m);
	mds_lease_fini(m);
out_destroy:
	atomic_store(&m->m_stop, true);
	mds_destroy_stop(m);
out_dtx:
	atomic_store(&m->m_stop, true); /* the sweep stops between records */
	mds_dtx_stop(m);
out_commit:
	atomic_store(&m->m_stop, true);
	mds_commit_stop(m);
	mds_dtx_fini(m);
out_mgc:
	mds_mgc_stop(m);
out_mdt:
	mds_mdt_fini(m);
	mds_cmap_fini(m);
out_ns:
	mds_ns_close(m->m_ns);
out_free:
	pthread_mutex_destroy(&m->m_handle_lock);
	if (lfd >= 0)
		close(lfd);
	weir_capa_key_wipe(&m->m_capa_key);
	free(m->m_nodemap);
	free(m);
	return rc;
}

uint16_t mds_port(const struct mds *m)
{
	return net_server_port(m->m_srv);
}

void mds_log_memory(struct mds *m)
{
	kv_log_memory(m->m_ns->ns_kv);
}

void mds_stop(struct mds *m)
{
	if (!m)
		return;
	atomic_store(&m->m_stop, true);
	mds_cmap_park_stop(m); /* parked creates: -ESHUTDOWN, before what they would call stops */
	mds_mgc_stop(m);
	mds_lease_stop(m);
	mds_destroy_stop(m);
	net_server_stop(m->m_srv);
	mds_dtx_stop(m); /* after the loops: no request prepares any more */
	mds_hsm_stop(m);
	mds_commit_stop(m); /* before the window's state goes: it reads it (synced seq) */
	mds_mdl_stop(m); /* after every thread that commits; parked polls and held replies
			  * answered (to closed connections) */
	mds_recovery_fini(m); /* parked one-way requests: dropped */
	mds_lease_fini(m);
	mds_dtx_fini(m);
	mds_mdt_fini(m);
	mds_cmap_fini(m);
	mds_ns_close(m->m_ns);
	for (int i = 0; i < MDS_HANDLE_BUCKETS; i++)
		while (m->m_handles[i]) {
			struct mds_handle *h = m->m_handles[i];
			m->m_handles[i] = h->h_next;
			free(h);
		}
	pthread_mutex_destroy(&m->m_handle_lock);
	WEIR_LOG_NOTICE("MDS stopped");
	weir_capa_key_wipe(&m->m_capa_key);
	free(m->m_nodemap);
	free(m);
}
