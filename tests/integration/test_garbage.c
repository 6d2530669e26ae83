/*
 * tests/integration/test_garbage.c - hostile bytes on raw sockets to the MDS
 * and to an OSS: random bytes, bad checksums, absurd lengths, bodies that
 * are not the protobuf their opcode expects, empty bodies (missing fields),
 * absurd field values, unknown opcodes, truncated frames, idle half frames.
 * After each, the server process must still be running, and a normal
 * libweir operation that needs it must still work. A malformed body must get
 * an -EPROTO reply, not a closed connection and never a crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/key.h"
#include "common/log.h"
#include "common/util.h"
#include "harness.h"
#include "th_auth.h"
#include "net/frame.h"
#include "th_weir.h"
#include "weir.pb-c.h"

#define REPLY_TIMEOUT_S 10

static struct th_cluster *cl;
static weir_fs_t *fs;
static int probe_seq;

static int suite_init(void)
{
	if (th_cluster_mount(NULL, &cl, &fs))
		return -1;
	/* files here touch every OST, so every OSS */
	if (th_stripe_dir(fs, "/probe", (uint32_t)th_cluster_nr_osts(cl), 64 * 1024))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

/* The server is alive and a libweir operation through it works. */
static int server_ok(int id, const char *after)
{
	if (!th_server_alive(cl, id)) {
		printf("\n  %s died after: %s\n", id == TH_MDS ? "the MDS" : "the OSS", after);
		return 0;
	}
	char path[64];
	uint8_t w[300 * 1024], r[sizeof(w)];
	snprintf(path, sizeof(path), "/probe/p%d", probe_seq++);
	th_fill_pattern(w, sizeof(w), (uint64_t)probe_seq);
	if (th_put(fs, path, w, sizeof(w)) || th_get(fs, path, r, sizeof(r)) != (ssize_t)sizeof(w) ||
	    memcmp(w, r, sizeof(w))) {
		printf("\n  a write/read through libweir failed after: %s\n", after);
		return 0;
	}
	struct stat st;
	if (weir_stat(fs, "/probe", &st)) {
		printf("\n  stat failed after: %s\n", after);
		return 0;
	}
	return 1;
}

static int connect_to(int id)
{
	int fd = th_tcp_connect_auth(th_server_port(cl, id)); /* past the handshake */
	if (fd >= 0) {
		struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static void hdr(uint8_t raw[WEIR_FRAME_HDR_SIZE], uint16_t op, uint64_t reqid, uint32_t body_len,
		uint64_t bulk_len)
{
	struct weir_frame_hdr h = { 0 };
	h.fh_opcode = op;
	h.fh_reqid = reqid;
	h.fh_body_len = body_len;
	h.fh_bulk_len = bulk_len;
	weir_frame_encode(&h, raw);
}

/* Send raw bytes on a fresh connection. \return 1 if the server closed it. */
static int send_expect_close(int id, const void *buf, size_t len)
{
	int fd = connect_to(id);
	if (fd < 0)
		return fd;
	weir_write_all(fd, buf, len); /* the server may close before all is sent */
	int closed = th_tcp_wait_closed(fd, REPLY_TIMEOUT_S * 1000);
	close(fd);
	return closed;
}

/*
 * One request frame on \a fd; read its reply header (body and bulk are
 * drained). \return 0 with \a rep filled, 1 if the connection was closed
 * instead, or a negative errno (timeout, a malformed reply).
 */
static int xchg(int fd, uint16_t op, uint64_t reqid, const void *body, uint32_t blen,
		const void *bulk, uint64_t bulk_len, struct weir_frame_hdr *rep)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	hdr(raw, op, reqid, blen, bulk_len);
	if (weir_write_all(fd, raw, sizeof(raw)) || (blen && weir_write_all(fd, body, blen)) ||
	    (bulk_len && weir_write_all(fd, bulk, (size_t)bulk_len)))
		return 1;
	int rc = weir_read_all(fd, raw, sizeof(raw));
	if (rc == -EPIPE || rc == -ECONNRESET)
		return 1;
	if (rc)
		return rc == -EAGAIN ? -ETIMEDOUT : rc;
	rc = weir_frame_decode(raw, rep, NULL);
	if (rc)
		return rc;
	if (!(rep->fh_flags & WEIR_FRAME_F_REPLY) || rep->fh_reqid != reqid)
		return -EPROTO;
	uint64_t left = rep->fh_body_len + rep->fh_bulk_len;
	char buf[65536];
	while (left) {
		size_t n = left > sizeof(buf) ? sizeof(buf) : (size_t)left;
		rc = weir_read_all(fd, buf, n);
		if (rc)
			return rc;
		left -= n;
	}
	return 0;
}

static const char *op_name(uint16_t op)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
		&weir__wire_op__descriptor, op);
	return v ? v->name : "unknown";
}

/* ------------------------------------------------------------ tests */

static void framing_garbage(int id)
{
	uint8_t buf[4096];
	uint8_t raw[WEIR_FRAME_HDR_SIZE];

	th_fill_pattern(buf, sizeof(buf), 666 + (uint64_t)id);
	CU_ASSERT_EQUAL(send_expect_close(id, buf, sizeof(buf)), 1);
	CU_ASSERT_TRUE(server_ok(id, "4 KiB of random bytes"));

	hdr(raw, WEIR__WIRE_OP__PING, 1, 0, 0);
	raw[17] ^= 0x40; /* valid magic, wrong checksum */
	CU_ASSERT_EQUAL(send_expect_close(id, raw, sizeof(raw)), 1);
	CU_ASSERT_TRUE(server_ok(id, "a bad header checksum"));

	hdr(raw, WEIR__WIRE_OP__PING, 1, 0xffffffffU, 0);
	CU_ASSERT_EQUAL(send_expect_close(id, raw, sizeof(raw)), 1);
	CU_ASSERT_TRUE(server_ok(id, "body_len = 0xffffffff"));

	hdr(raw, WEIR__WIRE_OP__PING, 1, 0, UINT64_MAX);
	CU_ASSERT_EQUAL(send_expect_close(id, raw, sizeof(raw)), 1);
	CU_ASSERT_TRUE(server_ok(id, "bulk_len = 2^64-1"));

	struct weir_frame_hdr h = { .fh_opcode = WEIR__WIRE_OP__PING, .fh_flags = 0x80 };
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(send_expect_close(id, raw, sizeof(raw)), 1);
	CU_ASSERT_TRUE(server_ok(id, "unknown header flags"));

	/* a truncated frame (header promises 1000 body bytes), then close */
	int fd = connect_to(id);
	CU_ASSERT_FATAL(fd >= 0);
	hdr(raw, WEIR__WIRE_OP__MDS_LOOKUP, 1, 1000, 0);
	memcpy(buf, raw, sizeof(raw));
	weir_write_all(fd, buf, sizeof(raw) + 100);
	close(fd);
	/* half a header, then close */
	fd = connect_to(id);
	CU_ASSERT_FATAL(fd >= 0);
	weir_write_all(fd, raw, 17);
	close(fd);
	/* connections opened and dropped at once */
	for (int i = 0; i < 50; i++) {
		fd = connect_to(id);
		if (fd >= 0)
			close(fd);
	}
	CU_ASSERT_TRUE(server_ok(id, "truncated frames and dropped connections"));

	/* a half frame left hanging must not stall anyone else */
	int idle = connect_to(id);
	CU_ASSERT_FATAL(idle >= 0);
	weir_write_all(idle, raw, 30);
	CU_ASSERT_TRUE(server_ok(id, "an idle connection holding half a header"));
	close(idle);
}

static void test_garbage_mds_framing_closes_connection_survives(void)
{
	framing_garbage(TH_MDS);
}

static void test_garbage_oss_framing_closes_connection_survives(void)
{
	framing_garbage(0);
}

static const uint16_t mds_ops[] = {
	WEIR__WIRE_OP__MDS_CONNECT,	 WEIR__WIRE_OP__MDS_OSS_REGISTER, WEIR__WIRE_OP__MDS_LOOKUP,
	WEIR__WIRE_OP__MDS_GETATTR,	 WEIR__WIRE_OP__MDS_SETATTR,	  WEIR__WIRE_OP__MDS_OPEN,
	WEIR__WIRE_OP__MDS_CLOSE,	 WEIR__WIRE_OP__MDS_MKDIR,	  WEIR__WIRE_OP__MDS_READDIR,
	WEIR__WIRE_OP__MDS_UNLINK,	 WEIR__WIRE_OP__MDS_RENAME,	  WEIR__WIRE_OP__MDS_SET_LAYOUT,
	WEIR__WIRE_OP__MDS_SYNC,
};
static const uint16_t oss_ops[] = {
	WEIR__WIRE_OP__OST_WRITE,    WEIR__WIRE_OP__OST_READ,	WEIR__WIRE_OP__OST_GETATTR,
	WEIR__WIRE_OP__OST_TRUNCATE, WEIR__WIRE_OP__OST_FSYNC,	WEIR__WIRE_OP__OST_DESTROY,
	WEIR__WIRE_OP__OST_STATFS,   WEIR__WIRE_OP__OST_DESTROY_BATCH,
};

/* Bodies no protobuf parser accepts. */
static const struct {
	const char *b_name;
	uint8_t b_bytes[16];
	uint32_t b_len;
} bad_bodies[] = {
	{ "a varint tag with no value", { 0x08 }, 1 },
	{ "an 11-byte varint", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	  11 },
	{ "a length-delimited field longer than the body", { 0x1a, 0x64, 'a', 'b' }, 4 },
	{ "wire type 7", { 0x0f, 0x00 }, 2 },
};

static void malformed_bodies(int id, const uint16_t *ops, size_t nops)
{
	int fd = connect_to(id);
	CU_ASSERT_FATAL(fd >= 0);
	uint64_t reqid = 1000;
	for (size_t i = 0; i < nops; i++)
		for (size_t b = 0; b < sizeof(bad_bodies) / sizeof(bad_bodies[0]); b++) {
			struct weir_frame_hdr rep;
			int rc = xchg(fd, ops[i], ++reqid, bad_bodies[b].b_bytes, bad_bodies[b].b_len,
				      NULL, 0, &rep);
			if (rc == 1) {
				/* closing is not the contract: reply -EPROTO */
				printf("\n  %s with %s: connection closed, want an EPROTO reply",
				       op_name(ops[i]), bad_bodies[b].b_name);
				CU_FAIL("connection closed instead of an -EPROTO reply");
				close(fd);
				fd = connect_to(id);
				CU_ASSERT_FATAL(fd >= 0);
				continue;
			}
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			if (weir_status_to_errno(rep.fh_status) != -EPROTO)
				printf("\n  %s with %s: status %d, want WS_EPROTO",
				       op_name(ops[i]), bad_bodies[b].b_name, rep.fh_status);
			CU_ASSERT_EQUAL(rep.fh_status, WEIR__WIRE_STATUS__WS_EPROTO);
			CU_ASSERT_EQUAL(rep.fh_opcode, ops[i]);
		}
	close(fd);
	CU_ASSERT_TRUE(server_ok(id, "malformed protobuf bodies"));
}

static void test_garbage_mds_malformed_body_eproto_reply(void)
{
	malformed_bodies(TH_MDS, mds_ops, sizeof(mds_ops) / sizeof(mds_ops[0]));
}

static void test_garbage_oss_malformed_body_eproto_reply(void)
{
	malformed_bodies(0, oss_ops, sizeof(oss_ops) / sizeof(oss_ops[0]));
}

/* A valid but empty body: every field unset (NULL FIDs, empty paths). */
static void empty_bodies(int id, const uint16_t *ops, size_t nops)
{
	int fd = connect_to(id);
	CU_ASSERT_FATAL(fd >= 0);
	uint64_t reqid = 2000;
	for (size_t i = 0; i < nops; i++) {
		if (ops[i] == WEIR__WIRE_OP__MDS_OSS_REGISTER)
			continue; /* an empty registration is legitimately accepted */
		struct weir_frame_hdr rep;
		int rc = xchg(fd, ops[i], ++reqid, NULL, 0, NULL, 0, &rep);
		if (rc) {
			printf("\n  %s with an empty body: %s", op_name(ops[i]),
			       rc == 1 ? "connection closed" : strerror(-rc));
			CU_FAIL("no reply to a request with an empty body");
			close(fd);
			fd = connect_to(id);
			CU_ASSERT_FATAL(fd >= 0);
			continue;
		}
		if (ops[i] != WEIR__WIRE_OP__MDS_CONNECT && ops[i] != WEIR__WIRE_OP__MDS_SYNC &&
		    ops[i] != WEIR__WIRE_OP__OST_STATFS && rep.fh_status == 0)
			printf("\n  note: %s with an empty body succeeded", op_name(ops[i]));
		CU_ASSERT_TRUE(th_server_alive(cl, id));
	}
	close(fd);
	CU_ASSERT_TRUE(server_ok(id, "requests with empty bodies"));
}

static void test_garbage_mds_empty_body_replies_survives(void)
{
	empty_bodies(TH_MDS, mds_ops, sizeof(mds_ops) / sizeof(mds_ops[0]));
}

static void test_garbage_oss_empty_body_replies_survives(void)
{
	empty_bodies(0, oss_ops, sizeof(oss_ops) / sizeof(oss_ops[0]));
}

static void test_garbage_unknown_opcodes_error_reply_survives(void)
{
	static const uint16_t unknown[] = { 0, 16, 99, 150, 199, 999, 0xffff };
	for (int k = 0; k < 2; k++) {
		int id = k == 0 ? TH_MDS : 0;
		int fd = connect_to(id);
		CU_ASSERT_FATAL(fd >= 0);
		uint64_t reqid = 3000;
		/* unknown opcodes, and the other server kind's opcodes */
		uint16_t ops[16];
		size_t n = 0;
		for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
			ops[n++] = unknown[i];
		ops[n++] = id == TH_MDS ? WEIR__WIRE_OP__OST_READ : WEIR__WIRE_OP__MDS_LOOKUP;
		ops[n++] = id == TH_MDS ? WEIR__WIRE_OP__OST_DESTROY : WEIR__WIRE_OP__MDS_UNLINK;
		for (size_t i = 0; i < n; i++) {
			struct weir_frame_hdr rep;
			int rc = xchg(fd, ops[i], ++reqid, NULL, 0, NULL, 0, &rep);
			if (rc == 1) {
				/* allowed, though an error reply is nicer */
				close(fd);
				fd = connect_to(id);
				CU_ASSERT_FATAL(fd >= 0);
				continue;
			}
			CU_ASSERT_EQUAL(rc, 0);
			if (!rc && rep.fh_status == 0)
				printf("\n  opcode %u to %s succeeded", ops[i],
				       id == TH_MDS ? "the MDS" : "an OSS");
			CU_ASSERT_NOT_EQUAL(rep.fh_status, 0);
		}
		close(fd);
		CU_ASSERT_TRUE(server_ok(id, "unknown opcodes"));
	}
}

static void test_garbage_oss_absurd_values_error_not_crash(void)
{
	int fd = connect_to(0);
	CU_ASSERT_FATAL(fd >= 0);
	uint8_t body[256];
	Weir__Fid fid = WEIR__FID__INIT;
	fid.seq = 0x200000400ULL;
	fid.oid = 0xdeadbeef;
	struct {
		const char *name;
		uint16_t op;
		uint64_t off, len;
		uint32_t ost, stripe;
		uint64_t bulk;
		int must_fail;
	} cases[] = {
		{ "read of 2^63 bytes", WEIR__WIRE_OP__OST_READ, 0, 1ULL << 63, 0, 0, 0, 0 },
		{ "read at offset 2^64-4096", WEIR__WIRE_OP__OST_READ, UINT64_MAX - 4095, 4096, 0, 0,
		  0, 0 },
		{ "read of 17 MiB", WEIR__WIRE_OP__OST_READ, 0, 17ULL << 20, 0, 0, 0, 0 },
		{ "read on OST 9999", WEIR__WIRE_OP__OST_READ, 0, 10, 9999, 0, 0, 1 },
		{ "write with len != bulk", WEIR__WIRE_OP__OST_WRITE, 0, 100000, 0, 0, 10, 1 },
		{ "write at offset 2^64-5", WEIR__WIRE_OP__OST_WRITE, UINT64_MAX - 4, 10, 0, 0, 10, 1 },
		{ "write on OST 9999", WEIR__WIRE_OP__OST_WRITE, 0, 10, 9999, 0, 10, 1 },
		{ "write to stripe 2^32-1", WEIR__WIRE_OP__OST_WRITE, 0, 10, 0, 0xffffffffU, 10, 0 },
		{ "truncate on OST 9999", WEIR__WIRE_OP__OST_TRUNCATE, 0, 0, 9999, 0, 0, 1 },
	};
	uint8_t bulk[16] = "0123456789";
	uint64_t reqid = 4000;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t blen;
		if (cases[i].op == WEIR__WIRE_OP__OST_TRUNCATE) {
			Weir__ObjTruncReq t = WEIR__OBJ_TRUNC_REQ__INIT;
			t.ost = cases[i].ost;
			t.fid = &fid;
			t.size = 10;
			blen = weir__obj_trunc_req__pack(&t, body);
		} else {
			Weir__ObjIoReq r = WEIR__OBJ_IO_REQ__INIT;
			r.ost = cases[i].ost;
			r.fid = &fid;
			r.stripe = cases[i].stripe;
			r.off = cases[i].off;
			r.len = cases[i].len;
			blen = weir__obj_io_req__pack(&r, body);
		}
		struct weir_frame_hdr rep;
		int rc = xchg(fd, cases[i].op, ++reqid, body, (uint32_t)blen, bulk, cases[i].bulk,
			      &rep);
		if (rc == 1) {
			printf("\n  %s: connection closed, want an error reply", cases[i].name);
			CU_FAIL("connection closed instead of an error reply");
			close(fd);
			fd = connect_to(0);
			CU_ASSERT_FATAL(fd >= 0);
			continue;
		}
		CU_ASSERT_EQUAL(rc, 0);
		if (!rc && rep.fh_status == 0 && cases[i].must_fail)
			printf("\n  %s: accepted, want an error", cases[i].name);
		if (cases[i].must_fail)
			CU_ASSERT_NOT_EQUAL(rep.fh_status, 0);
		CU_ASSERT(rep.fh_bulk_len <= WEIR_FRAME_MAX_BULK);
		CU_ASSERT_TRUE(th_server_alive(cl, 0));
	}
	close(fd);
	CU_ASSERT_TRUE(server_ok(0, "absurd offsets and lengths"));
}

static void test_garbage_mds_absurd_values_error_not_crash(void)
{
	int fd = connect_to(TH_MDS);
	CU_ASSERT_FATAL(fd >= 0);
	uint8_t body[8192];
	uint64_t reqid = 5000;
	struct weir_frame_hdr rep;
	size_t blen;

	/* readdir of a FID that does not exist, asking for 2^32-1 entries */
	Weir__Fid fid = WEIR__FID__INIT;
	fid.seq = 0x200000400ULL;
	fid.oid = 0xfffffffffffULL;
	Weir__ReaddirReq rd = WEIR__READDIR_REQ__INIT;
	rd.dir = &fid;
	rd.max_entries = 0xffffffffU;
	rd.cookie = UINT64_MAX;
	blen = weir__readdir_req__pack(&rd, body);
	CU_ASSERT_EQUAL(xchg(fd, WEIR__WIRE_OP__MDS_READDIR, ++reqid, body, (uint32_t)blen, NULL, 0,
			     &rep), 0);
	CU_ASSERT_NOT_EQUAL(rep.fh_status, 0);

	/* a path of 5000 bytes, names with NUL-free junk, "..", "//" */
	static const char *paths[] = { "../../../../etc/passwd", "//", "/./.././/x", "\x01\x02\xff",
				       "" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) + 1; i++) {
		char longp[5001];
		Weir__PathReq pr = WEIR__PATH_REQ__INIT;
		if (i < sizeof(paths) / sizeof(paths[0])) {
			pr.path = (char *)paths[i];
		} else {
			memset(longp, 'x', 5000);
			longp[5000] = 0;
			pr.path = longp;
		}
		blen = weir__path_req__pack(&pr, body);
		int rc = xchg(fd, WEIR__WIRE_OP__MDS_LOOKUP, ++reqid, body, (uint32_t)blen, NULL, 0,
			      &rep);
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_TRUE(th_server_alive(cl, TH_MDS));
	}

	/* a layout with absurd striping */
	Weir__Layout lo = WEIR__LAYOUT__INIT;
	lo.pattern = 1;
	lo.stripe_size = 1;
	lo.stripe_count = 0xffffffffU;
	lo.stripe_offset = -5;
	Weir__SetLayoutReq sl = WEIR__SET_LAYOUT_REQ__INIT;
	sl.path = "/probe/absurd";
	sl.layout = &lo;
	sl.create = 1;
	blen = weir__set_layout_req__pack(&sl, body);
	CU_ASSERT_EQUAL(xchg(fd, WEIR__WIRE_OP__MDS_SET_LAYOUT, ++reqid, body, (uint32_t)blen, NULL,
			     0, &rep), 0);
	CU_ASSERT_EQUAL(rep.fh_status, WEIR__WIRE_STATUS__WS_EINVAL);
	/* an open with every flag bit set and a layout naming 128 copies of OST 0 */
	Weir__OpenReq op = WEIR__OPEN_REQ__INIT;
	uint32_t osts[128] = { 0 };
	Weir__Layout lo2 = WEIR__LAYOUT__INIT;
	lo2.pattern = 1;
	lo2.stripe_size = 65536;
	lo2.stripe_count = 128;
	lo2.n_osts = 128;
	lo2.osts = osts;
	op.path = "/probe/flags";
	op.flags = 0xffffffffU;
	op.mode = 0xffffffffU;
	op.layout = &lo2;
	blen = weir__open_req__pack(&op, body);
	CU_ASSERT_EQUAL(xchg(fd, WEIR__WIRE_OP__MDS_OPEN, ++reqid, body, (uint32_t)blen, NULL, 0,
			     &rep), 0);
	close(fd);
	CU_ASSERT_TRUE(server_ok(TH_MDS, "absurd field values"));
}

/* Lines of \a path (0 when missing). */
static long log_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int ch;
	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/*
 * A flood of hostile connections before the handshake (bad magic, requests
 * without a handshake, another cluster's key) costs the server a few log
 * lines, not one per connection: every such line is rate-limited (at most
 * WEIR_LOG_RL_BURST per call site per interval, the rest counted). Fails
 * without the rate limit: 3 x 600 lines.
 */
static void test_garbage_flood_before_auth_few_log_lines(void)
{
	char mlog[PATH_MAX];
	snprintf(mlog, sizeof(mlog), "%s/mds.log", th_cluster_dir(cl));
	long before = log_lines(mlog);
	uint16_t port = th_server_port(cl, TH_MDS);
	struct weir_key other;
	CU_ASSERT_EQUAL_FATAL(weir_key_generate("intruder", &other), 0);
	for (int i = 0; i < 600; i++) {
		uint8_t raw[WEIR_FRAME_HDR_SIZE];
		int fd = th_tcp_connect(port);
		CU_ASSERT_FATAL(fd >= 0);
		memset(raw, 0xa5, sizeof(raw)); /* bad magic */
		CU_ASSERT_EQUAL(weir_write_all(fd, raw, sizeof(raw)), 0);
		th_tcp_wait_closed(fd, 2000);
		close(fd);
		fd = th_tcp_connect(port); /* a request with no handshake */
		hdr(raw, WEIR__WIRE_OP__MDS_STATFS, 1, 0, 0);
		CU_ASSERT_EQUAL(weir_write_all(fd, raw, sizeof(raw)), 0);
		th_tcp_wait_closed(fd, 2000);
		close(fd);
		fd = th_tcp_connect(port); /* another cluster's key */
		CU_ASSERT_EQUAL(th_auth_raw(fd, &other, NULL, NULL, NULL), -EACCES);
		close(fd);
	}
	long added = log_lines(mlog) - before;
	printf("(%ld log lines for 1,800 hostile connections) ", added);
	CU_ASSERT(added <= 3 * 2 * WEIR_LOG_RL_BURST + 20);
	CU_ASSERT_TRUE(server_ok(TH_MDS, "a flood of hostile connections"));
}

static void test_garbage_servers_still_alive_at_end(void)
{
	CU_ASSERT_TRUE(th_server_alive(cl, TH_MDS));
	for (int i = 0; i < th_cluster_nr_oss(cl); i++)
		CU_ASSERT_TRUE(th_server_alive(cl, i));
	struct weir_target_info t[16];
	size_t n = 0;
	CU_ASSERT_EQUAL(weir_df(fs, t, 16, &n), 0);
	CU_ASSERT_EQUAL(n, 1 + (size_t)th_cluster_nr_osts(cl));
	int up = 0;
	for (size_t i = 0; i < n && i < 16; i++)
		up += t[i].wti_up;
	CU_ASSERT_EQUAL(up, (int)n);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_garbage_mds_framing_closes_connection_survives),
		TH_TEST(test_garbage_oss_framing_closes_connection_survives),
		TH_TEST(test_garbage_mds_malformed_body_eproto_reply),
		TH_TEST(test_garbage_oss_malformed_body_eproto_reply),
		TH_TEST(test_garbage_mds_empty_body_replies_survives),
		TH_TEST(test_garbage_oss_empty_body_replies_survives),
		TH_TEST(test_garbage_unknown_opcodes_error_reply_survives),
		TH_TEST(test_garbage_oss_absurd_values_error_not_crash),
		TH_TEST(test_garbage_mds_absurd_values_error_not_crash),
		TH_TEST(test_garbage_flood_before_auth_few_log_lines),
		TH_TEST(test_garbage_servers_still_alive_at_end),
		TH_TEST_END,
	};
	return th_cunit_run("garbage", suite_init, suite_clean, tests);
}
