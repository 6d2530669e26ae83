/*
 * tests/unit/mds/test_hsm.c - the HSM coordinator (mds/hsm*.c) in-process on
 * a real RocksDB MDT: associations and their persistence, import, the data
 * version and dirty bit, release checks, restore readiness per chunk, the
 * agent protocol (fetch, progress, done, ESTALE both ways), requeue after
 * eviction, timeout and restart, and cancellation by unlink; regressions:
 * hand-out tokens (a stale agent's PROGRESS / DONE), restore DONE only with
 * every chunk, the S3 key index (a renamed file's key), overlapping DRA
 * prefixes, re-import destroying old chunks, failed commits at DONE, imports
 * without an ETag. The RPC layer
 * (mds/hsm_svc.c) is covered at the end by a real in-process MDS.
 */
#define _GNU_SOURCE
#include "ns_fixture.h"

#include <unistd.h>

#include "common/util.h"
#include "mds/hsm.h"
#include "net/net.h"
#include "weir.pb-c.h"

static struct mds_hsm *hsm;
static struct mds_hsm_task *tasks;
static const struct mds_hsm_conf test_conf = { .hc_action_timeout_ms = 200 };

#define MiB (1024ULL * 1024)

static int setup(void)
{
	tasks = calloc(HSM_FETCH_MAX, sizeof(*tasks));
	if (!tasks || fx_init())
		return -1;
	return mds_hsm_open(ns, &test_conf, NULL, NULL, &hsm);
}

static int teardown(void)
{
	mds_hsm_close(hsm);
	hsm = NULL;
	free(tasks);
	return fx_fini();
}

/* Close and reopen the MDT and the coordinator (an MDS restart). */
static void reopen(void)
{
	mds_hsm_close(hsm);
	hsm = NULL;
	fx_reopen();
	CU_ASSERT_FATAL(mds_hsm_open(ns, &test_conf, NULL, NULL, &hsm) == 0);
}

/* Cancel every pending action: each test starts with an empty queue. */
static void drain(void)
{
	pthread_mutex_lock(&hsm->hs_lock);
	while (hsm->hs_queue.ha_next != &hsm->hs_queue)
		hsm_act_finish(hsm, NULL, hsm->hs_queue.ha_next, HSM_S_FAILED, -ECANCELED);
	pthread_mutex_unlock(&hsm->hs_lock);
}

/* mkdir \a path (root) and associate it with s3://bkt/<path without its '/'>/ (associations
 * of one bucket may not share keys). \return the DRA id. */
static uint32_t mkdra(const char *path, uint32_t flags)
{
	struct mds_hsm_dra d;
	drain();
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, path, 0777) == 0);
	CU_ASSERT_FATAL(mds_hsm_dra_create(hsm, &ROOT, NULL, path, "bkt", path + 1, flags, &d) ==
			0);
	return d.hd_id;
}

static struct weir_fid fid_of(const char *path)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(fx_stat(NULL, path, &in) == 0);
	return in.in_fid;
}

static uint32_t inode_flags(const char *path)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(fx_stat(NULL, path, &in) == 0);
	return in.in_flags;
}

static struct mds_hsm_state state(const char *path)
{
	struct mds_hsm_state st;
	CU_ASSERT_FATAL(mds_hsm_state_get(hsm, &ROOT, NULL, path, NULL, &st) == 0);
	return st;
}

static int32_t request1(const struct mds_cred *cr, uint32_t action, const char *path,
			uint64_t *id)
{
	struct weir_fid fid = fid_of(path);
	uint64_t tmp;
	int32_t rc = 1;
	size_t rel;
	CU_ASSERT_FATAL(mds_hsm_request(hsm, cr, action, &fid, 1, id ? id : &tmp, &rc, &rel) == 0);
	return rc;
}

/* The token of action \a id's current hand-out (0: none), as its agent would echo it. */
static uint64_t tok(uint64_t id)
{
	struct hsm_action *a = hsm_act_by_id(hsm, id);
	return a ? a->ha_token : 0;
}

static uint32_t fetch(uint64_t session)
{
	uint32_t nr = 99;
	CU_ASSERT_FATAL(mds_hsm_fetch(hsm, "agent-1", session, HSM_FETCH_MAX, tasks, &nr) == 0);
	return nr;
}

/* Archive \a path through the whole agent protocol; \return the action id. */
static uint64_t archive(const char *path, const char *etag)
{
	uint64_t id = 0;
	CU_ASSERT_EQUAL_FATAL(request1(&ROOT, HSM_A_ARCHIVE, path, &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, id);
	CU_ASSERT_EQUAL(tasks[0].tk_action, HSM_A_ARCHIVE);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, etag, 0, 0, NULL), 0);
	return id;
}

static bool range_ready(const char *path, uint64_t off, uint64_t len, int *rc)
{
	struct weir_fid fid = fid_of(path);
	bool released, ready;
	*rc = mds_hsm_restore_wait(hsm, &ROOT, &fid, off, len, &released, &ready);
	return ready;
}

static void set_size(const char *path, uint64_t size)
{
	struct mds_inode in;
	struct mds_setattr sa = { .sa_valid = MDS_SA_SIZE, .sa_size = size };
	CU_ASSERT_EQUAL_FATAL(mds_ns_setattr(ns, &ROOT, NULL, path, 0, &sa, &in), 0);
}

/* ------------------------------------------------------------ associations */

static void test_dra_create_list_delete_persist(void)
{
	struct mds_hsm_dra d, *all;
	size_t nr;
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/dra", 0777) == 0);
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/dra/sub", 0777) == 0);
	CU_ASSERT_FATAL(fx_creat(&ROOT, "/dra-file", 0644, NULL) == 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &U1, NULL, "/dra", "bkt", "", 0, &d), -EPERM);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "Bad_Bucket", "", 0, &d),
			-EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "ab", "", 0, &d), -EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "bkt", "/abs", 0, &d),
			-EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "bkt", "", 0x80, &d),
			-EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra-file", "bkt", "", 0, &d),
			-ENOTDIR);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/nope", "bkt", "", 0, &d), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "my-bucket.1", "data",
						 HSM_DF_AUTO_EXPORT, &d), 0);
	CU_ASSERT(d.hd_id >= 1);
	CU_ASSERT_STRING_EQUAL(d.hd_prefix, "data/");
	CU_ASSERT_STRING_EQUAL(d.hd_path, "/dra");
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra", "bkt", "", 0, NULL), -EEXIST);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/dra/sub", "bkt", "", 0, NULL),
			-EBUSY);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/", "bkt", "", 0, NULL), -EBUSY);

	reopen();
	CU_ASSERT_FATAL(mds_hsm_dra_list(hsm, &all, &nr) == 0);
	CU_ASSERT_EQUAL_FATAL(nr, 1);
	CU_ASSERT_EQUAL(all[0].hd_id, d.hd_id);
	CU_ASSERT_STRING_EQUAL(all[0].hd_bucket, "my-bucket.1");
	CU_ASSERT_STRING_EQUAL(all[0].hd_prefix, "data/");
	CU_ASSERT_STRING_EQUAL(all[0].hd_path, "/dra");
	CU_ASSERT_EQUAL(all[0].hd_flags, HSM_DF_AUTO_EXPORT);
	CU_ASSERT(weir_fid_eq(&all[0].hd_root, &d.hd_root));
	free(all);

	CU_ASSERT_EQUAL(mds_hsm_dra_delete(hsm, &U1, NULL, "/dra"), -EPERM);
	CU_ASSERT_EQUAL(mds_hsm_dra_delete(hsm, &ROOT, NULL, "/dra/sub"), -EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_dra_delete(hsm, &ROOT, NULL, "/dra"), 0);
	reopen();
	CU_ASSERT_FATAL(mds_hsm_dra_list(hsm, &all, &nr) == 0);
	CU_ASSERT_EQUAL(nr, 0);
	free(all);
}

/* ------------------------------------------------------------ import */

static void test_import_create_update_remove_kept(void)
{
	uint32_t dra = mkdra("/imp", 0);
	struct weir_fid dir = fid_of("/imp");
	struct mds_hsm_import_ent e[5] = {
		{ "a", 100, 1000000000LL, "\"e1\"", "p/a", false },
		{ "b", 200, 2000000000LL, "\"e2\"", "p/b", false },
		{ "c", 300, 3000000000LL, "\"e3\"", "p/c", false },
		{ "bad/name", 1, 0, "\"x\"", "p/x", false },
		{ "gone", 1, 0, "\"x\"", "p/gone", true },
	};
	int32_t res[5];
	CU_ASSERT_EQUAL(mds_hsm_import(hsm, &U1, dra, &dir, e, 3, 0, fx_choose, NULL, res), -EPERM);
	CU_ASSERT_EQUAL(mds_hsm_import(hsm, &ROOT, dra + 100, &dir, e, 3, 0, fx_choose, NULL, res),
			-ENOENT);
	CU_ASSERT_EQUAL(mds_hsm_import(hsm, &ROOT, dra, &dir, e, HSM_IMPORT_MAX + 1, 0, fx_choose,
				       NULL, res), -E2BIG);
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, e, 5, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_EQUAL(res[0], HSM_HIR_CREATED);
	CU_ASSERT_EQUAL(res[1], HSM_HIR_CREATED);
	CU_ASSERT_EQUAL(res[2], HSM_HIR_CREATED);
	CU_ASSERT_EQUAL(res[3], -EINVAL);
	CU_ASSERT_EQUAL(res[4], HSM_HIR_UNCHANGED);

	struct mds_inode in;
	CU_ASSERT_FATAL(fx_stat(NULL, "/imp/b", &in) == 0);
	CU_ASSERT_EQUAL(in.in_size, 200);
	CU_ASSERT_EQUAL(in.in_mtime_ns, 2000000000LL);
	CU_ASSERT_EQUAL(in.in_uid, 0);
	CU_ASSERT_EQUAL(in.in_mode, S_IFREG | 0644);
	CU_ASSERT_EQUAL(in.in_flags & (MDS_INODE_F_HSM | MDS_INODE_F_RELEASED),
			MDS_INODE_F_HSM | MDS_INODE_F_RELEASED);
	struct mds_hsm_state st = state("/imp/b");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_RELEASED | HSM_F_IMPORTED);
	CU_ASSERT_STRING_EQUAL(st.st_key, "p/b");
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"e2\"");
	CU_ASSERT_STRING_EQUAL(st.st_bucket, "bkt");
	CU_ASSERT_EQUAL(st.st_dra, dra);

	/* rescan: a changed, b modified in Weir and changed, c deleted, same again */
	struct mds_inode bin;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, &ROOT, NULL, "/imp/b", MDS_OF_WRITE, 0, NULL,
					 fx_choose, NULL, &bin, &created) == 0);
	CU_ASSERT_FATAL(mds_ns_close_file(ns, &bin.in_fid, true, NULL) == 0);
	struct mds_hsm_import_ent e2[4] = {
		{ "a", 150, 4000000000LL, "\"e1b\"", "p/a", false },
		{ "b", 250, 4000000000LL, "\"e2b\"", "p/b", false },
		{ "c", 0, 0, "", "p/c", true },
		{ "imp-unchanged", 0, 0, "\"q\"", "p/q", false },
	};
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, e2, 3, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_EQUAL(res[0], HSM_HIR_UPDATED);
	CU_ASSERT_EQUAL(res[1], HSM_HIR_KEPT);
	CU_ASSERT_EQUAL(res[2], HSM_HIR_REMOVED);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/imp/c", NULL), -ENOENT);
	CU_ASSERT_FATAL(fx_stat(NULL, "/imp/a", &in) == 0);
	CU_ASSERT_EQUAL(in.in_size, 150);
	st = state("/imp/a");
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"e1b\"");
	CU_ASSERT(st.st_flags & HSM_F_RELEASED);
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, e2, 1, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_EQUAL(res[0], HSM_HIR_UNCHANGED);

	/* a directory in the way; a directory outside the association */
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/imp/sub", 0755) == 0);
	struct mds_hsm_import_ent e3 = { "sub", 1, 0, "\"z\"", "p/sub", false };
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e3, 1, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_EQUAL(res[0], -EEXIST);
	struct weir_fid root = weir_fid_root();
	CU_ASSERT_EQUAL(mds_hsm_import(hsm, &ROOT, dra, &root, &e3, 1, 0, fx_choose, NULL, res),
			-EINVAL);
}

/* ------------------------------------------------------------ data version, release */

static void test_data_version_bumped_on_write_open(void)
{
	mkdra("/dv", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/dv/f", 0644, NULL) == 0);
	/* no record yet: nothing to track */
	CU_ASSERT_EQUAL(state("/dv/f").st_flags, 0);
	CU_ASSERT_EQUAL(inode_flags("/dv/f") & MDS_INODE_F_HSM, 0);
	archive("/dv/f", "\"v1\"");
	struct mds_hsm_state st = state("/dv/f");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED);
	CU_ASSERT_STRING_EQUAL(st.st_key, "dv/f");
	uint64_t v = st.st_data_version;
	CU_ASSERT_EQUAL(st.st_archived_version, v);
	/* a read changes nothing */
	CU_ASSERT(fx_open(&U1, "/dv/f", MDS_OF_READ, NULL) == 0);
	CU_ASSERT_EQUAL(state("/dv/f").st_data_version, v);
	/* the copytool's open for writing changes nothing either */
	CU_ASSERT_EQUAL(fx_open(&U1, "/dv/f", MDS_OF_WRITE | MDS_OF_HSM, NULL), -EPERM);
	CU_ASSERT(fx_open(&ROOT, "/dv/f", MDS_OF_WRITE | MDS_OF_HSM, NULL) == 0);
	st = state("/dv/f");
	CU_ASSERT_EQUAL(st.st_data_version, v);
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED);
	/* an open for writing: version + 1, dirty */
	CU_ASSERT(fx_open(&U1, "/dv/f", MDS_OF_WRITE, NULL) == 0);
	st = state("/dv/f");
	CU_ASSERT_EQUAL(st.st_data_version, v + 1);
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_DIRTY);
	CU_ASSERT(fx_open(&U1, "/dv/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL) == 0);
	CU_ASSERT_EQUAL(state("/dv/f").st_data_version, v + 2);
	set_size("/dv/f", 4096);
	CU_ASSERT_EQUAL(state("/dv/f").st_data_version, v + 3);
	set_size("/dv/f", 4096); /* not a size change */
	CU_ASSERT_EQUAL(state("/dv/f").st_data_version, v + 3);
	/* archiving again makes it clean */
	archive("/dv/f", "\"v2\"");
	st = state("/dv/f");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED);
	CU_ASSERT_EQUAL(st.st_archived_version, v + 3);
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"v2\"");
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_ARCHIVE, "/dv/f", NULL), -EALREADY);
}

static void test_archive_modified_while_running_stays_dirty(void)
{
	mkdra("/race", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/race/f", 0644, NULL) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/race/f", &id), 0);
	CU_ASSERT_EQUAL(request1(&U2, HSM_A_ARCHIVE, "/race/f", NULL), -EPERM);
	uint64_t id2;
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_ARCHIVE, "/race/f", &id2), 0);
	CU_ASSERT_EQUAL(id2, id); /* one action per file */
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT(fx_open(&U1, "/race/f", MDS_OF_WRITE, NULL) == 0); /* written meanwhile */
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "\"x\"", 0, 0, NULL), 0);
	struct mds_hsm_state st = state("/race/f");
	CU_ASSERT(st.st_flags & HSM_F_DIRTY);
	CU_ASSERT_FALSE(st.st_flags & HSM_F_ARCHIVED);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/race/f", NULL), -ENODATA);
	/* a done without the ETag read back is no verified copy */
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/race/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, "no etag"), 0);
	CU_ASSERT(state("/race/f").st_flags & HSM_F_DIRTY);
	CU_ASSERT_EQUAL(state("/race/f").st_action_id, id); /* retried later */
}

static void test_release_refused_then_accepted(void)
{
	mkdra("/rel", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/rel/f", 0644, NULL) == 0);
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/rel/d", 0755) == 0);
	/* never archived */
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/rel/f", NULL), -ENODATA);
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_RELEASE, "/rel/d", NULL), -EINVAL);
	archive("/rel/f", "\"r1\"");
	/* dirty */
	CU_ASSERT(fx_open(&U1, "/rel/f", MDS_OF_WRITE, NULL) == 0);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/rel/f", NULL), -ENODATA);
	archive("/rel/f", "\"r2\"");
	/* open (even for reading) */
	struct mds_inode in;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, &U1, NULL, "/rel/f", MDS_OF_READ, 0, NULL, fx_choose,
					 NULL, &in, &created) == 0);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/rel/f", NULL), -EBUSY);
	CU_ASSERT_FATAL(mds_ns_close_file(ns, &in.in_fid, false, NULL) == 0);
	/* not the owner */
	CU_ASSERT_EQUAL(request1(&U2, HSM_A_RELEASE, "/rel/f", NULL), -EPERM);
	/* accepted: released, objects queued for destruction */
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/rel/f", NULL), 0);
	CU_ASSERT(inode_flags("/rel/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT(state("/rel/f").st_flags & HSM_F_RELEASED);
	CU_ASSERT(hsm_destroy_pending(ns, &in.in_fid));
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/rel/f", NULL), -EALREADY);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_ARCHIVE, "/rel/f", NULL), -EALREADY);
	/* O_TRUNC waits for the destroy record, then empties the file */
	CU_ASSERT_EQUAL(fx_open(&U1, "/rel/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), -EAGAIN);
	CU_ASSERT(inode_flags("/rel/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &in.in_fid) == 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/rel/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), 0);
	CU_ASSERT_FALSE(inode_flags("/rel/f") & MDS_INODE_F_RELEASED);
	struct mds_hsm_state st = state("/rel/f");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_DIRTY);
	CU_ASSERT_EQUAL(st.st_size, 0);
}

/* ------------------------------------------------------------ restore */

static void test_restore_wait_ready_per_chunk(void)
{
	mkdra("/rst", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/rst/f", 0644, NULL) == 0);
	set_size("/rst/f", 20 * MiB); /* stripe 1 MiB: chunks of 8 MiB, 3 of them */
	archive("/rst/f", "\"s1\"");
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RELEASE, "/rst/f", NULL), 0);
	struct weir_fid fid = fid_of("/rst/f");
	int rc;
	CU_ASSERT_FALSE(range_ready("/rst/f", 10 * MiB, 4096, &rc));
	CU_ASSERT_EQUAL(rc, 0);
	uint64_t aid = state("/rst/f").st_action_id;
	CU_ASSERT(aid != 0);
	CU_ASSERT_EQUAL(state("/rst/f").st_action, HSM_A_RESTORE);
	/* a second reader shares the action */
	CU_ASSERT_FALSE(range_ready("/rst/f", 0, 1, &rc));
	CU_ASSERT_EQUAL(state("/rst/f").st_action_id, aid);
	/* not handed out while the old objects are being destroyed */
	CU_ASSERT_EQUAL(fetch(0), 0);
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &fid) == 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	struct mds_hsm_task *tk = &tasks[0];
	CU_ASSERT_EQUAL(tk->tk_id, aid);
	CU_ASSERT_EQUAL(tk->tk_action, HSM_A_RESTORE);
	CU_ASSERT_EQUAL(tk->tk_size, 20 * MiB);
	CU_ASSERT_EQUAL(tk->tk_chunk, 8 * MiB);
	CU_ASSERT_EQUAL(tk->tk_map_len, 1);
	CU_ASSERT_EQUAL(tk->tk_map[0], 0);
	CU_ASSERT_EQUAL(tk->tk_hint, 0); /* the latest reader's offset */
	CU_ASSERT_STRING_EQUAL(tk->tk_key, "rst/f");
	CU_ASSERT_STRING_EQUAL(tk->tk_etag, "\"s1\"");
	CU_ASSERT_STRING_EQUAL(tk->tk_bucket, "bkt");
	/* a reader asks for the middle: the agent hears it as want */
	CU_ASSERT_FALSE(range_ready("/rst/f", 9 * MiB, 10, &rc));
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 1, 8 * MiB, 0, NULL, &pr), -EINVAL);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 0, 0, 0, NULL, &pr), 0);
	CU_ASSERT(pr.pr_has_want);
	CU_ASSERT_EQUAL(pr.pr_want, 8 * MiB);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 8 * MiB, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_FALSE(pr.pr_has_want);
	CU_ASSERT_FALSE(pr.pr_cancel);
	CU_ASSERT(range_ready("/rst/f", 9 * MiB, 10, &rc));
	CU_ASSERT(range_ready("/rst/f", 8 * MiB, 8 * MiB, &rc));
	CU_ASSERT_FALSE(range_ready("/rst/f", 8 * MiB, 8 * MiB + 1, &rc));
	CU_ASSERT_FALSE(range_ready("/rst/f", 0, 1, &rc));
	CU_ASSERT_EQUAL(state("/rst/f").st_restored, 8 * MiB);
	/* the last chunk is short: [16, 20) MiB */
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 16 * MiB, 4 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT(range_ready("/rst/f", 19 * MiB, 0, &rc));
	CU_ASSERT(range_ready("/rst/f", 30 * MiB, 10, &rc)); /* past the end */
	CU_ASSERT_EQUAL(state("/rst/f").st_restored, 12 * MiB);
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, &aid, 1, &qi) == 0);
	CU_ASSERT_EQUAL_FATAL(qi.qi_nr, 1);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_state, HSM_S_RUNNING);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_bytes_done, 12 * MiB);
	CU_ASSERT_STRING_EQUAL(qi.qi_actions[0].ai_agent, "agent-1");
	CU_ASSERT_EQUAL(qi.qi_backlog_bytes, 8 * MiB);
	CU_ASSERT(qi.qi_agents >= 1);
	CU_ASSERT(qi.qi_restored_bytes >= 12 * MiB);
	mds_hsm_queue_free(&qi);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, aid, tok(aid), 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(inode_flags("/rst/f") & MDS_INODE_F_RELEASED);
	struct mds_hsm_state st = state("/rst/f");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED);
	CU_ASSERT_EQUAL(st.st_action_id, 0);
	bool released, ready;
	CU_ASSERT_EQUAL(mds_hsm_restore_wait(hsm, &U1, &fid, 0, 0, &released, &ready), 0);
	CU_ASSERT_FALSE(released);
	CU_ASSERT(ready);
	/* finished actions stay visible for a while */
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, &aid, 1, &qi) == 0);
	CU_ASSERT_EQUAL_FATAL(qi.qi_nr, 1);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_state, HSM_S_DONE);
	mds_hsm_queue_free(&qi);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 0, 0, 0, NULL, &pr), -ENOENT);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, aid, tok(aid), 0, "", 0, 0, NULL), -ENOENT);
}

static void test_restore_errors_retried_then_failed(void)
{
	uint32_t dra = mkdra("/rerr", 0);
	struct weir_fid dir = fid_of("/rerr");
	struct mds_hsm_import_ent e = { "f", 5, 0, "\"i\"", "p/f", false };
	int32_t res;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e, 1, 0, fx_choose, NULL, &res) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RESTORE, "/rerr/f", &id), 0);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RESTORE, "/rerr/f", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -EIO, "", 0, 0, "S3 down"), 0);
	/* back to waiting, not before its backoff */
	CU_ASSERT_EQUAL(fetch(0), 0);
	struct hsm_action *a = hsm_act_by_id(hsm, id);
	CU_ASSERT_FATAL(a != NULL);
	for (int i = 1; i < HSM_ATTEMPTS_MAX; i++) {
		a->ha_not_before_ns = 0; /* skip the backoff */
		CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
		CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -EIO, "", 0, 0, "S3 down"), 0);
	}
	CU_ASSERT_EQUAL(state("/rerr/f").st_action_id, 0);
	int rc;
	CU_ASSERT_FALSE(range_ready("/rerr/f", 0, 1, &rc));
	CU_ASSERT_EQUAL(rc, -EIO); /* readers hear the failure */
	/* an explicit restore request tries again */
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RESTORE, "/rerr/f", &id), 0);
	CU_ASSERT(id != 0);
}

static void test_stale_reimport_and_lost(void)
{
	uint32_t reim = mkdra("/stale-r", HSM_DF_REIMPORT), strict = mkdra("/stale-l", 0);
	struct weir_fid d1 = fid_of("/stale-r"), d2 = fid_of("/stale-l");
	struct mds_hsm_import_ent e = { "f", 3 * MiB, 1000, "\"old\"", "p/f", false };
	int32_t res;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, reim, &d1, &e, 1, 0, fx_choose, NULL, &res) == 0);
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, strict, &d2, &e, 1, 0, fx_choose, NULL, &res) ==
			0);
	int rc;
	/* re-import: new size and ETag, restore queued again */
	CU_ASSERT_FALSE(range_ready("/stale-r/f", 0, 1, &rc));
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	uint64_t id = tasks[0].tk_id;
	CU_ASSERT_EQUAL(tasks[0].tk_dra_flags, HSM_DF_REIMPORT);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -ESTALE, "\"new\"", 5 * MiB, 7000, NULL), 0);
	struct mds_inode in;
	CU_ASSERT_FATAL(fx_stat(NULL, "/stale-r/f", &in) == 0);
	CU_ASSERT_EQUAL(in.in_size, 5 * MiB);
	CU_ASSERT_EQUAL(in.in_mtime_ns, 7000);
	struct mds_hsm_state st = state("/stale-r/f");
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"new\"");
	CU_ASSERT_FALSE(st.st_flags & HSM_F_LOST);
	CU_ASSERT_EQUAL(st.st_action_id, id);
	/* the old version's objects go first (test_stale_reimport_destroys_old_chunks) */
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &in.in_fid) == 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, id);
	CU_ASSERT_STRING_EQUAL(tasks[0].tk_etag, "\"new\"");
	CU_ASSERT_EQUAL(tasks[0].tk_size, 5 * MiB);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 5 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(state("/stale-r/f").st_flags & HSM_F_RELEASED);

	/* without DF_REIMPORT: lost, readers get EIO */
	CU_ASSERT_FALSE(range_ready("/stale-l/f", 0, 1, &rc));
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	id = tasks[0].tk_id;
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -ESTALE, "\"new\"", 5 * MiB, 7000, NULL), 0);
	st = state("/stale-l/f");
	CU_ASSERT(st.st_flags & HSM_F_LOST);
	CU_ASSERT(st.st_flags & HSM_F_RELEASED);
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"old\"");
	range_ready("/stale-l/f", 0, 1, &rc);
	CU_ASSERT_EQUAL(rc, -EIO);
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_RESTORE, "/stale-l/f", NULL), -EIO);
	CU_ASSERT_EQUAL(fetch(0), 0);

	/* a rescan heals it: the next read restores the new version at once
	 * (the failed restore of the old one no longer answers EIO) */
	struct mds_hsm_import_ent e2 = { "f", 5 * MiB, 7000, "\"new\"", "p/f", false };
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, strict, &d2, &e2, 1, 0, fx_choose, NULL, &res) ==
			0);
	CU_ASSERT_EQUAL(res, HSM_HIR_UPDATED);
	CU_ASSERT_FALSE(state("/stale-l/f").st_flags & HSM_F_LOST);
	CU_ASSERT_FALSE(range_ready("/stale-l/f", 0, 1, &rc));
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(state("/stale-l/f").st_action_id != 0);
}

/*
 * An empty released file has no chunk to wait for, yet its object may have
 * changed in S3: it is served only after a restore checked the ETag.
 */
static void test_empty_released_file_checked_before_served(void)
{
	uint32_t dra = mkdra("/empty", 0);
	struct weir_fid d = fid_of("/empty");
	struct mds_hsm_import_ent e[2] = { { "z", 0, 1000, "\"e0\"", "q/z", false },
					   { "y", 0, 1000, "\"e0\"", "q/y", false } };
	int32_t res[2];
	int rc;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &d, e, 2, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_FALSE(range_ready("/empty/z", 0, 0, &rc));
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	uint64_t id = tasks[0].tk_id;
	CU_ASSERT_EQUAL(tasks[0].tk_size, 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -ESTALE, "\"e1\"", 9, 2000, NULL), 0);
	CU_ASSERT(state("/empty/z").st_flags & HSM_F_LOST);
	range_ready("/empty/z", 0, 0, &rc);
	CU_ASSERT_EQUAL(rc, -EIO);
	/* unchanged: the restore of no bytes ends it */
	CU_ASSERT_FALSE(range_ready("/empty/y", 0, 0, &rc));
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	id = tasks[0].tk_id;
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(state("/empty/y").st_flags & HSM_F_RELEASED);
	CU_ASSERT_TRUE(range_ready("/empty/y", 0, 0, &rc));
}

/* ------------------------------------------------------------ liveness, restart, unlink */

static void test_requeue_on_evict_timeout_and_restart(void)
{
	uint32_t dra = mkdra("/rq", 0);
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/rq2", 0777) == 0);
	CU_ASSERT_FATAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/rq2", "bkt", "rq2", 0, NULL) == 0);
	struct weir_fid dir = fid_of("/rq");
	struct mds_hsm_import_ent e = { "f", 20 * MiB, 0, "\"q\"", "p/f", false };
	int32_t res;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e, 1, 0, fx_choose, NULL, &res) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&ROOT, HSM_A_RESTORE, "/rq/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0x77), 1);
	/* eviction of another session changes nothing; of the agent's, gives it back */
	CU_ASSERT_EQUAL(mds_hsm_session_evicted(hsm, 0x78), 0);
	CU_ASSERT_EQUAL(mds_hsm_session_evicted(hsm, 0x77), 1);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT(pr.pr_cancel); /* the evicted agent must stop */
	/* silent past the action timeout (200 ms here) */
	CU_ASSERT_EQUAL_FATAL(fetch(0x79), 1);
	CU_ASSERT_EQUAL(mds_hsm_expire(hsm), 0);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_FALSE(pr.pr_cancel);
	usleep(300 * 1000);
	CU_ASSERT_EQUAL(mds_hsm_expire(hsm), 1);
	CU_ASSERT_EQUAL_FATAL(fetch(0x79), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_map[0], 0x1); /* the chunk already restored is kept */

	/* an archive with a multipart upload in progress, then a restart */
	CU_ASSERT_FATAL(fx_creat(&U1, "/rq2/g", 0644, NULL) == 0);
	uint64_t aid;
	CU_ASSERT_EQUAL_FATAL(request1(&ROOT, HSM_A_ARCHIVE, "/rq2/g", &aid), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0x79), 1);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 0, 0, 100, "upload-123", &pr), 0);
	reopen();
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, NULL, 0, &qi) == 0);
	CU_ASSERT_EQUAL(qi.qi_nr, 2);
	CU_ASSERT_EQUAL(qi.qi_waiting, 2);
	CU_ASSERT_EQUAL(qi.qi_running, 0);
	mds_hsm_queue_free(&qi);
	CU_ASSERT_EQUAL_FATAL(fetch(0x80), 2);
	CU_ASSERT_EQUAL(tasks[0].tk_id, id); /* restores first */
	CU_ASSERT_EQUAL(tasks[0].tk_map[0], 0x1);
	CU_ASSERT_EQUAL(tasks[1].tk_id, aid);
	CU_ASSERT_STRING_EQUAL(tasks[1].tk_upload_id, "upload-123");
	CU_ASSERT_STRING_EQUAL(tasks[1].tk_key, "rq2/g");
	/* new ids never reuse old ones */
	CU_ASSERT_FATAL(fx_creat(&U1, "/rq2/h", 0644, NULL) == 0);
	uint64_t nid;
	CU_ASSERT_EQUAL_FATAL(request1(&ROOT, HSM_A_ARCHIVE, "/rq2/h", &nid), 0);
	CU_ASSERT(nid > aid && nid > id);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 8 * MiB, 12 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(state("/rq/f").st_flags & HSM_F_RELEASED);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, aid, tok(aid), 0, "\"g\"", 0, 0, NULL), 0);
	CU_ASSERT(state("/rq2/g").st_flags & HSM_F_ARCHIVED);
}

/*
 * O_TRUNC of a released file while an agent is restoring it: a chunk of the
 * old data written after the truncate would come back into the file. The
 * truncate waits (-EAGAIN) until the agent, told by PROGRESS to stop, says
 * DONE; a waiting (not yet handed out) restore is simply cancelled.
 */
static void test_truncate_waits_for_running_restore(void)
{
	mkdra("/tr", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/tr/f", 0644, NULL) == 0);
	set_size("/tr/f", 20 * MiB);
	archive("/tr/f", "\"t1\"");
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RELEASE, "/tr/f", NULL), 0);
	struct weir_fid fid = fid_of("/tr/f");
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &fid) == 0);
	int rc;
	CU_ASSERT_FALSE(range_ready("/tr/f", 0, 1, &rc));
	uint64_t aid = state("/tr/f").st_action_id;
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, aid);
	/* running: the truncate must wait, the agent is told to stop */
	CU_ASSERT_EQUAL(fx_open(&U1, "/tr/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), -EAGAIN);
	CU_ASSERT(inode_flags("/tr/f") & MDS_INODE_F_RELEASED);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, aid, tok(aid), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_TRUE(pr.pr_cancel);
	CU_ASSERT_EQUAL(fx_open(&U1, "/tr/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), -EAGAIN);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, aid, tok(aid), -ECANCELED, "", 0, 0, "cancelled"), 0);
	CU_ASSERT_EQUAL(state("/tr/f").st_action_id, 0);
	CU_ASSERT_EQUAL(fx_open(&U1, "/tr/f", MDS_OF_WRITE | MDS_OF_TRUNC, NULL), 0);
	CU_ASSERT_FALSE(inode_flags("/tr/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT_EQUAL(state("/tr/f").st_size, 0);

	/* an agent dropping an action it does not hold (an older hand-out) changes nothing */
	CU_ASSERT_FATAL(fx_creat(&U1, "/tr/g", 0644, NULL) == 0);
	uint64_t gid;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/tr/g", &gid), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, gid, tok(gid) + 1, -ECANCELED, "", 0, 0, NULL), -ESTALE);
	CU_ASSERT_EQUAL(state("/tr/g").st_action_id, gid);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, gid, tok(gid), 0, "\"g1\"", 0, 0, NULL), 0);
	CU_ASSERT(state("/tr/g").st_flags & HSM_F_ARCHIVED);
	/* the agent holding it gives it up (stopping): back to waiting at once */
	CU_ASSERT(fx_open(&U1, "/tr/g", MDS_OF_WRITE, NULL) == 0);
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/tr/g", &gid), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, gid, tok(gid), -ECANCELED, "", 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(state("/tr/g").st_action_id, gid);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, gid);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, gid, tok(gid), 0, "\"g2\"", 0, 0, NULL), 0);
	CU_ASSERT(state("/tr/g").st_flags & HSM_F_ARCHIVED);
}

static void test_unlink_cancels_actions(void)
{
	mkdra("/ul", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/ul/f", 0644, NULL) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/ul/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/ul/f"), 0);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 0, 10, NULL, &pr), -ENOENT);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "\"x\"", 0, 0, NULL), -ENOENT);
	reopen();
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, NULL, 0, &qi) == 0);
	for (size_t i = 0; i < qi.qi_nr; i++)
		CU_ASSERT(qi.qi_actions[i].ai_id != id);
	mds_hsm_queue_free(&qi);
}

static void test_auto_export_queues_archive_at_close(void)
{
	mkdra("/ax", HSM_DF_AUTO_EXPORT);
	CU_ASSERT_FATAL(fx_mkdir(&ROOT, "/ax/sub", 0777) == 0);
	struct mds_inode in;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(ns, &U1, NULL, "/ax/sub/f", MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, fx_choose, NULL, &in, &created) == 0);
	CU_ASSERT_EQUAL(state("/ax/sub/f").st_action_id, 0);
	CU_ASSERT_FATAL(mds_ns_close_file(ns, &in.in_fid, true, NULL) == 0);
	uint64_t id = state("/ax/sub/f").st_action_id;
	CU_ASSERT(id != 0);
	/* renamed before the hand-out: the key follows the name at archive time */
	CU_ASSERT_EQUAL(fx_rename(&U1, "/ax/sub/f", "/ax/f2", 0), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_STRING_EQUAL(tasks[0].tk_key, "ax/f2");
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "\"ax\"", 0, 0, NULL), 0);
	/* a reader's close queues nothing; a writer's close of a clean file neither */
	CU_ASSERT(fx_open(&U1, "/ax/f2", MDS_OF_READ, NULL) == 0);
	CU_ASSERT_EQUAL(state("/ax/f2").st_action_id, 0);
	CU_ASSERT(fx_open(&U1, "/ax/f2", MDS_OF_WRITE, NULL) == 0); /* now dirty */
	CU_ASSERT(state("/ax/f2").st_action_id != 0);
	/* outside the association: nothing */
	CU_ASSERT_FATAL(fx_creat(&ROOT, "/outside-ax", 0644, NULL) == 0);
	CU_ASSERT_EQUAL(state("/outside-ax").st_action_id, 0);
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_ARCHIVE, "/outside-ax", NULL), -EINVAL);
	CU_ASSERT_EQUAL(request1(&ROOT, HSM_A_RELEASE, "/outside-ax", NULL), -EINVAL);
}

/* ------------------------------------------------------------ regressions: hand-out tokens */

/*
 * Agent A gets an archive at data version v, goes silent, the action is
 * given back; a writer makes it v+1; agent B gets it. A's DONE (the ETag of
 * the old bytes) must not make the file ARCHIVED at v+1: a release would
 * then lose the writer's data. Only B's hand-out counts.
 */
static void test_done_of_older_handout_refused(void)
{
	mkdra("/tok", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/tok/f", 0644, NULL) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/tok/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0xa), 1);
	uint64_t tok_a = tasks[0].tk_token, v = tasks[0].tk_data_version;
	CU_ASSERT(tok_a != 0);
	CU_ASSERT_EQUAL(mds_hsm_session_evicted(hsm, 0xa), 1); /* A went silent */
	CU_ASSERT(fx_open(&U1, "/tok/f", MDS_OF_WRITE, NULL) == 0); /* the writer: v + 1 */
	CU_ASSERT_EQUAL_FATAL(fetch(0xb), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, id);
	uint64_t tok_b = tasks[0].tk_token;
	CU_ASSERT(tok_b != 0 && tok_b != tok_a);
	CU_ASSERT_EQUAL(tasks[0].tk_data_version, v + 1);
	/* A comes back: its progress is told to stop, its completion refused */
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok_a, 0, 0, 100, NULL, &pr), 0);
	CU_ASSERT(pr.pr_cancel);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok_a, 0, "\"old-bytes\"", 0, 0, NULL), -ESTALE);
	struct mds_hsm_state st = state("/tok/f");
	CU_ASSERT_FALSE(st.st_flags & HSM_F_ARCHIVED);
	CU_ASSERT_STRING_EQUAL(st.st_etag, "");
	CU_ASSERT_EQUAL(st.st_action_id, id);
	CU_ASSERT_EQUAL(request1(&U1, HSM_A_RELEASE, "/tok/f", NULL), -ENODATA);
	/* B's hand-out goes on and counts */
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok_b, 0, 0, 100, NULL, &pr), 0);
	CU_ASSERT_FALSE(pr.pr_cancel);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok_b, 0, "\"new-bytes\"", 0, 0, NULL), 0);
	st = state("/tok/f");
	CU_ASSERT(st.st_flags & HSM_F_ARCHIVED);
	CU_ASSERT_STRING_EQUAL(st.st_etag, "\"new-bytes\"");
	CU_ASSERT_EQUAL(st.st_archived_version, v + 1);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok_b, 0, "\"new-bytes\"", 0, 0, NULL), -ENOENT);
}

/*
 * DONE rc 0 of a restore no agent runs (still waiting), or before every
 * chunk was reported, must not clear RELEASED: the file would read holes.
 */
static void test_done_restore_needs_running_and_every_chunk(void)
{
	uint32_t dra = mkdra("/tok2", 0);
	struct weir_fid dir = fid_of("/tok2");
	struct mds_hsm_import_ent e = { "f", 20 * MiB, 0, "\"i\"", "tok2/f", false };
	int32_t res;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e, 1, 0, fx_choose, NULL, &res) ==
			0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RESTORE, "/tok2/f", &id), 0);
	/* waiting: no hand-out to answer */
	CU_ASSERT_EQUAL(tok(id), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, 0, 0, "", 0, 0, NULL), -ESTALE);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, 12345, 0, "", 0, 0, NULL), -ESTALE);
	CU_ASSERT(inode_flags("/tok2/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT(state("/tok2/f").st_flags & HSM_F_RELEASED);
	CU_ASSERT_EQUAL(state("/tok2/f").st_action_id, id);
	/* running, one chunk of three reported: an agent error, retried */
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, NULL), 0);
	CU_ASSERT(inode_flags("/tok2/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT(state("/tok2/f").st_flags & HSM_F_RELEASED);
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, &id, 1, &qi) == 0);
	CU_ASSERT_EQUAL_FATAL(qi.qi_nr, 1);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_state, HSM_S_WAITING);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_rc, -EPROTO);
	mds_hsm_queue_free(&qi);
	/* every chunk: restored */
	hsm_act_by_id(hsm, id)->ha_not_before_ns = 0; /* skip the backoff */
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_map[0], 0x1);
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 8 * MiB, 12 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(inode_flags("/tok2/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT_EQUAL(state("/tok2/f").st_action_id, 0);
}

/* ------------------------------------------------------------ regressions: S3 keys */

/*
 * /d/x archived and released, renamed to /d/y (its record keeps key x); a
 * new /d/x archived would PUT over /d/y's only copy. The archive fails with
 * EEXIST at its hand-out. Archiving the renamed file again (under its new
 * key) frees the old key; unlinking a file frees its key.
 */
static void test_archive_key_owned_by_renamed_file(void)
{
	mkdra("/kc", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/kc/x", 0644, NULL) == 0);
	archive("/kc/x", "\"x1\"");
	struct weir_fid yfid = fid_of("/kc/x"), owner;
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kc/x", &owner), 0);
	CU_ASSERT(weir_fid_eq(&owner, &yfid));
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RELEASE, "/kc/x", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(fx_rename(&U1, "/kc/x", "/kc/y", 0), 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/kc/x", 0644, NULL) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/kc/x", &id), 0);
	CU_ASSERT_EQUAL(fetch(0), 0); /* not handed out: failed */
	CU_ASSERT_EQUAL(state("/kc/x").st_action_id, 0);
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, &id, 1, &qi) == 0);
	CU_ASSERT_EQUAL_FATAL(qi.qi_nr, 1);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_state, HSM_S_FAILED);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_rc, -EEXIST);
	mds_hsm_queue_free(&qi);
	struct mds_hsm_state st = state("/kc/y");
	CU_ASSERT_STRING_EQUAL(st.st_key, "kc/x");
	CU_ASSERT_EQUAL(st.st_flags, HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_RELEASED);
	/* the index survives a restart */
	reopen();
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/kc/x", &id), 0);
	CU_ASSERT_EQUAL(fetch(0), 0);

	/* the renamed file archived under its new name: the old key is free */
	CU_ASSERT_FATAL(fx_creat(&U1, "/kc/a", 0644, NULL) == 0);
	archive("/kc/a", "\"a1\"");
	struct weir_fid bfid = fid_of("/kc/a");
	CU_ASSERT_EQUAL_FATAL(fx_rename(&U1, "/kc/a", "/kc/b", 0), 0);
	CU_ASSERT(fx_open(&U1, "/kc/b", MDS_OF_WRITE, NULL) == 0);
	archive("/kc/b", "\"b1\"");
	CU_ASSERT_STRING_EQUAL(state("/kc/b").st_key, "kc/b");
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kc/a", &owner), -ENOENT);
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kc/b", &owner), 0);
	CU_ASSERT(weir_fid_eq(&owner, &bfid));
	CU_ASSERT_FATAL(fx_creat(&U1, "/kc/a", 0644, NULL) == 0);
	archive("/kc/a", "\"a2\"");
	CU_ASSERT_STRING_EQUAL(state("/kc/a").st_key, "kc/a");
	CU_ASSERT(state("/kc/a").st_flags & HSM_F_ARCHIVED);
	/* unlink frees the key */
	CU_ASSERT_EQUAL(fx_unlink(&U1, "/kc/b"), 0);
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kc/b", &owner), -ENOENT);
}

/* An MDT written before the key index: the index is built from the records at start. */
static void test_key_index_built_at_open(void)
{
	mkdra("/kb", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/kb/f", 0644, NULL) == 0);
	archive("/kb/f", "\"k1\"");
	struct weir_fid fid = fid_of("/kb/f"), owner;
	CU_ASSERT_EQUAL_FATAL(hsm_key_owner(ns, "bkt", "kb/f", &owner), 0);
	/* drop the index entry and its "built" marker, as an older MDS left them */
	uint8_t k[64] = "Kbkt";
	k[4] = 0;
	memcpy(k + 5, "kb/f", 4);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	CU_ASSERT_FATAL(b != NULL);
	kv_batch_del(b, KV_CF_HSM, k, 9);
	kv_batch_del(b, KV_CF_HSM, "k", 1);
	CU_ASSERT_FATAL(ns_batch_commit(ns, b) == 0);
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kb/f", &owner), -ENOENT);
	reopen();
	CU_ASSERT_EQUAL(hsm_key_owner(ns, "bkt", "kb/f", &owner), 0);
	CU_ASSERT(weir_fid_eq(&owner, &fid));
}

/* Two associations of one bucket whose prefixes nest would build one key for two files. */
static void test_dra_overlapping_prefix_refused(void)
{
	struct mds_hsm_dra d;
	drain();
	static const char *dirs[] = { "/ov1", "/ov2", "/ov3", "/ov4", "/ov5" };
	for (size_t i = 0; i < 5; i++)
		CU_ASSERT_FATAL(fx_mkdir(&ROOT, dirs[i], 0777) == 0);
	CU_ASSERT_EQUAL_FATAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov1", "ovb", "a/b", 0, &d), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov2", "ovb", "a", 0, &d), -EEXIST);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov2", "ovb", "a/b/c", 0, &d),
			-EEXIST);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov2", "ovb", "a/b/", 0, &d),
			-EEXIST);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov2", "ovb", "", 0, &d), -EEXIST);
	/* no overlap: a sibling prefix, another bucket */
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov2", "ovb", "a/bc", 0, &d), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov3", "ovb", "ab", 0, &d), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov4", "ovb2", "a/b", 0, &d), 0);
	/* an empty prefix covers its whole bucket */
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov5", "ovb3", "", 0, &d), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_delete(hsm, &ROOT, NULL, "/ov5"), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov5", "ovb3", "x", 0, &d), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_delete(hsm, &ROOT, NULL, "/ov5"), 0);
	CU_ASSERT_EQUAL(mds_hsm_dra_create(hsm, &ROOT, NULL, "/ov5", "ovb", "a/bc/d", 0, &d),
			-EEXIST);
}

/* ------------------------------------------------------------ regressions: stale, commit */

/*
 * A restore finds the object changed (DF_REIMPORT): chunks of the old
 * version already written must not show through the new one. The objects
 * are queued for destruction and the restore waits for that, as after a
 * release.
 */
static void test_stale_reimport_destroys_old_chunks(void)
{
	uint32_t dra = mkdra("/sd", HSM_DF_REIMPORT);
	struct weir_fid dir = fid_of("/sd");
	struct mds_hsm_import_ent e = { "f", 20 * MiB, 1000, "\"old\"", "sd/f", false };
	int32_t res;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e, 1, 0, fx_choose, NULL, &res) ==
			0);
	struct weir_fid fid = fid_of("/sd/f");
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&ROOT, HSM_A_RESTORE, "/sd/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, tok(id), 0, 8 * MiB, 0, NULL, &pr), 0);
	CU_ASSERT_FALSE(hsm_destroy_pending(ns, &fid));
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, tok(id), -ESTALE, "\"new\"", 12 * MiB, 2000, NULL),
			0);
	CU_ASSERT(hsm_destroy_pending(ns, &fid));
	CU_ASSERT_EQUAL(fetch(0), 0); /* not while the old chunk's objects exist */
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &fid) == 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	CU_ASSERT_EQUAL(tasks[0].tk_id, id);
	CU_ASSERT_EQUAL(tasks[0].tk_size, 12 * MiB);
	CU_ASSERT_EQUAL(tasks[0].tk_map[0], 0);
	CU_ASSERT_STRING_EQUAL(tasks[0].tk_etag, "\"new\"");
}

/*
 * A completion whose records cannot be written: the action must stay as it
 * was (running, same hand-out), not vanish from memory while the disk still
 * says dirty / released; the agent's next DONE then counts.
 */
static void test_done_commit_failure_keeps_action(void)
{
	mkdra("/cf", 0);
	CU_ASSERT_FATAL(fx_creat(&U1, "/cf/f", 0644, NULL) == 0);
	uint64_t id;
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_ARCHIVE, "/cf/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	uint64_t t = tasks[0].tk_token;
	struct mds_hsm_queue_info qi;
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, NULL, 0, &qi) == 0);
	uint64_t done0 = qi.qi_done;
	mds_hsm_queue_free(&qi);
	hsm->hs_fail_commits = 1;
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, t, 0, "\"c1\"", 0, 0, NULL), -EIO);
	hsm->hs_fail_commits = 0;
	CU_ASSERT_FALSE(state("/cf/f").st_flags & HSM_F_ARCHIVED);
	CU_ASSERT_EQUAL(state("/cf/f").st_action_id, id);
	CU_ASSERT_FATAL(mds_hsm_queue_get(hsm, &id, 1, &qi) == 0);
	CU_ASSERT_EQUAL_FATAL(qi.qi_nr, 1);
	CU_ASSERT_EQUAL(qi.qi_actions[0].ai_state, HSM_S_RUNNING);
	CU_ASSERT_EQUAL(qi.qi_done, done0);
	mds_hsm_queue_free(&qi);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, t, 0, "\"c1\"", 0, 0, NULL), 0);
	CU_ASSERT(state("/cf/f").st_flags & HSM_F_ARCHIVED);

	/* a restore: the file stays released and the action running */
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RELEASE, "/cf/f", NULL), 0);
	struct weir_fid fid = fid_of("/cf/f");
	CU_ASSERT_FATAL(mds_ns_destroy_done(ns, &fid) == 0);
	CU_ASSERT_EQUAL_FATAL(request1(&U1, HSM_A_RESTORE, "/cf/f", &id), 0);
	CU_ASSERT_EQUAL_FATAL(fetch(0), 1);
	t = tasks[0].tk_token;
	struct mds_hsm_progress_rep pr;
	CU_ASSERT_EQUAL(mds_hsm_progress(hsm, id, t, 0, 0, 0, NULL, &pr), 0);
	hsm->hs_fail_commits = 1;
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, t, 0, "", 0, 0, NULL), -EIO);
	hsm->hs_fail_commits = 0;
	CU_ASSERT(inode_flags("/cf/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT_EQUAL(state("/cf/f").st_action_id, id);
	CU_ASSERT_EQUAL(mds_hsm_done(hsm, id, t, 0, "", 0, 0, NULL), 0);
	CU_ASSERT_FALSE(inode_flags("/cf/f") & MDS_INODE_F_RELEASED);
	CU_ASSERT_EQUAL(state("/cf/f").st_action_id, 0);
}

/* An import without an ETag would disable every restore's check of the object: refused. */
static void test_import_empty_etag_refused(void)
{
	uint32_t dra = mkdra("/ie", 0);
	struct weir_fid dir = fid_of("/ie");
	struct mds_hsm_import_ent e[3] = {
		{ "noetag", 10, 0, "", "ie/noetag", false },
		{ "ok", 10, 0, "\"e\"", "ie/ok", false },
		{ "gone", 0, 0, "", "ie/gone", true }, /* a deletion needs none */
	};
	int32_t res[3];
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, e, 3, 0, fx_choose, NULL, res) == 0);
	CU_ASSERT_EQUAL(res[0], -EINVAL);
	CU_ASSERT_EQUAL(res[1], HSM_HIR_CREATED);
	CU_ASSERT_EQUAL(res[2], HSM_HIR_UNCHANGED);
	CU_ASSERT_EQUAL(fx_stat(NULL, "/ie/noetag", NULL), -ENOENT);
	/* nor may an update drop the ETag of an existing file */
	e[1].ie_etag = "";
	e[1].ie_size = 20;
	CU_ASSERT_FATAL(mds_hsm_import(hsm, &ROOT, dra, &dir, &e[1], 1, 0, fx_choose, NULL, res) ==
			0);
	CU_ASSERT_EQUAL(res[0], -EINVAL);
	CU_ASSERT_STRING_EQUAL(state("/ie/ok").st_etag, "\"e\"");
}

/* ------------------------------------------------------------ the RPCs, on a real MDS */

static int rpc(struct net_conn *c, uint16_t op, ProtobufCMessage *req,
	       const ProtobufCMessageDescriptor *d, void **rep)
{
	struct net_call call;
	net_call_init(&call, op, req);
	call.nc_timeout_ms = 10000;
	int rc = net_call_run(c, &call);
	if (!rc && d) {
		*rep = net_call_unpack(&call, d);
		if (!*rep)
			rc = -EPROTO;
	}
	net_call_fini(&call);
	return rc;
}

static void test_rpc_dra_fetch_long_poll(void)
{
	char dir[] = "/tmp/weir-test-hsm-rpc-XXXXXX", mdt[64];
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	struct mds_conf mc = { .mc_mdt_dir = mdt, .mc_listen = "127.0.0.1:0" };
	struct mds *m;
	CU_ASSERT_FATAL(mds_start(&mc, &m) == 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", mds_port(m));
	struct net_conn *c;
	CU_ASSERT_FATAL(net_conn_open(addr, 3000, &c) == 0);
	Weir__Cred root = WEIR__CRED__INIT;
	void *rep = NULL;

	/* one OST (nobody serves it: imported files have no objects yet) */
	Weir__OstReg ost = WEIR__OST_REG__INIT, *ostp = &ost;
	static uint8_t secret[32] = { 0x42 }; /* the test OST's (bound at its first registration) */
	ost.uuid = (char *)"hsm-test-ost";
	ost.secret.data = secret;
	ost.secret.len = sizeof(secret);
	ost.index = -1;
	ost.total_bytes = ost.free_bytes = ost.avail_bytes = 1ULL << 30;
	Weir__OssRegisterReq reg = WEIR__OSS_REGISTER_REQ__INIT;
	reg.oss_addr = (char *)"127.0.0.1:9";
	reg.n_osts = 1;
	reg.osts = &ostp;
	CU_ASSERT_EQUAL_FATAL(rpc(c, WEIR__WIRE_OP__MDS_OSS_REGISTER, &reg.base,
				  &weir__oss_register_rep__descriptor, &rep), 0);
	ost.index = (int32_t)((Weir__OssRegisterRep *)rep)->indexes[0];
	protobuf_c_message_free_unpacked(rep, NULL);
	CU_ASSERT_EQUAL_FATAL(rpc(c, WEIR__WIRE_OP__MDS_OSS_REGISTER, &reg.base, NULL, NULL), 0);

	Weir__MkdirReq mk = WEIR__MKDIR_REQ__INIT;
	mk.cred = &root;
	mk.path = (char *)"/r";
	mk.mode = 0755;
	CU_ASSERT_EQUAL_FATAL(rpc(c, WEIR__WIRE_OP__MDS_MKDIR, &mk.base, NULL, NULL), 0);
	Weir__DraReq dr = WEIR__DRA_REQ__INIT;
	dr.cred = &root;
	dr.path = (char *)"/r";
	dr.bucket = (char *)"bkt";
	dr.prefix = (char *)"x";
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_DRA_CREATE, &dr.base, &weir__dra_rep__descriptor,
			    &rep), 0);
	Weir__DraRep *drep = rep;
	CU_ASSERT_FATAL(drep && drep->dra);
	CU_ASSERT_STRING_EQUAL(drep->dra->prefix, "x/");
	uint32_t dra = drep->dra->id;
	protobuf_c_message_free_unpacked(rep, NULL);
	dr.cred = NULL; /* nobody */
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_DRA_CREATE, &dr.base, NULL, NULL), -EPERM);
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_DRA_LIST, NULL, &weir__dra_list_rep__descriptor,
			    &rep), 0);
	CU_ASSERT_EQUAL(((Weir__DraListRep *)rep)->n_dras, 1);
	protobuf_c_message_free_unpacked(rep, NULL);

	/* a fetch with nothing to do waits its wait_ms, then answers empty */
	Weir__HsmFetchReq fr = WEIR__HSM_FETCH_REQ__INIT;
	fr.agent = (char *)"t:1";
	fr.max = 4;
	fr.wait_ms = 300;
	uint64_t t0 = weir_now_ns();
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &fr.base,
			    &weir__hsm_fetch_rep__descriptor, &rep), 0);
	uint64_t waited = (weir_now_ns() - t0) / 1000000;
	CU_ASSERT(waited >= 250 && waited < 3000);
	CU_ASSERT_EQUAL(((Weir__HsmFetchRep *)rep)->n_tasks, 0);
	protobuf_c_message_free_unpacked(rep, NULL);

	/* import one file; a parked fetch is answered as soon as a reader needs it */
	struct mds_inode din;
	CU_ASSERT_FATAL(mds_ns_lookup(m->m_ns, NULL, NULL, "/r", 0, &din) == 0);
	Weir__Fid dfid = WEIR__FID__INIT;
	dfid.seq = din.in_fid.fid_seq;
	dfid.oid = din.in_fid.fid_oid;
	Weir__HsmImportEnt ent = WEIR__HSM_IMPORT_ENT__INIT, *entp = &ent;
	ent.name = (char *)"obj";
	ent.size = 1000;
	ent.etag = (char *)"\"e\"";
	ent.key = (char *)"x/obj";
	Weir__HsmImportReq ir = WEIR__HSM_IMPORT_REQ__INIT;
	ir.cred = &root;
	ir.dra = dra;
	ir.dir = &dfid;
	ir.n_ents = 1;
	ir.ents = &entp;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_IMPORT, &ir.base,
			    &weir__hsm_import_rep__descriptor, &rep), 0);
	CU_ASSERT_EQUAL(((Weir__HsmImportRep *)rep)->n_result, 1);
	CU_ASSERT_EQUAL(((Weir__HsmImportRep *)rep)->result[0], HSM_HIR_CREATED);
	protobuf_c_message_free_unpacked(rep, NULL);
	ir.n_ents = HSM_IMPORT_MAX + 1; /* bad counts never crash the MDS */
	Weir__HsmImportEnt **many = calloc(ir.n_ents, sizeof(*many));
	for (size_t i = 0; i < ir.n_ents; i++)
		many[i] = &ent;
	ir.ents = many;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_IMPORT, &ir.base, NULL, NULL), -E2BIG);
	free(many);

	struct mds_inode fin;
	CU_ASSERT_FATAL(mds_ns_lookup(m->m_ns, NULL, NULL, "/r/obj", 0, &fin) == 0);
	Weir__Fid ffid = WEIR__FID__INIT;
	ffid.seq = fin.in_fid.fid_seq;
	ffid.oid = fin.in_fid.fid_oid;
	/* the attributes say released, no blocks */
	Weir__FidReq gr = WEIR__FID_REQ__INIT;
	gr.fid = &ffid;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_GETATTR, &gr.base, &weir__attr_rep__descriptor,
			    &rep), 0);
	CU_ASSERT(((Weir__AttrRep *)rep)->attr->flags & WEIR__ATTR_FLAG__AF_RELEASED);
	CU_ASSERT_EQUAL(((Weir__AttrRep *)rep)->attr->blocks, 0);
	CU_ASSERT_EQUAL(((Weir__AttrRep *)rep)->attr->size, 1000);
	protobuf_c_message_free_unpacked(rep, NULL);

	struct net_call fc;
	fr.wait_ms = 5000;
	net_call_init(&fc, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &fr.base);
	fc.nc_timeout_ms = 10000;
	t0 = weir_now_ns();
	CU_ASSERT_FATAL(net_call_start(c, &fc) == 0);
	usleep(100 * 1000);
	Weir__HsmRangeReq rr = WEIR__HSM_RANGE_REQ__INIT;
	rr.cred = &root;
	rr.fid = &ffid;
	rr.length = 10;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, &rr.base,
			    &weir__hsm_range_rep__descriptor, &rep), 0);
	CU_ASSERT(((Weir__HsmRangeRep *)rep)->released);
	CU_ASSERT_FALSE(((Weir__HsmRangeRep *)rep)->ready);
	protobuf_c_message_free_unpacked(rep, NULL);
	CU_ASSERT_EQUAL(net_call_wait(&fc), 0);
	waited = (weir_now_ns() - t0) / 1000000;
	CU_ASSERT(waited < 2000);
	Weir__HsmFetchRep *frep = net_call_unpack(&fc, &weir__hsm_fetch_rep__descriptor);
	net_call_fini(&fc);
	CU_ASSERT_FATAL(frep != NULL);
	CU_ASSERT_EQUAL_FATAL(frep->n_tasks, 1);
	CU_ASSERT_EQUAL(frep->tasks[0]->action, HSM_A_RESTORE);
	CU_ASSERT_STRING_EQUAL(frep->tasks[0]->key, "x/obj");
	CU_ASSERT_EQUAL(frep->tasks[0]->chunk, 8 * MiB);
	CU_ASSERT_EQUAL(frep->tasks[0]->done_map.len, 1);
	uint64_t tid = frep->tasks[0]->id, ttok = frep->tasks[0]->token;
	CU_ASSERT(ttok != 0);
	protobuf_c_message_free_unpacked(&frep->base, NULL);

	Weir__HsmProgressReq pq = WEIR__HSM_PROGRESS_REQ__INIT;
	pq.id = tid;
	pq.token = ttok;
	pq.length = 1000;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, &pq.base,
			    &weir__hsm_progress_rep__descriptor, &rep), 0);
	CU_ASSERT_FALSE(((Weir__HsmProgressRep *)rep)->cancel);
	protobuf_c_message_free_unpacked(rep, NULL);
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, &rr.base,
			    &weir__hsm_range_rep__descriptor, &rep), 0);
	CU_ASSERT(((Weir__HsmRangeRep *)rep)->ready);
	protobuf_c_message_free_unpacked(rep, NULL);
	Weir__HsmDoneReq dq = WEIR__HSM_DONE_REQ__INIT;
	dq.id = tid;
	dq.token = ttok;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, &dq.base, NULL, NULL), 0);
	Weir__HsmStateReq sq = WEIR__HSM_STATE_REQ__INIT;
	sq.cred = &root;
	sq.path = (char *)"/r/obj";
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_STATE, &sq.base,
			    &weir__hsm_state_rep__descriptor, &rep), 0);
	CU_ASSERT_EQUAL(((Weir__HsmStateRep *)rep)->flags,
			HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_IMPORTED);
	CU_ASSERT_STRING_EQUAL(((Weir__HsmStateRep *)rep)->key, "x/obj");
	protobuf_c_message_free_unpacked(rep, NULL);
	Weir__HsmQueueReq qq = WEIR__HSM_QUEUE_REQ__INIT;
	qq.n_ids = 1;
	qq.ids = &tid;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_QUEUE, &qq.base,
			    &weir__hsm_queue_rep__descriptor, &rep), 0);
	CU_ASSERT_EQUAL_FATAL(((Weir__HsmQueueRep *)rep)->n_actions, 1);
	CU_ASSERT_EQUAL(((Weir__HsmQueueRep *)rep)->actions[0]->state, HSM_S_DONE);
	CU_ASSERT_EQUAL(((Weir__HsmQueueRep *)rep)->done, 1);
	protobuf_c_message_free_unpacked(rep, NULL);
	/* a request over 4096 fids is refused whole */
	Weir__HsmRequestReq hq = WEIR__HSM_REQUEST_REQ__INIT;
	hq.cred = &root;
	hq.action = HSM_A_ARCHIVE;
	hq.n_fids = HSM_REQUEST_MAX + 1;
	Weir__Fid **fids = calloc(hq.n_fids, sizeof(*fids));
	for (size_t i = 0; i < hq.n_fids; i++)
		fids[i] = &ffid;
	hq.fids = fids;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_REQUEST, &hq.base, NULL, NULL), -E2BIG);
	hq.n_fids = 1;
	CU_ASSERT_EQUAL(rpc(c, WEIR__WIRE_OP__MDS_HSM_REQUEST, &hq.base,
			    &weir__hsm_request_rep__descriptor, &rep), 0);
	CU_ASSERT_EQUAL(((Weir__HsmRequestRep *)rep)->rc[0], -EALREADY); /* imported = archived */
	protobuf_c_message_free_unpacked(rep, NULL);
	free(fids);

	net_conn_close(c);
	mds_stop(m);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT(system(cmd) == 0);
}


/* Register (heartbeat) the test OST; \a index in/out (-1: new). \return its throttle. */
static uint32_t ost_heartbeat(struct net_conn *c, int32_t *index, uint64_t total, uint64_t free_b)
{
	void *rep = NULL;
	uint32_t throttle = 999;
	Weir__OstReg ost = WEIR__OST_REG__INIT, *ostp = &ost;
	static uint8_t secret[32] = { 0x42 }; /* as the first registration's */
	ost.uuid = (char *)"hsm-test-ost";
	ost.secret.data = secret;
	ost.secret.len = sizeof(secret);
	ost.index = *index;
	ost.total_bytes = total;
	ost.free_bytes = ost.avail_bytes = free_b;
	Weir__OssRegisterReq reg = WEIR__OSS_REGISTER_REQ__INIT;
	reg.oss_addr = (char *)"127.0.0.1:9";
	reg.n_osts = 1;
	reg.osts = &ostp;
	CU_ASSERT_FATAL(rpc(c, WEIR__WIRE_OP__MDS_OSS_REGISTER, &reg.base,
			    &weir__oss_register_rep__descriptor, &rep) == 0);
	Weir__OssRegisterRep *r = rep;
	CU_ASSERT_FATAL(r->n_indexes == 1);
	*index = (int32_t)r->indexes[0];
	if (r->n_throttle_ms == 1)
		throttle = r->throttle_ms[0];
	protobuf_c_message_free_unpacked(rep, NULL);
	return throttle;
}

/* A real MDS with one registered OST of \a total bytes, \a free of them free. */
static struct mds *mds_with_ost(char *dir, const struct mds_conf *base, uint64_t total,
				uint64_t free_b, struct net_conn **cp)
{
	static char mdt[96];
	char addr[32];
	struct mds *m;
	int32_t index = -1;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	struct mds_conf mc = *base;
	mc.mc_mdt_dir = mdt;
	mc.mc_listen = "127.0.0.1:0";
	CU_ASSERT_FATAL(mds_start(&mc, &m) == 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", mds_port(m));
	CU_ASSERT_FATAL(net_conn_open(addr, 3000, cp) == 0);
	ost_heartbeat(*cp, &index, total, free_b);
	ost_heartbeat(*cp, &index, total, free_b); /* up under its index */
	return m;
}

/* Create \a path of \a size bytes last touched at \a t_ns, archived. */
static void policy_file(struct mds *m, const char *path, uint64_t size, int64_t t_ns)
{
	struct mds_inode in;
	bool created;
	CU_ASSERT_FATAL(mds_ns_open_file(m->m_ns, NULL, NULL, path, MDS_OF_CREAT | MDS_OF_WRITE,
					 0644, NULL, mds_cmap_choose, m, &in, &created) == 0);
	CU_ASSERT_FATAL(mds_ns_close_file(m->m_ns, &in.in_fid, true, NULL) == 0);
	uint64_t id;
	int32_t rc;
	size_t rel;
	uint32_t nr;
	CU_ASSERT_FATAL(mds_hsm_request(m->m_hsm, NULL, HSM_A_ARCHIVE, &in.in_fid, 1, &id, &rc,
					&rel) == 0);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_FATAL(mds_hsm_fetch(m->m_hsm, "pol", 0, 1, tasks, &nr) == 0);
	CU_ASSERT_EQUAL_FATAL(nr, 1);
	CU_ASSERT_FATAL(mds_hsm_done(m->m_hsm, id, tasks[0].tk_token, 0, "\"p\"", 0, 0, NULL) == 0);
	/* size and times last: setting them does not dirty the archive copy's check */
	struct mds_setattr sa = { .sa_valid = MDS_SA_ATIME | MDS_SA_MTIME, .sa_atime_ns = t_ns,
				  .sa_mtime_ns = t_ns };
	struct mds_inode out;
	CU_ASSERT_FATAL(mds_ns_setattr(m->m_ns, NULL, &in.in_fid, NULL, 0, &sa, &out) == 0);
	struct mds_write_report wr = { .wr_has_size = true, .wr_size = size };
	CU_ASSERT_FATAL(mds_ns_update_size(m->m_ns, &in.in_fid, &wr) == 0);
}

static bool released(struct mds *m, const char *path)
{
	struct mds_inode in;
	CU_ASSERT_FATAL(mds_ns_lookup(m->m_ns, NULL, NULL, path, 0, &in) == 0);
	return in.in_flags & MDS_INODE_F_RELEASED;
}

static void test_policy_releases_coldest_over_high_watermark(void)
{
	char dir[] = "/tmp/weir-test-hsm-pol-XXXXXX";
	struct net_conn *c;
	struct mds_conf base = { .mc_hsm_high_pct = 90, .mc_hsm_low_pct = 50,
				 .mc_hsm_policy_interval_ms = 3600000 };
	struct mds *m = mds_with_ost(dir, &base, 1000 * MiB, 50 * MiB, &c); /* 95% used */
	struct mds_inode din;
	CU_ASSERT_FATAL(mds_ns_mkdir(m->m_ns, NULL, NULL, "/pol", 0755, &din) == 0);
	CU_ASSERT_FATAL(mds_hsm_dra_create(m->m_hsm, NULL, NULL, "/pol", "bkt", "", 0, NULL) == 0);
	int64_t now = (int64_t)weir_wall_ns();
	policy_file(m, "/pol/warm", 300 * MiB, 2000LL * 1000000000);
	policy_file(m, "/pol/cold", 300 * MiB, 1000LL * 1000000000);
	policy_file(m, "/pol/colder", 1 * MiB, 500LL * 1000000000);
	policy_file(m, "/pol/young", 300 * MiB, now);
	/* open files are skipped */
	struct mds_inode oin;
	bool created;
	policy_file(m, "/pol/open", 300 * MiB, 100LL * 1000000000);
	CU_ASSERT_FATAL(mds_ns_open_file(m->m_ns, NULL, NULL, "/pol/open", MDS_OF_READ, 0, NULL,
					 mds_cmap_choose, m, &oin, &created) == 0);
	mds_hsm_policy_pass(m);
	/* 950 MiB used, low 500: colder (1), cold (300), warm (300) go; young stays */
	CU_ASSERT_FALSE(released(m, "/pol/open"));
	CU_ASSERT(released(m, "/pol/colder"));
	CU_ASSERT(released(m, "/pol/cold"));
	CU_ASSERT(released(m, "/pol/warm"));
	CU_ASSERT_FALSE(released(m, "/pol/young"));
	CU_ASSERT_FATAL(mds_ns_close_file(m->m_ns, &oin.in_fid, false, NULL) == 0);
	net_conn_close(c);
	mds_stop(m);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT(system(cmd) == 0);
}

static void test_policy_throttles_writers_when_nothing_releasable(void)
{
	char dir[] = "/tmp/weir-test-hsm-thr-XXXXXX";
	struct net_conn *c;
	struct mds_conf base = { .mc_hsm_high_pct = 90, .mc_hsm_low_pct = 50,
				 .mc_hsm_policy_interval_ms = 3600000 };
	struct mds *m = mds_with_ost(dir, &base, 1000 * MiB, 50 * MiB, &c); /* 95% used */
	int32_t index = 0;
	CU_ASSERT_EQUAL(ost_heartbeat(c, &index, 1000 * MiB, 50 * MiB), 0);
	mds_hsm_policy_pass(m); /* nothing archived: nothing releasable */
	/* 10 ms at 90%, 100 ms at 100%: 55 ms at 95% */
	CU_ASSERT_EQUAL(m->m_osts[index].mo_throttle_ms, 55);
	CU_ASSERT_EQUAL(ost_heartbeat(c, &index, 1000 * MiB, 50 * MiB), 55);
	/* below the high watermark again: lifted */
	CU_ASSERT_EQUAL(ost_heartbeat(c, &index, 1000 * MiB, 500 * MiB), 55);
	mds_hsm_policy_pass(m);
	CU_ASSERT_EQUAL(ost_heartbeat(c, &index, 1000 * MiB, 500 * MiB), 0);
	net_conn_close(c);
	mds_stop(m);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT(system(cmd) == 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_dra_create_list_delete_persist),
		TH_TEST(test_import_create_update_remove_kept),
		TH_TEST(test_data_version_bumped_on_write_open),
		TH_TEST(test_archive_modified_while_running_stays_dirty),
		TH_TEST(test_release_refused_then_accepted),
		TH_TEST(test_restore_wait_ready_per_chunk),
		TH_TEST(test_restore_errors_retried_then_failed),
		TH_TEST(test_stale_reimport_and_lost),
		TH_TEST(test_requeue_on_evict_timeout_and_restart),
		TH_TEST(test_truncate_waits_for_running_restore),
		TH_TEST(test_empty_released_file_checked_before_served),
		TH_TEST(test_unlink_cancels_actions),
		TH_TEST(test_auto_export_queues_archive_at_close),
		TH_TEST(test_done_of_older_handout_refused),
		TH_TEST(test_done_restore_needs_running_and_every_chunk),
		TH_TEST(test_archive_key_owned_by_renamed_file),
		TH_TEST(test_key_index_built_at_open),
		TH_TEST(test_dra_overlapping_prefix_refused),
		TH_TEST(test_stale_reimport_destroys_old_chunks),
		TH_TEST(test_done_commit_failure_keeps_action),
		TH_TEST(test_import_empty_etag_refused),
		TH_TEST(test_rpc_dra_fetch_long_poll),
		TH_TEST(test_policy_releases_coldest_over_high_watermark),
		TH_TEST(test_policy_throttles_writers_when_nothing_releasable),
		TH_TEST_END,
	};
	return th_cunit_run("mds_hsm", setup, teardown, tests);
}
