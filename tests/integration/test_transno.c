/*
 * tests/integration/test_transno.c - MDS replies carry the reply prefix
 * (transno, last_committed; net/frame.h), libweir keeps each request
 * applied and not yet synced until a reply says the MDS synced it
 * (client/replay.c), and after a crash of the MDS that lost its log's
 * unsynced tail the clients send those requests again and the MDS re-runs
 * them in transno order, creates with their FIDs and layouts
 * (mds/recovery.c): every acknowledged change is back.
 *
 * Real daemons; the MDS runs --commit-interval 60s, so its log is synced
 * only when a client asks (MDS_SYNC: weir_fid_fsync(fs, NULL)) within a
 * test, and what a test keeps stays kept until it asks; and with
 * WEIR_MDS_TEST_LOSE_UNSYNCED=1 (mds/kv.c), so a kill -9 loses what is not
 * synced, as a power loss of its host would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <CUnit/CUnit.h>

#include "client/client_int.h"
#include "harness.h"
#include "th_weir.h"

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	static const char *const mds_args[] = { "--commit-interval", "60s", "--lease-time", "2s",
						"--recovery-window", "8s", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 2,
				     .tco_mds_args = mds_args };
	setenv("WEIR_MDS_TEST_LOSE_UNSYNCED", "1", 1); /* the MDS inherits it */
	int rc = th_cluster_mount(&o, &cl, &fs) ? -1 : 0;
	unsetenv("WEIR_MDS_TEST_LOSE_UNSYNCED");
	return rc;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static void stats(struct wc_replay_stats *st)
{
	wc_replay_stats(fs, st);
}

static void create(const char *path)
{
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

/*
 * A create is answered with a transno above the reply's last_committed (the
 * MDS did not sync it): it is kept, with the FID of the new file. After an
 * MDS_SYNC, the sync's reply and every later reply say last_committed >=
 * that transno, and the list is empty.
 */
static void test_transno_create_above_committed_sync_covers_it(void)
{
	struct wc_replay_stats a, b, c;
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0); /* start from an empty list */
	stats(&a);
	CU_ASSERT_EQUAL(a.rs_nr_kept, 0);

	create("/t1");
	stats(&b);
	CU_ASSERT(b.rs_nr_kept >= 1); /* the open; its close may change something too */
	CU_ASSERT(b.rs_transno_max > b.rs_last_committed);
	CU_ASSERT(b.rs_transno_max > 0);
	CU_ASSERT(b.rs_bytes > 0);
	pthread_mutex_lock(&fs->fs_replay.rp_lock);
	bool fid_kept = false; /* the open that created it kept the new file's FID */
	for (const struct wc_kept *k = fs->fs_replay.rp_head; k; k = k->wk_next)
		fid_kept = fid_kept || (k->wk_has_fid && !weir_fid_is_zero(&k->wk_fid));
	pthread_mutex_unlock(&fs->fs_replay.rp_lock);
	CU_ASSERT(fid_kept);

	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	stats(&c);
	CU_ASSERT(c.rs_last_committed >= b.rs_transno_max);
	CU_ASSERT_EQUAL(c.rs_nr_kept, 0);
	CU_ASSERT_EQUAL(c.rs_bytes, 0);

	/* a later reply (a read-only one) says the same, and keeps nothing */
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/t1", &st), 0);
	stats(&c);
	CU_ASSERT(c.rs_last_committed >= b.rs_transno_max);
	CU_ASSERT_EQUAL(c.rs_nr_kept, 0);
}

/*
 * Every mutation adds one kept request, in transno order; read-only calls
 * add none; a sync drains them all.
 */
static void test_transno_kept_grows_with_mutations_drains_after_sync(void)
{
	struct wc_replay_stats st;
	struct stat sb;
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	stats(&st);
	uint64_t total0 = st.rs_nr_total;
	CU_ASSERT_EQUAL(st.rs_nr_kept, 0);

	CU_ASSERT_EQUAL(weir_mkdir(fs, "/d2", 0755), 0);
	create("/d2/a");
	CU_ASSERT_EQUAL(weir_rename(fs, "/d2/a", "/d2/b"), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/d2/b", &sb), 0);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/d2/b"), 0);
	stats(&st);
	/* mkdir, create, rename, unlink; the open and close of the create may
	 * add more (a close that changed nothing adds none) */
	CU_ASSERT(st.rs_nr_kept >= 4);
	CU_ASSERT_EQUAL(st.rs_nr_total - total0, st.rs_nr_kept);
	CU_ASSERT(st.rs_peak >= st.rs_nr_kept);
	uint64_t prev = 0;
	bool ordered = true;
	pthread_mutex_lock(&fs->fs_replay.rp_lock);
	for (const struct wc_kept *k = fs->fs_replay.rp_head; k; k = k->wk_next) {
		ordered = ordered && k->wk_transno > prev;
		prev = k->wk_transno;
	}
	pthread_mutex_unlock(&fs->fs_replay.rp_lock);
	CU_ASSERT(ordered);

	uint64_t before = st.rs_nr_kept;
	CU_ASSERT_EQUAL(weir_stat(fs, "/d2", &sb), 0);
	stats(&st);
	CU_ASSERT_EQUAL(st.rs_nr_kept, before);

	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	stats(&st);
	CU_ASSERT_EQUAL(st.rs_nr_kept, 0);
	CU_ASSERT_EQUAL(st.rs_bytes, 0);
}

/*
 * Over the cap, the client asks the MDS for a sync itself, and the list
 * drains without the application syncing.
 */
static void test_transno_over_cap_client_asks_for_sync(void)
{
	struct wc_replay_stats st;
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	stats(&st);
	uint64_t syncs0 = st.rs_syncs;
	wc_replay_set_cap(fs, 1); /* any kept request is over it */
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/d3", 0755), 0);
	stats(&st);
	wc_replay_set_cap(fs, WC_REPLAY_CAP_BYTES);
	CU_ASSERT_EQUAL(st.rs_syncs, syncs0 + 1);
	CU_ASSERT_EQUAL(st.rs_nr_kept, 0);
	CU_ASSERT(st.rs_last_committed > 0);
}

/* Write \a len bytes of a pattern seeded by \a seed to new file \a path. */
static void put_file(weir_fs_t *f, const char *path, size_t len, unsigned seed)
{
	uint8_t *buf = malloc(len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 31 + seed) ^ (i >> 9));
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(f, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, buf, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(buf);
}

/* \a path holds exactly what put_file(len, seed) wrote. */
static void check_file(weir_fs_t *f, const char *path, size_t len, unsigned seed)
{
	uint8_t *buf = malloc(len + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	weir_file_t *fh = NULL;
	int rc = weir_open(f, path, O_RDONLY, 0, &fh);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc) {
		fprintf(stderr, "\n  %s: open rc=%d\n", path, rc);
		free(buf);
		return;
	}
	CU_ASSERT_EQUAL(weir_pread(fh, buf, len + 1, 0), (ssize_t)len);
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += buf[i] != (uint8_t)((i * 31 + seed) ^ (i >> 9));
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(buf);
}

static uint64_t ino_of(weir_fs_t *f, const char *path)
{
	struct stat st;
	int rc = weir_stat(f, path, &st);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "\n  %s: stat rc=%d\n", path, rc);
	return rc ? 0 : (uint64_t)st.st_ino;
}

static bool gone(weir_fs_t *f, const char *path)
{
	struct stat st;
	return weir_stat(f, path, &st) == -ENOENT;
}

/* kill -9 the MDS (its log loses what was not synced) and start it again. */
static void mds_crash(void)
{
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	setenv("WEIR_MDS_TEST_LOSE_UNSYNCED", "1", 1);
	int rc = th_server_start(cl, TH_MDS);
	unsetenv("WEIR_MDS_TEST_LOSE_UNSYNCED");
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/*
 * One client: a mkdir, creates with data, a rename, an unlink, all
 * acknowledged and none synced, then the MDS's host "crashes" (kill -9 with
 * the log's unsynced tail lost). The client sends them again in the MDS's
 * recovery window: every change is back, the files have the FIDs (st_ino)
 * they had and their data, which the OSTs kept under those FIDs.
 */
static void test_transno_crash_replays_unsynced_changes(void)
{
	struct wc_replay_stats st;
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	wc_replay_stats(fs, &st);
	uint64_t resent0 = st.rs_resent;

	CU_ASSERT_EQUAL(weir_mkdir(fs, "/c1", 0755), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/c1/sub", 0700), 0);
	put_file(fs, "/c1/f", 3 << 20, 1); /* over both OSTs' stripes */
	put_file(fs, "/c1/keep", 4096, 2);
	put_file(fs, "/c1/h", 100, 3);
	CU_ASSERT_EQUAL(weir_rename(fs, "/c1/f", "/c1/g"), 0);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/c1/h"), 0);
	uint64_t ino_d = ino_of(fs, "/c1"), ino_s = ino_of(fs, "/c1/sub");
	uint64_t ino_g = ino_of(fs, "/c1/g"), ino_k = ino_of(fs, "/c1/keep");
	wc_replay_stats(fs, &st);
	CU_ASSERT(st.rs_nr_kept >= 7);
	uint64_t kept = st.rs_nr_kept;

	mds_crash();

	/* the first call waits for the window, in which this mount replays */
	CU_ASSERT_EQUAL(ino_of(fs, "/c1"), ino_d);
	wc_replay_stats(fs, &st);
	CU_ASSERT_EQUAL(st.rs_nr_kept, 0); /* re-run and synced: nothing left to keep */
	CU_ASSERT_EQUAL(ino_of(fs, "/c1/sub"), ino_s);
	CU_ASSERT_EQUAL(ino_of(fs, "/c1/g"), ino_g);
	CU_ASSERT_EQUAL(ino_of(fs, "/c1/keep"), ino_k);
	CU_ASSERT(gone(fs, "/c1/f"));
	CU_ASSERT(gone(fs, "/c1/h"));
	struct stat sb;
	CU_ASSERT_EQUAL(weir_stat(fs, "/c1/sub", &sb), 0);
	CU_ASSERT_EQUAL(sb.st_mode & 07777, 0700);
	CU_ASSERT(S_ISDIR(sb.st_mode));
	CU_ASSERT_EQUAL(weir_stat(fs, "/c1/g", &sb), 0);
	CU_ASSERT_EQUAL(sb.st_size, 3 << 20);
	check_file(fs, "/c1/g", 3 << 20, 1);
	check_file(fs, "/c1/keep", 4096, 2);
	wc_replay_stats(fs, &st);
	CU_ASSERT_EQUAL(st.rs_resent - resent0, kept);
	CU_ASSERT_EQUAL(st.rs_lost, 0);
	/* a new create after the restart does not take a replayed FID */
	put_file(fs, "/c1/new", 10, 4);
	uint64_t ino_n = ino_of(fs, "/c1/new");
	CU_ASSERT(ino_n != ino_g && ino_n != ino_k && ino_n != ino_d && ino_n != ino_s);
	check_file(fs, "/c1/new", 10, 4);
}

/* The last "re-ran N requests ... (S had survived, F failed)" line of the MDS's log. */
static bool mds_log_last_rerun(unsigned long *rerun, unsigned long *survived,
			       unsigned long *failed)
{
	char path[4096], line[1024];
	snprintf(path, sizeof(path), "%s/mds.log", th_cluster_dir(cl));
	FILE *f = fopen(path, "r");
	bool found = false;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "recovery: re-ran ");
		if (p && sscanf(p, "recovery: re-ran %lu requests lost with the MDT's log in"
				   " transno order (%lu had survived, %lu failed)",
				rerun, survived, failed) == 3)
			found = true;
	}
	fclose(f);
	return found;
}

/*
 * Two clients whose changes depend on each other: A makes a directory, B
 * creates a file in it, A renames B's file. After the crash each sends its
 * own; the MDS re-runs them in transno order across clients (A's mkdir,
 * then B's create, then A's rename), or B's create and A's rename fail.
 */
static void test_transno_crash_two_clients_in_transno_order(void)
{
	weir_fs_t *fs2 = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs2), 0);
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0); /* both mounts' records synced */

	CU_ASSERT_EQUAL(weir_mkdir(fs, "/x", 0755), 0);
	put_file(fs2, "/x/y", 200000, 5);
	CU_ASSERT_EQUAL(weir_rename(fs, "/x/y", "/x/z"), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs2, "/x/d2", 0755), 0);
	uint64_t ino_z = ino_of(fs2, "/x/z");
	struct wc_replay_stats s1, s2;
	wc_replay_stats(fs, &s1);
	wc_replay_stats(fs2, &s2);
	CU_ASSERT(s1.rs_nr_kept >= 2);
	CU_ASSERT(s2.rs_nr_kept >= 2);

	mds_crash();

	CU_ASSERT_EQUAL(ino_of(fs, "/x/z"), ino_z);
	CU_ASSERT(gone(fs, "/x/y"));
	CU_ASSERT(ino_of(fs2, "/x/d2") != 0);
	check_file(fs2, "/x/z", 200000, 5);
	check_file(fs, "/x/z", 200000, 5);
	wc_replay_stats(fs, &s1);
	wc_replay_stats(fs2, &s2);
	CU_ASSERT_EQUAL(s1.rs_lost, 0);
	CU_ASSERT_EQUAL(s2.rs_lost, 0);
	unsigned long rerun = 0, survived = 0, failed = 0;
	CU_ASSERT(mds_log_last_rerun(&rerun, &survived, &failed));
	CU_ASSERT(rerun >= 4); /* mkdir, create (open, close), rename, mkdir */
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(weir_umount(fs2), 0);
}

/*
 * A request that reached the disk before the crash is not made twice: B's
 * fsync synced A's mkdir, which A still keeps (no reply told it since).
 * After the restart the first reply A gets says last_committed = the
 * transno the MDT's log kept, which covers it, so A frees it (or, sent
 * anyway, the MDS would skip it as survived) instead of making it again
 * (-EEXIST); B's later mkdir is re-run.
 */
static void test_transno_crash_skips_requests_that_survived(void)
{
	weir_fs_t *fs2 = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs2), 0);
	/* B's later mkdir goes where A holds no lease: a callback's reply would
	 * tell A the MDT's last committed transno (A's mkdir of "/sN" leases it) */
	CU_ASSERT_EQUAL(weir_mkdir(fs2, "/sb", 0755), 0);
	/*
	 * Any reply A gets after B's fsync tells A that its mkdir is synced: its
	 * lease poll's, answered every half lease (1 s here) even with nothing
	 * to call back. Under a sanitizer B's fsync can take that long, so the
	 * case is made again (new names) until A has not heard, 5 times at most.
	 */
	char sp[32], bp[32];
	struct wc_replay_stats s1;
	memset(&s1, 0, sizeof(s1));
	for (int k = 0; k < 5 && s1.rs_nr_kept != 1; k++) {
		snprintf(sp, sizeof(sp), "/s%d", k);
		snprintf(bp, sizeof(bp), "/sb/b%d", k);
		CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
		CU_ASSERT_EQUAL(weir_mkdir(fs, sp, 0755), 0);
		CU_ASSERT_EQUAL(weir_fid_fsync(fs2, NULL), 0); /* syncs A's mkdir too */
		CU_ASSERT_EQUAL(weir_mkdir(fs2, bp, 0755), 0);
		wc_replay_stats(fs, &s1);
	}
	CU_ASSERT_EQUAL(s1.rs_nr_kept, 1); /* A has not heard that its mkdir is synced */
	uint64_t ino_s = ino_of(fs2, sp);

	mds_crash();

	CU_ASSERT_EQUAL(ino_of(fs, sp), ino_s);
	CU_ASSERT(ino_of(fs2, bp) != 0);
	unsigned long rerun = 0, survived = 0, failed = 0;
	CU_ASSERT(mds_log_last_rerun(&rerun, &survived, &failed));
	CU_ASSERT(survived <= 1);
	CU_ASSERT_EQUAL(rerun, 1);
	CU_ASSERT_EQUAL(failed, 0);
	wc_replay_stats(fs, &s1);
	CU_ASSERT_EQUAL(s1.rs_lost, 0);
	CU_ASSERT_EQUAL(s1.rs_nr_kept, 0);
	CU_ASSERT_EQUAL(weir_umount(fs2), 0);
}

/* ------------------------------------------------------------ umount during a replay */

static weir_fs_t *hook_fs;       /* the mount whose replay the hook holds */
static atomic_int hook_entered;  /* 1: in the hook, from the lease poll thread */
static char hook_thread[16];
static bool hook_closed, hook_locks; /* after the wait: umount ended the session; the
				      * lock record the replay uses was still there */

static void hold_replay(struct weir_fs *f, uint64_t new_session)
{
	(void)new_session;
	if (f != hook_fs)
		return;
	pthread_getname_np(pthread_self(), hook_thread, sizeof(hook_thread));
	atomic_store(&hook_entered, 1);
	th_sleep_ms(500); /* umount runs meanwhile, up to where it waits for this thread */
	pthread_mutex_lock(&f->fs_sess_lock);
	hook_closed = f->fs_sess_closed;
	pthread_mutex_unlock(&f->fs_sess_lock);
	hook_locks = f->fs_locks != NULL;
}

/*
 * The lease poll thread ("weir-mdl") finds the session gone after an MDS
 * restart, connects again, and is about to replay when the application
 * unmounts. umount must not free what that replay uses (the lock record)
 * before the thread has stopped, and the thread must not connect again
 * after umount ended the session. (A heap corruption seen in CI when
 * test_mdt_full's th_remount unmounted its old mount right after a restart;
 * the sanitizer build reports the use after free here.)
 */
static void test_transno_umount_while_poll_thread_replays(void)
{
	weir_fs_t *fs2 = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(cl), &fs2), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fs2->fs_mdl); /* the poll thread runs */
	CU_ASSERT_EQUAL(weir_fid_fsync(fs, NULL), 0);
	CU_ASSERT_EQUAL(weir_fid_fsync(fs2, NULL), 0);
	atomic_store(&hook_entered, 0);
	hook_fs = fs2;
	wc_session_lost_hook = hold_replay;

	mds_crash();
	uint64_t t0 = th_now_ms();
	while (!atomic_load(&hook_entered) && th_now_ms() - t0 < 20000)
		th_sleep_ms(5);
	CU_ASSERT_FATAL(atomic_load(&hook_entered));
	printf("\n  replay held in thread %s\n", hook_thread);
	CU_ASSERT_STRING_EQUAL(hook_thread, "weir-mdl");
	CU_ASSERT_EQUAL(weir_umount(fs2), 0);
	CU_ASSERT(hook_closed); /* umount went on to end the session... */
	CU_ASSERT(hook_locks);  /* ...but freed nothing the replay uses */
	wc_session_lost_hook = NULL;
	hook_fs = NULL;
	/* the other mount and the MDS go on */
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/", &st), 0);
	CU_ASSERT(th_server_alive(cl, TH_MDS));
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_transno_create_above_committed_sync_covers_it),
		TH_TEST(test_transno_kept_grows_with_mutations_drains_after_sync),
		TH_TEST(test_transno_over_cap_client_asks_for_sync),
		TH_TEST(test_transno_crash_replays_unsynced_changes),
		TH_TEST(test_transno_crash_two_clients_in_transno_order),
		TH_TEST(test_transno_crash_skips_requests_that_survived),
		TH_TEST(test_transno_umount_while_poll_thread_replays),
		TH_TEST_END,
	};
	return th_cunit_run("transno", suite_init, suite_clean, tests);
}
