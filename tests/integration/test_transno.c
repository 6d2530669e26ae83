/*
 * tests/integration/test_transno.c - MDS replies carry the reply prefix
 * (transno, last_committed; net/frame.h), and libweir keeps each request
 * applied and not yet synced until a reply says the MDS synced it
 * (client/replay.c). Nothing is replayed yet: this checks the list only.
 *
 * Real daemons; the MDS runs --commit-interval 60s, so its log is synced
 * only when a client asks (MDS_SYNC: weir_fid_fsync(fs, NULL)) within a
 * test, and what a test keeps stays kept until it asks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
	static const char *const mds_args[] = { "--commit-interval", "60s", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1,
				     .tco_mds_args = mds_args };
	return th_cluster_mount(&o, &cl, &fs) ? -1 : 0;
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

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_transno_create_above_committed_sync_covers_it),
		TH_TEST(test_transno_kept_grows_with_mutations_drains_after_sync),
		TH_TEST(test_transno_over_cap_client_asks_for_sync),
		TH_TEST_END,
	};
	return th_cunit_run("transno", suite_init, suite_clean, tests);
}
