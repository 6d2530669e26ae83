/*
 * tests/unit/common/test_layout.c - common/layout.c: the RAID-0 stripe
 * arithmetic (Lustre's lov_offset.c) against independent models, and
 * weir_layout_check().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/layout.h"
#include "harness.h"

static const uint32_t counts[] = { 1, 2, 3, 4, 7 };
static const uint32_t sizes[] = { 64 * 1024, 1024 * 1024, 3 * 64 * 1024 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static struct weir_layout mk(uint32_t count, uint32_t size)
{
	struct weir_layout lo;
	memset(&lo, 0, sizeof(lo));
	lo.lo_pattern = WEIR_LAYOUT_PATTERN_RAID0;
	lo.lo_stripe_count = count;
	lo.lo_stripe_size = size;
	for (uint32_t i = 0; i < count && i < WEIR_LAYOUT_MAX_STRIPES; i++)
		lo.lo_osts[i] = i;
	return lo;
}

/* Offsets worth testing for a layout: chunk and row edges, and random ones. */
static size_t offsets_for(const struct weir_layout *lo, uint64_t *out, size_t max, uint64_t seed)
{
	size_t n = 0;
	uint64_t ss = lo->lo_stripe_size, row = ss * lo->lo_stripe_count;
	for (uint64_t k = 0; k < 3 * lo->lo_stripe_count + 3 && n + 6 < max; k++) {
		uint64_t b = k * ss;
		out[n++] = b;
		out[n++] = b + 1;
		out[n++] = b + ss - 1;
		out[n++] = b + ss / 2 + 7;
	}
	for (uint64_t k = 1; k < 4 && n + 3 < max; k++) {
		out[n++] = k * row - 1;
		out[n++] = k * row;
		out[n++] = k * row + 1;
	}
	uint64_t s = seed;
	while (n < max / 2)
		out[n++] = th_rand64(&s) % (64ULL * row + 12345);
	while (n < max)
		out[n++] = th_rand64(&s) >> 1 >> (th_rand64(&s) % 40); /* up to 2^63-1 */
	return n;
}

/* ------------------------------------------------------------ file <-> object */

static void test_layout_file_to_obj_matches_definition(void)
{
	int bad = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			uint64_t offs[400];
			size_t n = offsets_for(&lo, offs, 400, ci * 10 + si + 1);
			for (size_t i = 0; i < n; i++) {
				uint64_t off = offs[i], ss = lo.lo_stripe_size;
				uint64_t stripe = off / ss;
				uint32_t idx = 999;
				uint64_t oo = 0;
				weir_layout_file_to_obj(&lo, off, &idx, &oo);
				if (idx != stripe % lo.lo_stripe_count ||
				    oo != (stripe / lo.lo_stripe_count) * ss + off % ss)
					bad++;
			}
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_layout_file_obj_roundtrip_identity(void)
{
	int bad = 0, checked = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			uint64_t offs[2000];
			size_t n = offsets_for(&lo, offs, 2000, 1000 + ci * 10 + si);
			for (size_t i = 0; i < n; i++) {
				uint32_t idx;
				uint64_t oo;
				weir_layout_file_to_obj(&lo, offs[i], &idx, &oo);
				if (idx >= lo.lo_stripe_count ||
				    weir_layout_obj_to_file(&lo, idx, oo) != offs[i])
					bad++;
				/* and the other way, from object coordinates */
				uint32_t j = (uint32_t)(i % lo.lo_stripe_count);
				uint64_t ooff = offs[i] / lo.lo_stripe_count;
				uint64_t f = weir_layout_obj_to_file(&lo, j, ooff);
				uint32_t j2;
				uint64_t ooff2;
				weir_layout_file_to_obj(&lo, f, &j2, &ooff2);
				if (j2 != j || ooff2 != ooff)
					bad++;
				checked++;
			}
		}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(checked > 20000);
}

static void test_layout_chunk_left_stays_in_one_chunk(void)
{
	struct weir_layout lo = mk(3, 3 * 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_chunk_left(&lo, 0), 3 * 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_chunk_left(&lo, 1), 3 * 64 * 1024 - 1);
	CU_ASSERT_EQUAL(weir_layout_chunk_left(&lo, 3 * 64 * 1024 - 1), 1);
	CU_ASSERT_EQUAL(weir_layout_chunk_left(&lo, 3 * 64 * 1024), 3 * 64 * 1024);
	/* the run maps to consecutive object bytes of one object */
	uint64_t off = 5 * 64 * 1024 + 17;
	uint64_t left = weir_layout_chunk_left(&lo, off);
	uint32_t i0, i1;
	uint64_t o0, o1;
	weir_layout_file_to_obj(&lo, off, &i0, &o0);
	weir_layout_file_to_obj(&lo, off + left - 1, &i1, &o1);
	CU_ASSERT_EQUAL(i0, i1);
	CU_ASSERT_EQUAL(o1 - o0, left - 1);
	weir_layout_file_to_obj(&lo, off + left, &i1, &o1);
	CU_ASSERT_NOT_EQUAL(i0, i1);
}

/* ------------------------------------------------------------ obj_lower_bound */

/* Model: object bytes of object idx whose file offset is below f. */
static uint64_t model_lower_bound(const struct weir_layout *lo, uint32_t idx, uint64_t f)
{
	uint64_t n = 0;
	for (uint64_t b = 0; b < f; b++) {
		uint32_t i;
		uint64_t oo;
		weir_layout_file_to_obj(lo, b, &i, &oo);
		if (i == idx)
			n++;
	}
	return n;
}

static void test_layout_obj_lower_bound_small_sizes_match_bytewise_model(void)
{
	/* The arithmetic does not need 64 KiB multiples: check every byte of
	 * small layouts against a model that counts bytes one by one. */
	int bad = 0;
	for (uint32_t count = 1; count <= 5; count++)
		for (uint32_t ss = 1; ss <= 6; ss++) {
			struct weir_layout lo = mk(count, ss);
			uint64_t maxf = (uint64_t)count * ss * 4 + 3;
			for (uint32_t idx = 0; idx < count; idx++)
				for (uint64_t f = 0; f <= maxf; f++)
					if (weir_layout_obj_lower_bound(&lo, idx, f) !=
					    model_lower_bound(&lo, idx, f))
						bad++;
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_layout_obj_lower_bound_small_extents_contiguous(void)
{
	/* The object bytes [a, b) touches are exactly [lb(a), lb(b)) per object. */
	int bad = 0;
	for (uint32_t count = 1; count <= 4; count++)
		for (uint32_t ss = 1; ss <= 5; ss++) {
			struct weir_layout lo = mk(count, ss);
			uint64_t maxf = (uint64_t)count * ss * 3 + 2;
			for (uint64_t a = 0; a <= maxf; a++)
				for (uint64_t b = a; b <= maxf; b++)
					for (uint32_t idx = 0; idx < count; idx++) {
						uint64_t lo_b = weir_layout_obj_lower_bound(&lo, idx, a);
						uint64_t hi_b = weir_layout_obj_lower_bound(&lo, idx, b);
						uint64_t n = 0, mn = UINT64_MAX, mx = 0;
						for (uint64_t x = a; x < b; x++) {
							uint32_t i;
							uint64_t oo;
							weir_layout_file_to_obj(&lo, x, &i, &oo);
							if (i != idx)
								continue;
							n++;
							mn = oo < mn ? oo : mn;
							mx = oo > mx ? oo : mx;
						}
						if (n != hi_b - lo_b || (n && (mn != lo_b || mx != hi_b - 1)))
							bad++;
					}
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_layout_obj_lower_bound_extent_sums_equal_length(void)
{
	int bad = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			uint64_t offs[600];
			size_t n = offsets_for(&lo, offs, 600, 77 + ci + si * 31);
			for (size_t i = 0; i + 1 < n; i++) {
				uint64_t a = offs[i], b = offs[i + 1];
				if (a > b) {
					uint64_t t = a;
					a = b;
					b = t;
				}
				uint64_t sum = 0;
				for (uint32_t idx = 0; idx < lo.lo_stripe_count; idx++) {
					uint64_t x = weir_layout_obj_lower_bound(&lo, idx, a);
					uint64_t y = weir_layout_obj_lower_bound(&lo, idx, b);
					if (y < x)
						bad++;
					sum += y - x;
				}
				if (sum != b - a)
					bad++;
			}
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_layout_obj_lower_bound_is_truncated_object_size(void)
{
	/* lb(idx, F) is the size object idx has in a file of F bytes: one past
	 * the last object byte whose file offset is below F. */
	int bad = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			uint64_t offs[300];
			size_t n = offsets_for(&lo, offs, 300, 5 + ci + si);
			for (size_t i = 0; i < n; i++) {
				uint64_t F = offs[i];
				for (uint32_t idx = 0; idx < lo.lo_stripe_count; idx++) {
					uint64_t sz = weir_layout_obj_lower_bound(&lo, idx, F);
					if (sz && weir_layout_obj_to_file(&lo, idx, sz - 1) >= F)
						bad++;
					if (weir_layout_obj_to_file(&lo, idx, sz) < F)
						bad++;
				}
			}
		}
	CU_ASSERT_EQUAL(bad, 0);
}

/* ------------------------------------------------------------ file_size */

static void test_layout_file_size_inverts_lower_bound(void)
{
	int bad = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			uint64_t offs[400];
			size_t n = offsets_for(&lo, offs, 400, 99 + ci * 3 + si);
			for (size_t i = 0; i < n; i++) {
				uint64_t F = offs[i];
				/* the largest size any object implies is the file size */
				uint64_t mx = 0;
				for (uint32_t idx = 0; idx < lo.lo_stripe_count; idx++) {
					uint64_t osz = weir_layout_obj_lower_bound(&lo, idx, F);
					uint64_t fs = weir_layout_file_size(&lo, idx, osz);
					if (fs > F)
						bad++;
					if (osz && weir_layout_obj_lower_bound(&lo, idx, fs) != osz)
						bad++;
					mx = fs > mx ? fs : mx;
				}
				if (mx != F)
					bad++;
			}
		}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_layout_file_size_exact_values(void)
{
	struct weir_layout lo = mk(4, 64 * 1024);
	const uint64_t ss = 64 * 1024;
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 0, 0), 0);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 3, 0), 0);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 0, 1), 1);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 1, 1), ss + 1);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 3, ss), 4 * ss);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 0, ss + 1), 4 * ss + 1);
	CU_ASSERT_EQUAL(weir_layout_file_size(&lo, 2, 2 * ss), 2 * 4 * ss - ss);
}

/* ------------------------------------------------------------ near 2^63-1 */

static void test_layout_offsets_near_max_no_overflow(void)
{
	int bad = 0;
	for (size_t ci = 0; ci < NCOUNTS; ci++)
		for (size_t si = 0; si < NSIZES; si++) {
			struct weir_layout lo = mk(counts[ci], sizes[si]);
			for (uint64_t d = 0; d < 3 * (uint64_t)sizes[si] * counts[ci]; d += 4099) {
				uint64_t off = (uint64_t)WEIR_MAX_FILE_OFF - d;
				uint32_t idx;
				uint64_t oo;
				weir_layout_file_to_obj(&lo, off, &idx, &oo);
				if (oo > off || weir_layout_obj_to_file(&lo, idx, oo) != off)
					bad++;
				if (weir_layout_file_size(&lo, idx, oo + 1) != off + 1)
					bad++;
			}
			/* an extent ending at the largest offset */
			uint64_t a = (uint64_t)WEIR_MAX_FILE_OFF - 10 * 1024 * 1024 - 12345;
			uint64_t b = (uint64_t)WEIR_MAX_FILE_OFF;
			uint64_t sum = 0;
			uint64_t mx = 0;
			for (uint32_t idx = 0; idx < lo.lo_stripe_count; idx++) {
				uint64_t x = weir_layout_obj_lower_bound(&lo, idx, a);
				uint64_t y = weir_layout_obj_lower_bound(&lo, idx, b);
				if (y < x || y > b)
					bad++;
				sum += y - x;
				uint64_t fs = weir_layout_file_size(&lo, idx, y);
				mx = fs > mx ? fs : mx;
			}
			if (sum != b - a || mx != b)
				bad++;
		}
	CU_ASSERT_EQUAL(bad, 0);
}

/* ------------------------------------------------------------ weir_layout_check */

static void test_layout_check_valid_layouts_ok(void)
{
	struct weir_layout lo = mk(1, 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), 0);
	lo = mk(4, 1024 * 1024);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), 0);
	lo = mk(7, 3 * 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), 0);
	lo = mk(WEIR_LAYOUT_MAX_STRIPES, WEIR_LAYOUT_MAX_STRIPE_SIZE);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), 0);
	lo = mk(3, 64 * 1024);
	lo.lo_osts[0] = 9;
	lo.lo_osts[1] = 2;
	lo.lo_osts[2] = 5; /* any distinct OSTs, any order */
	CU_ASSERT_EQUAL(weir_layout_check(&lo), 0);
}

static void test_layout_check_bad_fields_einval(void)
{
	struct weir_layout lo;
	lo = mk(2, 64 * 1024);
	lo.lo_pattern = 0;
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 64 * 1024);
	lo.lo_pattern = 2;
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(0, 64 * 1024);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(WEIR_LAYOUT_MAX_STRIPES, 64 * 1024);
	lo.lo_stripe_count = WEIR_LAYOUT_MAX_STRIPES + 1;
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 0);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 4096);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 64 * 1024 - 1);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 64 * 1024 + 1);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, WEIR_LAYOUT_MAX_STRIPE_SIZE + WEIR_LAYOUT_STRIPE_ALIGN);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(2, 2U << 30);
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(3, 64 * 1024);
	lo.lo_osts[2] = lo.lo_osts[0]; /* same OST twice */
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
	lo = mk(WEIR_LAYOUT_MAX_STRIPES, 64 * 1024);
	lo.lo_osts[WEIR_LAYOUT_MAX_STRIPES - 1] = lo.lo_osts[WEIR_LAYOUT_MAX_STRIPES - 2];
	CU_ASSERT_EQUAL(weir_layout_check(&lo), -EINVAL);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_layout_file_to_obj_matches_definition),
		TH_TEST(test_layout_file_obj_roundtrip_identity),
		TH_TEST(test_layout_chunk_left_stays_in_one_chunk),
		TH_TEST(test_layout_obj_lower_bound_small_sizes_match_bytewise_model),
		TH_TEST(test_layout_obj_lower_bound_small_extents_contiguous),
		TH_TEST(test_layout_obj_lower_bound_extent_sums_equal_length),
		TH_TEST(test_layout_obj_lower_bound_is_truncated_object_size),
		TH_TEST(test_layout_file_size_inverts_lower_bound),
		TH_TEST(test_layout_file_size_exact_values),
		TH_TEST(test_layout_offsets_near_max_no_overflow),
		TH_TEST(test_layout_check_valid_layouts_ok),
		TH_TEST(test_layout_check_bad_fields_einval),
		TH_TEST_END,
	};
	return th_cunit_run("layout", NULL, NULL, tests);
}
