/*
 * tests/unit/mds/test_lock.c - the MDS lock manager (mds/lock.c) in-process:
 * ranges split and merged per owner, upgrade and downgrade, the conflict
 * rules of each class, queued requests granted in order, EDEADLK across
 * files, session drop (eviction) freeing locks and waking waiters, close
 * rules, retried tokens, cancelled waits, poll expiry, and the replay
 * (recovery) that grants an owner's lock without a conflict check.
 */
#define _GNU_SOURCE
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "harness.h"
#include "mds/lock.h"

#define EOF_ MDS_LOCK_EOF

static struct mds_lockmgr *lm;
static const struct weir_fid F1 = { 0x200000400ULL, 1 };
static const struct weir_fid F2 = { 0x200000400ULL, 2 };
static const struct weir_fid F3 = { 0x200000400ULL, 3 };
#define S1 0x1001ULL
#define S2 0x1002ULL
#define S3 0x1003ULL

static int setup(void)
{
	if (mds_lockmgr_new(&lm))
		return -1;
	if (mds_lock_session_open(lm, S1) || mds_lock_session_open(lm, S2) ||
	    mds_lock_session_open(lm, S3))
		return -1;
	return 0;
}

/* A fresh manager for each test. */
static void reset(void)
{
	mds_lockmgr_free(lm);
	lm = NULL;
	CU_ASSERT_FATAL(setup() == 0);
}

static int teardown(void)
{
	mds_lockmgr_free(lm);
	return 0;
}

static struct mds_lock_req rq(const struct weir_fid *fid, uint64_t sess, uint8_t cls,
			      uint64_t owner, uint8_t type, uint64_t start, uint64_t end)
{
	struct mds_lock_req q;
	memset(&q, 0, sizeof(q));
	q.lq_fid = *fid;
	q.lq_session = sess;
	q.lq_class = cls;
	q.lq_owner = owner;
	q.lq_pid = (int32_t)owner;
	q.lq_type = type;
	q.lq_start = start;
	q.lq_end = end;
	return q;
}

/* POSIX lock by (session, pid), no wait. */
static int px(const struct weir_fid *fid, uint64_t sess, uint64_t pid, uint8_t type, uint64_t start,
	      uint64_t end)
{
	struct mds_lock_req q = rq(fid, sess, MDS_LC_POSIX, pid, type, start, end);
	return mds_lock_set(lm, &q, NULL, NULL);
}

/* Records the answer of a parked request. */
struct rec {
	int r_calls;
	int r_rc;
	int r_order; /* global completion order */
};
static int rec_seq;

static void rec_cb(void *arg, int rc)
{
	struct rec *r = arg;
	r->r_calls++;
	r->r_rc = rc;
	r->r_order = ++rec_seq;
}

/* A waiting request with a recorder. */
static int wait_req(struct mds_lock_req q, uint64_t token, struct rec *r)
{
	memset(r, 0, sizeof(*r));
	q.lq_wait = true;
	q.lq_token = token;
	return mds_lock_set(lm, &q, rec_cb, r);
}

static size_t list(const struct weir_fid *fid, uint8_t cls, struct mds_lock_desc *d, size_t max)
{
	return mds_lock_list(lm, fid, cls, d, max);
}

static void test_lock_split_then_merge_same_owner(void)
{
	struct mds_lock_desc d[8];
	reset();
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_WRLCK, 0, 99), 0);
	/* unlock the middle: two pieces */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_UNLCK, 40, 59), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 2);
	CU_ASSERT(d[0].ld_start == 0 && d[0].ld_end == 39);
	CU_ASSERT(d[1].ld_start == 60 && d[1].ld_end == 99);
	/* fill the hole: merged back into one */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_WRLCK, 40, 59), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 1);
	CU_ASSERT(d[0].ld_start == 0 && d[0].ld_end == 99 && d[0].ld_type == MDS_LT_WRLCK);
	/* a read lock inside splits the write lock in three */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_RDLCK, 10, 19), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 3);
	CU_ASSERT(d[0].ld_start == 0 && d[0].ld_end == 9 && d[0].ld_type == MDS_LT_WRLCK);
	CU_ASSERT(d[1].ld_start == 10 && d[1].ld_end == 19 && d[1].ld_type == MDS_LT_RDLCK);
	CU_ASSERT(d[2].ld_start == 20 && d[2].ld_end == 99 && d[2].ld_type == MDS_LT_WRLCK);
	/* an adjacent read lock merges with the read piece, trims the write one */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_RDLCK, 20, 29), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 3);
	CU_ASSERT(d[1].ld_start == 10 && d[1].ld_end == 29 && d[1].ld_type == MDS_LT_RDLCK);
	CU_ASSERT(d[2].ld_start == 30 && d[2].ld_end == 99);
	/* to-EOF lock swallows the tail; unlock everything */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_WRLCK, 50, EOF_), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 3);
	CU_ASSERT(d[2].ld_start == 30 && d[2].ld_end == EOF_);
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_POSIX, d, 8), 0);
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 0);
	/* another owner's locks are never merged with ours */
	CU_ASSERT_EQUAL(px(&F1, S1, 7, MDS_LT_RDLCK, 0, 9), 0);
	CU_ASSERT_EQUAL(px(&F1, S1, 8, MDS_LT_RDLCK, 10, 19), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_POSIX, d, 8), 2);
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 2);
}

static void test_lock_upgrade_and_downgrade(void)
{
	reset();
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_RDLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_RDLCK, 0, EOF_), 0);
	/* upgrade blocked by the other reader */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, EOF_), -EAGAIN);
	/* only where the other reader is */
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_UNLCK, 100, EOF_), 0);
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 100, 199), 0);
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, 99), -EAGAIN);
	/* a waiting upgrade is granted when the reader leaves */
	static struct rec r;
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 99), 11, &r),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(r.r_calls, 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(r.r_calls, 1);
	CU_ASSERT_EQUAL(r.r_rc, 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_RDLCK, 50, 50), -EAGAIN);
	/* downgrade lets readers in */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_RDLCK, 0, 99), 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_RDLCK, 50, 50), 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_RDLCK, 150, 150), -EAGAIN); /* still W there */
}

static void test_lock_conflict_rules_and_test_reports_holder(void)
{
	struct mds_lock_desc d;
	bool found;
	reset();
	/* readers share, a writer excludes, one owner never conflicts with itself */
	CU_ASSERT_EQUAL(px(&F1, S1, 100, MDS_LT_RDLCK, 0, 9), 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 100, MDS_LT_RDLCK, 5, 14), 0); /* same pid, other session */
	CU_ASSERT_EQUAL(px(&F1, S2, 100, MDS_LT_WRLCK, 5, 14), -EAGAIN);
	CU_ASSERT_EQUAL(px(&F1, S1, 100, MDS_LT_WRLCK, 0, 4), 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 100, MDS_LT_WRLCK, 10, 14), 0);
	/* F_GETLK: the holder, its pid and range */
	struct mds_lock_req q = rq(&F1, S3, MDS_LC_POSIX, 300, MDS_LT_RDLCK, 0, 3);
	CU_ASSERT_EQUAL(mds_lock_test(lm, &q, &found, &d), 0);
	CU_ASSERT_FATAL(found);
	CU_ASSERT_EQUAL(d.ld_pid, 100);
	CU_ASSERT_EQUAL(d.ld_session, S1);
	CU_ASSERT(d.ld_start == 0 && d.ld_end == 4 && d.ld_type == MDS_LT_WRLCK);
	q = rq(&F1, S3, MDS_LC_POSIX, 300, MDS_LT_RDLCK, 100, EOF_);
	CU_ASSERT_EQUAL(mds_lock_test(lm, &q, &found, &d), 0);
	CU_ASSERT(!found);
	q = rq(&F1, S1, MDS_LC_POSIX, 100, MDS_LT_WRLCK, 0, 4); /* own lock: no conflict */
	CU_ASSERT_EQUAL(mds_lock_test(lm, &q, &found, &d), 0);
	CU_ASSERT(!found);
	/* OFD locks conflict with POSIX locks, and report pid -1 */
	q = rq(&F1, S1, MDS_LC_OFD, 55, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -EAGAIN); /* S1 pid 100 holds 0-4 */
	q = rq(&F1, S1, MDS_LC_OFD, 55, MDS_LT_WRLCK, 1000, 1999);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), 0);
	q = rq(&F1, S1, MDS_LC_POSIX, 100, MDS_LT_RDLCK, 1500, 1500);
	CU_ASSERT_EQUAL(mds_lock_test(lm, &q, &found, &d), 0);
	CU_ASSERT(found && d.ld_pid == -1 && d.ld_class == MDS_LC_OFD);
	/* flock is a space of its own */
	q = rq(&F1, S2, MDS_LC_FLOCK, 77, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), 0);
	q = rq(&F1, S3, MDS_LC_FLOCK, 78, MDS_LT_RDLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -EAGAIN);
	q = rq(&F1, S3, MDS_LC_POSIX, 78, MDS_LT_WRLCK, 5000, 5000);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), 0);
	/* bad requests */
	q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 10, 9);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -EINVAL);
	q = rq(&F1, S1, MDS_LC_NR, 1, MDS_LT_WRLCK, 0, 9);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -EINVAL);
	q = rq(&F1, S1, MDS_LC_APPEND, 1, MDS_LT_RDLCK, 0, 9);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -EINVAL);
	q = rq(&F1, 0x999, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 9);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), -ESTALE);
}

static void test_lock_waiters_granted_in_fifo_order(void)
{
	static struct rec b, c, d, e;
	reset();
	rec_seq = 0;
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S1, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 9), 1, &b),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S2, MDS_LC_POSIX, 3, MDS_LT_WRLCK, 5, 5), 1, &c),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S3, MDS_LC_POSIX, 4, MDS_LT_WRLCK, 0, EOF_), 1, &d),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 3);
	/* the holder leaves: only the first waiter fits */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT(b.r_calls == 1 && b.r_rc == 0);
	CU_ASSERT(c.r_calls == 0 && d.r_calls == 0);
	CU_ASSERT_EQUAL(px(&F1, S1, 2, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT(c.r_calls == 1 && c.r_rc == 0 && d.r_calls == 0);
	CU_ASSERT_EQUAL(px(&F1, S2, 3, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT(d.r_calls == 1 && d.r_rc == 0);
	CU_ASSERT(b.r_order < c.r_order && c.r_order < d.r_order);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 0);

	/* compatible waiters go together, in order; a writer behind them waits */
	CU_ASSERT_EQUAL(wait_req(rq(&F2, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0), 2, &b), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F2, S2, MDS_LC_POSIX, 2, MDS_LT_RDLCK, 0, 0), 2, &c),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(wait_req(rq(&F2, S3, MDS_LC_POSIX, 3, MDS_LT_RDLCK, 0, 0), 2, &d),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(wait_req(rq(&F2, S3, MDS_LC_POSIX, 4, MDS_LT_WRLCK, 0, 0), 3, &e),
			-EINPROGRESS);
	CU_ASSERT_EQUAL(px(&F2, S1, 1, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT(c.r_calls == 1 && d.r_calls == 1 && e.r_calls == 0);
	CU_ASSERT(c.r_order < d.r_order);
	/* append locks: exclusive, one holder at a time, in order */
	struct mds_lock_req a1 = rq(&F3, S1, MDS_LC_APPEND, 10, MDS_LT_WRLCK, 0, EOF_);
	struct mds_lock_req a2 = rq(&F3, S2, MDS_LC_APPEND, 20, MDS_LT_WRLCK, 0, EOF_);
	CU_ASSERT_EQUAL(wait_req(a1, 4, &b), 0);
	CU_ASSERT_EQUAL(wait_req(a2, 4, &c), -EINPROGRESS);
	a1.lq_type = MDS_LT_UNLCK;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &a1, NULL, NULL), 0);
	CU_ASSERT(c.r_calls == 1 && c.r_rc == 0);
}

static void test_lock_deadlock_across_files_is_edeadlk(void)
{
	static struct rec r1, r2;
	reset();
	/* A (S1 pid 1) holds F1, B (S2 pid 2) holds F2 */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(px(&F2, S2, 2, MDS_LT_WRLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F2, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0), 1, &r1),
			-EINPROGRESS);
	/* B waiting for F1 would close the cycle */
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0), 1, &r2),
			-EDEADLK);
	CU_ASSERT_EQUAL(r2.r_calls, 0);
	/* three owners: C holds F3; B waits F3; C asking F1 (held by A, who waits for B) */
	CU_ASSERT_EQUAL(px(&F3, S3, 3, MDS_LT_WRLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F3, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0), 2, &r2),
			-EINPROGRESS);
	static struct rec r3;
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S3, MDS_LC_POSIX, 3, MDS_LT_WRLCK, 0, 0), 1, &r3),
			-EDEADLK);
	/* not a deadlock: a range nobody waits on */
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S3, MDS_LC_POSIX, 3, MDS_LT_WRLCK, 1, 1), 2, &r3), 0);
	/* OFD owners are not followed (as Linux): they just wait */
	struct mds_lock_req o = rq(&F3, S1, MDS_LC_OFD, 900, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(o, 3, &r3), -EINPROGRESS);
	/* unwinding: C leaves F3 -> B gets it (queue order), then the OFD waiter after B */
	CU_ASSERT_EQUAL(px(&F3, S3, 3, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT(r2.r_calls == 1 && r2.r_rc == 0 && r3.r_calls == 0);
}

static void test_lock_session_drop_frees_locks_and_wakes_waiters(void)
{
	static struct rec w, own;
	reset();
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(px(&F2, S1, 1, MDS_LT_RDLCK, 0, 9), 0);
	struct mds_lock_req f = rq(&F1, S1, MDS_LC_FLOCK, 5, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &f, NULL, NULL), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0), 1, &w),
			-EINPROGRESS);
	/* S1 also waits somewhere */
	CU_ASSERT_EQUAL(px(&F3, S3, 3, MDS_LT_WRLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F3, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0), 1, &own),
			-EINPROGRESS);
	/* evict S1: 3 locks + 1 queued request dropped; S2's waiter granted */
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 4);
	CU_ASSERT_EQUAL(mds_lock_session_drop(lm, S1, -ESTALE), 4);
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 2); /* S3's on F3, S2's granted on F1 */
	CU_ASSERT(w.r_calls == 1 && w.r_rc == 0);
	CU_ASSERT(own.r_calls == 1 && own.r_rc == -ESTALE);
	CU_ASSERT_EQUAL(list(&F2, MDS_LC_POSIX, NULL, 0), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_FLOCK, NULL, 0), 0);
	/* and S1 is refused from now on */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_RDLCK, 100, 100), -ESTALE);
	struct mds_lock_desc d;
	bool found;
	struct mds_lock_req q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_RDLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_test(lm, &q, &found, &d), -ESTALE);
}

static void test_lock_close_drops_posix_of_pid_and_locks_of_handle(void)
{
	struct mds_lock_desc d[8];
	static struct rec w;
	reset();
	/* process 10 of S1 locks F1 through handle 100 and F2 */
	CU_ASSERT_EQUAL(px(&F1, S1, 10, MDS_LT_WRLCK, 0, 9), 0);
	CU_ASSERT_EQUAL(px(&F2, S1, 10, MDS_LT_WRLCK, 0, 9), 0);
	struct mds_lock_req o = rq(&F1, S1, MDS_LC_OFD, 101, MDS_LT_WRLCK, 20, 29);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &o, NULL, NULL), 0);
	struct mds_lock_req f = rq(&F1, S1, MDS_LC_FLOCK, 100, MDS_LT_RDLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &f, NULL, NULL), 0);
	/* a waiter through handle 100 on F1 */
	CU_ASSERT_EQUAL(px(&F1, S2, 50, MDS_LT_WRLCK, 40, 40), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S1, MDS_LC_OFD, 100, MDS_LT_WRLCK, 40, 40), 1, &w),
			-EINPROGRESS);
	/* process 10 closes handle 100 of F1 */
	CU_ASSERT_EQUAL(mds_lock_close(lm, &F1, S1, 10, 100), 2);
	CU_ASSERT(w.r_calls == 1 && w.r_rc == -EBADF);
	/* left: the OFD lock of handle 101 and S2's lock on F1; F2 untouched */
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_POSIX, d, 8), 2);
	CU_ASSERT(d[0].ld_start == 20 && d[0].ld_class == MDS_LC_OFD);
	CU_ASSERT(d[1].ld_start == 40 && d[1].ld_session == S2);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_FLOCK, d, 8), 0);
	CU_ASSERT_EQUAL(list(&F2, MDS_LC_POSIX, d, 8), 1);
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 3);
	CU_ASSERT_EQUAL(mds_lock_session_drop(lm, S1, -ESTALE), 2);
	CU_ASSERT_EQUAL(mds_lock_session_drop(lm, S2, -ESTALE), 1);
	CU_ASSERT_EQUAL(mds_lock_nr_locks(lm), 0);
}

static void test_lock_flock_conversion_drops_old_lock_first(void)
{
	struct mds_lock_desc d[4];
	reset();
	struct mds_lock_req a = rq(&F1, S1, MDS_LC_FLOCK, 1, MDS_LT_RDLCK, 0, 0);
	struct mds_lock_req b = rq(&F1, S2, MDS_LC_FLOCK, 2, MDS_LT_RDLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &b, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &a, NULL, NULL), 0); /* same type again: no-op */
	a.lq_type = MDS_LT_WRLCK;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &a, NULL, NULL), -EAGAIN);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_FLOCK, d, 4), 1); /* a holds nothing now */
	CU_ASSERT_EQUAL(d[0].ld_owner, 2);
	b.lq_type = MDS_LT_UNLCK;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &b, NULL, NULL), 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &a, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(list(&F1, MDS_LC_FLOCK, d, 4), 1);
	CU_ASSERT(d[0].ld_owner == 1 && d[0].ld_type == MDS_LT_WRLCK && d[0].ld_end == EOF_);
}

static void test_lock_repeated_token_gets_same_answer(void)
{
	static struct rec r1, r2, r3;
	reset();
	/* an answered request sent again is not applied again */
	struct mds_lock_req q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 9);
	q.lq_token = 42;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), 0);
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_UNLCK, 0, EOF_), 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &q, NULL, NULL), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_POSIX, NULL, 0), 0);
	/* a queued request sent again takes over the wait */
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_WRLCK, 0, 0), 0);
	struct mds_lock_req w = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(w, 43, &r1), -EINPROGRESS);
	CU_ASSERT_EQUAL(wait_req(w, 43, &r2), -EINPROGRESS);
	CU_ASSERT(r1.r_calls == 1 && r1.r_rc == -EAGAIN);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 1);
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_UNLCK, 0, 0), 0);
	CU_ASSERT(r2.r_calls == 1 && r2.r_rc == 0);
	/* the reply was lost: sent again, it is answered at once */
	CU_ASSERT_EQUAL(wait_req(w, 43, &r3), 0);
	CU_ASSERT_EQUAL(r3.r_calls, 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_POSIX, NULL, 0), 1);
	/* the same token in another session is another request */
	struct mds_lock_req o = rq(&F1, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0);
	o.lq_token = 43;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &o, NULL, NULL), -EAGAIN);
}

/* Regression: a non-waiting repeat of a queued request was parked without a
 * callback, so its reply never went out. */
static void test_lock_nowait_repeat_of_queued_request_gets_eagain(void)
{
	static struct rec r1;
	reset();
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_WRLCK, 0, 0), 0);
	struct mds_lock_req w = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(w, 77, &r1), -EINPROGRESS);
	struct mds_lock_req again = w;
	again.lq_token = 77;
	again.lq_wait = false;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &again, NULL, NULL), -EAGAIN);
	CU_ASSERT_EQUAL(r1.r_calls, 0); /* the queued one still waits */
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_UNLCK, 0, 0), 0);
	CU_ASSERT(r1.r_calls == 1 && r1.r_rc == 0);
}

static void test_lock_tick_answers_polls_and_drops_orphans(void)
{
	static struct rec r1, r2;
	reset();
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, 0), 0);
	struct mds_lock_req w = rq(&F1, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(w, 7, &r1), -EINPROGRESS);
	uint64_t t0 = weir_now_ns();
	const uint64_t poll = 2000000000ULL, orphan = 6000000000ULL;
	mds_lock_tick(lm, t0, poll, orphan);
	CU_ASSERT_EQUAL(r1.r_calls, 0);
	mds_lock_tick(lm, t0 + poll + 1000000, poll, orphan);
	CU_ASSERT(r1.r_calls == 1 && r1.r_rc == -EAGAIN);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 1);
	/* a detached request is granted quietly; its re-poll gets the answer */
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_UNLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(r1.r_calls, 1);
	CU_ASSERT_EQUAL(wait_req(w, 7, &r2), 0);
	/* nobody comes back for a queued request: it is removed */
	CU_ASSERT_EQUAL(px(&F2, S1, 1, MDS_LT_WRLCK, 0, 0), 0);
	struct mds_lock_req w2 = rq(&F2, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(w2, 8, &r1), -EINPROGRESS);
	t0 = weir_now_ns();
	mds_lock_tick(lm, t0 + poll, poll, orphan);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 1);
	mds_lock_tick(lm, t0 + poll + orphan, poll, orphan);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 0);
	CU_ASSERT_EQUAL(r1.r_calls, 1);
}

static void test_lock_cancel_queued_or_early_request_is_ecanceled_grant_kept(void)
{
	static struct rec r1, r2, r3;
	reset();
	/* queued: leaves the queue, its parked poll is answered -ECANCELED */
	struct mds_lock_req h = rq(&F1, S1, MDS_LC_FLOCK, 1, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_set(lm, &h, NULL, NULL), 0);
	struct mds_lock_req w = rq(&F1, S2, MDS_LC_FLOCK, 2, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(wait_req(w, 50, &r1), -EINPROGRESS);
	CU_ASSERT_EQUAL(mds_lock_cancel(lm, S2, 50), 0);
	CU_ASSERT(r1.r_calls == 1 && r1.r_rc == -ECANCELED);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 0);
	/* a re-poll of it is answered the same, and never queued again */
	CU_ASSERT_EQUAL(wait_req(w, 50, &r2), -ECANCELED);
	CU_ASSERT_EQUAL(mds_lock_nr_waiters(lm), 0);
	/* the holder's unlock grants nothing to the cancelled request */
	h.lq_type = MDS_LT_UNLCK;
	CU_ASSERT_EQUAL(mds_lock_set(lm, &h, NULL, NULL), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_FLOCK, NULL, 0), 0);
	/* cancelled before it arrived: answered -ECANCELED when it does */
	CU_ASSERT_EQUAL(mds_lock_cancel(lm, S2, 51), 0);
	CU_ASSERT_EQUAL(wait_req(w, 51, &r3), -ECANCELED);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_FLOCK, NULL, 0), 0);
	/* granted before the cancel: the grant stands (the requester unlocks) */
	CU_ASSERT_EQUAL(wait_req(w, 52, &r3), 0);
	CU_ASSERT_EQUAL(mds_lock_cancel(lm, S2, 52), 0);
	CU_ASSERT_EQUAL(list(&F1, MDS_LC_FLOCK, NULL, 0), 1);
	CU_ASSERT_EQUAL(mds_lock_cancel(lm, 0x9999, 53), -ESTALE);
	CU_ASSERT_EQUAL(mds_lock_cancel(lm, S2, 0), -EINVAL);
}

static void test_lock_free_answers_waiters_eshutdown(void)
{
	static struct rec r;
	reset();
	CU_ASSERT_EQUAL(px(&F1, S1, 1, MDS_LT_WRLCK, 0, 0), 0);
	CU_ASSERT_EQUAL(wait_req(rq(&F1, S2, MDS_LC_POSIX, 2, MDS_LT_WRLCK, 0, 0), 1, &r),
			-EINPROGRESS);
	mds_lockmgr_free(lm);
	lm = NULL;
	CU_ASSERT(r.r_calls == 1 && r.r_rc == -ESHUTDOWN);
	CU_ASSERT_FATAL(setup() == 0);
}

static void test_lock_replay_ignores_other_owners_and_lists_session(void)
{
	struct mds_lock_held h[8];
	reset();
	CU_ASSERT_EQUAL(px(&F1, S2, 2, MDS_LT_WRLCK, 0, 99), 0);
	/* replayed: granted though S2 holds a conflicting lock (the caller vouches) */
	struct mds_lock_req q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 50, EOF_);
	CU_ASSERT_EQUAL(mds_lock_replay(lm, &q), 0);
	q = rq(&F2, S1, MDS_LC_FLOCK, 7, MDS_LT_RDLCK, 0, EOF_);
	CU_ASSERT_EQUAL(mds_lock_replay(lm, &q), 0);
	/* an owner's replayed changes split and merge as a set does */
	q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_UNLCK, 60, 69);
	CU_ASSERT_EQUAL(mds_lock_replay(lm, &q), 0);
	CU_ASSERT_EQUAL(mds_lock_session_locks(lm, S1, NULL, 0), 3);
	CU_ASSERT_EQUAL(mds_lock_session_locks(lm, S1, h, 8), 3);
	int posix = 0, flock = 0;
	for (int i = 0; i < 3; i++) {
		if (h[i].lh_desc.ld_class == MDS_LC_POSIX) {
			CU_ASSERT(weir_fid_eq(&h[i].lh_fid, &F1));
			CU_ASSERT(h[i].lh_desc.ld_pid == 1 && h[i].lh_desc.ld_owner == 1);
			CU_ASSERT((h[i].lh_desc.ld_start == 50 && h[i].lh_desc.ld_end == 59) ||
				  (h[i].lh_desc.ld_start == 70 && h[i].lh_desc.ld_end == EOF_));
			posix++;
		} else {
			CU_ASSERT(weir_fid_eq(&h[i].lh_fid, &F2));
			CU_ASSERT(h[i].lh_desc.ld_class == MDS_LC_FLOCK &&
				  h[i].lh_desc.ld_type == MDS_LT_RDLCK && h[i].lh_desc.ld_owner == 7);
			flock++;
		}
	}
	CU_ASSERT(posix == 2 && flock == 1);
	CU_ASSERT_EQUAL(mds_lock_session_locks(lm, S2, h, 8), 1);
	CU_ASSERT_EQUAL(mds_lock_session_locks(lm, S3, h, 8), 0);
	q = rq(&F1, 0x9999, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 0, 0);
	CU_ASSERT_EQUAL(mds_lock_replay(lm, &q), -ESTALE);
	q = rq(&F1, S1, MDS_LC_POSIX, 1, MDS_LT_WRLCK, 9, 8);
	CU_ASSERT_EQUAL(mds_lock_replay(lm, &q), -EINVAL);
}

static const struct th_test tests[] = {
	TH_TEST(test_lock_split_then_merge_same_owner),
	TH_TEST(test_lock_upgrade_and_downgrade),
	TH_TEST(test_lock_conflict_rules_and_test_reports_holder),
	TH_TEST(test_lock_waiters_granted_in_fifo_order),
	TH_TEST(test_lock_deadlock_across_files_is_edeadlk),
	TH_TEST(test_lock_session_drop_frees_locks_and_wakes_waiters),
	TH_TEST(test_lock_close_drops_posix_of_pid_and_locks_of_handle),
	TH_TEST(test_lock_flock_conversion_drops_old_lock_first),
	TH_TEST(test_lock_repeated_token_gets_same_answer),
	TH_TEST(test_lock_nowait_repeat_of_queued_request_gets_eagain),
	TH_TEST(test_lock_tick_answers_polls_and_drops_orphans),
	TH_TEST(test_lock_cancel_queued_or_early_request_is_ecanceled_grant_kept),
	TH_TEST(test_lock_free_answers_waiters_eshutdown),
	TH_TEST(test_lock_replay_ignores_other_owners_and_lists_session),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("mds_lock", setup, teardown, tests);
}
