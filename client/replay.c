/*
 * client/replay.c - MDS requests kept for replay: applied, answered, and not
 * yet on the MDS's disk (notes/replay-design.md, steps 1 and 2).
 *
 * DESIGN. Every reply to a request with a replay prefix carries a reply
 * prefix (net/frame.h, struct weir_txn_hdr): the transno (the MDS write
 * sequence of the batch that applied the request, 0 when it changed
 * nothing) and last_committed (the write sequence the MDS had synced to its
 * log). A request answered with transno > last_committed is acknowledged
 * but would be lost with the MDS's host (the WAL sync runs every
 * --commit-interval). wc_replay_note() keeps a copy of such a request: its
 * opcode, its packed body, its replay prefix (the same xid and tag, so the
 * MDS's reply cache can tell a replay of a request that survived), its
 * transno, and for a create the FID the reply gave; in transno order. Every
 * reply's last_committed (MDS_LEASE_RENEW's too) frees each kept request
 * with transno <= it.
 *
 * After a restart of the MDS, in its recovery window, wc_replay_resend()
 * sends the whole list (MDS_REPLAY txns, with each create's FID and
 * layout) before the opens and locks; the MDS re-runs what its log lost, in
 * transno order across all its clients, syncs, and answers; then the list
 * is freed (mds/recovery.c). While the window is open the MDS's
 * last_committed stays at the transno its log kept, so nothing it lost is
 * freed before. A mount evicted instead drops the list (wc_replay_forget).
 *
 * Bound: WC_REPLAY_CAP_BYTES of kept requests (bodies and bookkeeping) per
 * mount. A note that leaves the list over the cap makes the caller ask the
 * MDS for a sync (MDS_SYNC of the whole MDT, wc_replay_sync_if_full()),
 * whose reply's last_committed covers every request kept so far and drains
 * the list; while that sync is away (the MDS down), the list keeps growing
 * past the cap: dropping a request would lose it for good.
 *
 * Lock: rp_lock guards the list and the counters; a leaf, never held
 * across a call.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

void wc_replay_init(struct weir_fs *fs)
{
	struct wc_replay *rp = &fs->fs_replay;
	memset(rp, 0, sizeof(*rp));
	pthread_mutex_init(&rp->rp_lock, NULL);
	rp->rp_cap_bytes = WC_REPLAY_CAP_BYTES;
}

void wc_replay_fini(struct weir_fs *fs)
{
	struct wc_replay *rp = &fs->fs_replay;
	while (rp->rp_head) {
		struct wc_kept *k = rp->rp_head;
		rp->rp_head = k->wk_next;
		free(k);
	}
	rp->rp_tail = NULL;
	pthread_mutex_destroy(&rp->rp_lock);
}

/* Free every kept request with transno <= \a lc. Called with rp_lock held. */
static void replay_drain_locked(struct wc_replay *rp, uint64_t lc)
{
	if (lc > rp->rp_last_committed)
		rp->rp_last_committed = lc;
	while (rp->rp_head && rp->rp_head->wk_transno <= rp->rp_last_committed) {
		struct wc_kept *k = rp->rp_head;
		rp->rp_head = k->wk_next;
		rp->rp_bytes -= sizeof(*k) + k->wk_len + k->wk_lo_len;
		rp->rp_nr--;
		free(k);
	}
	if (!rp->rp_head)
		rp->rp_tail = NULL;
}

/* The FID (and the layout, NULL if none) a create's reply gave, if \a rep is one. */
static bool replay_rep_fid(const ProtobufCMessageDescriptor *rep_d, const void *rep,
			   struct weir_fid *fid, const Weir__Layout **lo)
{
	const Weir__Attr *a = NULL;
	*lo = NULL;
	if (!rep)
		return false;
	if (rep_d == &weir__open_rep__descriptor) {
		a = ((const Weir__OpenRep *)rep)->attr;
		*lo = ((const Weir__OpenRep *)rep)->layout;
	} else if (rep_d == &weir__attr_rep__descriptor) {
		a = ((const Weir__AttrRep *)rep)->attr;
		*lo = ((const Weir__AttrRep *)rep)->layout;
	}
	if (!a || !a->fid)
		return false;
	wc_fid_from_pb(a->fid, fid);
	return true;
}

bool wc_replay_note(struct weir_fs *fs, const struct net_call *call,
		    const struct weir_xid_hdr *x, const ProtobufCMessageDescriptor *rep_d,
		    const void *rep)
{
	struct wc_replay *rp = &fs->fs_replay;
	struct wc_kept *k = NULL;

	if (!call->nc_rep_txn)
		return false;
	if (call->nc_transno > call->nc_last_committed && x) {
		size_t len = call->nc_req ? protobuf_c_message_get_packed_size(call->nc_req) : 0;
		struct weir_fid fid;
		const Weir__Layout *lo;
		/* (a CLOSE's AttrRep is the file after it, not something it made) */
		bool has_fid = call->nc_opcode != WEIR__WIRE_OP__MDS_CLOSE &&
			       replay_rep_fid(rep_d, rep, &fid, &lo);
		/* only a create's layout: the objects it chose (their data) */
		size_t lo_len = has_fid && lo ? protobuf_c_message_get_packed_size(&lo->base) : 0;
		k = malloc(sizeof(*k) + len + lo_len);
		if (!k) {
			/* the request is answered; only its replay is lost */
			WEIR_LOG_WARN("op=%u transno=%llu: no memory to keep it for replay",
				      call->nc_opcode, (unsigned long long)call->nc_transno);
		} else {
			memset(k, 0, sizeof(*k));
			k->wk_transno = call->nc_transno;
			k->wk_op = call->nc_opcode;
			k->wk_xid = *x;
			k->wk_len = len;
			k->wk_lo_len = lo_len;
			if (len)
				protobuf_c_message_pack(call->nc_req, k->wk_body);
			if (lo_len)
				protobuf_c_message_pack(&lo->base, k->wk_body + len);
			k->wk_has_fid = has_fid;
			k->wk_fid = fid;
		}
	}

	bool full = false;
	pthread_mutex_lock(&rp->rp_lock);
	if (k)
		k->wk_gen = rp->rp_gen;
	if (k && k->wk_transno > rp->rp_last_committed) {
		/* in transno order: replies come back nearly in order, so look from the tail */
		if (!rp->rp_tail || rp->rp_tail->wk_transno <= k->wk_transno) {
			if (rp->rp_tail)
				rp->rp_tail->wk_next = k;
			else
				rp->rp_head = k;
			rp->rp_tail = k;
		} else {
			struct wc_kept **pp = &rp->rp_head;
			while ((*pp)->wk_transno <= k->wk_transno)
				pp = &(*pp)->wk_next;
			k->wk_next = *pp;
			*pp = k;
		}
		rp->rp_bytes += sizeof(*k) + k->wk_len + k->wk_lo_len;
		rp->rp_nr++;
		rp->rp_nr_total++;
		if (rp->rp_nr > rp->rp_peak)
			rp->rp_peak = rp->rp_nr;
		full = rp->rp_bytes > rp->rp_cap_bytes;
		k = NULL;
	}
	replay_drain_locked(rp, call->nc_last_committed);
	pthread_mutex_unlock(&rp->rp_lock);
	free(k); /* already committed by what another reply said */
	return full;
}

void wc_replay_sync_if_full(struct weir_fs *fs)
{
	struct wc_replay *rp = &fs->fs_replay;
	Weir__SyncReq req = WEIR__SYNC_REQ__INIT;
	Weir__Cred cred;

	pthread_mutex_lock(&rp->rp_lock);
	bool full = rp->rp_bytes > rp->rp_cap_bytes;
	if (full)
		rp->rp_syncs++;
	uint64_t bytes = rp->rp_bytes;
	pthread_mutex_unlock(&rp->rp_lock);
	if (!full)
		return;
	WEIR_LOG_INFO("kept=%llu bytes: over the replay cap; asking the MDS for a sync",
		      (unsigned long long)bytes);
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	/* changes nothing: its reply's last_committed drains the list */
	int rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_SYNC, &req.base, NULL, NULL);
	if (rc)
		WEIR_LOG_WARN("rc=%d: the sync asked for by the replay cap failed; the requests"
			      " stay kept", rc);
}

void wc_replay_stats(struct weir_fs *fs, struct wc_replay_stats *st)
{
	struct wc_replay *rp = &fs->fs_replay;
	pthread_mutex_lock(&rp->rp_lock);
	st->rs_nr_kept = rp->rp_nr;
	st->rs_bytes = rp->rp_bytes;
	st->rs_peak = rp->rp_peak;
	st->rs_nr_total = rp->rp_nr_total;
	st->rs_syncs = rp->rp_syncs;
	st->rs_last_committed = rp->rp_last_committed;
	st->rs_transno_max = rp->rp_tail ? rp->rp_tail->wk_transno : 0;
	st->rs_resent = rp->rp_resent;
	st->rs_lost = rp->rp_lost;
	pthread_mutex_unlock(&rp->rp_lock);
}

void wc_replay_set_cap(struct weir_fs *fs, uint64_t cap_bytes)
{
	pthread_mutex_lock(&fs->fs_replay.rp_lock);
	fs->fs_replay.rp_cap_bytes = cap_bytes;
	pthread_mutex_unlock(&fs->fs_replay.rp_lock);
}

/* Free every kept request of generation \a gen. Called with rp_lock held. \return how many. */
static uint64_t replay_drop_gen_locked(struct wc_replay *rp, uint32_t gen)
{
	uint64_t n = 0;
	struct wc_kept **pp = &rp->rp_head;
	rp->rp_tail = NULL;
	while (*pp) {
		struct wc_kept *k = *pp;
		if (k->wk_gen != gen) {
			rp->rp_tail = k;
			pp = &k->wk_next;
			continue;
		}
		*pp = k->wk_next;
		rp->rp_bytes -= sizeof(*k) + k->wk_len + k->wk_lo_len;
		rp->rp_nr--;
		free(k);
		n++;
	}
	return n;
}

void wc_replay_forget(struct weir_fs *fs, const char *why)
{
	struct wc_replay *rp = &fs->fs_replay;
	pthread_mutex_lock(&rp->rp_lock);
	uint64_t n = 0;
	while (rp->rp_head) {
		struct wc_kept *k = rp->rp_head;
		rp->rp_head = k->wk_next;
		free(k);
		n++;
	}
	rp->rp_tail = NULL;
	rp->rp_bytes = rp->rp_nr = 0;
	rp->rp_last_committed = 0; /* the MDS's transnos go on from what it kept */
	rp->rp_gen++;
	rp->rp_lost += n;
	pthread_mutex_unlock(&rp->rp_lock);
	if (n)
		WEIR_LOG_ERROR("mds=%s: %llu requests the MDS acknowledged and had not synced are"
			       " not replayed (%s); what they changed may be lost",
			       fs->fs_mds_addr, (unsigned long long)n, why);
}

/* Bytes of one MDS_REPLAY request's txns, at most (well under WEIR_FRAME_MAX_BODY). */
#define WC_REPLAY_TXN_BYTES (3U << 20)

/* One kept request, copied for sending. */
struct rs_ent {
	Weir__ReplayTxn re_txn;
	Weir__Fid re_fid;
	uint8_t re_xid[WEIR_XID_HDR_SIZE];
	size_t re_off, re_len, re_lo_len; /* in the copy */
};

/*
 * Send \a ptrs[0..nr) in requests of at most WC_REPLAY_TXN_BYTES, then one
 * with txns_last alone. A request that timed out is sent again (the MDS
 * drops a request it has already: same transno and replay prefix).
 */
static int replay_send(struct weir_fs *fs, uint64_t session, uint64_t old_session,
		       Weir__ReplayTxn **ptrs, size_t nr)
{
	size_t i = 0;
	int rc;
	for (;;) {
		Weir__ReplayReq req = WEIR__REPLAY_REQ__INIT;
		req.session = session;
		req.old_session = old_session;
		req.txns = nr ? ptrs + i : NULL;
		size_t n = 0, b = 0;
		while (i + n < nr && (n == 0 || b + ptrs[i + n]->body.len < WC_REPLAY_TXN_BYTES)) {
			b += ptrs[i + n]->body.len + 64 + WEIR_LAYOUT_MAX_STRIPES * 5;
			n++;
		}
		req.n_txns = n;
		req.txns_last = n == 0;
		/* the last waits until every client has sent its own, up to half the
		 * MDS's window (2 leases by default) */
		uint32_t tmo = req.txns_last ? 2 * fs->fs_lease_ms + fs->fs_rpc_timeout_ms
					     : fs->fs_rpc_timeout_ms;
		int tries = 0;
		do
			rc = wc_mds_call_tmo(fs, WEIR__WIRE_OP__MDS_REPLAY, &req.base, NULL, NULL,
					     tmo);
		while (rc == -ETIMEDOUT && ++tries < 4);
		if (rc || req.txns_last)
			return rc;
		i += n;
	}
}

int wc_replay_resend(struct weir_fs *fs, uint64_t session, uint64_t old_session)
{
	struct wc_replay *rp = &fs->fs_replay;
	struct rs_ent *ents = NULL;
	Weir__ReplayTxn **ptrs = NULL;
	Weir__Layout **los = NULL;
	uint8_t *copy = NULL;
	size_t nr = 0, bytes = 0;
	int rc = 0;

	/* copy this generation out: replies of the new MDS may free what
	 * survived meanwhile; requests kept from now on are the next one */
	pthread_mutex_lock(&rp->rp_lock);
	uint32_t gen = rp->rp_gen++;
	rp->rp_last_committed = 0; /* the MDS's transnos go on from what it kept */
	for (struct wc_kept *k = rp->rp_head; k; k = k->wk_next)
		if (k->wk_gen == gen) {
			nr++;
			bytes += k->wk_len + k->wk_lo_len;
		}
	if (nr) {
		ents = calloc(nr, sizeof(*ents));
		ptrs = calloc(nr, sizeof(*ptrs));
		los = calloc(nr, sizeof(*los));
		copy = malloc(bytes ? bytes : 1);
	}
	if (nr && (!ents || !ptrs || !los || !copy)) {
		pthread_mutex_unlock(&rp->rp_lock);
		rc = -ENOMEM;
		goto out;
	}
	size_t i = 0, off = 0;
	for (struct wc_kept *k = rp->rp_head; k; k = k->wk_next) {
		if (k->wk_gen != gen)
			continue;
		struct rs_ent *e = &ents[i++];
		weir__replay_txn__init(&e->re_txn);
		e->re_txn.op = k->wk_op;
		e->re_txn.transno = k->wk_transno;
		weir_xid_encode(&k->wk_xid, e->re_xid);
		if (k->wk_has_fid)
			wc_fid_to_pb(&k->wk_fid, &e->re_fid);
		e->re_txn.fid = k->wk_has_fid ? &e->re_fid : NULL;
		memcpy(copy + off, k->wk_body, k->wk_len + k->wk_lo_len);
		e->re_off = off;
		e->re_len = k->wk_len;
		e->re_lo_len = k->wk_lo_len;
		off += k->wk_len + k->wk_lo_len;
	}
	pthread_mutex_unlock(&rp->rp_lock);

	for (i = 0; i < nr; i++) {
		struct rs_ent *e = &ents[i];
		e->re_txn.xid.data = e->re_xid;
		e->re_txn.xid.len = WEIR_XID_HDR_SIZE;
		e->re_txn.body.data = copy + e->re_off;
		e->re_txn.body.len = e->re_len;
		if (e->re_lo_len) /* the MDS chooses OSTs again if it does not unpack */
			los[i] = weir__layout__unpack(NULL, e->re_lo_len, copy + e->re_off + e->re_len);
		e->re_txn.layout = los[i];
		ptrs[i] = &e->re_txn;
	}
	rc = replay_send(fs, session, old_session, ptrs, nr);
	if (!rc && nr)
		WEIR_LOG_NOTICE("mds=%s session=%#llx: sent again %zu requests the MDS had"
				" acknowledged and not synced; it re-ran what its restart lost",
				fs->fs_mds_addr, (unsigned long long)session, nr);
out:
	pthread_mutex_lock(&rp->rp_lock);
	uint64_t n = 0;
	if (!rc) {
		/* re-run (or survived) and synced */
		replay_drop_gen_locked(rp, gen);
		rp->rp_resent += nr;
	} else if (rc == -ESTALE) {
		/* this session is unknown: the MDS restarted again meanwhile (kept
		 * for the next reconnect), or its window is over (then a later
		 * reply's last_committed frees them; an eviction drops them) */
		for (struct wc_kept *k = rp->rp_head; k; k = k->wk_next)
			if (k->wk_gen == gen) {
				k->wk_gen = rp->rp_gen;
				n++;
			}
	} else {
		/* refused (too many, malformed) or not re-run: never sent again */
		n = replay_drop_gen_locked(rp, gen);
		rp->rp_lost += n;
	}
	pthread_mutex_unlock(&rp->rp_lock);
	if (rc == -ESTALE && n)
		WEIR_LOG_WARN("mds=%s rc=%d: %llu requests the MDS acknowledged and had not synced"
			      " were not replayed; kept, to be sent at the next reconnect",
			      fs->fs_mds_addr, rc, (unsigned long long)n);
	else if (rc && n)
		WEIR_LOG_ERROR("mds=%s rc=%d: %llu requests the MDS acknowledged and had not synced"
			       " could not be replayed; what they changed may be lost",
			       fs->fs_mds_addr, rc, (unsigned long long)n);
	for (i = 0; los && i < nr; i++)
		if (los[i])
			weir__layout__free_unpacked(los[i], NULL);
	free(los);
	free(ents);
	free(ptrs);
	free(copy);
	return rc;
}
