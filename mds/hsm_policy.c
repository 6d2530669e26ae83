/*
 * mds/hsm_policy.c - the watermark policy of the HSM coordinator, run by
 * the "mds-hsm" thread every hsm-policy-interval.
 *
 * DESIGN. An OST's usage is its last heartbeat's statfs (the cluster map):
 * used = total - free, as a percentage of used + available (the Use% of
 * `weir df` and df(1): reserved blocks count as neither). When an OST is above hsm-high-watermark percent,
 * the pass lists the release candidates -- regular files archived, clean,
 * not lost, not released, not accessed or modified for hsm-min-age -- from
 * the 'S' records (under ns_lock for reading), coldest first (by the later
 * of atime and mtime), and releases those with an object on that OST
 * through the same path as MDS_HSM_REQUEST (so every check is made again,
 * under the locks: a file opened meanwhile is skipped) until the estimated
 * usage is below hsm-low-watermark. The estimate subtracts each file's
 * share on the OST (its blocks, or size, over its stripe count); the real
 * figure arrives with a heartbeat after the destroy thread has run, so an
 * OST that was just relieved is left alone for a cool-down of three
 * intervals (at least 15 s). Over the high watermark with nothing
 * releasable the pass logs a WARN with the archive backlog (at most every
 * 30 s per OST) and throttles the OST's writers: the heartbeat reply
 * (OssRegisterRep.throttle_ms) tells its OSS to delay each write reply by
 * 10 ms at the high watermark up to 100 ms when full (oss/throttle.c),
 * until a pass finds the OST below the high watermark or releases files on
 * it. Writes are delayed, never failed.
 */
#define _GNU_SOURCE
#include "hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"

#define POLICY_MAX_CANDIDATES 262144
#define NS_PER_S 1000000000ULL

struct cand {
	struct weir_fid c_fid;
	int64_t c_heat_ns;             /* later of atime and mtime */
};

struct over {
	uint32_t ov_idx;
	uint64_t ov_total, ov_used;    /* bytes */
};

#define POLICY_WARN_EVERY_NS (30 * NS_PER_S)


/* Writers' delay for an OST \a pct used: 10 ms at the high watermark, 100 ms when full. */
static uint32_t throttle_ms(const struct mds_hsm_conf *c, unsigned pct)
{
	unsigned span = c->hc_high_pct < 100 ? 100 - c->hc_high_pct : 1;
	unsigned over = pct > c->hc_high_pct ? pct - c->hc_high_pct : 0;
	return (uint32_t)WEIR_MIN(10 + 90 * over / span, 100u);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->c_heat_ns > y->c_heat_ns) - (x->c_heat_ns < y->c_heat_ns);
}

/* Candidates, coldest first. \return count (>= 0) or -errno. */
static ssize_t cands_collect(struct mds *m, int64_t older_than_ns, struct cand **out)
{
	struct mds_ns *ns = m->m_ns;
	size_t n = 0, cap = 1024;
	struct cand *c = malloc(cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_rwlock_rdlock(&ns->ns_lock);
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_HSM);
	if (!it) {
		pthread_rwlock_unlock(&ns->ns_lock);
		free(c);
		return -ENOMEM;
	}
	for (kv_iter_seek(it, "S", 1); kv_iter_valid(it) && n < POLICY_MAX_CANDIDATES;
	     kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 1 + WEIR_FID_BYTES || k[0] != 'S')
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		if (vl < 8 || v[0] != 1)
			continue;
		uint32_t flags = weir_get_le32(v + 4);
		if ((flags & (HSM_F_ARCHIVED | HSM_F_DIRTY | HSM_F_LOST | HSM_F_RELEASED)) !=
		    HSM_F_ARCHIVED)
			continue;
		struct weir_fid fid;
		struct mds_inode in;
		weir_fid_unpack_be(k + 1, &fid);
		if (ns_inode_get(ns, &fid, &in) || !S_ISREG(in.in_mode) ||
		    (in.in_flags & MDS_INODE_F_RELEASED))
			continue;
		int64_t heat = WEIR_MAX(in.in_atime_ns, in.in_mtime_ns);
		if (heat > older_than_ns)
			continue;
		if (n == cap) {
			struct cand *nc = realloc(c, 2 * cap * sizeof(*c));
			if (!nc)
				break;
			c = nc;
			cap *= 2;
		}
		c[n].c_fid = fid;
		c[n].c_heat_ns = heat;
		n++;
	}
	kv_iter_free(it);
	pthread_rwlock_unlock(&ns->ns_lock);
	qsort(c, n, sizeof(*c), cand_cmp);
	*out = c;
	return (ssize_t)n;
}

/* Bytes \a fid holds on OST \a idx (estimated), 0 when it has no object there. */
static uint64_t share_on(struct mds *m, const struct weir_fid *fid, uint32_t idx)
{
	struct mds_inode in;
	if (mds_ns_getattr(m->m_ns, fid, &in) || !in.in_has_layout)
		return 0;
	const struct weir_layout *lo = &in.in_layout;
	bool there = false;
	for (uint32_t i = 0; i < lo->lo_stripe_count && i < WEIR_LAYOUT_MAX_STRIPES; i++)
		there |= lo->lo_osts[i] == idx;
	if (!there || !lo->lo_stripe_count)
		return 0;
	uint64_t bytes = in.in_blocks ? in.in_blocks * 512 : in.in_size;
	return WEIR_MAX(bytes / lo->lo_stripe_count, 1);
}

void mds_hsm_policy_pass(struct mds *m)
{
	const struct mds_hsm_conf *c = mds_hsm_conf_get(m->m_hsm);
	struct over *ov = calloc(MDS_MAX_OSTS, sizeof(*ov));
	size_t nov = 0;
	uint64_t now = weir_now_ns();
	if (!ov)
		return;
	uint64_t *cooldown_until = m->m_hsm->hs_pol_cooldown, *warned_at = m->m_hsm->hs_pol_warned;
	pthread_mutex_lock(&m->m_cmap_lock);
	for (uint32_t i = 0; i < MDS_MAX_OSTS; i++) {
		struct mds_ost *o = &m->m_osts[i];
		if (!o->mo_exists || !o->mo_total || !mds_cmap_ost_up(m, o))
			continue;
		/* as `weir df` and df(1) show Use%: used / (used + available), so
		 * the blocks reserved for root count as neither */
		uint64_t used = o->mo_total - WEIR_MIN(o->mo_free, o->mo_total);
		uint64_t cap = used + WEIR_MIN(o->mo_avail, o->mo_total - used);
		if (!cap)
			continue;
		if (used * 100 <= (uint64_t)c->hc_high_pct * cap) {
			if (o->mo_throttle_ms)
				WEIR_LOG_NOTICE("ost=OST%04x used=%llu%%: below the high watermark again;"
						" writers no longer throttled", i,
						(unsigned long long)(used * 100 / cap));
			o->mo_throttle_ms = 0;
			continue;
		}
		if (now < cooldown_until[i])
			continue;
		ov[nov].ov_idx = i;
		ov[nov].ov_total = cap;
		ov[nov].ov_used = used;
		nov++;
	}
	pthread_mutex_unlock(&m->m_cmap_lock);
	if (!nov)
		goto out;
	struct cand *cands = NULL;
	int64_t older = (int64_t)weir_wall_ns() - (int64_t)(c->hc_min_age_s * NS_PER_S);
	ssize_t nc = cands_collect(m, older, &cands);
	if (nc < 0)
		goto out;
	for (size_t o = 0; o < nov; o++) {
		struct over *x = &ov[o];
		uint64_t target = (uint64_t)c->hc_low_pct * x->ov_total / 100, used = x->ov_used;
		unsigned pct = (unsigned)(used * 100 / x->ov_total);
		size_t files = 0;
		uint64_t freed = 0;
		for (ssize_t i = 0; i < nc && used > target; i++) {
			uint64_t share = share_on(m, &cands[i].c_fid, x->ov_idx);
			if (!share)
				continue;
			uint64_t id;
			int32_t rc;
			size_t released;
			mds_hsm_request(m->m_hsm, NULL, HSM_A_RELEASE, &cands[i].c_fid, 1, &id, &rc,
					&released);
			if (rc || !released)
				continue;
			files++;
			freed += share;
			used -= WEIR_MIN(share, used);
		}
		uint32_t throttle = files ? 0 : throttle_ms(c, pct);
		pthread_mutex_lock(&m->m_cmap_lock);
		bool was = m->m_osts[x->ov_idx].mo_throttle_ms != 0;
		m->m_osts[x->ov_idx].mo_throttle_ms = throttle;
		pthread_mutex_unlock(&m->m_cmap_lock);
		if (files) {
			mds_destroy_kick(m);
			cooldown_until[x->ov_idx] = now + WEIR_MAX(3 * c->hc_policy_interval_ms,
								   15000ULL) * 1000000ULL;
			WEIR_LOG_NOTICE("ost=OST%04x used=%u%% high=%u%% low=%u%%: released %zu files"
					" (~%llu bytes on this OST), now ~%llu%%", x->ov_idx, pct,
					c->hc_high_pct, c->hc_low_pct, files,
					(unsigned long long)freed,
					(unsigned long long)(used * 100 / x->ov_total));
		} else if (!was || now - warned_at[x->ov_idx] >= POLICY_WARN_EVERY_NS) {
			/* at the start, then once per 30 s per OST: the policy may run every second */
			warned_at[x->ov_idx] = now;
			WEIR_LOG_WARN("OST%04x at %u%% over high watermark, nothing releasable"
				      " (backlog %llu bytes): writers are throttled (%u ms per write)",
				      x->ov_idx, pct, (unsigned long long)mds_hsm_backlog(m->m_hsm),
				      throttle);
		}
	}
	free(cands);
out:
	free(ov);
}
