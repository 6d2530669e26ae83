/*
 * client/mount.c - weir_mount/weir_umount, the MDS and OSS connections, the
 * cluster map, credentials and logging set-up. See client_int.h for the
 * locks. Each mount gets a random client uuid (fs_client_uuid), its
 * identity for the MDS's recovery window; wc_mds_call waits while the MDS
 * answers -EINPROGRESS (the window, client/lease.c) and sends again.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "net/auth.h"

static pthread_once_t wc_log_once = PTHREAD_ONCE_INIT;

/*
 * libweir never writes to the application's stderr on its own: logging goes
 * where WEIR_LOG says ("stderr" or a file), at WEIR_LOG_LEVEL, else nowhere.
 */
static void wc_log_setup(void)
{
	const char *path = getenv("WEIR_LOG");
	const char *lvl = getenv("WEIR_LOG_LEVEL");

	if (!path || !*path || weir_log_open(path)) {
		weir_log_open(NULL);
		return;
	}
	weir_log_set_ident("libweir");
	int level = lvl ? weir_log_parse_level(lvl) : WEIR_LOG_LVL_NOTICE;
	weir_log_set_level(level >= 0 ? level : WEIR_LOG_LVL_NOTICE);
}

void wc_cred_init(struct weir_fs *fs, Weir__Cred *c)
{
	if (wc_cred_thread(c))
		return; /* weir_fid_cred_set() (client/fidops.c) */
	weir__cred__init(c);
	c->uid = fs->fs_uid;
	c->gid = fs->fs_gid;
	c->n_groups = fs->fs_nr_groups;
	c->groups = fs->fs_nr_groups ? fs->fs_groups : NULL;
}

bool wc_op_readonly(uint16_t op)
{
	switch (op) {
	case WEIR__WIRE_OP__MDS_GET_CLUSTERMAP:
	case WEIR__WIRE_OP__MDS_LOOKUP:
	case WEIR__WIRE_OP__MDS_GETATTR:
	case WEIR__WIRE_OP__MDS_READDIR:
	case WEIR__WIRE_OP__MDS_STATFS:
	case WEIR__WIRE_OP__MDS_READLINK:
	case WEIR__WIRE_OP__MDS_ACCESS:
	case WEIR__WIRE_OP__MDS_GETXATTR:
	case WEIR__WIRE_OP__MDS_LISTXATTR:
	case WEIR__WIRE_OP__MDS_LEASE_RENEW:
	case WEIR__WIRE_OP__MDS_LOCK_TEST:
	case WEIR__WIRE_OP__MDS_CAPA_RENEW:
	case WEIR__WIRE_OP__MDS_DRA_LIST:
	case WEIR__WIRE_OP__MDS_HSM_STATE:
	case WEIR__WIRE_OP__MDS_HSM_QUEUE:
	case WEIR__WIRE_OP__PING:
		return true;
	default:
		return false;
	}
}

int wc_mds_call(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		const ProtobufCMessageDescriptor *rep_d, void **rep)
{
	return wc_mds_call_mdt(fs, 0, op, req, rep_d, rep);
}

int wc_mds_call_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep)
{
	struct weir_xid_hdr x;

	wc_xid_new(fs, !wc_op_readonly(op), &x);
	int rc = wc_mds_call_xid_mdt(fs, mdt, op, req, rep_d, rep, &x);
	wc_xid_put(fs, &x);
	return rc;
}

int wc_mds_call_xid(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep,
		    const struct weir_xid_hdr *x)
{
	return wc_mds_call_xid_mdt(fs, 0, op, req, rep_d, rep, x);
}

/*
 * Any MDS request is sent again, with the same replay id, after a transport
 * failure (client/recover.c): the MDS answers a request it already applied
 * from its reply cache (mds/reply.c) instead of doing it twice.
 */
int wc_mds_call_xid_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rep_d,
			void **rep, const struct weir_xid_hdr *x)
{
	struct net_call call;
	struct wc_wait w = { 0 }; /* one recovery limit for the call, whatever it waits on */
	bool rchecked = false;
	struct net_conn *conn = fs->fs_mds;
	struct wc_target *tgt = &fs->fs_mdt;
	int rc;

	if (rep)
		*rep = NULL;
	if (mdt) { /* another MDT (client/mdt.c) */
		struct wc_mdt *md;
		rc = wc_mdt_get_wait(fs, mdt, &md);
		if (rc)
			return rc;
		conn = md->md_conn;
		tgt = &md->md_tgt;
	}
	for (;;) {
		net_call_init(&call, op, req);
		call.nc_timeout_ms = fs->fs_rpc_timeout_ms;
		call.nc_xid = x;
		uint64_t sent_ns = weir_now_ns();
		rc = net_call_run(conn, &call);
		if (rc == -EINPROGRESS && call.nc_rc_remote) {
			/* the MDS's recovery window after a restart (client/lease.c) */
			wc_target_up(tgt, sent_ns);
			net_call_fini(&call);
			if (mdt && atomic_load(&fs->fs_umounting))
				return -EINPROGRESS; /* umount does not wait for the window */
			rc = mdt ? wc_recover_backoff(fs, &w, tgt->t_name, -EINPROGRESS,
						      "still in its recovery window")
				 : wc_recovery_wait(fs, &w, &rchecked);
			if (!rc)
				continue;
			return rc; /* -ETIMEDOUT, -EINTR, or -EINPROGRESS at umount */
		}
		if (call.nc_rc_remote) {
			wc_target_up(tgt, sent_ns);
			break;
		}
		int wrc = wc_recover_wait(fs, tgt, &w, rc, sent_ns);
		if (wrc) {
			rc = wrc;
			break;
		}
		net_call_fini(&call);
		WEIR_LOG_DEBUG("op=%u xid=%llu tag=%u rc=%d: %s unreachable; sending again", op,
			       (unsigned long long)x->xh_xid, x->xh_tag, rc, tgt->t_name);
	}
	void *m = NULL;
	if (rc == 0 && rep_d) {
		m = net_call_unpack(&call, rep_d);
		if (!m)
			rc = -EPROTO;
		/* keep the OST capabilities of regular files (client/capa.c) */
		else if (rep_d == &weir__attr_rep__descriptor)
			wc_capa_note(fs, ((Weir__AttrRep *)m)->capa, 0);
		else if (rep_d == &weir__open_rep__descriptor)
			wc_capa_note(fs, ((Weir__OpenRep *)m)->capa, ((Weir__OpenRep *)m)->handle);
	}
	/* kept until the MDS synced it (client/replay.c); MDT0's only (client/mdt.c) */
	bool full = !mdt && wc_replay_note(fs, &call, x, rep_d, m);
	if (m && rep)
		*rep = m;
	else if (m) /* checked, not wanted */
		protobuf_c_message_free_unpacked(m, NULL);
	net_call_fini(&call);
	if (full)
		wc_replay_sync_if_full(fs);
	if (rc && rc != -ENOENT)
		WEIR_LOG_DEBUG("op=%u rc=%d: %s call failed", op, rc, tgt->t_name);
	return rc;
}

int wc_mds_call_mdt_tmo(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rep_d,
			void **rep, uint32_t timeout_ms)
{
	struct wc_mdt *md;
	struct net_call call;
	struct weir_xid_hdr x;

	if (rep)
		*rep = NULL;
	int rc = wc_mdt_get(fs, mdt, &md);
	if (rc)
		return rc;
	wc_xid_new(fs, false, &x);
	net_call_init(&call, op, req);
	call.nc_timeout_ms = timeout_ms;
	call.nc_xid = &x;
	uint64_t sent_ns = weir_now_ns();
	rc = net_call_run(md->md_conn, &call);
	if (call.nc_rc_remote)
		wc_target_up(&md->md_tgt, sent_ns);
	if (rc == 0 && rep_d) {
		*rep = net_call_unpack(&call, rep_d);
		if (!*rep)
			rc = -EPROTO;
	}
	net_call_fini(&call);
	wc_xid_put(fs, &x);
	return rc;
}

int wc_mds_oneway(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req)
{
	return wc_mds_oneway_mdt(fs, 0, op, req);
}

int wc_mds_oneway_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op, const ProtobufCMessage *req)
{
	struct net_conn *conn = fs->fs_mds;
	struct net_call call;

	if (mdt) {
		struct wc_mdt *md;
		int rc = wc_mdt_get(fs, mdt, &md);
		if (rc)
			return rc;
		conn = md->md_conn;
	}
	net_call_init(&call, op, req);
	int rc = net_call_send_oneway(conn, &call);
	net_call_fini(&call);
	if (rc)
		WEIR_LOG_DEBUG("op=%u rc=%d: one-way MDS request not sent", op, rc);
	return rc;
}

/* Find or add the OSS at \a addr. Called with fs_lock held. */
static struct wc_oss *wc_oss_get_locked(struct weir_fs *fs, const char *addr)
{
	struct wc_oss *os;

	for (os = fs->fs_oss; os; os = os->os_next)
		if (!strcmp(os->os_addr, addr))
			return os;
	os = calloc(1, sizeof(*os));
	if (!os)
		return NULL;
	snprintf(os->os_addr, sizeof(os->os_addr), "%s", addr);
	pthread_mutex_init(&os->os_lock, NULL);
	os->os_next = fs->fs_oss;
	fs->fs_oss = os;
	return os;
}

int wc_map_refresh(struct weir_fs *fs)
{
	Weir__Empty req = WEIR__EMPTY__INIT;
	Weir__ClusterMap *map;
	struct wc_ost *osts = NULL;
	int rc;

	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, &req.base,
			 &weir__cluster_map__descriptor, (void **)&map);
	if (rc)
		return rc;
	if (map->n_osts) {
		osts = calloc(map->n_osts, sizeof(*osts));
		if (!osts) {
			rc = -ENOMEM;
			goto out_free_map;
		}
	}
	pthread_mutex_lock(&fs->fs_lock);
	for (size_t i = 0; i < map->n_osts; i++) {
		const Weir__OstInfo *oi = map->osts[i];
		if (strlen(oi->oss_addr) >= sizeof(osts[i].ost_oss->os_addr)) {
			WEIR_LOG_ERROR("ost=%u: OSS address too long in the cluster map",
				       oi->index);
			rc = -EPROTO;
			break;
		}
		osts[i].ost_index = oi->index;
		osts[i].ost_state = oi->state;
		osts[i].ost_oss = wc_oss_get_locked(fs, oi->oss_addr);
		if (!osts[i].ost_oss) {
			rc = -ENOMEM;
			break;
		}
		if (!osts[i].ost_oss->os_tgt.t_name[0]) /* recovery's name for it */
			wc_target_init(&osts[i].ost_oss->os_tgt, "OST", oi->index, oi->oss_addr);
	}
	if (!rc) {
		free(fs->fs_osts);
		fs->fs_osts = osts;
		fs->fs_nr_osts = map->n_osts;
		fs->fs_map_gen = map->gen;
		osts = NULL;
	}
	pthread_mutex_unlock(&fs->fs_lock);
	if (!rc)
		WEIR_LOG_INFO("cluster map gen=%llu: %zu OSTs, %zu MDTs", (unsigned long long)map->gen,
			      map->n_osts, map->n_mdts ? map->n_mdts : 1);
	for (size_t i = 0; !rc && i < map->n_mdts; i++) /* the other MDTs (client/mdt.c) */
		if (map->mdts[i]->mds_addr)
			wc_mdt_addr_set(fs, map->mdts[i]->index, map->mdts[i]->mds_addr);
	free(osts);
out_free_map:
	protobuf_c_message_free_unpacked(&map->base, NULL);
	return rc;
}

int wc_map_nr_osts(struct weir_fs *fs)
{
	int rc = wc_map_refresh(fs);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->fs_lock);
	rc = (int)fs->fs_nr_osts;
	pthread_mutex_unlock(&fs->fs_lock);
	return rc;
}

static struct wc_oss *wc_ost_find(struct weir_fs *fs, uint32_t ost_index)
{
	struct wc_oss *os = NULL;

	pthread_mutex_lock(&fs->fs_lock);
	for (size_t i = 0; i < fs->fs_nr_osts; i++) {
		if (fs->fs_osts[i].ost_index == ost_index) {
			os = fs->fs_osts[i].ost_oss;
			break;
		}
	}
	pthread_mutex_unlock(&fs->fs_lock);
	return os;
}

struct wc_target *wc_ost_target(struct weir_fs *fs, uint32_t ost_index)
{
	struct wc_oss *os = wc_ost_find(fs, ost_index);
	return os ? &os->os_tgt : NULL;
}

int wc_ost_conn(struct weir_fs *fs, uint32_t ost_index, struct net_conn **conn,
		struct wc_target **tgt)
{
	struct wc_oss *os = wc_ost_find(fs, ost_index);
	int rc = 0;

	if (!os) {
		rc = wc_map_refresh(fs);
		if (rc)
			return rc;
		os = wc_ost_find(fs, ost_index);
		if (!os) {
			WEIR_LOG_ERROR("ost=%u: not in the cluster map", ost_index);
			return -EIO;
		}
	}
	if (tgt)
		*tgt = &os->os_tgt;
	pthread_mutex_lock(&os->os_lock);
	if (!os->os_conn) {
		uint32_t tmo = WEIR_MIN(fs->fs_rpc_timeout_ms, 10000U);
		rc = net_conn_open_auth(os->os_addr, tmo, fs->fs_auth, &os->os_conn);
		if (rc) {
			os->os_conn = NULL;
			WEIR_LOG_WARN("ost=%u oss=%s rc=%d: cannot connect", ost_index,
				      os->os_addr, rc);
		}
	}
	*conn = os->os_conn;
	pthread_mutex_unlock(&os->os_lock);
	return rc;
}

/* Copy the caller's options (possibly an older, smaller struct) and check them. */
static int wc_opts_load(const struct weir_mount_opts *in, struct weir_mount_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (in) {
		if (in->wmo_size < sizeof(size_t))
			return -EINVAL;
		memcpy(o, in, WEIR_MIN(in->wmo_size, sizeof(*o)));
	}
	if (!o->wmo_rpc_timeout_ms)
		o->wmo_rpc_timeout_ms = NET_DEFAULT_TIMEOUT_MS;
	if (!o->wmo_rpc_max_bytes)
		o->wmo_rpc_max_bytes = 4 * WEIR_MIB;
	if (!o->wmo_max_inflight)
		o->wmo_max_inflight = 16;
	if (o->wmo_rpc_max_bytes > 16 * WEIR_MIB || o->wmo_max_inflight > 1024 ||
	    o->wmo_recovery_timeout_s < WEIR_RECOVERY_FOREVER)
		return -EINVAL;
	return 0;
}

static int wc_connect(struct weir_fs *fs)
{
	Weir__ConnectReq req = WEIR__CONNECT_REQ__INIT;
	Weir__ConnectRep *rep;
	int rc;

	req.version = WC_PROTO_VERSION;
	req.client_name = fs->fs_client_name;
	req.client_uuid.data = fs->fs_client_uuid;
	req.client_uuid.len = sizeof(fs->fs_client_uuid);
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_CONNECT, &req.base, &weir__connect_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	if (!rep->root) {
		WEIR_LOG_ERROR("mds=%s: connect reply without a root FID", fs->fs_mds_addr);
		rc = -EPROTO;
	} else {
		wc_fid_from_pb(rep->root, &fs->fs_root);
		snprintf(fs->fs_name, sizeof(fs->fs_name), "%s",
			 rep->fs_name && *rep->fs_name ? rep->fs_name : "weir");
		/* the session (client/lease.c); later ones come from wc_session_lost() */
		fs->fs_session = rep->session;
		fs->fs_boot_ns = rep->boot_ns;
		fs->fs_lease_ms = rep->lease_ms;
		fs->fs_capa_ttl_s = rep->capa_ttl_s;
		fs->fs_mdl_max = rep->mdl_max;
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

/* why the last mount on this thread failed, for weir_mount_error() */
static __thread char wc_mount_err[1024];

int weir_mount_with(const char *mds_addr, const struct weir_mount_opts *opts, weir_fs_t **out)
{
	struct weir_mount_opts o;
	struct weir_fs *fs;
	char host[128];
	uint16_t port;
	int rc;

	pthread_once(&wc_log_once, wc_log_setup);
	wc_mount_err[0] = '\0';
	if (!mds_addr || !out)
		return -EINVAL;
	*out = NULL;
	if (strlen(mds_addr) >= sizeof(fs->fs_mds_addr) ||
	    weir_parse_hostport(mds_addr, host, sizeof(host), &port))
		return -EINVAL;
	rc = wc_opts_load(opts, &o);
	if (rc)
		return rc;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	pthread_mutex_init(&fs->fs_lock, NULL);
	pthread_mutex_init(&fs->fs_sess_lock, NULL);
	snprintf(fs->fs_mds_addr, sizeof(fs->fs_mds_addr), "%s", mds_addr);
	wc_recover_init(fs, o.wmo_recovery_timeout_s > 0 ? (uint32_t)o.wmo_recovery_timeout_s : 0,
			o.wmo_recovery_timeout_s < 0 ? -1 : 0);
	wc_target_init(&fs->fs_mdt, "MDT", 0, mds_addr);
	atomic_store(&fs->fs_umounting, true); /* a mount fails at once, it does not wait */
	fs->fs_rpc_timeout_ms = o.wmo_rpc_timeout_ms;
	fs->fs_rpc_max_bytes = o.wmo_rpc_max_bytes;
	fs->fs_max_inflight = o.wmo_max_inflight;
	if (o.wmo_uid || o.wmo_gid) {
		fs->fs_uid = o.wmo_uid;
		fs->fs_gid = o.wmo_gid;
	} else {
		/* every group of the process (getgroups fails on a short array),
		 * the first WC_MAX_GROUPS of them sent */
		int n = getgroups(0, NULL);
		gid_t *groups = n > 0 ? calloc((size_t)n, sizeof(*groups)) : NULL;
		n = groups ? getgroups(n, groups) : 0;
		fs->fs_uid = (uint32_t)geteuid();
		fs->fs_gid = (uint32_t)getegid();
		for (int i = 0; i < n && fs->fs_nr_groups < WC_MAX_GROUPS; i++)
			fs->fs_groups[fs->fs_nr_groups++] = (uint32_t)groups[i];
		free(groups);
	}
	if (o.wmo_client_name)
		snprintf(fs->fs_client_name, sizeof(fs->fs_client_name), "%s", o.wmo_client_name);
	else
		snprintf(fs->fs_client_name, sizeof(fs->fs_client_name), "libweir-%d",
			 (int)getpid());
	/* the mount's identity for the MDS's recovery (client/lease.c): the same
	 * uuid as its replay identity (client/recover.c, wc_recover_init above) */
	memcpy(fs->fs_client_uuid, fs->fs_uuid, sizeof(fs->fs_client_uuid));

	const char *kf = o.wmo_key_file ? o.wmo_key_file : getenv("WEIR_KEY_FILE");
	const char *ins = getenv("WEIR_INSECURE");
	bool insecure = o.wmo_insecure || (ins && !strcmp(ins, "1"));
	char why[384] = "";
	rc = net_auth_new(kf && kf[0] ? kf : NULL, insecure, &fs->fs_auth, why, sizeof(why));
	if (rc) {
		snprintf(wc_mount_err, sizeof(wc_mount_err), "no usable cluster key: %s%s", why,
			 rc == -ENOENT ? " (set WEIR_KEY_FILE, or WEIR_INSECURE=1 for a server"
					 " running --insecure)"
				       : "");
		WEIR_LOG_ERROR("mds=%s rc=%d: %s", mds_addr, rc, wc_mount_err);
		goto out_free;
	}
	rc = net_conn_open_auth(mds_addr, WEIR_MIN(o.wmo_rpc_timeout_ms, 10000U), fs->fs_auth,
				&fs->fs_mds);
	if (rc) {
		if (net_auth_last_error()[0])
			snprintf(wc_mount_err, sizeof(wc_mount_err), "%s", net_auth_last_error());
		WEIR_LOG_ERROR("mds=%s rc=%d: cannot connect%s%s", mds_addr, rc,
			       wc_mount_err[0] ? ": " : "", wc_mount_err);
		goto out_free;
	}
	rc = wc_capa_init(fs);
	if (!rc)
		rc = wc_connect(fs);
	if (rc == -ECONNRESET) {
		/* The peer hung up on our first frame: it does not speak Weir. */
		WEIR_LOG_ERROR("mds=%s: connection reset on connect; not a Weir MDS?", mds_addr);
		rc = -EPROTO;
	}
	if (rc)
		goto out_close;
	rc = wc_map_refresh(fs);
	if (rc)
		goto out_close;
	rc = wc_lease_start(fs);
	if (rc)
		goto out_close;
	/* the metadata cache (client/mdl.c): names only for a caller that checks permissions */
	fs->fs_md_paths = !o.wmo_md_no_paths;
	rc = wc_mdl_start(fs, fs->fs_mdl_max, o.wmo_md_cache != 0);
	if (rc)
		WEIR_LOG_WARN("mds=%s rc=%d: no metadata cache; every call asks the MDS", mds_addr,
			      rc);
	rc = 0;
	atomic_store(&fs->fs_umounting, false);
	WEIR_LOG_NOTICE("mds=%s fs=%s root=" WEIR_FID_F ": mounted as %s", mds_addr, fs->fs_name,
			WEIR_FID_P(&fs->fs_root), fs->fs_client_name);
	*out = fs;
	return 0;

out_close:
	net_conn_close(fs->fs_mds);
out_free:
	free(fs->fs_osts);
	while (fs->fs_oss) {
		struct wc_oss *os = fs->fs_oss;
		fs->fs_oss = os->os_next;
		pthread_mutex_destroy(&os->os_lock);
		free(os);
	}
	pthread_mutex_destroy(&fs->fs_sess_lock);
	pthread_mutex_destroy(&fs->fs_lock);
	net_auth_free(fs->fs_auth);
	wc_capa_fini(fs);
	wc_recover_fini(fs);
	free(fs);
	return rc;
}

const char *weir_mount_error(void)
{
	return wc_mount_err;
}

int weir_mount(const char *mds_addr, weir_fs_t **fs)
{
	return weir_mount_with(mds_addr, NULL, fs);
}

int weir_umount(weir_fs_t *fs)
{
	if (!fs)
		return 0;
	/* umount never waits for a server that is away: what it would send
	 * (closes, the end of the session) fails at once instead */
	atomic_store(&fs->fs_umounting, true);
	int rc = wc_files_close_all(fs);
	wc_dirs_close_all(fs);
	wc_mdl_stopping(fs); /* its poll ends with the session, below */
	wc_lease_stop(fs);   /* ends the session: its locks go now */
	wc_mdl_stop(fs);
	wc_lease_fini(fs);   /* after every thread that may reconnect has stopped */
	while (fs->fs_oss) {
		struct wc_oss *os = fs->fs_oss;
		fs->fs_oss = os->os_next;
		net_conn_close(os->os_conn);
		pthread_mutex_destroy(&os->os_lock);
		free(os);
	}
	wc_mdt_fini(fs);
	net_conn_close(fs->fs_mds);
	free(fs->fs_osts);
	pthread_mutex_destroy(&fs->fs_sess_lock);
	pthread_mutex_destroy(&fs->fs_lock);
	WEIR_LOG_INFO("mds=%s: unmounted", fs->fs_mds_addr);
	net_auth_free(fs->fs_auth);
	wc_capa_fini(fs);
	wc_recover_fini(fs);
	free(fs);
	return rc;
}
