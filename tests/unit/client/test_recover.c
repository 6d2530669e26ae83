/*
 * tests/unit/client/test_recover.c - the replay identity of MDS requests
 * (client/recover.c): a request that holds a reply-cache slot takes its xid
 * once it has the slot, so the xids sent on one slot only grow and the MDS
 * can refuse a late copy of a request the client gave up on
 * (mds/reply.c; tests/unit/mds/test_reply.c checks that side).
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "harness.h"

struct slot_waiter {
	struct weir_fs *sw_fs;
	struct weir_xid_hdr sw_x;
};

static void *slot_waiter_main(void *arg)
{
	struct slot_waiter *sw = arg;
	wc_xid_new(sw->sw_fs, true, &sw->sw_x); /* waits: every slot is busy */
	return NULL;
}

static void test_xid_new_slot_waiter_xid_newer_than_any_before_its_slot(void)
{
	struct weir_fs *fs = calloc(1, sizeof(*fs));
	CU_ASSERT_FATAL(fs != NULL);
	CU_ASSERT_EQUAL_FATAL(wc_recover_init(fs, 0, 0), 0);
	struct weir_xid_hdr held[WEIR_XID_MAX_SLOTS];
	for (unsigned i = 0; i < WEIR_XID_MAX_SLOTS; i++) {
		wc_xid_new(fs, true, &held[i]);
		CU_ASSERT_EQUAL(held[i].xh_tag, i);
	}
	struct slot_waiter sw = { .sw_fs = fs };
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, slot_waiter_main, &sw), 0);
	struct timespec ts = { 0, 200 * 1000000L };
	nanosleep(&ts, NULL); /* it waits for a slot */
	/* an id handed out meanwhile: what the slot's next holder could use
	 * while the waiter still waits, had the waiter its xid already */
	struct weir_xid_hdr mid;
	wc_xid_new(fs, false, &mid);
	CU_ASSERT_EQUAL(mid.xh_tag, WEIR_XID_NO_TAG);
	wc_xid_put(fs, &held[17]);
	CU_ASSERT_EQUAL(held[17].xh_tag, WEIR_XID_NO_TAG);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	CU_ASSERT_EQUAL(sw.sw_x.xh_tag, 17);
	CU_ASSERT(sw.sw_x.xh_xid > mid.xh_xid);
	CU_ASSERT(sw.sw_x.xh_xid > held[17].xh_xid);
	CU_ASSERT_EQUAL(memcmp(sw.sw_x.xh_uuid, fs->fs_uuid, sizeof(fs->fs_uuid)), 0);

	/* one slot used again and again: its xids grow */
	wc_xid_put(fs, &sw.sw_x);
	uint64_t last = mid.xh_xid;
	for (int i = 0; i < 4; i++) {
		struct weir_xid_hdr x;
		wc_xid_new(fs, true, &x);
		CU_ASSERT_EQUAL(x.xh_tag, 17);
		CU_ASSERT(x.xh_xid > last);
		last = x.xh_xid;
		wc_xid_put(fs, &x);
	}
	for (unsigned i = 0; i < WEIR_XID_MAX_SLOTS; i++)
		wc_xid_put(fs, &held[i]);
	wc_recover_fini(fs);
	free(fs);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_xid_new_slot_waiter_xid_newer_than_any_before_its_slot),
		TH_TEST_END,
	};
	return th_cunit_run("client_recover", NULL, NULL, tests);
}
