/*
 * tests/integration/test_locks.c - cluster-wide locks, leases and O_APPEND
 * with real servers. The MDS runs with --lease-time 2s. Every client is a
 * forked process with its own weir_mount (the parent never mounts, so it
 * forks with no libweir thread); children step through their script over
 * pipes, check their own results, print what failed, and exit with the
 * number of failed checks (100+ for a set-up or sync failure). Cases:
 *  - a client holding a write lock is killed with SIGKILL: another client's
 *    F_SETLKW gets the lock once the lease expires, and the dead writer's
 *    handle was closed with the right size;
 *  - 8 processes append 1,000 records each through O_APPEND: every record
 *    is in the file exactly once, whole;
 *  - 4 processes increment a counter 500 times each under F_SETLKW: 2,000;
 *  - a client stopped (SIGSTOP) for longer than a lease is evicted: its
 *    lock goes to another client; once resumed, its old handle returns
 *    -EIO and the mount reconnects, so new opens and locks work;
 *  - an MDS restart (kill -9) keeps a held lock (replayed in the recovery
 *    window) and a blocked F_SETLKW keeps waiting until the holder closes
 *    (more in test_recovery);
 *  - F_GETLK reports the holder and its pid; flock LOCK_NB fails with
 *    EWOULDBLOCK; two processes deadlocking get EDEADLK; a close of any
 *    handle drops the process's POSIX locks; OFD and POSIX locks conflict;
 *  - weir_cancel() ends a thread's flock and F_OFD_SETLKW waits with
 *    -EINTR, before they are sent too, and leaves no lock behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define LEASE_MS	 2000
#define STEP_TIMEOUT_MS	 30000
#define CHILD_TIMEOUT_MS 50000

static struct th_cluster *cl;

static int suite_init(void)
{
	static const char *const mds_args[] = { "--lease-time", "2s", NULL };
	struct th_cluster_opts o;
	memset(&o, 0, sizeof(o));
	o.tco_mds_args = mds_args;
	return th_cluster_start(&o, &cl) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_stop(cl) ? -1 : 0;
}

#include "th_child.h"


/* ------------------------------------------------------------ (a) killed holder */

#define KILLED_BYTES 12345

struct killed_args {
	int ka_ready[2]; /* holder -> parent: locked */
	pid_t ka_holder;
};

static void killed_holder(void *arg)
{
	struct killed_args *a = arg;
	weir_fs_t *fs = child_mount("holder");
	weir_file_t *fh = child_open(fs, "/killed", O_CREAT | O_RDWR | O_TRUNC);
	char *buf = malloc(KILLED_BYTES);
	if (!buf)
		_exit(105);
	th_fill_pattern(buf, KILLED_BYTES, 7);
	CHECK_RC(weir_pwrite(fh, buf, KILLED_BYTES, 0), KILLED_BYTES);
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), 0);
	post(a->ka_ready[1], fails ? 'x' : 'L');
	for (;;)
		pause(); /* until SIGKILL: no close, no unmount, no more renewals */
}

static void killed_waiter(void *arg)
{
	struct killed_args *a = arg;
	weir_fs_t *fs = child_mount("waiter");
	weir_file_t *fh = child_open(fs, "/killed", O_RDONLY);
	struct flock fl = mk_flock(F_RDLCK, 0, 1);

	/* the dead holder's lock is still there: reported with its pid */
	CHECK_RC(weir_fcntl_lock(fh, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK);
	CHECK_RC(fl.l_pid, a->ka_holder);
	CHECK(fl.l_start == 0 && fl.l_len == 0);
	CHECK_RC(lk(fh, F_SETLK, F_RDLCK, 0, 0), -EAGAIN);

	uint64_t t0 = th_now_ms();
	CHECK_RC(lk(fh, F_SETLKW, F_RDLCK, 0, 0), 0);
	uint64_t waited = th_now_ms() - t0;
	printf("\n    lock granted %llu ms after the holder's death was noticed\n",
	       (unsigned long long)waited);
	CHECK(waited < 3 * LEASE_MS + 2000);
	/* the evicted writer's handle was closed with the size it wrote */
	struct stat st;
	CHECK_RC(weir_fstat(fh, &st), 0);
	CHECK_RC(st.st_size, KILLED_BYTES);
	fl = mk_flock(F_WRLCK, 0, 0);
	CHECK_RC(weir_fcntl_lock(fh, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_UNLCK);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void test_locks_killed_holder_lock_freed_after_lease(void)
{
	struct killed_args a;
	memset(&a, 0, sizeof(a));
	mkpipe(a.ka_ready);
	pid_t h = spawn(killed_holder, &a);
	a.ka_holder = h;
	char c = 0;
	struct pollfd pfd = { .fd = a.ka_ready[0], .events = POLLIN };
	CU_ASSERT(poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 && read(a.ka_ready[0], &c, 1) == 1);
	CU_ASSERT_EQUAL(c, 'L');
	CU_ASSERT_EQUAL(kill(h, SIGKILL), 0);
	CU_ASSERT_EQUAL(reap(h, 5000), -1); /* killed */
	pid_t w = spawn(killed_waiter, &a);
	CU_ASSERT_EQUAL(reap(w, CHILD_TIMEOUT_MS), 0);
	closepipe(a.ka_ready);
}

/* ------------------------------------------------------------ eviction of a live client */

struct evict_args {
	int ea_ready[2]; /* sleeper -> parent */
	int ea_go[2];	 /* parent -> sleeper: resumed */
};

static void evict_sleeper(void *arg)
{
	struct evict_args *a = arg;
	weir_fs_t *fs = child_mount("sleeper");
	weir_file_t *fh = child_open(fs, "/evict", O_CREAT | O_RDWR | O_TRUNC);
	CHECK_RC(weir_pwrite(fh, "before", 6, 0), 6);
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), 0);
	post(a->ea_ready[1], 'S'); /* the parent stops us for longer than a lease */
	await(a->ea_go[0], 'C');
	/* the first MDS call finds the session gone: the old handle is stale */
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), -EIO);
	char b[8];
	CHECK_RC(weir_pread(fh, b, 6, 0), -EIO);
	CHECK_RC(weir_pwrite(fh, b, 6, 0), -EIO);
	CHECK_RC(weir_write(fh, b, 6), -EIO);
	struct stat st;
	CHECK_RC(weir_fstat(fh, &st), -EIO);
	CHECK_RC(weir_flock(fh, LOCK_EX), -EIO);
	CHECK_RC(weir_close(fh), -EIO);
	/* the mount reconnected: new handles and locks work */
	fh = child_open(fs, "/evict", O_RDWR);
	CHECK_RC(weir_pread(fh, b, 6, 0), 6);
	CHECK(memcmp(b, "before", 6) == 0);
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void evict_taker(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("taker");
	weir_file_t *fh = child_open(fs, "/evict", O_RDWR);
	/* blocks until the stopped client's lease ends */
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void test_locks_evicted_client_gets_eio_then_reconnects(void)
{
	struct evict_args a;
	char c = 0;
	mkpipe(a.ea_ready);
	mkpipe(a.ea_go);
	pid_t s = spawn(evict_sleeper, &a);
	struct pollfd pfd = { .fd = a.ea_ready[0], .events = POLLIN };
	CU_ASSERT(poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 && read(a.ea_ready[0], &c, 1) == 1);
	CU_ASSERT_EQUAL(c, 'S');
	CU_ASSERT_EQUAL(kill(s, SIGSTOP), 0);
	CU_ASSERT_EQUAL(reap(spawn(evict_taker, NULL), CHILD_TIMEOUT_MS), 0);
	CU_ASSERT_EQUAL(kill(s, SIGCONT), 0);
	CU_ASSERT_EQUAL(write(a.ea_go[1], "C", 1), 1);
	CU_ASSERT_EQUAL(reap(s, CHILD_TIMEOUT_MS), 0);
	closepipe(a.ea_ready);
	closepipe(a.ea_go);
}

/* ------------------------------------------------------------ MDS restart */

struct restart_args {
	int ra_held[2];	   /* holder -> parent: locked */
	int ra_waiting[2]; /* waiter -> parent: about to wait */
	int ra_go[2];	   /* parent -> holder: the MDS restarted */
};

static void restart_holder(void *arg)
{
	struct restart_args *a = arg;
	weir_fs_t *fs = child_mount("rs-holder");
	weir_file_t *fh = child_open(fs, "/restart", O_CREAT | O_RDWR);
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), 0);
	post(a->ra_held[1], 'H');
	await(a->ra_go[0], 'G');
	/* the lock was replayed into the restarted MDS: still this owner's */
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	CHECK_RC(weir_pwrite(fh, "x", 1, 0), 1);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void restart_waiter(void *arg)
{
	struct restart_args *a = arg;
	weir_fs_t *fs = child_mount("rs-waiter");
	weir_file_t *fh = child_open(fs, "/restart", O_RDWR);
	post(a->ra_waiting[1], 'W');
	/* blocked when the MDS dies: the wait goes on in the new session, and
	 * ends when the holder (whose lock was replayed) closes, not before */
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	char b = 0;
	CHECK_RC(weir_pread(fh, &b, 1, 0), 1);
	CHECK(b == 'x');
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void test_locks_mds_restart_keeps_lock_and_wait(void)
{
	struct restart_args a;
	char c = 0;
	mkpipe(a.ra_held);
	mkpipe(a.ra_waiting);
	mkpipe(a.ra_go);
	pid_t h = spawn(restart_holder, &a);
	struct pollfd pfd = { .fd = a.ra_held[0], .events = POLLIN };
	CU_ASSERT(poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 && read(a.ra_held[0], &c, 1) == 1);
	pid_t w = spawn(restart_waiter, &a);
	pfd.fd = a.ra_waiting[0];
	CU_ASSERT(poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 && read(a.ra_waiting[0], &c, 1) == 1);
	th_sleep_ms(300); /* the waiter is queued on the MDS */
	CU_ASSERT_EQUAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL(write(a.ra_go[1], "G", 1), 1);
	CU_ASSERT_EQUAL(reap(h, CHILD_TIMEOUT_MS), 0);
	CU_ASSERT_EQUAL(reap(w, CHILD_TIMEOUT_MS), 0);
	closepipe(a.ra_held);
	closepipe(a.ra_waiting);
	closepipe(a.ra_go);
}

/* ------------------------------------------------------------ (b) O_APPEND */

#define APPENDERS 8
#define RECORDS	  1000

/* Record \a seq of appender \a id: "<id>:<seq>:<payload of 8..90 bytes>|\n". */
static size_t append_record(int id, int seq, char *buf)
{
	int plen = 8 + (int)((unsigned)(id * 7919 + seq * 104729) % 83);
	int n = sprintf(buf, "%d:%d:", id, seq);
	for (int i = 0; i < plen; i++)
		buf[n++] = (char)('a' + (id + seq + i) % 26);
	buf[n++] = '|';
	buf[n++] = '\n';
	return (size_t)n;
}

static void appender(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32], rec[128];
	snprintf(name, sizeof(name), "appender-%d", id);
	weir_fs_t *fs = child_mount(name);
	weir_file_t *fh = child_open(fs, "/app/log", O_WRONLY | O_APPEND);
	for (int seq = 0; seq < RECORDS && fails < 5; seq++) {
		size_t n = append_record(id, seq, rec);
		CHECK_RC(weir_write(fh, rec, n), n);
	}
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void append_setup(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("append-setup");
	/* two stripes of 64 KiB: appends cross objects, the glimpse asks both */
	CHECK_RC(th_stripe_dir(fs, "/app", 2, 65536), 0);
	CHECK_RC(th_put(fs, "/app/log", "", 0), 0);
	child_exit(fs);
}

/* Parse the whole log; every record present once and whole. */
static void append_verify(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("append-verify");
	long long size = th_size(fs, "/app/log");
	size_t want = 0;
	char rec[128];
	for (int id = 0; id < APPENDERS; id++)
		for (int seq = 0; seq < RECORDS; seq++)
			want += append_record(id, seq, rec);
	CHECK_RC(size, (long long)want);
	char *buf = malloc(want + 1);
	unsigned char *seen = calloc(APPENDERS * RECORDS, 1);
	if (!buf || !seen)
		_exit(106);
	ssize_t got = th_get(fs, "/app/log", buf, want);
	CHECK_RC(got, (ssize_t)want);
	buf[got > 0 ? got : 0] = 0;
	size_t pos = 0, bad = 0, dup = 0, nr = 0;
	while (got > 0 && pos < (size_t)got && bad < 5) {
		int id, seq, used = 0;
		if (sscanf(buf + pos, "%d:%d:%n", &id, &seq, &used) != 2 || used == 0 || id < 0 ||
		    id >= APPENDERS || seq < 0 || seq >= RECORDS) {
			fprintf(stderr, "  verify: garbage at offset %zu: %.40s\n", pos, buf + pos);
			bad++;
			char *nl = memchr(buf + pos, '\n', (size_t)got - pos);
			pos = nl ? (size_t)(nl - buf) + 1 : (size_t)got;
			continue;
		}
		size_t n = append_record(id, seq, rec);
		if (pos + n > (size_t)got || memcmp(buf + pos, rec, n) != 0) {
			fprintf(stderr, "  verify: record %d:%d at offset %zu is torn\n", id, seq,
				pos);
			bad++;
			char *nl = memchr(buf + pos, '\n', (size_t)got - pos);
			pos = nl ? (size_t)(nl - buf) + 1 : (size_t)got;
			continue;
		}
		if (seen[id * RECORDS + seq]++)
			dup++;
		nr++;
		pos += n;
	}
	CHECK_RC(bad, 0);
	CHECK_RC(dup, 0);
	CHECK_RC(nr, APPENDERS * RECORDS);
	/* each appender's records are in its own order */
	free(buf);
	free(seen);
	child_exit(fs);
}

static void test_locks_o_append_from_8_processes_every_record_once(void)
{
	pid_t kids[APPENDERS];
	CU_ASSERT_EQUAL_FATAL(reap(spawn(append_setup, NULL), CHILD_TIMEOUT_MS), 0);
	uint64_t t0 = th_now_ms();
	for (int i = 0; i < APPENDERS; i++)
		kids[i] = spawn(appender, (void *)(intptr_t)i);
	for (int i = 0; i < APPENDERS; i++)
		CU_ASSERT_EQUAL(reap(kids[i], CHILD_TIMEOUT_MS), 0);
	uint64_t ms = th_now_ms() - t0;
	printf("\n    %d appends in %llu ms (%.0f appends/s)\n", APPENDERS * RECORDS,
	       (unsigned long long)ms, ms ? APPENDERS * RECORDS * 1000.0 / (double)ms : 0.0);
	CU_ASSERT_EQUAL(reap(spawn(append_verify, NULL), CHILD_TIMEOUT_MS), 0);
}

/* ------------------------------------------------------------ (c) counter */

#define COUNTERS   4
#define INCREMENTS 500

static void counter(void *arg)
{
	char name[32];
	snprintf(name, sizeof(name), "counter-%d", (int)(intptr_t)arg);
	weir_fs_t *fs = child_mount(name);
	weir_file_t *fh = child_open(fs, "/counter", O_RDWR);
	for (int i = 0; i < INCREMENTS && fails < 5; i++) {
		char b[32];
		CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 16), 0);
		memset(b, 0, sizeof(b));
		CHECK_RC(weir_pread(fh, b, 16, 0), 16);
		long v = strtol(b, NULL, 10) % 100000000L;
		snprintf(b, sizeof(b), "%015ld\n", v + 1);
		CHECK_RC(weir_pwrite(fh, b, 16, 0), 16);
		CHECK_RC(lk(fh, F_SETLK, F_UNLCK, 0, 16), 0);
	}
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void counter_setup(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("counter-setup");
	CHECK_RC(th_put(fs, "/counter", "000000000000000\n", 16), 0);
	child_exit(fs);
}

static void counter_verify(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("counter-verify");
	char b[17] = { 0 };
	CHECK_RC(th_get(fs, "/counter", b, 16), 16);
	long v = strtol(b, NULL, 10);
	printf("\n    counter = %ld\n", v);
	CHECK_RC(v, COUNTERS * INCREMENTS);
	child_exit(fs);
}

static void test_locks_counter_under_setlkw_reaches_2000(void)
{
	pid_t kids[COUNTERS];
	CU_ASSERT_EQUAL_FATAL(reap(spawn(counter_setup, NULL), CHILD_TIMEOUT_MS), 0);
	uint64_t t0 = th_now_ms();
	for (int i = 0; i < COUNTERS; i++)
		kids[i] = spawn(counter, (void *)(intptr_t)i);
	for (int i = 0; i < COUNTERS; i++)
		CU_ASSERT_EQUAL(reap(kids[i], CHILD_TIMEOUT_MS), 0);
	printf("\n    %d locked increments in %llu ms\n", COUNTERS * INCREMENTS,
	       (unsigned long long)(th_now_ms() - t0));
	CU_ASSERT_EQUAL(reap(spawn(counter_verify, NULL), CHILD_TIMEOUT_MS), 0);
}

/* ------------------------------------------------------------ (d) semantics */

struct pair {
	int p_ab[2]; /* A -> B */
	int p_ba[2]; /* B -> A */
	pid_t p_a;
};

static void sem_a(void *arg)
{
	struct pair *p = arg;
	weir_fs_t *fs = child_mount("A");
	weir_file_t *f1 = child_open(fs, "/sem1", O_CREAT | O_RDWR);
	weir_file_t *f2 = child_open(fs, "/sem2", O_CREAT | O_RDWR);

	/* 1: a write lock on [100, 200) of sem1, a flock on sem2 */
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 100, 100), 0);
	CHECK_RC(weir_flock(f2, LOCK_EX), 0);
	post(p->p_ab[1], '1');
	await(p->p_ba[0], '2'); /* B checked GETLK and LOCK_NB */

	/* 3: deadlock: A holds sem1 byte 0, B holds sem2 byte 0; A waits for sem2 */
	CHECK_RC(weir_flock(f2, LOCK_UN), 0);
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 0, 1), 0);
	post(p->p_ab[1], '3');
	await(p->p_ba[0], '4');			      /* B holds sem2 byte 0 */
	post(p->p_ab[1], '5');			      /* about to wait */
	CHECK_RC(lk(f2, F_SETLKW, F_WRLCK, 0, 1), 0); /* granted once B unlocks */
	post(p->p_ab[1], '6');

	/* 7: POSIX close rule: closing another handle of sem1 drops A's locks on it */
	await(p->p_ba[0], '7');
	weir_file_t *other = child_open(fs, "/sem1", O_RDONLY);
	CHECK_RC(weir_close(other), 0);
	post(p->p_ab[1], '8');
	await(p->p_ba[0], '9');

	/* OFD and POSIX locks of one process conflict; both released at close */
	CHECK_RC(lk(f1, F_OFD_SETLK, F_WRLCK, 500, 10), 0);
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 505, 1), -EAGAIN);
	struct flock fl = mk_flock(F_RDLCK, 500, 1);
	CHECK_RC(weir_fcntl_lock(f1, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK && fl.l_pid == -1 && fl.l_start == 500 && fl.l_len == 10);
	fl = mk_flock(F_RDLCK, 500, 1);
	fl.l_pid = 1;
	CHECK_RC(weir_fcntl_lock(f1, F_OFD_GETLK, &fl), -EINVAL);
	/* flock between two handles of one process */
	weir_file_t *g = child_open(fs, "/sem2", O_RDONLY);
	CHECK_RC(weir_flock(f2, LOCK_SH), 0);
	CHECK_RC(weir_flock(g, LOCK_SH | LOCK_NB), 0);
	CHECK_RC(weir_flock(g, LOCK_EX | LOCK_NB), -EWOULDBLOCK);
	CHECK_RC(weir_flock(f2, LOCK_UN), 0);
	CHECK_RC(weir_flock(g, LOCK_EX | LOCK_NB), 0);
	CHECK_RC(weir_flock(g, 12345), -EINVAL);
	CHECK_RC(weir_close(g), 0);
	/* write lock on a read-only handle */
	weir_file_t *ro = child_open(fs, "/sem1", O_RDONLY);
	CHECK_RC(lk(ro, F_SETLK, F_WRLCK, 0, 1), -EBADF);
	CHECK_RC(weir_close(ro), 0); /* drops A's POSIX locks on sem1 again */
	CHECK_RC(weir_close(f1), 0);
	CHECK_RC(weir_close(f2), 0);
	child_exit(fs);
}

static void sem_b(void *arg)
{
	struct pair *p = arg;
	weir_fs_t *fs = child_mount("B");
	await(p->p_ab[0], '1');
	weir_file_t *f1 = child_open(fs, "/sem1", O_RDWR);
	weir_file_t *f2 = child_open(fs, "/sem2", O_RDWR);

	/* F_GETLK reports A's lock and pid */
	struct flock fl = mk_flock(F_RDLCK, 150, 1);
	CHECK_RC(weir_fcntl_lock(f1, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK);
	CHECK_RC(fl.l_start, 100);
	CHECK_RC(fl.l_len, 100);
	CHECK_RC(fl.l_pid, p->p_a);
	CHECK(fl.l_whence == SEEK_SET);
	fl = mk_flock(F_WRLCK, 200, 0); /* past A's range: free */
	CHECK_RC(weir_fcntl_lock(f1, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_UNLCK);
	CHECK_RC(lk(f1, F_SETLK, F_RDLCK, 199, 1), -EAGAIN);
	CHECK_RC(lk(f1, F_SETLK, F_RDLCK, 200, 1), 0);
	/* flock LOCK_NB against A's exclusive flock; fcntl locks do not see it */
	CHECK_RC(weir_flock(f2, LOCK_SH | LOCK_NB), -EWOULDBLOCK);
	CHECK_RC(lk(f2, F_SETLK, F_WRLCK, 0, 0), 0);
	CHECK_RC(lk(f2, F_SETLK, F_UNLCK, 0, 0), 0);
	post(p->p_ba[1], '2');

	/* deadlock */
	await(p->p_ab[0], '3');
	CHECK_RC(lk(f2, F_SETLK, F_WRLCK, 0, 1), 0);
	post(p->p_ba[1], '4');
	await(p->p_ab[0], '5');
	th_sleep_ms(500); /* A is now queued on sem2 */
	CHECK_RC(lk(f1, F_SETLKW, F_WRLCK, 0, 1), -EDEADLK);
	CHECK_RC(lk(f2, F_SETLK, F_UNLCK, 0, 1), 0);
	await(p->p_ab[0], '6'); /* A got it */
	CHECK_RC(lk(f2, F_SETLK, F_WRLCK, 0, 1), -EAGAIN);

	/* close rule: A still holds sem1 [0,1) and [100,200) */
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 0, 1), -EAGAIN);
	post(p->p_ba[1], '7');
	await(p->p_ab[0], '8'); /* A closed another handle of sem1 */
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 0, 1), 0);
	CHECK_RC(lk(f1, F_SETLK, F_WRLCK, 100, 100), 0);
	CHECK_RC(lk(f1, F_SETLK, F_UNLCK, 0, 0), 0);
	post(p->p_ba[1], '9');
	CHECK_RC(weir_close(f1), 0);
	CHECK_RC(weir_close(f2), 0);
	child_exit(fs);
}

static void test_locks_getlk_flock_nb_edeadlk_close_rule(void)
{
	struct pair p;
	memset(&p, 0, sizeof(p));
	mkpipe(p.p_ab);
	mkpipe(p.p_ba);
	p.p_a = spawn(sem_a, &p);
	pid_t b = spawn(sem_b, &p);
	CU_ASSERT_EQUAL(reap(p.p_a, CHILD_TIMEOUT_MS), 0);
	CU_ASSERT_EQUAL(reap(b, CHILD_TIMEOUT_MS), 0);
	closepipe(p.p_ab);
	closepipe(p.p_ba);
}

/* ------------------------------------------------------------ (f) cancelled waits */

struct cancel_wait {
	weir_file_t *cw_fh;
	bool cw_ofd;
	weir_cancel_t *_Atomic cw_point; /* set once armed */
	int cw_rc;
	uint64_t cw_ms; /* how long the call took */
};

static void *cancel_waiter(void *arg)
{
	struct cancel_wait *w = arg;
	weir_cancel_t *c = weir_cancel_arm();
	uint64_t t0 = th_now_ms();
	atomic_store(&w->cw_point, c);
	w->cw_rc = w->cw_ofd ? lk(w->cw_fh, F_OFD_SETLKW, F_WRLCK, 0, 10)
			     : weir_flock(w->cw_fh, LOCK_EX);
	w->cw_ms = th_now_ms() - t0;
	CHECK(weir_cancel_disarm());
	return NULL;
}

/* Wait in a thread on \a fh, cancel it after 300 ms: -EINTR well before a lease. */
static void cancel_one(weir_file_t *fh, bool ofd)
{
	struct cancel_wait w = { .cw_fh = fh, .cw_ofd = ofd };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, cancel_waiter, &w) == 0);
	while (!atomic_load(&w.cw_point))
		th_sleep_ms(10);
	th_sleep_ms(300);
	weir_cancel(atomic_load(&w.cw_point));
	pthread_join(t, NULL);
	CHECK_RC(w.cw_rc, -EINTR);
	CHECK(w.cw_ms >= 300 && w.cw_ms < LEASE_MS);
}

static void cancel_child(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("cancel");
	weir_file_t *holder = child_open(fs, "/cancel", O_RDWR | O_CREAT);
	weir_file_t *waiter = child_open(fs, "/cancel", O_RDWR);
	weir_file_t *third = child_open(fs, "/cancel", O_RDWR);

	CHECK_RC(weir_flock(holder, LOCK_EX), 0);
	cancel_one(waiter, false);
	/* cancelled before the call: -EINTR without waiting, even for a free lock */
	weir_cancel_t *c = weir_cancel_arm();
	weir_cancel(c);
	CHECK_RC(weir_flock(third, LOCK_SH), -EINTR);
	CHECK(weir_cancel_disarm());
	/* the holder's unlock grants nothing to the cancelled waiter */
	CHECK_RC(weir_flock(holder, LOCK_UN), 0);
	CHECK_RC(weir_flock(third, LOCK_EX | LOCK_NB), 0);
	CHECK_RC(weir_flock(third, LOCK_UN), 0);
	/* the same for an OFD byte-range wait */
	CHECK_RC(lk(holder, F_OFD_SETLK, F_WRLCK, 0, 10), 0);
	cancel_one(waiter, true);
	CHECK_RC(lk(holder, F_OFD_SETLK, F_UNLCK, 0, 10), 0);
	CHECK_RC(lk(third, F_OFD_SETLK, F_WRLCK, 0, 0), 0);
	/* not armed: weir_cancel_disarm() reports nothing */
	CHECK(!weir_cancel_disarm());
	weir_close(holder);
	weir_close(waiter);
	weir_close(third);
	child_exit(fs);
}

static void test_locks_cancelled_wait_is_eintr_and_leaves_no_lock(void)
{
	CU_ASSERT_EQUAL(reap(spawn(cancel_child, NULL), CHILD_TIMEOUT_MS), 0);
}

/* ------------------------------------------------------------ (g) explicit owners (weir-fuse's) */

static int olk(weir_file_t *fh, int cmd, short type, off_t start, off_t len, uint64_t owner,
	       pid_t pid)
{
	struct flock fl = mk_flock(type, start, len);
	fl.l_pid = pid;
	return weir_fcntl_lock_owner(fh, cmd, &fl, owner);
}

#define OWNER_A 0x9e3779b97f4a7c15ULL /* bit 63 set, as the kernel's lock owners may have */
#define OWNER_B 0x1234ULL

/* after 500 ms, unlock byte 100 that this process holds through \a arg */
static void *owner_unlocker(void *arg)
{
	th_sleep_ms(500);
	CHECK_RC(lk(arg, F_SETLK, F_UNLCK, 100, 1), 0);
	return NULL;
}

static void owner_child(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("owners");
	weir_fs_t *fs2 = child_mount("owners-2");
	weir_file_t *f1 = child_open(fs, "/owners", O_CREAT | O_RDWR | O_TRUNC);
	weir_file_t *f2 = child_open(fs, "/owners", O_RDWR);
	weir_file_t *o2 = child_open(fs2, "/owners", O_RDWR);
	struct flock fl;

	/* bad calls */
	CHECK_RC(olk(f1, F_SETLK, F_WRLCK, 0, 10, 0, 1), -EINVAL);
	CHECK_RC(olk(f1, F_OFD_SETLK, F_WRLCK, 0, 10, OWNER_A, 1), -EINVAL);
	CHECK_RC(weir_lock_owner_release(f1, 0), -EINVAL);

	/* two owners of one mount exclude each other; one owner merges across handles */
	CHECK_RC(olk(f1, F_SETLK, F_WRLCK, 0, 10, OWNER_A, 4242), 0);
	CHECK_RC(olk(f2, F_SETLK, F_WRLCK, 5, 10, OWNER_A, 4242), 0); /* same owner: no conflict */
	CHECK_RC(olk(f2, F_SETLK, F_RDLCK, 14, 1, OWNER_B, 77), -EAGAIN);
	CHECK_RC(olk(f2, F_SETLK, F_RDLCK, 15, 1, OWNER_B, 77), 0);
	/* the process's own POSIX locks are another owner, another mount's too */
	CHECK_RC(lk(f1, F_SETLK, F_RDLCK, 3, 1), -EAGAIN);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 0, 1), -EAGAIN);
	/* F_GETLK reports the explicit owner's pid and its merged range */
	fl = mk_flock(F_RDLCK, 0, 0);
	CHECK_RC(weir_fcntl_lock(o2, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK && fl.l_start == 0 && fl.l_len == 15);
	CHECK_RC(fl.l_pid, 4242);
	fl = mk_flock(F_WRLCK, 0, 1);
	fl.l_pid = 77;
	CHECK_RC(weir_fcntl_lock_owner(f1, F_GETLK, &fl, OWNER_A), 0);
	CHECK(fl.l_type == F_UNLCK); /* its own locks never conflict */

	/* closing a handle (the process's close rule) leaves explicit owners' locks */
	CHECK_RC(weir_close(f2), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 0, 1), -EAGAIN);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 15, 1), -EAGAIN);
	/* weir_lock_owner_release drops all of one owner's locks on the file, not others' */
	CHECK_RC(weir_lock_owner_release(f1, OWNER_A), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 0, 15), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 15, 1), -EAGAIN);
	CHECK_RC(weir_lock_owner_release(f1, OWNER_B), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 15, 1), 0);
	/* an owner holding nothing: nothing to do */
	CHECK_RC(weir_lock_owner_release(f1, OWNER_A), 0);
	/* a blocking wait of an explicit owner is woken by the unlock */
	CHECK_RC(lk(o2, F_SETLK, F_UNLCK, 0, 0), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 100, 1), 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, owner_unlocker, o2) == 0);
	uint64_t t0 = th_now_ms();
	CHECK_RC(olk(f1, F_SETLKW, F_WRLCK, 100, 1, OWNER_B, 77), 0);
	CHECK(th_now_ms() - t0 >= 400);
	pthread_join(t, NULL);
	/* the mount's end drops them */
	CHECK_RC(weir_close(f1), 0);
	CHECK_RC(weir_umount(fs), 0);
	CHECK_RC(lk(o2, F_SETLK, F_WRLCK, 100, 1), 0);
	CHECK_RC(weir_close(o2), 0);
	child_exit(fs2);
}

static void test_locks_explicit_owner_as_weir_fuse_uses_it(void)
{
	CU_ASSERT_EQUAL(reap(spawn(owner_child, NULL), CHILD_TIMEOUT_MS), 0);
}

static const struct th_test tests[] = {
	TH_TEST(test_locks_getlk_flock_nb_edeadlk_close_rule),
	TH_TEST(test_locks_counter_under_setlkw_reaches_2000),
	TH_TEST(test_locks_o_append_from_8_processes_every_record_once),
	TH_TEST(test_locks_killed_holder_lock_freed_after_lease),
	TH_TEST(test_locks_evicted_client_gets_eio_then_reconnects),
	TH_TEST(test_locks_mds_restart_keeps_lock_and_wait),
	TH_TEST(test_locks_cancelled_wait_is_eintr_and_leaves_no_lock),
	TH_TEST(test_locks_explicit_owner_as_weir_fuse_uses_it),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("locks", suite_init, suite_clean, tests);
}
