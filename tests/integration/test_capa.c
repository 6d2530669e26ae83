/*
 * tests/integration/test_capa.c - OST capabilities (mds/capa.c, oss/capa.c,
 * client/capa.c) against a real cluster, played as an insider would: a
 * process that holds the cluster key and talks to an OSS directly.
 *
 *   - raw OST_READ, OST_WRITE, OST_TRUNCATE, OST_DESTROY without a
 *     capability, with one for another file, with too few rights, with a
 *     forged MAC and with an expired one: -EACCES, and the file is intact;
 *   - MDS_CAPA_RENEW never grants CR_DESTROY and grants READ only to who may
 *     read the file; a capability it grants works for what it allows;
 *   - a file held open and used across several capability lifetimes
 *     (--capa-timeout 3s) keeps working: libweir renews unseen;
 *   - after an MDS restart the capabilities clients hold still work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/capa.h"
#include "common/util.h"
#include "harness.h"
#include "net/net.h"
#include "th_weir.h"
#include "weir.pb-c.h"

#define LEN (256 * 1024)

static struct th_cluster *cl;
static weir_fs_t *fs;
static uint8_t data[LEN];

static int suite_init(void)
{
	static const char *const mds_args[] = { "--capa-timeout", "3s", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1,
				     .tco_mds_args = mds_args };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	th_fill_pattern(data, LEN, 5);
	if (th_put(fs, "/a", data, LEN) || th_put(fs, "/b", data, LEN))
		return -1;
	return weir_chmod(fs, "/a", 0600);
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

struct obj {
	weir_fid_t fid;
	uint32_t ost;
};

static struct obj obj_of(const char *path)
{
	struct obj o = { 0 };
	struct weir_layout_info li;
	CU_ASSERT_EQUAL_FATAL(weir_path2fid(fs, path, &o.fid), 0);
	CU_ASSERT_EQUAL_FATAL(weir_getstripe(fs, path, &li), 0);
	o.ost = li.wli_objs[0].woi_ost;
	return o;
}

/* An MDS_CAPA_RENEW as uid \a uid; \return its status, the capability in \a out. */
static int renew(const struct obj *o, uint32_t uid, uint32_t rights, Weir__CapaRep **out)
{
	struct net_conn *c;
	int rc = net_conn_open(th_cluster_mds_addr(cl), 2000, &c);
	if (rc)
		return rc;
	Weir__Cred cred = WEIR__CRED__INIT;
	cred.uid = cred.gid = uid;
	Weir__Fid f = WEIR__FID__INIT;
	f.seq = o->fid.seq;
	f.oid = o->fid.oid;
	Weir__CapaReq req = WEIR__CAPA_REQ__INIT;
	req.cred = &cred;
	req.fid = &f;
	req.rights = rights;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base);
	rc = net_call_run(c, &call);
	*out = rc ? NULL : net_call_unpack(&call, &weir__capa_rep__descriptor);
	if (!rc && !*out)
		rc = -EPROTO;
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

/* One raw object request to the OSS: \a op on \a o (stripe 0) with \a capa (NULL: none). */
static int raw(uint16_t op, const struct obj *o, Weir__Capa *capa)
{
	struct net_conn *c;
	int rc = net_conn_open(th_server_addr(cl, 0), 2000, &c);
	if (rc)
		return rc;
	Weir__Fid f = WEIR__FID__INIT;
	f.seq = o->fid.seq;
	f.oid = o->fid.oid;
	static uint8_t buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct net_call call;
	Weir__ObjIoReq io = WEIR__OBJ_IO_REQ__INIT;
	Weir__ObjReq ob = WEIR__OBJ_REQ__INIT;
	Weir__ObjTruncReq tr = WEIR__OBJ_TRUNC_REQ__INIT;
	io.ost = ob.ost = tr.ost = o->ost;
	io.fid = ob.fid = tr.fid = &f;
	io.capa = ob.capa = tr.capa = capa;
	io.len = sizeof(buf);
	if (op == WEIR__WIRE_OP__OST_READ || op == WEIR__WIRE_OP__OST_WRITE) {
		net_call_init(&call, op, &io.base);
		if (op == WEIR__WIRE_OP__OST_WRITE) {
			memset(buf, 0xee, sizeof(buf));
			call.nc_req_bulk = &iov;
			call.nc_req_nr_bulk = 1;
		} else {
			call.nc_rep_bulk = &iov;
			call.nc_rep_nr_bulk = 1;
		}
	} else if (op == WEIR__WIRE_OP__OST_TRUNCATE) {
		net_call_init(&call, op, &tr.base);
	} else {
		net_call_init(&call, op, &ob.base);
	}
	rc = net_call_run(c, &call);
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

static bool intact(const char *path)
{
	static uint8_t back[LEN];
	return th_get(fs, path, back, LEN) == LEN && !memcmp(back, data, LEN);
}

static void test_capa_raw_object_ops_without_capability_refused(void)
{
	struct obj a = obj_of("/a");
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_GETATTR, &a, NULL), -EACCES);
	CU_ASSERT(intact("/a"));
}

static void test_capa_wrong_file_rights_mac_refused(void)
{
	struct obj a = obj_of("/a"), b = obj_of("/b");
	Weir__CapaRep *rb = NULL, *ra = NULL;
	CU_ASSERT_EQUAL_FATAL(renew(&b, 0, WEIR_CAPA_READ | WEIR_CAPA_WRITE, &rb), 0);
	/* b's capability on a */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, rb->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, rb->capa), -EACCES);
	/* a's, read only: no write, no truncate, no destroy */
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_READ, &ra), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, ra->capa), -EACCES);
	/* rights raised by hand, or a flipped MAC bit: the MAC no longer verifies */
	ra->capa->rights |= WEIR_CAPA_WRITE | WEIR_CAPA_DESTROY;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, ra->capa), -EACCES);
	ra->capa->rights = WEIR_CAPA_READ;
	ra->capa->mac.data[3] ^= 1;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), -EACCES);
	ra->capa->mac.data[3] ^= 1;
	ra->capa->expiry_s += 3600; /* a longer life than signed */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), -EACCES);
	weir__capa_rep__free_unpacked(ra, NULL);
	weir__capa_rep__free_unpacked(rb, NULL);
	CU_ASSERT(intact("/a"));
	CU_ASSERT(intact("/b"));
}

static void test_capa_renew_never_destroy_and_checks_permissions(void)
{
	struct obj a = obj_of("/a");
	Weir__CapaRep *r = NULL;
	CU_ASSERT_EQUAL(renew(&a, 0, WEIR_CAPA_DESTROY, &r), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_DESTROY | WEIR_CAPA_READ, &r), 0);
	CU_ASSERT_EQUAL(r->capa->rights, WEIR_CAPA_READ);
	weir__capa_rep__free_unpacked(r, NULL);
	/* /a is root's, mode 0600: uid 1000 may stat it (GETATTR), not read or write it */
	CU_ASSERT_EQUAL(renew(&a, 1000, WEIR_CAPA_READ, &r), -EACCES);
	CU_ASSERT_EQUAL(renew(&a, 1000, WEIR_CAPA_WRITE, &r), -EACCES);
	CU_ASSERT_EQUAL_FATAL(renew(&a, 1000, WEIR_CAPA_GETATTR, &r), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_GETATTR, &a, r->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
}

static void test_capa_expired_refused(void)
{
	struct obj a = obj_of("/a");
	Weir__CapaRep *r = NULL;
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_READ, &r), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), 0);
	th_sleep_ms(4200); /* --capa-timeout 3s */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
}

/* An open file used across three capability lifetimes: every call succeeds. */
static void test_capa_renewed_unseen_while_open(void)
{
	weir_file_t *fh;
	static uint8_t buf[65536], back[65536];
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/renew", O_CREAT | O_RDWR, 0644, &fh), 0);
	uint64_t t0 = th_now_ms();
	int n = 0, bad = 0;
	while (th_now_ms() - t0 < 9000) {
		th_fill_pattern(buf, sizeof(buf), (uint64_t)n);
		if (weir_pwrite(fh, buf, sizeof(buf), (uint64_t)n * sizeof(buf)) != sizeof(buf))
			bad++;
		if (weir_pread(fh, back, sizeof(back), (uint64_t)n * sizeof(buf)) != sizeof(back) ||
		    memcmp(buf, back, sizeof(buf)))
			bad++;
		n++;
		th_sleep_ms(200);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(n > 20);
	CU_ASSERT_EQUAL(weir_fsync(fh), 0);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 1000), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

/* The capability key lives in the MDT: after an MDS restart, what clients hold still works. */
static void test_capa_survive_mds_restart(void)
{
	weir_file_t *fh;
	static uint8_t back[LEN];
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/b", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, back, LEN, 0), LEN);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 20000), 0);
	memset(back, 0, LEN);
	CU_ASSERT_EQUAL(weir_pread(fh, back, LEN, 0), LEN);
	CU_ASSERT_EQUAL(memcmp(back, data, LEN), 0);
	weir_close(fh);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_capa_raw_object_ops_without_capability_refused),
		TH_TEST(test_capa_wrong_file_rights_mac_refused),
		TH_TEST(test_capa_renew_never_destroy_and_checks_permissions),
		TH_TEST(test_capa_expired_refused),
		TH_TEST(test_capa_renewed_unseen_while_open),
		TH_TEST(test_capa_survive_mds_restart),
		TH_TEST_END,
	};
	return th_cunit_run("capa", suite_init, suite_clean, tests);
}
