/*
 * oss/svc.c - the OSS request handlers (one per OST_* opcode, and PING),
 * the per-loop set-up, and the server's start and stop (oss.h).
 *
 * Every handler runs on the event loop thread that read the request. It
 * validates the body (nothing from the network is trusted), opens the object
 * with a plain syscall (oss/obj.c), and either replies at once or queues its
 * data I/O on the loop's ring (oss/uring.c); the ring's completion callback
 * replies, on the same loop thread, and closes the descriptor. Many requests
 * are in flight on one loop at once; net/server.c bounds them per connection
 * (sc_max_inflight).
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
#include <unistd.h>

#include "common/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/** Per-connection requests in flight before net/ stops reading the connection. */
#define OSS_MAX_INFLIGHT 64

/** One request with data I/O in flight. */
struct svc_op {
	struct oss_io op_io;        /* on the loop's ring */
	struct net_req *op_rq;
	const char *op_name;        /* for logs: "write", "read", ... */
	uint32_t op_ost;
	struct weir_fid op_fid;
	uint32_t op_stripe;
	uint64_t op_obj_size;       /* read: object size when the read started, bytes */
	uint8_t *op_buf;            /* read: malloc'd reply bulk */
};

/** What an object request names, once checked. */
struct svc_target {
	struct oss_ost *st_ost;
	const struct weir_fid *st_fidp; /* &st_fid once the request had one, else NULL (logs) */
	uint32_t st_ost_idx;
	struct weir_fid st_fid;
	uint32_t st_stripe;
};

/* Requester mistakes log at WARN; the server's own failures at ERROR. */
static bool svc_rc_is_client(int rc)
{
	return rc == -EINVAL || rc == -EPROTO || rc == -ENODEV || rc == -EFBIG ||
	       rc == -EOPNOTSUPP;
}

/* Log one failed request and reply \a rc (frees \a rq). \a fid may be NULL. */
static void svc_fail(struct net_req *rq, const char *op, long long ost,
		     const struct weir_fid *fid, uint32_t stripe, int rc, const char *why)
{
	char rcs[96];
	char fids[WEIR_FID_STR_MAX] = "-";
	char osts[24] = "-";

	if (fid)
		weir_fid_to_str(fid, fids, sizeof(fids));
	if (ost >= 0)
		snprintf(osts, sizeof(osts), "%lld", ost);
	WEIR_LOG_AT(svc_rc_is_client(rc) ? WEIR_LOG_LVL_WARN : WEIR_LOG_LVL_ERROR,
		    "op=%s ost=%s fid=%s stripe=%u peer=%s reqid=%llu rc=%s: %s", op, osts, fids,
		    stripe, rq->rq_peer, (unsigned long long)rq->rq_hdr.fh_reqid,
		    weir_rc_str(rc, rcs, sizeof(rcs)), why);
	net_req_reply(rq, rc, NULL, NULL, 0);
}

/* Check the (ost, fid, stripe) of an object request. \return 0 or the reply status. */
static int svc_target_get(struct net_req *rq, uint32_t ost, const Weir__Fid *fid,
			  uint32_t stripe, struct svc_target *t, const char **why)
{
	struct oss *oss = rq->rq_srv_arg;

	t->st_ost_idx = ost;
	t->st_stripe = stripe;
	t->st_fid = (struct weir_fid){ 0, 0 };
	t->st_fidp = NULL;
	if (!fid) {
		*why = "request has no fid";
		return -EPROTO;
	}
	t->st_fid = (struct weir_fid){ fid->seq, fid->oid };
	t->st_fidp = &t->st_fid;
	if (weir_fid_is_zero(&t->st_fid)) {
		*why = "zero fid";
		return -EINVAL;
	}
	if (stripe >= WEIR_LAYOUT_MAX_STRIPES) {
		*why = "stripe index out of range";
		return -EINVAL;
	}
	t->st_ost = oss_ost_find(oss, ost);
	if (!t->st_ost) {
		*why = "no such OST here (or index not yet assigned by the MDS)";
		return -ENODEV;
	}
	return 0;
}

static struct svc_op *svc_op_new(struct net_req *rq, const char *name,
				 const struct svc_target *t)
{
	struct svc_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->op_rq = rq;
	op->op_name = name;
	op->op_ost = t->st_ost_idx;
	op->op_fid = t->st_fid;
	op->op_stripe = t->st_stripe;
	op->op_io.io_fd = -1;
	return op;
}

/* Reply \a rc for a failed op, log, close, free. */
static void svc_op_fail(struct svc_op *op, int rc, const char *why)
{
	svc_fail(op->op_rq, op->op_name, op->op_ost, &op->op_fid, op->op_stripe, rc, why);
	if (op->op_io.io_fd >= 0)
		close(op->op_io.io_fd);
	free(op->op_buf);
	free(op);
}

static void svc_op_free(struct svc_op *op)
{
	if (op->op_io.io_fd >= 0)
		close(op->op_io.io_fd);
	free(op->op_buf);
	free(op);
}

static struct svc_op *svc_op_of(struct oss_io *io)
{
	return (struct svc_op *)((char *)io - offsetof(struct svc_op, op_io));
}

/* ------------------------------------------------------------------ OST_WRITE */

static void svc_write_done(struct oss_io *io, int rc)
{
	struct svc_op *op = svc_op_of(io);
	struct stat st;

	if (rc) {
		svc_op_fail(op, rc, "write failed");
		return;
	}
	rc = oss_fd_stat(io->io_fd, &st);
	if (rc) {
		svc_op_fail(op, rc, "fstat after write failed");
		return;
	}
	Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
	rep.len = io->io_done;
	rep.obj_size = (uint64_t)st.st_size;
	net_req_reply(op->op_rq, 0, &rep.base, NULL, 0);
	svc_op_free(op);
}

static void svc_write(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";
	int rc;

	Weir__ObjIoReq *req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
	if (!req) {
		svc_fail(rq, "write", -1, NULL, 0, -EPROTO, "malformed ObjIoReq");
		return;
	}
	rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	if (!rc && req->len != rq->rq_hdr.fh_bulk_len) {
		rc = -EINVAL;
		why = "len differs from the bulk length";
	}
	if (!rc && (req->off > (uint64_t)INT64_MAX || req->len > (uint64_t)INT64_MAX - req->off)) {
		rc = -EFBIG;
		why = "off + len beyond the largest object offset";
	}
	uint64_t off = req->off;
	uint64_t len = req->len;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		svc_fail(rq, "write", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "write", &t);
	if (!op) {
		svc_fail(rq, "write", t.st_ost_idx, &t.st_fid, t.st_stripe, -ENOMEM, "no memory");
		return;
	}
	rc = oss_obj_open(t.st_ost, &t.st_fid, t.st_stripe, O_WRONLY | O_CREAT, &op->op_io.io_fd);
	if (rc) {
		svc_op_fail(op, rc, "cannot open/create the object");
		return;
	}
	op->op_io.io_kind = OSS_IO_WRITE;
	op->op_io.io_buf = rq->rq_bulk; /* valid until the reply */
	op->op_io.io_len = len;
	op->op_io.io_off = off;
	op->op_io.io_cb = svc_write_done;
	if (!len) {
		op->op_io.io_done = 0;
		svc_write_done(&op->op_io, 0); /* create only */
		return;
	}
	oss_uring_submit(rq->rq_loop_priv, &op->op_io);
}

/* ------------------------------------------------------------------ OST_READ */

static void svc_read_reply(struct svc_op *op, uint64_t len)
{
	Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
	struct iovec iov = { op->op_buf, (size_t)len };

	rep.len = len;
	rep.obj_size = op->op_obj_size;
	net_req_reply(op->op_rq, 0, &rep.base, &iov, len ? 1 : 0);
	svc_op_free(op); /* frees the buffer, after the reply was sent */
}

static void svc_read_done(struct oss_io *io, int rc)
{
	struct svc_op *op = svc_op_of(io);

	if (rc) {
		svc_op_fail(op, rc, "read failed");
		return;
	}
	svc_read_reply(op, io->io_done);
}

static void svc_read(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";
	struct stat st;
	int rc;

	Weir__ObjIoReq *req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
	if (!req) {
		svc_fail(rq, "read", -1, NULL, 0, -EPROTO, "malformed ObjIoReq");
		return;
	}
	rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	if (!rc && req->len > WEIR_FRAME_MAX_BULK) {
		rc = -EINVAL;
		why = "len over the 16 MiB bulk limit";
	}
	if (!rc && (req->off > (uint64_t)INT64_MAX || req->len > (uint64_t)INT64_MAX - req->off)) {
		rc = -EINVAL;
		why = "off + len beyond the largest object offset";
	}
	uint64_t off = req->off;
	uint64_t len = req->len;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		svc_fail(rq, "read", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "read", &t);
	if (!op) {
		svc_fail(rq, "read", t.st_ost_idx, &t.st_fid, t.st_stripe, -ENOMEM, "no memory");
		return;
	}
	rc = oss_obj_open(t.st_ost, &t.st_fid, t.st_stripe, O_RDONLY, &op->op_io.io_fd);
	if (rc == -ENOENT) {
		svc_read_reply(op, 0); /* never written: empty, not an error */
		return;
	}
	if (rc) {
		svc_op_fail(op, rc, "cannot open the object");
		return;
	}
	rc = oss_fd_stat(op->op_io.io_fd, &st);
	if (rc) {
		svc_op_fail(op, rc, "fstat failed");
		return;
	}
	op->op_obj_size = (uint64_t)st.st_size;
	/* read no further than the size now: no buffer for bytes that are not there */
	uint64_t want = off < op->op_obj_size ? WEIR_MIN(len, op->op_obj_size - off) : 0;
	if (!want) {
		svc_read_reply(op, 0);
		return;
	}
	op->op_buf = malloc(want);
	if (!op->op_buf) {
		svc_op_fail(op, -ENOMEM, "no memory for the read buffer");
		return;
	}
	op->op_io.io_kind = OSS_IO_READ;
	op->op_io.io_buf = op->op_buf;
	op->op_io.io_len = want;
	op->op_io.io_off = off;
	op->op_io.io_cb = svc_read_done;
	oss_uring_submit(rq->rq_loop_priv, &op->op_io);
}

/* ------------------------------------------------ OST_GETATTR, OST_TRUNCATE */

static void svc_attr_reply(struct net_req *rq, const struct stat *st)
{
	Weir__ObjAttrRep rep = WEIR__OBJ_ATTR_REP__INIT;

	if (st) {
		rep.exists = true;
		rep.size = (uint64_t)st->st_size;
		rep.blocks = (uint64_t)st->st_blocks;
		rep.mtime_ns = oss_stat_mtime_ns(st);
	}
	net_req_reply(rq, 0, &rep.base, NULL, 0);
}

static void svc_getattr(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";
	struct stat st;

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		svc_fail(rq, "getattr", -1, NULL, 0, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc) {
		rc = oss_obj_stat(t.st_ost, &t.st_fid, t.st_stripe, &st);
		why = "stat failed";
		if (rc == -ENOENT) {
			svc_attr_reply(rq, NULL);
			return;
		}
	}
	if (rc) {
		svc_fail(rq, "getattr", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	svc_attr_reply(rq, &st);
}

static void svc_truncate(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";
	struct stat st;
	int fd = -1;

	Weir__ObjTruncReq *req = net_req_unpack(rq, &weir__obj_trunc_req__descriptor);
	if (!req) {
		svc_fail(rq, "truncate", -1, NULL, 0, -EPROTO, "malformed ObjTruncReq");
		return;
	}
	int rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	uint64_t size = req->size;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc && size > (uint64_t)INT64_MAX) {
		rc = -EFBIG;
		why = "size beyond the largest object offset";
	}
	if (!rc) {
		rc = oss_obj_open(t.st_ost, &t.st_fid, t.st_stripe, O_WRONLY | O_CREAT, &fd);
		why = "cannot open/create the object";
	}
	if (!rc) {
		rc = oss_fd_truncate(fd, size);
		why = "ftruncate failed";
	}
	if (!rc) {
		rc = oss_fd_stat(fd, &st);
		why = "fstat failed";
	}
	if (fd >= 0)
		close(fd);
	if (rc) {
		svc_fail(rq, "truncate", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	svc_attr_reply(rq, &st);
}

/* ------------------------------------------------------------------ OST_FSYNC */

static void svc_fsync_done(struct oss_io *io, int rc)
{
	struct svc_op *op = svc_op_of(io);

	if (rc) {
		svc_op_fail(op, rc, "fsync failed");
		return;
	}
	net_req_reply(op->op_rq, 0, NULL, NULL, 0);
	svc_op_free(op);
}

static void svc_fsync(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		svc_fail(rq, "fsync", -1, NULL, 0, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	bool datasync = req->flags & 1;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		svc_fail(rq, "fsync", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "fsync", &t);
	if (!op) {
		svc_fail(rq, "fsync", t.st_ost_idx, &t.st_fid, t.st_stripe, -ENOMEM, "no memory");
		return;
	}
	rc = oss_obj_open(t.st_ost, &t.st_fid, t.st_stripe, O_RDONLY, &op->op_io.io_fd);
	if (rc == -ENOENT) {
		net_req_reply(rq, 0, NULL, NULL, 0); /* nothing written, nothing to sync */
		svc_op_free(op);
		return;
	}
	if (rc) {
		svc_op_fail(op, rc, "cannot open the object");
		return;
	}
	op->op_io.io_kind = OSS_IO_FSYNC;
	op->op_io.io_datasync = datasync;
	op->op_io.io_cb = svc_fsync_done;
	oss_uring_submit(rq->rq_loop_priv, &op->op_io);
}

/* ---------------------------------------------------------------- OST_DESTROY */

static void svc_destroy(struct net_req *rq)
{
	struct svc_target t;
	const char *why = "";

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		svc_fail(rq, "destroy", -1, NULL, 0, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = svc_target_get(rq, req->ost, req->fid, req->stripe, &t, &why);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc) {
		rc = oss_obj_unlink(t.st_ost, &t.st_fid, t.st_stripe);
		why = "unlink failed";
		if (rc == -ENOENT)
			rc = 0; /* idempotent */
	}
	if (rc) {
		svc_fail(rq, "destroy", t.st_ost_idx, t.st_fidp, t.st_stripe, rc, why);
		return;
	}
	net_req_reply(rq, 0, NULL, NULL, 0);
}

/* ----------------------------------------------------------------- OST_STATFS */

static void svc_statfs(struct net_req *rq)
{
	struct oss_statfs sf;

	Weir__OstStatfsReq *req = net_req_unpack(rq, &weir__ost_statfs_req__descriptor);
	if (!req) {
		svc_fail(rq, "statfs", -1, NULL, 0, -EPROTO, "malformed OstStatfsReq");
		return;
	}
	uint32_t idx = req->ost;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	struct oss_ost *ot = oss_ost_find(rq->rq_srv_arg, idx);
	if (!ot) {
		svc_fail(rq, "statfs", idx, NULL, 0, -ENODEV,
			 "no such OST here (or index not yet assigned by the MDS)");
		return;
	}
	int rc = oss_ost_statfs(ot, &sf);
	if (rc) {
		svc_fail(rq, "statfs", idx, NULL, 0, rc, "statvfs failed");
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

static void svc_ping(struct net_req *rq)
{
	struct iovec iov = { rq->rq_bulk, (size_t)rq->rq_hdr.fh_bulk_len };

	net_req_reply(rq, 0, NULL, &iov, rq->rq_hdr.fh_bulk_len ? 1 : 0);
}

static void svc_handle(struct net_req *rq)
{
	switch (rq->rq_hdr.fh_opcode) {
	case WEIR__WIRE_OP__OST_WRITE:
		svc_write(rq);
		break;
	case WEIR__WIRE_OP__OST_READ:
		svc_read(rq);
		break;
	case WEIR__WIRE_OP__OST_GETATTR:
		svc_getattr(rq);
		break;
	case WEIR__WIRE_OP__OST_TRUNCATE:
		svc_truncate(rq);
		break;
	case WEIR__WIRE_OP__OST_FSYNC:
		svc_fsync(rq);
		break;
	case WEIR__WIRE_OP__OST_DESTROY:
		svc_destroy(rq);
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
		svc_fail(rq, "unknown", -1, NULL, 0, -EOPNOTSUPP, why);
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
	conf->oc_nr_threads = 2;
	conf->oc_heartbeat_ms = 3000;
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
	oss_reg_init(oss);

	for (uint32_t i = 0; i < conf->oc_nr_osts; i++) {
		oss->o_nr_osts = i + 1; /* oss_ost_fini() it even if its init fails */
		rc = oss_ost_init(&oss->o_osts[i], conf->oc_osts[i]);
		if (!rc)
			rc = oss_ost_dup_check(oss, i);
		if (rc)
			goto out_osts;
	}

	struct net_server_conf sconf = {
		.sc_listen = conf->oc_listen,
		.sc_name = "oss",
		.sc_nr_loops = conf->oc_nr_threads,
		.sc_max_inflight = OSS_MAX_INFLIGHT,
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
	WEIR_LOG_NOTICE("mds=%s listen=%s port=%u advertise=%s threads=%u heartbeat_ms=%u "
			"port_file=%s osts=%u: weir-oss serving", oss->o_mds, conf->oc_listen,
			oss->o_port, oss->o_addr, oss->o_nr_threads, oss->o_heartbeat_ms,
			conf->oc_port_file ? conf->oc_port_file : "-", oss->o_nr_osts);
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
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		oss_ost_fini(&oss->o_osts[i]);
	oss_reg_fini(oss);
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
	net_server_stop(oss->o_srv); /* loops drain their rings and reply first */
	for (uint32_t i = 0; i < oss->o_nr_osts; i++)
		oss_ost_fini(&oss->o_osts[i]);
	oss_reg_fini(oss);
	WEIR_LOG_NOTICE("port=%u: weir-oss stopped", oss->o_port);
	free(oss->o_mds);
	free(oss);
}
