/*
 * tests/unit/mds/test_mdlease.c - the metadata lease manager (mds/mdlease.c)
 * in-process: grants, a change calling back other sessions' leases and
 * waiting for their acknowledgements, grants refused while a change is in
 * progress, the changer's own leases, bits that do not meet, session drop
 * (eviction) completing waits, the per-session cap calling back the least
 * recently granted lease, late sessions, a change given up, grants of
 * what was read before a change refused, and the counters adding up.
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mds/mdlease.h"

static const struct weir_fid D1 = { 0x200000400ULL, 1 }; /* a directory */
static const struct weir_fid F1 = { 0x200000400ULL, 2 };
static const struct weir_fid F2 = { 0x200000400ULL, 3 };
static const struct weir_fid F3 = { 0x200000400ULL, 4 };
#define S1 0x1001ULL
#define S2 0x1002ULL
#define S3 0x1003ULL

static struct mds_mdl *m;
#define G UINT64_MAX /* grants of state read after every change */
static uint64_t notified[16];
static size_t nr_notified;

static void on_notify(void *arg, uint64_t session)
{
	(void)arg;
	if (nr_notified < 16)
		notified[nr_notified] = session;
	nr_notified++;
}

struct done {
	int d_calls;
	int d_rc;
};

static void on_done(void *arg, int rc)
{
	struct done *d = arg;
	d->d_calls++;
	d->d_rc = rc;
}

static void fresh(uint32_t max)
{
	struct mdl_conf c = { .mc_max_per_session = max, .mc_notify = on_notify };
	mdl_free(m);
	m = NULL;
	CU_ASSERT_FATAL(mdl_new(&c, &m) == 0);
	CU_ASSERT_FATAL(mdl_session_open(m, S1) == 0);
	CU_ASSERT_FATAL(mdl_session_open(m, S2) == 0);
	CU_ASSERT_FATAL(mdl_session_open(m, S3) == 0);
	nr_notified = 0;
}

static int setup(void)
{
	return 0;
}

static int teardown(void)
{
	mdl_free(m);
	m = NULL;
	return 0;
}

static struct mdl_target tg(const struct weir_fid *f, uint32_t bits)
{
	struct mdl_target t = { *f, bits };
	return t;
}

static void test_mdlease_change_calls_back_holders_and_waits_for_acks(void)
{
	fresh(0);
	CU_ASSERT_EQUAL(mdl_session_open(m, S1), -EEXIST);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP | MDL_ATTR, G), MDL_LOOKUP | MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S2, &D1, MDL_LOOKUP, G), MDL_LOOKUP);
	CU_ASSERT_EQUAL(mdl_grant(m, 0x9999, &D1, MDL_LOOKUP, G), 0); /* unknown session */
	CU_ASSERT_EQUAL(mdl_held(m, S1, &D1), MDL_LOOKUP | MDL_ATTR);

	/* S3 creates a name in D1: both holders are called back */
	struct done d = { 0 };
	struct mdl_change *c = NULL;
	struct mdl_target t = tg(&D1, MDL_LOOKUP | MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_change_begin(m, S3, &t, 1, on_done, &d, &c), -EINPROGRESS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(nr_notified, 2);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &D1), 0); /* revoking: not held any more */

	struct mdl_callback cb1[4], cb2[4];
	CU_ASSERT(mdl_session_has_callbacks(m, S1));
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb1, 4), 1);
	CU_ASSERT(mdl_session_has_callbacks(m, S1)); /* delivered, not acknowledged */
	/* not acknowledged: delivered again (an answer lost with a connection) */
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb1 + 1, 3), 1);
	CU_ASSERT_EQUAL(cb1[1].cb_cookie, cb1[0].cb_cookie);
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S2, cb2, 4), 1);
	CU_ASSERT(cb1[0].cb_fid.fid_oid == D1.fid_oid && cb1[0].cb_bits == (MDL_LOOKUP | MDL_ATTR));
	CU_ASSERT_EQUAL(cb2[0].cb_bits, MDL_LOOKUP);
	CU_ASSERT(cb1[0].cb_cookie != cb2[0].cb_cookie);

	/* while it is in progress nobody is granted those bits there; other FIDs are fine */
	CU_ASSERT_EQUAL(mdl_grant(m, S3, &D1, MDL_LOOKUP, G), 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_ATTR, G), 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S3, &D1, MDL_LAYOUT, G), MDL_LAYOUT);
	CU_ASSERT_EQUAL(mdl_grant(m, S3, &F1, MDL_ATTR, G), MDL_ATTR);

	/* acks: a wrong session's or cookie's is refused; the last completes the change */
	CU_ASSERT_EQUAL(mdl_ack(m, S2, cb1[0].cb_cookie), -ENOENT);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb1[0].cb_cookie), 0);
	CU_ASSERT_EQUAL(d.d_calls, 0);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb1[0].cb_cookie), -ENOENT); /* twice */
	CU_ASSERT_EQUAL(mdl_ack(m, S2, cb2[0].cb_cookie), 0);
	CU_ASSERT_EQUAL(d.d_calls, 1);
	CU_ASSERT_EQUAL(d.d_rc, 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP, G), 0); /* still until the end */
	mdl_change_end(m, c);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP, G), MDL_LOOKUP);
	CU_ASSERT_EQUAL(d.d_calls, 1);

	struct mdl_stats st;
	mdl_stats(m, &st);
	CU_ASSERT_EQUAL(st.ms_callbacks, 2);
	CU_ASSERT_EQUAL(st.ms_acks, 2);
	CU_ASSERT_EQUAL(st.ms_revoking, 0);
	CU_ASSERT_EQUAL(st.ms_changes_waited, 1);
	CU_ASSERT_EQUAL(st.ms_refused, 3);
	/* S3: D1 (LAYOUT), F1; S1: D1 */
	CU_ASSERT_EQUAL(st.ms_leases, 3);
}

static void test_mdlease_own_session_and_other_bits_do_not_wait(void)
{
	fresh(0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S2, &F1, MDL_LAYOUT, G), MDL_LAYOUT);
	struct done d = { 0 };
	struct mdl_change *c = NULL;
	/* S1 changes F1's attributes: its own lease is not called back, S2's layout does not meet */
	struct mdl_target t = tg(&F1, MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_change_begin(m, S1, &t, 1, on_done, &d, &c), 0);
	CU_ASSERT_EQUAL(nr_notified, 0);
	CU_ASSERT_EQUAL(mdl_held(m, S2, &F1), MDL_LAYOUT);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F1), MDL_ATTR);
	mdl_change_end(m, c);
	CU_ASSERT_EQUAL(d.d_calls, 0);
	/* a change of the MDS itself (session 0) calls back everyone meeting it */
	t = tg(&F1, MDL_ALL);
	CU_ASSERT_EQUAL(mdl_change_begin(m, 0, &t, 1, on_done, &d, &c), -EINPROGRESS);
	CU_ASSERT_EQUAL(nr_notified, 2);
	mdl_change_end(m, c); /* given up: its callback is never called */
	struct mdl_callback cb[2];
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb, 2), 1);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb[0].cb_cookie), 0);
	CU_ASSERT_EQUAL(d.d_calls, 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, G), MDL_ATTR);
	/* bad calls */
	CU_ASSERT_EQUAL(mdl_change_begin(m, S1, &t, 0, on_done, &d, &c), -EINVAL);
	CU_ASSERT_EQUAL(mdl_change_begin(m, S1, &t, 17, on_done, &d, &c), -EINVAL);
	CU_ASSERT_EQUAL(mdl_change_begin(m, S1, &t, 1, NULL, &d, &c), -EINVAL);
}

static void test_mdlease_session_drop_completes_waits(void)
{
	fresh(0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP, G), MDL_LOOKUP);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S2, &F1, MDL_ATTR, G), MDL_ATTR);
	/* a rename-like change: two targets, two holders; S2 answers, S1 never does */
	struct mdl_target t[2] = { tg(&D1, MDL_LOOKUP), tg(&F1, MDL_ATTR) };
	struct done d = { 0 };
	struct mdl_change *c = NULL;
	CU_ASSERT_EQUAL(mdl_change_begin(m, S3, t, 2, on_done, &d, &c), -EINPROGRESS);
	struct mdl_callback cb[4];
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S2, cb, 4), 1);
	CU_ASSERT_EQUAL(mdl_ack(m, S2, cb[0].cb_cookie), 0);
	CU_ASSERT_EQUAL(d.d_calls, 0);
	/* late: S1's callbacks, past the timeout (S2 is not late any more) */
	uint64_t late[4];
	CU_ASSERT_EQUAL(mdl_late_sessions(m, mdl_now_ns(), 60ULL * 1000000000ULL, late, 4), 0);
	CU_ASSERT_EQUAL(mdl_late_sessions(m, mdl_now_ns() + 61ULL * 1000000000ULL,
					  60ULL * 1000000000ULL, late, 4), 1);
	CU_ASSERT_EQUAL(late[0], S1);
	/* evicted: its two leases go, the change goes on */
	CU_ASSERT_EQUAL(mdl_session_drop(m, S1), 2);
	CU_ASSERT_EQUAL(d.d_calls, 1);
	CU_ASSERT_EQUAL(d.d_rc, 0);
	CU_ASSERT_EQUAL(mdl_session_drop(m, S1), 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F2, MDL_ATTR, G), 0); /* gone */
	mdl_change_end(m, c);
	struct mdl_stats st;
	mdl_stats(m, &st);
	CU_ASSERT_EQUAL(st.ms_leases, 0);
	CU_ASSERT_EQUAL(st.ms_revoking, 0);
}

static void test_mdlease_cap_calls_back_least_recently_granted(void)
{
	fresh(2);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F2, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_LAYOUT, G), MDL_LAYOUT); /* F1 used again */
	CU_ASSERT_EQUAL(nr_notified, 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F3, MDL_ATTR, G), MDL_ATTR);	/* over: F2 goes */
	CU_ASSERT_EQUAL(nr_notified, 1);
	struct mdl_callback cb[4];
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb, 4), 1);
	CU_ASSERT_EQUAL(cb[0].cb_fid.fid_oid, F2.fid_oid);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F1), MDL_ATTR | MDL_LAYOUT);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F2), 0);
	/* F2 is being called back: not granted again until acknowledged */
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F2, MDL_ATTR, G), 0);
	/* the other session's cap is its own */
	CU_ASSERT_EQUAL(mdl_grant(m, S2, &F2, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb[0].cb_cookie), 0);
	struct mdl_stats st;
	mdl_stats(m, &st);
	CU_ASSERT_EQUAL(st.ms_lru_revokes, 1);
	CU_ASSERT_EQUAL(st.ms_leases, 3); /* S1: F1, F3; S2: F2 */
	/* a session all of whose leases are being called back gets nothing more */
	fresh(1);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, G), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F2, MDL_ATTR, G), MDL_ATTR); /* F1 called back */
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F3, MDL_ATTR, G), MDL_ATTR); /* F2 called back */
	mdl_stats(m, &st);
	CU_ASSERT_EQUAL(st.ms_leases, 3);
	CU_ASSERT_EQUAL(st.ms_revoking, 2);
	/* the held ones never exceed the cap */
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F1) | mdl_held(m, S1, &F2), 0);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F3), MDL_ATTR);
}

static void test_mdlease_two_changes_wait_on_one_lease(void)
{
	fresh(0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP | MDL_ATTR, G), MDL_LOOKUP | MDL_ATTR);
	struct mdl_target t1 = tg(&D1, MDL_LOOKUP), t2 = tg(&D1, MDL_ATTR);
	struct done d1 = { 0 }, d2 = { 0 };
	struct mdl_change *c1 = NULL, *c2 = NULL;
	CU_ASSERT_EQUAL(mdl_change_begin(m, S2, &t1, 1, on_done, &d1, &c1), -EINPROGRESS);
	/* the second finds the lease already called back: waits too, no second callback */
	CU_ASSERT_EQUAL(mdl_change_begin(m, S3, &t2, 1, on_done, &d2, &c2), -EINPROGRESS);
	struct mdl_callback cb[4];
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb, 4), 1);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb[0].cb_cookie), 0);
	CU_ASSERT_EQUAL(d1.d_calls, 1);
	CU_ASSERT_EQUAL(d2.d_calls, 1);
	mdl_change_end(m, c1);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_LOOKUP, G), MDL_LOOKUP);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_ATTR, G), 0); /* c2 still in progress */
	mdl_change_end(m, c2);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &D1, MDL_ATTR, G), MDL_ATTR);
	/* mdl_free tells a waiting change -ESHUTDOWN */
	struct done d3 = { 0 };
	struct mdl_change *c3 = NULL;
	CU_ASSERT_EQUAL(mdl_change_begin(m, S2, &t2, 1, on_done, &d3, &c3), -EINPROGRESS);
	mdl_free(m);
	m = NULL;
	CU_ASSERT_EQUAL(d3.d_calls, 1);
	CU_ASSERT_EQUAL(d3.d_rc, -ESHUTDOWN);
}

static void test_mdlease_read_before_a_change_is_not_granted(void)
{
	fresh(0);
	/* a lookup read F1 (gen g0), then a change of F1 began and ended, then the grant came */
	uint64_t g0 = mdl_gen(m);
	struct mdl_target t = tg(&F1, MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_invalidate(m, S2, &t, 1), 0);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, g0), 0);
	/* read after the change: granted; another FID read before it: granted */
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F1, MDL_ATTR, mdl_gen(m)), MDL_ATTR);
	CU_ASSERT_EQUAL(mdl_grant(m, S1, &F2, MDL_ATTR, g0), MDL_ATTR);
	/* mdl_invalidate calls back and does not wait */
	CU_ASSERT_EQUAL(mdl_invalidate(m, S2, &t, 1), 0);
	CU_ASSERT_EQUAL(mdl_held(m, S1, &F1), 0);
	struct mdl_callback cb[2];
	CU_ASSERT_EQUAL(mdl_session_callbacks(m, S1, cb, 2), 1);
	CU_ASSERT_EQUAL(mdl_ack(m, S1, cb[0].cb_cookie), 0);
	struct mdl_stats st;
	mdl_stats(m, &st);
	CU_ASSERT_EQUAL(st.ms_refused, 1);
	CU_ASSERT_EQUAL(st.ms_leases, 1); /* F2 */
}

static const struct th_test tests[] = {
	TH_TEST(test_mdlease_change_calls_back_holders_and_waits_for_acks),
	TH_TEST(test_mdlease_own_session_and_other_bits_do_not_wait),
	TH_TEST(test_mdlease_session_drop_completes_waits),
	TH_TEST(test_mdlease_cap_calls_back_least_recently_granted),
	TH_TEST(test_mdlease_two_changes_wait_on_one_lease),
	TH_TEST(test_mdlease_read_before_a_change_is_not_granted),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("mds_mdlease", setup, teardown, tests);
}
