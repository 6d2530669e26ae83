/*
 * tests/integration/test_replay.c - calls wait for a server that went away
 * and are sent again (client/recover.c); resent MDS requests are answered
 * from the MDS's reply cache, not redone (mds/reply.c). README "Recovery".
 *
 * Real daemons: the MDS and an OSS are killed with SIGKILL and restarted
 * while a loop of creates, writes, reads and unlinks runs; the MDS's fault
 * hook (WEIR_MDS_FAULT_FILE) makes it die right after it committed a
 * request and before the reply left, so the client must resend a request
 * the MDS already applied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"
#include "weir.pb-c.h"

static struct th_cluster *cl;
static weir_fs_t *fs;
static char log_path[512];
static char fault_path[512];

static int suite_init(void)
{
	/* libweir's log (read once per process, at the first mount) */
	snprintf(log_path, sizeof(log_path), "/tmp/weir-test-recovery-%d.log", (int)getpid());
	unlink(log_path);
	setenv("WEIR_LOG", log_path, 1);
	setenv("WEIR_LOG_LEVEL", "notice", 1);
	unsetenv("WEIR_RECOVERY_TIMEOUT");
	snprintf(fault_path, sizeof(fault_path), "/tmp/weir-test-recovery-%d.fault",
		 (int)getpid());
	unlink(fault_path);
	setenv("WEIR_MDS_FAULT_FILE", fault_path, 1); /* the servers inherit it */
	struct th_cluster_opts o = { .tco_nr_oss = 2, .tco_ost_per_oss = 1 };
	return th_cluster_mount(&o, &cl, &fs) ? -1 : 0;
}

static int suite_clean(void)
{
	unlink(fault_path);
	int rc = th_cluster_umount_stop(cl, fs);
	if (!th_failed())
		unlink(log_path);
	return rc;
}

/* Lines of the libweir log from byte \a from on that contain \a what and \a also. */
static int log_count(long from, const char *what, const char *also)
{
	FILE *f = fopen(log_path, "r");
	char line[1024];
	int n = 0;
	if (!f)
		return -1;
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, what) && strstr(line, also))
			n++;
	fclose(f);
	return n;
}

static long log_size(void)
{
	FILE *f = fopen(log_path, "r");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

/* ------------------------------------------------------------ the load */

#define NR_WORKERS 3
#define FILE_SIZE (256 * 1024 + 17)

struct worker {
	pthread_t w_thread;
	int w_id;
	atomic_bool *w_stop;
	int w_iters;
	int w_failed;    /* calls that returned an error */
	int w_bad;       /* bytes or names that came back wrong */
	char w_first[256];
};

static void worker_fail(struct worker *w, const char *what, long rc)
{
	w->w_failed++;
	if (!w->w_first[0])
		snprintf(w->w_first, sizeof(w->w_first), "iter %d: %s: %s (%ld)", w->w_iters,
			 what, strerror((int)-rc), rc);
}

/*
 * One create, write, fsync, close, reopen, read, stat, rename, unlink. A
 * create right after an MDS restart waits for the OSTs to register again
 * (mds_cmap_park): an ENOSPC then is a failure like any other.
 */
static void worker_iter(struct worker *w, uint8_t *wbuf, uint8_t *rbuf)
{
	char path[64], path2[64];
	snprintf(path, sizeof(path), "/load/w%d-%d", w->w_id, w->w_iters);
	snprintf(path2, sizeof(path2), "/load/w%d-%d.done", w->w_id, w->w_iters);
	th_fill_pattern(wbuf, FILE_SIZE, (uint64_t)(w->w_id * 100000 + w->w_iters));
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, O_CREAT | O_EXCL | O_RDWR, 0644, &fh);
	if (rc) {
		worker_fail(w, "create", rc);
		return;
	}
	ssize_t n = weir_pwrite(fh, wbuf, FILE_SIZE, 0);
	if (n != FILE_SIZE)
		worker_fail(w, "pwrite", n < 0 ? n : -EIO);
	rc = weir_fsync(fh);
	if (rc)
		worker_fail(w, "fsync", rc);
	rc = weir_close(fh);
	if (rc)
		worker_fail(w, "close", rc);
	rc = weir_rename(fs, path, path2);
	if (rc)
		worker_fail(w, "rename", rc);
	fh = NULL;
	rc = weir_open(fs, path2, O_RDONLY, 0, &fh);
	if (rc) {
		worker_fail(w, "open", rc);
		return;
	}
	memset(rbuf, 0, FILE_SIZE);
	n = weir_pread(fh, rbuf, FILE_SIZE, 0);
	if (n != FILE_SIZE)
		worker_fail(w, "pread", n < 0 ? n : -EIO);
	else if (memcmp(rbuf, wbuf, FILE_SIZE))
		w->w_bad++;
	struct stat st;
	rc = weir_fstat(fh, &st);
	if (rc)
		worker_fail(w, "fstat", rc);
	else if (st.st_size != FILE_SIZE)
		w->w_bad++;
	rc = weir_close(fh);
	if (rc)
		worker_fail(w, "close", rc);
	rc = weir_unlink(fs, path2);
	if (rc)
		worker_fail(w, "unlink", rc);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t *wbuf = malloc(FILE_SIZE), *rbuf = malloc(FILE_SIZE);
	while (wbuf && rbuf && !atomic_load(w->w_stop)) {
		worker_iter(w, wbuf, rbuf);
		w->w_iters++;
	}
	free(wbuf);
	free(rbuf);
	return NULL;
}

/*
 * Run the load while server \a id is killed and restarted \a rounds times;
 * \a target: how the client's log names it.
 */
static void load_across_kills(int id, int rounds, const char *target)
{
	atomic_bool stop = false;
	struct worker w[NR_WORKERS];
	long log_from = log_size();
	memset(w, 0, sizeof(w));
	weir_mkdir(fs, "/load", 0755);
	for (int i = 0; i < NR_WORKERS; i++) {
		w[i].w_id = i;
		w[i].w_stop = &stop;
		CU_ASSERT_FATAL(!pthread_create(&w[i].w_thread, NULL, worker_main, &w[i]));
	}
	for (int r = 0; r < rounds; r++) {
		th_sleep_ms(400);
		CU_ASSERT_EQUAL(th_server_kill(cl, id), 0);
		th_sleep_ms(700); /* the load meets the server away */
		CU_ASSERT_EQUAL(th_server_start(cl, id), 0);
		CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	}
	th_sleep_ms(500);
	atomic_store(&stop, true);
	int iters = 0, failed = 0, bad = 0;
	for (int i = 0; i < NR_WORKERS; i++) {
		pthread_join(w[i].w_thread, NULL);
		iters += w[i].w_iters;
		failed += w[i].w_failed;
		bad += w[i].w_bad;
		if (w[i].w_first[0])
			printf("\n  worker %d: first failure: %s", i, w[i].w_first);
	}
	printf("(%d iterations, %d failed calls, %d wrong) ", iters, failed, bad);
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(iters > NR_WORKERS);
	/* one line when the target went away and one when it came back, per round */
	int ng = log_count(log_from, target, "is unreachable; calls wait");
	int nb = log_count(log_from, target, "is back after");
	printf("(log: %d gone, %d back) ", ng, nb);
	CU_ASSERT(ng >= 1 && ng <= rounds);
	CU_ASSERT_EQUAL(nb, ng);
}

static void test_replay_mds_kill9_under_load_no_failed_call(void)
{
	load_across_kills(TH_MDS, 2, "target=MDT0000 ");
}

static void test_replay_oss_kill9_under_load_no_failed_call(void)
{
	/* every file has a stripe on each OST: all I/O meets the outage */
	CU_ASSERT_EQUAL(th_stripe_dir(fs, "/load", 2, 65536), 0);
	load_across_kills(0, 2, "target=OST"); /* its index is the MDS's choice */
}

/* ------------------------------------------------------------ resends */

static void fault_arm(unsigned op)
{
	FILE *f = fopen(fault_path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%u\n", op);
	fclose(f);
}

enum rs_op { RS_CREATE, RS_MKDIR, RS_UNLINK, RS_RENAME, RS_SYMLINK, RS_RENAME2, RS_UNLINK2 };

struct rs_call {
	pthread_t rc_thread;
	enum rs_op rc_op;
	int rc_rc;
	weir_fs_t *rc_fs; /* NULL: fs */
};

static void *rs_main(void *arg)
{
	struct rs_call *c = arg;
	weir_file_t *fh = NULL;
	weir_fs_t *m = c->rc_fs ? c->rc_fs : fs;
	switch (c->rc_op) {
	case RS_CREATE:
		c->rc_rc = weir_open(m, "/rs/new", O_CREAT | O_EXCL | O_WRONLY, 0640, &fh);
		if (!c->rc_rc) {
			if (weir_pwrite(fh, "hello", 5, 0) != 5)
				c->rc_rc = -EIO;
			int crc = weir_close(fh);
			if (!c->rc_rc)
				c->rc_rc = crc;
		}
		break;
	case RS_MKDIR:
		c->rc_rc = weir_mkdir(m, "/rs/dir", 0750);
		break;
	case RS_UNLINK:
		c->rc_rc = weir_unlink(m, "/rs/victim");
		break;
	case RS_RENAME:
		c->rc_rc = weir_rename(m, "/rs/from", "/rs/to");
		break;
	case RS_SYMLINK:
		c->rc_rc = weir_symlink(m, "to", "/rs/link");
		break;
	case RS_RENAME2:
		c->rc_rc = weir_rename(m, "/rs2/from", "/rs2/to");
		break;
	case RS_UNLINK2:
		c->rc_rc = weir_unlink(m, "/rs2/gone");
		break;
	}
	return NULL;
}

/*
 * Run \a op in a thread with the MDS's fault hook armed for \a wire_op: the
 * MDS commits it and dies before the reply; restart it here, and the call
 * must complete as if nothing happened. \return the call's result.
 */
static int rs_run_on(weir_fs_t *on, enum rs_op op, unsigned wire_op)
{
	struct rs_call c = { .rc_op = op, .rc_fs = on };
	fault_arm(wire_op);
	CU_ASSERT_FATAL(!pthread_create(&c.rc_thread, NULL, rs_main, &c));
	uint64_t t0 = th_now_ms();
	while (th_server_alive(cl, TH_MDS) && th_now_ms() - t0 < 10000)
		th_sleep_ms(10);
	bool died = !th_server_alive(cl, TH_MDS);
	CU_ASSERT(died); /* the hook fired: the request was applied, its reply lost */
	CU_ASSERT_EQUAL(access(fault_path, F_OK), -1);
	th_sleep_ms(200); /* the client meets the MDS away */
	if (died) {
		th_server_exit_expected(cl, TH_MDS);
		CU_ASSERT_EQUAL(th_server_start(cl, TH_MDS), 0);
	}
	pthread_join(c.rc_thread, NULL);
	unlink(fault_path);
	return c.rc_rc;
}

static int rs_run(enum rs_op op, unsigned wire_op)
{
	return rs_run_on(NULL, op, wire_op);
}

static void test_replay_resent_requests_answered_not_redone(void)
{
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rs", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rs/victim", "x", 1), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rs/from", "abc", 3), 0);

	/* each is applied and committed by the MDS, which dies before the reply */
	CU_ASSERT_EQUAL(th_rc("create O_EXCL", rs_run(RS_CREATE, WEIR__WIRE_OP__MDS_OPEN)), 0);
	CU_ASSERT_EQUAL(th_rc("mkdir", rs_run(RS_MKDIR, WEIR__WIRE_OP__MDS_MKDIR)), 0);
	CU_ASSERT_EQUAL(th_rc("unlink", rs_run(RS_UNLINK, WEIR__WIRE_OP__MDS_UNLINK)), 0);
	CU_ASSERT_EQUAL(th_rc("rename", rs_run(RS_RENAME, WEIR__WIRE_OP__MDS_RENAME)), 0);
	CU_ASSERT_EQUAL(th_rc("symlink", rs_run(RS_SYMLINK, WEIR__WIRE_OP__MDS_SYMLINK)), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);

	/* the namespace is what the calls said */
	char buf[16] = { 0 };
	CU_ASSERT_EQUAL(th_get(fs, "/rs/new", buf, sizeof(buf)), 5);
	CU_ASSERT_STRING_EQUAL(buf, "hello");
	CU_ASSERT_EQUAL(weir_stat(fs, "/rs/new", &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rs/dir", &st), 0);
	CU_ASSERT(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(weir_stat(fs, "/rs/victim", &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rs/from", &st), -ENOENT);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(th_get(fs, "/rs/to", buf, sizeof(buf)), 3);
	CU_ASSERT_STRING_EQUAL(buf, "abc");
	CU_ASSERT_EQUAL(weir_lstat(fs, "/rs/link", &st), 0);
	CU_ASSERT(S_ISLNK(st.st_mode));
	int n = 0;
	weir_dir_t *d = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/rs", &d), 0);
	struct weir_dirent de;
	while (weir_readdir(d, &de) > 0)
		if (strcmp(de.d_name, ".") && strcmp(de.d_name, ".."))
			n++;
	weir_closedir(d);
	CU_ASSERT_EQUAL(n, 4); /* new, dir, to, link */
}

/* weir_stat() of \a path on \a m: its size, or -errno. */
static long long size_of(weir_fs_t *m, const char *path)
{
	struct stat st;
	int rc = weir_stat(m, path, &st);
	return rc ? rc : (long long)st.st_size;
}

/*
 * A rename or unlink by a mount that caches names, applied by the MDS,
 * which dies before the reply: resent to the restarted MDS and answered
 * from its reply cache (with no FIDs: RenameRep empty, no
 * AttrRep.unlinked), it leaves nothing stale in that mount: the old name
 * is gone, the target is the moved file with the rename's ctime, the
 * unlinked name is gone. (The restart starts a new session, which drops
 * the mount's cache by itself: the no-FID fallback in client/mdc.c is not
 * what this reaches; a resend on a broken connection to the same MDS
 * would be, and no test makes one yet.)
 */
static void test_replay_resent_changes_leave_no_stale_cache(void)
{
	struct weir_mount_opts o;
	memset(&o, 0, sizeof(o));
	o.wmo_size = sizeof(o);
	o.wmo_client_name = "replay-names";
	o.wmo_md_cache = true;
	weir_fs_t *c = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount_with(th_cluster_mds_addr(cl), &o, &c), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rs2", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rs2/from", "abc", 3), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rs2/to", "1234567", 7), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rs2/gone", "x", 1), 0);
	for (int i = 0; i < 2; i++) { /* cached by the second round */
		CU_ASSERT_EQUAL(size_of(c, "/rs2/from"), 3);
		CU_ASSERT_EQUAL(size_of(c, "/rs2/to"), 7);
		CU_ASSERT_EQUAL(size_of(c, "/rs2/gone"), 1);
	}
	struct weir_md_stats s0, s1;
	CU_ASSERT_EQUAL(weir_md_stats(c, &s0), 0);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/to"), 7);
	CU_ASSERT_EQUAL(weir_md_stats(c, &s1), 0);
	CU_ASSERT(s1.wms_hits > s0.wms_hits); /* (the precondition: cached) */

	CU_ASSERT_EQUAL(th_rc("rename", rs_run_on(c, RS_RENAME2, WEIR__WIRE_OP__MDS_RENAME)), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/from"), -ENOENT);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/to"), 3);
	/* the moved file's ctime is the rename's, as a mount that cached
	 * nothing reads it */
	weir_fs_t *fresh = NULL;
	o.wmo_client_name = "replay-fresh";
	o.wmo_md_cache = false;
	CU_ASSERT_EQUAL_FATAL(weir_mount_with(th_cluster_mds_addr(cl), &o, &fresh), 0);
	struct stat sc, sf;
	CU_ASSERT_EQUAL(weir_stat(c, "/rs2/to", &sc), 0);
	CU_ASSERT_EQUAL(weir_stat(fresh, "/rs2/to", &sf), 0);
	CU_ASSERT(sc.st_ctim.tv_sec == sf.st_ctim.tv_sec && sc.st_ctim.tv_nsec == sf.st_ctim.tv_nsec);
	CU_ASSERT_EQUAL(weir_umount(fresh), 0);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/gone"), 1);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/gone"), 1);
	CU_ASSERT_EQUAL(th_rc("unlink", rs_run_on(c, RS_UNLINK2, WEIR__WIRE_OP__MDS_UNLINK)), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/gone"), -ENOENT);
	CU_ASSERT_EQUAL(size_of(fs, "/rs2/gone"), -ENOENT);
	CU_ASSERT_EQUAL(size_of(c, "/rs2/to"), 3);
	CU_ASSERT_EQUAL(weir_umount(c), 0);
}

/* ------------------------------------------------------------ limits and signals */

struct waiter {
	pthread_t wt_thread;
	int wt_rc;
	uint64_t wt_ms;
	weir_fs_t *wt_fs;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct stat st;
	uint64_t t0 = th_now_ms();
	w->wt_rc = weir_stat(w->wt_fs, "/rs/to", &st);
	w->wt_ms = th_now_ms() - t0;
	return NULL;
}

struct reader {
	pthread_t rd_thread;
	weir_file_t *rd_fh;
	char *rd_buf;
	size_t rd_len;
	ssize_t rd_rc;
	uint64_t rd_ms;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	uint64_t t0 = th_now_ms();
	rd->rd_rc = weir_pread(rd->rd_fh, rd->rd_buf, rd->rd_len, 0);
	rd->rd_ms = th_now_ms() - t0;
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void test_replay_signal_interrupts_wait_eintr(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART; /* even so: a wait for recovery is never restarted */
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_EQUAL_FATAL(sigaction(SIGUSR1, &sa, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	struct waiter w = { .wt_fs = fs };
	CU_ASSERT_FATAL(!pthread_create(&w.wt_thread, NULL, waiter_main, &w));
	th_sleep_ms(1500); /* well into the wait (hard mount: no limit) */
	pthread_kill(w.wt_thread, SIGUSR1);
	pthread_join(w.wt_thread, NULL);
	printf("(rc %d after %llu ms) ", w.wt_rc, (unsigned long long)w.wt_ms);
	CU_ASSERT_EQUAL(w.wt_rc, -EINTR);
	CU_ASSERT(w.wt_ms >= 1400 && w.wt_ms < 3500);
	CU_ASSERT_EQUAL(th_server_start(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/rs/to", &st), 0);

	/* a read waiting for an OSS: EINTR too (not EIO) */
	static char data[256 * 1024];
	memset(data, 'r', sizeof(data));
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/load/intr", data, sizeof(data)), 0); /* both OSTs */
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/load/intr", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, 0), 0);
	struct reader rd = { .rd_fh = fh, .rd_buf = data, .rd_len = sizeof(data) };
	CU_ASSERT_FATAL(!pthread_create(&rd.rd_thread, NULL, reader_main, &rd));
	th_sleep_ms(1500);
	pthread_kill(rd.rd_thread, SIGUSR1);
	pthread_join(rd.rd_thread, NULL);
	printf("(read: rc %zd after %llu ms) ", rd.rd_rc, (unsigned long long)rd.rd_ms);
	CU_ASSERT_EQUAL(rd.rd_rc, -EINTR);
	CU_ASSERT(rd.rd_ms >= 1400 && rd.rd_ms < 3500);
	CU_ASSERT_EQUAL(th_server_start(cl, 0), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, data, sizeof(data), 0), (ssize_t)sizeof(data));
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

static void test_replay_timeout_env_fails_after_limit(void)
{
	weir_fs_t *soft = NULL;
	setenv("WEIR_RECOVERY_TIMEOUT", "2", 1);
	int rc = weir_mount(th_cluster_mds_addr(cl), &soft);
	unsetenv("WEIR_RECOVERY_TIMEOUT");
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	struct waiter w = { .wt_fs = soft };
	waiter_main(&w);
	printf("(rc %d after %llu ms) ", w.wt_rc, (unsigned long long)w.wt_ms);
	CU_ASSERT_EQUAL(w.wt_rc, -ETIMEDOUT);
	CU_ASSERT(w.wt_ms >= 1900 && w.wt_ms < 4000);

	/* a mount option says the same, and wins over the environment */
	struct weir_mount_opts o = { .wmo_size = sizeof(o), .wmo_recovery_timeout_s = 1 };
	CU_ASSERT_EQUAL(th_server_start(cl, TH_MDS), 0);
	weir_fs_t *soft1 = NULL;
	setenv("WEIR_RECOVERY_TIMEOUT", "0", 1);
	CU_ASSERT_EQUAL_FATAL(weir_mount_with(th_cluster_mds_addr(cl), &o, &soft1), 0);
	unsetenv("WEIR_RECOVERY_TIMEOUT");
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	w.wt_fs = soft1;
	waiter_main(&w);
	printf("(option: rc %d after %llu ms) ", w.wt_rc, (unsigned long long)w.wt_ms);
	CU_ASSERT_EQUAL(w.wt_rc, -ETIMEDOUT);
	CU_ASSERT(w.wt_ms >= 900 && w.wt_ms < 3000);

	CU_ASSERT_EQUAL(th_server_start(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	weir_umount(soft1);
	weir_umount(soft);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_replay_mds_kill9_under_load_no_failed_call),
		TH_TEST(test_replay_oss_kill9_under_load_no_failed_call),
		TH_TEST(test_replay_resent_requests_answered_not_redone),
		TH_TEST(test_replay_resent_changes_leave_no_stale_cache),
		TH_TEST(test_replay_signal_interrupts_wait_eintr),
		TH_TEST(test_replay_timeout_env_fails_after_limit),
		TH_TEST_END,
	};
	return th_cunit_run("recovery", suite_init, suite_clean, tests);
}
