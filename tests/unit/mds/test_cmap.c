/*
 * tests/unit/mds/test_cmap.c - the cluster map's registration rules
 * (mds/cmap.c, "bound OSTs"), on a real in-process MDS over a real RocksDB
 * MDT, with raw MDS_OSS_REGISTER calls as an attacker would make them: a
 * registration without a secret or with a wrong one is refused (-EACCES)
 * and leaves no entry; a refused registration of several OSTs changes
 * nothing, not even for the OSTs of it that were fine; a live OST is not
 * moved to another address (-EBUSY) until it has been silent past the OST
 * timeout (failover); a record from before secrets (version 1) is bound to
 * the first secret shown (trust on first use), durably; malformed records
 * are skipped. A create parked after a restart keeps its replay prefix.
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/le.h"
#include "harness.h"
#include "mds/mds.h"
#include "net/net.h"
#include "weir.pb-c.h"

static char dir[64], mdt[96];
static struct mds *m;
static struct net_conn *conn;

static const uint8_t SECRET_A[32] = { 0xa1, 0xa2, 0xa3 };
static const uint8_t SECRET_B[32] = { 0xb1, 0xb2, 0xb3 };

/* A fresh temporary directory for each test's MDT. */
static void mdt_new(void)
{
	snprintf(dir, sizeof(dir), "/tmp/weir-test-cmap-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
}

static void mds_up(uint32_t ost_timeout_s)
{
	struct mds_conf mc = { .mc_mdt_dir = mdt, .mc_listen = "127.0.0.1:0",
			       .mc_ost_timeout_s = ost_timeout_s };
	CU_ASSERT_FATAL(mds_start(&mc, &m) == 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", mds_port(m));
	CU_ASSERT_FATAL(net_conn_open(addr, 3000, &conn) == 0);
}

static void mds_down(void)
{
	net_conn_close(conn);
	conn = NULL;
	mds_stop(m);
	m = NULL;
}

static void mdt_remove(void)
{
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
}

/* One OST of a registration. */
struct ost {
	const char *uuid;
	const uint8_t *secret; /* 32 bytes, or NULL: none sent */
	size_t secret_len;     /* 0: 32 */
	int32_t index;
};

/*
 * MDS_OSS_REGISTER of \a n OSTs from \a addr. \return the MDS's status;
 * \a idx (may be NULL) gets the indexes it answered.
 */
static int reg(const char *addr, const struct ost *osts, size_t n, uint32_t *idx)
{
	Weir__OstReg r[4], *rp[4];
	CU_ASSERT_FATAL(n <= 4);
	for (size_t i = 0; i < n; i++) {
		weir__ost_reg__init(&r[i]);
		rp[i] = &r[i];
		r[i].uuid = (char *)osts[i].uuid;
		r[i].index = osts[i].index;
		r[i].total_bytes = r[i].free_bytes = r[i].avail_bytes = 1ULL << 30;
		if (osts[i].secret) {
			r[i].secret.data = (uint8_t *)osts[i].secret;
			r[i].secret.len = osts[i].secret_len ? osts[i].secret_len : 32;
		}
	}
	Weir__OssRegisterReq req = WEIR__OSS_REGISTER_REQ__INIT;
	req.oss_addr = (char *)addr;
	req.n_osts = n;
	req.osts = rp;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_OSS_REGISTER, &req.base);
	call.nc_timeout_ms = 10000;
	int rc = net_call_run(conn, &call);
	if (!rc && idx) {
		Weir__OssRegisterRep *rep =
			net_call_unpack(&call, &weir__oss_register_rep__descriptor);
		CU_ASSERT_FATAL(rep != NULL);
		CU_ASSERT_EQUAL(rep->n_indexes, n);
		for (size_t i = 0; i < n && i < rep->n_indexes; i++)
			idx[i] = rep->indexes[i];
		weir__oss_register_rep__free_unpacked(rep, NULL);
	}
	net_call_fini(&call);
	return rc;
}

/* A first registration (index assigned) then the one that makes the OST up. \return its index. */
static uint32_t reg_up(const char *uuid, const uint8_t *secret, const char *addr)
{
	struct ost o = { uuid, secret, 0, -1 };
	uint32_t idx = 9999;
	CU_ASSERT_EQUAL_FATAL(reg(addr, &o, 1, &idx), 0);
	o.index = (int32_t)idx;
	CU_ASSERT_EQUAL_FATAL(reg(addr, &o, 1, NULL), 0);
	return idx;
}

/* The cluster map: number of OSTs; the address and state of \a uuid when listed. */
static int map_get(const char *uuid, char *addr, size_t len, bool *up)
{
	struct net_call call;
	int n = -1;
	if (addr)
		addr[0] = '\0';
	if (up)
		*up = false;
	net_call_init(&call, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, NULL);
	if (!net_call_run(conn, &call)) {
		Weir__ClusterMap *cm = net_call_unpack(&call, &weir__cluster_map__descriptor);
		if (cm) {
			n = (int)cm->n_osts;
			for (size_t i = 0; i < cm->n_osts; i++) {
				if (!uuid || strcmp(cm->osts[i]->uuid, uuid))
					continue;
				if (addr)
					snprintf(addr, len, "%s", cm->osts[i]->oss_addr);
				if (up)
					*up = cm->osts[i]->state == WEIR__TARGET_STATE__TS_UP;
			}
			weir__cluster_map__free_unpacked(cm, NULL);
		}
	}
	net_call_fini(&call);
	return n;
}

/* The targets MDS_STATFS (weir df) lists: the MDT and the OSTs. */
static int df_targets(void)
{
	struct net_call call;
	int n = -1;
	Weir__Empty e = WEIR__EMPTY__INIT;
	net_call_init(&call, WEIR__WIRE_OP__MDS_STATFS, &e.base);
	if (!net_call_run(conn, &call)) {
		Weir__StatfsRep *rep = net_call_unpack(&call, &weir__statfs_rep__descriptor);
		if (rep) {
			n = (int)rep->n_targets;
			weir__statfs_rep__free_unpacked(rep, NULL);
		}
	}
	net_call_fini(&call);
	return n;
}

static void test_cmap_register_without_secret_refused_no_entry(void)
{
	mdt_new();
	mds_up(0);
	struct ost none = { "0123456789abcdef0123456789abcdef", NULL, 0, -1 };
	struct ost short_one = { "0123456789abcdef0123456789abcdef", SECRET_A, 16, -1 };
	struct ost at_index = { "0123456789abcdef0123456789abcdef", NULL, 0, 3 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:9", &none, 1, NULL), -EACCES);
	CU_ASSERT_EQUAL(reg("127.0.0.1:9", &short_one, 1, NULL), -EACCES);
	CU_ASSERT_EQUAL(reg("127.0.0.1:9", &at_index, 1, NULL), -EACCES);
	CU_ASSERT_EQUAL(map_get(NULL, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(df_targets(), 1); /* the MDT only */
	mds_down();
	/* nothing persisted either */
	mds_up(0);
	CU_ASSERT_EQUAL(map_get(NULL, NULL, 0, NULL), 0);
	mds_down();
	mdt_remove();
}

static void test_cmap_refused_registration_changes_nothing(void)
{
	char a[64];
	bool up;
	mdt_new();
	mds_up(0);
	uint32_t i0 = reg_up("ost-a", SECRET_A, "127.0.0.1:1001");
	CU_ASSERT_EQUAL(i0, 0);
	/* a new OST and a hijack in one registration: the new one is not made either */
	struct ost pair[2] = { { "ost-new", SECRET_B, 0, -1 }, { "ost-a", SECRET_B, 0, 0 } };
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", pair, 2, NULL), -EACCES);
	pair[1].secret = NULL;
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", pair, 2, NULL), -EACCES);
	/* the right secret from elsewhere while alive: nothing moves, nothing is made */
	pair[1].secret = SECRET_A;
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", pair, 2, NULL), -EBUSY);
	/* the same uuid twice in one registration */
	struct ost twice[2] = { { "ost-new", SECRET_B, 0, -1 }, { "ost-new", SECRET_B, 0, -1 } };
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", twice, 2, NULL), -EINVAL);
	CU_ASSERT_EQUAL(map_get("ost-a", a, sizeof(a), &up), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:1001");
	CU_ASSERT_TRUE(up);
	CU_ASSERT_EQUAL(map_get("ost-new", a, sizeof(a), NULL), 1);
	CU_ASSERT_STRING_EQUAL(a, ""); /* not listed */
	CU_ASSERT_EQUAL(df_targets(), 2);
	/* two new OSTs in one registration get two indexes */
	struct ost two[2] = { { "ost-b", SECRET_B, 0, -1 }, { "ost-c", SECRET_B, 0, -1 } };
	uint32_t idx[2] = { 0, 0 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:3003", two, 2, idx), 0);
	CU_ASSERT_EQUAL(idx[0], 1);
	CU_ASSERT_EQUAL(idx[1], 2);
	/* a new OST may not adopt the index of a known one */
	struct ost squat = { "ost-d", SECRET_B, 0, 0 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:4004", &squat, 1, NULL), -EEXIST);
	CU_ASSERT_EQUAL(map_get(NULL, NULL, 0, NULL), 3);
	mds_down();
	mdt_remove();
}

static void test_cmap_live_ost_busy_elsewhere_then_failover(void)
{
	char a[64];
	bool up;
	mdt_new();
	mds_up(2); /* --ost-timeout 2 */
	uint32_t i0 = reg_up("ost-a", SECRET_A, "127.0.0.1:1001");
	struct ost o = { "ost-a", SECRET_A, 0, (int32_t)i0 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", &o, 1, NULL), -EBUSY);
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), 0); /* the heartbeat goes on */
	CU_ASSERT_EQUAL(map_get("ost-a", a, sizeof(a), &up), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:1001");
	CU_ASSERT_TRUE(up);
	th_sleep_ms(2300); /* silent past the OST timeout: a failover is accepted */
	CU_ASSERT_EQUAL(map_get("ost-a", a, sizeof(a), &up), 1);
	CU_ASSERT_FALSE(up);
	struct ost wrong = { "ost-a", SECRET_B, 0, (int32_t)i0 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", &wrong, 1, NULL), -EACCES); /* still bound */
	CU_ASSERT_EQUAL(reg("127.0.0.1:2002", &o, 1, NULL), 0);
	CU_ASSERT_EQUAL(map_get("ost-a", a, sizeof(a), &up), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:2002");
	CU_ASSERT_TRUE(up);
	/* and now the old address is the one refused */
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), -EBUSY);
	mds_down();
	/* the new address is durable; after a restart nobody is alive: the secret decides */
	mds_up(2);
	CU_ASSERT_EQUAL(map_get("ost-a", a, sizeof(a), &up), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:2002");
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &wrong, 1, NULL), -EACCES);
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), 0);
	mds_down();
	mdt_remove();
}

/* Put one raw record in the cluster column family of the MDT (the MDS not running). */
static void record_put(uint32_t idx, const void *val, size_t len)
{
	struct mds_ns_conf c = { .nc_path = mdt };
	struct mds_ns *ns;
	uint8_t key[7] = { 'o', 's', 't' };
	weir_put_be32(key + 3, idx);
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	CU_ASSERT_EQUAL(mds_ns_cluster_put(ns, key, sizeof(key), val, len), 0);
	mds_ns_close(ns);
}

/* The version byte and length of record \a idx. */
static int record_version(uint32_t idx, size_t *len)
{
	struct mds_ns_conf c = { .nc_path = mdt };
	struct mds_ns *ns;
	uint8_t key[7] = { 'o', 's', 't' }, val[600];
	weir_put_be32(key + 3, idx);
	CU_ASSERT_FATAL(mds_ns_open(&c, &ns) == 0);
	int rc = mds_ns_cluster_get(ns, key, sizeof(key), val, sizeof(val), len);
	mds_ns_close(ns);
	return rc ? rc : val[0];
}

static void test_cmap_v1_record_bound_on_first_use(void)
{
	char a[64];
	bool up;
	static const char v1[] = "\001ost-old\000127.0.0.1:1001"; /* + its NUL */
	mdt_new();
	record_put(5, v1, sizeof(v1));
	mds_up(0);
	CU_ASSERT_EQUAL(map_get("ost-old", a, sizeof(a), &up), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:1001");
	CU_ASSERT_FALSE(up);
	struct ost o = { "ost-old", NULL, 0, 5 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), -EACCES); /* an old OSS */
	o.secret = SECRET_A;
	uint32_t idx = 0;
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, &idx), 0); /* trust on first use */
	CU_ASSERT_EQUAL(idx, 5);
	o.secret = SECRET_B;
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), -EACCES);
	mds_down();
	size_t len = 0;
	CU_ASSERT_EQUAL(record_version(5, &len), 2);
	CU_ASSERT_EQUAL(len, sizeof(v1) + 32);
	mds_up(0);
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), -EACCES); /* bound durably */
	o.secret = SECRET_A;
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), 0);
	CU_ASSERT_EQUAL(map_get("ost-old", a, sizeof(a), &up), 1);
	CU_ASSERT_TRUE(up);
	mds_down();
	mdt_remove();
}

static void test_cmap_malformed_records_skipped(void)
{
	static const char no_digest[] = "\002ost-x\000127.0.0.1:1001";
	static const char version9[] = "\011ost-y\000127.0.0.1:1001";
	static const char no_nul[] = "\001ost-z";
	static const char good_head[] = "\002ost-ok\000127.0.0.1:1001"; /* + its NUL */
	uint8_t good[sizeof(good_head) + 32];
	memcpy(good, good_head, sizeof(good_head));
	memset(good + sizeof(good_head), 0x5a, 32);
	mdt_new();
	record_put(0, no_digest, sizeof(no_digest));
	record_put(1, version9, sizeof(version9));
	record_put(2, no_nul, sizeof(no_nul) - 1);
	record_put(3, good, sizeof(good));
	mds_up(0);
	char a[64];
	CU_ASSERT_EQUAL(map_get("ost-ok", a, sizeof(a), NULL), 1);
	CU_ASSERT_STRING_EQUAL(a, "127.0.0.1:1001");
	/* a digest nobody knows the secret of: refused */
	struct ost o = { "ost-ok", SECRET_A, 0, 3 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), -EACCES);
	mds_down();
	mdt_remove();
}

/* An open that creates /\a name (O_CREAT|O_EXCL) with replay prefix \a x on its own connection. */
struct create_call {
	const struct weir_xid_hdr *cc_x;
	const char *cc_name;
	int cc_rc;
	bool cc_created;
};

static void *create_main(void *arg)
{
	struct create_call *cc = arg;
	char addr[32], path[64];
	struct net_conn *c;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", mds_port(m));
	snprintf(path, sizeof(path), "/%s", cc->cc_name);
	cc->cc_rc = net_conn_open(addr, 3000, &c);
	if (cc->cc_rc)
		return NULL;
	Weir__Cred cred = WEIR__CRED__INIT;
	Weir__OpenReq req = WEIR__OPEN_REQ__INIT;
	req.cred = &cred;
	req.path = path;
	req.flags = WEIR__OPEN_FLAG__OF_READ | WEIR__OPEN_FLAG__OF_WRITE |
		    WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_EXCL;
	req.mode = 0644;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_OPEN, &req.base);
	call.nc_xid = cc->cc_x;
	call.nc_timeout_ms = 20000;
	cc->cc_rc = net_call_run(c, &call);
	if (!cc->cc_rc) {
		Weir__OpenRep *rep = net_call_unpack(&call, &weir__open_rep__descriptor);
		cc->cc_created = rep && rep->created;
		if (rep)
			weir__open_rep__free_unpacked(rep, NULL);
	}
	net_call_fini(&call);
	net_conn_close(c);
	return NULL;
}

static int create_xid(const char *name, const struct weir_xid_hdr *x, bool *created)
{
	struct create_call cc = { x, name, -1, false };
	create_main(&cc);
	*created = cc.cc_created;
	return cc.cc_rc;
}

/*
 * A create parked after a restart (the OSTs of the map not back yet) and
 * run again once they register keeps its replay prefix: its reply-cache
 * record is written, so the client's resend of it (same xid, after its
 * connection broke) is answered 0, not -EEXIST. Failed before the fix (the
 * rerun had lost the prefix).
 */
static void test_cmap_parked_create_keeps_its_xid(void)
{
	mdt_new();
	mds_up(10);
	uint32_t i0 = reg_up("ost-a", SECRET_A, "127.0.0.1:1001");
	mds_down();
	mds_up(10); /* OST0000 is known and not back: creates park */
	struct weir_xid_hdr x;
	memset(&x, 0, sizeof(x));
	memset(x.xh_uuid, 0xd4, sizeof(x.xh_uuid));
	x.xh_xid = 300;
	x.xh_tag = 5;
	struct create_call cc = { &x, "f", -1, false };
	pthread_t th;
	CU_ASSERT_FATAL(pthread_create(&th, NULL, create_main, &cc) == 0);
	th_sleep_ms(500); /* parked by now: no OST to choose */
	struct ost o = { "ost-a", SECRET_A, 0, (int32_t)i0 };
	CU_ASSERT_EQUAL(reg("127.0.0.1:1001", &o, 1, NULL), 0); /* back: the create runs */
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(cc.cc_rc, 0);
	CU_ASSERT_TRUE(cc.cc_created);
	bool created = true;
	CU_ASSERT_EQUAL(create_xid("f", &x, &created), 0); /* the resend: answered */
	CU_ASSERT_FALSE(created);
	x.xh_xid = 301; /* a new request in the same slot: done again */
	CU_ASSERT_EQUAL(create_xid("f", &x, &created), -EEXIST);
	mds_down();
	mdt_remove();
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_cmap_register_without_secret_refused_no_entry),
		TH_TEST(test_cmap_refused_registration_changes_nothing),
		TH_TEST(test_cmap_live_ost_busy_elsewhere_then_failover),
		TH_TEST(test_cmap_v1_record_bound_on_first_use),
		TH_TEST(test_cmap_malformed_records_skipped),
		TH_TEST(test_cmap_parked_create_keeps_its_xid),
		TH_TEST_END,
	};
	return th_cunit_run("mds_cmap", NULL, NULL, tests);
}
