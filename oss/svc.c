/*
 * oss/svc.c - the OSS request handlers (one per OST_* opcode, and PING),
 * the per-loop set-up, and the server's start and stop (oss.h).
 *
 * Every handler runs on the event loop thread that read the request. It
 * validates the body (nothing from the network is trusted), then either
 * works on the object with plain syscalls (oss/obj.c: OST_GETATTR,
 * OST_SEEK; OST_TRUNCATE, OST_DESTROY and OST_DESTROY_BATCH, which can wait
 * for the disk, on
 * the oss-slow threads of oss/slow.c) and replies, or queues its
 * data I/O on the loop's ring (oss/svc_io.c: OST_READ, OST_WRITE, OST_FSYNC,
 * OST_FALLOCATE), whose completion callback replies on the same loop thread.
 * Many requests are in flight on one loop at once; net/server.c bounds them
 * per connection (sc_max_inflight).
 *
 * Errors: every failed request logs one line with op=, ost=, fid= fields
 * (WARN for the requester's mistakes, ERROR for the server's own failures).
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/layout.h"
#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/** Per-connection requests in flight before net/ stops reading the connection. */
#define OSS_MAX_INFLIGHT 64

/* Requester mistakes log at WARN; the server's own failures at ERROR. */
static bool svc_rc_is_client(int rc)
{
	return rc == -EINVAL || rc == -EPROTO || rc == -ENODEV || rc == -EFBIG ||
	       rc == -EOPNOTSUPP;
}

void oss_svc_fail(struct net_req *rq, const char *op, const struct oss_target *t, int rc,
		  const char *why)
{
	char rcs[96];
	char fids[WEIR_FID_STR_MAX] = "-";
	char osts[24] = "-";

	if (t && t->tg_has_fid)
		weir_fid_to_str(&t->tg_obj.ob_fid, fids, sizeof(fids));
	if (t)
		snprintf(osts, sizeof(osts), "%u", t->tg_ost_idx);
	if (rc == -EACCES || rc == -EAGAIN) /* capabilities: a peer can send these at will */
		WEIR_LOG_WARN_RL("op=%s ost=%s fid=%s stripe=%u peer=%s reqid=%llu rc=%s: %s", op,
				 osts, fids, t ? t->tg_obj.ob_stripe : 0, rq->rq_peer,
				 (unsigned long long)rq->rq_hdr.fh_reqid,
				 weir_rc_str(rc, rcs, sizeof(rcs)), why);
	else if (rc == -EAGAIN) /* no capability key yet: every request until registered */
		WEIR_LOG_RL(WEIR_LOG_LVL_NOTICE,
			    "op=%s ost=%s fid=%s stripe=%u peer=%s reqid=%llu rc=%s: %s", op, osts,
			    fids, t ? t->tg_obj.ob_stripe : 0, rq->rq_peer,
			    (unsigned long long)rq->rq_hdr.fh_reqid,
			    weir_rc_str(rc, rcs, sizeof(rcs)), why);
	else
		WEIR_LOG_AT(svc_rc_is_client(rc) ? WEIR_LOG_LVL_WARN : WEIR_LOG_LVL_ERROR,
			    "op=%s ost=%s fid=%s stripe=%u peer=%s reqid=%llu rc=%s: %s", op, osts,
			    fids, t ? t->tg_obj.ob_stripe : 0, rq->rq_peer,
			    (unsigned long long)rq->rq_hdr.fh_reqid,
			    weir_rc_str(rc, rcs, sizeof(rcs)), why);
	net_req_reply(rq, rc, NULL, NULL, 0);
}

int oss_svc_target(struct net_req *rq, uint32_t ost, const Weir__Fid *fid, uint32_t stripe,
		   const Weir__Capa *capa, uint32_t need, struct oss_target *t, const char **why)
{
	struct oss *oss = rq->rq_srv_arg;

	memset(t, 0, sizeof(*t));
	t->tg_ost_idx = ost;
	t->tg_obj.ob_stripe = stripe;
	if (!fid) {
		*why = "request has no fid";
		return -EPROTO;
	}
	t->tg_obj.ob_fid = (struct weir_fid){ fid->seq, fid->oid };
	t->tg_has_fid = true;
	if (weir_fid_is_zero(&t->tg_obj.ob_fid)) {
		*why = "zero fid";
		return -EINVAL;
	}
	if (stripe >= WEIR_LAYOUT_MAX_STRIPES) {
		*why = "stripe index out of range";
		return -EINVAL;
	}
	t->tg_obj.ob_ost = oss_ost_find(oss, ost);
	if (!t->tg_obj.ob_ost) {
		*why = "no such OST here (or index not yet assigned by the MDS)";
		return -ENODEV;
	}
	return oss_capa_check(oss, capa, &t->tg_obj.ob_fid, need, why);
}

/* ------------------------------------------------ OST_GETATTR, OST_TRUNCATE */

static void svc_attr_reply(struct net_req *rq, const struct oss_obj_attr *oa)
{
	Weir__ObjAttrRep rep = WEIR__OBJ_ATTR_REP__INIT;

	if (oa->oa_exists) {
		rep.exists = true;
		rep.size = oa->oa_size;
		rep.blocks = oa->oa_blocks;
		rep.mtime_ns = oa->oa_mtime_ns;
	}
	net_req_reply(rq, 0, &rep.base, NULL, 0);
}

static void svc_getattr(struct net_req *rq)
{
	struct oss_target t;
	struct oss_obj_attr oa;
	const char *why = "";

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "getattr", NULL, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_GETATTR,
				&t, &why);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc) {
		rc = oss_obj_getattr(&t.tg_obj, &oa);
		why = "stat failed";
	}
	if (rc) {
		oss_svc_fail(rq, "getattr", &t, rc, why);
		return;
	}
	svc_attr_reply(rq, &oa);
}

static void svc_truncate(struct net_req *rq)
{
	struct oss_target t;
	struct oss_obj_attr oa;
	const char *why = "";

	Weir__ObjTruncReq *req = net_req_unpack(rq, &weir__obj_trunc_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "truncate", NULL, -EPROTO, "malformed ObjTruncReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_PUNCH, &t,
				&why);
	uint64_t size = req->size;
	uint64_t if_size = req->if_size;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc && size > (uint64_t)INT64_MAX) {
		rc = -EFBIG;
		why = "size beyond the largest object offset";
	}
	if (!rc && if_size) {
		/* a client undoing a failed write's growth (client/io.c): only
		 * while nothing else changed the size since its write replied */
		rc = oss_obj_getattr(&t.tg_obj, &oa);
		why = "stat failed";
		if (!rc && (oa.oa_size != if_size || size >= if_size)) {
			svc_attr_reply(rq, &oa);
			return;
		}
	}
	if (!rc) {
		rc = oss_obj_truncate(&t.tg_obj, size);
		why = "truncate failed";
	}
	if (!rc) {
		rc = oss_obj_getattr(&t.tg_obj, &oa);
		why = "stat failed";
	}
	if (rc) {
		oss_svc_fail(rq, "truncate", &t, rc, why);
		return;
	}
	svc_attr_reply(rq, &oa);
}

/* ------------------------------------------------------------------ OST_SEEK */

static void svc_seek(struct net_req *rq)
{
	struct oss_target t;
	struct oss_obj_attr oa;
	const char *why = "";
	uint64_t res = 0;

	Weir__ObjSeekReq *req = net_req_unpack(rq, &weir__obj_seek_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "seek", NULL, -EPROTO, "malformed ObjSeekReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_READ, &t,
				&why);
	uint64_t off = req->off;
	uint32_t whence = req->whence;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc && whence != WEIR__SEEK_WHENCE__SK_DATA && whence != WEIR__SEEK_WHENCE__SK_HOLE) {
		rc = -EINVAL;
		why = "whence is neither SK_DATA nor SK_HOLE";
	}
	if (!rc && off > (uint64_t)INT64_MAX) {
		rc = -EINVAL;
		why = "offset beyond the largest object offset";
	}
	if (!rc) {
		rc = oss_obj_seek(&t.tg_obj, off, whence == WEIR__SEEK_WHENCE__SK_HOLE, &res, &oa);
		why = "lseek failed";
	}
	if (rc && rc != -ENXIO) {
		oss_svc_fail(rq, "seek", &t, rc, why);
		return;
	}
	Weir__ObjSeekRep rep = WEIR__OBJ_SEEK_REP__INIT;
	rep.exists = oa.oa_exists;
	rep.found = rc == 0;
	rep.off = rc == 0 ? res : 0;
	rep.obj_size = oa.oa_size;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
}

/* ---------------------------------------------------------------- OST_DESTROY */

static void svc_destroy(struct net_req *rq)
{
	struct oss_target t;
	const char *why = "";

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "destroy", NULL, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_DESTROY, &t,
				&why);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc) {
		rc = oss_obj_destroy(&t.tg_obj); /* idempotent: 0 when already gone */
		why = "unlink failed";
	}
	if (rc) {
		oss_svc_fail(rq, "destroy", &t, rc, why);
		return;
	}
	net_req_reply(rq, 0, NULL, NULL, 0);
}

/* ---------------------------------------------------------- OST_DESTROY_BATCH */

/* Most objects one OST_DESTROY_BATCH may name (weir.proto). */
#define OSS_DESTROY_BATCH_MAX 1024

/*
 * Each object as svc_destroy() does, on an "oss-slow" thread like it; an
 * object's failure is logged (rate-limited for the capability errors a
 * peer can send at will) and answered in its own rc, and the others go on.
 */
static void svc_destroy_batch(struct net_req *rq)
{
	Weir__ObjDestroyBatchReq *req = net_req_unpack(rq, &weir__obj_destroy_batch_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "destroy_batch", NULL, -EPROTO, "malformed ObjDestroyBatchReq");
		return;
	}
	size_t n = req->n_objs;
	if (!n || n > OSS_DESTROY_BATCH_MAX) {
		protobuf_c_message_free_unpacked(&req->base, NULL);
		oss_svc_fail(rq, "destroy_batch", NULL, n ? -E2BIG : -EPROTO,
			     n ? "more than 1024 objects" : "no object");
		return;
	}
	Weir__WireStatus *sts = calloc(n, sizeof(*sts));
	if (!sts) {
		protobuf_c_message_free_unpacked(&req->base, NULL);
		oss_svc_fail(rq, "destroy_batch", NULL, -ENOMEM, "no memory for the replies");
		return;
	}
	size_t failed = 0;
	struct oss_target t1; /* the first failure, for the log */
	const char *why1 = "";
	int rc1 = 0;
	for (size_t i = 0; i < n; i++) {
		const Weir__ObjReq *o = req->objs[i];
		struct oss_target t;
		const char *why = "";
		int rc = oss_svc_target(rq, o->ost, o->fid, o->stripe, o->capa, WEIR_CAPA_DESTROY, &t,
					&why);
		if (!rc) {
			rc = oss_obj_destroy(&t.tg_obj); /* idempotent: 0 when already gone */
			why = "unlink failed";
		}
		if (rc && !failed++) {
			t1 = t;
			why1 = why;
			rc1 = rc;
		}
		sts[i] = (Weir__WireStatus)weir_status_from_errno(rc);
	}
	if (failed) { /* one line per call, rate-limited: a peer chooses how many fail */
		char rcs1[96], fids[WEIR_FID_STR_MAX] = "-";
		if (t1.tg_has_fid)
			weir_fid_to_str(&t1.tg_obj.ob_fid, fids, sizeof(fids));
		bool peer = rc1 == -EACCES || rc1 == -EAGAIN || svc_rc_is_client(rc1);
		WEIR_LOG_RL(peer ? WEIR_LOG_LVL_WARN : WEIR_LOG_LVL_ERROR,
			    "op=destroy_batch ost=%u fid=%s stripe=%u peer=%s reqid=%llu rc=%s: %s"
			    " (%zu of %zu objects failed; this is the first)",
			    t1.tg_ost_idx, fids, t1.tg_obj.ob_stripe, rq->rq_peer,
			    (unsigned long long)rq->rq_hdr.fh_reqid, weir_rc_str(rc1, rcs1, sizeof(rcs1)),
			    why1, failed, n);
	}
	protobuf_c_message_free_unpacked(&req->base, NULL);
	Weir__ObjDestroyBatchRep rep = WEIR__OBJ_DESTROY_BATCH_REP__INIT;
	rep.n_status = n;
	rep.status = sts;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
	free(sts);
}

/* ----------------------------------------------------------------- OST_STATFS */

static void svc_statfs(struct net_req *rq)
{
	struct oss_statfs sf;

	Weir__OstStatfsReq *req = net_req_unpack(rq, &weir__ost_statfs_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "statfs", NULL, -EPROTO, "malformed OstStatfsReq");
		return;
	}
	uint32_t idx = req->ost;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	struct oss_target t = { .tg_ost_idx = idx };
	struct oss_ost *ot = oss_ost_find(rq->rq_srv_arg, idx);
	if (!ot) {
		oss_svc_fail(rq, "statfs", &t, -ENODEV,
			     "no such OST here (or index not yet assigned by the MDS)");
		return;
	}
	int rc = oss_ost_statfs(ot, &sf);
	if (rc) {
		oss_svc_fail(rq, "statfs", &t, rc, "statvfs failed");
		return;
	}
	Weir__OstStatfsRep rep = WEIR__OST_STATFS_REP__INIT;
	rep.total_bytes = sf.sf_total_bytes;
	rep.free_bytes = sf.sf_free_bytes;
	rep.avail_bytes = sf.sf_avail_bytes;
	rep.files = sf.sf_files;
	rep.files_free = sf.sf_files_free;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
}

/* ----------------------------------------------------------------- dispatch */

static void svc_dispatch(struct net_req *rq);

static void svc_ping(struct net_req *rq)
{
	struct iovec iov = { rq->rq_bulk, (size_t)rq->rq_hdr.fh_bulk_len };

	net_req_reply(rq, 0, NULL, &iov, rq->rq_hdr.fh_bulk_len ? 1 : 0);
}

static void svc_handle(struct net_req *rq)
{
	struct oss_uring *u = rq->rq_loop_priv;

	svc_dispatch(rq);
	/* a read of cached pages completed inside the handler's submit: reply now,
	 * before the loop reads the next request (rq may be freed by now) */
	oss_uring_poll(u);
}

static void svc_dispatch(struct net_req *rq)
{
	switch (rq->rq_hdr.fh_opcode) {
	case WEIR__WIRE_OP__OST_WRITE:
		oss_svc_write(rq);
		break;
	case WEIR__WIRE_OP__OST_READ:
		oss_svc_read(rq);
		break;
	case WEIR__WIRE_OP__OST_GETATTR:
		svc_getattr(rq);
		break;
	case WEIR__WIRE_OP__OST_TRUNCATE:
		oss_slow_run(rq->rq_srv_arg, svc_truncate, rq); /* may wait for the disk */
		break;
	case WEIR__WIRE_OP__OST_FSYNC:
		oss_svc_fsync(rq);
		break;
	case WEIR__WIRE_OP__OST_FALLOCATE:
		oss_svc_fallocate(rq);
		break;
	case WEIR__WIRE_OP__OST_SEEK:
		svc_seek(rq);
		break;
	case WEIR__WIRE_OP__OST_DESTROY:
		oss_slow_run(rq->rq_srv_arg, svc_destroy, rq);
		break;
	case WEIR__WIRE_OP__OST_DESTROY_BATCH:
		if (((struct oss *)rq->rq_srv_arg)->o_test_no_destroy_batch)
			oss_svc_fail(rq, "unknown", NULL, -EOPNOTSUPP,
				     "unknown opcode 109 (WEIR_OSS_TEST_NO_DESTROY_BATCH)");
		else
			oss_slow_run(rq->rq_srv_arg, svc_destroy_batch, rq);
		break;
	case WEIR__WIRE_OP__OST_STATFS:
		svc_statfs(rq);
		break;
	case WEIR__WIRE_OP__PING:
		svc_ping(rq);
		break;
	default: {
		char why[48];
		snprintf(why, sizeof(why), "unknown opcode %u", rq->rq_hdr.fh_opcode);
		oss_svc_fail(rq, "unknown", NULL, -EOPNOTSUPP, why);
		break;
	}
	}
}

static int svc_loop_init(struct net_loop *lp, void *arg, void **priv)
{
	(void)arg;
	return oss_uring_new(lp, (struct oss_uring **)priv);
}

static void svc_loop_fini(struct net_loop *lp, void *arg, void *priv)
{
	(void)lp;
	(void)arg;
	oss_uring_free(priv);
}

void oss_svc_ops(struct oss *oss, struct net_server_ops *ops)
{
	*ops = (struct net_server_ops){
		.so_handle = svc_handle,
		.so_loop_init = svc_loop_init,
		.so_loop_fini = svc_loop_fini,
		.so_arg = oss,
	};
}

/* ------------------------------------------------------------------ lifecycle */

void oss_conf_init(struct oss_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->oc_listen = "127.0.0.1:0";
	conf->oc_nr_threads = WEIR_MIN(weir_default_loops(), (unsigned)OSS_MAX_THREADS);
	conf->oc_heartbeat_ms = 3000;
	conf->oc_fd_cache = OSS_FDC_DEFAULT;
	conf->oc_writeback_min = OSS_WRITEBACK_MIN_DEFAULT;
	conf->oc_log = "stderr";
	conf->oc_log_level = "notice";
}

static int oss_conf_check(const struct oss_conf *c)
{
	char host[256];
	uint16_t port;

	if (!c->oc_mds || weir_parse_hostport(c->oc_mds, host, sizeof(host), &port) || !port) {
		WEIR_LOG_ERROR("mds=%s: want the MDS as HOST:PORT", c->oc_mds ? c->oc_mds : "");
		return -EINVAL;
	}
	if (!c->oc_nr_osts || c->oc_nr_osts > OSS_MAX_OSTS) {
		WEIR_LOG_ERROR("osts=%u: want 1..%d OST directories", c->oc_nr_osts, OSS_MAX_OSTS);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < c->oc_nr_osts; i++)
		if (!c->oc_osts[i] || !c->oc_osts[i][0]) {
			WEIR_LOG_ERROR("ost=%u: empty OST directory path", i);
			return -EINVAL;
		}
	if (!c->oc_listen || weir_parse_hostport(c->oc_listen, host, sizeof(host), &port)) {
		WEIR_LOG_ERROR("listen=%s: want HOST:PORT", c->oc_listen ? c->oc_listen : "");
		return -EINVAL;
	}
	if (!c->oc_nr_threads || c->oc_nr_threads > OSS_MAX_THREADS) {
		WEIR_LOG_ERROR("threads=%u: want 1..%d", c->oc_nr_threads, OSS_MAX_THREADS);
		return -EINVAL;
	}
	if (c->oc_fd_cache > OSS_FDC_MAX) {
		WEIR_LOG_ERROR("fd_cache=%u: want 0..%u", c->oc_fd_cache, OSS_FDC_MAX);
		return -EINVAL;
	}
	if (c->oc_heartbeat_ms < 100 || c->oc_heartbeat_ms > 3600 * 1000) {
		WEIR_LOG_ERROR("heartbeat_ms=%u: want 100ms..1h", c->oc_heartbeat_ms);
		return -EINVAL;
	}
	return 0;
}

/* The address the MDS hands to clients: advertise host (or listen host) + bound port. */
static int oss_addr_make(struct oss *oss, const struct oss_conf *c)
{
	char host[256];
	uint16_t port;

	if (c->oc_advertise && c->oc_advertise[0]) {
		snprintf(host, sizeof(host), "%s", c->oc_advertise);
	} else {
		weir_parse_hostport(c->oc_listen, host, sizeof(host), &port);
		if (!host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") ||
		    !strcmp(host, "[::]"))
			WEIR_LOG_WARN("listen=%s: wildcard listen address advertised to the MDS; "
				      "clients cannot reach it: set --advertise", c->oc_listen);
	}
	if ((size_t)snprintf(oss->o_addr, sizeof(oss->o_addr), "%s:%u", host, oss->o_port) >=
	    sizeof(oss->o_addr))
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The fd cache: \a want fds, but at most half of RLIMIT_NOFILE's soft limit
 * (the rest for connections and the fds of I/O in flight).
 */
static int oss_fdc_start(struct oss *oss, uint32_t want)
{
	struct rlimit rl;
	uint32_t max = want;

	if (want && !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < want) {
		max = (uint32_t)(rl.rlim_cur / 2);
		WEIR_LOG_NOTICE("fd_cache=%u nofile=%llu: fd cache lowered to %u (half of "
				"RLIMIT_NOFILE)", want, (unsigned long long)rl.rlim_cur, max);
	}
	int rc = oss_fdc_new(max, &oss->o_fdc);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		oss->o_osts[i].ot_fdc = oss->o_fdc;
	return 0;
}

/* Refuse OST \a i when an earlier one has the same UUID or the same index. */
static int oss_ost_dup_check(struct oss *oss, uint32_t i)
{
	const struct oss_ost *ot = &oss->o_osts[i];
	int32_t idx = atomic_load(&ot->ot_index);

	for (uint32_t j = 0; j < i; j++) {
		const struct oss_ost *o = &oss->o_osts[j];
		bool same_uuid = !strcmp(o->ot_uuid, ot->ot_uuid);
		if (!same_uuid && (idx < 0 || atomic_load(&o->ot_index) != idx))
			continue;
		WEIR_LOG_ERROR("dir=%s dir2=%s uuid=%s index=%d: the same OST twice (same ost.uuid "
			       "or ost.index)", o->ot_dir, ot->ot_dir, ot->ot_uuid, idx);
		return -EEXIST;
	}
	return 0;
}

int oss_start(const struct oss_conf *conf, struct oss **out)
{
	char rcs[96];
	int rc = oss_conf_check(conf);
	if (rc)
		return rc;

	struct oss *oss = calloc(1, sizeof(*oss));
	if (!oss)
		return -ENOMEM;
	oss->o_mds = strdup(conf->oc_mds);
	if (!oss->o_mds) {
		rc = -ENOMEM;
		goto out_free;
	}
	snprintf(oss->o_listen, sizeof(oss->o_listen), "%s", conf->oc_listen);
	oss->o_nr_threads = conf->oc_nr_threads;
	oss->o_heartbeat_ms = conf->oc_heartbeat_ms;
	oss->o_writeback_min = conf->oc_writeback_min;
	oss->o_test_no_destroy_batch = getenv("WEIR_OSS_TEST_NO_DESTROY_BATCH") != NULL;
	if (oss->o_test_no_destroy_batch)
		WEIR_LOG_WARN("WEIR_OSS_TEST_NO_DESTROY_BATCH: a test mode; OST_DESTROY_BATCH is"
			      " answered -EOPNOTSUPP as by an OSS from before it");
	oss_reg_init(oss);
	oss_capa_init(oss);
	oss_throttle_start(oss);

	for (uint32_t i = 0; i < conf->oc_nr_osts; i++) {
		oss->o_nr_osts = i + 1; /* oss_ost_fini() it even if its init fails */
		rc = oss_ost_init(&oss->o_osts[i], conf->oc_osts[i]);
		if (!rc)
			rc = oss_ost_dup_check(oss, i);
		if (rc)
			goto out_osts;
	}
	rc = oss_fdc_start(oss, conf->oc_fd_cache);
	if (!rc)
		rc = oss_slow_start(oss);
	if (rc)
		goto out_osts;

	struct net_server_conf sconf = {
		.sc_listen = conf->oc_listen,
		.sc_name = "oss",
		.sc_nr_loops = conf->oc_nr_threads,
		.sc_max_inflight = OSS_MAX_INFLIGHT,
		.sc_poll_us = conf->oc_poll_us,
	};
	struct net_server_ops ops;
	oss_svc_ops(oss, &ops);
	rc = net_server_start(&sconf, &ops, &oss->o_srv);
	if (rc) {
		WEIR_LOG_ERROR("listen=%s rc=%s: cannot start the server", conf->oc_listen,
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		goto out_osts;
	}
	oss->o_port = net_server_port(oss->o_srv);
	rc = oss_addr_make(oss, conf);
	if (rc)
		goto out_srv;
	if (conf->oc_port_file) {
		char buf[16];
		snprintf(buf, sizeof(buf), "%u\n", oss->o_port);
		rc = weir_file_write_atomic(conf->oc_port_file, buf, strlen(buf));
		if (rc) {
			WEIR_LOG_ERROR("port_file=%s rc=%s: cannot write the port file",
				       conf->oc_port_file, weir_rc_str(rc, rcs, sizeof(rcs)));
			goto out_srv;
		}
	}
	WEIR_LOG_NOTICE("mds=%s listen=%s port=%u advertise=%s threads=%u poll_us=%u "
			"heartbeat_ms=%u port_file=%s osts=%u fd_cache=%u writeback_min=%llu: "
			"weir-oss serving",
			oss->o_mds, conf->oc_listen, oss->o_port, oss->o_addr, oss->o_nr_threads,
			conf->oc_poll_us,
			oss->o_heartbeat_ms, conf->oc_port_file ? conf->oc_port_file : "-",
			oss->o_nr_osts, oss->o_fdc ? oss_fdc_capacity(oss->o_fdc) : 0,
			(unsigned long long)oss->o_writeback_min);
	for (uint32_t i = 0; i < oss->o_nr_osts; i++) {
		const struct oss_ost *ot = &oss->o_osts[i];
		WEIR_LOG_NOTICE("ost=%d dir=%s uuid=%s: OST ready%s", atomic_load(&ot->ot_index),
				ot->ot_dir, ot->ot_uuid,
				atomic_load(&ot->ot_index) < 0 ? " (index awaits the MDS)" : "");
	}
	rc = oss_reg_start(oss);
	if (rc)
		goto out_srv;
	*out = oss;
	return 0;

out_srv:
	net_server_stop(oss->o_srv);
out_osts:
	oss_slow_stop(oss);
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		oss_ost_fini(&oss->o_osts[i]);
	oss_fdc_free(oss->o_fdc);
	oss_throttle_stop(oss);
	oss_throttle_fini(oss);
	oss_reg_fini(oss);
	oss_capa_fini(oss);
out_free:
	free(oss->o_mds);
	free(oss);
	return rc;
}

uint16_t oss_port(const struct oss *oss)
{
	return oss->o_port;
}

void oss_stop(struct oss *oss)
{
	if (!oss)
		return;
	oss_reg_stop(oss);
	oss_throttle_stop(oss); /* held write replies go now; later ones are not held */
	net_server_stop(oss->o_srv); /* loops drain their rings and reply first */
	oss_slow_stop(oss);          /* queued truncates and destroys run and reply */
	oss_throttle_fini(oss);      /* no loop can defer a reply any more */
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		oss_ost_fini(&oss->o_osts[i]);
	oss_fdc_free(oss->o_fdc);    /* no I/O holds a cached fd any more */
	oss_reg_fini(oss);
	oss_capa_fini(oss);
	WEIR_LOG_NOTICE("port=%u: weir-oss stopped", oss->o_port);
	free(oss->o_mds);
	free(oss);
}
