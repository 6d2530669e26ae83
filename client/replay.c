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
 * Nothing is replayed yet: the kept list is only filled and drained. The
 * next step (design step 3) resends it, in transno order, in the MDS's
 * recovery window after a restart, before MDS_REPLAY.
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
		rp->rp_bytes -= sizeof(*k) + k->wk_len;
		rp->rp_nr--;
		free(k);
	}
	if (!rp->rp_head)
		rp->rp_tail = NULL;
}

/* The FID a create's reply gave, if \a rep is one. */
static bool replay_rep_fid(const ProtobufCMessageDescriptor *rep_d, const void *rep,
			   struct weir_fid *fid)
{
	const Weir__Attr *a = NULL;
	if (!rep)
		return false;
	if (rep_d == &weir__open_rep__descriptor)
		a = ((const Weir__OpenRep *)rep)->attr;
	else if (rep_d == &weir__attr_rep__descriptor)
		a = ((const Weir__AttrRep *)rep)->attr;
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
		k = malloc(sizeof(*k) + len);
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
			if (len)
				protobuf_c_message_pack(call->nc_req, k->wk_body);
			k->wk_has_fid = replay_rep_fid(rep_d, rep, &k->wk_fid);
		}
	}

	bool full = false;
	pthread_mutex_lock(&rp->rp_lock);
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
		rp->rp_bytes += sizeof(*k) + k->wk_len;
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
	pthread_mutex_unlock(&rp->rp_lock);
}

void wc_replay_set_cap(struct weir_fs *fs, uint64_t cap_bytes)
{
	pthread_mutex_lock(&fs->fs_replay.rp_lock);
	fs->fs_replay.rp_cap_bytes = cap_bytes;
	pthread_mutex_unlock(&fs->fs_replay.rp_lock);
}
