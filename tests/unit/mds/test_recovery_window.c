/*
 * tests/unit/mds/test_recovery_window.c - mds/recovery.c: MDS_REPLAY against
 * the end of the recovery window, on an MDS in this process (a real MDT in a
 * temporary directory) restarted with a client of its last run that holds an
 * open-unlinked file (an orphan).
 *
 * A replay that is under way when the window is due keeps the window open
 * until it is done (a test hook holds it between its check and its work):
 * its open keeps the orphan, and its lock, granted without a conflict check,
 * is never granted beside a conflicting lock another client took after the
 * window. A replay arriving after the window ended is refused -ESTALE and
 * grants nothing.
 *
 * With the same set-up, mds/lease.c: a pass of the lease thread slowed by
 * the window's end (which waits for a replay) is not taken for a stop of the
 * MDS, after which every lease would be renewed instead of ended.
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "harness.h"
#include "mds/lock.h"
#include "mds/mds.h"
#include "mds/mds_int.h"
#include "net/frame.h"
#include "net/net.h"
#include "weir.pb-c.h"

#define WINDOW_MS 200
#define LEASE_MS  10000 /* nobody's lease runs out during a test */
#define UUID_A	  0xa1
#define UUID_B	  0xb2

static char dir[64], mdt[96];
static struct mds *m;
static struct net_conn *ca, *cb; /* clients A (of the last run) and B (new) */
static uint64_t sa, sb;          /* their sessions */

static int choose_one(void *arg, struct weir_layout *lo, int32_t off)
{
	(void)arg;
	(void)off;
	lo->lo_stripe_count = 1;
	lo->lo_osts[0] = 0;
	return 0;
}

static void mds_up(uint32_t lease_ms)
{
	struct mds_conf mc = { .mc_mdt_dir = mdt, .mc_listen = "127.0.0.1:0",
			       .mc_lease_ms = lease_ms, .mc_recovery_window_ms = WINDOW_MS };
	CU_ASSERT_FATAL(mds_start(&mc, &m) == 0);
}

static void mds_down(void)
{
	mds_stop(m);
	m = NULL;
}

static struct net_conn *conn_new(void)
{
	char addr[32];
	struct net_conn *c = NULL;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", mds_port(m));
	CU_ASSERT_FATAL(net_conn_open(addr, 3000, &c) == 0);
	return c;
}

/* MDS_CONNECT as client \a who (its uuid is 16 x \a who). */
static int client_connect(struct net_conn *c, uint8_t who, uint64_t *session, bool *recovering)
{
	uint8_t uuid[MDS_CLIENT_UUID_LEN];
	memset(uuid, who, sizeof(uuid));
	Weir__ConnectReq req = WEIR__CONNECT_REQ__INIT;
	req.version = WEIR_FRAME_VERSION;
	req.client_name = who == UUID_A ? "a" : "b";
	req.client_uuid.data = uuid;
	req.client_uuid.len = sizeof(uuid);
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_CONNECT, &req.base);
	int rc = net_call_run(c, &call);
	Weir__ConnectRep *rep = rc ? NULL : net_call_unpack(&call, &weir__connect_rep__descriptor);
	if (!rc && !rep)
		rc = -EPROTO;
	if (rep) {
		*session = rep->session;
		*recovering = rep->recovering;
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	net_call_fini(&call);
	return rc;
}

/*
 * A fresh MDT whose last run had client A, with \a orphan open and
 * unlinked; the MDS restarted on it, in its window, with A connected again
 * (told to replay) and a new client B.
 */
static void mdt_up_clients_connected(struct weir_fid *orphan, uint32_t lease_ms)
{
	uint64_t session;
	bool recovering, created;
	struct mds_inode in;
	snprintf(dir, sizeof(dir), "/tmp/weir-test-rvwin-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	mds_up(lease_ms);
	CU_ASSERT_FALSE(mds_recovery_active(m)); /* a new MDT: nobody to wait for */
	struct net_conn *c = conn_new();
	CU_ASSERT_EQUAL_FATAL(client_connect(c, UUID_A, &session, &recovering), 0);
	CU_ASSERT_FALSE(recovering);
	CU_ASSERT_EQUAL_FATAL(mds_ns_open_file(m->m_ns, NULL, NULL, "/f",
					       MDS_OF_CREAT | MDS_OF_WRITE, 0644, NULL,
					       choose_one, NULL, &in, &created), 0);
	CU_ASSERT_EQUAL_FATAL(mds_ns_unlink(m->m_ns, NULL, NULL, "/f", false), 0);
	*orphan = in.in_fid;
	net_conn_close(c);
	mds_down(); /* as a crash: A's record and the orphan stay on the MDT */
	mds_up(lease_ms);
	CU_ASSERT_FATAL(mds_recovery_active(m));
	CU_ASSERT_EQUAL(mds_ns_getattr(m->m_ns, orphan, &in), 0);
	ca = conn_new();
	cb = conn_new();
	CU_ASSERT_EQUAL_FATAL(client_connect(ca, UUID_A, &sa, &recovering), 0);
	CU_ASSERT_TRUE(recovering);
	CU_ASSERT_EQUAL_FATAL(client_connect(cb, UUID_B, &sb, &recovering), 0);
	CU_ASSERT_FALSE(recovering); /* a new client: nothing to replay */
}

static void mdt_remove(void)
{
	net_conn_close(ca);
	net_conn_close(cb);
	ca = cb = NULL;
	mds_down();
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
}

/* MDS_REPLAY: an open of \a open_fid (if not NULL), a POSIX write lock on all of \a lock_fid. */
static int replay_send(struct net_conn *c, uint64_t session, const struct weir_fid *open_fid,
		       const struct weir_fid *lock_fid)
{
	Weir__Fid of = WEIR__FID__INIT, lf = WEIR__FID__INIT;
	Weir__ReplayOpen ro = WEIR__REPLAY_OPEN__INIT;
	Weir__ReplayLock rl = WEIR__REPLAY_LOCK__INIT;
	Weir__ReplayOpen *opens[1] = { &ro };
	Weir__ReplayLock *locks[1] = { &rl };
	Weir__ReplayReq req = WEIR__REPLAY_REQ__INIT;
	req.session = session;
	req.done = true;
	if (open_fid) {
		of.seq = open_fid->fid_seq;
		of.oid = open_fid->fid_oid;
		ro.fid = &of;
		ro.handle = 77;
		ro.flags = MDS_OF_READ | MDS_OF_WRITE;
		req.opens = opens;
		req.n_opens = 1;
	}
	lf.seq = lock_fid->fid_seq;
	lf.oid = lock_fid->fid_oid;
	rl.fid = &lf;
	rl.lock_class = MDS_LC_POSIX;
	rl.type = MDS_LT_WRLCK;
	rl.pid = 100;
	req.locks = locks;
	req.n_locks = 1;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_REPLAY, &req.base);
	int rc = net_call_run(c, &call);
	net_call_fini(&call);
	return rc;
}

/* A POSIX write lock on all of \a fid for \a session, not waiting. */
static int lock_take(uint64_t session, const struct weir_fid *fid)
{
	struct mds_lock_req q;
	memset(&q, 0, sizeof(q));
	q.lq_fid = *fid;
	q.lq_session = session;
	q.lq_class = MDS_LC_POSIX;
	q.lq_type = MDS_LT_WRLCK;
	q.lq_owner = 200;
	q.lq_pid = 200;
	q.lq_start = 0;
	q.lq_end = MDS_LOCK_EOF;
	return mds_lock_set(m->m_locks, &q, NULL, NULL);
}

/* Wait up to \a ms for the window to close. \return whether it did. */
static bool window_wait_closed(unsigned ms)
{
	uint64_t end = th_now_ms() + ms;
	while (mds_recovery_active(m)) {
		if (th_now_ms() >= end)
			return false;
		th_sleep_ms(10);
	}
	return true;
}

/* ---- the hook: holds a replay between its window check and its work */

static pthread_mutex_t hk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hk_cond = PTHREAD_COND_INITIALIZER;
static bool hk_entered, hk_release;

static void hk_hold(struct mds *mm)
{
	(void)mm;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10; /* never forever, whatever the test does */
	pthread_mutex_lock(&hk_lock);
	hk_entered = true;
	pthread_cond_broadcast(&hk_cond);
	while (!hk_release)
		if (pthread_cond_timedwait(&hk_cond, &hk_lock, &ts))
			break;
	pthread_mutex_unlock(&hk_lock);
}

static bool hk_wait_entered(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&hk_lock);
	while (!hk_entered)
		if (pthread_cond_timedwait(&hk_cond, &hk_lock, &ts))
			break;
	bool in = hk_entered;
	pthread_mutex_unlock(&hk_lock);
	return in;
}

static void hk_let_go(void)
{
	pthread_mutex_lock(&hk_lock);
	hk_release = true;
	pthread_cond_broadcast(&hk_cond);
	pthread_mutex_unlock(&hk_lock);
}

/* A's replay of an open and a lock of one file, sent from a thread and held in the hook */
static struct weir_fid held_fid;
static int held_rc;
static pthread_t held_thread;

static void *held_main(void *arg)
{
	(void)arg;
	held_rc = replay_send(ca, sa, &held_fid, &held_fid);
	return NULL;
}

static void replay_held_start(const struct weir_fid *fid)
{
	hk_entered = hk_release = false;
	mds_recovery_replay_hook = hk_hold;
	held_fid = *fid;
	held_rc = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&held_thread, NULL, held_main, NULL), 0);
	CU_ASSERT_FATAL(hk_wait_entered(5000));
}

/* Let the held replay go on. \return its rc. */
static int replay_held_finish(void)
{
	hk_let_go();
	pthread_join(held_thread, NULL);
	mds_recovery_replay_hook = NULL;
	return held_rc;
}

static void test_recovery_replay_racing_window_end_keeps_orphan_and_lock(void)
{
	struct weir_fid fid, other;
	struct mds_inode in;
	mdt_up_clients_connected(&fid, LEASE_MS);

	/* A's replay stops after its window check, past the window's deadline */
	replay_held_start(&fid);
	bool closed_early = window_wait_closed(WINDOW_MS + 2000); /* the lease thread ticks each 1 s */
	int rc_b = closed_early ? lock_take(sb, &fid) : 1; /* B, as soon as the window is over */
	int rc_a = replay_held_finish();

	CU_ASSERT_FALSE(closed_early); /* the window waited for the replay under way */
	CU_ASSERT_EQUAL(rc_a, 0);
	CU_ASSERT_FATAL(window_wait_closed(3000)); /* A is done: the window ends */
	if (!closed_early)
		rc_b = lock_take(sb, &fid);
	CU_ASSERT_EQUAL(rc_b, -EAGAIN); /* A's replayed lock is held: B's conflicts */
	/* the replayed open holds the orphan: it was not destroyed at the window's end */
	CU_ASSERT_EQUAL(mds_ns_getattr(m->m_ns, &fid, &in), 0);

	/* A, done and in good standing, replays again after the window: refused */
	other = fid;
	other.fid_oid++;
	CU_ASSERT_EQUAL(replay_send(ca, sa, NULL, &other), -ESTALE);
	CU_ASSERT_EQUAL(lock_take(sb, &other), 0); /* nothing was granted to A */

	mdt_remove();
}

static void test_recovery_replay_after_window_end_refused(void)
{
	struct weir_fid fid;
	struct mds_inode in;
	mdt_up_clients_connected(&fid, LEASE_MS);
	CU_ASSERT_FATAL(window_wait_closed(WINDOW_MS + 3000)); /* A did not replay in time */
	CU_ASSERT_EQUAL(replay_send(ca, sa, &fid, &fid), -ESTALE);
	CU_ASSERT_EQUAL(lock_take(sb, &fid), 0); /* A's late lock was not granted */
	/* no open was replayed in the window: the orphan is gone (the destroy
	 * thread removes it once kicked at the window's end: waited for, up
	 * to 10 s, as it is slow under the sanitizers) */
	int rc = 0;
	for (int i = 0; i < 200 && (rc = mds_ns_getattr(m->m_ns, &fid, &in)) == 0; i++)
		th_sleep_ms(50);
	CU_ASSERT_EQUAL(rc, -ENOENT);
	mdt_remove();
}

/*
 * mds/lease.c: a slow pass of the lease thread is not a stop of the MDS.
 * Here the pass waits in the window's end for a replay held 2 s (with a 2 s
 * lease, the stall threshold is 1 s): the next pass must not renew every
 * lease as after a SIGSTOP, so B, which never renews, is evicted on time.
 */
static void test_lease_slow_pass_not_taken_for_a_stop(void)
{
	struct weir_fid fid;
	mdt_up_clients_connected(&fid, 2000);
	replay_held_start(&fid);
	th_sleep_ms(2000); /* the lease thread's pass waits to end the window */
	CU_ASSERT_EQUAL(replay_held_finish(), 0);
	CU_ASSERT(window_wait_closed(1000));
	/* B's lease ended ~2 s after its connect: evicted by now, not renewed for 2 s more */
	th_sleep_ms(1200);
	CU_ASSERT_FALSE(mds_session_alive(m, sb));
	mdt_remove();
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_recovery_replay_racing_window_end_keeps_orphan_and_lock),
		TH_TEST(test_recovery_replay_after_window_end_refused),
		TH_TEST(test_lease_slow_pass_not_taken_for_a_stop),
		TH_TEST_END,
	};
	weir_log_set_level(WEIR_LOG_LVL_WARN);
	return th_cunit_run("mds_recovery_window", NULL, NULL, tests);
}
