/*
 * mds/destroy.c - drains the persistent destroy queue.
 *
 * DESIGN. One thread, "mds-destroy", wakes every second (or when kicked by
 * an unlink or an OSS registering) and takes up to 64 records from the
 * destroy queue (KV_CF_DESTROY 'D' records, written in the same batch as
 * the unlink that freed them). It destroys every object of those records
 * with one OST_DESTROY_BATCH per OSS serving them (up to DESTROY_CALL_MAX
 * objects a call; OST_DESTROY per object to an OSS that answers the batch
 * -EOPNOTSUPP, one from before it); a record is removed only when
 * every object is gone (an object already missing counts as gone), so a
 * crash or a down OST just delays destruction until a later pass. The
 * thread keeps one client connection per OSS address.
 *
 * Cost (it is background work next to the requests): the calls of a whole
 * batch are in flight at once, and an OSS gets one request, one hand-off to
 * its slow thread and one reply for 64 files, where one call per object cost
 * it 2.8 context switches per file (an unlink through FUSE about 9); a pass walks the queue from where
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
#define DESTROY_MAX_CONNS 1024 /* OSS connections kept (the oldest closed past it) */
#define DESTROY_NO_BATCH_NS (600 * 1000000000ULL)
#define DESTROY_CALL_MAX 512 /* objects per OST_DESTROY_BATCH (the OSS takes 1024) */
#define DESTROY_CALL_MIN 32  /* an OSS's objects go in two calls from twice this many */
#define DESTROY_OBJ_MS 50    /* a batch call's timeout: 10 s plus this per object */
#define DESTROY_PASS_GAP_MS 50
#define DESTROY_COMPACT_AFTER 4096

struct oss_conn {
	char oc_addr[MDS_ADDR_MAX];
	struct net_conn *oc_conn;
	uint64_t oc_no_batch_ns; /* until then one OST_DESTROY per object: the OSS answered
				  * OST_DESTROY_BATCH -EOPNOTSUPP (an OSS from before it; asked
				  * again DESTROY_NO_BATCH_NS later, as it may be upgraded) */
};

static struct oss_conn *conn_for(struct oss_conn *tab, int *nr, const char *addr)
{
	for (int i = 0; i < *nr; i++)
		if (!strcmp(tab[i].oc_addr, addr))
			return &tab[i];
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
	tab[*nr].oc_no_batch_ns = 0;
	return &tab[(*nr)++];
}

/* One object of a batch: stripe do_req.stripe of record do_rec. */
struct destroy_obj {
	char do_addr[MDS_ADDR_MAX]; /* its OSS */
	Weir__Fid do_fid;
	Weir__ObjReq do_req;
	struct mds_capa_msg do_capa; /* CR_DESTROY: the MDS grants it only to itself */
	int do_rec;
	int do_rc;    /* 0 gone, -ENOENT gone, else why it is not */
	bool do_single; /* (again) by OST_DESTROY of its own */
};

/* One call: OST_DESTROY_BATCH of dc_n objects from dc_first, or OST_DESTROY of one. */
struct destroy_call {
	struct net_call dc_call;
	Weir__ObjDestroyBatchReq dc_breq;
	int dc_first, dc_n;
	bool dc_started;
};

static int obj_addr_cmp(const void *a, const void *b)
{
	const struct destroy_obj *x = a, *y = b;
	int c = strcmp(x->do_addr, y->do_addr);
	if (!c)
		c = (x->do_rec > y->do_rec) - (x->do_rec < y->do_rec);
	return c ? c : (x->do_req.stripe > y->do_req.stripe) - (x->do_req.stripe < y->do_req.stripe);
}

/*
 * Start the calls for objects [first, first + n) of one OSS (\a oc): one
 * OST_DESTROY_BATCH per DESTROY_CALL_MAX objects, or, to an OSS without it
 * (and for objects marked do_single), one OST_DESTROY each.
 */
static void calls_start(struct oss_conn *oc, struct destroy_obj *ob, Weir__ObjReq **reqs,
			int first, int n, bool single, struct destroy_call *dc, int *nc)
{
	for (int k = first; k < first + n;) {
		struct destroy_call *d = &dc[(*nc)++];
		memset(d, 0, sizeof(*d));
		d->dc_first = k;
		if (single || weir_now_ns() < oc->oc_no_batch_ns) {
			d->dc_n = 1;
			net_call_init(&d->dc_call, WEIR__WIRE_OP__OST_DESTROY, &ob[k].do_req.base);
		} else {
			/* halves of an OSS's objects, so its two slow threads share them
			 * (unlinks of large files take time), at most DESTROY_CALL_MAX */
			int chunk = n < 2 * DESTROY_CALL_MIN ? n : (n + 1) / 2;
			if (chunk > DESTROY_CALL_MAX)
				chunk = DESTROY_CALL_MAX;
			d->dc_n = first + n - k < chunk ? first + n - k : chunk;
			weir__obj_destroy_batch_req__init(&d->dc_breq);
			d->dc_breq.n_objs = (size_t)d->dc_n;
			d->dc_breq.objs = &reqs[k];
			net_call_init(&d->dc_call, WEIR__WIRE_OP__OST_DESTROY_BATCH,
				      &d->dc_breq.base);
		}
		/* each object is unlinks on the OSS, one after another */
		d->dc_call.nc_timeout_ms = 10000 + DESTROY_OBJ_MS * (uint32_t)d->dc_n;
		int e = net_call_start(oc->oc_conn, &d->dc_call);
		if (e)
			for (int i = k; i < k + d->dc_n; i++)
				ob[i].do_rc = e;
		d->dc_started = !e;
		k += d->dc_n;
	}
}

/* Wait for the calls; objects of a batch an OSS does not know are marked do_single. */
static void calls_wait(struct oss_conn *tab, int nr, struct destroy_obj *ob,
		       struct destroy_call *dc, int nc)
{
	for (int k = 0; k < nc; k++) {
		struct destroy_call *d = &dc[k];
		int e = d->dc_started ? net_call_wait(&d->dc_call) : 0;
		bool batch = d->dc_call.nc_opcode == WEIR__WIRE_OP__OST_DESTROY_BATCH;
		if (d->dc_started && batch && e == -EOPNOTSUPP && d->dc_call.nc_rc_remote) {
			/* an OSS from before OST_DESTROY_BATCH: one call per object (its
			 * entry looked up again: a later conn_for() may have moved it) */
			const char *addr = ob[d->dc_first].do_addr;
			WEIR_LOG_NOTICE("oss=%s: no OST_DESTROY_BATCH there; one OST_DESTROY per"
					" object for 10 minutes", addr);
			for (int i = 0; i < nr; i++)
				if (!strcmp(tab[i].oc_addr, addr))
					tab[i].oc_no_batch_ns = weir_now_ns() + DESTROY_NO_BATCH_NS;
			for (int i = d->dc_first; i < d->dc_first + d->dc_n; i++)
				ob[i].do_single = true;
		} else if (d->dc_started && batch && !e) {
			Weir__ObjDestroyBatchRep *rep =
				net_call_unpack(&d->dc_call, &weir__obj_destroy_batch_rep__descriptor);
			bool ok = rep && rep->n_status == (size_t)d->dc_n;
			for (int i = 0; i < d->dc_n; i++)
				ob[d->dc_first + i].do_rc =
					ok ? weir_status_to_errno(rep->status[i]) : -EPROTO;
			if (rep)
				protobuf_c_message_free_unpacked(&rep->base, NULL);
		} else if (d->dc_started) {
			for (int i = d->dc_first; i < d->dc_first + d->dc_n; i++)
				ob[i].do_rc = e;
		}
		net_call_fini(&d->dc_call);
	}
}

/*
 * Destroy the objects of \a n records with every call in flight at once:
 * one OST_DESTROY_BATCH per OSS (per DESTROY_CALL_MAX objects), so a batch
 * of records costs each OSS one request and one hand-off to its slow
 * thread, not one per object. rc[i] is 0 when every object of record i is
 * gone (or its OST is unknown), else a negative errno (the record is
 * retried on a later pass).
 */
static void destroy_batch(struct mds *m, struct oss_conn *tab, int *nr,
			  const struct mds_destroy_rec *r, int n, int *rc)
{
	int total = 0, no = 0;
	for (int i = 0; i < n; i++) {
		rc[i] = 0;
		total += (int)r[i].dr_layout.lo_stripe_count;
	}
	struct destroy_obj *ob = calloc(total ? (size_t)total : 1, sizeof(*ob));
	Weir__ObjReq **reqs = calloc(total ? (size_t)total : 1, sizeof(*reqs));
	struct destroy_call *dc = calloc(total ? (size_t)total : 1, sizeof(*dc));
	if (!ob || !reqs || !dc) {
		for (int i = 0; i < n; i++)
			rc[i] = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		for (uint32_t s = 0; s < r[i].dr_layout.lo_stripe_count; s++) {
			struct destroy_obj *o = &ob[no];
			uint32_t ost = r[i].dr_layout.lo_osts[s];
			int e = mds_cmap_ost_addr(m, ost, o->do_addr, sizeof(o->do_addr));
			if (e == -ENODEV) {
				WEIR_LOG_WARN("fid=" WEIR_FID_F " ost=%u: OST unknown; object forgotten",
					      WEIR_FID_P(&r[i].dr_fid), ost);
				continue;
			}
			if (e) {
				rc[i] = e;
				continue;
			}
			o->do_rec = i;
			weir__fid__init(&o->do_fid);
			o->do_fid.seq = r[i].dr_fid.fid_seq;
			o->do_fid.oid = r[i].dr_fid.fid_oid;
			weir__obj_req__init(&o->do_req);
			o->do_req.ost = ost;
			o->do_req.fid = &o->do_fid;
			o->do_req.stripe = s;
			no++;
		}
	}
	/* by OSS; then each object's pointers, which the sort would have moved */
	qsort(ob, (size_t)no, sizeof(*ob), obj_addr_cmp);
	for (int k = 0; k < no; k++) {
		struct destroy_obj *o = &ob[k];
		o->do_req.fid = &o->do_fid;
		o->do_req.capa = NULL;
		if (mds_capa_sign(m, &r[o->do_rec].dr_fid, WEIR_CAPA_DESTROY, &o->do_capa))
			o->do_req.capa = &o->do_capa.cm_capa;
		reqs[k] = &o->do_req;
	}
	for (int round = 0; round < 2; round++) { /* the second: one call per do_single object */
		int nc = 0;
		for (int k = 0; k < no;) {
			int e = k;
			while (e < no && !strcmp(ob[e].do_addr, ob[k].do_addr))
				e++;
			struct oss_conn *oc = NULL;
			for (int i = k; i < e; i++) {
				if (round && !ob[i].do_single)
					continue;
				if (!oc && !(oc = conn_for(tab, nr, ob[k].do_addr))) {
					for (int j = i; j < e; j++)
						ob[j].do_rc = -EHOSTDOWN;
					break;
				}
				ob[i].do_single = false;
				if (!round) { /* all of this OSS's objects at once */
					calls_start(oc, ob, reqs, k, e - k, false, dc, &nc);
					break;
				}
				calls_start(oc, ob, reqs, i, 1, true, dc, &nc);
			}
			k = e;
		}
		calls_wait(tab, *nr, ob, dc, nc);
	}
	for (int k = 0; k < no; k++) {
		struct destroy_obj *o = &ob[k];
		if (!o->do_rc || o->do_rc == -ENOENT)
			continue;
		WEIR_LOG_WARN_RL("fid=" WEIR_FID_F " ost=%u stripe=%u rc=%d: destroy failed;"
				 " will retry",
				 WEIR_FID_P(&r[o->do_rec].dr_fid), o->do_req.ost, o->do_req.stripe,
				 o->do_rc);
		if (!rc[o->do_rec])
			rc[o->do_rec] = o->do_rc;
	}
out:
	free(dc);
	free(reqs);
	free(ob);
}

static void *destroy_main(void *arg)
{
	struct mds *m = arg;
	struct oss_conn *tab = calloc(DESTROY_MAX_CONNS, sizeof(*tab));
	int nr = 0;
	struct mds_destroy_rec *recs = tab ? calloc(DESTROY_BATCH, sizeof(*recs)) : NULL;
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
	free(tab);
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
