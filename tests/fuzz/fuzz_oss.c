/*
 * tests/fuzz/fuzz_oss.c - libFuzzer harness: every OSS request handler, over
 * a real OST directory and a real io_uring.
 *
 * DESIGN. One OSS per process, started by oss_start() on one OST directory
 * in a scratch directory whose index (FZ_OST_IDX) is already known, so it
 * serves without an MDS (its registration fails quietly in the background,
 * as in tests/unit/oss/test_svc.c). The fuzzer's thread plays an event loop
 * of its own: it has an io_uring made by oss_uring_new() for fz_loop (a loop
 * that does not exist; fuzz.h captures the completion eventfd it registers),
 * gives each request of an input to the OSS's so_handle as a loop thread
 * would, and then runs the ring's completions itself until the reply came
 * (data I/O replies from the completion callbacks on this thread; truncate
 * and destroy from the oss-slow threads). A request not answered within
 * FZ_REPLY_TIMEOUT_MS is a bug: the harness aborts.
 * Objects outlive inputs, as on a server. Disk: a fallocate that would
 * reserve more than FZ_FALLOC_MAX bytes, and any write or fallocate while
 * the scratch filesystem has under FZ_MIN_AVAIL bytes free, is skipped
 * (the checks before the disk are still fuzzed through the other fields).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/capa.h"
#include "common/util.h"
#include "fuzz.h"
#include "oss/oss.h"
#include "oss/oss_int.h"
#include "weir.pb-c.h"

#define FZ_OST_IDX	    5
#define FZ_REPLY_TIMEOUT_MS 20000
#define FZ_FALLOC_MAX	    (64ULL << 20)
#define FZ_MIN_AVAIL	    (4ULL << 30)

static struct oss *fz_oss;
static uint8_t fz_capa_key[WEIR_CAPA_KEY_LEN];
static struct weir_capa_key fz_ck; /* fz_capa_key, generation FZ_CAPA_GEN */

/* The MAC of (fid, rights, expiry, gen) with fz_capa_key, whatever \a gen. */
static void fz_mac(const struct weir_fid *f, uint32_t rights, int64_t expiry_s, uint32_t gen,
		   uint8_t *mac)
{
	struct weir_capa_key k = fz_ck; /* same key bytes and id: the same thread context */
	k.ck_gen = gen;
	weir_capa_mac(&k, f, rights, expiry_s, mac);
}
#define FZ_CAPA_GEN 1
static struct oss_uring *fz_ring;
static struct net_server_ops fz_srv_ops;
static char fz_ost[300];
static unsigned long fz_sent;

static void oss_fini(void)
{
	oss_uring_free(fz_ring); /* drains: callbacks reply */
	fz_ring = NULL;
	oss_stop(fz_oss);
	fz_oss = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ capabilities */

/* A top-level message field of \a m named \a name, or NULL. */
static ProtobufCMessage **field_msg(ProtobufCMessage *m, const char *name)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
		m->descriptor, name);
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED)
		return NULL;
	return (ProtobufCMessage **)((char *)m + f->offset);
}

/*
 * The right an object request needs (oss/svc*.c), 0 for one that needs none.
 * \a m is the unpacked request.
 */
static uint32_t capa_need(uint16_t op, const ProtobufCMessage *m)
{
	switch (op) {
	case WEIR__WIRE_OP__OST_READ:
	case WEIR__WIRE_OP__OST_SEEK:
		return WEIR_CAPA_READ;
	case WEIR__WIRE_OP__OST_WRITE:
		return WEIR_CAPA_WRITE;
	case WEIR__WIRE_OP__OST_GETATTR:
	case WEIR__WIRE_OP__OST_FSYNC:
		return WEIR_CAPA_GETATTR;
	case WEIR__WIRE_OP__OST_TRUNCATE:
		return WEIR_CAPA_PUNCH;
	case WEIR__WIRE_OP__OST_DESTROY:
		return WEIR_CAPA_DESTROY;
	case WEIR__WIRE_OP__OST_FALLOCATE:
		return (((const Weir__ObjFallocReq *)m)->mode & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE)
			       ? WEIR_CAPA_PUNCH
			       : WEIR_CAPA_WRITE;
	default:
		return 0;
	}
}

/* What mend_one() changed in a capability, to put back before the free. */
struct mend {
	Weir__Capa *m_capa;
	Weir__Fid *m_fid;
	uint8_t *m_old_mac;
	uint8_t m_mac[WEIR_CAPA_MAC_LEN];
};

/* Sign the capability of object request \a m as capa_mend() says, the MAC in \a md. */
static bool mend_one(ProtobufCMessage *m, struct mend *md)
{
	ProtobufCMessage **cp = field_msg(m, "capa"), **fp = field_msg(m, "fid");
	Weir__Capa *c = cp ? (Weir__Capa *)*cp : NULL;
	md->m_capa = NULL;
	if (!c || c->mac.len)
		return false;
	md->m_capa = c;
	md->m_fid = c->fid;
	md->m_old_mac = c->mac.data;
	if (!c->fid && fp && *fp)
		c->fid = (Weir__Fid *)*fp;
	if (!c->expiry_s)
		c->expiry_s = (int64_t)time(NULL) + 3600;
	if (!c->key_gen)
		c->key_gen = FZ_CAPA_GEN;
	struct weir_fid f = { c->fid ? c->fid->seq : 0, c->fid ? c->fid->oid : 0 };
	fz_mac(&f, c->rights, c->expiry_s, c->key_gen, md->m_mac);
	c->mac.data = md->m_mac;
	c->mac.len = sizeof(md->m_mac);
	return true;
}

static void mend_undo(struct mend *md)
{
	if (!md->m_capa)
		return;
	md->m_capa->mac.data = md->m_old_mac; /* ours is in md */
	md->m_capa->mac.len = 0;
	md->m_capa->fid = md->m_fid;
}

/*
 * Sign the capability of \a r's request when it has one whose MAC is empty
 * (the fuzzer cannot compute HMACs): its FID, when missing, is the request's,
 * an expiry of 0 is an hour from now, a key generation of 0 the current one;
 * its rights are left as they are. OST_DESTROY_BATCH: each object's. \return
 * the new body's length in \a buf, or 0 when unchanged.
 */
static size_t capa_mend(const struct fz_rec *r, uint8_t *buf, size_t cap)
{
	const struct fz_op *o = fz_op_find(r->r_op);
	if (!o)
		return 0;
	ProtobufCMessage *m = protobuf_c_message_unpack(o->o_req, NULL, r->r_body_len, r->r_body);
	if (!m)
		return 0;
	size_t n = 0, nm = 1;
	ProtobufCMessage **ms = &m;
	if (r->r_op == WEIR__WIRE_OP__OST_DESTROY_BATCH) {
		Weir__ObjDestroyBatchReq *b = (Weir__ObjDestroyBatchReq *)m;
		ms = (ProtobufCMessage **)b->objs;
		nm = b->n_objs;
	}
	struct mend *md = calloc(nm ? nm : 1, sizeof(*md));
	bool changed = false;
	for (size_t i = 0; md && i < nm; i++)
		changed |= mend_one(ms[i], &md[i]);
	if (changed && protobuf_c_message_get_packed_size(m) <= cap)
		n = protobuf_c_message_pack(m, buf);
	for (size_t i = 0; md && i < nm; i++)
		mend_undo(&md[i]);
	free(md);
	protobuf_c_message_free_unpacked(m, NULL);
	return n;
}

/* Why object request \a m of \a op may not have been served, or NULL. */
static const char *capa_bad(uint16_t op, ProtobufCMessage *m)
{
	ProtobufCMessage **cp = field_msg(m, "capa"), **fp = field_msg(m, "fid");
	const Weir__Capa *c = cp ? (const Weir__Capa *)*cp : NULL;
	const Weir__Fid *f = fp ? (const Weir__Fid *)*fp : NULL;
	uint8_t mac[WEIR_CAPA_MAC_LEN];
	uint32_t need = capa_need(op, m);
	if (!c || !c->fid || !f)
		return "no capability";
	if (c->fid->seq != f->seq || c->fid->oid != f->oid)
		return "a capability for another file";
	if ((c->rights & need) != need)
		return "a capability without the right";
	if (c->expiry_s <= (int64_t)time(NULL) - 5)
		return "an expired capability";
	if (c->key_gen != FZ_CAPA_GEN || c->mac.len != sizeof(mac))
		return "a capability of another key";
	struct weir_fid wf = { f->seq, f->oid };
	fz_mac(&wf, c->rights, c->expiry_s, c->key_gen, mac);
	if (memcmp(mac, c->mac.data, sizeof(mac)))
		return "a forged capability";
	return NULL;
}

/*
 * Every object request answered 0 held a valid capability: for its FID, with
 * the right it needs, not expired, signed with the current key. Anything
 * else is an OSS serving an object to whoever asks.
 */
static void reply_check(const struct net_req *rq, int rc, const ProtobufCMessage *body)
{
	uint16_t op = rq->rq_hdr.fh_opcode;
	const struct fz_op *o = fz_op_find(op);
	if (rc || !o || op == WEIR__WIRE_OP__OST_STATFS || op == WEIR__WIRE_OP__PING)
		return;
	ProtobufCMessage *m = protobuf_c_message_unpack(o->o_req, NULL, rq->rq_hdr.fh_body_len,
							rq->rq_body);
	const char *bad = NULL;
	if (!m) {
		bad = "its body does not unpack";
	} else if (op == WEIR__WIRE_OP__OST_DESTROY_BATCH) {
		/* each object destroyed (WS_OK) held a valid capability */
		const Weir__ObjDestroyBatchReq *b = (const Weir__ObjDestroyBatchReq *)m;
		const Weir__ObjDestroyBatchRep *rep = (const Weir__ObjDestroyBatchRep *)body;
		if (!rep || rep->n_status != b->n_objs)
			bad = "a reply without one status per object";
		for (size_t i = 0; !bad && i < b->n_objs; i++)
			if (rep->status[i] == WEIR__WIRE_STATUS__WS_OK && (bad = capa_bad(WEIR__WIRE_OP__OST_DESTROY,
							   &b->objs[i]->base)))
				fprintf(stderr, "fuzz_oss: object %zu of the batch:\n", i);
	} else {
		bad = capa_bad(op, m);
	}
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	if (bad) {
		fprintf(stderr, "fuzz_oss: op=%u answered 0 with %s\n", op, bad);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char path[400];
	const char *dir = fz_scratch("oss");
	snprintf(fz_ost, sizeof(fz_ost), "%s/ost0", dir);
	snprintf(path, sizeof(path), "%s/ost.index", fz_ost);
	if (mkdir(fz_ost, 0755) || weir_file_write_atomic(path, "5\n", 2)) {
		perror("fuzz_oss: OST directory");
		abort();
	}
	struct oss_conf c;
	oss_conf_init(&c);
	c.oc_mds = "127.0.0.1:1"; /* nobody: registration retries in the background */
	c.oc_osts[0] = fz_ost;
	c.oc_nr_osts = 1;
	c.oc_nr_threads = 1;
	c.oc_heartbeat_ms = 3600 * 1000;
	int rc = oss_start(&c, &fz_oss);
	if (!rc)
		rc = oss_uring_new(fz_loop, &fz_ring);
	if (rc || fz_loop_fd.lf_fd < 0) {
		fprintf(stderr, "fuzz_oss: start: %d\n", rc);
		abort();
	}
	oss_svc_ops(fz_oss, &fz_srv_ops);
	/* capabilities checked, with a key of ours, as if the MDS had given it */
	memset(fz_capa_key, 0xc4, sizeof(fz_capa_key));
	weir_capa_key_init(&fz_ck, fz_capa_key, FZ_CAPA_GEN);
	fz_oss->o_capa_off = false;
	oss_capa_set_key(fz_oss, fz_capa_key, sizeof(fz_capa_key), FZ_CAPA_GEN);
	fz_reply_hook = reply_check;
	fz_at_exit(oss_fini);
	return 0;
}

/* Would this request reserve much disk, or is the disk nearly full? */
static bool disk_hog(const struct fz_rec *r)
{
	static unsigned calls;
	static bool low;
	if (r->r_op != WEIR__WIRE_OP__OST_WRITE && r->r_op != WEIR__WIRE_OP__OST_FALLOCATE)
		return false;
	if (calls++ % 256 == 0) {
		struct statvfs sv;
		low =
		    statvfs(fz_ost, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < FZ_MIN_AVAIL;
		if (low)
			fprintf(stderr, "fuzz_oss: under %llu bytes free: writes skipped\n",
				(unsigned long long)FZ_MIN_AVAIL);
	}
	if (low)
		return true;
	if (r->r_op != WEIR__WIRE_OP__OST_FALLOCATE)
		return false;
	Weir__ObjFallocReq *f = (Weir__ObjFallocReq *)protobuf_c_message_unpack(
	    &weir__obj_falloc_req__descriptor, NULL, r->r_body_len, r->r_body);
	bool hog = f && !(f->mode & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE) && f->len > FZ_FALLOC_MAX &&
		   f->off + f->len >= f->off; /* an overflowing range is refused before the disk */
	if (f)
		protobuf_c_message_free_unpacked(&f->base, NULL);
	return hog;
}

/* Run this thread's ring until the request just sent is answered. */
static void wait_reply(uint16_t op)
{
	uint64_t deadline = weir_now_ns() + FZ_REPLY_TIMEOUT_MS * 1000000ULL;
	while (atomic_load(&fz_replies) < fz_sent) {
		struct pollfd pf[2] = { { .fd = fz_loop_fd.lf_fd, .events = POLLIN },
					{ .fd = fz_reply_efd, .events = POLLIN } };
		int n = poll(pf, 2, 100);
		if (n > 0 && pf[0].revents)
			fz_loop_fd.lf_cb(fz_loop_fd.lf_arg);
		if (n > 0 && pf[1].revents) {
			eventfd_t v;
			eventfd_read(fz_reply_efd, &v);
		}
		if (weir_now_ns() > deadline) {
			fprintf(stderr, "fuzz_oss: op=%u: no reply in %d ms\n", op,
				FZ_REPLY_TIMEOUT_MS);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec r;
	static uint8_t buf[65536];
	for (int i = 0; i < FZ_MAX_RECS && fz_rec_next(&data, &size, &r); i++) {
		size_t n = capa_mend(&r, buf, sizeof(buf));
		if (n) {
			r.r_body = buf;
			r.r_body_len = n;
		}
		if (disk_hog(&r))
			continue;
		struct net_req *rq = fz_req_new(&r, fz_oss, fz_ring);
		if (!rq)
			break;
		fz_sent++;
		fz_srv_ops.so_handle(rq);
		wait_reply(r.r_op);
	}
	return 0;
}
