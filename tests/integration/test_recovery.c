/*
 * tests/integration/test_recovery.c - the MDS's recovery window after a
 * kill -9 (mds/recovery.c, client/lease.c): locks and open handles replayed
 * by the clients that come back, the others evicted, everyone else waiting.
 * The MDS runs with --lease-time 2s --recovery-window 6s. As in test_locks,
 * every client is a forked process with its own weir_mount (the parent
 * never mounts), stepping through its script over pipes. Cases:
 *  - a held fcntl write lock (and a flock) survives: another client's
 *    F_GETLK reports the holder, F_SETLK gets EAGAIN (flock LOCK_NB
 *    EWOULDBLOCK), and an F_SETLKW that was blocked at the crash is granted
 *    only when the holder unlocks;
 *  - an open-unlinked file survives: read and written through its handle
 *    after the restart, its object kept until the last close, then
 *    destroyed;
 *  - a client that does not come back (SIGSTOPped) is evicted when the
 *    window ends: the lock it held goes to the waiting client, the MDS logs
 *    it, and, resumed, it finds its handle stale (-EIO);
 *  - a new client's create waits for the window (it does not fail), and
 *    `weir df` shows the MDT "recovering (0/1 clients, N s left)" meanwhile;
 *  - but no longer than the mount's recovery limit (-ETIMEDOUT after it),
 *    and a signal or weir_cancel() ends that wait with -EINTR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define STEP_TIMEOUT_MS	 30000
#define CHILD_TIMEOUT_MS 50000

static struct th_cluster *cl;

static int suite_init(void)
{
	static const char *const mds_args[] = { "--lease-time", "2s", "--recovery-window", "6s",
						NULL };
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

/* The parent reads step \a step from \a fd. \return true when it came. */
static bool parent_await(int fd, char step, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char got = 0;
	if (poll(&pfd, 1, timeout_ms) != 1 || read(fd, &got, 1) != 1 || got != step) {
		fprintf(stderr, "  parent: waiting for step %c, got '%c'\n", step, got ? got : '?');
		return false;
	}
	return true;
}

/* Has \a fd something to read now? */
static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	return poll(&pfd, 1, 0) == 1;
}

static void mds_crash_restart(void)
{
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
}

/* Does the MDS's log contain \a what? */
static bool mds_log_has(const char *what)
{
	char path[512], line[1024];
	bool found = false;
	snprintf(path, sizeof(path), "%s/mds.log", th_cluster_dir(cl));
	FILE *f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* ------------------------------------------------------------ a lock held across a restart */

struct lock_args {
	int la_a_held[2];  /* A -> parent 'H': locked */
	int la_a_go[2];	   /* parent -> A 'U': unlock now */
	int la_b_ready[2]; /* B -> parent 'W': about to wait */
	int la_b_done[2];  /* B -> parent 'B': granted */
	int la_c_ready[2]; /* C -> parent 'C': opened */
	int la_c_go[2];	   /* parent -> C 'G': the MDS restarted */
	int la_c_done[2];  /* C -> parent 'K': checked */
	pid_t la_a;
};

#define REC_OWNER 0xfeedf00d12345678ULL

static void lock_holder(void *arg)
{
	struct lock_args *a = arg;
	weir_fs_t *fs = child_mount("rec-holder");
	weir_file_t *fh = child_open(fs, "/rl", O_CREAT | O_RDWR | O_TRUNC);
	CHECK_RC(weir_pwrite(fh, "before", 6, 0), 6);
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), 0);
	weir_file_t *ff = child_open(fs, "/rf", O_CREAT | O_RDWR);
	CHECK_RC(weir_flock(ff, LOCK_EX), 0);
	/* and a lock of an explicit owner (weir-fuse's kind) */
	weir_file_t *fo = child_open(fs, "/ro", O_CREAT | O_RDWR);
	struct flock ol = mk_flock(F_WRLCK, 10, 10);
	ol.l_pid = 4242;
	CHECK_RC(weir_fcntl_lock_owner(fo, F_SETLK, &ol, REC_OWNER), 0);
	post(a->la_a_held[1], fails ? 'x' : 'H');
	await(a->la_a_go[0], 'U');
	CHECK_RC(weir_close(ff), 0); /* its flock goes with it */
	/* the replayed explicit owner is known to the mount's record: released */
	CHECK_RC(weir_close(fo), 0); /* not by a close */
	fo = child_open(fs, "/ro", O_RDWR);
	ol = mk_flock(F_WRLCK, 0, 0);
	CHECK_RC(weir_fcntl_lock_owner(fo, F_GETLK, &ol, 1), 0);
	CHECK(ol.l_type == F_WRLCK && ol.l_start == 10 && ol.l_len == 10);
	CHECK_RC(weir_lock_owner_release(fo, REC_OWNER), 0);
	ol = mk_flock(F_WRLCK, 0, 0);
	CHECK_RC(weir_fcntl_lock_owner(fo, F_GETLK, &ol, 1), 0);
	CHECK(ol.l_type == F_UNLCK);
	CHECK_RC(weir_close(fo), 0);
	/* still the holder after the restart: write, then unlock */
	CHECK_RC(weir_pwrite(fh, "after!", 6, 0), 6);
	CHECK_RC(lk(fh, F_SETLK, F_UNLCK, 0, 0), 0);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void lock_waiter(void *arg)
{
	struct lock_args *a = arg;
	weir_fs_t *fs = child_mount("rec-waiter");
	weir_file_t *fh = child_open(fs, "/rl", O_RDWR);
	post(a->la_b_ready[1], 'W');
	/* blocked across the crash; granted only once the holder unlocked */
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	char b[7] = "";
	CHECK_RC(weir_pread(fh, b, 6, 0), 6);
	CHECK(memcmp(b, "after!", 6) == 0);
	post(a->la_b_done[1], 'B');
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void lock_checker(void *arg)
{
	struct lock_args *a = arg;
	weir_fs_t *fs = child_mount("rec-checker");
	weir_file_t *fh = child_open(fs, "/rl", O_RDONLY);
	post(a->la_c_ready[1], 'C');
	await(a->la_c_go[0], 'G');
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_RDLCK;
	fl.l_whence = SEEK_SET;
	CHECK_RC(weir_fcntl_lock(fh, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK);
	CHECK_RC(fl.l_pid, a->la_a);
	CHECK_RC(lk(fh, F_SETLK, F_RDLCK, 0, 0), -EAGAIN);
	/* the holder's flock was replayed too */
	weir_file_t *ff = child_open(fs, "/rf", O_RDONLY);
	CHECK_RC(weir_flock(ff, LOCK_SH | LOCK_NB), -EWOULDBLOCK);
	CHECK_RC(weir_close(ff), 0);
	/* and its explicit owner's lock, with the pid it gave */
	weir_file_t *fo = child_open(fs, "/ro", O_RDONLY);
	fl = mk_flock(F_RDLCK, 0, 0);
	CHECK_RC(weir_fcntl_lock(fo, F_GETLK, &fl), 0);
	CHECK(fl.l_type == F_WRLCK && fl.l_start == 10 && fl.l_len == 10);
	CHECK_RC(fl.l_pid, 4242);
	CHECK_RC(weir_close(fo), 0);
	post(a->la_c_done[1], 'K');
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void test_recovery_fcntl_lock_held_across_mds_restart(void)
{
	struct lock_args a;
	memset(&a, 0, sizeof(a));
	mkpipe(a.la_a_held);
	mkpipe(a.la_a_go);
	mkpipe(a.la_b_ready);
	mkpipe(a.la_b_done);
	mkpipe(a.la_c_ready);
	mkpipe(a.la_c_go);
	mkpipe(a.la_c_done);
	pid_t ha = spawn(lock_holder, &a);
	a.la_a = ha;
	CU_ASSERT_FATAL(parent_await(a.la_a_held[0], 'H', STEP_TIMEOUT_MS));
	pid_t hc = spawn(lock_checker, &a);
	CU_ASSERT_FATAL(parent_await(a.la_c_ready[0], 'C', STEP_TIMEOUT_MS));
	pid_t hb = spawn(lock_waiter, &a);
	CU_ASSERT_FATAL(parent_await(a.la_b_ready[0], 'W', STEP_TIMEOUT_MS));
	th_sleep_ms(300); /* the waiter is queued on the MDS */
	uint64_t t0 = th_now_ms();
	mds_crash_restart();
	CU_ASSERT_EQUAL(write(a.la_c_go[1], "G", 1), 1);
	CU_ASSERT(parent_await(a.la_c_done[0], 'K', STEP_TIMEOUT_MS));
	printf("\n    lock checked %llu ms after the kill -9\n",
	       (unsigned long long)(th_now_ms() - t0));
	/* the waiter is still waiting: the holder has not unlocked */
	th_sleep_ms(500);
	CU_ASSERT(!readable(a.la_b_done[0]));
	CU_ASSERT_EQUAL(write(a.la_a_go[1], "U", 1), 1);
	CU_ASSERT(parent_await(a.la_b_done[0], 'B', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL(reap(ha, CHILD_TIMEOUT_MS), 0);
	CU_ASSERT_EQUAL(reap(hb, CHILD_TIMEOUT_MS), 0);
	CU_ASSERT_EQUAL(reap(hc, CHILD_TIMEOUT_MS), 0);
	int *pipes[] = { a.la_a_held, a.la_a_go, a.la_b_ready, a.la_b_done,
			 a.la_c_ready, a.la_c_go, a.la_c_done };
	for (size_t i = 0; i < sizeof(pipes) / sizeof(pipes[0]); i++)
		closepipe(pipes[i]);
}

/* ------------------------------------------------------------ an open-unlinked file */

#define ORPHAN_BYTES (200 * 1024 + 17)

struct orphan_info {
	uint64_t oi_seq, oi_oid;
	uint32_t oi_ost;
};

struct orphan_args {
	int oa_to_parent[2]; /* child -> parent: orphan_info, then 'U', 'R', 'D' */
	int oa_go[2];	     /* parent -> child: 'G' restarted, 'C' close */
};

static void orphan_child(void *arg)
{
	struct orphan_args *a = arg;
	weir_fs_t *fs = child_mount("rec-orphan");
	weir_file_t *fh = child_open(fs, "/orphan", O_CREAT | O_RDWR | O_TRUNC);
	char *w = malloc(ORPHAN_BYTES + 4), *r = malloc(ORPHAN_BYTES + 4);
	if (!w || !r)
		_exit(105);
	th_fill_pattern(w, ORPHAN_BYTES, 42);
	CHECK_RC(weir_pwrite(fh, w, ORPHAN_BYTES, 0), ORPHAN_BYTES);
	struct orphan_info oi;
	weir_fid_t fid;
	struct weir_layout_info li;
	memset(&oi, 0, sizeof(oi));
	CHECK_RC(weir_file_fid(fh, &fid), 0);
	CHECK_RC(weir_getstripe(fs, "/orphan", &li), 0);
	oi.oi_seq = fid.seq;
	oi.oi_oid = fid.oid;
	oi.oi_ost = li.wli_objs[0].woi_ost;
	CHECK_RC(weir_unlink(fs, "/orphan"), 0);
	struct stat st;
	CHECK_RC(weir_stat(fs, "/orphan", &st), -ENOENT);
	if (write(a->oa_to_parent[1], &oi, sizeof(oi)) != (ssize_t)sizeof(oi))
		_exit(106);
	post(a->oa_to_parent[1], fails ? 'x' : 'U');
	await(a->oa_go[0], 'G');
	/* after the restart: the data is there, and the handle still writes */
	CHECK_RC(weir_pread(fh, r, ORPHAN_BYTES, 0), ORPHAN_BYTES);
	CHECK(memcmp(w, r, ORPHAN_BYTES) == 0);
	CHECK_RC(weir_pwrite(fh, "tail", 4, ORPHAN_BYTES), 4);
	CHECK_RC(weir_pread(fh, r, ORPHAN_BYTES + 4, 0), ORPHAN_BYTES + 4);
	CHECK(memcmp(r + ORPHAN_BYTES, "tail", 4) == 0);
	CHECK_RC(weir_fstat(fh, &st), 0);
	CHECK_RC(st.st_size, ORPHAN_BYTES + 4);
	CHECK_RC(st.st_nlink, 0);
	post(a->oa_to_parent[1], fails ? 'x' : 'R');
	await(a->oa_go[0], 'C');
	CHECK_RC(weir_close(fh), 0);
	post(a->oa_to_parent[1], 'D');
	free(w);
	free(r);
	child_exit(fs);
}

static int orphan_object_exists(const struct orphan_info *oi, bool *exists)
{
	return th_ost_obj_getattr(cl, oi->oi_ost, oi->oi_seq, oi->oi_oid, 0, exists, NULL);
}

static void test_recovery_open_unlinked_file_survives_mds_restart(void)
{
	struct orphan_args a;
	struct orphan_info oi;
	bool exists = false;
	mkpipe(a.oa_to_parent);
	mkpipe(a.oa_go);
	pid_t p = spawn(orphan_child, &a);
	struct pollfd pfd = { .fd = a.oa_to_parent[0], .events = POLLIN };
	CU_ASSERT_FATAL(poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 &&
			read(a.oa_to_parent[0], &oi, sizeof(oi)) == (ssize_t)sizeof(oi));
	CU_ASSERT_FATAL(parent_await(a.oa_to_parent[0], 'U', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL(orphan_object_exists(&oi, &exists), 0);
	CU_ASSERT(exists);
	mds_crash_restart();
	CU_ASSERT_EQUAL(write(a.oa_go[1], "G", 1), 1);
	CU_ASSERT(parent_await(a.oa_to_parent[0], 'R', STEP_TIMEOUT_MS));
	/* the window is over (its only client replayed), the destroy thread has run */
	th_sleep_ms(2500);
	CU_ASSERT(mds_log_has("1 of 1 clients recovered (1 opens"));
	CU_ASSERT_EQUAL(orphan_object_exists(&oi, &exists), 0);
	CU_ASSERT(exists);
	CU_ASSERT_EQUAL(write(a.oa_go[1], "C", 1), 1);
	CU_ASSERT(parent_await(a.oa_to_parent[0], 'D', STEP_TIMEOUT_MS));
	/* the last close: the object goes */
	uint64_t end = th_now_ms() + 10000;
	do {
		th_sleep_ms(100);
		CU_ASSERT_EQUAL(orphan_object_exists(&oi, &exists), 0);
	} while (exists && th_now_ms() < end);
	CU_ASSERT(!exists);
	CU_ASSERT_EQUAL(reap(p, CHILD_TIMEOUT_MS), 0);
	closepipe(a.oa_to_parent);
	closepipe(a.oa_go);
}

/* ------------------------------------------------------------ a client that does not come back */

struct gone_args {
	int ga_held[2];	 /* gone -> parent 'H' */
	int ga_cont[2];	 /* parent -> gone 'C': resumed */
	int ga_ready[2]; /* taker -> parent 'W' */
	int ga_go[2];	 /* parent -> taker 'G' */
};

static void gone_holder(void *arg)
{
	struct gone_args *a = arg;
	weir_fs_t *fs = child_mount("rec-gone");
	weir_file_t *fh = child_open(fs, "/gone", O_CREAT | O_RDWR | O_TRUNC);
	CHECK_RC(weir_pwrite(fh, "gone", 4, 0), 4);
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), 0);
	post(a->ga_held[1], fails ? 'x' : 'H');
	await(a->ga_cont[0], 'C'); /* stopped meanwhile, past the recovery window */
	/* evicted at the end of the window: the handle is stale */
	char b[4];
	CHECK_RC(lk(fh, F_SETLK, F_WRLCK, 0, 0), -EIO);
	CHECK_RC(weir_pread(fh, b, 4, 0), -EIO);
	CHECK_RC(weir_close(fh), -EIO);
	/* the mount works again */
	fh = child_open(fs, "/gone", O_RDONLY);
	CHECK_RC(weir_pread(fh, b, 4, 0), 4);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void gone_taker(void *arg)
{
	struct gone_args *a = arg;
	weir_fs_t *fs = child_mount("rec-taker");
	weir_file_t *fh = child_open(fs, "/gone", O_RDWR);
	post(a->ga_ready[1], 'W');
	await(a->ga_go[0], 'G');
	uint64_t t0 = th_now_ms();
	/* waits for the window (the stopped holder is still expected), then gets it */
	CHECK_RC(lk(fh, F_SETLKW, F_WRLCK, 0, 0), 0);
	uint64_t waited = th_now_ms() - t0;
	printf("\n    lock granted %llu ms after the restart, at the end of the window\n",
	       (unsigned long long)waited);
	CHECK(waited >= 1000);
	CHECK_RC(weir_close(fh), 0);
	child_exit(fs);
}

static void test_recovery_missing_client_evicted_then_lock_granted(void)
{
	struct gone_args a;
	mkpipe(a.ga_held);
	mkpipe(a.ga_cont);
	mkpipe(a.ga_ready);
	mkpipe(a.ga_go);
	pid_t g = spawn(gone_holder, &a);
	CU_ASSERT_FATAL(parent_await(a.ga_held[0], 'H', STEP_TIMEOUT_MS));
	pid_t t = spawn(gone_taker, &a);
	CU_ASSERT_FATAL(parent_await(a.ga_ready[0], 'W', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL(kill(g, SIGSTOP), 0);
	mds_crash_restart();
	CU_ASSERT_EQUAL(write(a.ga_go[1], "G", 1), 1);
	CU_ASSERT_EQUAL(reap(t, CHILD_TIMEOUT_MS), 0);
	CU_ASSERT(mds_log_has("client=rec-gone"));
	CU_ASSERT(mds_log_has("1 of 2 clients recovered"));
	CU_ASSERT(mds_log_has("1 evicted"));
	CU_ASSERT_EQUAL(kill(g, SIGCONT), 0);
	CU_ASSERT_EQUAL(write(a.ga_cont[1], "C", 1), 1);
	CU_ASSERT_EQUAL(reap(g, CHILD_TIMEOUT_MS), 0);
	closepipe(a.ga_held);
	closepipe(a.ga_cont);
	closepipe(a.ga_ready);
	closepipe(a.ga_go);
}

/* ------------------------------------------------------------ a new client during the window */

struct new_args {
	int na_ready[2]; /* sleepy -> parent 'K' */
	int na_exit[2];	 /* parent -> sleepy 'E' */
};

static void new_sleepy(void *arg)
{
	struct new_args *a = arg;
	weir_fs_t *fs = child_mount("rec-sleepy");
	post(a->na_ready[1], 'K');
	await(a->na_exit[0], 'E'); /* stopped across the restart: never replays */
	child_exit(fs);
}

static void new_client(void *arg)
{
	(void)arg;
	uint64_t t0 = th_now_ms();
	weir_fs_t *fs = child_mount("rec-new");
	CHECK_RC(th_put(fs, "/newfile", "hello", 5), 0);
	uint64_t waited = th_now_ms() - t0;
	printf("\n    a new client's create waited %llu ms for the window\n",
	       (unsigned long long)waited);
	CHECK(waited >= 1500);
	char b[8] = "";
	CHECK_RC(th_get(fs, "/newfile", b, sizeof(b)), 5);
	CHECK(memcmp(b, "hello", 5) == 0);
	child_exit(fs);
}

/* The text of the last th_cluster_cli(). */
static void cli_out(char *buf, size_t len)
{
	FILE *f = fopen(th_cluster_cli_out(cl), "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

static void test_recovery_new_client_waits_and_df_shows_window(void)
{
	struct new_args a;
	char out[8192];
	mkpipe(a.na_ready);
	mkpipe(a.na_exit);
	pid_t s = spawn(new_sleepy, &a);
	CU_ASSERT_FATAL(parent_await(a.na_ready[0], 'K', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL(kill(s, SIGSTOP), 0);
	mds_crash_restart();
	CU_ASSERT_EQUAL(th_cluster_cli(cl, "df"), 0);
	cli_out(out, sizeof(out));
	printf("\n%s", out);
	CU_ASSERT(strstr(out, "MDT:0] recovering (0/1 clients, ") != NULL);
	CU_ASSERT(strstr(out, " s left)") != NULL);
	pid_t n = spawn(new_client, NULL);
	CU_ASSERT_EQUAL(reap(n, CHILD_TIMEOUT_MS), 0);
	/* over: no more recovering line */
	CU_ASSERT_EQUAL(th_cluster_cli(cl, "df"), 0);
	cli_out(out, sizeof(out));
	CU_ASSERT(strstr(out, "recovering") == NULL);
	CU_ASSERT(mds_log_has("0 of 1 clients recovered"));
	CU_ASSERT_EQUAL(kill(s, SIGCONT), 0);
	CU_ASSERT_EQUAL(write(a.na_exit[1], "E", 1), 1);
	CU_ASSERT_EQUAL(reap(s, CHILD_TIMEOUT_MS), 0);
	closepipe(a.na_ready);
	closepipe(a.na_exit);
}

/* ------------------------------------------------------------ the window's wait ends */

struct win_waiter {
	pthread_t ww_thread;
	weir_fs_t *ww_fs;
	const char *ww_path;
	bool ww_cancel; /* arm a cancel point first */
	weir_cancel_t *_Atomic ww_point;
	int ww_rc;
	uint64_t ww_ms;
};

static void *win_waiter_main(void *arg)
{
	struct win_waiter *w = arg;
	if (w->ww_cancel)
		atomic_store(&w->ww_point, weir_cancel_arm());
	uint64_t t0 = th_now_ms();
	w->ww_rc = th_put(w->ww_fs, w->ww_path, "x", 1);
	w->ww_ms = th_now_ms() - t0;
	if (w->ww_cancel)
		weir_cancel_disarm();
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* In a child: a mount named \a name with a recovery limit of 1 s (a soft mount). */
static weir_fs_t *soft_mount(const char *name)
{
	unsetenv("WEIR_RECOVERY_TIMEOUT");
	struct weir_mount_opts o;
	weir_fs_t *soft = NULL;
	memset(&o, 0, sizeof(o));
	o.wmo_size = sizeof(o);
	o.wmo_client_name = who = name;
	o.wmo_recovery_timeout_s = 1;
	CHECK_RC(weir_mount_with(th_cluster_mds_addr(cl), &o, &soft), 0);
	if (!soft)
		_exit(103);
	return soft;
}

static void limited_client(void *arg)
{
	(void)arg;
	/* a mount with a limit of 1 s: its create fails then, not at the window's end */
	weir_fs_t *soft = soft_mount("rec-limited");
	struct win_waiter w = { .ww_fs = soft, .ww_path = "/limited" };
	win_waiter_main(&w);
	printf("\n    limit 1 s: rc %d after %llu ms\n", w.ww_rc, (unsigned long long)w.ww_ms);
	CHECK_RC(w.ww_rc, -ETIMEDOUT);
	CHECK(w.ww_ms >= 900 && w.ww_ms < 3000);

	/* without a limit: a signal handler that ran ends the wait, SA_RESTART or not */
	weir_fs_t *hard = child_mount("rec-hard");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK_RC(sigaction(SIGUSR1, &sa, NULL), 0);
	w = (struct win_waiter){ .ww_fs = hard, .ww_path = "/signalled" };
	CHECK_RC(pthread_create(&w.ww_thread, NULL, win_waiter_main, &w), 0);
	th_sleep_ms(500);
	pthread_kill(w.ww_thread, SIGUSR1);
	pthread_join(w.ww_thread, NULL);
	printf("    signal after 500 ms: rc %d after %llu ms\n", w.ww_rc,
	       (unsigned long long)w.ww_ms);
	CHECK_RC(w.ww_rc, -EINTR);
	CHECK(w.ww_ms >= 400 && w.ww_ms < 1500);

	/* and so does weir_cancel() of the thread's cancel point */
	struct win_waiter c = { .ww_fs = hard, .ww_path = "/cancelled", .ww_cancel = true };
	CHECK_RC(pthread_create(&c.ww_thread, NULL, win_waiter_main, &c), 0);
	th_sleep_ms(500);
	weir_cancel_t *pt = atomic_load(&c.ww_point);
	CHECK(pt != NULL);
	if (pt)
		weir_cancel(pt);
	pthread_join(c.ww_thread, NULL);
	printf("    weir_cancel after 500 ms: rc %d after %llu ms\n", c.ww_rc,
	       (unsigned long long)c.ww_ms);
	CHECK_RC(c.ww_rc, -EINTR);
	CHECK(c.ww_ms >= 400 && c.ww_ms < 1500);
	weir_umount(hard);
	child_exit(soft);
}

static void test_recovery_window_wait_ends_at_limit_signal_or_cancel(void)
{
	struct new_args a;
	mkpipe(a.na_ready);
	mkpipe(a.na_exit);
	pid_t s = spawn(new_sleepy, &a); /* keeps the window open for all its 6 s */
	CU_ASSERT_FATAL(parent_await(a.na_ready[0], 'K', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL(kill(s, SIGSTOP), 0);
	mds_crash_restart();
	uint64_t t0 = th_now_ms();
	pid_t n = spawn(limited_client, NULL);
	CU_ASSERT_EQUAL(reap(n, CHILD_TIMEOUT_MS), 0);
	uint64_t took = th_now_ms() - t0;
	CU_ASSERT(took < 5000); /* all of it within the window */
	CU_ASSERT_EQUAL(kill(s, SIGCONT), 0);
	CU_ASSERT_EQUAL(write(a.na_exit[1], "E", 1), 1);
	CU_ASSERT_EQUAL(reap(s, CHILD_TIMEOUT_MS), 0);
	closepipe(a.na_ready);
	closepipe(a.na_exit);
}

/* ------------------------------------------------------------ a lock call while the MDS is away */

struct away_args {
	int aa_ready[2]; /* child -> parent 'R': mounted, file open */
	int aa_gone[2];  /* parent -> child 'K': the MDS is killed */
	int aa_done[2];  /* child -> parent 'D': the lock call ended */
	int aa_back[2];  /* parent -> child 'B': the MDS is back */
};

static void away_locker(void *arg)
{
	struct away_args *a = arg;
	weir_fs_t *soft = soft_mount("rec-away");
	weir_file_t *fh = child_open(soft, "/away", O_CREAT | O_RDWR);
	post(a->aa_ready[1], 'R');
	await(a->aa_gone[0], 'K');
	uint64_t t0 = th_now_ms();
	int rc = lk(fh, F_SETLK, F_WRLCK, 0, 10);
	uint64_t ms = th_now_ms() - t0;
	printf("\n    lock with the MDS away, limit 1 s: rc %d after %llu ms\n", rc,
	       (unsigned long long)ms);
	CHECK_RC(rc, -ETIMEDOUT); /* the mount's limit, as for any other call */
	CHECK(ms >= 900 && ms < 3000);
	post(a->aa_done[1], 'D');
	await(a->aa_back[0], 'B');
	weir_close(fh);
	child_exit(soft);
}

/*
 * A lock request that meets an unreachable MDS waits for it as every call
 * does, within the mount's recovery limit: -ETIMEDOUT after 1 s on a mount
 * with a 1 s limit (it used to retry for lease + RPC timeout on its own
 * and then fail with the transport's error).
 */
/* A hard mount's call waits out a recovery window an earlier test left open. */
static void window_waiter(void *arg)
{
	(void)arg;
	weir_fs_t *fs = child_mount("rec-window-wait");
	struct stat st;
	CHECK_RC(weir_stat(fs, "/", &st), 0);
	child_exit(fs);
}

static void test_recovery_lock_call_waits_within_mount_limit(void)
{
	struct away_args a;
	/* the previous test's restart leaves a window open for its stopped
	 * client (up to 6 s); this test's 1 s mount must not start inside it */
	CU_ASSERT_EQUAL_FATAL(reap(spawn(window_waiter, NULL), CHILD_TIMEOUT_MS), 0);
	mkpipe(a.aa_ready);
	mkpipe(a.aa_gone);
	mkpipe(a.aa_done);
	mkpipe(a.aa_back);
	pid_t c = spawn(away_locker, &a);
	CU_ASSERT_FATAL(parent_await(a.aa_ready[0], 'R', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL(write(a.aa_gone[1], "K", 1), 1);
	CU_ASSERT(parent_await(a.aa_done[0], 'D', STEP_TIMEOUT_MS));
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL(write(a.aa_back[1], "B", 1), 1);
	CU_ASSERT_EQUAL(reap(c, CHILD_TIMEOUT_MS), 0);
	closepipe(a.aa_ready);
	closepipe(a.aa_gone);
	closepipe(a.aa_done);
	closepipe(a.aa_back);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_recovery_fcntl_lock_held_across_mds_restart),
		TH_TEST(test_recovery_open_unlinked_file_survives_mds_restart),
		TH_TEST(test_recovery_missing_client_evicted_then_lock_granted),
		TH_TEST(test_recovery_new_client_waits_and_df_shows_window),
		TH_TEST(test_recovery_window_wait_ends_at_limit_signal_or_cancel),
		TH_TEST(test_recovery_lock_call_waits_within_mount_limit),
		TH_TEST_END,
	};
	return th_cunit_run("recovery", suite_init, suite_clean, tests);
}
