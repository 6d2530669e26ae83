/*
 * tests/unit/tools/test_dra_shadow.c - tools/weir_dra_shadow.c: which files
 * of an import listing a directory of the same name shadows, for every
 * order the keys can be listed in (s3rver lists `out/...` before `out`, AWS
 * S3 `out` first, and names such as `out-x` and `out.txt` sort between).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "tools/weir_dra_shadow.h"

/* Map \a key (below the prefix) to an object as `weir dra import` does. */
static void obj_init(struct imp_obj *o, const char *key)
{
	size_t len = strlen(key);
	char *slash;

	memset(o, 0, sizeof(*o));
	o->io_key = (char *)key;
	o->io_rel = strdup(key);
	CU_ASSERT_FATAL(o->io_rel != NULL);
	if (key[len - 1] == '/') { /* a directory marker */
		o->io_rel[len - 1] = '\0';
		o->io_dir = o->io_rel;
		o->io_name = "";
		return;
	}
	slash = strrchr(o->io_rel, '/');
	if (slash) {
		*slash = '\0';
		o->io_dir = o->io_rel;
		o->io_name = slash + 1;
	} else {
		o->io_dir = "";
		o->io_name = o->io_rel;
	}
}

/* Mark \a keys (\a n, in this order); "key:S" in \a out for each shadowed one, sorted. */
static ssize_t mark(const char *const *keys, size_t n, char *out, size_t outlen)
{
	struct imp_obj objs[16];
	ssize_t rc;

	CU_ASSERT_FATAL(n <= 16);
	for (size_t i = 0; i < n; i++)
		obj_init(&objs[i], keys[i]);
	rc = dra_shadow_mark(objs, n);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(out);
		snprintf(out + l, outlen - l, "%s%s ", objs[i].io_key,
			 objs[i].io_shadowed ? ":S" : "");
		free(objs[i].io_rel);
	}
	return rc;
}

static void test_shadow_mark_file_and_dir_of_one_name_dir_wins(void)
{
	static const char *const keys[] = {"out", "out/shadow_file.txt"};
	char got[512];

	CU_ASSERT_EQUAL(mark(keys, 2, got, sizeof(got)), 1);
	CU_ASSERT_STRING_EQUAL(got, "out:S out/shadow_file.txt ");
}

static void test_shadow_mark_parent_of_a_deeper_dir_and_marker_shadow(void)
{
	static const char *const keys[] = {"a/b/c", "a", "m/", "m", "ab/c", "a.b", "x"};
	char got[512];

	CU_ASSERT_EQUAL(mark(keys, 7, got, sizeof(got)), 2);
	CU_ASSERT_STRING_EQUAL(got, "a:S a.b m:S x a/b/c ab/c m/ ");
}

static void test_shadow_mark_nothing_listed_marks_nothing(void)
{
	char got[8];

	CU_ASSERT_EQUAL(mark(NULL, 0, got, sizeof(got)), 0);
	CU_ASSERT_STRING_EQUAL(got, "");
}

/* Every permutation of 8 keys (40,320 orders) gives the same result. */
static void test_shadow_mark_every_listing_order_same_result(void)
{
	const char *keys[] = {"out", "out-x", "out/b/c", "out.txt", "m", "m/", "ab/c", "a"};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	/* sorted by (directory, name); "a" is no directory ("ab" is) */
	const char *want = "a m:S out:S out-x out.txt ab/c m/ out/b/c ";
	size_t c[8] = {0}, orders = 1, bad = 0;
	char got[512];

	CU_ASSERT_EQUAL(mark(keys, n, got, sizeof(got)), 2);
	CU_ASSERT_STRING_EQUAL(got, want);
	/* Heap's algorithm */
	for (size_t i = 1; i < n;) {
		if (c[i] < i) {
			size_t j = (i % 2) ? c[i] : 0;
			const char *t = keys[j];
			keys[j] = keys[i];
			keys[i] = t;
			orders++;
			if (mark(keys, n, got, sizeof(got)) != 2 || strcmp(got, want)) {
				if (!bad++)
					fprintf(stderr, "\n  order %zu: got \"%s\"\n", orders, got);
			}
			c[i]++;
			i = 1;
		} else {
			c[i] = 0;
			i++;
		}
	}
	CU_ASSERT_EQUAL(orders, 40320);
	CU_ASSERT_EQUAL(bad, 0);
}

static const struct th_test tests[] = {
	TH_TEST(test_shadow_mark_file_and_dir_of_one_name_dir_wins),
	TH_TEST(test_shadow_mark_parent_of_a_deeper_dir_and_marker_shadow),
	TH_TEST(test_shadow_mark_nothing_listed_marks_nothing),
	TH_TEST(test_shadow_mark_every_listing_order_same_result),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("dra_shadow", NULL, NULL, tests);
}
