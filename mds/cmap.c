/*
 * mds/cmap.c - the cluster map on MDT 0 (Lustre keeps this in the MGS):
 * which OSTs exist, which OSS serves each, their space, whether they are up.
 *
 * OSSs register their OSTs at start and re-register every few seconds (the
 * heartbeat). An OST is identified by the UUID written in its directory at
 * format time and proves it is that OST with the secret kept next to it
 * (DIR/ost.secret): the MDS assigns it an index on first registration and
 * binds the index to the UUID and the SHA-256 of the secret ("bound OSTs");
 * a later registration of that UUID without the same secret is refused
 * (-EACCES), and one from another address while the OST is alive (heard from
 * within mc_ost_timeout_s) too (-EBUSY): a failover to another host is
 * accepted once the old address went silent. Nothing enters the map before
 * the secret was shown, and a refused registration changes nothing: every
 * OST of it is checked (reg_check) before any entry is made, bound or moved
 * (reg_apply). Persisted in the "cluster" column family, key "ost"
 * + u32 BE index; value version 2: u8 version, NUL-terminated UUID and
 * address, 32 bytes of SHA-256(secret). Version 1 records (no secret, made
 * before this version) are read and bound at their OST's next registration
 * (trust on first use). Space figures live in memory only (they come with
 * every heartbeat). An OST not heard from in mc_ost_timeout_s is down;
 * silence while the MDS itself was stopped does not count (ost_up_at():
 * right after a SIGSTOP the event loops may run a create before mds-lease
 * has noticed the stop and before the OSS's next heartbeat is read).
 *
 * After a restart. The OSTs of the map are down until their OSSs register
 * again (within a heartbeat, ~1 s). A create then would fail with ENOSPC
 * (none up yet) or stripe over fewer OSTs than usual, so until every OST the
 * MDT's map held at start (mo_from_mdt; an OST registering for the first
 * time is not waited for) has been heard from, or mc_ost_timeout_s after the
 * start (the time after which a silent OST counts as down anyway; at most
 * MDS_CMAP_WAIT_MAX_S), a client's create
 * that needs OSTs (mds_cmap_choose_wait, from svc.c) is parked instead:
 * mds_cmap_park() keeps the request, and the thread "mds-ostwait" (started
 * by the first park, gone once the wait is over and nothing is parked) runs
 * it again through mds_svc_handle() as soon as a registration brings the
 * last OST up, or the wait ends; then the usual rules apply (ENOSPC when no
 * OST came back). Nothing was written for a parked request (choosing the
 * OSTs is the first step of a create). Lock order: m_cmap_park_lock ->
 * m_cmap_lock (mds_cmap_park checks the wait under the park lock); a
 * registration takes the park lock only after releasing m_cmap_lock.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/key.h"
#include "common/le.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/* Most a create waits after a start for the OSTs of the map, s: below a
 * client's default RPC timeout (30 s), whatever --ost-timeout says */
#define MDS_CMAP_WAIT_MAX_S 20u

#define CMAP_REC_VERSION 2
#define CMAP_REC_VERSION_NO_SECRET 1

static void ost_key(uint32_t idx, uint8_t key[7])
{
	memcpy(key, "ost", 3);
	weir_put_be32(key + 3, idx);
}

static int ost_persist(struct mds *m, uint32_t idx)
{
	uint8_t key[7], val[1 + MDS_UUID_MAX + MDS_ADDR_MAX + 32];
	struct mds_ost *o = &m->m_osts[idx];
	ost_key(idx, key);
	size_t ul = strlen(o->mo_uuid) + 1, al = strlen(o->mo_addr) + 1;
	val[0] = CMAP_REC_VERSION;
	memcpy(val + 1, o->mo_uuid, ul);
	memcpy(val + 1 + ul, o->mo_addr, al);
	memcpy(val + 1 + ul + al, o->mo_secret_sha, 32);
	WEIR_ASSERT(o->mo_bound);
	return mds_ns_cluster_put(m->m_ns, key, sizeof(key), val, 1 + ul + al + 32);
}

static void load_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct mds *m = arg;
	const uint8_t *kb = k, *vb = v;
	if (kl != 7 || vl < 3 ||
	    (vb[0] != CMAP_REC_VERSION && vb[0] != CMAP_REC_VERSION_NO_SECRET)) {
		WEIR_LOG_WARN("cluster map: skipping a malformed OST record (%zu bytes)", vl);
		return;
	}
	uint32_t idx = weir_get_be32(kb + 3);
	if (idx >= MDS_MAX_OSTS)
		return;
	const char *uuid = (const char *)vb + 1;
	size_t ul = strnlen(uuid, vl - 1);
	if (ul + 1 >= vl || ul >= MDS_UUID_MAX)
		return;
	const char *addr = uuid + ul + 1;
	size_t al = strnlen(addr, vl - 1 - ul - 1);
	if (al >= MDS_ADDR_MAX)
		return;
	struct mds_ost *o = &m->m_osts[idx];
	size_t used = 1 + ul + 1 + al + 1;
	if (vb[0] == CMAP_REC_VERSION) {
		if (al + ul + 2 >= vl - 1 || vl < used + 32) {
			WEIR_LOG_WARN("cluster map: skipping OST %u: a version 2 record without"
				      " its secret's digest", idx);
			return;
		}
		memcpy(o->mo_secret_sha, vb + used, 32);
		o->mo_bound = true;
	}
	o->mo_exists = true;
	o->mo_from_mdt = true;
	if (idx >= m->m_osts_end)
		m->m_osts_end = idx + 1;
	memcpy(o->mo_uuid, uuid, ul + 1);
	memcpy(o->mo_addr, addr, al);
	o->mo_addr[al] = 0;
}

int mds_cmap_init(struct mds *m)
{
	pthread_mutex_init(&m->m_cmap_lock, NULL);
	pthread_mutex_init(&m->m_cmap_park_lock, NULL);
	pthread_cond_init(&m->m_cmap_park_cond, NULL);
	m->m_cmap_wait_end_ns =
		weir_now_ns() +
		(uint64_t)WEIR_MIN(m->m_conf.mc_ost_timeout_s, MDS_CMAP_WAIT_MAX_S) * 1000000000ULL;
	m->m_osts = calloc(MDS_MAX_OSTS, sizeof(*m->m_osts));
	if (!m->m_osts)
		return -ENOMEM;
	int rc = mds_ns_cluster_scan(m->m_ns, "ost", 3, load_one, m);
	int n = 0;
	for (int i = 0; i < MDS_MAX_OSTS; i++)
		n += m->m_osts[i].mo_exists;
	WEIR_LOG_NOTICE("cluster map: %d OSTs known (down until their OSS registers)", n);
	return rc;
}

void mds_cmap_fini(struct mds *m)
{
	mds_cmap_park_stop(m);
	pthread_cond_destroy(&m->m_cmap_park_cond);
	pthread_mutex_destroy(&m->m_cmap_park_lock);
	free(m->m_osts);
	m->m_osts = NULL;
	pthread_mutex_destroy(&m->m_cmap_lock);
}

/*
 * Is \a o up at \a now: heard from within the OST timeout, or within the
 * timeout before a stop of the MDS that mds-lease has not yet noticed
 * (mds_stalled_since(): its heartbeats are still queued). \a stall caches
 * that answer for a loop: UINT64_MAX before the first look.
 */
static bool ost_up_at(const struct mds *m, const struct mds_ost *o, uint64_t now,
		      uint64_t *stall)
{
	uint64_t timeout_ns = (uint64_t)m->m_conf.mc_ost_timeout_s * 1000000000ULL;
	if (!o->mo_exists || !o->mo_seen_mono_ns)
		return false;
	if (now - o->mo_seen_mono_ns < timeout_ns)
		return true;
	if (*stall == UINT64_MAX)
		*stall = mds_stalled_since(m, now);
	/* heard after mds-lease began the sleep the stop stretched: up too */
	return *stall &&
	       (o->mo_seen_mono_ns >= *stall || *stall - o->mo_seen_mono_ns < timeout_ns);
}

bool mds_cmap_ost_up(struct mds *m, const struct mds_ost *o)
{
	uint64_t stall = UINT64_MAX;
	return ost_up_at(m, o, weir_now_ns(), &stall);
}

static bool uuid_ok(const char *u)
{
	size_t l = strlen(u);
	if (l == 0 || l >= MDS_UUID_MAX)
		return false;
	for (size_t i = 0; i < l; i++)
		if (!isalnum((unsigned char)u[i]) && u[i] != '-' && u[i] != '_')
			return false;
	return true;
}

/* What the check of one registering OST decided (reg_check), for reg_apply. */
struct reg_plan {
	uint32_t rp_idx;      /* its index, found or chosen */
	bool rp_new;          /* a uuid the map does not have: make the entry */
	bool rp_bind;         /* an entry from before secrets: bind it to rp_sha (trust on first use) */
	uint8_t rp_sha[32];   /* SHA-256 of the secret it showed */
};

/* Index of the entry for \a uuid, or -1. Caller holds m_cmap_lock. */
static int cmap_find_uuid(const struct mds *m, const char *uuid)
{
	for (uint32_t i = 0; i < m->m_osts_end; i++)
		if (m->m_osts[i].mo_exists && !strcmp(m->m_osts[i].mo_uuid, uuid))
			return (int)i;
	return -1;
}

/* Whether an earlier OST of the request planned to take the new index \a idx. */
static bool plan_takes(const struct reg_plan *plan, size_t n, uint32_t idx)
{
	for (size_t j = 0; j < n; j++)
		if (plan[j].rp_new && plan[j].rp_idx == idx)
			return true;
	return false;
}

/*
 * Check every OST of a registration before anything changes, so that a
 * refused registration leaves no trace in the map (no new entry, no moved
 * address, no binding): each must show the secret its uuid was bound with,
 * and a known OST that is alive may not come from another address. New
 * OSTs get their index here. Caller holds m_cmap_lock.
 * \return 0, -EACCES (no secret, a wrong one), -EBUSY (alive elsewhere),
 *         -EINVAL (a uuid twice, an index out of range), -EEXIST (the index
 *         it remembers belongs to another uuid), -ENOSPC (the map is full).
 */
static int reg_check(struct mds *m, const Weir__OssRegisterReq *req, const char *peer,
		     struct reg_plan *plan)
{
	const char *addr = req->oss_addr;
	for (size_t i = 0; i < req->n_osts; i++) {
		const Weir__OstReg *r = req->osts[i];
		struct reg_plan *p = &plan[i];
		memset(p, 0, sizeof(*p));
		for (size_t j = 0; j < i; j++)
			if (!strcmp(req->osts[j]->uuid, r->uuid)) {
				WEIR_LOG_WARN_RL("peer=%s uuid=%s addr=%s: OST registration refused:"
						 " the same uuid twice (-EINVAL)", peer, r->uuid,
						 addr);
				return -EINVAL;
			}
		if (r->secret.len != 32) {
			WEIR_LOG_WARN_RL("peer=%s uuid=%s addr=%s: OST registration refused: %s"
					 " (-EACCES)", peer, r->uuid, addr,
					 r->secret.len ? "an OST secret that is not 32 bytes"
						       : "no OST secret (an OSS older than this MDS?)");
			return -EACCES;
		}
		weir_sha256(r->secret.data, 32, p->rp_sha);
		int found = cmap_find_uuid(m, r->uuid);
		if (found >= 0) {
			const struct mds_ost *o = &m->m_osts[found];
			if (o->mo_bound && !weir_mem_equal_ct(p->rp_sha, o->mo_secret_sha, 32)) {
				WEIR_LOG_WARN_RL("ost=%d uuid=%s peer=%s addr=%s: OST registration"
						 " refused: the secret is not the one this OST was"
						 " bound with (-EACCES)", found, r->uuid, peer, addr);
				return -EACCES;
			}
			if (strcmp(o->mo_addr, addr) && mds_cmap_ost_up(m, o)) {
				WEIR_LOG_WARN_RL("ost=%d uuid=%s peer=%s: OST registration from %s"
						 " refused: the OST is alive at %s (heard from within"
						 " %us) (-EBUSY)", found, r->uuid, peer, addr,
						 o->mo_addr, m->m_conf.mc_ost_timeout_s);
				return -EBUSY;
			}
			p->rp_idx = (uint32_t)found;
			p->rp_bind = !o->mo_bound;
			continue;
		}
		p->rp_new = true;
		if (r->index >= 0) {
			/* the OST remembers an index this MDT does not: adopt it if free */
			if (r->index >= MDS_MAX_OSTS) {
				WEIR_LOG_WARN_RL("peer=%s uuid=%s ost=%d: OST registration refused:"
						 " index out of range (-EINVAL)", peer, r->uuid,
						 r->index);
				return -EINVAL;
			}
			if (m->m_osts[r->index].mo_exists || plan_takes(plan, i, (uint32_t)r->index)) {
				WEIR_LOG_ERROR_RL("ost=%d uuid=%s addr=%s: index already belongs to"
						  " another OST (uuid=%s); refusing registration",
						  r->index, r->uuid, addr,
						  m->m_osts[r->index].mo_exists
							  ? m->m_osts[r->index].mo_uuid
							  : "in the same registration");
				return -EEXIST;
			}
			p->rp_idx = (uint32_t)r->index;
			continue;
		}
		uint32_t k = 0;
		while (k < MDS_MAX_OSTS && (m->m_osts[k].mo_exists || plan_takes(plan, i, k)))
			k++;
		if (k == MDS_MAX_OSTS)
			return -ENOSPC;
		p->rp_idx = k;
	}
	return 0;
}

/*
 * Make the entry of a new OST, or bind an OST known from before secrets,
 * as reg_check() planned. Caller holds m_cmap_lock. \return 0 or -errno.
 */
static int reg_apply(struct mds *m, const Weir__OstReg *r, const char *addr,
		     const struct reg_plan *p)
{
	struct mds_ost *o = &m->m_osts[p->rp_idx];
	int rc;
	if (p->rp_new) {
		memset(o, 0, sizeof(*o));
		o->mo_exists = true;
		snprintf(o->mo_uuid, sizeof(o->mo_uuid), "%s", r->uuid);
		snprintf(o->mo_addr, sizeof(o->mo_addr), "%s", addr);
		memcpy(o->mo_secret_sha, p->rp_sha, 32);
		o->mo_bound = true;
		rc = ost_persist(m, p->rp_idx);
		if (rc) {
			o->mo_exists = false;
			return rc;
		}
		if (p->rp_idx >= m->m_osts_end)
			m->m_osts_end = p->rp_idx + 1;
		WEIR_LOG_NOTICE("ost=%u uuid=%s addr=%s: new OST added to the cluster map, bound"
				" to its secret", p->rp_idx, r->uuid, addr);
		m->m_cmap_gen++;
		return 0;
	}
	if (p->rp_bind) {
		memcpy(o->mo_secret_sha, p->rp_sha, 32);
		o->mo_bound = true;
		rc = ost_persist(m, p->rp_idx);
		if (rc) {
			o->mo_bound = false;
			return rc;
		}
		WEIR_LOG_NOTICE("ost=%u uuid=%s addr=%s: bound to the secret it showed (an OST"
				" known from before secrets: trust on first use)", p->rp_idx,
				r->uuid, addr);
	}
	return 0;
}

void mds_cmap_handle_register(struct mds *m, struct net_req *rq)
{
	Weir__OssRegisterReq *req = net_req_unpack(rq, &weir__oss_register_req__descriptor);
	Weir__OssRegisterRep rep = WEIR__OSS_REGISTER_REP__INIT;
	uint32_t idx[64], throttle[64] = { 0 };
	struct reg_plan plan[64];
	int rc = 0;
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	if (m->m_conf.mc_mdt_index != 0) {
		WEIR_LOG_WARN_RL("peer=%s addr=%.64s: OSS registration sent to MDT%04x refused:"
				 " OSSs register with MDT0 (--mds of weir-oss) (-EINVAL)",
				 rq->rq_peer, req->oss_addr, m->m_conf.mc_mdt_index);
		rc = -EINVAL;
		goto out;
	}
	char host[MDS_ADDR_MAX];
	uint16_t port;
	if (req->n_osts == 0 || req->n_osts > 64 || strlen(req->oss_addr) >= MDS_ADDR_MAX ||
	    weir_parse_hostport(req->oss_addr, host, sizeof(host), &port) || port == 0) {
		WEIR_LOG_WARN_RL("peer=%s addr=%.64s osts=%zu: bad OSS registration", rq->rq_peer,
				 req->oss_addr, req->n_osts);
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < req->n_osts; i++)
		if (!uuid_ok(req->osts[i]->uuid)) {
			WEIR_LOG_WARN_RL("peer=%s: bad OST uuid in registration", rq->rq_peer);
			rc = -EINVAL;
			goto out;
		}
	pthread_mutex_lock(&m->m_cmap_lock);
	rc = reg_check(m, req, rq->rq_peer, plan);
	for (size_t i = 0; i < req->n_osts && !rc; i++) {
		const Weir__OstReg *r = req->osts[i];
		rc = reg_apply(m, r, req->oss_addr, &plan[i]);
		if (rc)
			break;
		idx[i] = plan[i].rp_idx;
		struct mds_ost *o = &m->m_osts[idx[i]];
		bool was_up = mds_cmap_ost_up(m, o);
		if (strcmp(o->mo_addr, req->oss_addr)) {
			WEIR_LOG_NOTICE("ost=%u uuid=%s: moved from %s to %s", idx[i], o->mo_uuid,
					o->mo_addr, req->oss_addr);
			snprintf(o->mo_addr, sizeof(o->mo_addr), "%s", req->oss_addr);
			rc = ost_persist(m, idx[i]);
			m->m_cmap_gen++;
		}
		o->mo_total = r->total_bytes;
		o->mo_free = r->free_bytes;
		o->mo_avail = r->avail_bytes;
		o->mo_files = r->files;
		o->mo_files_free = r->files_free;
		o->mo_fs_id = r->fs_id;
		throttle[i] = o->mo_throttle_ms; /* set by the HSM policy (mds/hsm_policy.c) */
		/* up only once the OSS serves the OST under this index: a first
		 * registration (index -1) is answered, and the OSS registers again */
		if (r->index < 0 || (uint32_t)r->index != idx[i])
			continue;
		o->mo_seen_mono_ns = weir_now_ns();
		o->mo_seen_wall_ns = (int64_t)weir_wall_ns();
		if (!was_up) {
			WEIR_LOG_NOTICE("ost=%u uuid=%s addr=%s: up", idx[i], o->mo_uuid, o->mo_addr);
			m->m_cmap_gen++;
		}
	}
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (!rc) {
		/* parked creates look again (a leaf lock, taken alone) */
		pthread_mutex_lock(&m->m_cmap_park_lock);
		pthread_cond_broadcast(&m->m_cmap_park_cond);
		pthread_mutex_unlock(&m->m_cmap_park_lock);
		rep.n_indexes = req->n_osts;
		rep.indexes = idx;
		rep.n_throttle_ms = req->n_osts;
		rep.throttle_ms = throttle;
		mds_capa_fill_reg(m, &rep); /* OSSs check the capabilities it signs */
		mds_destroy_kick(m);
	}
out:
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

int mds_cmap_map_build(struct mds *m, void *mapv)
{
	Weir__ClusterMap *map = mapv;
	Weir__OstInfo *infos = NULL, **ptrs = NULL;
	struct mds_space self;
	weir__cluster_map__init(map);
	mds_mdt_space(m, &self); /* a statvfs and a RocksDB estimate: not under the lock */
	pthread_mutex_lock(&m->m_cmap_lock);
	size_t n = 0;
	for (int i = 0; i < MDS_MAX_OSTS; i++)
		n += m->m_osts[i].mo_exists;
	infos = calloc(n ? n : 1, sizeof(*infos));
	ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		pthread_mutex_unlock(&m->m_cmap_lock);
		free(infos);
		free(ptrs);
		return -ENOMEM;
	}
	int rc = 0;
	size_t j = 0;
	for (uint32_t i = 0; i < MDS_MAX_OSTS && j < n; i++) {
		struct mds_ost *o = &m->m_osts[i];
		if (!o->mo_exists)
			continue;
		Weir__OstInfo *oi = &infos[j];
		weir__ost_info__init(oi);
		oi->index = i;
		oi->uuid = strdup(o->mo_uuid);
		oi->oss_addr = strdup(o->mo_addr);
		ptrs[j++] = oi;
		if (!oi->uuid || !oi->oss_addr) {
			rc = -ENOMEM;
			break;
		}
		oi->total_bytes = o->mo_total;
		oi->free_bytes = o->mo_free;
		oi->avail_bytes = o->mo_avail;
		oi->files = o->mo_files;
		oi->files_free = o->mo_files_free;
		oi->state = mds_cmap_ost_up(m, o) ? WEIR__TARGET_STATE__TS_UP
						  : WEIR__TARGET_STATE__TS_DOWN;
		oi->last_seen_ns = o->mo_seen_wall_ns;
	}
	if (!j)
		free(infos); /* else freed through ptrs[0] (mds_cmap_map_free) */
	map->gen = m->m_cmap_gen;
	map->n_osts = j;
	map->osts = ptrs;
	if (!rc)
		rc = mds_mdt_map_fill(m, map, &self); /* the MDTs (mds/mdt_reg.c) */
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (rc)
		mds_cmap_map_free(map);
	return rc;
}

void mds_cmap_map_free(void *mapv)
{
	Weir__ClusterMap *map = mapv;
	for (size_t k = 0; k < map->n_osts; k++) {
		free(map->osts[k]->uuid);
		free(map->osts[k]->oss_addr);
	}
	if (map->n_osts)
		free(map->osts[0]); /* the OstInfo array */
	free(map->osts);
	map->osts = NULL;
	map->n_osts = 0;
	mds_mdt_map_free(map);
}

void mds_cmap_handle_get(struct mds *m, struct net_req *rq)
{
	Weir__ClusterMap map;
	/* built under the lock, answered outside it (a slow client must not stall creates) */
	int rc = mds_cmap_map_build(m, &map);
	net_req_reply(rq, rc, rc ? NULL : &map.base, NULL, 0);
	if (!rc)
		mds_cmap_map_free(&map);
}

int mds_cmap_choose(void *arg, struct weir_layout *lo, int32_t stripe_offset)
{
	struct mds *m = arg;
	uint32_t up[MDS_MAX_OSTS], nr_up = 0, nr_exist = 0;
	pthread_mutex_lock(&m->m_cmap_lock);
	/* only the slots in use: each is a few hundred bytes, 1024 of them per create cost */
	uint64_t now = weir_now_ns(), stall = UINT64_MAX;
	for (uint32_t i = 0; i < m->m_osts_end; i++) {
		if (!m->m_osts[i].mo_exists)
			continue;
		nr_exist++;
		if (ost_up_at(m, &m->m_osts[i], now, &stall))
			up[nr_up++] = i;
	}
	uint32_t count = lo->lo_stripe_count;
	int rc = 0;
	/* the arguments first, as a syscall checks them: an OST that does not exist */
	if (stripe_offset >= 0 &&
	    (stripe_offset >= MDS_MAX_OSTS || !m->m_osts[stripe_offset].mo_exists)) {
		WEIR_LOG_INFO("op=create ost=%d: no such OST; refused", stripe_offset);
		rc = -EINVAL;
		goto out;
	}
	if (nr_up == 0) {
		WEIR_LOG_WARN("op=create: no OST is up; cannot place a new file");
		rc = -ENOSPC;
		goto out;
	}
	if (count == UINT32_MAX)
		count = WEIR_MIN(nr_up, WEIR_LAYOUT_MAX_STRIPES);
	if (count > WEIR_LAYOUT_MAX_STRIPES || count > nr_exist) {
		rc = -EINVAL;
		goto out;
	}
	if (count > nr_up) {
		WEIR_LOG_INFO("op=create: %u stripes asked, %u OSTs up: striping over %u", count,
			      nr_up, nr_up);
		count = nr_up;
	}
	uint32_t start;
	if (stripe_offset >= 0) {
		start = 0;
		while (start < nr_up && up[start] < (uint32_t)stripe_offset)
			start++;
		if (start == nr_up)
			start = 0;
	} else {
		start = m->m_rr++ % nr_up;
	}
	lo->lo_stripe_count = count;
	for (uint32_t i = 0; i < count; i++)
		lo->lo_osts[i] = up[(start + i) % nr_up];
out:
	pthread_mutex_unlock(&m->m_cmap_lock);
	return rc;
}

void mds_cmap_stalled(struct mds *m, uint64_t last_ns, uint64_t now_ns)
{
	uint64_t timeout_ns = (uint64_t)m->m_conf.mc_ost_timeout_s * 1000000000ULL;
	pthread_mutex_lock(&m->m_cmap_lock);
	for (uint32_t i = 0; i < m->m_osts_end; i++) {
		struct mds_ost *o = &m->m_osts[i];
		/* heard since \a last_ns too (before the stop began) */
		if (o->mo_exists && o->mo_seen_mono_ns &&
		    (o->mo_seen_mono_ns >= last_ns || last_ns - o->mo_seen_mono_ns < timeout_ns) &&
		    o->mo_seen_mono_ns < now_ns)
			o->mo_seen_mono_ns = now_ns;
	}
	pthread_mutex_unlock(&m->m_cmap_lock);
}

/* ------------------------------------------------ creates after a restart */

/* One parked request (mds_cmap_park). */
struct mds_cmap_park {
	struct net_req *cp_rq;
	struct mds_xid cp_xid; /* its replay prefix: the rerun records its reply */
	struct mds_cmap_park *cp_next;
};

/*
 * Whether creates still wait for the OSTs the map knew at start: some OST
 * has not been heard from since, and the wait has not ended.
 * \param[out] missing  How many (may be NULL).
 */
static bool cmap_waiting(struct mds *m, uint32_t *missing)
{
	uint32_t n = 0;
	if (weir_now_ns() >= m->m_cmap_wait_end_ns)
		return false;
	pthread_mutex_lock(&m->m_cmap_lock);
	for (uint32_t i = 0; i < m->m_osts_end; i++)
		n += m->m_osts[i].mo_exists && m->m_osts[i].mo_from_mdt &&
		     !m->m_osts[i].mo_seen_mono_ns;
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (missing)
		*missing = n;
	return n > 0;
}

int mds_cmap_choose_wait(void *arg, struct weir_layout *lo, int32_t stripe_offset)
{
	struct mds *m = arg;
	/* an OST that does not exist is refused at once (mds_cmap_choose's first check) */
	bool known = true;
	if (stripe_offset >= 0) {
		pthread_mutex_lock(&m->m_cmap_lock);
		known = stripe_offset < MDS_MAX_OSTS && m->m_osts[stripe_offset].mo_exists;
		pthread_mutex_unlock(&m->m_cmap_lock);
	}
	/* never while stopping: mds_cmap_park() refuses then, and the create would loop */
	if (known && !atomic_load(&m->m_stop) && cmap_waiting(m, NULL))
		return MDS_RC_PARK;
	return mds_cmap_choose(arg, lo, stripe_offset);
}

/* Run parked requests again, in arrival order. Without the park lock. */
static void cmap_park_run(struct mds_cmap_park *list, int rc)
{
	while (list) {
		struct mds_cmap_park *p = list;
		list = p->cp_next;
		if (rc)
			net_req_reply(p->cp_rq, rc, NULL, NULL, 0);
		else
			mds_svc_rerun(p->cp_rq, &p->cp_xid); /* may park it again */
		free(p);
	}
}

static void *cmap_park_main(void *arg)
{
	struct mds *m = arg;
	pthread_mutex_lock(&m->m_cmap_park_lock);
	for (;;) {
		if (m->m_cmap_park_stop)
			break;
		uint32_t missing = 0;
		pthread_mutex_unlock(&m->m_cmap_park_lock);
		bool waiting = cmap_waiting(m, &missing);
		pthread_mutex_lock(&m->m_cmap_park_lock);
		if (!waiting && m->m_cmap_parked) {
			struct mds_cmap_park *list = m->m_cmap_parked;
			m->m_cmap_parked = NULL;
			pthread_mutex_unlock(&m->m_cmap_park_lock);
			WEIR_LOG_NOTICE("op=create: %s; parked creates go on",
					missing ? "the wait for the OSTs is over"
						: "every OST of the cluster map is back");
			cmap_park_run(list, 0);
			pthread_mutex_lock(&m->m_cmap_park_lock);
			continue;
		}
		if (!waiting && weir_now_ns() >= m->m_cmap_wait_end_ns)
			break; /* parks are refused from now on: mds_cmap_park says -EAGAIN */
		/* a registration broadcasts; the end of the wait is a timeout */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&m->m_cmap_park_cond, &m->m_cmap_park_lock, &ts);
	}
	pthread_mutex_unlock(&m->m_cmap_park_lock);
	return NULL;
}

int mds_cmap_park(struct mds *m, struct net_req *rq)
{
	uint32_t missing = 0;
	struct mds_cmap_park *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cp_rq = rq;
	const struct mds_xid *x = mds_svc_cur_xid();
	if (x)
		p->cp_xid = *x;
	pthread_mutex_lock(&m->m_cmap_park_lock);
	/* decided under the park lock: the thread leaves only after the wait,
	 * holding it, so a request parked here is always run again */
	if (m->m_cmap_park_stop || !cmap_waiting(m, &missing)) {
		pthread_mutex_unlock(&m->m_cmap_park_lock);
		free(p);
		return -EAGAIN;
	}
	if (!m->m_cmap_park_running) {
		if (pthread_create(&m->m_cmap_park_thread, NULL, cmap_park_main, m)) {
			pthread_mutex_unlock(&m->m_cmap_park_lock);
			free(p);
			return -EAGAIN; /* no thread: placed on what is up, as before */
		}
		pthread_setname_np(m->m_cmap_park_thread, "mds-ostwait");
		m->m_cmap_park_running = true;
		WEIR_LOG_NOTICE("op=create osts_missing=%u: creates wait (up to %us after the"
				" start) for the OSTs of the cluster map to register again",
				missing, m->m_conf.mc_ost_timeout_s);
	}
	struct mds_cmap_park **pp = &m->m_cmap_parked;
	while (*pp)
		pp = &(*pp)->cp_next;
	*pp = p;
	pthread_mutex_unlock(&m->m_cmap_park_lock);
	return 0;
}

void mds_cmap_park_stop(struct mds *m)
{
	if (!m->m_osts)
		return; /* fini ran already */
	pthread_mutex_lock(&m->m_cmap_park_lock);
	m->m_cmap_park_stop = true;
	struct mds_cmap_park *list = m->m_cmap_parked;
	m->m_cmap_parked = NULL;
	bool join = m->m_cmap_park_running;
	m->m_cmap_park_running = false;
	pthread_cond_broadcast(&m->m_cmap_park_cond);
	pthread_mutex_unlock(&m->m_cmap_park_lock);
	if (join)
		pthread_join(m->m_cmap_park_thread, NULL);
	cmap_park_run(list, -ESHUTDOWN);
}

int mds_cmap_ost_addr(struct mds *m, uint32_t idx, char *addr, size_t len)
{
	int rc = 0;
	if (idx >= MDS_MAX_OSTS)
		return -ENODEV;
	pthread_mutex_lock(&m->m_cmap_lock);
	struct mds_ost *o = &m->m_osts[idx];
	if (!o->mo_exists)
		rc = -ENODEV;
	else if (!mds_cmap_ost_up(m, o))
		rc = -EHOSTDOWN;
	else
		snprintf(addr, len, "%s", o->mo_addr);
	pthread_mutex_unlock(&m->m_cmap_lock);
	return rc;
}

/*
 * The first up OST before \a i on the same filesystem as OST \a i (same
 * OSS host, same device), or -1. Under m_cmap_lock.
 */
static int cmap_fs_first(struct mds *m, uint32_t i)
{
	const struct mds_ost *o = &m->m_osts[i];
	const char *colon = strrchr(o->mo_addr, ':');
	size_t hl = colon ? (size_t)(colon - o->mo_addr) : strlen(o->mo_addr);

	if (!o->mo_fs_id)
		return -1;
	for (uint32_t j = 0; j < i; j++) {
		const struct mds_ost *p = &m->m_osts[j];
		if (p->mo_exists && p->mo_fs_id == o->mo_fs_id && mds_cmap_ost_up(m, p) &&
		    !strncmp(p->mo_addr, o->mo_addr, hl) && p->mo_addr[hl] == ':')
			return (int)j;
	}
	return -1;
}

void mds_statfs_row(void *tv, char *name, bool is_mdt, uint32_t idx,
		    const struct mds_space *sp, const char *addr)
{
	Weir__TargetStat *t = tv;
	weir__target_stat__init(t);
	snprintf(name, 16, "%s%04x", is_mdt ? "MDT" : "OST", idx);
	t->name = name;
	t->index = idx;
	t->is_mdt = is_mdt;
	t->total_bytes = sp->sp_total;
	t->free_bytes = sp->sp_free;
	t->avail_bytes = sp->sp_avail;
	t->files = sp->sp_files;
	t->files_free = sp->sp_files_free;
	t->oss_addr = addr && *addr ? strdup(addr) : NULL;
	if (!t->oss_addr)
		t->oss_addr = (char *)"";
}

int mds_cmap_statfs(struct mds *m, void *repv)
{
	Weir__StatfsRep *rep = repv;
	size_t n = 1;
	struct mds_space sp;
	mds_mdt_space(m, &sp); /* this MDT's: a statvfs, not under the lock */
	pthread_mutex_lock(&m->m_cmap_lock);
	for (int i = 0; i < MDS_MAX_OSTS; i++)
		n += m->m_osts[i].mo_exists;
	for (int i = 0; i < WEIR_MDT_MAX; i++) /* the other MDTs (mds/mdt_reg.c) */
		n += m->m_mdts[i].mm_exists && i != (int)m->m_conf.mc_mdt_index;
	Weir__TargetStat *ts = calloc(n, sizeof(*ts));
	Weir__TargetStat **tp = calloc(n, sizeof(*tp));
	char *names = calloc(n, 16);
	if (!ts || !tp || !names) {
		pthread_mutex_unlock(&m->m_cmap_lock);
		free(ts);
		free(tp);
		free(names);
		return -ENOMEM;
	}
	/* this MDT */
	mds_statfs_row(&ts[0], names, true, m->m_conf.mc_mdt_index, &sp, NULL);
	mds_recovery_statfs(m, &ts[0]); /* the recovery window, while it lasts */
	ts[0].state = WEIR__TARGET_STATE__TS_UP;
	tp[0] = &ts[0];
	rep->files = ts[0].files;
	rep->files_free = ts[0].files_free;
	size_t j = 1;
	/* the other MDTs, as their heartbeats said: the filesystem's inodes are all of theirs */
	size_t nm = mds_mdt_statfs_rows(m, ts + 1, (void **)(tp + 1), names + 16);
	for (size_t k = 1; k <= nm; k++) {
		if (tp[k]->state == WEIR__TARGET_STATE__TS_UP) {
			rep->files += tp[k]->files;
			rep->files_free += tp[k]->files_free;
		}
	}
	j += nm;
	for (uint32_t i = 0; i < MDS_MAX_OSTS && j < n; i++) {
		struct mds_ost *o = &m->m_osts[i];
		if (!o->mo_exists)
			continue;
		Weir__TargetStat *t = &ts[j];
		struct mds_space osp = { o->mo_total, o->mo_free, o->mo_avail, o->mo_files,
					 o->mo_files_free };
		mds_statfs_row(t, names + 16 * j, false, i, &osp, o->mo_addr);
		bool up = mds_cmap_ost_up(m, o);
		t->state = up ? WEIR__TARGET_STATE__TS_UP : WEIR__TARGET_STATE__TS_DOWN;
		int first = up ? cmap_fs_first(m, i) : -1;
		if (first >= 0) {
			/* its space is that of OST first: counted once */
			t->fs_shared_with = (uint32_t)first + 1;
			rep->nr_osts++;
		} else if (up) {
			rep->total_bytes += o->mo_total;
			rep->free_bytes += o->mo_free;
			rep->avail_bytes += o->mo_avail;
			rep->nr_osts++;
		}
		tp[j++] = t;
	}
	pthread_mutex_unlock(&m->m_cmap_lock);
	rep->namelen = 255;
	rep->n_targets = j;
	rep->targets = tp;
	return 0;
}

void mds_cmap_statfs_free(void *repv)
{
	Weir__StatfsRep *rep = repv;
	if (!rep->targets)
		return;
	for (size_t i = 1; i < rep->n_targets; i++)
		if (rep->targets[i]->oss_addr && rep->targets[i]->oss_addr[0])
			free(rep->targets[i]->oss_addr);
	free(rep->targets[0]->name); /* the names block */
	free(rep->targets[0]);      /* the TargetStat array */
	free(rep->targets);
	rep->targets = NULL;
}
