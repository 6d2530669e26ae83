/*
 * tests/unit/net/test_frame.c - net/frame.c (the 48-byte frame header) and
 * net/status.c (errno <-> weir.WireStatus, both ways).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <zlib.h>

#include "common/le.h"
#include "harness.h"
#include "net/frame.h"
#include "weir.pb-c.h"

static struct weir_frame_hdr sample(void)
{
	struct weir_frame_hdr h;
	memset(&h, 0, sizeof(h));
	h.fh_opcode = WEIR__WIRE_OP__OST_WRITE;
	h.fh_flags = WEIR_FRAME_F_REPLY;
	h.fh_status = WEIR__WIRE_STATUS__WS_ENOSPC;
	h.fh_reqid = 0x0123456789abcdefULL;
	h.fh_body_len = 12345;
	h.fh_bulk_len = 4ULL * 1024 * 1024 + 3;
	return h;
}

/* Recompute the header checksum after editing bytes 0..39. */
static void reseal(uint8_t raw[WEIR_FRAME_HDR_SIZE])
{
	weir_put_le32(raw + 40, (uint32_t)crc32(0L, raw, 40));
}

static int decode(const uint8_t raw[WEIR_FRAME_HDR_SIZE], struct weir_frame_hdr *h)
{
	const char *why = NULL;
	int rc = weir_frame_decode(raw, h, &why);
	CU_ASSERT_PTR_NOT_NULL(why); /* every outcome says why */
	return rc;
}

/* ------------------------------------------------------------ encode / decode */

static void test_frame_encode_decode_roundtrip_equal(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	memset(&d, 0xa5, sizeof(d));
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), 0);
	CU_ASSERT_EQUAL(d.fh_magic, WEIR_FRAME_MAGIC);
	CU_ASSERT_EQUAL(d.fh_version, WEIR_FRAME_VERSION);
	CU_ASSERT_EQUAL(d.fh_opcode, h.fh_opcode);
	CU_ASSERT_EQUAL(d.fh_flags, h.fh_flags);
	CU_ASSERT_EQUAL(d.fh_status, h.fh_status);
	CU_ASSERT_EQUAL(d.fh_reqid, h.fh_reqid);
	CU_ASSERT_EQUAL(d.fh_body_len, h.fh_body_len);
	CU_ASSERT_EQUAL(d.fh_bulk_len, h.fh_bulk_len);
}

static void test_frame_encode_wire_layout_little_endian(void)
{
	struct weir_frame_hdr h = sample();
	h.fh_status = -2; /* negative values survive as i32 */
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	memset(raw, 0xee, sizeof(raw));
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(memcmp(raw, "WEIR", 4), 0); /* 0x52494557 little-endian */
	CU_ASSERT_EQUAL(weir_get_le16(raw + 4), 1);
	CU_ASSERT_EQUAL(weir_get_le16(raw + 6), WEIR__WIRE_OP__OST_WRITE);
	CU_ASSERT_EQUAL(weir_get_le32(raw + 8), WEIR_FRAME_F_REPLY);
	CU_ASSERT_EQUAL((int32_t)weir_get_le32(raw + 12), -2);
	CU_ASSERT_EQUAL(raw[16], 0xef);
	CU_ASSERT_EQUAL(weir_get_le64(raw + 16), 0x0123456789abcdefULL);
	CU_ASSERT_EQUAL(weir_get_le32(raw + 24), 12345);
	CU_ASSERT_EQUAL(weir_get_le32(raw + 28), 0);
	CU_ASSERT_EQUAL(weir_get_le64(raw + 32), 4ULL * 1024 * 1024 + 3);
	CU_ASSERT_EQUAL(weir_get_le32(raw + 40), (uint32_t)crc32(0L, raw, 40));
	CU_ASSERT_EQUAL(weir_get_le32(raw + 44), 0);
	struct weir_frame_hdr d;
	CU_ASSERT_EQUAL(decode(raw, &d), 0);
	CU_ASSERT_EQUAL(d.fh_status, -2);
}

static void test_frame_decode_many_random_headers_roundtrip(void)
{
	uint64_t s = 3;
	int bad = 0;
	for (int i = 0; i < 10000; i++) {
		struct weir_frame_hdr h, d;
		memset(&h, 0, sizeof(h));
		h.fh_opcode = (uint16_t)th_rand64(&s);
		h.fh_flags = (uint32_t)(th_rand64(&s) & WEIR_FRAME_F_KNOWN);
		h.fh_status = (int32_t)th_rand64(&s);
		h.fh_reqid = th_rand64(&s);
		h.fh_body_len = (uint32_t)(th_rand64(&s) % (WEIR_FRAME_MAX_BODY + 1));
		h.fh_bulk_len = th_rand64(&s) % (WEIR_FRAME_MAX_BULK + 1);
		uint8_t raw[WEIR_FRAME_HDR_SIZE];
		weir_frame_encode(&h, raw);
		if (weir_frame_decode(raw, &d, NULL) != 0 || d.fh_opcode != h.fh_opcode ||
		    d.fh_flags != h.fh_flags || d.fh_status != h.fh_status ||
		    d.fh_reqid != h.fh_reqid || d.fh_body_len != h.fh_body_len ||
		    d.fh_bulk_len != h.fh_bulk_len)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_frame_decode_limits_inclusive_ok(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	h.fh_body_len = WEIR_FRAME_MAX_BODY;
	h.fh_bulk_len = WEIR_FRAME_MAX_BULK;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), 0);
	CU_ASSERT_EQUAL(d.fh_body_len, WEIR_FRAME_MAX_BODY);
	CU_ASSERT_EQUAL(d.fh_bulk_len, WEIR_FRAME_MAX_BULK);
	h.fh_body_len = 0;
	h.fh_bulk_len = 0;
	h.fh_flags = 0;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), 0);
	CU_ASSERT_EQUAL(d.fh_flags, 0);
}

/* ------------------------------------------------------------ decode errors */

static void test_frame_decode_bad_magic_ebadmsg(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	weir_frame_encode(&h, raw);
	raw[0] ^= 0x20; /* "wEIR", checksum made valid again */
	reseal(raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EBADMSG);
	weir_frame_encode(&h, raw);
	weir_put_le32(raw, 0x57454952); /* big-endian "WEIR" */
	reseal(raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EBADMSG);
	memset(raw, 0, sizeof(raw));
	CU_ASSERT_EQUAL(decode(raw, &d), -EBADMSG);
	CU_ASSERT_EQUAL(weir_frame_decode(raw, &d, NULL), -EBADMSG); /* why may be NULL */
}

static void test_frame_decode_bad_crc_ebadmsg(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	/* one flipped bit anywhere in bytes 4..43 breaks the checksum */
	int bad = 0;
	for (int byte = 4; byte < 44; byte++)
		for (int bit = 0; bit < 8; bit++) {
			weir_frame_encode(&h, raw);
			raw[byte] ^= (uint8_t)(1u << bit);
			if (weir_frame_decode(raw, &d, NULL) != -EBADMSG)
				bad++;
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_frame_decode_bad_version_eprotonosupport(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	static const uint16_t versions[] = { 0, 2, 0x100, 0xffff };
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		weir_frame_encode(&h, raw);
		weir_put_le16(raw + 4, versions[i]);
		reseal(raw);
		CU_ASSERT_EQUAL(decode(raw, &d), -EPROTONOSUPPORT);
	}
}

static void test_frame_decode_unknown_flags_eproto(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	static const uint32_t flags[] = { 0x8, 0xf, 0x80000000U, 0xffffffffU };
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		h.fh_flags = flags[i];
		weir_frame_encode(&h, raw);
		CU_ASSERT_EQUAL(decode(raw, &d), -EPROTO);
	}
}

static void test_frame_xid_roundtrip_and_bad_tag_eproto(void)
{
	struct weir_xid_hdr x = { .xh_xid = 0x0102030405060708ULL, .xh_tag = 63 }, y;
	uint8_t raw[WEIR_XID_HDR_SIZE];
	for (int i = 0; i < 16; i++)
		x.xh_uuid[i] = (uint8_t)(i * 17);
	weir_xid_encode(&x, raw);
	CU_ASSERT_EQUAL(raw[16], 0x08); /* little-endian */
	CU_ASSERT_EQUAL(weir_xid_decode(raw, &y), 0);
	CU_ASSERT_EQUAL(memcmp(x.xh_uuid, y.xh_uuid, 16), 0);
	CU_ASSERT_EQUAL(y.xh_xid, x.xh_xid);
	CU_ASSERT_EQUAL(y.xh_tag, 63);
	x.xh_tag = WEIR_XID_NO_TAG;
	weir_xid_encode(&x, raw);
	CU_ASSERT_EQUAL(weir_xid_decode(raw, &y), 0);
	CU_ASSERT_EQUAL(y.xh_tag, WEIR_XID_NO_TAG);
	x.xh_tag = WEIR_XID_MAX_SLOTS; /* out of range */
	weir_xid_encode(&x, raw);
	CU_ASSERT_EQUAL(weir_xid_decode(raw, &y), -EPROTO);
	x.xh_tag = 0;
	weir_xid_encode(&x, raw);
	raw[30] = 1; /* flags must be 0 */
	CU_ASSERT_EQUAL(weir_xid_decode(raw, &y), -EPROTO);
}

static void test_frame_decode_reserved_nonzero_eproto(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	for (int byte = 28; byte < 32; byte++) {
		weir_frame_encode(&h, raw);
		raw[byte] = 1;
		reseal(raw);
		CU_ASSERT_EQUAL(decode(raw, &d), -EPROTO);
	}
	/* the pad word after the checksum is outside the checksum but checked */
	for (int byte = 44; byte < 48; byte++) {
		weir_frame_encode(&h, raw);
		raw[byte] = 0x80;
		CU_ASSERT_EQUAL(decode(raw, &d), -EPROTO);
	}
}

static void test_frame_decode_body_over_limit_emsgsize(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	h.fh_body_len = WEIR_FRAME_MAX_BODY + 1;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EMSGSIZE);
	h.fh_body_len = 0xffffffffU;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EMSGSIZE);
}

static void test_frame_decode_bulk_over_limit_emsgsize(void)
{
	struct weir_frame_hdr h = sample(), d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	h.fh_bulk_len = WEIR_FRAME_MAX_BULK + 1;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EMSGSIZE);
	h.fh_bulk_len = UINT64_MAX;
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EMSGSIZE);
	h.fh_bulk_len = 1ULL << 32; /* would pass a 32-bit check */
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(decode(raw, &d), -EMSGSIZE);
}

/* ------------------------------------------------------------ status table */

/* Every WireStatus of weir.proto and the host errno it names. */
static const struct {
	int err;
	int32_t ws;
} statuses[] = {
	{ EPERM, WEIR__WIRE_STATUS__WS_EPERM },
	{ ENOENT, WEIR__WIRE_STATUS__WS_ENOENT },
	{ EINTR, WEIR__WIRE_STATUS__WS_EINTR },
	{ EIO, WEIR__WIRE_STATUS__WS_EIO },
	{ ENXIO, WEIR__WIRE_STATUS__WS_ENXIO },
	{ E2BIG, WEIR__WIRE_STATUS__WS_E2BIG },
	{ EBADF, WEIR__WIRE_STATUS__WS_EBADF },
	{ EAGAIN, WEIR__WIRE_STATUS__WS_EAGAIN },
	{ ENOMEM, WEIR__WIRE_STATUS__WS_ENOMEM },
	{ EACCES, WEIR__WIRE_STATUS__WS_EACCES },
	{ EFAULT, WEIR__WIRE_STATUS__WS_EFAULT },
	{ EBUSY, WEIR__WIRE_STATUS__WS_EBUSY },
	{ EEXIST, WEIR__WIRE_STATUS__WS_EEXIST },
	{ EXDEV, WEIR__WIRE_STATUS__WS_EXDEV },
	{ ENODEV, WEIR__WIRE_STATUS__WS_ENODEV },
	{ ENOTDIR, WEIR__WIRE_STATUS__WS_ENOTDIR },
	{ EISDIR, WEIR__WIRE_STATUS__WS_EISDIR },
	{ EINVAL, WEIR__WIRE_STATUS__WS_EINVAL },
	{ ENFILE, WEIR__WIRE_STATUS__WS_ENFILE },
	{ EMFILE, WEIR__WIRE_STATUS__WS_EMFILE },
	{ EFBIG, WEIR__WIRE_STATUS__WS_EFBIG },
	{ ENOSPC, WEIR__WIRE_STATUS__WS_ENOSPC },
	{ ESPIPE, WEIR__WIRE_STATUS__WS_ESPIPE },
	{ EROFS, WEIR__WIRE_STATUS__WS_EROFS },
	{ EMLINK, WEIR__WIRE_STATUS__WS_EMLINK },
	{ EPIPE, WEIR__WIRE_STATUS__WS_EPIPE },
	{ ERANGE, WEIR__WIRE_STATUS__WS_ERANGE },
	{ EDEADLK, WEIR__WIRE_STATUS__WS_EDEADLK },
	{ ENAMETOOLONG, WEIR__WIRE_STATUS__WS_ENAMETOOLONG },
	{ ENOLCK, WEIR__WIRE_STATUS__WS_ENOLCK },
	{ ENOSYS, WEIR__WIRE_STATUS__WS_ENOSYS },
	{ ENOTEMPTY, WEIR__WIRE_STATUS__WS_ENOTEMPTY },
	{ ELOOP, WEIR__WIRE_STATUS__WS_ELOOP },
	{ ENODATA, WEIR__WIRE_STATUS__WS_ENODATA },
	{ EREMOTE, WEIR__WIRE_STATUS__WS_EREMOTE },
	{ ENOLINK, WEIR__WIRE_STATUS__WS_ENOLINK },
	{ EPROTO, WEIR__WIRE_STATUS__WS_EPROTO },
	{ EBADMSG, WEIR__WIRE_STATUS__WS_EBADMSG },
	{ EOVERFLOW, WEIR__WIRE_STATUS__WS_EOVERFLOW },
	{ EOPNOTSUPP, WEIR__WIRE_STATUS__WS_EOPNOTSUPP },
	{ ESHUTDOWN, WEIR__WIRE_STATUS__WS_ESHUTDOWN },
	{ ETIMEDOUT, WEIR__WIRE_STATUS__WS_ETIMEDOUT },
	{ ECONNREFUSED, WEIR__WIRE_STATUS__WS_ECONNREFUSED },
	{ EHOSTDOWN, WEIR__WIRE_STATUS__WS_EHOSTDOWN },
	{ EINPROGRESS, WEIR__WIRE_STATUS__WS_EINPROGRESS },
	{ ESTALE, WEIR__WIRE_STATUS__WS_ESTALE },
	{ EDQUOT, WEIR__WIRE_STATUS__WS_EDQUOT },
	{ ECANCELED, WEIR__WIRE_STATUS__WS_ECANCELED },
};
#define NSTATUSES (sizeof(statuses) / sizeof(statuses[0]))

static void test_status_table_covers_every_wire_status(void)
{
	/* weir.proto gains a status -> this list (and net/status.c) must follow */
	CU_ASSERT_EQUAL(weir__wire_status__descriptor.n_values, NSTATUSES + 1);
	for (unsigned i = 0; i < weir__wire_status__descriptor.n_values; i++) {
		int32_t v = weir__wire_status__descriptor.values[i].value;
		if (v == WEIR__WIRE_STATUS__WS_OK)
			continue;
		int found = 0;
		for (size_t k = 0; k < NSTATUSES; k++)
			found += statuses[k].ws == v;
		if (found != 1)
			printf("\n  status %s (%d) not in the test's table\n",
			       weir__wire_status__descriptor.values[i].name, v);
		CU_ASSERT_EQUAL(found, 1);
	}
}

static void test_status_every_errno_maps_both_ways(void)
{
	int bad = 0;
	for (size_t i = 0; i < NSTATUSES; i++) {
		int32_t ws = weir_status_from_errno(-statuses[i].err);
		int back = weir_status_to_errno(statuses[i].ws);
		if (ws != statuses[i].ws || back != -statuses[i].err) {
			printf("\n  errno %d: to wire %d (want %d), back %d (want %d)\n",
			       statuses[i].err, ws, statuses[i].ws, back, -statuses[i].err);
			bad++;
		}
		/* the wire values are Linux's errno numbers */
		if (statuses[i].ws != statuses[i].err)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_status_ok_maps_to_zero(void)
{
	CU_ASSERT_EQUAL(weir_status_from_errno(0), WEIR__WIRE_STATUS__WS_OK);
	CU_ASSERT_EQUAL(weir_status_to_errno(WEIR__WIRE_STATUS__WS_OK), 0);
	/* a positive rc (a byte count) is success */
	CU_ASSERT_EQUAL(weir_status_from_errno(4096), WEIR__WIRE_STATUS__WS_OK);
}

static void test_status_unknown_errno_goes_out_as_eio(void)
{
	static const int unknown[] = { -ECONNRESET, -EHOSTUNREACH, -EADDRINUSE, -ENOTCONN,
				       -ESRCH,	     -4000,	    -100000,	 -2147483647 };
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		int32_t ws = weir_status_from_errno(unknown[i]);
		CU_ASSERT_EQUAL(ws, WEIR__WIRE_STATUS__WS_EIO);
		CU_ASSERT_EQUAL(weir_status_to_errno(ws), -EIO);
	}
}

static void test_status_unknown_status_comes_in_as_eio(void)
{
	static const int32_t unknown[] = { 3, 8, 10, 255, 1000, 0x7fffffff, -1, -2, INT32_MIN };
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CU_ASSERT_EQUAL(weir_status_to_errno(unknown[i]), -EIO);
}

static void test_status_enotsup_and_eopnotsupp_same_status(void)
{
	CU_ASSERT_EQUAL(weir_status_from_errno(-ENOTSUP), WEIR__WIRE_STATUS__WS_EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_status_from_errno(-EOPNOTSUPP), WEIR__WIRE_STATUS__WS_EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_status_to_errno(WEIR__WIRE_STATUS__WS_EOPNOTSUPP), -EOPNOTSUPP);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_frame_encode_decode_roundtrip_equal),
		TH_TEST(test_frame_encode_wire_layout_little_endian),
		TH_TEST(test_frame_decode_many_random_headers_roundtrip),
		TH_TEST(test_frame_decode_limits_inclusive_ok),
		TH_TEST(test_frame_decode_bad_magic_ebadmsg),
		TH_TEST(test_frame_decode_bad_crc_ebadmsg),
		TH_TEST(test_frame_decode_bad_version_eprotonosupport),
		TH_TEST(test_frame_decode_unknown_flags_eproto),
		TH_TEST(test_frame_xid_roundtrip_and_bad_tag_eproto),
		TH_TEST(test_frame_decode_reserved_nonzero_eproto),
		TH_TEST(test_frame_decode_body_over_limit_emsgsize),
		TH_TEST(test_frame_decode_bulk_over_limit_emsgsize),
		TH_TEST(test_status_table_covers_every_wire_status),
		TH_TEST(test_status_every_errno_maps_both_ways),
		TH_TEST(test_status_ok_maps_to_zero),
		TH_TEST(test_status_unknown_errno_goes_out_as_eio),
		TH_TEST(test_status_unknown_status_comes_in_as_eio),
		TH_TEST(test_status_enotsup_and_eopnotsupp_same_status),
		TH_TEST_END,
	};
	return th_cunit_run("frame", NULL, NULL, tests);
}
