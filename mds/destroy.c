/*
 * mds/destroy.c - drains the persistent destroy queue.
 *
 * DESIGN. One thread, "mds-destroy", wakes every second (or when kicked by
 * an unlink or an OSS registering) and takes up to 64 records from the
 * destroy queue (KV_CF_DESTROY 'D' records, written in the same batch as
 * the unlink that freed them). For each record it sends OST_DESTROY for
 * every object to the OSS serving its OST; a record is removed only when
 * every object is gone (an object already missing counts as gone), so a
 * crash or a down OST just delays destruction until a later pass. The
 * thread keeps one client connection per OSS address.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define DESTROY_BATCH 64
#define DESTROY_MAX_CONNS 64

struct oss_conn {
	char oc_addr[MDS_ADDR_MAX];
	struct net_conn *oc_conn;
};

static struct net_conn *conn_for(struct oss_conn *tab, int *nr, const char *addr)
{
	for (int i = 0; i < *nr; i++)
		if (!strcmp(tab[i].oc_addr, addr))
			return tab[i].oc_conn;
	struct net_conn *c;
	if (net_conn_open(addr, 3000, &c))
		return NULL;
	if (*nr == DESTROY_MAX_CONNS) {
		net_conn_close(tab[0].oc_conn);
		memmove(tab, tab + 1, sizeof(*tab) * (DESTROY_MAX_CONNS - 1));
		(*nr)--;
	}
	snprintf(tab[*nr].oc_addr, sizeof(tab[*nr].oc_addr), "%s", addr);
	tab[*nr].oc_conn = c;
	(*nr)++;
	return c;
}

static int destroy_one(struct mds *m, struct oss_conn *tab, int *nr,
		       const struct mds_destroy_rec *r)
{
	for (uint32_t i = 0; i < r->dr_layout.lo_stripe_count; i++) {
		char addr[MDS_ADDR_MAX];
		int rc = mds_cmap_ost_addr(m, r->dr_layout.lo_osts[i], addr, sizeof(addr));
		if (rc == -ENODEV) {
			WEIR_LOG_WARN("fid=" WEIR_FID_F " ost=%u: OST unknown; object forgotten",
				      WEIR_FID_P(&r->dr_fid), r->dr_layout.lo_osts[i]);
			continue;
		}
		if (rc)
			return rc;
		struct net_conn *c = conn_for(tab, nr, addr);
		if (!c)
			return -EHOSTDOWN;
		Weir__Fid fid = WEIR__FID__INIT;
		fid.seq = r->dr_fid.fid_seq;
		fid.oid = r->dr_fid.fid_oid;
		Weir__ObjReq req = WEIR__OBJ_REQ__INIT;
		req.ost = r->dr_layout.lo_osts[i];
		req.fid = &fid;
		req.stripe = i;
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__OST_DESTROY, &req.base);
		call.nc_timeout_ms = 10000;
		rc = net_call_run(c, &call);
		net_call_fini(&call);
		if (rc && rc != -ENOENT) {
			WEIR_LOG_WARN("fid=" WEIR_FID_F " ost=%u stripe=%u rc=%d: destroy failed;"
				      " will retry",
				      WEIR_FID_P(&r->dr_fid), req.ost, i, rc);
			return rc;
		}
	}
	return 0;
}

static void *destroy_main(void *arg)
{
	struct mds *m = arg;
	struct oss_conn tab[DESTROY_MAX_CONNS];
	int nr = 0;
	struct mds_destroy_rec *recs = calloc(DESTROY_BATCH, sizeof(*recs));
	weir_thread_name("mds-destroy");
	while (recs && !atomic_load(&m->m_stop)) {
		pthread_mutex_lock(&m->m_destroy_lock);
		if (!m->m_destroy_kick) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&m->m_destroy_cond, &m->m_destroy_lock, &ts);
		}
		m->m_destroy_kick = false;
		pthread_mutex_unlock(&m->m_destroy_lock);
		if (atomic_load(&m->m_stop))
			break;
		int n = mds_ns_destroy_peek(m->m_ns, recs, DESTROY_BATCH);
		int done = 0;
		for (int i = 0; i < n && !atomic_load(&m->m_stop); i++) {
			if (destroy_one(m, tab, &nr, &recs[i]))
				continue;
			if (!mds_ns_destroy_done(m->m_ns, &recs[i].dr_fid))
				done++;
		}
		if (done)
			WEIR_LOG_INFO("destroyed the objects of %d files", done);
		if (done == DESTROY_BATCH)
			mds_destroy_kick(m);
	}
	for (int i = 0; i < nr; i++)
		net_conn_close(tab[i].oc_conn);
	free(recs);
	return NULL;
}

void mds_destroy_kick(struct mds *m)
{
	pthread_mutex_lock(&m->m_destroy_lock);
	m->m_destroy_kick = true;
	pthread_cond_signal(&m->m_destroy_cond);
	pthread_mutex_unlock(&m->m_destroy_lock);
}

int mds_destroy_start(struct mds *m)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->m_destroy_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->m_destroy_lock, NULL);
	return -pthread_create(&m->m_destroy_thread, NULL, destroy_main, m);
}

void mds_destroy_stop(struct mds *m)
{
	mds_destroy_kick(m);
	pthread_join(m->m_destroy_thread, NULL);
	pthread_cond_destroy(&m->m_destroy_cond);
	pthread_mutex_destroy(&m->m_destroy_lock);
}
