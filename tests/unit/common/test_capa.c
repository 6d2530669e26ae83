/*
 * tests/unit/common/test_capa.c - common/capa.c: the MAC of an OST
 * capability against a known answer (the byte layout docs/wire-format.md
 * gives, computed independently with Python's hmac), and the per-thread
 * keyed HMAC context: keys that alternate on one thread, and many threads
 * with their own keys at once, each get the MAC of their key.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/capa.h"
#include "common/key.h"
#include "harness.h"

static const struct weir_fid fid = { 0x200000400ULL, 0x1234 };

static void key_make(struct weir_capa_key *k, uint8_t first, uint32_t gen)
{
	uint8_t b[WEIR_CAPA_KEY_LEN];
	for (int i = 0; i < WEIR_CAPA_KEY_LEN; i++)
		b[i] = (uint8_t)(first + i);
	weir_capa_key_init(k, b, gen);
}

/* HMAC-SHA256 over the documented layout, by the one-shot helper of common/key.c. */
static void mac_ref(const struct weir_capa_key *k, const struct weir_fid *f, uint32_t rights,
		    int64_t expiry_s, uint8_t *out)
{
	uint8_t b[44];
	memcpy(b, "weir-capa-v1", 12);
	for (int i = 0; i < 8; i++) {
		b[12 + i] = (uint8_t)(f->fid_seq >> (8 * i));
		b[20 + i] = (uint8_t)(f->fid_oid >> (8 * i));
		b[32 + i] = (uint8_t)((uint64_t)expiry_s >> (8 * i));
	}
	for (int i = 0; i < 4; i++) {
		b[28 + i] = (uint8_t)(rights >> (8 * i));
		b[40 + i] = (uint8_t)(k->ck_gen >> (8 * i));
	}
	struct iovec iov = { b, sizeof(b) };
	weir_hmac_sha256(k->ck_key, WEIR_CAPA_KEY_LEN, &iov, 1, out);
}

static void test_capa_mac_known_answer(void)
{
	static const uint8_t want[WEIR_CAPA_MAC_LEN] = {
		0xb5, 0xfd, 0xa9, 0x55, 0x82, 0xd6, 0x52, 0xfa, 0x43, 0x32, 0xcc,
		0x7c, 0x54, 0xc9, 0x5e, 0xe4, 0xf6, 0x1b, 0x72, 0x51, 0xa1, 0x40,
		0x26, 0x34, 0x34, 0x97, 0x51, 0x54, 0xa7, 0x4e, 0xd2, 0xd2,
	};
	struct weir_capa_key k;
	uint8_t mac[WEIR_CAPA_MAC_LEN], ref[WEIR_CAPA_MAC_LEN];
	key_make(&k, 0, 7);
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ | WEIR_CAPA_WRITE, 1700000000, mac);
	CU_ASSERT_EQUAL(memcmp(mac, want, sizeof(want)), 0);
	mac_ref(&k, &fid, WEIR_CAPA_READ | WEIR_CAPA_WRITE, 1700000000, ref);
	CU_ASSERT_EQUAL(memcmp(ref, want, sizeof(want)), 0);
	/* the same again on the now keyed context */
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ | WEIR_CAPA_WRITE, 1700000000, mac);
	CU_ASSERT_EQUAL(memcmp(mac, want, sizeof(want)), 0);
}

static void test_capa_mac_every_field_changes_it(void)
{
	struct weir_capa_key k, k2, k3;
	uint8_t base[WEIR_CAPA_MAC_LEN], m[WEIR_CAPA_MAC_LEN];
	struct weir_fid f2 = { fid.fid_seq, fid.fid_oid + 1 }, f3 = { fid.fid_seq + 1, fid.fid_oid };
	key_make(&k, 0, 7);
	key_make(&k2, 0, 8);  /* same bytes, another generation */
	key_make(&k3, 1, 7);  /* other bytes */
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ, 1700000000, base);
	weir_capa_mac(&k, &f2, WEIR_CAPA_READ, 1700000000, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k, &f3, WEIR_CAPA_READ, 1700000000, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ | WEIR_CAPA_DESTROY, 1700000000, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ, 1700000001, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k2, &fid, WEIR_CAPA_READ, 1700000000, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k3, &fid, WEIR_CAPA_READ, 1700000000, m);
	CU_ASSERT_NOT_EQUAL(memcmp(m, base, sizeof(m)), 0);
	weir_capa_mac(&k, &fid, WEIR_CAPA_READ, 1700000000, m); /* back to k */
	CU_ASSERT_EQUAL(memcmp(m, base, sizeof(m)), 0);
}

static void test_capa_key_ids_are_unique(void)
{
	struct weir_capa_key a, b;
	key_make(&a, 0, 1);
	key_make(&b, 0, 1); /* the same bytes made again: another key object */
	CU_ASSERT_NOT_EQUAL(a.ck_id, 0);
	CU_ASSERT_NOT_EQUAL(a.ck_id, b.ck_id);
	weir_capa_key_wipe(&a);
	for (int i = 0; i < WEIR_CAPA_KEY_LEN; i++)
		CU_ASSERT_EQUAL(a.ck_key[i], 0);
	weir_capa_key_wipe(NULL);
}

/* Threads, each with its own key, alternating with a shared one. */
static struct weir_capa_key shared_key;
static void *thread_main(void *arg)
{
	uintptr_t n = (uintptr_t)arg;
	struct weir_capa_key own;
	uint8_t m[WEIR_CAPA_MAC_LEN], r[WEIR_CAPA_MAC_LEN];
	int bad = 0;
	key_make(&own, (uint8_t)(n * 32), (uint32_t)n);
	for (int i = 0; i < 2000; i++) {
		const struct weir_capa_key *k = (i % 3) ? &own : &shared_key;
		struct weir_fid f = { fid.fid_seq, (uint64_t)i };
		weir_capa_mac(k, &f, (uint32_t)i & 0xf, 1700000000 + i, m);
		mac_ref(k, &f, (uint32_t)i & 0xf, 1700000000 + i, r);
		bad += memcmp(m, r, sizeof(m)) != 0;
	}
	return (void *)(uintptr_t)bad;
}

static void test_capa_mac_threads_with_their_own_keys(void)
{
	pthread_t th[8];
	key_make(&shared_key, 99, 3);
	for (uintptr_t i = 0; i < 8; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, thread_main, (void *)i), 0);
	for (int i = 0; i < 8; i++) {
		void *bad = NULL;
		pthread_join(th[i], &bad);
		CU_ASSERT_EQUAL((uintptr_t)bad, 0);
	}
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_capa_mac_known_answer),
		TH_TEST(test_capa_mac_every_field_changes_it),
		TH_TEST(test_capa_key_ids_are_unique),
		TH_TEST(test_capa_mac_threads_with_their_own_keys),
		TH_TEST_END,
	};
	return th_cunit_run("capa", NULL, NULL, tests);
}
