/*
 * tests/fuzz/fuzz_lib.c - see fuzz.h: records, socket-less requests and the
 * capture of their replies (the --wrap'ed net_req_reply and net_loop_add_fd),
 * the scratch directory.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "common/key.h"
#include "common/le.h"
#include "common/log.h"
#include "weir.pb-c.h"

atomic_ulong fz_replies;
void (*fz_reply_hook)(const struct net_req *rq, int rc, const ProtobufCMessage *body);
static bool fz_trace; /* $FUZZ_TRACE set: print every reply's status */
int fz_reply_efd = -1;
struct fz_loop_fd fz_loop_fd = { -1, NULL, NULL };

/* what rq_conn of a request made here points to */
static char fz_conn_tag;
static char fz_loop_tag;
struct net_loop *const fz_loop = (struct net_loop *)&fz_loop_tag;

/* clang-format off */
const struct fz_op fz_ops[] = {
	{ WEIR__WIRE_OP__MDS_CONNECT, "mds_connect", &weir__connect_req__descriptor,
	  &weir__connect_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, "mds_get_clustermap", &weir__empty__descriptor,
	  &weir__cluster_map__descriptor },
	{ WEIR__WIRE_OP__MDS_OSS_REGISTER, "mds_oss_register", &weir__oss_register_req__descriptor,
	  &weir__oss_register_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_MDT_REGISTER, "mds_mdt_register", &weir__mdt_register_req__descriptor,
	  &weir__mdt_register_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DTX_PREPARE, "mds_dtx_prepare", &weir__dtx_prepare_req__descriptor,
	  &weir__dtx_prepare_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DTX_RESOLVE, "mds_dtx_resolve", &weir__dtx_resolve_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_LOOKUP, "mds_lookup", &weir__path_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_GETATTR, "mds_getattr", &weir__fid_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_SETATTR, "mds_setattr", &weir__setattr_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_OPEN, "mds_open", &weir__open_req__descriptor,
	  &weir__open_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_CLOSE, "mds_close", &weir__close_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_MKDIR, "mds_mkdir", &weir__mkdir_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_READDIR, "mds_readdir", &weir__readdir_req__descriptor,
	  &weir__readdir_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_UNLINK, "mds_unlink", &weir__unlink_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_RENAME, "mds_rename", &weir__rename_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_STATFS, "mds_statfs", &weir__empty__descriptor,
	  &weir__statfs_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_SET_LAYOUT, "mds_set_layout", &weir__set_layout_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_SYNC, "mds_sync", &weir__sync_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_LINK, "mds_link", &weir__link_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_SYMLINK, "mds_symlink", &weir__symlink_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_READLINK, "mds_readlink", &weir__path_req__descriptor,
	  &weir__readlink_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_MKNOD, "mds_mknod", &weir__mknod_req__descriptor,
	  &weir__attr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_ACCESS, "mds_access", &weir__access_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_SETXATTR, "mds_setxattr", &weir__xattr_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_GETXATTR, "mds_getxattr", &weir__xattr_req__descriptor,
	  &weir__xattr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_LISTXATTR, "mds_listxattr", &weir__xattr_req__descriptor,
	  &weir__xattr_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_REMOVEXATTR, "mds_removexattr", &weir__xattr_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_LEASE_RENEW, "mds_lease_renew", &weir__lease_req__descriptor,
	  &weir__lease_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DISCONNECT, "mds_disconnect", &weir__lease_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_LOCK, "mds_lock", &weir__lock_req__descriptor,
	  &weir__lock_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_LOCK_TEST, "mds_lock_test", &weir__lock_req__descriptor,
	  &weir__lock_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_LOCK_CANCEL, "mds_lock_cancel", &weir__lock_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_REPLAY, "mds_replay", &weir__replay_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_CAPA_RENEW, "mds_capa_renew", &weir__capa_req__descriptor,
	  &weir__capa_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_LEASE_POLL, "mds_lease_poll", &weir__lease_poll_req__descriptor,
	  &weir__lease_poll_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DRA_CREATE, "mds_dra_create", &weir__dra_req__descriptor,
	  &weir__dra_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DRA_LIST, "mds_dra_list", &weir__empty__descriptor,
	  &weir__dra_list_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_DRA_DELETE, "mds_dra_delete", &weir__dra_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_IMPORT, "mds_hsm_import", &weir__hsm_import_req__descriptor,
	  &weir__hsm_import_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_REQUEST, "mds_hsm_request", &weir__hsm_request_req__descriptor,
	  &weir__hsm_request_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_STATE, "mds_hsm_state", &weir__hsm_state_req__descriptor,
	  &weir__hsm_state_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_QUEUE, "mds_hsm_queue", &weir__hsm_queue_req__descriptor,
	  &weir__hsm_queue_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, "mds_hsm_restore_wait", &weir__hsm_range_req__descriptor,
	  &weir__hsm_range_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, "mds_hsm_agent_fetch", &weir__hsm_fetch_req__descriptor,
	  &weir__hsm_fetch_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, "mds_hsm_agent_progress",
	  &weir__hsm_progress_req__descriptor, &weir__hsm_progress_rep__descriptor },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, "mds_hsm_agent_done", &weir__hsm_done_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__OST_WRITE, "ost_write", &weir__obj_io_req__descriptor,
	  &weir__obj_io_rep__descriptor },
	{ WEIR__WIRE_OP__OST_READ, "ost_read", &weir__obj_io_req__descriptor,
	  &weir__obj_io_rep__descriptor },
	{ WEIR__WIRE_OP__OST_GETATTR, "ost_getattr", &weir__obj_req__descriptor,
	  &weir__obj_attr_rep__descriptor },
	{ WEIR__WIRE_OP__OST_TRUNCATE, "ost_truncate", &weir__obj_trunc_req__descriptor,
	  &weir__obj_attr_rep__descriptor },
	{ WEIR__WIRE_OP__OST_FSYNC, "ost_fsync", &weir__obj_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__OST_DESTROY, "ost_destroy", &weir__obj_req__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__OST_STATFS, "ost_statfs", &weir__ost_statfs_req__descriptor,
	  &weir__ost_statfs_rep__descriptor },
	{ WEIR__WIRE_OP__OST_FALLOCATE, "ost_fallocate", &weir__obj_falloc_req__descriptor,
	  &weir__obj_attr_rep__descriptor },
	{ WEIR__WIRE_OP__OST_SEEK, "ost_seek", &weir__obj_seek_req__descriptor,
	  &weir__obj_seek_rep__descriptor },
	{ WEIR__WIRE_OP__PING, "ping", &weir__empty__descriptor, &weir__empty__descriptor },
	{ WEIR__WIRE_OP__AUTH_HELLO, "auth_hello", &weir__auth_hello__descriptor,
	  &weir__auth_hello_rep__descriptor },
	{ WEIR__WIRE_OP__AUTH_PROOF, "auth_proof", &weir__auth_proof__descriptor,
	  &weir__empty__descriptor },
	{ WEIR__WIRE_OP__OST_DESTROY_BATCH, "ost_destroy_batch",
	  &weir__obj_destroy_batch_req__descriptor, &weir__obj_destroy_batch_rep__descriptor },
};
/* clang-format on */
const size_t fz_nr_ops = sizeof(fz_ops) / sizeof(fz_ops[0]);

void fz_ops_check(void)
{
	const ProtobufCEnumDescriptor *d = &weir__wire_op__descriptor;
	int missing = 0;
	for (unsigned i = 0; i < d->n_values; i++)
		if (d->values[i].value && !fz_op_find((uint16_t)d->values[i].value)) {
			fprintf(stderr,
				"fuzz: opcode %s (%d) is not in fz_ops (tests/fuzz/fuzz_lib.c)\n",
				d->values[i].name, d->values[i].value);
			missing++;
		}
	if (missing)
		abort();
}

const struct fz_op *fz_op_find(uint16_t op)
{
	for (size_t i = 0; i < fz_nr_ops; i++)
		if (fz_ops[i].o_op == op)
			return &fz_ops[i];
	return NULL;
}

int fz_rec_next(const uint8_t **p, size_t *left, struct fz_rec *r)
{
	if (*left < FZ_REC_HDR)
		return 0;
	const uint8_t *q = *p;
	size_t n = *left - FZ_REC_HDR;
	r->r_op = weir_get_le16(q);
	r->r_body_len = weir_get_le16(q + 2);
	r->r_bulk_len = weir_get_le16(q + 4);
	q += FZ_REC_HDR;
	if (r->r_body_len > n)
		r->r_body_len = n;
	r->r_body = q;
	q += r->r_body_len;
	n -= r->r_body_len;
	if (r->r_bulk_len > n)
		r->r_bulk_len = n;
	r->r_bulk = q;
	q += r->r_bulk_len;
	n -= r->r_bulk_len;
	*p = q;
	*left = n;
	return 1;
}

size_t fz_rec_put(uint8_t *out, size_t cap, uint16_t op, const void *body, size_t body_len,
		  const void *bulk, size_t bulk_len)
{
	size_t n = FZ_REC_HDR + body_len + bulk_len;
	if (n > cap || body_len > UINT16_MAX || bulk_len > UINT16_MAX)
		return 0;
	weir_put_le16(out, op);
	weir_put_le16(out + 2, (uint16_t)body_len);
	weir_put_le16(out + 4, (uint16_t)bulk_len);
	if (body_len)
		memcpy(out + FZ_REC_HDR, body, body_len);
	if (bulk_len)
		memcpy(out + FZ_REC_HDR + body_len, bulk, bulk_len);
	return n;
}

struct net_req *fz_req_new(const struct fz_rec *r, void *srv_arg, void *loop_priv)
{
	static atomic_ulong next_reqid;
	struct net_req *rq = calloc(1, sizeof(*rq));
	size_t len = r->r_body_len + r->r_bulk_len;
	/* one allocation, body then bulk, NULL when empty: as net/server.c */
	uint8_t *buf = len ? malloc(len) : NULL;
	if (!rq || (len && !buf)) {
		free(rq);
		free(buf);
		return NULL;
	}
	if (r->r_body_len)
		memcpy(buf, r->r_body, r->r_body_len);
	if (r->r_bulk_len)
		memcpy(buf + r->r_body_len, r->r_bulk, r->r_bulk_len);
	rq->rq_hdr.fh_magic = WEIR_FRAME_MAGIC;
	rq->rq_hdr.fh_version = WEIR_FRAME_VERSION;
	rq->rq_hdr.fh_opcode = r->r_op;
	rq->rq_hdr.fh_reqid = atomic_fetch_add(&next_reqid, 1) + 1;
	rq->rq_hdr.fh_body_len = (uint32_t)r->r_body_len;
	rq->rq_hdr.fh_bulk_len = r->r_bulk_len;
	rq->rq_body = buf;
	rq->rq_bulk = r->r_bulk_len ? buf + r->r_body_len : NULL;
	rq->rq_loop = fz_loop;
	rq->rq_loop_priv = loop_priv;
	rq->rq_srv_arg = srv_arg;
	rq->rq_conn = &fz_conn_tag;
	snprintf(rq->rq_peer, sizeof(rq->rq_peer), "127.0.0.1:40000");
	return rq;
}

static void fz_die(const struct net_req *rq, const char *why)
{
	fprintf(stderr, "fuzz: op=%u reqid=%llu: %s\n", rq->rq_hdr.fh_opcode,
		(unsigned long long)rq->rq_hdr.fh_reqid, why);
	abort();
}

void __real_net_req_reply(struct net_req *rq, int rc, const ProtobufCMessage *body,
			  const struct iovec *bulk, int nr_bulk);
void __wrap_net_req_reply(struct net_req *rq, int rc, const ProtobufCMessage *body,
			  const struct iovec *bulk, int nr_bulk);
int __real_net_loop_add_fd(struct net_loop *lp, int fd, void (*cb)(void *arg), void *arg);
int __wrap_net_loop_add_fd(struct net_loop *lp, int fd, void (*cb)(void *arg), void *arg);

/*
 * A reply: what net/server.c would put on the wire is built (the body
 * packed, the bulk read) and checked against what a client accepts.
 */
void __wrap_net_req_reply(struct net_req *rq, int rc, const ProtobufCMessage *body,
			  const struct iovec *bulk, int nr_bulk)
{
	if (rq->rq_conn != &fz_conn_tag) {
		__real_net_req_reply(rq, rc, body, bulk, nr_bulk);
		return;
	}
	if (rq->rq_rep_hold) { /* a change's callbacks (mds/mdl_svc.c): sent, not waited for */
		bool (*hold)(struct net_req *, bool) = rq->rq_rep_hold;
		rq->rq_rep_hold = NULL;
		hold(rq, false);
	}
	if (rq->rq_rep_prepare) /* as net/server.c does, on the replying thread */
		rq->rq_rep_prepare(rq);
	if (rc > 0 || rc < -4095)
		fz_die(rq, "reply status is not 0 or a negative errno");
	if (nr_bulk < 0 || (nr_bulk > 0 && !bulk))
		fz_die(rq, "reply with a bad bulk vector");
	uint64_t bulk_len = 0;
	volatile uint8_t sink = 0;
	for (int i = 0; i < nr_bulk && !rc; i++) {
		const uint8_t *b = bulk[i].iov_base;
		bulk_len += bulk[i].iov_len;
		if (bulk[i].iov_len) { /* ASan checks the ends of every reply buffer */
			sink ^= b[0];
			sink ^= b[bulk[i].iov_len - 1];
		}
	}
	(void)sink;
	if (!rc && nr_bulk > NET_MAX_BULK_IOV)
		fz_die(rq, "reply bulk in more iovec segments than the server sends");
	if (!rc && bulk_len > WEIR_FRAME_MAX_BULK)
		fz_die(rq, "reply bulk over WEIR_FRAME_MAX_BULK: the client refuses the frame");
	if (body && !rc) {
		size_t len = protobuf_c_message_get_packed_size(body);
		if (len + (rq->rq_rep_txn ? WEIR_TXN_HDR_SIZE : 0) > WEIR_FRAME_MAX_BODY)
			fz_die(rq,
			       "reply body over WEIR_FRAME_MAX_BODY: the client refuses the frame");
		uint8_t *buf = malloc(len ? len : 1);
		if (buf) {
			if (protobuf_c_message_pack(body, buf) != len)
				fz_die(rq, "reply body packs to another size than it reported");
			free(buf);
		}
	}
	if (fz_reply_hook)
		fz_reply_hook(rq, rc, rc ? NULL : body);
	if (fz_trace)
		fprintf(stderr, "fuzz: reply op=%u reqid=%llu rc=%d body=%zu bulk=%llu\n",
			rq->rq_hdr.fh_opcode, (unsigned long long)rq->rq_hdr.fh_reqid, rc,
			body && !rc ? protobuf_c_message_get_packed_size(body) : 0,
			(unsigned long long)bulk_len);
	free((void *)rq->rq_body); /* body and bulk are one allocation */
	free(rq);
	atomic_fetch_add(&fz_replies, 1);
	if (fz_reply_efd >= 0)
		eventfd_write(fz_reply_efd, 1);
}

int __wrap_net_loop_add_fd(struct net_loop *lp, int fd, void (*cb)(void *arg), void *arg)
{
	if (lp != fz_loop)
		return __real_net_loop_add_fd(lp, fd, cb, arg);
	fz_loop_fd = (struct fz_loop_fd){ fd, cb, arg };
	return 0;
}

/* ------------------------------------------------------------ byte streams */

#define FZ_RECV_TIMEOUT_MS 10000 /* a loaded machine running sanitizers is slow */

void fz_mend(uint8_t *p, size_t len)
{
	size_t off = 0;
	while (len - off >= WEIR_FRAME_HDR_SIZE) {
		uint8_t *h = p + off;
		weir_put_le32(h + 40, (uint32_t)crc32(0L, h, 40));
		uint64_t skip =
		    WEIR_FRAME_HDR_SIZE + (uint64_t)weir_get_le32(h + 24) + weir_get_le64(h + 32);
		if (skip > len - off)
			break;
		off += skip;
	}
}

int fz_connect(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINTR) {
			int rc = -errno;
			close(fd);
			return rc;
		}
		/* interrupted (libFuzzer's SIGALRM): it goes on; wait for its end */
		int err = 0;
		socklen_t el = sizeof(err);
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		while (poll(&pf, 1, FZ_RECV_TIMEOUT_MS) < 0 && errno == EINTR)
			;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			close(fd);
			return err ? -err : -EIO;
		}
	}
	return fd;
}

int fz_send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_part(int fd, uint8_t *dst, size_t want)
{
	size_t got = 0;
	while (got < want) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int p = poll(&pf, 1, FZ_RECV_TIMEOUT_MS);
		if (p < 0 && errno == EINTR)
			continue; /* libFuzzer's timer (SIGALRM) */
		if (p == 0)
			return -ETIMEDOUT;
		if (p < 0)
			return -errno;
		ssize_t n = recv(fd, dst + got, want - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

ssize_t fz_recv_frame(int fd, struct weir_frame_hdr *h, uint8_t *body, size_t cap)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	const char *why;
	int rc = recv_part(fd, raw, sizeof(raw));
	if (rc)
		return rc;
	if (weir_frame_decode(raw, h, &why) || h->fh_body_len > cap || h->fh_bulk_len)
		return -EPROTO;
	rc = recv_part(fd, body, h->fh_body_len);
	return rc ? rc : (ssize_t)h->fh_body_len;
}

int fz_send_frame(int fd, uint16_t op, uint32_t flags, uint64_t reqid, int32_t status,
		  const ProtobufCMessage *m)
{
	uint8_t buf[WEIR_FRAME_HDR_SIZE + 1024];
	size_t len = m ? protobuf_c_message_get_packed_size(m) : 0;
	if (len > sizeof(buf) - WEIR_FRAME_HDR_SIZE)
		return -1;
	struct weir_frame_hdr h = { .fh_opcode = op,
				   .fh_flags = flags,
				   .fh_status = status,
				   .fh_reqid = reqid,
				   .fh_body_len = (uint32_t)len };
	weir_frame_encode(&h, buf);
	if (m)
		protobuf_c_message_pack(m, buf + WEIR_FRAME_HDR_SIZE);
	return fz_send_all(fd, buf, WEIR_FRAME_HDR_SIZE + len);
}

void fz_auth_proof(const struct weir_keyring *kr, const char *tag, const uint8_t *nc,
		   const uint8_t *ns, uint8_t out[32])
{
	const struct weir_key *k = &kr->kr_keys[0];
	struct iovec iov[4] = { { (void *)tag, strlen(tag) },
			       { (void *)k->wk_id, WEIR_KEY_ID_LEN },
			       { (void *)nc, 32 },
			       { (void *)ns, 32 } };
	weir_hmac_sha256(k->wk_key, WEIR_KEY_LEN, iov, 4, out);
}

/* ------------------------------------------------------------ scratch */

static char scratch[256];
static void (*scratch_stop)(void);

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void scratch_atexit(void)
{
	if (scratch_stop)
		scratch_stop();
	if (scratch[0])
		nftw(scratch, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}

void fz_at_exit(void (*stop)(void))
{
	scratch_stop = stop;
	atexit(scratch_atexit);
}

const char *fz_scratch(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch, sizeof(scratch), "%s/weir-fuzz-%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp",
		 name);
	if (!mkdtemp(scratch)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	/* OpenSSL registers its exit-time cleanup at its first use: let that be
	 * now, before fz_at_exit(), so that it runs after the server stopped
	 * (a thread that first used it later leaked its per-thread state) */
	uint8_t rnd[8];
	if (weir_random_bytes(rnd, sizeof(rnd))) {
		fprintf(stderr, "fuzz: no randomness\n");
		abort();
	}
	fz_trace = getenv("FUZZ_TRACE") != NULL;
	const char *log = getenv("FUZZ_LOG");
	const char *lvl = getenv("FUZZ_LOG_LEVEL");
	int level = lvl ? weir_log_parse_level(lvl) : WEIR_LOG_LVL_DEBUG;
	if (level < 0 || weir_log_open(log && log[0] ? log : "/dev/null")) {
		fprintf(stderr, "fuzz: bad FUZZ_LOG or FUZZ_LOG_LEVEL\n");
		abort();
	}
	weir_log_set_level(level);
	fz_reply_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fz_reply_efd < 0) {
		perror("fuzz: eventfd");
		abort();
	}
	return scratch;
}
