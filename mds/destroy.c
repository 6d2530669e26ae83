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
 *
 * Cost (it is background work next to the requests): the OST_DESTROY calls
 * of a whole batch are in flight at once; a pass walks the queue from where
 * the last batch ended (not from its first key, over the RocksDB tombstones
 * of every record already done) and removes a batch's records in one RocksDB
 * write; the thread runs at a lower CPU priority (nice 10), so a backlog of
 * destroys after a mass unlink does not take the cores from the requests. A
 * pass from the queue's first key starts at most every DESTROY_PASS_GAP_MS
 * (every close kicks the thread: thousands of kicks a second in a create
 * storm, each of which would otherwise be a scan), and after
 * DESTROY_COMPACT_AFTER removals the queue's column family is compacted so
 * its scans skip no tombstones.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define DESTROY_BATCH 64
#define DESTROY_MAX_CONNS 64
#define DESTROY_PASS_GAP_MS 50
#define DESTROY_COMPACT_AFTER 4096

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

/* One OST_DESTROY of a batch: the object of stripe dc_req.stripe of record dc_rec. */
struct destroy_call {
	struct net_call dc_call;
	Weir__Fid dc_fid;
	Weir__ObjReq dc_req;
	struct mds_capa_msg dc_capa; /* CR_DESTROY: the MDS grants it only to itself */
	int dc_rec;
	bool dc_started;
};

/*
 * Destroy the objects of \a n records with every OST_DESTROY in flight at
 * once; rc[i] is 0 when every object of record i is gone (or its OST is
 * unknown), else a negative errno (the record is retried on a later pass).
 */
static void destroy_batch(struct mds *m, struct oss_conn *tab, int *nr,
			  const struct mds_destroy_rec *r, int n, int *rc)
{
	int total = 0, nc = 0;
	for (int i = 0; i < n; i++) {
		rc[i] = 0;
		total += (int)r[i].dr_layout.lo_stripe_count;
	}
	struct destroy_call *dc = calloc(total ? (size_t)total : 1, sizeof(*dc));
	if (!dc) {
		for (int i = 0; i < n; i++)
			rc[i] = -ENOMEM;
		return;
	}
	for (int i = 0; i < n; i++) {
		for (uint32_t s = 0; s < r[i].dr_layout.lo_stripe_count && !rc[i]; s++) {
			char addr[MDS_ADDR_MAX];
			uint32_t ost = r[i].dr_layout.lo_osts[s];
			int e = mds_cmap_ost_addr(m, ost, addr, sizeof(addr));
			if (e == -ENODEV) {
				WEIR_LOG_WARN("fid=" WEIR_FID_F " ost=%u: OST unknown; object forgotten",
					      WEIR_FID_P(&r[i].dr_fid), ost);
				continue;
			}
			struct net_conn *c = e ? NULL : conn_for(tab, nr, addr);
			if (!c) {
				rc[i] = e ? e : -EHOSTDOWN;
				break;
			}
			struct destroy_call *d = &dc[nc++];
			d->dc_rec = i;
			weir__fid__init(&d->dc_fid);
			d->dc_fid.seq = r[i].dr_fid.fid_seq;
			d->dc_fid.oid = r[i].dr_fid.fid_oid;
			weir__obj_req__init(&d->dc_req);
			d->dc_req.ost = ost;
			d->dc_req.fid = &d->dc_fid;
			d->dc_req.stripe = s;
			if (mds_capa_sign(m, &r[i].dr_fid, WEIR_CAPA_DESTROY, &d->dc_capa))
				d->dc_req.capa = &d->dc_capa.cm_capa;
			net_call_init(&d->dc_call, WEIR__WIRE_OP__OST_DESTROY, &d->dc_req.base);
			d->dc_call.nc_timeout_ms = 10000;
			e = net_call_start(c, &d->dc_call);
			if (e)
				rc[i] = e;
			else
				d->dc_started = true;
		}
	}
	for (int k = 0; k < nc; k++) {
		struct destroy_call *d = &dc[k];
		int e = d->dc_started ? net_call_wait(&d->dc_call) : 0;
		if (d->dc_started && e && e != -ENOENT) {
			WEIR_LOG_WARN("fid=" WEIR_FID_F " ost=%u stripe=%u rc=%d: destroy failed;"
				      " will retry",
				      WEIR_FID_P(&r[d->dc_rec].dr_fid), d->dc_req.ost,
				      d->dc_req.stripe, e);
			if (!rc[d->dc_rec])
				rc[d->dc_rec] = e;
		}
		net_call_fini(&d->dc_call);
	}
	free(dc);
}

static void *destroy_main(void *arg)
{
	struct mds *m = arg;
	struct oss_conn tab[DESTROY_MAX_CONNS];
	int nr = 0;
	struct mds_destroy_rec *recs = calloc(DESTROY_BATCH, sizeof(*recs));
	struct weir_fid done_fids[DESTROY_BATCH], cursor;
	int rcs[DESTROY_BATCH];
	bool from_cursor = false;
	int64_t pass_end_ns = 0;
	uint64_t removed = 0; /* records removed since the last compaction */
	weir_thread_name("mds-destroy");
	/* background work: below the request threads (Linux: per-thread nice) */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), 10))
		WEIR_LOG_INFO("errno=%d: destroy thread keeps its priority", errno);
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
		if (!from_cursor) { /* a new pass: not more often than every DESTROY_PASS_GAP_MS */
			int64_t wait_ns = pass_end_ns + DESTROY_PASS_GAP_MS * 1000000LL -
					  (int64_t)weir_now_ns();
			if (wait_ns > 0) {
				struct timespec ts = { 0, (long)wait_ns };
				nanosleep(&ts, NULL);
			}
		}
		int n = mds_ns_destroy_peek_after(m->m_ns, from_cursor ? &cursor : NULL, recs,
						  DESTROY_BATCH);
		int done = 0;
		if (n > 0)
			destroy_batch(m, tab, &nr, recs, n, rcs);
		for (int i = 0; i < n; i++)
			if (!rcs[i])
				done_fids[done++] = recs[i].dr_fid;
		if (done && !mds_ns_destroy_done_many(m->m_ns, done_fids, done)) {
			WEIR_LOG_INFO("destroyed the objects of %d files", done);
			removed += (uint64_t)done;
		}
		/* a full batch: go on from its last record at once; else the pass is over */
		from_cursor = n == DESTROY_BATCH;
		if (from_cursor) {
			cursor = recs[n - 1].dr_fid;
			mds_destroy_kick(m);
		} else {
			if (removed >= DESTROY_COMPACT_AFTER && !mds_ns_destroy_compact(m->m_ns))
				removed = 0;
			pass_end_ns = (int64_t)weir_now_ns();
		}
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
