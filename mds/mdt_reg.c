/*
 * mds/mdt_reg.c - several MDTs (DNE): MDTs other than MDT0 join the cluster
 * through MDT0, which holds the cluster map (as Lustre's MGS does).
 *
 * DESIGN (docs/dne.md has the whole plan; this file is its first step)
 * - Identity. An MDT is formatted with its index (--mdt-index, kept in the
 *   MDT: ns_store.c refuses to open it under another). An MDT k > 0 also
 *   makes, at its first start, a uuid (32 hex digits) and a 32-byte secret,
 *   kept in its "cluster" column family (key "mdtident": u8 version 1,
 *   NUL-terminated uuid, secret). MDT0 needs neither: it is the map.
 * - Registration. The MDS of MDT k sends MDS_MDT_REGISTER {index, uuid,
 *   secret, its address, its space and inode figures, fsname} to MDT0's MDS
 *   (--mgs) at start and every heartbeat, on the cluster key's
 *   authenticated connection. The first registration of an index binds it
 *   to the uuid and the SHA-256 of the secret (persisted on MDT0: key "mdt"
 *   + u32 BE index; value: u8 version 1, NUL-terminated uuid and address,
 *   32 bytes of SHA-256). A later one must show the same uuid (-EEXIST:
 *   the index belongs to another MDT) and secret (-EACCES), and may come
 *   from another address only once the MDT has been silent for
 *   mc_ost_timeout_s (-EBUSY: a failover is accepted, a duplicate is not).
 *   A refused registration changes nothing.
 * - The reply carries MDT0's cluster map (its OSTs with their OSS
 *   addresses, states and space; the MDTs) and the OST capability key. MDT k
 *   serves with that copy: it chooses OSTs for the files it creates from it,
 *   sends its destroys to the OSS addresses in it, and signs OST
 *   capabilities with the same key (the OSSs know one key). An OST that MDT0
 *   said is up counts as up on MDT k for mc_ost_timeout_s after the
 *   registration that said so; OSSs register with MDT0 only (an OSS
 *   registration sent to MDT k is refused with -EINVAL).
 * - Start. MDT k does not serve before its first registration succeeded
 *   (it has no OST map and no key before): mds_mgc_start() retries each
 *   second for up to MDS_MGC_START_WAIT_S, then fails the start with a clear
 *   message. Afterwards a silent MDT0 only makes MDT k log (rate-limited)
 *   and keep its last map, whose OSTs go down after mc_ost_timeout_s.
 * - What is not done yet: clients reach only MDT0 (remote directories are
 *   made and removed through MDT0: mds/dtx.c; nothing else is created on
 *   MDT k), and MDT0 does not wait for MDT k's recovery. Both come with the
 *   next steps of docs/dne.md.
 * Locks: the MDT table lives under m_cmap_lock (with the OSTs); m_mgc_lock
 * is a leaf that guards only the thread's stop flag.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/key.h"
#include "common/le.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define MDT_REC_VERSION 1
#define MDT_IDENT_KEY "mdtident"
#define MDT_IDENT_VERSION 1
/** How long an MDT k > 0 waits at start for MDT0 to take its registration, s. */
#define MDS_MGC_START_WAIT_S 60
#define MGC_CONNECT_TIMEOUT_MS 1000
#define MGC_CALL_TIMEOUT_MS 5000
/** Heartbeat of MDT k, ms (shorter when mc_ost_timeout_s is short: a third of it). */
#define MGC_HEARTBEAT_MS 2000u

/* ------------------------------------------------------------ MDT0's side */

/* The heartbeat MDT0 wants (a third of its timeout, at most 2 s). */
static uint32_t mdt_period_ms(const struct mds *m)
{
	uint32_t third = m->m_conf.mc_ost_timeout_s * 1000u / 3;
	return WEIR_MAX(WEIR_MIN(MGC_HEARTBEAT_MS, third), 100u);
}


static void mdt_key(uint32_t idx, uint8_t key[7])
{
	memcpy(key, "mdt", 3);
	weir_put_be32(key + 3, idx);
}

static int mdt_persist(struct mds *m, uint32_t idx)
{
	uint8_t key[7], val[1 + sizeof(m->m_mdts->mm_uuid) + MDS_ADDR_MAX + 32];
	const struct mds_mdt *d = &m->m_mdts[idx];
	size_t ul = strlen(d->mm_uuid) + 1, al = strlen(d->mm_addr) + 1;
	mdt_key(idx, key);
	val[0] = MDT_REC_VERSION;
	memcpy(val + 1, d->mm_uuid, ul);
	memcpy(val + 1 + ul, d->mm_addr, al);
	memcpy(val + 1 + ul + al, d->mm_secret_sha, 32);
	return mds_ns_cluster_put(m->m_ns, key, sizeof(key), val, 1 + ul + al + 32);
}

static void mdt_load_one(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct mds *m = arg;
	const uint8_t *kb = k, *vb = v;
	if (kl != 7 || vl < 1 + 2 + 32 || vb[0] != MDT_REC_VERSION) {
		WEIR_LOG_WARN("cluster map: skipping a malformed MDT record (%zu bytes)", vl);
		return;
	}
	uint32_t idx = weir_get_be32(kb + 3);
	const char *uuid = (const char *)vb + 1;
	size_t ul = strnlen(uuid, vl - 1 - 32);
	if (idx == 0 || idx >= WEIR_MDT_MAX || ul >= sizeof(m->m_mdts->mm_uuid) ||
	    1 + ul + 1 >= vl - 32) {
		WEIR_LOG_WARN("cluster map: skipping MDT record %u (bad index or uuid)", idx);
		return;
	}
	const char *addr = uuid + ul + 1;
	size_t al = strnlen(addr, vl - 32 - (1 + ul + 1));
	if (al >= MDS_ADDR_MAX || 1 + ul + 1 + al + 1 + 32 != vl) {
		WEIR_LOG_WARN("cluster map: skipping MDT record %u (bad address)", idx);
		return;
	}
	struct mds_mdt *d = &m->m_mdts[idx];
	d->mm_exists = true;
	memcpy(d->mm_uuid, uuid, ul + 1);
	memcpy(d->mm_addr, addr, al + 1);
	memcpy(d->mm_secret_sha, vb + 1 + ul + 1 + al + 1, 32);
}

/*
 * Is MDT \a d up: on MDT0, heard from within the timeout, or within the
 * timeout before a stop of this MDS that mds-lease has not noticed yet (as
 * OSTs: cmap.c's ost_up_at()); on MDT k, MDT0 said so within the timeout.
 */
static bool mdt_up(const struct mds *m, const struct mds_mdt *d, uint64_t now)
{
	uint64_t timeout_ns = (uint64_t)m->m_conf.mc_ost_timeout_s * 1000000000ULL;
	if (!d->mm_exists || !d->mm_seen_mono_ns)
		return false;
	if (m->m_conf.mc_mdt_index != 0 && !d->mm_up)
		return false; /* a copy of MDT0's word */
	if (now - d->mm_seen_mono_ns < timeout_ns)
		return true;
	uint64_t stall = mds_stalled_since(m, now);
	return stall && (d->mm_seen_mono_ns >= stall || stall - d->mm_seen_mono_ns < timeout_ns);
}

bool mds_mdt_up(struct mds *m, uint32_t idx)
{
	if (idx >= WEIR_MDT_MAX)
		return false;
	pthread_mutex_lock(&m->m_cmap_lock);
	bool up = mdt_up(m, &m->m_mdts[idx], weir_now_ns());
	pthread_mutex_unlock(&m->m_cmap_lock);
	return up;
}

static bool mdt_uuid_ok(const char *u)
{
	size_t l = strlen(u);
	if (l == 0 || l >= sizeof(((struct mds_mdt *)0)->mm_uuid))
		return false;
	for (size_t i = 0; i < l; i++)
		if (!isalnum((unsigned char)u[i]) && u[i] != '-' && u[i] != '_')
			return false;
	return true;
}

void mds_mdt_space(struct mds *m, struct mds_space *sp)
{
	struct statvfs sv;
	memset(sp, 0, sizeof(*sp));
	uint64_t inodes = mds_ns_nr_inodes(m->m_ns);
	if (statvfs(m->m_conf.mc_mdt_dir, &sv) == 0) {
		sp->sp_total = (uint64_t)sv.f_blocks * sv.f_frsize;
		sp->sp_free = (uint64_t)sv.f_bfree * sv.f_frsize;
		sp->sp_avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		/* an inode costs about 1 KiB of MDT space with its dentry */
		sp->sp_files_free = sp->sp_avail / 1024;
		sp->sp_files = inodes + sp->sp_files_free;
	}
}

void mds_mdt_handle_register(struct mds *m, struct net_req *rq)
{
	Weir__MdtRegisterReq *req = net_req_unpack(rq, &weir__mdt_register_req__descriptor);
	Weir__MdtRegisterRep rep = WEIR__MDT_REGISTER_REP__INIT;
	Weir__ClusterMap map;
	bool have_map = false;
	uint8_t sha[32];
	char host[MDS_ADDR_MAX];
	uint16_t port;
	int rc = 0;

	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	if (m->m_conf.mc_mdt_index != 0) {
		WEIR_LOG_WARN_RL("peer=%s mdt=%u: MDT registration sent to MDT%04x: MDTs register"
				 " with MDT0 (-EINVAL)", rq->rq_peer, req->index,
				 m->m_conf.mc_mdt_index);
		rc = -EINVAL;
		goto out;
	}
	if (req->index == 0 || req->index >= WEIR_MDT_MAX || !mdt_uuid_ok(req->uuid) ||
	    strlen(req->mds_addr) >= MDS_ADDR_MAX ||
	    weir_parse_hostport(req->mds_addr, host, sizeof(host), &port) || port == 0) {
		WEIR_LOG_WARN_RL("peer=%s mdt=%u addr=%.64s: bad MDT registration (index 1..%d,"
				 " a uuid, HOST:PORT) (-EINVAL)", rq->rq_peer, req->index,
				 req->mds_addr, WEIR_MDT_MAX - 1);
		rc = -EINVAL;
		goto out;
	}
	if (strcmp(req->fsname, m->m_conf.mc_fsname)) {
		WEIR_LOG_WARN_RL("peer=%s mdt=%u: MDT registration for filesystem '%.32s' refused:"
				 " this is '%s' (-EINVAL)", rq->rq_peer, req->index, req->fsname,
				 m->m_conf.mc_fsname);
		rc = -EINVAL;
		goto out;
	}
	if (req->secret.len != 32) {
		WEIR_LOG_WARN_RL("peer=%s mdt=%u: MDT registration refused: no 32-byte secret"
				 " (-EACCES)", rq->rq_peer, req->index);
		rc = -EACCES;
		goto out;
	}
	weir_sha256(req->secret.data, 32, sha);
	pthread_mutex_lock(&m->m_cmap_lock);
	struct mds_mdt *d = &m->m_mdts[req->index];
	uint64_t now = weir_now_ns();
	bool was_up = mdt_up(m, d, now);
	if (d->mm_exists && strcmp(d->mm_uuid, req->uuid)) {
		WEIR_LOG_ERROR_RL("mdt=%u uuid=%s peer=%s: MDT registration refused: the index"
				  " belongs to another MDT (uuid=%s) (-EEXIST)", req->index,
				  req->uuid, rq->rq_peer, d->mm_uuid);
		rc = -EEXIST;
	} else if (d->mm_exists && !weir_mem_equal_ct(sha, d->mm_secret_sha, 32)) {
		WEIR_LOG_WARN_RL("mdt=%u uuid=%s peer=%s: MDT registration refused: the secret is"
				 " not the one this MDT was bound with (-EACCES)", req->index,
				 req->uuid, rq->rq_peer);
		rc = -EACCES;
	} else if (d->mm_exists && strcmp(d->mm_addr, req->mds_addr) && was_up) {
		WEIR_LOG_WARN_RL("mdt=%u uuid=%s peer=%s: MDT registration from %s refused: the"
				 " MDT is alive at %s (heard from within %us) (-EBUSY)",
				 req->index, req->uuid, rq->rq_peer, req->mds_addr, d->mm_addr,
				 m->m_conf.mc_ost_timeout_s);
		rc = -EBUSY;
	}
	if (!rc && (!d->mm_exists || strcmp(d->mm_addr, req->mds_addr))) {
		struct mds_mdt old = *d;
		bool fresh = !d->mm_exists;
		d->mm_exists = true;
		snprintf(d->mm_uuid, sizeof(d->mm_uuid), "%s", req->uuid);
		snprintf(d->mm_addr, sizeof(d->mm_addr), "%s", req->mds_addr);
		memcpy(d->mm_secret_sha, sha, 32);
		rc = mdt_persist(m, req->index);
		if (!rc) /* bound for good before the MDT hears it (a lost binding: -EEXIST) */
			rc = kv_sync(m->m_ns->ns_kv);
		if (rc) {
			*d = old;
		} else {
			if (fresh)
				WEIR_LOG_NOTICE("mdt=%u uuid=%s addr=%s: new MDT added to the"
						" cluster map, bound to its secret", req->index,
						req->uuid, req->mds_addr);
			else
				WEIR_LOG_NOTICE("mdt=%u uuid=%s: moved from %s to %s", req->index,
						req->uuid, old.mm_addr, req->mds_addr);
			m->m_cmap_gen++;
		}
	}
	if (!rc) {
		d->mm_seen_mono_ns = now;
		d->mm_seen_wall_ns = (int64_t)weir_wall_ns();
		d->mm_space = (struct mds_space){ req->total_bytes, req->free_bytes,
						  req->avail_bytes, req->files, req->files_free };
		d->mm_recovering = req->recovering;
		if (!was_up) {
			WEIR_LOG_NOTICE("mdt=%u uuid=%s addr=%s: up", req->index, d->mm_uuid,
					d->mm_addr);
			m->m_cmap_gen++;
		}
	}
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (rc)
		goto out;
	rc = mds_cmap_map_build(m, &map);
	if (rc)
		goto out;
	have_map = true;
	rep.map = &map;
	rep.heartbeat_ms = mdt_period_ms(m);
	if (m->m_capa_on) {
		rep.capa_key.data = m->m_capa_key.ck_key;
		rep.capa_key.len = WEIR_CAPA_KEY_LEN;
		rep.capa_key_gen = m->m_capa_key.ck_gen;
	}
out:
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	if (have_map)
		mds_cmap_map_free(&map);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

int mds_mdt_map_fill(struct mds *m, void *mapv, const struct mds_space *self)
{
	Weir__ClusterMap *map = mapv;
	size_t n = 1;
	for (uint32_t i = 1; i < WEIR_MDT_MAX; i++)
		n += m->m_mdts[i].mm_exists;
	Weir__MdtInfo *inf = calloc(n, sizeof(*inf));
	Weir__MdtInfo **p = calloc(n, sizeof(*p));
	if (!inf || !p) {
		free(inf);
		free(p);
		return -ENOMEM;
	}
	uint64_t now = weir_now_ns();
	size_t j = 0;
	for (uint32_t i = 0; i < WEIR_MDT_MAX; i++) {
		const struct mds_mdt *d = &m->m_mdts[i];
		Weir__MdtInfo *x = &inf[j];
		if (i == 0 && m->m_conf.mc_mdt_index == 0) {
			/* MDT0 itself (an MDT k's copy has MDT0 in m_mdts[0]) */
			weir__mdt_info__init(x);
			x->index = 0;
			x->uuid = (char *)"";
			x->mds_addr = m->m_mdt_addr;
			x->state = WEIR__TARGET_STATE__TS_UP;
			x->last_seen_ns = (int64_t)weir_wall_ns();
			x->total_bytes = self->sp_total;
			x->free_bytes = self->sp_free;
			x->avail_bytes = self->sp_avail;
			x->files = self->sp_files;
			x->files_free = self->sp_files_free;
			x->recovering = mds_recovery_active(m);
			p[j++] = x;
			continue;
		}
		if (!d->mm_exists)
			continue;
		weir__mdt_info__init(x);
		x->index = i;
		x->uuid = (char *)d->mm_uuid;
		x->mds_addr = (char *)d->mm_addr;
		x->state = mdt_up(m, d, now) ? WEIR__TARGET_STATE__TS_UP
					     : WEIR__TARGET_STATE__TS_DOWN;
		x->last_seen_ns = d->mm_seen_wall_ns;
		x->total_bytes = d->mm_space.sp_total;
		x->free_bytes = d->mm_space.sp_free;
		x->avail_bytes = d->mm_space.sp_avail;
		x->files = d->mm_space.sp_files;
		x->files_free = d->mm_space.sp_files_free;
		x->recovering = d->mm_recovering;
		p[j++] = x;
	}
	/* copies: the map is sent after m_cmap_lock is dropped */
	bool nomem = false;
	for (size_t k = 0; k < j; k++) {
		char *u = nomem ? NULL : strdup(p[k]->uuid);
		char *a = nomem ? NULL : strdup(p[k]->mds_addr);
		nomem = nomem || !u || !a;
		p[k]->uuid = u;
		p[k]->mds_addr = a;
	}
	if (nomem) {
		map->n_mdts = j;
		map->mdts = p;
		mds_mdt_map_free(map); /* frees what was copied (NULLs are fine) */
		return -ENOMEM;
	}
	if (!j)
		free(inf);
	map->n_mdts = j;
	map->mdts = p;
	return 0;
}

void mds_mdt_map_free(void *mapv)
{
	Weir__ClusterMap *map = mapv;
	for (size_t k = 0; k < map->n_mdts; k++) {
		free(map->mdts[k]->uuid);
		free(map->mdts[k]->mds_addr);
	}
	if (map->n_mdts)
		free(map->mdts[0]); /* the MdtInfo array */
	free(map->mdts);
	map->mdts = NULL;
	map->n_mdts = 0;
}

size_t mds_mdt_statfs_rows(struct mds *m, void *tsv, void **tpv, char *names)
{
	Weir__TargetStat *ts = tsv;
	Weir__TargetStat **tp = (Weir__TargetStat **)tpv;
	uint64_t now = weir_now_ns();
	size_t j = 0;
	for (uint32_t i = 0; i < WEIR_MDT_MAX; i++) {
		const struct mds_mdt *d = &m->m_mdts[i];
		if (i == m->m_conf.mc_mdt_index || !d->mm_exists)
			continue;
		Weir__TargetStat *t = &ts[j];
		/* (its recovery window is not shown here: df would show the window's
		 * counts, which are MDT0's) */
		mds_statfs_row(t, names + 16 * j, true, i, &d->mm_space, d->mm_addr);
		t->state = mdt_up(m, d, now) ? WEIR__TARGET_STATE__TS_UP
					     : WEIR__TARGET_STATE__TS_DOWN;
		tp[j] = t;
		j++;
	}
	return j;
}

/* ----------------------------------------------------- identity and load */

/* MDT k > 0: read its uuid and secret, or make them at the first start. */
static int mdt_ident_load(struct mds *m)
{
	uint8_t val[1 + sizeof(m->m_mdt_uuid) + 32];
	size_t vl = 0;
	int rc = mds_ns_cluster_get(m->m_ns, MDT_IDENT_KEY, strlen(MDT_IDENT_KEY), val, sizeof(val),
				    &vl);
	if (!rc) {
		/* (vl is the record's length, which may exceed what was copied) */
		size_t ul = vl > 33 && vl <= sizeof(val) ? strnlen((const char *)val + 1, vl - 33)
							 : 0;
		if (vl > sizeof(val) || vl < 1 + 2 + 32 || val[0] != MDT_IDENT_VERSION || ul == 0 ||
		    1 + ul + 1 + 32 != vl || ul >= sizeof(m->m_mdt_uuid)) {
			WEIR_LOG_ERROR("mdt=%s: the MDT's identity record is corrupt",
				       m->m_conf.mc_mdt_dir);
			return -EIO;
		}
		memcpy(m->m_mdt_uuid, val + 1, ul + 1);
		memcpy(m->m_mdt_secret, val + 1 + ul + 1, 32);
		explicit_bzero(val, sizeof(val));
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	uint8_t raw[16];
	if (weir_random_bytes(raw, sizeof(raw)) ||
	    weir_random_bytes(m->m_mdt_secret, sizeof(m->m_mdt_secret)))
		return -EIO;
	for (int i = 0; i < 16; i++)
		snprintf(m->m_mdt_uuid + 2 * i, 3, "%02x", raw[i]);
	size_t ul = strlen(m->m_mdt_uuid);
	val[0] = MDT_IDENT_VERSION;
	memcpy(val + 1, m->m_mdt_uuid, ul + 1);
	memcpy(val + 1 + ul + 1, m->m_mdt_secret, 32);
	rc = mds_ns_cluster_put(m->m_ns, MDT_IDENT_KEY, strlen(MDT_IDENT_KEY), val, 1 + ul + 1 + 32);
	if (!rc) /* on disk before MDT0 binds the index to it */
		rc = kv_sync(m->m_ns->ns_kv);
	explicit_bzero(val, sizeof(val));
	if (!rc)
		WEIR_LOG_NOTICE("mdt=%u uuid=%s: made this MDT's identity", m->m_conf.mc_mdt_index,
				m->m_mdt_uuid);
	return rc;
}

/* The address clients reach this MDS at: --advertise or the listen host, and the bound port. */
static int mdt_addr_make(struct mds *m)
{
	char host[MDS_ADDR_MAX];
	uint16_t port;
	if (m->m_conf.mc_advertise && m->m_conf.mc_advertise[0]) {
		snprintf(host, sizeof(host), "%s", m->m_conf.mc_advertise);
	} else {
		if (weir_parse_hostport(m->m_conf.mc_listen, host, sizeof(host), &port))
			host[0] = 0;
		if (!host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") ||
		    !strcmp(host, "[::]"))
			WEIR_LOG_WARN("listen=%s: a wildcard listen address is what MDT0 will tell"
				      " clients: set --advertise", m->m_conf.mc_listen);
	}
	if ((size_t)snprintf(m->m_mdt_addr, sizeof(m->m_mdt_addr), "%s:%u", host, m->m_port_bound) >=
	    sizeof(m->m_mdt_addr))
		return -ENAMETOOLONG;
	return 0;
}

int mds_mdt_init(struct mds *m)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&m->m_mgc_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->m_mgc_cond, &ca);
	pthread_condattr_destroy(&ca);
	m->m_mdts = calloc(WEIR_MDT_MAX, sizeof(*m->m_mdts));
	if (!m->m_mdts)
		return -ENOMEM;
	int rc = mdt_addr_make(m);
	if (rc)
		return rc;
	if (m->m_conf.mc_mdt_index != 0)
		return mdt_ident_load(m);
	rc = mds_ns_cluster_scan(m->m_ns, "mdt", 3, mdt_load_one, m);
	int n = 0;
	for (int i = 1; i < WEIR_MDT_MAX; i++)
		n += m->m_mdts[i].mm_exists;
	if (n)
		WEIR_LOG_NOTICE("cluster map: %d MDTs besides MDT0 known (down until they"
				" register)", n);
	return rc;
}

void mds_mdt_fini(struct mds *m)
{
	free(m->m_mdts);
	m->m_mdts = NULL;
	explicit_bzero(m->m_mdt_secret, sizeof(m->m_mdt_secret));
	explicit_bzero(m->m_mgc_capa_key, sizeof(m->m_mgc_capa_key));
	pthread_cond_destroy(&m->m_mgc_cond);
	pthread_mutex_destroy(&m->m_mgc_lock);
}

/* ------------------------------------------------------- MDT k's side (mgc) */

/*
 * Take MDT0's map: the OSTs (replacing the copy; this MDT has no OST of its
 * own, since OSSs register with MDT0 only) and the MDTs.
 */
static void mgc_apply_map(struct mds *m, const Weir__ClusterMap *map, bool kick)
{
	uint64_t now = weir_now_ns();
	pthread_mutex_lock(&m->m_cmap_lock);
	bool changed = false;
	for (size_t i = 0; i < map->n_osts; i++) {
		const Weir__OstInfo *oi = map->osts[i];
		if (oi->index >= MDS_MAX_OSTS)
			continue;
		struct mds_ost *o = &m->m_osts[oi->index];
		bool up = oi->state == WEIR__TARGET_STATE__TS_UP;
		if (!o->mo_exists || strcmp(o->mo_addr, oi->oss_addr) ||
		    strcmp(o->mo_uuid, oi->uuid) || up != mds_cmap_ost_up(m, o))
			changed = true;
		o->mo_exists = true;
		snprintf(o->mo_uuid, sizeof(o->mo_uuid), "%s", oi->uuid);
		snprintf(o->mo_addr, sizeof(o->mo_addr), "%s", oi->oss_addr);
		o->mo_total = oi->total_bytes;
		o->mo_free = oi->free_bytes;
		o->mo_avail = oi->avail_bytes;
		o->mo_files = oi->files;
		o->mo_files_free = oi->files_free;
		o->mo_seen_wall_ns = oi->last_seen_ns;
		/* up for an OST timeout after MDT0 said so (a silent MDT0 lets it lapse) */
		o->mo_seen_mono_ns = up ? now : 0;
		if (oi->index >= m->m_osts_end)
			m->m_osts_end = oi->index + 1;
	}
	for (size_t i = 0; i < map->n_mdts; i++) {
		const Weir__MdtInfo *x = map->mdts[i];
		if (x->index >= WEIR_MDT_MAX)
			continue;
		struct mds_mdt *d = &m->m_mdts[x->index];
		d->mm_exists = true;
		snprintf(d->mm_uuid, sizeof(d->mm_uuid), "%s", x->uuid);
		snprintf(d->mm_addr, sizeof(d->mm_addr), "%s", x->mds_addr);
		d->mm_up = x->state == WEIR__TARGET_STATE__TS_UP;
		d->mm_seen_mono_ns = now; /* MDT0's word lapses after the timeout */
		d->mm_seen_wall_ns = x->last_seen_ns;
		d->mm_space = (struct mds_space){ x->total_bytes, x->free_bytes, x->avail_bytes,
						  x->files, x->files_free };
		d->mm_recovering = x->recovering;
	}
	if (changed)
		m->m_cmap_gen++;
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (changed && kick)
		mds_destroy_kick(m); /* (not at the first registration: not started yet) */
}

/* One MDS_MDT_REGISTER round trip. \a first: keep the capability key. */
static int mgc_once(struct mds *m, struct net_conn *conn, bool first)
{
	Weir__MdtRegisterReq req = WEIR__MDT_REGISTER_REQ__INIT;
	struct net_call call;
	req.index = m->m_conf.mc_mdt_index;
	req.uuid = m->m_mdt_uuid;
	req.secret.data = m->m_mdt_secret;
	req.secret.len = sizeof(m->m_mdt_secret);
	req.mds_addr = m->m_mdt_addr;
	req.fsname = (char *)m->m_conf.mc_fsname;
	struct mds_space sp;
	mds_mdt_space(m, &sp);
	req.total_bytes = sp.sp_total;
	req.free_bytes = sp.sp_free;
	req.avail_bytes = sp.sp_avail;
	req.files = sp.sp_files;
	req.files_free = sp.sp_files_free;
	req.recovering = !first && mds_recovery_active(m);
	net_call_init(&call, WEIR__WIRE_OP__MDS_MDT_REGISTER, &req.base);
	call.nc_timeout_ms = MGC_CALL_TIMEOUT_MS;
	int rc = net_call_run(conn, &call);
	if (!rc) {
		Weir__MdtRegisterRep *rep =
			net_call_unpack(&call, &weir__mdt_register_rep__descriptor);
		if (!rep) {
			rc = -EPROTO;
		} else {
			if (rep->capa_key.len && rep->capa_key.len != WEIR_CAPA_KEY_LEN) {
				rc = -EPROTO;
			} else if (first) {
				m->m_mgc_capa_gen = rep->capa_key.len ? rep->capa_key_gen : 0;
				if (rep->capa_key.len)
					memcpy(m->m_mgc_capa_key, rep->capa_key.data,
					       WEIR_CAPA_KEY_LEN);
			} else if (m->m_capa_on && (!rep->capa_key.len ||
						    rep->capa_key_gen != m->m_capa_key.ck_gen)) {
				WEIR_LOG_ERROR_RL("op=mdt_register mgs=%s: MDT0's capability key"
						  " changed since this MDS started: restart it",
						  m->m_conf.mc_mgs);
			}
			if (!rc && rep->map)
				mgc_apply_map(m, rep->map, !first);
			if (!rc && rep->heartbeat_ms)
				atomic_store(&m->m_mgc_period_ms,
					     WEIR_MIN(WEIR_MAX(rep->heartbeat_ms, 100u), 60000u));
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		}
	}
	net_call_fini(&call);
	return rc;
}

/* MDT k's heartbeat: what MDT0 asked for, else its own rule. */
static uint32_t mgc_period_ms(struct mds *m)
{
	uint32_t p = atomic_load(&m->m_mgc_period_ms);
	return p ? p : mdt_period_ms(m);
}

/* Sleep \a ms unless stopped. \return true when stopped. */
static bool mgc_sleep(struct mds *m, uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000ULL;
	ts.tv_sec += (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pthread_mutex_lock(&m->m_mgc_lock);
	while (!m->m_mgc_stop &&
	       pthread_cond_timedwait(&m->m_mgc_cond, &m->m_mgc_lock, &ts) != ETIMEDOUT)
		;
	bool stop = m->m_mgc_stop;
	pthread_mutex_unlock(&m->m_mgc_lock);
	return stop;
}

static void *mgc_main(void *arg)
{
	struct mds *m = arg;
	struct net_conn *conn = NULL;
	int last_rc = 0;
	unsigned same = 0;
	char rcs[96];
	weir_thread_name("mds-mgc");
	while (!mgc_sleep(m, mgc_period_ms(m))) {
		int rc = 0;
		if (!conn)
			rc = net_conn_open(m->m_conf.mc_mgs, MGC_CONNECT_TIMEOUT_MS, &conn);
		if (!rc)
			rc = mgc_once(m, conn, false);
		if (rc && conn && rc != -EACCES && rc != -EBUSY && rc != -EEXIST) {
			net_conn_close(conn); /* a transport failure: a new connection next time */
			conn = NULL;
		}
		if (rc) {
			if (rc != last_rc || ++same % 30 == 0)
				WEIR_LOG_WARN("op=mdt_register mgs=%s mdt=%u rc=%s: MDT0 %s; this MDT"
					      " keeps its last cluster map (its OSTs go down after"
					      " %us)", m->m_conf.mc_mgs, m->m_conf.mc_mdt_index,
					      weir_rc_str(rc, rcs, sizeof(rcs)),
					      rc == -EACCES || rc == -EBUSY || rc == -EEXIST
						      ? "refused the registration"
						      : "does not answer",
					      m->m_conf.mc_ost_timeout_s);
			if (rc != last_rc)
				same = 0;
		} else if (last_rc) {
			WEIR_LOG_NOTICE("op=mdt_register mgs=%s mdt=%u: registered again",
					m->m_conf.mc_mgs, m->m_conf.mc_mdt_index);
		}
		last_rc = rc;
	}
	if (conn)
		net_conn_close(conn);
	return NULL;
}

int mds_mgc_start(struct mds *m)
{
	char rcs[96];
	if (m->m_conf.mc_mdt_index == 0)
		return 0;
	uint64_t end = weir_now_ns() + MDS_MGC_START_WAIT_S * 1000000000ULL, busy_end = 0;
	int rc = 0;
	unsigned tries = 0;
	for (;;) {
		struct net_conn *conn = NULL;
		rc = net_conn_open(m->m_conf.mc_mgs, MGC_CONNECT_TIMEOUT_MS, &conn);
		if (!rc) {
			rc = mgc_once(m, conn, true);
			net_conn_close(conn);
		}
		if (!rc)
			break;
		/* -EBUSY: this MDT is alive elsewhere to MDT0 (the run before this
		 * restart, on another port; the host a standby takes over from):
		 * retried for twice --ost-timeout, by when a dead one's silence
		 * counts on an MDT0 of the same setting */
		bool refused = rc == -EACCES || rc == -EEXIST || rc == -EINVAL ||
			       rc == -EOPNOTSUPP || rc == -EPERM;
		if (rc == -EBUSY && !busy_end)
			busy_end = weir_now_ns() +
				   (2ULL * m->m_conf.mc_ost_timeout_s + 1) * 1000000000ULL;
		if (refused || weir_now_ns() >= end || (rc == -EBUSY && weir_now_ns() >= busy_end)) {
			WEIR_LOG_ERROR("op=mdt_register mgs=%s mdt=%u rc=%s: %s; not serving",
				       m->m_conf.mc_mgs, m->m_conf.mc_mdt_index,
				       weir_rc_str(rc, rcs, sizeof(rcs)),
				       rc == -EOPNOTSUPP ? "MDT0's MDS is older than several MDTs"
				       : rc == -EPERM	 ? "MDT0's node map does not give this host"
							   " admin rights (MDT registration needs them)"
				       : refused	 ? "MDT0 refused this MDT (its log says why)"
				       : rc == -EBUSY	 ? "MDT0 still hears this MDT at another address"
							   " (another weir-mds serves it?)"
							 : "MDT0 did not answer within 60s: start MDT0's"
							   " MDS first, or check --mgs");
			return refused || rc == -EBUSY ? rc : -ETIMEDOUT;
		}
		if (tries++ % 10 == 0)
			WEIR_LOG_NOTICE("op=mdt_register mgs=%s mdt=%u rc=%s: waiting for MDT0",
					m->m_conf.mc_mgs, m->m_conf.mc_mdt_index,
					weir_rc_str(rc, rcs, sizeof(rcs)));
		struct timespec ts = { 1, 0 };
		nanosleep(&ts, NULL);
	}
	WEIR_LOG_NOTICE("op=mdt_register mgs=%s mdt=%u uuid=%s addr=%s: registered with MDT0",
			m->m_conf.mc_mgs, m->m_conf.mc_mdt_index, m->m_mdt_uuid, m->m_mdt_addr);
	return 0;
}

int mds_mgc_run(struct mds *m)
{
	if (m->m_conf.mc_mdt_index == 0)
		return 0;
	m->m_mgc_stop = false;
	int rc = pthread_create(&m->m_mgc_thread, NULL, mgc_main, m);
	if (rc)
		return -rc;
	m->m_mgc_running = true;
	return 0;
}

void mds_mgc_stop(struct mds *m)
{
	if (!m->m_mgc_running)
		return;
	pthread_mutex_lock(&m->m_mgc_lock);
	m->m_mgc_stop = true;
	pthread_cond_broadcast(&m->m_mgc_cond);
	pthread_mutex_unlock(&m->m_mgc_lock);
	pthread_join(m->m_mgc_thread, NULL);
	m->m_mgc_running = false;
}
