/*
 * tests/unit/mds/test_reply.c - the MDS's reply cache (mds/reply.c) through
 * its wire: requests with a replay prefix (net/frame.h) sent to an MDS in
 * this process over loopback. A request resent with the same xid is
 * answered, not redone, also after the MDS restarted on its MDT; a new xid
 * in the same slot is done again; a bad prefix is -EPROTO; MDS_DISCONNECT
 * forgets the client's records; a late copy of a request the client gave
 * up on (an xid older than its slot's record) is refused, not done.
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mds/mds.h"
#include "net/net.h"
#include "weir.pb-c.h"

static char dir[64], mdt[96];
static struct mds *m;
static struct net_conn *conn;

static void mds_up(void)
{
	struct mds_conf mc = { .mc_mdt_dir = mdt, .mc_listen = "127.0.0.1:0" };
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

/* An MDS on a new MDT in a new temporary directory. */
static void mds_up_new_mdt(void)
{
	snprintf(dir, sizeof(dir), "/tmp/weir-test-reply-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	mds_up();
}

static void mds_down_rm_mdt(void)
{
	mds_down();
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
}

static void xid_init(struct weir_xid_hdr *x, uint8_t who, uint64_t xid, uint32_t tag)
{
	memset(x, 0, sizeof(*x));
	memset(x->xh_uuid, who, sizeof(x->xh_uuid));
	x->xh_xid = xid;
	x->xh_tag = tag;
}

/* MDS_MKDIR (\a unlink false) or MDS_UNLINK of directory /\a name as root. */
static int ns_call(bool unlink, const char *name, const struct weir_xid_hdr *x)
{
	Weir__Cred cred = WEIR__CRED__INIT;
	Weir__MkdirReq mk = WEIR__MKDIR_REQ__INIT;
	Weir__UnlinkReq ul = WEIR__UNLINK_REQ__INIT;
	struct net_call call;
	char path[64];
	snprintf(path, sizeof(path), "/%s", name);
	mk.cred = &cred;
	mk.path = path;
	mk.mode = 0755;
	ul.cred = &cred;
	ul.path = path;
	ul.is_dir = true;
	net_call_init(&call, unlink ? WEIR__WIRE_OP__MDS_UNLINK : WEIR__WIRE_OP__MDS_MKDIR,
		      unlink ? &ul.base : &mk.base);
	call.nc_xid = x;
	int rc = net_call_run(conn, &call);
	net_call_fini(&call);
	return rc;
}

static void test_reply_resent_same_xid_answered_new_xid_redone(void)
{
	struct weir_xid_hdr x;
	mds_up_new_mdt();

	xid_init(&x, 0xa1, 100, 3);
	CU_ASSERT_EQUAL(ns_call(false, "d", &x), 0);
	CU_ASSERT_EQUAL(ns_call(false, "d", &x), 0);       /* resent: not -EEXIST */
	x.xh_xid = 101;
	CU_ASSERT_EQUAL(ns_call(false, "d", &x), -EEXIST); /* a new request: done again */
	CU_ASSERT_EQUAL(ns_call(false, "d", NULL), -EEXIST);
	/* another client's slot 3 is its own */
	struct weir_xid_hdr y;
	xid_init(&y, 0xb2, 100, 3);
	CU_ASSERT_EQUAL(ns_call(false, "d", &y), -EEXIST);
	/* a request without a slot records nothing */
	xid_init(&y, 0xb2, 7, WEIR_XID_NO_TAG);
	CU_ASSERT_EQUAL(ns_call(false, "e", &y), 0);
	CU_ASSERT_EQUAL(ns_call(false, "e", &y), -EEXIST);

	/* an unlink, then the MDS restarts: the resend is still answered 0 */
	xid_init(&x, 0xa1, 102, 3);
	CU_ASSERT_EQUAL(ns_call(true, "d", &x), 0);
	mds_down();
	mds_up();
	CU_ASSERT_EQUAL(ns_call(true, "d", &x), 0);        /* not -ENOENT */
	x.xh_xid = 103;
	CU_ASSERT_EQUAL(ns_call(true, "d", &x), -ENOENT);

	/* a bad prefix: -EPROTO, the connection stays */
	xid_init(&x, 0xa1, 104, WEIR_XID_MAX_SLOTS);
	CU_ASSERT_EQUAL(ns_call(false, "f", &x), -EPROTO);
	CU_ASSERT_EQUAL(ns_call(false, "f", NULL), 0);

	/* MDS_DISCONNECT forgets the client's records: the same xid is new again */
	xid_init(&x, 0xc3, 200, 0);
	CU_ASSERT_EQUAL(ns_call(false, "g", &x), 0);
	Weir__LeaseReq lr = WEIR__LEASE_REQ__INIT;
	struct weir_xid_hdr dx;
	xid_init(&dx, 0xc3, 201, WEIR_XID_NO_TAG);
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_DISCONNECT, &lr.base);
	call.nc_xid = &dx;
	net_call_run(conn, &call); /* no such session: -ESTALE, the records go anyway */
	net_call_fini(&call);
	CU_ASSERT_EQUAL(ns_call(false, "g", &x), -EEXIST);

	mds_down_rm_mdt();
}

static void test_reply_older_xid_in_slot_refused_record_kept(void)
{
	struct weir_xid_hdr x, late;
	mds_up_new_mdt();

	/* xid 300 got slot 5 after the client gave up on xid 299 there */
	xid_init(&x, 0xd4, 300, 5);
	CU_ASSERT_EQUAL(ns_call(false, "h", &x), 0);
	/* 299's copy arrives late: not done, and 300's record stays */
	xid_init(&late, 0xd4, 299, 5);
	CU_ASSERT_EQUAL(ns_call(false, "i", &late), -ECANCELED);
	CU_ASSERT_EQUAL(ns_call(false, "i", NULL), 0); /* "i" was not made */
	CU_ASSERT_EQUAL(ns_call(false, "h", &x), 0);   /* 300 resent: still answered */
	/* the same after a restart (the record is on the MDT) */
	mds_down();
	mds_up();
	CU_ASSERT_EQUAL(ns_call(true, "i", &late), -ECANCELED);
	CU_ASSERT_EQUAL(ns_call(true, "i", NULL), 0); /* "i" was not unlinked */
	CU_ASSERT_EQUAL(ns_call(false, "h", &x), 0);
	/* a newer xid on the slot is a new request; another slot is its own */
	x.xh_xid = 301;
	CU_ASSERT_EQUAL(ns_call(false, "h", &x), -EEXIST);
	xid_init(&late, 0xd4, 299, 6);
	CU_ASSERT_EQUAL(ns_call(false, "j", &late), 0);

	mds_down_rm_mdt();
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_reply_resent_same_xid_answered_new_xid_redone),
		TH_TEST(test_reply_older_xid_in_slot_refused_record_kept),
		TH_TEST_END,
	};
	return th_cunit_run("mds_reply", NULL, NULL, tests);
}
