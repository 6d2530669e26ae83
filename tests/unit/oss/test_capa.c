/*
 * tests/unit/oss/test_capa.c - oss/capa.c, the OSS's check of OST
 * capabilities, called directly on a struct oss set up by oss_capa_init():
 * no key yet (-EAGAIN), --insecure (nothing checked), every refusal (none,
 * another file, too few rights, expired, a MAC of the wrong length, another
 * key generation, a forged MAC), the per-thread cache of checked MACs (a hit
 * needs every field equal: a cached MAC with changed rights, expiry or FID
 * is refused) and a key change (same generation, other bytes) voiding what
 * the cache holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <CUnit/CUnit.h>

#include "common/capa.h"
#include "common/log.h"
#include "harness.h"
#include "oss/oss_int.h"

static struct oss oss;
static uint8_t key1[WEIR_CAPA_KEY_LEN], key2[WEIR_CAPA_KEY_LEN];
static const struct weir_fid fid = { 0x200000400ULL, 77 };

static int suite_init(void)
{
	weir_log_set_level(WEIR_LOG_LVL_ERROR);
	for (int i = 0; i < WEIR_CAPA_KEY_LEN; i++) {
		key1[i] = (uint8_t)(i * 7 + 1);
		key2[i] = (uint8_t)(i * 11 + 3);
	}
	oss_capa_init(&oss);
	oss.o_capa_off = false; /* the process has no net_auth default (that is --insecure) */
	return 0;
}

static int suite_clean(void)
{
	oss_capa_fini(&oss);
	return 0;
}

/* A capability as the MDS would sign it with \a key / \a gen. */
struct capa {
	Weir__Capa c;
	Weir__Fid f;
	uint8_t mac[WEIR_CAPA_MAC_LEN];
};

static void capa_make(struct capa *cp, const uint8_t *key, uint32_t gen, const struct weir_fid *f,
		      uint32_t rights, int64_t expiry_s)
{
	struct weir_capa_key k;
	weir_capa_key_init(&k, key, gen);
	weir__capa__init(&cp->c);
	weir__fid__init(&cp->f);
	cp->f.seq = f->fid_seq;
	cp->f.oid = f->fid_oid;
	cp->c.fid = &cp->f;
	cp->c.rights = rights;
	cp->c.expiry_s = expiry_s;
	cp->c.key_gen = gen;
	weir_capa_mac(&k, f, rights, expiry_s, cp->mac);
	cp->c.mac.data = cp->mac;
	cp->c.mac.len = sizeof(cp->mac);
	weir_capa_key_wipe(&k);
}

static int check(const struct capa *cp, const struct weir_fid *f, uint32_t need)
{
	const char *why = "";
	return oss_capa_check(&oss, cp ? &cp->c : NULL, f, need, &why);
}

static int64_t later(void)
{
	return (int64_t)time(NULL) + 600;
}

/* Runs first: the OSS has not heard from the MDS. */
static void test_capa_check_no_key_yet_eagain(void)
{
	struct capa cp;
	const char *why = "";
	capa_make(&cp, key1, 1, &fid, WEIR_CAPA_READ, later());
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EAGAIN);
	CU_ASSERT_EQUAL(oss_capa_check(&oss, NULL, &fid, WEIR_CAPA_READ, &why), -EAGAIN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "no capability key"));
	oss_capa_set_key(&oss, key1, 5, 1); /* a short key is ignored */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EAGAIN);
	oss_capa_set_key(&oss, key1, WEIR_CAPA_KEY_LEN, 1);
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), 0);
}

static void test_capa_check_insecure_checks_nothing(void)
{
	oss.o_capa_off = true;
	CU_ASSERT_EQUAL(check(NULL, &fid, WEIR_CAPA_DESTROY), 0);
	oss.o_capa_off = false;
	CU_ASSERT_EQUAL(check(NULL, &fid, WEIR_CAPA_DESTROY), -EACCES);
}

static void test_capa_check_refusals(void)
{
	struct capa cp;
	struct weir_fid other = { fid.fid_seq, fid.fid_oid + 1 };
	uint32_t rw = WEIR_CAPA_READ | WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH | WEIR_CAPA_GETATTR;

	CU_ASSERT_EQUAL(check(NULL, &fid, WEIR_CAPA_READ), -EACCES);
	capa_make(&cp, key1, 1, &fid, rw, later());
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_WRITE), 0);
	CU_ASSERT_EQUAL(check(&cp, &other, WEIR_CAPA_WRITE), -EACCES);  /* another file */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_DESTROY), -EACCES);  /* too few rights */
	cp.c.fid = NULL;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);     /* no fid */
	capa_make(&cp, key1, 1, &fid, WEIR_CAPA_READ, later());
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_WRITE), -EACCES);
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_PUNCH), -EACCES);
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_GETATTR), -EACCES);
	capa_make(&cp, key1, 1, &fid, rw, (int64_t)time(NULL) - 1); /* expired */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	capa_make(&cp, key1, 1, &fid, rw, (int64_t)time(NULL));     /* expires now */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	capa_make(&cp, key1, 2, &fid, rw, later()); /* the right bytes, another generation */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	capa_make(&cp, key2, 1, &fid, rw, later()); /* another key */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	capa_make(&cp, key1, 1, &fid, rw, later());
	cp.c.mac.len = 31;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	cp.c.mac.len = 0;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	cp.c.mac.len = WEIR_CAPA_MAC_LEN;
	for (int bit = 0; bit < 8 * WEIR_CAPA_MAC_LEN; bit += 37) {
		cp.mac[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
		cp.mac[bit / 8] ^= (uint8_t)(1 << (bit % 8));
	}
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), 0);
}

/* A MAC once verified is cached: the cache must not accept it with other fields. */
static void test_capa_check_cache_hit_needs_every_field(void)
{
	struct capa cp;
	int64_t exp = later();
	capa_make(&cp, key1, 1, &fid, WEIR_CAPA_READ, exp);
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), 0); /* verified, cached */
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), 0); /* a hit */
	cp.c.rights = WEIR_CAPA_READ | WEIR_CAPA_WRITE | WEIR_CAPA_DESTROY;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_WRITE), -EACCES);
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_DESTROY), -EACCES);
	cp.c.rights = WEIR_CAPA_READ;
	cp.c.expiry_s = exp + 3600;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), -EACCES);
	cp.c.expiry_s = exp;
	struct weir_fid other = { fid.fid_seq, fid.fid_oid + 5 };
	cp.f.oid = other.fid_oid; /* the request's fid changed with it */
	CU_ASSERT_EQUAL(check(&cp, &other, WEIR_CAPA_READ), -EACCES);
	cp.f.oid = fid.fid_oid;
	CU_ASSERT_EQUAL(check(&cp, &fid, WEIR_CAPA_READ), 0);
}

/* A new MDT's key has generation 1 again: what was checked under the old key is not taken. */
static void test_capa_check_new_key_same_generation_voids_cache(void)
{
	struct capa old, fresh;
	capa_make(&old, key1, 1, &fid, WEIR_CAPA_READ, later());
	capa_make(&fresh, key2, 1, &fid, WEIR_CAPA_READ, later());
	CU_ASSERT_EQUAL(check(&old, &fid, WEIR_CAPA_READ), 0); /* cached under key1 */
	struct weir_capa_key *k1 = atomic_load(&oss.o_capa_key);
	oss_capa_set_key(&oss, key1, WEIR_CAPA_KEY_LEN, 1); /* the same key: no change */
	CU_ASSERT_PTR_EQUAL(atomic_load(&oss.o_capa_key), k1);
	oss_capa_set_key(&oss, key2, WEIR_CAPA_KEY_LEN, 1);
	CU_ASSERT_PTR_NOT_EQUAL(atomic_load(&oss.o_capa_key), k1);
	CU_ASSERT_EQUAL(check(&old, &fid, WEIR_CAPA_READ), -EACCES);
	CU_ASSERT_EQUAL(check(&fresh, &fid, WEIR_CAPA_READ), 0);
	/* and back (an MDS on the first MDT again) */
	oss_capa_set_key(&oss, key1, WEIR_CAPA_KEY_LEN, 1);
	CU_ASSERT_EQUAL(check(&fresh, &fid, WEIR_CAPA_READ), -EACCES);
	CU_ASSERT_EQUAL(check(&old, &fid, WEIR_CAPA_READ), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_capa_check_no_key_yet_eagain),
		TH_TEST(test_capa_check_insecure_checks_nothing),
		TH_TEST(test_capa_check_refusals),
		TH_TEST(test_capa_check_cache_hit_needs_every_field),
		TH_TEST(test_capa_check_new_key_same_generation_voids_cache),
		TH_TEST_END,
	};
	return th_cunit_run("oss_capa", suite_init, suite_clean, tests);
}
