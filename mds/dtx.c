/*
 * mds/dtx.c - changes that touch two MDTs (DNE): a remote directory's mkdir
 * and rmdir, as distributed transactions that survive a kill -9 of either
 * MDS at any step (docs/dne.md, step 3).
 *
 * DESIGN
 * The coordinator is the MDT of the name (the parent directory); the
 * participant is the MDT of the directory's inode. A transaction has an id
 * (tx) unique on its coordinator, and a record on each side, in the default
 * column family under "dtx" + u32 BE coordinator index + u64 BE tx; value:
 * u8 version 1, u8 role (1 coordinator, 2 participant), u8 op (DtxOp), u8
 * state (coordinator: 1 prepared, 2 committed; participant: 1), u32 LE the
 * other MDT, the directory's FID (16 BE), the parent's FID (16 BE).
 *
 *   coordinator                               participant
 *   1. record PREPARED, synced
 *   2. MDS_DTX_PREPARE  ───────────────────▶  mkdir: allocates the FID, makes the
 *                                            inode; rmdir: checks the directory
 *                                            empty; with its record, synced
 *                       ◀───────────────────  the inode
 *   3. under the name's and the parent's locks: the dentry made (removed),
 *      the parent's link count, and the record COMMITTED, in one batch,
 *      then synced
 *   4. MDS_DTX_RESOLVE commit ─────────────▶  mkdir: drops its record; rmdir:
 *                                            destroys the inode and drops it; synced
 *   5. record dropped
 *
 * A refusal at 2 (rmdir: -ENOTEMPTY) ends it there (the participant made
 * nothing). Any other failure leaves the coordinator's record, and the
 * thread "mds-dtx" finishes it: a PREPARED record is aborted (MDS_DTX_RESOLVE
 * abort: mkdir's inode is destroyed, rmdir's hold dropped), a COMMITTED one is
 * committed, each resent every second until the participant answers, and then
 * the record is dropped. The thread runs from the start, so a coordinator
 * killed at any step finishes what it began when it comes back. A
 * participant killed at any step has its answer or its record synced: the
 * coordinator's resend finds either. Both requests are idempotent (a tx the
 * participant no longer knows answers 0; a second PREPARE answers as the
 * first). Why each sync is needed: the coordinator's PREPARED (else a crash
 * after 2 leaves a participant's inode nobody resolves); the participant's
 * prepare (else a dentry names a lost inode); the coordinator's COMMITTED
 * before 4 (else a lost batch is aborted after the participant committed);
 * the participant's resolve (else its record comes back after the
 * coordinator dropped its own).
 *
 * Limits of this step. Any MDT coordinates the names in its directories
 * (clients reach every MDT since step 2 of docs/dne.md), but the crash
 * tests (test_dne_crash) kill only MDT0 as the coordinator. The
 * coordinator's loop thread waits for the participant's answers with the
 * name's locks held. A name whose inode is remote can only be removed
 * (rmdir) here: rename and link of it answer -EXDEV; a walk through it is
 * redirected to the other MDT (-EREMOTE, ns_walk.c).
 *
 * Fault points for the tests: WEIR_MDS_TEST_DTX_CRASH=<point> makes the MDS
 * _exit(9) the first time it reaches <point> (p_prepared, p_sent,
 * p_committed, p_resolved on the coordinator; k_prepared, k_replied (its
 * answer sent), k_resolved, k_answered on the participant); WEIR_MDS_TEST_DTX_CRASH_FILE=<file> does the same with the
 * point the file holds when the step is reached (a test arms it at will);
 * "<point> sleep <secs>" in it pauses there instead (a window widened).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define DTX_PFX "dtx"
#define DTX_KEY_LEN (3 + 4 + 8)
#define DTX_REC_VERSION 1
#define DTX_REC_LEN (4 + 4 + 16 + 16)
/* DTX_RENAME's participant record: then u8 the name's DT_* type, the name */
#define DTX_REC_MAX (DTX_REC_LEN + 1 + NS_NAME_MAX)
#define DTX_ROLE_COORD 1
#define DTX_ROLE_PART 2
#define DTX_ST_PREPARED 1
#define DTX_ST_COMMITTED 2
#define DTX_CONNECT_TIMEOUT_MS 1000
#define DTX_CALL_TIMEOUT_MS 5000
/** tx ids reserved at a time past the persisted floor (as FIDs are) */
#define DTX_TX_CHUNK (1ULL << 20)
#define DTX_FLOOR_KEY "txfloor"
#define DTX_TOMB_PFX "dty"
#define DTX_RETRY_MS 1000
/* PREPARE of a name held by another transaction: asked again this often, this many times */
#define DTX_BUSY_WAIT_MS 100
#define DTX_BUSY_TRIES 10
/** In-flight transactions the thread must leave alone (one per loop thread at most). */
#define DTX_INFLIGHT_MAX 512

struct dtx_rec {
	uint8_t dr_role, dr_op, dr_state;
	uint32_t dr_peer;
	struct weir_fid dr_fid, dr_parent;
	uint8_t dr_type;                 /* DTX_RENAME's participant: the name's */
	size_t dr_nlen;                  /* and the name (0: none) */
	char dr_name[NS_NAME_MAX + 1];
};

static const char *dtx_crash_point, *dtx_crash_file;

static struct dtx_rec dtx_rec_mk(uint8_t role, uint8_t op, uint8_t state, uint32_t peer,
				 struct weir_fid fid, struct weir_fid parent)
{
	struct dtx_rec r;
	memset(&r, 0, sizeof(r));
	r.dr_role = role;
	r.dr_op = op;
	r.dr_state = state;
	r.dr_peer = peer;
	r.dr_fid = fid;
	r.dr_parent = parent;
	return r;
}

static void dtx_crash(const char *point)
{
	char buf[32] = "";
	const char *want = dtx_crash_point;
	if (dtx_crash_file) {
		/* read at each point: a test arms it while the MDS runs */
		FILE *f = fopen(dtx_crash_file, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				buf[strcspn(buf, "\n")] = '\0';
			fclose(f);
		}
		want = buf[0] ? buf : want;
	}
	/* "POINT sleep SECS": a pause there instead (a test widens a window) */
	unsigned secs = 0;
	char pt[32] = "";
	if (want && sscanf(want, "%31s sleep %u", pt, &secs) == 2 && !strcmp(pt, point)) {
		WEIR_LOG_NOTICE("dtx: test fault point %s: pausing %u s", point, secs);
		sleep(secs);
		return;
	}
	if (want && !strcmp(want, point)) {
		WEIR_LOG_NOTICE("dtx: test fault point %s: exiting", point);
		_exit(9);
	}
}

static void dtx_key(uint32_t coord, uint64_t tx, uint8_t key[DTX_KEY_LEN])
{
	memcpy(key, DTX_PFX, 3);
	weir_put_be32(key + 3, coord);
	weir_put_be64(key + 7, tx);
}

static void dtx_put(struct kv_batch *b, uint32_t coord, uint64_t tx, const struct dtx_rec *r)
{
	uint8_t key[DTX_KEY_LEN], v[DTX_REC_MAX];
	size_t vl = DTX_REC_LEN;
	dtx_key(coord, tx, key);
	v[0] = DTX_REC_VERSION;
	v[1] = r->dr_role;
	v[2] = r->dr_op;
	v[3] = r->dr_state;
	weir_put_le32(v + 4, r->dr_peer);
	weir_fid_pack_be(&r->dr_fid, v + 8);
	weir_fid_pack_be(&r->dr_parent, v + 24);
	if (r->dr_nlen && r->dr_nlen <= NS_NAME_MAX) {
		v[vl++] = r->dr_type;
		memcpy(v + vl, r->dr_name, r->dr_nlen);
		vl += r->dr_nlen;
	}
	kv_batch_put(b, KV_CF_DEFAULT, key, sizeof(key), v, vl);
}

static void dtx_del(struct kv_batch *b, uint32_t coord, uint64_t tx)
{
	uint8_t key[DTX_KEY_LEN];
	dtx_key(coord, tx, key);
	kv_batch_del(b, KV_CF_DEFAULT, key, sizeof(key));
}

static int dtx_decode(const uint8_t *v, size_t vl, struct dtx_rec *r)
{
	if (vl < DTX_REC_LEN || vl == DTX_REC_LEN + 1 || vl > DTX_REC_MAX ||
	    v[0] != DTX_REC_VERSION)
		return -EIO;
	r->dr_nlen = vl > DTX_REC_LEN ? vl - DTX_REC_LEN - 1 : 0;
	r->dr_type = vl > DTX_REC_LEN ? v[DTX_REC_LEN] : 0;
	memcpy(r->dr_name, v + DTX_REC_LEN + 1, r->dr_nlen);
	r->dr_name[r->dr_nlen] = '\0';
	r->dr_role = v[1];
	r->dr_op = v[2];
	r->dr_state = v[3];
	r->dr_peer = weir_get_le32(v + 4);
	weir_fid_unpack_be(v + 8, &r->dr_fid);
	weir_fid_unpack_be(v + 24, &r->dr_parent);
	return 0;
}

static int dtx_get(struct mds *m, uint32_t coord, uint64_t tx, struct dtx_rec *r)
{
	uint8_t key[DTX_KEY_LEN], v[DTX_REC_MAX + 1];
	dtx_key(coord, tx, key);
	ssize_t n = kv_get(m->m_ns->ns_kv, KV_CF_DEFAULT, key, sizeof(key), v, sizeof(v));
	if (n < 0)
		return (int)n;
	return dtx_decode(v, (size_t)n, r);
}

/*
 * A RESOLVE abort of a tx the participant does not know leaves a tombstone
 * ("dty" + coordinator + tx, synced; value: u64 LE wall-clock ns of the
 * abort): a PREPARE of it still on its way (queued behind a lock, or sent
 * before the coordinator's restart) is refused (-ECANCELED) instead of
 * making what nobody would resolve. Tombstones are few (one per abort that
 * overtook its prepare) and are trimmed by the thread "mds-dtx" once older
 * than DTX_TOMB_TTL_MS: a PREPARE waits at most DTX_CALL_TIMEOUT_MS on its
 * coordinator, and one already read by this MDS is served in far less than
 * an hour. (A tombstone of an older version has a 1-byte value: trimmed at
 * the first pass.)
 */
#define DTX_TOMB_TTL_MS (3600ULL * 1000)
#define DTX_TOMB_TRIM_MS (60ULL * 1000) /* a pass at most this often (the TTL if less) */
static uint64_t dtx_tomb_ttl_ms = DTX_TOMB_TTL_MS;
static void tomb_key(uint32_t coord, uint64_t tx, uint8_t key[DTX_KEY_LEN])
{
	dtx_key(coord, tx, key);
	memcpy(key, DTX_TOMB_PFX, 3);
}

static bool tomb_has(struct mds *m, uint32_t coord, uint64_t tx)
{
	uint8_t key[DTX_KEY_LEN], v[1];
	tomb_key(coord, tx, key);
	return kv_get(m->m_ns->ns_kv, KV_CF_DEFAULT, key, sizeof(key), v, sizeof(v)) >= 0;
}

/* Commit \a b (no transno: these records are never replayed) and sync it. */
static int dtx_commit_sync(struct mds *m, struct kv_batch *b)
{
	int rc = kv_batch_commit(m->m_ns->ns_kv, b);
	kv_batch_free(b);
	return rc ? rc : kv_sync(m->m_ns->ns_kv);
}

/* ------------------------------------------------------- in-flight set */

static void inflight_add(struct mds *m, uint64_t tx)
{
	pthread_mutex_lock(&m->m_dtx_lock);
	for (int i = 0; i < DTX_INFLIGHT_MAX; i++)
		if (!m->m_dtx_inflight[i]) {
			m->m_dtx_inflight[i] = tx;
			break;
		}
	pthread_mutex_unlock(&m->m_dtx_lock);
}

static void inflight_del(struct mds *m, uint64_t tx)
{
	pthread_mutex_lock(&m->m_dtx_lock);
	for (int i = 0; i < DTX_INFLIGHT_MAX; i++)
		if (m->m_dtx_inflight[i] == tx)
			m->m_dtx_inflight[i] = 0;
	pthread_mutex_unlock(&m->m_dtx_lock);
}

static bool inflight_has(struct mds *m, uint64_t tx)
{
	bool has = false;
	pthread_mutex_lock(&m->m_dtx_lock);
	for (int i = 0; i < DTX_INFLIGHT_MAX && !has; i++)
		has = m->m_dtx_inflight[i] == tx;
	pthread_mutex_unlock(&m->m_dtx_lock);
	return has;
}

static void dtx_kick(struct mds *m)
{
	pthread_mutex_lock(&m->m_dtx_lock);
	m->m_dtx_kick = true;
	pthread_cond_broadcast(&m->m_dtx_cond);
	pthread_mutex_unlock(&m->m_dtx_lock);
}

/* ------------------------------------------------------- calls to an MDT */

static bool rc_transport(int rc, const struct net_call *call)
{
	return rc && !call->nc_rc_remote;
}

/*
 * One call to MDT \a mdt (its address from the cluster map), on a cached
 * connection; a transport failure drops the connection. \a rep_d NULL: no
 * reply body. \return 0, the peer's answer, or a transport error
 * (*remote false).
 */
static int dtx_call(struct mds *m, uint32_t mdt, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep, bool *remote)
{
	char addr[MDS_ADDR_MAX];
	struct net_conn *conn;
	struct net_call call;
	int rc;

	*remote = false;
	if (rep)
		*rep = NULL;
	pthread_mutex_lock(&m->m_cmap_lock);
	bool known = mdt < WEIR_MDT_MAX && m->m_mdts[mdt].mm_exists;
	if (known)
		snprintf(addr, sizeof(addr), "%s", m->m_mdts[mdt].mm_addr);
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (!known)
		return -ENODEV;
	pthread_mutex_lock(&m->m_dtx_lock);
	conn = m->m_dtx_conn[mdt];
	m->m_dtx_conn[mdt] = NULL; /* this call owns it; put back after */
	bool moved = conn && strcmp(m->m_dtx_addr[mdt], addr);
	snprintf(m->m_dtx_addr[mdt], sizeof(m->m_dtx_addr[mdt]), "%s", addr);
	pthread_mutex_unlock(&m->m_dtx_lock);
	if (moved) { /* the MDT moved (a failover): a connection to where it is now */
		net_conn_close(conn);
		conn = NULL;
	}
	if (!conn) {
		rc = net_conn_open(addr, DTX_CONNECT_TIMEOUT_MS, &conn);
		if (rc)
			return rc;
	}
	net_call_init(&call, op, req);
	call.nc_timeout_ms = DTX_CALL_TIMEOUT_MS;
	rc = net_call_run(conn, &call);
	*remote = call.nc_rc_remote || !rc;
	if (!rc && rep_d) {
		*rep = net_call_unpack(&call, rep_d);
		if (!*rep)
			rc = -EPROTO;
	}
	net_call_fini(&call);
	if (!rc_transport(rc, &call) || *remote) {
		pthread_mutex_lock(&m->m_dtx_lock);
		if (!m->m_dtx_conn[mdt]) {
			m->m_dtx_conn[mdt] = conn;
			conn = NULL;
		}
		pthread_mutex_unlock(&m->m_dtx_lock);
	}
	if (conn)
		net_conn_close(conn);
	return rc;
}

static int dtx_resolve_call(struct mds *m, uint32_t mdt, uint64_t tx, bool commit)
{
	Weir__DtxResolveReq req = WEIR__DTX_RESOLVE_REQ__INIT;
	bool remote;
	req.coordinator = m->m_conf.mc_mdt_index;
	req.participant = mdt;
	req.tx = tx;
	req.commit = commit;
	return dtx_call(m, mdt, WEIR__WIRE_OP__MDS_DTX_RESOLVE, &req.base, NULL, NULL, &remote);
}

/* Drop the coordinator's record of \a tx (a lost drop only resends a resolve). */
static void coord_forget(struct mds *m, uint64_t tx)
{
	struct kv_batch *b = kv_batch_new(m->m_ns->ns_kv);
	if (!b)
		return;
	dtx_del(b, m->m_conf.mc_mdt_index, tx);
	if (kv_batch_commit(m->m_ns->ns_kv, b)) {
		WEIR_LOG_WARN_RL("dtx tx=%llu: cannot drop its record (the thread resends)",
				 (unsigned long long)tx);
		dtx_kick(m);
	}
	kv_batch_free(b);
}

/*
 * Make sure tx ids up to \a tx are below the persisted floor, so a restart
 * never hands one out again (a clock that steps back included): the floor
 * moves a chunk at a time, synced.
 */
static int dtx_floor_cover(struct mds *m, uint64_t tx)
{
	int rc = 0;
	pthread_mutex_lock(&m->m_dtx_lock);
	if (tx >= m->m_dtx_floor) {
		uint8_t v[8];
		uint64_t floor = tx + DTX_TX_CHUNK;
		struct kv_batch *b = kv_batch_new(m->m_ns->ns_kv);
		weir_put_le64(v, floor);
		rc = b ? 0 : -ENOMEM;
		if (b) {
			kv_batch_put(b, KV_CF_DEFAULT, DTX_FLOOR_KEY, strlen(DTX_FLOOR_KEY), v, 8);
			rc = dtx_commit_sync(m, b);
		}
		if (!rc)
			m->m_dtx_floor = floor;
	}
	pthread_mutex_unlock(&m->m_dtx_lock);
	return rc;
}

/* ------------------------------------------------------- coordinator (ns hooks) */

static int dx_prepare(void *arg, struct ns_dtx *t)
{
	struct mds *m = arg;
	char rcs[96];
	if (t->t_mdt >= WEIR_MDT_MAX || t->t_mdt == m->m_conf.mc_mdt_index)
		return -EINVAL;
	pthread_mutex_lock(&m->m_cmap_lock);
	bool known = m->m_mdts[t->t_mdt].mm_exists;
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (!known)
		return -EINVAL; /* not an MDT of this filesystem: nothing to undo */
	if (!mds_mdt_up(m, t->t_mdt))
		return -EHOSTDOWN; /* down in the cluster map: fail now, nothing made */
	t->t_tx = atomic_fetch_add(&m->m_dtx_next, 1);
	int rc = dtx_floor_cover(m, t->t_tx);
	if (rc)
		return rc;
	inflight_add(m, t->t_tx);
	struct dtx_rec r = dtx_rec_mk(DTX_ROLE_COORD, (uint8_t)t->t_op, DTX_ST_PREPARED, t->t_mdt,
			     t->t_fid, t->t_parent);
	struct kv_batch *b = kv_batch_new(m->m_ns->ns_kv);
	if (!b) {
		inflight_del(m, t->t_tx);
		return -ENOMEM;
	}
	dtx_put(b, m->m_conf.mc_mdt_index, t->t_tx, &r);
	rc = dtx_commit_sync(m, b);
	if (rc) {
		inflight_del(m, t->t_tx);
		dtx_kick(m); /* the record may be there: the sweep aborts it */
		return rc;
	}
	dtx_crash("p_prepared");

	Weir__DtxPrepareReq req = WEIR__DTX_PREPARE_REQ__INIT;
	Weir__Fid pf = WEIR__FID__INIT, vf = WEIR__FID__INIT;
	Weir__DtxPrepareRep *rep = NULL;
	bool remote;
	req.coordinator = m->m_conf.mc_mdt_index;
	req.participant = t->t_mdt;
	req.tx = t->t_tx;
	req.op = (Weir__DtxOp)t->t_op;
	pf.seq = t->t_parent.fid_seq;
	pf.oid = t->t_parent.fid_oid;
	req.parent = &pf;
	vf.seq = t->t_fid.fid_seq;
	vf.oid = t->t_fid.fid_oid;
	req.fid = &vf;
	req.mode = t->t_mode;
	req.uid = t->t_uid;
	req.gid = t->t_gid;
	if (t->t_cred) {
		req.n_groups = t->t_cred->cr_nr_groups;
		req.groups = (uint32_t *)t->t_cred->cr_groups;
	}
	Weir__Layout dl = WEIR__LAYOUT__INIT;
	if (t->t_op == NS_DTX_MKDIR && t->t_pdir && t->t_pdir->in_has_layout) {
		dl.pattern = t->t_pdir->in_layout.lo_pattern;
		dl.stripe_size = t->t_pdir->in_layout.lo_stripe_size;
		dl.stripe_count = t->t_pdir->in_layout.lo_stripe_count;
		dl.stripe_offset = (int32_t)t->t_pdir->in_layout.lo_osts[0];
		req.dir_default = &dl;
	}
	char name[NS_NAME_MAX + 1];
	if (t->t_op == NS_DTX_RENAME) {
		snprintf(name, sizeof(name), "%.*s", (int)t->t_nlen, t->t_name);
		req.name = name;
	}
	/* a name another transaction holds (one a restart left to its
	 * coordinator's sweep, usually): asked again for a while */
	for (int busy = 0;; busy++) {
		rc = dtx_call(m, t->t_mdt, WEIR__WIRE_OP__MDS_DTX_PREPARE, &req.base,
			      &weir__dtx_prepare_rep__descriptor, (void **)&rep, &remote);
		if (rc != -EBUSY || !remote || busy >= DTX_BUSY_TRIES)
			break;
		usleep(DTX_BUSY_WAIT_MS * 1000);
	}
	if (!rc) {
		struct weir_fid f = { rep->fid ? rep->fid->seq : 0, rep->fid ? rep->fid->oid : 0 };
		bool part_in = weir_fid_mdt(&f) == (int)t->t_mdt;
		t->t_has_in = part_in && rep->inode.len;
		/* RENAME: the name's inode may be a third MDT's (no record then) */
		if (t->t_op == NS_DTX_RENAME) {
			rc = weir_fid_is_zero(&f) || (rep->type == DT_DIR) ||
					     (part_in && !rep->inode.len)
				     ? -EPROTO
				     : 0;
			memset(&t->t_in, 0, sizeof(t->t_in));
			t->t_type = (uint8_t)rep->type;
		} else {
			rc = part_in && rep->inode.len ? 0 : -EPROTO;
		}
		if (!rc && t->t_has_in)
			rc = mds_inode_decode(&f, rep->inode.data, rep->inode.len, &t->t_in);
		if (!rc && (t->t_op == NS_DTX_LINK || t->t_op == NS_DTX_UNLINK ||
			    t->t_op == NS_DTX_RMDIR) && !weir_fid_eq(&f, &t->t_fid))
			rc = -EPROTO;
		if (!rc)
			t->t_fid = f;
	}
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	bool refused = rc == -ENOTEMPTY || rc == -ENOTDIR || rc == -ENOENT || rc == -EINVAL ||
		       rc == -ENOSPC || rc == -EPERM || rc == -EACCES || rc == -ECANCELED ||
		       rc == -EXDEV || rc == -EBUSY || rc == -EISDIR || rc == -EMLINK ||
		       rc == -ENAMETOOLONG;
	if (rc && remote && refused) {
		/* refused: the participant made nothing (a failure after it wrote,
		 * -EIO of its sync, goes to the sweep's abort below) */
		coord_forget(m, t->t_tx);
		inflight_del(m, t->t_tx);
		return rc;
	}
	if (rc) {
		WEIR_LOG_WARN_RL("op=dtx_prepare mdt=%u tx=%llu rc=%s: MDT%04x did not answer;"
				 " the change is undone in the background", t->t_mdt,
				 (unsigned long long)t->t_tx, weir_rc_str(rc, rcs, sizeof(rcs)),
				 t->t_mdt);
		inflight_del(m, t->t_tx);
		dtx_kick(m);
		return rc == -ENODEV ? -EINVAL : -EHOSTDOWN;
	}
	dtx_crash("p_sent");
	return 0;
}

static void dx_commit_rec(void *arg, struct kv_batch *b, const struct ns_dtx *t)
{
	struct mds *m = arg;
	struct dtx_rec r = dtx_rec_mk(DTX_ROLE_COORD, (uint8_t)t->t_op, DTX_ST_COMMITTED, t->t_mdt,
			     t->t_fid, t->t_parent);
	dtx_put(b, m->m_conf.mc_mdt_index, t->t_tx, &r);
}

static void dx_finish(void *arg, const struct ns_dtx *t, bool committed)
{
	struct mds *m = arg;
	/* the COMMITTED batch on disk before the participant acts on it */
	int rc = committed ? mds_ns_sync(m->m_ns, NULL) : 0;
	if (!rc)
		dtx_crash("p_committed");
	if (!rc)
		rc = dtx_resolve_call(m, t->t_mdt, t->t_tx, committed);
	if (!rc) {
		dtx_crash("p_resolved");
		coord_forget(m, t->t_tx);
	}
	inflight_del(m, t->t_tx);
	if (rc)
		dtx_kick(m); /* the thread resends it */
}

static const struct ns_dtx_ops dtx_ops = {
	.dx_prepare = dx_prepare,
	.dx_commit_rec = dx_commit_rec,
	.dx_finish = dx_finish,
};

/* ------------------------------------------------------- participant */

static const char *dtx_op_name(uint8_t op)
{
	switch (op) {
	case WEIR__DTX_OP__DTX_MKDIR:
		return "mkdir";
	case WEIR__DTX_OP__DTX_RMDIR:
		return "rmdir";
	case WEIR__DTX_OP__DTX_LINK:
		return "link";
	case WEIR__DTX_OP__DTX_UNLINK:
		return "unlink";
	case WEIR__DTX_OP__DTX_RENAME:
		return "rename";
	}
	return "?";
}

/* The PREPARE's answer: \a fid, its inode (NULL: not this MDT's), the name's \a type. */
static int part_reply(struct net_req *rq, const struct weir_fid *fid, const struct mds_inode *in,
		      uint8_t type)
{
	Weir__DtxPrepareRep rep = WEIR__DTX_PREPARE_REP__INIT;
	Weir__Fid f = WEIR__FID__INIT;
	uint8_t buf[MDS_INODE_REC_MAX];
	if (in) {
		rep.inode.len = mds_inode_encode(in, buf);
		rep.inode.data = buf;
	}
	f.seq = fid->fid_seq;
	f.oid = fid->fid_oid;
	rep.fid = &f;
	rep.type = type;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
	return 0;
}

static int part_reply_inode(struct net_req *rq, const struct mds_inode *in)
{
	return part_reply(rq, &in->in_fid, in, ns_mode_to_dt(in->in_mode));
}

/* The caller's credentials a PREPARE carries (mapped by the coordinator's nodemap). */
static void part_cred(const Weir__DtxPrepareReq *req, struct mds_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	cr->cr_uid = req->uid;
	cr->cr_gid = req->gid;
	for (size_t i = 0; i < req->n_groups && i < MDS_CRED_MAX_GROUPS; i++)
		cr->cr_groups[cr->cr_nr_groups++] = req->groups[i];
}

/*
 * Commit \a b with the participant's record \a r and the hold of \a dir
 * [\a name] (ns_held()), counted once on disk; the caller holds the locks
 * the hold's checks take. \return 0 or -EIO.
 */
static int part_commit_held(struct mds_ns *ns, struct kv_batch *b,
			    const Weir__DtxPrepareReq *req, const struct dtx_rec *r,
			    const struct weir_fid *dir, const char *name, size_t nlen)
{
	dtx_put(b, req->coordinator, req->tx, r);
	ns_hold_set(b, dir, name, nlen, true);
	int rc = ns_batch_commit(ns, b);
	if (!rc)
		atomic_fetch_add(&ns->ns_holds, 1);
	return rc;
}

/* MDS_DTX_PREPARE, DTX_MKDIR: the new directory's inode, with the record. */
static int part_mkdir(struct mds *m, const Weir__DtxPrepareReq *req, struct mds_inode *in)
{
	struct mds_ns *ns = m->m_ns;
	struct weir_fid fid, parent = { req->parent ? req->parent->seq : 0,
					req->parent ? req->parent->oid : 0 };
	if (!S_ISDIR(req->mode) || weir_fid_mdt(&parent) != (int)req->coordinator)
		return -EINVAL;
	ns_change_lock(ns);
	int rc = ns_fid_alloc(ns, &fid);
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!b) {
		pthread_rwlock_unlock(&ns->ns_lock);
		return rc ? rc : -ENOMEM;
	}
	ns_inode_new(in, &fid, S_IFDIR | (req->mode & 07777));
	in->in_uid = req->uid;
	in->in_gid = req->gid;
	in->in_nlink = 2;
	in->in_parent = parent; /* on the coordinator */
	in->in_size = 4096;
	if (req->dir_default) { /* the parent's default layout (as in Lustre) */
		const Weir__Layout *dl = req->dir_default;
		in->in_has_layout = true;
		in->in_layout.lo_pattern = dl->pattern ? dl->pattern : WEIR_LAYOUT_PATTERN_RAID0;
		in->in_layout.lo_stripe_size = dl->stripe_size;
		in->in_layout.lo_stripe_count = dl->stripe_count;
		in->in_layout.lo_osts[0] = (uint32_t)dl->stripe_offset;
	}
	ns_inode_put(b, in);
	struct dtx_rec r = dtx_rec_mk(DTX_ROLE_PART, WEIR__DTX_OP__DTX_MKDIR, DTX_ST_PREPARED,
			     req->coordinator, fid, parent);
	dtx_put(b, req->coordinator, req->tx, &r);
	rc = ns_batch_commit(ns, b);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc ? rc : kv_sync(ns->ns_kv);
}

/* MDS_DTX_PREPARE, DTX_RMDIR: the directory checked empty, with the record. */
static int part_rmdir(struct mds *m, const Weir__DtxPrepareReq *req, struct mds_inode *in)
{
	struct mds_ns *ns = m->m_ns;
	struct weir_fid fid = { req->fid ? req->fid->seq : 0, req->fid ? req->fid->oid : 0 };
	struct ns_lockset ls;
	bool empty = false;
	if (weir_fid_mdt(&fid) != (int)m->m_conf.mc_mdt_index)
		return -EINVAL;
	ns_ls_init(&ls);
	ns_change_lock(ns);
	ns_ls_add_inode(&ls, &fid);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	int rc = ns_inode_get(ns, &fid, in);
	if (!rc && !S_ISDIR(in->in_mode))
		rc = -ENOTDIR;
	if (!rc && ns_held(ns, &fid, NULL, 0))
		rc = -EBUSY; /* another transaction's rmdir of it, not resolved yet */
	if (!rc)
		rc = ns_dir_is_empty(ns, &fid, &empty);
	if (!rc && !empty)
		rc = -ENOTEMPTY;
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		struct dtx_rec r = dtx_rec_mk(DTX_ROLE_PART, WEIR__DTX_OP__DTX_RMDIR, DTX_ST_PREPARED,
				     req->coordinator, fid, in->in_parent);
		/* held: no name is made in it until the outcome (creates read
		 * the hold under its inode lock, held here: ns_dir_dead()) */
		rc = part_commit_held(ns, b, req, &r, &fid, NULL, 0);
	}
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc ? rc : kv_sync(ns->ns_kv);
}

/*
 * MDS_DTX_PREPARE, DTX_LINK (\a link: the inode checked, may_linkat(), and
 * its link counted now) and DTX_UNLINK (the inode checked; its link goes at
 * the commit), with the record.
 */
static int part_link(struct mds *m, const Weir__DtxPrepareReq *req, struct mds_inode *in,
		     bool link)
{
	struct mds_ns *ns = m->m_ns;
	struct weir_fid fid = { req->fid ? req->fid->seq : 0, req->fid ? req->fid->oid : 0 };
	struct weir_fid parent = { req->parent ? req->parent->seq : 0,
				   req->parent ? req->parent->oid : 0 };
	struct ns_lockset ls;
	struct mds_cred cr;
	if (weir_fid_mdt(&fid) != (int)m->m_conf.mc_mdt_index)
		return -EINVAL;
	part_cred(req, &cr);
	ns_ls_init(&ls);
	ns_change_lock(ns);
	ns_ls_add_inode(&ls, &fid);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	int rc = ns_inode_get(ns, &fid, in);
	if (!rc && S_ISDIR(in->in_mode))
		rc = link ? -EPERM : -EISDIR;
	if (!rc && link && S_ISLNK(in->in_mode))
		rc = -EXDEV; /* a walk does not follow a symlink of another MDT */
	if (!rc && link)
		rc = ns_may_linkat(&cr, in);
	if (!rc && in->in_nlink == 0)
		rc = -ENOENT;
	if (!rc && link && in->in_nlink >= MDS_LINK_MAX)
		rc = -EMLINK;
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		if (link) {
			in->in_nlink++;
			in->in_ctime_ns = ns_now_ns();
			ns_inode_put(b, in);
		}
		struct dtx_rec r = dtx_rec_mk(DTX_ROLE_PART,
					      link ? WEIR__DTX_OP__DTX_LINK : WEIR__DTX_OP__DTX_UNLINK,
					      DTX_ST_PREPARED, req->coordinator, fid, parent);
		dtx_put(b, req->coordinator, req->tx, &r);
		rc = ns_batch_commit(ns, b);
	}
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc ? rc : kv_sync(ns->ns_kv);
}

/*
 * MDS_DTX_PREPARE, DTX_RENAME: name req->name of directory req->parent
 * checked (it exists, is not a directory nor a symlink, the caller may
 * delete it) and held, with the record. \a fid, \a type: the name's;
 * \a in: its inode when it is this MDT's (*\a has_in).
 */
static int part_rename(struct mds *m, const Weir__DtxPrepareReq *req, struct weir_fid *fid,
		       uint8_t *type, struct mds_inode *in, bool *has_in)
{
	struct mds_ns *ns = m->m_ns;
	struct weir_fid dir = { req->parent ? req->parent->seq : 0,
				req->parent ? req->parent->oid : 0 };
	const char *name = req->name ? req->name : "";
	size_t nlen = strnlen(name, NS_NAME_MAX + 1);
	struct mds_inode din;
	struct ns_lockset ls;
	struct mds_cred cr;
	*has_in = false;
	if (weir_fid_mdt(&dir) != (int)m->m_conf.mc_mdt_index || !nlen || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (nlen > NS_NAME_MAX)
		return -ENAMETOOLONG;
	part_cred(req, &cr);
	ns_ls_init(&ls);
	ns_change_lock(ns);
	ns_ls_add_name(&ls, &dir, name, nlen);
	ns_ls_lock(ns, &ls, NS_LOCK_NAME);
	int rc = ns_dentry_get_fresh(ns, &dir, name, nlen, fid, type);
	if (!rc && (*type == DT_DIR || *type == DT_LNK))
		rc = -EXDEV; /* not across MDTs yet (docs/dne.md) */
	if (!rc && ns_held(ns, &dir, name, nlen))
		rc = -EBUSY; /* another transaction moves it */
	bool local = weir_fid_mdt(fid) == (int)m->m_conf.mc_mdt_index;
	if (!rc) {
		ns_ls_add_inode(&ls, &dir);
		if (local)
			ns_ls_add_inode(&ls, fid);
		ns_ls_lock(ns, &ls, NS_LOCK_INODE);
		rc = ns_inode_get(ns, &dir, &din);
	}
	if (!rc && (!S_ISDIR(din.in_mode) || din.in_nlink == 0))
		rc = -ENOENT;
	if (!rc && local) {
		rc = ns_inode_get(ns, fid, in);
		*has_in = !rc;
	} else if (!rc) {
		/* a third MDT's inode: its owner is not known here, so the
		 * sticky-bit rule lets only the directory's owner (and root) */
		memset(in, 0, sizeof(*in));
		in->in_fid = *fid;
		in->in_mode = DTTOIF(*type);
		in->in_uid = (uint32_t)-2;
	}
	if (!rc)
		rc = mds_perm_may_delete(&cr, &din, in, false);
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		struct dtx_rec r = dtx_rec_mk(DTX_ROLE_PART, WEIR__DTX_OP__DTX_RENAME, DTX_ST_PREPARED,
				     req->coordinator, *fid, dir);
		r.dr_type = *type;
		r.dr_nlen = nlen;
		memcpy(r.dr_name, name, nlen);
		rc = part_commit_held(ns, b, req, &r, &dir, name, nlen); /* under the name's lock */
	}
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc ? rc : kv_sync(ns->ns_kv);
}

void mds_dtx_handle_prepare(struct mds *m, struct net_req *rq)
{
	Weir__DtxPrepareReq *req = net_req_unpack(rq, &weir__dtx_prepare_req__descriptor);
	struct mds_inode in;
	struct dtx_rec r;
	struct weir_fid rfid;
	uint8_t rtype = 0;
	bool has_in = false;
	int rc;
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	if (req->coordinator >= WEIR_MDT_MAX || req->coordinator == m->m_conf.mc_mdt_index ||
	    req->participant != m->m_conf.mc_mdt_index || req->tx == 0) {
		WEIR_LOG_WARN_RL("peer=%s coordinator=%u: bad DTX prepare (-EINVAL)", rq->rq_peer,
				 req->coordinator);
		rc = -EINVAL;
		goto out;
	}
	/* sent again (the answer was lost): answer as the first time */
	rc = dtx_get(m, req->coordinator, req->tx, &r);
	if (!rc) {
		struct weir_fid want = { 0, 0 };
		bool by_parent = req->op == WEIR__DTX_OP__DTX_MKDIR ||
				 req->op == WEIR__DTX_OP__DTX_RENAME;
		const Weir__Fid *wf = by_parent ? req->parent : req->fid;
		if (wf)
			want = (struct weir_fid){ wf->seq, wf->oid };
		bool same = r.dr_role == DTX_ROLE_PART && r.dr_op == req->op &&
			    weir_fid_eq(by_parent ? &r.dr_parent : &r.dr_fid, &want);
		if (same && req->op == WEIR__DTX_OP__DTX_RENAME)
			same = req->name && !strcmp(req->name, r.dr_name);
		if (same && req->op == WEIR__DTX_OP__DTX_RENAME &&
		    weir_fid_mdt(&r.dr_fid) != (int)m->m_conf.mc_mdt_index) {
			part_reply(rq, &r.dr_fid, NULL, r.dr_type);
			goto done;
		}
		rc = same ? ns_inode_get(m->m_ns, &r.dr_fid, &in) : -EPROTO;
		if (!rc) {
			if (req->op == WEIR__DTX_OP__DTX_RENAME)
				part_reply(rq, &r.dr_fid, &in, r.dr_type);
			else
				part_reply_inode(rq, &in);
			goto done;
		}
		goto out;
	}
	if (rc != -ENOENT)
		goto out;
	if (tomb_has(m, req->coordinator, req->tx)) {
		rc = -ECANCELED; /* aborted before it arrived */
		goto out;
	}
	switch (req->op) {
	case WEIR__DTX_OP__DTX_MKDIR:
		rc = part_mkdir(m, req, &in);
		break;
	case WEIR__DTX_OP__DTX_RMDIR:
		rc = part_rmdir(m, req, &in);
		break;
	case WEIR__DTX_OP__DTX_LINK:
	case WEIR__DTX_OP__DTX_UNLINK:
		rc = part_link(m, req, &in, req->op == WEIR__DTX_OP__DTX_LINK);
		break;
	case WEIR__DTX_OP__DTX_RENAME:
		rc = part_rename(m, req, &rfid, &rtype, &in, &has_in);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc)
		goto out;
	dtx_crash("k_prepared");
	if (req->op == WEIR__DTX_OP__DTX_RENAME)
		part_reply(rq, &rfid, has_in ? &in : NULL, rtype);
	else
		part_reply_inode(rq, &in);
	dtx_crash("k_replied");
	goto done;
out:
	net_req_reply(rq, rc, NULL, NULL, 0);
done:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_dtx_handle_resolve(struct mds *m, struct net_req *rq)
{
	Weir__DtxResolveReq *req = net_req_unpack(rq, &weir__dtx_resolve_req__descriptor);
	struct mds_ns *ns = m->m_ns;
	struct ns_lockset ls;
	struct dtx_rec r;
	int rc;
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	ns_ls_init(&ls);
	ns_change_lock(ns);
	rc = req->coordinator < WEIR_MDT_MAX && req->participant == m->m_conf.mc_mdt_index
		     ? dtx_get(m, req->coordinator, req->tx, &r)
		     : -EINVAL;
	if (rc == -ENOENT && !req->commit) {
		/* resolved already, or its PREPARE is still on its way: a tombstone */
		uint8_t key[DTX_KEY_LEN], when[8];
		struct kv_batch *tb = kv_batch_new(ns->ns_kv);
		tomb_key(req->coordinator, req->tx, key);
		weir_put_le64(when, weir_wall_ns());
		rc = tb ? 0 : -ENOMEM;
		if (tb) {
			kv_batch_put(tb, KV_CF_DEFAULT, key, sizeof(key), when, sizeof(when));
			rc = dtx_commit_sync(m, tb);
		}
		if (!rc)
			WEIR_LOG_NOTICE("dtx coordinator=%u tx=%llu: aborted before its PREPARE came;"
					" a tombstone refuses it", req->coordinator,
					(unsigned long long)req->tx);
		goto unlock;
	}
	if (rc == -ENOENT) {
		rc = 0; /* committed already */
		goto unlock;
	}
	if (!rc && r.dr_role != DTX_ROLE_PART)
		rc = -EPROTO;
	if (rc)
		goto unlock;
	bool rename = r.dr_op == WEIR__DTX_OP__DTX_RENAME;
	bool local = weir_fid_mdt(&r.dr_fid) == (int)m->m_conf.mc_mdt_index;
	if (rename) { /* the name's lock first (the class order), then the inodes' */
		ns_ls_add_name(&ls, &r.dr_parent, r.dr_name, r.dr_nlen);
		ns_ls_lock(ns, &ls, NS_LOCK_NAME);
		ns_ls_add_inode(&ls, &r.dr_parent);
	}
	if (local)
		ns_ls_add_inode(&ls, &r.dr_fid);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto unlock;
	}
	int64_t now = ns_now_ns();
	struct mds_inode in;
	bool hold = false;
	switch (r.dr_op) {
	case WEIR__DTX_OP__DTX_MKDIR: /* abort: the new directory goes */
	case WEIR__DTX_OP__DTX_RMDIR: /* commit: the directory goes */
		hold = r.dr_op == WEIR__DTX_OP__DTX_RMDIR;
		if (req->commit != hold)
			break;
		rc = ns_inode_get(ns, &r.dr_fid, &in);
		if (!rc)
			rc = ns_dir_release(ns, b, &in, now);
		else if (rc == -ENOENT)
			rc = 0; /* gone already */
		break;
	case WEIR__DTX_OP__DTX_LINK:   /* abort: the link counted at PREPARE goes */
	case WEIR__DTX_OP__DTX_UNLINK: /* commit: the name on the coordinator went */
		if (req->commit != (r.dr_op == WEIR__DTX_OP__DTX_UNLINK))
			break;
		rc = ns_inode_get(ns, &r.dr_fid, &in);
		if (!rc)
			rc = ns_inode_unlink(ns, b, &in, now);
		else if (rc == -ENOENT)
			rc = 0;
		break;
	case WEIR__DTX_OP__DTX_RENAME: { /* commit: the source name goes */
		struct weir_fid f;
		uint8_t t;
		hold = true;
		if (!req->commit)
			break;
		rc = ns_dentry_get_fresh(ns, &r.dr_parent, r.dr_name, r.dr_nlen, &f, &t);
		if (rc == -ENOENT || (!rc && !weir_fid_eq(&f, &r.dr_fid))) {
			rc = 0; /* (held since PREPARE: never) */
			break;
		}
		if (rc)
			break;
		ns_dentry_del(b, &r.dr_parent, r.dr_name, r.dr_nlen);
		if (!ns_inode_get(ns, &r.dr_parent, &in)) {
			in.in_mtime_ns = in.in_ctime_ns = now;
			ns_inode_put(b, &in);
		}
		if (local && !ns_inode_get(ns, &r.dr_fid, &in)) {
			in.in_ctime_ns = now; /* rename() changes the moved inode's ctime */
			ns_inode_put(b, &in);
		}
		break;
	}
	default:
		rc = -EPROTO;
		break;
	}
	/* the hold (DTX_RMDIR's: the directory), counted down only if there:
	 * a record written before holds existed has none */
	const struct weir_fid *hdir = rename ? &r.dr_parent : &r.dr_fid;
	size_t hnlen = rename ? r.dr_nlen : 0;
	hold = hold && ns_hold_present(ns, hdir, r.dr_name, hnlen);
	if (hold)
		ns_hold_set(b, hdir, r.dr_name, hnlen, false);
	dtx_del(b, req->coordinator, req->tx);
	if (rc) {
		kv_batch_free(b);
		goto unlock;
	}
	rc = ns_batch_commit(ns, b);
	if (!rc && hold)
		ns_hold_dropped(ns);
	if (!rc)
		rc = kv_sync(ns->ns_kv);
	if (!rc)
		WEIR_LOG_INFO("dtx coordinator=%u tx=%llu fid=" WEIR_FID_F ": %s %s",
			      req->coordinator, (unsigned long long)req->tx, WEIR_FID_P(&r.dr_fid),
			      dtx_op_name(r.dr_op), req->commit ? "committed" : "aborted");
unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (!rc)
		dtx_crash("k_resolved");
	net_req_reply(rq, rc, NULL, NULL, 0);
	if (!rc)
		dtx_crash("k_answered");
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------- the thread */

/* Finish every coordinator record not in flight. \return records left. */
static int dtx_sweep(struct mds *m)
{
	uint8_t pfx[7];
	memcpy(pfx, DTX_PFX, 3);
	weir_put_be32(pfx + 3, m->m_conf.mc_mdt_index);
	struct kv_iter *it = kv_iter_new(m->m_ns->ns_kv, KV_CF_DEFAULT);
	if (!it)
		return -ENOMEM;
	struct {
		uint64_t tx;
		struct dtx_rec r;
	} todo[64];
	int n = 0, left = 0;
	for (kv_iter_seek(it, pfx, sizeof(pfx)); kv_iter_valid(it) && n < 64; kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != DTX_KEY_LEN || memcmp(k, pfx, sizeof(pfx)))
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		if (dtx_decode(v, vl, &todo[n].r) || todo[n].r.dr_role != DTX_ROLE_COORD) {
			WEIR_LOG_WARN_RL("dtx: skipping a malformed record (%zu bytes)", vl);
			continue;
		}
		todo[n].tx = weir_get_be64(k + 7);
		n++;
	}
	kv_iter_free(it);
	/* a COMMITTED record acted on must be on disk (its batch may not be yet) */
	if (n && kv_sync(m->m_ns->ns_kv))
		return n;
	for (int i = 0; i < n && !atomic_load(&m->m_stop); i++) {
		if (inflight_has(m, todo[i].tx)) {
			left++;
			continue;
		}
		/* read again: a request may have moved it on since the scan, and
		 * left the in-flight set for good (a tx never comes back to it) */
		int grc = dtx_get(m, m->m_conf.mc_mdt_index, todo[i].tx, &todo[i].r);
		if (grc == -ENOENT)
			continue;
		if (grc) {
			left++;
			continue;
		}
		if (todo[i].r.dr_state == DTX_ST_COMMITTED && kv_sync(m->m_ns->ns_kv)) {
			left++;
			continue;
		}
		bool commit = todo[i].r.dr_state == DTX_ST_COMMITTED;
		int rc = dtx_resolve_call(m, todo[i].r.dr_peer, todo[i].tx, commit);
		if (rc == -ENODEV && !commit)
			rc = 0; /* an MDT the map never had: it made nothing */
		if (rc) {
			char rcs[96];
			WEIR_LOG_WARN_RL("dtx tx=%llu mdt=%u rc=%s: cannot %s it yet; retrying",
					 (unsigned long long)todo[i].tx, todo[i].r.dr_peer,
					 weir_rc_str(rc, rcs, sizeof(rcs)),
					 commit ? "commit" : "abort");
			left++;
			continue;
		}
		coord_forget(m, todo[i].tx);
		WEIR_LOG_NOTICE("dtx tx=%llu mdt=%u fid=" WEIR_FID_F ": %s %s (finished after a"
				" failure)", (unsigned long long)todo[i].tx, todo[i].r.dr_peer,
				WEIR_FID_P(&todo[i].r.dr_fid),
				dtx_op_name(todo[i].r.dr_op),
				commit ? "committed" : "aborted");
	}
	return left + (n == 64);
}

/* Drop the tombstones older than dtx_tomb_ttl_ms. \return how many. */
static unsigned tomb_trim(struct mds *m)
{
	struct kv_iter *it = kv_iter_new(m->m_ns->ns_kv, KV_CF_DEFAULT);
	struct kv_batch *b = it ? kv_batch_new(m->m_ns->ns_kv) : NULL;
	uint64_t now = weir_wall_ns(), ttl_ns = dtx_tomb_ttl_ms * 1000000ULL;
	unsigned n = 0;
	if (!b) {
		if (it)
			kv_iter_free(it);
		return 0; /* no memory now: the next pass */
	}
	for (kv_iter_seek(it, DTX_TOMB_PFX, 3); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 3 || memcmp(k, DTX_TOMB_PFX, 3))
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		uint64_t when = vl == 8 ? weir_get_le64(v) : 0;
		if (when > now || now - when < ttl_ns)
			continue;
		kv_batch_del(b, KV_CF_DEFAULT, k, kl);
		n++;
	}
	kv_iter_free(it);
	/* not synced: a trim lost to a crash is done again */
	if (n && kv_batch_commit(m->m_ns->ns_kv, b))
		n = 0;
	kv_batch_free(b);
	if (n)
		WEIR_LOG_NOTICE("dtx: %u tombstone%s older than %llu s trimmed", n, n == 1 ? "" : "s",
				(unsigned long long)(dtx_tomb_ttl_ms / 1000));
	return n;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *dtx_main(void *arg)
{
	struct mds *m = arg;
	weir_thread_name("mds-dtx");
	int left = 1;
	bool had = false; /* the last sweep left some (said in the log) */
	uint64_t trim_every = WEIR_MIN(dtx_tomb_ttl_ms, DTX_TOMB_TRIM_MS);
	uint64_t next_trim = mono_ms() + trim_every;
	pthread_mutex_lock(&m->m_dtx_lock);
	m->m_dtx_kick = true; /* a first sweep at once: what a crash left */
	while (!m->m_dtx_stop) {
		if (mono_ms() >= next_trim) {
			pthread_mutex_unlock(&m->m_dtx_lock);
			tomb_trim(m);
			next_trim = mono_ms() + trim_every;
			pthread_mutex_lock(&m->m_dtx_lock);
			continue;
		}
		if (!m->m_dtx_kick && !left) {
			/* idle: until a kick, or the next pass over the tombstones */
			struct timespec ts;
			uint64_t at = next_trim;
			ts.tv_sec = (time_t)(at / 1000);
			ts.tv_nsec = (long)(at % 1000) * 1000000L;
			pthread_cond_timedwait(&m->m_dtx_cond, &m->m_dtx_lock, &ts);
			continue;
		}
		if (!m->m_dtx_kick) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + DTX_RETRY_MS * 1000000ULL;
			ts.tv_sec += (time_t)(ns / 1000000000ULL);
			ts.tv_nsec = (long)(ns % 1000000000ULL);
			pthread_cond_timedwait(&m->m_dtx_cond, &m->m_dtx_lock, &ts);
			if (m->m_dtx_stop)
				break;
		}
		m->m_dtx_kick = false;
		pthread_mutex_unlock(&m->m_dtx_lock);
		left = dtx_sweep(m);
		if (left < 0)
			left = 1;
		if (left && !had)
			WEIR_LOG_NOTICE("dtx: %d two-MDT transaction%s to finish (retried each"
					" second)", left, left == 1 ? "" : "s");
		else if (!left && had)
			WEIR_LOG_NOTICE("dtx: every two-MDT transaction finished");
		had = left != 0;
		pthread_mutex_lock(&m->m_dtx_lock);
	}
	pthread_mutex_unlock(&m->m_dtx_lock);
	return NULL;
}

int mds_dtx_start(struct mds *m)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&m->m_dtx_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->m_dtx_cond, &ca);
	pthread_condattr_destroy(&ca);
	m->m_dtx_inited = true;
	m->m_dtx_inflight = calloc(DTX_INFLIGHT_MAX, sizeof(*m->m_dtx_inflight));
	m->m_dtx_conn = calloc(WEIR_MDT_MAX, sizeof(*m->m_dtx_conn));
	m->m_dtx_addr = calloc(WEIR_MDT_MAX, sizeof(*m->m_dtx_addr));
	if (!m->m_dtx_inflight || !m->m_dtx_conn || !m->m_dtx_addr)
		return -ENOMEM;
	/* unique across restarts: past the persisted floor (and the wall clock) */
	uint8_t fv[8];
	ssize_t fl = kv_get(m->m_ns->ns_kv, KV_CF_DEFAULT, DTX_FLOOR_KEY, strlen(DTX_FLOOR_KEY), fv,
			    sizeof(fv));
	uint64_t floor = fl == 8 ? weir_get_le64(fv) : 0;
	if (fl != 8 && fl != -ENOENT)
		return fl < 0 ? (int)fl : -EIO;
	uint64_t next = WEIR_MAX(floor, weir_wall_ns() | 1);
	atomic_store(&m->m_dtx_next, next);
	m->m_dtx_floor = next; /* the first prepare reserves a chunk */
	/* the holds of the transactions this MDT takes part in (ns_held()) */
	unsigned holds = 0;
	struct kv_iter *it = kv_iter_new(m->m_ns->ns_kv, KV_CF_DEFAULT);
	if (!it)
		return -ENOMEM;
	for (kv_iter_seek(it, "dth", 3); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 3 || memcmp(k, "dth", 3))
			break;
		holds++;
	}
	kv_iter_free(it);
	atomic_store(&m->m_ns->ns_holds, holds);
	/* tests: tombstones trimmed after this many seconds (the default: an hour) */
	const char *ttl = getenv("WEIR_MDS_TEST_DTX_TOMB_TTL_S");
	if (ttl && atoi(ttl) > 0)
		dtx_tomb_ttl_ms = (uint64_t)atoi(ttl) * 1000;
	dtx_crash_point = getenv("WEIR_MDS_TEST_DTX_CRASH");
	dtx_crash_file = getenv("WEIR_MDS_TEST_DTX_CRASH_FILE");
	mds_ns_dtx_set(m->m_ns, &dtx_ops, m);
	int rc = pthread_create(&m->m_dtx_thread, NULL, dtx_main, m);
	if (rc)
		return -rc;
	m->m_dtx_running = true;
	return 0;
}

void mds_dtx_stop(struct mds *m)
{
	if (m->m_dtx_running) {
		pthread_mutex_lock(&m->m_dtx_lock);
		m->m_dtx_stop = true;
		pthread_cond_broadcast(&m->m_dtx_cond);
		pthread_mutex_unlock(&m->m_dtx_lock);
		pthread_join(m->m_dtx_thread, NULL);
		m->m_dtx_running = false;
	}
}

void mds_dtx_fini(struct mds *m)
{
	if (!m->m_dtx_inited)
		return;
	if (m->m_dtx_conn)
		for (int i = 0; i < WEIR_MDT_MAX; i++)
			if (m->m_dtx_conn[i])
				net_conn_close(m->m_dtx_conn[i]);
	free(m->m_dtx_conn);
	m->m_dtx_conn = NULL;
	free(m->m_dtx_addr);
	m->m_dtx_addr = NULL;
	free(m->m_dtx_inflight);
	m->m_dtx_inflight = NULL;
	if (m->m_ns)
		mds_ns_dtx_set(m->m_ns, NULL, NULL);
	pthread_cond_destroy(&m->m_dtx_cond);
	pthread_mutex_destroy(&m->m_dtx_lock);
	m->m_dtx_inited = false;
}
