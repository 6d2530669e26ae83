/*
 * tests/unit/common/test_fid.c - common/fid.c: big-endian packing for
 * RocksDB keys, the printed form and its parser, the inode-number fold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/fid.h"
#include "harness.h"

static int fid_cmp(const struct weir_fid *a, const struct weir_fid *b)
{
	if (a->fid_seq != b->fid_seq)
		return a->fid_seq < b->fid_seq ? -1 : 1;
	if (a->fid_oid != b->fid_oid)
		return a->fid_oid < b->fid_oid ? -1 : 1;
	return 0;
}

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static void test_fid_pack_be_bytes_are_big_endian(void)
{
	struct weir_fid f = { 0x0102030405060708ULL, 0x1112131415161718ULL };
	uint8_t b[WEIR_FID_BYTES];
	weir_fid_pack_be(&f, b);
	static const uint8_t want[WEIR_FID_BYTES] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
						      0x07, 0x08, 0x11, 0x12, 0x13, 0x14,
						      0x15, 0x16, 0x17, 0x18 };
	CU_ASSERT_EQUAL(memcmp(b, want, sizeof(want)), 0);
	struct weir_fid g = { 0, 0 };
	weir_fid_unpack_be(b, &g);
	CU_ASSERT_EQUAL(g.fid_seq, f.fid_seq);
	CU_ASSERT_EQUAL(g.fid_oid, f.fid_oid);
}

static void test_fid_pack_be_memcmp_order_equals_numeric_order(void)
{
	/* values that break little-endian or signed comparisons */
	static const uint64_t edge[] = { 0,
					 1,
					 0xff,
					 0x100,
					 0xffffffffULL,
					 0x100000000ULL,
					 WEIR_FID_SEQ_ROOT,
					 WEIR_FID_SEQ_NORMAL,
					 0x7fffffffffffffffULL,
					 0x8000000000000000ULL,
					 UINT64_MAX };
	const size_t ne = sizeof(edge) / sizeof(edge[0]);
	uint64_t s = 42;
	int mismatches = 0;
	for (int i = 0; i < 20000; i++) {
		struct weir_fid a, b;
		if (i < (int)(ne * ne)) {
			a.fid_seq = edge[i % ne];
			b.fid_seq = edge[(i / ne) % ne];
			a.fid_oid = edge[(i / ne) % ne];
			b.fid_oid = edge[i % ne];
		} else {
			a.fid_seq = th_rand64(&s) >> (th_rand64(&s) % 64);
			b.fid_seq = (i & 1) ? a.fid_seq : th_rand64(&s) >> (th_rand64(&s) % 64);
			a.fid_oid = th_rand64(&s) >> (th_rand64(&s) % 64);
			b.fid_oid = th_rand64(&s) >> (th_rand64(&s) % 64);
		}
		uint8_t pa[WEIR_FID_BYTES], pb[WEIR_FID_BYTES];
		weir_fid_pack_be(&a, pa);
		weir_fid_pack_be(&b, pb);
		if (sign(memcmp(pa, pb, WEIR_FID_BYTES)) != fid_cmp(&a, &b))
			mismatches++;
		struct weir_fid ua;
		weir_fid_unpack_be(pa, &ua);
		if (!weir_fid_eq(&ua, &a))
			mismatches++;
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_fid_to_str_lustre_format(void)
{
	char buf[WEIR_FID_STR_MAX];
	struct weir_fid f = { WEIR_FID_SEQ_NORMAL, 0x2a };
	CU_ASSERT_STRING_EQUAL(weir_fid_to_str(&f, buf, sizeof(buf)), "[0x200000400:0x2a:0x0]");
	struct weir_fid r = weir_fid_root();
	CU_ASSERT_STRING_EQUAL(weir_fid_to_str(&r, buf, sizeof(buf)), "[0x200000007:0x1:0x0]");
	struct weir_fid m = { UINT64_MAX, UINT64_MAX };
	weir_fid_to_str(&m, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "[0xffffffffffffffff:0xffffffffffffffff:0x0]");
	CU_ASSERT(strlen(buf) < WEIR_FID_STR_MAX);
}

static void test_fid_parse_roundtrip_many(void)
{
	uint64_t s = 7;
	int bad = 0;
	for (int i = 0; i < 5000; i++) {
		struct weir_fid f = { th_rand64(&s) >> (i % 64), th_rand64(&s) >> ((i * 7) % 64) };
		char buf[WEIR_FID_STR_MAX];
		weir_fid_to_str(&f, buf, sizeof(buf));
		struct weir_fid g = { 1, 1 };
		if (weir_fid_parse(buf, &g) != 0 || !weir_fid_eq(&f, &g))
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_fid_parse_accepted_forms(void)
{
	struct weir_fid f;
	CU_ASSERT_EQUAL(weir_fid_parse("[0x200000400:0x2a:0x0]", &f), 0);
	CU_ASSERT_EQUAL(f.fid_seq, WEIR_FID_SEQ_NORMAL);
	CU_ASSERT_EQUAL(f.fid_oid, 0x2a);
	memset(&f, 0, sizeof(f));
	CU_ASSERT_EQUAL(weir_fid_parse("0x200000400:0x2a:0x0", &f), 0);
	CU_ASSERT_EQUAL(f.fid_seq, WEIR_FID_SEQ_NORMAL);
	CU_ASSERT_EQUAL(f.fid_oid, 0x2a);
	memset(&f, 0, sizeof(f));
	CU_ASSERT_EQUAL(weir_fid_parse("0x200000400:0x2a", &f), 0);
	CU_ASSERT_EQUAL(f.fid_seq, WEIR_FID_SEQ_NORMAL);
	CU_ASSERT_EQUAL(f.fid_oid, 0x2a);
	memset(&f, 0, sizeof(f));
	CU_ASSERT_EQUAL(weir_fid_parse("[200000400:2a]", &f), 0); /* 0x is optional */
	CU_ASSERT_EQUAL(f.fid_seq, WEIR_FID_SEQ_NORMAL);
	CU_ASSERT_EQUAL(f.fid_oid, 0x2a);
}

static void test_fid_parse_malformed_einval(void)
{
	static const char *bad[] = {
		"",
		"[",
		"[]",
		"0x1",
		"0x1:",
		":0x2",
		"0x1:0x2:",
		"0x1:0x2:0x1",    /* version must be 0 */
		"[0x1:0x2:0x0]x", /* trailing text */
		"[0x1:0x2:0x0]]",
		"zz:0x2",
		"0x1:zz",
		"0x1;0x2",
		"0x1:0x2:0x0:0x0",
		"0x10000000000000000:0x1", /* seq over 64 bits */
		"0x1:0x10000000000000000", /* oid over 64 bits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct weir_fid f = { 0x77, 0x77 };
		int rc = weir_fid_parse(bad[i], &f);
		if (rc != -EINVAL)
			printf("\n  weir_fid_parse(\"%s\") = %d, want -EINVAL\n", bad[i], rc);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_EQUAL(f.fid_seq, 0x77); /* untouched on error */
		CU_ASSERT_EQUAL(f.fid_oid, 0x77);
	}
}

static void test_fid_flatten_root_and_zero_nonzero(void)
{
	struct weir_fid r = weir_fid_root();
	uint64_t ino = weir_fid_flatten(&r);
	CU_ASSERT_NOT_EQUAL(ino, 0);
	/* Lustre's fid_flatten: (seq << 24) + ((seq >> 24) * 0xffffff) + oid */
	CU_ASSERT_EQUAL(ino, (WEIR_FID_SEQ_ROOT << 24) + ((WEIR_FID_SEQ_ROOT >> 24) * 0xffffffULL) +
				     1);
	struct weir_fid z = { 0, 0 };
	CU_ASSERT_EQUAL(weir_fid_flatten(&z), 1);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void test_fid_flatten_small_oids_distinct(void)
{
	static const uint64_t seqs[] = { WEIR_FID_SEQ_ROOT, WEIR_FID_SEQ_NORMAL,
					 WEIR_FID_SEQ_NORMAL + 1, WEIR_FID_SEQ_NORMAL + 2,
					 WEIR_FID_SEQ_NORMAL + 0x1000 };
	const size_t ns = sizeof(seqs) / sizeof(seqs[0]);
	const size_t noid = 4000;
	uint64_t *v = calloc(ns * noid, sizeof(*v));
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	size_t n = 0;
	for (size_t i = 0; i < ns; i++)
		for (uint64_t oid = 1; oid <= noid; oid++) {
			struct weir_fid f = { seqs[i], oid };
			v[n++] = weir_fid_flatten(&f);
		}
	qsort(v, n, sizeof(*v), u64_cmp);
	size_t dups = 0, zeros = 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i])
			zeros++;
		if (i && v[i] == v[i - 1])
			dups++;
	}
	CU_ASSERT_EQUAL(dups, 0);
	CU_ASSERT_EQUAL(zeros, 0);
	free(v);
	/* oids near 2^24 in adjacent sequences still differ */
	struct weir_fid a = { WEIR_FID_SEQ_NORMAL, (1ULL << 24) - 1 };
	struct weir_fid b = { WEIR_FID_SEQ_NORMAL + 1, 0 };
	CU_ASSERT_NOT_EQUAL(weir_fid_flatten(&a), weir_fid_flatten(&b));
}

static void test_fid_helpers_eq_zero_root(void)
{
	struct weir_fid a = { 1, 2 }, b = { 1, 2 }, c = { 2, 1 }, z = { 0, 0 };
	CU_ASSERT_TRUE(weir_fid_eq(&a, &b));
	CU_ASSERT_FALSE(weir_fid_eq(&a, &c));
	CU_ASSERT_TRUE(weir_fid_is_zero(&z));
	CU_ASSERT_FALSE(weir_fid_is_zero(&a));
	struct weir_fid r = weir_fid_root();
	CU_ASSERT_EQUAL(r.fid_seq, WEIR_FID_SEQ_ROOT);
	CU_ASSERT_EQUAL(r.fid_oid, 1);
}

/* The sequence -> MDT table (issue 16): one formula, both ways. */
static void test_fid_mdt_routing(void)
{
	struct weir_fid r = weir_fid_root();
	CU_ASSERT_EQUAL(weir_fid_mdt(&r), 0);
	for (uint32_t i = 0; i < WEIR_MDT_MAX; i++) {
		struct weir_fid f = { weir_fid_mdt_seq(i), 1 };
		CU_ASSERT_EQUAL(weir_fid_mdt(&f), (int)i);
		f.fid_oid = UINT64_MAX;
		CU_ASSERT_EQUAL(weir_fid_mdt(&f), (int)i);
	}
	CU_ASSERT_EQUAL(weir_fid_mdt_seq(0), WEIR_FID_SEQ_NORMAL);
	struct weir_fid low = { 1, 1 }, past = { weir_fid_mdt_seq(WEIR_MDT_MAX), 1 };
	CU_ASSERT_EQUAL(weir_fid_mdt(&low), 0);
	CU_ASSERT_EQUAL(weir_fid_mdt(&past), -1);
	struct weir_fid top = { UINT64_MAX, 1 };
	CU_ASSERT_EQUAL(weir_fid_mdt(&top), -1);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_fid_pack_be_bytes_are_big_endian),
		TH_TEST(test_fid_pack_be_memcmp_order_equals_numeric_order),
		TH_TEST(test_fid_to_str_lustre_format),
		TH_TEST(test_fid_parse_roundtrip_many),
		TH_TEST(test_fid_parse_accepted_forms),
		TH_TEST(test_fid_parse_malformed_einval),
		TH_TEST(test_fid_flatten_root_and_zero_nonzero),
		TH_TEST(test_fid_flatten_small_oids_distinct),
		TH_TEST(test_fid_helpers_eq_zero_root),
		TH_TEST(test_fid_mdt_routing),
		TH_TEST_END,
	};
	return th_cunit_run("fid", NULL, NULL, tests);
}
