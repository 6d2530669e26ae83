/*
 * tests/unit/mds/test_capa.c - mds/capa.c on a real MDT (RocksDB in a
 * temporary directory): the capability key is made once and kept in the MDT
 * (the same key and generation after the MDT is reopened), a key record of
 * another version refuses the start and a malformed one is replaced; the
 * signed capability (its MAC verifies, its expiry rounded up to 64 s for
 * long lifetimes and exact for short ones); an --insecure MDS signs nothing;
 * the rights of an open never include CR_DESTROY, for every flag mix.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "ns_fixture.h"

#include "common/capa.h"
#include "common/key.h"
#include "common/log.h"
#include "mds/mds_int.h"
#include "net/auth.h"

static struct net_auth *auth;

static int suite_init(void)
{
	char path[300], why[200];
	static struct weir_keyring kr;

	weir_log_set_level(WEIR_LOG_LVL_ERROR);
	if (fx_init())
		return -1;
	snprintf(path, sizeof(path), "%s/cluster.key", fx_dir);
	if (weir_key_generate("test", &kr.kr_keys[0]))
		return -1;
	kr.kr_nr = 1;
	if (weir_keyring_save(path, &kr, true) ||
	    net_auth_new(path, false, &auth, why, sizeof(why)))
		return -1;
	net_auth_set_default(auth); /* not --insecure: capabilities on */
	return 0;
}

static int suite_clean(void)
{
	net_auth_set_default(NULL);
	net_auth_free(auth);
	return fx_fini();
}

static struct mds *mds_new(uint32_t ttl_s)
{
	struct mds *m = calloc(1, sizeof(*m));
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	m->m_ns = ns;
	m->m_conf.mc_capa_timeout_s = ttl_s;
	return m;
}

static void test_capa_key_made_once_and_kept_in_the_mdt(void)
{
	struct mds *a = mds_new(3600), *b = mds_new(3600), *c = mds_new(3600);
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(a), 0);
	CU_ASSERT(a->m_capa_on);
	CU_ASSERT_EQUAL(a->m_capa_key.ck_gen, 1);
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(b), 0); /* a restart */
	CU_ASSERT_EQUAL(b->m_capa_key.ck_gen, 1);
	CU_ASSERT_EQUAL(memcmp(a->m_capa_key.ck_key, b->m_capa_key.ck_key, WEIR_CAPA_KEY_LEN), 0);
	fx_reopen(); /* RocksDB closed and opened again */
	c->m_ns = ns;
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(c), 0);
	CU_ASSERT_EQUAL(memcmp(a->m_capa_key.ck_key, c->m_capa_key.ck_key, WEIR_CAPA_KEY_LEN), 0);
	static const uint8_t zero[WEIR_CAPA_KEY_LEN];
	CU_ASSERT_NOT_EQUAL(memcmp(a->m_capa_key.ck_key, zero, sizeof(zero)), 0);
	free(a);
	free(b);
	free(c);
}

static void test_capa_key_record_of_another_version_refused_malformed_replaced(void)
{
	struct mds *a = mds_new(3600), *b = mds_new(3600), *c = mds_new(3600);
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(a), 0);
	uint8_t rec[37] = { 2 };
	CU_ASSERT_EQUAL_FATAL(mds_ns_cluster_put(ns, "capakey", 7, rec, sizeof(rec)), 0);
	CU_ASSERT_EQUAL(mds_capa_init(b), -EIO);
	CU_ASSERT_EQUAL_FATAL(mds_ns_cluster_put(ns, "capakey", 7, rec, 10), 0);
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(c), 0); /* a new key, stored */
	CU_ASSERT_NOT_EQUAL(memcmp(a->m_capa_key.ck_key, c->m_capa_key.ck_key, WEIR_CAPA_KEY_LEN), 0);
	uint8_t v[64];
	size_t vl = 0;
	CU_ASSERT_EQUAL(mds_ns_cluster_get(ns, "capakey", 7, v, sizeof(v), &vl), 0);
	CU_ASSERT_EQUAL(vl, 37);
	CU_ASSERT_EQUAL(v[0], 1);
	CU_ASSERT_EQUAL(memcmp(v + 5, c->m_capa_key.ck_key, WEIR_CAPA_KEY_LEN), 0);
	free(a);
	free(b);
	free(c);
}

static void test_capa_sign_mac_verifies_and_expiry(void)
{
	struct mds *m = mds_new(3600);
	struct mds_capa_msg cm;
	uint8_t mac[WEIR_CAPA_MAC_LEN];
	struct weir_fid fid = { 0x200000400ULL, 99 };
	CU_ASSERT_EQUAL_FATAL(mds_capa_init(m), 0);
	int64_t now = (int64_t)time(NULL);
	CU_ASSERT_FATAL(mds_capa_sign(m, &fid, WEIR_CAPA_READ | WEIR_CAPA_GETATTR, &cm));
	CU_ASSERT_PTR_NOT_NULL_FATAL(cm.cm_capa.fid);
	CU_ASSERT_EQUAL(cm.cm_capa.fid->seq, fid.fid_seq);
	CU_ASSERT_EQUAL(cm.cm_capa.fid->oid, fid.fid_oid);
	CU_ASSERT_EQUAL(cm.cm_capa.rights, WEIR_CAPA_READ | WEIR_CAPA_GETATTR);
	CU_ASSERT_EQUAL(cm.cm_capa.key_gen, m->m_capa_key.ck_gen);
	CU_ASSERT_EQUAL(cm.cm_capa.expiry_s % 64, 0);
	CU_ASSERT(cm.cm_capa.expiry_s >= now + 3600 && cm.cm_capa.expiry_s < now + 3600 + 64 + 2);
	CU_ASSERT_EQUAL_FATAL(cm.cm_capa.mac.len, WEIR_CAPA_MAC_LEN);
	weir_capa_mac(&m->m_capa_key, &fid, cm.cm_capa.rights, cm.cm_capa.expiry_s, mac);
	CU_ASSERT_EQUAL(memcmp(mac, cm.cm_capa.mac.data, WEIR_CAPA_MAC_LEN), 0);
	/* a short lifetime is exact (no rounding) */
	m->m_conf.mc_capa_timeout_s = 2;
	/* bracketed by two clock reads, a second of slack each side (the
	 * signer's clock may be read a tick apart from time(2) under load) */
	now = (int64_t)time(NULL);
	CU_ASSERT_FATAL(mds_capa_sign(m, &fid, WEIR_CAPA_READ, &cm));
	int64_t after = (int64_t)time(NULL);
	CU_ASSERT(cm.cm_capa.expiry_s >= now + 1 && cm.cm_capa.expiry_s <= after + 3);
	free(m);
}

static void test_capa_insecure_mds_signs_nothing(void)
{
	struct mds *m = mds_new(3600);
	struct mds_capa_msg cm;
	struct weir_fid fid = { 0x200000400ULL, 1 };
	net_auth_set_default(NULL);
	CU_ASSERT_EQUAL(mds_capa_init(m), 0);
	net_auth_set_default(auth);
	CU_ASSERT_FALSE(m->m_capa_on);
	CU_ASSERT_FALSE(mds_capa_sign(m, &fid, WEIR_CAPA_READ, &cm));
	free(m);
}

static void test_capa_rights_of_open_never_destroy(void)
{
	for (uint32_t of = 0; of < 0x400; of++) {
		uint32_t r = mds_capa_rights_of_open(of);
		CU_ASSERT_EQUAL(r & ~WEIR_CAPA_CLIENT_RIGHTS, 0);
		CU_ASSERT(r & WEIR_CAPA_GETATTR);
		CU_ASSERT_EQUAL(!!(r & WEIR_CAPA_READ), !!(of & (MDS_OF_READ | MDS_OF_EXEC)));
		CU_ASSERT_EQUAL(!!(r & WEIR_CAPA_WRITE), !!(of & MDS_OF_WRITE));
		CU_ASSERT_EQUAL(!!(r & WEIR_CAPA_PUNCH), !!(of & (MDS_OF_WRITE | MDS_OF_TRUNC)));
	}
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_capa_key_made_once_and_kept_in_the_mdt),
		TH_TEST(test_capa_key_record_of_another_version_refused_malformed_replaced),
		TH_TEST(test_capa_sign_mac_verifies_and_expiry),
		TH_TEST(test_capa_insecure_mds_signs_nothing),
		TH_TEST(test_capa_rights_of_open_never_destroy),
		TH_TEST_END,
	};
	return th_cunit_run("mds_capa", suite_init, suite_clean, tests);
}
