/*
 * mds/hsm_svc.c - the HSM RPCs of the MDS (opcodes 70-80), the agents'
 * long poll, and the "mds-hsm" thread.
 *
 * DESIGN. Handlers run on the loop thread that read the request, check
 * every count and length from the wire, and call the coordinator
 * (mds/hsm.c, mds/hsm_act.c). MDS_HSM_AGENT_FETCH is a long poll: when no
 * task is ready the request is parked (up to wait_ms, at most 5 s) on a
 * list guarded by hv_lock (a leaf: never held while calling the
 * coordinator); the dispatcher hands work to parked fetches in arrival
 * order and answers the rest empty at their deadline. The dispatcher runs
 * on the "mds-hsm" thread, woken by the coordinator whenever work appears
 * (queued action, writer closed, action given back) and at least every
 * 100 ms while fetches are parked (a restore waiting for its destroy record
 * to go away, backoff expiry). The same thread gives back actions of
 * silent agents (hsm-action-timeout) and runs the watermark policy every
 * hsm-policy-interval (mds/hsm_policy.c).
 */
#define _GNU_SOURCE
#include "hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define NS_PER_MS 1000000ULL

struct hsm_park {
	struct net_req *pk_rq;
	char pk_agent[HSM_AGENT_MAX + 1];
	uint64_t pk_session;
	uint32_t pk_max;
	uint64_t pk_deadline_ns;       /* monotonic */
	struct hsm_park *pk_next;
};

struct hsm_srv {
	struct mds *hv_m;
	pthread_mutex_t hv_lock;       /* the parked list and the thread's wake-up (a leaf) */
	pthread_cond_t hv_cond;
	bool hv_kick;
	bool hv_stop;
	struct hsm_park *hv_parked;    /* arrival order */
	pthread_t hv_thread;
	bool hv_running;
};

/* Unpack a request body; on a malformed one, reply -EPROTO and return NULL. */
static void *unpack_or_reply(struct net_req *rq, const ProtobufCMessageDescriptor *d)
{
	void *req = net_req_unpack(rq, d);
	if (!req) {
		WEIR_LOG_WARN("peer=%s op=%u: malformed HSM request", rq->rq_peer,
			      rq->rq_hdr.fh_opcode);
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
	}
	return req;
}

static void fid_from_msg(const Weir__Fid *m, struct weir_fid *f)
{
	f->fid_seq = m ? m->seq : 0;
	f->fid_oid = m ? m->oid : 0;
}

static bool str_ok(const char *s, size_t max)
{
	return s && strnlen(s, max + 1) <= max;
}

/* ------------------------------------------------------------ DRAs */

static void dra_fill(const struct mds_hsm_dra *d, Weir__Dra *m, Weir__Fid *f)
{
	weir__dra__init(m);
	weir__fid__init(f);
	f->seq = d->hd_root.fid_seq;
	f->oid = d->hd_root.fid_oid;
	m->id = d->hd_id;
	m->root = f;
	m->path = (char *)d->hd_path;
	m->bucket = (char *)d->hd_bucket;
	m->prefix = (char *)d->hd_prefix;
	m->flags = d->hd_flags;
	m->created_ns = d->hd_created_ns;
}

void mds_hsm_handle_dra_create(struct mds *m, struct net_req *rq)
{
	Weir__DraReq *req = unpack_or_reply(rq, &weir__dra_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid at;
	struct mds_hsm_dra *d = calloc(1, sizeof(*d));
	int rc = d ? 0 : -ENOMEM;
	mds_svc_cred(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	if (!rc && (!str_ok(req->path, NS_PATH_MAX) || !str_ok(req->bucket, HSM_BUCKET_MAX) ||
		    !str_ok(req->prefix, HSM_KEY_MAX - 1)))
		rc = -EINVAL;
	if (!rc)
		rc = mds_hsm_dra_create(m->m_hsm, &cr, &at, req->path, req->bucket, req->prefix,
					req->flags, d);
	if (rc) {
		char b[96];
		WEIR_LOG_INFO("peer=%s path=%s bucket=%.64s rc=%s: DRA create refused", rq->rq_peer,
			      str_ok(req->path, NS_PATH_MAX) ? req->path : "?",
			      str_ok(req->bucket, 255) ? req->bucket : "?",
			      weir_rc_str(rc, b, sizeof(b)));
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		Weir__DraRep rep = WEIR__DRA_REP__INIT;
		Weir__Dra dm;
		Weir__Fid f;
		dra_fill(d, &dm, &f);
		rep.dra = &dm;
		net_req_reply(rq, 0, &rep.base, NULL, 0);
	}
	free(d);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_dra_list(struct mds *m, struct net_req *rq)
{
	struct mds_hsm_dra *d = NULL;
	size_t n = 0;
	int rc = mds_hsm_dra_list(m->m_hsm, &d, &n);
	Weir__Dra *dm = calloc(n ? n : 1, sizeof(*dm));
	Weir__Fid *f = calloc(n ? n : 1, sizeof(*f));
	Weir__Dra **dp = calloc(n ? n : 1, sizeof(*dp));
	if (!rc && (!dm || !f || !dp))
		rc = -ENOMEM;
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		Weir__DraListRep rep = WEIR__DRA_LIST_REP__INIT;
		for (size_t i = 0; i < n; i++) {
			dra_fill(&d[i], &dm[i], &f[i]);
			dp[i] = &dm[i];
		}
		rep.n_dras = n;
		rep.dras = dp;
		net_req_reply(rq, 0, &rep.base, NULL, 0);
	}
	free(d);
	free(dm);
	free(f);
	free(dp);
}

void mds_hsm_handle_dra_delete(struct mds *m, struct net_req *rq)
{
	Weir__DraReq *req = unpack_or_reply(rq, &weir__dra_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid at;
	mds_svc_cred(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	int rc = str_ok(req->path, NS_PATH_MAX) ? mds_hsm_dra_delete(m->m_hsm, &cr, &at, req->path)
						: -EINVAL;
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------------ import, request, state, queue */

void mds_hsm_handle_import(struct mds *m, struct net_req *rq)
{
	Weir__HsmImportReq *req = unpack_or_reply(rq, &weir__hsm_import_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid dir;
	struct mds_hsm_import_ent *ents = NULL;
	int32_t *res = NULL;
	int rc = 0;
	mds_svc_cred(m, req->cred, &cr);
	fid_from_msg(req->dir, &dir);
	if (req->n_ents > HSM_IMPORT_MAX) {
		WEIR_LOG_WARN("peer=%s entries=%zu: import batch over %d entries", rq->rq_peer,
			      req->n_ents, HSM_IMPORT_MAX);
		rc = -E2BIG;
	} else if (!req->dir) {
		rc = -EINVAL;
	}
	if (!rc) {
		ents = calloc(req->n_ents ? req->n_ents : 1, sizeof(*ents));
		res = calloc(req->n_ents ? req->n_ents : 1, sizeof(*res));
		if (!ents || !res)
			rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < req->n_ents; i++) {
		const Weir__HsmImportEnt *e = req->ents[i];
		/* lengths are checked per entry by the coordinator (an entry fails alone) */
		ents[i].ie_name = e->name;
		ents[i].ie_size = e->size;
		ents[i].ie_mtime_ns = e->mtime_ns;
		ents[i].ie_etag = e->etag;
		ents[i].ie_key = e->key;
		ents[i].ie_deleted = e->deleted;
	}
	if (!rc)
		rc = mds_hsm_import(m->m_hsm, &cr, req->dra, &dir, ents, req->n_ents, req->mode,
				    mds_cmap_choose, m, res);
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		Weir__HsmImportRep rep = WEIR__HSM_IMPORT_REP__INIT;
		rep.n_result = req->n_ents;
		rep.result = res;
		net_req_reply(rq, 0, &rep.base, NULL, 0);
		mds_destroy_kick(m); /* updated files may have released objects */
	}
	free(ents);
	free(res);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_request(struct mds *m, struct net_req *rq)
{
	Weir__HsmRequestReq *req = unpack_or_reply(rq, &weir__hsm_request_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid *fids = NULL;
	uint64_t *ids = NULL;
	int32_t *rcs = NULL;
	size_t n = req->n_fids, released = 0;
	int rc = 0;
	mds_svc_cred(m, req->cred, &cr);
	if (n > HSM_REQUEST_MAX) {
		WEIR_LOG_WARN("peer=%s fids=%zu: HSM request over %d files", rq->rq_peer, n,
			      HSM_REQUEST_MAX);
		rc = -E2BIG;
	}
	if (!rc) {
		fids = calloc(n ? n : 1, sizeof(*fids));
		ids = calloc(n ? n : 1, sizeof(*ids));
		rcs = calloc(n ? n : 1, sizeof(*rcs));
		if (!fids || !ids || !rcs)
			rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < n; i++)
		fid_from_msg(req->fids[i], &fids[i]);
	if (!rc)
		rc = mds_hsm_request(m->m_hsm, &cr, req->action, fids, n, ids, rcs, &released);
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		if (released)
			mds_destroy_kick(m);
		Weir__HsmRequestRep rep = WEIR__HSM_REQUEST_REP__INIT;
		rep.n_ids = rep.n_rc = n;
		rep.ids = ids;
		rep.rc = rcs;
		net_req_reply(rq, 0, &rep.base, NULL, 0);
	}
	free(fids);
	free(ids);
	free(rcs);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_state(struct mds *m, struct net_req *rq)
{
	Weir__HsmStateReq *req = unpack_or_reply(rq, &weir__hsm_state_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid at, fid;
	struct mds_hsm_state *st = calloc(1, sizeof(*st));
	int rc = st ? 0 : -ENOMEM;
	mds_svc_cred(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	fid_from_msg(req->fid, &fid);
	if (!rc && !req->fid && !str_ok(req->path, NS_PATH_MAX))
		rc = -EINVAL;
	if (!rc)
		rc = mds_hsm_state_get(m->m_hsm, &cr, &at, req->path, req->fid ? &fid : NULL, st);
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		Weir__HsmStateRep rep = WEIR__HSM_STATE_REP__INIT;
		Weir__Fid f = WEIR__FID__INIT;
		f.seq = st->st_fid.fid_seq;
		f.oid = st->st_fid.fid_oid;
		rep.flags = st->st_flags;
		rep.dra = st->st_dra;
		rep.bucket = st->st_bucket;
		rep.key = st->st_key;
		rep.etag = st->st_etag;
		rep.data_version = st->st_data_version;
		rep.archived_version = st->st_archived_version;
		rep.size = st->st_size;
		rep.restored_bytes = st->st_restored;
		rep.action_id = st->st_action_id;
		rep.action = st->st_action;
		rep.archived_ns = st->st_archived_ns;
		rep.fid = &f;
		net_req_reply(rq, 0, &rep.base, NULL, 0);
	}
	free(st);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_queue(struct mds *m, struct net_req *rq)
{
	Weir__HsmQueueReq *req = unpack_or_reply(rq, &weir__hsm_queue_req__descriptor);
	if (!req)
		return;
	struct mds_hsm_queue_info qi;
	Weir__HsmActionInfo *ai = NULL, **ap = NULL;
	Weir__Fid *fids = NULL;
	int rc = req->n_ids > HSM_REQUEST_MAX ? -E2BIG : 0;
	memset(&qi, 0, sizeof(qi));
	if (!rc)
		rc = mds_hsm_queue_get(m->m_hsm, req->ids, req->n_ids, &qi);
	if (!rc) {
		size_t n = qi.qi_nr ? qi.qi_nr : 1;
		ai = calloc(n, sizeof(*ai));
		ap = calloc(n, sizeof(*ap));
		fids = calloc(n, sizeof(*fids));
		if (!ai || !ap || !fids)
			rc = -ENOMEM;
	}
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
		goto out;
	}
	Weir__HsmQueueRep rep = WEIR__HSM_QUEUE_REP__INIT;
	for (size_t i = 0; i < qi.qi_nr; i++) {
		const struct mds_hsm_action_info *x = &qi.qi_actions[i];
		weir__hsm_action_info__init(&ai[i]);
		weir__fid__init(&fids[i]);
		fids[i].seq = x->ai_fid.fid_seq;
		fids[i].oid = x->ai_fid.fid_oid;
		ai[i].id = x->ai_id;
		ai[i].action = x->ai_action;
		ai[i].fid = &fids[i];
		ai[i].state = x->ai_state;
		ai[i].rc = x->ai_rc;
		ai[i].bytes_total = x->ai_bytes_total;
		ai[i].bytes_done = x->ai_bytes_done;
		ai[i].agent = (char *)x->ai_agent;
		ai[i].queued_ns = x->ai_queued_ns;
		ai[i].key = (char *)x->ai_key;
		ap[i] = &ai[i];
	}
	rep.n_actions = qi.qi_nr;
	rep.actions = ap;
	rep.backlog_bytes = qi.qi_backlog_bytes;
	rep.archived_bytes = qi.qi_archived_bytes;
	rep.restored_bytes = qi.qi_restored_bytes;
	rep.archive_bps = qi.qi_archive_bps;
	rep.restore_bps = qi.qi_restore_bps;
	rep.agents = qi.qi_agents;
	rep.done = qi.qi_done;
	rep.failed = qi.qi_failed;
	rep.waiting = qi.qi_waiting;
	rep.running = qi.qi_running;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
out:
	mds_hsm_queue_free(&qi);
	free(ai);
	free(ap);
	free(fids);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_restore_wait(struct mds *m, struct net_req *rq)
{
	Weir__HsmRangeReq *req = unpack_or_reply(rq, &weir__hsm_range_req__descriptor);
	if (!req)
		return;
	struct mds_cred cr;
	struct weir_fid fid;
	bool released = false, ready = false;
	mds_svc_cred(m, req->cred, &cr);
	fid_from_msg(req->fid, &fid);
	int rc = req->fid ? mds_hsm_restore_wait(m->m_hsm, &cr, &fid, req->offset, req->length,
						 &released, &ready)
			  : -EINVAL;
	Weir__HsmRangeRep rep = WEIR__HSM_RANGE_REP__INIT;
	rep.released = released;
	rep.ready = ready;
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------------ agents */

/* Answer \a rq with \a nr tasks (0: an empty answer). */
static void fetch_reply(struct net_req *rq, const struct mds_hsm_task *tk, uint32_t nr)
{
	Weir__HsmFetchRep rep = WEIR__HSM_FETCH_REP__INIT;
	Weir__HsmTask *t = calloc(nr ? nr : 1, sizeof(*t));
	Weir__HsmTask **tp = calloc(nr ? nr : 1, sizeof(*tp));
	Weir__Fid *f = calloc(nr ? nr : 1, sizeof(*f));
	if (!t || !tp || !f) {
		/* the tasks stay RUNNING until hsm-action-timeout gives them back */
		net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		goto out;
	}
	for (uint32_t i = 0; i < nr; i++) {
		weir__hsm_task__init(&t[i]);
		weir__fid__init(&f[i]);
		f[i].seq = tk[i].tk_fid.fid_seq;
		f[i].oid = tk[i].tk_fid.fid_oid;
		t[i].id = tk[i].tk_id;
		t[i].action = tk[i].tk_action;
		t[i].fid = &f[i];
		t[i].bucket = (char *)tk[i].tk_bucket;
		t[i].key = (char *)tk[i].tk_key;
		t[i].etag = (char *)tk[i].tk_etag;
		t[i].size = tk[i].tk_size;
		t[i].chunk = tk[i].tk_chunk;
		t[i].done_map.data = (uint8_t *)tk[i].tk_map;
		t[i].done_map.len = tk[i].tk_map_len;
		t[i].hint = tk[i].tk_hint;
		t[i].data_version = tk[i].tk_data_version;
		t[i].upload_id = (char *)tk[i].tk_upload_id;
		t[i].dra_flags = tk[i].tk_dra_flags;
		t[i].token = tk[i].tk_token;
		tp[i] = &t[i];
	}
	rep.n_tasks = nr;
	rep.tasks = tp;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
out:
	free(t);
	free(tp);
	free(f);
}

/* Serve parked fetches in order: work, or an empty answer at the deadline. */
static void dispatch(struct mds *m)
{
	struct hsm_srv *hv = m->m_hsm_srv;
	struct mds_hsm_task *tk = NULL;
	pthread_mutex_lock(&hv->hv_lock);
	struct hsm_park *list = hv->hv_parked, *keep = NULL, **kt = &keep;
	hv->hv_parked = NULL;
	pthread_mutex_unlock(&hv->hv_lock);
	if (!list)
		return;
	uint64_t now = weir_now_ns();
	while (list) {
		struct hsm_park *pk = list;
		list = pk->pk_next;
		pk->pk_next = NULL;
		uint32_t nr = 0;
		if (!tk)
			tk = malloc(HSM_FETCH_MAX * sizeof(*tk));
		if (tk)
			mds_hsm_fetch(m->m_hsm, pk->pk_agent, pk->pk_session, pk->pk_max, tk, &nr);
		if (nr || now >= pk->pk_deadline_ns || hv->hv_stop) {
			fetch_reply(pk->pk_rq, tk, nr);
			free(pk);
			continue;
		}
		*kt = pk;
		kt = &pk->pk_next;
	}
	free(tk);
	if (!keep)
		return;
	/* put the unserved ones back in front, in their order */
	pthread_mutex_lock(&hv->hv_lock);
	*kt = hv->hv_parked;
	hv->hv_parked = keep;
	pthread_mutex_unlock(&hv->hv_lock);
}

void mds_hsm_handle_fetch(struct mds *m, struct net_req *rq)
{
	Weir__HsmFetchReq *req = unpack_or_reply(rq, &weir__hsm_fetch_req__descriptor);
	if (!req)
		return;
	struct hsm_srv *hv = m->m_hsm_srv;
	if (!str_ok(req->agent, 255)) {
		net_req_reply(rq, -EINVAL, NULL, NULL, 0);
		goto out;
	}
	if (req->session)
		mds_session_touch(m, req->session); /* an agent polling is alive */
	struct hsm_park *pk = calloc(1, sizeof(*pk));
	if (!pk) {
		net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		goto out;
	}
	pk->pk_rq = rq;
	snprintf(pk->pk_agent, sizeof(pk->pk_agent), "%s", req->agent[0] ? req->agent : "?");
	pk->pk_session = req->session;
	pk->pk_max = WEIR_MIN(req->max ? req->max : 1, (uint32_t)HSM_FETCH_MAX);
	pk->pk_deadline_ns = weir_now_ns() +
			     WEIR_MIN(req->wait_ms, (uint32_t)HSM_FETCH_WAIT_MAX_MS) * NS_PER_MS;
	pthread_mutex_lock(&hv->hv_lock);
	struct hsm_park **pp = &hv->hv_parked;
	while (*pp)
		pp = &(*pp)->pk_next;
	*pp = pk;
	pthread_mutex_unlock(&hv->hv_lock);
	/* work may be ready now; a wait_ms of 0 is answered here either way */
	dispatch(m);
	mds_hsm_kick(m);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_progress(struct mds *m, struct net_req *rq)
{
	Weir__HsmProgressReq *req = unpack_or_reply(rq, &weir__hsm_progress_req__descriptor);
	if (!req)
		return;
	struct mds_hsm_progress_rep pr;
	int rc = str_ok(req->upload_id, HSM_UPLOAD_ID_MAX)
			 ? mds_hsm_progress(m->m_hsm, req->id, req->token, req->offset,
					    req->length, req->bytes_done, req->upload_id, &pr)
			 : -EINVAL;
	if (rc == -ENOENT) {
		/* cancelled (file removed) or finished: tell the agent to stop */
		memset(&pr, 0, sizeof(pr));
		pr.pr_cancel = true;
		rc = 0;
	}
	if (rc)
		WEIR_LOG_WARN("peer=%s action=%llu offset=%llu length=%llu rc=%d: bad progress",
			      rq->rq_peer, (unsigned long long)req->id,
			      (unsigned long long)req->offset, (unsigned long long)req->length, rc);
	Weir__HsmProgressRep rep = WEIR__HSM_PROGRESS_REP__INIT;
	rep.has_want = pr.pr_has_want;
	rep.want = pr.pr_want;
	rep.cancel = pr.pr_cancel;
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

void mds_hsm_handle_done(struct mds *m, struct net_req *rq)
{
	Weir__HsmDoneReq *req = unpack_or_reply(rq, &weir__hsm_done_req__descriptor);
	if (!req)
		return;
	int rc = -EINVAL;
	if (str_ok(req->etag, HSM_ETAG_MAX) && str_ok(req->message, 4096))
		rc = mds_hsm_done(m->m_hsm, req->id, req->token, req->rc, req->etag, req->size,
				  req->mtime_ns, req->message);
	if (!rc && req->rc == -ESTALE)
		mds_destroy_kick(m); /* a re-import queues the old version's objects */
	if (rc)
		WEIR_LOG_INFO("peer=%s action=%llu agent_rc=%d rc=%d: completion not applied",
			      rq->rq_peer, (unsigned long long)req->id, req->rc, rc);
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------------ the thread */

void mds_hsm_kick(struct mds *m)
{
	struct hsm_srv *hv = m->m_hsm_srv;
	if (!hv)
		return;
	pthread_mutex_lock(&hv->hv_lock);
	hv->hv_kick = true;
	pthread_cond_signal(&hv->hv_cond);
	pthread_mutex_unlock(&hv->hv_lock);
}

static void core_kick(void *arg)
{
	mds_hsm_kick(arg);
}

void mds_hsm_evicted(struct mds *m, uint64_t session)
{
	if (m->m_hsm)
		mds_hsm_session_evicted(m->m_hsm, session);
}

static void *hsm_main(void *arg)
{
	struct mds *m = arg;
	struct hsm_srv *hv = m->m_hsm_srv;
	const struct mds_hsm_conf *c = mds_hsm_conf_get(m->m_hsm);
	uint64_t next_policy = weir_now_ns() + c->hc_policy_interval_ms * NS_PER_MS;
	uint64_t next_expire = 0;
	weir_thread_name("mds-hsm");
	pthread_mutex_lock(&hv->hv_lock);
	while (!hv->hv_stop) {
		if (!hv->hv_kick) {
			struct timespec ts;
			uint64_t ms = hv->hv_parked ? 100 : 1000;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + ms * NS_PER_MS;
			ts.tv_sec += (time_t)(ns / 1000000000ULL);
			ts.tv_nsec = (long)(ns % 1000000000ULL);
			pthread_cond_timedwait(&hv->hv_cond, &hv->hv_lock, &ts);
		}
		hv->hv_kick = false;
		if (hv->hv_stop)
			break;
		pthread_mutex_unlock(&hv->hv_lock);
		dispatch(m);
		uint64_t now = weir_now_ns();
		if (now >= next_expire) {
			mds_hsm_expire(m->m_hsm);
			next_expire = now + 1000 * NS_PER_MS;
		}
		if (now >= next_policy) {
			mds_hsm_policy_pass(m);
			next_policy = weir_now_ns() + c->hc_policy_interval_ms * NS_PER_MS;
		}
		pthread_mutex_lock(&hv->hv_lock);
	}
	pthread_mutex_unlock(&hv->hv_lock);
	return NULL;
}

int mds_hsm_start(struct mds *m, const struct mds_hsm_conf *conf)
{
	struct hsm_srv *hv = calloc(1, sizeof(*hv));
	if (!hv)
		return -ENOMEM;
	hv->hv_m = m;
	pthread_mutex_init(&hv->hv_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hv->hv_cond, &ca);
	pthread_condattr_destroy(&ca);
	m->m_hsm_srv = hv;
	int rc = mds_hsm_open(m->m_ns, conf, core_kick, m, &m->m_hsm);
	if (!rc)
		rc = -pthread_create(&hv->hv_thread, NULL, hsm_main, m);
	if (rc) {
		mds_hsm_close(m->m_hsm);
		m->m_hsm = NULL;
		m->m_hsm_srv = NULL;
		pthread_cond_destroy(&hv->hv_cond);
		pthread_mutex_destroy(&hv->hv_lock);
		free(hv);
		return rc;
	}
	hv->hv_running = true;
	const struct mds_hsm_conf *c = mds_hsm_conf_get(m->m_hsm);
	WEIR_LOG_INFO("hsm: high=%u%% low=%u%% min_age=%llus interval=%llums action_timeout=%llums",
		      c->hc_high_pct, c->hc_low_pct, (unsigned long long)c->hc_min_age_s,
		      (unsigned long long)c->hc_policy_interval_ms,
		      (unsigned long long)c->hc_action_timeout_ms);
	return 0;
}

void mds_hsm_stop(struct mds *m)
{
	struct hsm_srv *hv = m->m_hsm_srv;
	if (!hv)
		return;
	pthread_mutex_lock(&hv->hv_lock);
	hv->hv_stop = true;
	pthread_cond_signal(&hv->hv_cond);
	pthread_mutex_unlock(&hv->hv_lock);
	if (hv->hv_running)
		pthread_join(hv->hv_thread, NULL);
	while (hv->hv_parked) {
		struct hsm_park *pk = hv->hv_parked;
		hv->hv_parked = pk->pk_next;
		net_req_reply(pk->pk_rq, -ESHUTDOWN, NULL, NULL, 0);
		free(pk);
	}
	mds_hsm_close(m->m_hsm);
	m->m_hsm = NULL;
	m->m_hsm_srv = NULL;
	pthread_cond_destroy(&hv->hv_cond);
	pthread_mutex_destroy(&hv->hv_lock);
	free(hv);
}
