/*
 * tests/unit/oss/test_svc.c - the OSS request handlers (oss/svc.c,
 * oss/svc_io.c) with their real io_uring (oss/uring.c): an OSS started in
 * this process by oss_start() on one OST directory whose index is already
 * known (DIR/ost.index, so it serves without an MDS; registration keeps
 * failing quietly in the background), driven by raw OST RPCs over loopback
 * TCP. Covers reads and writes across 1 TiB segments and at the last byte
 * of an object, holes, fallocate modes, SEEK_DATA/SEEK_HOLE, fsync of
 * segmented objects, truncate/destroy, the fd cache's invalidation by
 * destroy and truncate, reads that end at the end of an object (sized only
 * then) also while another connection appends, writeback started by large
 * writes (with and without the fd cache), and malformed requests.
 * The process sets no net_auth default, which is --insecure: this OSS checks
 * no capabilities, and the requests here carry none (the checks themselves
 * are tests/unit/oss/test_capa.c and tests/integration/test_capa.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/log.h"
#include "common/util.h"
#include "harness.h"
#include "net/net.h"
#include "oss/oss.h"
#include "weir.pb-c.h"

#define TIB (1ULL << 40)
#define MIB (1ULL << 20)
#define OST_IDX 5
#define MAXOFF ((uint64_t)INT64_MAX)

static char dir[64];
static struct oss *oss;
static struct net_conn *conn;
static uint64_t next_oid = 1;

static int suite_init(void)
{
	char path[128], addr[32];
	struct oss_conf c;

	snprintf(dir, sizeof(dir), "/tmp/weir-oss-svc-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/oss.log", dir);
	weir_log_set_level(WEIR_LOG_LVL_ERROR);
	if (weir_log_open(path))
		return -1;
	snprintf(path, sizeof(path), "%s/ost0", dir);
	if (mkdir(path, 0755))
		return -1;
	snprintf(path, sizeof(path), "%s/ost0/ost.index", dir);
	if (weir_file_write_atomic(path, "5\n", 2))
		return -1;
	snprintf(path, sizeof(path), "%s/ost0", dir);
	oss_conf_init(&c);
	c.oc_mds = "127.0.0.1:1"; /* nobody: registration retries in the background */
	c.oc_osts[0] = path;
	c.oc_nr_osts = 1;
	c.oc_nr_threads = 2;
	c.oc_heartbeat_ms = 3600 * 1000;
	if (oss_start(&c, &oss))
		return -1;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", oss_port(oss));
	return net_conn_open(addr, 2000, &conn) ? -1 : 0;
}

static int suite_clean(void)
{
	char log[128];

	net_conn_close(conn);
	oss_stop(oss);
	if (th_failed()) {
		snprintf(log, sizeof(log), "%s/oss.log", dir);
		fprintf(stderr, "  OSS log:\n");
		FILE *f = fopen(log, "r");
		char line[512];
		while (f && fgets(line, sizeof(line), f))
			fputs(line, stderr);
		if (f)
			fclose(f);
	}
	return th_rm_rf(dir) ? -1 : 0;
}

/* ------------------------------------------------------------ RPC helpers */

struct obj {
	Weir__Fid o_fid;
	uint32_t o_stripe;
};

static struct obj obj_new(void)
{
	struct obj o;
	weir__fid__init(&o.o_fid);
	o.o_fid.seq = 0x200000400ULL;
	o.o_fid.oid = next_oid++;
	o.o_stripe = 1;
	return o;
}

static int rpc_write_on(struct net_conn *c, struct obj *o, uint64_t off, const void *buf,
			size_t len, uint64_t *obj_size)
{
	Weir__ObjIoReq req = WEIR__OBJ_IO_REQ__INIT;
	struct iovec iov = { (void *)buf, len };
	struct net_call call;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.off = off;
	req.len = len;
	net_call_init(&call, WEIR__WIRE_OP__OST_WRITE, &req.base);
	call.nc_req_bulk = &iov;
	call.nc_req_nr_bulk = len ? 1 : 0;
	int rc = net_call_run(c, &call);
	if (!rc) {
		Weir__ObjIoRep *rep = net_call_unpack(&call, &weir__obj_io_rep__descriptor);
		if (!rep) {
			rc = -EPROTO;
		} else {
			if (rep->len != len)
				rc = -EIO;
			if (obj_size)
				*obj_size = rep->obj_size;
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		}
	}
	net_call_fini(&call);
	return rc;
}

static int rpc_write(struct obj *o, uint64_t off, const void *buf, size_t len,
		     uint64_t *obj_size)
{
	return rpc_write_on(conn, o, off, buf, len, obj_size);
}

/* \return bytes read or -errno; on \a c, *\a obj_size from the reply when not NULL */
static long long rpc_read_on(struct net_conn *c, struct obj *o, uint64_t off, void *buf,
			     size_t len, uint64_t *obj_size)
{
	Weir__ObjIoReq req = WEIR__OBJ_IO_REQ__INIT;
	struct iovec iov = { buf, len };
	struct net_call call;
	long long n;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.off = off;
	req.len = len;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	call.nc_rep_bulk = &iov;
	call.nc_rep_nr_bulk = 1;
	int rc = net_call_run(c, &call);
	n = rc;
	if (!rc) {
		Weir__ObjIoRep *rep = net_call_unpack(&call, &weir__obj_io_rep__descriptor);
		n = -EPROTO;
		if (rep && rep->len == call.nc_rep_bulk_len)
			n = (long long)rep->len;
		if (rep && obj_size)
			*obj_size = rep->obj_size;
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	net_call_fini(&call);
	return n;
}

/* \return bytes read or -errno */
static long long rpc_read(struct obj *o, uint64_t off, void *buf, size_t len)
{
	return rpc_read_on(conn, o, off, buf, len, NULL);
}

struct attr {
	bool exists;
	uint64_t size;
	uint64_t blocks;
};

static int attr_unpack(struct net_call *call, struct attr *a)
{
	Weir__ObjAttrRep *rep = net_call_unpack(call, &weir__obj_attr_rep__descriptor);
	if (!rep)
		return -EPROTO;
	if (a) {
		a->exists = rep->exists;
		a->size = rep->size;
		a->blocks = rep->blocks;
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

/* OST_GETATTR / OST_FSYNC / OST_DESTROY; \a a filled for GETATTR. */
static int rpc_obj(uint16_t op, struct obj *o, uint32_t flags, struct attr *a)
{
	Weir__ObjReq req = WEIR__OBJ_REQ__INIT;
	struct net_call call;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.flags = flags;
	net_call_init(&call, op, &req.base);
	int rc = net_call_run(conn, &call);
	if (!rc && op == WEIR__WIRE_OP__OST_GETATTR)
		rc = attr_unpack(&call, a);
	net_call_fini(&call);
	return rc;
}

static int rpc_truncate(struct obj *o, uint64_t size, struct attr *a)
{
	Weir__ObjTruncReq req = WEIR__OBJ_TRUNC_REQ__INIT;
	struct net_call call;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.size = size;
	net_call_init(&call, WEIR__WIRE_OP__OST_TRUNCATE, &req.base);
	int rc = net_call_run(conn, &call);
	if (!rc)
		rc = attr_unpack(&call, a);
	net_call_fini(&call);
	return rc;
}

static int rpc_falloc(struct obj *o, uint32_t mode, uint64_t off, uint64_t len, struct attr *a)
{
	Weir__ObjFallocReq req = WEIR__OBJ_FALLOC_REQ__INIT;
	struct net_call call;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.off = off;
	req.len = len;
	req.mode = mode;
	net_call_init(&call, WEIR__WIRE_OP__OST_FALLOCATE, &req.base);
	int rc = net_call_run(conn, &call);
	if (!rc)
		rc = attr_unpack(&call, a);
	net_call_fini(&call);
	return rc;
}

/* \return the offset found, -ENXIO when not found, or -errno. */
static long long rpc_seek(struct obj *o, uint64_t off, uint32_t whence, bool *exists)
{
	Weir__ObjSeekReq req = WEIR__OBJ_SEEK_REQ__INIT;
	struct net_call call;
	long long r;

	req.ost = OST_IDX;
	req.fid = &o->o_fid;
	req.stripe = o->o_stripe;
	req.off = off;
	req.whence = whence;
	net_call_init(&call, WEIR__WIRE_OP__OST_SEEK, &req.base);
	int rc = net_call_run(conn, &call);
	r = rc;
	if (!rc) {
		Weir__ObjSeekRep *rep = net_call_unpack(&call, &weir__obj_seek_rep__descriptor);
		if (!rep) {
			r = -EPROTO;
		} else {
			r = rep->found ? (long long)rep->off : -ENXIO;
			if (exists)
				*exists = rep->exists;
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		}
	}
	net_call_fini(&call);
	return r;
}

/* Index of the first differing byte, or -1. */
static long th_diff_at(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

static long long nonzero_bytes(const uint8_t *p, size_t len)
{
	long long n = 0;
	for (size_t i = 0; i < len; i++)
		n += p[i] != 0;
	return n;
}

/* ------------------------------------------------------------ tests */

static void test_svc_write_read_across_segment_boundary_byte_exact(void)
{
	const size_t len = 3 * MIB + 77;
	uint8_t *w = malloc(len), *r = malloc(len);
	struct obj o = obj_new();
	uint64_t sz = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, len, 1);
	CU_ASSERT_EQUAL(rpc_write(&o, TIB - MIB - 3, w, len, &sz), 0);
	CU_ASSERT_EQUAL(sz, TIB - MIB - 3 + len);
	memset(r, 0xee, len);
	CU_ASSERT_EQUAL(rpc_read(&o, TIB - MIB - 3, r, len), (long long)len);
	CU_ASSERT_EQUAL(th_diff_at(w, r, len), -1);
	/* a read from segment 1 alone, and one that ends at the object's end */
	CU_ASSERT_EQUAL(rpc_read(&o, TIB, r, len), (long long)(len - MIB - 3));
	CU_ASSERT_EQUAL(th_diff_at(w + MIB + 3, r, len - MIB - 3), -1);
	free(w);
	free(r);
}

static void test_svc_last_object_byte_and_efbig(void)
{
	struct obj o = obj_new();
	uint8_t b = 0x5a, r[4] = { 0 };
	uint64_t sz = 0;
	struct attr a;

	CU_ASSERT_EQUAL(rpc_write(&o, MAXOFF - 1, &b, 1, &sz), 0);
	CU_ASSERT_EQUAL(sz, MAXOFF);
	CU_ASSERT_EQUAL(rpc_write(&o, MAXOFF, &b, 1, NULL), -EFBIG);
	CU_ASSERT_EQUAL(rpc_read(&o, MAXOFF - 1, r, 1), 1);
	CU_ASSERT_EQUAL(r[0], 0x5a);
	CU_ASSERT_EQUAL(rpc_read(&o, MAXOFF - 3, r, 3), 3);
	CU_ASSERT_EQUAL(r[0] | r[1], 0);
	CU_ASSERT_EQUAL(rpc_read(&o, MAXOFF, r, 1), -EINVAL);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_TRUE(a.exists);
	CU_ASSERT_EQUAL(a.size, MAXOFF);
	CU_ASSERT(a.blocks > 0 && a.blocks <= 16);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_FALSE(a.exists);
}

static void test_svc_holes_and_missing_segments_read_zeros(void)
{
	const size_t len = MIB;
	uint8_t *r = malloc(len), w[100];
	struct obj o = obj_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	th_fill_pattern(w, sizeof(w), 2);
	/* never written: an empty read, not an error */
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, len), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, 3 * TIB, w, sizeof(w), NULL), 0);
	/* segment 0's short tail, then the missing segment 1 */
	memset(r, 0xee, len);
	CU_ASSERT_EQUAL(rpc_read(&o, TIB - len / 2, r, len), (long long)len);
	CU_ASSERT_EQUAL(nonzero_bytes(r, len), 0);
	memset(r, 0xee, len);
	CU_ASSERT_EQUAL(rpc_read(&o, 3 * TIB - len / 2, r, len), (long long)(len / 2 + 100));
	CU_ASSERT_EQUAL(nonzero_bytes(r, len / 2), 0);
	CU_ASSERT_EQUAL(memcmp(r + len / 2, w, 100), 0);
	free(r);
}

static void test_svc_fallocate_modes(void)
{
	struct obj o = obj_new();
	struct attr a, b;
	const uint32_t keep = WEIR__FALLOC_FLAG__FA_KEEP_SIZE;
	const uint32_t punch = WEIR__FALLOC_FLAG__FA_PUNCH_HOLE | keep;

	CU_ASSERT_EQUAL(rpc_falloc(&o, keep, 0, MIB, &a), 0); /* creates, size stays 0 */
	CU_ASSERT_TRUE(a.exists);
	CU_ASSERT_EQUAL(a.size, 0);
	CU_ASSERT(a.blocks >= MIB / 512);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, MIB, MIB, &b), 0);
	CU_ASSERT_EQUAL(b.size, 2 * MIB);
	CU_ASSERT(b.blocks >= a.blocks + MIB / 512);
	/* across a segment boundary */
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, TIB - 65536, 131072, &a), 0);
	CU_ASSERT_EQUAL(a.size, TIB + 65536);
	CU_ASSERT(a.blocks >= b.blocks + 256);
	CU_ASSERT_EQUAL(rpc_falloc(&o, punch, TIB - 65536, 131072, &b), 0);
	CU_ASSERT_EQUAL(b.size, TIB + 65536);
	CU_ASSERT(b.blocks <= a.blocks - 256);
	/* punching a range with no segment at all */
	CU_ASSERT_EQUAL(rpc_falloc(&o, punch, 5 * TIB, 3 * TIB, &a), 0);
	CU_ASSERT_EQUAL(a.blocks, b.blocks);
	/* refused */
	CU_ASSERT_EQUAL(rpc_falloc(&o, WEIR__FALLOC_FLAG__FA_PUNCH_HOLE, 0, 1, NULL), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 4, 0, 1, NULL), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, 0, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, MAXOFF + 1, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, MAXOFF - 1, 2, NULL), -EFBIG);
	/* a punch on a missing object creates nothing */
	struct obj o2 = obj_new();
	CU_ASSERT_EQUAL(rpc_falloc(&o2, punch, 0, MIB, &a), 0);
	CU_ASSERT_FALSE(a.exists);
}

static void test_svc_seek_data_hole(void)
{
	struct obj o = obj_new();
	uint8_t w[8192];
	bool exists = true;
	const uint32_t D = WEIR__SEEK_WHENCE__SK_DATA, H = WEIR__SEEK_WHENCE__SK_HOLE;

	th_fill_pattern(w, sizeof(w), 3);
	CU_ASSERT_EQUAL(rpc_seek(&o, 0, D, &exists), -ENXIO);
	CU_ASSERT_FALSE(exists);
	CU_ASSERT_EQUAL(rpc_write(&o, 1 * MIB, w, 4096, NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, 2 * TIB - 4096, w, 8192, NULL), 0);
	CU_ASSERT_EQUAL(rpc_seek(&o, 0, D, &exists), (long long)MIB);
	CU_ASSERT_TRUE(exists);
	CU_ASSERT_EQUAL(rpc_seek(&o, MIB + 4096, D, NULL), (long long)(2 * TIB - 4096));
	CU_ASSERT_EQUAL(rpc_seek(&o, 0, H, NULL), 0);
	CU_ASSERT_EQUAL(rpc_seek(&o, MIB, H, NULL), (long long)(MIB + 4096));
	CU_ASSERT_EQUAL(rpc_seek(&o, 2 * TIB - 1, H, NULL), (long long)(2 * TIB + 4096));
	CU_ASSERT_EQUAL(rpc_seek(&o, 2 * TIB + 4096, D, NULL), -ENXIO);
	CU_ASSERT_EQUAL(rpc_seek(&o, 2 * TIB + 4096, H, NULL), (long long)(2 * TIB + 4096));
	CU_ASSERT_EQUAL(rpc_seek(&o, 0, 7, NULL), -EINVAL);
}

static void test_svc_fsync_and_datasync_segmented_object(void)
{
	struct obj o = obj_new();
	uint8_t w[100] = { 1 };

	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_FSYNC, &o, 0, NULL), 0); /* no object */
	CU_ASSERT_EQUAL(rpc_write(&o, 10, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, 4 * TIB, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, 9 * TIB, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_FSYNC, &o, 0, NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_FSYNC, &o, 1, NULL), 0);
}

static void test_svc_truncate_getattr_destroy(void)
{
	struct obj o = obj_new();
	uint8_t w[100] = { 1 };
	struct attr a;

	CU_ASSERT_EQUAL(rpc_truncate(&o, 3 * TIB, &a), 0); /* creates */
	CU_ASSERT_TRUE(a.exists);
	CU_ASSERT_EQUAL(a.size, 3 * TIB);
	CU_ASSERT_EQUAL(rpc_write(&o, 6 * TIB, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_truncate(&o, 5 * TIB + 1, &a), 0);
	CU_ASSERT_EQUAL(a.size, 5 * TIB + 1);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_EQUAL(a.size, 5 * TIB + 1);
	CU_ASSERT_EQUAL(rpc_truncate(&o, MAXOFF + 1, &a), -EFBIG);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_FALSE(a.exists);
}

/* OST_DESTROY_BATCH of objects \a o[0..n) (\a ost[i] their OST index;
 * NULL: OST_IDX each); their statuses as errnos into \a rcs. \return the call's. */
static int rpc_destroy_batch(struct obj *o, const uint32_t *ost, size_t n, int32_t *rcs)
{
	Weir__ObjReq *objs = calloc(n ? n : 1, sizeof(*objs));
	Weir__ObjReq **pp = calloc(n ? n : 1, sizeof(*pp));
	Weir__ObjDestroyBatchReq req = WEIR__OBJ_DESTROY_BATCH_REQ__INIT;
	struct net_call call;

	for (size_t i = 0; i < n; i++) {
		weir__obj_req__init(&objs[i]);
		objs[i].ost = ost ? ost[i] : OST_IDX;
		objs[i].fid = &o[i].o_fid;
		objs[i].stripe = o[i].o_stripe;
		pp[i] = &objs[i];
	}
	req.n_objs = n;
	req.objs = pp;
	net_call_init(&call, WEIR__WIRE_OP__OST_DESTROY_BATCH, &req.base);
	int rc = net_call_run(conn, &call);
	if (!rc) {
		Weir__ObjDestroyBatchRep *rep =
			net_call_unpack(&call, &weir__obj_destroy_batch_rep__descriptor);
		if (!rep || rep->n_status != n)
			rc = -EPROTO;
		for (size_t i = 0; !rc && i < n; i++)
			rcs[i] = weir_status_to_errno(rep->status[i]);
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	net_call_fini(&call);
	free(pp);
	free(objs);
	return rc;
}

/* One OST_DESTROY_BATCH destroys every object it names, segmented ones
 * included; one that is not there is 0 as with OST_DESTROY, and one object
 * it cannot destroy fails alone (its own rc) while the others go. */
static void test_svc_destroy_batch(void)
{
	enum { N = 40 };
	struct obj o[N + 2];
	uint32_t ost[N + 2];
	int32_t rcs[N + 2];
	uint8_t w[64] = { 7 };
	struct attr a;

	for (int i = 0; i < N + 2; i++) {
		o[i] = obj_new();
		ost[i] = OST_IDX;
	}
	for (int i = 0; i < N; i++) /* every other one written; #3 across segments */
		if (i % 2 == 0)
			CU_ASSERT_EQUAL(rpc_write(&o[i], i == 2 ? 2 * TIB + 5 : (uint64_t)i, w,
						  sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o[N], 0, w, sizeof(w), NULL), 0);
	ost[N] = OST_IDX + 1; /* an OST this OSS does not serve: that object alone fails */
	o[N + 1].o_fid.seq = 0; /* a zero FID: that one alone fails */
	o[N + 1].o_fid.oid = 0;
	char p[256]; /* object #2's segment files, before and after */
	snprintf(p, sizeof(p), "find %s/ost0 -path '*%llx-%llx-%u*' | grep -q .", dir,
		 (unsigned long long)o[2].o_fid.seq, (unsigned long long)o[2].o_fid.oid,
		 o[2].o_stripe);
	CU_ASSERT_EQUAL(system(p), 0);
	memset(rcs, 0x55, sizeof(rcs));
	CU_ASSERT_EQUAL(rpc_destroy_batch(o, ost, N + 2, rcs), 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(rcs[i], 0);
		CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o[i], 0, &a), 0);
		CU_ASSERT_FALSE(a.exists);
	}
	CU_ASSERT_EQUAL(rcs[N], -ENODEV);
	CU_ASSERT_EQUAL(rcs[N + 1], -EINVAL);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o[N], 0, &a), 0);
	CU_ASSERT_TRUE(a.exists); /* not named on its own OST: kept */
	CU_ASSERT_EQUAL(rpc_destroy_batch(o, NULL, 1, rcs), 0); /* again: idempotent */
	CU_ASSERT_EQUAL(rcs[0], 0);
	CU_ASSERT_EQUAL(rpc_destroy_batch(&o[N], NULL, 1, rcs), 0);
	CU_ASSERT_EQUAL(rcs[0], 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o[N], 0, &a), 0);
	CU_ASSERT_FALSE(a.exists);
	CU_ASSERT_NOT_EQUAL(system(p), 0); /* its directory of segments went too */
	/* no object, and more than 1024: the whole call fails */
	CU_ASSERT_EQUAL(rpc_destroy_batch(o, NULL, 0, rcs), -EPROTO);
	struct obj *many = calloc(1025, sizeof(*many));
	for (int i = 0; i < 1025; i++)
		many[i] = obj_new();
	CU_ASSERT_EQUAL(rpc_destroy_batch(many, NULL, 1025, rcs), -E2BIG);
	int32_t *mrcs = calloc(1024, sizeof(*mrcs));
	CU_ASSERT_EQUAL(rpc_destroy_batch(many, NULL, 1024, mrcs), 0);
	free(mrcs);
	free(many);
}

/* The OSS caches the segment fds of reads and writes (oss/fdcache.c): a
 * destroy must drop them, or the write after a recreate lands in the
 * unlinked file and the new object is not even there. */
static void test_svc_fd_cache_destroy_recreate_write_reads_new_bytes(void)
{
	struct obj o = obj_new();
	static uint8_t w[8192], r[8192];
	uint64_t size;
	struct attr a;

	memset(w, 'A', sizeof(w));
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, sizeof(r)), (long long)sizeof(r));
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, 100, NULL), 0); /* both fds cached and hot */
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
	memset(w, 'B', sizeof(w));
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, 4096, &size), 0); /* recreates */
	CU_ASSERT_EQUAL(size, 4096);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_TRUE(a.exists);
	CU_ASSERT_EQUAL(a.size, 4096);
	memset(r, 0, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, sizeof(r)), 4096);
	CU_ASSERT_EQUAL(memcmp(r, w, 4096), 0); /* the new bytes, none of the old A's */
	/* and again: destroy, read (nothing), write, read */
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, sizeof(r)), 0);
	memset(w, 'C', 10);
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, 10, NULL), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, sizeof(r)), 10);
	CU_ASSERT_EQUAL(memcmp(r, w, 10), 0);
}

/* A truncate that removes segment files drops their cached fds too. */
static void test_svc_fd_cache_truncate_removes_segments_then_write_past(void)
{
	struct obj o = obj_new();
	uint8_t w[4096], r[4096];
	struct attr a;

	memset(w, 'X', sizeof(w));
	CU_ASSERT_EQUAL(rpc_write(&o, 2 * TIB, w, sizeof(w), NULL), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 2 * TIB, r, sizeof(r)), (long long)sizeof(r));
	CU_ASSERT_EQUAL(rpc_truncate(&o, 100, &a), 0); /* removes segment 2 and ".d" */
	CU_ASSERT_EQUAL(a.size, 100);
	memset(w, 'Y', sizeof(w));
	CU_ASSERT_EQUAL(rpc_write(&o, 2 * TIB + 4096, w, 50, NULL), 0);
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), 0);
	CU_ASSERT_EQUAL(a.size, 2 * TIB + 4096 + 50);
	CU_ASSERT_EQUAL(rpc_read(&o, 2 * TIB, r, sizeof(r)), (long long)sizeof(r));
	CU_ASSERT_EQUAL(r[0], 0); /* the X's are gone: a hole */
	CU_ASSERT_EQUAL(r[4095], 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 2 * TIB + 4096, r, sizeof(r)), 50);
	CU_ASSERT_EQUAL(memcmp(r, w, 50), 0);
}

/*
 * A read inside the object takes no size (oss/svc_io.c); one that reaches
 * the end of the object (a short piece) looks the size up and is cut there.
 * Exact counts at, across and past the end, after truncates both ways, and
 * across a hole to data further on.
 */
static void test_svc_read_counts_at_end_of_object_and_after_truncate(void)
{
	static uint8_t w[40000], r[40000];
	struct obj o = obj_new();
	uint64_t sz = 1;
	struct attr a;

	th_fill_pattern(w, sizeof(w), 7);
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, 10000, NULL), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, 0), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, 4096), 4096);
	CU_ASSERT_EQUAL(memcmp(r, w, 4096), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, 10000), 10000); /* ends exactly at the end */
	CU_ASSERT_EQUAL(memcmp(r, w, 10000), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read_on(conn, &o, 8192, r, 8192, &sz), 10000 - 8192);
	CU_ASSERT_EQUAL(sz, 10000); /* a read cut at the end says where the end is */
	CU_ASSERT_EQUAL(memcmp(r, w + 8192, 10000 - 8192), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 9999, r, 1), 1);
	CU_ASSERT_EQUAL(r[0], w[9999]);
	CU_ASSERT_EQUAL(rpc_read(&o, 9999, r, 2), 1);
	CU_ASSERT_EQUAL(rpc_read(&o, 10000, r, 100), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 50000, r, 100), 0);
	/* shrink: the read ends at the new end */
	CU_ASSERT_EQUAL(rpc_truncate(&o, 5000, &a), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 4096, r, 8192), 5000 - 4096);
	CU_ASSERT_EQUAL(memcmp(r, w + 4096, 5000 - 4096), 0);
	/* grow: the bytes past the old end are zeros, up to the new end */
	CU_ASSERT_EQUAL(rpc_truncate(&o, 20000, &a), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read(&o, 4096, r, 20000), 20000 - 4096);
	CU_ASSERT_EQUAL(memcmp(r, w + 4096, 5000 - 4096), 0);
	CU_ASSERT_EQUAL(nonzero_bytes(r + 5000 - 4096, 20000 - 5000), 0);
	/* a hole, then data past it: every byte up to the data's end */
	CU_ASSERT_EQUAL(rpc_write(&o, 30000, w, 10, NULL), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read(&o, 19000, r, 20000), 30010 - 19000);
	CU_ASSERT_EQUAL(nonzero_bytes(r, 30000 - 19000), 0);
	CU_ASSERT_EQUAL(memcmp(r + 30000 - 19000, w, 10), 0);
	/* truncate to 0: nothing to read, the object still exists */
	CU_ASSERT_EQUAL(rpc_truncate(&o, 0, &a), 0);
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, 4096), 0);
}

/* Segment 0 ends early and segment 1 has data: the bytes past segment 0's
 * file are zeros, not the end of the object (the read goes on to its data). */
static void test_svc_read_short_segment_then_data_in_the_next(void)
{
	uint8_t w[100], r[300];
	struct obj o = obj_new();

	th_fill_pattern(w, sizeof(w), 8);
	CU_ASSERT_EQUAL(rpc_write(&o, 0, w, 10, NULL), 0);
	CU_ASSERT_EQUAL(rpc_write(&o, TIB, w, sizeof(w), NULL), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read(&o, TIB - 50, r, 200), 150);
	CU_ASSERT_EQUAL(nonzero_bytes(r, 50), 0);
	CU_ASSERT_EQUAL(memcmp(r + 50, w, 100), 0);
	memset(r, 0xee, sizeof(r));
	CU_ASSERT_EQUAL(rpc_read(&o, 0, r, 100), 100); /* the object goes on: zeros */
	CU_ASSERT_EQUAL(memcmp(r, w, 10), 0);
	CU_ASSERT_EQUAL(nonzero_bytes(r + 10, 90), 0);
}

#define RACE_CHUNK 4096
#define RACE_CHUNKS 1500

struct race {
	struct net_conn *ra_conn;
	struct obj ra_obj;
	int ra_rc;
	_Atomic bool ra_done;
};

static void *race_writer(void *arg)
{
	struct race *ra = arg;
	static uint8_t w[RACE_CHUNK];

	memset(w, 0xa5, sizeof(w));
	for (uint64_t i = 0; i < RACE_CHUNKS && !ra->ra_rc; i++)
		ra->ra_rc = rpc_write_on(ra->ra_conn, &ra->ra_obj, i * RACE_CHUNK, w, sizeof(w),
					 NULL);
	atomic_store(&ra->ra_done, true);
	return NULL;
}

/*
 * Reads at the end of an object that another connection (another loop
 * thread of the OSS) keeps appending to. The object never has a hole, so
 * every byte a read returns must be written data: a read that came back
 * short and then took the size after an append must not send the zeros it
 * filled in past the old end (oss/svc_io.c reads such a range again).
 */
static void test_svc_read_racing_appends_never_returns_zeros(void)
{
	static uint8_t r[64 * 1024];
	struct race ra = { .ra_obj = obj_new() };
	char addr[32];
	pthread_t th;
	uint64_t base = 0, reads = 0, bad = 0;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", oss_port(oss));
	CU_ASSERT_EQUAL_FATAL(net_conn_open(addr, 2000, &ra.ra_conn), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, race_writer, &ra), 0);
	while (!atomic_load(&ra.ra_done) && !bad) {
		long long n = rpc_read(&ra.ra_obj, base, r, sizeof(r));
		if (n < 0) {
			CU_FAIL("read failed");
			break;
		}
		for (long long i = 0; i < n; i++)
			bad += r[i] != 0xa5;
		reads++;
		if (n > RACE_CHUNK)
			base += ((uint64_t)n - 1) / RACE_CHUNK * RACE_CHUNK;
	}
	pthread_join(th, NULL);
	net_conn_close(ra.ra_conn);
	CU_ASSERT_EQUAL(ra.ra_rc, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(reads > 0);
}

/* Writes large enough to start their writeback at once (--writeback-min),
 * then at once a destroy and a write of other bytes: the writeback holds
 * its cached fd past the destroy, and the new object has only the new bytes. */
static void test_svc_writeback_then_destroy_recreate(void)
{
	const size_t len = MIB;
	uint8_t *w = malloc(len), *r = malloc(len);
	struct obj o = obj_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (int round = 0; round < 20; round++) {
		th_fill_pattern(w, len, 20 + round);
		CU_ASSERT_EQUAL(rpc_write(&o, 0, w, len, NULL), 0);
		CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_DESTROY, &o, 0, NULL), 0);
		th_fill_pattern(w, len, 40 + round);
		CU_ASSERT_EQUAL(rpc_write(&o, MIB, w, len / 2, NULL), 0);
		memset(r, 0xee, len);
		CU_ASSERT_EQUAL(rpc_read(&o, 0, r, len), (long long)len);
		CU_ASSERT_EQUAL(nonzero_bytes(r, len / 2), 0); /* the old bytes are gone */
		CU_ASSERT_EQUAL(rpc_read(&o, MIB, r, len), (long long)len / 2);
		CU_ASSERT_EQUAL(th_diff_at(r, w, len / 2), -1);
	}
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_FSYNC, &o, 0, NULL), 0);
	free(w);
	free(r);
}

/* An OSS without an fd cache, starting writeback for every write: the
 * writeback owns the write's fd until it completes; bytes and fsync right,
 * and the stop waits for writebacks in flight. */
static void test_svc_writeback_every_write_without_fd_cache(void)
{
	char path[128], addr[32];
	struct oss_conf c;
	struct oss *o2 = NULL;
	struct net_conn *c2 = NULL;
	struct obj o = obj_new();
	static uint8_t w[300000], r[300000];

	snprintf(path, sizeof(path), "%s/ost-wb", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ost-wb/ost.index", dir);
	CU_ASSERT_EQUAL_FATAL(weir_file_write_atomic(path, "5\n", 2), 0);
	snprintf(path, sizeof(path), "%s/ost-wb", dir);
	oss_conf_init(&c);
	c.oc_mds = "127.0.0.1:1";
	c.oc_osts[0] = path;
	c.oc_nr_osts = 1;
	c.oc_nr_threads = 1;
	c.oc_heartbeat_ms = 3600 * 1000;
	c.oc_fd_cache = 0;
	c.oc_writeback_min = 1;
	CU_ASSERT_EQUAL_FATAL(oss_start(&c, &o2), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", oss_port(o2));
	CU_ASSERT_EQUAL_FATAL(net_conn_open(addr, 2000, &c2), 0);
	th_fill_pattern(w, sizeof(w), 9);
	for (size_t off = 0; off < sizeof(w); off += 7777)
		CU_ASSERT_EQUAL(rpc_write_on(c2, &o, off, w + off,
					     WEIR_MIN((size_t)7777, sizeof(w) - off), NULL), 0);
	CU_ASSERT_EQUAL(rpc_write_on(c2, &o, TIB - 100, w, 200, NULL), 0); /* two segments */
	CU_ASSERT_EQUAL(rpc_read_on(c2, &o, 0, r, sizeof(r), NULL), (long long)sizeof(r));
	CU_ASSERT_EQUAL(th_diff_at(r, w, sizeof(r)), -1);
	CU_ASSERT_EQUAL(rpc_read_on(c2, &o, TIB - 100, r, 300, NULL), 200);
	CU_ASSERT_EQUAL(th_diff_at(r, w, 200), -1);
	for (int i = 0; i < 50; i++) /* writebacks still in flight at the stop */
		CU_ASSERT_EQUAL(rpc_write_on(c2, &o, (uint64_t)i * 4096, w, 4096, NULL), 0);
	net_conn_close(c2);
	oss_stop(o2);
}

static void test_svc_bad_targets_and_opcodes(void)
{
	struct obj o = obj_new();
	struct attr a;
	struct net_call call;

	o.o_fid.oid = 0;
	o.o_fid.seq = 0;
	CU_ASSERT_EQUAL(rpc_obj(WEIR__WIRE_OP__OST_GETATTR, &o, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, 0, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rpc_seek(&o, 0, 0, NULL), -EINVAL);
	o = obj_new();
	o.o_stripe = 500;
	CU_ASSERT_EQUAL(rpc_falloc(&o, 0, 0, 1, NULL), -EINVAL);
	/* no fid at all */
	Weir__ObjSeekReq req = WEIR__OBJ_SEEK_REQ__INIT;
	req.ost = OST_IDX;
	net_call_init(&call, WEIR__WIRE_OP__OST_SEEK, &req.base);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EPROTO);
	net_call_fini(&call);
	Weir__ObjFallocReq freq = WEIR__OBJ_FALLOC_REQ__INIT;
	freq.ost = OST_IDX;
	net_call_init(&call, WEIR__WIRE_OP__OST_FALLOCATE, &freq.base);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EPROTO);
	net_call_fini(&call);
	/* an OST this OSS does not serve */
	Weir__Fid fid = WEIR__FID__INIT;
	fid.seq = 1;
	fid.oid = 1;
	req.ost = OST_IDX + 1;
	req.fid = &fid;
	net_call_init(&call, WEIR__WIRE_OP__OST_SEEK, &req.base);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -ENODEV);
	net_call_fini(&call);
	/* an opcode of the data range nobody uses yet */
	net_call_init(&call, 119, NULL);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EOPNOTSUPP);
	net_call_fini(&call);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_svc_write_read_across_segment_boundary_byte_exact),
		TH_TEST(test_svc_last_object_byte_and_efbig),
		TH_TEST(test_svc_holes_and_missing_segments_read_zeros),
		TH_TEST(test_svc_fallocate_modes),
		TH_TEST(test_svc_seek_data_hole),
		TH_TEST(test_svc_fsync_and_datasync_segmented_object),
		TH_TEST(test_svc_truncate_getattr_destroy),
		TH_TEST(test_svc_destroy_batch),
		TH_TEST(test_svc_fd_cache_destroy_recreate_write_reads_new_bytes),
		TH_TEST(test_svc_fd_cache_truncate_removes_segments_then_write_past),
		TH_TEST(test_svc_read_counts_at_end_of_object_and_after_truncate),
		TH_TEST(test_svc_read_short_segment_then_data_in_the_next),
		TH_TEST(test_svc_read_racing_appends_never_returns_zeros),
		TH_TEST(test_svc_writeback_then_destroy_recreate),
		TH_TEST(test_svc_writeback_every_write_without_fd_cache),
		TH_TEST(test_svc_bad_targets_and_opcodes),
		TH_TEST_END,
	};
	return th_cunit_run("oss/svc", suite_init, suite_clean, tests);
}
